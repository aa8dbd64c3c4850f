"""Creation and device functions at their edges: values that overflow the dtype, sizes that
overflow or do not fit in memory, wrongly typed arguments, bad device strings, .grad of the
wrong shape or dtype: PyTorch's exception type and wording, and no NumPy warning leaking."""
import re
import warnings

import numpy as np
import pytest

import retrograd
from helpers import torch, needs_torch

CASES = [
    "T.tensor([2**63])", "T.tensor(2**63)", "T.tensor([-2**63 - 1])", "T.tensor([2**64])",
    "T.tensor(2**31, dtype=T.int32)", "T.tensor([300], dtype=T.int8)", "T.tensor([300], dtype=T.uint8)",
    "T.tensor([-1, 255], dtype=T.uint8)", "T.tensor([-256], dtype=T.uint8)", "T.tensor([300.5], dtype=T.int8)",
    "T.tensor([2.5, -3.5], dtype=T.int8)", "T.tensor([70000], dtype=T.int16)", "T.tensor([float('nan')], dtype=T.int8)",
    "T.tensor([2**63], dtype=T.float32)", "T.tensor([1e300], dtype=T.float32)", "T.tensor([2**63, 1.5])",
    "T.randint(0, 2**63, (2,))", "T.randint(2**63, (2,))", "T.randint(-2**63 - 1, 0, (2,))",
    "T.randint(0, 300, (2,), dtype=T.uint8)", "T.randint(-200, 0, (2,), dtype=T.int8)",
    "T.randint(0, 2**40, (2,), dtype=T.int32)", "T.randint(-2**40, 0, (2,), dtype=T.int32)",
    "T.full((2,), 300, dtype=T.int8)", "T.full((2,), 2**63)", "T.full((2,), 2**31, dtype=T.int32)",
    "T.full((2,), 1e300, dtype=T.float32)", "T.full((2,), 70000., dtype=T.float16)",
    "T.full_like(T.zeros(2, dtype=T.uint8), 256)",
    "T.zeros(10**12)", "T.zeros(2**62)", "T.ones(2**40, 2**40)", "T.empty(2**31, 2**31)",
    "T.eye(-1)", "T.eye(2, -1)", "T.eye(0)",
    "T.device('cuda:abc')", "T.device('cuda:01')", "T.device('cuda:-1')", "T.device('cuda: 1')",
    "T.device('cuda', -2)", "T.device('cpu', -1)", "T.device('cuda:0', 1)", "T.device(5.5)", "T.device('cuda', 'x')",
    "str(T.device('cuda:12'))", "str(T.device('cuda', 3))",
    "T.zeros(2, dtype='float32')", "T.ones(2, dtype='float32')", "T.empty(2, dtype='float32')",
    "T.full((2,), 1., dtype='float32')", "T.tensor([1], dtype='float32')", "T.zeros_like(T.zeros(2), dtype='float32')",
    "T.ones_like(T.zeros(2), dtype='float32')", "T.zeros(2, dtype=np.float32)",
    "T.zeros(2, device=3.5)", "T.full((2,), 1, device=3.5)", "T.zeros(2, device=T.zeros(1))",
    "T.zeros(2, dtype=T.zeros(1))", "T.zeros(2, requires_grad=1)", "T.tensor([1.], requires_grad=1)",
    "T.zeros(2, dtype=T.float32, requires_grad=None)",
    # functions with several signatures: the parser's "invalid combination" message
    "T.arange(3, dtype='float32')", "T.arange(0, 3, dtype='float32')", "T.arange(0., 3, 0.5, device=3.5)",
    "T.eye(3, dtype='float32')", "T.eye(3, 2, requires_grad=1)", "T.rand(2, 3, dtype='float32')",
    "T.randn((2, 3), dtype='float32')", "T.randint(0, 5, (2,), dtype='float32')", "T.randint(5, (2,), device=1.5)",
    "T.linspace(0, 1, 5, dtype='float32')", "T.logspace(0, 1, 5, dtype='float32')",
]


def _run(mod, expr):
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a leaking NumPy RuntimeWarning fails the case
        try:
            return "ok", eval(expr, {"T": mod, "np": np})
        except Exception as e:
            return "exc", e


@needs_torch
@pytest.mark.parametrize("expr", CASES)
def test_creation_edges_as_torch(expr):
    tk, t = _run(torch, expr)
    rk, r = _run(retrograd, expr)
    if tk == "exc":
        assert rk == "exc", f"{expr}: torch raised {type(t).__name__}: {t}, retrograd gave {r}"
        assert type(r).__name__ == type(t).__name__, f"{expr}: {type(r).__name__}: {r} != torch {type(t).__name__}: {t}"
        assert str(r) == str(t), f"{expr}: message {r!r} != torch {t!r}"
        return
    assert rk == "ok", f"{expr}: retrograd raised {type(r).__name__}: {r}"
    if isinstance(t, str):
        assert r == t
    else:
        assert r.dtype.name == str(t.dtype).split(".")[1] and r.tolist() == t.tolist() or \
            np.array_equal(r.numpy(), t.numpy(), equal_nan=True), (expr, r, t)


@needs_torch
@pytest.mark.parametrize("grad", ["T.zeros(3)", "T.zeros(2, 3)", "T.zeros(2, dtype=T.float64)",
                                  "T.zeros(2, dtype=T.float16)", "T.zeros(2, dtype=T.int64)",
                                  "T.zeros(3, dtype=T.float64)"])
def test_assigning_a_wrong_grad_as_torch(grad):
    msgs = []
    for mod in (torch, retrograd):
        x = mod.zeros(2, requires_grad=True)
        with pytest.raises(Exception) as ei:
            x.grad = eval(grad, {"T": mod})
        msgs.append((type(ei.value).__name__, str(ei.value)))
        assert x.grad is None
    assert msgs[0] == msgs[1]


@needs_torch
@pytest.mark.parametrize("dtype,value", [("int8", 300), ("float16", 1e6), ("uint8", -1), ("int8", -128),
                                         ("float32", 1e39), ("bool", 5), ("int16", -2**15 - 1)])
def test_fill_overflow_as_torch(dtype, value):
    t = retrograd.zeros(2, dtype=getattr(retrograd, dtype))
    ref = torch.zeros(2, dtype=getattr(torch, dtype))
    try:
        ref.fill_(value)
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=re.escape(str(e))):
            t.fill_(value)
        assert t.tolist() == [0, 0]
        return
    t.fill_(value)
    assert t.tolist() == ref.tolist()
