"""ops._team: the spinning workers that take the shares of a split MKL product.

Their shares must give the products NumPy gives (every layout the split makes: row and
column blocks of 2-D products, batch blocks of strided batches, groups of per-matrix
calls, float32 and float64), a worker found asleep must cost nothing but its wake-up for
the next product, a worker gone must not hang its caller, and a forked child or an exiting
process must not hang either."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import retrograd
from retrograd import _threads
from retrograd.ops import _blas, _team
from helpers import blas_lib

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "src"))
HAVE_MKL = blas_lib("mkl") is not None
try:
    import numba  # noqa: F401
    HAVE_NUMBA = not os.environ.get("RETROGRAD_NO_NUMBA")
except ImportError:
    HAVE_NUMBA = False
pytestmark = [pytest.mark.skipif(not (HAVE_MKL and HAVE_NUMBA), reason="needs MKL and numba"),
              pytest.mark.usefixtures("on_mkl")]


@pytest.fixture
def two_threads(monkeypatch):
    """Two threads, every product large enough to split."""
    monkeypatch.setattr(_blas, "_split_at", [0])
    monkeypatch.setattr(_blas, "_MIN_MACS", 0)
    monkeypatch.setattr(_blas, "_pays", lambda m, n, k: True)
    retrograd.set_num_threads(2)
    yield _team.team(_blas._load(), _blas._seq)
    _threads._adaptive()


def _posted(team):
    return sum(team.seqs)


def _until_posted(team, fn, seconds=20.0):
    """Call fn until a worker has taken a share (the first call finds it asleep and wakes it)."""
    before = _posted(team)
    end = time.monotonic() + seconds
    while _posted(team) == before:
        fn()
        assert time.monotonic() < end, "no share was ever posted to a worker"


def _check(r, a, b):
    e = np.matmul(a.astype(np.float64), b.astype(np.float64))
    tol = 2e-5 if a.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(r, e, rtol=tol, atol=tol * a.shape[-1] ** 0.5 * 4)
    assert r.dtype == a.dtype


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m,k,n", [(300, 70, 40), (40, 70, 300), (2, 9, 3)])
def test_split_shares_give_numpys_products(two_threads, dt, ta, tb, m, k, n):
    rng = np.random.default_rng(m + n)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dt)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dt)
    a, b = (a.T if ta else a), (b.T if tb else b)
    _until_posted(two_threads, lambda: _blas.matmul(a, b))
    for _ in range(3):
        _check(_blas.matmul(a, b), a, b)
    out = np.full((m, n), np.nan, dt)
    _check(_blas.matmul(a, b, out=out), a, b)
    assert np.isfinite(out).all()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_batched_and_grouped_shares(two_threads, dt):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 20, 30)).astype(dt)
    b = rng.standard_normal((6, 30, 10)).astype(dt)
    _until_posted(two_threads, lambda: _blas.matmul(a, b))
    _check(_blas.matmul(a, b), a, b)
    # per-matrix calls (a broadcast batch MKL's strided batch cannot describe), grouped per worker
    c = rng.standard_normal((3, 1, 20, 30)).astype(dt)
    d = rng.standard_normal((1, 4, 30, 10)).astype(dt)
    _check(_blas.matmul(c, d), c, d)


def _posting(team, seed):
    """Operands of a product whose shares a worker has begun to take."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((64, 50)).astype(np.float32)
    b = rng.standard_normal((50, 80)).astype(np.float32)
    _until_posted(team, lambda: _blas.matmul(a, b))
    return a, b


def test_a_sleeping_worker_s_share_runs_on_the_caller(two_threads, monkeypatch):
    t = two_threads
    a, b = _posting(t, 4)
    # a worker seen asleep: nothing is posted to it, its share runs here, and it is woken
    ctls = np.zeros_like(t.ctls)           # (the worker keeps its own row: it spins on as it was)
    monkeypatch.setattr(t, "ctls", ctls)
    t.events[0].clear()
    before = _posted(t)
    _check(_blas.matmul(a, b), a, b)
    assert _posted(t) == before and t.events[0].is_set()


def test_a_worker_gone_does_not_hang_the_caller(two_threads, monkeypatch):
    t = two_threads
    a, b = _posting(t, 5)

    class Gone:
        def is_alive(self):
            return False
    # a post the worker never takes (its control row is a copy, marked asleep), its thread gone
    ctls = t.ctls.copy()
    ctls[:, _team.AWAKE] = 1
    monkeypatch.setattr(t, "ctls", ctls)
    monkeypatch.setattr(t, "threads", [Gone()] * len(t.threads))

    def asleep_later():
        time.sleep(0.05)
        ctls[:, _team.AWAKE] = 0
    import threading
    th = threading.Thread(target=asleep_later)
    th.start()
    r = _blas.matmul(a, b)
    th.join()
    _check(r, a, b)
    assert _team._state == [None]           # (no more posts to a team with a worker gone)
    _team._forget()


_CHILD = """
import os, sys, numpy as np, retrograd
from retrograd.ops import _blas, _team
_blas._split_at[0] = 0
retrograd.set_num_threads(2)
rng = np.random.default_rng(0)
a = rng.standard_normal((300, 200)).astype(np.float32)
b = rng.standard_normal((200, 260)).astype(np.float32)
t = _team.team(_blas._load(), _blas._seq)
for _ in range(20000):
    r = _blas.matmul(a, b)
    if sum(t.seqs):
        break
assert sum(t.seqs), "never posted"
e = a.astype(np.float64) @ b
pid = os.fork()
if pid == 0:
    r = _blas.matmul(a, b)
    for _ in range(50):
        r = _blas.matmul(a, b)
    os._exit(0 if np.abs(r - e).max() < 1e-3 else 3)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status), float(np.abs(_blas.matmul(a, b) - e).max()))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_forked_child_and_exit():
    """A child forked while the workers spin makes its own; both processes exit promptly."""
    env = dict(os.environ, PYTHONPATH=SRC, RETROGRAD_BLAS="mkl")
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    code, err = r.stdout.split()
    assert code == "0" and float(err) < 1e-3
    assert time.monotonic() - t0 < 60


def test_without_numba_the_pool_splits_large_products_only():
    code = ("import os; os.environ['RETROGRAD_NO_NUMBA'] = '1'\n"
            "from retrograd.ops import _blas\n"
            "print(_blas._split() == _blas._SPLIT_MACS, _blas._SPLIT_MACS > _blas._TEAM_SPLIT_MACS)\n")
    env = dict(os.environ, PYTHONPATH=SRC, RETROGRAD_BLAS="mkl")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True"]
