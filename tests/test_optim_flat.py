"""Optimizer steps over flat buffers against the per-parameter loop (``foreach=False``).

The flat path gathers a group's gradients and keeps its state in one array per dtype;
it must give the per-parameter loop's numbers to the bit, keep PyTorch's state layout,
and notice when parameters, gradients or state were changed behind its back.
"""
import copy

import numpy as np
import pytest

import retrograd
import retrograd.optim as optim
from retrograd import _threads
from helpers import kernel_path, needs_torch, torch

SHAPES = [(3, 4), (50,), (2, 3, 5), (), (7, 1)]

CASES = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True, maximize=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.5, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.7, weight_decay=0.1, maximize=True)),
]


def _ids(case):
    return case[0] + "-" + ",".join(f"{k}={v}" for k, v in case[1].items())


def _params(rng, dtypes):
    return [retrograd.tensor(rng.standard_normal(s).astype(dt), requires_grad=True)
            for s, dt in zip(SHAPES, dtypes)]


def _twins(rng, dtypes):
    a = _params(rng, dtypes)
    b = [retrograd.tensor(p.detach().numpy().copy(), requires_grad=True) for p in a]
    return a, b


def _grads(rng, flat, loop, skip=None):
    for i, (p, q) in enumerate(zip(flat, loop)):
        if i == skip:
            p.grad = q.grad = None
            continue
        g = rng.standard_normal(p.shape).astype(p.detach().numpy().dtype)
        p.grad = retrograd.tensor(g.copy())
        q.grad = retrograd.tensor(g.copy())


def _same(flat, loop, o_flat=None, o_loop=None):
    for p, q in zip(flat, loop):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    if o_flat is not None:
        for p, q in zip(flat, loop):
            s, t = o_flat.state.get(p, {}), o_loop.state.get(q, {})
            assert list(s) == list(t)
            for k in t:
                assert s[k].shape == t[k].shape and s[k].dtype == t[k].dtype, k
                np.testing.assert_array_equal(s[k].numpy(), t[k].numpy(), err_msg=k)


def _shares_one_buffer(opt, params, key):
    """Whether the parameters' state entries are views into one flat array (the flat path ran)."""
    arrays = [opt.state[p][key]._data for p in params]
    return all(a.base is not None and a.base is arrays[0].base for a in arrays)


@pytest.fixture(params=["numpy", "compiled"])
def kernels(request, monkeypatch):
    """The flat steps' NumPy kernels, and (where numba is installed) the compiled ones."""
    from retrograd.optim import _accel
    kernel_path(request.param, monkeypatch, _accel, "_KERNELS", _accel.kernels)
    return request.param


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_flat_steps_equal_the_per_parameter_loop_bit_for_bit(case, dtype, kernels):
    name, kw = case
    rng = np.random.default_rng(0)
    flat, loop = _twins(rng, [dtype] * len(SHAPES))
    o_flat = getattr(optim, name)(flat, **kw)
    o_loop = getattr(optim, name)(loop, foreach=False, **kw)
    for i in range(12):
        # now and then a parameter without a gradient: the bundle is remade, the step counts part
        _grads(rng, flat, loop, skip=2 if i in (4, 5, 9) else None)
        o_flat.step()
        o_loop.step()
        _same(flat, loop, o_flat, o_loop)
    key = {"SGD": "momentum_buffer", "Adagrad": "sum", "RMSprop": "square_avg"}.get(name, "exp_avg")
    if name != "SGD" or kw.get("momentum"):
        assert _shares_one_buffer(o_flat, [flat[0], flat[1]], key)
        assert not _shares_one_buffer(o_loop, [loop[0], loop[1]], key)


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.01)),
                                     ("AdamW", dict(lr=0.01, amsgrad=True)), ("Adagrad", dict()),
                                     ("RMSprop", dict(momentum=0.5))])
def test_mixed_dtypes_and_complex_take_their_own_paths(name, kw, kernels):
    rng = np.random.default_rng(1)
    dtypes = [np.float32, np.float64, np.float32, np.complex64, np.float64]
    flat = [retrograd.tensor(rng.standard_normal(s).astype(dt), requires_grad=True) for s, dt in zip(SHAPES, dtypes)]
    loop = [retrograd.tensor(p.detach().numpy().copy(), requires_grad=True) for p in flat]
    o_flat = getattr(optim, name)(flat, **kw)
    o_loop = getattr(optim, name)(loop, foreach=False, **kw)
    for _ in range(6):
        for p, q in zip(flat, loop):
            g = rng.standard_normal(p.shape).astype(p.detach().numpy().dtype)
            p.grad, q.grad = retrograd.tensor(g.copy()), retrograd.tensor(g.copy())
        o_flat.step()
        o_loop.step()
        _same(flat, loop, o_flat, o_loop)
    key = {"SGD": "momentum_buffer", "Adagrad": "sum", "RMSprop": "square_avg"}.get(name, "exp_avg")
    assert _shares_one_buffer(o_flat, [flat[0], flat[2]], key)      # the float32 bundle
    assert not _shares_one_buffer(o_flat, [flat[0], flat[1]], key)  # float64 apart


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("AdamW", dict(lr=0.01))])
def test_replaced_data_and_loaded_state_are_noticed(name, kw, kernels):
    rng = np.random.default_rng(2)
    flat, loop = _twins(rng, [np.float64] * len(SHAPES))
    o_flat = getattr(optim, name)(flat, **kw)
    o_loop = getattr(optim, name)(loop, foreach=False, **kw)
    key = "momentum_buffer" if name == "SGD" else "exp_avg"
    for i in range(10):
        _grads(rng, flat, loop)
        if i == 3:
            # the user gives a parameter new data: the new array is the one updated
            new = rng.standard_normal(SHAPES[0])
            flat[0].data = retrograd.tensor(new.copy())
            loop[0].data = retrograd.tensor(new.copy())
        if i == 5:
            # a state loaded from elsewhere (here: the loop's own, deep-copied)
            sd = copy.deepcopy(o_loop.state_dict())
            sd["param_groups"][0]["foreach"] = None      # (the options are loaded too)
            o_flat.load_state_dict(sd)
            o_loop.load_state_dict(copy.deepcopy(o_loop.state_dict()))
        if i == 7:
            # a state entry replaced (and one changed in place through a view) by hand
            for o, ps in ((o_flat, flat), (o_loop, loop)):
                o.state[ps[1]][key] = retrograd.zeros(SHAPES[1], dtype=retrograd.float64)
                o.state[ps[2]][key].mul_(0.5)
        o_flat.step()
        o_loop.step()
        _same(flat, loop, o_flat, o_loop)
    assert _shares_one_buffer(o_flat, flat[:3], key)


def test_state_dict_holds_the_optimizers_own_tensors_in_torchs_layout():
    rng = np.random.default_rng(3)
    ps = _params(rng, [np.float32] * len(SHAPES))
    opt = optim.Adam(ps, lr=0.01)
    for _ in range(3):
        for p in ps:
            p.grad = retrograd.tensor(rng.standard_normal(p.shape).astype(np.float32))
        opt.step()
    sd = opt.state_dict()
    assert sorted(sd["state"]) == list(range(len(ps)))
    for i, p in enumerate(ps):
        st = sd["state"][i]
        assert list(st) == ["step", "exp_avg", "exp_avg_sq"]
        assert st["step"].shape == () and float(st["step"]) == 3.0
        assert st["exp_avg"].shape == p.shape and st["exp_avg"].dtype == retrograd.float32
        assert st["exp_avg"] is opt.state[p]["exp_avg"]
    before = sd["state"][0]["exp_avg"].numpy().copy()
    for p in ps:
        p.grad = retrograd.tensor(rng.standard_normal(p.shape).astype(np.float32))
    opt.step()
    # the tensors handed out are live, as in PyTorch
    assert not np.array_equal(before, sd["state"][0]["exp_avg"].numpy())
    assert float(sd["state"][0]["step"]) == 4.0


def test_parameter_aliases_keep_seeing_the_updates():
    w = retrograd.zeros(4, 3)
    p = retrograd.nn.Parameter(w)
    q = retrograd.nn.Parameter(retrograd.ones(5))
    view = p.data
    opt = optim.SGD([p, q], lr=0.5, momentum=0.9)
    for _ in range(3):
        p.grad = retrograd.ones(4, 3)
        q.grad = retrograd.ones(5)
        opt.step()
    np.testing.assert_array_equal(view.numpy(), p.detach().numpy())
    assert p._version > 0


@needs_torch
@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
def test_fused_and_foreach_arguments_as_torch_checks_them(name):
    p = [retrograd.zeros(2, requires_grad=True)]
    tp = [torch.zeros(2, requires_grad=True)]
    for kw in (dict(fused=True), dict(fused=True, foreach=False), dict(foreach=True), dict(foreach=False)):
        ours = getattr(optim, name)(p, lr=0.1, **kw)
        theirs = getattr(torch.optim, name)(tp, lr=0.1, **kw)
        assert ours.defaults["foreach"] == theirs.defaults["foreach"]
        assert ours.defaults["fused"] == theirs.defaults["fused"]
    for kw in (dict(fused=True, foreach=True), dict(fused=True, differentiable=True)):
        with pytest.raises(RuntimeError) as theirs:
            getattr(torch.optim, name)(tp, lr=0.1, **kw)
        with pytest.raises(RuntimeError, match=str(theirs.value).replace("`", ".")):
            getattr(optim, name)(p, lr=0.1, **kw)


@needs_torch
def test_fused_step_refuses_complex_parameters_as_torch_does():
    p = retrograd.zeros(2, dtype=retrograd.complex64, requires_grad=True)
    tp = torch.zeros(2, dtype=torch.complex64, requires_grad=True)
    p.grad = retrograd.zeros(2, dtype=retrograd.complex64)
    tp.grad = torch.zeros(2, dtype=torch.complex64)
    with pytest.raises(RuntimeError) as theirs:
        torch.optim.Adam([tp], fused=True).step()
    with pytest.raises(RuntimeError) as ours:
        optim.Adam([p], fused=True).step()
    assert str(ours.value) == str(theirs.value)


@needs_torch
@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
                                     ("AdamW", dict(lr=0.01, amsgrad=True))])
def test_flat_float32_steps_match_torch_bit_for_bit(name, kw, kernels, monkeypatch):
    import importlib
    if kernels == "compiled" and name != "SGD":
        pytest.skip("PyTorch's (MKL's) square root is not correctly rounded; the compiled Adam is "
                    "checked bit for bit against the NumPy loop instead")
    if kernels == "numpy":
        # PyTorch's own (MKL's) square root, as in test_optim: all the rest must round as PyTorch's
        monkeypatch.setattr(importlib.import_module("retrograd.optim.adam"), "_sqrt",
                            lambda a: torch.from_numpy(np.array(a, copy=True)).sqrt().numpy())
    rng = np.random.default_rng(4)
    init = [rng.standard_normal(s).astype(np.float32) for s in [(64, 33), (33,), (5, 5, 3)]]
    ours = [retrograd.tensor(a.copy(), requires_grad=True) for a in init]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in init]
    o_ours = getattr(optim, name)(ours, **kw)
    o_theirs = getattr(torch.optim, name)(theirs, foreach=False, **kw)
    for _ in range(10):
        for r, t in zip(ours, theirs):
            g = rng.standard_normal(r.shape).astype(np.float32)
            r.grad, t.grad = retrograd.tensor(g.copy()), torch.tensor(g.copy())
        o_ours.step()
        o_theirs.step()
        for r, t in zip(ours, theirs):
            np.testing.assert_array_equal(r.detach().numpy(), t.detach().numpy())


# --- the BLAS thread count follows the load ---------------------------------------------------
class _FakeLoad(_threads._Load):
    """A _Load whose readings are given: (seconds, machine busy seconds, own CPU seconds)."""

    def __init__(self, cpus, readings):
        self.cpus = list(range(cpus))
        self.readings = iter(readings)
        self.last = next(self.readings)
        self.current = None

    def _sample(self):
        return next(self.readings)


@pytest.mark.parametrize("cpus,others,want", [(2, 0.0, 2), (2, 0.1, 2), (2, 0.3, 1), (2, 1.0, 1), (2, 2.0, 1),
                                              (8, 0.05, 8), (8, 1.0, 7), (8, 2.5, 5), (8, 9.0, 1)])
def test_thread_count_leaves_the_cores_other_processes_use(cpus, others, want):
    own = 1.7     # this process's own use does not count against it
    load = _FakeLoad(cpus, [(0.0, 0.0, 0.0), (1.0, others + own, own)])
    assert load.choose() == want


def test_short_spans_are_not_judged():
    load = _FakeLoad(2, [(0.0, 0.0, 0.0), (0.01, 0.01, 0.0), (0.5, 0.5, 0.0)])
    assert load.choose() is None          # 10 ms: too short to judge, the reading is kept
    assert load.choose() == 1             # measured over the whole half second


def test_set_num_threads_fixes_the_count(monkeypatch):
    calls = []
    monkeypatch.setattr(_threads, "_set_blas", lambda n, user_api="blas": calls.append(n) or True)
    monkeypatch.setattr(_threads, "_load", [_FakeLoad(2, [(0.0, 0.0, 0.0)] + [(t, 0.0, 0.0) for t in range(1, 9)])])
    monkeypatch.setattr(_threads, "_next", [0.0])
    monkeypatch.setattr(_threads, "_threads", [None])
    for v in _threads._ENV:
        monkeypatch.delenv(v, raising=False)
    _threads.tick()
    assert calls == [2] and retrograd.get_num_threads() == 2
    _threads.tick()                        # within the half second: nothing read
    assert calls == [2]
    retrograd.set_num_threads(1)
    assert calls == [2, 1]
    _threads._next[0] = 0.0
    _threads.tick()                        # a count set by hand stays
    assert calls == [2, 1] and retrograd.get_num_threads() == 1
