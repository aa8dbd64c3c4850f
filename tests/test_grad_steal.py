"""A leaf's first gradient becomes its ``.grad`` without a copy only when nothing else can
see it (PyTorch's AccumulateGrad steals such a gradient). Each test builds a way the
incoming gradient's memory can be shared (one tensor handed to two leaves, the user's
``gradient=``, a tensor or array a hook kept, views of one buffer, a saved tensor, ...) and
checks that ``.grad`` is independent of everything else: mutating it changes nothing else,
and mutating anything else leaves it alone. A wrongly adopted gradient fails these checks.
"""
import gc
import weakref

import numpy as np
import pytest

import retrograd
from retrograd.autograd import engine
from helpers import torch, needs_torch


def _independent(grad, *others):
    """``grad`` (a leaf's .grad) shares memory with none of ``others`` (tensors or arrays),
    and writing into it leaves their values unchanged."""
    arrays = [o._data if isinstance(o, retrograd.Tensor) else o for o in others]
    before = [a.copy() for a in arrays]
    for a in arrays:
        assert not np.shares_memory(grad._data, a)
    grad.add_(1000.0)
    for a, b in zip(arrays, before):
        np.testing.assert_array_equal(a, b)
    grad.sub_(1000.0)


def _leaf(*shape, seed=0):
    r = np.random.default_rng(seed)
    return retrograd.tensor(r.standard_normal(shape), requires_grad=True)


class _Fn(retrograd.autograd.Function):
    """A Function whose backward is given per test: ``backward_impl(ctx, g) -> grads``."""
    backward_impl = None

    @staticmethod
    def forward(ctx, *xs):
        return xs[0] * 1.0

    @staticmethod
    def backward(ctx, g):
        return _Fn.backward_impl(ctx, g)


def _run_fn(impl, *leaves, gradient=None):
    _Fn.backward_impl = staticmethod(impl)
    try:
        y = _Fn.apply(*leaves)
        y.backward(gradient if gradient is not None else retrograd.ones_like(y))
    finally:
        _Fn.backward_impl = None


# --- one gradient reaching several leaves ----------------------------------------------------

def test_add_hands_one_gradient_to_both_leaves():
    a, b = _leaf(5), _leaf(5, seed=1)
    ((a + b) * 3.0).sum().backward()    # MulBackward's fresh array reaches both through AddBackward
    np.testing.assert_array_equal(a.grad.numpy(), np.full(5, 3.0))
    np.testing.assert_array_equal(b.grad.numpy(), np.full(5, 3.0))
    _independent(a.grad, b.grad)
    _independent(b.grad, a.grad)


def test_function_returns_the_same_tensor_for_two_leaves():
    a, b = _leaf(4), _leaf(4, seed=1)
    _run_fn(lambda ctx, g: (g * 2.0, ) * 2, a, b)
    _independent(a.grad, b.grad)
    np.testing.assert_array_equal(b.grad.numpy(), np.full(4, 2.0))


def test_function_returns_two_tensors_over_one_array():
    a, b = _leaf(4), _leaf(4, seed=1)

    def impl(ctx, g):
        arr = g.numpy() * 2.0
        return retrograd.from_numpy(arr), retrograd.from_numpy(arr)
    _run_fn(impl, a, b)
    _independent(a.grad, b.grad)


def test_function_returns_views_of_one_buffer():
    a, b = _leaf(2, 3), _leaf(2, 3, seed=1)

    def impl(ctx, g):
        buf = np.arange(6.0)
        return retrograd.from_numpy(buf.reshape(2, 3)), retrograd.from_numpy(buf.reshape(2, 3))
    _run_fn(impl, a, b)
    _independent(a.grad, b.grad)
    np.testing.assert_array_equal(b.grad.numpy(), np.arange(6.0).reshape(2, 3))


def test_function_returns_halves_of_one_buffer():
    a, b = _leaf(3), _leaf(3, seed=1)

    def impl(ctx, g):
        buf = np.arange(6.0)
        return retrograd.from_numpy(buf[:3]), retrograd.from_numpy(buf[3:])
    _run_fn(impl, a, b)
    _independent(a.grad, b.grad)
    np.testing.assert_array_equal(b.grad.numpy(), [3.0, 4.0, 5.0])


def test_view_of_a_gradient_that_another_leaf_also_gets():
    a, b = _leaf(2, 3), _leaf(6, seed=1)
    ((a.view(6) + b) * 2.0).sum().backward()
    _independent(a.grad, b.grad)
    _independent(b.grad, a.grad)


# --- what the user holds --------------------------------------------------------------------

@pytest.mark.parametrize("how", ["leaf", "clone", "view", "detach_leaf"])
def test_user_gradient_is_never_aliased(how):
    x = _leaf(2, 3)
    G = retrograd.tensor(np.arange(6.0).reshape(2, 3))
    y = {"leaf": lambda: x, "clone": lambda: x.clone(), "view": lambda: x.view(2, 3)[:, :],
         "detach_leaf": lambda: x}[how]()
    y.backward(G.detach() if how == "detach_leaf" else G)
    _independent(x.grad, G)
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(6.0).reshape(2, 3))


def test_user_numpy_array_is_never_aliased():
    x = _leaf(6)
    arr = np.arange(6.0)
    x.clone().backward(retrograd.from_numpy(arr))
    _independent(x.grad, arr)


def test_function_returns_a_view_of_a_users_array():
    x = _leaf(2, 3)
    user = np.arange(6.0)
    _run_fn(lambda ctx, g: retrograd.from_numpy(user.reshape(2, 3)), x)
    _independent(x.grad, user)


@pytest.mark.parametrize("shape, returned", [((3,), lambda s: s), ((2, 2), lambda s: s.view(2, 2))],
                         ids=["saved-tensor", "view-of-saved-tensor"])
def test_function_returns_a_saved_tensor(shape, returned):
    x = _leaf(*shape)
    w = retrograd.tensor([1.0, 2.0, 3.0, 4.0][:x.numel()], dtype=retrograd.float64)

    class F(retrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(w)
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            (s,) = ctx.saved_tensors
            return returned(s)

    F.apply(x).sum().backward()
    _independent(x.grad, w)


def test_global_array_returned_as_a_gradient():
    x = _leaf(4)
    const = np.full(4, 7.0)
    _run_fn(lambda ctx, g: retrograd.from_numpy(const), x)
    _independent(x.grad, const)


# --- hooks ----------------------------------------------------------------------------------

def test_leaf_hook_that_keeps_the_gradient():
    x = _leaf(4)
    kept = []
    x.register_hook(lambda g: kept.append(g))
    (x * 2.0).sum().backward()
    _independent(x.grad, kept[0])


def test_leaf_hook_that_keeps_the_array_or_a_view():
    x = _leaf(2, 4)
    kept = []
    x.register_hook(lambda g: kept.extend([g.numpy()[0], g[1]._data]))
    (x * 2.0).sum().backward()
    _independent(x.grad, *kept)


def test_leaf_hook_returning_a_tensor_the_user_holds():
    x = _leaf(3)
    mine = retrograd.tensor([5.0, 6.0, 7.0], dtype=retrograd.float64)
    x.register_hook(lambda g: mine)
    (x * 2.0).sum().backward()
    _independent(x.grad, mine)


def test_hook_on_an_intermediate_that_keeps_the_gradient():
    x = _leaf(4)
    kept = []
    y = x.clone()    # CloneBackward hands the very gradient on to the leaf
    y.register_hook(lambda g: kept.append(g))
    (y * 2.0).sum().backward()
    _independent(x.grad, kept[0])


def test_retain_grad_of_an_intermediate():
    x = _leaf(4)
    y = x.clone()
    y.retain_grad()
    (y * 2.0).sum().backward()
    _independent(x.grad, y.grad)
    _independent(y.grad, x.grad)


def test_node_pre_hook_on_accumulate_grad_that_keeps_the_gradients():
    x = _leaf(4)
    y = x * 2.0
    acc = y.grad_fn.next_functions[0][0]
    kept = []
    acc.register_prehook(lambda grads: kept.append(grads))
    y.sum().backward()
    _independent(x.grad, kept[0][0])


def test_post_accumulate_hook_sees_the_grad():
    x = _leaf(4)
    seen = []
    x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.clone()))
    (x * 2.0).sum().backward()
    np.testing.assert_array_equal(seen[0].numpy(), np.full(4, 2.0))


def test_autograd_grad_result_and_a_later_backward():
    x = _leaf(4)
    y = x.clone() * 2.0
    (gx,) = retrograd.autograd.grad(y.sum(), x, retain_graph=True)
    y.sum().backward()
    _independent(x.grad, gx)
    _independent(gx, x.grad)


def test_trace_keeps_the_gradients_it_was_shown():
    x = _leaf(3)
    with retrograd.autograd.trace() as tr:
        (x * 2.0).sum().backward()
    x.grad.add_(100.0)
    kept = [g for step in tr.steps for g in step.grads_in if g is not None]
    assert kept
    for g in kept:
        assert not np.shares_memory(g._data, x.grad._data)


# --- the gradient is adopted where nothing else holds it -------------------------------------

def _fresh_gradient_is_adopted(dtype_in, dtype_leaf):
    x = retrograd.zeros(3, 4, dtype=dtype_leaf, requires_grad=True)
    ref = []

    def impl(ctx, g):
        arr = np.ones((3, 4), dtype=dtype_in)
        ref.append(weakref.ref(arr))
        return retrograd.from_numpy(arr)
    _run_fn(impl, x)
    gc.collect()
    return ref[0]() is not None and np.shares_memory(ref[0](), x.grad._data)


def test_a_fresh_gradient_is_adopted_not_copied():
    assert _fresh_gradient_is_adopted(np.float64, retrograd.float64)
    # (a gradient of another dtype is converted: the converted array is not the original)
    assert not _fresh_gradient_is_adopted(np.float32, retrograd.float64)


def test_linear_and_embedding_gradients_are_adopted():
    copies = []
    orig = engine._clone_like

    def counting(gd, vd):
        copies.append(vd.shape)
        return orig(gd, vd)
    engine._clone_like = counting
    try:
        m = retrograd.nn.Linear(6, 4)
        m(retrograd.randn(5, 6)).sum().backward()
        W = retrograd.zeros(50, 8, requires_grad=True)
        W[retrograd.tensor([1, 3, 3, 7])].sum().backward()
    finally:
        engine._clone_like = orig
    assert copies == []
    # values as usual
    np.testing.assert_array_equal(W.grad.numpy()[3], np.full(8, 2.0))


def test_second_backward_adds_in_place():
    x = _leaf(3)
    (x * 2.0).sum().backward()
    first = x.grad
    (x * 3.0).sum().backward()
    assert x.grad is first
    np.testing.assert_array_equal(first.numpy(), np.full(3, 5.0))


def test_a_stolen_grad_is_a_plain_tensor():
    x = _leaf(3)
    (x.clone() * 2.0).sum().backward()
    g = x.grad
    assert g.grad_fn is None and not g.requires_grad and g._base is None and g.is_leaf
    assert g._version == 0


# --- the layout of .grad, as PyTorch's contract ----------------------------------------------

def _layouts(lib):
    out = []
    p = lib.tensor(np.random.default_rng(0).standard_normal((3, 4))).t().detach().requires_grad_()
    (p * 2).sum().backward()
    out.append(("transposed, grad arrives contiguous", p.grad.stride()))
    p.grad = None
    (p.t().contiguous() * 2).t().sum().backward()
    out.append(("transposed, grad arrives transposed", p.grad.stride()))
    c = lib.tensor(np.random.default_rng(1).standard_normal((2, 4, 5, 3))).permute(0, 3, 1, 2).detach()
    c.requires_grad_()
    (c * 2).sum().backward()
    out.append(("channels last", c.grad.stride()))
    base = lib.tensor(np.random.default_rng(2).standard_normal((4, 6)))
    s = base[:, ::2].detach().requires_grad_()
    (s * 2).sum().backward()
    out.append(("not dense", s.grad.stride()))
    s2 = base[::2, :].t().detach().requires_grad_()
    (s2 * 2).sum().backward()
    out.append(("not dense, transposed", s2.grad.stride()))
    q = lib.tensor(np.random.default_rng(3).standard_normal((3, 4)), requires_grad=True)
    (q.t().contiguous() * 2).t().sum().backward()
    out.append(("contiguous, grad arrives transposed", q.grad.stride()))
    r = lib.tensor(np.random.default_rng(4).standard_normal((3, 4))).t().detach().requires_grad_()
    (r ** 2).sum().backward(create_graph=True)
    out.append(("create_graph", r.grad.stride()))
    r.grad = None
    return out


@needs_torch
def test_grad_strides_follow_the_leaf_as_torch():
    assert _layouts(retrograd) == _layouts(torch)


def test_grad_strides_follow_a_dense_leaf():
    p = _leaf(4, 3).t().detach().requires_grad_()
    (p * 2.0).sum().backward()
    assert p.grad.stride() == p.stride() == (1, 3)
    np.testing.assert_array_equal(p.grad.numpy(), np.full((3, 4), 2.0))
