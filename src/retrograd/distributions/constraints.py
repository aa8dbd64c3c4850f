"""Constraints: small objects that say where a parameter or a sample may lie (``check`` gives a
boolean tensor over the batch), named and printed as PyTorch's."""
import retrograd as _t

__all__ = ["Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property",
           "greater_than", "greater_than_eq", "independent", "integer_interval", "interval",
           "half_open_interval", "is_dependent", "less_than", "lower_cholesky", "lower_triangular",
           "multinomial", "nonnegative", "nonnegative_integer", "one_hot", "positive",
           "positive_semidefinite", "positive_definite", "positive_integer", "real", "real_vector",
           "simplex", "square", "stack", "symmetric", "unit_interval"]


class Constraint:
    """Base class: ``check(value)`` is True where ``value`` satisfies the constraint (reduced over
    the constraint's ``event_dim`` rightmost dimensions)."""
    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__[1:] + "()"


class _Bounded(Constraint):
    """Constraints with bounds print them as keyword arguments."""
    _fields = ()

    def __repr__(self):
        args = ", ".join(f"{f}={getattr(self, f)}" for f in self._fields)
        return f"{type(self).__name__[1:]}({args})"


class _Dependent(Constraint):
    """A placeholder for a constraint that depends on other parameters (it cannot be checked)."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete, self._event_dim = is_discrete, event_dim

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        return _Dependent(is_discrete=self._is_discrete if is_discrete is NotImplemented else is_discrete,
                          event_dim=self._event_dim if event_dim is NotImplemented else event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    """Whether ``constraint`` is a dependent placeholder."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property that is also a dependent constraint (a support computed from parameters)."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """``base_constraint`` over ``reinterpreted_batch_ndims`` more event dimensions."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        self.base_constraint, self.reinterpreted_batch_ndims = base_constraint, reinterpreted_batch_ndims

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        r = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if r.dim() < n:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        return r.reshape(r.shape[:r.dim() - n] + (-1,)).all(-1)

    def __repr__(self):
        return f"{type(self).__name__[1:]}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        return ((value == 0) | (value == 1)).all(-1) & (value.sum(-1) == 1)


class _IntegerInterval(_Bounded):
    is_discrete = True
    _fields = ("lower_bound", "upper_bound")

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)


class _IntegerLessThan(_Bounded):
    is_discrete = True
    _fields = ("upper_bound",)

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return (value % 1 == 0) & (value <= self.upper_bound)


class _IntegerGreaterThan(_Bounded):
    is_discrete = True
    _fields = ("lower_bound",)

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)


class _Real(Constraint):
    def check(self, value):
        return value == value   # False only for NaN


class _GreaterThan(_Bounded):
    _fields = ("lower_bound",)

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return self.lower_bound < value


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return self.lower_bound <= value


class _LessThan(_Bounded):
    _fields = ("upper_bound",)

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound


class _Interval(_Bounded):
    _fields = ("lower_bound", "upper_bound")

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)


class _HalfOpenInterval(_Interval):
    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Nonnegative counts summing to at most ``upper_bound`` (the sum is not checked exactly)."""
    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return (x >= 0).all(-1) & (x.sum(-1) <= self.upper_bound)


def _flat_all(mask, keep):
    return mask.reshape(mask.shape[:keep] + (-1,)).all(-1)


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        return _t.full(value.shape[:-2], value.shape[-2] == value.shape[-1], dtype=_t.bool)


class _Symmetric(_Square):
    def check(self, value):
        sq = super().check(value)
        if not sq.all():
            return sq
        return _t.isclose(value, value.mT, atol=1e-6).all(-2).all(-1)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        return _flat_all(value.tril() == value, value.dim() - 2)


class _LowerCholesky(_LowerTriangular):
    def check(self, value):
        return super().check(value) & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _CorrCholesky(_LowerCholesky):
    def check(self, value):
        tol = _t.finfo(value.dtype).eps * value.size(-1) * 10
        row_norm = value.detach().pow(2).sum(-1).sqrt()
        return super().check(value) & (row_norm - 1.0).abs().le(tol).all(-1)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        sym = super().check(value)
        if not sym.all():
            return sym
        from ..linalg import eigvalsh
        return eigvalsh(value).ge(0).all(-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        sym = super().check(value)
        if not sym.all():
            return sym
        from ..linalg import cholesky_ex
        return cholesky_ex(value).info.eq(0)


class _Cat(Constraint):
    """Constraints applied to consecutive slices (of ``lengths``) along ``dim``."""

    def __init__(self, cseq, dim=0, lengths=None):
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        self.dim = dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        checks, start = [], 0
        for c, n in zip(self.cseq, self.lengths):
            checks.append(c.check(value.narrow(self.dim, start, n)))
            start += n
        return _t.cat(checks, self.dim)


class _Stack(Constraint):
    """One constraint per index along ``dim``."""

    def __init__(self, cseq, dim=0):
        self.cseq, self.dim = list(cseq), dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        e = max(c.event_dim for c in self.cseq)
        return e + 1 if self.dim + e < 0 else e

    def check(self, value):
        return _t.stack([c.check(value.select(self.dim, i)) for i, c in enumerate(self.cseq)], self.dim)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
