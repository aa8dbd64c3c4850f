"""Normalization: batch norm (training statistics with running-average updates, or the
running statistics in evaluation), layer norm, group norm and instance norm.

Forward runs on arrays, with PyTorch's ``rstd = 1 / sqrt(var + eps)`` (finite at zero
variance). The backward re-derives the statistics with tensor ops and applies the
closed-form gradient in the shape of PyTorch's kernels (sums of the incoming gradient
first), so it is differentiable again and meets non-finite gradients as they do.
"""
import numpy as np

from ._base import xp_for, check_same_device
from ._base import OpNode, node_for, save, finish, arr, _dtype_name, _state, joint_grads
from .unary import rsqrt
from . import _accel_nn
from .special import shifted

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm"]
TENSOR_METHODS = {}
INPLACE = {}


def _check_dtypes(input, params, kernel, mixed_first=True):
    """PyTorch's CPU checks. The inputs are "mixed" when the first given parameter's dtype is
    not the input's; mixed parameters must all be float32, and then the input a 16-bit float
    (float16/bfloat16: PyTorch's mixed-precision kernels, computed in float32, the result of
    the input's dtype). A non-floating input has no kernel: layer and group norm check mixing
    first, batch norm (``mixed_first=False``) its kernel's dtype first."""
    dt = input._data.dtype
    for p in params:
        if p is not None:
            check_same_device(input, p)
    ps = [p._data.dtype for p in params if p is not None]
    if dt.kind not in "fV" and not (mixed_first and ps and ps[0] != dt):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype_name(dt)}\'')
    if any(p != dt for p in ps) and not (_half(dt) and all(p == np.float32 for p in ps)):
        if any(p != np.float32 for p in ps):
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def _half(dt):
    return dt == np.float16 or (dt.kind == "V" and dt.itemsize == 2)


def _opmath(x):
    """16-bit floats are computed in float32 (PyTorch's opmath), rounded once at the end."""
    return x.astype(np.float32) if _half(x.dtype) else x


def _opmath_t(t):
    """A 16-bit float tensor as float32 (a backward computes there; the engine rounds each
    gradient to its input's dtype)."""
    return t.float() if t is not None and _half(t._data.dtype) else t


def _memory_dense(x):
    """PyTorch's batch-norm test for its kernels: contiguous or channels-last contiguous."""
    return x.flags.c_contiguous or (x.ndim == 4 and x.transpose(0, 2, 3, 1).flags.c_contiguous)


def _rstd(var, eps):
    xp = xp_for(var)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / xp.sqrt(var + eps)


def _moments(x, axis):
    """Mean and biased variance over ``axis`` (arrays with no elements there give NaN)."""
    xp = xp_for(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        n = 1
        for a in axis:
            n *= x.shape[a]
        if n == 0:
            shape = tuple(1 if i in axis else s for i, s in enumerate(x.shape))
            nan = xp.full(shape, np.nan, x.dtype)
            return nan, nan
        mean = x.mean(axis=axis, keepdims=True)
        xc = x - mean
        return mean, (xc * xc).mean(axis=axis, keepdims=True)


def _stats(x, dims, eps):
    """Mean, centred input and rstd over ``dims`` as tensor ops (differentiable). Sums are
    scaled by 1/n, so that rows with no elements give empty gradients rather than errors
    (and, as in PyTorch, a NaN mean). Returns (mean, xc, rstd, 1/n)."""
    n = 1
    for d in dims:
        n *= x.shape[d]
    inv_n = 1.0 / n if n else float("nan")
    mean = x.sum(dims, keepdim=True) * inv_n
    xc = x - mean
    return mean, xc, rsqrt((xc * xc).sum(dims, keepdim=True) * inv_n + eps), inv_n


# --- batch norm ----------------------------------------------------------------------

_BN_FAST = (np.dtype(np.float32), np.dtype(np.float64))

def _bn_moments(x):
    """Per-channel mean and biased variance of a contiguous (N, C, ...) float array: two
    compiled passes per channel summing in float64 (as PyTorch's kernels do) where numba is
    present, else NumPy's mean and the variance as a dot product per row (no squared copy)."""
    n, c = x.shape[0], x.shape[1]
    x3 = x.reshape(n, c, -1)
    kern = _bn_kernels(x3)
    if kern is not None:
        mean, var = np.empty(c), np.empty(c)
        kern.bn_stats(x3, mean, var)
        return mean, var
    m = n * x3.shape[2]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        mean = x3.mean(axis=(0, 2))
        xc = x3 - mean.reshape(1, c, 1)
        return mean, _chan_dot(xc, xc) / x.dtype.type(m)


def _chan_dot(a, b):
    """Per-channel sum of ``a * b`` over (N, C, M) arrays: a dot product per (sample,
    channel) row in BLAS (no product array), then the sum over samples."""
    if a.shape[2] < 16:
        return (a * b).sum((0, 2))
    return np.matmul(a[:, :, None, :], b[:, :, :, None]).reshape(a.shape[:2]).sum(0)


def _bn_kernels(a, *rest):
    """The compiled kernels for batch norm's fused elementwise passes over the contiguous
    (N, C, M) ``a`` and per-channel or same-shape ``rest`` (one dtype), or None."""
    from .conv import _conv_kernels
    if not a.flags.c_contiguous or any(r.dtype != a.dtype or not r.flags.c_contiguous for r in rest):
        return None
    return _conv_kernels(a)


class NativeBatchNormBackward0(OpNode):
    mean = invstd = None      # the forward's batch statistics (c,), kept in training mode

    def backward(self, g):
        x, w = self.saved_tensors
        g, x = _opmath_t(g), _opmath_t(x)
        nf = self.next_functions
        if not _state.grad and type(x._data) is np.ndarray and type(g._data) is np.ndarray \
                and x._data.dtype in _BN_FAST and g._data.dtype == x._data.dtype \
                and (w is None or w._data.dtype == x._data.dtype) and (self.mean is not None or not self.training):
            return self._backward_arrays(x._data, None if w is None else w._data, g._data, nf)
        want_w = len(nf) > 1 and nf[1][0] is not None
        want_b = len(nf) > 2 and nf[2][0] is not None
        c = x.shape[1]
        bshape = (1, c) + (1,) * (x.ndim - 2)
        dims = self.dims
        wb = w.reshape(bshape) if w is not None else None
        if self.training:
            _, xc, invstd, inv_n = _stats(x, dims, self.eps)
        else:
            xc = x - finish(None, self.rm.reshape(bshape))
            invstd = finish(None, _rstd(self.rv, self.eps).astype(x._data.dtype).reshape(bshape))
        # PyTorch's batch_norm_backward: per-channel sum(g) and dot(x - mean, g)
        s = g.sum(dims, keepdim=True)
        dotp = (xc * g).sum(dims, keepdim=True)
        gx = None
        if nf[0][0] is not None:
            scale = invstd * wb if wb is not None else invstd
            if self.training:
                gx = (g - s * inv_n - xc * (dotp * invstd * invstd * inv_n)) * scale
            else:
                gx = g * scale
        gw = (dotp * invstd).reshape((c,)) if want_w else None
        gb = s.reshape((c,)) if want_b else None
        return joint_grads("NativeBatchNormBackwardBackward0", (gx, gw, gb), (g, x, w))

    def _backward_arrays(self, x, w, g, nf):
        # the same formula on arrays, with the forward's statistics, when the backward is not
        # itself recorded: a few fused passes instead of a dozen tensor ops
        n, c = x.shape[0], x.shape[1]
        x3 = x.reshape(n, c, -1)
        g3 = g.reshape(n, c, -1)
        dt = x.dtype
        if self.training:
            mean, invstd = self.mean, self.invstd
        else:
            mean = self.rm
            invstd = _rstd(self.rv, self.eps).astype(dt)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            kern = _bn_kernels(g3, x3, mean)
            if kern is not None:     # both sums in one pass, in float64, no centred copy
                s, dotp = np.empty(c), np.empty(c)
                kern.bn_grad_sums(g3, x3, mean, s, dotp)
                xc = None
            else:
                xc = np.subtract(x3, mean.reshape(1, c, 1), dtype=dt)
                s = g3.sum((0, 2))
                dotp = _chan_dot(xc, g3)
            gx = None
            if nf[0][0] is not None:
                scale = invstd * w if w is not None else invstd
                if self.training:
                    m = x3.shape[0] * x3.shape[2]
                    inv_n = dt.type(1.0 / m if m else float("nan"))
                    k = (dotp * invstd * invstd * inv_n).astype(dt, copy=False)
                    sinv = (s * inv_n).astype(dt, copy=False)
                    scale = scale.astype(dt, copy=False)
                    if xc is None:     # the four passes below in one, x centred on the fly
                        gx = np.empty(g3.shape, dt)
                        kern.bn_backward_x(g3, x3, mean, sinv, k, scale, gx)
                    else:
                        gx = np.subtract(g3, sinv.reshape(1, c, 1))
                        np.multiply(xc, k.reshape(1, c, 1), out=xc)
                        gx -= xc
                        gx *= scale.reshape(1, c, 1)
                else:
                    gx = g3 * scale.reshape(1, c, 1)
                gx = finish(None, gx.reshape(x.shape))
            want_w = len(nf) > 1 and nf[1][0] is not None
            want_b = len(nf) > 2 and nf[2][0] is not None
            gw = finish(None, (dotp * invstd).astype(dt, copy=False)) if want_w else None
            gb = finish(None, s.astype(dt, copy=False)) if want_b else None
        return gx, gw, gb


def _scale_shift(x, mean, rstd, weight, bias, bshape):
    """``x * scale + shift`` per channel, with ``scale = rstd * weight`` and ``shift = bias -
    mean * scale``: PyTorch's batch/group norm kernels' form (and so their NaN/inf patterns)."""
    with np.errstate(invalid="ignore", over="ignore"):
        scale = rstd * weight._data if weight is not None else rstd
        shift = -mean * scale
        if bias is not None:
            shift = shift + bias._data
        return x * scale.reshape(bshape) + shift.reshape(bshape)


def _batch_norm_empty(input, weight, bias):
    # PyTorch's batch_norm on an input with no elements: a clone, scaled and shifted by the
    # first weight and bias (no statistics, no running-average update).
    out = input.clone()
    if weight is not None:
        out = out * weight[0]
    if bias is not None:
        out = out + bias[0]
    return out


def _batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                eps=1e-5):
    """Normalize over every dim but the channel dim (1); update the running stats when training."""
    x = input._data
    if x.size == 0:
        return _batch_norm_empty(input, weight, bias)
    c = x.shape[1] if x.ndim > 1 else 0
    for name, t, need in (("running_mean", running_mean, True), ("running_var", running_var, True),
                          ("weight", weight, False), ("bias", bias, False)):
        if t is not None:
            if t._data.size != c:
                raise RuntimeError(f"{name} should contain {c} elements not {t._data.size}")
        elif need and not training:
            raise RuntimeError(f"{name} must be defined in evaluation mode")
    if x.ndim < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if training and (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    params = (weight, bias, running_mean, running_var)
    first = next((p for p in params if p is not None), None)
    if (training and x.dtype.kind not in "fV" and not _memory_dense(x)
            and (first is None or first._data.dtype == x.dtype)):
        # PyTorch computes a strided input's batch statistics with at::mean, which rejects it
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {_dtype_name(x.dtype)}")
    _check_dtypes(input, params, "batch_norm", mixed_first=False)
    out_dt = x.dtype
    x = _opmath(x)
    dims = (0,) + tuple(range(2, x.ndim))
    bshape = (1, c) + (1,) * (x.ndim - 2)
    if training:
        n = x.size // c
        if type(x) is np.ndarray and x.dtype in _BN_FAST and x.flags.c_contiguous:
            mean, var = _bn_moments(x)
        else:
            mean, var = _moments(x, dims)
            mean, var = mean.reshape(c), var.reshape(c)
        # PyTorch's kernel updates the running statistics in place without a version bump
        if running_mean is not None:
            rm = running_mean._data
            if _half(rm.dtype):     # one float32 update, rounded once
                rm[...] = (1 - momentum) * rm.astype(np.float32) + momentum * mean
            else:
                rm *= (1 - momentum)
                rm += momentum * mean.astype(rm.dtype)
        if running_var is not None:
            rv = running_var._data
            with np.errstate(divide="ignore", invalid="ignore"):
                if _half(rv.dtype):
                    rv[...] = (1 - momentum) * rv.astype(np.float32) + momentum * (var * n / (n - 1))
                else:
                    rv *= (1 - momentum)
                    rv += momentum * (var * n / (n - 1)).astype(rv.dtype)
        invstd = _rstd(var, eps)
        if mean.dtype != x.dtype:      # (the compiled statistics are float64)
            mean, invstd = mean.astype(x.dtype), invstd.astype(x.dtype)
        if _half(out_dt) and (first is None or first._data.dtype == out_dt):
            # not mixed: PyTorch keeps the batch statistics in the input's dtype
            mean, invstd = (a.astype(out_dt).astype(np.float32) for a in (mean, invstd))
        rm_used = rv_used = None
    else:
        rm_used = _opmath(running_mean._data).astype(x.dtype).copy()
        rv_used = _opmath(running_var._data).astype(x.dtype).copy()
        mean, invstd = rm_used, _rstd(rv_used, eps)
    if type(x) is np.ndarray and x.flags.c_contiguous and x.dtype in _BN_FAST \
            and (weight is None or weight._data.dtype == x.dtype):
        # _scale_shift's operations, the sum in place
        with np.errstate(invalid="ignore", over="ignore"):
            scale = invstd * weight._data if weight is not None else invstd
            shift = -mean * scale
            if bias is not None:
                shift = shift + bias._data
            x3 = x.reshape(x.shape[0], c, -1)
            kern = _bn_kernels(x3, scale, shift)
            if kern is not None:     # the two passes below in one
                y = np.empty(x.shape, x.dtype)
                kern.bn_affine(x3, scale, shift, y.reshape(x3.shape))
            else:
                y = x * scale.reshape(bshape)
                y += shift.reshape(bshape)
    elif x.flags.c_contiguous:
        y = _scale_shift(x, mean, invstd, weight, bias, bshape)
    else:   # PyTorch's kernel for strided input: ((x - mean) * invstd) * weight + bias
        with np.errstate(invalid="ignore", over="ignore"):
            y = (x - mean.reshape(bshape)) * invstd.reshape(bshape)
            if weight is not None:
                y = y * weight._data.reshape(bshape)
            if bias is not None:
                y = y + bias._data.reshape(bshape)
    node = node_for(NativeBatchNormBackward0, (input, weight, bias))
    if node is not None:
        node.dims, node.eps, node.training, node.rm, node.rv = dims, eps, training, rm_used, rv_used
        if training:
            node.mean, node.invstd = mean, invstd
        save(node, input, weight)
    return finish(node, arr(y.astype(out_dt, copy=False)))


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled=True):
    """PyTorch's top-level ``torch.batch_norm`` (argument order of the native op)."""
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                  cudnn_enabled=True):
    """PyTorch's ``torch.instance_norm``: batch norm of the input seen as (1, N*C, ...),
    with the per-channel parameters and running statistics repeated N times."""
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    ref = weight if weight is not None else input
    if running_mean is not None and running_var is None and running_mean._data.dtype != ref._data.dtype:
        # measured on torch 2.13: with the running mean alone, of another dtype than the weight
        # (the input when there is none), it reaches the undefined running variance before
        # batch norm's "both or neither" check
        raise RuntimeError("Expected a proper Tensor but got None (or an undefined Tensor in C++) for argument #0 "
                           "'self'")
    shape = tuple(input.shape)
    b, c = shape[0], shape[1]
    rep = (lambda t: t.repeat(b) if t is not None else None)
    rm, rv = rep(running_mean), rep(running_var)
    out = _batch_norm(input.contiguous().view((1, b * c) + shape[2:]), rm, rv, rep(weight), rep(bias),
                      use_input_stats, momentum, eps)
    if use_input_stats:   # the repeated statistics were updated: average them back
        from ..autograd import grad_mode
        with grad_mode.no_grad():
            for stat, rs in ((running_mean, rm), (running_var, rv)):
                if stat is not None:
                    stat.copy_(rs.view((b, c)).mean(0))
    return out.view(shape)


# --- layer norm ----------------------------------------------------------------------

class NativeLayerNormBackward0(OpNode):
    mean = rstd = None      # the forward's row statistics (keepdims), for the array backward

    def backward(self, g):
        x, w, _ = self.saved_tensors      # (the bias: for its version check, as PyTorch saves it)
        nf = self.next_functions
        if not _state.grad and self.mean is not None and type(x._data) is np.ndarray \
                and type(g._data) is np.ndarray and x._data.dtype in _BN_FAST and g._data.dtype == x._data.dtype \
                and (w is None or w._data.dtype == x._data.dtype):
            return self._backward_arrays(x._data, None if w is None else w._data, g._data, nf)
        g, x = _opmath_t(g), _opmath_t(x)
        dims = self.dims
        want_w = len(nf) > 1 and nf[1][0] is not None
        want_b = len(nf) > 2 and nf[2][0] is not None
        mean, xc, rstd, inv_n = _stats(x, dims, self.eps)
        xhat = xc * rstd
        gx = None
        if nf[0][0] is not None:
            # PyTorch's kernel: dx = rstd * gh + b * x + c with b = (db * mean - ds) * rstd^3 / N,
            # c = -b * mean - db * rstd / N, ds = sum(gh * x), db = sum(gh); written in this
            # form, a non-finite gh, x or weight spreads through a row exactly as there
            gh = g * w if w is not None else g
            ds, db = (gh * x).sum(dims, keepdim=True), gh.sum(dims, keepdim=True)
            b = (db * mean - ds) * (rstd * rstd * rstd) * inv_n
            gx = rstd * gh + b * x + (-b * mean - db * rstd * inv_n)
        lead = tuple(range(x.ndim - len(dims)))
        gw = ((g * xhat).sum(lead) if lead else g * xhat) if want_w else None
        gb = (g.sum(lead) if lead else g.clone()) if want_b else None
        return joint_grads("NativeLayerNormBackwardBackward0", (gx, gw, gb), (g, x, w))

    def _backward_arrays(self, x, w, g, nf):
        # the same formula on arrays with the forward's statistics (as PyTorch's kernel), when
        # the backward is not itself recorded: one scratch buffer, products written in place
        dims = self.dims
        lead = tuple(range(x.ndim - len(dims)))
        mean, rstd = self.mean, self.rstd
        n = 1
        for d in dims:
            n *= x.shape[d]
        inv_n = 1.0 / n
        want_w = len(nf) > 1 and nf[1][0] is not None
        want_b = len(nf) > 2 and nf[2][0] is not None
        k = _accel_nn.usable(x, g, w)
        if k is not None:
            gx, gw, gb = _accel_nn.layer_norm_backward(k, x, g, w, mean, rstd, n, nf[0][0] is not None,
                                                         want_w or want_b)
            return (finish(None, gx) if gx is not None else None,
                    finish(None, gw.reshape(x.shape[x.ndim - len(dims):])) if want_w else None,
                    finish(None, gb.reshape(x.shape[x.ndim - len(dims):])) if want_b else None)
        gx = gw = gb = None
        tmp = None
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            if nf[0][0] is not None:
                gh = g * w if w is not None else g
                tmp = np.multiply(gh, x)
                ds = tmp.sum(dims, keepdims=True)
                db = gh.sum(dims, keepdims=True)
                b = (db * mean - ds) * (rstd * rstd * rstd) * inv_n
                c = -b * mean - db * rstd * inv_n
                if gh is g:
                    gx = g * rstd
                else:
                    gx = np.multiply(gh, rstd, out=gh)
                np.multiply(x, b, out=tmp)
                gx += tmp
                gx += c
                gx = finish(None, gx)
            if want_w:
                xhat = np.subtract(x, mean, out=tmp) if tmp is not None else x - mean
                xhat *= rstd
                np.multiply(g, xhat, out=xhat)
                gw = finish(None, xhat.sum(lead) if lead else xhat)
            if want_b:
                gb = finish(None, g.sum(lead) if lead else g.copy())
        return gx, gw, gb


def _int_sequence(v, fname, arg, pos):
    """``v`` as a tuple of ints, or PyTorch's argument-parsing TypeError."""
    if not isinstance(v, (tuple, list)):
        raise TypeError(f"{fname}(): argument '{arg}' (position {pos}) must be tuple of ints, not {type(v).__name__}")
    for k, e in enumerate(v):
        if not isinstance(e, (int, np.integer)) or isinstance(e, bool):
            raise TypeError(f"{fname}(): argument '{arg}' (position {pos}) must be tuple of ints, but found element "
                            f"of type {type(e).__name__} at pos {k}")
    return tuple(int(e) for e in v)


def _check_normalized_shape(input, normalized_shape, params, sep, fname):
    """PyTorch's layer/rms norm argument checks; the trailing dims as a tuple."""
    ns = _int_sequence(normalized_shape, fname, "normalized_shape", 2)
    x = input._data
    k = len(ns)
    if k == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    for name, t in params:
        if t is not None and tuple(t._data.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t._data.shape)} and normalized_shape = {list(ns)}")
    if x.ndim < k or x.shape[x.ndim - k:] != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*{sep}"
                           f"{', '.join(map(str, ns))}], but got input of size{list(x.shape)}")
    return ns


def _layer_norm_arrays(x, dims, w, b, eps):
    """Layer norm of a float32/float64 host array with parameters of its dtype: (y, mean,
    rstd), the statistics kept for the backward. The compiled kernel where it runs, else
    _moments and the scale and shift with the centred input computed once and the products
    written in place (the same operations as the general path, so the same bits)."""
    k = _accel_nn.usable(x, w, b)
    if k is not None:
        return _accel_nn.layer_norm(k, x, len(dims), w, b, eps)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        mean = x.mean(axis=dims, keepdims=True)
        y = x - mean
        sq = y * y
        rstd = _rstd(sq.mean(axis=dims, keepdims=True), eps)
        del sq
        y *= rstd
        if w is not None:
            y *= w
        if b is not None:
            y += b
    return y, mean, rstd


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """Normalize over the trailing ``normalized_shape`` dims, then scale and shift."""
    ns = _check_normalized_shape(input, normalized_shape, (("weight", weight), ("bias", bias)), ", ", "layer_norm")
    x = input._data
    k = len(ns)
    _check_dtypes(input, (weight, bias), "LayerNormKernelImpl")
    dims = tuple(range(x.ndim - k, x.ndim))
    f32 = np.float32 if _half(x.dtype) else None  # float16/bfloat16: computed in float32, rounded once
    xs = x if f32 is None else x.astype(f32)
    wd = None if weight is None else weight._data
    bd = None if bias is None else bias._data
    mean = rstd = None
    if x.size and type(xs) is np.ndarray and xs.dtype in _BN_FAST \
            and all(p is None or p.dtype == xs.dtype for p in (wd, bd)):
        y, mean, rstd = _layer_norm_arrays(xs, dims, wd, bd, eps)
    else:
        if x.size:
            mean, var = _moments(xs, dims)
            y = (xs - mean) * _rstd(var, eps)
            mean = None
        else:
            y = xs.copy()
        if weight is not None:
            y = y * (wd if f32 is None else wd.astype(f32))
        if bias is not None:
            y = y + (bd if f32 is None else bd.astype(f32))
    node = node_for(NativeLayerNormBackward0, (input, weight, bias))
    if node is not None:
        node.dims, node.eps = dims, eps
        if mean is not None:
            node.mean, node.rstd = mean, rstd
        save(node, input, weight, bias)
    return finish(node, arr(y.astype(x.dtype, copy=False)))


# --- group norm ----------------------------------------------------------------------

class NativeGroupNormBackward0(OpNode):
    def backward(self, g):
        x, w = self.saved_tensors
        g, x = _opmath_t(g), _opmath_t(x)
        nf = self.next_functions
        want_w = len(nf) > 1 and nf[1][0] is not None
        want_b = len(nf) > 2 and nf[2][0] is not None
        shape = tuple(x.shape)
        n, c = shape[0], shape[1]
        pdims = [0] + list(range(2, len(shape)))
        G = self.groups
        d = x.numel() // (n * G) if n * G else 0
        bshape = (1, c) + (1,) * (len(shape) - 2)
        mean, xc, rstd, inv_n = _stats(x.reshape((n, G, d)), (2,), self.eps)
        # PyTorch's kernel: per (sample, channel) ds = sum(g * x), db = sum(g) over the spatial
        # dims, weighted by the channel's weight and summed over the group; then
        # dx = rstd * w * g + c2 * x + c3 with c2 = (db * mean - ds) * rstd^3 / n and
        # c3 = -c2 * mean - db * rstd / n. Written in this form, non-finite values spread
        # through a group exactly as there.
        sp = tuple(range(2, len(shape)))
        ds = (g * x).sum(sp) if sp else g * x
        db = g.sum(sp) if sp else g
        cg = c // G if G else 0
        gx = None
        if nf[0][0] is not None:
            dsw, dbw = (ds * w, db * w) if w is not None else (ds, db)
            ds_g = dsw.reshape((n, G, cg)).sum(2, keepdim=True)
            db_g = dbw.reshape((n, G, cg)).sum(2, keepdim=True)
            c2 = (db_g * mean - ds_g) * (rstd * rstd * rstd) * inv_n
            c3 = -c2 * mean - db_g * rstd * inv_n
            c1 = rstd.reshape((n, G, 1)).expand((n, G, cg)).reshape((n, c) + (1,) * len(sp))
            if w is not None:
                c1 = c1 * w.reshape(bshape)
            gx = (c1 * g).reshape((n, G, d)) + c2 * x.reshape((n, G, d)) + c3
            gx = gx.reshape(shape)
        gw = None
        if want_w:
            # PyTorch's per-channel form sum_n (sum(g*x) - sum(g)*mean) * rstd: a group with
            # no elements has a NaN mean, hence a NaN weight gradient
            gw = ((ds.reshape((n, G, cg)) - db.reshape((n, G, cg)) * mean) * rstd).sum(0).reshape((c,))
        gb = g.sum(pdims) if want_b else None
        return gx, gw, gb


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    """Normalize over groups of channels (and all spatial positions) per sample."""
    xp = xp_for(input, num_groups, weight, bias, cudnn_enabled)
    x = input._data
    if x.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {x.ndim}")
    n, c = x.shape[:2]
    if not isinstance(num_groups, (int, np.integer)) or isinstance(num_groups, bool):
        raise TypeError(f"group_norm(): argument 'num_groups' (position 2) must be int, not "
                        f"{type(num_groups).__name__}")
    if num_groups <= 0:
        raise RuntimeError(f"Expected num groups to be greater than 0, got {num_groups}")
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(x.shape)} and num_groups={num_groups}")
    # PyTorch's bias message shows the weight's shape (an undefined tensor's is [0])
    wshape = list(weight._data.shape) if weight is not None else [0]
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t._data.ndim != 1 or t._data.size != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, but "
                               f"got {name} of shape {wshape} and input of shape {list(x.shape)}")
    _check_dtypes(input, (weight, bias), "GroupNormKernelImpl")
    out_dt = x.dtype
    x = _opmath(x)
    if x.size:
        # per (sample, channel) scale and shift from the group statistics, as PyTorch's kernel
        mean, var = _moments(x.reshape(n, num_groups, -1), (2,))
        cg = c // num_groups
        mean_c = xp.repeat(mean.reshape(n, num_groups), cg, axis=1)
        rstd_c = xp.repeat(_rstd(var, eps).reshape(n, num_groups), cg, axis=1)
        y = _scale_shift(x, mean_c, rstd_c, weight, bias, (n, c) + (1,) * (x.ndim - 2))
    else:
        y = x.copy()
    node = node_for(NativeGroupNormBackward0, (input, weight, bias))
    if node is not None:
        node.groups, node.eps = num_groups, eps
        save(node, input, weight)
    return finish(node, arr(y.astype(out_dt, copy=False)))


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x**2) + eps)`` over the trailing dims, times ``weight`` (PyTorch's
    composite: its gradients are those of the tensor ops; ``eps`` defaults to the dtype's)."""
    ns = _check_normalized_shape(input, normalized_shape, (("weight", weight),), "", "rms_norm")
    dt = input._data.dtype
    if dt.kind not in "fcV":
        raise NotImplementedError(f'"rms_norm" not implemented for \'{_dtype_name(dt)}\'')
    half = _half(dt)
    # float16/bfloat16: PyTorch's composite upcasts to float32 (eps then float32's), applies
    # the weight there and casts the result back to the input's dtype
    e = float(np.finfo(np.float32 if half else dt).eps) if eps is None else eps
    dims = tuple(range(input.ndim - len(ns), input.ndim))
    x = input.float() if half else input
    # (PyTorch's composite: pow, mean, add_ of eps (AddBackward1), rsqrt, mul)
    out = x * rsqrt(shifted(x.pow(2).mean(dims, keepdim=True), e))
    if weight is not None:
        out = out * weight
    if half:
        out = out.to(input.dtype)
    # PyTorch returns a contiguous result (a permuted input's result is cloned)
    return out.contiguous()
