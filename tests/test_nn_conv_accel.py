"""The compiled depthwise kernels (numba, optional) against the NumPy path that stays the
reference, PyTorch and finite differences."""
import numpy as np
import pytest

import retrograd
from retrograd.ops import _accel, conv
from helpers import needs_torch, torch


@pytest.fixture(autouse=True)
def _own_kernels(own_conv):
    """(retrograd's own convolution kernels are under test here, not oneDNN's)"""


numba_only = pytest.mark.skipif(_accel.kernels() is None, reason="numba is not installed")

# (padding, dilation, kernel): stride 1, the geometries the kernels take
GEOMS = [(1, 1, 3), (0, 1, 3), (2, 2, 3), (2, 1, 5), ((1, 0), 1, (3, 2)), (3, 1, 3)]


def _pair(v):
    return v if isinstance(v, tuple) else (v, v)


def _run(x, w, g, padding, dilation):
    xt = retrograd.tensor(x, requires_grad=True)
    wt = retrograd.tensor(w, requires_grad=True)
    y = retrograd.nn.functional.conv2d(xt, wt, padding=padding, dilation=dilation, groups=w.shape[0])
    y.backward(retrograd.tensor(g))
    return y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()


def _arrays(dtype, pad, dil, k, seed=0):
    rng = np.random.default_rng(seed)
    k = _pair(k)
    x = rng.standard_normal((3, 4, 9, 8)).astype(dtype)
    w = rng.standard_normal((4, 1) + k).astype(dtype)
    p = conv._P((1, 1), tuple((a, a) for a in _pair(pad)), _pair(dil), 4)
    oh, ow = conv._out_size(tuple(s + 2 * a for s, a in zip(x.shape[2:], _pair(pad))), k, p)
    g = rng.standard_normal((3, 4, oh, ow)).astype(dtype)
    return x, w, g


@numba_only
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pad,dil,k", GEOMS)
def test_depthwise_kernels_match_numpy_path(pad, dil, k, dtype, monkeypatch):
    x, w, g = _arrays(dtype, pad, dil, k)
    fast = _run(x, w, g, pad, dil)
    monkeypatch.setattr(_accel, "_KERNELS", [None])
    ref = _run(x, w, g, pad, dil)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, r in zip(fast, ref):
        assert a.dtype == r.dtype and a.shape == r.shape
        np.testing.assert_allclose(a, r, rtol=tol, atol=tol)


@numba_only
def test_depthwise_kernels_run(monkeypatch):
    """The kernels are what the depthwise path calls where numba is installed."""
    calls = []
    k = _accel.kernels()

    class Spy:
        def __getattr__(self, name):
            calls.append(name)
            return getattr(k, name)
    monkeypatch.setattr(_accel, "_KERNELS", [Spy()])
    _run(*_arrays(np.float32, 1, 1, 3), 1, 1)
    assert {"dw_corr3", "dw_weight_grad3"} <= set(calls) and not {"dw_corr", "dw_weight_grad"} & set(calls)
    calls.clear()
    _run(*_arrays(np.float64, 1, 1, 3), 1, 1)         # (float64: the general weight gradient)
    assert {"dw_corr3", "dw_weight_grad"} <= set(calls) and "dw_weight_grad3" not in calls
    calls.clear()
    _run(*_arrays(np.float32, 2, 1, 5), 2, 1)
    assert {"dw_corr", "dw_weight_grad"} <= set(calls) and not {"dw_corr3", "dw_weight_grad3"} & set(calls)


@numba_only
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pad,dil,bias", [(1, 1, False), (1, 1, True), (0, 1, True), (2, 2, False),
                                          ((1, 0), (2, 1), True), (3, 1, False)])
def test_3x3_depthwise_kernel_gives_the_general_kernels_bits(pad, dil, bias, dtype):
    """dw_corr3 adds the nine taps in dw_corr's order from zero (then the bias): the same
    bits, NaN, inf, -0.0 and all, on rows long and short (vector loop and remainder)."""
    k = _accel.kernels()
    rng = np.random.default_rng(5)
    (plh, phh), (plw, phw) = (_pair(pad)[0],) * 2, (_pair(pad)[1],) * 2
    d0, d1 = _pair(dil)
    for h, wd in ((9, 8), (4, 37)):
        x = rng.standard_normal((2, 3, h, wd)).astype(dtype)
        x[0, 0, 1, :3] = [np.nan, np.inf, -np.inf]
        x[1, 2] = -0.0
        wk = rng.standard_normal((3, 3, 3)).astype(dtype)
        wk[1, 0, 0] = np.inf
        b = rng.standard_normal(3).astype(dtype) if bias else np.empty(0, dtype)
        hp, wp = h + plh + phh, wd + plw + phw
        oh, ow = hp - 2 * d0, wp - 2 * d1
        outs = []
        for three in (False, True):
            y = np.empty((2, 3, oh, ow), dtype)
            buf = np.zeros(hp * wp + 2 * d1, dtype)
            with np.errstate(invalid="ignore"):
                if three:
                    k.dw_corr3(x, wk, y, buf, plh, plw, wp, d0, d1, b, dtype(0))
                else:
                    k.dw_corr(x, wk, y, buf, np.empty(oh * wp, dtype), plh, plw, wp, d0, d1, b)
            outs.append(y)
        np.testing.assert_array_equal(outs[1].view(f"u{x.itemsize}"), outs[0].view(f"u{x.itemsize}"))


@numba_only
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pad,dil", [(1, 1), (0, 1), (2, 2), ((1, 0), (2, 1)), (3, 1)])
def test_3x3_depthwise_weight_gradient_gives_the_general_kernels_bits(pad, dil, dtype):
    """dw_weight_grad3 sums each tap's products in dw_weight_grad's order: the same bits,
    NaN, inf and -0.0 included, on rows long and short, over a channel range."""
    k = _accel.kernels()
    rng = np.random.default_rng(6)
    (plh, phh), (plw, phw) = (_pair(pad)[0],) * 2, (_pair(pad)[1],) * 2
    d0, d1 = _pair(dil)
    for h, wd in ((9, 8), (4, 37)):
        x = rng.standard_normal((2, 4, h, wd)).astype(dtype)
        x[0, 0, 1, :3] = [np.nan, np.inf, -np.inf]
        x[1, 2] = -0.0
        hp, wp = h + plh + phh, wd + plw + phw
        oh, ow = hp - 2 * d0, wp - 2 * d1
        g = rng.standard_normal((2, 4, oh, ow)).astype(dtype)
        g[1, 3, 0, 0] = np.inf
        outs = []
        for f in (k.dw_weight_grad, k.dw_weight_grad3):
            gw = np.full((4, 3, 3), 7, dtype)
            with np.errstate(invalid="ignore"):
                f(x, g, gw, np.zeros(hp * wp + 2 * d1, dtype), np.empty((3, 3, ow), dtype), plh, plw, wp, d0, d1,
                  1, 4)
            outs.append(gw)
        assert (outs[0][0] == 7).all()          # (channels outside the range untouched)
        np.testing.assert_array_equal(outs[1].view(f"u{x.itemsize}"), outs[0].view(f"u{x.itemsize}"))


@needs_torch
@pytest.mark.parametrize("where", ["input", "weight", "grad"])
def test_depthwise_kernels_nonfinite(where):
    """NaN, inf and -inf planted as the op table plants them spread as in PyTorch."""
    x, w, g = _arrays(np.float64, 1, 1, 3, seed=1)
    a = {"input": x, "weight": w, "grad": g}[where]
    a.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    ours = _run(x, w, g, 1, 1)
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w, requires_grad=True)
    y = torch.nn.functional.conv2d(xt, wt, padding=1, groups=4)
    y.backward(torch.tensor(g))
    for a, r in zip(ours, (y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy())):
        np.testing.assert_allclose(a, r, rtol=1e-10, atol=1e-10, equal_nan=True)


@needs_torch
@pytest.mark.parametrize("pad,dil,k", GEOMS)
def test_depthwise_kernels_match_torch(pad, dil, k):
    x, w, g = _arrays(np.float32, pad, dil, k, seed=2)
    ours = _run(x, w, g, pad, dil)
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w, requires_grad=True)
    y = torch.nn.functional.conv2d(xt, wt, padding=pad, dilation=dil, groups=4)
    y.backward(torch.tensor(g))
    for a, r in zip(ours, (y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy())):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4)


def test_depthwise_gradcheck():
    rng = np.random.default_rng(3)
    x = retrograd.tensor(rng.standard_normal((2, 3, 5, 4)), requires_grad=True)
    w = retrograd.tensor(rng.standard_normal((3, 1, 3, 3)), requires_grad=True)

    def f(x, w):
        return retrograd.nn.functional.conv2d(x, w, padding=1, groups=3)
    assert retrograd.autograd.gradcheck(f, (x, w))
    assert retrograd.autograd.gradgradcheck(f, (x, w))


# (x shape, weight shape, padding, dilation, groups) of stride-1 convolutions (the wide layout)
WIDE = [((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), (1, 1), 1), ((2, 4, 6, 7), (6, 2, 2, 3), (2, 0), (1, 2), 2),
        ((3, 2, 5, 5), (2, 2, 5, 5), (2, 2), (1, 1), 1), ((1, 2, 9, 4), (3, 2, 1, 1), (0, 0), (1, 1), 1)]


@numba_only
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,pad,dil,groups", WIDE)
def test_col2im_kernel_gives_the_numpy_paths_bits(xs, ws, pad, dil, groups, dtype, monkeypatch):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    p = conv._P((1, 1), tuple((a, a) for a in pad), dil, groups)
    _, _, oh, ow, _ = conv._wide_geom(xs, ws[2:], p)
    g = rng.standard_normal((xs[0], ws[0], oh, ow)).astype(dtype)
    fast = conv._bwd_in_wide(g, w, xs, p)
    monkeypatch.setattr(_accel, "_KERNELS", [None])
    ref = conv._bwd_in_wide(g, w, xs, p)
    assert fast.dtype == ref.dtype and fast.flags.c_contiguous
    np.testing.assert_array_equal(fast, ref)      # the same sums in the same order


@needs_torch
@pytest.mark.parametrize("xs,ws,pad,dil,groups", WIDE)
def test_stride1_input_gradient_matches_torch(xs, ws, pad, dil, groups):
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    res = []
    for lib in (retrograd, torch):
        xt = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        y = lib.nn.functional.conv2d(xt, wt, padding=pad, dilation=dil, groups=groups)
        y.backward(lib.ones_like(y) * 0.5)
        res.append((y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()))
    for a, r in zip(*res):
        np.testing.assert_allclose(a, r, rtol=1e-10, atol=1e-10)


# (x shape, weight shape, stride, padding, dilation, groups) of the column path
STRIDED = [((2, 3, 9, 8), (4, 3, 3, 3), (2, 2), (1, 1), (1, 1), 1), ((2, 4, 11, 9), (6, 2, 3, 2), (2, 3), (2, 0), (1, 2), 2),
           ((3, 2, 8, 8), (2, 2, 1, 1), (2, 2), (0, 0), (1, 1), 1)]


@numba_only
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,st,pad,dil,groups", STRIDED)
def test_strided_col2im_kernel_gives_the_numpy_paths_bits(xs, ws, st, pad, dil, groups, dtype, monkeypatch):
    rng = np.random.default_rng(6)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    p = conv._P(st, tuple((a, a) for a in pad), dil, groups)
    out = conv._out_size(tuple(s + 2 * a for s, a in zip(xs[2:], pad)), ws[2:], p)
    g = rng.standard_normal((xs[0], ws[0]) + out).astype(dtype)
    g[0, 0, 0, 0] = np.inf
    fast = conv._bwd_in(g, w, xs, p)
    monkeypatch.setattr(_accel, "_KERNELS", [None])
    ref = conv._bwd_in(g, w, xs, p)
    assert fast.dtype == ref.dtype and fast.flags.c_contiguous
    np.testing.assert_array_equal(fast, ref)


@needs_torch
@pytest.mark.parametrize("xs,ws,st,pad,dil,groups", STRIDED)
def test_strided_input_gradient_matches_torch(xs, ws, st, pad, dil, groups):
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    res = []
    for lib in (retrograd, torch):
        xt = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        y = lib.nn.functional.conv2d(xt, wt, stride=st, padding=pad, dilation=dil, groups=groups)
        y.backward(lib.ones_like(y) * 0.5)
        res.append((y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()))
    for a, r in zip(*res):
        np.testing.assert_allclose(a, r, rtol=1e-10, atol=1e-10)


# (x shape, weight shape, stride, padding, output_padding, dilation, groups)
TRANSPOSED = [((2, 4, 5, 5), (4, 3, 4, 4), 2, 1, 0, 1, 1), ((2, 4, 5, 6), (4, 3, 3, 2), (2, 3), (1, 0), (1, 0), (1, 2), 2),
              ((2, 3, 7), (3, 2, 3), 2, 1, 1, 1, 1)]


@numba_only
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,st,pad,op,dil,groups", TRANSPOSED)
def test_transposed_col2im_kernel_gives_the_numpy_paths_bits(xs, ws, st, pad, op, dil, groups, dtype, monkeypatch):
    rng = np.random.default_rng(8)
    x = rng.standard_normal(xs).astype(dtype)
    x.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    w = retrograd.tensor(rng.standard_normal(ws).astype(dtype))
    b = retrograd.tensor(rng.standard_normal(ws[1] * groups).astype(dtype))
    f = retrograd.nn.functional.conv_transpose2d if len(xs) == 4 else retrograd.nn.functional.conv_transpose1d
    fast = f(retrograd.tensor(x), w, b, st, pad, op, groups, dil).numpy()
    monkeypatch.setattr(_accel, "_KERNELS", [None])
    ref = f(retrograd.tensor(x), w, b, st, pad, op, groups, dil).numpy()
    assert fast.dtype == ref.dtype and fast.flags.c_contiguous
    np.testing.assert_array_equal(fast, ref)


@numba_only
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,st,pad,dil,groups", STRIDED + [(xs, ws, (1, 1), pad, dil, g) for xs, ws, pad, dil, g in WIDE])
def test_im2col_kernels_give_the_numpy_paths_bits(xs, ws, st, pad, dil, groups, dtype, monkeypatch):
    """Forward and weight gradient (both from the columns) of the column and wide paths."""
    monkeypatch.setattr(conv, "_direct_use", lambda *a: False)    # (the direct kernels: test_conv_direct.py)
    rng = np.random.default_rng(9)
    x = rng.standard_normal(xs).astype(dtype)
    x.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    w = rng.standard_normal(ws).astype(dtype)
    p = conv._P(st, tuple((a, a) for a in pad), dil, groups)
    out = conv._out_size(tuple(s + 2 * a for s, a in zip(xs[2:], pad)), ws[2:], p)
    g = rng.standard_normal((xs[0], ws[0]) + out).astype(dtype)
    fast = conv._fwd(x, w, p), conv._bwd_w(x, g, ws, p)
    monkeypatch.setattr(_accel, "_KERNELS", [None])
    ref = conv._fwd(x, w, p), conv._bwd_w(x, g, ws, p)
    for a, r in zip(fast, ref):
        assert a.dtype == r.dtype and a.shape == r.shape
        np.testing.assert_array_equal(a, r)
