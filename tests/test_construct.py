"""Construction and statistics functions beyond the op table: second derivatives of cdist and
pdist (PyTorch has none; checked by finite differences), cdist's matrix-product route, cov's
warning and weights, the windows' dtype and requires_grad."""

import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from helpers import torch, needs_torch


def _t(a):
    return retrograd.tensor(np.asarray(a, np.float64)).requires_grad_()


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 1.5, float("inf")])
def test_cdist_pdist_second_derivatives(p):
    r = np.random.default_rng(0)
    x1, x2 = _t(r.standard_normal((2, 3, 2))), _t(r.standard_normal((4, 2)))
    assert gradcheck(lambda a, b: retrograd.cdist(a, b, p), (x1, x2))
    assert gradgradcheck(lambda a, b: retrograd.cdist(a, b, p), (x1, x2))
    x = _t(r.standard_normal((4, 3)))
    assert gradcheck(lambda a: retrograd.pdist(a, p), (x,))
    assert gradgradcheck(lambda a: retrograd.pdist(a, p), (x,))


@needs_torch
@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "use_mm_for_euclid_dist_if_necessary",
                                  "donot_use_mm_for_euclid_dist"])
def test_cdist_compute_modes_match_torch(mode):
    r = np.random.default_rng(1)
    a, b = r.standard_normal((2, 30, 3)), r.standard_normal((5, 3))
    g = r.standard_normal((2, 30, 5))
    out = []
    for lib in (retrograd, torch):
        x, y = lib.tensor(a).requires_grad_(), lib.tensor(b).requires_grad_()
        d = lib.cdist(x, y, compute_mode=mode)
        d.backward(lib.tensor(g))
        out.append((d.detach().numpy(), x.grad.numpy(), y.grad.numpy(), type(d.grad_fn).__name__))
    (rd, rx, ry, rn), (td, tx, ty, tn) = out
    assert rn == tn
    assert np.allclose(rd, td) and np.allclose(rx, tx) and np.allclose(ry, ty)


@needs_torch
def test_cov_warns_without_degrees_of_freedom_and_weights_match():
    r = np.random.default_rng(2)
    x = r.standard_normal((2, 3))
    for lib in (retrograd, torch):
        with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
            lib.cov(lib.tensor(x), correction=3)
    fw, aw = np.array([1, 2, 3]), np.array([0.5, 1.0, 2.0])
    got = retrograd.cov(retrograd.tensor(x), fweights=retrograd.tensor(fw), aweights=retrograd.tensor(aw))
    exp = torch.cov(torch.tensor(x), fweights=torch.tensor(fw), aweights=torch.tensor(aw))
    assert np.allclose(got.numpy(), exp.numpy())


@needs_torch
@pytest.mark.parametrize("name", ["bartlett_window", "blackman_window", "hamming_window", "hann_window",
                                  "kaiser_window"])
def test_windows_dtype_and_requires_grad(name):
    r = getattr(retrograd, name)(8, dtype=retrograd.float64, requires_grad=True)
    t = getattr(torch, name)(8, dtype=torch.float64, requires_grad=True)
    assert r.requires_grad and r.is_leaf and str(r.dtype) == str(t.dtype)
    assert np.allclose(r.detach().numpy(), t.detach().numpy())


def test_trapezoid_gradcheck_with_sample_points():
    r = np.random.default_rng(3)
    y, x = _t(r.standard_normal((3, 4))), _t(np.sort(r.standard_normal(4)))
    assert gradcheck(lambda a, b: retrograd.trapezoid(a, b), (y, x))
    assert gradgradcheck(lambda a, b: retrograd.cumulative_trapezoid(a, b), (y, x))
    assert gradgradcheck(lambda a: retrograd.corrcoef(a), (y,))


@pytest.mark.parametrize("name", ["trapezoid", "cumulative_trapezoid", "trapz"])
def test_trapezoid_refuses_a_complex_spacing(name):
    """A complex ``dx``: PyTorch's error (a RuntimeError from the kernel, trapz's argument
    parser a TypeError), not a result; once the spacing's imaginary part was dropped (0)."""
    y = retrograd.tensor([1.0, 2.0, 4.0])
    want = (TypeError, "trapz() received an invalid combination of arguments - got (Tensor, dx=complex), but "
            "expected one of:\n * (Tensor y, *, float dx = 1, int dim = -1)\n * (Tensor y, Tensor x, *, int dim = -1)\n") \
        if name == "trapz" else (RuntimeError, f"{name}: Currently, we only support dx as a real number.")
    with pytest.raises(want[0]) as e:
        getattr(retrograd, name)(y, dx=1j)
    assert str(e.value) == want[1]
    if torch is not None:
        with pytest.raises(want[0]) as t:
            getattr(torch, name)(torch.tensor([1.0, 2.0, 4.0]), dx=1j)
        assert str(t.value) == want[1]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_products_with_a_number_in_float32(dtype):
    """A half tensor times a Python number inside a composite (trapezoid's 0.5 and dx, ndtr's
    1/sqrt(2) and 0.5): computed in float32, the number too, and rounded once, as PyTorch's
    kernels do; rounding the number to the half type first was off in the last bit for 2-16%
    of the elements."""
    from retrograd.ops.special import scaled
    a = np.random.default_rng(0).standard_normal(2000) * 3
    x = retrograd.tensor(a).to(getattr(retrograd, dtype))
    xd = x._data
    for c in (0.1, 1 / 3, 0.7071067811865476):
        want = (xd.astype(np.float32) * np.float32(c)).astype(xd.dtype)
        assert np.array_equal(scaled(x, c)._data.astype(np.float32), want.astype(np.float32))
    if torch is not None:
        xt = torch.tensor(a).to(getattr(torch, dtype))
        for f, g in ((retrograd.special.ndtr, torch.special.ndtr),
                     (lambda t: retrograd.trapezoid(t.reshape(100, 20), dx=0.1),
                      lambda t: torch.trapezoid(t.reshape(100, 20), dx=0.1))):
            assert np.array_equal(f(x).float().numpy(), g(xt).float().numpy())
