"""Tensor basics against PyTorch: creation functions, dtypes and type promotion, printing
(exact strings), conversions to Python and NumPy, the dunder protocols and their errors,
the legacy ``Tensor(...)`` constructor."""
import operator
import re

import numpy as np
import pytest

import retrograd
from helpers import torch, needs_torch


def _run(lib, expr):
    env = {"torch": lib, "np": np, "operator": operator}
    try:
        return ("ok", eval(expr, env))
    except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
        return ("exc", e)


def _is_tensor(v):
    return isinstance(v, retrograd.Tensor) or (torch is not None and isinstance(v, torch.Tensor))


def same(expr, values=True):
    """``expr`` behaves the same with retrograd and torch: result or exception (type, message)."""
    if torch is None:
        pytest.skip("PyTorch (torch==2.13.0) is not installed")
    rk, r = _run(retrograd, expr)
    tk, t = _run(torch, expr)
    if tk == "exc":
        assert rk == "exc", f"{expr}: torch raises {type(t).__name__}: {t}, retrograd returned {r!r}"
        assert type(r).__name__ == type(t).__name__, f"{expr}: {type(r).__name__} != torch {type(t).__name__}"
        assert str(r).split("\n")[0] == str(t).split("\n")[0], f"{expr}: message {r} != torch {t}"
        return
    assert rk == "ok", f"{expr}: retrograd raised {type(r).__name__}: {r}"
    if _is_tensor(t):
        assert _is_tensor(r)
        assert tuple(r.shape) == tuple(t.shape), expr
        assert str(r.dtype) == str(t.dtype), f"{expr}: {r.dtype} != torch {t.dtype}"
        assert r.requires_grad == t.requires_grad, expr
        if values:
            np.testing.assert_array_equal(np.asarray(r.detach()._data), t.detach().numpy())
    elif isinstance(t, (tuple, list)) and t and _is_tensor(t[0]):
        assert len(r) == len(t)
        for a, b in zip(r, t):
            np.testing.assert_array_equal(np.asarray(a._data), b.numpy())
    else:
        assert repr(r) == repr(t), f"{expr}: {r!r} != torch {t!r}"


# --- creation -------------------------------------------------------------------------

CREATION = [
    "torch.zeros(2, 3)", "torch.zeros((2, 3))", "torch.zeros([2, 3])", "torch.zeros(torch.Size([2]))",
    "torch.zeros(2, dtype=torch.long)", "torch.zeros(())", "torch.zeros(0, 3)", "torch.ones(2, requires_grad=True)",
    "torch.ones(2, dtype=torch.long, requires_grad=True)", "torch.zeros(-1)", "torch.zeros(2, -1)", "torch.ones(2, -1)",
    "torch.empty(-1)", "torch.rand(-1)",
    "torch.full((2, 3), 1.5)", "torch.full((2,), 3)", "torch.full((2,), True)", "torch.full((2,), 2, dtype=torch.float64)",
    "torch.full((2,), 1, requires_grad=True)",
    "torch.zeros_like(torch.ones(2, dtype=torch.long))", "torch.ones_like(torch.ones(2), dtype=torch.float64)",
    "torch.full_like(torch.ones(2), 7)", "torch.full_like(torch.ones(2, dtype=torch.long), 2.7)",
    "torch.empty(2, 3).shape", "torch.empty_like(torch.ones(2, dtype=torch.int8)).dtype",
    "torch.arange(5)", "torch.arange(5.)", "torch.arange(1, 4)", "torch.arange(0, 1, 0.25)", "torch.arange(0, 10, 3)",
    "torch.arange(5, dtype=torch.float32)", "torch.arange(0, 1, 0.1).shape", "torch.arange(10, 0, -3)",
    "torch.arange(0, 5, 0)", "torch.arange(5, 0)", "torch.arange(3, requires_grad=True)",
    "torch.linspace(0, 1, 5)", "torch.linspace(0, 1, 1)", "torch.linspace(-1, 1, 4, dtype=torch.float64)",
    "torch.linspace(0, 1, 7)", "torch.linspace(3, -2, 9, dtype=torch.float64)", "torch.linspace(0, 1, 0)",
    "torch.eye(3)", "torch.eye(2, 3)", "torch.eye(2, dtype=torch.long)",
    "torch.tensor([1, 2.5])", "torch.tensor([True, 1])", "torch.tensor([[1, 2], [3]])", "torch.tensor([])",
    "torch.tensor([[], []])", "torch.tensor(np.array([1, 2], dtype=np.int32))", "torch.tensor(np.float64(2.5))",
    "torch.tensor(3.5, dtype=torch.long)", "torch.tensor([torch.tensor(1.), torch.tensor(2.)])",
    "torch.tensor([1], requires_grad=True)", "torch.tensor([1.], requires_grad=True)",
    "torch.tensor(np.array([1., 2.]))", "torch.tensor(np.array([1., 2.], dtype=np.float32))",
    "torch.as_tensor([1, 2])", "torch.as_tensor(np.ones(2, dtype=np.float32))",
    "torch.from_numpy(np.ones(2, dtype=np.int16))", "torch.from_numpy(np.ones((2, 3))[:, 1])",
    "torch.rand(2, 3).shape", "torch.randn(2, dtype=torch.float64).dtype", "torch.randint(0, 5, (3,)).dtype",
    "torch.randint(5, (3,)).shape", "torch.randperm(4).dtype", "torch.rand_like(torch.ones(2, dtype=torch.float64)).dtype",
    "torch.randn_like(torch.ones(2, dtype=torch.long))", "torch.rand(2, dtype=torch.long)", "torch.randn(2, dtype=torch.int32)",
    "torch.get_default_dtype()",
    "torch.zeros(2).new_zeros(3)", "torch.zeros(2).new_ones(2, 2)", "torch.zeros(2).new_full((2,), 3)",
    "torch.zeros(2).new_tensor([1, 2])", "torch.zeros(2, dtype=torch.long).new_empty(3).dtype",
]


@pytest.mark.parametrize("expr", CREATION)
def test_creation(expr):
    same(expr, values="rand" not in expr and "empty" not in expr)


def test_from_numpy_and_numpy_share_memory():
    a = np.zeros(3)
    t = retrograd.from_numpy(a)
    a[0] = 5
    assert t[0].item() == 5.0
    n = t.numpy()
    n[1] = 7
    assert t.tolist() == [5.0, 7.0, 0.0] and n is t._data
    t.add_(1)
    assert a.tolist() == [6.0, 8.0, 1.0]
    assert not np.shares_memory(retrograd.tensor(a)._data, a)


def test_randomness_is_seeded():
    retrograd.manual_seed(3)
    a = retrograd.randn(4)
    retrograd.manual_seed(3)
    assert retrograd.randn(4).tolist() == a.tolist()
    g = retrograd.Generator().manual_seed(1)
    assert retrograd.rand(2, generator=g).shape == (2,)
    assert sorted(retrograd.randperm(6).tolist()) == list(range(6))
    r = retrograd.randint(2, 5, (100,)).numpy()
    assert r.min() >= 2 and r.max() < 5


@pytest.mark.parametrize("expr", [
    "torch.zeros(3).fill_(2.5)", "torch.zeros(3).zero_()", "torch.ones(3, dtype=torch.long).fill_(2.7)",
    "torch.zeros(2, 3).normal_().shape", "torch.zeros(2, 3).uniform_(-1, 1).shape",
    "torch.ones(2, requires_grad=True).fill_(1)", "torch.ones(2, requires_grad=True).zero_()",
])
def test_inplace_initialisers(expr):
    same(expr, values="_(" not in expr or "fill_" in expr or "zero_" in expr)


def test_default_dtype():
    assert retrograd.get_default_dtype() == retrograd.float32
    retrograd.set_default_dtype(retrograd.float64)
    try:
        assert retrograd.tensor([1.0]).dtype == retrograd.float64
        assert retrograd.zeros(1).dtype == retrograd.float64
        assert (retrograd.tensor([1]) * 1.5).dtype == retrograd.float64
    finally:
        retrograd.set_default_dtype(retrograd.float32)
    assert retrograd.tensor([1.0]).dtype == retrograd.float32


# --- dtypes and type promotion ----------------------------------------------------------

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", DTYPES)
def test_promotion_table(a, b):
    same(f"torch.promote_types(torch.{a}, torch.{b})")
    same(f"(torch.ones(2, dtype=torch.{a}) + torch.ones(2, dtype=torch.{b})).dtype")
    same(f"(torch.ones(2, dtype=torch.{a}) * torch.ones((), dtype=torch.{b})).dtype")
    same(f"(torch.ones((), dtype=torch.{a}) * torch.ones((), dtype=torch.{b})).dtype")


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("scalar", ["1", "2.5", "True"])
@pytest.mark.parametrize("op", ["+", "*", "/"])
def test_promotion_with_python_scalars(a, scalar, op):
    same(f"(torch.ones(2, dtype=torch.{a}) {op} {scalar}).dtype")
    same(f"({scalar} {op} torch.ones(2, dtype=torch.{a})).dtype")


@pytest.mark.parametrize("expr", [
    "torch.tensor([5, -7]) // 2", "torch.tensor([5, -7]) / 2", "torch.tensor([5, -7]) % 3",
    "torch.tensor([5, -7]).div(2, rounding_mode='trunc')", "torch.tensor([5, -7]).div(2, rounding_mode='floor')",
    "torch.tensor([5., -7.]) // 2", "torch.tensor([5, -7], dtype=torch.int8) // torch.tensor(2)",
    "torch.result_type(torch.tensor([1]), 1.0)", "torch.result_type(torch.tensor([1.]), torch.tensor(1., dtype=torch.float64))",
    "torch.result_type(torch.tensor(1, dtype=torch.int8), 300)", "torch.can_cast(torch.float32, torch.int32)",
    "torch.can_cast(torch.int32, torch.float32)", "torch.finfo(torch.float32).eps", "torch.iinfo(torch.int32).max",
    "torch.float32.is_floating_point", "torch.long.is_floating_point", "str(torch.float16)", "torch.float64.itemsize",
    "torch.tensor(1).dtype == torch.int64", "torch.double is torch.float64", "torch.half", "torch.long", "torch.bool",
])
def test_dtype_facts(expr):
    same(expr)


@pytest.mark.parametrize("expr", [
    "torch.tensor([1, 2]).float()", "torch.tensor([1.7, -1.7]).long()", "torch.tensor([1.7, 0.]).bool()",
    "torch.tensor([3.5]).int()", "torch.tensor([1, 2]).double()", "torch.tensor([1., 2.]).half()",
    "torch.zeros(2).type()", "torch.zeros(2).type(torch.long)", "torch.zeros(2).type('torch.DoubleTensor')",
    "torch.zeros(2).to(torch.float64)", "torch.zeros(2).to('cpu')", "torch.zeros(2).to(torch.zeros(1, dtype=torch.long))",
    "torch.zeros(2).type_as(torch.zeros(1, dtype=torch.int32))", "torch.ones(2).long().float().requires_grad",
    "torch.tensor([1., 2.], requires_grad=True).double()", "torch.tensor([1., 2.], requires_grad=True).long()",
    "torch.allclose(torch.tensor([1., 2.]), torch.tensor([1., 2.000001]))",
    "torch.allclose(torch.tensor([1., float('nan')]), torch.tensor([1., float('nan')]))",
    "torch.allclose(torch.tensor([1., float('nan')]), torch.tensor([1., float('nan')]), equal_nan=True)",
    "torch.allclose(torch.tensor([1.]), torch.tensor([1., 1.]))", "torch.isclose(torch.tensor([1, 2]), torch.tensor([1., 2.]))",
    "torch.isclose(torch.tensor([1., 2.]), torch.tensor([1., 2.1]), rtol=0.1)",
    "torch.isclose(torch.tensor([float('inf'), 1.]), torch.tensor([float('inf'), 1.0001]))",
    "torch.equal(torch.tensor([1, 2]), torch.tensor([1, 2]))", "torch.equal(torch.tensor([1, 2]), torch.tensor([1., 2.]))",
    "torch.equal(torch.tensor([1, 2]), torch.tensor([1, 2, 3]))", "torch.equal(torch.tensor([1]), torch.tensor(1))",
    "torch.tensor([1., 2.]).allclose(torch.tensor([1., 2.]))", "torch.tensor([1., 2.]).equal(torch.tensor([1., 2.]))",
])
def test_conversions_and_closeness(expr):
    same(expr)


# --- printing ---------------------------------------------------------------------------

REPRS = [
    "torch.tensor(1.)", "torch.tensor(1.5)", "torch.tensor(3)", "torch.tensor(True)", "torch.tensor([1., 2., 3.])",
    "torch.tensor([1, 2, 3])", "torch.tensor([1.5, 2.25, -3.125])", "torch.tensor([1e-8, 1.0])", "torch.tensor([1e8, 1.0])",
    "torch.tensor([123456789.0])", "torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64)",
    "torch.tensor([1., 2.], dtype=torch.float64)", "torch.tensor([1., 2.], dtype=torch.float16)",
    "torch.tensor([1, 2], dtype=torch.int32)", "torch.tensor([1, 2], dtype=torch.uint8)", "torch.tensor([True, False])",
    "torch.tensor([[1., 2.], [3., 4.]])", "torch.arange(24.).reshape(2, 3, 4)", "torch.zeros(0)", "torch.zeros(0, 3)",
    "torch.zeros(2, 0)", "torch.zeros(0, dtype=torch.long)", "torch.zeros(1, 0, 2)", "torch.arange(2000.)",
    "torch.arange(2000)", "torch.arange(1200.).reshape(40, 30)", "torch.arange(1001.)", "torch.arange(1000.)",
    "torch.arange(2000.).reshape(2, 1000)", "torch.tensor(1., requires_grad=True)",
    "torch.tensor([1., 2.], requires_grad=True) * 2", "torch.tensor([float('nan'), float('inf'), -float('inf'), 1.0])",
    "torch.tensor([float('nan'), 1.5])", "torch.tensor(float('inf'))", "torch.tensor([1e-5, 1e5])",
    "torch.tensor([0.0001, 1000.])", "torch.tensor([-0.0, 0.0])", "torch.tensor([1e20])", "torch.tensor([1.123456789])",
    "torch.tensor([100., 2.5])", "torch.tensor([1., 2.], dtype=torch.float64, requires_grad=True)",
    "torch.tensor([[1e-10, 1.]], dtype=torch.float64)", "torch.tensor([[-1, 100], [5, 3]])",
    "torch.tensor(2.5, dtype=torch.float64)", "torch.tensor(5, dtype=torch.int8)", "torch.ones(2, 2, dtype=torch.bool)",
    "torch.tensor([1.0, 2.0]).sum()", "(torch.tensor([1.0, 2.0], requires_grad=True) ** 2).sum()",
    "torch.tensor([3.0, 4.0], requires_grad=True).detach()",
    "torch.tensor([1.5, 2.0], dtype=torch.float64) * torch.tensor(2.0, requires_grad=True)", "torch.tensor([12345.678])",
    "torch.tensor([0.5] * 10)", "torch.arange(10.) / 3", "torch.tensor([1e-4, 1.])", "torch.tensor([9.9999e-5, 1.])",
    "torch.tensor([1., 1000.])", "torch.tensor([1., 1001.5])", "torch.tensor([1., 100000.])", "torch.tensor([1.5, 1e15])",
    "torch.arange(12.).reshape(3, 4)[:, 1]", "torch.ones(3, 1)", "torch.tensor([[[1]]])", "torch.full((2,), 7)",
    "torch.linspace(0, 1, 5)", "torch.eye(3)", "torch.tensor([2**40, 1])", "torch.tensor([-5.5])",
    "torch.tensor([[1., 2.]], requires_grad=True)", "torch.tensor(1., requires_grad=True).exp()",
    "torch.randn(3, 4, 5).shape", "torch.Size([2, 3])", "torch.float32", "torch.zeros(3).device",
    "str(torch.tensor([1., 2.]))", "f'{torch.tensor(2.5):.2f}'", "torch.tensor([-1.5, 20.25], dtype=torch.float64)",
    "torch.arange(6.).reshape(1, 6)", "torch.arange(4000.).reshape(4, 1000)[:, :3]", "torch.zeros(3, 0, 2).long()",
]


@pytest.mark.parametrize("expr", REPRS)
def test_repr_matches_torch(expr):
    if torch is None:
        pytest.skip("PyTorch (torch==2.13.0) is not installed")
    r = _run(retrograd, expr)[1]
    t = _run(torch, expr)[1]
    assert repr(r) == repr(t)


def test_seed_reprs_without_torch():
    x = retrograd.tensor(1.0, requires_grad=True)
    assert repr(x) == "tensor(1., requires_grad=True)"
    y = x ** 2
    assert repr(y) == "tensor(1., grad_fn=<PowBackward0>)"
    assert re.fullmatch(r"<PowBackward0 object at 0x[0-9a-f]+>", repr(y.grad_fn))
    assert repr(retrograd.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(retrograd.tensor([1.0, 2.0], dtype=retrograd.float64)) == "tensor([1., 2.], dtype=torch.float64)"
    assert repr(retrograd.zeros(0, 3)) == "tensor([], size=(0, 3))"


# --- conversions to Python and NumPy, dunders -------------------------------------------

PROTOCOL = [
    "torch.tensor(1.).item()", "torch.tensor(3).item()", "torch.tensor([True]).item()", "torch.tensor([[2.5]]).item()",
    "torch.tensor([1., 2.]).item()", "torch.tensor([]).item()", "torch.tensor([[1, 2]]).tolist()",
    "torch.tensor(2.5).tolist()", "torch.tensor([1.5], dtype=torch.float16).tolist()", "torch.tensor([True]).tolist()",
    "float(torch.tensor([2.5]))", "int(torch.tensor(3.7))", "int(torch.tensor(-3.7))", "float(torch.tensor([1., 2.]))",
    "int(torch.tensor([1, 2]))", "complex(torch.tensor(2.))", "bool(torch.tensor([0]))", "bool(torch.tensor([1, 2]))",
    "bool(torch.tensor([]))", "bool(torch.tensor(0.5))", "len(torch.zeros(3, 2))", "len(torch.tensor(1.))",
    "list(torch.tensor(1.))", "[t.tolist() for t in torch.arange(6).reshape(3, 2)]", "[1, 2, 3][torch.tensor(1)]",
    "[1, 2, 3][torch.tensor(1.)]", "[1, 2, 3][torch.tensor([1, 2])]", "range(10)[torch.tensor(2)]",
    "operator.index(torch.tensor(True))", "torch.tensor([1., 2.], requires_grad=True).numpy()",
    "torch.tensor([1, 2]).numpy().dtype", "torch.tensor([1., 2.], requires_grad=True).detach().numpy().tolist()",
    "np.asarray(torch.tensor([1., 2.], requires_grad=True))", "np.asarray(torch.tensor([1, 2])).tolist()",
    "torch.ones(2, dtype=torch.long).requires_grad_()", "torch.zeros(2, 3).size(1)", "torch.zeros(2, 3).size(-1)",
    "torch.zeros(2, 3).size(2)", "torch.zeros(2, 3).stride()", "torch.zeros(2, 3).t().stride()" if False else
    "torch.zeros(2, 3)[:, 1].stride()", "torch.zeros(2, 3).numel()", "torch.zeros(2, 3).dim()", "torch.zeros(2, 3).ndim",
    "torch.zeros(2, 3).is_leaf", "torch.zeros(2, 3).is_contiguous()", "torch.zeros(2, 3)[:, 1].is_contiguous()",
    "torch.zeros(2, 3).element_size()", "torch.zeros(2, 3).shape[1]", "torch.zeros(2, 3).shape[1:]",
    "torch.zeros(2).is_floating_point()", "torch.is_tensor(torch.zeros(1))", "torch.is_tensor([1])",
    "torch.numel(torch.zeros(2, 3))", "torch.zeros(2).requires_grad_().is_leaf", "torch.zeros(2).data",
    "torch.tensor([1., 2.], requires_grad=True).data", "(torch.ones(2, requires_grad=True) * 2).is_leaf",
    "(torch.ones(2, requires_grad=True) * 2).requires_grad_(False)", "torch.ones(2).requires_grad_(False).requires_grad",
    "torch.ones(2, requires_grad=True).clone().grad_fn.name()", "torch.ones(2, requires_grad=True).contiguous().is_leaf",
    "f'{torch.tensor([1., 2.])}'", "f'{torch.tensor(3)}'", "f'{torch.tensor(3.14159):.3f}'",
]


@pytest.mark.parametrize("expr", PROTOCOL)
def test_protocols(expr):
    same(expr)


def test_iteration_gives_views():
    x = retrograd.arange(6.0).reshape(3, 2)
    rows = list(x)
    assert len(rows) == 3 and rows[1].tolist() == [2.0, 3.0]
    rows[1].mul_(10)
    assert x[1].tolist() == [20.0, 30.0]
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(retrograd.tensor(1.0))


def test_hash_is_identity():
    a, b = retrograd.tensor(1.0), retrograd.tensor(1.0)
    assert hash(a) != hash(b) and {a: 1}[a] == 1


def test_grad_checks():
    x = retrograd.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient of size '\\[3\\]' to a tensor of size "
                                           "'\\[2\\]'"):
        x.grad = retrograd.ones(3)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype 'double' to a tensor with "
                                           "grad_dtype 'Float'"):
        x.grad = retrograd.ones(2, dtype=retrograd.float64)
    assert x.grad is None
    x.grad = retrograd.ones(2)
    assert x.grad.tolist() == [1.0, 1.0]
    y = x * 2
    with pytest.warns(UserWarning, match="The .grad attribute of a Tensor that is not a leaf Tensor is being accessed"):
        assert y.grad is None


# --- the legacy constructor -------------------------------------------------------------

@pytest.mark.parametrize("expr", [
    "torch.Tensor(2, 3).shape", "torch.Tensor([1, 2])", "torch.Tensor([[1, 2]]).dtype", "torch.Tensor()",
    "torch.Tensor(torch.Size([2, 2])).shape", "torch.Tensor(2.5)", "torch.Tensor(True)", "torch.Tensor(-1)",
    "torch.Tensor(np.array([1, 2]))", "torch.Tensor(0).shape", "isinstance(torch.tensor(1.), torch.Tensor)",
    "isinstance(torch.zeros(2).requires_grad_(), torch.Tensor)",
])
def test_legacy_constructor(expr):
    same(expr, values="shape" in expr or "([" in expr)


@pytest.mark.parametrize("opts,expr", [
    ("precision=2", "torch.tensor([1.23456, 2.5])"), ("sci_mode=True", "torch.tensor([1.5, 2.0])"),
    ("sci_mode=False", "torch.tensor([1e-8, 1e8])"), ("threshold=5", "torch.arange(10.)"),
    ("threshold=5, edgeitems=2", "torch.arange(20.).reshape(4, 5)"), ("linewidth=20", "torch.arange(12.)"),
    ("precision=6", "torch.tensor([1/3])"), ("profile='short'", "torch.tensor([1/3, 1e5])"),
])
def test_printoptions(opts, expr):
    if torch is None:
        pytest.skip("PyTorch (torch==2.13.0) is not installed")
    out = []
    for lib in (retrograd, torch):
        eval(f"torch.set_printoptions({opts})", {"torch": lib})
        try:
            out.append(repr(eval(expr, {"torch": lib})))
        finally:
            lib.set_printoptions(profile="default")
            lib.set_printoptions(sci_mode=None)
    assert out[0] == out[1]


@needs_torch
def test_device_kind_properties_match_torch():
    # programs test these before choosing a code path (pytorch/examples' dcgan reads is_xpu)
    names = [a for a in dir(torch.zeros(1)) if a.startswith("is_") and not callable(getattr(torch.zeros(1), a))
             and a != "is_leaf"]
    for t, r in ((torch.zeros(2), retrograd.zeros(2)), (torch.zeros(2, device="meta"), retrograd.zeros(2, device="meta"))):
        assert {a: getattr(r, a) for a in names} == {a: getattr(t, a) for a in names}
