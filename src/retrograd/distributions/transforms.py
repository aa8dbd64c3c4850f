"""Invertible (or at least differentiable) maps between constrained spaces, with their
log |det Jacobian|: the building blocks of TransformedDistribution and of biject_to /
transform_to."""
import math
import operator
import weakref
from functools import reduce
from numbers import Number

import retrograd as _t
from . import constraints
from .utils import _sum_rightmost

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "StackTransform",
           "ExpTransform", "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform", "TanhTransform",
           "SoftmaxTransform", "StickBreakingTransform", "Transform", "identity_transform"]


class Transform:
    """Base class: subclasses define ``_call`` (forward), ``_inverse`` and
    ``log_abs_det_jacobian(x, y)``, with ``domain`` / ``codomain`` constraints. With
    ``cache_size=1`` the last (x, y) pair is remembered, so ``inv(t(x))`` returns ``x`` itself."""
    bijective = False
    domain = codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = None, None
        self._inv = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_inv"] = None
        return state

    @property
    def event_dim(self):
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        """The inverse transform (``inv(t(x)) == x``)."""
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self):
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        if not self._cache_size:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y):
        if not self._cache_size:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform (what ``t.inv`` returns)."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    domain = property(lambda self: self._inv.codomain)
    codomain = property(lambda self: self._inv.domain)
    bijective = property(lambda self: self._inv.bijective)
    sign = property(lambda self: self._inv.sign)
    inv = property(lambda self: self._inv)

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{type(self).__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class _Same(Transform):
    """Transforms without parameters: all instances are equal."""

    def __eq__(self, other):
        return isinstance(other, type(self))

    __hash__ = object.__hash__


class ComposeTransform(Transform):
    """``parts`` applied in order; an empty list is the identity."""

    def __init__(self, parts, cache_size=0):
        if cache_size:
            parts = [p.with_cache(cache_size) for p in parts]
        super().__init__(cache_size=cache_size)
        self.parts = parts

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        # the event dimensions the composition needs, counted from the last part backwards
        n = self.parts[-1].codomain.event_dim
        for p in reversed(self.parts):
            n = max(n + p.domain.event_dim - p.codomain.event_dim, p.domain.event_dim)
        return constraints.independent(domain, n - domain.event_dim) if n > domain.event_dim else domain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        n = self.parts[0].domain.event_dim
        for p in self.parts:
            n = max(n + p.codomain.event_dim - p.domain.event_dim, p.codomain.event_dim)
        return constraints.independent(codomain, n - codomain.event_dim) if n > codomain.event_dim else codomain

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        s = 1
        for p in self.parts:
            s = s * p.sign
        return s

    @property
    def inv(self):
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for p in self.parts:
            x = p(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return _t.zeros_like(x)
        xs = [x]
        for p in self.parts[:-1]:
            xs.append(p(xs[-1]))
        xs.append(y)
        terms, event_dim = [], self.domain.event_dim
        for p, a, b in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(_sum_rightmost(p.log_abs_det_jacobian(a, b), event_dim - p.domain.event_dim))
            event_dim += p.codomain.event_dim - p.domain.event_dim
        return reduce(operator.add, terms)

    def forward_shape(self, shape):
        for p in self.parts:
            shape = p.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for p in reversed(self.parts):
            shape = p.inverse_shape(shape)
        return shape

    def __repr__(self):
        return type(self).__name__ + "(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """``base_transform`` with ``reinterpreted_batch_ndims`` more dimensions treated as event
    dimensions (its log-det-Jacobian summed over them)."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    bijective = property(lambda self: self.base_transform.bijective)
    sign = property(lambda self: self.base_transform.sign)

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class ReshapeTransform(Transform):
    """Reshape the rightmost ``in_shape`` dimensions to ``out_shape`` (same number of elements)."""
    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape, self.out_shape = _t.Size(in_shape), _t.Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    domain = property(lambda self: constraints.independent(constraints.real, len(self.in_shape)))
    codomain = property(lambda self: constraints.independent(constraints.real, len(self.out_shape)))

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else ReshapeTransform(self.in_shape, self.out_shape, cache_size)

    def _call(self, x):
        return x.reshape(x.shape[:x.dim() - len(self.in_shape)] + self.out_shape)

    def _inverse(self, y):
        return y.reshape(y.shape[:y.dim() - len(self.out_shape)] + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(x.shape[:x.dim() - len(self.in_shape)])

    def _swap(self, shape, a, b):
        if len(shape) < len(a):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(a)
        if _t.Size(shape[cut:]) != a:
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {a}")
        return _t.Size(shape[:cut]) + b

    def forward_shape(self, shape):
        return self._swap(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._swap(shape, self.out_shape, self.in_shape)


class ExpTransform(_Same):
    """``y = exp(x)``."""
    domain, codomain = constraints.real, constraints.positive
    bijective, sign = True, +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals."""
    domain, codomain = constraints.positive, constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = _broadcast(exponent)

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else PowerTransform(self.exponent, cache_size=cache_size)

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool(self.exponent.eq(other.exponent).all())

    __hash__ = object.__hash__

    sign = property(lambda self: self.exponent.sign())

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return _t.broadcast_shapes(shape, getattr(self.exponent, "shape", ()))

    inverse_shape = forward_shape


def _broadcast(*values):
    from .utils import broadcast_all
    return broadcast_all(*values)


def _clipped_sigmoid(x):
    fi = _t.finfo(x.dtype)
    return _t.clamp(_t.sigmoid(x), min=fi.tiny, max=1.0 - fi.eps)


class SigmoidTransform(_Same):
    """``y = 1 / (1 + exp(-x))`` (kept strictly inside (0, 1))."""
    domain, codomain = constraints.real, constraints.unit_interval
    bijective, sign = True, +1

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        fi = _t.finfo(y.dtype)
        y = y.clamp(min=fi.tiny, max=1.0 - fi.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        F = _t.nn.functional
        return -F.softplus(-x) - F.softplus(x)


class SoftplusTransform(_Same):
    """``y = log(1 + exp(x))``."""
    domain, codomain = constraints.real, constraints.positive
    bijective, sign = True, +1

    def _call(self, x):
        return _t.nn.functional.softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -_t.nn.functional.softplus(-x)


class TanhTransform(_Same):
    """``y = tanh(x)``."""
    domain, codomain = constraints.real, constraints.interval(-1.0, 1.0)
    bijective, sign = True, +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return _t.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2), written so it stays finite for large |x|
        return 2.0 * (math.log(2.0) - x - _t.nn.functional.softplus(-2.0 * x))


class AbsTransform(_Same):
    """``y = |x|`` (not injective)."""
    domain, codomain = constraints.real, constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x`` (over ``event_dim`` rightmost dimensions)."""
    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    event_dim = property(lambda self: self._event_dim)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.real if self._event_dim == 0 else constraints.independent(constraints.real, self._event_dim)

    codomain = domain

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, Number) and isinstance(b, Number):
                if a != b:
                    return False
            elif not bool((a == b).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        s = self.scale
        if isinstance(s, Number):
            return 1 if float(s) > 0 else -1 if float(s) < 0 else 0
        return s.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = x.shape
        s = self.scale
        r = _t.full_like(x, math.log(abs(s))) if isinstance(s, Number) else _t.abs(s).log()
        if self._event_dim:
            r = r.reshape(r.size()[:r.dim() - self._event_dim] + (-1,)).sum(-1)
            shape = shape[:len(shape) - self._event_dim]
        return r.expand(shape)

    def forward_shape(self, shape):
        return _t.broadcast_shapes(shape, getattr(self.loc, "shape", ()), getattr(self.scale, "shape", ()))

    inverse_shape = forward_shape


class SoftmaxTransform(_Same):
    """Unconstrained vectors to the simplex by ``softmax`` (not injective)."""
    domain, codomain = constraints.real_vector, constraints.simplex

    def _call(self, x):
        p = (x - x.max(-1, True)[0]).exp()
        return p / p.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


class StickBreakingTransform(_Same):
    """Vectors of length K to the K+1 simplex by stick breaking: a bijection, offset so that 0
    maps to the simplex's centre."""
    domain, codomain = constraints.real_vector, constraints.simplex
    bijective = True

    @staticmethod
    def _log_offset(x, n):
        return (n + 1 - x.new_ones(n).cumsum(-1)).log()

    def _call(self, x):
        z = _clipped_sigmoid(x - self._log_offset(x, x.shape[-1]))
        remaining = (1 - z).cumprod(-1)
        F = _t.nn.functional
        return F.pad(z, [0, 1], value=1) * F.pad(remaining, [1, 0], value=1)

    def _inverse(self, y):
        crop = y[..., :-1]
        sf = (1 - crop.cumsum(-1)).clamp(min=_t.finfo(y.dtype).tiny)
        return crop.log() - sf.log() + self._log_offset(y, crop.shape[-1])

    def log_abs_det_jacobian(self, x, y):
        x = x - self._log_offset(x, x.shape[-1])
        return (-x + _t.nn.functional.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape[:-1] + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape[:-1] + (shape[-1] - 1,)


class LowerCholeskyTransform(_Same):
    """Unconstrained square matrices to lower triangular ones with a positive diagonal."""
    domain, codomain = constraints.independent(constraints.real, 2), constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(_Same):
    """Unconstrained square matrices to positive-definite ones (``L L^T`` of LowerCholesky's ``L``)."""
    domain, codomain = constraints.independent(constraints.real, 2), constraints.positive_definite

    def _call(self, x):
        L = LowerCholeskyTransform()(x)
        return L @ L.mT

    def _inverse(self, y):
        from ..linalg import cholesky
        return LowerCholeskyTransform().inv(cholesky(y))


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: the distribution's support to the unit interval."""
    bijective, sign = True, +1
    codomain = constraints.unit_interval

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    domain = property(lambda self: self.distribution.support)

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else CumulativeDistributionTransform(self.distribution, cache_size)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


def _tril_positions(n, diag):
    """Flat (row-major) positions of the entries of an n x n matrix on or below diagonal ``diag``."""
    import numpy as np
    r, c = np.tril_indices(n, diag)
    return r * n + c


def _vec_to_tril(vec, n, diag=-1):
    import numpy as np
    pos = _tril_positions(n, diag)
    slot = np.zeros(n * n, dtype=np.int64)   # slot 0 of the padded vector holds the zeros
    slot[pos] = np.arange(1, len(pos) + 1)
    padded = _t.nn.functional.pad(vec, [1, 0])
    return padded[..., _t.tensor(slot)].reshape(vec.shape[:-1] + (n, n))


def _tril_to_vec(mat, diag=-1):
    n = mat.shape[-1]
    return mat.reshape(mat.shape[:-2] + (n * n,))[..., _t.tensor(_tril_positions(n, diag))]


class CorrCholeskyTransform(_Same):
    """Vectors of length D(D-1)/2 to Cholesky factors of D x D correlation matrices: each entry
    is squashed by tanh into (-1, 1), and the rows are completed by stick breaking so they have
    unit norm."""
    domain, codomain = constraints.real_vector, constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = _t.finfo(x.dtype).eps
        x = x.tanh().clamp(min=-1 + eps, max=1 - eps)
        n = self.forward_shape(tuple(x.shape))[-1]
        r = _vec_to_tril(x, n)
        # what is left of each row's unit norm before each entry
        left = (1 - r.pow(2)).sqrt().cumprod(-1)
        return (r + _t.eye(n, dtype=x.dtype)) * _t.nn.functional.pad(left[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        left = 1 - (y * y).cumsum(-1)
        left = _t.nn.functional.pad(left[..., :-1], [1, 0], value=1)
        t = _tril_to_vec(y) / _tril_to_vec(left).sqrt()
        return (t.log1p() - t.neg().log1p()) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        left = 1 - (y * y).cumsum(-1)
        stick = 0.5 * _tril_to_vec(left, diag=-2).log().sum(-1)
        tanh = -2 * (x + _t.nn.functional.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick + tanh

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        N = shape[-1]
        D = round((0.25 + 2 * N) ** 0.5 + 0.5)
        if D * (D - 1) // 2 != N:
            raise ValueError("Input is not a flattend lower-diagonal number")
        return tuple(shape[:-1]) + (D, D)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        D = shape[-1]
        return tuple(shape[:-2]) + (D * (D - 1) // 2,)


class CatTransform(Transform):
    """One transform per consecutive slice (of ``lengths``) along ``dim``, results concatenated."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.transforms = [t.with_cache(cache_size) for t in tseq]
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError("lengths and transforms must have the same length")
        self.dim = dim

    event_dim = property(lambda self: max(t.event_dim for t in self.transforms))
    length = property(lambda self: sum(self.lengths))
    bijective = property(lambda self: all(t.bijective for t in self.transforms))
    domain = property(lambda self: constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths))
    codomain = property(lambda self: constraints.cat([t.codomain for t in self.transforms], self.dim,
                                                     self.lengths))

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else CatTransform(self.transforms, self.dim, self.lengths,
                                                                         cache_size)

    def _pieces(self, *tensors):
        start = 0
        for t, n in zip(self.transforms, self.lengths):
            yield (t,) + tuple(v.narrow(self.dim, start, n) for v in tensors)
            start += n

    def _call(self, x):
        return _t.cat([t(a) for t, a in self._pieces(x)], dim=self.dim)

    def _inverse(self, y):
        return _t.cat([t.inv(b) for t, b in self._pieces(y)], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        parts = []
        for t, a, b in self._pieces(x, y):
            j = t.log_abs_det_jacobian(a, b)
            parts.append(_sum_rightmost(j, self.event_dim - t.event_dim))
        # ``dim`` counted among the dimensions that remain once the event ones are summed out
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        return _t.cat(parts, dim=dim) if dim < 0 else sum(parts)


class StackTransform(Transform):
    """One transform per index along ``dim``, results stacked."""

    def __init__(self, tseq, dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.transforms = [t.with_cache(cache_size) for t in tseq]
        self.dim = dim

    bijective = property(lambda self: all(t.bijective for t in self.transforms))
    domain = property(lambda self: constraints.stack([t.domain for t in self.transforms], self.dim))
    codomain = property(lambda self: constraints.stack([t.codomain for t in self.transforms], self.dim))

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else StackTransform(self.transforms, self.dim, cache_size)

    def _map(self, fn, *tensors):
        n = tensors[0].size(self.dim)
        return _t.stack([fn(t, *(v.select(self.dim, i) for v in tensors))
                         for i, t in zip(range(n), self.transforms)], dim=self.dim)

    def _call(self, x):
        return self._map(lambda t, a: t(a), x)

    def _inverse(self, y):
        return self._map(lambda t, b: t.inv(b), y)

    def log_abs_det_jacobian(self, x, y):
        return self._map(lambda t, a, b: t.log_abs_det_jacobian(a, b), x, y)
