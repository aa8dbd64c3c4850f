"""Tensors in shared memory across processes (``share_memory_``, ``retrograd.multiprocessing``).

Each spawned process costs a fresh interpreter (~1-2 s), so the tests start few of them. The
functions run by children live in this module, which spawn children import by name."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import retrograd
import retrograd.multiprocessing as rmp
from helpers import torch, needs_torch

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "src"))


# ---- run in children ----------------------------------------------------------------

def _add_one(t):
    t.add_(1)


def _train(rank, model, x, y, steps):
    retrograd.manual_seed(rank)
    opt = retrograd.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        retrograd.nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def _fill_ones(ts):
    for t in ts:
        t.fill_(1)


def _write_rank(rank, out, value):
    out[rank] = value + rank


def _fail_on_one(rank):
    if rank == 1:
        raise ValueError("rank one fails")


def _send_back(q, done):
    t = retrograd.arange(4.0).share_memory_()
    q.put(t)
    done.wait(60)


# ---- tests ----------------------------------------------------------------------------

def test_share_memory_keeps_values_and_reports_shared():
    t = retrograd.arange(6.0).reshape(2, 3)
    d = t.data
    assert not t.is_shared()
    assert t.share_memory_() is t
    assert t.is_shared() and t.untyped_storage().is_shared()
    np.testing.assert_array_equal(t.numpy(), np.arange(6.0).reshape(2, 3))
    v = t[1]                         # views made afterwards are on the shared memory too
    v.add_(10)
    assert v.is_shared() and t[1, 0].item() == 13.0
    assert t.data.is_shared() and not d.is_shared()   # the detached alias made before keeps the old memory
    assert not t.clone().is_shared()
    t.share_memory_()                # already shared: stays on the same memory
    assert t[1, 0].item() == 13.0


def test_share_memory_of_a_view_and_of_a_strided_tensor():
    base = retrograd.arange(12.0).reshape(3, 4)
    tv = base.t()                    # a transposed view: its geometry is kept
    tv.share_memory_()
    assert tv.is_shared() and tv.stride() == (1, 4)
    np.testing.assert_array_equal(tv.numpy(), np.arange(12.0).reshape(3, 4).T)


@needs_torch
def test_is_shared_semantics_match_torch():
    def run(lib):
        m = lib.nn.Linear(3, 2)
        before = [p.is_shared() for p in m.parameters()]
        w = m.weight.detach().clone()
        assert m.share_memory() is m
        t = lib.ones(3)
        return (before, [p.is_shared() for p in m.parameters()], m.weight.data.is_shared(), t.is_shared(),
                t.share_memory_().is_shared(), (t * 2).is_shared(), t[1:].is_shared(),
                bool((m.weight.detach() == w).all()), lib.zeros(2).untyped_storage().is_shared())
    assert run(retrograd) == run(torch)


def test_module_share_memory_keeps_parameters_in_place():
    m = retrograd.nn.Linear(4, 2)
    w = m.weight
    vals = w.detach().clone()
    m.share_memory()
    assert m.weight is w and w.is_shared() and m.bias.is_shared()
    np.testing.assert_array_equal(w.detach().numpy(), vals.numpy())
    with retrograd.no_grad():
        w.data.add_(1)               # .data writes reach the parameter
    np.testing.assert_array_equal(w.detach().numpy(), vals.numpy() + 1)


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_child_writes_are_seen_by_the_parent(method):
    t = retrograd.zeros(2, 3).share_memory_()
    ctx = rmp.get_context(method)
    p = ctx.Process(target=_add_one, args=(t[1],))   # a view travels as a view of the same memory
    p.start()
    p.join()
    assert p.exitcode == 0
    np.testing.assert_array_equal(t.numpy(), [[0, 0, 0], [1, 1, 1]])


def test_dtypes_empty_and_0d_tensors_travel_shared():
    ts = [retrograd.zeros(0), retrograd.zeros(3, dtype=retrograd.bool), retrograd.zeros(2, dtype=retrograd.complex64),
          retrograd.zeros(2, dtype=retrograd.bfloat16), retrograd.zeros(3, dtype=retrograd.int64), retrograd.tensor(0.0)]
    for t in ts:
        t.share_memory_()
    p = rmp.get_context("spawn").Process(target=_fill_ones, args=(ts,))
    p.start()
    p.join()
    assert p.exitcode == 0
    assert [t.tolist() for t in ts] == [[], [True] * 3, [1 + 0j] * 2, [1.0] * 2, [1] * 3, 1.0]
    assert [t.dtype for t in ts] == [retrograd.float32, retrograd.bool, retrograd.complex64, retrograd.bfloat16,
                                     retrograd.int64, retrograd.float32]


def test_tensor_through_a_queue_is_the_same_memory():
    ctx = rmp.get_context("spawn")
    q, done = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_send_back, args=(q, done))
    p.start()
    t = q.get(timeout=60)
    done.set()
    p.join()
    assert t.is_shared()
    np.testing.assert_array_equal(t.numpy(), [0, 1, 2, 3])


def test_unshared_tensor_is_copied():
    t = retrograd.zeros(3)
    p = rmp.get_context("spawn").Process(target=_add_one, args=(t,))
    p.start()
    p.join()
    assert p.exitcode == 0 and not t.is_shared()
    np.testing.assert_array_equal(t.numpy(), [0, 0, 0])


def test_hogwild_two_spawned_processes_train_the_parents_model():
    retrograd.manual_seed(0)
    model = retrograd.nn.Linear(3, 1)
    model.share_memory()
    x = retrograd.randn(32, 3)
    y = x @ retrograd.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    loss0 = retrograd.nn.functional.mse_loss(model(x), y).item()
    w0 = model.weight.detach().clone()
    ctx = rmp.get_context("spawn")
    procs = [ctx.Process(target=_train, args=(rank, model, x, y, 20)) for rank in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0, 0]
    assert not retrograd.equal(model.weight.detach(), w0)
    assert retrograd.nn.functional.mse_loss(model(x), y).item() < loss0 / 4
    assert model.weight.requires_grad and model.weight.is_leaf and model.weight.is_shared()


def test_spawn_passes_ranks_and_args():
    out = retrograd.zeros(3).share_memory_()
    assert rmp.spawn(_write_rank, args=(out, 10.0), nprocs=2) is None
    np.testing.assert_array_equal(out.numpy(), [10, 11, 0])


def test_spawn_propagates_a_child_exception():
    with pytest.raises(rmp.ProcessRaisedException, match="rank one fails") as e:
        rmp.spawn(_fail_on_one, nprocs=2)
    assert "-- Process 1 terminated with the following error:" in str(e.value)
    assert "ValueError" in str(e.value) and e.value.error_index == 1


def test_no_resource_tracker_warnings_and_torch_alias(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import torch
        import torch.multiprocessing as mp

        def work(rank, t):
            t[rank] += 1

        if __name__ == "__main__":
            mp.set_start_method("spawn", force=True)
            t = torch.zeros(2)
            t.share_memory_()
            ps = [mp.Process(target=work, args=(r, t)) for r in range(2)]
            for p in ps: p.start()
            for p in ps: p.join()
            print(torch.multiprocessing is mp, t.tolist())
    """))
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "retrograd", "run", str(script)], capture_output=True, text=True,
                       env=env, timeout=180, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "[1.0,", "1.0]"]
    assert r.stderr == ""


@needs_torch
def test_sharing_strategies_match_torch():
    import torch.multiprocessing as tmp
    assert rmp.get_all_sharing_strategies() == tmp.get_all_sharing_strategies()
    assert rmp.get_sharing_strategy() == tmp.get_sharing_strategy()
    with pytest.raises(AssertionError):
        rmp.set_sharing_strategy("nope")
    rmp.set_sharing_strategy("file_system")
    assert rmp.get_sharing_strategy() == "file_system"
    rmp.set_sharing_strategy("file_descriptor")


def test_reexports_the_multiprocessing_api():
    import multiprocessing
    for name in ("Process", "Queue", "Pool", "set_start_method", "get_context", "cpu_count", "Event"):
        assert getattr(rmp, name) is getattr(multiprocessing, name)
    assert retrograd.multiprocessing is rmp
