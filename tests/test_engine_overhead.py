"""The engine's fast paths give what the general paths give (and PyTorch gives): masked
gradients on large arrays, 0-d scalar chains, deep chains."""
import os
import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck
from helpers import torch, needs_torch


def _special_grad(shape, dtype, rng):
    g = rng.standard_normal(shape).astype(dtype)
    flat = g.reshape(-1)
    flat[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, np.nan]
    return g


@needs_torch
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("op", ["relu", "hardtanh", "where", "threshold"])
def test_large_masked_gradients_select_like_torch(op, dtype):
    # above the small-array cut-off the selection masks bits instead of branching
    rng = np.random.default_rng(3)
    shape = (37, 29)
    x = rng.standard_normal(shape).astype(dtype)
    x.reshape(-1)[:12] = [0.0, -0.0, 1.0, -1.0, np.nan, 2.0, 0.0, -0.0, -2.0, 0.5, np.inf, -np.inf]
    g = _special_grad(shape, dtype, rng)
    c = rng.random(shape) < 0.5
    grads = []
    for lib in (retrograd, torch):
        t = lib.tensor(x, requires_grad=True)
        if op == "relu":
            y = lib.relu(t)
        elif op == "hardtanh":
            y = lib.nn.functional.hardtanh(t)
        elif op == "threshold":
            y = lib.nn.functional.threshold(t, 0.25, -3.0)
        else:
            y = lib.where(lib.tensor(c), t, lib.zeros_like(t))
        y.backward(lib.tensor(g))
        grads.append(np.asarray(t.grad.detach().numpy()))
    r, e = grads
    assert r.dtype == e.dtype
    # bit for bit: NaN payloads and signed zeros as PyTorch selects them
    np.testing.assert_array_equal(np.isnan(r), np.isnan(e))
    np.testing.assert_array_equal(np.signbit(r[~np.isnan(r)]), np.signbit(e[~np.isnan(e)]))
    np.testing.assert_array_equal(r[~np.isnan(r)], e[~np.isnan(e)])


def test_large_masked_gradient_broadcast_mask_and_noncontiguous():
    from retrograd.ops._base import _select
    rng = np.random.default_rng(4)
    for dt in (np.float16, np.float32, np.float64, np.complex64, np.complex128):
        a = (rng.standard_normal((40, 60)) * 1e3).astype(dt)
        a[0, :5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
        for a_ in (a, a[:, ::2], a.T):
            for ms in (a_.shape, a_.shape[1:], (1,) + a_.shape[1:], a_.shape[:1] + (1,), (3,) + a_.shape):
                m = rng.random(ms) < 0.5
                want = np.where(m, a_, np.zeros((), dt))
                got = _select(m, a_)
                assert got.dtype == want.dtype and got.shape == want.shape
                assert got.tobytes() == want.tobytes()   # C order, every bit


def test_large_relu_gradcheck():
    rng = np.random.default_rng(5)
    x = retrograd.tensor(rng.uniform(0.1, 1.0, (20, 20)) * rng.choice([-1.0, 1.0], (20, 20)),
                         dtype=retrograd.float64, requires_grad=True)
    assert gradcheck(retrograd.relu, (x,))


def _edges(fn):
    return [(type(nf).__name__ if nf is not None else None, nr) for nf, nr in fn.next_functions]


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scalar_chain_matches_torch(dtype):
    def run(lib):
        x = lib.tensor(0.75, dtype=getattr(lib, dtype), requires_grad=True)
        y = x
        for i in range(50):
            y = y * 1.0001 + 0.1
            y = (y - 0.05) * -0.999 if i % 7 == 3 else y
        out = [y.item(), y.grad_fn.name(), _edges(y.grad_fn), _edges(y.grad_fn.next_functions[0][0])]
        y.backward()
        out.append(x.grad.item())
        return out
    assert run(retrograd) == run(torch)


@needs_torch
def test_one_live_edge_of_two_matches_torch():
    # only one operand requires grad: the node stores that edge alone, at its position
    def run(lib):
        a = lib.tensor([1.5, -2.0])
        x = lib.tensor([0.5, 3.0], requires_grad=True)
        out = []
        for f in (lambda: a * x, lambda: x * a, lambda: a + x, lambda: lib.add(a, x, alpha=2),
                  lambda: lib.sub(a, x, alpha=3), lambda: a - x, lambda: x / a, lambda: a / x,
                  lambda: 2.0 - x, lambda: 2.0 * x, lambda: lib.tensor(2.0) * x):
            y = f()
            seen = []
            y.grad_fn.register_hook(lambda gi, go: seen.append([g is None for g in gi]))
            g, = lib.autograd.grad(y.sum(), x)
            out.append((y.grad_fn.name(), _edges(y.grad_fn), g.tolist(), seen))
        return out
    assert run(retrograd) == run(torch)


def test_next_functions_round_trip():
    from retrograd.autograd.graph import Node
    x = retrograd.tensor(1.0, requires_grad=True)
    y = retrograd.tensor(2.0, requires_grad=True)
    a, b = (x * 2.0).grad_fn, (y * 3.0).grad_fn
    for edges in [(), ((a, 0),), ((None, 0),), ((None, 0), (a, 0)), ((a, 0), (None, 0), (None, 0)),
                  ((a, 0), (b, 0)), ((None, 0), (a, 0), (b, 1)), ((None, 0), (None, 0))]:
        n = Node(edges)
        assert n.next_functions == edges
        assert [n._input_needs_grad(i) for i in range(len(edges))] == [e[0] is not None for e in edges]
    n = Node(((None, 0), (a, 0)))
    n.next_functions = ((b, 0),)          # re-wired: the earlier position is forgotten
    assert n.next_functions == ((b, 0),)


def test_scalar_chain_graph_is_one_gc_object_per_op():
    # the cyclic GC rescans a growing graph: each recorded op is one tracked object. Measured
    # in a fresh process: CPython's key-sharing instance dicts (which keep a node's attributes
    # off the GC's books) depend on which attributes earlier nodes of the class were given,
    # so a long test session's history would change the count, not retrograd.
    import subprocess
    import sys
    code = """
import gc, retrograd
x = retrograd.tensor(1.0, requires_grad=True)
y = x
gc.collect()
before = len(gc.get_objects())
for _ in range(2000):
    y = y * 1.0001 + 0.1
gc.collect()
print((len(gc.get_objects()) - before) / 4000)
y.backward()
assert x.grad is not None
"""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "src")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(src) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    per_op = float(r.stdout.strip())
    assert per_op < 1.05, per_op


def test_scalar_chain_under_views_and_no_grad():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    with retrograd.no_grad():
        v = x[0]                  # a view made under no_grad: requires grad through its base
    y = v * 2.0 + 1.0
    assert y.requires_grad
    with retrograd.no_grad():
        z = x[1] * 2.0
    assert not z.requires_grad and z.grad_fn is None
    w = x[1] * 3.0 - 1.0
    w.backward()
    assert x.grad.tolist() == [0.0, 3.0]
    with retrograd.inference_mode():
        q = retrograd.tensor(1.0) * 2.0
    assert q.is_inference()


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_zero_dim_pairs_match_torch(dtype):
    vals = [0.1, -0.0, 0.0, 3.0e38, -3.0e38, 1e-40, float("inf"), float("-inf"), float("nan"), 1.0 / 3]

    def run(lib):
        dt = getattr(lib, dtype)
        out = []
        for a in vals:
            for b in vals:
                x = lib.tensor(a, dtype=dt, requires_grad=True)
                y = lib.tensor(b, dtype=dt)
                for r in (x + y, x - y, x * y, y * x, y - x):
                    out.append((np.asarray(r.detach().numpy()).tobytes(), r.grad_fn.name(), _edges(r.grad_fn)))
        return out
    assert run(retrograd) == run(torch)


def test_quiet_keeps_the_callers_error_state():
    import warnings
    from retrograd.ops._base import quiet
    old = np.seterr(over="raise")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert quiet(np.exp, np.array(1000.0)) == np.inf
            assert retrograd.exp(retrograd.tensor(1000.0)).item() == float("inf")
        with pytest.raises(FloatingPointError):
            np.exp(np.array(1000.0))
    finally:
        np.seterr(**old)
    with np.errstate(over="warn"):
        with pytest.warns(RuntimeWarning):
            np.exp(np.array(1000.0))
