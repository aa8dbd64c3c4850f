"""Distributions defined as transforms of simpler ones: Gumbel, HalfNormal, HalfCauchy, Pareto,
Weibull, Kumaraswamy, InverseGamma, LogisticNormal (LogNormal and the relaxed ones live with
TransformedDistribution)."""
import math

import retrograd as _t
from .._tensor import Size
from . import constraints
from ..ops.special import lgamma, digamma
from .continuous import Normal, Uniform, Exponential, Cauchy, Gamma
from .transformed import TransformedDistribution
from .transforms import AbsTransform, AffineTransform, ExpTransform, PowerTransform, StickBreakingTransform
from .utils import broadcast_all, euler_constant

_LOG2 = math.log(2)


class _Transformed(TransformedDistribution):
    """Keeps its own parameters (``_own``) next to the base distribution's, expanding both."""
    _own = ()

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(type(self), _instance)
        for name in self._own:
            setattr(new, name, getattr(self, name).expand(Size(batch_shape)))
        return super().expand(batch_shape, _instance=new)


class Gumbel(_Transformed):
    """Gumbel (type-I extreme value) distribution with location ``loc`` and scale ``scale``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    _own = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        fi = _t.finfo(self.loc.dtype)
        base = Uniform(_t.full_like(self.loc, fi.tiny), _t.full_like(self.loc, 1 - fi.eps), validate_args=validate_args)
        # x = loc - scale * log(-log(u))
        ts = [ExpTransform().inv, AffineTransform(loc=0, scale=-_t.ones_like(self.scale)), ExpTransform().inv,
              AffineTransform(loc=self.loc, scale=-self.scale)]
        super().__init__(base, ts, validate_args=validate_args)

    def log_prob(self, value):
        self._check(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    mean = property(lambda self: self.loc + self.scale * euler_constant)
    mode = property(lambda self: self.loc)
    stddev = property(lambda self: (math.pi / math.sqrt(6)) * self.scale)
    variance = property(lambda self: self.stddev.pow(2))

    def entropy(self):
        return self.scale.log() + (1 + euler_constant)


class _Half(TransformedDistribution):
    """|X| for a distribution symmetric about 0: densities doubled on the nonnegative half."""
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(type(self), _instance))

    scale = property(lambda self: self.base_dist.scale)

    def log_prob(self, value):
        self._check(value)
        lp = self.base_dist.log_prob(value) + _LOG2
        return _t.where(value >= 0, lp, -math.inf)

    def cdf(self, value):
        self._check(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - _LOG2


class HalfNormal(_Half):
    """|X| for ``X ~ Normal(0, scale)``."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    mean = property(lambda self: self.scale * math.sqrt(2 / math.pi))
    mode = property(lambda self: _t.zeros_like(self.scale))
    variance = property(lambda self: self.scale.pow(2) * (1 - 2 / math.pi))


class HalfCauchy(_Half):
    """|X| for ``X ~ Cauchy(0, scale)``."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    mean = property(lambda self: _t.full(self._extended_shape(), math.inf, dtype=self.scale.dtype))
    mode = property(lambda self: _t.zeros_like(self.scale))
    variance = property(lambda self: self.base_dist.variance)

    def log_prob(self, value):
        return super().log_prob(_t.as_tensor(value, dtype=self.base_dist.scale.dtype))


class Pareto(_Transformed):
    """Pareto type-I distribution: ``scale * exp(E)`` for ``E ~ Exponential(alpha)``."""
    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    _own = ("scale", "alpha")

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        super().__init__(Exponential(self.alpha, validate_args=validate_args),
                         [ExpTransform(), AffineTransform(loc=0, scale=self.scale)], validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)   # infinite for alpha <= 1
        return a * self.scale / (a - 1)

    mode = property(lambda self: self.scale)

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Weibull(_Transformed):
    """Weibull distribution: ``scale * E ** (1 / concentration)`` for ``E ~ Exponential(1)``."""
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    _own = ("scale", "concentration")

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        k_inv = self.concentration.reciprocal()
        super().__init__(Exponential(_t.ones_like(self.scale), validate_args=validate_args),
                         [PowerTransform(exponent=k_inv), AffineTransform(loc=0, scale=self.scale)],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new.transforms = [PowerTransform(exponent=new.concentration.reciprocal()),
                          AffineTransform(loc=0, scale=new.scale)]
        return new

    mean = property(lambda self: self.scale * _t.exp(lgamma(1 + self.concentration.reciprocal())))

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self):
        k_inv = self.concentration.reciprocal()
        return self.scale.pow(2) * (_t.exp(lgamma(1 + 2 * k_inv)) - _t.exp(2 * lgamma(1 + k_inv)))

    def entropy(self):
        k = self.concentration
        return euler_constant * (1 - k.reciprocal()) + _t.log(self.scale / k) + 1


def _kumaraswamy_moment(a, b, n):
    """E[X^n] = b B(1 + n/a, b)."""
    arg = 1 + n / a
    return b * _t.exp(lgamma(arg) + lgamma(b) - lgamma(arg + b))


class Kumaraswamy(_Transformed):
    """Kumaraswamy distribution on (0, 1): ``(1 - U ** (1/b)) ** (1/a)`` for uniform U."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True
    _own = ("concentration1", "concentration0")

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        a, b = self.concentration1, self.concentration0
        base = Uniform(_t.full_like(b, 0), _t.full_like(b, 1), validate_args=validate_args)
        ts = [PowerTransform(exponent=b.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
              PowerTransform(exponent=a.reciprocal())]
        super().__init__(base, ts, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        a, b = new.concentration1, new.concentration0
        new.transforms = [PowerTransform(exponent=b.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
                          PowerTransform(exponent=a.reciprocal())]
        return new

    mean = property(lambda self: _kumaraswamy_moment(self.concentration1, self.concentration0, 1))

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        return _t.where((b < 1) | (a < 1), math.nan, log_mode).exp()

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        return _kumaraswamy_moment(a, b, 2) - _kumaraswamy_moment(a, b, 1).pow(2)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic_b = digamma(b + 1) + euler_constant
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic_b - a.log() - b.log()


class InverseGamma(TransformedDistribution):
    """``1 / X`` for ``X ~ Gamma(concentration, rate)``."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(base, PowerTransform(-_t.ones_like(base.rate)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(InverseGamma, _instance))

    concentration = property(lambda self: self.base_dist.concentration)
    rate = property(lambda self: self.base_dist.rate)

    @property
    def mean(self):
        c = self.concentration
        return _t.where(c > 1, self.rate / (c - 1), math.inf)

    mode = property(lambda self: self.rate / (self.concentration + 1))

    @property
    def variance(self):
        c = self.concentration
        return _t.where(c > 2, self.rate.pow(2) / ((c - 1).pow(2) * (c - 2)), math.inf)

    def entropy(self):
        c = self.concentration
        return c + self.rate.log() + lgamma(c) - (1 + c) * digamma(c)


class LogisticNormal(TransformedDistribution):
    """Stick-breaking image of ``Normal(loc, scale)``: a distribution on the simplex."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(LogisticNormal, _instance))

    loc = property(lambda self: self.base_dist.base_dist.loc)
    scale = property(lambda self: self.base_dist.base_dist.scale)
