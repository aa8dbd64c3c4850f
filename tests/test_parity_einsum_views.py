"""einsum's results as views, against PyTorch 2.13 (skipped without torch): a contraction of two
or more operands is folded into a bmm whose output the result is a view of (ViewBackward0 on top,
and in-place writes on it go through the view rules); products without a contraction
(MulBackward0) and single-operand einsums keep their own rules."""
import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck
from helpers import torch, needs_torch

CASES = [("ij,jk->ik", [(2, 3), (3, 4)]), ("i,i,i->", [(3,), (3,), (3,)]), ("ij,jk->ki", [(2, 3), (3, 4)]),
         ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]), ("ij,kj->ik", [(2, 3), (4, 3)]), ("ij,ij->", [(2, 3), (2, 3)]),
         ("ij,j->i", [(2, 3), (3,)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("i,j->ij", [(2,), (3,)]),
         ("ij,ij->ij", [(2, 3), (2, 3)]), ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]), ("ii,i->i", [(3, 3), (3,)])]


def _view(t):
    return t._base is not None


@needs_torch
@pytest.mark.parametrize("eq,shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum_view_and_node(eq, shapes):
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal(s) for s in shapes]
    got = {}
    for lib in (torch, retrograd):
        ts = [lib.tensor(a, requires_grad=True) for a in arrs]
        o = lib.einsum(eq, *[t * 1 for t in ts])   # (non-leaf operands: a single-operand einsum may view them)
        plain = lib.einsum(eq, *[lib.tensor(a) for a in arrs])
        # an in-place write on the result, then the gradient through it
        w = o * 1 if not _view(o) else o
        w.mul_(2)
        g = lib.autograd.grad(w.sum(), ts)
        got[lib] = (_view(o), type(o.grad_fn).__name__, _view(plain), type(w.grad_fn).__name__,
                    [x.numpy().round(12).tolist() for x in g])
    assert got[retrograd] == got[torch]


def test_einsum_contraction_gradcheck():
    rng = np.random.default_rng(1)
    a = retrograd.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    b = retrograd.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    assert retrograd.einsum("ij,jk->ki", a, b)._base is not None
    assert gradcheck(lambda x, y: retrograd.einsum("ij,jk->ki", x, y).mul(1).exp_(), (a, b))
