"""The direct kernels of few-channel stride-1 2-D convolutions (ops.conv._direct_*, with the
numba kernels of ops._accel_direct): that they run where they should and nowhere else, values
and gradients against PyTorch (float32 and float64, padding, odd sizes, batch 1, strided
inputs, bias), inf and NaN where PyTorch puts them, the NumPy path's results, the same bits
for every thread count, and finite differences (float64, first and second order)."""
import warnings

import numpy as np
import pytest

import retrograd
from retrograd import _threads
from retrograd.ops import _accel, conv
from retrograd.autograd import gradcheck, gradgradcheck
from helpers import KernelSpy, conv_arrays, needs_torch, torch


@pytest.fixture(autouse=True)
def _own_kernels(own_conv):
    """(retrograd's own convolution kernels are under test here, not oneDNN's)"""


# (x shape, weight shape, padding (lo, hi) per dim): shapes the direct kernels serve
SHAPES = [((4, 1, 12, 12), (4, 1, 5, 5), ((2, 2), (2, 2))),        # the seeds' conv1, smaller
          ((3, 4, 7, 7), (8, 4, 5, 5), ((2, 2), (2, 2))),          # conv2, smaller
          ((2, 4, 9, 7), (16, 4, 5, 5), ((2, 2), (2, 2))),         # 16 outputs, odd sizes
          ((1, 3, 11, 6), (5, 3, 5, 5), ((0, 0), (0, 0))),         # batch 1, no padding, odd channel count
          ((2, 6, 8, 10), (3, 6, 3, 3), ((1, 1), (1, 1))),         # 3x3 (forward and input gradient)
          ((3, 2, 9, 9), (1, 2, 3, 3), ((0, 1), (2, 1))),          # one output channel, uneven padding
          ((2, 3, 6, 8), (4, 3, 5, 5), ((1, 3), (4, 0))),          # uneven 5x5 padding
          ((2, 2, 6, 5), (6, 2, 5, 5), ((2, 2), (1, 3)))]          # 6 outputs: a block of 4 and a pair


def _p(pad):
    return conv._P((1, 1), pad, (1, 1), 1)


@pytest.fixture
def spy(monkeypatch):
    k = conv._direct_kernels(np.ones(conv._accel.MIN_SIZE, np.float32))
    if k is None:
        pytest.skip("numba is not installed")
    s = KernelSpy(k)
    monkeypatch.setattr(conv, "_DIRECT_KERNELS", [s])
    monkeypatch.setattr(_threads, "_threads", [1])      # (one run of samples: one call per product)
    return s


def _three(x, w, g, p, bias=None):
    return conv._fwd(x, w, p, bias=bias), conv._bwd_in(g, w, x.shape, p), conv._bwd_w(x, g, w.shape, p)


def _numpy_only(monkeypatch):
    monkeypatch.setattr(_accel, "for_arrays", lambda *a: None)


@pytest.mark.parametrize("xs,ws,pad", SHAPES)
def test_direct_kernels_run_where_they_should(xs, ws, pad, spy):
    x, w, g = conv_arrays(xs, ws, pad)
    _three(x, w, g, _p(pad))
    gin = all(ws[2 + i] - 1 - v >= 0 for i, lohi in enumerate(pad) for v in lohi)
    assert spy.calls.count("corr") == 1 + gin
    assert spy.calls.count("corr_w") == (ws[2:] == (5, 5))


@pytest.mark.parametrize("xs,ws,p", [
    ((2, 4, 8, 8), (32, 4, 5, 5), _p(((2, 2), (2, 2)))),                 # too many outputs
    ((2, 2, 8, 8), (16, 2, 5, 5), _p(((2, 2), (2, 2)))),                 # 16 outputs from too few inputs
    ((2, 40, 8, 8), (4, 40, 5, 5), _p(((2, 2), (2, 2)))),                # too many inputs
    ((2, 4, 8, 8), (16, 4, 5, 5), _p(((0, 0), (0, 0)))),                 # (the forward and weight gradient only)
    ((2, 8, 8, 8), (8, 8, 3, 3), _p(((1, 1), (1, 1)))),                  # (Winograd's)
    ((2, 4, 8, 8), (8, 4, 7, 7), _p(((3, 3), (3, 3)))),                  # kernel size
    ((2, 4, 8, 8), (8, 4, 3, 5), _p(((1, 1), (2, 2)))),
    ((2, 4, 9, 9), (8, 4, 5, 5), conv._P((2, 2), ((2, 2), (2, 2)), (1, 1), 1)),    # stride
    ((2, 4, 9, 9), (8, 4, 3, 3), conv._P((1, 1), ((2, 2), (2, 2)), (2, 2), 1)),    # dilation
    ((2, 4, 9, 9), (8, 2, 5, 5), conv._P((1, 1), ((2, 2), (2, 2)), (1, 1), 2))])   # groups
def test_direct_kernels_stay_out_elsewhere(xs, ws, p, spy):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    y = conv._fwd(x, w, p)
    conv._bwd_in(y, w, x.shape, p)
    conv._bwd_w(x, y, w.shape, p)
    if ws == (16, 4, 5, 5):       # 16 outputs, no padding: the input gradient's plane is 4x the output's
        assert spy.calls == ["corr", "corr_w"]
    else:
        assert spy.calls == []


def test_3x3_weight_gradient_keeps_the_column_path(spy):
    pad = ((1, 1), (1, 1))
    x, w, g = conv_arrays((2, 4, 8, 8), (8, 4, 3, 3), pad)
    conv._bwd_w(x, g, w.shape, _p(pad))
    assert "corr_w" not in spy.calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,pad", SHAPES)
def test_direct_equals_the_numpy_path(xs, ws, pad, dtype, spy, monkeypatch):
    """The kernels' products against the NumPy path's (no numba): within rounding."""
    x, w, g = conv_arrays(xs, ws, pad, dtype, seed=2)
    b = np.linspace(-1, 1, ws[0]).astype(dtype)
    p = _p(pad)
    fast = _three(x, w, g, p, b)
    assert "corr" in spy.calls
    _numpy_only(monkeypatch)
    ref = _three(x, w, g, p, b)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    for f, r in zip(fast, ref):
        assert f.dtype == r.dtype and f.shape == r.shape
        np.testing.assert_allclose(f, r, rtol=tol, atol=tol * np.abs(r).max())


@pytest.mark.parametrize("xs,ws,pad", SHAPES[:4])
def test_bits_do_not_depend_on_the_thread_count(xs, ws, pad, monkeypatch):
    monkeypatch.setattr(conv, "_PAR_MACS", 0)
    monkeypatch.setattr(conv, "_DIRECT_W_BYTES", 1)     # one sample a weight-gradient block
    p = _p(pad)
    x, w, g = conv_arrays(xs, ws, pad, seed=3)
    monkeypatch.setattr(_threads, "_threads", [1])
    one = _three(x, w, g, p)
    for n in (2, 3):
        monkeypatch.setattr(_threads, "_threads", [n])
        for a, r in zip(_three(x, w, g, p), one):
            np.testing.assert_array_equal(a, r)


def _torch_pad(pad):
    """conv2d's padding argument, or None for uneven padding (padded beforehand)."""
    if all(lo == hi for lo, hi in pad):
        return (pad[0][0], pad[1][0])
    return None


def _run_pair(x, w, g, pad, bias, layout="contiguous"):
    """Output and the gradients of input, weight (and bias) of conv2d on retrograd and torch."""
    padding = _torch_pad(pad)
    outs = []
    for lib in (retrograd, torch):
        xa = x if padding is not None else np.pad(x, ((0, 0), (0, 0)) + pad)
        xt = lib.from_numpy(xa.copy())
        if layout == "channels_last":
            xt = xt.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
        elif layout == "transposed":
            xt = xt.transpose(2, 3).contiguous().transpose(2, 3)
        xt.requires_grad_(True)
        wt = lib.from_numpy(w.copy()).requires_grad_(True)
        bt = None if bias is None else lib.from_numpy(bias.copy()).requires_grad_(True)
        y = lib.nn.functional.conv2d(xt, wt, bt, padding=padding or 0)
        y.backward(lib.from_numpy(g.copy()))
        r = [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()]
        if bt is not None:
            r.append(bt.grad.numpy())
        outs.append(r)
    return outs


@needs_torch
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,pad", SHAPES)
def test_conv2d_matches_torch(xs, ws, pad, dtype, layout):
    x, w, g = conv_arrays(xs, ws, pad, dtype, seed=4)
    b = np.linspace(-1, 1, ws[0]).astype(dtype) if layout != "transposed" else None
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for a, r in zip(*_run_pair(x, w, g, pad, b, layout)):
        assert a.dtype == r.dtype
        np.testing.assert_allclose(a, r, rtol=tol, atol=tol)


@needs_torch
def test_seed_cnn_convolutions_match_torch(spy):
    """The seeds' two convolutions at their own sizes (batch 64): each result's largest error
    against PyTorch's float64 result, relative to the result's scale, within twice PyTorch's
    own float32 error, or 1e-6."""
    for xs, ws in (((64, 1, 28, 28), (4, 1, 5, 5)), ((64, 4, 14, 14), (8, 4, 5, 5))):
        pad = ((2, 2), (2, 2))
        x, w, g = conv_arrays(xs, ws, pad, seed=5)
        b = np.linspace(-0.5, 0.5, ws[0]).astype(np.float32)
        ours, theirs = _run_pair(x, w, g, pad, b)
        assert spy.calls[-3:] == ["corr", "corr", "corr_w"]        # (forward, input and weight gradients)
        exact = _run_pair(*(a.astype(np.float64) for a in (x, w, g)), pad, b.astype(np.float64))[1]
        for u, t, e in zip(ours, theirs, exact):
            scale = np.abs(e).max()
            assert np.abs(u - e).max() / scale <= max(2 * np.abs(t - e).max() / scale, 1e-6)


# inf and NaN: (x shape, weight shape, padding, dtype). PyTorch's float32 convolutions run its
# oneDNN kernels (batch > 1, a kernel larger than 3x3 or a large input), which add the real
# positions' products only; float64 and a small single-sample 3x3 float32 one take its im2col
# kernels, where the padding's zeros meet an inf weight or gradient (NaN).
SPECIAL = [((3, 4, 7, 7), (8, 4, 5, 5), ((2, 2), (2, 2)), np.float32),
           ((2, 3, 6, 6), (4, 3, 3, 3), ((1, 1), (1, 1)), np.float32),
           ((1, 3, 6, 6), (4, 3, 3, 3), ((1, 1), (1, 1)), np.float32),
           ((1, 3, 6, 6), (4, 3, 5, 5), ((2, 2), (2, 2)), np.float32),
           ((3, 4, 7, 7), (8, 4, 5, 5), ((2, 2), (2, 2)), np.float64)]


@needs_torch
@pytest.mark.parametrize("where", ["input", "weight", "grad"])
@pytest.mark.parametrize("xs,ws,pad,dtype", SPECIAL)
def test_inf_and_nan_where_torch_puts_them(xs, ws, pad, dtype, where):
    x, w, g = conv_arrays(xs, ws, pad, dtype, seed=6)
    a = {"input": x, "weight": w, "grad": g}[where]
    a.reshape(-1)[[1, 7, -3]] = [np.inf, np.nan, -np.inf]
    with np.errstate(invalid="ignore", over="ignore"):
        ours, theirs = _run_pair(x, w, g, pad, None)
    for u, t in zip(ours, theirs):
        np.testing.assert_allclose(u, t, rtol=1e-4, atol=1e-4)      # (NaN where torch's NaN are, inf likewise)
    assert not all(np.isfinite(u).all() for u in ours)


@pytest.mark.parametrize("path", ["kernels", "numpy"])
def test_inf_weight_meets_no_padding_in_float32(path, monkeypatch):
    """An inf weight tap over an all-ones input: inf where the tap falls inside the input, 0
    where it falls on padding (PyTorch's oneDNN float32 result), and NaN there in float64
    (PyTorch's im2col result); the same from the NumPy path, with no warning (as PyTorch)."""
    if path == "numpy":
        _numpy_only(monkeypatch)
    for dtype, border in ((np.float32, 0.0), (np.float64, np.nan)):
        x = np.ones((2, 4, 6, 6), dtype)
        w = np.zeros((8, 4, 5, 5), dtype)
        w[0, 0, 0, 0] = np.inf
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = conv._fwd(x, w, _p(((2, 2), (2, 2))))
        want = np.full((6, 6), border, dtype)
        want[2:, 2:] = np.inf
        np.testing.assert_array_equal(y[1, 0], want)
        np.testing.assert_array_equal(y[:, 1:], 0)


@pytest.mark.parametrize("where", ["input", "weight", "grad"])
@pytest.mark.parametrize("xs,ws,pad,dtype", SPECIAL)
def test_inf_and_nan_the_same_from_the_numpy_path(xs, ws, pad, dtype, where, monkeypatch):
    x, w, g = conv_arrays(xs, ws, pad, dtype, seed=9)
    a = {"input": x, "weight": w, "grad": g}[where]
    a.reshape(-1)[[2, 8, -4]] = [-np.inf, np.nan, np.inf]
    p = _p(pad)
    with np.errstate(invalid="ignore", over="ignore"):
        fast = _three(x, w, g, p)
        _numpy_only(monkeypatch)
        ref = _three(x, w, g, p)
    for f, r in zip(fast, ref):
        np.testing.assert_allclose(f, r, rtol=1e-5, atol=1e-5)
    assert not all(np.isfinite(r).all() for r in ref)


@pytest.mark.parametrize("xs,ws,pad", [SHAPES[1], SHAPES[4], SHAPES[6]])
def test_exact_kernels_agree_with_the_fast_ones(xs, ws, pad, spy):
    """The padding-skipping kernels (run for inf/NaN operands) on finite data: the fast
    kernels' results within rounding."""
    x, w, g = conv_arrays(xs, ws, pad, np.float64, seed=7)
    p = _p(pad)
    b = np.linspace(-1, 1, ws[0])
    y = np.empty(g.shape)
    spy.k.corr_exact(x, w, y, np.empty(g.shape[3]), pad[0][0], pad[1][0], b)
    np.testing.assert_allclose(y, conv._direct_fwd(x, w, p, b), rtol=1e-13, atol=1e-13)
    if ws[2:] == (5, 5):
        gw = np.empty(ws)
        spy.k.corr_w_exact(x, g, gw, pad[0][0], pad[1][0])
        np.testing.assert_allclose(gw, conv._direct_bwd_w(x, g, ws, p), rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("ws,pad", [((4, 3, 5, 5), 2), ((3, 3, 3, 3), 1), ((5, 2, 5, 5), 0)])
def test_gradcheck_float64(ws, pad, spy):
    """Finite differences (first and second order) through the direct kernels."""
    rng = np.random.default_rng(8)
    x = retrograd.tensor(rng.standard_normal((2, ws[1], 6, 7)), requires_grad=True)
    w = retrograd.tensor(rng.standard_normal(ws) * 0.3, requires_grad=True)
    b = retrograd.tensor(rng.standard_normal(ws[0]), requires_grad=True)

    def f(x, w, b):
        return retrograd.nn.functional.conv2d(x, w, b, padding=pad)
    assert gradcheck(f, (x, w, b))
    assert "corr" in spy.calls and ("corr_w" in spy.calls) == (ws[2] == 5)
    assert gradgradcheck(f, (x, w, b))
