"""In-place random fills: normal_, uniform_, bernoulli_, exponential_, random_, log_normal_,
and the plain fills fill_, zero_.

A fill overwrites every element, so its gradient w.r.t. the old values is zero. As in PyTorch,
a fill of a tensor that requires grad is recorded (NormalBackward0, FillBackward2, ...) and
that zero gradient is a constant: it is exact even when the incoming gradient is inf or nan,
and it does not depend on the graph (create_graph gives a gradient that needs no grad).
"""
import math

import numpy as np

from ._base import xp_for
from ._base import (check_inplace, Tensor, OpNode, node_for, finish, apply_inplace, _state, xp_of,
                    _dtype_name, zeros_grad)
from .._creation import _engine_for
from .. import _dtype as D

__all__ = []


def _fill_inplace(self, values, overlap=True):
    check_inplace(self, overlap=overlap)
    d = self._data
    if d.ndim == 0:
        d[()] = values
    else:
        d[...] = values
    self._bump_version()
    return self


class _FillNode(OpNode):
    """The gradient of the overwritten tensor: zeros that belong to no graph."""
    def backward(self, g):
        return zeros_grad(g)


def _fill_node(name):
    return type(name, (_FillNode,), {"__module__": __name__})


ZeroBackward0 = _fill_node("ZeroBackward0")
FillBackward2 = _fill_node("FillBackward2")
NormalBackward0 = _fill_node("NormalBackward0")
UniformBackward0 = _fill_node("UniformBackward0")
BernoulliBackward2 = _fill_node("BernoulliBackward2")
ExponentialBackward0 = _fill_node("ExponentialBackward0")
LogNormalBackward0 = _fill_node("LogNormalBackward0")
RandomBackward0 = _fill_node("RandomBackward0")
RandomBackward1 = _fill_node("RandomBackward1")
RandomBackward2 = _fill_node("RandomBackward2")


class FillBackward3(OpNode):
    def backward(self, g):
        nf = self.next_functions
        return (zeros_grad(g) if nf[0][0] is not None else None,
                g.sum() if nf[1][0] is not None else None)


class BernoulliBackward1(OpNode):
    """bernoulli_(p) with a tensor ``p``: zero gradients for the old values and for ``p``."""
    def backward(self, g):
        nf = self.next_functions
        return (zeros_grad(g) if nf[0][0] is not None else None,
                finish(None, xp_of(g).zeros(self.p_shape, self.p_dtype)) if nf[1][0] is not None else None)


def _bernoulli_filled(input, values, p):
    xp = xp_for(input, values, p)
    node = node_for(BernoulliBackward1, (input, p))
    if node is not None:
        node.p_shape, node.p_dtype = p._data.shape, p._data.dtype
    return finish(node, xp.asarray(values, dtype=input._data.dtype))


def _filled(input, value, cls):
    """Out-of-place fill (for in-place fills that take part in autograd)."""
    xp = xp_for(input, value)
    v = value._data if isinstance(value, Tensor) else value
    r = xp.empty_like(input._data)
    r[...] = v
    return finish(node_for(cls, (input,) if cls is not FillBackward3 else (input, value)), r)


_filled._overlap_ok = True   # (checked by _fill: PyTorch fills expanded tensors with a number)


def _fill(self, values, cls, overlap=True):
    """Write ``values`` into ``self``; recorded as ``cls`` when ``self`` requires grad.
    ``overlap``: refuse tensors whose elements share memory (all fills but fill_/zero_)."""
    if _state.grad and self._requires_grad:
        if overlap:
            check_inplace(self)
        return apply_inplace(self, _filled, values, cls)
    return _fill_inplace(self, values, overlap)


def fill_(self, value):
    """Fill with ``value`` (a number or a 0-d tensor)."""
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        check_inplace(self, value)   # (a tensor value is copied in: PyTorch checks for overlap)
        if _state.grad and (self._requires_grad or value._requires_grad):
            return apply_inplace(self, _filled, value, FillBackward3)
        value = value._data
    else:
        D.check_scalar_fits(value, self.dtype, half=True)
        if self._data.dtype.kind == "u" and isinstance(value, int) and value < 0:
            value %= 1 << (8 * self._data.dtype.itemsize)   # C's conversion: -1 -> 255
    return _fill(self, value, FillBackward2, overlap=False)


def zero_(self):
    """Fill with zeros."""
    return _fill(self, 0, ZeroBackward0, overlap=False)


def _g(v):
    return f"{v:g}"


def _float_only(self, kernel):
    if self._data.dtype.kind not in "fcV":
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype_name(self._data.dtype)}'")


def _memory_order(a):
    """``a``'s dimensions from the largest stride to the smallest (the order its memory runs)."""
    return sorted(range(a.ndim), key=lambda d: -abs(a.strides[d]))


def _draw(self, generator, fn, dtype=None):
    """``fn(engine, n)`` (n values, flat) laid out over ``self`` in the order PyTorch's kernels
    visit its elements: memory order (a meta tensor: no draws)."""
    a = self._data
    dtype = a.dtype if dtype is None else dtype
    e = _engine_for(self, generator)
    if e is None:
        from .._meta import MetaArray
        return MetaArray(a.shape, dtype)
    if a.flags.c_contiguous or a.ndim < 2:
        return fn(e, a.size).reshape(a.shape)
    order = _memory_order(a)
    v = fn(e, a.size).reshape([a.shape[d] for d in order])
    return v.transpose(np.argsort(order))


def _contiguous(self):
    a = self._data
    return a.flags.c_contiguous or (a.ndim < 2 and (a.ndim == 0 or abs(a.strides[0]) == a.itemsize))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal samples."""
    _float_only(self, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")
    dt = self._data.dtype
    if dt.kind == "c":   # (the real view, std / sqrt(2) each)
        rt, s = dt.type(0).real.dtype, std * 0.7071067811865475
        if _contiguous(self):
            fn = lambda e, n: e.normal(2 * n, rt, mean, s).view(dt)
        else:
            fn = lambda e, n: e.normal_scalar(2 * n, mean, s).astype(rt).view(dt)
    elif _contiguous(self):
        fn = lambda e, n: e.normal(n, dt, mean, std)
    else:   # (PyTorch's block kernel is for contiguous tensors; others draw one by one)
        fn = lambda e, n: e.normal_scalar(n, mean, std).astype(dt)
    return _fill(self, _draw(self, generator, fn), NormalBackward0)


def uniform_(self, a=0.0, b=1.0, *, generator=None):
    """Fill with uniform samples on [a, b)."""
    _float_only(self, "check_uniform_bounds")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_g(a)} > to={_g(b)}")
    dt = self._data.dtype
    if dt.kind == "c":   # (the real view)
        rt = dt.type(0).real.dtype
        fn = lambda e, n: e.uniform(2 * n, rt, a, b).view(dt)
    else:
        fn = lambda e, n: e.uniform(n, dt, a, b)
    return _fill(self, _draw(self, generator, fn), UniformBackward0)


def _bernoulli_values(self, generator, p):
    from .._creation import _bernoulli_draws
    pa = p._data if isinstance(p, Tensor) else p
    if isinstance(pa, np.ndarray):
        pa = np.broadcast_to(pa, self._data.shape)
        if not (self._data.flags.c_contiguous or self._data.ndim < 2):
            # (visit in self's memory order: reorder p alongside)
            order = _memory_order(self._data)
            pm = pa.transpose(order)
            return _draw(self, generator, lambda e, n: _bernoulli_draws(e, pm.shape, pm).reshape(-1), np.bool_)
        pa = pa.reshape(-1)
    return _draw(self, generator, lambda e, n: _bernoulli_draws(e, (n,), pa), np.bool_)


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 samples that are 1 with probability ``p`` (a number or a tensor)."""
    if isinstance(p, Tensor):
        values = _bernoulli_values(self, generator, p)
        if _state.grad and (self._requires_grad or p._requires_grad):
            return apply_inplace(self, _bernoulli_filled, values, p)
        return _fill_inplace(self, values)
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_g(p)}")
    return _fill(self, _bernoulli_values(self, generator, p), BernoulliBackward2)


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with exponential samples of rate ``lambd``."""
    if self._data.dtype.kind not in "fcV":
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {_dtype_name(self._data.dtype)}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lambd)}")
    scale = -1.0 / lambd
    return _fill(self, _draw(self, generator, lambda e, n: scale * e.unit53_map(n, lambda u: math.log1p(-u), ("log1p_neg",))),
                 ExponentialBackward0)


# random_() without bounds: every integer the dtype holds exactly, from 0 (both ends included)
_RANDOM_TOP = {"float64": 2 ** 53, "float32": 2 ** 24, "float16": 2 ** 11, "bfloat16": 2 ** 8, "bool": 1}


def random_(self, from_=0, to=None, *, generator=None):
    """Fill with integers: ``random_(to)`` from [0, to), ``random_(from, to)`` from [from, to),
    ``random_()`` from 0 to the largest integer the dtype holds exactly."""
    dt = self._data.dtype
    if to is None and from_ == 0:
        top = _RANDOM_TOP.get(dt.name) or int(np.iinfo(dt).max)
        wide = dt.itemsize == 8    # (64-bit draws for int64 and float64)
        fn, cls = (lambda e, n: e.below(n, top + 1, wide).astype(dt)), RandomBackward2
    else:
        if to is None:
            from_, to, cls = 0, from_, RandomBackward1
        else:
            cls = RandomBackward0
        if from_ >= to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
        fn = lambda e, n: e.integers(n, from_, to - from_).astype(dt)
    return _fill(self, _draw(self, generator, fn), cls)


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with samples whose logarithm is normal(mean, std)."""
    xp_for(mean, std)
    _float_only(self, "log_normal_cpu")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_g(std)}")
    # (PyTorch draws these one by one, whatever the size, and exponentiates with the C library)
    fn = lambda e, n: np.fromiter(map(math.exp, e.normal_scalar(n, mean, std).tolist()), np.float64, n)
    return _fill(self, _draw(self, generator, fn, np.float64), LogNormalBackward0)


TENSOR_METHODS = {"normal_": normal_, "uniform_": uniform_, "fill_": fill_, "zero_": zero_,
                  "bernoulli_": bernoulli_, "exponential_": exponential_, "random_": random_,
                  "log_normal_": log_normal_}
INPLACE = {}
