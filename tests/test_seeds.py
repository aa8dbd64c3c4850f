"""The seeds' autograd examples print exactly what the articles show."""
import re
import warnings

import pytest

import retrograd as torch


def test_requires_grad_repr_and_toggle():
    x = torch.tensor(1., requires_grad=True)
    assert repr(x) == "tensor(1., requires_grad=True)"
    assert x.requires_grad is True
    x.requires_grad = False
    assert x.requires_grad is False


def test_pow_add_graph():
    x = torch.tensor(1., requires_grad=True)
    y = x ** 2
    assert repr(y) == "tensor(1., grad_fn=<PowBackward0>)"
    assert re.fullmatch(r"<PowBackward0 object at 0x[0-9a-f]+>", repr(y.grad_fn))
    assert x.grad_fn is None
    assert y.requires_grad
    z = y + 1
    assert repr(z) == "tensor(2., grad_fn=<AddBackward0>)"
    assert z.requires_grad
    assert type(z.grad_fn).__name__ == "AddBackward0"
    assert z.grad_fn.next_functions[0][0] is y.grad_fn


def test_seed_001_backward_prints(capsys):
    x = torch.tensor(4.0, requires_grad=True)
    print("x.grad:", x.grad)
    print("x.grad_fn:", x.grad_fn)
    z = x ** 2
    with pytest.warns(UserWarning, match=r"The \.grad attribute of a Tensor that is not a leaf Tensor is being accessed"):
        print("z grad:", z.grad)
    print("z.grad_fn:", z.grad_fn)
    z.backward()
    print("x.grad:", x.grad)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "x.grad: None"
    assert out[1] == "x.grad_fn: None"
    assert out[2] == "z grad: None"
    assert re.fullmatch(r"z\.grad_fn: <PowBackward0 object at 0x[0-9a-f]+>", out[3])
    assert out[4] == "x.grad: tensor(8.)"


def test_non_leaf_grad_warning_names_retain_grad():
    x = torch.tensor(2.0, requires_grad=True)
    y = x * 3
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert y.grad is None
    assert "retain_grad()" in str(w[0].message)
    y.retain_grad()
    y.backward()
    assert y.grad.item() == 1.0
