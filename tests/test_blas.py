"""ops._blas: the hot paths' matrix products through MKL's cblas where MKL is installed.

Its products must equal NumPy's within float rounding, for every layout it takes (trans
flags, row-strided views, out=, batches with broadcasting), and fall back to NumPy for
everything else. Tests that need MKL skip cleanly where it is not installed or where
RETROGRAD_BLAS=numpy keeps it off."""
import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

import retrograd
from retrograd import _threads
from retrograd.ops import _blas
from helpers import blas_lib, in_forked_child, needs_torch, on_blas, torch

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "src"))
HAVE_MKL = blas_lib("mkl") is not None
HAVE_ONEDNN = blas_lib("onednn") is not None
needs_onednn = pytest.mark.skipif(not HAVE_ONEDNN, reason="oneDNN (pip install onednn-cpu-gomp) is not installed, "
                                  "or RETROGRAD_BLAS=numpy")


def needs_mkl(f):
    """Run on MKL (whatever this CPU picks), skipped where it is not installed."""
    return pytest.mark.skipif(not HAVE_MKL, reason="MKL (pip install mkl) is not installed, or RETROGRAD_BLAS=numpy")(
        pytest.mark.usefixtures("on_mkl")(f))
TOL = {np.float32: 2e-5, np.float64: 1e-13}


@pytest.fixture(params=["mkl", "openblas", "onednn"])
def any_blas(request):
    """Each library ops._blas can call (where installed), whatever this CPU would pick."""
    yield from on_blas(request.param)


@pytest.fixture
def every_size(monkeypatch):
    """Let small products through to MKL too (the layouts, not the sizes, are under test)."""
    monkeypatch.setattr(_blas, "_MIN_MACS", 0)
    monkeypatch.setattr(_blas, "_pays", lambda m, n, k: True)


@pytest.fixture
def one_thread():
    retrograd.set_num_threads(1)
    yield
    _threads._adaptive()


def _rand(rng, shape, dt, transposed=False):
    if transposed:
        return rng.standard_normal(shape[:-2] + shape[-2:][::-1]).astype(dt).swapaxes(-1, -2)
    return rng.standard_normal(shape).astype(dt)


def _close(r, e, dt, k):
    assert r.shape == e.shape and r.dtype == e.dtype
    np.testing.assert_allclose(r, e, rtol=TOL[dt], atol=TOL[dt] * max(k, 1) ** 0.5 * 4)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("m,k,n", [(33, 47, 29), (1, 64, 80), (64, 1, 80), (80, 64, 1), (16, 784, 512)])
def test_2d_products_equal_numpy(any_blas, every_size, one_thread, dt, ta, tb, m, k, n):
    rng = np.random.default_rng(0)
    a = _rand(rng, (m, k), dt, ta)
    b = _rand(rng, (k, n), dt, tb)
    r = _blas.try_matmul(a, b)
    assert r is not None              # the BLAS took it (no copy of a transposed operand needed)
    _close(r, np.matmul(a, b), dt, k)
    out = np.full((m, n), np.nan, dt)
    assert _blas.matmul(a, b, out=out) is out
    _close(out, np.matmul(a, b), dt, k)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_row_strided_views_and_output_slices(any_blas, every_size, dt):
    rng = np.random.default_rng(1)
    big = rng.standard_normal((40, 70)).astype(dt)
    a = big[3:30, 5:50]                       # leading dimension 70, not 45
    b = rng.standard_normal((45, 33)).astype(dt)
    bt = rng.standard_normal((33, 90)).astype(dt)[:, 10:55].T    # transposed with a leading dimension 90
    obuf = np.zeros((30, 50), dt)
    out = obuf[2:29, 4:37]
    assert _blas.try_matmul(a, b, out) is out
    _close(out, np.matmul(a, b), dt, 45)
    assert obuf[0].sum() == 0 and obuf[:, :4].sum() == 0      # nothing outside the slice written
    _close(_blas.try_matmul(a, bt), np.matmul(a, bt), dt, 45)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("ashape,bshape", [((4, 24, 40), (40, 36)), ((4, 24, 40), (4, 40, 36)),
                                           ((24, 40), (3, 40, 36)), ((2, 3, 24, 40), (3, 40, 36)),
                                           ((2, 1, 24, 40), (1, 5, 40, 36)), ((5, 1, 24, 40), (1, 40, 36))])
@pytest.mark.parametrize("trans", [False, True])
def test_batched_products_equal_numpy(any_blas, every_size, one_thread, dt, ashape, bshape, trans):
    rng = np.random.default_rng(2)
    a = _rand(rng, ashape, dt, trans)
    b = _rand(rng, bshape, dt, not trans)
    r = _blas.try_matmul(a, b)
    assert r is not None
    _close(r, np.matmul(a, b), dt, 40)
    out = np.empty(np.broadcast_shapes(ashape[:-2], bshape[:-2]) + (24, 36), dt)
    assert _blas.matmul(a, b, out=out) is out
    _close(out, np.matmul(a, b), dt, 40)


def test_attention_head_views(any_blas, every_size, one_thread):
    """(B, T, H, D) projections viewed as (B, H, T, D): batch dimensions that do not merge."""
    rng = np.random.default_rng(3)
    q = rng.standard_normal((4, 32, 3, 16)).astype(np.float32).transpose(0, 2, 1, 3)
    k = rng.standard_normal((4, 32, 3, 16)).astype(np.float32).transpose(0, 2, 3, 1)
    r = _blas.try_matmul(q, k)
    assert r is not None
    _close(r, np.matmul(q, k), np.float32, 16)
    p = np.ascontiguousarray(np.matmul(q, k))
    _close(_blas.try_matmul(p, q), np.matmul(p, q), np.float32, 32)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_openblas_gives_numpys_bits_and_threads_itself(on_openblas, one_thread, monkeypatch, dt):
    """NumPy's own OpenBLAS by ctypes: NumPy's products to the bit (the same library and
    call), every size taken (no shape is MKL's to win), nothing split over retrograd's
    workers (OpenBLAS's own pool threads the product)."""
    assert _blas.backend() == "openblas" and "OpenBLAS" in _blas.describe()
    assert _blas.mkl_gemm(dt) is None and _blas.mkl_gemm_packed(dt) is None
    rng = np.random.default_rng(11)
    for m, k, n in ((200, 300, 150), (16, 784, 512), (300, 40, 300)):
        a, b = _rand(rng, (m, k), dt), _rand(rng, (k, n), dt, True)
        assert _blas._pays(m, n, k)
        r = _blas.try_matmul(a, b)
        assert r is not None and np.array_equal(r, np.matmul(a, b))
    monkeypatch.setattr(_blas, "_split_at", [0])
    retrograd.set_num_threads(2)
    calls = []
    monkeypatch.setattr(_blas, "_run", lambda c: calls.append(c))
    a = _rand(rng, (400, 300), dt)
    assert _blas._split() > 1 << 40 and _blas._team_of() is None
    np.testing.assert_allclose(_blas.try_matmul(a, a.T), np.matmul(a, a.T), rtol=TOL[dt] * 10, atol=TOL[dt] * 100)
    assert calls == []


@needs_onednn
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_onednn_threads_itself_and_leaves_float64_to_openblas(on_onednn, monkeypatch, dt):
    """oneDNN's sgemm takes float32 products of every layout (the layout tests above run on
    it too); float64 ones go to NumPy's OpenBLAS (NumPy's bits). Nothing is split over
    retrograd's workers: OpenMP's count, set per calling thread, follows retrograd's."""
    lib = on_onednn
    assert _blas.backend() == "onednn" and "oneDNN" in _blas.describe()
    assert _blas.mkl_gemm(dt) is None and _blas.mkl_gemm_packed(dt) is None
    rng = np.random.default_rng(12)
    calls = []
    monkeypatch.setattr(_blas, "_run", lambda c: calls.append(c))
    get = lib.cdll.omp_get_max_threads
    try:
        for n in (1, 2, 3, 1):
            retrograd.set_num_threads(n)
            for m, k, n_ in ((200, 300, 150), (16, 784, 512), (300, 40, 300)):
                a, b = _rand(rng, (m, k), dt), _rand(rng, (k, n_), dt, True)
                assert _blas._pays(m, n_, k)
                out = np.full((m, n_), np.nan, dt)      # beta = 0: what out held is never read
                r = _blas.try_matmul(a, b, out)
                assert r is out
                if dt == np.float64:
                    assert np.array_equal(r, np.matmul(a, b))
                else:
                    _close(r, np.matmul(a, b), dt, k)
            if dt == np.float32:
                assert get() == n
    finally:
        _threads._adaptive()
    assert calls == [] and _blas._split() > 1 << 40 and _blas._team_of() is None


@needs_onednn
def test_onednn_products_do_not_depend_on_the_thread_count(on_onednn):
    """The same bits on one thread and on three (a resumed run on another load reproduces
    the first), including few-row products with a long inner dimension."""
    rng = np.random.default_rng(13)
    try:
        for m, k, n in ((16, 784, 512), (8, 100000, 8), (1024, 128, 512), (64, 4096, 288)):
            a, b = _rand(rng, (m, k), np.float32), _rand(rng, (k, n), np.float32)
            got = []
            for t in (1, 3):
                retrograd.set_num_threads(t)
                got.append(_blas.try_matmul(a, b))
            assert np.array_equal(got[0], got[1])
            exact = a.astype(np.float64) @ b.astype(np.float64)
            assert np.abs(got[0] - exact).max() <= 4 * np.abs(np.matmul(a, b) - exact).max() + 1e-6
    finally:
        _threads._adaptive()


def _child_onednn(q):
    from retrograd.ops import _blas
    rng = np.random.default_rng(6)
    a = rng.standard_normal((400, 300)).astype(np.float32)
    b = rng.standard_normal((300, 350)).astype(np.float32)
    q.put((_blas.backend(), float(np.abs(_blas.matmul(a, b) - np.matmul(a, b)).max())))


@needs_onednn
def test_onednn_in_a_forked_child(on_onednn):
    """A forked child (a DataLoader worker) runs oneDNN products after its parent ran them
    on two OpenMP threads (GNU OpenMP's pool is not the child's: it runs them on one)."""
    retrograd.set_num_threads(2)
    try:
        a = np.random.default_rng(7).standard_normal((256, 256)).astype(np.float32)
        _close(_blas.matmul(a, a), np.matmul(a, a), np.float32, 256)
        assert on_onednn.cdll.omp_get_max_threads() == 2
        name, err = in_forked_child(_child_onednn)
        assert name == "onednn" and err < 1e-3
    finally:
        _threads._adaptive()


_STORM = """
import signal, sys
import numpy as np
import retrograd
from retrograd.ops import _blas
retrograd.set_num_threads(int(sys.argv[1]))
rng = np.random.default_rng(0)
x = rng.standard_normal((256, 392)).astype(np.float32)
w = rng.standard_normal((512, 392)).astype(np.float32)
ref = _blas.try_matmul(x, w.T)
hits = [0]
def count(signum, frame):
    hits[0] += 1
signal.signal(signal.SIGALRM, count)
signal.setitimer(signal.ITIMER_REAL, 5e-5, 5e-5)
keep, wrong = [], 0
for i in range(400):
    r = _blas.try_matmul(x, w.T)
    keep.append(np.empty(int(rng.integers(100, 20000)), np.float32))    # (the heap in use)
    if len(keep) > 20:
        keep.pop(int(rng.integers(0, 20)))
    wrong += not np.array_equal(r, ref)
signal.setitimer(signal.ITIMER_REAL, 0, 0)
print(_blas.backend(), hits[0], wrong)
"""


@needs_onednn
@pytest.mark.parametrize("threads", [1, 2])
def test_onednn_products_under_a_storm_of_signals(threads):
    """Signals handled every 50 us while oneDNN multiplies with a long inner dimension (its
    kernels then run with the stack pointer in a heap workspace: see _blas._SignalGuard):
    the heap stays whole (glibc aborted within 200 products before the guard) and every
    product is right."""
    env = dict(os.environ, PYTHONPATH=SRC, RETROGRAD_BLAS="onednn")
    env.pop("PYTHONFAULTHANDLER", None)         # (its alternate stack would hide the fault)
    r = subprocess.run([sys.executable, "-c", _STORM, str(threads)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    name, hits, wrong = r.stdout.split()
    assert name == "onednn" and int(hits) > 100 and int(wrong) == 0


def _blocked_now():
    import signal
    return signal.pthread_sigmask(signal.SIG_BLOCK, [])


@needs_onednn
def test_onednn_calls_block_asynchronous_signals(on_onednn, every_size, monkeypatch):
    """Inside each oneDNN call (products and convolutions) the thread's asynchronous signals
    are blocked, a signal sent meanwhile stays pending and is handled when the call returns;
    faults stay deliverable; the mask is the caller's again afterwards."""
    import signal
    import threading
    lib = on_onednn
    seen = []
    real = lib._sgemm

    def spy(*args):
        seen.append(_blocked_now())
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        seen.append(signal.sigpending())
        return real(*args)

    got = []
    prev = signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
    before = _blocked_now()
    try:
        monkeypatch.setattr(lib, "_sgemm", spy)
        a = np.random.default_rng(3).standard_normal((64, 96)).astype(np.float32)
        _close(_blas.try_matmul(a, a.T), np.matmul(a, a.T), np.float32, 96)
        for _ in range(100):            # (Python runs its handlers between bytecodes)
            if got:
                break
    finally:
        signal.signal(signal.SIGUSR1, prev)
    inside, pending = seen
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGCHLD, signal.SIGUSR1, signal.SIGPROF):
        assert s in inside
    for s in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL):
        assert s not in inside
    assert signal.SIGUSR1 in pending and got == [signal.SIGUSR1]
    assert _blocked_now() == before and signal.SIGUSR1 not in signal.sigpending()


_WORKERS = """
import os, signal
import numpy as np
import retrograd
from retrograd.ops import _blas
def tasks():
    return set(os.listdir("/proc/self/task"))
first = tasks()
retrograd.set_num_threads(2)
a = np.random.default_rng(1).standard_normal((600, 600)).astype(np.float32)
_blas.try_matmul(a, a)
new = tasks() - first
masks = []
for t in new:
    with open(f"/proc/self/task/{t}/status") as f:
        blk = next(int(ln.split()[1], 16) for ln in f if ln.startswith("SigBlk:"))
    masks.append(int(bool(blk >> (signal.SIGINT - 1) & 1)))
print(_blas.backend(), len(new), sum(masks))
"""


@needs_onednn
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc")
def test_onednn_openmp_workers_never_take_signals():
    """GNU OpenMP's workers, started inside a guarded call, keep its blocked mask: a Ctrl-C
    never lands on a thread whose stack pointer is in the heap."""
    env = dict(os.environ, PYTHONPATH=SRC, RETROGRAD_BLAS="onednn")
    r = subprocess.run([sys.executable, "-c", _WORKERS], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    name, new, blocked = r.stdout.split()
    assert name == "onednn" and int(new) >= 1 and blocked == new


def _beside_torch(code, blas):
    """stdout of ``code`` run in a fresh process with products on ``blas`` (skipped where
    PyTorch is not installed)."""
    env = dict(os.environ, PYTHONPATH=SRC, RETROGRAD_BLAS=blas)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=180)
    if r.returncode != 0 and "No module named 'torch'" in r.stderr:
        pytest.skip("PyTorch is not installed")
    assert r.returncode == 0, r.stderr
    return r.stdout


@needs_onednn
def test_onednn_beside_torch_openmp_two_threads():
    """PyTorch's GNU OpenMP (its own renamed copy) and oneDNN's (the system's) in one
    process, both on two threads: right products from both."""
    code = ("import torch, numpy as np, retrograd\n"
            "from retrograd.ops import _blas\n"
            "torch.set_num_threads(2); retrograd.set_num_threads(2)\n"
            "x = torch.randn(300, 300); (x @ x).sum()\n"
            "a = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)\n"
            "for _ in range(3):\n"
            "    e = float(np.abs(_blas.matmul(a, a) - a.astype(np.float64) @ a).max())\n"
            "    t = torch.from_numpy(a); d = float((t @ t - torch.from_numpy(a @ a)).abs().max())\n"
            "print(_blas.backend(), e, d)\n")
    name, err, d = _beside_torch(code, "onednn").split()
    assert name == "onednn" and float(err) < 1e-2 and float(d) < 1e-2


@pytest.mark.parametrize("case", ["odd_inner_stride", "negative_stride", "int", "complex", "one_d", "mixed_dtypes",
                                  "broadcast_operand", "overlapping_out"])
def test_products_mkl_does_not_take_stay_with_numpy(every_size, case):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((20, 30)).astype(np.float32)
    b = rng.standard_normal((30, 10)).astype(np.float32)
    out = None
    if case == "odd_inner_stride":
        a = rng.standard_normal((20, 60)).astype(np.float32)[:, ::2]
    elif case == "negative_stride":
        a = a[::-1]
    elif case == "int":
        a, b = (a * 10).astype(np.int64), (b * 10).astype(np.int64)
    elif case == "complex":
        a = a.astype(np.complex64)
        b = b.astype(np.complex64)
    elif case == "one_d":
        b = b[:, 0].copy()
    elif case == "mixed_dtypes":
        b = b.astype(np.float64)
    elif case == "broadcast_operand":
        b = np.broadcast_to(np.float32(1.5), (30, 10))
    elif case == "overlapping_out":
        a = rng.standard_normal((30, 30)).astype(np.float32)
        out = a[:, :10]
    assert _blas.try_matmul(a, b, out) is None
    expect = np.matmul(a, b) if out is None else np.matmul(a, b.copy())
    r = _blas.matmul(a, b, out=out)
    if case == "broadcast_operand":     # (matmul copies it out and may take the dense product)
        _close(r, expect, np.float32, 30)
    else:
        np.testing.assert_array_equal(r, expect)


@pytest.mark.parametrize("ashape,bshape", [((0, 5), (5, 3)), ((4, 0), (0, 3)), ((4, 5), (5, 0)),
                                           ((0, 4, 5), (5, 3)), ((2, 4, 0), (2, 0, 3)), ((3, 0, 5), (3, 5, 2))])
def test_empty_products(every_size, ashape, bshape):
    a = np.ones(ashape, np.float32)
    b = np.ones(bshape, np.float32)
    r = _blas.matmul(a, b)
    e = np.matmul(a, b)
    assert r.shape == e.shape and r.dtype == e.dtype
    np.testing.assert_array_equal(r, e)


def test_dimensions_beyond_32_bit_ints_fall_back(every_size):
    # strides BLAS would take as a leading dimension > 2^31 - 1 (never read: the product is refused)
    base = np.zeros(4, np.float32)
    a = np.lib.stride_tricks.as_strided(base, (2, 2), (4 * 2 ** 31, 4))
    b = np.ones((2, 2), np.float32)
    assert _blas.try_matmul(a, b) is None
    # a dimension of 2^31 (zero pages: never touched, the product is refused before any work)
    try:
        tall = np.zeros((2 ** 31, 1), np.float32)
    except MemoryError:
        pytest.skip("cannot reserve 8 GiB of address space here")
    assert _blas.try_matmul(tall, np.ones((1, 1), np.float32)) is None
    assert _blas._layout((2, 2 ** 31), (4 * 2 ** 31, 4), 4) is None


def test_environment_switch_and_lazy_load():
    code = ("import os, retrograd, numpy as np\n"
            "from retrograd.ops import _blas\n"
            "maps = open('/proc/self/maps').read()\n"
            "print('loaded_at_import', 'libmkl' in maps, _blas._state[0] is None)\n"
            "a = np.ones((256, 256), np.float32)\n"
            "r = retrograd.from_numpy(a) @ retrograd.from_numpy(a)\n"
            "print('backend', _blas.backend(), float(r[0, 0]))\n")
    env = dict(os.environ, PYTHONPATH=SRC)
    installed = HAVE_MKL or any(os.sep in c and os.path.exists(c) for c in _blas._candidates())
    have = {"mkl": installed, "openblas": blas_lib("openblas") is not None, "onednn": HAVE_ONEDNN, "numpy": True}
    # MKL's fast paths run on Intel's CPUs only; oneDNN's kernels follow the instruction sets
    order = ("mkl", "onednn") if _blas._intel_cpu() else ("onednn", "openblas")
    auto = next((k for k in order if have[k]), "numpy")
    for setting in ("numpy", "mkl", "openblas", "onednn", None):
        if setting is None:
            env.pop("RETROGRAD_BLAS", None)
        else:
            env["RETROGRAD_BLAS"] = setting
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[0] == "loaded_at_import False True"
        want = auto if setting is None else setting if have[setting] else "numpy"
        assert lines[1] == f"backend {want} 256.0"


@needs_mkl
def test_split_products_follow_the_thread_count(every_size, monkeypatch):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((300, 200)).astype(np.float32)
    b = rng.standard_normal((200, 260)).astype(np.float32)
    monkeypatch.setattr(_blas, "_split_at", [0])
    seen = []
    real = _blas._run
    monkeypatch.setattr(_blas, "_run", lambda calls: (seen.append(len(calls)), real(calls)))
    try:
        for n in (1, 2, 3):
            retrograd.set_num_threads(n)
            assert _threads.blas_threads() == n
            _close(_blas.try_matmul(a, b), np.matmul(a, b), np.float32, 200)
            _close(_blas.try_matmul(a[:40], b), np.matmul(a[:40], b), np.float32, 200)   # split by columns
            bb = rng.standard_normal((6, 200, 50)).astype(np.float32)
            _close(_blas.try_matmul(a[None, :50], bb), np.matmul(a[None, :50], bb), np.float32, 200)
    finally:
        _threads._adaptive()
    assert seen == [2, 2, 2, 3, 3, 3]      # one thread: one call each, no hand-off


def test_thread_count_reads_the_adaptive_choice():
    retrograd.set_num_threads(3)
    assert _threads.blas_threads() == 3
    _threads._adaptive()
    if _threads._env_threads() is None and _threads._load:
        _threads._load[0].current = 1
        assert _threads.blas_threads() == 1
        _threads._load[0].current = None
        assert _threads.blas_threads() == 1       # no split before the load has been read


def _child_product(q):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((400, 300)).astype(np.float32)
    b = rng.standard_normal((300, 350)).astype(np.float32)
    r = _blas.matmul(a, b)
    q.put(float(np.abs(r - np.matmul(a, b)).max()))


@needs_mkl
def test_fork_after_split_products(monkeypatch):
    """A forked child (a DataLoader worker) runs split products after the parent ran some."""
    monkeypatch.setattr(_blas, "_split_at", [0])
    retrograd.set_num_threads(2)
    try:
        rng = np.random.default_rng(7)
        a = rng.standard_normal((256, 256)).astype(np.float32)
        _close(_blas.matmul(a, a), np.matmul(a, a), np.float32, 256)
        assert in_forked_child(_child_product) < 1e-3
    finally:
        _threads._adaptive()


@needs_mkl
def test_beside_torch_openmp_two_threads():
    """With PyTorch (GNU OpenMP) imported first, two-thread products are right (no second
    OpenMP runtime is loaded: MKL runs sequential)."""
    code = ("import torch, numpy as np, retrograd\n"
            "from retrograd.ops import _blas\n"
            "torch.set_num_threads(2); retrograd.set_num_threads(2)\n"
            "x = torch.randn(300, 300); (x @ x).sum()\n"
            "a = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)\n"
            "print(_blas.backend(), float(np.abs(_blas.matmul(a, a) - a.astype(np.float64) @ a).max()))\n"
            "print('iomp' in open('/proc/self/maps').read())\n")
    first, second = _beside_torch(code, "mkl").splitlines()[-2:]
    name, err = first.split()
    assert name == "mkl" and float(err) < 1e-2
    assert second == "False"


def _train_steps(lib, use_mkl):
    """Two SGD steps of a small conv + linear model; returns the loss values and the final
    parameters."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 32, 16, 16)).astype(np.float32)
    y = rng.integers(0, 10, 4)
    conv_w = (rng.standard_normal((32, 32, 3, 3)) * 0.05).astype(np.float32)
    fc1_w = (rng.standard_normal((256, 32 * 16 * 16)) * 0.01).astype(np.float32)
    fc2_w = (rng.standard_normal((10, 256)) * 0.05).astype(np.float32)
    model = lib.nn.Sequential(lib.nn.Conv2d(32, 32, 3, padding=1), lib.nn.ReLU(), lib.nn.Flatten(),
                              lib.nn.Linear(32 * 16 * 16, 256), lib.nn.ReLU(), lib.nn.Linear(256, 10))
    with lib.no_grad():
        for mod, w in ((model[0], conv_w), (model[3], fc1_w), (model[5], fc2_w)):
            mod.weight.copy_(lib.from_numpy(w))
            mod.bias.zero_()
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    state = _blas._state[0]
    if lib is retrograd and not use_mkl:
        _blas._state[0] = False
    try:
        losses = []
        for _ in range(2):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(lib.from_numpy(x)), lib.from_numpy(y))
            loss.backward()
            opt.step()
            losses.append(float(loss.item()))
    finally:
        _blas._state[0] = state
    return losses, [p.detach().numpy().copy() for p in model.parameters()]


@needs_torch
@needs_mkl
def test_training_step_with_and_without_mkl_matches_torch(one_thread):
    ref_l, ref_p = _train_steps(torch, True)
    for use in (True, False):
        losses, params = _train_steps(retrograd, use)
        np.testing.assert_allclose(losses, ref_l, rtol=1e-5)
        for p, q in zip(params, ref_p):
            np.testing.assert_allclose(p, q, rtol=1e-4, atol=1e-5)


def test_an_incomplete_install_is_passed_over(tmp_path):
    """MKL's runtime ends the process when a library it loads at the first product is missing:
    such an install is not used."""
    (tmp_path / "libmkl_rt.so.3").write_bytes(b"")
    assert not _blas._complete(str(tmp_path / "libmkl_rt.so.3"))
    for name in ("libmkl_core.so.3", "libmkl_sequential.so.3", "libmkl_def.so.3"):
        (tmp_path / name).write_bytes(b"")
    assert _blas._complete(str(tmp_path / "libmkl_rt.so.3"))


def test_no_split_inside_single_blas():
    # convolution's parallel sample runs hold single_blas: their products must not split again
    from retrograd import _threads
    retrograd.set_num_threads(2)
    try:
        assert _threads.blas_threads() == 2
        with _threads.single_blas():
            assert _threads.blas_threads() == 1
            with _threads.single_blas():
                assert _threads.blas_threads() == 1
            assert _threads.blas_threads() == 1
        assert _threads.blas_threads() == 2
    finally:
        _threads._adaptive()
