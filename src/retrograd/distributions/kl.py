"""``kl_divergence(p, q)`` and its registry: closed forms for pairs of distribution types,
dispatched to the most specific registered pair (``register_kl`` adds one)."""
import math
import warnings

import retrograd as _t
from ..ops.special import lgamma, digamma
from ..linalg import solve_triangular
from .distribution import Distribution, ExponentialFamily
from .continuous import Normal, Uniform, Exponential, Laplace, Cauchy, Gamma, Beta, Dirichlet
from .discrete import Bernoulli, Binomial, Geometric, Poisson, ContinuousBernoulli
from .categorical import Categorical, OneHotCategorical
from .multivariate import MultivariateNormal, LowRankMultivariateNormal
from .transformed import Independent, TransformedDistribution
from .derived import Gumbel, HalfNormal, Pareto
from .utils import _sum_rightmost, _batch_mahalanobis, euler_constant

_KL_REGISTRY = {}   # (type_p, type_q) -> function(p, q)
_KL_MEMOIZE = {}    # (type(p), type(q)) -> the function dispatched to


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as KL(p || q) for instances of ``type_p`` / ``type_q``
    (and their subclasses, unless a more specific pair is registered)."""
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()
        return fn
    return decorator


def _dispatch_kl(type_p, type_q):
    matches = [(p, q) for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return NotImplemented
    # closeness in each argument's MRO; p first, then q first: the two must agree
    left = min(matches, key=lambda m: (type_p.__mro__.index(m[0]), type_q.__mro__.index(m[1])))
    right = min(matches, key=lambda m: (type_q.__mro__.index(m[1]), type_p.__mro__.index(m[0])))
    fn = _KL_REGISTRY[left]
    if fn is not _KL_REGISTRY[right]:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left[0].__name__}, {right[1].__name__})", RuntimeWarning)
    return fn


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the distributions' batch shape."""
    key = type(p), type(q)
    fn = _KL_MEMOIZE.get(key)
    if fn is None:
        fn = _KL_MEMOIZE[key] = _dispatch_kl(*key)
    if fn is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and "
                                  f"q type {q.__class__.__name__}")
    return fn(p, q)


def _inf_like(t):
    return _t.full_like(t, math.inf)


def _softplus(x):
    return _t.nn.functional.softplus(x)


# --- same family ----------------------------------------------------------------------

@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    r = ((q.high - q.low) / (p.high - p.low)).log()
    return _t.where((q.low > p.low) | (q.high < p.high), math.inf, r)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1 - ratio.log()


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    d = (p.loc - q.loc).abs()
    return -scale_ratio.log() + d / q.scale + scale_ratio * _t.exp(-d / p.scale) - 1


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    return (((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)) / (4 * p.scale * q.scale)).log()


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    a, b, c, d = p.concentration, p.rate, q.concentration, q.rate
    return (c * _t.log(b / d) + lgamma(c) - lgamma(a) + (a - c) * digamma(a) + (d - b) * (a / b))


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    a, b, c, d = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    sp, sq = a + b, c + d
    return (lgamma(c) + lgamma(d) + lgamma(sp) - lgamma(a) - lgamma(b) - lgamma(sq)
            + (a - c) * digamma(a) + (b - d) * digamma(b) + (sq - sp) * digamma(sp))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    a, b = p.concentration, q.concentration
    a0, b0 = a.sum(-1), b.sum(-1)
    return (lgamma(a0) - lgamma(b0) - (lgamma(a) - lgamma(b)).sum(-1)
            + ((a - b) * (digamma(a) - digamma(a0).unsqueeze(-1))).sum(-1))


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    # each term is 0 where p puts no mass on it, inf where q puts none
    t1 = p.probs * (_softplus(-q.logits) - _softplus(-p.logits))
    t1 = _t.where(p.probs == 0, 0.0, _t.where(q.probs == 0, math.inf, t1))
    t2 = (1 - p.probs) * (_softplus(q.logits) - _softplus(p.logits))
    t2 = _t.where(p.probs == 1, 0.0, _t.where(q.probs == 1, math.inf, t2))
    return t1 + t2


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return _t.where(p.total_count > q.total_count, math.inf, kl)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - _t.log1p(-q.probs) / p.probs - q.logits


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _t.where((p.probs == 0).expand_as(t), 0.0, _t.where((q.probs == 0).expand_as(t), math.inf, t))
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


def _gaussian_kl(p, q, what):
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {what} with different event shapes cannot be computed")
    Lp, Lq = p._unbroadcasted_scale_tril_(), q._unbroadcasted_scale_tril_()
    n = p.event_shape[0]
    half_term1 = Lq.diagonal(dim1=-2, dim2=-1).log().sum(-1) - Lp.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    batch = _t.broadcast_shapes(Lq.shape[:-2], Lp.shape[:-2])
    # tr(Sq^-1 Sp) = ||Lq^-1 Lp||_F^2
    term2 = solve_triangular(Lq.expand(batch + (n, n)), Lp.expand(batch + (n, n)), upper=False).pow(2).sum((-2, -1))
    term3 = _batch_mahalanobis(Lq, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


def _mvn_factor(self):
    return self._unbroadcasted_scale_tril


def _lowrank_factor(self):
    # a Cholesky factor of W W^T + diag(D), without the batch expansion
    from ..linalg import cholesky
    W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
    sqrt_d = D.sqrt().unsqueeze(-1)
    Wd = W / sqrt_d
    return sqrt_d * cholesky(Wd @ Wd.mT + _t.eye(W.shape[-2], dtype=W.dtype))


MultivariateNormal._unbroadcasted_scale_tril_ = _mvn_factor
LowRankMultivariateNormal._unbroadcasted_scale_tril_ = _lowrank_factor


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    return _gaussian_kl(p, q, "Multivariate Normals")


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank(p, q):
    return _gaussian_kl(p, q, "(Low Rank) Multivariate Normals")


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    extra = len(p.event_shape) - len(p.base_dist.event_shape)
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), extra)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    # the Bregman-divergence route needs one family on both sides; the pairs of one family
    # that retrograd provides all have closed forms above
    if type(p) is not type(q):
        # (PyTorch's message has this run of 29 spaces in it)
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot"
                                  + " " * 29 + "be computed using Bregman divergences")
    raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and "
                              f"q type {q.__class__.__name__}")


# --- across families ------------------------------------------------------------------

def _normal_cross_entropy(q, second_moment_about_loc):
    """-E_p[log q] for a Normal q, given E_p[(x - q.loc)^2]."""
    return q.scale.log() + 0.5 * math.log(2 * math.pi) + second_moment_about_loc / (2 * q.scale.pow(2))


def _gamma_cross_entropy(q, mean_log, mean):
    """-E_p[log q] for a Gamma q, given E_p[log x] and E_p[x]."""
    a, b = q.concentration, q.rate
    return -a * b.log() + lgamma(a) - (a - 1) * mean_log + b * mean


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    a, b = p.concentration1, p.concentration0
    return -p.entropy() + _gamma_cross_entropy(q, digamma(a) - digamma(a + b), p.mean)


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    a, b = p.concentration1, p.concentration0
    m2 = a * (a + 1) / ((a + b) * (a + b + 1))
    return -p.entropy() + _normal_cross_entropy(q, m2 - 2 * q.loc * p.mean + q.loc.pow(2))


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    r = -p.entropy() + (q.high - q.low).log()
    return _t.where((q.low > 0) | (q.high < 1), math.inf, r)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    return -p.entropy() + _gamma_cross_entropy(q, -euler_constant - p.rate.log(), p.rate.reciprocal())


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    inv = p.rate.reciprocal()
    return -p.entropy() + _normal_cross_entropy(q, 2 * inv.pow(2) - 2 * q.loc * inv + q.loc.pow(2))


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    a, b = p.concentration, p.rate
    m2 = a * (a + 1) / b.pow(2)
    return -p.entropy() + _normal_cross_entropy(q, m2 - 2 * q.loc * p.mean + q.loc.pow(2))


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    return -p.entropy() + _normal_cross_entropy(q, 2 * p.scale.pow(2) + (p.loc - q.loc).pow(2))


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    m3 = ((p.high - q.loc).pow(3) - (p.low - q.loc).pow(3)) / (3 * (p.high - p.low))
    return -p.entropy() + _normal_cross_entropy(q, m3)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    r = -p.entropy() - q.rate.log() + q.rate * p.mean
    return _t.where(p.low < 0, math.inf, r)


@register_kl(Normal, Beta)
@register_kl(Normal, Exponential)
@register_kl(Normal, Gamma)
@register_kl(Normal, Uniform)
def _kl_normal_infinity(p, q):
    return _inf_like(p.loc)


@register_kl(Exponential, Beta)
@register_kl(Exponential, Uniform)
def _kl_exponential_infinity(p, q):
    return _inf_like(p.rate)


@register_kl(Gamma, Beta)
@register_kl(Gamma, Uniform)
def _kl_gamma_infinity(p, q):
    return _inf_like(p.concentration)


def _uniform_mean_log(p):
    """E[log x] for x ~ Uniform(p.low, p.high) (via the antiderivative x log x - x)."""
    return ((p.high * p.high.log() - p.high) - (p.low * p.low.log() - p.low)) / (p.high - p.low)


def _gumbel_cross_entropy(q, mean, mean_exp_neg):
    """-E_p[log q] for a Gumbel q, given E_p[x] and E_p[exp(-x / q.scale)]."""
    return q.scale.log() + (mean - q.loc) / q.scale + _t.exp(q.loc / q.scale) * mean_exp_neg


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    r = p.scale / q.scale
    return (-r.log() + (p.loc - q.loc) / q.scale + r * euler_constant
            + _t.exp((q.loc - p.loc) / q.scale + lgamma(1 + r)) - (1 + euler_constant))


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    lam = p.rate
    return -p.entropy() + _gumbel_cross_entropy(q, lam.reciprocal(), lam / (lam + q.scale.reciprocal()))


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    a, b = p.concentration, p.rate
    return -p.entropy() + _gumbel_cross_entropy(q, a / b, (1 + (q.scale * b).reciprocal()).pow(-a))


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    m_exp = _t.exp(-p.loc / q.scale + p.scale.pow(2) / (2 * q.scale.pow(2)))
    return -p.entropy() + _gumbel_cross_entropy(q, p.loc, m_exp)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    b = q.scale
    m_exp = b * (_t.exp(-p.low / b) - _t.exp(-p.high / b)) / (p.high - p.low)
    return -p.entropy() + _gumbel_cross_entropy(q, p.mean, m_exp)


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    m2 = (math.pi * p.scale) ** 2 / 6 + (p.mean - q.loc).pow(2)
    return -p.entropy() + _normal_cross_entropy(q, m2)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    return 0.5 * (var_ratio - 1 - var_ratio.log())


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    d = p.loc - q.loc
    mean_abs = p.scale * math.sqrt(2 / math.pi) * _t.exp(-d.pow(2) / (2 * p.scale.pow(2))) + \
        d * _t.erf(d / (p.scale * math.sqrt(2)))
    return -p.entropy() + _t.log(2 * q.scale) + mean_abs / q.scale


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    alpha_ratio = q.alpha / p.alpha
    r = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return _t.where(p.scale < q.scale, math.inf, r)


def _pareto_mean_log(p):
    return p.scale.log() + p.alpha.reciprocal()


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    r = -p.entropy() - q.rate.log() + q.rate * p.mean
    return _t.where(p.alpha <= 1, math.inf, r)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    r = -p.entropy() + _gamma_cross_entropy(q, _pareto_mean_log(p), p.mean)
    return _t.where(p.alpha <= 1, math.inf, r)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    a = p.alpha
    m2 = a * p.scale.pow(2) / (a - 2)
    r = -p.entropy() + _normal_cross_entropy(q, m2 - 2 * q.loc * p.mean + q.loc.pow(2))
    return _t.where(a <= 2, math.inf, r)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    a, b = q.concentration1, q.concentration0
    w = p.high - p.low
    mean_log = _uniform_mean_log(p)
    one_minus_log = (((1 - p.low) * (1 - p.low).log() - (1 - p.low))
                     - ((1 - p.high) * (1 - p.high).log() - (1 - p.high))) / w
    lbeta = lgamma(a) + lgamma(b) - lgamma(a + b)
    r = -w.log() - (a - 1) * mean_log - (b - 1) * one_minus_log + lbeta
    return _t.where((p.low < 0) | (p.high > 1), math.inf, r)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    r = (-(p.high - p.low).log() - q.alpha.log() - q.alpha * q.scale.log()
         + (q.alpha + 1) * _uniform_mean_log(p))
    return _t.where(p.low < q.scale, math.inf, r)


@register_kl(Normal, Pareto)
def _kl_normal_pareto(p, q):
    return _inf_like(p.loc)


@register_kl(Exponential, Pareto)
def _kl_exponential_pareto(p, q):
    return _inf_like(p.rate)


@register_kl(Gamma, Pareto)
def _kl_gamma_pareto(p, q):
    return _inf_like(p.concentration)


@register_kl(Beta, Pareto)
def _kl_beta_pareto(p, q):
    return _inf_like(p.concentration1)


@register_kl(Gumbel, Beta)
@register_kl(Gumbel, Exponential)
@register_kl(Gumbel, Gamma)
@register_kl(Gumbel, Pareto)
@register_kl(Gumbel, Uniform)
@register_kl(Laplace, Beta)
@register_kl(Laplace, Exponential)
@register_kl(Laplace, Gamma)
@register_kl(Laplace, Pareto)
@register_kl(Laplace, Uniform)
def _kl_real_line_infinity(p, q):
    return _inf_like(p.loc)


@register_kl(Pareto, Beta)
@register_kl(Pareto, Uniform)
def _kl_pareto_infinity(p, q):
    return _inf_like(p.scale)


@register_kl(Poisson, Bernoulli)
@register_kl(Poisson, Binomial)
def _kl_poisson_infinity(p, q):
    return _inf_like(p.rate)


def _cb_cross_entropy(q, mean):
    """-E_p[log q] for a ContinuousBernoulli q, given E_p[x]."""
    return -(mean * (q.probs.log() - _t.log1p(-q.probs)) + _t.log1p(-q.probs) + q._log_normalizer_c())


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p, q):
    return -p.entropy() + _cb_cross_entropy(q, p.mean)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_cb(p, q):
    return -p.entropy() + _cb_cross_entropy(q, p.mean)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cb(p, q):
    r = -p.entropy() + _cb_cross_entropy(q, p.mean)
    return _t.where((p.low < 0) | (p.high > 1), math.inf, r)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_cb_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_cb_normal(p, q):
    return -p.entropy() + _normal_cross_entropy(q, p.variance + (p.mean - q.loc).pow(2))


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p, q):
    r = -p.entropy() + (q.high - q.low).log()
    return _t.where((q.low > 0) | (q.high < 1), math.inf, r)


@register_kl(ContinuousBernoulli, Pareto)
def _kl_cb_infinity(p, q):
    return _inf_like(p.probs)


@register_kl(Normal, ContinuousBernoulli)
@register_kl(Gumbel, ContinuousBernoulli)
@register_kl(Laplace, ContinuousBernoulli)
def _kl_real_line_cb(p, q):
    return _inf_like(p.loc)


@register_kl(Exponential, ContinuousBernoulli)
def _kl_exponential_cb(p, q):
    return _inf_like(p.rate)


@register_kl(Gamma, ContinuousBernoulli)
def _kl_gamma_cb(p, q):
    return _inf_like(p.concentration)


@register_kl(Pareto, ContinuousBernoulli)
def _kl_pareto_cb(p, q):
    return _inf_like(p.scale)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    r = -p.entropy() + _gamma_cross_entropy(q, _uniform_mean_log(p), p.mean)
    return _t.where(p.low < 0, math.inf, r)
