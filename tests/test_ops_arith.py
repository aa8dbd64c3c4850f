"""Arithmetic, unary math and comparisons: parity with PyTorch (values, dtype, grad_fn,
gradients) and float64 gradchecks, over 0-d, broadcast, empty and non-contiguous inputs."""
import numpy as np
import pytest

import retrograd
from helpers import check as _check, gradcheck_op, NC, torch, needs_torch


def check(fn, specs, **kw):
    if any(isinstance(s, NC) and len(s.shape) >= 2 for s in specs) and not hasattr(retrograd.Tensor, "permute"):
        pytest.skip("needs Tensor.permute")
    _check(fn, specs, **kw)


def L(t):
    return torch if torch is not None and isinstance(t, torch.Tensor) else retrograd


BINARY = [
    (lambda a, b: a + b, "AddBackward0"),
    (lambda a, b: a - b, "SubBackward0"),
    (lambda a, b: a * b, "MulBackward0"),
    (lambda a, b: a / b, "DivBackward0"),
    (lambda a, b: L(a).add(a, b, alpha=2), "AddBackward0"),
    (lambda a, b: L(a).sub(a, b, alpha=0.5), "SubBackward0"),
    (lambda a, b: L(a).maximum(a, b), None),
    (lambda a, b: L(a).minimum(a, b), None),
    (lambda a, b: L(a).atan2(a, b), None),
    (lambda a, b: a.remainder(b), "RemainderBackward0"),
    (lambda a, b: a.fmod(b), "FmodBackward0"),
]
SHAPES = [[(), ()], [(3, 4), (3, 4)], [(3, 1), (4,)], [(2, 3, 4), ()], [(0, 3), (3,)], [NC(3, 4), (3, 4)],
          [NC(4), NC(4)]]


def _has(lib_fn):
    try:
        lib_fn(retrograd.ones(2), retrograd.ones(2))
        return True
    except AttributeError:
        return False


@pytest.mark.parametrize("fn,name", BINARY)
@pytest.mark.parametrize("specs", SHAPES)
def test_binary_parity(fn, name, specs):
    if not _has(fn):
        pytest.skip("op not bound yet")
    check(fn, specs, low=0.5, high=2.0)


@pytest.mark.parametrize("fn,name", BINARY)
@pytest.mark.parametrize("specs", SHAPES[:5])
def test_binary_gradcheck(fn, name, specs):
    if not _has(fn):
        pytest.skip("op not bound yet")
    gradcheck_op(fn, specs, low=0.5, high=2.0)


SCALAR_FORMS = [
    (lambda a: a + 2, "AddBackward0"), (lambda a: 2 + a, "AddBackward0"), (lambda a: a - 2, "SubBackward0"),
    (lambda a: 2 - a, "RsubBackward1"), (lambda a: a * 3, "MulBackward0"), (lambda a: 3 * a, "MulBackward0"),
    (lambda a: a / 3, "DivBackward0"), (lambda a: 3 / a, None), (lambda a: a ** 2, "PowBackward0"),
    (lambda a: a ** 0.5, "PowBackward0"), (lambda a: a ** 3, "PowBackward0"), (lambda a: a ** 0, "PowBackward0"),
    (lambda a: 2 ** a, "PowBackward2"), (lambda a: a ** a, "PowBackward1"), (lambda a: -a, "NegBackward0"),
    (lambda a: +a, None), (lambda a: a % 0.7, "RemainderBackward0"),
    (lambda a: L(a).rsub(a, 2), "RsubBackward1"), (lambda a: L(a).pow(a, 2.5), "PowBackward0"),
    (lambda a: L(a).float_power(a, 2), None), (lambda a: L(a).div(a, 0.3, rounding_mode="trunc"), "DivBackward2"),
    (lambda a: L(a).div(a, 0.3, rounding_mode="floor"), "DivBackward2"),
    (lambda a: a.square(), "PowBackward0"), (lambda a: L(a).true_divide(a, 2), "DivBackward0"),
    (lambda a: L(a).add(a, 1, alpha=3), "AddBackward0"),
]


@pytest.mark.parametrize("fn,name", SCALAR_FORMS)
@pytest.mark.parametrize("specs", [[()], [(3, 4)], [(0,)], [NC(4)]])
def test_scalar_forms_parity(fn, name, specs):
    check(fn, specs, low=0.5, high=2.0, name=name)


@pytest.mark.parametrize("fn,name", SCALAR_FORMS)
def test_scalar_forms_gradcheck(fn, name):
    gradcheck_op(fn, [(2, 3)], low=0.5, high=2.0)


def _unary_names():
    return ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin",
            "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf", "erfc", "erfinv",
            "reciprocal", "relu", "abs", "sign", "floor", "ceil", "trunc", "frac", "round", "square", "neg"]


_DOMAIN = {"log": (0.1, 2), "log2": (0.1, 2), "log10": (0.1, 2), "log1p": (-0.5, 2), "sqrt": (0.1, 2),
           "rsqrt": (0.1, 2), "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atanh": (-0.9, 0.9), "acosh": (1.1, 3),
           "erfinv": (-0.9, 0.9), "reciprocal": (0.2, 2), "tan": (-1.2, 1.2)}


@pytest.mark.parametrize("name", _unary_names())
@pytest.mark.parametrize("specs", [[()], [(3, 4)], [(0, 2)], [NC(3, 4)]])
def test_unary_parity(name, specs):
    lo, hi = _DOMAIN.get(name, (-2, 2))
    check(lambda a: getattr(a, name)(), specs, low=lo, high=hi)
    check(lambda a: getattr(L(a), name)(a), specs, low=lo, high=hi)


_KINKED = {"floor", "ceil", "trunc", "round", "sign", "sgn", "abs", "relu", "frac"}


@pytest.mark.parametrize("name", _unary_names())
def test_unary_gradcheck(name):
    lo, hi = _DOMAIN.get(name, (-2, 2))
    if name in _KINKED:  # keep away from the kinks: values in (0.1, 0.9) + integers
        gradcheck_op(lambda a: getattr(a, name)(), [(2, 3)], low=0.1, high=0.9)
    else:
        gradcheck_op(lambda a: getattr(a, name)(), [(2, 3)], low=lo, high=hi)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "tanh", "sigmoid", "abs", "relu", "neg", "floor",
                                  "round", "erf", "reciprocal"])
def test_unary_on_ints(name):
    check(lambda a: getattr((a * 3).long(), name)(), [(3, 4)], low=0.5, high=2, grad=False)


@pytest.mark.parametrize("fn", [
    lambda a: a.clone().exp_(), lambda a: a.clone().add_(1), lambda a: a.clone().mul_(a),
    lambda a: a.clone().pow_(2), lambda a: a.clone().div_(2), lambda a: a.clone().sub_(a, alpha=2),
    lambda a: a.clone().sigmoid_(), lambda a: a.clone().neg_(), lambda a: a.clone().remainder_(0.7),
])
def test_inplace_parity(fn):
    check(fn, [(3, 4)])


@pytest.mark.parametrize("expr", [
    "torch.tensor([-0.0, float('nan'), -2.0, 3.0]).sign()", "torch.tensor([True, False]).sign()",
    "torch.tensor([-3, 0, 2]).sign()", "torch.tensor([float('nan'), -1.0]).sgn()",
    "torch.tensor([True]).add(torch.tensor([True]), alpha=True)", "torch.tensor([5., -5.]) % 0",
    "torch.tensor([1, 2], dtype=torch.uint8) - 3", "torch.tensor([2.5, 3.5, -2.5]).round()",
    "torch.tensor([1.2345]).round(decimals=2)", "torch.tensor([0]).reciprocal()", "torch.tensor([4]).sqrt()",
    "torch.float_power(torch.tensor([2]), 2)", "torch.tensor([2]) ** torch.tensor(3.)", "2.5 ** torch.tensor([1, 2])",
])
def test_edge_values(expr):
    if torch is None:
        pytest.skip("PyTorch (torch==2.13.0) is not installed")
    r, t = eval(expr, {"torch": retrograd}), eval(expr, {"torch": torch})
    assert str(r.dtype) == str(t.dtype)
    np.testing.assert_array_equal(np.asarray(r._data), t.numpy())


def test_sgn_and_floor_divide_gradients():
    # PyTorch's sgn gradient is a ZeroTensor (no numbers to compare); floor_divide has none.
    check(lambda a: a.sgn(), [(3, 4)], grad=False)
    a = retrograd.randn(3, requires_grad=True)
    assert type(a.sgn().grad_fn).__name__ == "SgnBackward0"
    r = a // 2
    assert type(r.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
        r.sum().backward()


CLAMP = [
    (lambda a: a.clamp(min=0), "ClampBackward1"), (lambda a: a.clamp(max=0.5), "ClampBackward1"),
    (lambda a: a.clamp(-0.5, 0.5), "ClampBackward1"), (lambda a: a.clip(-0.5, 0.5), "ClampBackward1"),
    (lambda a, b: a.clamp(min=b), None), (lambda a, b: L(a).clamp(a, max=b), None),
    (lambda a, b, c: L(a).lerp(a, b, 0.3), None), (lambda a, b, c: L(a).lerp(a, b, c), None),
    (lambda a, b, c: L(a).where(a > 0, b, c), "WhereBackward0"),
]


@pytest.mark.parametrize("fn,name", CLAMP)
def test_clamp_lerp_where(fn, name):
    import inspect
    n = len(inspect.signature(fn).parameters)
    try:
        fn(*[retrograd.ones(3)] * n)
    except AttributeError:
        pytest.skip("op not bound yet")
    check(fn, [(3, 4)] * n, name=name)
    gradcheck_op(fn, [(3, 4)] * n, seed=3)


PROMOTION = [
    (lambda a: a.float() + 1, None), (lambda a: a.float() * 2.5, None), (lambda a: a.long() + 1, None),
    (lambda a: a.long() * 2.5, None), (lambda a: a.long() / 2, None), (lambda a: a.long() // 2, None),
    (lambda a: a.long() + a.float(), None), (lambda a: a.int() + a.long(), None),
    (lambda a: a.float() + a.double()[0, 0], None), (lambda a: a.float()[0, 0] + a.double(), None),
    (lambda a: a.long() + a.double()[0, 0], None), (lambda a: (a > 0) + (a > 1), None),
    (lambda a: (a > 0) + 1, None), (lambda a: (a > 0) * 1.5, None), (lambda a: a.half() + 1, None),
    (lambda a: a.to(L(a).uint8) + a.to(L(a).int8), None), (lambda a: a.long() ** 2, None),
    (lambda a: 2 ** a.long(), None), (lambda a: a.long() % 3, None), (lambda a: -a.long(), None),
    (lambda a: a.int().abs(), None), (lambda a: a.long().sqrt(), None), (lambda a: a.long() / a.long(), None),
    (lambda a: a.float() + True, None), (lambda a: a.long() + True, None),
]


@pytest.mark.parametrize("fn,_", PROMOTION)
def test_type_promotion(fn, _):
    check(fn, [(3, 4)], low=1, high=5, grad=False)


CMP = [lambda a, b: a == b, lambda a, b: a != b, lambda a, b: a < b, lambda a, b: a <= b, lambda a, b: a > b,
       lambda a, b: a >= b, lambda a, b: L(a).eq(a, b), lambda a, b: L(a).gt(a, 0.5),
       lambda a, b: L(a).logical_and(a > 0, b > 0), lambda a, b: L(a).logical_or(a > 0, b > 0),
       lambda a, b: L(a).logical_xor(a > 0, b > 0), lambda a, b: L(a).logical_not(a > 0),
       lambda a, b: (a > 0) & (b > 0), lambda a, b: (a > 0) | (b > 0), lambda a, b: (a > 0) ^ (b > 0),
       lambda a, b: ~(a > 0), lambda a, b: a.long() & b.long(), lambda a, b: L(a).isnan(a / b),
       lambda a, b: L(a).isinf(1 / (a * 0)), lambda a, b: L(a).isfinite(a), lambda a, b: a.long() == b.long(),
       lambda a, b: a == 1, lambda a, b: 1 < a]


@pytest.mark.parametrize("fn", CMP)
@pytest.mark.parametrize("specs", [[(3, 4), (3, 4)], [(3, 1), (4,)], [(), ()], [(0,), (0,)]])
def test_comparisons_have_no_grad_fn(fn, specs):
    check(fn, specs, low=-2, high=2)


def test_comparison_output_has_no_grad():
    a = retrograd.randn(3, requires_grad=True)
    r = a > 0
    assert r.grad_fn is None and not r.requires_grad and r.dtype == retrograd.bool


# --- errors ---------------------------------------------------------------------------

@pytest.mark.parametrize("call,exc,msg", [
    (lambda: retrograd.ones(3) + retrograd.ones(4), RuntimeError,
     r"The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton dimension 0"),
    (lambda: retrograd.ones(2, 3) * retrograd.ones(4, 3), RuntimeError,
     r"The size of tensor a \(2\) must match the size of tensor b \(4\) at non-singleton dimension 0"),
    (lambda: (retrograd.ones(3) > 0) - (retrograd.ones(3) > 0), RuntimeError,
     "Subtraction, the `-` operator, with two bool tensors is not supported."),
    (lambda: -(retrograd.ones(3) > 0), RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported."),
    (lambda: retrograd.ones(3, dtype=retrograd.long) ** -1, RuntimeError,
     "Integers to negative integer powers are not allowed."),
    (lambda: retrograd.ones(3, dtype=retrograd.long) // 0, RuntimeError, "ZeroDivisionError"),
    (lambda: retrograd.ones(3, dtype=retrograd.long).add(1, alpha=0.5), RuntimeError,
     "For integral input tensors, argument alpha must not be a floating point number."),
    (lambda: retrograd.ones(3).div(2, rounding_mode="bad"), ValueError,
     "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'bad'"),
    (lambda: retrograd.ones(3) & retrograd.ones(3), RuntimeError, "\"bitwise_and_cpu\" not implemented for 'Float'"),
])
def test_arith_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


@needs_torch
@pytest.mark.parametrize("call", [
    lambda L: L.tensor([5, -5]) % L.tensor([3, 0]),
    lambda L: L.tensor([5]).fmod(0),
    lambda L: L.tensor([1.0]).add(L.tensor([2.0]), alpha=True),
    lambda L: L.tensor([1]).sub(1, alpha=True),
    lambda L: L.ones(3) + L.ones(4),
    lambda L: L.ones(2, 3) * L.ones(4, 3),
    lambda L: L.ones(3, dtype=L.long) // 0,
    lambda L: L.ones(3, dtype=L.long).add_(1.5),
    lambda L: L.ones(3).add_(L.ones(2, 3)),
    lambda L: L.ones(3, dtype=L.long).mul_(L.ones(3)),
])
def test_error_parity(call):
    with pytest.raises(Exception) as te:
        call(torch)
    with pytest.raises(type(te.value)) as re:
        call(retrograd)
    assert str(re.value) == str(te.value)


def test_inplace_errors_leave_state():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        x.add_(1)
    assert x.tolist() == [1.0, 2.0] and x._version_value == 0
    y = retrograd.ones(3, dtype=retrograd.long)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        y.mul_(1.5)
    assert y.tolist() == [1, 1, 1] and y._version_value == 0
    z = retrograd.ones(3)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        z.add_(retrograd.ones(2, 3))
    assert z.tolist() == [1.0, 1.0, 1.0] and z._version_value == 0
