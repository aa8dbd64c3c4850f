"""Elementwise ops over several inputs: parity with PyTorch, float64 gradchecks,
in-place forms and PyTorch's errors."""
import numpy as np
import pytest

import retrograd
from helpers import check, gradcheck_op, NC, torch, needs_torch


def L(x):
    return torch if torch is not None and isinstance(x, torch.Tensor) else retrograd


CASES = [
    # clamp with numbers: ClampBackward1 / ClampMinBackward0 / ClampMaxBackward0
    (lambda x: x.clamp(-0.5, 0.5), [(3, 4)]),
    (lambda x: x.clamp(min=0), [NC(3, 4)]),
    (lambda x: x.clamp(max=0.3), [()]),
    (lambda x: x.clamp(-1, 1), [(0, 3)]),
    (lambda x: x.clip(-0.5, 0.5), [(3, 4)]),
    (lambda x: L(x).clamp(x, 1.0, -1.0), [(3, 4)]),
    (lambda x: x.clamp_min(0.1), [(3, 4)]),
    (lambda x: x.clamp_max(-0.1), [NC(3, 4)]),
    # clamp with tensors: ClampBackward0 / ClampMinBackward1 / ClampMaxBackward1
    (lambda x, lo, hi: x.clamp(lo, hi), [(3, 4), (3, 4), (3, 4)]),
    (lambda x, lo, hi: x.clamp(lo, hi), [(3, 4), (4,), NC(3, 1)]),
    (lambda x, lo: x.clamp(min=lo), [(3, 4), (3, 4)]),
    (lambda x, hi: x.clamp(max=hi), [NC(3, 4), (4,)]),
    (lambda x, lo, hi: x.clamp(lo, hi), [(), (), ()]),
    (lambda x, lo, hi: x.clamp(lo, hi), [(0, 3), (3,), (3,)]),
    (lambda x, lo: x.clamp_min(lo), [(3, 4), (3, 4)]),
    (lambda x, hi: x.clamp_max(hi), [(3, 4), (1, 4)]),
    (lambda x, lo, hi: L(x).clip(x, lo, hi), [(3, 4), (), ()]),
    # maximum / minimum / fmax / fmin
    (lambda x, y: L(x).maximum(x, y), [(3, 4), (3, 4)]),
    (lambda x, y: L(x).minimum(x, y), [(3, 1), NC(4)]),
    (lambda x, y: x.maximum(y), [(), (3,)]),
    (lambda x, y: x.minimum(y), [(0, 3), (3,)]),
    (lambda x, y: L(x).fmax(x, y), [(3, 4), (4,)]),
    (lambda x, y: L(x).fmin(x, y), [NC(3, 4), (3, 4)]),
    (lambda x, y: L(x).max(x, y), [(3, 4), (3, 4)]),
    # lerp
    (lambda x, y: L(x).lerp(x, y, 0.3), [(3, 4), (3, 4)]),
    (lambda x, y: x.lerp(y, 0.75), [NC(3, 4), (4,)]),
    (lambda x, y: x.lerp(y, -1.5), [(), ()]),
    (lambda x, y, w: x.lerp(y, w), [(3, 4), (3, 4), (3, 4)]),
    (lambda x, y, w: x.lerp(y, w), [(3, 1), (4,), NC(3, 4)]),
    (lambda x, y, w: x.lerp(y, w), [(0, 3), (3,), ()]),
    # addcmul / addcdiv
    (lambda x, a, b: L(x).addcmul(x, a, b), [(3, 4), (3, 4), (3, 4)]),
    (lambda x, a, b: x.addcmul(a, b, value=-0.5), [(3, 4), NC(3, 1), (4,)]),
    (lambda x, a, b: x.addcmul(a, b), [(), (), ()]),
    (lambda x, a, b: L(x).addcdiv(x, a, b, value=2), [(3, 4), (3, 4), (3, 4)]),
    (lambda x, a, b: x.addcdiv(a, b), [(4,), NC(3, 4), (3, 1)]),
    (lambda x, a, b: x.addcdiv(a, b), [(0, 3), (3,), (3,)]),
    # atan2 / hypot / xlogy
    (lambda x, y: L(x).atan2(x, y), [(3, 4), (3, 4)]),
    (lambda x, y: x.atan2(y), [NC(3, 4), (4,)]),
    (lambda x, y: L(x).arctan2(x, y), [(), (3,)]),
    (lambda x, y: L(x).hypot(x, y), [(3, 4), (3, 4)]),
    (lambda x, y: x.hypot(y), [(3, 1), NC(4)]),
    (lambda x, y: x.hypot(y), [(0, 3), (3,)]),
    (lambda x, y: L(x).logaddexp(x, y), [(3, 4), (3, 4)]),
    (lambda x, y: x.logaddexp(y), [NC(3, 4), (4,)]),
    (lambda x, y: x.logaddexp2(y), [(), (3,)]),
    (lambda x, y: L(x).logaddexp2(x, y), [(0, 3), (3,)]),
    (lambda x, y: L(x).copysign(x, y), [(3, 4), (3, 4)]),
    (lambda x, y: x.copysign(y), [NC(3, 4), ()]),
    (lambda x: x.copysign(-1.0), [(3, 4)]),
    (lambda x, y: x.copysign(y), [(0, 3), (3,)]),
]

POSITIVE = [
    (lambda x, y: L(x).xlogy(x, y), [(3, 4), (3, 4)]),
    (lambda x, y: x.xlogy(y), [NC(3, 4), (4,)]),
    (lambda x: L(x).xlogy(x, 2.5), [(3, 4)]),
    (lambda y: L(y).xlogy(2.5, y), [(3, 4)]),
    (lambda x, y: x.xlogy(y), [(), ()]),
    (lambda x, y: x.xlogy(y), [(0, 3), (3,)]),
]


@pytest.mark.parametrize("fn,specs", CASES)
def test_parity(fn, specs):
    check(fn, specs)


@pytest.mark.parametrize("fn,specs", POSITIVE)
def test_parity_positive(fn, specs):
    check(fn, specs, positive=True)


def _nonempty(cases):
    return [c for c in cases if not any(isinstance(s, tuple) and 0 in s for s in c[1])]


@pytest.mark.parametrize("fn,specs", _nonempty(CASES))
def test_gradcheck(fn, specs):
    gradcheck_op(fn, specs)


@pytest.mark.parametrize("fn,specs", _nonempty(POSITIVE))
def test_gradcheck_positive(fn, specs):
    gradcheck_op(fn, specs, positive=True)


SECOND = [
    (lambda x: x.clamp(-0.5, 0.5) * x, [(3, 4)]),
    (lambda x, lo, hi: x.clamp(lo, hi) * x, [(3, 4), (4,), (3, 1)]),
    (lambda x, y: retrograd.maximum(x, y) * y, [(3, 4), (3, 4)]),
    (lambda x, y, w: x.lerp(y, w), [(3, 4), (3, 4), (3, 4)]),
    (lambda x, a, b: x.addcdiv(a, b, value=0.5), [(3, 4), (3, 4), (3, 4)]),
    (lambda x, a, b: x.addcmul(a, b), [(3, 4), (3, 4), (3, 4)]),
    (lambda x, y: retrograd.atan2(x, y), [(3, 4), (3, 4)]),
    (lambda x, y: retrograd.hypot(x, y), [(3, 4), (3, 4)]),
    (lambda x, y: retrograd.logaddexp(x, y), [(3, 4), (3, 4)]),
    (lambda x, y: retrograd.logaddexp2(x, y), [(3, 4), (4,)]),
    (lambda x, y: retrograd.copysign(x, y) * x, [(3, 4), (3, 4)]),
]


@pytest.mark.parametrize("fn,specs", SECOND)
def test_second_order(fn, specs):
    gradcheck_op(fn, specs, second_order=True)


def test_xlogy_second_order():
    gradcheck_op(lambda x, y: retrograd.xlogy(x, y), [(3, 4), (3, 4)], positive=True, second_order=True)


# *** ties, NaN and zeros follow PyTorch's conventions ***

@needs_torch
@pytest.mark.parametrize("fn", [
    lambda lib, x, y: lib.maximum(x, y), lambda lib, x, y: lib.minimum(x, y),
    lambda lib, x, y: lib.fmax(x, y), lambda lib, x, y: lib.fmin(x, y),
    lambda lib, x, y: x.clamp(min=y), lambda lib, x, y: x.clamp(max=y), lambda lib, x, y: x.clamp(y, y + 0.5),
    lambda lib, x, y: x.clamp(y, y - 0.5), lambda lib, x, y: x.clamp(0.0, 1.0), lambda lib, x, y: lib.xlogy(x, y),
])
def test_edge_values(fn):
    a = np.array([0.0, 1.0, 2.0, np.nan, -1.0, 0.0, 3.0])
    b = np.array([0.0, 1.0, 3.0, 1.0, np.nan, -1.0, 2.0])
    grads = []
    for lib in (retrograd, torch):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        out = fn(lib, x, y)
        out.backward(lib.ones(7, dtype=lib.float64))
        grads.append((out.detach().numpy(), x.grad.numpy(), None if y.grad is None else y.grad.numpy()))
    (ro, rx, ry), (to, tx, ty) = grads
    np.testing.assert_array_equal(ro, to)
    np.testing.assert_array_equal(rx, tx)
    if ty is not None and ry is not None:
        np.testing.assert_array_equal(ry, ty)


@needs_torch
@pytest.mark.parametrize("fn", [
    lambda lib, x, y: lib.maximum(x, y), lambda lib, x, y: lib.minimum(x, y), lambda lib, x, y: lib.fmax(x, y),
    lambda lib, x, y: lib.fmin(x, y), lambda lib, x, y: x.clamp(min=y), lambda lib, x, y: x.clamp(max=y),
    lambda lib, x, y: x.clamp(y, y + 1), lambda lib, x, y: x.clamp(y - 1, y), lambda lib, x, y: lib.maximum(y, x),
])
def test_mixed_dtype_ties_are_compared_in_the_result_dtype(fn):
    # a 0-d float64 operand does not promote a float32 tensor: the float32 result's backward masks
    # compare in float32, where v rounded equals v (a tie), as the forward's selection did
    v = -1.9890459993194076
    grads = []
    for lib in (retrograd, torch):
        x = lib.tensor([v, 0.5, -3.0], dtype=lib.float32, requires_grad=True)
        y = lib.tensor(v, dtype=lib.float64, requires_grad=True)
        out = fn(lib, x, y)
        gx, gy = lib.autograd.grad(out, (x, y), lib.tensor([1.0, 2.0, 4.0], dtype=out.dtype))
        grads.append((str(out.dtype), out.tolist(), gx.tolist(), gy.item(), str(gy.dtype)))
    assert grads[0] == grads[1]


@needs_torch
@pytest.mark.parametrize("fn", [
    lambda lib, x: x.clamp(0), lambda lib, x: x.long().clamp(2, 5), lambda lib, x: x.long().clamp(2.5),
    lambda lib, x: x.int().clamp(lib.tensor(1.5)), lambda lib, x: lib.maximum(x, x.long()),
    lambda lib, x: lib.maximum(x.int(), lib.tensor(2)), lambda lib, x: lib.addcmul(x.long(), x.long(), x.long(), value=2),
    lambda lib, x: lib.atan2(x.long(), x.long()), lambda lib, x: lib.xlogy(x.long(), 2),
    lambda lib, x: lib.hypot(x.float(), x.float()), lambda lib, x: x.float().clamp(0.5, 1.5),
])
def test_dtypes(fn):
    a = np.arange(-2.0, 4.0).reshape(2, 3)
    r, t = fn(retrograd, retrograd.tensor(a)), fn(torch, torch.tensor(a))
    assert str(r.dtype) == str(t.dtype)
    np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=1e-6)


# *** in place ***

@needs_torch
@pytest.mark.parametrize("fn", [
    lambda x, y: x.clamp_(-0.5, 0.5), lambda x, y: x.clip_(max=0.2), lambda x, y: x.clamp_min_(0.0),
    lambda x, y: x.clamp_max_(y), lambda x, y: x.clamp_(y, y + 1), lambda x, y: x.lerp_(y, 0.3),
    lambda x, y: x.lerp_(y, y), lambda x, y: x.addcmul_(y, y, value=2), lambda x, y: x.addcdiv_(y, y + 3),
    lambda x, y: x.atan2_(y), lambda x, y: x.hypot_(y), lambda x, y: x.arctan2_(y),
    lambda x, y: x.copysign_(y), lambda x, y: x.xlogy_(y.abs() + 0.5),
])
def test_inplace(fn):
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3, 4))
    res = []
    for lib in (retrograd, torch):
        x0 = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        x = x0 * 1.0
        out = fn(x, y)
        assert out is x
        (x * lib.tensor(b)).sum().backward()
        gy = None if y.grad is None else y.grad.numpy()
        res.append((x.detach().numpy().copy(), type(x.grad_fn).__name__, x0.grad.numpy(), gy))
    (rx, rn, rg0, rgy), (tx, tn, tg0, tgy) = res
    np.testing.assert_allclose(rx, tx, rtol=1e-12)
    assert rn == tn
    np.testing.assert_allclose(rg0, tg0, rtol=1e-10, atol=1e-12)
    assert (rgy is None) == (tgy is None)
    if tgy is not None:
        np.testing.assert_allclose(rgy, tgy, rtol=1e-10, atol=1e-12)


def test_inplace_leaf_refused():
    x = retrograd.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        x.clamp_(0, 0.5)
    assert x.tolist() == [1.0, 1.0, 1.0] and x._version_value == 0


# *** bad input: PyTorch's exception type and wording; nothing changes ***

BAD = [
    (lambda L, x: x.clamp(), RuntimeError, "torch.clamp: At least one of 'min' or 'max' must not be None"),
    (lambda L, x: L.clamp(x, min=None, max=None), RuntimeError, "At least one of 'min' or 'max' must not be None"),
    (lambda L, x: L.maximum(x, 2), TypeError, r"maximum\(\): argument 'other' \(position 2\) must be Tensor, not int"),
    (lambda L, x: L.fmin(x, 2.0), TypeError, r"fmin\(\): argument 'other' \(position 2\) must be Tensor, not float"),
    (lambda L, x: L.atan2(x, 2.0), TypeError, r"atan2\(\): argument 'other' \(position 2\) must be Tensor, not float"),
    (lambda L, x: L.maximum(x, x[:2]), RuntimeError, r"The size of tensor a \(3\) must match the size of tensor b "
                                                     r"\(2\) at non-singleton dimension 0"),
    (lambda L, x: x.clamp(x[:2]), RuntimeError, r"The size of tensor a \(3\) must match the size of tensor b \(2\)"),
    (lambda L, x: L.lerp(x, x.double(), 0.5), RuntimeError, "expected dtype float for `end` but got dtype double"),
    (lambda L, x: L.lerp(x, x, x.double()), RuntimeError, "expected dtype float for `weight` but got dtype double"),
    (lambda L, x: L.lerp(x, x.long(), 0.5), RuntimeError, "expected dtype float for `end` but got dtype long int"),
    (lambda L, x: L.addcdiv(x.long(), x.long(), x.long()), RuntimeError, "Integer division with addcdiv is no longer "
                                                                         "supported"),
    (lambda L, x: L.addcmul(x, x, x[:2]), RuntimeError, "The size of tensor a"),
    (lambda L, x: L.addcmul(x, x, x, value=x), TypeError, r"addcmul\(\): argument 'value' must be Number, not Tensor"),
    (lambda L, x: x.detach().long().clamp_(2.5), RuntimeError, "result type Float can't be cast to the desired output "
                                                               "type"),
]


@pytest.mark.parametrize("fn,exc,msg", BAD)
def test_bad_input(fn, exc, msg):
    libs = [retrograd] + ([torch] if torch is not None else [])
    for lib in libs:
        x = lib.ones(3, 4, requires_grad=True)
        with pytest.raises(exc, match=msg):
            fn(lib, x)
        assert x.grad is None and bool((x == 1).all()) and tuple(x.shape) == (3, 4)
