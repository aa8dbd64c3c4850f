"""Per-op overhead of the engine, retrograd vs PyTorch interleaved in one process.

Cases: a 0-d chain ``y = y * 1.0001 + 0.1`` (forward and backward, µs per op), the same
chain mixed with tanh and exp, and (``--deep``) a 1,000,000-deep chain ``y = y * 1.0``
(the cyclic GC's rescans of a growing graph). Medians of CPU time (``process_time``:
less sensitive to a busy machine than wall time) and of wall time, single-threaded.

    PYTHONPATH=src python3 benchmarks/bench_overhead.py [--repeats 31] [--deep [N]]
"""
import os
import sys

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))


def _chain(lib, n):
    x = lib.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 1.0001 + 0.1
    return y, 2 * n


def _mix(lib, n):
    x = lib.tensor(0.5, requires_grad=True)
    y = x
    for _ in range(n):
        y = (y * 1.0001 + 0.1).tanh()
        y = (y * 0.5).exp() - 1.0
    return y, 6 * n


def _deep(lib, n):
    x = lib.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 1.0
    return y, n


CASES = {"0-d chain (mul, add)": (_chain, 1000), "0-d chain + tanh/exp": (_mix, 500)}


def _once(build, lib, n):
    c0, w0 = time.process_time(), time.perf_counter()
    y, ops = build(lib, n)
    c1, w1 = time.process_time(), time.perf_counter()
    y.backward()
    c2, w2 = time.process_time(), time.perf_counter()
    return ((c1 - c0) / ops, (c2 - c1) / ops, (w1 - w0) / ops, (w2 - w1) / ops)


def run(repeats=31, deep=0, out=print):
    import retrograd
    libs = [("retrograd", retrograd)]
    try:
        import torch
        torch.set_num_threads(1)
        libs.append(("torch", torch))
    except ImportError:
        pass
    results = {}
    cases = dict(CASES)
    if deep:
        cases[f"{deep:,}-deep chain"] = (_deep, deep)
    for case, (build, n) in cases.items():
        reps = repeats if build is not _deep else 3
        runs = {name: [] for name, _ in libs}
        for name, lib in libs:
            _once(build, lib, min(n, 1000))   # warm up
        for _ in range(reps):
            for name, lib in libs:   # interleaved: load on the machine hits both alike
                runs[name].append(_once(build, lib, n))
        med = {name: [statistics.median(r[i] for r in rs) for i in range(4)] for name, rs in runs.items()}
        results[case] = med
        unit, scale = ("µs/op", 1e6) if build is not _deep else ("s", n)
        out(f"{case} ({unit}; medians of {reps})")
        out(f"  {'':<11}{'fwd cpu':>9}{'bwd cpu':>9}{'fwd wall':>10}{'bwd wall':>10}")
        for name, m in med.items():
            out(f"  {name:<11}" + "".join(f"{v * scale:>{w}.2f}" for v, w in zip(m, (9, 9, 10, 10))))
        if "torch" in med:
            r, t = med["retrograd"], med["torch"]
            out(f"  {'ratio r/t':<11}" + "".join(f"{a / b:>{w}.2f}" for a, b, w in zip(r, t, (9, 9, 10, 10))))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=31)
    ap.add_argument("--deep", type=int, nargs="?", const=1_000_000, default=0,
                    help="also time an N-deep chain (default N: 1,000,000)")
    args = ap.parse_args()
    run(args.repeats, args.deep)


if __name__ == "__main__":
    main()
