"""gradcheck / gradgradcheck as public API, and their failure report."""
import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import GradcheckError
from helpers import torch


def _bad(lib):
    class Bad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, g * x * 1.1        # 10% off for the second input
    return Bad


def _inputs(lib):
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    y = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
    return x, y


def test_gradcheck_passes_and_is_callable_from_autograd():
    x, y = _inputs(retrograd)
    assert retrograd.autograd.gradcheck(lambda a, b: (a * b).exp(), (x, y))
    assert retrograd.autograd.gradgradcheck(lambda a, b: a * b * a, (x, y))


def test_gradcheck_failure_report():
    Bad = _bad(retrograd)
    x, y = _inputs(retrograd)
    with pytest.raises(GradcheckError) as ei:
        retrograd.autograd.gradcheck(Bad.apply, (x, y))
    msg = str(ei.value)
    assert isinstance(ei.value, RuntimeError)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 1,\nnumerical:tensor(")
    assert "analytical:tensor([[1.1000, 0.0000, 0.0000]," in msg
    assert ("The worst mismatch is d(output 0[2]) / d(input 1[2]): analytical 3.3000000000000003 vs numerical "
            in msg)
    if torch is not None:
        with pytest.raises(Exception) as te:
            torch.autograd.gradcheck(_bad(torch).apply, _inputs(torch))
        assert msg.startswith(str(te.value).rstrip("\n"))       # PyTorch's report, then the worst element
    assert retrograd.autograd.gradcheck(Bad.apply, (x, y), raise_exception=False) is False
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, 2.0, 3.0])   # perturbations undone


def test_gradgradcheck_catches_wrong_double_backward():
    class Sq(retrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return SqGrad.apply(x, g)

    class SqGrad(retrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x, g):
            ctx.save_for_backward(x, g)
            return 2 * x * g

        @staticmethod
        def backward(ctx, gg):
            x, g = ctx.saved_tensors
            return 3 * g * gg, 2 * x * gg      # d/dx should be 2 * g * gg
    x = retrograd.tensor([0.3, -1.2], dtype=retrograd.float64, requires_grad=True)
    assert retrograd.autograd.gradcheck(Sq.apply, (x,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        retrograd.autograd.gradgradcheck(Sq.apply, (x,))


def test_gradcheck_input_checks():
    x = retrograd.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="gradcheck expects at least one input tensor to require gradient"):
        retrograd.autograd.gradcheck(lambda a: a * 2, (x,))
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double precision"):
        retrograd.autograd.gradcheck(lambda a: a * 2, (x.requires_grad_(),), raise_exception=False)


def test_gradcheck_non_contiguous_input():
    base = retrograd.tensor(np.arange(6.0).reshape(2, 3) / 7)
    x = base.expand(2, 3).detach()[:, ::2].detach().requires_grad_()
    assert retrograd.autograd.gradcheck(lambda a: a.exp() * a, (x,))
