"""Optimizer steps: retrograd (flat buffers, its default) vs PyTorch's per-parameter loop.

Two parameter sets: the seeds' CNN (8 tensors, ~207k parameters, SGD with momentum 0.9)
and a nanoGPT-like model (4 blocks, 128 dims, vocabulary 65, context 64: 52 tensors,
~810k parameters, AdamW). Gradients are fixed random arrays; each figure is the median
time of one ``step()``, the two libraries interleaved in the same process, single-threaded
(OMP/OPENBLAS/MKL threads set to 1 before NumPy and torch load).

    PYTHONPATH=src python3 benchmarks/bench_optim.py [--rounds 9] [--steps 20]
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

CNN = [(4, 1, 5, 5), (4,), (8, 4, 5, 5), (8,), (512, 392), (512,), (10, 512), (10,)]


def gpt_shapes(n_layer=4, d=128, vocab=65, ctx=64):
    """The parameter shapes of a nanoGPT model (the head tied to the token embedding)."""
    shapes = [(vocab, d), (ctx, d)]
    for _ in range(n_layer):
        shapes += [(d,), (d,), (3 * d, d), (3 * d,), (d, d), (d,),
                   (d,), (d,), (4 * d, d), (4 * d,), (d, 4 * d), (d,)]
    return shapes + [(d,), (d,)]


CASES = [("CNN, SGD momentum 0.9", CNN, "SGD", dict(lr=0.01, momentum=0.9)),
         ("GPT 4x128, AdamW", gpt_shapes(), "AdamW", dict(lr=1e-3))]


def _params(lib, shapes, seed):
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        p = lib.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
        p.grad = lib.tensor(rng.standard_normal(s).astype(np.float32))
        out.append(p)
    return out


def _median_step(opt, steps):
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.step()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def run(rounds=9, steps=20):
    """{case: (retrograd seconds, torch seconds or None)}, medians over interleaved rounds."""
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    results = {}
    for name, shapes, cls, kw in CASES:
        ours = getattr(retrograd.optim, cls)(_params(retrograd, shapes, 0), **kw)
        theirs = getattr(torch.optim, cls)(_params(torch, shapes, 0), foreach=False, **kw) if torch else None
        for o in (ours, theirs):
            if o is not None:
                _median_step(o, 3)
        r, t = [], []
        for _ in range(rounds):
            r.append(_median_step(ours, steps))
            if theirs is not None:
                t.append(_median_step(theirs, steps))
        results[name] = (float(np.median(r)), float(np.median(t)) if t else None)
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    res = run(args.rounds, args.steps)
    print("optimizer step, 1 thread, median ms (torch: foreach=False)")
    for name, (r, t) in res.items():
        line = f"  {name:24s} retrograd {r * 1e3:7.3f}"
        if t is not None:
            line += f"   torch {t * 1e3:7.3f}   ratio {r / t:5.2f}x"
        print(line)
    return res


if __name__ == "__main__":
    main()
