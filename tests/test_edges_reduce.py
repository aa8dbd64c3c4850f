"""Reductions, scans, sorting and index ops at their edges, against PyTorch: zeros in
products, ties and NaNs in selections, zero variance, empty dimensions, non-finite
upstream gradients, second derivatives, saved-input version checks and tie order."""
import math
import warnings

import numpy as np
import pytest

import retrograd
from retrograd.autograd import gradcheck, gradgradcheck
from helpers import torch, needs_torch

nan, inf = math.nan, math.inf


# --- one comparison for every case: values, dtypes, errors, first and second derivatives ---

def _np(t):
    if torch is not None and isinstance(t, torch.Tensor):
        return t.detach().numpy(force=True)
    return np.asarray(t.detach()._data)


def _same(a, b, tol=1e-9):
    """Equal values, with NaN where the other has NaN and infinities of the same sign."""
    assert a.shape == b.shape, f"shape {a.shape} != torch {b.shape}"
    if a.dtype.kind in "fc":
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(np.isposinf(a), np.isposinf(b))
        np.testing.assert_array_equal(np.isneginf(a), np.isneginf(b))
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(a, b)


def _outs(o):
    return [t for t in (o if isinstance(o, (tuple, list)) else (o,)) if hasattr(t, "shape")]


def parity(fn, *arrays, ups=None, second=True, seed=0):
    """Run ``fn(lib, *tensors)`` on retrograd and torch (float inputs require grad) and
    compare outputs, then gradients under ``ups`` (or random) upstream gradients with
    create_graph, then second derivatives along a random direction."""
    rng = np.random.default_rng(seed)
    runs = {}
    for lib in (retrograd, torch):
        ins = [lib.from_numpy(np.array(a, copy=True)) for a in arrays]
        for t in ins:
            if t.is_floating_point():
                t.requires_grad_(True)
        runs[lib] = (_outs(fn(lib, *ins)), [t for t in ins if t.requires_grad])
    (ro, rl), (to, tl) = runs[retrograd], runs[torch]
    assert len(ro) == len(to)
    for r, t in zip(ro, to):
        assert str(r.dtype) == str(t.dtype)
        _same(_np(r), _np(t))
    sel = [i for i, t in enumerate(to) if t.requires_grad]
    assert sel == [i for i, r in enumerate(ro) if r.requires_grad]
    if not sel:
        return
    if ups is None:
        ups = [rng.standard_normal(to[i].shape) for i in sel]
    ups = [np.broadcast_to(np.asarray(u, float), to[i].shape) for u, i in zip(ups, sel)]
    grads = {}
    for lib, outs, leaves in ((retrograd, ro, rl), (torch, to, tl)):
        us = [lib.tensor(np.array(u), dtype=outs[i].dtype) for u, i in zip(ups, sel)]
        grads[lib] = lib.autograd.grad([outs[i] for i in sel], leaves, us, allow_unused=True, create_graph=second)
    for rg, tg in zip(grads[retrograd], grads[torch]):
        assert (rg is None) == (tg is None)
        if tg is not None:
            _same(_np(rg), _np(tg))
    if not second:
        return
    keep = [k for k, g in enumerate(grads[torch]) if g is not None and g.requires_grad]
    assert keep == [k for k, g in enumerate(grads[retrograd]) if g is not None and g.requires_grad]
    if not keep:
        return
    vs = [rng.standard_normal(grads[torch][k].shape) for k in keep]
    second_grads = {}
    for lib, leaves in ((retrograd, rl), (torch, tl)):
        gs = [grads[lib][k] for k in keep]
        second_grads[lib] = lib.autograd.grad(gs, leaves, [lib.tensor(v, dtype=g.dtype) for v, g in zip(vs, gs)],
                                              allow_unused=True)
    for rg, tg in zip(second_grads[retrograd], second_grads[torch]):
        if tg is None or rg is None:
            other = rg if tg is None else tg
            assert other is None or not np.any(_np(other)), "one side has no second derivative"
            continue
        _same(_np(rg), _np(tg))


def raises_like(fn):
    """``fn(lib)`` raises the same exception class with the same message on both."""
    errs = {}
    for lib in (retrograd, torch):
        with pytest.raises(Exception) as e:
            fn(lib)
        errs[lib] = e.value
    assert type(errs[retrograd]).__name__ == type(errs[torch]).__name__
    assert str(errs[retrograd]).split("\n")[0] == str(errs[torch]).split("\n")[0]


def _leaf(a):
    return retrograd.tensor(a, dtype=retrograd.float64, requires_grad=True)


A = np.array


# --- scatter_reduce: prod with zeros (first and second order), amax/amin ties ---------------

IDX = A([0, 1, 0, 1, 2, 1])
SRCS = [A([1., 0., 3., 4., 5., 6.]), A([2., 3., 4., 5., 6., 7.]), A([1., 0., 3., 0., 5., 6.]), A([0., 2., 0., 4., 5., 6.])]
SELVES = [A([1., 2., 3., 4.]), A([0., 2., 3., 4.]), A([0., 0., 3., 0.])]


@needs_torch
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("src", SRCS[:2], ids=["src0", "nozero"])
@pytest.mark.parametrize("self_", SELVES, ids=["nozero", "zero", "zeros"])
def test_scatter_reduce_prod_with_zeros_matches_torch(self_, src, include_self):
    parity(lambda L, a, b: a.scatter_reduce(0, L.tensor(IDX), b, "prod", include_self=include_self), self_, src)


@needs_torch
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("src", SRCS[2:], ids=["two_zeros_one_slot", "two_zeros_apart"])
def test_scatter_reduce_prod_first_order_with_several_zeros(src, include_self):
    parity(lambda L, a, b: a.scatter_reduce(0, L.tensor(IDX), b, "prod", include_self=include_self),
           SELVES[0], src, second=False)


@needs_torch
def test_scatter_reduce_prod_double_backward_refused_for_two_zeros_in_one_slot():
    def fn(lib):
        a = lib.tensor([1., 2., 3., 4.], dtype=lib.float64, requires_grad=True)
        b = lib.tensor(SRCS[2], requires_grad=True)
        out = a.scatter_reduce(0, lib.tensor(IDX), b, "prod")
        _, gb = lib.autograd.grad(out.sum(), (a, b), create_graph=True)
        lib.autograd.grad(gb.sum(), b)
    raises_like(fn)


def test_scatter_reduce_prod_gradcheck_through_zeros():
    idx = retrograd.tensor(IDX)
    for inc in (True, False):
        for s in SRCS[:2]:
            for x in SELVES[:2]:
                f = lambda a, b: a.scatter_reduce(0, idx, b, "prod", include_self=inc)  # noqa: E731
                assert gradcheck(f, (_leaf(x), _leaf(s)))
                assert gradgradcheck(f, (_leaf(x), _leaf(s)))


@needs_torch
@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("src", [[1., 3., 3., 2., 2., 2.], [5., 5., 3., 5., 5., 1.], [nan, 3., 3., 2., 2., 2.]])
@pytest.mark.parametrize("self_", [[3., 2., 3., 0.], [5., 2., 5., 0.], [3., 3., 3., 2.]])
def test_scatter_reduce_amax_amin_ties_share_evenly(reduce, src, self_):
    parity(lambda L, a, b: a.scatter_reduce(0, L.tensor(IDX), b, reduce, include_self=True), A(self_), A(src))


@needs_torch
@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("src", [[1., 3., 3., 2., 2., 2.], [5., 5., 3., 5., 5., 1.]])
def test_scatter_reduce_amax_amin_without_self_ties(reduce, src):
    # self values that differ from every result: PyTorch is right here (see the next test)
    parity(lambda L, a, b: a.scatter_reduce(0, L.tensor(IDX), b, reduce, include_self=False),
           A([-7., 9., -8., 4.]), A(src))


def test_scatter_reduce_amax_without_self_ignores_an_overwritten_equal_self():
    # out[0] = max(src[0], src[1]) = src[0], a unique maximiser; s[0] takes no part. PyTorch
    # 2.13 counts s[0] as a tie because its value equals the result and gives src[0] 0.5;
    # the derivative is 1 (checked by finite differences below).
    s = retrograd.tensor([3., 5.], dtype=retrograd.float64, requires_grad=True)
    src = retrograd.tensor([3., 1.], dtype=retrograd.float64, requires_grad=True)
    idx = retrograd.tensor([0, 0])
    s.scatter_reduce(0, idx, src, "amax", include_self=False).backward(retrograd.ones(2, dtype=retrograd.float64))
    assert src.grad.tolist() == [1., 0.] and s.grad.tolist() == [0., 1.]
    for red in ("amax", "amin"):
        f = lambda a, b: a.scatter_reduce(0, idx, b, red, include_self=False)  # noqa: E731
        assert gradcheck(f, (_leaf([3., 5.]), _leaf([3., 1.] if red == "amax" else [1., 3.])))


@needs_torch
@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_sum_mean(reduce, include_self):
    parity(lambda L, a, b: a.scatter_reduce(0, L.tensor(IDX), b, reduce, include_self=include_self),
           A([1., 2., 3., 4.]), A([1., 2., 3., 4., 5., 6.]))


@needs_torch
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_on_0d(reduce):
    parity(lambda L, a, b: a.scatter_reduce(0, L.tensor(0), b, reduce), A(1.5), A(-2.))


@needs_torch
def test_scatter_reduce_amax_nonfinite_upstream_as_torch():
    parity(lambda L, a, b: a.scatter_reduce(0, L.tensor(IDX), b, "amax"), A([1., 2., 3., 4.]),
           A([1., 3., 3., 2., 2., 2.]), ups=[[inf, nan, 1., -inf]], second=False)


# --- cummax / cummin: NaN and ties, the saved input --------------------------------------------

CUM_CASES = [[1., nan, 3., nan, 0.], [2., 2., 1., 2., 3., 3.], [nan, 1., nan], [1., 1., 1.], [3., 1., 2., 1., 0.]]


@needs_torch
@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("x", CUM_CASES)
def test_cummax_cummin_nan_and_ties(op, x):
    parity(lambda L, a: getattr(a, op)(0), A(x))
    parity(lambda L, a: getattr(a, op)(-1), A([x, x[::-1]]))
    parity(lambda L, a: getattr(a, op)(0), A([x, x[::-1]]).T.copy())


@needs_torch
@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_integer_ties(op):
    parity(lambda L, a: getattr(a, op)(1), A([[2, 2, 1, 2, 3, 3], [0, 0, 0, 1, 1, 0]]))


@needs_torch
@pytest.mark.parametrize("op", ["cummax", "cummin", "gather", "take", "masked_select", "norm0"])
def test_inplace_change_of_saved_input_is_caught(op):
    calls = {"cummax": lambda L, a: a.cummax(0)[0], "cummin": lambda L, a: a.cummin(0)[0],
             "gather": lambda L, a: a.gather(0, L.tensor([[1, 0], [2, 1]])),
             "take": lambda L, a: a.take(L.tensor([1, 0])), "masked_select": lambda L, a: a.masked_select(a.detach() > 1),
             "norm0": lambda L, a: a.norm(0)}

    def fn(lib):
        x = lib.tensor([[1., 2.], [3., 5.], [4., .5]], requires_grad=True)
        a = x * 1
        y = calls[op](lib, a)
        with lib.no_grad():
            a.add_(1)
        y.sum().backward()
    raises_like(fn)


def test_cummax_gradcheck_away_from_ties():
    f = lambda a: a.cummax(1)[0]  # noqa: E731
    assert gradcheck(f, (_leaf([[3., 1., 4., 0.5, 5.], [-1., -2., 0., 2., 1.]]),))


# --- max / min / amax / amin / median / kthvalue / mode / nanmedian: ties and NaN ---------------

SEL_CASES = [[1., 3., 3., 2.], [1., 1., 1., 1.], [nan, 1., nan, 2.], [2., inf, inf, 1.], [0., -0., 0., 1.]]


@needs_torch
@pytest.mark.parametrize("op", ["max", "min", "median", "nanmedian", "amax", "amin", "mode"])
@pytest.mark.parametrize("x", SEL_CASES)
def test_selection_ties_and_nan(op, x):
    if op != "mode":
        parity(lambda L, a: getattr(a, op)(), A(x))
    parity(lambda L, a: getattr(a, op)(0), A(x))
    parity(lambda L, a: getattr(a, op)(1, True), A([x, x[::-1]]))
    parity(lambda L, a: getattr(a, op)(-2), A([x, x[::-1]]).T.copy())


@needs_torch
@pytest.mark.parametrize("op", ["max", "min", "median", "nanmedian", "amax", "amin"])
def test_full_selection_nonfinite_upstream(op):
    # max()/min()/median() select (the others get exactly 0); amax/amin scale by the count
    # of ties and multiply, so inf upstream reaches the others as nan, as in PyTorch.
    for up in (inf, -inf, nan):
        parity(lambda L, a: getattr(a, op)(), A([1., 3., 2.]), ups=[up], second=False)
        parity(lambda L, a: getattr(a, op)(), A([3., 1., 3.]), ups=[up], second=False)


@needs_torch
@pytest.mark.parametrize("op", ["max0", "amax0", "sort", "topk", "kthvalue", "cummax", "median0", "mode",
                                "gather", "index_select", "take", "masked_select"])
def test_selecting_backward_keeps_nonfinite_upstream_where_torch_does(op):
    calls = {"max0": lambda L, a: a.max(0)[0], "amax0": lambda L, a: a.amax(0), "sort": lambda L, a: a.sort(0)[0],
             "topk": lambda L, a: a.topk(1, 0)[0], "kthvalue": lambda L, a: a.kthvalue(1, 0)[0],
             "cummax": lambda L, a: a.cummax(0)[0], "median0": lambda L, a: a.median(0)[0], "mode": lambda L, a: a.mode(0)[0],
             "gather": lambda L, a: a.gather(0, L.tensor([[0, 0]])), "index_select": lambda L, a: a.index_select(0, L.tensor([1])),
             "take": lambda L, a: a.take(L.tensor([0, 3])), "masked_select": lambda L, a: a.masked_select(a.detach() > 1)}
    x = A([[1., 3.], [2., 0.], [4., -1.]])
    for up in (inf, nan):
        parity(lambda L, a: calls[op](L, a) * up, x, second=False)


@needs_torch
@pytest.mark.parametrize("op", ["max", "median", "sort", "cummax", "kthvalue", "gather", "amax"])
def test_create_graph_gradient_of_selection_stays_in_graph(op):
    calls = {"max": lambda L, a: a.max(), "median": lambda L, a: a.median(), "sort": lambda L, a: a.sort(0)[0],
             "cummax": lambda L, a: a.cummax(0)[0], "kthvalue": lambda L, a: a.kthvalue(2, 0)[0],
             "gather": lambda L, a: a.gather(0, L.tensor([2, 2, 0])), "amax": lambda L, a: a.amax()}

    def run(lib):
        x = lib.tensor([1., 3., 2.], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([.5, -1., 2.], dtype=lib.float64, requires_grad=True)
        y = calls[op](lib, x * w)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        gw = lib.autograd.grad((g * g).sum(), w, allow_unused=True)[0]
        return g, gw
    (rg, rgw), (tg, tgw) = run(retrograd), run(torch)
    assert rg.requires_grad == tg.requires_grad
    _same(_np(rg), _np(tg))
    _same(_np(rgw), _np(tgw))


# --- var / std: zero variance, no degrees of freedom, second order ----------------------------

@needs_torch
@pytest.mark.parametrize("op", ["std", "var", "std_mean", "var_mean"])
@pytest.mark.parametrize("x", [[2., 2., 2.], [1., 2., 4.], [5.]])
@pytest.mark.parametrize("kw", [{}, {"dim": 0}, {"correction": 0}, {"dim": 0, "correction": 2}, {"correction": 5}],
                         ids=["all", "dim", "c0", "dim_c2", "c5"])
def test_var_std_degenerate_points_first_and_second_order(op, x, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = (lambda L, a: getattr(L, op)(a, **kw)) if "mean" in op else (lambda L, a: getattr(a, op)(**kw))
        parity(f, A(x))
        parity(lambda L, a: f(L, a) if "dim" not in kw else
               (getattr(L, op)(a, 1, correction=kw.get("correction")) if "mean" in op
                else getattr(a, op)(1, correction=kw.get("correction"))), A([x, x]))


@needs_torch
def test_std_zero_variance_second_derivative_is_zero():
    # issue example: nan here before; PyTorch's mask at std == 0 gives 0
    parity(lambda L, a: a.std(), A([2., 2., 2.]))
    parity(lambda L, a: a.std(1, keepdim=True), A([[1., 1.], [0., 3.]]))


def test_var_std_gradgradcheck():
    for op in ("var", "std"):
        for kw in ({}, {"dim": 1}, {"dim": 0, "correction": 0}, {"dim": (0, 1), "keepdim": True}):
            f = lambda a: getattr(a, op)(**kw)  # noqa: E731
            x = _leaf([[1., 2.5, -1.], [0.5, 3., 2.]])
            assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))
        f = lambda a: retrograd.std_mean(a, 1)  # noqa: E731
        assert gradcheck(f, (_leaf([[1., 2.5, -1.], [0.5, 3., 2.]]),))


def test_var_mean_gradient_through_the_mean_alone():
    # the variance output gets no gradient: its degenerate factor must not turn it into nan
    x = _leaf([5.])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v, m = retrograd.var_mean(x)
    m.backward()
    assert x.grad.tolist() == [1.]


# --- vector norms -------------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("p", [2, 1, 3, 1.5, 0.5, inf, -inf])
@pytest.mark.parametrize("x", [[[0., 0., 0.], [1., -2., 2.]], [[0., 3., 0.], [-1., 0., 1.]], [[2., -2., 1.], [1., 1., -1.]]])
def test_vector_norm_at_zero_and_ties(p, x):
    parity(lambda L, a: L.linalg.vector_norm(a, p, dim=1), A(x))
    if p > 0:
        parity(lambda L, a: L.linalg.vector_norm(a, p), A(x))


@needs_torch
def test_vector_norm_ord0_has_no_gradient():
    parity(lambda L, a: (L.linalg.vector_norm(a, 0), a.norm(0)), A([1., 0., 2.]))
    for lib in (retrograd, torch):
        x = lib.tensor([1., 0., 2.], requires_grad=True)
        x.norm(0).backward()
        assert x.grad is None


def test_vector_norm_gradgradcheck():
    for p in (2, 3, 1.5):
        f = lambda a: retrograd.linalg.vector_norm(a, p, dim=1)  # noqa: E731
        assert gradgradcheck(f, (_leaf([[0.3, -1., 2.], [1., 0.5, -0.7]]),))


# --- empty inputs ---------------------------------------------------------------------------------

EMPTY_REDUCTIONS = {
    "sum": lambda L, a, d: a.sum(d), "prod": lambda L, a, d: a.prod(d), "mean": lambda L, a, d: a.mean(d),
    "mean_keep": lambda L, a, d: a.mean(d, keepdim=True), "nansum": lambda L, a, d: a.nansum(d),
    "var": lambda L, a, d: a.var(d), "std": lambda L, a, d: a.std(d, keepdim=True), "var_mean": lambda L, a, d: L.var_mean(a, d),
    "std_mean": lambda L, a, d: L.std_mean(a, d), "logsumexp": lambda L, a, d: a.logsumexp(d), "norm": lambda L, a, d: a.norm(dim=d),
    "amax": lambda L, a, d: a.amax(d), "amin": lambda L, a, d: a.amin(d, keepdim=True), "max": lambda L, a, d: a.max(d),
    "median": lambda L, a, d: a.median(d), "nanmedian": lambda L, a, d: a.nanmedian(d), "mode": lambda L, a, d: a.mode(d),
    "kthvalue": lambda L, a, d: a.kthvalue(1, d), "argmax": lambda L, a, d: a.argmax(d), "aminmax": lambda L, a, d: L.aminmax(a, dim=d),
    "normInf": lambda L, a, d: L.linalg.vector_norm(a, inf, dim=d), "norm-1": lambda L, a, d: L.linalg.vector_norm(a, -1, dim=(d,)),
    "cumsum": lambda L, a, d: a.cumsum(d), "cumprod": lambda L, a, d: a.cumprod(d), "logcumsumexp": lambda L, a, d: a.logcumsumexp(d),
    "cummax": lambda L, a, d: a.cummax(d), "sort": lambda L, a, d: a.sort(d), "topk": lambda L, a, d: a.topk(0, d),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(EMPTY_REDUCTIONS))
@pytest.mark.parametrize("d", [0, 1, -2])
def test_reductions_over_empty_dims(name, d):
    f = EMPTY_REDUCTIONS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            f(torch, torch.zeros(0, 2), d)
        except Exception:
            raises_like(lambda L: f(L, L.zeros(0, 2, dtype=L.float64), d))
            return
        parity(lambda L, a: f(L, a, d), np.zeros((0, 2)))


@needs_torch
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "var", "std", "var_mean", "std_mean", "amax", "max", "median",
                                  "nanmedian", "norm", "logsumexp_all"])
def test_full_reductions_of_empty(name):
    calls = {"var_mean": lambda L, a: L.var_mean(a), "std_mean": lambda L, a: L.std_mean(a),
             "logsumexp_all": lambda L, a: a.logsumexp((0, 1))}
    f = calls.get(name, lambda L, a: getattr(a, name)())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            f(torch, torch.zeros(0, 2))
        except Exception:
            raises_like(lambda L: f(L, L.zeros(0, 2)))
            return
        parity(f, np.zeros((0, 2)))


def test_empty_mean_keepdim_shape():
    r = retrograd.empty(0, 2).mean(0, keepdim=True)
    assert tuple(r.shape) == (1, 2) and np.isnan(r.numpy()).all()


# --- tie order of sort / argsort / topk / kthvalue / mode, as PyTorch's CPU kernels -----------

@needs_torch
@pytest.mark.parametrize("seed", range(4))
def test_tie_order_matches_torch(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        n = int(rng.choice([1, 2, 3, 5, 8, 16, 17, 23, 40, 70, 130]))
        a = rng.integers(0, int(rng.integers(1, 4)), (2, n)).astype(float)
        if rng.random() < 0.3:
            a[rng.random(a.shape) < 0.2] = nan
        k = int(rng.integers(1, n + 1))
        largest, srt = bool(rng.random() < .5), bool(rng.random() < .7)
        for f in (lambda L, t: t.sort(1, descending=largest), lambda L, t: (t.argsort(1),),
                  lambda L, t: t.topk(k, 1, largest=largest, sorted=srt), lambda L, t: t.kthvalue(k, 1),
                  lambda L, t: t.mode(1), lambda L, t: t.nanmedian(1), lambda L, t: t.median(1)):
            r, t = f(retrograd, retrograd.from_numpy(a)), f(torch, torch.from_numpy(a))
            for x, y in zip(r, t):
                _same(_np(x), _np(y))


@needs_torch
def test_tie_gradients_follow_the_reported_index():
    x = A([[1., 1., 1., 1.], [0., 2., 2., 2.]])
    for f in (lambda L, a: a.kthvalue(2, 1), lambda L, a: a.topk(2, 1), lambda L, a: a.mode(1),
              lambda L, a: a.max(1), lambda L, a: a.median(1), lambda L, a: a.sort(1, descending=True)):
        parity(f, x)


# --- dtypes and errors -----------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("call", [
    lambda L: L.tensor([[1, 2], [3, 4]]).logcumsumexp(0),
    lambda L: L.tensor([[True, False]]).topk(1),
    lambda L: L.tensor([[True, False]]).kthvalue(1),
    lambda L: L.tensor([True, False]).nanmedian(),
    lambda L: L.tensor([1, 2]).dist(L.tensor([2, 2])),
    lambda L: L.tensor([[True, False]]).scatter_reduce(0, L.tensor([[0, 0]]), L.tensor([[True, True]]), "mean"),
    lambda L: L.zeros(0, 2).aminmax(dim=0),
    lambda L: L.zeros(3, 0).amax((0, -1)),
    lambda L: L.linalg.vector_norm(L.zeros(0, 2), inf, dim=(-2, 1)),
    lambda L: L.tensor(1.).index_add(0, L.tensor([0, 0]), L.tensor(2.)),
    lambda L: L.zeros(2, 3).index_add(0, L.tensor([1]), L.ones(1, 4)),
    lambda L: L.zeros(2, 3).index_add(1, L.tensor([1]), L.ones(3)),
    lambda L: L.tensor(1.).index_copy(0, L.tensor([0, 0]), L.tensor(2.)),
    lambda L: L.take_along_dim(L.tensor(1.), L.tensor(0), -1),
], ids=["logcumsumexp_int", "topk_bool", "kthvalue_bool", "nanmedian_bool", "dist_int", "scatter_mean_bool",
        "aminmax_empty", "amax_empty_dim_as_given", "norm_empty_dim", "index_add_0d", "index_add_shape",
        "index_add_dim", "index_copy_0d", "take_along_dim_0d"])
def test_errors_as_torch(call):
    raises_like(call)


@needs_torch
def test_take_along_dim_without_dim_on_non_contiguous_input():
    """Without dim, take_along_dim indexes the flattened input. torch 2.13 flattens with
    view(-1) and raises for a non-contiguous input (a torch bug, KNOWN_MISMATCHES for the
    fuzzer); retrograd's values and gradient equal torch's for the contiguous copy."""
    a = np.arange(12.).reshape(3, 4) / 7 - 0.5
    idx = np.array([5, 0, 11, 5])
    out = {}
    for L in (retrograd, torch):
        base = L.tensor(np.ascontiguousarray(a.T), requires_grad=True)
        x = base.t()
        y = L.take_along_dim(x if L is retrograd else x.contiguous(), L.tensor(idx))
        y.backward(L.tensor([1.0, 2.0, 3.0, 4.0], dtype=L.float64))
        out[L] = (_np(y), _np(base.grad))
        if L is torch:
            with pytest.raises(RuntimeError, match="view size is not compatible"):
                L.take_along_dim(x, L.tensor(idx))
    for u, v in zip(out[retrograd], out[torch]):
        _same(u, v)
    x = retrograd.tensor(np.ascontiguousarray(a.T), requires_grad=True)
    assert gradcheck(lambda x: retrograd.take_along_dim(x.t(), retrograd.tensor(idx)), (x,))


@needs_torch
def test_bool_scatter_amax_without_self():
    parity(lambda L, a: a.scatter_reduce(0, L.tensor([[0, 1, 0]]), a[:1], "amax", include_self=False),
           A([[True, False, True], [False, False, True]]))


# --- prod / cumprod with zeros next to inf and nan (first order and create_graph) ----------------

@needs_torch
@pytest.mark.parametrize("seed", range(3))
def test_prod_cumprod_zeros_and_nonfinite(seed):
    rng = np.random.default_rng(seed)
    for _ in range(25):
        shape = (int(rng.integers(1, 4)), int(rng.integers(1, 6)))
        x = rng.integers(-2, 3, shape).astype(float)
        if rng.random() < .5:
            x[rng.random(shape) < .2] = rng.choice([nan, inf, -inf])
        d = int(rng.integers(-2, 2))
        for second in (False, True):
            parity(lambda L, a: a.cumprod(d), x, second=second)
            parity(lambda L, a: a.prod(d), x, second=second)
            parity(lambda L, a: a.prod(), x, second=second)


def test_prod_cumprod_gradgradcheck_with_zeros():
    x = _leaf([[0., 1.5, -2., 0.5], [1., 0., 0., 2.]])
    for f in (lambda a: a.cumprod(1), lambda a: a.prod(1), lambda a: a.prod(), lambda a: a.cumprod(0)):
        assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))


# --- found by the op table ------------------------------------------------------------------------

@needs_torch
def test_aminmax_is_one_node_and_each_output_alone():
    x = A([[1., 3., 3.], [2., 0., 0.]])
    parity(lambda L, a: L.aminmax(a), x)
    parity(lambda L, a: L.aminmax(a, dim=1, keepdim=True), x)
    parity(lambda L, a: L.aminmax(a, dim=0)[0], x)
    parity(lambda L, a: L.aminmax(a, dim=1)[1] * inf, x, second=False)
    r = retrograd.aminmax(_leaf(x))
    assert type(r.min.grad_fn).__name__ == "AminmaxBackward0" and r.min.grad_fn is r.max.grad_fn


@needs_torch
def test_sum_to_size_is_a_view_of_the_sum_when_leading_dims_go():
    parity(lambda L, a: a.sum_to_size(3), A([[1., 2., 3.], [4., 5., 6.]]))
    y = _leaf([[1., 2., 3.], [4., 5., 6.]]).sum_to_size(3)
    assert type(y.grad_fn).__name__ == "ViewBackward0" and y._base is not None


@needs_torch
def test_var_mean_mean_with_infinities_as_welford():
    for row in ([1., inf, 2.], [inf, 1., 2.], [1., 2., inf], [inf, inf], [1., -inf]):
        parity(lambda L, a: L.var_mean(a), A(row), second=False)
        parity(lambda L, a: L.std_mean(a, 1), A([row, row[::-1]]), second=False)


@needs_torch
def test_masked_fill_value_gradient_selects():
    m = A([[True, False], [False, True]])
    parity(lambda L, a, v: a.masked_fill(L.tensor(m), v), A([[1., 2.], [3., 4.]]), A(0.5),
           ups=[[[1., inf], [nan, 2.]]], second=False)


@needs_torch
@pytest.mark.parametrize("dim,index", [(1, [3]), (0, [0, 2, 0]), (1, [])])
def test_index_fill_value_gradient_selects(dim, index):
    """The value's gradient is the sum of the filled slices (derivatives.yaml selects them):
    inf/nan in the upstream gradient elsewhere do not reach it."""
    up = np.full((3, 4), 1.5)
    up[0, 0], up[1, 1], up[2, 2] = inf, -inf, nan
    parity(lambda L, a, v: a.index_fill(dim, L.tensor(index, dtype=L.int64), v), np.ones((3, 4)) * 0.5, A(2.0),
           ups=[up.tolist()], second=False)


def test_index_fill_gradcheck():
    a = retrograd.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
    v = retrograd.tensor(0.3, dtype=retrograd.float64, requires_grad=True)
    fn = lambda a, v: a.index_fill(1, retrograd.tensor([3, 1, 3]), v) * a   # noqa: E731
    assert gradcheck(fn, (a, v)) and gradgradcheck(fn, (a, v))


@needs_torch
def test_empty_mean_and_median_second_order():
    parity(lambda L, a: a.mean(0), np.zeros((0, 3)))
    parity(lambda L, a: a.median(), np.zeros((0, 3)))


@needs_torch
def test_integral_index_add_alpha_and_bool_inplace_scans():
    parity(lambda L, a: a.index_add(0, L.tensor([0, 0]), L.tensor([3, 4]), alpha=2.5), A([1, 2]))
    raises_like(lambda L: L.tensor([True, False]).cumsum_(0))
    raises_like(lambda L: L.tensor([True, False]).cumprod_(0))


@needs_torch
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_dim_values_are_the_indexed_elements(name):
    # +0 and -0 tie: the value returned is the element at the returned index, sign included
    rng = np.random.default_rng(4)
    for _ in range(60):
        a = rng.choice(np.array([0.0, -0.0, -1.0, 1.0, np.nan]), size=(3, int(rng.integers(1, 40)))).astype(np.float32)
        for d in (0, 1):
            rv, ri = getattr(retrograd.tensor(a), name)(d)
            tv, ti = getattr(torch.tensor(a), name)(d)
            np.testing.assert_array_equal(ri.numpy(), ti.numpy())
            np.testing.assert_array_equal(np.signbit(rv.numpy()), np.signbit(tv.numpy()))
            np.testing.assert_array_equal(rv.numpy(), tv.numpy())
