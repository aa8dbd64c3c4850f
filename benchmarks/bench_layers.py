"""Per-layer microbenchmarks (forward + backward, a training step's shape): retrograd vs PyTorch.

Each case runs both libraries in this process, interleaved step by step (alternating
which goes first) so that machine load falls on both alike; the figures are medians in
ms and their ratio. Single-threaded by default (BLAS/OpenMP threads set to 1 before NumPy
and torch load, and torch.set_num_threads(1)).

    PYTHONPATH=src python3 benchmarks/bench_layers.py [--reps 30] [-k lstm] [--cpu] [--profile NAME]

``--profile NAME`` runs only retrograd's step of the first matching case under
pyinstrument and prints its profile.
"""
import os
import sys

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
import retrograd  # noqa: E402

try:
    import torch
    torch.set_num_threads(1)
except ImportError:
    torch = None


def _module_case(make, shape, call=lambda m, x: m(x)):
    """A step that builds the input, runs the module and backpropagates its sum."""
    def build(lib, rng):
        lib.manual_seed(0)
        m = make(lib.nn)
        a = rng.standard_normal(shape).astype(np.float32)

        def step():
            x = lib.from_numpy(a).requires_grad_(True)
            out = call(m, x)
            out.sum().backward()
            m.zero_grad(set_to_none=True)
        return step
    return build


def _sdpa(causal):
    def build(lib, rng):
        shape = (16, 4, 64, 32)
        qa, ka, va = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))

        def step():
            q, k, v = (lib.from_numpy(a).requires_grad_(True) for a in (qa, ka, va))
            lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal).sum().backward()
        return step
    return build


def _gather(lib, rng):
    a = rng.standard_normal((256, 1024)).astype(np.float32)
    idx = rng.integers(0, 1024, (256, 512))

    def step():
        x = lib.from_numpy(a).requires_grad_(True)
        lib.gather(x, 1, lib.from_numpy(idx)).sum().backward()
    return step


CASES = [
    ("LSTM(32, 64), L=20, N=16", _module_case(lambda nn: nn.LSTM(32, 64), (20, 16, 32), lambda m, x: m(x)[0])),
    ("LSTM(128, 256), L=35, N=20", _module_case(lambda nn: nn.LSTM(128, 256), (35, 20, 128),
                                                lambda m, x: m(x)[0])),
    ("GRU(32, 64), L=20, N=16", _module_case(lambda nn: nn.GRU(32, 64), (20, 16, 32), lambda m, x: m(x)[0])),
    ("GRU(32, 64, 2 layers, bidir)", _module_case(lambda nn: nn.GRU(32, 64, 2, bidirectional=True), (20, 16, 32),
                                                  lambda m, x: m(x)[0])),
    ("RNN(32, 64), L=20, N=16", _module_case(lambda nn: nn.RNN(32, 64), (20, 16, 32), lambda m, x: m(x)[0])),
    ("MultiheadAttention(64, 4), L=32, N=16", _module_case(lambda nn: nn.MultiheadAttention(64, 4), (32, 16, 64),
                                                           lambda m, x: m(x, x, x)[0])),
    ("MHA(64, 4) need_weights=False", _module_case(lambda nn: nn.MultiheadAttention(64, 4), (32, 16, 64),
                                                   lambda m, x: m(x, x, x, need_weights=False)[0])),
    ("sdpa (16, 4, 64, 32)", _sdpa(False)),
    ("sdpa causal (16, 4, 64, 32)", _sdpa(True)),
    ("TransformerEncoderLayer(64, 4, 128)", _module_case(
        lambda nn: nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0), (32, 16, 64))),
    ("depthwise Conv2d(32, 32, 3, g=32), 32x32", _module_case(
        lambda nn: nn.Conv2d(32, 32, 3, padding=1, groups=32), (16, 32, 32, 32))),
    ("strided Conv2d(32, 64, 3, s2, p1), 32x32", _module_case(
        lambda nn: nn.Conv2d(32, 64, 3, stride=2, padding=1), (16, 32, 32, 32))),
    ("strided Conv2d(16, 32, 5, s2, p2), 28x28", _module_case(
        lambda nn: nn.Conv2d(16, 32, 5, stride=2, padding=2), (64, 16, 28, 28))),
    ("ConvTranspose2d(64, 32, 4, s2, p1), 16x16", _module_case(
        lambda nn: nn.ConvTranspose2d(64, 32, 4, 2, 1), (16, 64, 16, 16))),
    ("Upsample x2 nearest, 32x32", _module_case(lambda nn: nn.Upsample(scale_factor=2), (16, 32, 32, 32))),
    ("gather dim 1 (256, 1024) -> (256, 512)", _gather),
]


def _measure(build, reps, clock=time.perf_counter):
    libs = [retrograd] + ([torch] if torch is not None else [])
    steps = [build(lib, np.random.default_rng(0)) for lib in libs]
    for s in steps:
        s()
        s()
    times = [[] for _ in steps]
    for r in range(reps):
        order = range(len(steps)) if r % 2 == 0 else reversed(range(len(steps)))
        for i in order:
            t = clock()
            steps[i]()
            times[i].append(clock() - t)
    return [float(np.median(t)) * 1e3 for t in times]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("-k", default="", help="only the cases whose name contains this (case-insensitive)")
    ap.add_argument("--cpu", action="store_true",
                    help="time each step by its thread's CPU time (steadier on a busy machine)")
    ap.add_argument("--profile", default=None, help="profile retrograd's step of this case")
    args = ap.parse_args()
    if args.profile:
        from pyinstrument import Profiler
        name, build = next((n, b) for n, b in CASES if args.profile.lower() in n.lower())
        step = build(retrograd, np.random.default_rng(0))
        step()
        prof = Profiler(interval=0.0002)
        prof.start()
        for _ in range(args.reps):
            step()
        prof.stop()
        print(prof.output_text(unicode=False, color=False))
        return
    print(f"{'case':<44}{'retrograd ms':>13}{'torch ms':>10}{'ratio':>7}")
    for name, build in CASES:
        if args.k.lower() not in name.lower():
            continue
        res = _measure(build, args.reps, time.thread_time if args.cpu else time.perf_counter)
        if len(res) == 2:
            print(f"{name:<44}{res[0]:13.2f}{res[1]:10.2f}{res[0] / res[1]:7.2f}", flush=True)
        else:
            print(f"{name:<44}{res[0]:13.2f}", flush=True)


if __name__ == "__main__":
    main()
