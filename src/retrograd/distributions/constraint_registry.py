"""``biject_to`` and ``transform_to``: from a constraint to a transform whose codomain it is
(a bijection for ``biject_to``; any onto map for ``transform_to``)."""
from numbers import Number

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """Maps constraint classes to factories ``constraint -> Transform``."""

    def __init__(self):
        self._registry = {}

    def register(self, constraint, factory=None):
        """Register ``factory`` for a constraint class (or instance's class); usable as a decorator."""
        if factory is None:
            return lambda f: self.register(constraint, f)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError("Expected constraint to be either a Constraint subclass or instance, "
                            f"but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(*cs):
    def deco(f):
        for c in cs:
            biject_to.register(c, f)
            transform_to.register(c, f)
        return f
    return deco


@_both(constraints.real)
def _identity(c):
    return transforms.identity_transform


@biject_to.register(constraints.independent)
def _biject_independent(c):
    return transforms.IndependentTransform(biject_to(c.base_constraint), c.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_independent(c):
    return transforms.IndependentTransform(transform_to(c.base_constraint), c.reinterpreted_batch_ndims)


@_both(constraints.greater_than, constraints.greater_than_eq)
def _to_greater_than(c):
    return transforms.ComposeTransform([transforms.ExpTransform(), transforms.AffineTransform(c.lower_bound, 1)])


@_both(constraints.less_than)
def _to_less_than(c):
    return transforms.ComposeTransform([transforms.ExpTransform(), transforms.AffineTransform(c.upper_bound, -1)])


@_both(constraints.interval, constraints.half_open_interval)
def _to_interval(c):
    lo, hi = c.lower_bound, c.upper_bound
    if isinstance(lo, Number) and lo == 0 and isinstance(hi, Number) and hi == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([transforms.SigmoidTransform(), transforms.AffineTransform(lo, hi - lo)])


@biject_to.register(constraints.simplex)
def _biject_simplex(c):
    return transforms.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_simplex(c):
    return transforms.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_lower_cholesky(c):
    return transforms.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_positive_definite(c):
    return transforms.PositiveDefiniteTransform()


@_both(constraints.corr_cholesky)
def _to_corr_cholesky(c):
    return transforms.CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_cat(c):
    return transforms.CatTransform([biject_to(x) for x in c.cseq], c.dim, c.lengths)


@transform_to.register(constraints.cat)
def _transform_cat(c):
    return transforms.CatTransform([transform_to(x) for x in c.cseq], c.dim, c.lengths)


@biject_to.register(constraints.stack)
def _biject_stack(c):
    return transforms.StackTransform([biject_to(x) for x in c.cseq], c.dim)


@transform_to.register(constraints.stack)
def _transform_stack(c):
    return transforms.StackTransform([transform_to(x) for x in c.cseq], c.dim)
