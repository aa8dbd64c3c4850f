"""Optimizers against PyTorch: the same parameters and gradients, step for step.

Every update is compared after each of 25 steps. SGD, Adamax, Rprop and ASGD must agree
to the bit (PyTorch's fused multiply-adds are reproduced). The optimizers that take a square
root are compared with rtol 1e-6 and atol 1e-6 (a few float32 ulps at 1): PyTorch's CPU sqrt
(MKL's vsSqrt) is not correctly rounded while NumPy's is, so its result differs in the last
bit now and then, and RMSprop's momentum carries those bits along. With PyTorch's sqrt put
in their place, those optimizers too must agree to the bit (test_bit_for_bit_with_torchs_sqrt).
Adafactor is compared with the same tolerance: its norms are sums, rounded by addition order.
"""
import copy
import itertools

import numpy as np
import pytest

import retrograd
import retrograd.optim as optim
from helpers import needs_torch, torch

SHAPES = [(3, 4), (50,), (2, 3, 5), ()]
STEPS = 25


def _combos(**options):
    keys = list(options)
    return [dict(zip(keys, values)) for values in itertools.product(*(options[k] for k in keys))]


def _sgd_cases():
    out = []
    for kw in _combos(momentum=[0, 0.9], dampening=[0, 0.3], nesterov=[False, True],
                      weight_decay=[0, 0.1], maximize=[False, True]):
        if kw["nesterov"] and (kw["momentum"] == 0 or kw["dampening"] != 0):
            continue
        out.append(("SGD", dict(lr=0.05, **kw)))
    return out


CASES = (
    _sgd_cases()
    + [("Adam", dict(lr=0.01, **kw)) for kw in _combos(amsgrad=[False, True], weight_decay=[0, 0.1],
                                                         maximize=[False, True])]
    + [("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, decoupled_weight_decay=True))]
    + [("AdamW", dict(lr=0.01, **kw)) for kw in _combos(amsgrad=[False, True], weight_decay=[0, 0.1],
                                                          maximize=[False, True])]
    + [("AdamW", dict())]
    + [("Adagrad", dict(lr=0.1, **kw)) for kw in _combos(lr_decay=[0, 0.05], initial_accumulator_value=[0, 0.5],
                                                           weight_decay=[0, 0.1], maximize=[False, True])]
    + [("RMSprop", dict(lr=0.01, **kw)) for kw in _combos(centered=[False, True], momentum=[0, 0.7],
                                                            weight_decay=[0, 0.1], maximize=[False, True])]
    + [("RMSprop", dict(lr=0.001, alpha=0.9, eps=1e-6))]
    + [("Adamax", dict(lr=0.01, **kw)) for kw in _combos(weight_decay=[0, 0.1], maximize=[False, True])]
    + [("Adamax", dict(betas=(0.5, 0.9)))]
    + [("NAdam", dict(lr=0.01, **kw)) for kw in _combos(weight_decay=[0, 0.1], decoupled_weight_decay=[False, True],
                                                          momentum_decay=[4e-3, 0.05], maximize=[False, True])]
    + [("RAdam", dict(lr=0.01, **kw)) for kw in _combos(weight_decay=[0, 0.1], decoupled_weight_decay=[False, True],
                                                          maximize=[False, True])]
    + [("RAdam", dict(betas=(0.5, 0.9)))]
    + [("Adadelta", dict(**kw)) for kw in _combos(weight_decay=[0, 0.1], maximize=[False, True])]
    + [("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5))]
    + [("Rprop", dict(maximize=m)) for m in (False, True)]
    + [("Rprop", dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2)))]
    + [("ASGD", dict(lr=0.05, **kw)) for kw in _combos(t0=[1e6, 5], weight_decay=[0, 0.1], maximize=[False, True])]
    + [("ASGD", dict(lambd=0.01, alpha=0.5, t0=3))]
    + [("Adafactor", dict(**kw)) for kw in _combos(weight_decay=[0, 0.1], maximize=[False, True])]
    + [("Adafactor", dict(lr=0.05, eps=(1e-20, 1e-3), d=2.0, beta2_decay=-0.5))]
)


def _ids(case):
    name, kw = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in kw.items())


def _pair(rng, dtype=np.float32, shapes=SHAPES):
    init = [rng.standard_normal(s).astype(dtype) for s in shapes]
    ours = [retrograd.tensor(a.copy(), requires_grad=True) for a in init]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in init]
    return ours, theirs


def _set_grads(rng, ours, theirs, skip=None):
    for i, (r, t) in enumerate(zip(ours, theirs)):
        if skip is not None and i == skip:
            r.grad = None
            t.grad = None
            continue
        g = rng.standard_normal(r.shape).astype(r.detach().numpy().dtype)
        r.grad = retrograd.tensor(g.copy())
        t.grad = torch.tensor(g.copy())


EXACT = ("SGD", "Adamax", "Rprop", "ASGD")


def _close(ours, theirs, rtol=1e-6, atol=1e-6, exact=False):
    for r, t in zip(ours, theirs):
        if exact:
            np.testing.assert_array_equal(r.detach().numpy(), t.detach().numpy())
        else:
            np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


def _state_close(o_ours, o_theirs, ours, theirs, rtol=1e-6, atol=1e-6):
    for r, t in zip(ours, theirs):
        s_r, s_t = o_ours.state[r], o_theirs.state[t]
        assert sorted(s_r) == sorted(s_t)
        for k in s_t:
            a, b = s_r[k], s_t[k]
            assert isinstance(a, retrograd.Tensor)
            assert a.dtype.name == str(b.dtype).split(".")[1], k
            assert a.shape == tuple(b.shape), k
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol, atol=atol, err_msg=k)


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_step_by_step_matches_torch(case):
    name, kw = case
    rng = np.random.default_rng(1)
    ours, theirs = _pair(rng)
    o_ours = getattr(optim, name)(ours, **kw)
    o_theirs = getattr(torch.optim, name)(theirs, **kw)
    for i in range(STEPS):
        # Every fifth step one parameter has no gradient and must be left alone.
        _set_grads(rng, ours, theirs, skip=1 if i % 5 == 4 else None)
        o_ours.step()
        o_theirs.step()
        _close(ours, theirs, exact=name in EXACT)
    _state_close(o_ours, o_theirs, ours, theirs)
    assert o_ours.param_groups[0].keys() == o_theirs.param_groups[0].keys()
    for k, v in o_theirs.param_groups[0].items():
        if k != "params":
            assert o_ours.param_groups[0][k] == v, k


SQRT_USERS = ("adam", "adagrad", "rmsprop", "nadam", "radam", "adadelta")


def _torch_sqrt(a):
    return torch.from_numpy(np.array(a, copy=True)).sqrt().numpy()


@needs_torch
@pytest.mark.parametrize("case", [c for c in CASES if c[0] not in EXACT + ("Adafactor",)], ids=_ids)
def test_bit_for_bit_with_torchs_sqrt(case, monkeypatch):
    # With PyTorch's own square root put in, every other operation must round as PyTorch's does.
    import importlib
    for mod in SQRT_USERS:
        monkeypatch.setattr(importlib.import_module("retrograd.optim." + mod), "_sqrt", _torch_sqrt)
    name, kw = case
    rng = np.random.default_rng(11)
    ours, theirs = _pair(rng)
    o_ours = getattr(optim, name)(ours, **kw)
    o_theirs = getattr(torch.optim, name)(theirs, **kw)
    for i in range(STEPS):
        _set_grads(rng, ours, theirs, skip=0 if i % 7 == 6 else None)
        o_ours.step()
        o_theirs.step()
        _close(ours, theirs, exact=True)
    _state_close(o_ours, o_theirs, ours, theirs, rtol=0, atol=0)


@needs_torch
@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
                                     ("Adam", dict(lr=0.01, amsgrad=True)), ("AdamW", dict(lr=0.01)),
                                     ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
                                     ("RMSprop", dict(centered=True, momentum=0.5)),
                                     ("Adamax", dict()), ("NAdam", dict(weight_decay=0.1)), ("RAdam", dict()),
                                     ("Adadelta", dict(weight_decay=0.1))])
def test_float64_matches_torch(name, kw):
    rng = np.random.default_rng(2)
    ours, theirs = _pair(rng, np.float64)
    o_ours = getattr(optim, name)(ours, **kw)
    o_theirs = getattr(torch.optim, name)(theirs, **kw)
    for _ in range(STEPS):
        _set_grads(rng, ours, theirs)
        o_ours.step()
        o_theirs.step()
        _close(ours, theirs, rtol=1e-12, atol=1e-14)
    _state_close(o_ours, o_theirs, ours, theirs, rtol=1e-12, atol=1e-14)


@needs_torch
@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
                                     ("SGD", dict(lr=0.1, maximize=True)),
                                     ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)), ("AdamW", dict(lr=0.01)),
                                     ("Adagrad", dict(initial_accumulator_value=0.3, weight_decay=0.1)),
                                     ("RMSprop", dict(centered=True, momentum=0.5)), ("Adamax", dict(maximize=True)),
                                     ("NAdam", dict()), ("RAdam", dict()), ("Adadelta", dict()), ("Rprop", dict()),
                                     ("ASGD", dict(t0=3))])
def test_complex_parameters_match_torch(name, kw):
    # PyTorch updates complex parameters as pairs of reals (view_as_real), except SGD.
    rng = np.random.default_rng(12)
    shapes = [(3, 4), ()]
    init = [(rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(np.complex64) for s in shapes]
    ours = [retrograd.tensor(a.copy(), requires_grad=True) for a in init]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in init]
    o_ours = getattr(optim, name)(ours, **kw)
    o_theirs = getattr(torch.optim, name)(theirs, **kw)
    for _ in range(20):
        for r, t in zip(ours, theirs):
            g = (rng.standard_normal(r.shape) + 1j * rng.standard_normal(r.shape)).astype(np.complex64)
            r.grad = retrograd.tensor(g.copy())
            t.grad = torch.tensor(g.copy())
        o_ours.step()
        o_theirs.step()
        _close(ours, theirs, exact=name in EXACT)
    for r, t in zip(ours, theirs):
        for k, v in o_theirs.state[t].items():
            assert o_ours.state[r][k].dtype.name == str(v.dtype).split(".")[1] and o_ours.state[r][k].shape == v.shape


@needs_torch
@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.01)),
                                     ("RMSprop", dict(lr=0.01, momentum=0.3)), ("Adagrad", dict())])
def test_param_groups_with_own_options(name, kw):
    rng = np.random.default_rng(3)
    ours, theirs = _pair(rng)
    o_ours = getattr(optim, name)([{"params": ours[:2]}, {"params": ours[2:], "lr": 0.003, "weight_decay": 0.2}], **kw)
    o_theirs = getattr(torch.optim, name)([{"params": theirs[:2]}, {"params": theirs[2:], "lr": 0.003,
                                                                     "weight_decay": 0.2}], **kw)
    for _ in range(20):
        _set_grads(rng, ours, theirs)
        o_ours.step()
        o_theirs.step()
        _close(ours, theirs)
    assert o_ours.param_groups[1]["lr"] == 0.003


@needs_torch
def test_changing_lr_between_steps_takes_effect():
    rng = np.random.default_rng(4)
    ours, theirs = _pair(rng)
    o_ours, o_theirs = optim.Adam(ours, lr=0.01), torch.optim.Adam(theirs, lr=0.01)
    for i in range(20):
        for o in (o_ours, o_theirs):
            o.param_groups[0]["lr"] = 0.01 / (1 + i)
            o.param_groups[0]["betas"] = (0.9 - 0.01 * i, 0.999)
        _set_grads(rng, ours, theirs)
        o_ours.step()
        o_theirs.step()
        _close(ours, theirs)


def test_custom_optimizer_subclass():
    class MySGD(optim.Optimizer):
        def __init__(self, params, lr=0.01):
            super().__init__(params, dict(lr=lr))

        @retrograd.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-group["lr"])
                        self.state[p]["n"] = self.state[p].get("n", 0) + 1

    w = retrograd.ones(3, requires_grad=True)
    opt = MySGD([w], lr=0.5)
    calls = []
    opt.register_step_post_hook(lambda *a: calls.append(1))
    (w * w).sum().backward()
    opt.step()
    assert w.tolist() == [0.0, 0.0, 0.0] and calls == [1]
    assert opt.state_dict() == {"state": {0: {"n": 1}}, "param_groups": [{"lr": 0.5, "params": [0]}]}


def test_step_is_in_place_and_bumps_version():
    p = retrograd.randn(3, 4, requires_grad=True)
    data = p._data
    v = p._version_value
    p.grad = retrograd.ones(3, 4)
    opt = optim.SGD([p], lr=0.5)
    opt.step()
    assert p._data is data
    assert p._version_value == v + 1
    assert p.is_leaf and p.requires_grad and p.grad_fn is None


def test_sgd_values_by_hand():
    p = retrograd.tensor([1.0, -2.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.1, momentum=0.5)
    for _ in range(2):
        p.grad = retrograd.tensor([1.0, 1.0])
        opt.step()
    # v1 = g, p1 = p0 - 0.1; v2 = 0.5 * g + g = 1.5, p2 = p1 - 0.15
    np.testing.assert_allclose(p.detach().numpy(), [0.75, -2.25], rtol=1e-6)
    np.testing.assert_allclose(opt.state[p]["momentum_buffer"].numpy(), [1.5, 1.5])


def test_state_keys_and_step_tensor():
    p = retrograd.randn(3, requires_grad=True)
    p.grad = retrograd.randn(3)
    opt = optim.Adam([p], amsgrad=True)
    opt.step()
    opt.step()
    st = opt.state[p]
    assert set(st) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    assert st["step"].shape == () and st["step"].dtype == retrograd.float32 and st["step"].item() == 2.0


# --- closure, zero_grad, hooks ----------------------------------------------------------
def test_closure_is_called_with_grad_enabled_and_its_loss_returned():
    w = retrograd.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    seen = []

    def closure():
        opt.zero_grad()
        seen.append(retrograd.is_grad_enabled())
        loss = (w * w).sum()
        loss.backward()
        return loss

    with retrograd.no_grad():
        loss = opt.step(closure)
    assert seen == [True]
    assert loss.item() == 5.0
    np.testing.assert_allclose(w.detach().numpy(), [0.8, 1.6], rtol=1e-6)


def test_step_runs_without_recording_a_graph():
    w = retrograd.randn(3, requires_grad=True)
    w.grad = retrograd.ones(3)
    optim.Adam([w]).step()
    assert w.grad_fn is None and w.is_leaf


def test_zero_grad():
    a = retrograd.randn(2, requires_grad=True)
    b = retrograd.randn(2, requires_grad=True)
    opt = optim.SGD([a, b], lr=0.1)
    a.grad = retrograd.ones(2)
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    a.grad = retrograd.ones(2)
    g = a.grad
    opt.zero_grad(set_to_none=False)
    assert a.grad is g and a.grad.tolist() == [0.0, 0.0] and b.grad is None


def test_step_hooks():
    p = retrograd.randn(2, requires_grad=True)
    p.grad = retrograd.ones(2)
    opt = optim.SGD([p], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o is opt)))
    h2 = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", o is opt)))
    g = optim.optimizer.register_optimizer_step_pre_hook(lambda o, args, kwargs: calls.append(("global", True)))
    opt.step()
    assert calls == [("global", True), ("pre", True), ("post", True)]
    h1.remove()
    h2.remove()
    g.remove()
    opt.step()
    assert len(calls) == 3


@needs_torch
def test_hooks_on_a_subclass_calling_super_step_fire_as_in_torch():
    counts = []
    for lib in (retrograd, torch):
        lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=0.1)   # the base class's step is patched now

        class MySGD(lib.optim.SGD):
            def step(self, closure=None):
                return super().step(closure)

        p = lib.ones(2, requires_grad=True)
        p.grad = lib.ones(2)
        opt = MySGD([p], lr=0.1)
        seen = []
        opt.register_step_pre_hook(lambda *a: seen.append(1))
        opt.step()
        counts.append((len(seen), p.detach().numpy().tolist()))
    assert counts[0] == counts[1]


def test_repr():
    p = retrograd.randn(2, requires_grad=True)
    r = repr(optim.SGD([p], lr=0.1))
    assert r.startswith("SGD (\nParameter Group 0\n") and "    lr: 0.1\n" in r and "    momentum: 0\n" in r


# --- state_dict ---------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(amsgrad=True)),
                                     ("AdamW", dict()), ("Adagrad", dict()),
                                     ("RMSprop", dict(centered=True, momentum=0.1)),
                                     ("Adamax", dict()), ("NAdam", dict()), ("RAdam", dict()), ("Adadelta", dict())])
def test_state_dict_layout_matches_torch(name, kw):
    rng = np.random.default_rng(5)
    ours, theirs = _pair(rng)
    o_ours = getattr(optim, name)([{"params": ours[:1]}, {"params": ours[1:], "lr": 0.5}], **kw)
    o_theirs = getattr(torch.optim, name)([{"params": theirs[:1]}, {"params": theirs[1:], "lr": 0.5}], **kw)
    _set_grads(rng, ours, theirs, skip=2)
    o_ours.step()
    o_theirs.step()
    sd_r, sd_t = o_ours.state_dict(), o_theirs.state_dict()
    assert sd_r.keys() == sd_t.keys() == {"state", "param_groups"}
    assert sorted(sd_r["state"]) == sorted(sd_t["state"])
    for k in sd_t["state"]:
        assert sorted(sd_r["state"][k]) == sorted(sd_t["state"][k])
    assert sd_r["param_groups"] == [{k: v for k, v in g.items()} for g in sd_t["param_groups"]]
    assert sd_r["param_groups"][1]["params"] == [1, 2, 3]


@needs_torch
@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(amsgrad=True, lr=0.01)),
                                     ("NAdam", dict()), ("RMSprop", dict(centered=True)), ("Adagrad", dict())])
def test_state_dict_from_torch_resumes_identically(name, kw):
    # Train 5 steps in torch, carry its state_dict over, and continue both for 10 more.
    rng = np.random.default_rng(6)
    ours, theirs = _pair(rng)
    o_theirs = getattr(torch.optim, name)(theirs, **kw)
    for _ in range(5):
        _set_grads(rng, ours, theirs)
        o_theirs.step()
    for r, t in zip(ours, theirs):
        r.data = retrograd.tensor(t.detach().numpy().copy())
    sd = o_theirs.state_dict()
    conv = {"state": {k: {kk: (retrograd.tensor(vv.numpy().copy()) if isinstance(vv, torch.Tensor) else vv)
                          for kk, vv in v.items()} for k, v in sd["state"].items()},
            "param_groups": copy.deepcopy(sd["param_groups"])}
    o_ours = getattr(optim, name)(ours, **kw)
    o_ours.load_state_dict(conv)
    for _ in range(10):
        _set_grads(rng, ours, theirs)
        o_ours.step()
        o_theirs.step()
        _close(ours, theirs)
    _state_close(o_ours, o_theirs, ours, theirs)


def test_state_dict_round_trip_continues_like_the_original():
    rng = np.random.default_rng(7)
    ps = [retrograd.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in SHAPES]
    qs = [retrograd.tensor(p.detach().numpy().copy(), requires_grad=True) for p in ps]
    o1 = optim.Adam(ps, lr=0.01, amsgrad=True)
    grads = [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(10)]
    for gs in grads[:5]:
        for p, g in zip(ps, gs):
            p.grad = retrograd.tensor(g)
        o1.step()
    for p, q in zip(ps, qs):
        q.data = p.detach().clone()
    o2 = optim.Adam(qs, lr=0.5)
    o2.load_state_dict(copy.deepcopy(o1.state_dict()))
    assert o2.param_groups[0]["lr"] == 0.01 and o2.param_groups[0]["params"][0] is qs[0]
    for gs in grads[5:]:
        for p, q, g in zip(ps, qs, gs):
            p.grad = retrograd.tensor(g)
            q.grad = retrograd.tensor(g)
        o1.step()
        o2.step()
    for p, q in zip(ps, qs):
        assert np.array_equal(p.detach().numpy(), q.detach().numpy())


def test_load_state_dict_casts_state_to_param_dtype_but_keeps_step():
    p = retrograd.randn(3, dtype=retrograd.float64, requires_grad=True)
    opt = optim.Adam([p])
    sd = {"state": {0: {"step": retrograd.tensor(3.0), "exp_avg": retrograd.zeros(3),
                        "exp_avg_sq": retrograd.zeros(3)}},
          "param_groups": [dict(opt.state_dict()["param_groups"][0])]}
    opt.load_state_dict(sd)
    assert opt.state[p]["exp_avg"].dtype == retrograd.float64
    assert opt.state[p]["step"].dtype == retrograd.float32


def test_load_state_dict_with_read_only_arrays_still_steps():
    p = retrograd.randn(3, requires_grad=True)
    opt = optim.Adam([p])
    arrays = {k: np.zeros(3, dtype=np.float32) for k in ("exp_avg", "exp_avg_sq")}
    arrays["step"] = np.array(2.0, dtype=np.float32)
    for a in arrays.values():
        a.flags.writeable = False
    sd = opt.state_dict()
    sd["state"] = {0: {k: retrograd.from_numpy(a) for k, a in arrays.items()}}
    opt.load_state_dict(sd)
    p.grad = retrograd.ones(3)
    opt.step()
    assert opt.state[p]["step"].item() == 3.0


def test_load_state_dict_step_as_number_becomes_tensor():
    p = retrograd.randn(3, requires_grad=True)
    opt = optim.Adam([p])
    sd = opt.state_dict()
    sd["state"] = {0: {"step": 4, "exp_avg": retrograd.zeros(3), "exp_avg_sq": retrograd.zeros(3)}}
    opt.load_state_dict(sd)
    assert isinstance(opt.state[p]["step"], retrograd.Tensor) and opt.state[p]["step"].item() == 4.0


@pytest.mark.parametrize("mutate,msg", [
    (lambda sd: sd["param_groups"].append(dict(sd["param_groups"][0])),
     "loaded state dict has a different number of parameter groups"),
    (lambda sd: sd["param_groups"][0]["params"].append(9),
     "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"),
])
def test_load_state_dict_mismatch_raises_and_loads_nothing(mutate, msg):
    a, b = retrograd.randn(2, requires_grad=True), retrograd.randn(3, requires_grad=True)
    opt = optim.SGD([a, b], lr=0.1, momentum=0.9)
    a.grad, b.grad = retrograd.ones(2), retrograd.ones(3)
    opt.step()
    other = optim.SGD([retrograd.randn(2, requires_grad=True), retrograd.randn(3, requires_grad=True)], lr=0.7,
                      momentum=0.5)
    sd = copy.deepcopy(opt.state_dict())
    mutate(sd)
    before_groups = [dict(g) for g in other.param_groups]
    with pytest.raises(ValueError, match="^" + msg + "$"):
        other.load_state_dict(sd)
    assert len(other.state) == 0
    assert [dict(g) for g in other.param_groups] == before_groups


# --- bad input: PyTorch's errors ------------------------------------------------------------
def test_empty_parameter_list():
    with pytest.raises(ValueError, match="^optimizer got an empty parameter list$"):
        optim.SGD([], lr=0.1)


def test_non_leaf_parameter():
    x = retrograd.randn(3, requires_grad=True)
    with pytest.raises(ValueError, match="^can't optimize a non-leaf Tensor$"):
        optim.Adam([x * 2])


def test_tensor_instead_of_iterable():
    with pytest.raises(TypeError, match=r"^params argument given to the optimizer should be an iterable of Tensors "
                                        r"or dicts, but got torch\.FloatTensor$"):
        optim.SGD(retrograd.randn(3, requires_grad=True), lr=0.1)


def test_non_tensor_parameter():
    with pytest.raises(TypeError, match="^optimizer can only optimize Tensors, but one of the params is int$"):
        optim.SGD([retrograd.randn(2, requires_grad=True), 3], lr=0.1)


def test_set_of_parameters_in_a_group():
    opt = optim.SGD([retrograd.randn(2, requires_grad=True)], lr=0.1)
    with pytest.raises(TypeError, match="optimizer parameters need to be organized in ordered collections"):
        opt.add_param_group({"params": {retrograd.randn(2, requires_grad=True)}})
    assert len(opt.param_groups) == 1


@pytest.mark.parametrize("name,kw,msg", [
    ("SGD", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("Adam", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("AdamW", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("SGD", dict(lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    ("SGD", dict(lr=0.1, weight_decay=-1), "Invalid weight_decay value: -1"),
    ("SGD", dict(lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    ("Adam", dict(betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    ("Adam", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    ("Adam", dict(eps=-1e-8), "Invalid epsilon value: -1e-08"),
    ("Adagrad", dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    ("Adagrad", dict(initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
    ("RMSprop", dict(alpha=-1), "Invalid alpha value: -1"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("LBFGS", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("Rprop", dict(etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
    ("Adafactor", dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
])
def test_invalid_options(name, kw, msg):
    p = retrograd.randn(2, requires_grad=True)
    with pytest.raises(ValueError, match="^" + msg.replace("(", r"\(").replace(")", r"\)") + "$"):
        getattr(optim, name)([p], **kw)


@needs_torch
def test_error_messages_are_torchs():
    cases = [(lambda m, x: m.optim.SGD([], lr=0.1), None),
             (lambda m, x: m.optim.SGD(x, lr=0.1), None),
             (lambda m, x: m.optim.SGD([x], lr=-1.0), None),
             (lambda m, x: m.optim.SGD([{"params": [x]}, {"params": [x]}], lr=0.1), None),
             (lambda m, x: m.optim.Adam([x * 2]), None)]
    for fn, _ in cases:
        msgs = []
        for m in (retrograd, torch):
            x = m.randn(3, requires_grad=True)
            with pytest.raises((ValueError, TypeError)) as e:
                fn(m, x)
            msgs.append((type(e.value), str(e.value)))
        assert msgs[0] == msgs[1]


def test_duplicate_parameter_across_groups():
    p, q = retrograd.randn(2, requires_grad=True), retrograd.randn(2, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="^some parameters appear in more than one parameter group$"):
        opt.add_param_group({"params": [q, p]})
    assert len(opt.param_groups) == 1


def test_duplicate_parameter_in_a_group_warns():
    p = retrograd.randn(2, requires_grad=True)
    with pytest.warns(UserWarning, match="optimizer contains a parameter group with duplicate parameters"):
        optim.SGD([p, p], lr=0.1)


def test_add_param_group_fills_defaults_and_named_params():
    p, q = retrograd.randn(2, requires_grad=True), retrograd.randn(2, requires_grad=True)
    opt = optim.SGD([("w", p)], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": [("b", q)], "lr": 0.01})
    g = opt.param_groups[1]
    assert g["lr"] == 0.01 and g["momentum"] == 0.9 and g["param_names"] == ["b"] and g["params"] == [q]
    assert opt.state_dict()["param_groups"][1]["params"] == [1]


def test_lbfgs_one_group_only():
    with pytest.raises(ValueError, match="^LBFGS doesn't support per-parameter options"):
        optim.LBFGS([{"params": [retrograd.randn(2, requires_grad=True)]},
                     {"params": [retrograd.randn(2, requires_grad=True)]}])


# --- LBFGS --------------------------------------------------------------------------------
def _rosenbrock(x, a):
    return ((1 - x[:-1]) ** 2).sum() + 10 * ((x[1:] - x[:-1] ** 2) ** 2).sum() + (a * x).sum() ** 2 * 0.1


@needs_torch
@pytest.mark.parametrize("kw", [dict(), dict(line_search_fn="strong_wolfe"), dict(history_size=3, max_iter=7, lr=0.5),
                                dict(history_size=3, max_iter=10, line_search_fn="strong_wolfe"),
                                dict(max_iter=4, max_eval=6, tolerance_change=1e-5)])
def test_lbfgs_matches_torch(kw):
    rng = np.random.default_rng(8)
    x0 = rng.standard_normal(10)
    a = rng.standard_normal(10)
    xs = [retrograd.tensor(x0.copy(), requires_grad=True)]
    xt = [torch.tensor(x0.copy(), requires_grad=True)]
    ar, at = retrograd.tensor(a), torch.tensor(a)
    o_ours, o_theirs = optim.LBFGS(xs, **kw), torch.optim.LBFGS(xt, **kw)

    def c_ours():
        o_ours.zero_grad()
        loss = _rosenbrock(xs[0], ar)
        loss.backward()
        return loss

    def c_theirs():
        o_theirs.zero_grad()
        loss = _rosenbrock(xt[0], at)
        loss.backward()
        return loss

    for _ in range(4):
        l_ours, l_theirs = o_ours.step(c_ours), o_theirs.step(c_theirs)
        np.testing.assert_allclose(l_ours.item(), l_theirs.item(), rtol=1e-9)
        np.testing.assert_allclose(xs[0].detach().numpy(), xt[0].detach().numpy(), rtol=1e-7, atol=1e-9)
        s_ours, s_theirs = o_ours.state[xs[0]], o_theirs.state[xt[0]]
        assert s_ours["func_evals"] == s_theirs["func_evals"] and s_ours["n_iter"] == s_theirs["n_iter"]
        assert len(s_ours["old_dirs"]) == len(s_theirs["old_dirs"])


@needs_torch
def test_lbfgs_float32_quadratic_matches_torch():
    rng = np.random.default_rng(9)
    h = rng.uniform(0.5, 3.0, 6).astype(np.float32)
    x0 = rng.standard_normal(6).astype(np.float32)
    res = []
    for lib in (retrograd, torch):
        x = lib.tensor(x0.copy(), requires_grad=True)
        hh = lib.tensor(h)
        opt = lib.optim.LBFGS([x], line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = (hh * x * x).sum() * 0.5 - x.sum() + (x[1:] * x[:-1]).sum() * 0.1
            loss.backward()
            return loss
        opt.step(closure)
        res.append(x.detach().numpy().copy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-5, atol=1e-6)
    grad = h * res[0] - 1
    grad[1:] += 0.1 * res[0][:-1]
    grad[:-1] += 0.1 * res[0][1:]
    np.testing.assert_allclose(grad, np.zeros(6), atol=1e-4)


def test_lbfgs_stops_at_a_minimum():
    x = retrograd.zeros(3, requires_grad=True)
    opt = optim.LBFGS([x])
    calls = []

    def closure():
        opt.zero_grad()
        loss = (x * x).sum()
        loss.backward()
        calls.append(1)
        return loss
    opt.step(closure)
    assert len(calls) == 1 and x.tolist() == [0.0, 0.0, 0.0]


# --- with nn modules ----------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.01))])
def test_training_a_module_tracks_torch(name, kw):
    if not hasattr(retrograd, "nn") or not hasattr(retrograd.nn, "Linear"):
        pytest.skip("retrograd.nn is not available")
    torch.manual_seed(0)
    t_model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Linear(8, 3))
    r_model = retrograd.nn.Sequential(retrograd.nn.Linear(5, 8), retrograd.nn.Linear(8, 3))
    r_model.load_state_dict({k: retrograd.tensor(v.detach().numpy().copy()) for k, v in t_model.state_dict().items()})
    pairs = []
    for lib, model in ((torch, t_model), (retrograd, r_model)):
        opt = getattr(lib.optim, name)(model.parameters(), **kw)
        pairs.append((lib, model, opt, lib.optim.lr_scheduler.StepLR(opt, 3, 0.5)))
    rng = np.random.default_rng(13)
    for _ in range(10):
        x = rng.standard_normal((16, 5)).astype(np.float32)
        y = rng.standard_normal((16, 3)).astype(np.float32)
        losses = []
        for lib, model, opt, sched in pairs:
            opt.zero_grad()
            loss = ((model(lib.tensor(x)) - lib.tensor(y)) ** 2).mean()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)
    for a, b in zip(t_model.parameters(), r_model.parameters()):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert len(pairs[1][2].state_dict()["state"]) == 4
