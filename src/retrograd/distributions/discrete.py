"""Distributions over counts and binary outcomes (Bernoulli, Binomial, NegativeBinomial,
Geometric, Poisson) and ContinuousBernoulli, the relaxation of Bernoulli to [0, 1]."""
import math
from numbers import Number

import retrograd as _t
from .._tensor import Size
from . import constraints
from ..ops.special import lgamma
from ._ops import poisson, binomial
from .distribution import Distribution, ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits, _uniform


def _bce_with_logits(logits, target):
    return _t.nn.functional.binary_cross_entropy_with_logits(logits, target, reduction="none")


class _Binary(Distribution):
    """Parameterised by exactly one of ``probs`` / ``logits`` (the other derived lazily); the
    ``extra`` parameters are broadcast with it."""

    def _init_binary(self, probs, logits, validate_args, extra=()):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        name, p = ("probs", probs) if probs is not None else ("logits", logits)
        tensors = broadcast_all(*[v for _, v in extra], p)
        for (n, _), v in zip(extra, tensors):
            setattr(self, n, v)
        setattr(self, name, tensors[-1])
        batch = Size() if isinstance(p, Number) and not extra else tensors[-1].size()
        Distribution.__init__(self, batch, validate_args=validate_args)

    @property
    def _param(self):
        return self.__dict__["probs"] if "probs" in self.__dict__ else self.__dict__["logits"]

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    param_shape = property(lambda self: self._param.size())


class Bernoulli(_Binary, ExponentialFamily):
    """Bernoulli distribution: 1 with probability ``probs`` (or ``sigmoid(logits)``), else 0."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._init_binary(probs, logits, validate_args)

    mean = property(lambda self: self.probs)
    variance = property(lambda self: self.probs * (1 - self.probs))

    @property
    def mode(self):
        p = self.probs
        return _t.where(p == 0.5, math.nan, (p >= 0.5).to(p.dtype))

    def sample(self, sample_shape=Size()):
        with _t.no_grad():
            return _t.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        self._check(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value)

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand=True):
        return self._enumerate(_t.arange(2, dtype=self._param.dtype), expand)


class Geometric(_Binary):
    """Number of failures before the first success, success probability ``probs``."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._init_binary(probs, logits, validate_args)
        if self._validate_args and probs is not None:
            bad = ~(self.probs > 0)   # the unit interval admits 0, a geometric law does not
            if bool(bad.any()):
                raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape "
                                 f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but found "
                                 f"invalid values:\n{self.probs[bad]}")

    mean = property(lambda self: 1.0 / self.probs - 1.0)
    mode = property(lambda self: _t.zeros_like(self.probs))
    variance = property(lambda self: (1.0 / self.probs - 1.0) / self.probs)

    def sample(self, sample_shape=Size()):
        with _t.no_grad():
            p = self.probs
            u = _uniform(self._extended_shape(sample_shape), p.dtype).clamp(min=_t.finfo(p.dtype).tiny)
            return (u.log() / (-p).log1p()).floor()

    def log_prob(self, value):
        self._check(value)
        value, probs = broadcast_all(value, self.probs)
        # probs == 1 with value == 0: 0 * log(0) counts as 0
        probs = _t.where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs) / self.probs


class Binomial(_Binary):
    """Number of successes in ``total_count`` independent trials of probability ``probs``."""
    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        self._init_binary(probs, logits, validate_args, extra=(("total_count", total_count),))
        self.total_count = self.total_count.type_as(self._param)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    mean = property(lambda self: self.total_count * self.probs)
    mode = property(lambda self: ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count))
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with _t.no_grad():
            return binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        self._check(value)
        n, logits = self.total_count, self.logits
        # n * log(1 + e^logits), computed without overflow
        log1pexp = n * logits.clamp(min=0) + n * _t.log1p(_t.exp(-logits.abs()))
        return (value * logits - lgamma(value + 1) - lgamma(n - value + 1)
                - (log1pexp - lgamma(n + 1)))

    def _homogeneous_count(self, what):
        n = int(self.total_count.max())
        if not self.total_count.min() == n:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return n

    def entropy(self):
        self._homogeneous_count("entropy")
        lp = self.log_prob(self.enumerate_support(False))
        return -(_t.exp(lp) * lp).sum(0)

    def enumerate_support(self, expand=True):
        n = self._homogeneous_count("enumerate_support")
        return self._enumerate(_t.arange(1 + n, dtype=self._param.dtype), expand)


class Poisson(ExponentialFamily):
    """Poisson distribution with rate ``rate``."""
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        rate, = broadcast_all(rate)
        self.rate = rate
        super().__init__(rate.size(), validate_args=validate_args)

    mean = property(lambda self: self.rate)
    mode = property(lambda self: self.rate.floor())
    variance = property(lambda self: self.rate)

    def sample(self, sample_shape=Size()):
        with _t.no_grad():
            return poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        self._check(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - lgamma(value + 1)


class NegativeBinomial(_Binary):
    """Number of successes before ``total_count`` failures, success probability ``probs``."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        self._init_binary(probs, logits, validate_args, extra=(("total_count", total_count),))
        self.total_count = self.total_count.type_as(self._param)

    mean = property(lambda self: self.total_count * _t.exp(self.logits))
    mode = property(lambda self: ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0))
    variance = property(lambda self: self.mean / _t.sigmoid(-self.logits))

    @lazy_property
    def _gamma(self):
        from .continuous import Gamma
        return Gamma(concentration=self.total_count, rate=_t.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=Size()):
        # a Poisson with a Gamma-distributed rate
        with _t.no_grad():
            return poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value):
        self._check(value)
        F = _t.nn.functional
        n = self.total_count
        unnormalized = n * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        normalization = -lgamma(n + value) + lgamma(1.0 + value) + lgamma(n)
        # n + value == 0 only for the point mass at 0 (n == 0): log 1
        normalization = _t.where(n + value == 0.0, 0.0, normalization)
        return unnormalized - normalization


class ContinuousBernoulli(_Binary, ExponentialFamily):
    """Continuous Bernoulli on [0, 1]: density proportional to ``p^x (1-p)^(1-x)``. Near
    ``p = 1/2`` (inside ``lims``) the normaliser and moments use their Taylor expansions, the
    closed forms being 0/0 there."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if probs is not None:
            (p,) = broadcast_all(probs)
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(p).all()):
                raise ValueError("The parameter probs has invalid values")
            probs = clamp_probs(p) if not isinstance(probs, Number) else clamp_probs(p).item()
        self._lims = lims
        self._init_binary(probs, logits, validate_args)

    def _outside(self):
        p = self.probs
        return (p <= self._lims[0]) | (p > self._lims[1])

    def _cut_probs(self):
        return _t.where(self._outside(), self.probs, self._lims[0] * _t.ones_like(self.probs))

    def _log_normalizer_c(self):
        """log C(p), C(p) = 2 atanh(1 - 2p) / (1 - 2p)."""
        c = self._cut_probs()
        below = _t.where(c <= 0.5, c, _t.zeros_like(c))
        above = _t.where(c >= 0.5, c, _t.ones_like(c))
        exact = (_t.log(_t.abs(_t.log1p(-c) - _t.log(c)))
                 - _t.where(c <= 0.5, _t.log1p(-2.0 * below), _t.log(2.0 * above - 1.0)))
        x = _t.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return _t.where(self._outside(), exact, taylor)

    @property
    def mean(self):
        c = self._cut_probs()
        exact = c / (2.0 * c - 1.0) + 1.0 / (_t.log1p(-c) - _t.log(c))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * _t.pow(x, 2)) * x
        return _t.where(self._outside(), exact, taylor)

    stddev = property(lambda self: _t.sqrt(self.variance))

    @property
    def variance(self):
        c = self._cut_probs()
        exact = c * (c - 1.0) / _t.pow(1.0 - 2.0 * c, 2) + 1.0 / _t.pow(_t.log1p(-c) - _t.log(c), 2)
        x = _t.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return _t.where(self._outside(), exact, taylor)

    def rsample(self, sample_shape=Size()):
        u = _uniform(self._extended_shape(sample_shape), self.probs.dtype)
        return self.icdf(u)

    def sample(self, sample_shape=Size()):
        with _t.no_grad():
            return self.rsample(sample_shape)

    def log_prob(self, value):
        self._check(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value) + self._log_normalizer_c()

    def cdf(self, value):
        self._check(value)
        c = self._cut_probs()
        cdfs = (_t.pow(c, value) * _t.pow(1.0 - c, 1.0 - value) + c - 1.0) / (2.0 * c - 1.0)
        inside = _t.where(self._outside(), cdfs, value)
        return _t.where(value <= 0.0, _t.zeros_like(value), _t.where(value >= 1.0, _t.ones_like(value), inside))

    def icdf(self, value):
        c = self._cut_probs()
        exact = ((_t.log1p(-c + value * (2.0 * c - 1.0)) - _t.log1p(-c)) / (_t.log(c) - _t.log1p(-c)))
        return _t.where(self._outside(), exact, value)

    def entropy(self):
        log_p0, log_p1 = _t.log1p(-self.probs), _t.log(self.probs)
        return self.mean * (log_p0 - log_p1) - self._log_normalizer_c() - log_p0
