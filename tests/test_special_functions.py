"""erf, erfc, erfinv and exact GELU: vectorised kernels (scipy.special ufuncs; float32 erf as a
rational function in blocks), never a Python call per element; torch's dtypes and values."""
import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from retrograd.ops import unary

from helpers import torch, needs_torch

scipy_special = pytest.importorskip("scipy.special")

EDGES = [0.0, -0.0, 1e-30, -1e-30, 1e-45, 0.5, -0.5, 1.0, 3.0, -3.9, 4.5, 10.0, 30.0, -30.0,
         float("inf"), float("-inf"), float("nan")]


def _dense_float32():
    g = np.linspace(-6, 6, 400_001, dtype=np.float32)
    tiny = (10.0 ** np.linspace(-37, 1, 20_001)).astype(np.float32)
    return np.concatenate([g, tiny, -tiny])


def test_float32_erf_is_within_2_ulp_of_the_exact_value():
    x = _dense_float32()
    got = unary._erf_np(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    exact = scipy_special.erf(x.astype(np.float64))
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    err = np.abs(got.astype(np.float64) - exact) / ulp
    assert err.max() <= 2 and err.mean() < 0.5
    assert np.all(np.abs(got) <= 1) and np.all(np.sign(got) == np.sign(x))


def test_blockwise_gives_the_values_of_the_whole_array():
    x = np.random.default_rng(0).standard_normal(3 * unary._BLOCK + 17).astype(np.float32).reshape(-1, 1)
    np.testing.assert_array_equal(unary._erf_np(x), unary._erf_f32(x))
    xd = x.astype(np.float64)
    np.testing.assert_array_equal(unary._erf_np(xd), scipy_special.erf(xd))
    g = np.float32(2.0)      # broadcast against x
    from retrograd.ops.activation import _gelu_grad_exact
    np.testing.assert_array_equal(unary._blockwise(_gelu_grad_exact, g, x), _gelu_grad_exact(g, x))


def _calls(fn, *args):
    raise AssertionError(f"a Python call per element: {fn}")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_no_python_call_per_element(monkeypatch, dtype):
    monkeypatch.setattr(np, "vectorize", lambda *a, **k: (lambda *b, **c: _calls("np.vectorize")))
    monkeypatch.setattr(np, "frompyfunc", lambda *a, **k: (lambda *b, **c: _calls("np.frompyfunc")))
    a = np.random.default_rng(1).uniform(-0.9, 0.9, (300, 300))
    for f in (retrograd.erf, retrograd.erfc, retrograd.erfinv, retrograd.nn.functional.gelu):
        x = retrograd.tensor(a, dtype=getattr(retrograd, dtype), requires_grad=True)
        y = f(x)
        assert y.dtype == x.dtype
        y.backward(retrograd.ones_like(y))     # (a float16 sum of 90,000 values would overflow)
        assert x.grad.dtype == x.dtype


def _gelu_atol(x, dtype):
    """Both libraries compute x/2 * (1 + erf(x/sqrt 2)): for x < 0 the sum cancels, and each
    erf's rounding (1-2 ulp of 1) is scaled by |x|/2 into the result."""
    x = np.abs(np.nan_to_num(np.asarray(x, np.float64), posinf=0, neginf=0))
    return 2 * np.finfo(dtype).eps * x.max() if dtype != "float64" else 0


@needs_torch
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", ["erf", "erfc", "erfinv", "gelu"])
def test_values_and_dtypes_match_torch_at_edge_points(name, dtype):
    vals = EDGES + ([0.999, -0.999, 1.0, -1.0, 1.5] if name == "erfinv" else [])
    r_f = retrograd.nn.functional.gelu if name == "gelu" else getattr(retrograd, name)
    t_f = torch.nn.functional.gelu if name == "gelu" else getattr(torch, name)
    for v in vals:   # one element at a time: torch's vectorised and scalar kernels differ at +-inf
        r = r_f(retrograd.tensor([v], dtype=getattr(retrograd, dtype)))
        t = t_f(torch.tensor([v], dtype=getattr(torch, dtype)))
        assert str(r.dtype) == str(t.dtype)
        np.testing.assert_allclose(r.numpy().astype(np.float64), t.numpy().astype(np.float64),
                                   rtol={"float16": 1e-3, "float32": 2e-6, "float64": 1e-14}[dtype],
                                   atol=_gelu_atol(v, dtype) if name == "gelu" else 0, equal_nan=True,
                                   err_msg=f"{name}({v}) {dtype}")
        if not np.isnan(t.numpy()).any():   # -0. stays -0.; a NaN's sign bit carries no value
            assert np.signbit(r.numpy()).tolist() == np.signbit(t.numpy()).tolist(), (name, v, dtype)


@needs_torch
@pytest.mark.parametrize("name", ["erf", "gelu"])
def test_float32_on_a_large_tensor_matches_torch(name):
    a = np.random.default_rng(2).standard_normal((256, 1024)).astype(np.float32) * 2
    r_f = retrograd.nn.functional.gelu if name == "gelu" else retrograd.erf
    t_f = torch.nn.functional.gelu if name == "gelu" else torch.erf
    rx = retrograd.tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    r, t = r_f(rx), t_f(tx)
    atol = _gelu_atol(a, "float32") if name == "gelu" else 0
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=2e-6, atol=atol)
    r.sum().backward()
    t.sum().backward()
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=2e-6, atol=atol or 2e-7)


@needs_torch
def test_erfc_keeps_the_tail():
    for dtype in ("float32", "float64"):
        x = [5.0, 9.0, 10.0, 26.0, 27.0]
        r = retrograd.erfc(retrograd.tensor(x, dtype=getattr(retrograd, dtype))).numpy()
        t = torch.erfc(torch.tensor(x, dtype=getattr(torch, dtype))).numpy()
        np.testing.assert_allclose(r, t, rtol=1e-6 if dtype == "float32" else 1e-13, atol=0)
        assert r[0] > 0


@pytest.mark.parametrize("name", ["erf", "erfc", "erfinv", "gelu"])
def test_gradcheck_float64(name):
    f = retrograd.nn.functional.gelu if name == "gelu" else getattr(retrograd, name)
    x = retrograd.tensor(np.random.default_rng(3).uniform(-0.9, 0.9, (3, 4)), dtype=retrograd.float64,
                         requires_grad=True)
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
