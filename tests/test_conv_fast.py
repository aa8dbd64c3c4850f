"""The Winograd F(2x2, 3x3) path of stride-1 3x3 2-D convolutions (ops.conv._wino, with the
numba transforms of ops._accel_conv): that it runs where it should and nowhere else, its
values and gradients against PyTorch and against the column path (errors measured against
float64), its fall-back on inf/NaN operands, the same bits for every thread count, and
finite differences (float64, first and second order, with the path forced on float64)."""
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


numba_only = pytest.mark.skipif(_accel.kernels() is None, reason="numba is not installed")

# (x shape, weight shape, padding (lo, hi) per dim): even output sizes, 8-32 channels
SHAPES = [((3, 8, 8, 8), (12, 8, 3, 3), ((1, 1), (1, 1))),
          ((5, 16, 10, 6), (16, 16, 3, 3), ((1, 1), (1, 1))),          # blocks of several samples, a partial last one
          ((2, 9, 9, 7), (8, 9, 3, 3), ((0, 1), (2, 1))),              # uneven padding
          ((2, 32, 6, 12), (10, 32, 3, 3), ((0, 0), (2, 2))),
          ((1, 8, 4, 4), (8, 8, 3, 3), ((2, 2), (0, 0)))]


# the bounds where the path pays (checked in test_winograd_only_where_it_pays); the other
# tests run it on small shapes, their bounds relaxed (to 8 input channels and any plane)
BOUNDS = {"_WINO_MIN_IN": conv._WINO_MIN_IN, "_WINO_MIN_PLANE": conv._WINO_MIN_PLANE}


@pytest.fixture(autouse=True)
def small_shapes(monkeypatch):
    monkeypatch.setattr(conv, "_WINO_MIN_IN", 8)
    monkeypatch.setattr(conv, "_WINO_MIN_PLANE", 0)


def _p(pad):
    return conv._P((1, 1), pad, (1, 1), 1)


@pytest.fixture(params=["steps", "runs"])
def spy(request, monkeypatch):
    """The kernel module with its Winograd lookups recorded, on either path: a kernel call per
    step from Python ("steps"), or one compiled call per run with MKL's batched product
    inside ("runs", where MKL is installed)."""
    k = conv._conv_kernels(np.ones(conv._accel.MIN_SIZE, np.float32))
    if k is None:
        pytest.skip("numba is not installed")
    if request.param == "steps":
        monkeypatch.setattr(conv, "_native_batch", lambda: None)
    else:
        request.getfixturevalue("on_mkl")        # (MKL's batched product, whatever this CPU picks)
        if conv._native_batch() is None:
            pytest.skip("MKL is not installed (or RETROGRAD_BLAS=numpy)")
    s = KernelSpy(k, "wino")
    s.runs = request.param == "runs"
    monkeypatch.setattr(conv, "_CONV_KERNELS", [s])
    return s


def _count(spy, name):
    """How many passes looked up the step ``name`` (with compiled runs, one run a pass here:
    the forward run's lookup stands for wino_out, the weight gradient's for wino_gin, either
    for wino_in)."""
    if not spy.runs:
        return spy.calls.count(name)
    fwd, w = spy.calls.count("wino_fwd_blocks"), spy.calls.count("wino_w_blocks")
    return {"wino_out": fwd, "wino_gin": w, "wino_in": fwd + w}[name]


def _three(x, w, g, p):
    return conv._fwd(x, w, p), conv._bwd_in(g, w, x.shape, p), conv._bwd_w(x, g, w.shape, p)


@numba_only
@pytest.mark.parametrize("xs,ws,pad", SHAPES + [((2, 64, 12, 12), (96, 64, 3, 3), ((1, 1), (1, 1)))])
def test_winograd_runs_and_is_as_accurate_as_the_columns(xs, ws, pad, spy, monkeypatch):
    """Each product's error against float64, relative to the same sum over |x|*|w| (|g|*|w|,
    |x|*|g|): the largest within 1e-6 (a few float32 ulps of the sum's scale), the root mean
    square within 3x the column path's (F(2x2, 3x3)'s transforms roughly double the rounding
    error: 1.9-2.4x measured over these shapes; the largest errors' ratio swings with the
    BLAS's summation order: up to 2x on Intel's CPUs, 3.2x on one shape on an AMD EPYC)."""
    p = _p(pad)
    x, w, g = conv_arrays(xs, ws, pad)
    fast = _three(x, w, g, p)
    # (the input gradient's is a Winograd correlation where the input's sizes are even)
    # (and the weight gradient's up to _WINO_W_CH channels)
    assert _count(spy, "wino_out") == 1 + (xs[2] % 2 == 0 and xs[3] % 2 == 0)
    assert (_count(spy, "wino_gin") > 0) == (max(ws[:2]) <= conv._WINO_W_CH)
    monkeypatch.setattr(conv, "_WINO_DTYPES", ())
    cols = _three(x, w, g, p)
    exact = _three(*(a.astype(np.float64) for a in (x, w, g)), p)
    scale = _three(*(np.abs(a).astype(np.float64) for a in (x, w, g)), p)
    for f, c, e, s in zip(fast, cols, exact, scale):
        assert f.dtype == np.float32 and f.shape == e.shape
        err, err_cols = (np.abs(f - e) / s).max(), (np.abs(c - e) / s).max()
        rms, rms_cols = (float(np.sqrt(np.mean((np.abs(a - e) / s) ** 2))) for a in (f, c))
        assert err < 1e-6 and rms <= 3 * rms_cols, (err, err_cols, rms, rms_cols)


@numba_only
def test_winograd_only_where_it_pays(spy, monkeypatch):
    """Not for float64, odd output sizes, strides, dilations, groups, other kernels, fewer
    than 12 input channels, outputs under 12x12, channel counts outside 8-256 (the weight
    gradient's outside 8-32)."""
    for k, v in BOUNDS.items():
        monkeypatch.setattr(conv, k, v)
    rng = np.random.default_rng(1)
    cases = [((2, 16, 12, 12), (16, 16, 3, 3), (1, 1), (1, 1), 1, np.float64),
             ((2, 16, 13, 12), (16, 16, 3, 3), (1, 1), (1, 1), 1, np.float32),
             ((2, 16, 12, 12), (16, 16, 3, 3), (2, 2), (1, 1), 1, np.float32),
             ((2, 16, 12, 12), (16, 16, 3, 3), (1, 1), (2, 2), 1, np.float32),
             ((2, 32, 12, 12), (32, 16, 3, 3), (1, 1), (1, 1), 2, np.float32),
             ((2, 16, 12, 12), (16, 16, 5, 5), (1, 1), (1, 1), 1, np.float32),
             ((2, 3, 12, 12), (16, 3, 3, 3), (1, 1), (1, 1), 1, np.float32),
             ((2, 8, 12, 12), (16, 8, 3, 3), (1, 1), (1, 1), 1, np.float32),
             ((2, 16, 10, 10), (16, 16, 3, 3), (1, 1), (1, 1), 1, np.float32),
             ((1, 264, 12, 12), (16, 264, 3, 3), (1, 1), (1, 1), 1, np.float32)]
    for xs, ws, st, dil, groups, dt in cases:
        pd = tuple((d * (k - 1) // 2,) * 2 for d, k in zip(dil, ws[2:]))
        p = conv._P(st, pd, dil, groups)
        x = rng.standard_normal(xs).astype(dt)
        w = rng.standard_normal(ws).astype(dt)
        y = conv._fwd(x, w, p)
        g = rng.standard_normal(y.shape).astype(dt)
        conv._bwd_in(g, w, x.shape, p)
        conv._bwd_w(x, g, w.shape, p)
        assert not spy.calls, (xs, ws, st, dil, groups, dt)
    pad = ((1, 1), (1, 1))
    # 12 -> 8 channels over 12x12: all three; 64 channels: forward and input gradient only
    for xs, ws, grad_w in (((2, 12, 12, 12), (8, 12, 3, 3), 1), ((1, 64, 12, 12), (64, 64, 3, 3), 0)):
        spy.calls.clear()
        x, w, g = conv_arrays(xs, ws, pad)
        _three(x, w, g, _p(pad))
        assert _count(spy, "wino_out") == 2 and _count(spy, "wino_gin") == grad_w, (xs, ws)


@numba_only
@pytest.mark.parametrize("where", ["input", "weight", "grad", "bias"])
def test_winograd_leaves_inf_and_nan_to_the_columns(where, spy, monkeypatch):
    """The transforms mix a tile's values: operands with an inf or NaN take the column path,
    whose results (NaN/inf where PyTorch's are) these are, bit for bit."""
    p = _p(((1, 1), (1, 1)))
    x, w, g = conv_arrays((3, 8, 8, 8), (8, 8, 3, 3), p.pad)
    b = np.linspace(-1, 1, 8).astype(np.float32)
    a = {"input": x, "weight": w, "grad": g, "bias": b}[where]
    a.reshape(-1)[[1, 5, -3]] = [np.nan, np.inf, -np.inf]
    with np.errstate(invalid="ignore", over="ignore"):
        fast = [conv._fwd(x, w, p, bias=b), conv._bwd_in(g, w, x.shape, p), conv._bwd_w(x, g, w.shape, p)]
        monkeypatch.setattr(conv, "_WINO_DTYPES", ())
        ref = [conv._fwd(x, w, p, bias=b), conv._bwd_in(g, w, x.shape, p), conv._bwd_w(x, g, w.shape, p)]
    # the products that read the planted operand: (forward, input gradient, weight gradient)
    reads = {"input": (1, 0, 1), "weight": (1, 1, 0), "grad": (0, 1, 1), "bias": (1, 0, 0)}[where]
    # the others: two float32 sums of the same terms, each within ~1e-6 of the sum of the terms'
    # magnitudes (see test_winograd_runs_and_is_as_accurate_as_the_columns)
    scale = list(_three(*(np.abs(np.nan_to_num(a, posinf=0, neginf=0)).astype(np.float64) for a in (x, w, g)), p))
    scale[0] = scale[0] + np.abs(np.nan_to_num(b, posinf=0, neginf=0)).reshape(1, -1, 1, 1)   # (the bias's term)
    for f, r, planted, sc in zip(fast, ref, reads, scale):
        if planted:
            np.testing.assert_array_equal(f, r)
            assert not np.isfinite(r).all()
        else:
            assert np.all(np.abs(f.astype(np.float64) - r) <= 2e-6 * sc + 1e-30)


@numba_only
@pytest.mark.parametrize("col", [0, 3, 6, 7])
@pytest.mark.parametrize("pad", [((1, 1), (1, 1)), ((0, 2), (2, 0))])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_winograd_finds_one_inf_or_nan_in_either_half_of_a_pair(col, pad, bad, spy, monkeypatch):
    """Rows of even width are copied as uint64 pairs (each pair's halves go to the two column
    phases, which swap for an odd left padding): one inf/NaN at an even or an odd column, with
    either padding parity, sends both passes that read it to the column path."""
    p = _p(pad)
    x, w, g = conv_arrays((2, 8, 6, 8), (8, 8, 3, 3), pad)
    x[1, 5, 4, col] = bad
    g[0, 3, 2, col] = bad
    with np.errstate(invalid="ignore", over="ignore"):
        fast = [conv._fwd(x, w, p), conv._bwd_in(g, w, x.shape, p), conv._bwd_w(x, g, w.shape, p)]
        assert _count(spy, "wino_in") == 3      # (each found it; on the step path none went on)
        assert spy.runs or "wino_out" not in spy.calls
        monkeypatch.setattr(conv, "_WINO_DTYPES", ())
        ref = [conv._fwd(x, w, p), conv._bwd_in(g, w, x.shape, p), conv._bwd_w(x, g, w.shape, p)]
    for f, r in zip(fast, ref):
        np.testing.assert_array_equal(f, r)


@numba_only
@pytest.mark.parametrize("xs,ws,pad", [SHAPES[0], SHAPES[1], SHAPES[3], SHAPES[4]])
def test_winograd_pair_copies_give_the_same_bits(xs, ws, pad, monkeypatch):
    """The uint64-pair copy of even-width rows into the transforms' phases against the
    element-by-element float copy: a copy either way, so the same bits in all three products."""
    p = _p(pad)
    x, w, g = conv_arrays(xs, ws, pad, seed=8)
    pairs = _three(x, w, g, p)
    monkeypatch.setattr(conv, "_wino_pairs", lambda a, ph: conv._NO_PAIRS)
    for a, r in zip(_three(x, w, g, p), pairs):
        np.testing.assert_array_equal(a, r)


@numba_only
def test_winograd_overflow_takes_the_column_path(spy, monkeypatch):
    """Finite operands near the largest float: a transform's sum of four inputs overflows
    where the convolution's own sums (small weights) do not; the column path's finite
    results, not the transform's inf/NaN."""
    p = _p(((1, 1), (1, 1)))
    x, w, g = conv_arrays((2, 8, 6, 6), (8, 8, 3, 3), p.pad)
    x *= np.float32(3e38) / np.abs(x).max()
    g *= np.float32(3e38) / np.abs(g).max()
    w *= np.float32(1e-4)
    with np.errstate(over="ignore", invalid="ignore"):
        fast = [conv._fwd(x, w, p), conv._bwd_in(g, w, x.shape, p)]
        monkeypatch.setattr(conv, "_WINO_DTYPES", ())
        ref = [conv._fwd(x, w, p), conv._bwd_in(g, w, x.shape, p)]
    assert _count(spy, "wino_out") == 2          # (tried, then left to the columns)
    for f, r in zip(fast, ref):
        assert np.isfinite(r).all()
        np.testing.assert_array_equal(f, r)


@numba_only
def test_winograd_with_bias_adds_it_once(spy):
    p = _p(((1, 1), (1, 1)))
    x, w, _ = conv_arrays((3, 8, 8, 8), (8, 8, 3, 3), p.pad)
    b = np.linspace(-3, 3, 8).astype(np.float32)
    y = conv._fwd(x, w, p, bias=b)
    ref = conv._fwd(x, w, p)
    ref += b.reshape(1, -1, 1, 1)
    np.testing.assert_array_equal(y, ref)
    assert _count(spy, "wino_out") == 2


@numba_only
@pytest.mark.parametrize("xs,ws,pad", SHAPES[:3] + [((3, 64, 12, 12), (48, 64, 3, 3), ((1, 1), (1, 1)))])
def test_winograd_bits_do_not_depend_on_the_thread_count(xs, ws, pad, monkeypatch):
    monkeypatch.setattr(conv, "_WINO_BLOCK_BYTES", 1)       # one sample a block: every batch splits
    monkeypatch.setattr(conv, "_PAR_MACS", 0)
    before = _threads._threads[0]
    p = _p(pad)
    x, w, g = conv_arrays(xs, ws, pad, seed=3)
    try:
        monkeypatch.setattr(_threads, "_threads", [1])
        one = _three(x, w, g, p)
        for n in (2, 3):
            monkeypatch.setattr(_threads, "_threads", [n])
            for a, r in zip(_three(x, w, g, p), one):
                np.testing.assert_array_equal(a, r)
    finally:
        _threads._threads[0] = before


@needs_torch
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed"])
@pytest.mark.parametrize("xs,ws,pad", SHAPES[:4] + [((2, 64, 12, 12), (80, 64, 3, 3), ((1, 1), (1, 1)))])
def test_winograd_conv2d_matches_torch(xs, ws, pad, layout):
    """Values, the three gradients (bias too), strided / channels-last inputs, against
    PyTorch (float32; the path runs where numba is installed)."""
    x, w, g = conv_arrays(xs, ws, pad, seed=4)
    b = np.linspace(-1, 1, ws[0]).astype(np.float32)
    if pad[0][0] != pad[0][1] or pad[1][0] != pad[1][1]:
        padding, xpad = 0, np.pad(x, ((0, 0), (0, 0)) + pad)
    else:
        padding, xpad = (pad[0][0], pad[1][0]), x
    outs = []
    for lib in (retrograd, torch):
        xt = lib.from_numpy(xpad.copy())
        if layout == "channels_last":     # (NHWC memory, as memory_format=channels_last lays it out)
            xt = xt.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
        elif layout == "transposed":
            xt = xt.transpose(2, 3).contiguous().transpose(2, 3)
        xt.requires_grad_(True)
        wt, bt = (lib.from_numpy(a.copy()).requires_grad_(True) for a in (w, b))
        y = lib.nn.functional.conv2d(xt, wt, bt, padding=padding)
        y.backward(lib.from_numpy(g.copy()))
        outs.append([y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()])
    for a, r in zip(*outs):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=2e-4)


@needs_torch
def test_resnet_block_matches_torch():
    """A BasicBlock's step (conv-bn-relu-conv-bn + identity, 16 channels) against PyTorch."""
    rng = np.random.default_rng(6)
    xa = rng.standard_normal((4, 16, 8, 8)).astype(np.float32)
    w1 = (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32)
    outs = []
    for lib in (retrograd, torch):
        F = lib.nn.functional
        x = lib.from_numpy(xa.copy()).requires_grad_(True)
        a, b = (lib.from_numpy(v.copy()).requires_grad_(True) for v in (w1, w2))
        h = F.relu(F.batch_norm(F.conv2d(x, a, padding=1), None, None, training=True))
        y = F.relu(F.batch_norm(F.conv2d(h, b, padding=1), None, None, training=True) + x)
        y.square().sum().backward()
        outs.append([y.detach().numpy(), x.grad.numpy(), a.grad.numpy(), b.grad.numpy()])
    for u, r in zip(*outs):
        np.testing.assert_allclose(u, r, rtol=1e-3, atol=1e-3)


@numba_only
def test_winograd_gradcheck_float64(spy, monkeypatch):
    """Finite differences (first and second order) through the Winograd path, forced on
    float64 for them."""
    monkeypatch.setattr(conv, "_WINO_DTYPES", (np.dtype(np.float32), np.dtype(np.float64)))
    rng = np.random.default_rng(7)
    x = retrograd.tensor(rng.standard_normal((2, 8, 4, 4)), requires_grad=True)
    w = retrograd.tensor(rng.standard_normal((8, 8, 3, 3)) * 0.3, requires_grad=True)
    b = retrograd.tensor(rng.standard_normal(8), requires_grad=True)

    def f(x, w, b):
        return retrograd.nn.functional.conv2d(x, w, b, padding=1)
    assert gradcheck(f, (x, w, b))
    assert {"wino_in", "wino_out", "wino_gin"} <= set(spy.calls)
    assert gradgradcheck(f, (x, w, b))
