"""Optimizer steps on float16/bfloat16 parameters, bit for bit with PyTorch's single-tensor
(foreach=False) CPU implementation: its float32 "opmath" arithmetic, rounded to the 16-bit
type at the end of each of its kernel calls (and its scalar loop's roundings past the last
full block of 32 elements, which the odd sizes below exercise)."""
import numpy as np
import pytest

import retrograd
from helpers import needs_torch, torch

SHAPES = [(5, 13), (40,), (7,), (3, 32), ()]

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.1, maximize=True, weight_decay=0.03)),
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=3e-3, maximize=True, eps=1e-3, weight_decay=0.02)),
    ("Adam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True, amsgrad=True)),
    ("AdamW", dict(lr=1e-2)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.05, amsgrad=True, maximize=True)),
    ("RMSprop", dict(lr=1e-2)),
    ("RMSprop", dict(lr=1e-2, momentum=0.9, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=1e-2, maximize=True, alpha=0.9, momentum=0.5)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1, maximize=True)),
    ("Adamax", dict(lr=1e-2)),
    ("Adamax", dict(lr=1e-2, weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=1e-2)),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=1e-2)),
    ("RAdam", dict(lr=1e-2, weight_decay=0.1, maximize=True)),
    ("RAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True)),
    ("Adadelta", dict(lr=1.0)),
    ("Adadelta", dict(lr=0.5, weight_decay=0.1, maximize=True)),
    ("ASGD", dict(lr=1e-2)),
    ("ASGD", dict(lr=1e-2, weight_decay=0.1, t0=2, maximize=True)),
    ("Rprop", dict(lr=1e-2)),
    ("Rprop", dict(lr=1e-2, maximize=True)),
    ("Adafactor", dict(lr=1e-2)),
    ("Adafactor", dict(lr=1e-2, weight_decay=0.1, maximize=True)),
]


def _ids(case):
    name, kw = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in kw.items())


def _run(lib, name, kw, dtn, w0s, grads):
    dt = getattr(lib, dtn)
    ps = [lib.tensor(w).to(dt).requires_grad_() for w in w0s]
    kw = dict(kw)
    if name != "Adafactor":
        kw["foreach"] = False
    opt = getattr(lib.optim, name)(ps, **kw)
    for gs in grads:
        for p, g in zip(ps, gs):
            p.grad = lib.tensor(g).to(dt)
        opt.step()
    out = [p.detach().float().numpy() for p in ps]
    for p in ps:        # state stays in the parameter's dtype, as PyTorch keeps it
        for k, v in opt.state[p].items():
            if k not in ("step", "eta", "mu", "mu_product") and hasattr(v, "dtype"):
                assert v.dtype == dt, (k, v.dtype)
    return out


@needs_torch
@pytest.mark.parametrize("dtn", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_16_bit_steps_match_torch_bit_for_bit(case, dtn):
    if dtn == "bfloat16":
        pytest.importorskip("ml_dtypes")
    name, kw = case
    rng = np.random.default_rng(0)
    w0s = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(6)]
    if name == "Adafactor":
        w0s, grads = w0s[:4], [g[:4] for g in grads]
    ours = _run(retrograd, name, kw, dtn, w0s, grads)
    theirs = _run(torch, name, kw, dtn, w0s, grads)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)     # NaN == NaN (float16 rounds eps=1e-8 to 0)


@pytest.mark.parametrize("dtn", ["float16", "bfloat16"])
def test_16_bit_add_alpha_rounds_the_scalar_tail_twice(dtn):
    # the part of PyTorch's kernel that NumPy has no name for, checked on values chosen so
    # that one and two roundings differ: 0.2157 + 0.7417 * 0.1234 in float16
    from retrograd.optim.optimizer import fma_scalar
    if dtn == "bfloat16":
        pytest.importorskip("ml_dtypes")
    npdt = np.float16 if dtn == "float16" else __import__("ml_dtypes").bfloat16
    x = np.full(33, -0.7417, np.float32).astype(npdt)
    y = np.full(33, -0.2157, np.float32).astype(npdt)
    r = fma_scalar(x, 0.1234567, y).astype(np.float32)
    a = np.float32(npdt(0.1234567))
    once = np.float32((y.astype(np.float32) + x.astype(np.float32) * a).astype(npdt)[0])
    twice = np.float32((y.astype(np.float32) + (x.astype(np.float32) * a).astype(npdt).astype(np.float32))
                       .astype(npdt)[0])
    assert once != twice
    assert (r[:32] == once).all() and r[32] == twice


def test_fused_accepts_16_bit_parameters():
    # PyTorch's fused CPU kernels take float16/bfloat16 parameters; retrograd runs its
    # foreach=False arithmetic for them (PyTorch's fused kernel keeps every intermediate in
    # float32 and so differs from its own foreach=False path in the last bits)
    pytest.importorskip("ml_dtypes")
    for dt in (retrograd.float16, retrograd.bfloat16):
        p = retrograd.ones(4, dtype=dt, requires_grad=True)
        p.grad = retrograd.full((4,), 0.5, dtype=dt)
        retrograd.optim.Adam([p], lr=0.1, fused=True).step()
        assert p.dtype is dt and (p.detach().float() < 1).all()
