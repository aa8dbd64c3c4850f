"""Distributions built from others: Independent (batch dimensions read as event dimensions),
TransformedDistribution and those defined through it (LogNormal, RelaxedBernoulli,
RelaxedOneHotCategorical), and MixtureSameFamily."""
from numbers import Number

import retrograd as _t
from .._tensor import Size
from . import constraints
from ..ops.special import lgamma
from .categorical import Categorical
from .continuous import Normal
from .distribution import Distribution
from .transforms import Transform, ComposeTransform, ExpTransform, SigmoidTransform
from .utils import _sum_rightmost, broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits, \
    _uniform


def _reinit(new, old, batch_shape, event_shape):
    Distribution.__init__(new, batch_shape, event_shape, validate_args=False)
    new._validate_args = old._validate_args
    return new


class Independent(Distribution):
    """``base_distribution`` with its ``reinterpreted_batch_ndims`` rightmost batch dimensions
    read as event dimensions (log_prob and entropy summed over them)."""
    arg_constraints = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        n, b = reinterpreted_batch_ndims, base_distribution.batch_shape
        if n > len(b):
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {n} vs {len(b)}")
        shape = b + base_distribution.event_shape
        cut = len(shape) - (n + len(base_distribution.event_shape))
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, n
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Independent, _instance)
        batch_shape = Size(batch_shape)
        n = self.reinterpreted_batch_ndims
        new.base_dist = self.base_dist.expand(batch_shape + self._event_shape[:n])
        new.reinterpreted_batch_ndims = n
        return _reinit(new, self, batch_shape, self._event_shape)

    has_rsample = property(lambda self: self.base_dist.has_rsample)
    has_enumerate_support = property(lambda self: False if self.reinterpreted_batch_ndims else
                                     self.base_dist.has_enumerate_support)

    @constraints.dependent_property
    def support(self):
        s = self.base_dist.support
        return constraints.independent(s, self.reinterpreted_batch_ndims) if self.reinterpreted_batch_ndims else s

    mean = property(lambda self: self.base_dist.mean)
    mode = property(lambda self: self.base_dist.mode)
    variance = property(lambda self: self.base_dist.variance)

    def sample(self, sample_shape=Size()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=Size()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand=True):
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"


class TransformedDistribution(Distribution):
    """The distribution of ``transforms(x)`` for ``x ~ base_distribution`` (change of
    variables: log_prob subtracts each transform's log |det Jacobian|)."""
    arg_constraints = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base = base_distribution
        base_shape = base.batch_shape + base.event_shape
        base_event_dim = len(base.event_shape)
        t = ComposeTransform(self.transforms)
        if len(base_shape) < t.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least {t.domain.event_dim}, "
                             f"but got {base_shape}.")
        forward_shape = t.forward_shape(base_shape)
        expanded = t.inverse_shape(forward_shape)
        if base_shape != expanded:   # the transforms broadcast the base distribution's batch
            base = base.expand(expanded[:len(expanded) - base_event_dim])
        extra = t.domain.event_dim - base_event_dim
        if extra > 0:
            base = Independent(base, extra)
        self.base_dist = base
        event_dim = max(t.codomain.event_dim, base_event_dim + t.codomain.event_dim - t.domain.event_dim)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(TransformedDistribution, _instance)
        batch_shape = Size(batch_shape)
        shape = batch_shape + self._event_shape
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        new.base_dist = self.base_dist.expand(shape[:len(shape) - len(self.base_dist.event_shape)])
        new.transforms = self.transforms
        return _reinit(new, self, batch_shape, self._event_shape)

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        s = self.transforms[-1].codomain
        if len(self._event_shape) > s.event_dim:
            s = constraints.independent(s, len(self._event_shape) - s.event_dim)
        return s

    has_rsample = property(lambda self: self.base_dist.has_rsample)

    def sample(self, sample_shape=Size()):
        with _t.no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape=Size()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        self._check(value)
        event_dim = len(self._event_shape)
        lp, y = 0.0, value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            lp = lp - _sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
            y = x
        return lp + _sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        """For decreasing transforms the cdf of the result is 1 - the base's."""
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for t in self.transforms:
            value = t(value)
        return value


class LogNormal(TransformedDistribution):
    """``exp(X)`` for ``X ~ Normal(loc, scale)``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(LogNormal, _instance))

    loc = property(lambda self: self.base_dist.loc)
    scale = property(lambda self: self.base_dist.scale)
    mean = property(lambda self: (self.loc + self.scale.pow(2) / 2).exp())
    mode = property(lambda self: (self.loc - self.scale.square()).exp())
    variance = property(lambda self: self.scale.pow(2).expm1() * (2 * self.loc + self.scale.pow(2)).exp())

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class LogitRelaxedBernoulli(Distribution):
    """The logit of a RelaxedBernoulli sample (a logistic variable scaled by ``1/temperature``)."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        name, p = ("probs", probs) if probs is not None else ("logits", logits)
        (v,) = broadcast_all(p)
        setattr(self, name, v)
        super().__init__(Size() if isinstance(p, Number) else v.size(), validate_args=validate_args)

    _param = property(lambda self: self.__dict__.get("probs", self.__dict__.get("logits")))
    param_shape = property(lambda self: self._param.size())

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(_uniform(shape, probs.dtype))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        self._check(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """A continuous relaxation of Bernoulli on (0, 1) (binary Concrete / Gumbel-softmax), with
    reparameterised samples; ``temperature`` controls how close to 0/1 they lie."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        super().__init__(LogitRelaxedBernoulli(temperature, probs, logits), SigmoidTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(RelaxedBernoulli, _instance))

    temperature = property(lambda self: self.base_dist.temperature)
    logits = property(lambda self: self.base_dist.logits)
    probs = property(lambda self: self.base_dist.probs)


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical sample (log-space Concrete distribution)."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True
    _also_expand = ("_categorical",)

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        return _reinit(new, self, Size(batch_shape), self._event_shape)

    param_shape = property(lambda self: self._categorical.param_shape)
    logits = property(lambda self: self._categorical.logits)
    probs = property(lambda self: self._categorical.probs)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(_uniform(shape, self.logits.dtype))
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        K = self._categorical._num_events
        self._check(value)
        logits, value = broadcast_all(self.logits, value)
        log_scale = lgamma(_t.full_like(self.temperature, float(K))) - self.temperature.log().mul(-(K - 1))
        score = logits - value.mul(self.temperature)
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """A continuous relaxation of OneHotCategorical on the simplex (Concrete / Gumbel-softmax)."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        super().__init__(ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args),
                         ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape,
                              _instance=self._get_checked_instance(RelaxedOneHotCategorical, _instance))

    temperature = property(lambda self: self.base_dist.temperature)
    logits = property(lambda self: self.base_dist.logits)
    probs = property(lambda self: self.base_dist.probs)


class MixtureSameFamily(Distribution):
    """A mixture whose components are the rightmost batch dimension of one distribution,
    weighted by a Categorical ``mixture_distribution``."""
    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of torch.distributions.Distribution")
        mdbs, cdbs = mixture_distribution.batch_shape, component_distribution.batch_shape[:-1]
        for a, b in zip(reversed(mdbs), reversed(cdbs)):
            if a != 1 and b != 1 and a != b:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible with "
                                 f"`component_distribution.batch_shape`({cdbs})")
        km, kc = mixture_distribution.logits.shape[-1], component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cdbs, component_distribution.event_shape, validate_args=validate_args)

    mixture_distribution = property(lambda self: self._mixture_distribution)
    component_distribution = property(lambda self: self._component_distribution)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        batch_shape = Size(batch_shape)
        new._component_distribution = self._component_distribution.expand(batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component, new._event_ndims = self._num_component, self._event_ndims
        return _reinit(new, self, batch_shape, self._event_shape)

    @constraints.dependent_property
    def support(self):
        return self._component_distribution.support

    def _pad(self, x):
        """A component axis for values (just before the event dimensions)."""
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_weights(self, w):
        """Mixture weights shaped to broadcast against component statistics."""
        nb, mb = len(self._batch_shape), len(self._mixture_distribution.batch_shape)
        pad = 0 if mb == 1 else nb - mb
        return w.reshape(w.shape[:-1] + (1,) * pad + w.shape[-1:] + (1,) * self._event_ndims)

    @property
    def mean(self):
        w = self._pad_weights(self._mixture_distribution.probs)
        return (w * self._component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        # law of total variance: E[Var(X|k)] + Var(E[X|k])
        w = self._pad_weights(self._mixture_distribution.probs)
        dim = -1 - self._event_ndims
        c = self._component_distribution
        return ((w * c.variance).sum(dim) + (w * (c.mean - self._pad(self.mean)).pow(2.0)).sum(dim))

    def cdf(self, x):
        return (self._component_distribution.cdf(self._pad(x)) * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        self._check(x)
        lp = self._component_distribution.log_prob(self._pad(x))
        return _t.logsumexp(lp + _t.log_softmax(self._mixture_distribution.logits, dim=-1), dim=-1)

    def sample(self, sample_shape=Size()):
        with _t.no_grad():
            sample_shape = Size(sample_shape)
            k = self._mixture_distribution.sample(sample_shape)
            comps = self._component_distribution.sample(sample_shape)
            es = tuple(self._event_shape)
            gather_dim = len(sample_shape) + len(self._batch_shape)
            idx = k.reshape(k.shape + (1,) * (len(es) + 1)).repeat((1,) * k.dim() + (1,) + es)
            return comps.gather(gather_dim, idx).squeeze(gather_dim)

    def __repr__(self):
        return (f"{type(self).__name__}(\n  {self._mixture_distribution},\n  "
                f"{self._component_distribution})")
