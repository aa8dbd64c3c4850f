"""Reductions: sum, mean, and (more to come) prod, max/min, var/std, norm, logsumexp,
cumsum; all/any/argmax/argmin without gradients."""
import numpy as np

from ._base import OpNode, node_for, save, finish, arr, norm_dims, write_out, Tensor, Size
from .. import _dtype as D

__all__ = ["sum", "mean", "sum_to_size"]


def _sum_dtype(npdt, dtype):
    if dtype is not None:
        return D.to_dtype(dtype).np
    if npdt.kind in "biu":
        return np.dtype(np.int64)
    return npdt


def _restore_dims(g, shape, dims, keepdim):
    """Reshape a reduced gradient so it broadcasts against the input's ``shape``."""
    if not keepdim and dims:
        full = list(shape)
        for d in dims:
            full[d] = 1
        g = g.reshape(full)
    return g


class SumBackward0(OpNode):
    def backward(self, g):
        return g.expand(self.shape)


class SumBackward1(OpNode):
    def backward(self, g):
        return _restore_dims(g, self.shape, self.dims, self.keepdim).expand(self.shape)


def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum of all elements, or over ``dim`` (an int or a tuple of ints)."""
    x = input._data
    rdt = _sum_dtype(x.dtype, dtype)
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0 and False):
        r = arr(x.sum(dtype=rdt))
        node = node_for(SumBackward0, (input,))
        if node is not None:
            node.shape = x.shape
    else:
        dims = norm_dims(dim, x.ndim)
        r = arr(x.sum(axis=dims, dtype=rdt, keepdims=keepdim))
        node = node_for(SumBackward1, (input,))
        if node is not None:
            node.shape, node.dims, node.keepdim = x.shape, dims, keepdim
    res = finish(node, r)
    return res if out is None else write_out(out, res, "sum")


class MeanBackward0(OpNode):
    def backward(self, g):
        return (g / self.n).expand(self.shape)


class MeanBackward1(OpNode):
    def backward(self, g):
        return (_restore_dims(g, self.shape, self.dims, self.keepdim) / self.n).expand(self.shape)


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean of all elements, or over ``dim``."""
    x = input._data
    if dtype is not None:
        x = x.astype(D.to_dtype(dtype).np)
    if x.dtype.kind not in "fc":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
            f"dtype. Got: {D._FROM_NP[x.dtype].name.capitalize() if x.dtype.kind != 'i' else 'Long'}")
    with np.errstate(invalid="ignore", divide="ignore"):
        if dim is None:
            r = arr(x.mean() if x.size else np.array(np.nan, x.dtype))
            node = node_for(MeanBackward0, (input,))
            if node is not None:
                node.shape, node.n = x.shape, max(x.size, 1)
        else:
            dims = norm_dims(dim, x.ndim)
            r = arr(x.mean(axis=dims, keepdims=keepdim))
            node = node_for(MeanBackward1, (input,))
            if node is not None:
                n = 1
                for d in dims:
                    n *= x.shape[d]
                node.shape, node.dims, node.keepdim, node.n = x.shape, dims, keepdim, n
    r = r.astype(x.dtype, copy=False)
    res = finish(node, r)
    return res if out is None else write_out(out, res, "mean")


class SumToSizeBackward(OpNode):
    def backward(self, g):
        return g.expand(self.shape)


SumToSizeBackward = type("SumBackward1", (SumToSizeBackward,), {})


def sum_to_size(input, *size):
    """Sum broadcast dimensions so the result has shape ``size``."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(size)
    x = input._data
    if x.shape == size:
        return input
    lead = x.ndim - len(size)
    if lead < 0:
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, x.shape))}}}.")
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size) if s == 1 and x.shape[lead + i] != 1)
    for i, s in enumerate(size):
        if s != 1 and x.shape[lead + i] != s:
            raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                               f"{{{', '.join(map(str, x.shape))}}}.")
    r = arr(x.sum(axis=axes).reshape(size)) if axes else x.reshape(size)
    node = node_for(SumToSizeBackward, (input,))
    if node is not None:
        node.shape = x.shape
    return finish(node, r)


TENSOR_METHODS = {"sum": sum, "mean": mean, "sum_to_size": sum_to_size}
INPLACE = {}
