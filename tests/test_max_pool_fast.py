"""2x2 stride-2 max pooling: the compiled one-pass kernel against the NumPy path (the same
values, signs of zero and argmax offsets, NaN and inf included) and against PyTorch."""
import numpy as np
import pytest

import retrograd
import retrograd.nn.functional as RF
from retrograd.ops import _accel
from helpers import kernel_path, needs_torch, torch

VALUES = np.array([0.0, -0.0, 1.0, -1.0, 2.0, np.inf, -np.inf, np.nan])


def _pool(a, path, monkeypatch):
    kernel_path(path, monkeypatch, _accel, "_KERNELS", _accel.kernels)
    x = retrograd.tensor(a, requires_grad=True)
    y, i = RF.max_pool2d(x, 2, return_indices=True)
    y.backward(retrograd.ones_like(y))
    return y.detach().numpy().copy(), i.numpy().copy(), x.grad.numpy().copy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("with_nan", [False, True])
def test_compiled_and_numpy_paths_agree(dtype, with_nan, monkeypatch):
    rng = np.random.default_rng(0)
    vals = VALUES if with_nan else VALUES[:-1]
    for shape in [(2, 3, 8, 8), (1, 4, 9, 7), (3, 2, 6, 10)]:
        a = rng.choice(vals, size=shape).astype(dtype)
        a_t = np.ascontiguousarray(a.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)   # strided planes
        for arr in (a, a_t):
            got = _pool(arr, "compiled", monkeypatch)
            ref = _pool(arr, "numpy", monkeypatch)
            for g, r in zip(got, ref):
                assert g.dtype == r.dtype
                np.testing.assert_array_equal(g, r)
            np.testing.assert_array_equal(np.signbit(got[0]), np.signbit(ref[0]))


@needs_torch
@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_against_torch(path, monkeypatch):
    rng = np.random.default_rng(1)
    for _ in range(20):
        a = rng.choice(VALUES, size=(2, 3, 6, 8)).astype(np.float32)
        y, i, g = _pool(a, path, monkeypatch)
        t = torch.tensor(a, requires_grad=True)
        ty, ti = torch.nn.functional.max_pool2d(t, 2, return_indices=True)
        ty.backward(torch.ones_like(ty))
        np.testing.assert_array_equal(i, ti.numpy())
        np.testing.assert_array_equal(y, ty.detach().numpy())
        np.testing.assert_array_equal(np.signbit(y), np.signbit(ty.detach().numpy()))
        np.testing.assert_array_equal(g, t.grad.numpy())
