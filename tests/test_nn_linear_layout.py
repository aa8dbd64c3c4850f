"""The fully connected layer's product layout for few rows (``(w @ x.T).T``, which OpenBLAS
runs faster there): same values as the plain product and PyTorch's."""
import numpy as np
import pytest

import retrograd
from retrograd.ops import _blas, _linear
from helpers import needs_torch, torch

# (rows, in, out): the flipped layout (few rows, large weights) and the plain one around it
SHAPES = [(4, 784, 512), (8, 128, 256), (16, 784, 512), (32, 256, 1024), (33, 128, 256), (3, 128, 512),
          (8, 64, 256), (8, 128, 128), (64, 784, 512), (96, 512, 512), (97, 512, 512), (64, 256, 256),
          (64, 128, 1000)]


@pytest.mark.parametrize("n,i,o", SHAPES)
def test_product_matches_plain_product(n, i, o):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, i)).astype(np.float32)
    w = rng.standard_normal((o, i)).astype(np.float32)
    r = _linear._x_wt(x, w)
    assert r.flags.c_contiguous and r.dtype == np.float32 and r.shape == (n, o)
    ref = x.astype(np.float64) @ w.T.astype(np.float64)
    # within a float32 sum's rounding (the order of the sums is the kernel's)
    bound = i * np.finfo(np.float32).eps * (np.abs(x).astype(np.float64) @ np.abs(w).T.astype(np.float64))
    assert np.all(np.abs(r - ref) <= bound)
    assert np.abs(r - ref).max() < 1e-3


def test_weight_transposed_view_and_float64_take_the_plain_product():
    # the plain product as the hot paths run it (MKL's where ops._blas uses it, else NumPy's)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 784))
    w = rng.standard_normal((512, 784))
    np.testing.assert_array_equal(_linear._x_wt(x, w), _blas.matmul(x, w.T))
    x32, wt32 = x.astype(np.float32), np.asfortranarray(w.astype(np.float32))
    np.testing.assert_array_equal(_linear._x_wt(x32, wt32), _blas.matmul(x32, wt32.T))


@needs_torch
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("n,i,o", SHAPES[:4] + [(64, 784, 512), (96, 512, 512)])
def test_linear_few_rows_matches_torch(n, i, o, bias):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((n, i)).astype(np.float32)
    w = (rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    g = rng.standard_normal((n, o)).astype(np.float32)
    res = []
    for lib in (retrograd, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = lib.nn.functional.linear(ts[0], ts[1], ts[2] if bias else None)
        y.backward(lib.tensor(g))
        res.append([y.detach().numpy()] + [t.grad.numpy() for t in ts[:2 + bias]])
    assert res[0][0].flags.c_contiguous
    for a, r in zip(*res):
        np.testing.assert_allclose(a, r, rtol=1e-5, atol=1e-5)

