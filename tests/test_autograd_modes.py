"""Grad modes (no_grad, enable_grad, set_grad_enabled, inference_mode) and saved-tensor
hooks, against PyTorch."""
import threading

import numpy as np
import pytest

import retrograd
from helpers import torch


def _vals(x):
    return None if x is None else np.round(np.asarray(x.detach().numpy(), dtype=float), 6).tolist()


def _try(f):
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__, str(e))


def inference_log(lib):
    log = []
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    with lib.inference_mode():
        it = lib.ones(2)
        y = a * 2
        log.append(("inside", lib.is_inference_mode_enabled(), lib.is_grad_enabled(), it.is_inference(),
                    y.is_inference(), y.requires_grad, y.grad_fn is None, it.exp().is_inference()))
        it.add_(1)
        with lib.inference_mode(False):
            q = a * 2
            log.append(("nested", q.requires_grad, q.is_inference(), lib.is_grad_enabled()))
    log.append(("outside", lib.is_inference_mode_enabled(), lib.is_grad_enabled()))
    log.append(("save", _try(lambda: (a * it).sum().backward())))
    log.append(("no save", _try(lambda: (a + it).sum().requires_grad)))
    log.append(("in place", _try(lambda: it.add_(1))))
    log.append(("requires_grad_", _try(lambda: it.requires_grad_())))
    log.append(("clone", it.clone().is_inference(), it.detach().is_inference()))
    log.append(_vals(it))
    with lib.no_grad():
        n = lib.ones(2)
    log.append(("no_grad tensor", n.is_inference()))

    @lib.inference_mode()
    def f(x):
        return x * 2

    @lib.inference_mode
    def g(x):
        return x * 2
    log.append(("decorators", f(a).requires_grad, f(a).is_inference(), g(a).requires_grad, g(a).is_inference()))
    return log


def test_inference_mode():
    log = inference_log(retrograd)
    assert log[3][1][0] == "RuntimeError" and log[3][1][1].startswith("Inference tensors cannot be saved for "
                                                                         "backward.")
    # The refused in-place update left the tensor as it was (PyTorch writes before refusing).
    assert log[8] == [2.0, 2.0]
    if torch is not None:
        t = inference_log(torch)
        assert log[:8] + log[9:] == t[:8] + t[9:]


def grad_mode_log(lib):
    log = []
    a = lib.tensor([1.0], requires_grad=True)

    @lib.no_grad()
    def h(x):
        return x * 2
    log.append(h(a).requires_grad)
    with lib.set_grad_enabled(False):
        log.append(lib.is_grad_enabled())
    log.append(lib.is_grad_enabled())
    lib.set_grad_enabled(False)
    log.append(lib.is_grad_enabled())
    lib.set_grad_enabled(True)
    with lib.no_grad():
        with lib.enable_grad():
            log.append((a * 2).requires_grad)
        log.append((a * 2).requires_grad)
    try:
        with lib.no_grad():
            raise ValueError
    except ValueError:
        pass
    log.append(lib.is_grad_enabled())

    @lib.no_grad()
    def gen():
        yield lib.is_grad_enabled()
        yield lib.is_grad_enabled()
    log.append(list(gen()))
    return log


def test_grad_modes():
    log = grad_mode_log(retrograd)
    assert log == [False, False, True, False, True, False, True, [False, False]]
    if torch is not None:
        assert log == grad_mode_log(torch)


def test_grad_mode_is_thread_local():
    seen = []

    def worker():
        seen.append(retrograd.is_grad_enabled())
    with retrograd.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not retrograd.is_grad_enabled()
    assert seen == [True]


def saved_hooks_log(lib):
    log = []

    def pack(t):
        log.append(("pack", tuple(t.shape)))
        return t.detach() * 1        # a copy, e.g. offloaded or compressed

    def unpack(p):
        log.append(("unpack", tuple(p.shape)))
        return p
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x * w).exp()
        z = y.sum()
    log.append("backward")
    z.backward()
    log.append(("grads", _vals(x.grad), _vals(w.grad)))
    # double backward through hooks keeps the saved tensors' autograd identity
    x.grad = None
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p):
        y = (x * x * x).sum()
    (g,) = lib.autograd.grad(y, x, create_graph=True)
    (gg,) = lib.autograd.grad(g.sum(), x)
    log.append(("double", _vals(g), _vals(gg)))
    return log


def test_saved_tensors_hooks():
    log = saved_hooks_log(retrograd)
    assert log[:3] == [("pack", (3,)), ("pack", (3,)), ("pack", (3,))]
    if torch is not None:
        assert log == saved_hooks_log(torch)


def test_saved_tensors_hooks_nesting_and_disable():
    from retrograd.autograd.graph import saved_tensors_hooks, disable_saved_tensors_hooks
    seen = []
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: seen.append("outer") or t, lambda p: p):
        with saved_tensors_hooks(lambda t: seen.append("inner") or t, lambda p: p):
            y = x * x
        z = y * x
    (z.sum()).backward()
    assert seen == ["inner", "inner", "outer", "outer"]
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.array([1.0, 2.0]) ** 2)
    with disable_saved_tensors_hooks("hooks are off here"):
        with pytest.raises(RuntimeError, match="hooks are off here"):
            with saved_tensors_hooks(lambda t: t, lambda p: p):
                pass


def test_unpack_hook_must_return_tensor():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    with retrograd.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: 3):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="Output of saved tensor unpack_hook expected to be a Tensor"):
        y.backward()


def test_saved_tensors_hooks_are_thread_local():
    packed = []
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    ys = {}

    def worker():
        ys["other"] = x * x          # another thread: no hooks apply
    with retrograd.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda p: p):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        y = x * x
    assert packed == [1, 1]          # mul saved both operands, in this thread only
    (y.sum() + ys["other"].sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])
