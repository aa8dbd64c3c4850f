"""layer_norm's array backward (taken when the backward is not itself recorded) and its
optional compiled row kernels (numba) against the tensor-op backward (create_graph), the
NumPy path (the reference, as with RETROGRAD_NO_NUMBA=1), PyTorch and finite differences."""
import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from retrograd.ops import _accel_nn
from helpers import needs_torch, torch

# (input shape, normalized_shape, weight, bias); every input has at least MIN_SIZE elements,
# so that the compiled kernels run where numba is installed
CASES = [((16, 64, 128), (128,), True, True), ((64, 96), (96,), True, False), ((48, 100), (100,), False, True),
         ((8, 12, 6, 9), (6, 9), True, True), ((4096, 3), (3,), False, False), ((2, 5000), (5000,), True, True)]


def _arrays(shape, ns, affine_w, affine_b, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3 + 1.5).astype(dtype)
    w = rng.standard_normal(ns).astype(dtype) if affine_w else None
    b = rng.standard_normal(ns).astype(dtype) if affine_b else None
    g = rng.standard_normal(shape).astype(dtype)
    return x, w, b, g


def _run(lib, x, w, b, g, ns, create_graph=False, transpose=False):
    xt = lib.tensor(x, requires_grad=True)
    xin = xt
    if transpose:   # a non-contiguous input of the same values
        xt = lib.tensor(np.ascontiguousarray(np.swapaxes(x, 0, 1)), requires_grad=True)
        xin = xt.transpose(0, 1)
    wt = lib.tensor(w, requires_grad=True) if w is not None else None
    bt = lib.tensor(b, requires_grad=True) if b is not None else None
    y = lib.nn.functional.layer_norm(xin, ns, wt, bt)
    ins = [t for t in (xt, wt, bt) if t is not None]
    gs = lib.autograd.grad(y, ins, lib.tensor(g), create_graph=create_graph)
    gs = [a.detach().numpy() for a in gs]
    if transpose:
        gs[0] = np.swapaxes(gs[0], 0, 1)
    return [y.detach().numpy()] + gs


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,ns,w,b", CASES)
def test_fast_paths_match_the_tensor_backward(nn_kernels_path, shape, ns, w, b, dtype):
    x, wa, ba, g = _arrays(shape, ns, w, b, dtype)
    fast = _run(retrograd, x, wa, ba, g, ns)
    ref = _run(retrograd, x, wa, ba, g, ns, create_graph=True)
    for a, r in zip(fast, ref):
        assert a.dtype == r.dtype == dtype and a.shape == r.shape
        np.testing.assert_allclose(a, r, **_tol(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,ns,w,b", CASES)
def test_compiled_kernels_match_the_numpy_path(monkeypatch, shape, ns, w, b, dtype):
    if _accel_nn.kernels() is None:
        pytest.skip("numba is not installed (or RETROGRAD_NO_NUMBA is set)")
    x, wa, ba, g = _arrays(shape, ns, w, b, dtype, seed=1)
    fast = _run(retrograd, x, wa, ba, g, ns)
    fast_t = _run(retrograd, x, wa, ba, g, ns, transpose=True)
    monkeypatch.setattr(_accel_nn, "_KERNELS", [None])
    ref = _run(retrograd, x, wa, ba, g, ns)
    for a, at, r in zip(fast, fast_t, ref):
        np.testing.assert_allclose(a, r, **_tol(dtype))
        np.testing.assert_array_equal(a, at)


def test_numpy_path_forward_is_the_general_formula(monkeypatch):
    # the fast NumPy forward does _moments and the scale and shift in place: the same bits
    monkeypatch.setattr(_accel_nn, "_KERNELS", [None])
    from retrograd.ops import normalization as N
    x, w, b, _ = _arrays((32, 16, 64), (64,), True, True, np.float32)
    mean, var = N._moments(x, (2,))
    want = (x - mean) * N._rstd(var, 1e-5) * w + b
    got = retrograd.nn.functional.layer_norm(retrograd.tensor(x), (64,), retrograd.tensor(w), retrograd.tensor(b))
    np.testing.assert_array_equal(got.numpy(), want)


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,ns,w,b", CASES)
def test_fast_paths_match_torch(nn_kernels_path, shape, ns, w, b, dtype):
    x, wa, ba, g = _arrays(shape, ns, w, b, dtype, seed=2)
    ours = _run(retrograd, x, wa, ba, g, ns)
    theirs = _run(torch, x, wa, ba, g, ns)
    tol = dict(rtol=1e-4, atol=2e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    for a, r in zip(ours, theirs):
        assert a.dtype == r.dtype
        np.testing.assert_allclose(a, r, **tol)
    ours_t = _run(retrograd, x, wa, ba, g, ns, transpose=True)
    for a, r in zip(ours_t, theirs):
        np.testing.assert_allclose(a, r, **tol)


@needs_torch
def test_sum_backward_gradient_matches_torch(nn_kernels_path):
    # a broadcast (stride-0) incoming gradient, as from y.sum().backward()
    x, w, b, _ = _arrays((64, 128), (128,), True, True, np.float32, seed=3)
    got, want = [], []
    for lib, out in ((retrograd, got), (torch, want)):
        xt, wt, bt = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
        (lib.nn.functional.layer_norm(xt, (128,), wt, bt) * lib.tensor(x)).sum().backward()
        out += [t.grad.numpy() for t in (xt, wt, bt)]
    for a, r in zip(got, want):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4)


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_double_backward_after_a_fast_forward_matches_torch(nn_kernels_path, dtype):
    # the forward's kernel, then create_graph: the tensor-op backward, differentiable again
    x, w, b, g = _arrays((32, 160), (160,), True, True, dtype, seed=4)
    v = np.random.default_rng(5).standard_normal(x.shape).astype(dtype)
    res = []
    for lib in (retrograd, torch):
        xt, wt, bt = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
        y = lib.nn.functional.layer_norm(xt, (160,), wt, bt)
        gx, gw = lib.autograd.grad(y, (xt, wt), lib.tensor(g), create_graph=True)
        s = (gx * lib.tensor(v)).sum() + (gw * gw).sum()
        res.append([a.detach().numpy() for a in lib.autograd.grad(s, (xt, wt, bt), allow_unused=True)
                    if a is not None])
    tol = dict(rtol=2e-3, atol=2e-3) if dtype == np.float32 else dict(rtol=1e-8, atol=1e-8)
    assert len(res[0]) == len(res[1])
    for a, r in zip(*res):
        np.testing.assert_allclose(a, r, **tol)


def test_nonfinite_rows_stay_in_their_rows(nn_kernels_path):
    x, w, b, g = _arrays((64, 128), (128,), True, True, np.float32, seed=6)
    x[3, 5] = np.inf
    x[7, 0] = np.nan
    g[11, 2] = np.inf
    y, gx, gw, gb = _run(retrograd, x, w, b, g, (128,))
    bad = {3, 7}
    for r in range(64):
        assert np.isnan(y[r]).all() == (r in bad)
        assert np.isfinite(y[r]).all() == (r not in bad)
        assert np.isfinite(gx[r]).all() == (r not in bad | {11})
    assert not np.isfinite(gw).any() and not np.isfinite(gb[2])


def test_gradcheck_float64_above_the_kernel_size(nn_kernels_path):
    # small enough for finite differences, large enough (MIN_SIZE) for the compiled kernels
    rng = np.random.default_rng(7)
    n = _accel_nn.MIN_SIZE // 64
    x = retrograd.tensor(rng.standard_normal((64, n)), requires_grad=True)
    w = retrograd.tensor(rng.standard_normal(n), requires_grad=True)
    b = retrograd.tensor(rng.standard_normal(n), requires_grad=True)
    f = lambda x, w, b: retrograd.nn.functional.layer_norm(x, (n,), w, b)
    assert gradcheck(f, (x, w, b))


def test_gradgradcheck_float64():
    rng = np.random.default_rng(8)
    x = retrograd.tensor(rng.standard_normal((3, 5)), requires_grad=True)
    w = retrograd.tensor(rng.standard_normal(5), requires_grad=True)
    b = retrograd.tensor(rng.standard_normal(5), requires_grad=True)
    f = lambda x, w, b: retrograd.nn.functional.layer_norm(x, (5,), w, b)
    assert gradgradcheck(f, (x, w, b))
