"""SGD's NumPy kernels without the gathering pass: a bundle's momentum update that reads each
gradient where it lies, and the per-parameter loop that reads (not copies) a gradient it
does not change. Both must give the gathered path's and PyTorch's numbers to the bit and
must never change a parameter's ``.grad``."""
import numpy as np
import pytest

import retrograd
import retrograd.optim as optim
from retrograd.optim import _accel, sgd as sgd_mod
from helpers import needs_torch, torch

SHAPES = [(64, 40), (300,), (2, 3, 5), (), (7, 1)]

OPTIONS = [
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3),
    dict(lr=0.05, momentum=0.9, weight_decay=0.1),
    dict(lr=0.05, momentum=0.9, maximize=True),
    dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1, maximize=True),
    dict(lr=0.05, momentum=0.9, dampening=0.3, maximize=True),
    dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1),
    dict(lr=0.05, weight_decay=0.1),
    dict(lr=0.05, maximize=True),
]


def _ids(kw):
    return ",".join(f"{k}={v}" for k, v in kw.items())


@pytest.fixture
def numpy_kernels(monkeypatch):
    monkeypatch.setattr(_accel, "_KERNELS", [None])


@pytest.fixture
def direct_calls(monkeypatch):
    """Every bundle goes the direct way (whatever its sizes); counts the direct updates."""
    calls = []
    orig = sgd_mod._momentum_direct
    monkeypatch.setattr(sgd_mod, "DIRECT_MIN_AVG", 0)
    monkeypatch.setattr(sgd_mod, "_momentum_direct", lambda *a: calls.append(1) or orig(*a))
    return calls


def _arrays(dtype, seed=0):
    r = np.random.default_rng(seed)
    return [r.standard_normal(s).astype(dtype) for s in SHAPES]


def _grads(dtype, step):
    r = np.random.default_rng(100 + step)
    return [r.standard_normal(s).astype(dtype) for s in SHAPES]


def _run(lib, dtype, kw, steps=6, **extra):
    params = [lib.tensor(a.copy(), requires_grad=True) for a in _arrays(dtype)]
    opt = lib.optim.SGD(params, **kw, **extra)
    kept = []
    for i in range(steps):
        for p, g in zip(params, _grads(dtype, i)):
            p.grad = lib.tensor(g.copy())
        before = [p.grad.detach().numpy().copy() for p in params]
        opt.step()
        kept.append([np.array_equal(b, p.grad.detach().numpy()) for b, p in zip(before, params)])
    return [p.detach().numpy().copy() for p in params], kept


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", OPTIONS, ids=_ids)
def test_direct_momentum_equals_the_gathered_and_per_parameter_paths(kw, dtype, numpy_kernels, direct_calls):
    direct, kept = _run(retrograd, dtype, kw)
    assert all(all(k) for k in kept)   # no .grad was changed
    ran_direct = len(direct_calls)
    loop, kept = _run(retrograd, dtype, kw, foreach=False)
    assert all(all(k) for k in kept)
    for a, b in zip(direct, loop):
        np.testing.assert_array_equal(a, b)
    # the direct update ran wherever there is momentum and no Nesterov step
    assert (ran_direct > 0) == (kw.get("momentum", 0) != 0 and not kw.get("nesterov"))


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", OPTIONS, ids=_ids)
def test_direct_and_per_parameter_paths_equal_torch(kw, dtype, numpy_kernels, direct_calls):
    ref, _ = _run(torch, dtype, kw, foreach=False)
    for extra in ({}, {"foreach": False}):
        mine, _ = _run(retrograd, dtype, kw, **extra)
        for a, b in zip(mine, ref):
            np.testing.assert_array_equal(a, b)


def test_large_parameters_take_the_direct_path(numpy_kernels, monkeypatch):
    calls = []
    orig = sgd_mod._momentum_direct
    monkeypatch.setattr(sgd_mod, "_momentum_direct", lambda *a: calls.append(1) or orig(*a))
    r = np.random.default_rng(0)
    big = [retrograd.tensor(r.standard_normal((128, 64)).astype(np.float32), requires_grad=True) for _ in range(3)]
    opt = optim.SGD(big, lr=0.1, momentum=0.9)
    for _ in range(3):
        for p in big:
            p.grad = retrograd.tensor(r.standard_normal((128, 64)).astype(np.float32))
        opt.step()
    assert len(calls) == 2   # (the first step makes the buffers)
    # the state tensors are still the bundle's views
    bufs = [opt.state[p]["momentum_buffer"]._data for p in big]
    assert all(b.base is bufs[0].base for b in bufs)
