"""Which not-implemented derivative raises first when a graph holds several, against PyTorch 2.13
(skipped without torch): the NotImplemented nodes of ops without a derivative (remainder with a
Scalar self, heaviside, histc...) carry PyTorch's largest sequence number, so the engine runs
them as soon as they are ready, before the formula nodes (SpecialZetaBackward0's
not_implemented('zeta')) whatever the order the graph was built in."""
import numpy as np
import pytest

import retrograd
from helpers import torch, needs_torch


def _first_error(lib, order):
    x = lib.tensor([0.5, 1.2], requires_grad=True)
    a = lib.tensor([2.0, 3.0], requires_grad=True)
    q = lib.tensor([1.5, 2.5], requires_grad=True)
    w = lib.tensor([0.0, 1.0], requires_grad=True)
    made = {}
    for name in order:
        if name == "rmod":
            made[name] = (x * 2).__rmod__(1.5)
        elif name == "zeta":
            made[name] = lib.special.zeta(a, q)
        elif name == "heaviside":
            made[name] = lib.heaviside(w * 1, lib.tensor([0.5, 0.5]))
    outs = [made[k] for k in order]
    try:
        lib.autograd.grad(outs, [x, a, q, w], [lib.ones(2)] * len(outs), allow_unused=True)
    except Exception as e:
        return type(e).__name__, str(e)
    return None


@needs_torch
@pytest.mark.parametrize("order", [("rmod", "zeta"), ("zeta", "rmod"), ("zeta", "heaviside"),
                                   ("heaviside", "zeta"), ("zeta",)])
def test_not_implemented_error_order(order):
    want = _first_error(torch, order)
    got = _first_error(retrograd, order)
    assert want is not None and got == want


def test_not_implemented_node_sequence_number():
    # no torch needed: PyTorch reports UINT64_MAX for these nodes, and the zeta node errs only
    # once the NotImplemented node has had its turn
    x = retrograd.tensor([0.5, 1.2], requires_grad=True)
    r = x.__rmod__(1.5)
    z = retrograd.special.zeta(x * 1 + 1, retrograd.tensor([1.5, 2.5]))
    assert type(r.grad_fn).__name__ == "NotImplemented" and r.grad_fn._sequence_nr() == 2 ** 64 - 1
    assert z.grad_fn._sequence_nr() < 2 ** 63
    with pytest.raises(RuntimeError, match="derivative for aten::remainder is not implemented"):
        retrograd.autograd.grad([z, r], [x], [retrograd.ones(2)] * 2)
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented"):
        retrograd.autograd.grad([z], [x], [retrograd.ones(2)])
