"""Batch norm's array backward (taken when the backward is not itself recorded) against
its tensor-op backward (create_graph), PyTorch and finite differences."""
import numpy as np
import pytest

import retrograd
from helpers import needs_torch, torch

CASES = [((4, 3, 5, 6), True, True), ((4, 3, 5, 6), False, True), ((8, 5), True, True),
         ((3, 4, 7), True, False), ((2, 3, 4, 4, 3), True, True)]


def _run(lib, x, w, b, g, training, create_graph, channels_last=False):
    xt = lib.tensor(x, requires_grad=True)
    xin = xt
    if channels_last:   # a non-contiguous input
        xin = lib.tensor(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), requires_grad=True)
        xt = xin
        xin = xin.permute(0, 3, 1, 2)
    wt = lib.tensor(w, requires_grad=True) if w is not None else None
    bt = lib.tensor(b, requires_grad=True) if b is not None else None
    c = x.shape[1]
    rm, rv = lib.zeros(c, dtype=xin.dtype) + 0.3, lib.ones(c, dtype=xin.dtype) * 1.7
    y = lib.nn.functional.batch_norm(xin, rm, rv, wt, bt, training=training)
    ins = [t for t in (xt, wt, bt) if t is not None]
    gs = lib.autograd.grad(y, ins, lib.tensor(g), create_graph=create_graph)
    return [y.detach().numpy()] + [a.detach().numpy() for a in gs]


def _inputs(seed, shape, affine, dtype, scale=1, shift=0):
    """x (scaled and shifted), weight and bias (None unless ``affine``) and an output gradient."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype) * scale + shift
    c = shape[1]
    w = rng.standard_normal(c).astype(dtype) if affine else None
    b = rng.standard_normal(c).astype(dtype) if affine else None
    return x, w, b, rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,affine,training", CASES)
def test_batch_norm_array_backward_matches_tensor_backward(shape, affine, training, dtype):
    x, w, b, g = _inputs(1, shape, affine, dtype, scale=2, shift=0.5)
    fast = _run(retrograd, x, w, b, g, training, False)
    ref = _run(retrograd, x, w, b, g, training, True)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for a, r in zip(fast, ref):
        assert a.dtype == r.dtype
        np.testing.assert_allclose(a, r, rtol=tol, atol=tol)


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,affine,training", CASES)
def test_batch_norm_array_backward_matches_torch(shape, affine, training, dtype):
    x, w, b, g = _inputs(2, shape, affine, dtype)
    ours = _run(retrograd, x, w, b, g, training, False)
    theirs = _run(torch, x, w, b, g, training, False)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for a, r in zip(ours, theirs):
        assert a.dtype == r.dtype
        np.testing.assert_allclose(a, r, rtol=tol, atol=tol)


@needs_torch
def test_batch_norm_array_backward_channels_last_input():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4, 5, 6))
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    g = rng.standard_normal((3, 4, 5, 6))
    ours = _run(retrograd, x, w, b, g, True, False, channels_last=True)
    theirs = _run(torch, x, w, b, g, True, False, channels_last=True)
    for a, r in zip(ours, theirs):
        np.testing.assert_allclose(a, r, rtol=1e-10, atol=1e-10)


@needs_torch
def test_batch_norm_array_backward_nonfinite_gradient():
    """An inf in the incoming gradient spreads through its channel as in PyTorch's kernel."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 2, 4, 4))
    w, b = rng.standard_normal(2), rng.standard_normal(2)
    g = rng.standard_normal((3, 2, 4, 4))
    g[1, 0, 2, 3] = np.inf
    ours = _run(retrograd, x, w, b, g, True, False)
    theirs = _run(torch, x, w, b, g, True, False)
    for a, r in zip(ours, theirs):
        np.testing.assert_allclose(a, r, rtol=1e-10, atol=1e-10, equal_nan=True)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradcheck(training):
    rng = np.random.default_rng(5)
    x = retrograd.tensor(rng.standard_normal((3, 2, 4, 3)), requires_grad=True)
    w = retrograd.tensor(rng.standard_normal(2), requires_grad=True)
    b = retrograd.tensor(rng.standard_normal(2), requires_grad=True)
    rm, rv = retrograd.zeros(2, dtype=retrograd.float64), retrograd.ones(2, dtype=retrograd.float64)

    def f(x, w, b):
        return retrograd.nn.functional.batch_norm(x, rm.clone(), rv.clone(), w, b, training=training)
    assert retrograd.autograd.gradcheck(f, (x, w, b))
    assert retrograd.autograd.gradgradcheck(f, (x, w, b))
