"""Normalization: batch norm (training statistics with running-average updates, or the
running statistics in evaluation), layer norm and group norm.

Forward runs on arrays. The backward re-derives the statistics with tensor ops and
applies the closed-form gradient, so it is differentiable again.
"""
import numpy as np

from ._base import OpNode, node_for, save, finish, Size
from .unary import rsqrt

__all__ = ["batch_norm", "layer_norm", "group_norm"]
TENSOR_METHODS = {}
INPLACE = {}


def _stats_grad(x, g, dims, eps, wb):
    """d/dx of ``(x - mean) / sqrt(var + eps) * wb`` (stats over ``dims``) applied to g."""
    mean = x.mean(dims, keepdim=True)
    xc = x - mean
    var = (xc * xc).mean(dims, keepdim=True)
    invstd = rsqrt(var + eps)
    xhat = xc * invstd
    gh = g * wb if wb is not None else g
    gx = invstd * (gh - gh.mean(dims, keepdim=True) - xhat * (gh * xhat).mean(dims, keepdim=True))
    return gx, xhat


class NativeBatchNormBackward0(OpNode):
    def backward(self, g):
        x, w = self.saved_tensors
        nf = self.next_functions
        c = x.shape[1]
        bshape = (1, c) + (1,) * (x.ndim - 2)
        wb = w.reshape(bshape) if w is not None else None
        if self.training:
            gx, xhat = _stats_grad(x, g, self.dims, self.eps, wb)
        else:
            mean = finish(None, self.rm.reshape(bshape))
            invstd = finish(None, (1.0 / np.sqrt(self.rv + self.eps)).astype(x._data.dtype).reshape(bshape))
            xhat = (x - mean) * invstd
            gx = g * (wb * invstd if wb is not None else invstd)
        gw = (g * xhat).sum(self.dims) if len(nf) > 1 and nf[1][0] is not None else None
        gb = g.sum(self.dims) if len(nf) > 2 and nf[2][0] is not None else None
        return (gx if nf[0][0] is not None else None, gw, gb)


def _batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                eps=1e-5):
    """Normalize over every dim but the channel dim (1); update the running stats when training."""
    x = input._data
    if x.ndim < 2:
        raise ValueError(f"expected 2D or 3D input (got {x.ndim}D input)")
    c = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t._data.size != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t._data.size}")
    dims = (0,) + tuple(range(2, x.ndim))
    bshape = (1, c) + (1,) * (x.ndim - 2)
    if training:
        n = x.size // c if c else 0
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {Size(x.shape)}")
        mean = x.mean(axis=dims)
        xc = x - mean.reshape(bshape)
        var = (xc * xc).mean(axis=dims)
        if running_mean is not None:
            rm = running_mean._data
            rm *= (1 - momentum)
            rm += momentum * mean.astype(rm.dtype)
            running_mean._bump_version()
        if running_var is not None:
            rv = running_var._data
            rv *= (1 - momentum)
            rv += momentum * (var * n / (n - 1)).astype(rv.dtype)
            running_var._bump_version()
        invstd = 1.0 / np.sqrt(var + eps)
        y = xc * invstd.reshape(bshape)
        rm_used = rv_used = None
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        rm_used = running_mean._data.astype(x.dtype).copy()
        rv_used = running_var._data.astype(x.dtype).copy()
        invstd = 1.0 / np.sqrt(rv_used + eps)
        y = (x - rm_used.reshape(bshape)) * invstd.reshape(bshape)
    if weight is not None:
        y = y * weight._data.reshape(bshape)
    if bias is not None:
        y = y + bias._data.reshape(bshape)
    y = y.astype(x.dtype, copy=False)
    inputs = (input, weight, bias)
    node = node_for(NativeBatchNormBackward0, inputs)
    if node is not None:
        node.dims, node.eps, node.training, node.rm, node.rv = dims, eps, training, rm_used, rv_used
        save(node, input, weight)
    return finish(node, y)


class NativeLayerNormBackward0(OpNode):
    def backward(self, g):
        x, w = self.saved_tensors
        nf = self.next_functions
        dims = self.dims
        gx, xhat = _stats_grad(x, g, dims, self.eps, w)
        lead = tuple(range(x.ndim - len(dims)))
        gw = (g * xhat).sum(lead) if lead else g * xhat
        gb = g.sum(lead) if lead else g
        return (gx if nf[0][0] is not None else None,
                gw if len(nf) > 1 and nf[1][0] is not None else None,
                gb if len(nf) > 2 and nf[2][0] is not None else None)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """Normalize over the trailing ``normalized_shape`` dims, then scale and shift."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    ns = tuple(int(s) for s in normalized_shape)
    x = input._data
    k = len(ns)
    if k == 0 or x.ndim < k or x.shape[x.ndim - k:] != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size{list(x.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t._data.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t._data.shape)} and normalized_shape = {list(ns)}")
    dims = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axis=dims, keepdims=True)
    xc = x - mean
    var = (xc * xc).mean(axis=dims, keepdims=True)
    y = xc / np.sqrt(var + eps)
    if weight is not None:
        y = y * weight._data
    if bias is not None:
        y = y + bias._data
    node = node_for(NativeLayerNormBackward0, (input, weight, bias))
    if node is not None:
        node.dims, node.eps = dims, eps
        save(node, input, weight)
    return finish(node, y.astype(x.dtype, copy=False))


class NativeGroupNormBackward0(OpNode):
    def backward(self, g):
        x, w = self.saved_tensors
        nf = self.next_functions
        shape = tuple(x.shape)
        n, c = shape[0], shape[1]
        G = self.groups
        bshape = (1, c) + (1,) * (len(shape) - 2)
        xg = x.reshape((n, G, -1))
        gh = g * w.reshape(bshape) if w is not None else g
        gx, xhat = _stats_grad(xg, gh.reshape((n, G, -1)), (2,), self.eps, None)
        gx = gx.reshape(shape)
        xhat = xhat.reshape(shape)
        pdims = [0] + list(range(2, len(shape)))
        gw = (g * xhat).sum(pdims) if len(nf) > 1 and nf[1][0] is not None else None
        gb = g.sum(pdims) if len(nf) > 2 and nf[2][0] is not None else None
        return (gx if nf[0][0] is not None else None, gw, gb)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    """Normalize over groups of channels (and all spatial positions) per sample."""
    x = input._data
    if x.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {x.ndim}")
    n, c = x.shape[:2]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(x.shape)} and num_groups={num_groups}")
    xg = x.reshape(n, num_groups, -1)
    mean = xg.mean(axis=2, keepdims=True)
    xc = xg - mean
    var = (xc * xc).mean(axis=2, keepdims=True)
    y = (xc / np.sqrt(var + eps)).reshape(x.shape)
    bshape = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * weight._data.reshape(bshape)
    if bias is not None:
        y = y + bias._data.reshape(bshape)
    node = node_for(NativeGroupNormBackward0, (input, weight, bias))
    if node is not None:
        node.groups, node.eps = num_groups, eps
        save(node, input, weight)
    return finish(node, y.astype(x.dtype, copy=False))


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled=True):
    """PyTorch's top-level ``torch.batch_norm`` (argument order of the native op)."""
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
