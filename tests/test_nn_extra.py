"""The less common nn layers, losses, parametrizations and activation checkpointing, against
PyTorch 2.13 (same weights copied across) and with float64 gradchecks that need no torch."""
import copy
import warnings

import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from helpers import needs_torch, torch
from test_nn_layers import module_parity


LAYERS = [
    (lambda l: l.nn.InstanceNorm1d(4), (3, 4, 6)),
    (lambda l: l.nn.InstanceNorm1d(4, affine=True), (4, 6)),                       # unbatched
    (lambda l: l.nn.InstanceNorm2d(3, affine=True, track_running_stats=True), (2, 3, 4, 5)),
    (lambda l: l.nn.InstanceNorm3d(2, affine=True, momentum=0.3), (2, 2, 3, 2, 4)),
    (lambda l: l.nn.RMSNorm(6), (2, 3, 6)),
    (lambda l: l.nn.RMSNorm((3, 6), eps=1e-3, elementwise_affine=False), (2, 3, 6)),
    (lambda l: l.nn.LocalResponseNorm(3, alpha=0.4, k=2.0), (2, 5, 4, 3)),
    (lambda l: l.nn.LocalResponseNorm(2, beta=0.5), (2, 5, 6)),
    (lambda l: l.nn.CrossMapLRN2d(5, alpha=0.5, beta=0.7, k=2.0), (2, 7, 3, 3)),
    (lambda l: l.nn.CrossMapLRN2d(4, alpha=0.5, beta=0.7, k=2.0), (2, 6, 3, 3)),
    (lambda l: l.nn.ChannelShuffle(3), (2, 6, 2, 3)),
    (lambda l: l.nn.Softmax2d(), (2, 3, 4, 5)),
    (lambda l: l.nn.Softmax2d(), (3, 4, 5)),
    (lambda l: l.nn.AlphaDropout(0.3), (4, 5)),           # eval mode below: the identity
    (lambda l: l.nn.LPPool1d(2, 3, 2), (2, 3, 9)),
    (lambda l: l.nn.LPPool2d(1.5, 2, ceil_mode=True), (2, 3, 5, 5)),
    (lambda l: l.nn.LPPool3d(3, 2), (1, 2, 4, 4, 4)),
    (lambda l: l.nn.AdaptiveMaxPool3d((2, 3, 2), return_indices=True), (1, 2, 5, 6, 4)),
    (lambda l: l.nn.SyncBatchNorm(3), (4, 3, 5)),
]


@needs_torch
@pytest.mark.parametrize("make,shape", LAYERS)
def test_layer_parity(make, shape):
    train = "Dropout" not in repr(make(retrograd))
    if "LPPool" in repr(make(retrograd)):
        # positive inputs: the p-th root of a sum of p-th powers of negatives is NaN in both
        rng = np.random.default_rng(0)
        x = np.abs(rng.standard_normal(shape)) + 0.1
        tm, rm = make(torch).double(), make(retrograd).double()
        tx, rx = torch.tensor(x, requires_grad=True), retrograd.tensor(x, requires_grad=True)
        to, ro = tm(tx), rm(rx)
        np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=1e-10)
        g = rng.standard_normal(tuple(to.shape))
        to.backward(torch.tensor(g))
        ro.backward(retrograd.tensor(g))
        np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-12)
        return
    module_parity(make, shape, train=train, steps=2)


@needs_torch
@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (5,)), ("InstanceNorm2d", (2, 3)),
                                       ("InstanceNorm3d", (1, 2, 3, 4, 5, 6))])
def test_instance_norm_errors(cls, shape):
    for lib in (torch, retrograd):
        with pytest.raises(ValueError) as e:
            getattr(lib.nn, cls)(3)(lib.ones(shape))
        if lib is torch:
            want = str(e.value)
    assert str(e.value) == want


@needs_torch
def test_instance_norm_feature_mismatch():
    x = np.ones((2, 4, 5))
    msgs = []
    for lib in (torch, retrograd):
        with pytest.raises(ValueError) as e:
            lib.nn.InstanceNorm1d(3, affine=True)(lib.tensor(x))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.nn.InstanceNorm1d(3)(lib.tensor(x))
        msgs.append((str(e.value), [str(m.message) for m in w]))
    assert msgs[0] == msgs[1]


@needs_torch
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_layers_invert_max_pool(nd):
    rng = np.random.default_rng(nd)
    x = rng.standard_normal((2, 3) + (4,) * nd)
    res = []
    for lib in (torch, retrograd):
        t = lib.tensor(x, requires_grad=True)
        out, idx = getattr(lib.nn, f"MaxPool{nd}d")(2, return_indices=True)(t)
        unpool = getattr(lib.nn, f"MaxUnpool{nd}d")(2)
        u = unpool(out, idx)
        u2 = unpool(out, idx, output_size=[s + 1 for s in u.shape[2:]])
        (u * u).sum().add(u2.sum()).backward()
        res.append((u.detach().numpy(), tuple(u2.shape), t.grad.numpy(), repr(unpool), type(u.grad_fn).__name__))
    (a, sa, ga, ra, na), (b, sb, gb, rb, nb) = res
    np.testing.assert_array_equal(b, a)
    np.testing.assert_allclose(gb, ga)
    assert (sb, rb, nb) == (sa, ra, na)


@needs_torch
def test_distances_and_container():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    for mk in (lambda l: l.nn.PairwiseDistance(p=3, keepdim=True), lambda l: l.nn.CosineSimilarity(dim=0)):
        to = mk(torch)(torch.tensor(a), torch.tensor(b))
        ro = mk(retrograd)(retrograd.tensor(a), retrograd.tensor(b))
        np.testing.assert_allclose(ro.numpy(), to.numpy(), rtol=1e-12)
    for lib in (torch, retrograd):
        with pytest.warns(FutureWarning, match="nn.Container` is deprecated"):
            c = lib.nn.Container(lin=lib.nn.Linear(2, 3))
        assert list(dict(c.named_parameters())) == ["lin.weight", "lin.bias"]


@needs_torch
def test_convert_sync_batchnorm_keeps_state():
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 1), torch.nn.BatchNorm2d(4), torch.nn.Sequential(
        torch.nn.BatchNorm1d(2)))
    rm = retrograd.nn.Sequential(retrograd.nn.Conv2d(3, 4, 1), retrograd.nn.BatchNorm2d(4), retrograd.nn.Sequential(
        retrograd.nn.BatchNorm1d(2)))
    rm[1].running_mean.fill_(0.5)
    w = rm[1].weight
    t2 = torch.nn.SyncBatchNorm.convert_sync_batchnorm(tm)
    r2 = retrograd.nn.SyncBatchNorm.convert_sync_batchnorm(rm)
    assert repr(r2) == repr(t2)
    assert list(r2.state_dict()) == list(t2.state_dict())
    assert r2[1].weight is w and float(r2[1].running_mean[0]) == 0.5


# ------------------------------------------------------------------------------- losses

LOSSES = [
    (lambda l: l.nn.SoftMarginLoss(), "pm1"),
    (lambda l: l.nn.HingeEmbeddingLoss(margin=0.5, reduction="sum"), "pm1"),
    (lambda l: l.nn.MultiLabelSoftMarginLoss(weight=l.ones(5, dtype=l.float64) * 0.5), "01"),
    (lambda l: l.nn.MultiMarginLoss(p=2, margin=0.7, reduction="none"), "cls"),
    (lambda l: l.nn.MultiLabelMarginLoss(), "labels"),
    (lambda l: l.nn.PoissonNLLLoss(full=True), "counts"),
    (lambda l: l.nn.NLLLoss(), "cls"),
]


@needs_torch
@pytest.mark.parametrize("make,target", LOSSES)
def test_loss_modules(make, target):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5))
    t = {"pm1": np.sign(rng.standard_normal((4, 5))), "01": (rng.random((4, 5)) < 0.5) * 1.0,
         "cls": np.array([0, 4, 2, 1]), "counts": rng.integers(0, 4, (4, 5)).astype(np.float64),
         "labels": np.array([[0, 3, -1, 1, 1], [4, -1, 0, 0, 0], [1, 2, 3, 0, 4], [-1, 0, 0, 0, 0]])}[target]
    res = []
    for lib in (torch, retrograd):
        xt = lib.tensor(x, requires_grad=True)
        m = make(lib)
        out = m(xt, lib.tensor(t))
        out.sum().backward()
        res.append((out.detach().numpy(), xt.grad.numpy(), type(out.grad_fn).__name__, repr(m)))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-10)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-10, atol=1e-14)
    assert res[1][2:] == res[0][2:]


@needs_torch
def test_nll_loss2d_is_deprecated():
    for lib in (torch, retrograd):
        with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead"):
            m = lib.nn.NLLLoss2d()
        assert isinstance(m, lib.nn.NLLLoss)


@needs_torch
def test_gaussian_and_triplet_distance_modules():
    rng = np.random.default_rng(1)
    x, y, v = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.random((3, 1)) + 0.1
    res = []
    for lib in (torch, retrograd):
        ts = [lib.tensor(a, requires_grad=True) for a in (x, y, v)]
        a = lib.nn.GaussianNLLLoss(full=True)(*ts)
        b = lib.nn.TripletMarginWithDistanceLoss(
            distance_function=lambda p, q: 1 - lib.nn.functional.cosine_similarity(p, q), swap=True)(*ts[:2], ts[0] * 2)
        (a + b).backward()
        res.append([a.detach().numpy(), b.detach().numpy()] + [t.grad.numpy() for t in ts])
    for p, q in zip(res[1], res[0]):
        np.testing.assert_allclose(p, q, rtol=1e-10)
    for lib in (torch, retrograd):
        with pytest.raises(ValueError, match="expected margin to be greater than 0, got 0"):
            lib.nn.TripletMarginWithDistanceLoss(margin=0)
        with pytest.raises(ValueError, match="expected weight to be None or 1D tensor, got 2D"):
            lib.nn.MultiMarginLoss(weight=lib.ones(2, 2))


@needs_torch
def test_ctc_loss_module_matches_through_log_softmax():
    rng = np.random.default_rng(2)
    acts = rng.standard_normal((12, 3, 6))
    targets = np.array([[1, 2, 2, 5], [3, 4, 0, 0], [5, 5, 5, 1]])
    il, tl = np.array([12, 9, 11]), np.array([4, 2, 4])
    res = []
    for lib in (torch, retrograd):
        a = lib.tensor(acts, requires_grad=True)
        loss = lib.nn.CTCLoss(blank=0, zero_infinity=True)(a.log_softmax(2), lib.tensor(targets), lib.tensor(il),
                                                           lib.tensor(tl))
        loss.backward()
        res.append((loss.item(), a.grad.numpy()))
    assert res[1][0] == pytest.approx(res[0][0], rel=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-9, atol=1e-13)


def test_ctc_loss_gradcheck_through_log_softmax():
    rng = np.random.default_rng(3)
    acts = retrograd.tensor(rng.standard_normal((7, 2, 4)), requires_grad=True)
    targets = retrograd.tensor([[1, 3, 3], [2, 0, 0]])

    def fn(a):
        return retrograd.nn.functional.ctc_loss(a.log_softmax(2), targets, [7, 6], [3, 1], reduction="sum")
    assert gradcheck(fn, (acts,))


def test_ctc_loss_second_derivative_raises():
    lp = retrograd.randn(5, 1, 3, dtype=retrograd.float64).log_softmax(2).detach().requires_grad_()
    loss = retrograd.nn.functional.ctc_loss(lp, retrograd.tensor([[1, 2]]), [5], [2])
    (g,) = retrograd.autograd.grad(loss, lp, create_graph=True)
    with pytest.raises(RuntimeError, match="derivative for aten::_ctc_loss_backward is not implemented"):
        g.sum().backward()


@needs_torch
@pytest.mark.parametrize("reduction,zero_infinity,unbatched", [
    ("none", False, False), ("none", False, True), ("none", True, False), ("sum", False, False),
    ("mean", False, False)])
def test_ctc_loss_saves_its_losses(reduction, zero_infinity, unbatched):
    """PyTorch's CtcLossBackward0 keeps the per-sample losses (what reduction='none' returns):
    modifying them in place makes the backward raise, a reduced or zero_infinity copy does not."""
    rng = np.random.default_rng(5)
    acts = rng.standard_normal((8, 5) if unbatched else (8, 3, 5))
    targets = np.array([1, 2, 2]) if unbatched else np.array([[1, 2, 2], [3, 4, 0], [1, 1, 1]])
    il, tl = ([8], [3]) if unbatched else ([8, 6, 7], [3, 2, 3])
    outcomes = []
    for lib in (torch, retrograd):
        lp = lib.tensor(acts).log_softmax(-1).detach().requires_grad_()
        loss = lib.nn.functional.ctc_loss(lp, lib.tensor(targets), il, tl, reduction=reduction,
                                          zero_infinity=zero_infinity)
        loss.add_(1)
        try:
            loss.sum().backward()
            outcomes.append(("ok", lp.grad.numpy()))
        except RuntimeError as e:
            outcomes.append(("raises", str(e)))
    assert outcomes[1][0] == outcomes[0][0]
    if outcomes[0][0] == "raises":
        assert outcomes[1][1] == outcomes[0][1]
    else:
        np.testing.assert_allclose(outcomes[1][1], outcomes[0][1], rtol=1e-9, atol=1e-12)


def test_multi_margin_gradcheck():
    rng = np.random.default_rng(4)
    x = retrograd.tensor(rng.standard_normal((3, 5)), requires_grad=True)
    w = retrograd.tensor(rng.random(5) + 0.5)
    t = retrograd.tensor([0, 4, 2])
    for p in (1, 2):
        assert gradcheck(lambda a: retrograd.nn.functional.multi_margin_loss(a, t, p=p, margin=0.3, weight=w), (x,))
    lt = retrograd.tensor([[0, 3, -1, 1, 1], [4, -1, 0, 0, 0], [1, 2, 3, 0, 4]])
    assert gradcheck(lambda a: retrograd.nn.functional.multilabel_margin_loss(a, lt, reduction="none"), (x,))
    y = retrograd.tensor(np.sign(rng.standard_normal((3, 5))))
    assert gradgradcheck(lambda a: retrograd.nn.functional.soft_margin_loss(a, y), (x,))


# ---------------------------------------------------------------------------- functional

@needs_torch
def test_gumbel_softmax_distribution_and_straight_through():
    retrograd.manual_seed(0)
    logits = retrograd.tensor([[1.0, 0.0, -1.0]], dtype=retrograd.float64, requires_grad=True)
    soft = retrograd.nn.functional.gumbel_softmax(logits.expand(20000, 3), tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).detach().numpy(), 1.0)
    hard = retrograd.nn.functional.gumbel_softmax(logits.expand(20000, 3), tau=0.5, hard=True)
    h = hard.detach().numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and (h.sum(-1) == 1).all()
    # argmax of logits + Gumbel noise is a sample of softmax(logits)
    freq = h.mean(0)
    np.testing.assert_allclose(freq, torch.softmax(torch.tensor([1.0, 0.0, -1.0], dtype=torch.float64), 0).numpy(),
                               atol=0.015)
    # straight-through: the gradient is the soft sample's
    (g_hard,) = retrograd.autograd.grad((hard * retrograd.tensor([1.0, 2.0, 3.0])).sum(), logits)
    assert np.isfinite(g_hard.numpy()).all() and np.abs(g_hard.numpy()).sum() > 0
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        retrograd.nn.functional.gumbel_softmax(logits, eps=1e-5)


@needs_torch
def test_native_channel_shuffle_has_no_derivative():
    for lib in (torch, retrograd):
        x = lib.ones(2, 4, 3, requires_grad=True)
        y = lib.native_channel_shuffle(x, 2) if lib is torch else lib.nn.functional.native_channel_shuffle(x, 2)
        assert type(y.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::native_channel_shuffle is not implemented"):
            y.sum().backward()


def test_init_deprecated_aliases():
    t = retrograd.empty(3, 3)
    with pytest.warns(FutureWarning, match="`nn.init.eye` is now deprecated in favor of `nn.init.eye_`"):
        retrograd.nn.init.eye(t)
    np.testing.assert_array_equal(t.numpy(), np.eye(3))
    w = retrograd.empty(2, 2, 3)
    with pytest.warns(FutureWarning, match="nn.init.dirac_"):
        retrograd.nn.init.dirac(w)
    assert w.numpy()[0, 0, 1] == 1 and w.numpy().sum() == 2
    with pytest.warns(FutureWarning, match="nn.init.sparse_"):
        retrograd.nn.init.sparse(retrograd.empty(4, 3), 0.5)


# ----------------------------------------------------------------------- parametrizations

def _copy_into(rm, tm):
    rm.load_state_dict({k: retrograd.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})


@needs_torch
@pytest.mark.parametrize("make,dim", [(lambda l: l.nn.Linear(4, 3), 0), (lambda l: l.nn.Linear(4, 3), 1),
                                      (lambda l: l.nn.Conv2d(2, 3, 3), None), (lambda l: l.nn.Conv2d(2, 3, 3), 1)])
def test_parametrized_weight_norm(make, dim):
    pw = torch.nn.utils.parametrizations.weight_norm
    tm = pw(make(torch).double(), dim=dim)
    rm = retrograd.nn.utils.parametrizations.weight_norm(make(retrograd).double(), dim=dim)
    assert list(rm.state_dict()) == list(tm.state_dict())
    assert repr(rm) == repr(tm) and type(rm).__name__ == "Parametrized" + type(make(retrograd)).__name__
    _copy_into(rm, tm)
    shape = (5, 4) if isinstance(tm, torch.nn.Linear) else (2, 2, 5, 5)
    x = np.random.default_rng(0).standard_normal(shape)
    to, ro = tm(torch.tensor(x)), rm(retrograd.tensor(x))
    assert type(rm.weight.grad_fn).__name__ == type(tm.weight.grad_fn).__name__
    np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=1e-10)
    to.pow(2).sum().backward()
    ro.pow(2).sum().backward()
    for (n, tp), (n2, rp) in zip(tm.named_parameters(), rm.named_parameters()):
        assert n == n2
        np.testing.assert_allclose(rp.grad.numpy(), tp.grad.numpy(), rtol=1e-9, err_msg=n)
    # setting the weight goes through right_inverse
    new = np.random.default_rng(1).standard_normal(tuple(tm.weight.shape))
    with torch.no_grad():
        tm.weight = torch.tensor(new)
    rm.weight = retrograd.tensor(new)
    np.testing.assert_allclose(rm.weight.detach().numpy(), new, rtol=1e-12)
    np.testing.assert_allclose(rm.parametrizations.weight.original0.detach().numpy(),
                               tm.parametrizations.weight.original0.detach().numpy(), rtol=1e-12)


def test_weight_norm_op_gradchecks():
    rng = np.random.default_rng(5)
    from retrograd.ops.nn_extra import weight_norm
    v = retrograd.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    for dim, gshape in ((0, (3, 1)), (1, (1, 4)), (-1, ())):
        g = retrograd.tensor(rng.random(gshape) + 0.5, requires_grad=True)
        assert gradcheck(lambda a, b: weight_norm(a, b, dim), (v, g))
        assert gradgradcheck(lambda a, b: weight_norm(a, b, dim), (v, g))


@needs_torch
@pytest.mark.parametrize("make,shape", [(lambda l: l.nn.Linear(4, 3), (5, 4)),
                                        (lambda l: l.nn.Conv2d(2, 3, 3), (2, 2, 5, 5)),
                                        (lambda l: l.nn.ConvTranspose2d(2, 3, 3), (2, 2, 4, 4))])
def test_parametrized_spectral_norm(make, shape):
    torch.manual_seed(0)
    tm = torch.nn.utils.parametrizations.spectral_norm(make(torch).double())
    rm = retrograd.nn.utils.parametrizations.spectral_norm(make(retrograd).double())
    assert list(rm.state_dict()) == list(tm.state_dict())
    _copy_into(rm, tm)    # the power-iteration vectors _u, _v come from torch's generator
    x = np.random.default_rng(0).standard_normal(shape)
    for train in (True, True, False):
        tm.train(train)
        rm.train(train)
        to, ro = tm(torch.tensor(x)), rm(retrograd.tensor(x))
        np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=1e-9)
        to.pow(2).sum().backward()
        ro.pow(2).sum().backward()
    for (n, tp), (n2, rp) in zip(tm.named_parameters(), rm.named_parameters()):
        np.testing.assert_allclose(rp.grad.numpy(), tp.grad.numpy(), rtol=1e-8, err_msg=n)
    for (n, tb), (n2, rb) in zip(tm.named_buffers(), rm.named_buffers()):
        np.testing.assert_allclose(rb.numpy(), tb.numpy(), rtol=1e-9, err_msg=n)


@needs_torch
@pytest.mark.parametrize("api", ["weight_norm", "spectral_norm"])
def test_hook_based_norms(api):
    torch.manual_seed(0)
    tm = torch.nn.Linear(4, 3).double()
    rm = retrograd.nn.Linear(4, 3).double()
    _copy_into(rm, tm)
    msgs = []
    for lib, m in ((torch, tm), (retrograd, rm)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            getattr(lib.nn.utils, api)(m)
        msgs.append([str(i.message) for i in w])
    _copy_into(rm, tm)      # spectral_norm's random u, v: torch's
    assert msgs[0] == msgs[1]
    res = []
    for lib, m in ((torch, tm), (retrograd, rm)):
        names = [n for n, _ in m.named_parameters()]
        keys = list(m.state_dict())
        x = lib.tensor(np.random.default_rng(0).standard_normal((5, 4)))
        m(x)
        out = m(x)
        out.pow(2).sum().backward()
        grads = [p.grad.numpy() for p in m.parameters()]
        getattr(lib.nn.utils, "remove_" + api)(m)
        with pytest.raises(ValueError) as e:
            getattr(lib.nn.utils, "remove_" + api)(m)
        res.append((names, keys, None, str(e.value), type(m.weight).__name__,
                    list(m.state_dict()), out.detach().numpy(), grads, m.weight.detach().numpy()))
    t, r = res
    assert r[:6] == t[:6]
    np.testing.assert_allclose(r[6], t[6], rtol=1e-9)
    for a, b in zip(r[7], t[7]):
        np.testing.assert_allclose(a, b, rtol=1e-8)
    np.testing.assert_allclose(r[8], t[8], rtol=1e-9)


def test_parametrize_register_remove_and_cache():
    P = retrograd.nn.utils.parametrize

    class Symmetric(retrograd.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a):
            return a.triu()

    calls = []

    class Scale(retrograd.nn.Module):
        def forward(self, x):
            calls.append(1)
            return 2 * x

    m = retrograd.nn.Linear(3, 3)
    P.register_parametrization(m, "weight", Symmetric())
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight") and not P.is_parametrized(m, "bias")
    w = m.weight.detach().numpy()
    np.testing.assert_allclose(w, w.T)
    P.register_parametrization(m, "weight", Scale())
    assert P.type_before_parametrizations(m) is retrograd.nn.Linear
    calls.clear()
    with P.cached():
        a, b = m.weight, m.weight
    assert a is b and len(calls) == 1
    m.weight.sum().backward()
    assert m.parametrizations.weight.original.grad is not None
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element with "
                                         "name 'nope'"):
        P.register_parametrization(m, "nope", Scale())
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only supported through "
                                           "state_dict"):
        import pickle
        pickle.dumps(m)
    c = copy.deepcopy(m)
    np.testing.assert_allclose(c.weight.detach().numpy(), m.weight.detach().numpy())
    value = m.weight.detach().numpy()
    P.remove_parametrizations(m, "weight")
    assert type(m) is retrograd.nn.Linear and not hasattr(m, "parametrizations")
    assert isinstance(m.weight, retrograd.nn.Parameter)
    np.testing.assert_allclose(m.weight.detach().numpy(), value)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(m, "weight")


@needs_torch
def test_parametrize_shape_change_error_matches_torch():
    msgs = []
    for lib in (torch, retrograd):
        class Flat(lib.nn.Module):
            def forward(self, x):
                return x.reshape(-1)
        with pytest.raises(ValueError) as e:
            lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 3), "weight", Flat())
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


# ---------------------------------------------------------------------------- checkpoint

def _net(lib, drop):
    m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Dropout(0.5) if drop else lib.nn.Identity(),
                          lib.nn.Linear(8, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2)).double()
    return m


@needs_torch
@pytest.mark.parametrize("reentrant", [None, True, False])
@pytest.mark.parametrize("sequential", [False, True])
def test_checkpoint_matches_torch(reentrant, sequential):
    torch.manual_seed(0)
    tm = _net(torch, False)
    rm = _net(retrograd, False)
    _copy_into(rm, tm)
    x = np.random.default_rng(0).standard_normal((5, 4))
    res = []
    kw = {} if reentrant is None else {"use_reentrant": reentrant}
    for lib, m in ((torch, tm), (retrograd, rm)):
        xt = lib.tensor(x, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            cp = lib.utils.checkpoint
            y = cp.checkpoint_sequential(m, 2, xt, **kw) if sequential else cp.checkpoint(m, xt, **kw)
        y.pow(2).sum().backward()
        res.append((y.detach().numpy(), xt.grad.numpy(), [p.grad.numpy() for p in m.parameters()],
                    type(y.grad_fn).__name__, [(str(i.message), i.category) for i in w]))
    (ty, tx, tg, tn, tw), (ry, rx, rg, rn, rw) = res
    assert (rn, rw) == (tn, tw)
    np.testing.assert_allclose(ry, ty, rtol=1e-10)
    np.testing.assert_allclose(rx, tx, rtol=1e-9)
    for a, b in zip(rg, tg):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_recomputes_with_the_same_dropout_mask(reentrant):
    retrograd.manual_seed(0)
    m = _net(retrograd, True)
    x = retrograd.tensor(np.random.default_rng(0).standard_normal((5, 4)), requires_grad=True)
    calls = []

    def fn(a):
        calls.append(1)
        return m(a)
    retrograd.manual_seed(1)
    plain = m(x)
    plain.pow(2).sum().backward()
    want_x, want_p = x.grad.numpy().copy(), [p.grad.numpy().copy() for p in m.parameters()]
    x.grad = None
    m.zero_grad()
    retrograd.manual_seed(1)
    y = retrograd.utils.checkpoint.checkpoint(fn, x, use_reentrant=reentrant)
    np.testing.assert_array_equal(y.detach().numpy(), plain.detach().numpy())
    assert len(calls) == 1
    y.pow(2).sum().backward()
    assert len(calls) == 2       # recomputed once in backward
    np.testing.assert_allclose(x.grad.numpy(), want_x, rtol=1e-12)
    for a, b in zip(m.parameters(), want_p):
        np.testing.assert_allclose(a.grad.numpy(), b, rtol=1e-12)
    # the recomputation leaves the generator where the forward left it
    retrograd.manual_seed(3)
    y2 = retrograd.utils.checkpoint.checkpoint(fn, x, use_reentrant=reentrant)
    state = retrograd.get_rng_state().numpy().copy()
    y2.sum().backward()
    np.testing.assert_array_equal(retrograd.get_rng_state().numpy(), state)


def test_checkpoint_non_reentrant_keeps_no_activations():
    packed = []
    x = retrograd.randn(4, 3, dtype=retrograd.float64, requires_grad=True)

    def fn(a):
        return a.sin().exp().sum()
    with retrograd.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        y = retrograd.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)
    assert packed == []          # the checkpoint's own hooks are innermost: nothing reached the outer ones
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), (np.cos(x.detach().numpy()) * np.exp(np.sin(x.detach().numpy()))))
    assert gradcheck(lambda a: retrograd.utils.checkpoint.checkpoint(fn, a, use_reentrant=False), (x,))


@needs_torch
def test_checkpoint_errors_match_torch():
    for lib in (torch, retrograd):
        x = lib.ones(2, requires_grad=True)
        with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
            lib.utils.checkpoint.checkpoint(lambda a: a, x, use_reentrant=True, foo=1)
        with pytest.raises(ValueError, match="Passing `context_fn` or `debug` is only supported when "
                                             "use_reentrant=False."):
            lib.utils.checkpoint.checkpoint(lambda a: a, x, use_reentrant=True, debug=True)
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True. Gradients will be None"):
            lib.utils.checkpoint.checkpoint(lambda a: a * 2, lib.ones(2), use_reentrant=True)


# --------------------------------------------------------------------------- lazy modules

LAZY = [(lambda l: l.nn.LazyLinear(3), (2, 5)), (lambda l: l.nn.LazyConv2d(4, 3, padding=1, groups=2), (2, 6, 5, 5)),
        (lambda l: l.nn.LazyConv1d(4, 3), (6, 5)), (lambda l: l.nn.LazyConvTranspose2d(4, 3, stride=2), (2, 6, 3, 3)),
        (lambda l: l.nn.LazyConv3d(2, 2), (1, 3, 3, 3, 3)), (lambda l: l.nn.LazyConvTranspose3d(2, 2), (1, 3, 3, 3, 3)),
        (lambda l: l.nn.LazyConvTranspose1d(2, 2), (1, 3, 3)), (lambda l: l.nn.LazyBatchNorm1d(), (4, 3)),
        (lambda l: l.nn.LazyBatchNorm2d(affine=False), (4, 3, 2, 2)), (lambda l: l.nn.LazyBatchNorm3d(), (2, 3, 2, 2, 2)),
        (lambda l: l.nn.LazyInstanceNorm1d(), (4, 3, 5)), (lambda l: l.nn.LazyInstanceNorm2d(affine=False), (4, 3, 2, 2))]


@needs_torch
@pytest.mark.parametrize("make,shape", LAZY)
def test_lazy_modules(make, shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    res = []
    tm, rm = make(torch), make(retrograd)
    for lib, m in ((torch, tm), (retrograd, rm)):
        before = (repr(m), list(m.state_dict()), [type(v).__name__ for v in m.state_dict().values()],
                  [n for n, _ in m.named_parameters()], m.has_uninitialized_params())
        m.double()
        m(lib.tensor(x))         # materializes and initializes
        res.append((before, type(m).__name__, repr(m), [(k, tuple(v.shape)) for k, v in m.state_dict().items()],
                    hasattr(m, "_initialize_hook"), m.has_uninitialized_params() if hasattr(m, "has_uninitialized_params")
                    else None))
    assert res[1] == res[0]
    _copy_into(rm, tm)
    to, ro = tm(torch.tensor(x, requires_grad=True)), rm(retrograd.tensor(x, requires_grad=True))
    np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_lazy_linear_materializes_from_a_state_dict_and_keeps_its_parameter_objects():
    src = retrograd.nn.Linear(5, 3)
    m = retrograd.nn.LazyLinear(3)
    w = m.weight
    opt = retrograd.optim.SGD(m.parameters(), lr=0.1)
    assert isinstance(w, retrograd.nn.UninitializedParameter) and repr(w) == "<UninitializedParameter>"
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        w.shape
    m.load_state_dict(src.state_dict())
    assert m.weight is w and type(w) is retrograd.nn.Parameter and tuple(w.shape) == (3, 5)
    np.testing.assert_array_equal(w.detach().numpy(), src.weight.detach().numpy())
    m(retrograd.ones(2, 5)).sum().backward()
    opt.step()
    assert type(m) is retrograd.nn.Linear and w.grad is not None


@needs_torch
def test_lazy_conv_bad_input():
    msgs = []
    for lib in (torch, retrograd):
        with pytest.raises(RuntimeError) as e:
            lib.nn.LazyConv2d(4, 3)(lib.ones(3, 4))
        with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
            lib.nn.LazyConv2d(4, 3, groups=2)(lib.ones(1, 3, 4, 4))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


# --------------------------------------------------------------- adaptive log-softmax

@needs_torch
@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax(head_bias):
    torch.manual_seed(0)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10, 15], div_value=2.0, head_bias=head_bias).double()
    rm = retrograd.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10, 15], div_value=2.0, head_bias=head_bias).double()
    assert repr(rm) == repr(tm)
    assert [(k, tuple(v.shape)) for k, v in rm.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    _copy_into(rm, tm)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((9, 16))
    t = np.array([0, 3, 4, 9, 10, 14, 15, 19, 2])
    res = []
    for lib, m in ((torch, tm), (retrograd, rm)):
        xt = lib.tensor(x, requires_grad=True)
        out, loss = m(xt, lib.tensor(t))
        loss.backward()
        one = m(xt[0], lib.tensor(t[0]))
        res.append((out.detach().numpy(), loss.item(), xt.grad.numpy(), [p.grad.numpy() for p in m.parameters()],
                    type(out.grad_fn).__name__, type(loss.grad_fn).__name__, m.log_prob(xt).detach().numpy(),
                    type(m.log_prob(xt).grad_fn).__name__, m.predict(xt).numpy(), one.output.detach().numpy(),
                    tuple(one.output.shape)))
    t_, r_ = res
    np.testing.assert_allclose(r_[0], t_[0], rtol=1e-10)
    assert r_[1] == pytest.approx(t_[1], rel=1e-12)
    np.testing.assert_allclose(r_[2], t_[2], rtol=1e-9, atol=1e-14)
    for a, b in zip(r_[3], t_[3]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-14)
    assert r_[4:6] == t_[4:6] and r_[7] == t_[7] and r_[10] == t_[10]
    np.testing.assert_allclose(r_[6], t_[6], rtol=1e-10)
    np.testing.assert_array_equal(r_[8], t_[8])
    np.testing.assert_allclose(r_[9], t_[9], rtol=1e-10)
    for lib, m in ((torch, tm), (retrograd, rm)):
        with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 19\], but values in range "
                                               r"\[0, 20\] were found."):
            m(lib.tensor(x[:2]), lib.tensor([0, 20]))
        with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive integers"):
            lib.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 4])


# -------------------------------------------------------------- fusion, skip_init, norms

@needs_torch
@pytest.mark.parametrize("kind", ["conv", "convT", "linear", "linear1"])
def test_fuse_bn_eval(kind):
    torch.manual_seed(0)
    make = {"conv": lambda l: (l.nn.Conv2d(3, 4, 3), l.nn.BatchNorm2d(4), (2, 3, 5, 5)),
            "convT": lambda l: (l.nn.ConvTranspose2d(3, 4, 3, bias=False), l.nn.BatchNorm2d(4), (2, 3, 5, 5)),
            "linear": lambda l: (l.nn.Linear(5, 4), l.nn.BatchNorm1d(4), (6, 5)),
            "linear1": lambda l: (l.nn.Linear(5, 4, bias=False), l.nn.BatchNorm1d(1), (6, 5))}[kind]
    tc, tb, shape = make(torch)
    rc, rb, _ = make(retrograd)
    tb.running_mean.uniform_(-1, 1)
    tb.running_var.uniform_(0.5, 2)
    tb.weight.data.uniform_(0.5, 2)
    tb.bias.data.uniform_(-1, 1)
    for a, b in ((rc, tc), (rb, tb)):
        _copy_into(a, b)
    for m in (tc, tb, rc, rb):
        m.double().eval()
    x = np.random.default_rng(0).standard_normal(shape)
    res = []
    for lib, c, b in ((torch, tc, tb), (retrograd, rc, rb)):
        if kind.startswith("conv"):
            f = lib.nn.utils.fuse_conv_bn_eval(c, b, transpose=kind == "convT")
        else:
            f = lib.nn.utils.fuse_linear_bn_eval(c, b)
        y = f(lib.tensor(x)).detach().numpy()
        res.append((y, [n for n, _ in f.named_parameters()], type(f.weight).__name__))
        if kind != "linear1":    # (a one-feature batch norm folds into every output; not applicable as a layer)
            np.testing.assert_allclose(y, b(c(lib.tensor(x))).detach().numpy(), rtol=1e-9, atol=1e-12)
        c.train()
        with pytest.raises(AssertionError, match="Fusion only for eval!"):
            (lib.nn.utils.fuse_conv_bn_eval if kind.startswith("conv") else lib.nn.utils.fuse_linear_bn_eval)(c, b)
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-10)
    assert res[1][1:] == res[0][1:]


@needs_torch
def test_skip_init_and_total_norm():
    m = retrograd.nn.utils.skip_init(retrograd.nn.Linear, 4, 3)
    assert type(m) is retrograd.nn.Linear and tuple(m.weight.shape) == (3, 4) and m.weight.device.type == "cpu"
    for lib in (torch, retrograd):
        with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip initialization"):
            lib.nn.utils.skip_init(lib.nn.ReLU)
    rng = np.random.default_rng(0)
    gs = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    res = []
    for lib in (torch, retrograd):
        ps = [lib.tensor(g.copy(), requires_grad=True) for g in gs]
        for p, g in zip(ps, gs):
            p.grad = lib.tensor(g.copy())
        total = lib.nn.utils.get_total_norm([p.grad for p in ps], 3.0)
        lib.nn.utils.clip_grads_with_norm_(ps, 1.0, total)
        res.append((total.item(), [p.grad.numpy() for p in ps]))
    assert res[1][0] == pytest.approx(res[0][0], rel=1e-12)
    for a, b in zip(res[1][1], res[0][1]):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@needs_torch
@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_modules(nd):
    rng = np.random.default_rng(nd)
    shape = (2, 3, 8, 7) if nd == 2 else (2, 2, 7, 6, 8)
    x = rng.standard_normal(shape)
    u = rng.random((2, shape[1], nd))
    res = []
    for lib in (torch, retrograd):
        cls = getattr(lib.nn, f"FractionalMaxPool{nd}d")
        m = cls(2, output_ratio=0.5, return_indices=True, _random_samples=lib.tensor(u))
        t = lib.tensor(x, requires_grad=True)
        out, idx = m(t)
        out.pow(2).sum().backward()
        res.append((out.detach().numpy(), idx.numpy(), t.grad.numpy(), repr(m), list(m.state_dict()),
                    m.kernel_size, m.output_ratio, m.output_size))
        for kw, msg in ((dict(), "requires specifying either an output size, or a pooling ratio"),
                        (dict(output_size=2, output_ratio=0.5), "only one of output_size and output_ratio"),
                        (dict(output_ratio=1.5), r"output_ratio must be between 0 and 1 \(got 1.5\)")):
            with pytest.raises(ValueError, match=msg):
                cls(2, **kw)
        # without samples: drawn from the generator, so only shapes and the window property are checked
        out2 = cls(2, output_size=3)(t)
        assert tuple(out2.shape) == shape[:2] + (3,) * nd
    (a, ia, ga, *ra), (b, ib, gb, *rb) = res
    np.testing.assert_array_equal(b, a)
    np.testing.assert_array_equal(ib, ia)
    np.testing.assert_allclose(gb, ga)
    assert ra == rb


def test_fractional_max_pool_gradcheck():
    rng = np.random.default_rng(0)
    x = retrograd.tensor(rng.standard_normal((1, 2, 7, 6)), requires_grad=True)
    u = retrograd.tensor(rng.random((1, 2, 2)))
    fn = lambda a: retrograd.nn.functional.fractional_max_pool2d(a, 2, (3, 4), _random_samples=u)  # noqa: E731
    assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))


# ----------------------------------------------------------------- torch.<name> forms

@needs_torch
def test_top_level_nn_functions():
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal((4, 3)) for _ in range(3))
    t01, pm = rng.random((4, 3)), np.sign(rng.standard_normal(4))
    lp = np.log(rng.dirichlet(np.ones(4), size=(6, 2)))
    cases = [
        ("kl_div", lambda l, x, y, z: l.kl_div(x, y.abs(), 2, log_target=False)),
        ("kl_div", lambda l, x, y, z: l.kl_div(x, y)),
        ("margin_ranking_loss", lambda l, x, y, z: l.margin_ranking_loss(x[:, 0], y[:, 0], l.tensor(pm), 0.2, 1)),
        ("triplet_margin_loss", lambda l, x, y, z: l.triplet_margin_loss(x, y, z, 1.0, 2, 1e-6, True, 1)),
        ("cosine_embedding_loss", lambda l, x, y, z: l.cosine_embedding_loss(x, y, l.tensor(pm), 0.1)),
        ("hinge_embedding_loss", lambda l, x, y, z: l.hinge_embedding_loss(x, l.tensor(np.sign(a)), 0.5, 2)),
        ("poisson_nll_loss", lambda l, x, y, z: l.poisson_nll_loss(x, y.abs(), True, True, 1e-8, 1)),
        ("binary_cross_entropy_with_logits",
         lambda l, x, y, z: l.binary_cross_entropy_with_logits(x, l.tensor(t01), None, z[0].abs().detach(), 1)),
        ("ctc_loss", lambda l, x, y, z: l.ctc_loss(l.tensor(lp), l.tensor([[1, 2], [3, 3]]), [6, 5], [2, 2])),
        ("ctc_loss", lambda l, x, y, z: l.ctc_loss(x.reshape(4, 1, 3).log_softmax(2), l.tensor([[1, 2]]), [4], [2],
                                                   0, 2)),
        ("embedding", lambda l, x, y, z: l.embedding(x, l.tensor([[0, 3], [2, 2]]), 2)),
        ("channel_shuffle", lambda l, x, y, z: l.channel_shuffle(x.reshape(1, 4, 3), 2)),
        ("conv_transpose3d", lambda l, x, y, z: l.conv_transpose3d(x.reshape(1, 2, 1, 2, 3), y.reshape(2, 1, 1, 2, 3),
                                                                  None, 1, 0, 0, 2)),
        ("convolution", lambda l, x, y, z: l.convolution(x.reshape(1, 4, 3), y.reshape(2, 2, 3), None, [1], [1], [1],
                                                         False, [0], 2)),
        ("convolution", lambda l, x, y, z: l.convolution(x.reshape(1, 4, 3), y.reshape(4, 1, 3), None, [2], [1], [1],
                                                         True, [1], 1)),
        ("conv_tbc", lambda l, x, y, z: l.conv_tbc(x.reshape(2, 2, 3), y.reshape(2, 3, 2), z[0, :2], 1)),
        ("lstm_cell", lambda l, x, y, z: l.lstm_cell(x[:2], (y[:2, :1], z[:2, :1]), y.reshape(4, 3), z[:, :1],
                                                     z[:, 1], z[:, 2])[0]),
        ("lstm_cell", lambda l, x, y, z: l.lstm_cell(x[:2], (y[:2, :1], z[:2, :1]), y.reshape(4, 3), z[:, :1])[1]),
        ("gru_cell", lambda l, x, y, z: l.gru_cell(x[:1], y[:1, :1], y[:3], z[:3, :1], z[:3, 1], z[:3, 2])),
        ("rnn_tanh_cell", lambda l, x, y, z: l.rnn_tanh_cell(x, y[:, :2], z[:2], y[:2, :2])),
        ("rnn_relu_cell", lambda l, x, y, z: l.rnn_relu_cell(x, y[:, :2], z[:2], y[:2, :2], z[0, :2])),
        ("max_pool1d_with_indices", lambda l, x, y, z: l.max_pool1d_with_indices(x.reshape(1, 4, 3), 2, [], 1)[0]),
        ("native_layer_norm", lambda l, x, y, z: l.native_layer_norm(x, [3], y[0], z[0], 1e-5)),
        ("native_batch_norm", lambda l, x, y, z: l.native_batch_norm(x, y[0], z[0], None, None, True, 0.1, 1e-5)),
        ("native_group_norm", lambda l, x, y, z: l.native_group_norm(x.reshape(2, 6), None, None, 2, 6, 1, 3,
                                                                     1e-5)),
    ]
    for name, fn in cases:
        outs = []
        for lib in (torch, retrograd):
            ts = [lib.tensor(v, requires_grad=True) for v in (a, b, c)]
            out = fn(lib, *ts)
            first = out[0] if isinstance(out, tuple) else out
            gs = lib.autograd.grad(first.sum(), ts, allow_unused=True) if first.requires_grad else ()
            outs.append(([o.detach().numpy() for o in (out if isinstance(out, tuple) else (out,))],
                         [None if g is None else g.numpy() for g in gs]))
        (to, tg), (ro, rg) = outs
        for x, y in zip(ro, to):
            np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12, err_msg=name)
        for x, y in zip(rg, tg):
            assert (x is None) == (y is None), name
            if x is not None:
                np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12, err_msg=name)


def test_native_dropout_mask_and_in_place_alpha_dropout():
    retrograd.manual_seed(0)
    x = retrograd.ones(4000, dtype=retrograd.float64, requires_grad=True)
    out, mask = retrograd.native_dropout(x, 0.25, True)
    m = mask.numpy()
    assert mask.dtype == retrograd.bool and abs(m.mean() - 0.75) < 0.03
    np.testing.assert_allclose(out.detach().numpy(), np.where(m, 1 / 0.75, 0.0))
    (g,) = retrograd.autograd.grad(out.sum(), x)
    np.testing.assert_allclose(g.numpy(), np.where(m, 1 / 0.75, 0.0))
    out, mask = retrograd.native_dropout(x, 0.25, False)
    assert bool(mask.all()) and np.array_equal(out.detach().numpy(), x.detach().numpy())
    y = retrograd.ones(10)
    assert retrograd.alpha_dropout_(y, 0.5, False) is y and retrograd.feature_alpha_dropout_(y, 0.5, False) is y


@needs_torch
def test_reentrant_checkpoint_rejects_restricted_backward():
    for lib in (torch, retrograd):
        x = lib.ones(3, requires_grad=True)
        for call in (lambda y: lib.autograd.grad(y.sum(), x), lambda y: y.sum().backward(inputs=[x])):
            y = lib.utils.checkpoint.checkpoint(lambda a: a.sin() * 2, x, use_reentrant=True)
            with pytest.raises(RuntimeError, match="When use_reentrant=True, torch.utils.checkpoint is incompatible "
                                                   r"with .grad\(\) or passing an `inputs` parameter"):
                call(y)
        # non-reentrant checkpointing works with both
        y = lib.utils.checkpoint.checkpoint(lambda a: a.sin() * 2, x, use_reentrant=False)
        (g,) = lib.autograd.grad(y.sum(), x)
        np.testing.assert_allclose(g.numpy(), 2 * np.cos(1.0) * np.ones(3), rtol=1e-6)


@needs_torch
@pytest.mark.parametrize("shape,orthogonal_map,triv", [((4, 4), None, True), ((5, 3), None, True),
                                                        ((3, 5), "matrix_exp", True), ((4, 4), "cayley", True),
                                                        ((3, 5), "cayley", True), ((5, 3), "householder", False),
                                                        ((4, 4), "householder", True)])
def test_orthogonal_parametrization(shape, orthogonal_map, triv):
    torch.manual_seed(0)
    tm = torch.nn.Linear(shape[1], shape[0], bias=False).double()
    rm = retrograd.nn.Linear(shape[1], shape[0], bias=False).double()
    _copy_into(rm, tm)
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=orthogonal_map, use_trivialization=triv)
    retrograd.nn.utils.parametrizations.orthogonal(rm, orthogonal_map=orthogonal_map, use_trivialization=triv)
    assert list(rm.state_dict()) == list(tm.state_dict()) and repr(rm) == repr(tm)
    w = rm.weight.detach().numpy()
    np.testing.assert_allclose(w, tm.weight.detach().numpy(), atol=1e-10)
    small = min(shape)
    gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-10)
    # a step away from the initial point (torch's state: its random completion of a non-square base)
    with torch.no_grad():
        tm.parametrizations.weight.original.add_(torch.tensor(np.random.default_rng(1).standard_normal(shape) * 0.3))
    _copy_into(rm, tm)
    x = np.random.default_rng(0).standard_normal((2, shape[1]))
    to, ro = tm(torch.tensor(x)), rm(retrograd.tensor(x))
    to.pow(2).sum().backward()
    ro.pow(2).sum().backward()
    np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), atol=1e-9)
    np.testing.assert_allclose(rm.parametrizations.weight.original.grad.numpy(),
                               tm.parametrizations.weight.original.grad.numpy(), atol=1e-8)


def test_orthogonal_matrix_exp_gradcheck():
    from retrograd.nn.utils._orthogonal import _matrix_exp, _householder_product
    rng = np.random.default_rng(0)
    a = retrograd.tensor(rng.standard_normal((3, 3)) * 2, requires_grad=True)
    assert gradcheck(_matrix_exp, (a,))
    v = retrograd.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    tau = retrograd.tensor(rng.random(2) + 0.5, requires_grad=True)
    assert gradcheck(_householder_product, (v, tau))
    import scipy.linalg
    np.testing.assert_allclose(_matrix_exp(a).detach().numpy(), scipy.linalg.expm(a.detach().numpy()), rtol=1e-12)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_top_level_embedding_bag(dtype):
    w = np.random.default_rng(0).standard_normal((6, 3)).astype(dtype)
    idx = np.array([1, 2, 4, 5, 4, 3])
    for offsets, args in [((0, 2, 2, 5), (False, 0)), ((0, 2, 2, 5), (False, 1)), ((0, 2, 2, 5), (False, 2)),
                          ((0, 2, 2, 6), (False, 0, False, None, True)), ((0, 2, 2, 6), (False, 2, False, None, True)),
                          ((0, 2, 2, 5), (False, 0, False, None, False, 2)),
                          ((0, 2, 2, 5), (False, 1, False, None, False, 2))]:
        res = []
        for lib in (torch, retrograd):
            wt = lib.tensor(w, requires_grad=True)
            r = lib.embedding_bag(wt, lib.tensor(idx), lib.tensor(np.array(offsets)), *args)
            r[0].pow(2).sum().backward()
            res.append([t.detach().numpy() for t in r] + [wt.grad.numpy()])
        for a, b in zip(res[1], res[0]):
            assert a.shape == b.shape and a.dtype == b.dtype, (offsets, args)
            np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=str((offsets, args)))


@needs_torch
def test_functional_conv_tbc():
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((5, 2, 3)), rng.standard_normal((3, 3, 4)), rng.standard_normal(4)
    res = []
    for lib in (torch, retrograd):
        ts = [lib.tensor(v, requires_grad=True) for v in (x, w, b)]
        out = lib.nn.functional.conv_tbc(*ts, 1)
        out.pow(2).sum().backward()
        res.append([out.detach().numpy()] + [t.grad.numpy() for t in ts])
    for a, b_ in zip(res[1], res[0]):
        np.testing.assert_allclose(a, b_, rtol=1e-10)


@needs_torch
@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_pool_random_samples_that_require_grad_are_refused_as_torch(nd):
    errors = []
    for lib in (retrograd, torch):
        x = lib.ones((1, 2) + (6,) * nd, requires_grad=True)
        rs = lib.full((1, 2, nd), 0.5, requires_grad=True)
        f = getattr(lib.nn.functional, f"fractional_max_pool{nd}d")
        with pytest.raises(RuntimeError) as e:
            f(x, 2, output_size=3, _random_samples=rs)
        errors.append(str(e.value))
        with lib.no_grad():      # (no graph: nothing to refuse)
            assert tuple(f(x, 2, output_size=3, _random_samples=rs).shape) == (1, 2) + (3,) * nd
    assert errors[0] == errors[1]
