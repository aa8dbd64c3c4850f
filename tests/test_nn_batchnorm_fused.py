"""Batch norm's fused elementwise kernels (numba, optional) against the NumPy path (the
same bits) and PyTorch."""
import numpy as np
import pytest

import retrograd
from retrograd.ops import _accel
from helpers import needs_torch, torch

numba_only = pytest.mark.skipif(_accel.kernels() is None, reason="numba is not installed")


def _run(lib, x, w, b, g, training):
    xt = lib.tensor(x, requires_grad=True)
    wt, bt = (None, None) if w is None else (lib.tensor(w, requires_grad=True), lib.tensor(b, requires_grad=True))
    c = x.shape[1]
    rm, rv = lib.tensor(np.linspace(-1, 1, c).astype(x.dtype)), lib.tensor(np.linspace(0.5, 2, c).astype(x.dtype))
    y = lib.nn.functional.batch_norm(xt, rm, rv, wt, bt, training=training, momentum=0.3, eps=1e-3)
    y.backward(lib.tensor(g))
    out = [y.detach().numpy(), xt.grad.numpy(), rm.numpy(), rv.numpy()]
    return out + ([] if w is None else [wt.grad.numpy(), bt.grad.numpy()])


def _arrays(shape, dtype, affine, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    c = shape[1]
    w, b = (rng.standard_normal(c).astype(dtype), rng.standard_normal(c).astype(dtype)) if affine else (None, None)
    return x, w, b, g


SHAPES = [(8, 5, 6, 7), (16, 4, 9), (4, 3, 2, 3, 4)]


def _err(a, exact):
    """Largest error of ``a`` against ``exact`` (float64) at the finite positions, relative
    to the largest such |exact|; and whether the non-finite positions and values agree."""
    fin = np.isfinite(exact)
    same_nonfinite = np.array_equal(np.where(fin, 0, a.astype(np.float64)), np.where(fin, 0, exact),
                                    equal_nan=True)
    if not fin.any():
        return 0.0, same_nonfinite
    scale = max(np.abs(exact[fin]).max(), np.finfo(a.dtype).tiny)
    return float(np.abs(a[fin].astype(np.float64) - exact[fin]).max() / scale), same_nonfinite


@numba_only
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_fused_kernels_agree_with_the_numpy_path(shape, dtype, affine, training, monkeypatch):
    # The compiled statistics sum in float64 in a vectorised order, NumPy's path pairwise in
    # the data's dtype: not the same bits, so both are held to the float64 computation of the
    # same inputs. The compiled path may not be less accurate than NumPy's (a few units of
    # rounding of slack), and puts infs and NaNs where NumPy's path puts them.
    x, w, b, g = _arrays(shape, dtype, affine)
    x.reshape(-1)[5] = np.inf                # non-finite values meet the same operations
    g.reshape(-1)[-1] = np.nan
    fast = _run(retrograd, x, w, b, g, training)
    up = [None if a is None else a.astype(np.float64) for a in (x, w, b, g)]
    monkeypatch.setattr(_accel, "_KERNELS", [None])
    ref = _run(retrograd, x, w, b, g, training)
    exact = _run(retrograd, *up, training)
    eps = np.finfo(dtype).eps
    for a, r, e in zip(fast, ref, exact):
        assert a.dtype == r.dtype
        err_fast, ok_fast = _err(a, e)
        err_ref, ok_ref = _err(r, e)
        assert ok_fast and ok_ref
        assert err_fast <= max(err_ref, 8 * eps), (err_fast, err_ref)


@needs_torch
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
def test_fused_batch_norm_matches_torch(shape, affine, training):
    x, w, b, g = _arrays(shape, np.float64, affine, 1)
    for a, r in zip(_run(retrograd, x, w, b, g, training), _run(torch, x, w, b, g, training)):
        np.testing.assert_allclose(a, r, rtol=1e-10, atol=1e-10)


def test_batch_norm_gradgradcheck():
    rng = np.random.default_rng(2)
    x = retrograd.tensor(rng.standard_normal((6, 3, 4, 4)), requires_grad=True)
    w = retrograd.tensor(rng.standard_normal(3), requires_grad=True)
    b = retrograd.tensor(rng.standard_normal(3), requires_grad=True)

    def f(x, w, b):
        return retrograd.nn.functional.batch_norm(x, None, None, w, b, training=True)
    assert retrograd.autograd.gradcheck(f, (x, w, b))
    assert retrograd.autograd.gradgradcheck(f, (x, w, b))
