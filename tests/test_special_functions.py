"""erf, erfc, erfinv and exact GELU: vectorised kernels (scipy.special ufuncs; float32 erf as a
float32 formula in blocks), never a Python call per element; torch's dtypes and values."""
import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from retrograd.ops import unary, _accel

from helpers import torch, needs_torch

scipy_special = pytest.importorskip("scipy.special")

@pytest.fixture
def numpy_path(monkeypatch):
    """The pure-NumPy kernels, as without numba (RETROGRAD_NO_NUMBA=1)."""
    monkeypatch.setattr(_accel, "_KERNELS", [None])


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


def test_blockwise_gives_the_values_of_the_whole_array(numpy_path):
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


# *** the optional compiled kernels (numba) against the NumPy path, the reference ***

def _numba():
    if _accel.kernels() is None:
        pytest.skip("numba is not installed (or RETROGRAD_NO_NUMBA is set)")


SUBNORMALS = {"float32": [1e-45, -1e-45, 1e-40, -3e-39, 1.17e-38], "float64": [5e-324, -5e-324, 1e-310, -2e-308]}


def _grid(dtype):
    """A dense grid over erf's whole range, tiny magnitudes, every edge value, in dtype."""
    g = np.linspace(-30, 30, 120_001)
    tiny = 10.0 ** np.linspace(-300 if dtype == "float64" else -37, 0, 4001)
    x = np.concatenate([g, tiny, -tiny, EDGES, SUBNORMALS[dtype], [26.5, 27.0, 3.99999, 4.00001, -4.0]])
    return x.astype(dtype)


def _paths(monkeypatch, fn, *arrays):
    """fn(*arrays) through the compiled kernels, then through the NumPy path."""
    _numba()
    assert _accel.usable(*arrays) is not None
    with np.errstate(all="ignore"):
        compiled = fn(*arrays)
        with monkeypatch.context() as m:
            m.setattr(_accel, "_KERNELS", [None])
            assert _accel.usable(*arrays) is None
            reference = fn(*arrays)
    assert compiled.dtype == reference.dtype == arrays[0].dtype and compiled.shape == reference.shape
    return compiled, reference


def _same_specials(a, b):
    """NaN at the same places, the same signs elsewhere (-0. stays -0.), the same infinities."""
    assert np.array_equal(np.isnan(a), np.isnan(b))
    ok = ~np.isnan(a)
    assert np.array_equal(np.signbit(a[ok]), np.signbit(b[ok]))
    assert np.array_equal(np.isinf(a), np.isinf(b)) and np.array_equal(a[np.isinf(a)], b[np.isinf(b)])


def _ulps(a, b):
    """|a - b| in units of the last place of the larger magnitude, elementwise (0 where equal)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ok = np.isfinite(a64) & np.isfinite(b64)
    big = np.maximum(np.abs(a), np.abs(b))[ok]
    return np.abs(a64 - b64)[ok] / np.spacing(big).astype(np.float64)


def _gelu_grad_np(g, x):
    return retrograd.ops.activation._gelu_grad(retrograd.tensor(g), retrograd.tensor(x), "none")._data


_KERNEL_FNS = {"erf": unary._erf_np, "erfc": unary._erfc_np,
               "gelu": lambda x: retrograd.nn.functional.gelu(retrograd.tensor(x))._data}


@pytest.mark.parametrize("name", ["erf", "gelu"])
def test_compiled_float32_erf_and_gelu_are_the_numpy_paths_bits(monkeypatch, name):
    # the same float32 formula, the same IEEE operations in the same order
    x = _grid("float32")
    c, r = _paths(monkeypatch, _KERNEL_FNS[name], x)
    np.testing.assert_array_equal(c, r)
    _same_specials(c, r)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_compiled_gelu_backward_matches_the_numpy_path(monkeypatch, dtype):
    x = _grid(dtype)
    g = np.random.default_rng(5).standard_normal(x.shape).astype(dtype)
    g[:7] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e300 if dtype == "float64" else 3e38, 1.0]
    c, r = _paths(monkeypatch, _gelu_grad_np, g, x)
    _same_specials(c, r)
    if dtype == "float32":   # the same float32 erf and exp: every bit
        np.testing.assert_array_equal(c, r)
    else:                    # libm's erf against SciPy's: 1 ulp of erf, scaled by x/2 into the sum
        ok = np.isfinite(c)
        tol = 2 * np.finfo(np.float64).eps * (np.abs(g * x) + np.abs(g))[ok]
        assert np.all(np.abs(c - r)[ok] <= tol)


@pytest.mark.parametrize("name", ["erf", "erfc"])
def test_compiled_erf_erfc_against_the_numpy_path_and_the_exact_value(monkeypatch, name):
    mpmath = pytest.importorskip("mpmath")
    exact_fn = {"erf": mpmath.erf, "erfc": mpmath.erfc}[name]
    for dtype in ("float32", "float64"):
        x = _grid(dtype)
        c, r = _paths(monkeypatch, _KERNEL_FNS[name], x)
        _same_specials(c, r)
        if dtype == "float32" and name == "erfc":   # both round double erfc once
            assert _ulps(c, r).max() <= 1
        elif dtype == "float64" and name == "erf":  # libm's and SciPy's, each within 1 ulp
            assert _ulps(c, r).max() <= 2
        elif dtype == "float64":                    # SciPy's erfc loses ~1e-13 in its tail
            np.testing.assert_allclose(c, r, rtol=2e-13, atol=2 * 5e-324)   # (its subnormals: 1 ulp)
        # libm's double erf within 1 ulp of the exact value, its erfc within 2 (in the far tail,
        # past 20); float32 rounds them once: within 1 ulp
        with mpmath.workdps(40):
            sample = np.flatnonzero(np.isfinite(x))[::37]
            exact = np.array([float(exact_fn(mpmath.mpf(float(v)))) for v in x[sample]])
        if dtype == "float32" and name == "erf":    # the float32 formula, 1.32 ulp (test_gelu_fast)
            continue
        got = c[sample].astype(np.float64)
        ulp = np.spacing(np.abs(exact).astype(dtype)).astype(np.float64)
        bound = 2 if (name, dtype) == ("erfc", "float64") else 1
        assert (np.abs(got - exact) / ulp).max() <= bound, (name, dtype)
        if name == "erfc" and dtype == "float64":   # libm's erfc reaches the subnormals
            assert c[x == 27.0][0] > 0


def test_compiled_float64_gelu_matches_the_numpy_path(monkeypatch):
    x = _grid("float64")
    c, r = _paths(monkeypatch, _KERNEL_FNS["gelu"], x)
    _same_specials(c, r)
    ok = np.isfinite(c)
    # erf's last-place difference (libm against SciPy), scaled by |x|/2 where 1 + erf cancels
    assert np.all(np.abs(c - r)[ok] <= np.finfo(np.float64).eps * (np.abs(x[ok]) + np.abs(r[ok])))


def test_compiled_float32_erf_is_within_2_ulp_of_the_exact_value():
    _numba()
    x = _dense_float32()
    k = _accel.kernels()
    got = np.empty_like(x)
    k.erf(x, got)
    exact = scipy_special.erf(x.astype(np.float64))
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert (np.abs(got.astype(np.float64) - exact) / ulp).max() <= 2


def test_compiled_float32_erf_gives_the_numpy_paths_bits_densely(monkeypatch):
    """The compiled float32 erf fuses its float64 multiply-adds: rounded to float32 it gives
    the NumPy path's bits (every 64th float32 in [0, 4.5], and their negatives)."""
    _numba()
    lo, hi = np.float32(0).view(np.int32), np.float32(4.5).view(np.int32)
    x = np.arange(lo, hi, 64, dtype=np.int32).view(np.float32)
    x = np.concatenate([x, -x])
    c, r = _paths(monkeypatch, unary._erf_np, x)
    np.testing.assert_array_equal(c, r)


def test_compiled_kernels_take_strided_and_multi_dimensional_arrays(monkeypatch):
    a = np.random.default_rng(6).standard_normal((64, 96)).astype(np.float32)[:, ::3].T
    for name in ("erf", "erfc", "gelu"):
        c, r = _paths(monkeypatch, _KERNEL_FNS[name], a)
        np.testing.assert_array_equal(c, r)
    g = np.asfortranarray(np.random.default_rng(7).standard_normal(a.shape).astype(np.float32))
    c, r = _paths(monkeypatch, _gelu_grad_np, g, a)
    np.testing.assert_array_equal(c, r)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_compiled_values_and_gradients_match_torch(dtype):
    _numba()
    a = np.concatenate([np.linspace(-9, 9, 4001), [0.0, -0.0, 26.5, 27.0]]).astype(dtype)
    assert _accel.usable(a) is not None
    rtol = 2e-6 if dtype == "float32" else 1e-15
    for name in ("erf", "erfc", "gelu"):
        r_f = retrograd.nn.functional.gelu if name == "gelu" else getattr(retrograd, name)
        t_f = torch.nn.functional.gelu if name == "gelu" else getattr(torch, name)
        rx = retrograd.tensor(a, requires_grad=True)
        tx = torch.tensor(a, requires_grad=True)
        r, t = r_f(rx), t_f(tx)
        atol = _gelu_atol(a, dtype) if name == "gelu" else 0
        if dtype == "float64" and name == "gelu":
            atol = 2 * np.finfo(np.float64).eps * np.abs(a).max()
        np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol, err_msg=name)
        assert np.array_equal(np.signbit(r.detach().numpy()), np.signbit(t.detach().numpy())), name
        r.sum().backward()
        t.sum().backward()
        np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=rtol, atol=atol or 1e-300, err_msg=name)


def test_compiled_gradcheck_float64():
    _numba()
    x = retrograd.tensor(np.random.default_rng(8).uniform(-3, 3, (16, 16)), dtype=retrograd.float64,
                         requires_grad=True)
    assert _accel.usable(x._data) is not None
    for f in (retrograd.erf, retrograd.erfc, retrograd.nn.functional.gelu):
        assert gradcheck(f, (x,))
        assert gradgradcheck(f, (x,))


_PROBE = """
import sys, numpy as np, retrograd
x = retrograd.tensor(np.linspace(-3, 3, {n}, dtype=np.float32), requires_grad=True)
for f in (retrograd.erf, retrograd.erfc, retrograd.nn.functional.gelu):
    f(x).sum().backward()
from retrograd.ops import _accel
print(_accel._KERNELS, "numba" in sys.modules)
"""


def _probe(n, **env):
    import os
    import subprocess
    import sys
    e = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    e.pop("RETROGRAD_NO_NUMBA", None)
    e.update(env)
    r = subprocess.run([sys.executable, "-c", _PROBE.format(n=n)], env=e, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_retrograd_no_numba_runs_the_numpy_path():
    assert _probe(4096, RETROGRAD_NO_NUMBA="1") == ["[None]", "False"]


def test_small_tensors_never_load_numba():
    # 0-d and tiny tensors keep the NumPy/SciPy ufuncs: numba's import and first call would cost
    # more than a program's thousands of small calls save
    assert _probe(_accel.MIN_SIZE - 1) == ["[]", "False"]


@needs_torch
@pytest.mark.parametrize("call", [
    lambda L, x: L.special.ndtr(x),
    lambda L, x: L.special.chebyshev_polynomial_t(x, 3),
    lambda L, x: L.special.legendre_polynomial_p(x, L.empty(4, device="meta", dtype=L.int64)),
    lambda L, x: L.special.hermite_polynomial_h(0.5, L.empty(3, 4, device="meta", dtype=L.int64)),
    lambda L, x: L.special.shifted_chebyshev_polynomial_w(x.double(), 2.0),
])
def test_ndtr_and_the_polynomials_propagate_meta_as_torch(call):
    """(a meta tensor has no degree to run a recurrence to, and no data to copy)"""
    r, t = (call(L, L.empty(3, 4, device="meta")) for L in (retrograd, torch))
    assert r.is_meta and tuple(r.shape) == tuple(t.shape) and str(r.dtype) == str(t.dtype)
