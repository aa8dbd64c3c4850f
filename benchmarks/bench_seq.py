"""Sequence, attention and resampling layers: one forward + backward, retrograd vs PyTorch.

Both run in this process on the same shapes; figures are the median of N runs in ms and
their ratio. Single-threaded by default (OMP/OPENBLAS/MKL threads set to 1 before numpy
and torch load); --threads leaves the libraries' defaults.

    PYTHONPATH=src python3 benchmarks/bench_seq.py [--reps 10] [--threads]
"""
import os
import sys

if "--threads" not in sys.argv:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
import retrograd  # noqa: E402

try:
    import torch
    if "--threads" not in sys.argv:
        torch.set_num_threads(1)
except ImportError:
    torch = None

CASES = [
    ("LSTM(32, 64), L=20, N=16", lambda nn: nn.LSTM(32, 64), (20, 16, 32), lambda m, x: m(x)[0]),
    ("GRU(32, 64, 2 layers, bidirectional)", lambda nn: nn.GRU(32, 64, 2, bidirectional=True), (20, 16, 32),
     lambda m, x: m(x)[0]),
    ("MultiheadAttention(64, 4), L=32, N=16", lambda nn: nn.MultiheadAttention(64, 4), (32, 16, 64),
     lambda m, x: m(x, x, x)[0]),
    ("TransformerEncoderLayer(64, 4, 128)", lambda nn: nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0),
     (32, 16, 64), lambda m, x: m(x)),
    ("ConvTranspose2d(64, 32, 4, s2, p1), 16x16", lambda nn: nn.ConvTranspose2d(64, 32, 4, 2, 1),
     (16, 64, 16, 16), lambda m, x: m(x)),
    ("Upsample x2 bilinear, 32x32", lambda nn: nn.Upsample(scale_factor=2, mode="bilinear"), (16, 32, 32, 32),
     lambda m, x: m(x)),
    ("Upsample x2 nearest, 32x32", lambda nn: nn.Upsample(scale_factor=2), (16, 32, 32, 32), lambda m, x: m(x)),
    ("ReflectionPad2d(2), 32x32", lambda nn: nn.ReflectionPad2d(2), (16, 32, 32, 32), lambda m, x: m(x)),
]


def _time(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--threads", action="store_true")
    args = ap.parse_args()
    for name, make, shape, call in CASES:
        a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        row = [name]
        for lib in ([retrograd, torch] if torch is not None else [retrograd]):
            m = make(lib.nn)

            def step(lib=lib, m=m):
                x = lib.from_numpy(a.copy()).requires_grad_(True)
                call(m, x).sum().backward()
            row.append(_time(step, args.reps))
        if len(row) == 3:
            print(f"{row[0]:<42} retrograd {row[1]:8.1f} ms   torch {row[2]:8.1f} ms   ratio {row[1] / row[2]:5.2f}")
        else:
            print(f"{row[0]:<42} retrograd {row[1]:8.1f} ms")


if __name__ == "__main__":
    main()
