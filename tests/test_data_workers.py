"""DataLoader with worker processes: same batches as in-process, seeding, worker info,
iterable sharding, persistent workers, errors that name the worker and the sample, timeouts."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import retrograd
from retrograd.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info


class Squares(Dataset):
    def __len__(self):
        return 23

    def __getitem__(self, i):
        return np.float32(i * i), i


class WhoAmI(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return {"worker": info.id, "n": info.num_workers, "seed": info.seed,
                "draw": float(retrograd.rand(1).item()), "pid": os.getpid()}


class FailsAt(Dataset):
    def __init__(self, bad):
        self.bad = bad

    def __len__(self):
        return 16

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"cannot read sample {i}")
        return i


class Sharded(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        lo, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(lo, self.n, step))


class Slow(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(1.5)
        return i


class Dies(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        os.kill(os.getpid(), signal.SIGKILL)


def _flat(batches):
    return [(b[0].tolist(), b[1].tolist()) for b in batches]


def test_workers_give_the_same_batches_in_order():
    ref = _flat(DataLoader(Squares(), batch_size=4))
    for nw, pf in [(1, 2), (2, 2), (3, 1), (2, 4)]:
        assert _flat(DataLoader(Squares(), batch_size=4, num_workers=nw, prefetch_factor=pf)) == ref


def test_workers_with_seeded_shuffle_match_main_process():
    def run(nw):
        g = retrograd.Generator().manual_seed(11)
        return _flat(DataLoader(Squares(), batch_size=5, shuffle=True, generator=g, num_workers=nw))
    assert run(2) == run(0)


def test_worker_info_and_seeds():
    calls = []
    out = list(DataLoader(WhoAmI(), batch_size=2, num_workers=2, worker_init_fn=calls.append,
                          generator=retrograd.Generator().manual_seed(3)))
    workers = [b["worker"].tolist() for b in out]
    assert workers == [[0, 0], [1, 1], [0, 0], [1, 1]]        # round robin over the workers
    seeds = {b["worker"][0].item(): b["seed"][0].item() for b in out}
    assert seeds[1] == seeds[0] + 1                           # base seed + worker id
    assert len({b["pid"][0].item() for b in out}) == 2 and os.getpid() not in {b["pid"][0].item() for b in out}
    draws = [d for b in out for d in b["draw"].tolist()]
    assert len(set(draws)) == len(draws)                      # workers' generators are seeded differently
    again = list(DataLoader(WhoAmI(), batch_size=2, num_workers=2, generator=retrograd.Generator().manual_seed(3)))
    assert [d for b in again for d in b["draw"].tolist()] == draws


def test_worker_init_fn_runs_in_each_worker():
    def init(worker_id):
        np.random.seed(100 + worker_id)

    class NpDraw(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return np.random.randint(1 << 30)
    a = [b.tolist() for b in DataLoader(NpDraw(), batch_size=1, num_workers=2, worker_init_fn=init)]
    b = [b.tolist() for b in DataLoader(NpDraw(), batch_size=1, num_workers=2, worker_init_fn=init)]
    assert a == b


def test_worker_error_names_worker_and_sample():
    with pytest.raises(ValueError) as ei:
        list(DataLoader(FailsAt(13), batch_size=4, num_workers=2))
    msg = str(ei.value)
    assert "Caught ValueError in DataLoader worker process 1" in msg    # batch 3 goes to worker 1
    assert "sample index 13" in msg
    assert "cannot read sample 13" in msg and "Traceback" in msg


def test_worker_init_fn_error():
    def init(worker_id):
        raise RuntimeError("init failed")
    with pytest.raises(RuntimeError, match="(?s)in DataLoader worker process 0.*init failed"):
        list(DataLoader(Squares(), batch_size=4, num_workers=1, worker_init_fn=init))


def test_iterable_dataset_sharded_over_workers():
    out = [b.tolist() for b in DataLoader(Sharded(10), batch_size=2, num_workers=2)]
    assert sorted(x for b in out for x in b) == list(range(10))
    assert out[0] == [0, 2] and out[1] == [1, 3]


def test_persistent_workers_across_epochs():
    dl = DataLoader(WhoAmI(), batch_size=4, num_workers=2, persistent_workers=True)
    pids1 = {p for b in dl for p in b["pid"].tolist()}
    pids2 = {p for b in dl for p in b["pid"].tolist()}
    assert pids1 == pids2 and len(pids1) == 2
    # an epoch broken off early does not leak its batches into the next one
    it = iter(dl)
    next(it)
    assert sum(len(b["pid"]) for b in dl) == 8
    dl._iterator._shutdown_workers()


def test_timeout():
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.3 seconds"):
        list(DataLoader(Slow(), batch_size=1, num_workers=1, timeout=0.3))


def test_dead_worker_is_reported():
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        list(DataLoader(Dies(), batch_size=1, num_workers=1, timeout=10))


def test_tensor_dataset_through_workers():
    x = retrograd.tensor(np.arange(24, dtype=np.float32).reshape(12, 2))
    y = retrograd.tensor(np.arange(12))
    out = list(DataLoader(TensorDataset(x, y), batch_size=5, num_workers=2))
    assert [b[1].tolist() for b in out] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11]]
    assert out[0][0].dtype == retrograd.float32


class Uneven(Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i == 0:
            time.sleep(1.5)      # the first batch is slow
        return i


def test_in_order_false_hands_out_batches_as_they_come():
    out = [b.tolist() for b in DataLoader(Uneven(), batch_size=3, num_workers=2, in_order=False)]
    assert sorted(out) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    assert out[0] != [0, 1, 2]               # the slow first batch did not hold the others back
    ordered = [b.tolist() for b in DataLoader(Uneven(), batch_size=3, num_workers=2)]
    assert ordered == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]


def test_error_inside_a_subset_names_both_indices():
    from retrograd.utils.data import Subset
    sub = Subset(FailsAt(13), list(range(16))[::-1])     # subset index 2 is dataset index 13
    with pytest.raises(ValueError, match=r"sample index 2 \(index 13 of the subset's dataset\)"):
        list(DataLoader(sub, batch_size=4, num_workers=1))


_HANG_SCRIPT = """
import json, sys
from retrograd.utils.data import DataLoader, IterableDataset, get_worker_info

class Sharded(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        lo, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(lo, 10, step))

dl = DataLoader(Sharded(), batch_size=3, num_workers=2, in_order=False, persistent_workers=sys.argv[1] == "1")
print(json.dumps([[b.tolist() for b in dl] for _ in range(2)]))
"""


def _torch_batches(make_dataset, **kw):
    torch = pytest.importorskip("torch")
    return [b.tolist() for b in torch.utils.data.DataLoader(make_dataset(torch), **kw)]


def _torch_sharded(torch):
    class TSharded(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            lo, step = (0, 1) if info is None else (info.id, info.num_workers)
            return iter(range(lo, 10, step))
    return TSharded()


@pytest.mark.parametrize("persistent", [False, True])
def test_in_order_false_over_an_iterable_dataset_ends_the_epoch(persistent):
    # Run in a child process with a time limit, so that a loader that never ends fails the test.
    import json
    import subprocess
    import sys
    src = os.path.dirname(os.path.dirname(retrograd.__file__))
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        r = subprocess.run([sys.executable, "-c", _HANG_SCRIPT, str(int(persistent))], env=env,
                           capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("DataLoader(IterableDataset, num_workers=2, in_order=False) did not finish its epoch")
    assert r.returncode == 0, r.stderr
    epochs = json.loads(r.stdout)
    ref = sorted(_torch_batches(_torch_sharded, batch_size=3, num_workers=2, in_order=False,
                                persistent_workers=persistent))
    assert ref == [[0, 2, 4], [1, 3, 5], [6, 8], [7, 9]]
    assert [sorted(e) for e in epochs] == [ref, ref]


class ShardedFails(IterableDataset):
    """Worker 0's stream breaks at sample 4 (which ends that stream); worker 1's runs to 11."""

    def __iter__(self):
        info = get_worker_info()
        for i in range(info.id, 12, info.num_workers):
            if i == 4:
                raise ValueError("bad sample 4")
            yield i


def _torch_shardedfails(torch):
    class T(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            for i in range(info.id, 12, info.num_workers):
                if i == 4:
                    raise ValueError("bad sample 4")
                yield i
    return T()


def _torch_failsat(torch):
    class T(torch.utils.data.Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            if i == 5:
                raise ValueError(f"cannot read sample {i}")
            return i
    return T()


def _drain(dl):
    # Like a training loop that catches a worker's error and carries on.
    it, out = iter(dl), []
    while True:
        try:
            out.append(next(it).tolist())
        except StopIteration:
            return out
        except ValueError:
            out.append("error")


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("in_order", [True, False])
@pytest.mark.parametrize("kind", ["map", "iterable"])
def test_iteration_goes_on_after_a_worker_error(kind, in_order, persistent):
    ours, theirs = (FailsAt(5), _torch_failsat) if kind == "map" else (ShardedFails(), _torch_shardedfails)
    # timeout: a loader that stops delivering fails the test instead of blocking it
    kw = dict(batch_size=2, num_workers=2, in_order=in_order, persistent_workers=persistent, timeout=10)
    torch = pytest.importorskip("torch")
    dl, tdl = DataLoader(ours, **kw), torch.utils.data.DataLoader(theirs(torch), **kw)
    # in_order=False hands batches out as the workers deliver them: compare them as a set
    same = (lambda a, b: a == b) if in_order else (lambda a, b: sorted(map(str, a)) == sorted(map(str, b)))
    ref = _drain(tdl)
    assert same(_drain(dl), ref)
    assert "error" in ref and (len(ref) > ref.index("error") + 1 or not in_order)
    if persistent:   # the next epoch is whole again
        assert same(_drain(dl), _drain(tdl))
        dl._iterator._shutdown_workers()
        tdl._iterator._shutdown_workers()


def test_worker_init_fn_error_is_reported_by_every_later_batch():
    def init(worker_id):
        raise RuntimeError("init failed")
    it = iter(DataLoader(Squares(), batch_size=4, num_workers=1, worker_init_fn=init))
    for _ in range(3):      # the first batch and the ones after it: the original error each time
        with pytest.raises(RuntimeError) as ei:
            next(it)
        msg = str(ei.value)
        assert "init failed" in msg and "Traceback" in msg and "in worker_init_fn" in msg, msg
        assert "UnboundLocalError" not in msg


_KILLED_PARENT = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
from retrograd.utils.data import DataLoader, Dataset

class Busy(Dataset):
    def __len__(self):
        return 1000
    def __getitem__(self, i):
        time.sleep(0.2)
        return i

it = iter(DataLoader(Busy(), batch_size=1, num_workers=2, prefetch_factor=20))
next(it)
print(" ".join(str(w.pid) for w in it._workers), flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_exit_promptly_when_the_main_process_is_killed(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(_KILLED_PARENT)
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    p = subprocess.Popen([sys.executable, str(script), src], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(x) for x in p.stdout.readline().split()]
        assert len(pids) == 2
        p.kill()
        p.wait()
        t0 = time.time()

        def alive(pid):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    return f.read().split(") ")[1][0] != "Z"
            except OSError:
                return False
        while any(alive(pid) for pid in pids) and time.time() - t0 < 10:
            time.sleep(0.05)
        # 20 prefetched samples of 0.2 s each: finishing them would take 4 s; a worker that
        # watches its parent is gone almost at once.
        assert not any(alive(pid) for pid in pids), time.time() - t0
        assert time.time() - t0 < 1.5
    finally:
        if p.poll() is None:
            p.kill()
