"""The seeds' CNN training step (batch 64, SGD with momentum 0.9): retrograd vs PyTorch.

Both run in this process on the same data and the same initial weights; the figures
are the median of N steps, in ms per step, and their ratio. Run it single-threaded
(the default here sets OMP/OPENBLAS/MKL threads to 1 before numpy and torch load) or
with --threads to leave the libraries' defaults.

    PYTHONPATH=src python3 benchmarks/bench_cnn.py [--steps 30] [--threads]
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
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import retrograd  # noqa: E402
from nn_models import seed_cnn  # noqa: E402


def _sgd(lib, params):
    return lib.optim.SGD(params, lr=0.01, momentum=0.9)


def _time(lib, model, x, y, steps):
    crit = lib.nn.CrossEntropyLoss()
    opt = _sgd(lib, model.parameters())
    model.train()
    times = []
    for i in range(steps + 3):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if i >= 3:
            times.append(dt)
    return float(np.median(times)) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--threads", action="store_true", help="leave the BLAS/OpenMP thread counts alone")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    rmodel = seed_cnn(retrograd)
    rx, ry = retrograd.from_numpy(x), retrograd.from_numpy(y)
    try:
        import torch
    except ImportError:
        torch = None
    results = {}
    if torch is not None:
        if not args.threads:
            torch.set_num_threads(1)
        tmodel = seed_cnn(torch)
        rmodel.load_state_dict({k: retrograd.from_numpy(v.detach().numpy().copy())
                                for k, v in tmodel.state_dict().items()})
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    # interleave the two so that machine load affects both alike
    r_runs, t_runs = [], []
    for _ in range(3):
        r_runs.append(_time(retrograd, rmodel, rx, ry, args.steps // 3 or 1))
        if torch is not None:
            t_runs.append(_time(torch, tmodel, tx, ty, args.steps // 3 or 1))
    results["retrograd"] = float(np.median(r_runs))
    threads = "default threads" if args.threads else "1 thread"
    print(f"seeds' CNN training step, batch 64, SGD momentum 0.9 ({threads}, median of {args.steps} steps)")
    print(f"  retrograd: {results['retrograd']:8.2f} ms/step")
    if torch is not None:
        results["torch"] = float(np.median(t_runs))
        print(f"  torch:     {results['torch']:8.2f} ms/step")
        print(f"  ratio:     {results['retrograd'] / results['torch']:8.2f}x")
    return results


if __name__ == "__main__":
    main()
