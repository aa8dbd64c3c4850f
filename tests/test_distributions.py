"""torch.distributions parity: every distribution's statistics, densities and their gradients,
reprs, shapes and dtypes of samples, against PyTorch on the same parameters (tests/dist_cases.py)."""
import numpy as np
import pytest

import retrograd
import retrograd.distributions as RD
from helpers import torch, needs_torch
from dist_cases import CASES

STATS = ["mean", "variance", "stddev", "mode", "entropy", "log_prob", "cdf", "icdf", "perplexity"]


def _tensor(lib, a, grad):
    a = np.asarray(a)
    if a.dtype.kind == "i":
        return lib.tensor(a)
    t = lib.tensor(a.astype(np.float64))
    return t.requires_grad_(True) if grad else t


def _build(lib, D, name):
    params, kw, _ = CASES[name]
    ps = {k: _tensor(lib, v, True) for k, v in params.items()}
    kw = {k: _tensor(lib, v, False) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    return getattr(D, name.split("_")[0])(**ps, **kw), ps


def _stat(lib, d, what):
    value = CASES[_stat.case][2]
    if what == "entropy":
        return d.entropy()
    if what == "perplexity":
        return d.perplexity()
    if what == "log_prob":
        return d.log_prob(_tensor(lib, value, False))
    if what == "cdf":
        return d.cdf(_tensor(lib, value, False))
    if what == "icdf":
        return d.icdf(_tensor(lib, np.full(tuple(d.batch_shape), 0.3), False))
    return getattr(d, what)


def _run(lib, D, name, what):
    """(value, gradients of value.sum() w.r.t. the parameters) or the exception's type."""
    d, ps = _build(lib, D, name)
    _stat.case = name
    try:
        v = _stat(lib, d, what)
    except (NotImplementedError, ValueError, RuntimeError, TypeError, AttributeError) as e:
        return type(e).__name__, None
    grads = None
    if v.requires_grad:
        try:
            gs = lib.autograd.grad(v.sum(), list(ps.values()), allow_unused=True)
        except NotImplementedError as e:
            grads = str(e)
        else:
            grads = [None if g is None else g.detach().numpy().copy() for g in gs]
    return v.detach().numpy().copy(), grads


# PyTorch 2.13's own failures on float64 parameters ("Double did not match Float"): checked
# against SciPy instead (test_generalized_pareto_density_and_cdf_match_scipy)
TORCH_FLOAT64_BUGS = {("GeneralizedPareto", "log_prob"), ("GeneralizedPareto", "cdf")}


@needs_torch
@pytest.mark.parametrize("what", STATS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_statistics_and_gradients_match_torch(name, what):
    if (name, what) in TORCH_FLOAT64_BUGS:
        assert _run(torch, torch.distributions, name, what) == ("RuntimeError", None)
        return
    tv, tg = _run(torch, torch.distributions, name, what)
    rv, rg = _run(retrograd, RD, name, what)
    if isinstance(tv, str):
        assert rv == tv
        return
    assert isinstance(rv, np.ndarray), rv
    assert rv.shape == tv.shape and rv.dtype == tv.dtype
    np.testing.assert_allclose(rv, tv, rtol=1e-7, atol=1e-10)
    assert (rg is None) == (tg is None)
    if isinstance(tg, str):
        assert rg == tg
    elif tg is not None:
        for a, b in zip(rg, tg):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


@needs_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_shapes_support_repr_and_sample_dtype_match_torch(name):
    td, _ = _build(torch, torch.distributions, name)
    rd, _ = _build(retrograd, RD, name)
    assert tuple(rd.batch_shape) == tuple(td.batch_shape)
    assert tuple(rd.event_shape) == tuple(td.event_shape)
    assert repr(rd) == repr(td)
    assert repr(rd.support) == repr(td.support)
    assert rd.has_rsample == td.has_rsample and rd.has_enumerate_support == td.has_enumerate_support
    for shape in [(), (2,), (2, 3)]:
        ts, rs = td.sample(shape), rd.sample(shape)
        assert tuple(rs.shape) == tuple(ts.shape)
        assert str(rs.dtype).split(".")[-1] == str(ts.dtype).split(".")[-1]
        assert not rs.requires_grad
        assert bool(rd.support.check(rs).all())
    if rd.has_rsample:
        s = rd.rsample((2,))
        assert s.requires_grad and tuple(s.shape) == tuple(td.rsample((2,)).shape)


@needs_torch
@pytest.mark.parametrize("name", ["Normal", "Uniform", "Bernoulli", "Categorical", "Gamma", "Beta", "Dirichlet",
                                  "Poisson", "Exponential", "MultivariateNormal", "OneHotCategorical",
                                  "Multinomial", "Binomial", "Laplace"])
def test_float32_parameters_give_float32_results(name):
    params, kw, value = CASES[name]
    out = []
    for lib, D in ((torch, torch.distributions), (retrograd, RD)):
        ps = {k: lib.tensor(np.asarray(v, np.float32)) for k, v in params.items()}
        d = getattr(D, name)(**ps, **kw)
        v = lib.tensor(np.asarray(value, np.float32 if np.asarray(value).dtype.kind == "f" else np.int64))
        lp, s = d.log_prob(v), d.sample((4,))
        out.append((str(lp.dtype).split(".")[-1], str(s.dtype).split(".")[-1], lp.numpy()))
    assert out[0][:2] == out[1][:2]
    np.testing.assert_allclose(out[1][2], out[0][2], rtol=2e-5, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("name", ["Bernoulli", "Categorical", "OneHotCategorical", "Binomial"])
@pytest.mark.parametrize("expand", [True, False])
def test_enumerate_support_matches_torch(name, expand):
    td, _ = _build(torch, torch.distributions, name)
    rd, _ = _build(retrograd, RD, name)
    t, r = td.enumerate_support(expand), rd.enumerate_support(expand)
    assert tuple(r.shape) == tuple(t.shape) and str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(r.numpy(), t.numpy())


@needs_torch
@pytest.mark.parametrize("name", ["Normal", "Bernoulli", "Categorical", "Gamma", "Dirichlet", "MultivariateNormal",
                                  "LowRankMultivariateNormal", "Beta", "StudentT", "Binomial", "Multinomial",
                                  "RelaxedBernoulli", "RelaxedOneHotCategorical", "LogNormal", "Uniform", "Chi2",
                                  "Gumbel", "HalfNormal", "HalfCauchy", "Pareto", "Weibull", "Kumaraswamy",
                                  "InverseGamma", "FisherSnedecor", "NegativeBinomial",
                                  "ContinuousBernoulli", "Geometric", "Poisson", "OneHotCategorical"])
def test_expand_matches_torch(name):
    td, _ = _build(torch, torch.distributions, name)
    rd, _ = _build(retrograd, RD, name)
    shape = (4,) + tuple(td.batch_shape)
    te, re_ = td.expand(shape), rd.expand(shape)
    assert type(re_).__name__ == type(te).__name__
    assert tuple(re_.batch_shape) == tuple(te.batch_shape) and tuple(re_.event_shape) == tuple(te.event_shape)
    assert tuple(re_.sample().shape) == tuple(te.sample().shape)
    value = np.asarray(CASES[name][2])
    tl = te.log_prob(_tensor(torch, value, False))
    rl = re_.log_prob(_tensor(retrograd, value, False))
    np.testing.assert_allclose(rl.detach().numpy(), tl.detach().numpy(), rtol=1e-7, atol=1e-10)
    with pytest.raises(RuntimeError):
        td.expand((5, 7))
    with pytest.raises(RuntimeError):
        rd.expand((5, 7))


def test_generalized_pareto_density_and_cdf_match_scipy():
    from scipy import stats
    from retrograd.autograd.gradcheck import gradcheck
    params, _, value = CASES["GeneralizedPareto"]
    ref = stats.genpareto(params["concentration"], params["loc"], params["scale"])
    d, ps = _build(retrograd, RD, "GeneralizedPareto")
    x = retrograd.tensor(value)
    np.testing.assert_allclose(d.log_prob(x).detach().numpy(), ref.logpdf(value), rtol=1e-12)
    np.testing.assert_allclose(d.cdf(x).detach().numpy(), ref.cdf(value), rtol=1e-12)
    for what in ("log_prob", "cdf"):
        assert gradcheck(lambda *a: getattr(RD.GeneralizedPareto(*a), what)(x), tuple(ps.values()))
    # concentration 0: the exponential law
    f64 = dict(dtype=retrograd.float64)
    e = RD.GeneralizedPareto(retrograd.tensor([0.5], **f64), retrograd.tensor([2.0], **f64),
                             retrograd.tensor([0.0], **f64))
    v = retrograd.tensor([1.7], **f64)
    np.testing.assert_allclose(e.log_prob(v).numpy(), stats.expon(0.5, 2.0).logpdf(1.7), rtol=1e-12)
    np.testing.assert_allclose(e.cdf(v).numpy(), stats.expon(0.5, 2.0).cdf(1.7), rtol=1e-12)


@needs_torch
def test_expand_of_a_batchless_transformed_distribution_matches_torch():
    # LogisticNormal over a single vector has batch shape (): any batch shape is reachable
    out = []
    for lib, D in ((torch, torch.distributions), (retrograd, RD)):
        d, _ = _build(lib, D, "LogisticNormal")
        e = d.expand((5, 7))
        value = _tensor(lib, CASES["LogisticNormal"][2], False)
        out.append((tuple(e.batch_shape), tuple(e.base_dist.batch_shape), tuple(e.sample().shape),
                    e.log_prob(value).detach().numpy()))
    assert out[1][:3] == out[0][:3]
    np.testing.assert_allclose(out[1][3], out[0][3], rtol=1e-7)


def test_sample_n_warns_and_samples():
    d = RD.Normal(retrograd.zeros(2), retrograd.ones(2))
    with pytest.warns(FutureWarning, match="sample_n"):
        s = d.sample_n(3)
    assert tuple(s.shape) == (3, 2)


def test_reached_as_torch_distributions():
    import retrograd as t
    assert t.distributions is RD
    assert t.distributions.Categorical is RD.categorical.Categorical
    with pytest.raises(AttributeError):
        t.not_a_module_of_torch


def _composites(lib, D, ps):
    rng = np.random.RandomState(11)
    mix = _tensor(lib, rng.uniform(0.1, 1, (2, 3)), True)
    loc = _tensor(lib, rng.randn(2, 3), True)
    scale = _tensor(lib, rng.uniform(0.5, 2, (2, 3)), True)
    mvloc = _tensor(lib, rng.randn(2, 3, 2), True)
    ps.extend([mix, loc, scale, mvloc])
    return {
        "MixtureSameFamily": (D.MixtureSameFamily(D.Categorical(probs=mix), D.Normal(loc, scale)),
                              rng.randn(4, 2)),
        "MixtureSameFamily_event": (D.MixtureSameFamily(D.Categorical(logits=mix),
                                                        D.Independent(D.Normal(mvloc, scale[..., None]), 1)),
                                    rng.randn(4, 2, 2)),
        "Independent": (D.Independent(D.Normal(loc, scale), 1), rng.randn(4, 2, 3)),
        "Independent_beta": (D.Independent(D.Beta(scale, scale.flip(-1)), 2), rng.uniform(0.1, 0.9, (2, 3))),
    }


@needs_torch
@pytest.mark.parametrize("name", ["MixtureSameFamily", "MixtureSameFamily_event", "Independent",
                                  "Independent_beta"])
@pytest.mark.parametrize("what", ["mean", "variance", "log_prob", "cdf", "entropy", "sample", "repr"])
def test_composite_distributions_match_torch(name, what):
    out = []
    for lib, D in ((torch, torch.distributions), (retrograd, RD)):
        ps = []
        d, value = _composites(lib, D, ps)[name]
        try:
            if what == "repr":
                out.append((repr(d), tuple(d.batch_shape), tuple(d.event_shape)))
                continue
            if what == "sample":
                out.append(tuple(d.sample((5,)).shape))
                continue
            v = d.log_prob(_tensor(lib, value, False)) if what == "log_prob" else \
                d.cdf(_tensor(lib, value, False)) if what == "cdf" else d.entropy() if what == "entropy" else \
                getattr(d, what)
        except NotImplementedError as e:
            out.append(("NotImplementedError", str(e)))
            continue
        gs = lib.autograd.grad(v.sum(), ps, allow_unused=True)
        out.append((v.detach().numpy(), [None if g is None else g.numpy() for g in gs]))
    t, r = out
    if isinstance(t, tuple) and isinstance(t[0], np.ndarray):
        np.testing.assert_allclose(r[0], t[0], rtol=1e-7, atol=1e-10)
        for a, b in zip(r[1], t[1]):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)
    else:
        assert r == t


def _float32_run(lib, D, name):
    params, kw, value = CASES[name]

    def t(a, grad=False):
        a = np.asarray(a)
        if a.dtype.kind == "i":
            return lib.tensor(a)
        r = lib.tensor(a.astype(np.float32))
        return r.requires_grad_(True) if grad else r
    ps = {k: t(v, True) for k, v in params.items()}
    d = getattr(D, name.split("_")[0])(**ps, **{k: t(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()})
    out = {}
    for what in ["mean", "variance", "entropy", "log_prob", "cdf", "rsample", "sample"]:
        try:
            v = (d.entropy() if what == "entropy" else d.log_prob(t(value)) if what == "log_prob" else
                 d.cdf(t(value)) if what == "cdf" else d.rsample() if what == "rsample" else
                 d.sample() if what == "sample" else getattr(d, what))
        except NotImplementedError:
            out[what] = "NotImplementedError"
            continue
        g = None
        if v.requires_grad:   # (lazy properties share parts of the graph between statistics)
            try:
                gs = lib.autograd.grad(v.sum(), list(ps.values()), allow_unused=True, retain_graph=True)
                g = [None if x is None else str(x.dtype).split(".")[-1] for x in gs]
            except NotImplementedError as e:
                g = str(e)
        out[what] = (str(v.dtype).split(".")[-1], g, None if "sample" in what else v.detach().numpy())
    return out


@needs_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_dtypes_and_values_match_torch(name):
    t, r = _float32_run(torch, torch.distributions, name), _float32_run(retrograd, RD, name)
    for k in t:
        if isinstance(t[k], str):
            assert r[k] == t[k], k
            continue
        assert r[k][:2] == t[k][:2], k
        if t[k][2] is not None:
            np.testing.assert_allclose(r[k][2], t[k][2], rtol=1e-4, atol=1e-5, err_msg=k)


@needs_torch
def test_straight_through_one_hot_rsample_matches_torch():
    out = []
    for lib, D in ((torch, torch.distributions), (retrograd, RD)):
        p = _tensor(lib, [[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]], True)
        d = D.OneHotCategoricalStraightThrough(probs=p)
        s = d.rsample((4,))
        w = _tensor(lib, np.arange(24.0).reshape(4, 2, 3), False)
        g = lib.autograd.grad((s * w).sum(), p)[0]
        out.append((repr(d), d.has_rsample, tuple(s.shape), s.grad_fn.name(), g.numpy(),
                    bool(((s == 0) | (s == 1)).all()), s.sum(-1).detach().numpy()))
    t, r = out
    assert r[:4] == t[:4] and r[5] and t[5]
    np.testing.assert_allclose(r[4], t[4], rtol=1e-12)
    np.testing.assert_array_equal(r[6], t[6])
