"""Activation functions: the ReLU family, ELU family, GELU, SiLU, Mish, softplus, the hard
variants, shrinkage, PReLU, and softmax/log_softmax over any dim.

Forward runs on arrays; every backward is written with tensor ops so it is itself
differentiable. Node names are PyTorch's (e.g. ``LeakyReluBackward0``, ``EluBackward0``,
``GeluBackward0``, ``SoftmaxBackward0``, ``LogSoftmaxBackward0``).
"""
import math
import warnings

import numpy as np

from ._base import OpNode, node_for, save, save_output, finish, wrap_dim, apply_inplace
from .unary import _erf_np, _sigmoid_np, exp, tanh, sigmoid, erf
from .index import where
from .. import _dtype as D

__all__ = ["softmax", "log_softmax", "selu", "celu", "threshold", "prelu", "hardshrink", "rrelu", "selu_", "celu_",
           "threshold_", "dropout", "feature_dropout", "dropout_", "feature_dropout_"]


def _const(a, like):
    return finish(None, np.asarray(a, dtype=like._data.dtype))


def _float_input(input, name):
    if input._data.dtype.kind not in "fc":
        raise NotImplementedError(f'"{name}" not implemented for \'{D._FROM_NP[input._data.dtype].name.capitalize()}\'')


def _op(node_cls, input, r, saves="input", **attrs):
    node = node_for(node_cls, (input,))
    res = finish(node, r)
    if node is not None:
        for k, v in attrs.items():
            setattr(node, k, v)
        if saves == "input":
            save(node, input)
        elif saves == "output":
            save_output(node, res)
    return res


# *** piecewise linear ***

class HardtanhBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        xd = x._data
        return g * _const((xd > self.min_val) & (xd < self.max_val), g)


def hardtanh(input, min_val=-1.0, max_val=1.0):
    """Clamp to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    x = input._data
    r = np.clip(x, min_val, max_val).astype(x.dtype, copy=False)
    return _op(HardtanhBackward0, input, r, min_val=min_val, max_val=max_val)


class LeakyReluBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return g * _const(np.where(x._data > 0, 1.0, self.slope), g)


def leaky_relu(input, negative_slope=0.01):
    x = input._data
    r = np.where(x > 0, x, x * negative_slope).astype(x.dtype, copy=False)
    return _op(LeakyReluBackward0, input, r, slope=negative_slope)


class ThresholdBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return g * _const(x._data > self.threshold, g)


def threshold(input, threshold, value):
    """``x`` where ``x > threshold``, else ``value``."""
    x = input._data
    r = np.where(x > threshold, x, value).astype(x.dtype, copy=False)
    return _op(ThresholdBackward0, input, r, threshold=threshold)


class HardsigmoidBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        xd = x._data
        return g * _const(((xd > -3) & (xd < 3)) / 6.0, g)


def hardsigmoid(input):
    x = input._data
    r = (np.clip(x + 3, 0, 6) / 6).astype(x.dtype, copy=False)
    return _op(HardsigmoidBackward0, input, r)


class HardswishBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        xd = x._data
        mid = (xd >= -3) & (xd <= 3)
        return g * where(finish(None, mid), x / 3 + 0.5, _const(xd > 3, g))


def hardswish(input):
    x = input._data
    r = (x * np.clip(x + 3, 0, 6) / 6).astype(x.dtype, copy=False)
    return _op(HardswishBackward0, input, r)


class HardshrinkBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return g * _const(np.abs(x._data) > self.lambd, g)


def hardshrink(input, lambd=0.5):
    x = input._data
    r = np.where(np.abs(x) > lambd, x, 0).astype(x.dtype, copy=False)
    return _op(HardshrinkBackward0, input, r, lambd=lambd)


class SoftshrinkBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return g * _const(np.abs(x._data) > self.lambd, g)


def softshrink(input, lambd=0.5):
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    x = input._data
    r = np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0)).astype(x.dtype, copy=False)
    return _op(SoftshrinkBackward0, input, r, lambd=lambd)


class PreluKernelBackward0(OpNode):
    def backward(self, g):
        x, w = self.saved_tensors
        nf = self.next_functions
        pos = finish(None, x._data > 0)
        wb = w.reshape(self.wshape)
        gx = where(pos, g, g * wb) if nf[0][0] is not None else None
        gw = None
        if nf[1][0] is not None:
            contrib = where(pos, g * 0, g * x)
            dims = [d for d in range(x.ndim) if not (d == 1 and self.per_channel)]
            gw = contrib.sum(dims) if dims else contrib
            gw = gw.reshape(w.shape)
        return gx, gw


def prelu(input, weight):
    """``max(0, x) + weight * min(0, x)``; weight has one element or one per channel (dim 1)."""
    x, w = input._data, weight._data
    n = w.size
    per_channel = n != 1
    if per_channel:
        if x.ndim < 2 or x.shape[1] != n:
            ch = x.shape[1] if x.ndim >= 2 else 1
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{n} and channel size = {ch}.")
        wshape = (1, n) + (1,) * (x.ndim - 2)
    else:
        wshape = (1,) * x.ndim if x.ndim else ()
    wb = w.reshape(wshape)
    r = np.where(x > 0, x, wb * x).astype(x.dtype, copy=False)
    node = node_for(PreluKernelBackward0, (input, weight))
    if node is not None:
        node.wshape, node.per_channel = wshape, per_channel
        save(node, input, weight)
    return finish(node, r)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: random slopes in training, their mean in evaluation."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2)
    from .._creation import _gen
    x = input._data
    slope = _gen(None).uniform(lower, upper, x.shape).astype(x.dtype)
    slope = np.where(x >= 0, 1, slope).astype(x.dtype)
    return input * finish(None, slope)


# *** ELU family ***

class _EluBackward(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        s, a, i = self.scale, self.alpha, self.input_scale
        neg = g * (exp(x * i) * (s * a * i))
        return where(finish(None, x._data > 0), g * s, neg)


EluBackward0 = type("EluBackward0", (_EluBackward,), {})
CeluBackward0 = type("CeluBackward0", (_EluBackward,), {})


def _elu(input, alpha, scale, input_scale, cls):
    x = input._data
    with np.errstate(over="ignore"):
        r = np.where(x > 0, x * scale, (np.expm1(np.minimum(x, 0) * input_scale)) * (alpha * scale))
    return _op(cls, input, r.astype(x.dtype, copy=False), alpha=alpha, scale=scale, input_scale=input_scale)


def elu(input, alpha=1.0):
    return _elu(input, alpha, 1.0, 1.0, EluBackward0)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input):
    return _elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0, EluBackward0)


def celu(input, alpha=1.0):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _elu(input, alpha, 1.0, 1.0 / alpha, CeluBackward0)


# *** smooth ***

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_K = math.sqrt(2.0 / math.pi)


class GeluBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        if self.approximate == "tanh":
            inner = (x + x * x * x * 0.044715) * _K
            t = tanh(inner)
            left = (t + 1) * 0.5
            dinner = (x * x * (3 * 0.044715) + 1) * _K
            return g * (left + x * 0.5 * (1 - t * t) * dinner)
        cdf = (erf(x * _SQRT1_2) + 1) * 0.5
        pdf = exp(x * x * -0.5) * _INV_SQRT_2PI
        return g * (cdf + x * pdf)


def gelu(input, approximate="none"):
    """Gaussian error linear unit, exact (erf) or ``approximate='tanh'``."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    x = input._data
    if approximate == "tanh":
        r = 0.5 * x * (1 + np.tanh(_K * (x + 0.044715 * x * x * x)))
    else:
        r = 0.5 * x * (1 + _erf_np(x * _SQRT1_2))
    return _op(GeluBackward0, input, r.astype(x.dtype, copy=False), approximate=approximate)


class SiluBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        s = sigmoid(x)
        return g * (s * (x * (1 - s) + 1))


def silu(input):
    x = input._data
    return _op(SiluBackward0, input, (x * _sigmoid_np(x)).astype(x.dtype, copy=False))


def _softplus_np(x, beta=1.0, thr=20.0):
    bx = x * beta
    with np.errstate(over="ignore"):
        return np.where(bx > thr, x, np.logaddexp(0, bx) / beta).astype(x.dtype, copy=False)


class MishBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        t = tanh(_softplus_t(x))
        return g * (t + x * sigmoid(x) * (1 - t * t))


def _softplus_t(x):
    # differentiable softplus (beta 1, threshold 20) used inside other backward formulas
    return softplus(x)


def mish(input):
    x = input._data
    return _op(MishBackward0, input, (x * np.tanh(_softplus_np(x))).astype(x.dtype, copy=False))


class SoftplusBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        z = sigmoid(x * self.beta)
        return where(finish(None, x._data * self.beta > self.threshold), g, g * z)


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold``."""
    x = input._data
    return _op(SoftplusBackward0, input, _softplus_np(x, beta, threshold), beta=beta, threshold=threshold)


class LogSigmoidBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return g * sigmoid(-x)


def logsigmoid(input):
    x = input._data
    return _op(LogSigmoidBackward0, input, (-np.logaddexp(0, -x)).astype(x.dtype, copy=False))


def softsign(input):
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """``x - tanh(x)``."""
    return input - tanh(input)


class GluBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        xd, gd = x._data, g._data
        a, b = np.split(xd, 2, axis=self.dim)
        sb = _sigmoid_np(b)
        ga = gd * sb
        gb = gd * a * sb * (1 - sb)
        return finish(None, np.concatenate([ga, gb], axis=self.dim).astype(xd.dtype, copy=False))


def glu(input, dim=-1):
    """``a * sigmoid(b)`` where ``a, b`` are the two halves of ``input`` along ``dim``."""
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, x.ndim)
    if x.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {x.shape[d]}")
    a, b = np.split(x, 2, axis=d)
    return _op(GluBackward0, input, (a * _sigmoid_np(b)).astype(x.dtype, copy=False), dim=d)


# *** softmax ***

def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
                  "dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


class SoftmaxBackward0(OpNode):
    def backward(self, g):
        (y,) = self.saved_tensors
        gy = g * y
        return gy - y * gy.sum(self.dim, keepdim=True)


class LogSoftmaxBackward0(OpNode):
    def backward(self, g):
        (y,) = self.saved_tensors
        return g - exp(y) * g.sum(self.dim, keepdim=True)


_TN = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _prep_softmax(input, dim, dtype):
    x = input._data
    if dtype is not None:
        input = input._to(D.to_dtype(dtype))
        x = input._data
    elif x.dtype.kind not in "fc":
        raise RuntimeError('"softmax_lastdim_kernel_impl" not implemented for '
                           f"'{_TN.get(x.dtype.name, x.dtype.name)}'")
    return input, x, wrap_dim(dim, x.ndim)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``."""
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    input, x, d = _prep_softmax(input, dim, dtype)
    if x.ndim == 0:
        r = np.ones_like(x)
    else:
        m = x.max(axis=d, keepdims=True) if x.size else 0
        with np.errstate(invalid="ignore", over="ignore"):
            e = np.exp(x - m)
            r = e / e.sum(axis=d, keepdims=True)
    node = node_for(SoftmaxBackward0, (input,))
    res = finish(node, r.astype(x.dtype, copy=False))
    if node is not None:
        node.dim = d
        save_output(node, res)
    return res


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``x - logsumexp(x)`` along ``dim``."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    input, x, d = _prep_softmax(input, dim, dtype)
    if x.ndim == 0:
        r = np.zeros_like(x)
    else:
        m = x.max(axis=d, keepdims=True) if x.size else 0
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            z = x - m
            r = z - np.log(np.exp(z).sum(axis=d, keepdims=True))
    node = node_for(LogSoftmaxBackward0, (input,))
    res = finish(node, r.astype(x.dtype, copy=False))
    if node is not None:
        node.dim = d
        save_output(node, res)
    return res


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-x)``."""
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim, _stacklevel)
    if dtype is not None:
        input = input._to(D.to_dtype(dtype))
    return softmax(-input, dim)


# *** dropout ***

def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_mask(shape, p, dtype):
    if p == 1.0:
        return np.zeros(shape, dtype)
    from .._creation import _gen
    keep = _gen(None).random(shape) >= p
    return (keep / (1.0 - p)).astype(dtype)


def _masked(input, mask, inplace):
    m = finish(None, mask)
    if inplace:
        return apply_inplace(input, lambda t: t * m)
    return input * m


def dropout(input, p=0.5, train=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (when ``train``)."""
    _check_p(p)
    if not train or p == 0.0:
        return input
    return _masked(input, _dropout_mask(input._data.shape, p, input._data.dtype), inplace)


def feature_dropout(input, p=0.5, train=True, inplace=False, batched=True):
    """Zero whole channels (dim 1; dim 0 when not ``batched``) with probability ``p``."""
    _check_p(p)
    if not train or p == 0.0:
        return input
    shape = input._data.shape
    k = 2 if batched else 1
    mshape = shape[:k] + (1,) * (len(shape) - k)
    return _masked(input, _dropout_mask(mshape, p, input._data.dtype), inplace)


def dropout_(input, p=0.5, train=True):
    return dropout(input, p, train, True)


def feature_dropout_(input, p=0.5, train=True):
    return feature_dropout(input, p, train, True)


def selu_(input):
    return apply_inplace(input, selu)


def celu_(input, alpha=1.0):
    return apply_inplace(input, celu, alpha)


def threshold_(input, threshold_, value):
    return apply_inplace(input, threshold, threshold_, value)


def _tensor_softmax(self, dim, dtype=None):
    return softmax(self, dim, dtype=dtype)


def _tensor_log_softmax(self, dim, dtype=None):
    return log_softmax(self, dim, dtype=dtype)


TENSOR_METHODS = {"softmax": _tensor_softmax, "log_softmax": _tensor_log_softmax, "hardshrink": hardshrink,
                  "prelu": prelu}
INPLACE = {}
