"""Indexing and linear algebra, forward + backward, retrograd beside PyTorch in one run.

Cases: an embedding-style lookup ``W[idx]`` with repeated rows (the backward is a
segment sum), ``index_select``, ``gather``, a mask, basic ``x[0]`` / ``x[:, 1]`` on a
small tensor (per-call overhead), and ``mm``/batched ``matmul``. Prints the median time
per call and the ratio retrograd / PyTorch.
Run: python benchmarks/bench_indexing.py [--threads 1]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))


def timeit(fn, repeats, number):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def cases(lib):
    rng = np.random.default_rng(0)
    W = lib.zeros(50000, 64, requires_grad=True)
    idx = lib.tensor(rng.integers(0, 50000, 4096))
    x = lib.tensor(rng.standard_normal((512, 256)).astype(np.float32), requires_grad=True)
    gi = lib.tensor(rng.integers(0, 512, (512, 256)))
    m = x.detach() > 0
    s = lib.ones(64, 32, requires_grad=True)
    a = lib.tensor(rng.standard_normal((256, 256)).astype(np.float32), requires_grad=True)
    b = lib.tensor(rng.standard_normal((32, 64, 64)).astype(np.float32), requires_grad=True)
    return [
        ("W[idx] fwd+bwd (50000x64, 4096 rows)", lambda: W[idx].sum().backward(), 10),
        ("index_select fwd+bwd", lambda: W.index_select(0, idx).sum().backward(), 10),
        ("gather fwd+bwd (512x256)", lambda: x.gather(0, gi).sum().backward(), 20),
        ("x[mask] fwd+bwd (512x256)", lambda: x[m].sum().backward(), 20),
        ("x[0] (64x32)", lambda: s[0], 2000),
        ("x[:, 1] (64x32)", lambda: s[:, 1], 2000),
        ("mm fwd+bwd (256x256)", lambda: (a @ a).sum().backward(), 20),
        ("bmm fwd+bwd (32x64x64)", lambda: (b @ b).sum().backward(), 20),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    import retrograd
    libs = [("retrograd", retrograd)]
    try:
        import torch
        torch.set_num_threads(args.threads)
        libs.append(("torch", torch))
    except ImportError:
        pass
    results = {}
    for name, lib in libs:
        for label, fn, number in cases(lib):
            fn()
            results.setdefault(label, {})[name] = timeit(fn, args.repeats, number)
    print(f"{'case':42s} {'retrograd':>12s} {'torch':>12s} {'ratio':>7s}")
    for label, r in results.items():
        rt, tt = r["retrograd"], r.get("torch")
        tstr = f"{tt * 1e6:10.1f}us" if tt else "         n/a"
        ratio = f"{rt / tt:7.2f}" if tt else "    n/a"
        print(f"{label:42s} {rt * 1e6:10.1f}us {tstr} {ratio}")


if __name__ == "__main__":
    main()
