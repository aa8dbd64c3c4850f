"""BLAS threads on a quiet and on a busy machine: the CNN and MLP training steps.

For the seeds' CNN and a 784-512-512-10 MLP (batch 64, SGD momentum 0.9) it times, in
one process and interleaved round by round: retrograd with 1 thread and with its default
(the load-adaptive count of retrograd._threads), PyTorch with 1 thread and with its
default (one per core). Then the same with another process burning one core (``--busy``
alone runs only that). Medians in ms per step, and each default's ratio to its own
library's single-threaded time.

    PYTHONPATH=src python3 benchmarks/bench_threads.py [--rounds 7] [--steps 10] [--busy|--quiet]
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import retrograd  # noqa: E402
from retrograd import _threads  # noqa: E402
from nn_models import seed_cnn  # noqa: E402


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def _steps(lib, model, opt, x, y, n):
    crit = lib.nn.CrossEntropyLoss()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return times


def measure(rounds, steps):
    import torch
    default_torch = torch.get_num_threads()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    out = {}
    for name, build in (("CNN", seed_cnn), ("MLP", mlp)):
        tm = build(torch)
        rm = build(retrograd)
        rm.load_state_dict({k: retrograd.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
        ro = retrograd.optim.SGD(rm.parameters(), lr=0.01, momentum=0.9)
        to = torch.optim.SGD(tm.parameters(), lr=0.01, momentum=0.9)
        rx, ry, tx, ty = retrograd.from_numpy(x), retrograd.from_numpy(y), torch.from_numpy(x), torch.from_numpy(y)
        runs = {k: [] for k in ("retrograd 1", "retrograd default", "torch 1", "torch default")}
        for r in range(rounds + 1):
            retrograd.set_num_threads(1)
            t1 = _steps(retrograd, rm, ro, rx, ry, steps)
            _threads._adaptive()
            td = _steps(retrograd, rm, ro, rx, ry, steps)
            torch.set_num_threads(1)
            u1 = _steps(torch, tm, to, tx, ty, steps)
            torch.set_num_threads(default_torch)
            ud = _steps(torch, tm, to, tx, ty, steps)
            if r:          # the first round warms up
                for k, v in zip(runs, (t1, td, u1, ud)):
                    runs[k] += v
        out[name] = {k: 1e3 * float(np.median(v)) for k, v in runs.items()}
        out[name]["chosen"] = retrograd.get_num_threads()
    return out


def report(title, res):
    print(title)
    for name, r in res.items():
        print(f"  {name}: retrograd 1 thread {r['retrograd 1']:7.2f}  default {r['retrograd default']:7.2f} "
              f"({r['retrograd default'] / r['retrograd 1']:4.2f}x own 1-thread; chose {r['chosen']})   "
              f"torch 1 thread {r['torch 1']:7.2f}  default {r['torch default']:7.2f} "
              f"({r['torch default'] / r['torch 1']:4.2f}x)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--busy", action="store_true", help="only the run with a core kept busy")
    ap.add_argument("--quiet", action="store_true", help="only the run without the burner")
    a = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    if not a.busy:
        report("as the machine is (no burner), ms per step:", measure(a.rounds, a.steps))
    if not a.quiet:
        burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(1.0)
            report("another process burning one core, ms per step:", measure(a.rounds, a.steps))
        finally:
            burner.kill()
            burner.wait()


if __name__ == "__main__":
    main()
