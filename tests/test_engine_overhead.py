"""The engine's fast paths give what the general paths give (and PyTorch gives): masked
gradients on large arrays, 0-d scalar chains, deep chains."""
import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck
from helpers import torch, needs_torch


def _special_grad(shape, dtype, rng):
    g = rng.standard_normal(shape).astype(dtype)
    flat = g.reshape(-1)
    flat[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, np.nan]
    return g


@needs_torch
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("op", ["relu", "hardtanh", "where", "threshold"])
def test_large_masked_gradients_select_like_torch(op, dtype):
    # above the small-array cut-off the selection masks bits instead of branching
    rng = np.random.default_rng(3)
    shape = (37, 29)
    x = rng.standard_normal(shape).astype(dtype)
    x.reshape(-1)[:12] = [0.0, -0.0, 1.0, -1.0, np.nan, 2.0, 0.0, -0.0, -2.0, 0.5, np.inf, -np.inf]
    g = _special_grad(shape, dtype, rng)
    c = rng.random(shape) < 0.5
    grads = []
    for lib in (retrograd, torch):
        t = lib.tensor(x, requires_grad=True)
        if op == "relu":
            y = lib.relu(t)
        elif op == "hardtanh":
            y = lib.nn.functional.hardtanh(t)
        elif op == "threshold":
            y = lib.nn.functional.threshold(t, 0.25, -3.0)
        else:
            y = lib.where(lib.tensor(c), t, lib.zeros_like(t))
        y.backward(lib.tensor(g))
        grads.append(np.asarray(t.grad.detach().numpy()))
    r, e = grads
    assert r.dtype == e.dtype
    # bit for bit: NaN payloads and signed zeros as PyTorch selects them
    np.testing.assert_array_equal(np.isnan(r), np.isnan(e))
    np.testing.assert_array_equal(np.signbit(r[~np.isnan(r)]), np.signbit(e[~np.isnan(e)]))
    np.testing.assert_array_equal(r[~np.isnan(r)], e[~np.isnan(e)])


def test_large_masked_gradient_broadcast_mask_and_noncontiguous():
    from retrograd.ops._base import _select
    rng = np.random.default_rng(4)
    for dt in (np.float16, np.float32, np.float64, np.complex64, np.complex128):
        a = (rng.standard_normal((40, 60)) * 1e3).astype(dt)
        a[0, :5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
        for a_ in (a, a[:, ::2], a.T):
            for ms in (a_.shape, a_.shape[1:], (1,) + a_.shape[1:], a_.shape[:1] + (1,), (3,) + a_.shape):
                m = rng.random(ms) < 0.5
                want = np.where(m, a_, np.zeros((), dt))
                got = _select(m, a_)
                assert got.dtype == want.dtype and got.shape == want.shape
                assert got.tobytes() == want.tobytes()   # C order, every bit


def test_large_relu_gradcheck():
    rng = np.random.default_rng(5)
    x = retrograd.tensor(rng.uniform(0.1, 1.0, (20, 20)) * rng.choice([-1.0, 1.0], (20, 20)),
                         dtype=retrograd.float64, requires_grad=True)
    assert gradcheck(retrograd.relu, (x,))
