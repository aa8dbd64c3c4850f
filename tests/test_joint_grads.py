"""Gradients one PyTorch backward function computes together (layer_norm, batch_norm,
convolution): recorded with create_graph, each requires grad when any of that function's
inputs does, bias gradients included (found by the differential fuzzer: layer_norm then an
in-place sign_, whose zero upstream gradient requires no grad)."""
import numpy as np
import pytest

import retrograd
from helpers import needs_torch, torch


def _cases(lib):
    lib.manual_seed(0)
    x = lib.from_numpy(np.random.default_rng(0).standard_normal((4, 3, 5, 5)).astype(np.float32)).requires_grad_()
    p = [lib.ones(n, requires_grad=True) for n in (5, 5, 3, 3, 3, 3, 2)]
    cw = lib.full((2, 3, 3, 3), 0.1, requires_grad=True)
    F = lib.nn.functional
    return {
        "layer_norm": (lambda: F.layer_norm(x, (5,), p[0], p[1]), [x, p[0], p[1]]),
        "batch_norm": (lambda: F.batch_norm(x, None, None, p[2], p[3], training=True), [x, p[2], p[3]]),
        "group_norm": (lambda: F.group_norm(x, 3, p[4], p[5]), [x, p[4], p[5]]),
        "conv2d": (lambda: F.conv2d(x, cw, p[6]), [x, cw, p[6]]),
    }


def _flags(lib, name, upstream):
    fn, leaves = _cases(lib)[name]
    y = fn()
    u = lib.ones_like(y) if upstream == "ones" else lib.zeros_like(y)
    gs = lib.autograd.grad(y, leaves, u, create_graph=True, allow_unused=True)
    out = []
    for g in gs:
        second = None
        if g.requires_grad:
            second = [None if t is None else float(t.abs().sum())
                      for t in lib.autograd.grad(g.sum(), leaves[:2], allow_unused=True, retain_graph=True)]
        out.append((g.requires_grad, g.grad_fn.name() if g.grad_fn is not None else None, second))
    return out, [g.detach().numpy() for g in gs]


@needs_torch
@pytest.mark.parametrize("name", ["layer_norm", "batch_norm", "group_norm", "conv2d"])
@pytest.mark.parametrize("upstream", ["ones", "zeros"])
def test_flags_and_nodes_as_torch(name, upstream):
    got, gv = _flags(retrograd, name, upstream)
    want, tv = _flags(torch, name, upstream)
    assert [g[0] for g in got] == [w[0] for w in want]
    assert got[2][1] == want[2][1]      # (the bias gradient's node; the others' differ by design)
    for g, w in zip(got, want):
        if w[2] is not None:
            assert [a is None for a in g[2]] == [b is None for b in w[2]]
    for a, b in zip(gv, tv):      # (layer_norm's input gradient under ones cancels to ~1e-5)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_bias_gradient_joins_the_graph_without_changing_values():
    fn, leaves = _cases(retrograd)["layer_norm"]
    y = fn()
    gx, gw, gb = retrograd.autograd.grad(y.sum(), leaves, create_graph=True)
    assert gb.requires_grad and gb.grad_fn.name() == "NativeLayerNormBackwardBackward0"
    np.testing.assert_array_equal(gb.detach().numpy(), np.full(5, 4 * 3 * 5, np.float32))
    # its derivative reaches none of the inputs: the bias gradient does not depend on them
    assert retrograd.autograd.grad(gb.sum(), leaves[:2], allow_unused=True) == (None, None)
    # without create_graph nothing is recorded
    y = fn()
    gb = retrograd.autograd.grad(y.sum(), leaves)[2]
    assert not gb.requires_grad and gb.grad_fn is None
