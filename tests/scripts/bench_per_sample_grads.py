"""Per-sample gradients of seed 001's MNIST CNN over a batch of 64: vmap(grad(loss)) with
functional_call against a loop computing each sample's gradient separately, interleaved,
single-threaded; prints the medians and their ratio. PYTHONPATH=src python3 this.py [reps]"""
import statistics
import sys
import time

from threadpoolctl import threadpool_limits

import retrograd as torch
import retrograd.nn as nn
import retrograd.nn.functional as F
from retrograd.func import functional_call, grad, vmap


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 5, padding=2)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(4, 8, 5, padding=2)
        self.fc1 = nn.Linear(7 * 7 * 8, 512)
        self.fc2 = nn.Linear(512, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.pool(x)
        x = F.relu(self.conv2(x))
        x = self.pool(x)
        x = x.view(-1, 7 * 7 * 8)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def setup(dtype, n=64):
    torch.manual_seed(0)
    net = ConvNet().to(dtype).eval()
    params = {k: v.detach() for k, v in net.named_parameters()}
    x = torch.rand(n, 1, 28, 28, dtype=dtype)
    y = torch.randint(0, 10, (n,))
    criterion = nn.CrossEntropyLoss()

    def loss_fn(p, xi, yi):
        out = functional_call(net, p, (xi.unsqueeze(0),))
        return criterion(out, yi.unsqueeze(0))
    return net, params, x, y, loss_fn


def per_sample_vmap(params, x, y, loss_fn):
    return vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x, y)


def per_sample_loop(net, params, x, y, loss_fn):
    """Each sample's gradient by its own forward and backward (autograd.grad)."""
    names = list(params)
    ps = [params[k].clone().requires_grad_() for k in names]
    rows = []
    for i in range(x.shape[0]):
        loss = loss_fn(dict(zip(names, ps)), x[i], y[i])
        rows.append(torch.autograd.grad(loss, ps))
    return {k: torch.stack([r[j] for r in rows]) for j, k in enumerate(names)}


def main(reps=7):
    with threadpool_limits(1):
        torch.set_num_threads(1)
        net, params, x, y, loss_fn = setup(torch.float32)
        tv, tl = [], []
        per_sample_vmap(params, x, y, loss_fn)
        for _ in range(reps):
            t0 = time.perf_counter()
            per_sample_vmap(params, x, y, loss_fn)
            t1 = time.perf_counter()
            per_sample_loop(net, params, x, y, loss_fn)
            t2 = time.perf_counter()
            tv.append(t1 - t0)
            tl.append(t2 - t1)
    mv, ml = statistics.median(tv), statistics.median(tl)
    print(f"vmap(grad): {mv * 1e3:.1f} ms  loop: {ml * 1e3:.1f} ms  loop/vmap = {ml / mv:.2f}x")
    return mv, ml


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
