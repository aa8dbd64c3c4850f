"""Run under ``mpirun -n N``: collectives and DistributedDataParallel, checked against one process.

``python3 dist_script.py BACKEND [OUTDIR]``: each rank writes ``OUTDIR/rank<r>.json`` (or prints it)
with ``{"rank": r, "world_size": n, "checks": {name: bool}}``.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
import retrograd as torch  # noqa: E402
import retrograd.distributed as dist  # noqa: E402
import retrograd.nn as nn  # noqa: E402
from retrograd.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from retrograd.utils.data import DistributedSampler  # noqa: E402

dist.init_process_group(backend=sys.argv[1] if len(sys.argv) > 1 else "gloo")
rank, ws = dist.get_rank(), dist.get_world_size()
checks = {}

# --- collectives ---
t = torch.tensor([float(rank + 1), 2.0 * (rank + 1)])
dist.all_reduce(t)
s = sum(range(1, ws + 1))
checks["all_reduce_sum"] = t.tolist() == [s, 2.0 * s]
for op, want in [(dist.ReduceOp.MAX, ws), (dist.ReduceOp.MIN, 1), (dist.ReduceOp.AVG, s / ws),
                 (dist.ReduceOp.PRODUCT, float(np.prod(range(1, ws + 1))))]:
    u = torch.tensor([float(rank + 1)])
    dist.all_reduce(u, op=op)
    checks[f"all_reduce_{op.name}"] = abs(u.item() - want) < 1e-6
iv = torch.tensor([rank + 1, 10], dtype=torch.int64)
dist.all_reduce(iv)
checks["all_reduce_int"] = iv.tolist() == [s, 10 * ws] and iv.dtype == torch.int64
b = torch.full((2, 3), float(rank))
if rank == 0:
    b = torch.arange(6.0).reshape(2, 3)
dist.broadcast(b, src=0)
checks["broadcast"] = b.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
out = [torch.zeros(2) for _ in range(ws)]
dist.all_gather(out, torch.tensor([float(rank), -float(rank)]))
checks["all_gather"] = [o.tolist() for o in out] == [[float(r), -float(r)] for r in range(ws)]
r = torch.tensor([float(rank + 1)])
dist.reduce(r, dst=0)
checks["reduce"] = (r.item() == s) if rank == 0 else (r.item() == rank + 1)
objs = []
dist.all_gather_object(objs, {"rank": rank})
checks["all_gather_object"] = objs == [{"rank": q} for q in range(ws)]
gl = [torch.zeros(2) for _ in range(ws)] if rank == 0 else None
dist.gather(torch.tensor([float(rank), 1.0]), gl, dst=0)
checks["gather"] = rank != 0 or [t.tolist() for t in gl] == [[float(q), 1.0] for q in range(ws)]
sc = torch.zeros(3)
dist.scatter(sc, [torch.full((3,), float(q)) for q in range(ws)] if rank == 0 else None, src=0)
checks["scatter"] = sc.tolist() == [float(rank)] * 3
cat = torch.zeros(2 * ws)
dist.all_gather_into_tensor(cat, torch.tensor([float(rank), 5.0]))
checks["all_gather_into_tensor"] = cat.tolist() == [v for q in range(ws) for v in (float(q), 5.0)]
if ws > 1:
    box = torch.zeros(2)
    if rank == 0:
        dist.send(torch.tensor([3.0, 4.0]), dst=1)
    elif rank == 1:
        checks["send_recv"] = dist.recv(box, src=0) == 0 and box.tolist() == [3.0, 4.0]
dist.barrier()

# --- DDP: same gradients as one process on the whole batch ---
torch.manual_seed(100 + rank)           # different initial weights on each rank...
model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
ddp = DDP(model)                        # ...until DDP copies rank 0's everywhere
params0 = [p.detach().clone() for p in model.parameters()]
torch.manual_seed(7)
X, Y = torch.randn(8 * ws, 3), torch.randn(8 * ws, 2)
sampler = DistributedSampler(list(range(len(X))), shuffle=False)
idx = torch.tensor(list(sampler))
loss = ((ddp(X[idx]) - Y[idx]) ** 2).mean()
loss.backward()
ddp_grads = [p.grad.clone() for p in model.parameters()]

ref = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
ref.load_state_dict(dict(zip(model.state_dict(), params0)))
((ref(X) - Y) ** 2).mean().backward()
checks["ddp_same_start"] = all(np.array_equal(a.numpy(), b_.detach().numpy())
                               for a, b_ in zip(params0, ref.parameters()))
checks["ddp_grads"] = all(np.allclose(g.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)
                          for g, p in zip(ddp_grads, ref.parameters()))
checks["ddp_state_dict"] = all(k.startswith("module.") for k in ddp.state_dict())

# no_sync: local accumulation, averaged by the next synchronised backward
model.zero_grad()
with ddp.no_sync():
    ((ddp(X[idx]) - Y[idx]) ** 2).mean().backward()
local = [p.grad.clone() for p in model.parameters()]
gathered = [torch.zeros(local[0].shape) for _ in range(ws)]
dist.all_gather(gathered, local[0])
checks["no_sync_local"] = ws == 1 or not all(np.allclose(gathered[0].numpy(), g.numpy()) for g in gathered[1:])
((ddp(X[idx]) - Y[idx]) ** 2).mean().backward()
checks["no_sync_then_sync"] = all(np.allclose(p.grad.numpy(), 2 * q.grad.numpy(), rtol=1e-5, atol=1e-6)
                                  for p, q in zip(model.parameters(), ref.parameters()))

# find_unused_parameters: a layer the forward skips does not hold the reduction back
class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.used, self.unused = nn.Linear(3, 2), nn.Linear(3, 2)

    def forward(self, x):
        return self.used(x)


torch.manual_seed(3)
two = DDP(TwoHeads(), find_unused_parameters=True)
two(X[idx]).pow(2).mean().backward()
g = two.module.used.weight.grad.clone()
ref2 = TwoHeads()
ref2.load_state_dict(two.module.state_dict())
ref2(X).pow(2).mean().backward()
checks["find_unused"] = np.allclose(g.numpy(), ref2.used.weight.grad.numpy(), rtol=1e-5, atol=1e-6) \
    and two.module.unused.weight.grad is None
strict = DDP(TwoHeads())
strict(X[idx]).pow(2).mean().backward()
try:
    strict(X[idx])
    checks["unfinished_reduction_error"] = False
except RuntimeError as e:
    checks["unfinished_reduction_error"] = "Expected to have finished reduction" in str(e)

# --- bucketed DDP: 10 SGD steps equal one process on the combined batch ---
class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 3, 3)
        self.fc1 = nn.Linear(3 * 4 * 4, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(torch.relu(self.conv(x)).flatten(1))))


torch.set_default_dtype(torch.float64)
for as_view in (False, True):
    torch.manual_seed(11)
    net = Small()
    ref = Small()
    ref.load_state_dict(net.state_dict())
    ddp = DDP(net, bucket_cap_mb=0.0005, gradient_as_bucket_view=as_view)   # several buckets
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    ropt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    gen = torch.Generator().manual_seed(5)
    for step in range(10):
        xb, yb = torch.randn(4 * ws, 1, 6, 6, generator=gen), torch.randint(0, 4, (4 * ws,), generator=gen)
        mine = slice(4 * rank, 4 * rank + 4)
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(xb[mine]), yb[mine]).backward()
        opt.step()
        ropt.zero_grad()
        nn.functional.cross_entropy(ref(xb), yb).backward()
        ropt.step()
    tag = "view" if as_view else "copy"
    checks[f"ddp_10_steps_{tag}"] = all(np.allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-12)
                                        for a, b in zip(net.parameters(), ref.parameters()))
    info = ddp._get_ddp_logging_data()
    checks[f"ddp_buckets_{tag}"] = info["num_buckets"] > 2 and len(info["bucket_sizes"]) == info["num_buckets"]
    if ws > 1:
        # the first bucket's all-reduce started while backward was still producing gradients
        checks[f"ddp_overlap_{tag}"] = info["bucket_start_times"][0] < info["backward_end_time"] \
            and info["avg_backward_compute_comm_overlap_time"] > 0
    if as_view:
        checks["ddp_grad_is_bucket_view"] = all(np.shares_memory(p.grad._data, ddp.reducer.where[id(p)][0].buf)
                                                 for p in net.parameters())


# --- find_unused_parameters with a head only rank 0 uses: every rank receives its average ---
class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(3, 2), nn.Linear(3, 2)

    def forward(self, x, use_b):
        return self.a(x) + (self.b(x) if use_b else 0)


torch.manual_seed(4)
br = DDP(Branchy(), find_unused_parameters=True)
solo = Branchy()
solo.load_state_dict(br.module.state_dict())
xs = torch.randn(5, 3, generator=torch.Generator().manual_seed(rank))
br(xs, rank == 0).pow(2).sum().backward()
solo(xs, True).pow(2).sum().backward()
gb0 = solo.b.weight.grad.clone()
dist.broadcast(gb0, 0)
gb = br.module.b.weight.grad
checks["unused_here_used_elsewhere"] = gb is not None and np.allclose(gb.numpy(), gb0.numpy() / ws)
torch.set_default_dtype(torch.float32)

report = json.dumps({"rank": rank, "world_size": ws, "checks": checks})
if len(sys.argv) > 2:
    with open(os.path.join(sys.argv[2], f"rank{rank}.json"), "w") as f:
        f.write(report)
else:
    print(report, flush=True)
dist.destroy_process_group()
