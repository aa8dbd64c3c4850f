"""Higher-order derivatives: create_graph through the core ops, Hessian-vector products,
a gradient penalty, gradgradcheck over the op set, and no leaked graphs afterwards."""
import gc
import weakref

import numpy as np
import pytest

import retrograd
from helpers import torch, needs_torch, gradcheck_op


def _vals(x):
    return None if x is None else np.round(np.asarray(x.detach().numpy(), dtype=float), 6).tolist()


def test_third_derivative_of_cube():
    x = retrograd.tensor(2.0, requires_grad=True)
    (g1,) = retrograd.autograd.grad(x ** 3, x, create_graph=True)
    (g2,) = retrograd.autograd.grad(g1, x, create_graph=True)
    (g3,) = retrograd.autograd.grad(g2, x)
    assert (g1.item(), g2.item(), g3.item()) == (12.0, 12.0, 6.0)
    assert g1.requires_grad and g2.requires_grad and not g3.requires_grad
    assert type(g1.grad_fn).__name__ == "MulBackward0"


@needs_torch
def test_backward_create_graph_leaf_grad_matches_torch():
    import warnings

    def run(lib):
        x = lib.tensor(2.0, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (x ** 3).backward(create_graph=True)
            first = (_vals(x.grad), type(x.grad.grad_fn).__name__)
            (x ** 3).backward(create_graph=True)
        second = (_vals(x.grad), type(x.grad.grad_fn).__name__)
        g = x.grad
        x.grad = None
        g.backward()
        return first, second, _vals(x.grad)
    assert run(retrograd) == run(torch)


def _hvp_case(lib):
    a = lib.tensor(np.array([[1.0, 0.5], [0.5, 2.0]]))
    x = lib.tensor(np.array([0.3, -0.7]), requires_grad=True)
    v = lib.tensor(np.array([1.0, 2.0]))

    def f(x):
        return (x * (a * x).sum(1)).sum() + (x ** 4).sum() + x.sin().sum()
    (g,) = lib.autograd.grad(f(x), x, create_graph=True)
    (hv,) = lib.autograd.grad((g * v).sum(), x)
    return _vals(g), _vals(hv)


def test_hessian_vector_product():
    g, hv = _hvp_case(retrograd)
    x = np.array([0.3, -0.7])
    a = np.array([[1.0, 0.5], [0.5, 2.0]])
    h = 2 * a + np.diag(12 * x ** 2 - np.sin(x))
    np.testing.assert_allclose(hv, h @ np.array([1.0, 2.0]), rtol=1e-6)
    if torch is not None:
        assert (g, hv) == _hvp_case(torch)


def _penalty_case(lib):
    rng = np.random.default_rng(0)
    w = lib.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    x = lib.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    out = ((x.reshape(4, 3, 1) * w).sum(1)).tanh().sum()
    (gx,) = lib.autograd.grad(out, x, create_graph=True)
    penalty = ((gx * gx).sum(1).sqrt() - 1) ** 2
    loss = penalty.mean()
    loss.backward()
    return _vals(loss), _vals(w.grad), _vals(x.grad)


def test_gradient_penalty():
    r = _penalty_case(retrograd)
    assert r[1] is not None and r[2] is not None
    if torch is not None:
        t = _penalty_case(torch)
        for a, b in zip(r, t):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


def test_no_leak_after_create_graph_grad():
    gc.collect()
    gc.disable()
    try:
        x = retrograd.tensor([1.0, 2.0], requires_grad=True)
        y = (x.exp() * x).sum()
        (g,) = retrograd.autograd.grad(y, x, create_graph=True)
        (g * g).sum().backward()
        refs = [weakref.ref(y.grad_fn), weakref.ref(g.grad_fn)]
        del y, g
        assert all(r() is None for r in refs)   # freed by reference counting alone: no cycle
    finally:
        gc.enable()


def test_no_leak_after_backward_create_graph():
    """param -> .grad -> grad_fn -> ... -> AccumulateGrad -> param is no cycle here
    (PyTorch issue 4661): AccumulateGrad holds its leaf weakly."""
    import warnings
    gc.collect()
    gc.disable()
    try:
        p = retrograd.tensor([1.0, 2.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (p ** 3).sum().backward(create_graph=True)
        ref_p, ref_fn = weakref.ref(p), weakref.ref(p.grad.grad_fn)
        del p
        assert ref_p() is None and ref_fn() is None
    finally:
        gc.enable()


def test_no_leak_through_forward_nodes_that_saved_the_leaf():
    import warnings
    gc.collect()
    gc.disable()
    try:
        p = retrograd.tensor([1.0, 2.0], requires_grad=True)
        x = retrograd.tensor([0.5, -1.0])
        loss = (p * x).exp().sum()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss.backward(create_graph=True)
        g1 = p.grad.detach().numpy().copy()
        np.testing.assert_allclose(g1, np.exp([0.5, -2.0]) * [0.5, -1.0], rtol=1e-6)
        (p.grad * p.grad).sum().backward()       # the gradient's own graph is usable
        ref_p, ref_node = weakref.ref(p), weakref.ref(loss.grad_fn)
        del p, loss
        assert ref_p() is None and ref_node() is None
    finally:
        gc.enable()


def test_backward_through_released_double_graph_raises():
    x = retrograd.tensor(2.0, requires_grad=True)
    (g,) = retrograd.autograd.grad(x ** 3, x, create_graph=True)
    g.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        g.backward()


# --- gradgradcheck over the core op set ------------------------------------------------------
# (name the op must have on retrograd, function, input shapes, positive inputs)
OPS = [
    ("add", lambda x, y: x + y, [(2, 3), (3,)], False),
    ("sub", lambda x, y: x - y, [(2, 3), (2, 1)], False),
    ("rsub", lambda x: 1 - x, [(2, 3)], False),
    ("mul", lambda x, y: x * y, [(2, 3), (3,)], False),
    ("mul", lambda x: x * 2.5, [()], False),
    ("div", lambda x, y: x / y, [(2, 3), (3,)], True),
    ("div", lambda x: 2.0 / x, [(3,)], True),
    ("pow", lambda x: x ** 3, [(2, 3)], False),
    ("pow", lambda x, y: x ** y, [(2, 3), (2, 3)], True),
    ("pow", lambda x: 2.0 ** x, [(3,)], False),
    ("neg", lambda x: -x, [(2, 3)], False),
    ("abs", lambda x: x.abs(), [(2, 3)], True),
    ("exp", lambda x: x.exp(), [(2, 3)], False),
    ("log", lambda x: x.log(), [(2, 3)], True),
    ("log2", lambda x: x.log2(), [(3,)], True),
    ("log1p", lambda x: x.log1p(), [(3,)], True),
    ("expm1", lambda x: x.expm1(), [(3,)], False),
    ("sqrt", lambda x: x.sqrt(), [(2, 3)], True),
    ("rsqrt", lambda x: x.rsqrt(), [(3,)], True),
    ("sin", lambda x: x.sin(), [(2, 3)], False),
    ("cos", lambda x: x.cos(), [(2, 3)], False),
    ("tan", lambda x: x.tan(), [(3,)], False),
    ("tanh", lambda x: x.tanh(), [(2, 3)], False),
    ("sigmoid", lambda x: x.sigmoid(), [(2, 3)], False),
    ("relu", lambda x: x.relu(), [(2, 3)], True),
    ("erf", lambda x: x.erf(), [(3,)], False),
    ("reciprocal", lambda x: x.reciprocal(), [(3,)], True),
    ("square", lambda x: x.square(), [(3,)], False),
    ("sum", lambda x: x.sum(), [(2, 3)], False),
    ("sum", lambda x: x.sum(1, keepdim=True), [(2, 3)], False),
    ("mean", lambda x: x.mean(0), [(2, 3)], False),
    ("reshape", lambda x: (x.reshape(3, 2) * x.reshape(3, 2)), [(2, 3)], False),
    ("expand", lambda x: x.expand(2, 3) * x.expand(2, 3), [(1, 3)], False),
    ("where", lambda x, y: retrograd.where(x > 0, x * y, y * y), [(2, 3), (2, 3)], False),
    ("getitem", lambda x: x[0] * x[1:].sum(0), [(3, 2)], False),
    ("getitem", lambda x: x[[0, 2, 0]] ** 2, [(3, 2)], False),
    ("prod", lambda x: x.prod(1), [(2, 3)], True),
    ("maximum", lambda x, y: retrograd.maximum(x, y) ** 2, [(2, 3), (2, 3)], False),
    ("clamp", lambda x: x.clamp(-0.5, 0.5) ** 2, [(2, 3)], False),
    ("var", lambda x: x.var(1), [(2, 3)], False),
    ("std", lambda x: x.std(), [(2, 3)], False),
    ("logsumexp", lambda x: x.logsumexp(1), [(2, 3)], False),
    ("norm", lambda x: x.norm(), [(2, 3)], True),
    ("cumsum", lambda x: x.cumsum(1) ** 2, [(2, 3)], False),
    ("cumprod", lambda x: x.cumprod(1), [(2, 3)], True),
    ("transpose", lambda x: x.transpose(0, 1) ** 2, [(2, 3)], False),
    ("permute", lambda x: x.permute(2, 0, 1) ** 2, [(2, 3, 2)], False),
    ("cat", lambda x, y: retrograd.cat([x, y]) ** 2, [(2, 3), (1, 3)], False),
    ("stack", lambda x, y: retrograd.stack([x, y]) ** 2, [(2, 3), (2, 3)], False),
    ("matmul", lambda x, y: x @ y, [(2, 3), (3, 2)], False),
    ("matmul", lambda x, y: (x @ y) ** 2, [(3,), (3, 2)], False),
    ("mm", lambda x, y: retrograd.mm(x, y) ** 2, [(2, 3), (3, 2)], False),
    ("bmm", lambda x, y: retrograd.bmm(x, y) ** 2, [(2, 2, 3), (2, 3, 2)], False),
    ("dot", lambda x, y: retrograd.dot(x, y) ** 2, [(3,), (3,)], False),
    ("gather", lambda x: x.gather(1, retrograd.tensor([[0, 0], [1, 0]])) ** 2, [(2, 3)], False),
    ("masked_fill", lambda x: x.masked_fill(x > 0, 0.5) ** 2, [(2, 3)], False),
    ("index_select", lambda x: x.index_select(0, retrograd.tensor([1, 0, 1])) ** 2, [(2, 3)], False),
    ("lerp", lambda x, y: retrograd.lerp(x, y, 0.3) ** 2, [(3,), (3,)], False),
]


def _available(name):
    if name == "getitem":
        return True
    return hasattr(retrograd, name) or hasattr(retrograd.Tensor, name)


@pytest.mark.parametrize("name,fn,specs,positive", OPS, ids=[f"{c[0]}-{i}" for i, c in enumerate(OPS)])
def test_gradgradcheck_core_ops(name, fn, specs, positive):
    if not _available(name):
        pytest.skip(f"{name} is not defined yet")
    gradcheck_op(fn, specs, positive=positive, second_order=True)
