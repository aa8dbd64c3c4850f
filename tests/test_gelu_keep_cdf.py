"""Exact GELU's compiled forward that keeps its derivative (cdf + x * pdf) for the backward:
the same bits as the kernels that compute erf again and as the NumPy path
(RETROGRAD_NO_NUMBA=1), the kept array released with the graph, double backward through the
recorded path."""
import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from retrograd.ops import _accel, _accel_nn, activation
from helpers import needs_torch, torch

F = retrograd.nn.functional
numba_only = pytest.mark.skipif(_accel_nn.kernels() is None or _accel.kernels() is None,
                                reason="numba is not installed (or RETROGRAD_NO_NUMBA is set)")

EDGES = [0.0, -0.0, 1e-30, -1e-30, 1e-45, 0.5, -0.5, 3.0, -3.9, 4.5, 10.0, -30.0, 1e30, -1e30,
         float("inf"), float("-inf"), float("nan")]


def _x(dtype, n=5000, seed=0):
    x = np.random.default_rng(seed).standard_normal(n) * 3
    x[:len(EDGES)] = EDGES
    return x.astype(dtype).reshape(50, -1)


def _fwd_bwd(x, g, retain=False):
    xt = retrograd.tensor(x, requires_grad=True)
    y = F.gelu(xt)
    y.backward(retrograd.tensor(g), retain_graph=retain)
    return y, xt.grad.numpy()


@numba_only
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kept_derivative_gives_the_bits_of_the_kernels_and_the_numpy_path(monkeypatch, dtype):
    x = _x(dtype)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    y, gx = _fwd_bwd(x, g)
    assert y.grad_fn.dydx is None          # released with the graph
    # the kernels that compute erf again (no recorded forward, then the backward's own erf)
    y0 = F.gelu(retrograd.tensor(x)).numpy()
    gx0 = activation._gelu_grad(retrograd.tensor(g), retrograd.tensor(x), "none").numpy()
    np.testing.assert_array_equal(y.detach().numpy(), y0)
    np.testing.assert_array_equal(gx, gx0)
    if dtype == np.float32:     # the NumPy path (float32: the same float32 formulas, the same bits)
        monkeypatch.setattr(_accel, "_KERNELS", [None])
        monkeypatch.setattr(_accel_nn, "_KERNELS", [None])
        y1, gx1 = _fwd_bwd(x, g)
        np.testing.assert_array_equal(y.detach().numpy(), y1.detach().numpy())
        np.testing.assert_array_equal(gx, gx1)


@numba_only
def test_derivative_is_kept_only_when_a_backward_can_follow():
    x = _x(np.float32)
    assert F.gelu(retrograd.tensor(x)).grad_fn is None
    y = F.gelu(retrograd.tensor(x, requires_grad=True))
    assert y.grad_fn.dydx is not None and y.grad_fn.dydx.shape == x.shape
    with retrograd.no_grad():
        assert F.gelu(retrograd.tensor(x, requires_grad=True)).grad_fn is None
    # retain_graph keeps it for the next backward, which gives the same gradient
    g = np.ones(x.shape, np.float32)
    xt = retrograd.tensor(x, requires_grad=True)
    y = F.gelu(xt)
    y.backward(retrograd.tensor(g), retain_graph=True)
    first = xt.grad.numpy().copy()
    assert y.grad_fn.dydx is not None
    xt.grad = None
    y.backward(retrograd.tensor(g))
    np.testing.assert_array_equal(xt.grad.numpy(), first)


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_double_backward_matches_torch(dtype):
    x = np.random.default_rng(2).standard_normal((40, 130)).astype(dtype) * 2
    v = np.random.default_rng(3).standard_normal(x.shape).astype(dtype)
    res = []
    for lib in (retrograd, torch):
        xt = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.gelu(xt)
        (gx,) = lib.autograd.grad((y * y).sum(), xt, create_graph=True)
        (ggx,) = lib.autograd.grad((gx * lib.tensor(v)).sum(), xt)
        res.append((y.detach().numpy(), gx.detach().numpy(), ggx.numpy()))
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, **tol)


def test_gradcheck_float64_above_the_kernel_size():
    x = retrograd.tensor(np.random.default_rng(4).uniform(-3, 3, (8, 16)), requires_grad=True)
    assert x.numel() >= _accel.MIN_SIZE
    assert gradcheck(F.gelu, (x,))
    assert gradgradcheck(F.gelu, (x,))


@numba_only
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_expanded_gradient_of_a_sum_gives_the_same_bits(monkeypatch, dtype):
    # sum().backward() hands GELU an expanded single value, passed to the kernel as that value
    x = _x(dtype, seed=5)
    xt = retrograd.tensor(x, requires_grad=True)
    y = F.gelu(xt)
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().strides))
    y.sum().backward()
    assert seen == [(0, 0)]          # the path under test: an expanded gradient
    full = activation._gelu_grad(retrograd.tensor(np.ones(x.shape, dtype)), retrograd.tensor(x), "none")
    np.testing.assert_array_equal(xt.grad.numpy(), full.numpy())
    if dtype == np.float32:
        monkeypatch.setattr(_accel, "_KERNELS", [None])
        monkeypatch.setattr(_accel_nn, "_KERNELS", [None])
        xt2 = retrograd.tensor(x, requires_grad=True)
        F.gelu(xt2).sum().backward()
        np.testing.assert_array_equal(xt.grad.numpy(), xt2.grad.numpy())
