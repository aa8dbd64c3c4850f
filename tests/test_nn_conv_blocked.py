"""The sample-blocked 2-D convolution (ops.conv), the transposed convolution run through
it (ops.convt), and the in-order scatter-add of the index, embedding and gather
backwards: the numba kernels against the NumPy path (the same bits), against PyTorch,
and against finite differences (float64, first and second order)."""
import numpy as np
import pytest

import retrograd
from retrograd.ops import _accel, conv
from helpers import needs_torch, torch

numba_only = pytest.mark.skipif(_accel.kernels() is None, reason="numba is not installed")


@pytest.fixture(autouse=True)
def _column_path(monkeypatch):
    """These are the column path's tests: the few-channel direct kernels, which would take
    some of these geometries, are tested in test_conv_direct.py."""
    monkeypatch.setattr(conv, "_direct_use", lambda *a: False)

# (x shape, weight shape, stride, padding, dilation, groups); padding may be "same"
GEOMS = [((5, 3, 9, 8), (6, 3, 3, 3), 1, 1, 1, 1),
         ((4, 4, 10, 9), (6, 2, 3, 2), (2, 3), (1, 0), (1, 2), 2),
         ((3, 6, 11, 11), (4, 6, 3, 3), 2, 2, 2, 1),
         ((6, 4, 8, 8), (4, 4, 4, 4), 1, "same", 1, 1),          # uneven padding (lo != hi)
         ((4, 8, 7, 7), (8, 2, 1, 1), 2, 0, 1, 4),
         ((3, 2, 12, 10), (3, 2, 5, 3), 3, 2, (1, 2), 1),
         # column stride 2 over rows of even length, left padding odd, zero and even
         ((3, 4, 10, 12), (5, 4, 3, 3), 2, 1, 1, 1),
         ((2, 3, 9, 8), (4, 3, 4, 3), (1, 2), (2, 0), (2, 1), 1),
         ((2, 4, 8, 10), (6, 2, 3, 5), (3, 2), 2, 1, 2)]


def _p(x_shape, w_shape, st, pad, dil, groups):
    st = st if isinstance(st, tuple) else (st, st)
    dil = dil if isinstance(dil, tuple) else (dil, dil)
    if pad == "same":
        pads = tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for d, k in zip(dil, w_shape[2:]))
    else:
        pad = pad if isinstance(pad, tuple) else (pad, pad)
        pads = tuple((a, a) for a in pad)
    return conv._P(st, pads, dil, groups)


def _arrays(xs, ws, p, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    out = conv._out_size(tuple(s + lo + hi for s, (lo, hi) in zip(xs[2:], p.pad)), ws[2:], p)
    g = rng.standard_normal((xs[0], ws[0]) + out).astype(dtype)
    return x, w, g


def _three(x, w, g, p):
    return conv._fwd(x, w, p), conv._bwd_w(x, g, w.shape, p), conv._bwd_in(g, w, x.shape, p)


@numba_only
@pytest.mark.parametrize("block_bytes", [1 << 20, 1])        # one block; one sample per block
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,st,pad,dil,groups", GEOMS)
def test_blocked_kernels_give_the_numpy_paths_bits(xs, ws, st, pad, dil, groups, dtype, block_bytes, monkeypatch):
    p = _p(xs, ws, st, pad, dil, groups)
    x, w, g = _arrays(xs, ws, p, dtype, 0)
    x.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    g.reshape(-1)[-2:] = [np.inf, np.nan]
    monkeypatch.setattr(conv, "_BLOCK_BYTES", block_bytes)
    fast = _three(x, w, g, p)
    monkeypatch.setattr(_accel, "_KERNELS", [None])
    ref = _three(x, w, g, p)
    for a, r in zip(fast, ref):
        assert a.dtype == r.dtype and a.shape == r.shape and a.flags.c_contiguous
        np.testing.assert_array_equal(a, r)


@numba_only
def test_blocked_kernels_run(monkeypatch):
    """Where numba is installed the blocked path calls the compiled im2col and col2im."""
    from retrograd.ops import _accel_conv
    calls = []
    for name in ("im2col", "col2im"):
        f = getattr(_accel_conv, name)
        monkeypatch.setattr(_accel_conv, name, lambda *a, _f=f, _n=name: (calls.append(_n), _f(*a))[1])
    p = _p((4, 3, 9, 9), (5, 3, 3, 3), 2, 1, 1, 1)
    x, w, g = _arrays((4, 3, 9, 9), (5, 3, 3, 3), p, np.float32, 1)
    _three(x, w, g, p)
    assert calls.count("im2col") >= 2 and calls.count("col2im") >= 1


@pytest.mark.parametrize("block_bytes", [1 << 20, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,st,pad,dil,groups", GEOMS)
def test_blocked_path_matches_the_whole_batch_columns(xs, ws, st, pad, dil, groups, dtype, block_bytes, monkeypatch):
    """The blocked path against the whole-batch column path it replaced on the host (kept
    for other dtypes and devices): the same products, summed within rounding."""
    p = _p(xs, ws, st, pad, dil, groups)
    x, w, g = _arrays(xs, ws, p, dtype, 2)
    monkeypatch.setattr(conv, "_BLOCK_BYTES", block_bytes)
    new = _three(x, w, g, p)
    monkeypatch.setattr(conv, "_blocked", lambda a, b: False)
    old = _three(x, w, g, p)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, r in zip(new, old):
        assert a.dtype == r.dtype and a.shape == r.shape
        np.testing.assert_allclose(a, r, rtol=tol, atol=tol)
    if st != 1:     # strided: the same per-sample GEMMs over the same columns
        np.testing.assert_array_equal(new[0], old[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,st,pad,dil,groups", GEOMS)
def test_kept_columns_give_the_rebuilt_columns_bits(xs, ws, st, pad, dil, groups, dtype, monkeypatch):
    """The weight gradient from the forward's kept column matrix and from columns rebuilt
    block by block in the backward."""
    p = _p(xs, ws, st, pad, dil, groups)
    x, w, g = _arrays(xs, ws, p, dtype, 14)
    monkeypatch.setattr(conv, "_BLOCK_BYTES", 1)
    monkeypatch.setattr(conv, "_KEEP_EXPANSION", 1 << 30)
    res = []
    for keep in (1 << 30, 0):
        monkeypatch.setattr(conv, "_KEEP_BYTES", keep)
        y, cols = conv._fwd(x, w, p, want_cols=True)
        assert (cols is not None) == bool(keep)
        res.append((y, conv._bwd_w(x, g, w.shape, p, cols)))
    for a, r in zip(*res):
        np.testing.assert_array_equal(a, r)


def test_columns_kept_only_where_not_much_larger_than_the_input():
    """A strided 3x3 convolution's columns (2.25x its input) are kept for the weight
    gradient; a 5x5 one's over one channel (25x) are rebuilt in the backward."""
    for xs, ws, st, pad, kept in [((16, 8, 16, 16), (16, 8, 3, 3), 2, 1, True),
                                  ((16, 1, 28, 28), (4, 1, 5, 5), 1, 2, False)]:
        p = _p(xs, ws, st, pad, 1, 1)
        x, w, _ = _arrays(xs, ws, p, np.float32, 0)
        y, cols = conv._fwd(x, w, p, want_cols=True)
        assert (cols is not None) == kept
        conv._give(cols)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,st,pad,dil,groups", GEOMS)
def test_shared_columns_give_the_separate_passes_bits(xs, ws, st, pad, dil, groups, dtype, monkeypatch):
    """The transposed convolution's backward: forward and weight gradient from one im2col."""
    p = _p(xs, ws, st, pad, dil, groups)
    x, w, g = _arrays(xs, ws, p, dtype, 15)
    monkeypatch.setattr(conv, "_BLOCK_BYTES", 1)
    y, gw = conv._fwd_bwd_w_blocked(x, w, g, p)
    np.testing.assert_array_equal(y, conv._fwd_blocked(x, w, p))
    np.testing.assert_array_equal(gw, conv._bwd_w_blocked(x, g, w.shape, p))


@needs_torch
@pytest.mark.parametrize("xs,ws,st,pad,dil,groups", GEOMS)
def test_blocked_conv2d_matches_torch(xs, ws, st, pad, dil, groups, monkeypatch):
    monkeypatch.setattr(conv, "_BLOCK_BYTES", 1)      # several blocks, a short last one
    rng = np.random.default_rng(3)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    res = []
    for lib in (retrograd, torch):
        xt, wt, bt = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
        y = lib.nn.functional.conv2d(xt, wt, bt, stride=st, padding=pad, dilation=dil, groups=groups)
        y.backward(lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape))))
        res.append((y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()))
    for a, r in zip(*res):
        np.testing.assert_allclose(a, r, rtol=1e-10, atol=1e-10)


@needs_torch
def test_blocked_conv2d_float32_matches_torch():
    """A ResNet-sized float32 layer (several blocks) within float32 rounding of PyTorch."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 16, 16, 16)).astype(np.float32)
    w = (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32)
    res = []
    for lib in (retrograd, torch):
        xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        y = lib.nn.functional.conv2d(xt, wt, padding=1)
        (y * y).sum().backward()
        res.append((y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()))
    for a, r in zip(*res):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4 * np.abs(r).max())


@pytest.mark.parametrize("st,pad,dil,groups", [(1, 1, 1, 1), (2, (1, 0), (1, 2), 2)])
def test_blocked_conv2d_gradcheck(st, pad, dil, groups, monkeypatch):
    monkeypatch.setattr(conv, "_BLOCK_BYTES", 1)
    rng = np.random.default_rng(5)
    x = retrograd.tensor(rng.standard_normal((3, 4, 6, 5)), requires_grad=True)
    w = retrograd.tensor(rng.standard_normal((4, 4 // groups, 3, 2)), requires_grad=True)

    def f(x, w):
        return retrograd.nn.functional.conv2d(x, w, stride=st, padding=pad, dilation=dil, groups=groups)
    assert retrograd.autograd.gradcheck(f, (x, w))
    assert retrograd.autograd.gradgradcheck(f, (x, w))


# *** the transposed convolution through conv's kernels ***

# (x shape, weight shape, stride, padding, output_padding, dilation, groups)
TRANSPOSED = [((3, 6, 5, 5), (6, 4, 4, 4), 2, 1, 0, 1, 1),
              ((2, 4, 5, 6), (4, 3, 3, 2), (2, 3), (1, 0), (1, 2), (1, 2), 2),
              ((2, 3, 7), (3, 2, 3), 2, 1, 1, 1, 1),
              ((2, 4, 5, 5), (4, 3, 3, 3), 1, 1, 1, 2, 1)]     # output_padding >= stride: the column path


def _convt(lib, x, w, b, st, pad, op, dil, groups, g):
    xt, wt, bt = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
    f = lib.nn.functional.conv_transpose2d if x.ndim == 4 else lib.nn.functional.conv_transpose1d
    y = f(xt, wt, bt, st, pad, op, groups, dil)
    y.backward(lib.tensor(g))
    return y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()


def _convt_arrays(xs, ws, st, pad, op, dil, groups, dtype, seed):
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[1] * groups).astype(dtype)
    f = retrograd.nn.functional.conv_transpose2d if len(xs) == 4 else retrograd.nn.functional.conv_transpose1d
    y = f(retrograd.tensor(x), retrograd.tensor(w), retrograd.tensor(b), st, pad, op, groups, dil)
    return x, w, b, rng.standard_normal(tuple(y.shape)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,st,pad,op,dil,groups", TRANSPOSED)
def test_transposed_through_conv_matches_its_column_path(xs, ws, st, pad, op, dil, groups, dtype, monkeypatch):
    x, w, b, g = _convt_arrays(xs, ws, st, pad, op, dil, groups, dtype, 6)
    new = _convt(retrograd, x, w, b, st, pad, op, dil, groups, g)
    monkeypatch.setattr(conv, "_blocked", lambda a, b: False)
    old = _convt(retrograd, x, w, b, st, pad, op, dil, groups, g)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_array_equal(new[0], old[0])      # the forward: the same sums in the same order
    for a, r in zip(new, old):
        assert a.dtype == r.dtype and a.shape == r.shape
        np.testing.assert_allclose(a, r, rtol=tol, atol=tol)


@needs_torch
@pytest.mark.parametrize("xs,ws,st,pad,op,dil,groups", TRANSPOSED)
def test_transposed_through_conv_matches_torch(xs, ws, st, pad, op, dil, groups):
    x, w, b, g = _convt_arrays(xs, ws, st, pad, op, dil, groups, np.float64, 7)
    for a, r in zip(_convt(retrograd, x, w, b, st, pad, op, dil, groups, g),
                    _convt(torch, x, w, b, st, pad, op, dil, groups, g)):
        np.testing.assert_allclose(a, r, rtol=1e-10, atol=1e-10)


def test_transposed_through_conv_gradcheck():
    rng = np.random.default_rng(8)
    x = retrograd.tensor(rng.standard_normal((2, 4, 3, 4)), requires_grad=True)
    w = retrograd.tensor(rng.standard_normal((4, 3, 3, 2)), requires_grad=True)
    b = retrograd.tensor(rng.standard_normal(6), requires_grad=True)

    def f(x, w, b):
        return retrograd.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=(1, 0), output_padding=1,
                                                       groups=2)
    assert retrograd.autograd.gradcheck(f, (x, w, b))
    assert retrograd.autograd.gradgradcheck(f, (x, w, b))


# *** in-order scatter-add: W[idx], embedding, gather ***

def _index_grads(lib, W0, idx, g, a, gidx, ga):
    W = lib.tensor(W0, requires_grad=True)
    W[lib.tensor(idx)].backward(lib.tensor(g))
    r1 = W.grad.numpy().copy()
    W.grad = None
    lib.nn.functional.embedding(lib.tensor(idx), W).backward(lib.tensor(g))
    r2 = W.grad.numpy().copy()
    x = lib.tensor(a, requires_grad=True)
    x.gather(0, lib.tensor(gidx)).backward(lib.tensor(ga))
    return r1, r2, x.grad.numpy()


def _index_arrays(dtype, seed=9):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, 30, 5000)          # every row repeated many times
    W0 = np.zeros((40, 8), dtype)
    g = rng.standard_normal((5000, 8)).astype(dtype)
    a = rng.standard_normal((64, 32)).astype(dtype)
    gidx = rng.integers(0, 16, (64, 32))
    ga = rng.standard_normal((64, 32)).astype(dtype)
    return W0, idx, g, a, gidx, ga


@numba_only
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scatter_add_kernels_give_the_numpy_paths_bits(dtype, monkeypatch):
    args = _index_arrays(dtype)
    fast = _index_grads(retrograd, *args)
    monkeypatch.setattr(_accel, "_KERNELS", [None])
    ref = _index_grads(retrograd, *args)
    for a, r in zip(fast, ref):
        assert a.dtype == r.dtype == dtype
        np.testing.assert_array_equal(a, r)


@needs_torch
@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scatter_add_gives_torchs_single_thread_bits(dtype, numba, monkeypatch):
    """Repeated rows summed in index order, as PyTorch's CPU kernels add them."""
    if not numba:
        monkeypatch.setattr(_accel, "_KERNELS", [None])
    args = _index_arrays(dtype, 10)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ref = _index_grads(torch, *args)
    finally:
        torch.set_num_threads(threads)
    for a, r in zip(_index_grads(retrograd, *args), ref):
        np.testing.assert_array_equal(a, r)


def test_scatter_add_gradcheck():
    rng = np.random.default_rng(11)
    idx = retrograd.tensor(rng.integers(0, 5, 40))
    W = retrograd.tensor(rng.standard_normal((6, 3)), requires_grad=True)
    assert retrograd.autograd.gradcheck(lambda W: W[idx] * W[idx], (W,))
    assert retrograd.autograd.gradgradcheck(lambda W: W[idx] * W[idx], (W,))
    assert retrograd.autograd.gradgradcheck(lambda W: retrograd.nn.functional.embedding(idx, W) ** 2, (W,))
    gi = retrograd.tensor(rng.integers(0, 6, (12, 3)))
    assert retrograd.autograd.gradgradcheck(lambda W: W.gather(0, gi) ** 2, (W,))


# (input shape, dim, index shape): the index of the input's extent off dim takes the
# compiled gather; a smaller one, the flat-position path
GATHERS = [((64, 32), 0, (64, 32)), ((64, 32), 0, (20, 32)), ((6, 7, 8), 1, (6, 20, 8)), ((6, 7, 8), 2, (6, 7, 30)),
           ((6, 7, 8), 1, (3, 20, 8)), ((80,), 0, (200,)), ((4, 5, 6, 7), 3, (4, 5, 6, 9))]


def _gather_run(lib, x, d, idx, g):
    xt = lib.tensor(x, requires_grad=True)
    y = xt.gather(d, lib.tensor(idx))
    y.backward(lib.tensor(g))
    return y.detach().numpy(), xt.grad.numpy()


def _gather_arrays(xs, d, ish, dtype, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(xs).astype(dtype), rng.integers(0, xs[d], ish),
            rng.standard_normal(ish).astype(dtype))


@numba_only
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,d,ish", GATHERS)
def test_gather_kernels_give_the_numpy_paths_bits(xs, d, ish, dtype, monkeypatch):
    x, idx, g = _gather_arrays(xs, d, ish, dtype, 12)
    fast = _gather_run(retrograd, x, d, idx, g)
    monkeypatch.setattr(_accel, "_KERNELS", [None])
    for a, r in zip(fast, _gather_run(retrograd, x, d, idx, g)):
        assert a.dtype == r.dtype == dtype and a.shape == r.shape
        np.testing.assert_array_equal(a, r)


@needs_torch
@pytest.mark.parametrize("xs,d,ish", GATHERS)
def test_gather_matches_torch_bits(xs, d, ish):
    x, idx, g = _gather_arrays(xs, d, ish, np.float32, 13)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ref = _gather_run(torch, x, d, idx, g)
    finally:
        torch.set_num_threads(threads)
    for a, r in zip(_gather_run(retrograd, x, d, idx, g), ref):
        np.testing.assert_array_equal(a, r)


def test_gather_errors_unchanged():
    x = retrograd.randn(8, 9)
    with pytest.raises(RuntimeError, match="index 8 is out of bounds for dimension 0 with size 8"):
        x.gather(0, retrograd.full((8, 9), 8, dtype=retrograd.int64))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with size 8"):
        x.gather(0, retrograd.full((8, 9), -1, dtype=retrograd.int64))



@numba_only
@pytest.mark.parametrize("xs,ws,st,pad,dil", [((2, 3, 7, 12), (4, 3, 3, 3), (2, 2), (1, 1), (1, 1)),
                                             ((2, 3, 8, 10), (4, 3, 3, 4), (1, 2), (0, 2), (2, 1)),
                                             ((3, 2, 9, 8), (2, 2, 2, 3), (3, 2), (2, 3), (1, 2)),
                                             ((1, 4, 6, 6), (2, 4, 1, 1), (2, 2), (0, 0), (1, 1))])
def test_pair_copies_give_the_element_copies_bits(xs, ws, st, pad, dil):
    """Column stride 2 over float32 rows of even length: im2col and col2im through uint64
    pairs (odd and even left padding, any row stride) copy the same bits as element by element."""
    kern = conv._conv_kernels(np.zeros(1 << 16, np.float32))
    p = conv._P(st, tuple((a, a) for a in pad), dil, 1)
    rng = np.random.default_rng(11)
    x = rng.standard_normal(xs).astype(np.float32)
    x.reshape(-1)[:3] = [np.nan, np.inf, -0.0]
    res = []
    for pairs in (True, False):
        cc = conv._Cols(xs, ws[2:], p, np.float32, kern)
        assert cc.pairs
        cc.pairs = pairs
        L = cc.out[0] * cc.out[1]
        cols = np.empty((xs[0], 1, xs[1] * ws[2] * ws[3], L), np.float32)
        cc.im2col(x, cols)
        gx = np.empty(xs, np.float32)
        cc.col2im(cols, gx)
        res.append((cols, gx))
    for a, b in zip(*res):
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
    assert not conv._Cols((2, 3, 7, 11), (3, 3), p, np.float32, kern).pairs      # odd rows
    assert not conv._Cols(xs, (3, 3), p, np.float64, kern).pairs
