"""``masked_grad``'s selection on large arrays, by the numba kernel and by the NumPy call:
each element's bits kept (NaN payloads, signed zeros, infinities) or +0, for every float
width and layout, and ReLU's backward as PyTorch's."""
import numpy as np
import pytest

import retrograd
from retrograd.ops import _accel, _base
from helpers import kernel_path, needs_torch, torch


@pytest.fixture(params=["numpy", "compiled"])
def kernels(request, monkeypatch):
    kernel_path(request.param, monkeypatch, _base, "_MASK_KERNELS",
                lambda: _accel.load(_base._MASK_KERNELS, "_accel_mask"))
    return request.param


def _payload_nans(dt, n):
    """NaNs with distinct payloads (and signs) of dtype ``dt``."""
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dt).itemsize]
    inf = np.array(np.inf, dt).view(u)   # all exponent bits set: any nonzero mantissa is a NaN
    bits = np.array([inf | (k + 1) for k in range(n)], dtype=u)
    bits[::2] |= np.array(1, u) << np.array(8 * np.dtype(dt).itemsize - 1, u)   # negative NaNs
    assert np.isnan(bits.view(dt)).all()
    return bits.view(dt)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64, np.complex64])
def test_select_keeps_every_bit(dt, kernels):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((50, 40)) * 1e3).astype(dt)
    real = dt if np.dtype(dt).kind == "f" else np.float32
    flat = a.reshape(-1)
    flat[:8] = _payload_nans(real, 8) if dt == real else _payload_nans(real, 8).astype(dt)
    flat[8:12] = [np.inf, -np.inf, -0.0, 0.0]
    m = rng.random(a.shape) < 0.5
    m.reshape(-1)[:12] = [True, False] * 6
    for a_, m_ in ((a, m), (a[:, ::2], m[:, ::2]), (a.T, m.T), (a, m[0])):
        want = np.where(m_, a_, np.zeros((), dt))
        got = _base._select(m_, a_)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert got.tobytes() == want.tobytes()
        assert got.flags.c_contiguous


def test_the_kernel_runs_where_it_can(kernels):
    a = np.ones((32, 32), np.float32)
    m = np.zeros((32, 32), bool)
    _base._select(m, a)
    loaded = _base._MASK_KERNELS[0] if _base._MASK_KERNELS else None
    assert (loaded is not None) == (kernels == "compiled")


@needs_torch
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_relu_backward_as_torch(dt, kernels):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 33)).astype(dt)
    x.reshape(-1)[:4] = [0.0, -0.0, np.nan, np.inf]
    g = rng.standard_normal((64, 33)).astype(dt)
    g.reshape(-1)[4:10] = [np.nan, np.inf, -np.inf, np.nan, -0.0, 0.0]
    got = []
    for lib in (retrograd, torch):
        t = lib.tensor(x, requires_grad=True)
        lib.relu(t).backward(lib.tensor(g))
        got.append(t.grad.numpy())
    assert got[0].tobytes() == got[1].tobytes()
