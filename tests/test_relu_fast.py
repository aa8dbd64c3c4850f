"""ReLU's forward on large contiguous float arrays (the compiled pass of ops._accel_mask when
numba is installed) against the NumPy path bit for bit, NaN, -0.0 and infinities included,
and against PyTorch with its gradient."""
import numpy as np
import pytest

import retrograd
from retrograd.ops import _accel, unary
from helpers import kernel_path, needs_torch, torch


@pytest.fixture(params=["compiled", "numpy"])
def relu_path(request, monkeypatch):
    kernel_path(request.param, monkeypatch, unary, "_RELU_KERNELS",
                lambda: _accel.load(unary._RELU_KERNELS, "_accel_mask"))
    return request.param


def _x(shape, dtype):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    f = x.reshape(-1)
    f[:6] = [np.nan, -0.0, 0.0, -np.inf, np.inf, -1e-40]
    f[6] = -np.nan      # (a NaN with its sign bit set: kept as it is)
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(512, 128), (3, 5000), (100,)])
def test_bits_match_the_numpy_path(relu_path, monkeypatch, shape, dtype):
    x = _x(shape, dtype)
    got = retrograd.relu(retrograd.tensor(x)).numpy()
    monkeypatch.setattr(unary, "_RELU_KERNELS", [None])
    want = retrograd.relu(retrograd.tensor(x)).numpy()
    assert got.dtype == want.dtype == dtype and got.shape == want.shape
    u = np.uint32 if dtype == np.float32 else np.uint64
    np.testing.assert_array_equal(got.view(u), want.view(u))
    assert np.signbit(got.reshape(-1)[1]) and got.reshape(-1)[3] == 0


def test_strided_input(relu_path):
    x = _x((256, 128), np.float32)
    got = retrograd.relu(retrograd.tensor(x).t()).numpy()
    np.testing.assert_array_equal(got.view(np.uint32), np.maximum(0, x.T).view(np.uint32))


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_torch_with_grad(relu_path, dtype):
    x = _x((512, 128), dtype)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    res = []
    for lib in (retrograd, torch):
        xt = lib.tensor(x, requires_grad=True)
        y = lib.relu(xt)
        y.backward(lib.tensor(g))
        res.append((y.detach().numpy(), xt.grad.numpy(), type(y.grad_fn).__name__))
    u = np.uint32 if dtype == np.float32 else np.uint64
    np.testing.assert_array_equal(np.isnan(res[0][0]), np.isnan(res[1][0]))
    fin = ~np.isnan(res[1][0])
    np.testing.assert_array_equal(res[0][0][fin].view(u), res[1][0][fin].view(u))
    np.testing.assert_array_equal(res[0][1], res[1][1])
    assert res[0][2] == res[1][2]


@needs_torch
@pytest.mark.parametrize("case", ["functional", "method", "view", "strided_view", "no_grad", "double_backward"])
def test_relu_in_place_matches_torch(case):
    """relu_ writes over the tensor's own values (the compiled in-place pass on large contiguous
    float arrays; an out-of-place result copied back otherwise): values (NaN, -0.0 kept), gradients,
    versions and double backward as PyTorch's, through views too."""
    a0 = np.random.default_rng(0).standard_normal((4, 64, 64)).astype(np.float32)
    a0[0, 0, :3] = [np.nan, -0.0, 0.0]

    def run(lib):
        x = lib.tensor(a0, requires_grad=True)
        y = x * 2
        if case == "functional":
            out = lib.nn.functional.relu(y, inplace=True)
        elif case == "method":
            out = y.relu_()
        elif case == "view":
            y[1].relu_()
            out = y
        elif case == "strided_view":
            y[:, ::2].relu_()
            out = y
        elif case == "no_grad":
            with lib.no_grad():
                y.relu_()
            out = y
        else:
            z = y.relu_()
            out, = lib.autograd.grad((z * z).sum(), x, create_graph=True)
        out.sum().backward()
        return out.detach().numpy(), x.grad.numpy(), y._version

    (to, tg, tv), (ro, rgr, rv) = run(torch), run(retrograd)
    for a, b in ((ro, to), (rgr, tg)):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(np.signbit(a), np.signbit(b))
    assert rv == tv
