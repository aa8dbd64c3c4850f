"""torch.distributions parity, part 2: kl_divergence over PyTorch's whole registry, transforms,
constraints with biject_to / transform_to, and argument validation (errors worded as PyTorch's)."""
import warnings

import numpy as np
import pytest

import retrograd
import retrograd.distributions as RD
from helpers import needs_torch, raised, torch
from dist_cases import CASES

LIBS = [("torch", lambda: (torch, torch.distributions)), ("retrograd", lambda: (retrograd, RD))]


def _t(lib, a, grad=False):
    a = np.asarray(a)
    t = lib.tensor(a) if a.dtype.kind == "i" else lib.tensor(a.astype(np.float64))
    return t.requires_grad_(True) if grad and a.dtype.kind == "f" else t


def _dist(lib, D, name, ps_out):
    params, kw, _ = CASES[name]
    ps = {k: _t(lib, v, True) for k, v in params.items()}
    ps_out.extend(ps.values())
    kw = {k: _t(lib, v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    return getattr(D, name.split("_")[0])(**ps, **kw)


def _kl_pairs():
    pairs = []
    univariate = ["Bernoulli", "Beta", "ContinuousBernoulli", "Exponential", "Gamma", "Gumbel", "HalfNormal",
                  "Laplace", "Normal", "Pareto", "Poisson", "Uniform", "Binomial", "Cauchy", "Geometric"]
    registered = {(p.__name__, q.__name__) for p, q in RD.kl._KL_REGISTRY}
    for p in univariate:
        for q in univariate:
            if (p, q) in registered:
                pairs.append((p, q))
    pairs += [("Categorical", "Categorical"), ("OneHotCategorical", "OneHotCategorical"),
              ("Dirichlet", "Dirichlet"), ("MultivariateNormal", "MultivariateNormal"),
              ("MultivariateNormal", "LowRankMultivariateNormal"),
              ("LowRankMultivariateNormal", "MultivariateNormal"),
              ("LowRankMultivariateNormal", "LowRankMultivariateNormal"), ("Categorical_logits", "Categorical"),
              ("Bernoulli_logits", "Bernoulli"), ("LogNormal", "LogNormal"), ("MultivariateNormal_tril",
                                                                                 "MultivariateNormal_prec")]
    return pairs


def _kl(lib, D, p, q):
    ps = []
    dp, dq = _dist(lib, D, p, ps), _dist(lib, D, q, ps)
    try:
        v = D.kl_divergence(dp, dq)
    except (NotImplementedError, ValueError, RuntimeError) as e:
        return type(e).__name__, None
    if not v.requires_grad:   # an infinite KL (disjoint supports) is a constant
        return v.numpy(), [None] * len(ps)
    gs = lib.autograd.grad(v.sum(), ps, allow_unused=True)
    return v.detach().numpy(), [None if g is None else g.numpy() for g in gs]


@needs_torch
@pytest.mark.parametrize("p,q", _kl_pairs())
def test_kl_divergence_and_gradients_match_torch(p, q):
    tv, tg = _kl(torch, torch.distributions, p, q)
    rv, rg = _kl(retrograd, RD, p, q)
    if isinstance(tv, str):
        assert rv == tv
        return
    np.testing.assert_allclose(rv, tv, rtol=1e-7, atol=1e-10)
    for a, b in zip(rg, tg):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


@needs_torch
def test_kl_of_independent_and_transformed_and_missing_pairs():
    out = []
    for lib, D in ((torch, torch.distributions), (retrograd, RD)):
        loc, scale = _t(lib, [[0.1, -0.3], [1.0, 2.0]]), _t(lib, [[1.0, 0.5], [2.0, 0.7]])
        p = D.Independent(D.Normal(loc, scale), 1)
        q = D.Independent(D.Normal(loc * 0.5, scale + 0.3), 1)
        a = D.kl_divergence(p, q).numpy()
        b = D.kl_divergence(D.LogNormal(loc, scale), D.LogNormal(loc + 1, scale)).numpy()
        with pytest.raises(NotImplementedError) as e:
            D.kl_divergence(D.Normal(loc, scale), D.Poisson(scale))
        out.append((a, b, str(e.value)))
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-7)
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-7)
    assert out[1][2] == out[0][2]


def test_register_kl_dispatches_to_the_most_specific_rule():
    class MyNormal(RD.Normal):
        pass

    @RD.register_kl(MyNormal, RD.Normal)
    def _kl_mine(p, q):
        return retrograd.zeros(p.batch_shape) + 42.0

    p, q = MyNormal(retrograd.zeros(2), retrograd.ones(2)), RD.Normal(retrograd.zeros(2), retrograd.ones(2))
    assert retrograd.equal(RD.kl_divergence(p, q), retrograd.full((2,), 42.0))
    # the generic Normal/Normal rule still applies to plain Normals
    assert float(RD.kl_divergence(q, q).abs().max()) == 0.0


# --- transforms --------------------------------------------------------------------------

def _transform_makers(lib, D):
    T = D.transforms
    return {
        "Exp": (lambda: T.ExpTransform(), (2, 3)),
        "Affine": (lambda: T.AffineTransform(_t(lib, [0.5, -1.0, 2.0]), _t(lib, [2.0, -0.5, 1.5])), (2, 3)),
        "Affine_event": (lambda: T.AffineTransform(1.0, 3.0, event_dim=1), (2, 3)),
        "Sigmoid": (lambda: T.SigmoidTransform(), (2, 3)),
        "Tanh": (lambda: T.TanhTransform(), (2, 3)),
        "Softplus": (lambda: T.SoftplusTransform(), (2, 3)),
        "Power": (lambda: T.PowerTransform(_t(lib, 2.5)), (2, 3)),
        "Abs": (lambda: T.AbsTransform(), (2, 3)),
        "Softmax": (lambda: T.SoftmaxTransform(), (2, 3)),
        "StickBreaking": (lambda: T.StickBreakingTransform(), (2, 3)),
        "LowerCholesky": (lambda: T.LowerCholeskyTransform(), (2, 3, 3)),
        "PositiveDefinite": (lambda: T.PositiveDefiniteTransform(), (2, 3, 3)),
        "CorrCholesky": (lambda: T.CorrCholeskyTransform(), (2, 3)),
        "Compose": (lambda: T.ComposeTransform([T.AffineTransform(0.3, 2.0), T.ExpTransform(), T.PowerTransform(2.0)]),
                    (2, 3)),
        "Inverse": (lambda: T.ExpTransform().inv, (2, 3)),
        "Reshape": (lambda: T.ReshapeTransform((6,), (2, 3)), (4, 6)),
        "Independent": (lambda: T.IndependentTransform(T.ExpTransform(), 1), (2, 3)),
        "Cat": (lambda: T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)], dim=1, lengths=[1, 2]), (2, 3)),
        "Stack": (lambda: T.StackTransform([T.ExpTransform(), T.SigmoidTransform()], dim=1), (3, 2)),
        "CumulativeDistribution": (lambda: T.CumulativeDistributionTransform(D.Normal(0.5, 2.0)), (2, 3)),
    }


def _transforms(lib, D):
    return {k: (make(), shape) for k, (make, shape) in _transform_makers(lib, D).items()}


def _positive_input(name):
    return name in ("Inverse",)


def _run_transform(lib, D, name, x):
    t, _ = _transforms(lib, D)[name]
    xt = _t(lib, x, True)
    y = t(xt)
    out = {"y": y.detach().numpy(), "repr": repr(t), "sign": None, "event_dim": (t.domain.event_dim,
                                                                                t.codomain.event_dim),
           "bijective": t.bijective, "domain": repr(t.domain), "codomain": repr(t.codomain)}
    try:
        out["sign"] = int(t.sign) if not hasattr(t.sign, "shape") else t.sign.numpy().tolist()
    except NotImplementedError:
        out["sign"] = "NotImplementedError"
    x2 = t.inv(y)
    out["inv"] = x2.detach().numpy()
    try:
        ladj = t.log_abs_det_jacobian(xt, y)
        out["ladj"] = ladj.detach().numpy()
        total = y.sum() + ladj.sum()
    except NotImplementedError:
        out["ladj"] = "NotImplementedError"
        total = y.sum()
    out["grad"] = lib.autograd.grad(total, xt)[0].numpy()
    out["shape"] = (tuple(t.forward_shape(tuple(y.shape if False else x.shape))),
                    tuple(t.inverse_shape(tuple(y.shape))))
    return out


@needs_torch
@pytest.mark.parametrize("name", sorted(_transforms(retrograd, RD)) if True else [])
def test_transforms_match_torch(name):
    shape = _transforms(retrograd, RD)[name][1]
    rng = np.random.RandomState(3)
    x = rng.uniform(0.2, 1.5, shape) if _positive_input(name) else rng.randn(*shape)
    if name == "PositiveDefinite":
        x = x @ np.swapaxes(x, -1, -2) + 3 * np.eye(3)
        x = np.linalg.cholesky(x)
    t = _run_transform(torch, torch.distributions, name, x)
    r = _run_transform(retrograd, RD, name, x)
    for k in t:
        if isinstance(t[k], np.ndarray):
            np.testing.assert_allclose(r[k], t[k], rtol=1e-7, atol=1e-10, err_msg=k)
        else:
            assert r[k] == t[k], k


@needs_torch
def test_transformed_distribution_matches_torch():
    out = []
    for lib, D in ((torch, torch.distributions), (retrograd, RD)):
        T = D.transforms
        loc = _t(lib, [0.2, -0.4], True)
        base = D.Normal(loc, _t(lib, [1.0, 0.5]))
        d = D.TransformedDistribution(base, [T.AffineTransform(1.0, 2.0), T.SigmoidTransform()])
        v = _t(lib, [0.3, 0.8])
        lp = d.log_prob(v)
        g = lib.autograd.grad(lp.sum(), loc)[0]
        s = d.rsample((5,))
        out.append((lp.detach().numpy(), g.numpy(), tuple(s.shape), repr(d.support), d.cdf(v).detach().numpy(),
                    d.icdf(_t(lib, [0.25, 0.75])).detach().numpy()))
    for a, b in zip(out[1], out[0]):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=1e-7)
        else:
            assert a == b


# --- constraints -------------------------------------------------------------------------

def _constraints(C):
    return {"real": C.real, "positive": C.positive, "unit_interval": C.unit_interval, "simplex": C.simplex,
            "greater_than": C.greater_than(1.5), "less_than": C.less_than(-2.0),
            "interval": C.interval(-1.0, 3.0), "half_open_interval": C.half_open_interval(0.0, 2.0),
            "lower_cholesky": C.lower_cholesky, "positive_definite": C.positive_definite,
            "corr_cholesky": C.corr_cholesky, "real_vector": C.real_vector, "nonnegative": C.nonnegative,
            "greater_than_eq": C.greater_than_eq(0.5), "lower_triangular": C.lower_triangular,
            "positive_semidefinite": C.positive_semidefinite, "independent": C.independent(C.positive, 1),
            "cat": C.cat([C.positive, C.real], dim=-1, lengths=[1, 2]),
            "stack": C.stack([C.positive, C.unit_interval], dim=-1), "softplus_positive": C.softplus_positive if
            hasattr(C, "softplus_positive") else C.positive}


@needs_torch
@pytest.mark.parametrize("name", sorted(_constraints(RD.constraints)))
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_constraint_registry_matches_torch(name, registry):
    rng = np.random.RandomState(5)
    shape = {"lower_cholesky": (2, 3, 3), "positive_definite": (2, 3, 3), "lower_triangular": (2, 3, 3),
             "positive_semidefinite": (2, 3, 3), "corr_cholesky": (2, 3), "stack": (3, 2)}.get(name, (2, 3))
    x = rng.randn(*shape)
    res = []
    for lib, D in ((torch, torch.distributions), (retrograd, RD)):
        c = _constraints(D.constraints)[name]
        xs = _t(lib, x, True)
        try:
            t = getattr(D, registry)(c)
        except NotImplementedError as e:
            res.append(("NotImplementedError", str(e)))
            continue
        y = t(xs)
        ok = c.check(y)
        g = lib.autograd.grad(y.sum(), xs)[0]
        res.append((repr(c), c.is_discrete, c.event_dim, type(t).__name__, y.detach().numpy(), ok.numpy(),
                    g.numpy()))
    for a, b in zip(res[1], res[0]):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-10)
        else:
            assert a == b


@needs_torch
def test_constraint_checks_match_torch():
    rng = np.random.RandomState(0)
    vals = rng.randn(4, 3) * 2
    for name in ["real", "positive", "unit_interval", "simplex", "greater_than", "less_than", "interval",
                 "half_open_interval", "real_vector", "nonnegative", "greater_than_eq", "independent"]:
        tc, rc = _constraints(torch.distributions.constraints)[name], _constraints(RD.constraints)[name]
        assert repr(rc) == repr(tc)
        np.testing.assert_array_equal(rc.check(_t(retrograd, vals)).numpy(), tc.check(_t(torch, vals)).numpy())
    for name in ["boolean", "nonnegative_integer", "positive_integer"]:
        tc, rc = getattr(torch.distributions.constraints, name), getattr(RD.constraints, name)
        v = np.array([-1.0, 0.0, 1.0, 2.5, 3.0])
        np.testing.assert_array_equal(rc.check(_t(retrograd, v)).numpy(), tc.check(_t(torch, v)).numpy())
        assert rc.is_discrete == tc.is_discrete
    assert repr(RD.constraints.integer_interval(0, 4)) == repr(torch.distributions.constraints.integer_interval(0, 4))


# --- validation --------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("case", [
    lambda lib, D: D.Normal(_t(lib, [0.0, float("nan")]), _t(lib, [1.0, 1.0])),
    lambda lib, D: D.Normal(_t(lib, [0.0, 1.0]), _t(lib, [1.0, -2.0])),
    lambda lib, D: D.Normal(0.0, -1.0),
    lambda lib, D: D.Bernoulli(probs=_t(lib, [0.2, 1.5])),
    lambda lib, D: D.Bernoulli(probs=_t(lib, [0.2]), logits=_t(lib, [0.1])),
    lambda lib, D: D.Categorical(probs=_t(lib, [[0.2, -0.1, 0.9]])),
    lambda lib, D: D.Categorical(_t(lib, 0.5)),
    lambda lib, D: D.Uniform(_t(lib, [1.0]), _t(lib, [0.0])),
    lambda lib, D: D.Normal(_t(lib, [0.0]), _t(lib, [1.0])).log_prob(_t(lib, [[float("nan")]])),
    lambda lib, D: D.Bernoulli(probs=_t(lib, [0.3, 0.6])).log_prob(_t(lib, [0.5, 1.0])),
    lambda lib, D: D.Categorical(logits=_t(lib, [0.3, 0.6, 0.1])).log_prob(_t(lib, [3])),
    lambda lib, D: D.Gamma(_t(lib, [1.0]), _t(lib, [1.0])).log_prob(_t(lib, [-1.0])),
    lambda lib, D: D.Dirichlet(_t(lib, [1.0, 2.0])).log_prob(_t(lib, [0.5, 0.6])),
    lambda lib, D: D.MultivariateNormal(_t(lib, [0.0, 0.0]), _t(lib, [[1.0, 2.0], [2.0, 1.0]])),
    lambda lib, D: D.MultivariateNormal(_t(lib, [0.0, 0.0])),
    lambda lib, D: D.Normal(_t(lib, [0.0, 1.0]), _t(lib, [1.0, 1.0, 1.0])),
    lambda lib, D: D.Normal(_t(lib, [0.0, 1.0]), _t(lib, [1.0, 2.0])).expand((3, 3)),
    lambda lib, D: D.Binomial(3, probs=_t(lib, [0.5])).log_prob(_t(lib, [4.0])),
    lambda lib, D: D.Independent(D.Normal(_t(lib, [0.0]), _t(lib, [1.0])), 2),
    lambda lib, D: D.Normal(_t(lib, [0.0]), _t(lib, [1.0])).enumerate_support(),
])
def test_validation_errors_match_torch(case):
    t = raised(lambda: case(torch, torch.distributions))
    r = raised(lambda: case(retrograd, RD))
    assert t is not None
    assert r == t


@needs_torch
def test_set_default_validate_args_turns_checks_off():
    for lib, D in ((torch, torch.distributions), (retrograd, RD)):
        assert D.Distribution._validate_args is True
        D.Distribution.set_default_validate_args(False)
        try:
            d = D.Normal(_t(lib, [0.0]), _t(lib, [-1.0]))
            assert np.isnan(d.log_prob(_t(lib, [0.0])).numpy()).all()
        finally:
            D.Distribution.set_default_validate_args(True)
        with pytest.raises(ValueError):
            D.Normal(_t(lib, [0.0]), _t(lib, [-1.0]))
        d = D.Normal(_t(lib, [0.0]), _t(lib, [-1.0]), validate_args=False)
        assert d.scale.item() == -1.0


def test_validate_args_error_names_the_parameter_without_torch():
    with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape \(2,\)\) of distribution "
                                         r"Normal\(loc: torch.Size\(\[2\]\), scale: torch.Size\(\[2\]\)\) to satisfy "
                                         r"the constraint GreaterThan\(lower_bound=0.0\), but found invalid values:"):
        RD.Normal(retrograd.zeros(2), -retrograd.ones(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RD.Normal(retrograd.zeros(2), retrograd.ones(2)).log_prob(retrograd.zeros(2))
