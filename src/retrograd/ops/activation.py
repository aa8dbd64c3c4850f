"""Activation functions: the ReLU family, ELU family, GELU, SiLU, Mish, softplus, the hard
variants, shrinkage, PReLU, softmax/log_softmax over any dim, and dropout.

Forward runs on arrays, with the branch conventions of PyTorch's CPU kernels (which side of
a kink a boundary point and a NaN take). A first derivative is itself one op, as PyTorch's
``*_backward`` functions are: its value is computed on arrays and its node, named as
PyTorch's (``EluBackwardBackward0``, ``SoftplusBackwardBackward0``, ...), differentiates it
again with derivatives.yaml's formulas written in tensor ops. Gradients that are zero
somewhere are selected, never multiplied (``masked_grad``), so inf/nan upstream gradients
give 0 there, and under create_graph they stay in the graph.
"""
import math
import warnings

import numpy as np

from ._complex_reject import no_complex, no_complex_kernel
from ._base import xp_for
from ._base import (OpNode, node_for, save, save_output, finish, finish_multi, wrap_dim, apply_inplace, arr,
                    masked_grad, _dtype_name, zeros_grad, _state, Tensor)
from . import _accel, _accel_nn
from .unary import _erf_raw, _erf_f32, _exp_neg_f32, _blockwise, _sigmoid_np, exp, log1p, tanh, sigmoid
from .index import where
from .. import _dtype as D

__all__ = ["softmax", "log_softmax", "selu", "celu", "threshold", "prelu", "hardshrink", "rrelu", "selu_", "celu_",
           "threshold_", "rrelu_", "dropout", "feature_dropout", "dropout_", "feature_dropout_", "alpha_dropout",
           "feature_alpha_dropout"]


def _const(a, like):
    xp = xp_for(a, like)
    return finish(None, arr(xp.asarray(a, dtype=like._data.dtype)))


def _float_input(input, kernel, complex_ok=False):
    """PyTorch's dispatch error for the kernels that take real floating inputs only."""
    dt = input._data.dtype
    if dt.kind not in ("fcV" if complex_ok else "fV"):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype_name(dt)}\'')


def _op(node_cls, input, r, saves="input", **attrs):
    """Wrap the forward result ``r`` (made an array: NumPy turns 0-d results into scalars)."""
    node = node_for(node_cls, (input,))
    res = finish(node, arr(r))
    if node is not None:
        for k, v in attrs.items():
            setattr(node, k, v)
        if saves == "input":
            save(node, input)
        elif saves == "output":
            save_output(node, res)
    return res


def _grad_op(node_cls, value, inputs, **attrs):
    """A first derivative computed as one op, as PyTorch's ``*_backward`` functions are: under
    create_graph its node (PyTorch's ``*BackwardBackward0``) differentiates it again with
    the formulas of derivatives.yaml. ``inputs`` are saved for that node."""
    node = node_for(node_cls, inputs)
    if node is not None:
        for k, v in attrs.items():
            setattr(node, k, v)
        save(node, *inputs)
    return finish(node, arr(value))


def _needs(node, i):
    return node.next_functions[i][0] is not None


# *** piecewise linear: gradients are selected (masked_grad), never multiplied ***

class HardtanhBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        xd = x._data
        # PyTorch's kernel zeroes where x <= min or x >= max, so NaN passes the gradient
        return masked_grad(g, ~((xd <= self.min_val) | (xd >= self.max_val)), x, "HardtanhBackwardBackward0")


def hardtanh(input, min_val=-1.0, max_val=1.0):
    """Clamp to [min_val, max_val]."""
    xp = xp_for(input)
    x = input._data
    if x.dtype == np.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    no_complex(x, "clamp")
    if x.dtype == np.uint8 and (min_val < 0 or max_val < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    r = xp.clip(x, min_val, max_val).astype(x.dtype, copy=False)
    return _op(HardtanhBackward0, input, r, min_val=min_val, max_val=max_val)


def _leaky_grad(cls, g, x, slope, noise=None):
    """g * (x > 0 ? 1 : slope), or g * noise (rrelu in training): PyTorch multiplies by the
    slope here, it does not select."""
    xp = xp_for(g, x, slope, noise)
    gd, xd = g._data, x._data
    with np.errstate(invalid="ignore"):
        r = gd * noise if noise is not None else xp.where(xd > 0, gd, gd * slope)
    return _grad_op(cls, r.astype(gd.dtype, copy=False), (g, x), slope=slope, noise=noise)


class _LeakyGradNode(OpNode):
    """Double backward of leaky_relu_backward: linear in grad, constant in x."""
    def backward(self, gg):
        g, x = self.saved_tensors
        return (_leaky_grad(type(self), gg, x, self.slope, self.noise) if _needs(self, 0) else None,
                zeros_grad(x) if _needs(self, 1) else None)


LeakyReluBackwardBackward0 = type("LeakyReluBackwardBackward0", (_LeakyGradNode,), {})
RreluWithNoiseBackwardBackward0 = type("RreluWithNoiseBackwardBackward0", (_LeakyGradNode,), {})


class LeakyReluBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return _leaky_grad(LeakyReluBackwardBackward0, g, x, self.slope)


def _check_result_slope(slope):
    # PyTorch's leaky_relu_backward with is_result=true (the in-place forms save the result)
    if slope < 0:
        raise RuntimeError(
            "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. "
            "This is caused by calling in-place forward function with a negative slope, please call out-of-place "
            "version instead. File an issue at https://github.com/pytorch/pytorch if you do require supporting "
            "in-place leakRelu backward calculation with negative slope")


class LeakyReluBackward1(OpNode):
    """In-place leaky_relu_: the mask comes from the result."""
    def backward(self, g):
        (y,) = self.saved_tensors
        _check_result_slope(self.slope)
        return _leaky_grad(LeakyReluBackwardBackward0, g, y, self.slope)


def _leaky_forward(input, slope):
    xp = xp_for(input, slope)
    _float_input(input, "leaky_relu_cpu")
    x = input._data
    with np.errstate(invalid="ignore"):
        return xp.where(x > 0, x, x * slope).astype(x.dtype, copy=False)


def leaky_relu(input, negative_slope=0.01):
    """``x`` where ``x > 0``, else ``negative_slope * x``."""
    return _op(LeakyReluBackward0, input, _leaky_forward(input, negative_slope), slope=negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    """In-place ``leaky_relu`` (its backward uses the result: a negative slope is refused there)."""
    return apply_inplace(input, lambda t: _op(LeakyReluBackward1, t, _leaky_forward(t, negative_slope),
                                              saves="output", slope=negative_slope))


class ThresholdBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return masked_grad(g, ~(x._data <= self.threshold), x, "ThresholdBackwardBackward0")


ThresholdBackward1 = type("ThresholdBackward1", (ThresholdBackward0,), {})


_CTYPES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t"}


def _to_int_scalar(v, dt):
    """A Python number as PyTorch converts a Scalar to an integer dtype: truncated, range-checked."""
    info = np.iinfo(dt)
    if not info.min <= v <= info.max:
        raise RuntimeError(f"value cannot be converted to type {_CTYPES[dt.name]} without overflow")
    return int(v)


def _threshold(input, threshold, value, cls):
    xp = xp_for(input, value)
    x = input._data
    if x.dtype == np.bool_:
        raise NotImplementedError("\"threshold_cpu\" not implemented for 'Bool'")
    no_complex_kernel(x, "threshold_cpu")
    if x.dtype.kind in "iu":
        threshold, value = _to_int_scalar(threshold, x.dtype), _to_int_scalar(value, x.dtype)
    # PyTorch replaces where x <= threshold: NaN stays NaN
    r = xp.where(x <= threshold, xp.asarray(value).astype(x.dtype), x).astype(x.dtype, copy=False)
    return _op(cls, input, r, threshold=threshold)


def threshold(input, threshold, value):
    """``x`` where ``x > threshold``, else ``value``."""
    return _threshold(input, threshold, value, ThresholdBackward0)


class _NotImplementedNode(OpNode):
    def backward(self, gg):
        raise RuntimeError(f"derivative for aten::{self.op_name} is not implemented")


NotImplemented_ = type("NotImplemented", (_NotImplementedNode,), {"__module__": __name__})
# PyTorch's 1/6 here is a float constant, also for double tensors
_ONE_SIXTH = float(np.float32(1.0) / np.float32(6.0))


class HardsigmoidBackward0(OpNode):
    def backward(self, g):
        xp = xp_for(g)
        (x,) = self.saved_tensors
        xd, gd = x._data, g._data
        r = xp.where((xd > -3) & (xd < 3), gd * _ONE_SIXTH, 0).astype(gd.dtype, copy=False)
        # PyTorch has no derivative for hardsigmoid_backward: its node raises when reached
        return _grad_op(NotImplemented_, r, (g, x), op_name="hardsigmoid_backward")


def hardsigmoid(input):
    """``clamp(x + 3, 0, 6) / 6`` (no second derivative, as in PyTorch)."""
    xp = xp_for(input)
    _float_input(input, "hardsigmoid_cpu")
    x = input._data
    r = (xp.clip(x + 3, 0, 6) / 6).astype(x.dtype, copy=False)
    return _op(HardsigmoidBackward0, input, r)


def _hardswish_grad(g, x):
    xp = xp_for(g, x)
    gd, xd = g._data, x._data
    with np.errstate(invalid="ignore"):
        # PyTorch 2.13: 0 for x <= -3, the slope inside, g from x >= 3 on (and for NaN)
        r = xp.where(xd <= -3, 0, xp.where(xd < 3, gd * (xd / 3 + 0.5), gd))
    return _grad_op(HardswishBackwardBackward0, r.astype(gd.dtype, copy=False), (g, x))


class HardswishBackwardBackward0(OpNode):
    def backward(self, gg):
        g, x = self.saved_tensors
        xd = x._data
        dg = _hardswish_grad(gg, x) if _needs(self, 0) else None
        dx = None
        if _needs(self, 1):
            mid = finish(None, (xd > -3) & (xd < 3))
            dx = where(mid, gg * g / 3.0, zeros_grad(x))
        return dg, dx


class HardswishBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return _hardswish_grad(g, x)


def hardswish(input):
    """``x * clamp(x + 3, 0, 6) / 6``."""
    xp = xp_for(input)
    _float_input(input, "hardswish_cpu")
    x = input._data
    with np.errstate(invalid="ignore"):
        r = (x * xp.clip(x + 3, 0, 6) / 6).astype(x.dtype, copy=False)
    return _op(HardswishBackward0, input, r)


def _shrink_mask(xd, lambd):
    # PyTorch's shrink_backward zeroes where -lambd <= x <= lambd, so NaN passes the gradient
    return ~((xd >= -lambd) & (xd <= lambd))


class HardshrinkBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return masked_grad(g, _shrink_mask(x._data, self.lambd), x, "HardshrinkBackwardBackward0")


def hardshrink(input, lambd=0.5):
    """``x`` outside ``[-lambd, lambd]``, else 0."""
    xp = xp_for(input)
    _float_input(input, "hardshrink_cpu")
    x = input._data
    r = xp.where((x >= -lambd) & (x <= lambd), 0, x).astype(x.dtype, copy=False)
    return _op(HardshrinkBackward0, input, r, lambd=lambd)


class SoftshrinkBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return masked_grad(g, _shrink_mask(x._data, self.lambd), x, "SoftshrinkBackwardBackward0")


def softshrink(input, lambd=0.5):
    """``x -+ lambd`` outside ``[-lambd, lambd]``, else 0."""
    xp = xp_for(input)
    _float_input(input, "softshrink_check")
    hi = float(np.finfo(input._data.dtype).max)
    if not 0 <= lambd <= hi:
        raise RuntimeError(f"lambda must be in range [0, {hi:g}] for input dtype "
                           f"{_dtype_name(input._data.dtype)}, but found {lambd:g}")
    x = input._data
    # zero inside [-lambd, lambd]; NaN stays NaN
    r = xp.where((x >= -lambd) & (x <= lambd), 0, xp.where(x > 0, x - lambd, x + lambd)).astype(x.dtype, copy=False)
    return _op(SoftshrinkBackward0, input, r, lambd=lambd)


class PreluKernelBackwardBackward0(OpNode):
    """Double backward of prelu (derivatives.yaml's _prelu_kernel_backward: note its x >= 0)."""
    _materialize_grads = False  # an undefined incoming gradient changes the formula, as in PyTorch

    def _apply(self, grads):
        ggx, ggw = grads
        g, x, w = self.saved_tensors
        wb = w.reshape(self.wshape)
        pos = finish(None, x._data >= 0)
        ggw_b = ggw.reshape(self.wshape) if ggw is not None else None
        zx = zeros_grad(x)
        dg = dx = dw = None
        if _needs(self, 0):
            if ggx is not None:
                dg = where(pos, ggx, ggx * wb + ggw_b * x if ggw_b is not None else ggx * wb)
            elif ggw_b is not None:
                dg = where(pos, zx, ggw_b * x)
        if _needs(self, 1):
            dx = where(pos, zx, g * ggw_b) if ggw_b is not None else zx
        if _needs(self, 2):
            dw = _reduce_to_weight(where(pos, zx, g * ggx) if ggx is not None else zx, self.per_channel, w)
        return dg, dx, dw


def _reduce_to_weight(t, per_channel, w):
    dims = [d for d in range(t.ndim) if not (d == 1 and per_channel)]
    r = t.sum(dims) if dims else t
    return r.reshape(w.shape)


class PreluKernelBackward0(OpNode):
    def backward(self, g):
        xp = xp_for(g)
        x, w = self.saved_tensors
        xd, wd, gd = x._data, w._data, g._data
        wb = wd.reshape(self.wshape)
        pos = xd > 0
        with np.errstate(invalid="ignore"):
            gx = arr(xp.where(pos, gd, wb * gd).astype(gd.dtype, copy=False))
            contrib = xp.where(pos, 0, xd * gd).astype(gd.dtype, copy=False)
        dims = tuple(d for d in range(xd.ndim) if not (d == 1 and self.per_channel))
        gw = arr((contrib.sum(dims) if dims else contrib).reshape(wd.shape))
        node = node_for(PreluKernelBackwardBackward0, (g, x, w))
        if node is not None:
            node.wshape, node.per_channel = self.wshape, self.per_channel
            save(node, g, x, w)
        gx, gw = finish_multi(node, [gx, gw])
        return gx, gw


def prelu(input, weight):
    """``max(0, x) + weight * min(0, x)``; weight has one element or one per channel (dim 1)."""
    xp = xp_for(input, weight)
    x, w = input._data, weight._data
    if x.dtype != w.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {_dtype_name(x.dtype)} and "
                           f"{_dtype_name(w.dtype)}")
    n = w.size
    per_channel = n != 1
    if per_channel:
        if x.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        if x.ndim < 2 or x.shape[1] != n:
            ch = x.shape[1] if x.ndim >= 2 else 1
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{n} and channel size = {ch}.")
    if w.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {w.ndim}")
    _float_input(input, "prelu_cpu")
    if per_channel:
        wshape = (1, n) + (1,) * (x.ndim - 2)
    else:
        wshape = (1,) * x.ndim if x.ndim else ()
    if w.ndim != x.ndim:
        # PyTorch's composite: the weight reshaped (a view, ViewBackward0) to the input's rank,
        # its count along dim 1, before the kernel
        weight = weight.reshape((1, n) + (1,) * (x.ndim - 2) if x.ndim > 1 else (1,) * x.ndim)
    wb = w.reshape(wshape)
    with np.errstate(invalid="ignore"):
        r = xp.where(x > 0, x, wb * x).astype(x.dtype, copy=False)
    node = node_for(PreluKernelBackward0, (input, weight))
    if node is not None:
        node.wshape, node.per_channel = wshape, per_channel
        save(node, input, weight)
    return finish(node, arr(r))


class RreluWithNoiseBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        # evaluation: leaky_relu with the mean slope; training: the sampled slopes
        return _leaky_grad(RreluWithNoiseBackwardBackward0, g, x, self.slope, self.noise)


class RreluWithNoiseBackward1(OpNode):
    """In-place rrelu_: PyTorch saves the result (rrelu_with_noise_backward with is_result), so a
    later in-place write to it is an error, and in evaluation a negative mean slope raises as
    leaky_relu_'s does."""
    def backward(self, g):
        (y,) = self.saved_tensors
        if self.noise is None:
            _check_result_slope(self.slope)
        return _leaky_grad(RreluWithNoiseBackwardBackward0, g, y, self.slope, self.noise)


def _rrelu(input, lower, upper, training, cls):
    xp = xp_for(input)
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    x = input._data
    saves = "output" if cls is RreluWithNoiseBackward1 else "input"
    if not training:
        _float_input(input, "leaky_relu_cpu")
        slope = (lower + upper) / 2
        return _op(cls, input, xp.where(x > 0, x, x * slope).astype(x.dtype, copy=False), saves=saves, slope=slope,
                   noise=None)
    _float_input(input, "rrelu_with_noise_out_cpu")
    # random slopes where x <= 0 (PyTorch's convention), 1 elsewhere
    if xp is np:   # (PyTorch draws a 53-bit uniform for each such element only, in order)
        from .._creation import _engine
        from .._rng import fma
        neg = x <= 0
        lo, hi = float(x.dtype.type(lower)), float(x.dtype.type(upper))
        noise = np.ones(x.shape, x.dtype)
        noise[neg] = fma(_engine(None).unit53(int(np.count_nonzero(neg))), hi - lo, lo)
    else:
        noise = xp.where(x <= 0, lower + (upper - lower) * _uniform(x.shape, xp), 1).astype(x.dtype)
    with np.errstate(invalid="ignore"):
        return _op(cls, input, x * noise, saves=saves, slope=None, noise=noise)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: random slopes in training, their mean in evaluation."""
    if inplace:
        return rrelu_(input, lower, upper, training)
    return _rrelu(input, lower, upper, training, RreluWithNoiseBackward0)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place ``rrelu``."""
    return apply_inplace(input, _rrelu, lower, upper, training, RreluWithNoiseBackward1)


# *** ELU family ***

def _elu_grad(g, b, alpha, scale, input_scale, is_result):
    """PyTorch's elu_backward: ``b`` is the input (or the result, for the in-place forms)."""
    xp = xp_for(g, b, scale, input_scale, is_result)
    if is_result and alpha < 0:
        raise RuntimeError("In-place elu backward calculation is triggered with a negative slope which is not "
                           "supported. This is caused by calling in-place forward function with a negative slope, "
                           "please call out-of-place version instead.")
    gd, bd = g._data, b._data
    negcoef, nic = alpha * scale, input_scale
    with np.errstate(over="ignore", invalid="ignore"):
        if is_result:
            neg = gd * nic * (bd + negcoef)
        else:
            neg = gd * nic * negcoef * xp.exp(bd * nic)
        r = xp.where(bd <= 0, neg, gd * scale).astype(gd.dtype, copy=False)
    return _grad_op(EluBackwardBackward0, r, (g, b), alpha=alpha, scale=scale, input_scale=input_scale,
                    is_result=is_result)


class EluBackwardBackward0(OpNode):
    def backward(self, gg):
        g, b = self.saved_tensors
        a, s, i, res = self.alpha, self.scale, self.input_scale, self.is_result
        dg = _elu_grad(gg, b, a, s, i, res) if _needs(self, 0) else None
        db = None
        if _needs(self, 1):
            neg = _const(b._data < 0, b)
            scaled = gg * g * i
            db = (scaled if res else _elu_grad(scaled, b, a, s, i, False)) * neg
        return dg, db


class _EluBackward(OpNode):
    def backward(self, g):
        (b,) = self.saved_tensors
        return _elu_grad(g, b, self.alpha, self.scale, self.input_scale, self.is_result)


EluBackward0 = type("EluBackward0", (_EluBackward,), {"is_result": False})
CeluBackward0 = type("CeluBackward0", (_EluBackward,), {"is_result": False})
EluBackward1 = type("EluBackward1", (_EluBackward,), {"is_result": True})
CeluBackward1 = type("CeluBackward1", (_EluBackward,), {"is_result": True})


def _elu(input, alpha, scale, input_scale, bwd_input_scale, cls):
    xp = xp_for(input, scale, input_scale, bwd_input_scale)
    _float_input(input, "elu_cpu")
    x = input._data
    with np.errstate(over="ignore", invalid="ignore"):
        # zeros take the linear branch, so that they keep their sign as in torch (elu(-0.0) is -0.0
        # for any alpha)
        r = xp.where(x < 0, xp.expm1(xp.minimum(x, 0) * input_scale) * (alpha * scale), x * scale)
    return _op(cls, input, r.astype(x.dtype, copy=False), saves="output" if cls.is_result else "input",
               alpha=alpha, scale=scale, input_scale=bwd_input_scale)


def _elu_inplace(input, alpha, scale, input_scale, bwd_input_scale, cls):
    return apply_inplace(input, _elu, alpha, scale, input_scale, bwd_input_scale, cls)


def elu(input, alpha=1.0):
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    return _elu(input, alpha, 1.0, 1.0, 1.0, EluBackward0)


def elu_(input, alpha=1.0):
    """In-place ``elu`` (its backward uses the result)."""
    return _elu_inplace(input, alpha, 1.0, 1.0, 1.0, EluBackward1)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input):
    """Scaled ELU with the self-normalizing constants."""
    return _elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0, 1.0, EluBackward0)


def _check_celu(alpha):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")


def _celu_scale(alpha):
    # the forward divides in double; derivatives.yaml's backward uses 1.0 / alpha.toFloat()
    return 1.0 / alpha, 1.0 / float(np.float32(alpha))


def celu(input, alpha=1.0):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    _check_celu(alpha)
    return _elu(input, alpha, 1.0, *_celu_scale(alpha), CeluBackward0)


# *** smooth ***

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_K = math.sqrt(2.0 / math.pi)
_KAPPA = 0.044715


def _gelu_erf_exp(x):
    """(erf(x / sqrt 2), exp(-x*x/2)); float32: in float32 arithmetic, erf's exp(-z*z) being
    that same exp, as the compiled kernels compute them (the same bits)."""
    t = x * x * -0.5
    if x.dtype == np.float32:
        e = _exp_neg_f32(t)
        return _erf_f32(x * _SQRT1_2, e), e
    return _erf_raw(x * _SQRT1_2), xp_for(x).exp(t)


def _gelu_exact(x):
    if x.dtype == np.float32:
        return x * 0.5 * (1 + _gelu_erf_exp(x)[0])
    return x * 0.5 * (1 + _erf_raw(x * _SQRT1_2))


def _gelu_grad_exact(g, x):
    erf, e = _gelu_erf_exp(x)
    cdf = 0.5 * (1 + erf)
    return g * (cdf + x * (_INV_SQRT_2PI * e))


def _gelu_grad(g, x, approximate, dydx=None):
    xp = xp_for(g, x)
    gd, xd = _opmath(g._data), _opmath(x._data)
    with np.errstate(over="ignore", invalid="ignore"):
        if dydx is not None and dydx.shape == xd.shape == gd.shape and dydx.dtype == xd.dtype == gd.dtype:
            r = gd * dydx       # the forward's cdf + x * pdf (an expanded g broadcasts as it is)
        elif approximate == "tanh":
            x_sq = xd * xd
            t = xp.tanh(_K * (xd + _KAPPA * x_sq * xd))
            left_d = 0.5 * (1 + t)
            right_d = 0.5 * xd * (1 - t * t) * (_K * (1 + 3 * _KAPPA * x_sq))
            r = gd * (left_d + right_d)
        else:
            k = _accel.usable(xd, gd)
            r = _accel.gelu_backward(k, gd, xd) if k is not None else _blockwise(_gelu_grad_exact, gd, xd)
    return _grad_op(GeluBackwardBackward0, r.astype(g._data.dtype, copy=False), (g, x), approximate=approximate)


class GeluBackwardBackward0(OpNode):
    def backward(self, gg):
        g, x = self.saved_tensors
        dg = _gelu_grad(gg, x, self.approximate) if _needs(self, 0) else None
        dx = None
        if _needs(self, 1):  # PyTorch's gelu_double_backward
            if self.approximate == "tanh":
                inner = (x + x * x * x * _KAPPA) * _K
                t = tanh(inner)
                f = x * 0.5
                sech2 = 1 - t * t
                h = (x * x * (3 * _KAPPA) + 1) * _K
                f_prime_gh = sech2 * h * 0.5
                g_prime_fh = f * h * (sech2 * t * -2) * h
                h_prime_fg = f * sech2 * (x * (6 * _KAPPA * _K))
                dx = gg * g * (f_prime_gh * 2 + g_prime_fh + h_prime_fg)
            else:
                x_sq = x * x
                pdf = exp(x_sq * -0.5) * _INV_SQRT_2PI
                dx = gg * g * (pdf * 2 - x_sq * pdf)
        return dg, dx


class GeluBackward0(OpNode):
    dydx = None     # exact GELU's derivative cdf + x * pdf, kept by the compiled forward

    def backward(self, g):
        (x,) = self.saved_tensors
        return _gelu_grad(g, x, self.approximate, self.dydx)

    def _release(self):
        self.dydx = None
        super()._release()


def gelu(input, approximate="none"):
    """Gaussian error linear unit, exact (erf) or ``approximate='tanh'``."""
    xp = xp_for(input)
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    _float_input(input, "GeluKernelImpl")
    x = _opmath(input._data)
    dydx = None
    with np.errstate(over="ignore", invalid="ignore"):
        if approximate == "tanh":
            r = 0.5 * x * (1 + xp.tanh(_K * (x + _KAPPA * x * x * x)))
        else:
            k = _accel.usable(x)
            if k is None:
                r = _blockwise(_gelu_exact, x)
            elif input._requires_grad and _state.grad and x is input._data and _accel_nn.kernels() is not None:
                # a backward may follow: keep the derivative it needs (erf, the costly part, once)
                r, dydx = _accel_nn.gelu_keep_grad(_accel_nn.kernels(), x)
            else:
                r = _accel.gelu(k, x)
    out = _op(GeluBackward0, input, r.astype(input._data.dtype, copy=False), approximate=approximate)
    if dydx is not None and out.grad_fn is not None:
        out.grad_fn.dydx = dydx
    return out


class SiluBackward0(OpNode):
    def backward(self, g):
        xp = xp_for(g)
        (x,) = self.saved_tensors
        if x._data.dtype.kind == "V" and not _state.grad:
            # PyTorch's fused silu_backward kernel (no graph wanted): float32, rounded once
            xd, gd = x._data.astype(np.float32), g._data.astype(np.float32)
            with np.errstate(over="ignore"):
                s = 1 / (1 + xp.exp(-xd))
            return Tensor._make((gd * s * (1 + xd * (1 - s))).astype(x._data.dtype))
        s = sigmoid(x)
        # PyTorch's infinitely_differentiable_silu_backward, same association
        return g * s * (x * (1 - s) + 1)


def silu(input):
    """``x * sigmoid(x)``."""
    xp = xp_for(input)
    _float_input(input, "silu_cpu", complex_ok=True)
    x = _opmath(input._data)
    with np.errstate(over="ignore", invalid="ignore"):
        r = x / (1 + xp.exp(-x))
    return _op(SiluBackward0, input, r.astype(input._data.dtype, copy=False))


def _softplus_np(x, beta=1.0, thr=20.0):
    xp = xp_for(x, thr)
    bx = x * beta
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return xp.where(bx > thr, x, xp.log1p(xp.exp(bx)) / beta).astype(x.dtype, copy=False)


class MishBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        # PyTorch's infinitely_differentiable_mish_backward
        s = sigmoid(x)
        t = tanh(log1p(exp(x)))
        return g * (t + x * s * (1 - t * t))


def mish(input):
    """``x * tanh(softplus(x))``."""
    xp = xp_for(input)
    _float_input(input, "mish_cpu")
    x = _opmath(input._data)
    with np.errstate(over="ignore", invalid="ignore"):
        r = x * xp.tanh(xp.log1p(xp.exp(x)))
    return _op(MishBackward0, input, r.astype(input._data.dtype, copy=False))


def _softplus_grad(g, x, beta, threshold):
    xp = xp_for(g, x)
    gd, xd = g._data, x._data
    bx = xd * beta
    with np.errstate(over="ignore", invalid="ignore"):
        z = xp.exp(bx)
        r = xp.where(bx > threshold, gd, gd * z / (z + 1)).astype(gd.dtype, copy=False)
    return _grad_op(SoftplusBackwardBackward0, r, (g, x), beta=beta, threshold=threshold)


class SoftplusBackwardBackward0(OpNode):
    def backward(self, gg):
        g, x = self.saved_tensors
        beta, thr = self.beta, self.threshold
        dg = _softplus_grad(gg, x, beta, thr) if _needs(self, 0) else None
        dx = None
        if _needs(self, 1):  # softplus_double_backward: zero from the threshold on (x * beta >= threshold)
            xb = x * beta
            z = sigmoid(xb)
            dx = (gg * g) * (1 - z) * z * _const(xb._data < thr, x) * beta
        return dg, dx


class SoftplusBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return _softplus_grad(g, x, self.beta, self.threshold)


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""
    _float_input(input, "softplus_cpu")
    return _op(SoftplusBackward0, input, _softplus_np(input._data, beta, threshold), beta=beta, threshold=threshold)


def _logsigmoid_grad(g, x):
    xp = xp_for(g, x)
    gd, xd = g._data, x._data
    with np.errstate(over="ignore", invalid="ignore"):
        buf = xp.exp(-xp.abs(xd))
        neg = xd < 0
        r = (xp.where(neg, 1, 0) - xp.where(neg, 1, -1) * (buf / (1 + buf))) * gd
    return _grad_op(LogSigmoidBackwardBackward0, r.astype(gd.dtype, copy=False), (g, x))


class LogSigmoidBackwardBackward0(OpNode):
    def backward(self, gg):
        g, x = self.saved_tensors
        dg = _logsigmoid_grad(gg, x) if _needs(self, 0) else None
        dx = None
        if _needs(self, 1):
            z = sigmoid(x)
            dx = gg * g * (z - 1) * z
        return dg, dx


class LogSigmoidBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return _logsigmoid_grad(g, x)


def logsigmoid(input):
    """``log(sigmoid(x))``, computed stably."""
    xp = xp_for(input)
    _float_input(input, "log_sigmoid_cpu")
    x = input._data
    with np.errstate(over="ignore", invalid="ignore"):
        r = xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))
    return _op(LogSigmoidBackward0, input, r.astype(x.dtype, copy=False))


def softsign(input):
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """``x - tanh(x)``."""
    return input - tanh(input)


def _glu_grad(g, x, dim):
    xp = xp_for(g, x)
    xd, gd = x._data, g._data
    a, b = xp.split(xd, 2, axis=dim)
    with np.errstate(over="ignore", invalid="ignore"):
        sb = _sigmoid_np(b)
        r = xp.concatenate([gd * sb, (1 - sb) * sb * a * gd], axis=dim).astype(xd.dtype, copy=False)
    return _grad_op(GluBackwardBackward0, r, (g, x), dim=dim)


class GluBackwardBackward0(OpNode):
    def backward(self, gg):
        g, x = self.saved_tensors
        d = self.dim
        a, b = x.chunk(2, d)
        gga, ggb = gg.chunk(2, d)
        s = sigmoid(b)
        ds = s * (1 - s)
        dg = gga * s + ggb * a * ds if _needs(self, 0) else None
        dx = None
        if _needs(self, 1):
            from .shape import cat
            dss = ds * (1 - s) - s * ds
            dx = cat([ggb * g * ds, ggb * a * g * dss + gga * g * ds], d)
        return dg, dx


class GluBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return _glu_grad(g, x, self.dim)


def glu(input, dim=-1):
    """``a * sigmoid(b)`` where ``a, b`` are the two halves of ``input`` along ``dim``."""
    xp = xp_for(input)
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, x.ndim)
    if x.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {x.shape[d]}")
    _float_input(input, "glu_cpu")
    a, b = xp.split(x, 2, axis=d)
    with np.errstate(over="ignore", invalid="ignore"):
        r = a * (1 / (1 + xp.exp(-b)))
    return _op(GluBackward0, input, r.astype(x.dtype, copy=False), dim=d)


# *** softmax ***

def _opmath(a):
    """bfloat16 arrays as float32, PyTorch's compute type for them (rounded once at the end)."""
    return a.astype(np.float32) if a.dtype.kind == "V" else a


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
                  "dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _axis(d, ndim):
    return d if ndim else None


def _rows_kernel(dim, *arrays):
    """The compiled row kernels of _accel_nn when they take this softmax: over the last axis
    of a large host float32/float64 array (C-contiguous: the first array), else None."""
    a = arrays[0]
    if a.ndim == 0 or dim != a.ndim - 1 or not a.flags.c_contiguous or any(b.shape != a.shape for b in arrays[1:]):
        return None
    return _accel_nn.usable(*arrays)


def _softmax_grad(g, y, dim):
    gd, yd = _opmath(g._data), _opmath(y._data)
    k = _rows_kernel(dim, yd, gd)
    with np.errstate(invalid="ignore", over="ignore"):
        if k is not None:
            r = _accel_nn.softmax_last_backward(k, gd, yd, False)
        else:
            r = yd * (gd - (gd * yd).sum(axis=_axis(dim, yd.ndim), keepdims=True))
    return _grad_op(SoftmaxBackwardDataBackward0, r.astype(y._data.dtype, copy=False), (g, y), dim=dim)


class SoftmaxBackwardDataBackward0(OpNode):
    def backward(self, gg):
        g, y = self.saved_tensors
        d = self.dim
        dg = _softmax_grad(gg, y, d) if _needs(self, 0) else None
        dy = None
        if _needs(self, 1):  # PyTorch's softmax_double_backward
            dy = g * gg - (y * g).sum(d, keepdim=True) * gg - g * (y * gg).sum(d, keepdim=True)
        return dg, dy


class SoftmaxBackward0(OpNode):
    def backward(self, g):
        (y,) = self.saved_tensors
        return _softmax_grad(g, y, self.dim)


def _log_softmax_grad(g, y, dim):
    xp = xp_for(g, y)
    gd, yd = _opmath(g._data), _opmath(y._data)
    k = _rows_kernel(dim, yd, gd)
    with np.errstate(invalid="ignore", over="ignore"):
        if k is not None:
            r = _accel_nn.softmax_last_backward(k, gd, yd, True)
        else:
            r = gd - xp.exp(yd) * gd.sum(axis=_axis(dim, yd.ndim), keepdims=True)
    return _grad_op(LogSoftmaxBackwardDataBackward0, r.astype(y._data.dtype, copy=False), (g, y), dim=dim)


class LogSoftmaxBackwardDataBackward0(OpNode):
    def backward(self, gg):
        g, y = self.saved_tensors
        d = self.dim
        dg = gg - (gg * exp(y)).sum(d, keepdim=True) if _needs(self, 0) else None
        dy = -g.sum(d, keepdim=True) * exp(y) * gg if _needs(self, 1) else None
        return dg, dy


class LogSoftmaxBackward0(OpNode):
    def backward(self, g):
        (y,) = self.saved_tensors
        return _log_softmax_grad(g, y, self.dim)


def _prep_softmax(input, dim, dtype, kernel):
    x = input._data
    if dtype is not None:
        input = input._to(D.to_dtype(dtype))
        x = input._data
    elif x.dtype.kind not in "fcV":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype_name(x.dtype)}\'')
    d = wrap_dim(dim, x.ndim)
    if x.dtype.kind == "c":     # the kernel's name says whether dim is the last one
        no_complex_kernel(x, kernel if d == x.ndim - 1 or x.ndim == 0 else kernel.replace("_lastdim", ""))
    return input, x, d


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``."""
    xp = xp_for(input, _stacklevel)
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    input, x, d = _prep_softmax(input, dim, dtype, "softmax_lastdim_kernel_impl")
    xs = _opmath(x.reshape(1) if x.ndim == 0 else x)   # a 0-d input is one element along its dim (NaN for +-inf, nan)
    k = _rows_kernel(d, xs) if x.ndim else None
    if k is not None:
        r = _accel_nn.softmax_last(k, xs, False)
        return _op(SoftmaxBackward0, input, r.astype(x.dtype, copy=False), saves="output", dim=d)
    m = xs.max(axis=d, keepdims=True) if xs.size else 0
    with np.errstate(invalid="ignore", over="ignore"):
        e = xp.exp(xs - m)
        r = (e / e.sum(axis=d, keepdims=True)).reshape(x.shape)
    return _op(SoftmaxBackward0, input, r.astype(x.dtype, copy=False), saves="output", dim=d)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``x - logsumexp(x)`` along ``dim``."""
    xp = xp_for(input, _stacklevel)
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    input, x, d = _prep_softmax(input, dim, dtype, "log_softmax_lastdim_kernel_impl")
    xs = _opmath(x.reshape(1) if x.ndim == 0 else x)
    k = _rows_kernel(d, xs) if x.ndim else None
    if k is not None:
        r = _accel_nn.softmax_last(k, xs, True)
        return _op(LogSoftmaxBackward0, input, r.astype(x.dtype, copy=False), saves="output", dim=d)
    m = xs.max(axis=d, keepdims=True) if xs.size else 0
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        z = xs - m
        r = (z - xp.log(xp.exp(z).sum(axis=d, keepdims=True))).reshape(x.shape)
    return _op(LogSoftmaxBackward0, input, r.astype(x.dtype, copy=False), saves="output", dim=d)


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


def _uniform(shape, xp):
    """Uniform [0, 1) draws: the default generator's on the host, the device's own generator
    (torch.cuda.manual_seed's) for a device (a host draw would be a copy per call)."""
    if xp is np:
        from .._creation import _engine
        return _engine(None).unit53(math.prod(shape)).reshape(shape)
    return xp.random.random(shape)


def _keep(shape, p, xp):
    """Which units dropout keeps: PyTorch's ``bernoulli_(1 - p)`` on the host (a 53-bit
    uniform below 1 - p), the device generator's draws for a device."""
    if xp is np:
        return _uniform(shape, xp) < 1.0 - p
    return xp.random.random(shape) >= p


def _dropout_mask(shape, p, dtype, xp=np):
    if p == 1.0:
        return xp.zeros(shape, dtype)
    keep = _keep(shape, p, xp).astype(dtype)
    return keep / dtype.type(1.0 - p)    # (PyTorch divides the noise in the input's dtype)


def _masked(input, mask, inplace):
    m = finish(None, mask)
    if inplace:
        return apply_inplace(input, lambda t: t * m)
    return input * m


def dropout(input, p=0.5, train=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (when ``train``)."""
    _check_p(p)
    if not train or p == 0.0 or input._data.size == 0:
        return input
    return _masked(input, _dropout_mask(input._data.shape, p, input._data.dtype, xp_for(input)), inplace)


def feature_dropout(input, p=0.5, train=True, inplace=False, batched=True):
    """Zero whole channels (dim 1; dim 0 when not ``batched``) with probability ``p``."""
    _check_p(p)
    if not train or p == 0.0 or input._data.size == 0:
        return input
    shape = input._data.shape
    if p < 1.0 and len(shape) < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    k = 2 if batched else 1
    mshape = shape[:k] + (1,) * (len(shape) - k)
    return _masked(input, _dropout_mask(mshape, p, input._data.dtype, xp_for(input)), inplace)


_SELU_ALPHA_PRIME = 1.7580993408473766   # -selu's negative saturation value


def _alpha_dropout(input, p, train, inplace, feature):
    """PyTorch's alpha dropout: dropped units go to SELU's saturation value, and an affine
    correction keeps the mean and variance (``x * a*keep + b``)."""
    xp = xp_for(input, p)
    _check_p(p)
    x = input._data
    if p == 0 or not train or x.size == 0:
        return input
    if p == 1:   # no noise is drawn, so no dimension check either (PyTorch's order)
        zero = finish(None, xp.zeros((), x.dtype))
        return apply_inplace(input, lambda t: t * zero) if inplace else input * zero
    if feature and x.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = x.shape[:2] + (1,) * (x.ndim - 2) if feature else x.shape
    keep = _keep(shape, p, xp).astype(x.dtype)
    a = 1.0 / math.sqrt((_SELU_ALPHA_PRIME ** 2 * p + 1) * (1 - p))
    bias = finish(None, ((keep - 1) * (_SELU_ALPHA_PRIME * a) + _SELU_ALPHA_PRIME * a * p).astype(x.dtype))
    m = finish(None, (keep * a).astype(x.dtype))
    if inplace:
        return apply_inplace(input, lambda t: t * m + bias)
    return input * m + bias


def alpha_dropout(input, p=0.5, train=False, inplace=False):
    """Alpha dropout of single elements (training only)."""
    return _alpha_dropout(input, p, train, inplace, False)


def feature_alpha_dropout(input, p=0.5, train=False, inplace=False):
    """Alpha dropout of whole channels (dim 1; training only)."""
    return _alpha_dropout(input, p, train, inplace, True)


def dropout_(input, p=0.5, train=True):
    """In-place ``dropout``."""
    return dropout(input, p, train, True)


def feature_dropout_(input, p=0.5, train=True):
    """In-place ``feature_dropout``."""
    return feature_dropout(input, p, train, True)


def selu_(input):
    """In-place ``selu``."""
    return _elu_inplace(input, _SELU_ALPHA, _SELU_SCALE, 1.0, 1.0, EluBackward1)


def celu_(input, alpha=1.0):
    """In-place ``celu``."""
    _check_celu(alpha)
    return _elu_inplace(input, alpha, 1.0, *_celu_scale(alpha), CeluBackward1)


def threshold_(input, threshold, value):
    """In-place ``threshold``."""
    return apply_inplace(input, _threshold, threshold, value, ThresholdBackward1)


def _tensor_softmax(self, dim, dtype=None):
    return softmax(self, dim, dtype=dtype)


def _tensor_log_softmax(self, dim, dtype=None):
    return log_softmax(self, dim, dtype=dtype)


TENSOR_METHODS = {"softmax": _tensor_softmax, "log_softmax": _tensor_log_softmax, "hardshrink": hardshrink,
                  "prelu": prelu}
INPLACE = {}
