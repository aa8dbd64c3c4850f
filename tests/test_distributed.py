"""retrograd.distributed in one process, DataParallel, DistributedSampler, and (under mpirun) DDP."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import retrograd
import retrograd.distributed as dist
import retrograd.nn as nn
from retrograd.utils.data import DistributedSampler
from helpers import needs_torch

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def group():
    dist.init_process_group("gloo")
    yield
    dist.destroy_process_group()


def test_not_initialized_errors_like_torch():
    assert dist.is_available() and not dist.is_initialized()
    msg = "Default process group has not been initialized, please make sure to call init_process_group."
    for f in (dist.get_rank, dist.get_world_size, lambda: dist.all_reduce(retrograd.ones(1)),
              lambda: nn.parallel.DistributedDataParallel(nn.Linear(1, 1))):
        with pytest.raises(ValueError, match=msg):
            f()
    with pytest.raises(ValueError, match="Invalid backend: 'carrier-pigeon'"):
        dist.init_process_group("carrier-pigeon")
    assert not dist.is_initialized()


def test_single_process_group_needs_no_mpi(group):
    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
    assert dist.get_backend() == "gloo"
    with pytest.raises(ValueError, match="trying to initialize the default process group twice!"):
        dist.init_process_group("mpi")
    t = retrograd.tensor([1.0, 2.0])
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT):
        assert dist.all_reduce(t, op=op) is None and t.tolist() == [1.0, 2.0]
    assert dist.broadcast(t, 0, async_op=True).wait()
    out = [retrograd.zeros(2)]
    dist.all_gather(out, t)
    assert out[0].tolist() == [1.0, 2.0]
    dist.reduce(t, 0)
    dist.barrier()
    objs = []
    dist.all_gather_object(objs, {"a": 1})
    assert objs == [{"a": 1}]
    gl = [retrograd.zeros(2)]
    dist.gather(t, gl, dst=0)
    sc = retrograd.zeros(2)
    dist.scatter(sc, [retrograd.tensor([5.0, 6.0])], src=0)
    cat = retrograd.zeros(2)
    dist.all_gather_into_tensor(cat, t)
    assert gl[0].tolist() == [1.0, 2.0] and sc.tolist() == [5.0, 6.0] and cat.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="Argument ``gather_list`` must be specified on destination rank."):
        dist.gather(t, None, dst=0)
    assert "mpi4py" not in sys.modules or os.environ.get("OMPI_COMM_WORLD_SIZE")


def test_ddp_single_process_matches_plain_module(group):
    retrograd.manual_seed(0)
    m = nn.Linear(3, 2)
    ref = nn.Linear(3, 2)
    ref.load_state_dict(m.state_dict())
    ddp = nn.parallel.DistributedDataParallel(m)
    assert ddp.module is m and list(ddp.state_dict()) == ["module.weight", "module.bias"]
    x = retrograd.randn(5, 3)
    ddp(x).pow(2).sum().backward()
    ref(x).pow(2).sum().backward()
    for p, q in zip(m.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)
    with ddp.no_sync():
        assert not ddp.require_backward_grad_sync
    assert ddp.require_backward_grad_sync


def test_data_parallel_on_cpu_calls_the_module():
    m = nn.Linear(2, 2)
    dp = nn.DataParallel(m)
    assert dp.module is m and dp.device_ids == []
    x = retrograd.ones(3, 2)
    np.testing.assert_array_equal(dp(x).detach().numpy(), m(x).detach().numpy())
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    dp2 = nn.DataParallel(nn.Linear(2, 2))
    dp2.load_state_dict(dp.state_dict())
    np.testing.assert_array_equal(dp2.module.weight.detach().numpy(), m.weight.detach().numpy())


@needs_torch
@pytest.mark.parametrize("n,k,drop_last", [(10, 3, False), (10, 3, True), (7, 4, False), (2, 5, False), (12, 4, True)])
def test_distributed_sampler_matches_torch_unshuffled(n, k, drop_last):
    from torch.utils.data import DistributedSampler as TS
    for r in range(k):
        ours = DistributedSampler(range(n), num_replicas=k, rank=r, shuffle=False, drop_last=drop_last)
        theirs = TS(range(n), num_replicas=k, rank=r, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_distributed_sampler_shuffles_by_seed_and_epoch():
    def parts(epoch, seed=0):
        out = []
        for r in range(3):
            s = DistributedSampler(range(10), num_replicas=3, rank=r, seed=seed)
            s.set_epoch(epoch)
            out.append(list(s))
        return out
    a = parts(0)
    assert a == parts(0) and a != parts(1) and a != parts(0, seed=5)
    flat = [i for p in a for i in p]
    assert len(flat) == 12 and set(flat) == set(range(10))          # padded by repeating the start
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(10), num_replicas=3, rank=3)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(10))
    assert retrograd.utils.data.DistributedSampler is DistributedSampler


def _mpirun():
    for name in ("mpirun", "mpiexec"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _has_mpi4py():
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


@pytest.mark.skipif(_mpirun() is None or not _has_mpi4py(),
                    reason="needs mpirun and mpi4py (.ci/setup-mpi.sh installs them)")
@pytest.mark.parametrize("n", [2, 4])
def test_processes_under_mpirun(tmp_path, n, backend="mpi"):
    cmd = [_mpirun(), "-n", str(n)]
    probe = subprocess.run([_mpirun(), "--version"], capture_output=True, text=True)
    if "Open MPI" in probe.stdout + probe.stderr or "OpenRTE" in probe.stdout + probe.stderr:
        cmd += ["--allow-run-as-root", "--oversubscribe"]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    r = subprocess.run(cmd + [sys.executable, os.path.join(HERE, "dist_script.py"), backend, str(tmp_path)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    reports = [json.loads((tmp_path / f"rank{k}.json").read_text()) for k in range(n)]
    assert [d["rank"] for d in reports] == list(range(n)) and all(d["world_size"] == n for d in reports)
    expected = {"ddp_grads", "no_sync_then_sync", "find_unused", "unfinished_reduction_error", "ddp_10_steps_copy",
                "ddp_10_steps_view", "ddp_buckets_copy", "ddp_overlap_copy", "ddp_overlap_view",
                "ddp_grad_is_bucket_view", "unused_here_used_elsewhere"}
    for d in reports:
        assert expected <= set(d["checks"]), sorted(expected - set(d["checks"]))
        failed = [k for k, ok in d["checks"].items() if not ok]
        assert not failed, (d["rank"], failed)


def test_world_size_from_another_launcher_is_refused(monkeypatch):
    for v in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(RuntimeError, match="start the script with mpirun -n 4"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()
