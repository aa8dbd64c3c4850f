"""Learning-rate schedulers against PyTorch: the lr (and momentum) sequence over 40 steps."""
import copy
import math
import warnings

import pytest

import retrograd
import retrograd.optim as optim
from retrograd.optim import lr_scheduler as lrs
from helpers import needs_torch, torch

STEPS = 40


def _optimizer(lib, name="SGD", groups=2, **kw):
    ps = [lib.zeros(2, requires_grad=True) for _ in range(groups)]
    param_groups = [{"params": [ps[0]]}] + [{"params": [p], "lr": 0.5 / (i + 1)} for i, p in enumerate(ps[1:])]
    kw.setdefault("lr", 0.1)
    if name == "SGD":
        kw.setdefault("momentum", 0.9)
    return getattr(lib.optim, name)(param_groups, **kw)


def _momenta(opt):
    return [(g.get("momentum"), tuple(g["betas"]) if "betas" in g else None) for g in opt.param_groups]


def _lambda(e):
    return 0.95 ** e + 0.01 * (e % 3)


def _mult(e):
    return 0.9 if e % 2 else 1.02


CASES = [
    ("StepLR", dict(step_size=3), "SGD"),
    ("StepLR", dict(step_size=4, gamma=0.5), "SGD"),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 9, 20], gamma=0.3), "SGD"),
    ("ExponentialLR", dict(gamma=0.9), "SGD"),
    ("CosineAnnealingLR", dict(T_max=10), "SGD"),
    ("CosineAnnealingLR", dict(T_max=7, eta_min=0.01), "Adam"),
    ("CosineAnnealingWarmRestarts", dict(T_0=4), "SGD"),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.001), "SGD"),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=STEPS + 1), "SGD"),
    ("OneCycleLR", dict(max_lr=[1.0, 0.3], epochs=5, steps_per_epoch=9, anneal_strategy="linear"), "SGD"),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=STEPS + 1, three_phase=True, pct_start=0.25), "Adam"),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=STEPS + 1, cycle_momentum=False, div_factor=10,
                        final_div_factor=100), "SGD"),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.2, step_size_up=4), "SGD"),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.2, step_size_up=3, step_size_down=5, mode="triangular2"), "SGD"),
    ("CyclicLR", dict(base_lr=[0.01, 0.02], max_lr=0.2, step_size_up=4, mode="exp_range", gamma=0.97), "Adam"),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=5, scale_fn=lambda x: 0.5 ** x,
                      scale_mode="iterations", cycle_momentum=False), "SGD"),
    ("LambdaLR", dict(lr_lambda=_lambda), "SGD"),
    ("LambdaLR", dict(lr_lambda=[_lambda, lambda e: 1.0 / (e + 1)]), "SGD"),
    ("MultiplicativeLR", dict(lr_lambda=_mult), "SGD"),
    ("LinearLR", dict(), "SGD"),
    ("LinearLR", dict(start_factor=0.2, end_factor=0.9, total_iters=12), "SGD"),
    ("ConstantLR", dict(), "SGD"),
    ("ConstantLR", dict(factor=0.4, total_iters=7), "SGD"),
    ("PolynomialLR", dict(), "SGD"),
    ("PolynomialLR", dict(total_iters=20, power=2.0), "Adam"),
]


def _ids(case):
    name, kw, opt = case
    return f"{name}-{opt}-" + ",".join(f"{k}={v}" for k, v in kw.items() if k not in ("lr_lambda", "scale_fn"))


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_lr_sequence_matches_torch(case):
    name, kw, opt_name = case
    o_ours, o_theirs = _optimizer(retrograd, opt_name), _optimizer(torch, opt_name)
    s_ours = getattr(lrs, name)(o_ours, **kw)
    s_theirs = getattr(torch.optim.lr_scheduler, name)(o_theirs, **kw)
    assert s_ours.get_last_lr() == s_theirs.get_last_lr()
    assert s_ours.base_lrs == s_theirs.base_lrs
    for _ in range(STEPS):
        o_ours.step()
        o_theirs.step()
        s_ours.step()
        s_theirs.step()
        assert s_ours.get_last_lr() == s_theirs.get_last_lr()
        assert [g["lr"] for g in o_ours.param_groups] == [g["lr"] for g in o_theirs.param_groups]
        assert _momenta(o_ours) == _momenta(o_theirs)
    assert s_ours.last_epoch == s_theirs.last_epoch
    assert [g.get("initial_lr") for g in o_ours.param_groups] == [g.get("initial_lr") for g in o_theirs.param_groups]


def _sequential(lib):
    opt = _optimizer(lib)
    m = lib.optim.lr_scheduler
    s1 = m.LinearLR(opt, start_factor=0.1, total_iters=5)
    s2 = m.ExponentialLR(opt, gamma=0.9)
    s3 = m.CosineAnnealingLR(opt, T_max=8, eta_min=0.001)
    return opt, m.SequentialLR(opt, schedulers=[s1, s2, s3], milestones=[5, 15])


def _chained(lib):
    opt = _optimizer(lib)
    m = lib.optim.lr_scheduler
    return opt, m.ChainedScheduler([m.ConstantLR(opt, factor=0.5, total_iters=4), m.ExponentialLR(opt, gamma=0.95)])


def _warm_then_step(lib):
    opt = _optimizer(lib)
    m = lib.optim.lr_scheduler
    s1 = m.ConstantLR(opt, factor=0.1, total_iters=2)
    s2 = m.StepLR(opt, step_size=3, gamma=0.5)
    return opt, m.SequentialLR(opt, schedulers=[s1, s2], milestones=[2])


@needs_torch
@pytest.mark.parametrize("build", [_sequential, _chained, _warm_then_step])
def test_composed_schedulers_match_torch(build):
    o_ours, s_ours = build(retrograd)
    o_theirs, s_theirs = build(torch)
    assert s_ours.get_last_lr() == s_theirs.get_last_lr()
    for _ in range(STEPS):
        o_ours.step()
        o_theirs.step()
        s_ours.step()
        s_theirs.step()
        assert s_ours.get_last_lr() == s_theirs.get_last_lr()
        assert [g["lr"] for g in o_ours.param_groups] == [g["lr"] for g in o_theirs.param_groups]


METRICS = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.89, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8,
           0.8, 0.8, 0.79995, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8]


@needs_torch
@pytest.mark.parametrize("kw", [dict(), dict(patience=2), dict(patience=1, factor=0.5, cooldown=2),
                                dict(mode="max", patience=1, threshold=0.01), dict(threshold_mode="abs", patience=2),
                                dict(mode="max", threshold_mode="abs", patience=0, min_lr=[0.01, 0.2]),
                                dict(patience=0, factor=0.5, min_lr=0.04, eps=1e-3)])
def test_reduce_lr_on_plateau_matches_torch(kw):
    o_ours, o_theirs = _optimizer(retrograd), _optimizer(torch)
    s_ours = lrs.ReduceLROnPlateau(o_ours, **kw)
    s_theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(o_theirs, **kw)
    for m in METRICS:
        o_ours.step()
        o_theirs.step()
        s_ours.step(m)
        s_theirs.step(m)
        assert s_ours.get_last_lr() == s_theirs.get_last_lr()
        assert (s_ours.best, s_ours.num_bad_epochs, s_ours.cooldown_counter) == \
               (s_theirs.best, s_theirs.num_bad_epochs, s_theirs.cooldown_counter)


def test_reduce_lr_on_plateau_takes_a_tensor_metric():
    opt = _optimizer(retrograd, groups=1)
    s = lrs.ReduceLROnPlateau(opt, patience=0)
    s.step(retrograd.tensor(1.0))
    s.step(retrograd.tensor(2.0))
    assert s.get_last_lr() == [0.1 * 0.1]


# --- warnings ------------------------------------------------------------------------------
def _warning_texts(lib, fn):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        fn(lib)
    return [(w.category, str(w.message)) for w in rec]


def _step_before_optimizer(lib):
    opt = _optimizer(lib)
    s = lib.optim.lr_scheduler.StepLR(opt, step_size=2)
    s.step()
    opt.step()


def _right_order(lib):
    opt = _optimizer(lib)
    s = lib.optim.lr_scheduler.StepLR(opt, step_size=2)
    for _ in range(3):
        opt.step()
        s.step()


def _overridden_step(lib):
    opt = _optimizer(lib)
    s = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    opt.step = lambda *a, **k: None
    opt.step()
    s.step()


def _epoch_given(lib):
    opt = _optimizer(lib)
    s = lib.optim.lr_scheduler.StepLR(opt, step_size=2)
    opt.step()
    s.step(3)


def _get_lr_outside_step(lib):
    opt = _optimizer(lib)
    s = lib.optim.lr_scheduler.StepLR(opt, step_size=2)
    s.get_lr()


@needs_torch
@pytest.mark.parametrize("fn", [_step_before_optimizer, _right_order, _overridden_step, _epoch_given,
                                _get_lr_outside_step])
def test_warnings_are_torchs(fn):
    assert _warning_texts(retrograd, fn) == _warning_texts(torch, fn)


def test_step_before_optimizer_step_warns_with_pytorch_text():
    opt = _optimizer(retrograd)
    s = lrs.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning) as rec:
        s.step()
    assert str(rec[0].message) == (
        "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you "
        "should call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to "
        "do this will result in PyTorch skipping the first value of the learning rate schedule. See more "
        "details at https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate")


def test_no_warning_in_the_right_order():
    opt = _optimizer(retrograd)
    s = lrs.CosineAnnealingLR(opt, T_max=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(4):
            opt.step()
            s.step()


# --- initial_lr, last_epoch, state_dict ---------------------------------------------------
def test_initial_lr_is_set_and_kept():
    opt = _optimizer(retrograd)
    opt.param_groups[0]["initial_lr"] = 0.7
    s = lrs.StepLR(opt, step_size=1, gamma=0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.7, 0.5]
    assert s.base_lrs == [0.7, 0.5]


def test_resuming_without_initial_lr_raises():
    opt = _optimizer(retrograd)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\] when resuming"):
        lrs.StepLR(opt, step_size=2, last_epoch=3)


@needs_torch
def test_resuming_with_last_epoch_matches_torch():
    res = []
    for lib in (retrograd, torch):
        opt = _optimizer(lib)
        for g in opt.param_groups:
            g["initial_lr"] = g["lr"]
        s = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10, last_epoch=4)
        seq = [s.get_last_lr()]
        for _ in range(10):
            opt.step()
            s.step()
            seq.append(s.get_last_lr())
        res.append(seq)
    assert res[0] == res[1]


def test_not_an_optimizer():
    with pytest.raises(TypeError, match="^list is not an Optimizer$"):
        lrs.StepLR([], step_size=2)


@needs_torch
@pytest.mark.parametrize("make", [lambda m, o: m.StepLR(o, step_size=3), lambda m, o: m.OneCycleLR(o, 1.0, 50),
                                  lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
                                  lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=3),
                                  lambda m, o: m.LambdaLR(o, _lambda), lambda m, o: m.ReduceLROnPlateau(o)])
def test_state_dict_keys_match_torch_and_resume(make):
    o_ours, o_theirs = _optimizer(retrograd), _optimizer(torch)
    s_ours, s_theirs = make(lrs, o_ours), make(torch.optim.lr_scheduler, o_theirs)
    is_plateau = isinstance(s_ours, lrs.ReduceLROnPlateau)
    for i in range(5):
        o_ours.step()
        s_ours.step(1.0) if is_plateau else s_ours.step()
    sd = s_ours.state_dict()
    assert set(sd) == set(s_theirs.state_dict())
    assert "optimizer" not in sd
    # A fresh optimizer and scheduler loading the saved states continue the same sequence.
    o2 = _optimizer(retrograd)
    o2.load_state_dict(copy.deepcopy(o_ours.state_dict()))
    s2 = make(lrs, o2)
    s2.load_state_dict(copy.deepcopy(sd))
    for g1, g2 in zip(o_ours.param_groups, o2.param_groups):
        g2["lr"] = g1["lr"]
    for i in range(10):
        for o, s in ((o_ours, s_ours), (o2, s2)):
            o.step()
            s.step(1.0) if is_plateau else s.step()
        assert s2.get_last_lr() == s_ours.get_last_lr()


def test_cosine_annealing_values():
    opt = _optimizer(retrograd, groups=1)
    s = lrs.CosineAnnealingLR(opt, T_max=4, eta_min=0.0)
    seen = [s.get_last_lr()[0]]
    for _ in range(4):
        opt.step()
        s.step()
        seen.append(s.get_last_lr()[0])
    expect = [0.1 * (1 + math.cos(math.pi * t / 4)) / 2 for t in range(5)]
    assert seen == pytest.approx(expect, abs=1e-12)


@pytest.mark.parametrize("make,err,msg", [
    (lambda o: lrs.ConstantLR(o, factor=2.0), ValueError,
     "Constant multiplicative factor expected to be between 0 and 1."),
    (lambda o: lrs.LinearLR(o, start_factor=0), ValueError,
     "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."),
    (lambda o: lrs.OneCycleLR(o, 1.0), ValueError,
     "You must define either total_steps OR (epochs AND steps_per_epoch)"),
    (lambda o: lrs.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "Expected positive integer T_0, but got 0"),
    (lambda o: lrs.ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should be < 1.0."),
    (lambda o: lrs.ReduceLROnPlateau(o, mode="up"), ValueError, "mode up is unknown!"),
    (lambda o: lrs.LambdaLR(o, [_lambda]), ValueError, "Expected 2 lr_lambdas, but got 1"),
    (lambda o: lrs.SequentialLR(o, [lrs.StepLR(o, 2)], milestones=[3]), ValueError,
     "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone "
     "points, but got number of schedulers 1 and the number of milestones to be equal to 1"),
])
def test_bad_arguments(make, err, msg):
    opt = _optimizer(retrograd)
    with pytest.raises(err) as e:
        make(opt)
    assert str(e.value) == msg


def test_one_cycle_too_many_steps():
    opt = _optimizer(retrograd)
    s = lrs.OneCycleLR(opt, 1.0, total_steps=3)
    for _ in range(3):
        opt.step()
        if _ < 2:
            s.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total steps is 3"):
        s.step()
        s.step()


def test_scheduler_drives_a_real_optimizer():
    w = retrograd.tensor([1.0], requires_grad=True)
    opt = optim.SGD([w], lr=1.0)
    s = lrs.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        opt.zero_grad()
        (w * 1.0).sum().backward()
        opt.step()
        s.step()
    assert w.item() == pytest.approx(1.0 - 1.0 - 0.5 - 0.25)


@needs_torch
def test_tensor_lr_is_filled_in_place():
    import numpy as np
    res = []
    for lib in (retrograd, torch):
        p = lib.tensor(np.arange(4, dtype=np.float32), requires_grad=True)
        lr = lib.tensor(0.01)
        opt = lib.optim.Adam([p], lr=lr)
        s = lib.optim.lr_scheduler.StepLR(opt, 2, 0.5)
        for i in range(6):
            p.grad = lib.tensor(np.full(4, i + 1.0, dtype=np.float32))
            opt.step()
            s.step()
        assert opt.param_groups[0]["lr"] is lr
        res.append((p.detach().numpy().tolist(), float(lr), [float(x) for x in s.get_last_lr()]))
    assert res[0] == res[1]


@needs_torch
@pytest.mark.parametrize("make", [lambda m, o: m.StepLR(o, step_size=3, gamma=0.5),
                                  lambda m, o: m.MultiStepLR(o, milestones=[2, 6, 6], gamma=0.5),
                                  lambda m, o: m.ExponentialLR(o, gamma=0.9),
                                  lambda m, o: m.CosineAnnealingLR(o, T_max=8, eta_min=0.01),
                                  lambda m, o: m.LinearLR(o, start_factor=0.25, total_iters=6),
                                  lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4),
                                  lambda m, o: m.PolynomialLR(o, total_iters=9, power=1.5),
                                  lambda m, o: m.LambdaLR(o, _lambda)])
def test_step_with_an_epoch_uses_the_closed_form_as_torch(make):
    epochs = [1, 2, 5, 3, 9, 9, 12, 0, 7]
    res = []
    for lib in (retrograd, torch):
        opt = _optimizer(lib)
        s = make(lib.optim.lr_scheduler, opt)
        seq = []
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            for e in epochs:
                opt.step()
                s.step(e)
                seq.append(s.get_last_lr())
        res.append((seq, [str(w.message) for w in rec]))
    assert res[0] == res[1]


@needs_torch
def test_warm_restarts_with_fractional_epochs_match_torch():
    res = []
    for lib in (retrograd, torch):
        opt = _optimizer(lib)
        s = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.001)
        seq = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in range(12):
                for i in range(4):
                    opt.step()
                    s.step(epoch + i / 4)
                    seq.append((s.get_last_lr(), s.T_cur, s.T_i, s.last_epoch))
        res.append(seq)
    assert res[0] == res[1]
