"""The op families, and the one table that binds them onto Tensor as methods and operators.

Each family module lists ``__all__`` (functions exported as ``retrograd.<name>``),
``TENSOR_METHODS`` (name -> function, bound as ``Tensor.<name>``) and ``INPLACE``
(``name_`` -> out-of-place function, bound as an in-place method through
``apply_inplace``, which checks leaves, bumps versions and rebases history).
"""
from .._tensor import Tensor
from ._base import apply_inplace
from . import arithmetic, unary, reduce, shape, index, index_ops, compare, copy  # noqa: F401
from . import linalg, random_ops, pointwise  # noqa: F401
from . import conv, pool, activation, loss, normalization  # noqa: F401
from . import resample, embeddings, convt, attention, gridsample  # noqa: F401
from . import complex_ops, construct  # noqa: F401
from . import nn_extra  # noqa: F401
from . import special, stats, numeric, plumbing  # noqa: F401

FAMILIES = [arithmetic, unary, reduce, shape, index, index_ops, compare, copy, linalg, random_ops,
            pointwise, conv, pool, activation, loss, normalization]
FAMILIES += [resample, embeddings, convt, attention, gridsample, complex_ops, nn_extra, construct]
FAMILIES += [special, stats, numeric, plumbing]


def _inplace_method(fn, name):
    def method(self, *args, **kwargs):
        return apply_inplace(self, fn, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"In-place ``{fn.__name__}``."
    return method


def _bind():
    for fam in FAMILIES:
        for name, fn in fam.TENSOR_METHODS.items():
            setattr(Tensor, name, fn)
        for name, fn in fam.INPLACE.items():
            setattr(Tensor, name, getattr(fam, "INPLACE_IMPL", {}).get(name) or _inplace_method(fn, name))


_bind()

__all__ = [n for fam in FAMILIES for n in fam.__all__]
for _fam in FAMILIES:
    for _n in _fam.__all__:
        globals()[_n] = getattr(_fam, _n)
