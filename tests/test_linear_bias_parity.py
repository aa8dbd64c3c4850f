"""F.linear with a bias against PyTorch at sizes whose products MKL takes (where it is
installed) and ones that stay with NumPy: values, grad_fn and all three gradients."""
import numpy as np
import pytest

import retrograd
from retrograd import _threads
from helpers import needs_torch, torch

TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


@pytest.fixture
def one_thread():
    retrograd.set_num_threads(1)
    yield
    _threads._adaptive()


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
