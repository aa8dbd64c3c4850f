"""The compiled bias add and bias-gradient sum of linear layers (ops._accel.add_row /
sum_rows): NumPy's bits exactly (signed zeros, inf and NaN included), and the layer's
results the same with and without them."""
import numpy as np
import pytest

import retrograd
from retrograd.ops import _accel, _linear

k = _accel.kernels()
pytestmark = pytest.mark.skipif(k is None, reason="numba is not installed (or RETROGRAD_NO_NUMBA=1)")


def _special(rng, shape, dt):
    a = rng.standard_normal(shape).astype(dt)
    flat = a.reshape(-1)
    idx = rng.choice(flat.size, size=min(flat.size, 40), replace=False)
    flat[idx[:10]] = -0.0
    flat[idx[10:20]] = 0.0
    flat[idx[20:25]] = np.inf
    flat[idx[25:30]] = -np.inf
    flat[idx[30:35]] = np.nan
    flat[idx[35:]] = np.finfo(dt).max
    return a


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 7), (3, 1), (512, 128), (37, 33), (2, 4096)])
def test_row_kernels_give_numpys_bits(dt, shape):
    rng = np.random.default_rng(shape[0] * 7 + shape[1])
    g = _special(rng, shape, dt)
    want = g.sum(0)
    got = _accel.sum_rows(k, g)
    assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8))
    b = _special(rng, (shape[1],), dt)
    r1, r2 = g.copy(), g.copy()
    r1 += b
    with np.errstate(invalid="ignore", over="ignore"):
        _accel.add_row(k, r2, b[::-1].copy()[::-1])      # (a reversed view: made contiguous)
    assert np.array_equal(r1.view(np.uint8), r2.view(np.uint8))


def test_all_negative_zero_rows_sum_to_positive_zero():
    g = np.full((3, 5), -0.0, np.float32)
    assert np.array_equal(np.signbit(_accel.sum_rows(k, g)), np.signbit(g.sum(0)))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_linear_same_with_and_without_the_kernels(dt, monkeypatch):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 96)).astype(dt)
    w = rng.standard_normal((80, 96)).astype(dt)
    b = rng.standard_normal(80).astype(dt)
    g = rng.standard_normal((64, 80)).astype(dt)

    def run():
        X = retrograd.from_numpy(x.copy()).requires_grad_()
        W = retrograd.from_numpy(w.copy()).requires_grad_()
        B = retrograd.from_numpy(b.copy()).requires_grad_()
        y = retrograd.nn.functional.linear(X, W, B)
        y.backward(retrograd.from_numpy(g))
        return [t.numpy().copy() for t in (y.detach(), X.grad, W.grad, B.grad)]
    assert 64 * 80 >= _linear._ROW_KERNEL_MIN
    fast = run()
    monkeypatch.setattr(_linear, "_ROW_KERNEL_MIN", 1 << 62)
    slow = run()
    for a, c in zip(fast, slow):
        assert np.array_equal(a, c)


def test_double_backward_of_the_bias_keeps_its_graph():
    x = retrograd.randn(64, 96, requires_grad=True)
    lin = retrograd.nn.Linear(96, 80)
    y = lin(x)
    g = retrograd.randn(64, 80, requires_grad=True)
    (gb,) = retrograd.autograd.grad(y, lin.bias, g, create_graph=True)
    assert gb.grad_fn is not None
    (gg,) = retrograd.autograd.grad(gb.sum(), g)
    assert np.array_equal(gg.numpy(), np.ones((64, 80), np.float32))
