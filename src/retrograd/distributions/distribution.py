"""The Distribution base: batch / event shapes, argument and sample validation, expand, and
the defaults every distribution shares (sample through rsample, stddev, perplexity...)."""
import warnings

import retrograd as _t
from .._tensor import Tensor, Size
from . import constraints
from .utils import lazy_property


class Distribution:
    """Base class of probability distributions (PyTorch's ``torch.distributions.Distribution``).

    Subclasses set ``arg_constraints`` (parameter name -> constraint) and ``support``; the base
    validates parameters at construction and values given to ``log_prob``/``cdf`` when
    validation is on, and expands every parameter tensor it finds in ``arg_constraints``."""
    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    _also_expand = ()   # tensors / distributions beyond arg_constraints that expand() must expand

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument validation on or off for distributions created afterwards."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.")
            for name, c in arg_constraints.items():
                if constraints.is_dependent(c):
                    continue
                if name not in self.__dict__ and isinstance(getattr(type(self), name, None), lazy_property):
                    continue   # a derived parameter: it is valid when the given one is
                value = getattr(self, name)
                if not bool(c.check(value).all()):
                    raise ValueError(f"Expected parameter {name} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                                     f"constraint {c!r}, but found invalid values:\n{value}")

    batch_shape = property(lambda self: self._batch_shape, doc="The shape over which parameters are batched.")
    event_shape = property(lambda self: self._event_shape, doc="The shape of a single sample.")

    @property
    def arg_constraints(self):
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    def _param_names(self):
        return [k for k in self.arg_constraints if k in self.__dict__]

    def expand(self, batch_shape, _instance=None):
        """A view of this distribution with parameters expanded to ``batch_shape`` (no copy)."""
        batch_shape = Size(batch_shape)
        new = self._get_checked_instance(type(self), _instance)
        nb = len(self._batch_shape)
        names = set(self.arg_constraints) | set(self._also_expand)
        for k, v in self.__dict__.items():
            if k in names and isinstance(v, Tensor):
                v = v.expand(batch_shape + v.shape[nb:])
            elif isinstance(v, Distribution) and k in self._also_expand:
                v = v.expand(batch_shape)
            new.__dict__.setdefault(k, v)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a "
                                      "custom __init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    # --- statistics --------------------------------------------------------------------
    @property
    def mean(self):
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return _t.exp(self.entropy())

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    # --- sampling ----------------------------------------------------------------------
    def sample(self, sample_shape=Size()):
        """Samples (no gradient) of shape ``sample_shape + batch_shape + event_shape``."""
        with _t.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        raise NotImplementedError

    def sample_n(self, n):
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning)
        return self.sample(Size((n,)))

    def _extended_shape(self, sample_shape=Size()):
        return Size(sample_shape) + self._batch_shape + self._event_shape

    def _enumerate(self, values, expand):
        """Support values along a new leading dimension, before the batch dimensions."""
        n = len(self._batch_shape)
        values = values.reshape((values.shape[0],) + (1,) * n + tuple(self._event_shape))
        return values.expand((-1,) + tuple(self._batch_shape) + tuple(self._event_shape)) if expand else values

    def _validate_sample(self, value):
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        ne = len(self._event_shape)
        if value.size()[value.dim() - ne:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {value.size()} vs "
                             f"{self._event_shape}.")
        actual, expected = value.size(), self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual} vs "
                                 f"{expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.")
            return
        if not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                             f"to be within the support ({support!r}) of the distribution {self!r}, "
                             f"but found invalid values:\n{value}")

    def _check(self, value):
        if self._validate_args:
            self._validate_sample(value)

    def __repr__(self):
        args = ", ".join(f"{p}: {v if v.numel() == 1 else v.size()}"
                         for p, v in ((p, self.__dict__[p]) for p in self._param_names()))
        return f"{self.__class__.__name__}({args})"


class ExponentialFamily(Distribution):
    """Marker base of exponential-family distributions."""
