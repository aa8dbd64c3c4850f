"""The blocked 2-D convolution split across intra-op threads (ops.conv._runs/_each_run): the
same bits as one thread for every thread count (with and without the numba kernels), one
thread exactly when set_num_threads(1) or the load says so, the BLAS count restored, and
PyTorch's values and finite differences on the threaded path."""
import numpy as np
import pytest

import retrograd
from retrograd import _threads
from retrograd.ops import _accel, conv
from retrograd.autograd import gradcheck, gradgradcheck
from helpers import needs_torch, torch

from test_nn_conv_blocked import GEOMS, _p, _arrays


@pytest.fixture(autouse=True)
def _own_kernels(own_conv):
    """(retrograd's own convolution kernels are under test here, not oneDNN's)"""


@pytest.fixture
def threads(monkeypatch):
    """set(n): n intra-op threads; every block a sample and every batch worth splitting. The
    user's count and the BLAS's are restored afterwards."""
    before = _threads._threads[0]
    fns = _threads._blas_thread_fns()
    blas = fns[0]() if fns is not None else None
    monkeypatch.setattr(conv, "_BLOCK_BYTES", 1)
    monkeypatch.setattr(conv, "_PAR_MACS", 0)
    submitted = []
    real = conv._executor

    class Spy:
        def submit(self, fn, *a):
            submitted.append(a)
            return real().submit(fn, *a)
    monkeypatch.setattr(conv, "_executor", Spy)

    def set_(n):
        monkeypatch.setattr(_threads, "_threads", [n])
    set_.submitted = submitted
    yield set_
    _threads._threads[0] = before
    if blas is not None:
        _threads._set_blas(blas)


def _all(x, w, g, p):
    """Forward, both gradients, kept columns and the shared-columns pass (transposed conv)."""
    y, cols = conv._fwd(x, w, p, want_cols=True)
    out = [y, conv._bwd_in(g, w, x.shape, p), conv._bwd_w(x, g, w.shape, p),
           conv._bwd_w(x, g, w.shape, p, cols)]
    if conv._blocked(x, w):
        out += list(conv._fwd_bwd_w_blocked(x, w, g, p))
    return out


@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,st,pad,dil,groups", GEOMS)
def test_thread_count_does_not_change_the_bits(xs, ws, st, pad, dil, groups, dtype, numba, threads, monkeypatch):
    if not numba:
        monkeypatch.setattr(_accel, "_KERNELS", [None])
        monkeypatch.setattr(conv, "_CONV_KERNELS", [None])
    elif _accel.kernels() is None:
        pytest.skip("numba is not installed")
    p = _p(xs, ws, st, pad, dil, groups)
    x, w, g = _arrays(xs, ws, p, dtype, 3)
    x.reshape(-1)[:2] = [np.nan, np.inf]
    threads(1)
    one = _all(x, w, g, p)
    assert not threads.submitted
    for n in (2, 3):
        threads(n)
        many = _all(x, w, g, p)
        for a, r in zip(many, one):
            assert a.dtype == r.dtype and a.shape == r.shape
            np.testing.assert_array_equal(a, r)
    assert threads.submitted          # the split ran


def test_runs_cover_the_batch_in_whole_blocks(threads):
    threads(2)
    assert conv._runs(7, 2, 1) == [(0, 4), (4, 7)]
    threads(3)
    assert conv._runs(7, 2, 1) == [(0, 2), (2, 4), (4, 7)]
    assert conv._runs(2, 1, 1) == [(0, 1), (1, 2)]
    assert conv._runs(1, 4, 1) == [(0, 1)]
    threads(1)
    assert conv._runs(64, 1, 1 << 30) == [(0, 64)]


def test_small_convolutions_stay_on_one_thread(threads, monkeypatch):
    threads(2)
    monkeypatch.setattr(conv, "_PAR_MACS", 16 << 20)
    assert conv._runs(8, 1, (16 << 20) - 1) == [(0, 8)]
    assert len(conv._runs(8, 1, 16 << 20)) == 2


def test_adaptive_count_follows_the_load(monkeypatch):
    """Without a count set, the kernels take the BLAS's load-adaptive choice (1 until known)."""
    monkeypatch.setattr(_threads, "_threads", [None])
    for v in _threads._ENV:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setattr(_threads, "tick", lambda: None)

    class Load:
        current = None
    monkeypatch.setattr(_threads, "_load", [Load()])
    assert _threads.kernel_threads() == 1
    Load.current = 1
    assert _threads.kernel_threads() == 1
    Load.current = 2
    assert _threads.kernel_threads() == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert _threads.kernel_threads() == 1
    monkeypatch.setattr(_threads, "_threads", [3])
    assert _threads.kernel_threads() == 3


def test_set_num_threads_one_never_uses_the_pool(threads, monkeypatch):
    def boom():
        raise AssertionError("pool used")
    monkeypatch.setattr(conv, "_executor", boom)
    retrograd.set_num_threads(1)
    p = _p((6, 3, 9, 9), (4, 3, 3, 3), 1, 1, 1, 1)
    x, w, g = _arrays((6, 3, 9, 9), (4, 3, 3, 3), p, np.float32, 0)
    _all(x, w, g, p)


def test_blas_count_is_restored(threads):
    fns = _threads._blas_thread_fns()
    if fns is None:
        pytest.skip("no OpenBLAS thread setter")
    _threads._set_blas(2)
    threads(2)
    p = _p((6, 3, 9, 9), (4, 3, 3, 3), 1, 1, 1, 1)
    x, w, g = _arrays((6, 3, 9, 9), (4, 3, 3, 3), p, np.float32, 0)
    _all(x, w, g, p)
    assert threads.submitted and fns[0]() == 2
    with _threads.single_blas():
        assert fns[0]() == 1
    assert fns[0]() == 2


def test_errors_in_a_thread_reach_the_caller(threads, monkeypatch):
    threads(2)

    class Boom(Exception):
        pass

    calls = []

    def run(r, i, j):
        calls.append(r)
        if r == 1:
            raise Boom
    with pytest.raises(Boom):
        conv._each_run([(0, 2), (2, 4)], run)
    assert sorted(calls) == [0, 1]


def test_threaded_training_step_and_double_backward_match_one_thread(threads):
    def step():
        retrograd.manual_seed(0)
        m = retrograd.nn.Sequential(retrograd.nn.Conv2d(3, 8, 3, padding=1), retrograd.nn.Tanh(),
                                    retrograd.nn.Conv2d(8, 4, 3, stride=2), retrograd.nn.ConvTranspose2d(4, 3, 4, 2, 1))
        x = retrograd.from_numpy(np.random.default_rng(5).standard_normal((8, 3, 12, 12)).astype(np.float32))
        x.requires_grad_(True)
        y = m(x)
        gx, = retrograd.autograd.grad((y * y).sum(), x, create_graph=True)
        (gx * gx).sum().backward()
        return [y.detach().numpy()] + [q.grad.numpy() for q in m.parameters()] + [x.grad.numpy()]
    threads(1)
    one = step()
    threads(2)
    two = step()
    assert threads.submitted
    for a, b in zip(two, one):
        np.testing.assert_array_equal(a, b)


def test_threaded_conv_gradcheck(threads):
    threads(2)
    rng = np.random.default_rng(2)
    x = retrograd.from_numpy(rng.standard_normal((4, 2, 6, 5))).requires_grad_(True)
    w = retrograd.from_numpy(rng.standard_normal((3, 2, 3, 2))).requires_grad_(True)
    b = retrograd.from_numpy(rng.standard_normal(3)).requires_grad_(True)

    def f(x, w, b):
        return retrograd.nn.functional.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2))
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))
    assert threads.submitted


@needs_torch
def test_threaded_conv_matches_torch(threads):
    threads(2)
    rng = np.random.default_rng(4)
    xa = rng.standard_normal((16, 8, 14, 14)).astype(np.float32)
    wa = rng.standard_normal((12, 8, 3, 3)).astype(np.float32)
    outs = []
    for lib in (retrograd, torch):
        x = lib.from_numpy(xa.copy()).requires_grad_(True)
        w = lib.from_numpy(wa.copy()).requires_grad_(True)
        y = lib.nn.functional.conv2d(x, w, None, 2, 1)
        (y.sin()).sum().backward()
        outs.append([y.detach().numpy(), x.grad.numpy(), w.grad.numpy()])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


# (x shape, padding, dilation, kernel) of stride-1 depthwise convolutions (the compiled path)
DW = [((6, 5, 9, 8), 1, 1, 3), ((4, 3, 7, 10), (2, 0), (1, 2), (3, 2)), ((5, 4, 6, 6), 0, 1, 5)]


@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,pad,dil,k", DW)
def test_depthwise_thread_count_does_not_change_the_bits(xs, pad, dil, k, dtype, numba, threads, monkeypatch):
    if not numba:
        monkeypatch.setattr(_accel, "_KERNELS", [None])
    elif _accel.kernels() is None:
        pytest.skip("numba is not installed")
    c = xs[1]
    k = k if isinstance(k, tuple) else (k, k)
    p = _p(xs, (c, 1) + k, 1, pad, dil, c)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal((c, 1) + k).astype(dtype)
    b = rng.standard_normal(c).astype(dtype)
    x.reshape(-1)[:2] = [np.nan, -np.inf]
    out = conv._out_size(tuple(s + lo + hi for s, (lo, hi) in zip(xs[2:], p.pad)), k, p)
    g = rng.standard_normal((xs[0], c) + out).astype(dtype)

    def all_():
        return [conv._fwd(x, w, p), conv._fwd(x, w, p, bias=b), conv._bwd_in(g, w, x.shape, p),
                conv._bwd_w(x, g, w.shape, p)]
    threads(1)
    one = all_()
    threads(2)
    two = all_()
    for a, r in zip(two, one):
        np.testing.assert_array_equal(a, r)
    if numba:
        assert threads.submitted


@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["blocked", "depthwise", "strided depthwise", "wide"])
def test_bias_inside_the_forward_gives_a_separate_adds_bits(case, dtype, numba, monkeypatch):
    """The bias added in the forward (per block, or by the depthwise kernel) rounds each
    output once, as adding it to the finished output does."""
    if not numba:
        monkeypatch.setattr(_accel, "_KERNELS", [None])
        monkeypatch.setattr(conv, "_CONV_KERNELS", [None])
    elif _accel.kernels() is None:
        pytest.skip("numba is not installed")
    monkeypatch.setattr(conv, "_BLOCK_BYTES", 1)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 4, 9, 8)).astype(dtype)
    x.reshape(-1)[3] = np.inf
    if case == "blocked":
        w, p = rng.standard_normal((6, 4, 3, 3)).astype(dtype), _p((5, 4, 9, 8), (6, 4, 3, 3), 2, 1, 1, 1)
    elif case == "wide":      # the wide layout serves float16
        x, w = x.astype(np.float16), rng.standard_normal((6, 4, 3, 3)).astype(np.float16)
        p = _p((5, 4, 9, 8), (6, 4, 3, 3), 1, 1, 1, 1)
    else:
        w = rng.standard_normal((4, 1, 3, 3)).astype(dtype)
        p = _p((5, 4, 9, 8), (4, 1, 3, 3), 2 if case.startswith("strided") else 1, 1, 1, 4)
    b = rng.standard_normal(w.shape[0]).astype(x.dtype)
    b[1] = -np.inf
    with np.errstate(invalid="ignore"):
        y = conv._fwd(x, w, p, bias=b)
        ref = conv._fwd(x, w, p)
        ref += b.reshape(1, -1, 1, 1)
    np.testing.assert_array_equal(y, ref)
    yk, cols = conv._fwd(x, w, p, want_cols=True, bias=b)
    np.testing.assert_array_equal(yk, ref)
    conv._give(cols)


@needs_torch
def test_conv_with_bias_matches_torch_on_every_path():
    rng = np.random.default_rng(9)
    for xs, ws, kw in [((4, 3, 10, 9), (5, 3, 3, 3), dict(stride=2, padding=1)),
                       ((4, 6, 10, 9), (6, 1, 3, 3), dict(padding=1, groups=6)),
                       ((4, 6, 10, 9), (6, 1, 3, 3), dict(stride=2, groups=6)),
                       ((2, 3, 7), (4, 3, 3), dict(padding=1))]:
        xa = rng.standard_normal(xs).astype(np.float32)
        wa = rng.standard_normal(ws).astype(np.float32)
        ba = rng.standard_normal(ws[0]).astype(np.float32)
        f = {3: "conv1d", 4: "conv2d"}[len(xs)]
        outs = []
        for lib in (retrograd, torch):
            x, w, b = (lib.from_numpy(a.copy()).requires_grad_(True) for a in (xa, wa, ba))
            y = getattr(lib.nn.functional, f)(x, w, b, **kw)
            y.square().sum().backward()
            outs.append([y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()])
        for a, r in zip(*outs):
            np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-3)
