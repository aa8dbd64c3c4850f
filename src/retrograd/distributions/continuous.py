"""Continuous univariate distributions and the Dirichlet: Normal, Uniform, Exponential, Laplace,
Cauchy, Gamma, Chi2, Beta, StudentT, FisherSnedecor, GeneralizedPareto, Dirichlet."""
import math
from numbers import Number

import retrograd as _t
from .._tensor import Size
from . import constraints
from ..ops.special import lgamma, digamma, igamma as gammainc
from ._ops import _standard_gamma, _sample_dirichlet, _dirichlet_grad
from ..ops._base import OpNode, node_for, finish, save
from .distribution import Distribution, ExponentialFamily
from .utils import broadcast_all, _standard_normal, _uniform

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


def _init(self, names, values, validate_args, event_shape=Size()):
    """Broadcast the parameters, store them under ``names``; the batch shape is theirs."""
    tensors = broadcast_all(*values)
    for n, v in zip(names, tensors):
        setattr(self, n, v)
    Distribution.__init__(self, tensors[0].size(), event_shape, validate_args=validate_args)


def _log(x):
    return math.log(x) if isinstance(x, Number) else x.log()


class Normal(ExponentialFamily):
    """Normal (Gaussian) distribution with mean ``loc`` and standard deviation ``scale``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        _init(self, ("loc", "scale"), (loc, scale), validate_args)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)
    stddev = property(lambda self: self.scale)
    variance = property(lambda self: self.stddev.pow(2))

    def sample(self, sample_shape=Size()):
        with _t.no_grad():
            shape = self._extended_shape(sample_shape)
            return _t.normal(self.loc.expand(shape), self.scale.expand(shape))

    def rsample(self, sample_shape=Size()):
        eps = _standard_normal(self._extended_shape(sample_shape), self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        self._check(value)
        return -((value - self.loc) ** 2) / (2 * self.variance) - _log(self.scale) - _LOG_SQRT_2PI

    def cdf(self, value):
        self._check(value)
        return 0.5 * (1 + _t.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * _t.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + _t.log(self.scale)


class Uniform(Distribution):
    """Uniform distribution on the half-open interval ``[low, high)``."""
    has_rsample = True

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    def __init__(self, low, high, validate_args=None):
        _init(self, ("low", "high"), (low, high), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Uniform, _instance)
        batch_shape = Size(batch_shape)
        new.low, new.high = self.low.expand(batch_shape), self.high.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _param_names(self):
        return ["low", "high"]

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    mean = property(lambda self: (self.high + self.low) / 2)
    mode = property(lambda self: math.nan * self.high)
    stddev = property(lambda self: (self.high - self.low) / 12 ** 0.5)
    variance = property(lambda self: (self.high - self.low).pow(2) / 12)

    def rsample(self, sample_shape=Size()):
        u = _uniform(self._extended_shape(sample_shape), self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        self._check(value)
        inside = self.low.le(value).type_as(self.low) * self.high.gt(value).type_as(self.low)
        return _t.log(inside) - _t.log(self.high - self.low)

    def cdf(self, value):
        self._check(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return _t.log(self.high - self.low)


class Exponential(ExponentialFamily):
    """Exponential distribution with rate ``rate``."""
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        _init(self, ("rate",), (rate,), validate_args)

    mean = property(lambda self: self.rate.reciprocal())
    mode = property(lambda self: _t.zeros_like(self.rate))
    stddev = property(lambda self: self.rate.reciprocal())
    variance = property(lambda self: self.rate.pow(-2))

    def rsample(self, sample_shape=Size()):
        with _t.no_grad():
            e = _t.empty(tuple(self._extended_shape(sample_shape)), dtype=self.rate.dtype).exponential_()
        return e / self.rate

    def log_prob(self, value):
        self._check(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        self._check(value)
        return 1 - _t.exp(-self.rate * value)

    def icdf(self, value):
        return -_t.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - _t.log(self.rate)


class Laplace(Distribution):
    """Laplace distribution with location ``loc`` and scale ``scale``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        _init(self, ("loc", "scale"), (loc, scale), validate_args)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)
    stddev = property(lambda self: math.sqrt(2) * self.scale)
    variance = property(lambda self: 2 * self.scale.pow(2))

    def rsample(self, sample_shape=Size()):
        eps = _t.finfo(self.loc.dtype).eps
        u = _uniform(self._extended_shape(sample_shape), self.loc.dtype, eps - 1, 1)
        return self.loc - self.scale * u.sign() * _t.log1p(-u.abs())

    def log_prob(self, value):
        self._check(value)
        return -_t.log(2 * self.scale) - _t.abs(value - self.loc) / self.scale

    def cdf(self, value):
        self._check(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * _t.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * _t.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + _t.log(2 * self.scale)


class Cauchy(Distribution):
    """Cauchy (Lorentz) distribution with median ``loc`` and half width ``scale``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        _init(self, ("loc", "scale"), (loc, scale), validate_args)

    mean = property(lambda self: _t.full(self._extended_shape(), math.nan, dtype=self.loc.dtype))
    mode = property(lambda self: self.loc)
    variance = property(lambda self: _t.full(self._extended_shape(), math.inf, dtype=self.loc.dtype))

    def rsample(self, sample_shape=Size()):
        # standard Cauchy draws scaled, as PyTorch samples (same draws for the same seed)
        eps = _t.empty(tuple(self._extended_shape(sample_shape)), dtype=self.loc.dtype).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        self._check(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value):
        self._check(value)
        return _t.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return _t.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class Gamma(ExponentialFamily):
    """Gamma distribution with shape ``concentration`` and inverse scale ``rate``."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        _init(self, ("concentration", "rate"), (concentration, rate), validate_args)

    mean = property(lambda self: self.concentration / self.rate)
    mode = property(lambda self: ((self.concentration - 1) / self.rate).clamp(min=0))
    variance = property(lambda self: self.concentration / self.rate.pow(2))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=_t.finfo(value.dtype).tiny)   # never exactly 0
        return value

    def log_prob(self, value):
        value = _t.as_tensor(value, dtype=self.rate.dtype)
        self._check(value)
        c, r = self.concentration, self.rate
        return _t.xlogy(c, r) + _t.xlogy(c - 1, value) - r * value - lgamma(c)

    def cdf(self, value):
        self._check(value)
        return gammainc(self.concentration, self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - _t.log(self.rate) + lgamma(c) + (1.0 - c) * digamma(c)


class Chi2(Gamma):
    """Chi-squared distribution with ``df`` degrees of freedom: Gamma(df / 2, 1 / 2)."""
    arg_constraints = {"df": constraints.positive}
    _also_expand = ("concentration", "rate")

    def __init__(self, df, validate_args=None):
        df, = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    df = property(lambda self: self.concentration * 2)


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution over the simplex, with ``concentration`` along the last dimension."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def rsample(self, sample_shape=()):
        return _dirichlet_rsample(self.concentration.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        self._check(value)
        c = self.concentration
        return _t.xlogy(c - 1.0, value).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        c = self.concentration
        cm1 = (c - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, True)
        # all concentrations below 1: the density peaks at the vertex of the largest one
        vertex = _t.nn.functional.one_hot(c.argmax(-1), cm1.shape[-1]).to(mode.dtype)
        return _t.where((c < 1).all(-1, keepdim=True), vertex, mode)

    @property
    def variance(self):
        c = self.concentration
        c0 = c.sum(-1, True)
        return c * (c0 - c) / (c0.pow(2) * (c0 + 1))

    def entropy(self):
        c = self.concentration
        k, a0 = c.size(-1), c.sum(-1)
        return lgamma(c).sum(-1) - lgamma(a0) - (k - a0) * digamma(a0) - ((c - 1.0) * digamma(c)).sum(-1)


class _DirichletBackward(OpNode):
    def backward(self, g):
        (c,) = self.saved_tensors
        x = self.sample
        grad = _dirichlet_grad(x, c.detach(), c.detach().sum(-1, True).expand_as(c))
        return grad * (g - (x * g).sum(-1, True))


def _dirichlet_rsample(concentration):
    """Dirichlet samples, differentiable through PyTorch's implicit reparameterisation."""
    x = _sample_dirichlet(concentration)
    node = node_for(_DirichletBackward, (concentration,))
    res = finish(node, x._data)
    if node is not None:
        node.sample = x
        save(node, concentration)
    return res


class Beta(ExponentialFamily):
    """Beta distribution with ``concentration1`` (alpha) and ``concentration0`` (beta)."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True
    _also_expand = ("_dirichlet",)

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, Number) and isinstance(concentration0, Number):
            c = _t.tensor([float(concentration1), float(concentration0)])
        else:
            c = _t.stack(broadcast_all(concentration1, concentration0), -1)
        self._dirichlet = Dirichlet(c, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    concentration1 = property(lambda self: self._dirichlet.concentration[..., 0])
    concentration0 = property(lambda self: self._dirichlet.concentration[..., 1])
    mean = property(lambda self: self.concentration1 / (self.concentration1 + self.concentration0))
    mode = property(lambda self: self._dirichlet.mode[..., 0])

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        self._check(value)
        return self._dirichlet.log_prob(_t.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()


class StudentT(Distribution):
    """Student's t-distribution with ``df`` degrees of freedom, location and scale."""
    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _also_expand = ("_chi2",)

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        _init(self, ("df", "loc", "scale"), (df, loc, scale), validate_args)
        self._chi2 = Chi2(self.df)

    @property
    def mean(self):
        return _t.where(self.df > 1, self.loc, math.nan)

    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        return _t.where(df > 2, finite, _t.where(df > 1, math.inf, math.nan))

    def rsample(self, sample_shape=Size()):
        x = _standard_normal(self._extended_shape(sample_shape), self.df.dtype)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * _t.rsqrt(z / self.df))

    def log_prob(self, value):
        self._check(value)
        df = self.df
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * df.log() + 0.5 * math.log(math.pi) + lgamma(0.5 * df)
             - lgamma(0.5 * (df + 1.0)))
        return -0.5 * (df + 1.0) * _t.log1p(y ** 2.0 / df) - z

    def entropy(self):
        df = self.df
        lbeta = lgamma(0.5 * df) + math.lgamma(0.5) - lgamma(0.5 * (df + 1))
        return (self.scale.log() + 0.5 * (df + 1) * (digamma(0.5 * (df + 1)) - digamma(0.5 * df))
                + 0.5 * df.log() + lbeta)


class FisherSnedecor(Distribution):
    """Fisher-Snedecor (F) distribution: the ratio of two scaled chi-squared variables."""
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True
    _also_expand = ("_gamma1", "_gamma2")

    def __init__(self, df1, df2, validate_args=None):
        _init(self, ("df1", "df2"), (df1, df2), validate_args)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)

    @property
    def mean(self):
        df2 = _t.where(self.df2 > 2, self.df2, math.nan)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        m = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return _t.where(self.df1 > 2, m, math.nan)

    @property
    def variance(self):
        df1, df2 = self.df1, _t.where(self.df2 > 4, self.df2, math.nan)
        return 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=Size()):
        tiny = _t.finfo(self.df1.dtype).tiny
        x1 = self._gamma1.rsample(sample_shape)
        x2 = self._gamma2.rsample(sample_shape)
        x2.detach().clamp_(min=tiny)
        y = x1 / x2
        y.detach().clamp_(min=tiny)
        return y

    def log_prob(self, value):
        self._check(value)
        h1, h2 = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        t1 = lgamma(h1 + h2) - lgamma(h1) - lgamma(h2)
        t2 = h1 * ratio.log() + (h1 - 1) * value.log()
        t3 = (h1 + h2) * _t.log1p(ratio * value)
        return t1 + t2 - t3


class GeneralizedPareto(Distribution):
    """Generalized Pareto distribution: ``concentration`` 0 is the exponential law, positive a
    heavy tail, negative a bounded support ``[loc, loc - scale / concentration]``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        _init(self, ("loc", "scale", "concentration"), (loc, scale, concentration), validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        c = self.concentration
        upper = _t.where(c < 0, self.loc - self.scale / c, math.inf)
        return constraints.interval(self.loc, upper)

    def _z(self, value):
        return (value - self.loc) / self.scale

    def _c_or_one(self):
        """The concentration with its zeros replaced (those entries take the c == 0 branch)."""
        c = self.concentration
        return _t.where(c == 0, _t.ones_like(c), c)

    @property
    def mean(self):
        c = self.concentration
        return _t.where(c < 1, self.loc + self.scale / (1 - c), math.nan)

    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        c = self.concentration
        return _t.where(c < 0.5, self.scale.pow(2) / ((1 - c).pow(2) * (1 - 2 * c)), math.nan)

    def rsample(self, sample_shape=Size()):
        return self.icdf(_uniform(self._extended_shape(sample_shape), self.loc.dtype))

    def log_prob(self, value):
        self._check(value)
        z, c = self._z(value), self._c_or_one()
        lp = -(1 / c + 1) * _t.log1p(c * z)
        return -self.scale.log() + _t.where(self.concentration == 0, -z, lp)

    def cdf(self, value):
        self._check(value)
        z, c = self._z(value), self._c_or_one()
        log_survival = _t.where(self.concentration == 0, -z, -_t.log1p(c * z) / c)
        return _t.where(z >= 0, -_t.expm1(log_survival), math.nan)

    def icdf(self, value):
        c = self._c_or_one()
        log_survival = _t.log1p(-value)
        z = _t.where(self.concentration == 0, -log_survival, _t.expm1(-c * log_survival) / c)
        return self.loc + self.scale * z

    def entropy(self):
        return self.scale.log() + self.concentration + 1
