"""The categorical family: Categorical (class indices), OneHotCategorical (one-hot vectors) and
Multinomial (counts over ``total_count`` draws)."""
import math

import retrograd as _t
from .._tensor import Size
from . import constraints
from ..ops.special import lgamma
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits


class Categorical(Distribution):
    """Distribution over ``{0, ..., K-1}`` given ``probs`` (normalised along the last dimension)
    or ``logits`` (unnormalised log probabilities)."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        p = self._param
        self._num_events = p.size()[-1]
        super().__init__(p.size()[:-1] if p.dim() > 1 else Size(), validate_args=validate_args)

    @property
    def _param(self):
        return self.__dict__["probs"] if "probs" in self.__dict__ else self.__dict__["logits"]

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    param_shape = property(lambda self: self._param.size())

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    mean = property(lambda self: _t.full(self._extended_shape(), math.nan, dtype=self.probs.dtype))
    mode = property(lambda self: self.probs.argmax(-1))
    variance = property(lambda self: _t.full(self._extended_shape(), math.nan, dtype=self.probs.dtype))

    def sample(self, sample_shape=Size()):
        sample_shape = Size(sample_shape)
        with _t.no_grad():
            flat = self.probs.reshape(-1, self._num_events)
            s = _t.multinomial(flat, sample_shape.numel(), True).T
            return s.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        self._check(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = _t.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=_t.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        return self._enumerate(_t.arange(self._num_events, dtype=_t.long), expand)


class OneHotCategorical(Distribution):
    """Categorical outcomes as one-hot vectors of length K (the event shape is ``(K,)``)."""
    arg_constraints = Categorical.arg_constraints
    support = constraints.one_hot
    has_enumerate_support = True
    _also_expand = ("_categorical",)

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        p = self._categorical._param
        super().__init__(self._categorical.batch_shape, p.size()[-1:], validate_args=validate_args)

    _param = property(lambda self: self._categorical._param)
    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    param_shape = property(lambda self: self._categorical.param_shape)
    mean = property(lambda self: self._categorical.probs)
    variance = property(lambda self: self._categorical.probs * (1 - self._categorical.probs))

    @property
    def mode(self):
        p = self._categorical.probs
        return _t.nn.functional.one_hot(p.argmax(-1), p.shape[-1]).to(p.dtype)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(OneHotCategorical, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, Size(batch_shape), self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=Size()):
        p = self._categorical.probs
        idx = self._categorical.sample(sample_shape)
        return _t.nn.functional.one_hot(idx, self._categorical._num_events).to(p.dtype)

    def log_prob(self, value):
        self._check(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self._event_shape[0]
        return self._enumerate(_t.eye(n, dtype=self._param.dtype), expand)


class Multinomial(Distribution):
    """Counts of ``total_count`` categorical draws (``probs`` / ``logits`` as Categorical)."""
    arg_constraints = Categorical.arg_constraints
    _also_expand = ("_categorical", "_binomial")

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        from .discrete import Binomial
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        p = self._categorical._param
        super().__init__(self._categorical.batch_shape, p.size()[-1:], validate_args=validate_args)

    _param = property(lambda self: self._categorical._param)
    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    param_shape = property(lambda self: self._categorical.param_shape)
    mean = property(lambda self: self.probs * self.total_count)
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = self._binomial.expand(batch_shape + self._event_shape)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=Size()):
        sample_shape = Size(sample_shape)
        draws = self._categorical.sample(Size((self.total_count,)) + sample_shape)
        draws = draws.permute(*range(1, draws.dim()), 0)   # the draws last
        counts = _t.zeros(tuple(self._extended_shape(sample_shape)), dtype=draws.dtype)
        counts.scatter_add_(-1, draws, _t.ones_like(draws))
        return counts.type_as(self.probs)

    def log_prob(self, value):
        self._check(value)
        logits, value = broadcast_all(self.logits, value)
        # a zero count of an impossible category contributes nothing (not 0 * -inf)
        logits = _t.where((value == 0) & (logits == -math.inf), 0.0, logits)
        return lgamma(value.sum(-1) + 1) - lgamma(value + 1).sum(-1) + (logits * value).sum(-1)

    def entropy(self):
        # n H(p) - log n! + sum_k E[log x_k!], each x_k ~ Binomial(n, p_k)
        n = _t.tensor(self.total_count)
        support = self._binomial.enumerate_support(expand=False)[1:]
        weights = lgamma(support + 1)
        term2 = (_t.exp(self._binomial.log_prob(support)) * weights).sum([0, -1])
        return n * self._categorical.entropy() - lgamma(n + 1) + term2


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose ``rsample`` passes gradients straight through to ``probs``
    (the sample's value is one-hot; its gradient is that of ``probs``)."""
    has_rsample = True

    def rsample(self, sample_shape=Size()):
        s = self.sample(sample_shape)
        p = self._categorical.probs
        return s + (p - p.detach())
