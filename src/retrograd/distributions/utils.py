"""Helpers shared by the distributions: a caching property, argument broadcasting and the
probs <-> logits conversions."""
from numbers import Number

import retrograd as _t
from .._tensor import Tensor

euler_constant = 0.57721566490153286060


class lazy_property:
    """A property computed once per instance (with grad enabled) and stored in its ``__dict__``,
    so a parameter derived from another one is only built when asked for."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        with _t.enable_grad():
            value = self.fn(obj)
        obj.__dict__[self.fn.__name__] = value
        return value


def broadcast_all(*values):
    """Tensors broadcast to a common shape; numbers become tensors of the first tensor's dtype
    (of the default dtype when there is none)."""
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        dtype = next((v.dtype for v in values if isinstance(v, Tensor)), _t.get_default_dtype())
        values = [v if isinstance(v, Tensor) else _t.tensor(v, dtype=dtype) for v in values]
    return _t.broadcast_tensors(*values)


def _sum_rightmost(value, dim):
    """Sum out the ``dim`` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:value.dim() - dim] + (-1,)).sum(-1)


def clamp_probs(probs):
    """Probabilities kept inside ``[eps, 1 - eps]`` of their dtype."""
    eps = _t.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    return _t.sigmoid(logits) if is_binary else _t.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary=False):
    p = clamp_probs(probs)
    return _t.log(p) - _t.log1p(-p) if is_binary else _t.log(p)


def _standard_normal(shape, dtype):
    with _t.no_grad():
        return _t.randn(tuple(shape), dtype=dtype)


def _uniform(shape, dtype, low=0.0, high=1.0):
    with _t.no_grad():
        return _t.empty(tuple(shape), dtype=dtype).uniform_(low, high)


def _batch_mv(m, v):
    return (m @ v.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(L, x):
    """``x^T (L L^T)^-1 x`` over broadcast batch dimensions."""
    from ..linalg import solve_triangular
    shape = _t.broadcast_shapes(L.shape[:-2], x.shape[:-1])
    n = L.shape[-1]
    z = solve_triangular(L.expand(shape + (n, n)), x.expand(shape + (n,)).unsqueeze(-1), upper=False)
    return z.squeeze(-1).pow(2).sum(-1)
