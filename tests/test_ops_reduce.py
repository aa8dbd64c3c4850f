"""Reductions: parity with PyTorch (values, grad_fn, gradients) and float64 gradchecks."""
import warnings

import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from helpers import check, gradcheck_op, NC, torch, needs_torch

INF = float("inf")

CASES = [
    # sum / mean
    (lambda x: x.sum(), [()]),
    (lambda x: x.sum(), [(3, 4)]),
    (lambda x: x.sum(1), [NC(3, 4)]),
    (lambda x: x.sum((0, 1), keepdim=True), [(3, 4)]),
    (lambda x: x.sum(()), [(3, 4)]),
    (lambda x: x.sum(dim=[]), [(2, 3)]),
    (lambda x: x.sum(-1), [(0, 3)]),
    (lambda x: x.mean(), [(3, 4)]),
    (lambda x: x.mean(0, keepdim=True), [NC(3, 4)]),
    (lambda x: x.mean(()), [(3, 4)]),
    (lambda x: x.mean(None, True), [(3, 4)]),
    (lambda x: x.sum(None, keepdim=True), [NC(3, 4)]),
    (lambda x: x.mean(1), [(0, 3)]),
    (lambda x: x.nansum(1), [(3, 4)]),
    (lambda x: x.nanmean(), [(3, 4)]),
    (lambda x: x.nanmean(1, keepdim=True), [NC(3, 4)]),
    (lambda x: x.trace(), [(3, 4)]),
    (lambda x: x.trace(), [NC(4, 3)]),
    # prod
    (lambda x: x.prod(), [()]),
    (lambda x: x.prod(), [(3, 4)]),
    (lambda x: x.prod(1), [NC(3, 4)]),
    (lambda x: x.prod(0, keepdim=True), [(3, 4)]),
    (lambda x: x.prod(0), [(0, 3)]),
    (lambda x: x.prod(), [(0, 3)]),
    # max / min
    (lambda x: x.max(), [()]),
    (lambda x: x.max(), [(3, 4)]),
    (lambda x: x.min(), [NC(3, 4)]),
    (lambda x: x.max(1), [(3, 4)]),
    (lambda x: x.max(0, keepdim=True), [NC(3, 4)]),
    (lambda x: x.min(dim=-1), [(2, 3, 4)]),
    (lambda x: x.max(0), [()]),
    (lambda x: x.min(1), [(0, 3)]),
    (lambda x, y: x.max(y), [(3, 4), (4,)]),
    (lambda x, y: x.min(y), [(3, 1), (4,)]),
    (lambda x: x.amax(), [(3, 4)]),
    (lambda x: x.amax(1), [NC(3, 4)]),
    (lambda x: x.amin((0, 2), keepdim=True), [(2, 3, 4)]),
    (lambda x: x.amin(), [()]),
    (lambda x: x.amax(1), [(0, 3)]),
    # var / std
    (lambda x: x.var(), [(3, 4)]),
    (lambda x: x.var(1), [NC(3, 4)]),
    (lambda x: x.var(1, unbiased=False), [(3, 4)]),
    (lambda x: x.var(0, correction=0, keepdim=True), [(3, 4)]),
    (lambda x: x.var(False), [(3, 4)]),
    (lambda x: x.var(1, True, True), [(3, 4)]),
    (lambda x: x.std(), [(3, 4)]),
    (lambda x: x.std(0), [NC(3, 4)]),
    (lambda x: x.std((0, 2), correction=2, keepdim=True), [(2, 3, 4)]),
    (lambda x: x.std(1), [(0, 3)]),
    (lambda x: x.var(correction=0), [()]),
    (lambda x: retrograd_or_torch(x).var_mean(x, 1), [(3, 4)]),
    (lambda x: retrograd_or_torch(x).std_mean(x, 0, keepdim=True), [NC(3, 4)]),
    (lambda x: retrograd_or_torch(x).var_mean(x, correction=0), [(3, 4)]),
    (lambda x: retrograd_or_torch(x).std_mean(x), [(3, 4)]),
    # logsumexp
    (lambda x: x.logsumexp(1), [(3, 4)]),
    (lambda x: x.logsumexp((0, 1)), [NC(3, 4)]),
    (lambda x: x.logsumexp(0, keepdim=True), [(3, 4)]),
    (lambda x: x.logsumexp(0), [()]),
    (lambda x: x.logsumexp(0), [(0, 3)]),
    # norm
    (lambda x: x.norm(), [(3, 4)]),
    (lambda x: x.norm(), [()]),
    (lambda x: x.norm(1), [NC(3, 4)]),
    (lambda x: x.norm(INF), [(3, 4)]),
    (lambda x: x.norm(-INF), [(3, 4)]),
    (lambda x: x.norm(3), [(3, 4)]),
    (lambda x: x.norm(1.5), [(3, 4)]),
    (lambda x: x.norm(0.5), [(3, 4)]),
    (lambda x: x.norm(0), [(3, 4)]),
    (lambda x: x.norm("fro", dim=(0, 1)), [(3, 4)]),
    (lambda x: x.norm(dim=1, keepdim=True), [NC(3, 4)]),
    (lambda x: x.norm(p=2, dim=0), [(0, 3)]),
    (lambda x: x.norm(), [(0, 3)]),
    # cumulative
    (lambda x: x.cumsum(1), [(3, 4)]),
    (lambda x: x.cumsum(0), [NC(3, 4)]),
    (lambda x: x.cumsum(0), [()]),
    (lambda x: x.cumsum(0), [(0, 3)]),
    (lambda x: x.cumprod(1), [(3, 4)]),
    (lambda x: x.cumprod(-1), [NC(3, 4)]),
    (lambda x: x.cumprod(0), [()]),
    (lambda x: x.cumprod(0), [(0, 3)]),
    (lambda x: x.logcumsumexp(1), [(3, 4)]),
    (lambda x: retrograd_or_torch(x).logcumsumexp(x, 0), [NC(3, 4)]),
    (lambda x: x.logcumsumexp(0), [()]),
    (lambda x: x.logcumsumexp(1), [(0, 3)]),
    (lambda x: x.cummax(1), [(3, 4)]),
    (lambda x: x.cummin(0), [NC(3, 4)]),
    (lambda x: x.cummax(0), [()]),
    (lambda x: x.cummin(1), [(0, 3)]),
    (lambda x, y: retrograd_or_torch(x).dist(x, y), [(3, 4), (4,)]),
    (lambda x, y: retrograd_or_torch(x).dist(x, y, 3), [NC(3, 4), (3, 4)]),
    (lambda x, y: retrograd_or_torch(x).dist(x, y, INF), [(3, 4), ()]),
    (lambda x, y: retrograd_or_torch(x).dist(x, y, 1), [(), ()]),
    (lambda x: x.sort(), [(3, 4)]),
    (lambda x: x.sort(0, True), [NC(3, 4)]),
    (lambda x: x.sort(dim=1, descending=True, stable=True), [(3, 4)]),
    (lambda x: x.sort(), [()]),
    (lambda x: x.sort(1), [(0, 3)]),
    (lambda x: x.msort(), [(3, 4)]),
    (lambda x: x.topk(2), [(3, 4)]),
    (lambda x: x.topk(2, 0, largest=False), [NC(3, 4)]),
    (lambda x: x.topk(1), [()]),
    (lambda x: x.topk(0), [(3, 4)]),
    (lambda x: x.kthvalue(2), [(3, 4)]),
    (lambda x: x.kthvalue(3, 0, True), [NC(3, 4)]),
    (lambda x: x.kthvalue(1), [()]),
    # median
    (lambda x: x.median(), [(3, 5)]),
    (lambda x: x.median(1), [NC(3, 4)]),
    (lambda x: x.median(0, keepdim=True), [(3, 4)]),
]


def retrograd_or_torch(x):
    return torch if torch is not None and isinstance(x, torch.Tensor) else retrograd


@pytest.mark.parametrize("fn,specs", CASES)
def test_parity(fn, specs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(fn, specs)


GRADCHECK = [c for c in CASES if not any(isinstance(s, tuple) and 0 in s for s in c[1])]


@pytest.mark.parametrize("fn,specs", GRADCHECK)
def test_gradcheck(fn, specs):
    gradcheck_op(fn, specs)


def _with_zeros(shape, zeros):
    def make(lib):
        a = np.random.default_rng(1).uniform(0.5, 2.0, shape)
        for z in zeros:
            a[z] = 0.0
        return a
    return make


ZERO_CASES = [
    (lambda x: x.prod(), (3, 4), [(1, 2)]),
    (lambda x: x.prod(), (3, 4), [(1, 2), (0, 0)]),
    (lambda x: x.prod(1), (3, 4), [(1, 2)]),
    (lambda x: x.prod(1), (3, 4), [(1, 2), (1, 0)]),
    (lambda x: x.prod(0, keepdim=True), (3, 4), [(0, 1), (2, 3)]),
    (lambda x: x.cumprod(1), (3, 4), [(1, 2)]),
    (lambda x: x.cumprod(1), (3, 4), [(1, 2), (1, 0), (2, 3)]),
    (lambda x: x.cumprod(0), (3, 4), [(0, 0), (2, 0)]),
]


@needs_torch
@pytest.mark.parametrize("fn,shape,zeros", ZERO_CASES)
def test_zeros_parity(fn, shape, zeros):
    a = _with_zeros(shape, zeros)(None)
    r = retrograd.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    ro, to = fn(r), fn(t)
    g = np.random.default_rng(2).standard_normal(to.shape)
    ro.backward(retrograd.tensor(g))
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn,shape,zeros", ZERO_CASES)
def test_zeros_gradgrad(fn, shape, zeros):
    a = _with_zeros(shape, zeros)(None)
    x = retrograd.tensor(a, requires_grad=True)
    assert gradcheck(fn, (x,), atol=1e-6, rtol=1e-4)
    assert gradgradcheck(fn, (x,), atol=1e-6, rtol=1e-4)


@needs_torch
@pytest.mark.parametrize("fn", [lambda x: x.max(), lambda x: x.amax(1), lambda x: x.amin(),
                                lambda x: x.min(), lambda x: x.norm(float("inf")), lambda x: x.max(1),
                                lambda x: x.median(), lambda x: x.amax((0, 1), keepdim=True)])
def test_ties_parity(fn):
    a = np.array([[1.0, 3.0, 3.0, -3.0], [2.0, 2.0, 0.0, 3.0], [-3.0, 1.0, 1.0, 1.0]])
    r, t = retrograd.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ro, to = fn(r), fn(t)
    ro, to = (ro[0], to[0]) if isinstance(ro, tuple) else (ro, to)
    g = np.random.default_rng(3).standard_normal(to.shape)
    ro.backward(retrograd.tensor(g))
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), rtol=1e-12)


SECOND = [
    (lambda x: x.prod(1), [(3, 4)]),
    (lambda x: x.var(1), [(3, 4)]),
    (lambda x: x.std(), [(3, 4)]),
    (lambda x: x.logsumexp(1), [(3, 4)]),
    (lambda x: x.norm(), [(3, 4)]),
    (lambda x: x.norm(3, dim=1), [(3, 4)]),
    (lambda x: x.cumprod(1), [(3, 4)]),
    (lambda x: x.cumsum(0), [(3, 4)]),
    (lambda x: x.max(1)[0] * x.sum(), [(3, 4)]),
    (lambda x: retrograd.std_mean(x, 1)[0] * retrograd.std_mean(x, 1)[1], [(3, 4)]),
]


@pytest.mark.parametrize("fn,specs", SECOND)
def test_second_order(fn, specs):
    gradcheck_op(fn, specs, second_order=True)


# *** non-differentiable reductions ***

NOGRAD = [
    (lambda x: x.argmax(), [(3, 4)]),
    (lambda x: x.argmax(1), [NC(3, 4)]),
    (lambda x: x.argmin(0, keepdim=True), [(3, 4)]),
    (lambda x: x.argmax(keepdim=True), [(3, 4)]),
    (lambda x: x.argmin(0), [()]),
    (lambda x: x.argmax(1), [(0, 3)]),
    (lambda x: (x > 0).all(), [(3, 4)]),
    (lambda x: (x > 0).any(1), [(3, 4)]),
    (lambda x: (x > -5).all(dim=(0, 1)), [(3, 4)]),
    (lambda x: (x > 0).any(0, keepdim=True), [NC(3, 4)]),
    (lambda x: x.all(), [(0, 3)]),
    (lambda x: (x > 0).count_nonzero(), [(3, 4)]),
    (lambda x: (x > 0).count_nonzero((0, 1)), [(3, 4)]),
    (lambda x: (x > 0).count_nonzero(1), [(3, 4)]),
    (lambda x: x.max(1).indices, [(3, 4)]),
    (lambda x: x.argsort(1), [(3, 4)]),
    (lambda x: retrograd_or_torch(x).argsort(x, dim=0, descending=True), [NC(3, 4)]),
    (lambda x: x.argsort(0), [()]),
    (lambda x: x.long().sum(), [(3, 4)]),
    (lambda x: (x > 0).sum(1), [(3, 4)]),
    (lambda x: x.long().prod(1), [(3, 4)]),
    (lambda x: x.long().cumsum(0), [(3, 4)]),
    (lambda x: x.long().max(), [(3, 4)]),
    (lambda x: x.long().amax(0), [(3, 4)]),
    (lambda x: x.sum(dtype=retrograd_or_torch(x).float32), [(3, 4)]),
    (lambda x: x.mean(1, dtype=retrograd_or_torch(x).float32), [(3, 4)]),
    (lambda x: x.cumsum(1, dtype=retrograd_or_torch(x).float32), [(3, 4)]),
    (lambda x: x.long().logsumexp(1), [(3, 4)]),
]


@pytest.mark.parametrize("fn,specs", NOGRAD)
def test_nograd_parity(fn, specs):
    check(fn, specs, grad=False)


def test_return_types():
    x = retrograd.tensor([[1.0, 5.0], [7.0, 2.0]])
    r = x.max(1)
    assert type(r).__name__ == "max" and r.values.tolist() == [5.0, 7.0] and r.indices.tolist() == [1, 0]
    v, i = retrograd.min(x, dim=0, keepdim=True)
    assert v.shape == (1, 2) and i.tolist() == [[0, 1]]
    assert repr(r).startswith("torch.return_types.max(\nvalues=tensor([5., 7.]),\nindices=tensor([1, 0]))")
    assert retrograd.max(x, 1).values.tolist() == [5.0, 7.0]


def test_nan_propagates():
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    x = retrograd.tensor(a)
    assert np.isnan(x.max().item()) and np.isnan(x.amax(1)[0].item())
    assert x.max(1).indices.tolist() == [1, 2] and x.argmax(1).tolist() == [1, 2]
    assert x.min(1).indices.tolist() == [1, 0]


@needs_torch
def test_cummax_ties_and_nan():
    a = np.array([[1.0, 3.0, 3.0, 2.0, np.nan, 5.0], [2.0, 1.0, 1.0, 3.0, 3.0, 0.0]])
    for fn in (lambda x: x.cummax(1), lambda x: x.cummin(1)):
        r, t = fn(retrograd.tensor(a)), fn(torch.tensor(a))
        assert r.indices.tolist() == t.indices.tolist()
        np.testing.assert_array_equal(r.values.numpy(), t.values.numpy())


@needs_torch
def test_sort_ties_and_nan_like_stable_torch():
    a = np.array([[2.0, 1.0, 2.0, np.nan, 1.0, 3.0], [0.0, 0.0, 1.0, 1.0, np.nan, np.nan]])
    for kw in ({}, {"descending": True}):
        r = retrograd.tensor(a).sort(dim=1, stable=True, **kw)
        t = torch.tensor(a).sort(dim=1, stable=True, **kw)
        assert r.indices.tolist() == t.indices.tolist()
        np.testing.assert_array_equal(r.values.numpy(), t.values.numpy())


def test_logsumexp_stable():
    x = retrograd.tensor([1000.0, 1000.0, -1000.0], dtype=retrograd.float64, requires_grad=True)
    y = x.logsumexp(0)
    assert abs(y.item() - (1000 + np.log(2))) < 1e-9
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.5, 0.5, 0.0])
    assert retrograd.tensor([-INF, -INF]).logsumexp(0).item() == -INF


# *** bad input: PyTorch's exception type and wording; nothing changes ***

def _state(x):
    return x._data.copy(), x._version[0] if x._version else 0


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda x: x.sum(2), IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    (lambda x: x.sum((0, 0)), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda x: x.max(5), IndexError, "Dimension out of range"),
    (lambda x: x[:0].max(), RuntimeError, r"max\(\): Expected reduction dim to be specified for input.numel\(\) == 0"),
    (lambda x: x[:0].max(0), IndexError, r"max\(\): Expected reduction dim 0 to have non-zero size\."),
    (lambda x: x[:0].amax(), RuntimeError, r"amax\(\): Expected reduction dim to be specified"),
    (lambda x: x[:0].amin(0), IndexError, r"amin\(\): Expected reduction dim 0 to have non-zero size\."),
    (lambda x: x[:0].argmax(), IndexError, r"argmax\(\): Expected reduction dim to be specified"),
    (lambda x: x.long().var(), RuntimeError, "std and var only support floating point and complex dtypes"),
    (lambda x: x.long().mean(), RuntimeError, r"mean\(\): could not infer output dtype. .* Got: Long"),
    (lambda x: x.long().norm(), RuntimeError, "linalg.vector_norm: Expected a floating point or complex tensor as "
                                              "input. Got Long"),
    (lambda x: x[:0].norm(float("inf")), RuntimeError, "linalg.vector_norm cannot compute the inf norm on an empty "
                                                       "tensor because the operation does not have an identity"),
    (lambda x: x.cumsum(3), IndexError, "Dimension out of range"),
    (lambda x: x.var(1, unbiased=True, correction=1), TypeError, r"var\(\) received an invalid combination"),
    (lambda x: x.max(keepdim=True), TypeError, r"max\(\) received an invalid combination of arguments"),
    (lambda x: x.prod((0, 1)), TypeError, r"prod\(\) received an invalid combination of arguments"),
    (lambda x: x.topk(5), RuntimeError, "selected index k out of range"),
    (lambda x: x.kthvalue(0), RuntimeError, r"kthvalue\(\): selected number k out of range for dimension 1"),
])
def test_bad_input(fn, exc, msg):
    for lib in ([retrograd] + ([torch] if torch is not None else [])):
        x = lib.ones(3, 4, requires_grad=True) if lib is torch else retrograd.ones(3, 4, requires_grad=True)
        with pytest.raises(exc, match=msg):
            fn(x)
        assert x.grad is None and bool((x == 1).all())


def test_var_dof_warning():
    x = retrograd.ones(1, 3)
    with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0"):
        v = x.var(0)
    assert np.isnan(v.numpy()).all()
    with pytest.warns(UserWarning, match=r"std\(\): degrees of freedom is <= 0"):
        x.std(0)


@needs_torch
@pytest.mark.parametrize("call", ["sum(x, 1, out=o)", "mean(x, 0, out=o)", "prod(x, 1, out=o)", "amax(x, 1, out=o)",
                                  "logsumexp(x, 1, out=o)", "cumsum(x, 1, out=o)", "norm(x, dim=1, out=o)",
                                  "var(x, 1, out=o)", "std(x, 0, out=o)", "argmax(x, 1, out=oi)",
                                  "max(x, 1, out=(o, oi))", "min(x, 0, out=(o, oi))"])
def test_out(call):
    a = np.random.default_rng(0).standard_normal((3, 4))
    res = []
    for lib in (retrograd, torch):
        x = lib.tensor(a)
        o, oi = lib.zeros(0, dtype=lib.float64), lib.zeros(0, dtype=lib.int64)
        r = eval("lib." + call, {"lib": lib, "x": x, "o": o, "oi": oi})
        first = r[0] if isinstance(r, tuple) else r
        assert first is o or first is oi
        res.append([t.numpy().copy() for t in (r if isinstance(r, tuple) else (r,))])
    for p, q in zip(*res):
        np.testing.assert_allclose(p, q, rtol=1e-12)


@pytest.mark.parametrize("fn,specs", [
    (lambda x: retrograd_or_torch(x).linalg.vector_norm(x), [(3, 4)]),
    (lambda x: retrograd_or_torch(x).linalg.vector_norm(x, 3, dim=1, keepdim=True), [NC(3, 4)]),
    (lambda x: retrograd_or_torch(x).linalg.vector_norm(x, ord=float("inf"), dim=(0, 1)), [(3, 4)]),
])
def test_linalg_vector_norm(fn, specs):
    check(fn, specs)
    gradcheck_op(fn, specs)
