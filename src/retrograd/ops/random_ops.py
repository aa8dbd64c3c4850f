"""In-place random fills: normal_, uniform_, bernoulli_, exponential_, random_, fill_, zero_."""
import numpy as np

from ._base import check_inplace, Tensor, OpNode, node_for, finish, apply_inplace, _state
from .._creation import _gen

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


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal samples."""
    return _fill_inplace(self, mean + std * _gen(generator).standard_normal(self._data.shape))


def uniform_(self, a=0.0, b=1.0, *, generator=None):
    """Fill with uniform samples on [a, b)."""
    return _fill_inplace(self, _gen(generator).uniform(a, b, self._data.shape))


class ZeroBackward0(OpNode):
    def backward(self, g):
        return g * 0


class FillBackward2(ZeroBackward0):
    pass


class FillBackward3(OpNode):
    def backward(self, g):
        nf = self.next_functions
        return (g * 0 if nf[0][0] is not None else None, g.sum() if nf[1][0] is not None else None)


def _filled(input, value, cls):
    """Out-of-place fill (for in-place fills that take part in autograd)."""
    v = value._data if isinstance(value, Tensor) else value
    r = np.empty_like(input._data)
    r[...] = v
    return finish(node_for(cls, (input,) if cls is not FillBackward3 else (input, value)), r)


_filled._overlap_ok = True   # (PyTorch fills expanded tensors with a number)


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
    elif _state.grad and self._requires_grad:
        return apply_inplace(self, _filled, value, FillBackward2)
    return _fill_inplace(self, value, overlap=False)   # (PyTorch fills expanded tensors with a number)


def zero_(self):
    """Fill with zeros."""
    if _state.grad and self._requires_grad:
        return apply_inplace(self, _filled, 0, ZeroBackward0)
    return _fill_inplace(self, 0, overlap=False)


def bernoulli_(self, p=0.5, *, generator=None):
    pp = p._data if isinstance(p, Tensor) else p
    return _fill_inplace(self, _gen(generator).random(self._data.shape) < pp)


def exponential_(self, lambd=1.0, *, generator=None):
    return _fill_inplace(self, _gen(generator).exponential(1.0 / lambd, self._data.shape))


def random_(self, from_=0, to=None, *, generator=None):
    if to is None:
        to = from_ if from_ else (2 ** 24 if self._data.dtype.kind == "f" else np.iinfo(np.int64).max)
        from_ = 0 if to == from_ else 0
    return _fill_inplace(self, _gen(generator).integers(from_, to, self._data.shape))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    return _fill_inplace(self, np.exp(mean + std * _gen(generator).standard_normal(self._data.shape)))


TENSOR_METHODS = {"normal_": normal_, "uniform_": uniform_, "fill_": fill_, "zero_": zero_,
                  "bernoulli_": bernoulli_, "exponential_": exponential_, "random_": random_,
                  "log_normal_": log_normal_}
INPLACE = {}
