"""Small-graph overhead: ``y = y * 1.0001 + 0.5`` on 0-d tensors, 1,000 times, then backward.

Prints µs per op (forward and backward) for retrograd and PyTorch measured in the same
run, their ratio, the 1,000,000-deep chain, and the cost of ``import retrograd``.
Run: python benchmarks/bench_chain.py [--threads 1] [--deep]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))


def chain(lib, n=1000):
    x = lib.tensor(1.0, requires_grad=True)
    y = x
    t0 = time.perf_counter()
    for _ in range(n):
        y = y * 1.0001 + 0.5
    t1 = time.perf_counter()
    y.backward()
    t2 = time.perf_counter()
    ops = 2 * n
    return (t1 - t0) / ops * 1e6, (t2 - t1) / ops * 1e6


def measure(lib, repeats):
    chain(lib)  # warm up
    runs = [chain(lib) for _ in range(repeats)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def deep(lib, n=1_000_000):
    x = lib.tensor(1.0, requires_grad=True)
    y = x
    t0 = time.perf_counter()
    for _ in range(n):
        y = y * 1.0
    t1 = time.perf_counter()
    y.backward()
    t2 = time.perf_counter()
    del y
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2


def import_cost(module):
    # VmHWM (peak RSS of this process image); ru_maxrss would include the forking parent's.
    code = ("import time; t = time.perf_counter(); import {m}; d = time.perf_counter() - t; "
            "kb = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0]; "
            "print(d, kb)").format(m=module)
    runs = []
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "src")))
        if out.returncode:
            return None
        s, kb = out.stdout.split()
        runs.append((float(s), int(kb) / 1024))
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--deep", action="store_true", help="also time the 1,000,000-deep chain")
    args = ap.parse_args()
    import retrograd
    libs = [("retrograd", retrograd)]
    try:
        import torch
        if args.threads:
            torch.set_num_threads(args.threads)
        libs.append(("torch", torch))
    except ImportError:
        torch = None
    res = {name: measure(lib, args.repeats) for name, lib in libs}
    print(f"{'0-d chain, µs/op':<22}{'forward':>10}{'backward':>10}")
    for name, (f, b) in res.items():
        print(f"{name:<22}{f:>10.2f}{b:>10.2f}")
    if torch is not None:
        (rf, rb), (tf, tb) = res["retrograd"], res["torch"]
        print(f"{'ratio torch/retrograd':<22}{tf / rf:>10.2f}{tb / rb:>10.2f}   (>1: retrograd faster)")
    if args.deep:
        for name, lib in libs:
            f, b, d = deep(lib)
            print(f"1,000,000-deep chain {name}: forward {f:.1f} s, backward {b:.1f} s, free {d:.2f} s")
    for m in ("retrograd", "numpy", "torch"):
        c = import_cost(m)
        if c:
            print(f"import {m:<10} {c[0]:.2f} s  {c[1]:.0f} MiB peak RSS")


if __name__ == "__main__":
    main()
