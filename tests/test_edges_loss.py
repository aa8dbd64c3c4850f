"""Losses and distances at the edges, against PyTorch: second derivatives (binary cross
entropy's own double-backward formulas, pos_weight in the target gradient), norms below
eps, ignored targets, boundary points of huber/smooth L1, ties in triplet swap, 0-d
inputs, cross_entropy double backward for every input layout, and PyTorch's checks.
Each gradient case also has a float64 finite-difference check that needs no torch."""
import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from helpers import torch, needs_torch

R = ("mean", "sum", "none")


def _np(t):
    if t is None:
        return None
    if torch is not None and isinstance(t, torch.Tensor):
        if t._is_zerotensor():
            return np.zeros(tuple(t.shape), str(t.dtype).split(".")[-1])
        return t.detach().numpy()
    return np.asarray(t.detach()._data)


def _derivatives(L, fn, arrays, grad_idx, seed=0):
    """Value, first derivatives w.r.t. ``grad_idx`` under a random upstream ``u``, and the
    second derivatives of ``sum(g * v)`` w.r.t. the same inputs and ``u``."""
    rng = np.random.default_rng(seed)
    ts = [L.from_numpy(np.array(a, copy=True)) if isinstance(a, np.ndarray) else a for a in arrays]
    for i in grad_idx:
        ts[i].requires_grad_(True)
    out = fn(L, *ts)
    res = {"val": _np(out), "dtype": str(out.dtype), "gf": type(out.grad_fn).__name__}
    u = L.from_numpy(rng.standard_normal(tuple(out.shape)).astype(res["val"].dtype)).requires_grad_(True)
    leaves = [ts[i] for i in grad_idx]
    gs = L.autograd.grad((out * u).sum(), leaves, create_graph=True, allow_unused=True)
    res["g"] = [_np(g) for g in gs]
    res["h"] = []
    for g in gs:
        if g is None or not g.requires_grad:
            res["h"].append(None)
            continue
        v = L.from_numpy(rng.standard_normal(tuple(g.shape)).astype(_np(g).dtype))
        hs = L.autograd.grad((g * v).sum(), leaves + [u], allow_unused=True, retain_graph=True)
        res["h"].append([_np(h) for h in hs])
    return res


def _close(a, b, rtol, atol, what):
    if a is None and b is None:
        return
    a = np.zeros_like(b) if a is None else a
    b = np.zeros_like(a) if b is None else b
    assert a.shape == b.shape, what
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def assert_parity(fn, arrays, grad_idx, rtol=1e-10, atol=1e-12, second=True):
    """``fn`` on retrograd and torch: value, dtype, grad_fn, first and second derivatives."""
    r = _derivatives(retrograd, fn, arrays, grad_idx)
    t = _derivatives(torch, fn, arrays, grad_idx)
    assert r["dtype"] == t["dtype"] and r["gf"] == t["gf"], (r["dtype"], t["dtype"], r["gf"], t["gf"])
    _close(r["val"], t["val"], rtol, atol, "value")
    for k, (a, b) in enumerate(zip(r["g"], t["g"])):
        _close(a, b, rtol, atol, f"d/d input {k}")
    if not second:
        return
    for k, (a, b) in enumerate(zip(r["h"], t["h"])):
        if a is None and b is None:
            continue
        assert a is not None and b is not None, f"second derivative of gradient {k}: retrograd {a}, torch {b}"
        for j, (x, y) in enumerate(zip(a, b)):
            _close(x, y, rtol, atol, f"d(grad {k})/d input {j}")


def rg(a):
    return retrograd.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def Fn(L):
    return L.nn.functional


# *** binary cross entropy: PyTorch's double backward, a differentiable target gradient ***

X3, T3 = np.array([.3, .9, .7]), np.array([.47, .66, .43])


@needs_torch
def test_bce_second_derivative_matches_torch():
    x = torch.tensor(X3, requires_grad=True)
    gx, = torch.autograd.grad(Fn(torch).binary_cross_entropy(x, torch.tensor(T3), reduction="sum"), x,
                              create_graph=True)
    want = torch.autograd.grad(gx.sum(), x)[0].numpy()
    xr = rg(X3)
    gr, = retrograd.autograd.grad(Fn(retrograd).binary_cross_entropy(xr, retrograd.tensor(T3), reduction="sum"),
                                  xr, create_graph=True)
    np.testing.assert_allclose(retrograd.autograd.grad(gr.sum(), xr)[0].numpy(), want, rtol=1e-12)


@needs_torch
def test_bce_target_gradient_is_differentiable():
    for L in (retrograd, torch):
        x = L.tensor(X3, requires_grad=True)
        t = L.tensor(T3, requires_grad=True)
        _, gt = L.autograd.grad(Fn(L).binary_cross_entropy(x, t, reduction="sum"), (x, t), create_graph=True)
        assert gt.grad_fn is not None and type(gt.grad_fn).__name__ == "MulBackward0"
    for red in R:
        for w in (None, np.array([1.5, .5, 2.])):
            extra = [] if w is None else [w]
            assert_parity(lambda L, x, t, *w, red=red: Fn(L).binary_cross_entropy(x, t, *w, reduction=red),
                          [X3, T3] + extra, [0, 1])


@needs_torch
@pytest.mark.parametrize("red", R)
def test_bce_clamped_points_match_torch(red):
    # 0, 1 and points where x(1 - x) is under the clamp: both eps conventions of PyTorch
    assert_parity(lambda L, x, t: Fn(L).binary_cross_entropy(x, t, reduction=red),
                  [np.array([0., 1., 1e-13, .5, 1 - 1e-13]), np.array([.3, .6, .2, .5, 1.])], [0, 1])


@pytest.mark.parametrize("red", R)
def test_bce_gradgradcheck(red):
    w = retrograd.tensor([1.5, .5, 2.], dtype=retrograd.float64)
    fn = lambda x, t: retrograd.nn.functional.binary_cross_entropy(x, t, w, reduction=red)  # noqa: E731
    assert gradcheck(fn, (rg(X3), rg(T3)))
    assert gradgradcheck(fn, (rg(X3), rg(T3)))


# *** binary cross entropy with logits: pos_weight in every derivative ***

XL = np.array([.3, -.9, 1.7])
PW = np.array([2.5, .7, 1.3])


@needs_torch
def test_bce_logits_mixed_derivative_includes_pos_weight():
    # d(dl/dt)/dx at x=.3, pos_weight 2.5 (the case): torch -1.83
    outs = []
    for L in (retrograd, torch):
        x = L.tensor([.3], dtype=L.float64, requires_grad=True)
        t = L.tensor([.47], dtype=L.float64, requires_grad=True)
        l = Fn(L).binary_cross_entropy_with_logits(x, t, pos_weight=L.tensor([2.5], dtype=L.float64),
                                                   reduction="sum")
        _, gt = L.autograd.grad(l, (x, t), create_graph=True)
        outs.append(L.autograd.grad(gt.sum(), x)[0].numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12)


@needs_torch
@pytest.mark.parametrize("red", R)
def test_bce_logits_derivatives_match_torch(red):
    w = np.array([1.5, .5, 2.])
    assert_parity(lambda L, x, t, w, pw: Fn(L).binary_cross_entropy_with_logits(x, t, w, reduction=red,
                                                                                 pos_weight=pw),
                  [XL, T3, w, PW], [0, 1])
    assert_parity(lambda L, x, t: Fn(L).binary_cross_entropy_with_logits(x, t, reduction=red), [XL, T3], [0, 1])
    xi = np.array([np.inf, -np.inf, 0., 50., -50.])
    assert_parity(lambda L, x, t: Fn(L).binary_cross_entropy_with_logits(
        x, t, reduction=red, pos_weight=L.tensor([2.] * 5, dtype=L.float64)), [xi, np.array([1., 0., .5, .2, .7])],
        [0, 1])


@pytest.mark.parametrize("red", R)
def test_bce_logits_gradgradcheck(red):
    pw = retrograd.tensor(PW)
    w = retrograd.tensor([1.5, .5, 2.], dtype=retrograd.float64)
    fn = lambda x, t: retrograd.nn.functional.binary_cross_entropy_with_logits(  # noqa: E731
        x, t, w, reduction=red, pos_weight=pw)
    assert gradcheck(fn, (rg(XL), rg(T3)))
    assert gradgradcheck(fn, (rg(XL), rg(T3)))


@needs_torch
def test_bce_weights_are_not_differentiable():
    for L in (retrograd, torch):
        F = Fn(L)
        x, t = L.full((3,), .5), L.full((3,), .5)
        with pytest.raises(RuntimeError, match="The function 'binary_cross_entropy' is not differentiable with "
                                               "respect to argument 'weight'. This input cannot have requires_grad"):
            F.binary_cross_entropy(x, t, L.ones(3, requires_grad=True))
        with pytest.raises(RuntimeError, match="'binary_cross_entropy_with_logits' is not differentiable with "
                                               "respect to argument 'pos_weight'"):
            F.binary_cross_entropy_with_logits(x, t, pos_weight=L.ones(3, requires_grad=True))
        with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
            F.binary_cross_entropy(x, L.full((3,), 1.5))
        with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
            F.binary_cross_entropy(L.tensor([float("nan")]), L.zeros(1))
        with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
            F.binary_cross_entropy(x, t.double())
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
            F.binary_cross_entropy_with_logits(x, L.ones(3, dtype=L.int64))
        with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
            F.binary_cross_entropy_with_logits(x, t, L.ones(2, 3))
        assert F.binary_cross_entropy_with_logits(x, t.double()).dtype == L.float64


# *** cosine similarity: each norm clamped at eps in value only ***

@needs_torch
def test_cosine_similarity_below_eps_matches_torch():
    a, b = np.array([[.3], [1.2]]), np.array([[.7], [.2]])
    assert_parity(lambda L, x, y: Fn(L).cosine_similarity(x, y, dim=1, eps=.5), [a, b], [0, 1], atol=1e-15)
    x = rg(a)
    Fn(retrograd).cosine_similarity(x, retrograd.tensor(b), dim=1, eps=.5).sum().backward()
    xt = torch.tensor(a, requires_grad=True)
    Fn(torch).cosine_similarity(xt, torch.tensor(b), dim=1, eps=.5).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), atol=1e-15)


@needs_torch
@pytest.mark.parametrize("s1,s2,dim", [((3, 4), (3, 4), 1), ((3, 4), (4,), -1), ((4,), (4,), 0),
                                       ((2, 3, 4), (3, 1), 1), ((0, 4), (0, 4), 1)])
def test_cosine_similarity_matches_torch(s1, s2, dim):
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-2, 2, s1), rng.uniform(-2, 2, s2)
    assert_parity(lambda L, x, y: Fn(L).cosine_similarity(x, y, dim), [a, b], [0, 1])
    assert_parity(lambda L, x, y: Fn(L).cosine_similarity(x, y, dim, eps=1.5), [a, b], [0, 1], second=False)


def test_cosine_similarity_gradgradcheck():
    rng = np.random.default_rng(0)
    fn = lambda x, y: retrograd.nn.functional.cosine_similarity(x, y, -1)  # noqa: E731
    args = (rg(rng.uniform(-2, 2, (3, 4))), rg(rng.uniform(-2, 2, (4,))))
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


@needs_torch
def test_cosine_similarity_dtype_error():
    for L in (retrograd, torch):
        with pytest.raises(RuntimeError, match="expected common dtype to be floating point, yet common dtype is Long"):
            Fn(L).cosine_similarity(L.ones(2, 3, dtype=L.int64), L.ones(2, 3, dtype=L.int64))


# *** ignored targets: selected out, never multiplied ***

@needs_torch
@pytest.mark.parametrize("red", R)
def test_all_targets_ignored(red):
    x = np.zeros((3, 5))
    tall = np.full(3, -100)
    for kw in ({}, {"label_smoothing": .1}, {"weight": "w"}):
        def fn(L, x, t, kw=kw):
            kw = dict(kw)
            if kw.get("weight") == "w":
                kw["weight"] = L.ones(5, dtype=L.float64)
            return Fn(L).cross_entropy(x, t, reduction=red, **kw)
        assert_parity(fn, [x, tall], [0])
    assert_parity(lambda L, x, t: Fn(L).nll_loss(x, t, reduction=red), [x, tall], [0])
    r = Fn(retrograd).cross_entropy(rg(x), retrograd.tensor(tall), reduction=red)
    t = Fn(torch).cross_entropy(torch.tensor(x, requires_grad=True), torch.tensor(tall), reduction=red)
    np.testing.assert_equal(_np(r), _np(t))     # nan for 'mean', exactly as torch


@needs_torch
@pytest.mark.parametrize("red", R)
def test_infinite_logits_at_ignored_targets(red):
    x = np.random.default_rng(0).uniform(-2, 2, (3, 5))
    x[0] = -np.inf
    t = np.array([-100, 1, 2])
    assert_parity(lambda L, x, t: Fn(L).cross_entropy(x, t, reduction=red), [x, t], [0])
    assert_parity(lambda L, x, t: Fn(L).nll_loss(x, t, reduction=red), [x, t], [0])
    assert_parity(lambda L, x, t: Fn(L).cross_entropy(x, t, reduction=red, label_smoothing=.1), [x, t], [0])


@needs_torch
def test_nan_upstream_gradient_at_ignored_targets():
    grads = []
    for L in (retrograd, torch):
        x = L.zeros(3, 5, dtype=L.float64, requires_grad=True)
        l = Fn(L).nll_loss(x, L.tensor([-100, 1, 2]), reduction="none")
        l.backward(L.tensor([float("nan"), 1., 2.], dtype=L.float64))
        grads.append(x.grad.numpy())
    np.testing.assert_equal(grads[0], grads[1])
    assert not np.isnan(grads[0][0]).any()


# *** boundary conventions: huber at |d| == delta, smooth L1 at |d| == beta, normalize at 0 ***

@needs_torch
@pytest.mark.parametrize("red", R)
def test_huber_smooth_l1_boundaries(red):
    x, y = np.array([1., -1., .5, 0., 2., .7, -.7]), np.zeros(7)
    assert_parity(lambda L, a, b: Fn(L).huber_loss(a, b, reduction=red), [x, y], [0, 1])
    assert_parity(lambda L, a, b: Fn(L).huber_loss(a, b, reduction=red, delta=.7), [x, y], [0, 1])
    assert_parity(lambda L, a, b: Fn(L).smooth_l1_loss(a, b, reduction=red), [x, y], [0, 1])
    assert_parity(lambda L, a, b: Fn(L).smooth_l1_loss(a, b, reduction=red, beta=.7), [x, y], [0, 1])
    w = np.linspace(.5, 1.5, 7)
    assert_parity(lambda L, a, b, w: Fn(L).huber_loss(a, b, reduction=red, weight=w), [x, y, w], [0, 1, 2])


def test_huber_smooth_l1_gradgradcheck():
    rng = np.random.default_rng(0)
    a, b = rg(rng.uniform(-2, 2, (3, 4))), rg(rng.uniform(-2, 2, (3, 4)))
    for fn in (lambda x, y: retrograd.nn.functional.huber_loss(x, y, delta=.6),
               lambda x, y: retrograd.nn.functional.smooth_l1_loss(x, y, reduction="sum", beta=.6),
               lambda x, y: retrograd.nn.functional.mse_loss(x, y, reduction="none")):
        assert gradcheck(fn, (a, b))
        assert gradgradcheck(fn, (a, b))


@needs_torch
def test_normalize_zero_row_first_derivative():
    x = np.array([[0., 0.], [1., 2.]])
    for p in (2, 1, 3):
        assert_parity(lambda L, a, p=p: Fn(L).normalize(a, p), [x], [0], second=False)


def _vector_norm_masks_like_torch():
    # PyTorch's norm backward is grad * (x / norm).masked_fill_(norm == 0, 0): its own second
    # derivative at a zero vector is nan (0/0 through the division), which normalize's eps clamp
    # then selects away; the zero row of normalize needs that formula and where's selection
    x = retrograd.zeros(1, 2, dtype=retrograd.float64, requires_grad=True)
    g, = retrograd.autograd.grad(x.norm(2, 1).sum(), x, create_graph=True)
    h, = retrograd.autograd.grad((g * retrograd.tensor([[1., 2.]], dtype=retrograd.float64)).sum(), x)
    return bool(np.isnan(h.numpy()).all())


@needs_torch
@pytest.mark.xfail(not _vector_norm_masks_like_torch(), strict=True,
                   reason="vector_norm backward / where selection at a zero norm (reduce and index ops)")
def test_normalize_zero_row_second_derivative():
    # torch: the eps clamp makes the second derivative ~1e12 at a zero row, never nan
    x = np.array([[0., 0., 0.], [1., 2., -1.]])
    for p in (2, 3):
        assert_parity(lambda L, a, p=p: Fn(L).normalize(a, p), [x], [0], rtol=1e-9, atol=1e-3)


def test_normalize_gradgradcheck():
    rng = np.random.default_rng(0)
    for p in (2, 3, 1.5):
        assert gradgradcheck(lambda a, p=p: retrograd.nn.functional.normalize(a, p), (rg(rng.uniform(-2, 2, (3, 4))),))


# *** ties: triplet_margin_loss(swap=True) shares the gradient like torch.min ***

@needs_torch
@pytest.mark.parametrize("red", R)
def test_triplet_swap_tie(red):
    a, p, n = np.zeros((2, 2)), np.array([[2., 0.], [1., 0.]]), np.array([[1., 1.], [1., 1.]])
    assert_parity(lambda L, x, y, z: Fn(L).triplet_margin_loss(x, y, z, swap=True, eps=0., margin=5., reduction=red),
                  [a, p, n], [0, 1, 2])


@needs_torch
@pytest.mark.parametrize("p", [2, 1, 3, float("inf")])
def test_triplet_and_pairwise_match_torch(p):
    rng = np.random.default_rng(0)
    a, b, c = (rng.uniform(-2, 2, (4, 3)) for _ in range(3))
    for sw in (False, True):
        assert_parity(lambda L, x, y, z: Fn(L).triplet_margin_loss(x, y, z, p=p, swap=sw), [a, b, c], [0, 1, 2])
    assert_parity(lambda L, x, y: Fn(L).pairwise_distance(x, y, p, keepdim=True), [a, b[0]], [0, 1])


def test_triplet_gradgradcheck():
    rng = np.random.default_rng(0)
    args = tuple(rg(rng.uniform(-2, 2, (4, 3))) for _ in range(3))
    fn = lambda a, b, c: retrograd.nn.functional.triplet_margin_loss(a, b, c, swap=True)  # noqa: E731
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


# *** 0-d inputs with reduction='none' make proper 0-d tensors ***

ZERO_D = [
    lambda L, F: F.mse_loss(L.tensor(1.5), L.tensor(1.), reduction="none"),
    lambda L, F: F.l1_loss(L.tensor(1.5), L.tensor(1.), reduction="none"),
    lambda L, F: F.smooth_l1_loss(L.tensor(1.5), L.tensor(1.), reduction="none"),
    lambda L, F: F.huber_loss(L.tensor(1.5), L.tensor(1.), reduction="none"),
    lambda L, F: F.binary_cross_entropy(L.tensor(.25), L.tensor(1.), reduction="none"),
    lambda L, F: F.binary_cross_entropy(L.tensor(.25), L.tensor(1.), L.tensor(2.), reduction="none"),
    lambda L, F: F.binary_cross_entropy_with_logits(L.tensor(1.5), L.tensor(1.), reduction="none",
                                                    pos_weight=L.tensor(2.)),
    lambda L, F: F.margin_ranking_loss(L.tensor(.5), L.tensor(1.), L.tensor(1.), reduction="none"),
    lambda L, F: F.kl_div(L.tensor(-1.5), L.tensor(.5), reduction="none"),
    lambda L, F: F.pairwise_distance(L.tensor(1.5), L.tensor(.5)),
    lambda L, F: F.triplet_margin_loss(L.tensor(1.5), L.tensor(.5), L.tensor(1.), reduction="none"),
    lambda L, F: F.nll_loss(L.tensor([.5, -1.]), L.tensor(1), reduction="none"),
    lambda L, F: F.cross_entropy(L.tensor([.5, -1.]), L.tensor(1), reduction="none"),
]


@needs_torch
@pytest.mark.parametrize("k", range(len(ZERO_D)))
def test_zero_dim_results(k):
    r = ZERO_D[k](retrograd, retrograd.nn.functional)
    t = ZERO_D[k](torch, torch.nn.functional)
    assert r.shape == () and type(r._data) is np.ndarray
    assert r.item() == pytest.approx(t.item(), rel=1e-6)
    assert r.dtype == retrograd.float32


# *** cross_entropy double backward for every input layout ***

def _ce_case(shape, kind, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    tshape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    if kind == "prob":
        p = rng.dirichlet(np.ones(shape[1 if len(shape) > 1 else 0]), size=int(np.prod(tshape)) if tshape else None)
        t = np.moveaxis(p.reshape(tshape + (-1,)), -1, 1) if tshape else p
        return x, np.ascontiguousarray(t)
    t = rng.integers(0, shape[1 if len(shape) > 1 else 0], tshape)
    if kind == "ignore" and t.size:
        t.flat[0] = 1
    return x, t


CE_LAYOUTS = [(3,), (4, 3), (2, 3, 4), (2, 3, 2, 2), (2, 3, 1, 2, 2)]


@needs_torch
@pytest.mark.parametrize("shape", CE_LAYOUTS)
@pytest.mark.parametrize("red", R)
def test_cross_entropy_double_backward_layouts(shape, red):
    w = np.array([.2, .7, 1.3])
    x, t = _ce_case(shape, "index")
    assert_parity(lambda L, x, t: Fn(L).cross_entropy(x, t, reduction=red), [x, t], [0])
    assert_parity(lambda L, x, t: Fn(L).nll_loss(x, t, reduction=red), [x, t], [0])
    x, t = _ce_case(shape, "ignore")
    assert_parity(lambda L, x, t, w: Fn(L).cross_entropy(x, t, w, ignore_index=1, reduction=red,
                                                         label_smoothing=.2), [x, t, w], [0])
    x, t = _ce_case(shape, "prob")
    assert_parity(lambda L, x, t, w: Fn(L).cross_entropy(x, t, w, reduction=red, label_smoothing=.1),
                  [x, t, w], [0, 1])


@pytest.mark.parametrize("shape", [(3,), (2, 3, 4), (2, 3, 2, 2)])
@pytest.mark.parametrize("red", R)
def test_cross_entropy_gradgradcheck_layouts(shape, red):
    x, t = _ce_case(shape, "ignore", seed=1)
    w = retrograd.tensor([.2, .7, 1.3], dtype=retrograd.float64)
    tt = retrograd.tensor(t)
    fn = lambda a: retrograd.nn.functional.cross_entropy(a, tt, w, ignore_index=1, reduction=red,  # noqa: E731
                                                         label_smoothing=.2)
    assert gradcheck(fn, (rg(x),))
    assert gradgradcheck(fn, (rg(x),))


def test_nll_loss_gradient_stays_in_graph():
    # the input gradient of nll_loss is constant in the input, yet attached (zeros at second order)
    x = rg(np.zeros((2, 3)))
    g, = retrograd.autograd.grad(retrograd.nn.functional.nll_loss(x, retrograd.tensor([0, 2])), x, create_graph=True)
    assert g.requires_grad
    h, = retrograd.autograd.grad(g.sum(), x)
    np.testing.assert_equal(h.numpy(), np.zeros((2, 3)))


# *** PyTorch's checks and messages ***

@needs_torch
def test_classification_errors():
    for L in (retrograd, torch):
        F = Fn(L)
        x = L.zeros(3, 5)
        for dt, name in ((L.int32, "Int"), (L.int16, "Short"), (L.bool, "Bool"), (L.float32, "Float")):
            with pytest.raises(RuntimeError, match=f"expected target dtype to be Long or Byte, but got {name}"):
                F.nll_loss(x, L.zeros(3, dtype=dt))
        F.nll_loss(x, L.zeros(3, dtype=L.uint8))
        with pytest.raises(ValueError, match=r"Expected 1 or more dimensions \(got 0\)"):
            F.nll_loss(L.zeros(()), L.tensor(0))
        with pytest.raises(RuntimeError, match="Expected floating point type for target with class probabilities, "
                                               "got Long"):
            F.cross_entropy(L.zeros(3), L.zeros(3, dtype=L.int64))
        with pytest.raises(ValueError, match="For 1D input, 1D target must have size 1, but got target size: 3"):
            F.nll_loss(L.zeros(3), L.zeros(3, dtype=L.int64))
        with pytest.raises(RuntimeError, match="only batches of spatial targets supported"):
            F.nll_loss(L.zeros(2, 3, 4, 5), L.zeros(2, 4, dtype=L.int64))
        with pytest.raises(RuntimeError, match=r"size mismatch \(got input: \[2, 3, 4, 5\] , target: \[2, 4, 6\]"):
            F.nll_loss(L.zeros(2, 3, 4, 5), L.zeros(2, 4, 6, dtype=L.int64))
        with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
            F.cross_entropy(x, L.zeros(3, dtype=L.int64), L.ones(5, dtype=L.float64))
        with pytest.raises(RuntimeError, match="The function 'nll_loss_forward' is not differentiable with respect "
                                               "to argument 'weight'"):
            F.cross_entropy(x, L.zeros(3, dtype=L.int64), L.ones(5, requires_grad=True))
        with pytest.raises(NotImplementedError, match='"nll_loss2d_forward_out_frame" not implemented for \'Long\''):
            F.nll_loss(L.ones(2, 3, 4, 5, dtype=L.int64), L.zeros(2, 4, 5, dtype=L.int64))
        with pytest.raises(NotImplementedError, match='"mse_cpu" not implemented for \'Long\''):
            F.mse_loss(L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64))
        assert F.mse_loss(L.ones(3, dtype=L.int64), L.zeros(3)).item() == 1.0
        with pytest.raises(ValueError, match="Weights and input must have the same size."):
            F.mse_loss(L.ones(3), L.ones(3), weight=L.ones(2))
        with pytest.raises(RuntimeError, match="kl_div: Integral inputs not supported."):
            F.kl_div(L.ones(3, dtype=L.int64), L.ones(3), reduction="sum")
        with pytest.raises(RuntimeError, match="0D target tensor expects 1D input tensors, but found inputs with "
                                               r"sizes \[2, 3\] and \[2, 3\]."):
            F.cosine_embedding_loss(L.ones(2, 3), L.ones(2, 3), L.tensor(1))
        F.cross_entropy(x, L.zeros(3, dtype=L.int64), label_smoothing=-0.5)   # torch accepts it


@needs_torch
@pytest.mark.parametrize("red", R)
def test_weighted_regression_losses(red):
    rng = np.random.default_rng(0)
    x, y, w = rng.uniform(-2, 2, (3, 4)), rng.uniform(-2, 2, (3, 4)), rng.uniform(0, 2, (3, 4))
    for f in ("mse_loss", "l1_loss", "huber_loss"):
        assert_parity(lambda L, a, b, c, f=f: getattr(Fn(L), f)(a, b, reduction=red, weight=c), [x, y, w], [0, 1, 2])


@needs_torch
@pytest.mark.parametrize("red", R + ("batchmean",))
def test_kl_div_zero_target(red):
    rng = np.random.default_rng(0)
    x, t = rng.uniform(-2, 2, (3, 4)), rng.uniform(0, 1, (3, 4))
    t[0, 0] = 0
    assert_parity(lambda L, a, b: Fn(L).kl_div(a, b, reduction=red), [x, t], [0, 1])


# *** nll_loss on a permuted 4-d input: torch 2.13's nll_loss2d backward refuses it ***

@needs_torch
@pytest.mark.parametrize("red", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_2d_permuted_input_gradient(red, weighted):
    """A channels-last-like (permuted) input: torch's backward raises 'grad_input must be
    contiguous' (a torch bug, KNOWN_MISMATCHES for the fuzzer); retrograd's value and
    gradient equal torch's for the contiguous copy."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 2, 3))
    t = np.array([[[4, 3, 0], [1, 3, 2]], [[3, 2, 1], [4, 0, 0]]])
    w = rng.uniform(0.5, 1.5, 5)
    out = {}
    for L in (retrograd, torch):
        xt = L.tensor(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), requires_grad=True)
        xp = xt.permute(0, 3, 1, 2)
        kw = {"weight": L.tensor(w)} if weighted else {}
        y = Fn(L).nll_loss(xp if L is retrograd else xp.contiguous(), L.tensor(t), reduction=red, **kw)
        y.backward(L.tensor(np.linspace(0.5, 2.0, y.numel()).reshape(tuple(y.shape))))
        out[L] = (_np(y), _np(xt.grad))
        if L is torch:
            with pytest.raises(RuntimeError, match="grad_input must be contiguous"):
                Fn(L).nll_loss(xp, L.tensor(t), reduction=red, **kw).sum().backward()
    for a, b in zip(out[retrograd], out[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_nll_loss_2d_permuted_input_gradcheck():
    x = retrograd.tensor(np.random.default_rng(5).standard_normal((2, 2, 3, 4)), requires_grad=True)
    t = retrograd.tensor([[[3, 0, 1], [1, 2, 3]], [[2, 1, 0], [0, 0, 3]]])
    fn = lambda x: retrograd.nn.functional.nll_loss(x.permute(0, 3, 1, 2), t, reduction="none")   # noqa: E731
    assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))
