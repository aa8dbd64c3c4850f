"""torch.func transforms (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian,
functional_call, stack_module_state) against torch.func; gradchecks without torch."""
import warnings

import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from helpers import torch, needs_torch


def _np(x):
    if isinstance(x, (tuple, list)):
        return [_np(a) for a in x]
    if isinstance(x, dict):
        return {k: _np(v) for k, v in x.items()}
    if hasattr(x, "detach"):
        return x.detach().numpy()
    return x


def _close(a, b, atol=1e-10, rtol=1e-9):
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y, atol, rtol)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _close(a[k], b[k], atol, rtol)
    elif isinstance(a, np.ndarray):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, atol=atol, rtol=rtol)
    else:
        assert a == b


def both(run, *arrays, **kw):
    """run(lib, *tensors) on retrograd and torch with the same float64 inputs."""
    r = run(retrograd, *[retrograd.tensor(a) for a in arrays])
    t = run(torch, *[torch.tensor(a) for a in arrays])
    _close(_np(r), _np(t), **kw)
    return r


rng = np.random.default_rng(0)
A = rng.standard_normal((3,))
M = rng.standard_normal((3, 4))


@needs_torch
def test_grad_basic_and_argnums():
    both(lambda L, x: L.func.grad(lambda x: (x.sin() * x).sum())(x), A)
    both(lambda L, x, m: L.func.grad(lambda x, m: (m.t() @ x).pow(2).sum(), argnums=(0, 1))(x, m), A, M)
    both(lambda L, x, m: L.func.grad(lambda x, m: (m.t() @ x).pow(2).sum(), argnums=-1)(x, m), A, M)


@needs_torch
def test_grad_has_aux_and_value():
    def run(L, x):
        g, aux = L.func.grad(lambda x: ((x ** 2).sum(), {"s": x.cos()}), has_aux=True)(x)
        (g2, v), = [L.func.grad_and_value(lambda x: (x ** 3).sum())(x)]
        return [g, aux, g2, v]
    both(run, A)
    r = retrograd.func.grad_and_value(lambda x: (x ** 3).sum())(retrograd.tensor(A))[1]
    assert r.grad_fn is None and not r.requires_grad


@needs_torch
def test_grad_of_grad_and_hessian():
    both(lambda L, x: L.func.grad(lambda x: L.func.grad(lambda y: (y.sin() * y).sum())(x).sum())(x), A)
    both(lambda L, x: L.func.grad(L.func.grad(lambda x: x.exp() * x.sin()))(x), np.array(0.7))
    both(lambda L, x: L.func.hessian(lambda x: (x.sin() * x.roll(1)).sum())(x), A)
    both(lambda L, x, m: L.func.hessian(lambda x, m: (m.t() @ x.tanh()).pow(2).sum(), argnums=(0, 1))(x, m), A, M)


@needs_torch
def test_grad_errors():
    for L in (retrograd, torch):
        x = L.ones(3)
        msgs = []
        for fn in (lambda: L.func.grad(lambda x: x * 2)(x),
                   lambda: L.func.grad(lambda x: x.sum(), argnums=2)(x),
                   lambda: L.func.grad(lambda x: (x.sum(), 1))(x),
                   lambda: L.func.grad(lambda x: x.sum(), has_aux=True)(x),
                   lambda: L.func.jvp(lambda x: x, x, x),
                   lambda: L.func.jvp(lambda x: x, (x,), (L.ones(4),))):
            with pytest.raises(RuntimeError) as e:
                fn()
            msgs.append(str(e.value))
        with pytest.raises(ValueError) as e:
            L.func.grad(lambda x: x.sum())(3.0)
        msgs.append(str(e.value))
        if L is retrograd:
            mine = msgs
    assert mine == msgs


@needs_torch
def test_vjp_and_jvp():
    def run(L, x, m):
        out, fn, aux = L.func.vjp(lambda x, m: (m.t() @ x.sin(), x.sum()), x, m, has_aux=True)
        c = L.arange(4.0, dtype=x.dtype)
        g1 = fn(c)
        g2 = fn(c * 2)
        v, t = L.func.jvp(lambda x, m: (m.t() @ x.sin()).exp(), (x, m), (x.cos(), m * 0.5))
        return [out, aux, g1, g2, v, t]
    both(run, A, M)


@needs_torch
def test_jacrev_jacfwd():
    f = (lambda L: lambda x, m: (m.t() @ x.sin()) * x.sum())
    both(lambda L, x, m: L.func.jacrev(f(L))(x, m), A, M)
    both(lambda L, x, m: L.func.jacfwd(f(L))(x, m), A, M)
    both(lambda L, x, m: L.func.jacrev(f(L), argnums=(0, 1))(x, m), A, M)
    both(lambda L, x, m: L.func.jacfwd(f(L), argnums=(0, 1))(x, m), A, M)
    both(lambda L, x: L.func.jacrev(lambda x: (x.exp(), x.sum()))(x), A)
    both(lambda L, x: L.func.jacrev(lambda x: (x.exp(), x.cos()), has_aux=True)(x), A)


def test_gradchecks_through_transforms():
    x = retrograd.tensor(A, requires_grad=True)
    f = retrograd.func.grad(lambda x: (x.sin() * x.exp()).sum())
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
    assert gradcheck(lambda x: retrograd.func.vmap(lambda r: (r.softmax(0) * r).sum())(x.reshape(1, 3)), (x,))


def test_grad_result_attaches_to_outer_graph():
    x = retrograd.tensor(A, requires_grad=True)
    g = retrograd.func.grad(lambda x: (x ** 3).sum())(x)
    (h,) = retrograd.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), 6 * A)


# --- functional_call / stack_module_state ---------------------------------------------------

def _lin(L):
    L.manual_seed(0)
    m = L.nn.Linear(3, 2).double()
    m.register_buffer("scale", L.tensor(2.0, dtype=L.float64))
    return m


@needs_torch
def test_functional_call():
    w = rng.standard_normal((2, 3))
    b = rng.standard_normal(2)

    def run(L, x, w, b):
        m = _lin(L)
        out1 = L.func.functional_call(m, {"weight": w, "bias": b}, (x,))
        out2 = L.func.functional_call(m, ({"weight": w}, {"bias": b}), x)
        out3 = L.func.functional_call(m, {"weight": w, "bias": b}, args=(), kwargs={"input": x})
        g = L.func.grad(lambda p: L.func.functional_call(m, p, (x,)).pow(2).sum())({"weight": w, "bias": b})
        return [out1, out2, out3, g, m.weight.shape]
    both(run, A, w, b)


@needs_torch
def test_functional_call_errors_and_ties():
    msgs = []
    for L in (retrograd, torch):
        m = _lin(L)
        x = L.ones(3, dtype=L.float64)
        got = []
        for d in ({"weight": L.ones(2, 3, dtype=L.float64)},
                  {"weight": L.ones(2, 3), "bias": L.ones(2), "scale": L.ones(()), "foo": L.ones(1)}):
            with pytest.raises(RuntimeError) as e:
                L.func.functional_call(m, d, (x,), strict=True)
            got.append(str(e.value))
        with pytest.raises(ValueError) as e:
            L.func.functional_call(m, ({"weight": L.ones(2, 3)}, {"weight": L.ones(2, 3)}), (x,))
        got.append(str(e.value))
        tied = L.nn.Sequential(L.nn.Linear(2, 2, bias=False), L.nn.Linear(2, 2, bias=False)).double()
        tied[1].weight = tied[0].weight
        y = L.func.functional_call(tied, {"0.weight": L.eye(2, dtype=L.float64) * 3}, (L.ones(2, dtype=L.float64),))
        y2 = L.func.functional_call(tied, {"0.weight": L.eye(2, dtype=L.float64) * 3}, (L.ones(2, dtype=L.float64),),
                                    tie_weights=False)
        got.append(y.tolist())
        # untied: the second layer keeps its own weight
        got.append(bool(np.allclose(y2.detach().numpy(), (tied[1].weight @ (3 * L.ones(2, dtype=L.float64))).detach().numpy())))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            z = L.nn.utils.stateless.functional_call(m, {"bias": L.zeros(2, dtype=L.float64)}, (x,))
        got.append(str(w[0].message))
        got.append(list(z.shape))
        msgs.append(got)
    assert msgs[0] == msgs[1]
    assert msgs[0][4] is True


@needs_torch
def test_stack_module_state_ensemble():
    def run(L, x):
        L.manual_seed(0)
        models = [L.nn.Linear(3, 2).double() for _ in range(4)]
        params, buffers = L.func.stack_module_state(models)
        base = models[0]

        def f(p, b, x):
            return L.func.functional_call(base, (p, b), (x,))
        out = L.func.vmap(f, in_dims=(0, 0, None))(params, buffers, x)
        ref = L.stack([m(x) for m in models])
        return [bool(np.allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-14)), list(out.shape),
                params["weight"].requires_grad, params["weight"].grad_fn is None, list(buffers)]
    assert both(run, A)[0] is True
