"""The backward walk: diamonds, unused inputs, accumulation, freeing, inputs=, gradient=,
autograd.grad's signature, deep graphs."""
import gc
import os
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import retrograd
from helpers import torch, needs_torch

SECOND = "Trying to backward through the graph a second time"


def both(fn):
    """Run ``fn(lib)`` on retrograd and on torch; return both results as numpy-friendly values."""
    return fn(retrograd), (fn(torch) if torch is not None else None)


def _np(t):
    return None if t is None else np.asarray(t.detach().numpy() if hasattr(t, "detach") else t)


def assert_same(r, t):
    if torch is None:
        return
    if isinstance(r, (tuple, list)):
        assert len(r) == len(t)
        for a, b in zip(r, t):
            assert_same(a, b)
        return
    if r is None or t is None:
        assert r is None and t is None, (r, t)
        return
    np.testing.assert_allclose(_np(r), _np(t), rtol=1e-6, atol=1e-7)


def test_diamond_nonleaf_used_twice():
    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        a = x * 2
        b = a.exp() + a * a          # a reaches the sum through two paths
        b.sum().backward()
        return x.grad
    assert_same(*both(run))
    r = run(retrograd)
    a = 2 * np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(r.numpy(), 2 * (np.exp(a) + 2 * a), rtol=1e-6)


def test_unused_input_grad_stays_none():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    w = retrograd.tensor([3.0, 4.0], requires_grad=True)
    (x * 3).sum().backward()
    assert w.grad is None
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_comparison_outputs_do_not_break_backward():
    x = retrograd.tensor([1.0, -2.0], requires_grad=True)
    m = x > 0
    assert m.grad_fn is None and not m.requires_grad
    retrograd.where(m, x, x * 0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 0.0])


def test_accumulation_over_two_backwards_with_retain_graph():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        y.backward(retain_graph=True)
        g1 = x.grad.clone()
        y.backward()
        return g1, x.grad
    g1, g2 = run(retrograd)
    np.testing.assert_allclose(g1.numpy(), [2.0, 4.0])
    np.testing.assert_allclose(g2.numpy(), [4.0, 8.0])
    assert_same(*both(run))


def test_second_backward_raises_and_changes_nothing():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    before = x.grad.numpy().copy()
    with pytest.raises(RuntimeError, match=SECOND):
        y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), before)
    with pytest.raises(RuntimeError, match=SECOND):
        y.grad_fn.next_functions[0][0].saved_tensors


def test_graph_without_saved_tensors_can_backward_twice():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_non_scalar_backward_needs_gradient():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    assert x.grad is None
    y.backward(retrograd.tensor([1.0, 10.0]))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 20.0])


def test_gradient_shape_mismatch_message():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of "
                       r"torch.Size\(\[3\]\) and output\[0\] has a shape of torch.Size\(\[2\]\)."):
        (x * 2).backward(retrograd.ones(3))


def test_backward_inputs_restricts_accumulation():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        h = x * w
        out = (h * h).sum()
        out.backward(inputs=[x], retain_graph=True)
        gx, gw = x.grad.clone(), w.grad
        out.backward(inputs=[h])
        return gx, gw, h.grad, h.retains_grad
    r, t = both(run)
    assert r[1] is None and r[3] is True
    assert_same(r[:3], t[:3] if t else None)


def test_backward_inputs_errors():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be empty."):
        (x * 2).sum().backward(inputs=[])
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        (x * 2).sum().backward(inputs=[retrograd.ones(2)])
    assert x.grad is None


def test_autograd_backward_function_signature():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    y1, y2 = x * 2, (x * x).sum()
    retrograd.autograd.backward([y1, y2], [retrograd.ones(2), None])
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 6.0])
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        retrograd.autograd.backward([x * 2, x.sum()], [None])


def test_grad_signature_and_errors():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    w = retrograd.tensor([3.0, 4.0], requires_grad=True)
    (g,) = retrograd.autograd.grad((x * 2).sum(), x)
    np.testing.assert_allclose(g.numpy(), [2.0, 2.0])
    assert x.grad is None                               # grad() never accumulates
    gx, gw = retrograd.autograd.grad((x * 2).sum(), [x, w], allow_unused=True)
    assert gw is None
    gx, gw = retrograd.autograd.grad((x * 2).sum(), [x, w], materialize_grads=True)
    np.testing.assert_array_equal(gw.numpy(), [0.0, 0.0])
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not have been used "
                       "in the graph. Set allow_unused=True if this is the desired behavior."):
        retrograd.autograd.grad((x * 2).sum(), [x, w])
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed when "
                       "materialize_grads=True, but got: allow_unused=False."):
        retrograd.autograd.grad((x * 2).sum(), [x], allow_unused=False, materialize_grads=True)
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        retrograd.autograd.grad((x * 2).sum(), [x, retrograd.ones(2)])
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        retrograd.autograd.grad(retrograd.ones(2).sum(), [x])
    with pytest.raises(RuntimeError, match="`inputs` argument to `grad\\(\\)` cannot be empty."):
        retrograd.autograd.grad((x * 2).sum(), [])
    gs = retrograd.autograd.grad((x * 2).sum(), [x, x])
    np.testing.assert_allclose(gs[1].numpy(), [2.0, 2.0])


def test_grad_of_non_leaf_and_leaf_together():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        z = (y * y).sum()
        return lib.autograd.grad(z, [y, x])
    assert_same(*both(run))


def test_broadcast_gradient_is_summed_to_input_shape():
    def run(lib):
        x = lib.tensor([[1.0], [2.0]], requires_grad=True)
        b = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (x * b).sum().backward()
        return x.grad, b.grad
    r, t = both(run)
    assert tuple(r[0].shape) == (2, 1) and tuple(r[1].shape) == (3,)
    assert_same(r, t)


def test_graph_is_freed_after_backward():
    gc.disable()
    try:
        x = retrograd.tensor([1.0, 2.0], requires_grad=True)
        y = (x.exp() * x).sum()
        ref = weakref.ref(y.grad_fn)
        y.backward()
        del y
        assert ref() is None
    finally:
        gc.enable()


def test_graph_keeps_its_leaf_alive():
    # As in PyTorch: AccumulateGrad.variable is the leaf, alive while the graph is.
    gc.disable()
    try:
        x = retrograd.tensor([1.0], requires_grad=True)
        y = x * 2
        acc = y.grad_fn.next_functions[0][0]
        assert type(acc).__name__ == "AccumulateGrad" and acc.variable is x
        ref = weakref.ref(x)
        del x
        assert ref() is not None
        y.sum().backward()
        np.testing.assert_array_equal(acc.variable.grad.numpy(), [2.0])
        del y, acc
        assert ref() is None
    finally:
        gc.enable()


def test_parameter_freed_without_the_cycle_collector():
    gc.collect()
    gc.disable()
    try:
        p = retrograd.tensor([1.0, 2.0], requires_grad=True)
        x = retrograd.tensor([3.0, 4.0], requires_grad=True)
        y = (p * x).exp().sum()          # mul saves p (for x's gradient)
        y.backward()
        z = p * x                        # a graph never backwarded
        ref = weakref.ref(p)
        del p, y, z
        assert ref() is None
    finally:
        gc.enable()


def test_saved_leaf_stand_in_reaches_the_leaf():
    class UsesOther(retrograd.autograd.Function):
        @staticmethod
        def forward(ctx, a, other):
            ctx.save_for_backward(other)     # a leaf that is also an input
            return a * other

        @staticmethod
        def backward(ctx, g):
            (o,) = ctx.saved_tensors
            return g * o, g * 0
    w = retrograd.tensor([2.0, 3.0], requires_grad=True)
    a = retrograd.tensor([1.0, 1.0], requires_grad=True)
    out = UsesOther.apply(a, w)
    (g,) = retrograd.autograd.grad(out.sum(), a, create_graph=True)
    (g * g).sum().backward()             # d/dw of sum(w**2) lands in w.grad
    np.testing.assert_allclose(w.grad.numpy(), [4.0, 6.0])


@needs_torch
def test_next_functions_and_names_match_torch():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * 2).exp()
        fn = y.grad_fn
        return (type(fn).__name__, type(fn.next_functions[0][0]).__name__,
                type(fn.next_functions[0][0].next_functions[0][0]).__name__,
                fn.next_functions[0][0].next_functions[1], fn.name())
    r, t = both(run)
    assert r == t


DEEP = textwrap.dedent("""
    import gc, weakref
    import retrograd as torch
    gc.disable()   # the cyclic collector is not what is being measured
    x = torch.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(1_000_000):
        y = y * 1.0
    first = weakref.ref(y.grad_fn)
    y.backward()
    assert x.grad.item() == 1.0
    del y           # dropping a million-node graph must not overflow the C stack
    assert first() is None
    y = x * 1.0
    for _ in range(1_000_000):
        y = y.sin()                # saved tensors all the way down, never backwarded
    last = weakref.ref(y.grad_fn)
    del y
    assert last() is None
    print("ok")
""")


@pytest.mark.slow
def test_million_deep_chain_backward_and_free():
    env = dict(os.environ)
    src = os.path.join(os.path.dirname(__file__), "..", "src")
    env["PYTHONPATH"] = os.path.abspath(src) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", DEEP], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "ok"


@needs_torch
def test_gradient_edges_in_grad():
    def run(lib):
        G = lib.autograd.graph
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        z = (y * y).sum()
        e = G.get_gradient_edge(y)
        out = [type(e.node).__name__, e.output_nr]
        out.append([g.tolist() for g in lib.autograd.grad(z, e, retain_graph=True)])
        out.append([g.tolist() for g in lib.autograd.grad(z, [G.get_gradient_edge(x), y])])
        y3 = x * 3
        out.append([g.tolist() for g in lib.autograd.grad(G.get_gradient_edge(y3), x, lib.ones(2))])
        try:
            G.get_gradient_edge(lib.ones(2))
        except RuntimeError as err:
            out.append(str(err))
        return out
    assert run(retrograd) == run(torch)
