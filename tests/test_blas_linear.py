"""ops._blas.try_linear: a linear layer's product and bias as one MKL call (beta 1), against
NumPy's product plus bias, and F.linear through it against PyTorch."""
import numpy as np
import pytest

import retrograd
from retrograd import _threads
from retrograd.ops import _blas
from helpers import needs_torch, torch

HAVE_MKL = _blas.backend() == "mkl"
needs_mkl = pytest.mark.skipif(not HAVE_MKL, reason="MKL (pip install mkl) is not installed, or RETROGRAD_BLAS=numpy")
TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


@pytest.fixture
def one_thread():
    retrograd.set_num_threads(1)
    yield
    _threads._adaptive()


@needs_mkl
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(1024, 128, 65), (32, 700, 300), (2048, 8, 600), (256, 256, 256)])
@pytest.mark.parametrize("layout", ["c", "xT", "wT", "rows"])
def test_try_linear_equals_numpy(one_thread, dt, m, k, n, layout):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, k)).astype(dt)
    w = rng.standard_normal((n, k)).astype(dt)
    b = rng.standard_normal(n).astype(dt)
    if layout == "xT":
        x = np.ascontiguousarray(x.T).T
    elif layout == "wT":
        w = np.ascontiguousarray(w.T).T
    elif layout == "rows":        # row-strided views
        x = np.concatenate([x, x], 1)[:, :k]
        b = np.stack([b, b], 1)[:, 0]
    r = _blas.try_linear(x, w, b)
    assert r is not None and r.dtype == dt and r.shape == (m, n) and r.flags.c_contiguous
    np.testing.assert_allclose(r, x @ w.T + b, **TOL[dt])


@pytest.mark.parametrize("case", ["small", "int", "mixed", "bias2d", "batched"])
def test_try_linear_declines(case):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1024, 128)).astype(np.float32)
    w = rng.standard_normal((128, 128)).astype(np.float32)
    b = np.zeros(128, np.float32)
    if HAVE_MKL:    # (the product as it is would go to MKL)
        assert _blas.try_linear(x, w, b) is not None
    if case == "small":
        x = x[:64]
    elif case == "int":
        x, w, b = x.astype(np.int64), w.astype(np.int64), b.astype(np.int64)
    elif case == "mixed":
        b = b.astype(np.float64)
    elif case == "bias2d":
        b = b[None]
    elif case == "batched":
        x = x.reshape(8, 128, 128)
    assert _blas.try_linear(x, w, b) is None


def test_try_linear_zero_stride_and_nonfinite_bias():
    if not HAVE_MKL:
        pytest.skip("MKL is not installed")
    rng = np.random.default_rng(1)
    x = np.broadcast_to(rng.standard_normal(64).astype(np.float32), (512, 64))
    w = rng.standard_normal((96, 64)).astype(np.float32)
    b = np.zeros(96, np.float32)
    b[3], b[5] = np.inf, np.nan
    r = _blas.try_linear(x, w, b)
    want = np.ascontiguousarray(x) @ w.T + b
    if r is None:       # (a zero-stride input is one MKL does not describe)
        return
    np.testing.assert_array_equal(np.isnan(r), np.isnan(want))
    np.testing.assert_allclose(r, want, rtol=2e-5, atol=2e-5)


@needs_torch
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("xshape", [(512, 64), (32, 16, 64), (4, 8, 32, 64), (16, 700)])
def test_linear_with_bias_matches_torch(one_thread, dt, xshape):
    rng = np.random.default_rng(2)
    a = rng.standard_normal(xshape).astype(dt)
    W = rng.standard_normal((600, xshape[-1])).astype(dt)     # (products MKL takes, and one it does not)
    B = rng.standard_normal(600).astype(dt)
    G = rng.standard_normal(xshape[:-1] + (600,)).astype(dt)
    res = []
    for lib in (retrograd, torch):
        x, w, b = (lib.from_numpy(v.copy()).requires_grad_(True) for v in (a, W, B))
        y = lib.nn.functional.linear(x, w, b)
        (y * lib.from_numpy(G)).sum().backward()
        res.append((y.grad_fn.name(), y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()))
    assert res[0][0] == res[1][0]
    for u, v in zip(res[0][1:], res[1][1:]):
        np.testing.assert_allclose(u, v, **(dict(rtol=1e-4, atol=1e-4) if dt == np.float32 else TOL[dt]))
