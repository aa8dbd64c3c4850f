"""Hooks: tensor hooks, node pre/post hooks, retain_grad, post-accumulate hooks; their
order against PyTorch's, handles, and hooks that return the wrong thing."""
import numpy as np
import pytest

import retrograd
from helpers import torch, needs_torch


def _vals(x):
    if x is None:
        return None
    if isinstance(x, (tuple, list)):
        return [_vals(e) for e in x]
    return np.round(x.detach().numpy().astype(float), 6).tolist()


def hook_log(lib):
    """Several hooks of every kind on a non-leaf and on a leaf; returns the event log."""
    log = []
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y.retain_grad()

    def th(n):
        def f(g):
            log.append(("tensor", n, _vals(g)))
            return g + 1
        return f

    def pre(n):
        def f(go):
            log.append(("pre", n, _vals(go)))
            return (go[0] * 2,) if n == 1 else None
        return f

    def post(n):
        def f(gi, go):
            log.append(("post", n, _vals(gi), _vals(go)))
        return f

    y.register_hook(th(1))
    y.grad_fn.register_prehook(pre(1))
    y.grad_fn.register_hook(post(1))
    y.register_hook(th(2))
    y.grad_fn.register_prehook(pre(2))
    y.grad_fn.register_hook(post(2))
    x.register_hook(th("leaf1"))
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(pre("acc"))
    acc.register_hook(post("acc"))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post_acc", _vals(t.grad))))
    x.register_hook(th("leaf2"))
    z = (y * y).sum()
    z.backward()
    log.append(("y.grad", _vals(y.grad)))
    log.append(("x.grad", _vals(x.grad)))
    return log


def test_hook_order_and_values():
    log = hook_log(retrograd)
    kinds = [e[0] for e in log]
    # tensor hooks, retain_grad (y.grad is after the tensor hooks), node pre-hooks, node,
    # node post-hooks; then the leaf: its tensor hooks, AccumulateGrad's pre-hooks,
    # accumulation, post-accumulate hooks, AccumulateGrad's post-hooks.
    assert kinds == ["tensor", "tensor", "pre", "pre", "post", "post", "tensor", "tensor", "pre",
                     "post_acc", "post", "y.grad", "x.grad"]
    if torch is not None:
        assert log == hook_log(torch)


@needs_torch
def test_retain_grad_sees_gradient_after_tensor_hooks():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        y.register_hook(lambda g: g * 10)
        y.retain_grad()
        y.register_hook(lambda g: g + 1)
        y.sum().backward()
        return _vals(y.grad), _vals(x.grad)
    assert run(retrograd) == run(torch)


def test_handle_remove():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    h = x.register_hook(lambda g: calls.append(1))
    y = x * 2
    h2 = y.grad_fn.register_prehook(lambda go: calls.append(2))
    h3 = y.grad_fn.register_hook(lambda gi, go: calls.append(3))
    h4 = x.register_post_accumulate_grad_hook(lambda t: calls.append(4))
    for handle in (h, h2, h3, h4):
        handle.remove()
    h.remove()  # twice is harmless
    y.sum().backward()
    assert calls == []
    with x.register_hook(lambda g: calls.append(5)):
        (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert calls == [5]


@needs_torch
def test_hooks_run_in_autograd_grad():
    def run(lib):
        log = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: log.append(("leaf", _vals(g))) or g * 2)
        y = x * 3
        y.register_hook(lambda g: log.append(("y", _vals(g))))
        (gx,) = lib.autograd.grad(y.sum(), x)
        log.append(("gx", _vals(gx), x.grad is None))
        return log
    assert run(retrograd) == run(torch)


@needs_torch
def test_hook_on_tensor_modified_in_place():
    def run(lib):
        log = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        y.retain_grad()
        y.register_hook(lambda g: log.append(("old", _vals(g))))
        y.mul_(3)
        y.register_hook(lambda g: log.append(("new", _vals(g))))
        (y * y).sum().backward()
        return log, _vals(y.grad), _vals(x.grad)
    assert run(retrograd) == run(torch)


@needs_torch
def test_post_hook_can_replace_grad_inputs():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 7,))
        y.sum().backward()
        return _vals(x.grad)
    assert run(retrograd) == run(torch) == [7.0, 7.0]


@needs_torch
def test_node_api_matches_torch():
    def run(lib):
        x = lib.tensor([1.0], requires_grad=True)
        y = x * 2
        acc = y.grad_fn.next_functions[0][0]
        # (AccumulateGrad.name() is "AccumulateGrad" here, "torch::autograd::AccumulateGrad" in PyTorch)
        return (y.grad_fn.name(), type(acc).__name__, acc.next_functions, y.grad_fn.metadata,
                isinstance(y.grad_fn, lib.autograd.graph.Node), acc._sequence_nr())
    assert run(retrograd) == run(torch)


def test_hook_on_tensor_not_requiring_grad():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        retrograd.ones(2).register_hook(lambda g: g)
    x = retrograd.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)


# --- hooks that return the wrong thing -----------------------------------------------------

def test_hook_wrong_shape_names_tensor_and_shapes():
    x = retrograd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: retrograd.ones(2))
    with pytest.raises(RuntimeError, match=r"hook '<lambda>' has changed the size of value \(the gradient of "
                       r"output 0 of MulBackward0 had shape \[3\], the hook returned shape \[2\]\)"):
        y.sum().backward()
    assert x.grad is None


def test_leaf_hook_wrong_shape():
    x = retrograd.tensor([1.0, 2.0, 3.0], requires_grad=True)

    def bad_hook(g):
        return retrograd.ones(2, 2)
    x.register_hook(bad_hook)
    with pytest.raises(RuntimeError, match=r"hook 'bad_hook' has changed the size of value \(the gradient of a "
                       r"leaf tensor had shape \[3\], the hook returned shape \[2, 2\]\)"):
        (x * 2).sum().backward()
    assert x.grad is None


def test_hook_wrong_dtype():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g.double())
    with pytest.raises(RuntimeError, match=r"hook '<lambda>' has changed the type of value \(was "
                       r"torch.FloatTensor got torch.DoubleTensor\) for the gradient of output 0 of MulBackward0"):
        y.sum().backward()
    assert x.grad is None


def test_hook_returning_non_tensor():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: 3)
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
        y.sum().backward()


def test_node_hooks_wrong_count_or_shape():
    x = retrograd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y.grad_fn.register_hook(lambda gi, go: (retrograd.ones(3),))
    with pytest.raises(RuntimeError, match=r"hook '<lambda>' has returned an incorrect number of values "
                       r"\(got 1, but expected 2\)"):
        y.sum().backward()
    y = x * 2
    y.grad_fn.register_prehook(lambda go: (retrograd.ones(2),))
    with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the size of value"):
        y.sum().backward()
    assert x.grad is None


def test_register_multi_grad_hook_any():
    from retrograd.autograd.graph import register_multi_grad_hook
    a = retrograd.tensor([1.0], requires_grad=True)
    b = retrograd.tensor([2.0], requires_grad=True)
    seen = []
    register_multi_grad_hook((a, b), lambda g: seen.append(g), mode="any")
    (a * b).sum().backward()
    assert len(seen) == 1


@needs_torch
def test_accumulate_grad_runs_as_soon_as_ready():
    """A leaf's gradient is accumulated (and its hooks run) before older nodes still pending."""
    def run(lib):
        log = []
        a = lib.tensor([1.0], requires_grad=True)
        b = lib.tensor([2.0], requires_grad=True)
        h = a * 3                      # older node, still pending while b is done
        out = (h * 2 + b * 5).sum()
        a.register_post_accumulate_grad_hook(lambda t: log.append("a"))
        b.register_post_accumulate_grad_hook(lambda t: log.append("b"))
        h.grad_fn.register_prehook(lambda g: log.append("h"))
        out.backward()
        return log
    assert run(retrograd) == run(torch)


@needs_torch
def test_register_multi_grad_hook_matches_torch():
    def run(lib):
        reg = lib.autograd.graph.register_multi_grad_hook
        a, b, c = (lib.tensor([v], requires_grad=True) for v in (1.0, 2.0, 3.0))
        seen, seen_any = [], []
        h = reg((a, b, c), lambda gs: seen.append([_vals(g) for g in gs]))
        (a * b).sum().backward()
        (a * c * b).sum().backward()
        (c * 2).sum().backward()
        h2 = reg((a, b), lambda g: seen_any.append(_vals(g)), mode="any")
        (a * b).sum().backward()
        h.remove()
        h2.remove()
        (a * b).sum().backward()
        return seen, seen_any
    assert run(retrograd) == run(torch)
