"""Losses: nll / cross-entropy (class indices or probabilities, weights, ignore_index,
label smoothing, any number of spatial dims), MSE, L1, smooth L1, Huber, binary
cross-entropy (plain and with logits), KL divergence, and the margin/embedding losses;
plus the distances they use (pairwise distance, cosine similarity, normalize).

The dedicated kernels (NllLossBackward0, MseLossBackward0, ...) run on arrays; their
backward is itself an op (PyTorch's <loss>_backward) whose own derivatives are PyTorch's
double-backward formulas, written with tensor ops. The composite losses are built from
tensor ops in PyTorch's order, so their grad_fn and edge-case values are PyTorch's too.
"""
import warnings

import numpy as np

from ._base import check_devices
from ._base import xp_for
from ._base import OpNode, node_for, save, finish, Size, arr
from .unary import exp, sigmoid, sqrt
from .index import where
from .activation import log_softmax, logsigmoid
from ..autograd import grad_mode as _grad_mode
from .special import shifted, number_minus, scaled

__all__ = ["cosine_similarity", "pairwise_distance"]
TENSOR_METHODS = {}
INPLACE = {}

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def legacy_reduction(size_average, reduce, reduction):
    """The reduction named by the deprecated ``size_average``/``reduce`` flags."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='{}' instead.".format(
        "none" if reduce is False else ("mean" if size_average is not False else "sum")), stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduce_t(t, reduction):
    if reduction == "mean":
        return t.mean()
    if reduction == "sum":
        return t.sum()
    return t


def _reduce_np(a, reduction):
    xp = xp_for(a)
    acc = np.float32 if a.dtype.kind == "V" else None  # bfloat16 accumulates in float32
    if reduction == "mean":
        with np.errstate(invalid="ignore"):
            return xp.asarray(a.mean(dtype=acc) if a.size else np.nan, a.dtype)
    if reduction == "sum":
        return xp.asarray(a.sum(dtype=acc), a.dtype)
    return arr(a)


def _const(a, dtype):
    xp = xp_for(a)
    return finish(None, xp.asarray(a, dtype=dtype))


_grad_state = _grad_mode._state

_TN = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
       "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


# *** nll / cross entropy ***

class _NllBackward(OpNode):
    def backward(self, g):
        x, target, w = self.saved_tensors
        return _nll_backward(g, x, target, w, self.reduction, self.ignore_index, self.total_weight,
                             self.double_cls)


NllLossBackward0 = type("NllLossBackward0", (_NllBackward,), {})
NllLoss2DBackward0 = type("NllLoss2DBackward0", (_NllBackward,), {})


class _NllDoubleBackward(OpNode):
    """The input gradient is linear in the incoming gradient: its derivative w.r.t. that
    gradient is nll_loss itself (PyTorch's formula); w.r.t. the log-probabilities, zero."""

    def backward(self, gg):
        xp = xp_for(gg)
        nf = self.next_functions
        dg = dx = None
        if nf[0][0] is not None:
            dg = nll_loss(gg, self.target, self.weight, self.ignore_index, self.reduction)
            if tuple(dg.shape) != self.g_shape:
                dg = dg.reshape(self.g_shape)
        if nf[1][0] is not None:
            dx = _const(xp.zeros(self.x_shape), gg._data.dtype)
        return dg, dx


NllLossBackwardBackward0 = type("NllLossBackwardBackward0", (_NllDoubleBackward,), {})
NllLoss2DBackwardBackward0 = type("NllLoss2DBackwardBackward0", (_NllDoubleBackward,), {})


def _valid_targets(t, ignore_index):
    """(row indices, their targets, None) of the targets that are not ignored; on a device
    (row indices, targets, keep mask) of every row, an ignored one pointing at class 0 and
    masked out by the caller (picking the valid rows would size a result by data: a sync)."""
    xp = xp_for(t)
    tf = t.reshape(-1)
    if tf.dtype != np.int64:
        tf = tf.astype(np.int64)
    valid = tf != ignore_index
    if xp is not np:
        return xp.arange(tf.shape[0]), xp.where(valid, tf, 0), valid
    if valid.all():
        return xp.arange(tf.shape[0]), tf, None
    idx = xp.nonzero(valid)[0]
    return idx, tf[idx], None


def _nll_backward(g, x, target, weight, reduction, ignore_index, total_weight, cls):
    """zeros(input) with -w[t] * g (/ total weight) at each non-ignored (sample, target);
    ignored positions are never written, so they stay 0 whatever g holds."""
    xp = xp_for(g, x, target, weight, total_weight)
    gd = g._data
    xs = x._data.shape
    t = target._data
    idx, tv, keep = _valid_targets(t, ignore_index)
    with np.errstate(invalid="ignore", divide="ignore"):
        if reduction == "none":
            gv = gd.reshape(-1)
            gv = gv if idx.shape[0] == gv.shape[0] else gv[idx]
        else:
            gv = gd.reshape(())
            if reduction == "mean":
                gv = gv / total_weight
        val = -gv
        if weight is not None:
            val = val * weight._data[tv]
        if keep is not None:
            val = xp.where(keep, val, val.dtype.type(0))
    gx = xp.zeros((t.size, xs[1] if len(xs) > 1 else xs[0]), gd.dtype)
    gx[idx, tv] = val
    node = node_for(cls, (g, x))
    if node is not None:
        node.target, node.weight, node.ignore_index, node.reduction = target, weight, ignore_index, reduction
        node.g_shape, node.x_shape = tuple(gd.shape), xs
    return finish(node, _from_rows(gx, xs))


def _to_rows(x):
    """(N, C, *d) -> (N*prod(d), C); (C,) -> (1, C)."""
    xp = xp_for(x)
    if x.ndim == 1:
        return x[None]
    if x.ndim == 2:
        return x
    c = x.shape[1]
    return xp.moveaxis(x, 1, -1).reshape(-1, c)


def _from_rows(r, shape):
    xp = xp_for(r, shape)
    if len(shape) == 1:
        return r[0]
    if len(shape) == 2:
        return r
    c = shape[1]
    return xp.ascontiguousarray(xp.moveaxis(r.reshape((shape[0],) + tuple(shape[2:]) + (c,)), -1, 1))


def _check_target(input, target, weight):
    """nll_loss_nd's checks, in PyTorch's order and words."""
    x, t = input._data, target._data
    if x.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {x.ndim})")
    tb = t.shape[0] if t.ndim else 0
    if x.ndim != 1 and x.shape[0] != tb:
        raise ValueError(f"Expected input batch_size ({x.shape[0]}) to match target batch_size ({tb}).")
    if x.ndim == 1 and t.ndim == 1 and t.shape[0] != 1:
        raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {t.shape[0]}")
    if x.ndim <= 2:
        if t.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    elif x.ndim == 4:
        if t.ndim != 3:
            raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of "
                               f"dimension: {t.ndim}")
        if t.shape[1:] != x.shape[2:]:
            raise RuntimeError(f"size mismatch (got input: {list(x.shape)} , target: {list(t.shape)}")
    elif t.shape[1:] != x.shape[2:]:
        raise RuntimeError(f"Expected target size {list(x.shape[:1] + x.shape[2:])}, got {list(t.shape)}")
    if t.dtype != np.int64 and t.dtype != np.uint8:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_TN.get(t.dtype.name, t.dtype.name)}")
    c = x.shape[1] if x.ndim >= 2 else x.shape[0]
    if weight is not None:
        w = weight._data
        if w.ndim != 1 or w.shape[0] != c:
            raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                               f"weight tensor of shape: {list(w.shape)}")
    kernel = "nll_loss2d_forward" if x.ndim >= 3 else "nll_loss_forward"
    if x.dtype.kind not in "fV":
        raise NotImplementedError(f'"{kernel[:-8]}{"_forward_out_frame" if x.ndim >= 3 else "_out_frame"}" not '
                                  f"implemented for '{_TN.get(x.dtype.name, x.dtype.name)}'")
    if weight is not None:
        if weight._data.dtype != x.dtype:
            raise RuntimeError(f"expected scalar type {_TN[x.dtype.name]} but found "
                               f"{_TN.get(weight._data.dtype.name, weight._data.dtype.name)}")
        _no_grad_weight(kernel, weight=weight)
    return c


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """Negative log likelihood of the target classes (class dim 1, or 0 for 1-D input)."""
    check_devices(input, target, weight)
    xp = xp_for(input, target, weight)
    _reduction(reduction)
    c = _check_target(input, target, weight)
    x, t = input._data, target._data
    if (x.ndim == 3 or x.ndim > 4) and c:
        # PyTorch's nll_loss_nd: the 4-D kernel on the input reshaped to (N, C, 1, -1) (a view,
        # ViewBackward0, in its graph), its unreduced result viewed back
        n, L = x.shape[0], int(np.prod(x.shape[2:]))
        r = nll_loss(input.reshape(n, c, 1, L), target.reshape(n, 1, L), weight, ignore_index, reduction)
        return r.view(t.shape) if reduction == "none" else r
    rows = _to_rows(x)
    idx, tv, keep = _valid_targets(t, ignore_index)
    if tv.size and keep is None:   # (a device checks its targets in its kernel, as CUDA's assert)
        bad = (tv < 0) | (tv >= c)
        if bad.any():
            raise IndexError(f"Target {int(tv[xp.argmax(bad)])} is out of bounds.")
    # ignored positions are left out, never multiplied (an infinite input there must not leak)
    picked = rows[idx, tv]
    if weight is not None:
        wv = weight._data[tv]
        if keep is not None:
            wv = xp.where(keep, wv, wv.dtype.type(0))
        lv = -(picked * wv)
        total = xp.asarray(wv.sum(), x.dtype)
    else:
        lv = -picked
        total = xp.asarray(idx.shape[0] if keep is None else keep.sum(), x.dtype)
    if keep is not None:
        lv = xp.where(keep, lv, lv.dtype.type(0))
    if reduction == "none":
        if idx.shape[0] == t.size:
            r = lv.reshape(t.shape if x.ndim > 1 else ())
        else:
            r = xp.zeros(t.size, x.dtype)
            r[idx] = lv
            r = r.reshape(t.shape if x.ndim > 1 else ())
    elif reduction == "sum":
        r = xp.asarray(lv.sum(), x.dtype)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            r = xp.asarray(lv.sum() / total, x.dtype)
    double = NllLoss2DBackwardBackward0 if x.ndim >= 3 else NllLossBackwardBackward0
    cls = NllLoss2DBackward0 if x.ndim >= 3 else NllLossBackward0
    node = node_for(cls, (input,))
    if node is not None:
        node.reduction, node.ignore_index, node.total_weight, node.double_cls = reduction, ignore_index, total, double
        save(node, input, target, weight)
    if reduction == "none" and (x.ndim == 3 or x.ndim > 4):
        # PyTorch runs these through the 4-D kernel and views its (N, 1, -1) result back
        return finish(node, r.reshape(x.shape[0], 1, int(np.prod(x.shape[2:])))).view(r.shape)
    return finish(node, arr(r))


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """``nll_loss(log_softmax(input, class_dim), target)``; or, for a target of class
    probabilities (same shape as input), ``-sum(target * log_softmax(input))``."""
    check_devices(input, target, weight)
    _reduction(reduction)
    x, t = input._data, target._data
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if x.ndim == 1 else 1
    c = x.shape[class_dim] if x.ndim else 1
    wshape = [1] * x.ndim
    if x.ndim:
        wshape[class_dim] = c
    if x.shape == t.shape:
        if t.dtype.kind not in "fV":
            raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                               f"{_TN.get(t.dtype.name, t.dtype.name)}")
        if weight is not None and (weight._data.ndim != 1 or weight._data.shape[0] != c):
            raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {c} classes or no "
                               f"classes but got weight tensor of shape: {list(weight._data.shape)}")
        lp = log_softmax(input, class_dim)
        tgt = target
        if label_smoothing > 0:
            tgt = shifted(scaled(target, 1 - label_smoothing), label_smoothing / c)
        prod = lp * tgt
        if weight is not None:
            prod = prod * (weight.reshape(wshape) if x.ndim > 1 else weight)
        if reduction == "mean":
            if x.size == 0:
                return -prod.sum().fill_(float("nan"))
            return scaled(-prod.sum(), x.size // c, divide=True)
        if reduction == "sum":
            return -prod.sum()
        return -prod.sum(class_dim)
    if t.dtype.kind in "fV" and x.shape != t.shape and t.ndim == x.ndim:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported" if x.ndim <= 2 else
                           f"Expected target size {list(x.shape[:1] + x.shape[2:])}, got {list(t.shape)}")
    lp = log_softmax(input, class_dim)
    nll = nll_loss(lp, target, weight, ignore_index, reduction)
    if label_smoothing <= 0:
        return nll
    ignore = t == ignore_index
    if weight is not None:
        smooth = -(lp * weight.reshape(wshape)).sum(class_dim)
    else:
        smooth = -lp.sum(class_dim)
    smooth = smooth.masked_fill(_const(ignore, np.bool_), 0.0)
    if reduction == "mean":
        if weight is not None:
            denom = _const(weight._data[t[~ignore].reshape(-1)].sum(), weight._data.dtype)
        else:
            denom = _const((~ignore).sum(), np.int64)
        ret = smooth.sum() / denom
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return scaled(nll, 1 - label_smoothing) + scaled(ret, label_smoothing / c)


# *** regression losses ***

def _size_warning(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({Size(target.shape)}) that is different to the input size "
                      f"({Size(input.shape)}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)


def _expanded(input, target):
    """``torch.broadcast_tensors(input, target)`` (the tensors themselves when shapes agree)."""
    if tuple(input.shape) == tuple(target.shape):
        return input, target
    from .shape import broadcast_tensors
    return broadcast_tensors(input, target)


class _PointwiseLossBackward(OpNode):
    """Loss = reduce(f(x - y)). Its gradients come from the loss's own backward kernel, an op
    of (g, x, y) with PyTorch's double-backward formulas; input and target get separately
    computed gradients, as PyTorch's two backward calls (second derivatives are summed, not
    factored: inf - inf stays nan)."""

    def backward(self, g):
        x, y = self.saved_tensors
        nf = self.next_functions
        k, red = self.kernel, self.reduction
        gx = _pointwise_backward(k, g, x, y, red) if nf[0][0] is not None else None
        gy = None
        if nf[1][0] is not None:
            gy = _pointwise_backward(k, g, y, x, red) if k.swap_target else -_pointwise_backward(k, g, x, y, red)
        return gx, gy


class _PointwiseBackwardBackward(OpNode):
    def backward(self, gg):
        xp = xp_for(gg)
        g, x, y = self.saved_tensors
        nf = self.next_functions
        k, red, n = self.kernel, self.reduction, x._data.size
        dg = dx = dy = None
        if nf[0][0] is not None:
            if red == "none":
                dg = _pointwise_backward(k, gg, x, y, red)
            else:
                ones = _const(xp.ones(g._data.shape), g._data.dtype)
                dg = (_pointwise_backward(k, ones, x, y, red) * gg).sum()
        if nf[1][0] is not None:
            dx = k.second(gg * g, x._data - y._data, red, n)
        if nf[2][0] is not None:
            dy = -k.second(gg * g, x._data - y._data, red, n)
        return dg, dx, dy


class _Kernel:
    swap_target = False

    def __init__(self, name, **params):
        self.node = type(name, (_PointwiseBackwardBackward,), {"__module__": __name__})
        self.__dict__.update(params)

    def _scale(self, t, red, n):
        return scaled(t, n, divide=True) if red == "mean" else t


class _Mse(_Kernel):
    swap_target = True      # mse_loss_backward(grad, target, self)

    def value(self, gd, d, norm):
        return d * (2 * norm) * gd

    def second(self, ggg, d, red, n):
        return self._scale(ggg * 2, red, n)


class _Huber(_Kernel):
    def value(self, gd, d, norm):
        xp = xp_for(gd, d, norm)
        de = self.delta
        return xp.where(d < -de, -norm * gd * de, xp.where(d > de, norm * gd * de, norm * d * gd))

    def second(self, ggg, d, red, n):
        # multiplied by the mask, as PyTorch's huber_loss_double_backward (an inf there gives nan)
        xp = xp_for(ggg, d, red, n)
        return self._scale(ggg * _const(xp.abs(d) < self.delta, ggg._data.dtype), red, n)


class _SmoothL1(_Kernel):
    def value(self, gd, d, norm):
        xp = xp_for(gd, d, norm)
        b = self.beta
        return xp.where(d <= -b, -norm * gd, xp.where(d >= b, norm * gd, norm * d * gd / b))

    def second(self, ggg, d, red, n):
        xp = xp_for(ggg, d, red, n)
        return self._scale(ggg * _const(xp.abs(d) < self.beta, ggg._data.dtype) / self.beta, red, n)


def _pointwise_backward(k, g, x, y, reduction):
    """The loss kernel's input gradient (PyTorch's <loss>_backward), recorded as its own op."""
    xp = xp_for(k, g, x, y)
    xd, yd, gd = x._data, y._data, g._data
    n = xd.size
    norm = (1.0 / n if n else float("inf")) if reduction == "mean" else 1.0
    with np.errstate(invalid="ignore", over="ignore"):
        r = k.value(gd, xd - yd, norm)
    node = node_for(k.node, (g, x, y))
    if node is not None:
        node.kernel, node.reduction = k, reduction
        save(node, g, x, y)
    return finish(node, arr(xp.asarray(r, np.result_type(xd.dtype, yd.dtype))))


def _float_kernel(name, input, target):
    from ._base import result_np_dtype
    dt = result_np_dtype(input, target)
    if dt.kind in "iubc":
        from ._base import _dtype_name
        raise NotImplementedError(f'"{name}" not implemented for \'{_dtype_name(dt)}\'')


MseLossBackward0 = type("MseLossBackward0", (_PointwiseLossBackward,), {})
SmoothL1LossBackward0 = type("SmoothL1LossBackward0", (_PointwiseLossBackward,), {})
HuberLossBackward0 = type("HuberLossBackward0", (_PointwiseLossBackward,), {})
_MSE = _Mse("MseLossBackwardBackward0")


def _pointwise(cls, kernel, input, target, reduction, fn):
    check_devices(input, target)
    xp = xp_for(input, target, fn)
    _reduction(reduction)
    input, target = _expanded(input, target)
    x, y = input._data, target._data
    dt = np.result_type(x.dtype, y.dtype) if x.dtype != y.dtype else x.dtype
    with np.errstate(invalid="ignore", over="ignore"):
        d = x.astype(dt, copy=False) - y.astype(dt, copy=False)
        if dt.kind == "V":  # bfloat16: the difference rounded, the loss kernel in float32 (PyTorch's)
            d = d.astype(np.float32)
        r = _reduce_np(arr(xp.asarray(fn(d), dt)), reduction)
    node = node_for(cls, (input, target))
    if node is not None:
        node.kernel, node.reduction = kernel, reduction
        save(node, input, target)
    return finish(node, r)


def _weighted(elementwise, weight, input, reduction, mean_by_weight):
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = elementwise * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight.sum() if mean_by_weight else loss.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def mse_loss(input, target, reduction="mean", weight=None):
    """Mean squared error."""
    _size_warning(input, target)
    if weight is not None:
        ei, et = _expanded(input, target)
        return _weighted((ei - et) ** 2, weight, input, reduction, True)
    _float_kernel("mse_cpu", input, target)
    return _pointwise(MseLossBackward0, _MSE, input, target, reduction, lambda d: d * d)


def l1_loss(input, target, reduction="mean", weight=None):
    """Mean absolute error."""
    _size_warning(input, target)
    ei, et = _expanded(input, target)
    if weight is not None:
        return _weighted((ei - et).abs(), weight, input, reduction, True)
    return _reduce_t((ei - et).abs(), _reduction(reduction))


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """Quadratic below ``beta``, linear above."""
    xp = xp_for(input, target)
    _size_warning(input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        ei, et = _expanded(input, target)
        return _reduce_t((ei - et).abs(), _reduction(reduction))
    _float_kernel("smooth_l1_cpu", input, target)
    return _pointwise(SmoothL1LossBackward0, _SmoothL1("SmoothL1LossBackwardBackward0", beta=beta), input, target,
                      reduction, lambda d: xp.where(xp.abs(d) < beta, 0.5 * d * d / beta, xp.abs(d) - 0.5 * beta))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Quadratic below ``delta``, ``delta``-scaled linear above."""
    _size_warning(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _float_kernel("huber_cpu", input, target)

    def fn(d):
        xp = xp_for(d)
        return xp.where(xp.abs(d) < delta, 0.5 * d * d, delta * (xp.abs(d) - 0.5 * delta))
    kernel = _Huber("HuberLossBackwardBackward0", delta=delta)
    if weight is not None:
        _reduction(reduction)
        return _weighted(_pointwise(HuberLossBackward0, kernel, input, target, "none", fn), weight, input,
                         reduction, False)
    return _pointwise(HuberLossBackward0, kernel, input, target, reduction, fn)


# *** binary cross entropy ***

def _check_out_shape(input, *others):
    """The loss is computed in place into an input-shaped buffer: nothing may broadcast it larger."""
    shape = tuple(input.shape)
    full = np.broadcast_shapes(shape, *(tuple(o.shape) for o in others if o is not None))
    if full != shape:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape {list(full)}")


def _no_grad_weight(fn, **tensors):
    if _grad_state.grad:
        for name, t in tensors.items():
            if t is not None and t._requires_grad:
                raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument '{name}'. "
                                   "This input cannot have requires_grad True.")


class LogitBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return g / (x * (1 - x))


def _logit(input):
    """``log(x / (1 - x))`` for x in [0, 1] (binary_cross_entropy's inputs are checked)."""
    xp = xp_for(input)
    x = input._data
    with np.errstate(divide="ignore", invalid="ignore"):
        r = arr(xp.log(x / (1 - x)))
    node = node_for(LogitBackward0, (input,))
    if node is not None:
        save(node, input)
    return finish(node, r)


def _bce_mean(t, reduction, n):
    return scaled(t, n, divide=True) if reduction == "mean" else t


class BinaryCrossEntropyBackward0(OpNode):
    def backward(self, g):
        x, y, w = self.saved_tensors
        nf = self.next_functions
        gx = _bce_backward(g, x, y, w, self.reduction) if nf[0][0] is not None else None
        gy = None
        if nf[1][0] is not None:
            gy = -_logit(x) * g
            if w is not None:
                gy = gy * w
            gy = _bce_mean(gy, self.reduction, x._data.size)
        return gx, gy


_BCE_EPS = 1e-12
_EPS_F = float(np.float32(1e-12))     # PyTorch's loss kernels' EPSILON is a float constant


class BinaryCrossEntropyBackwardBackward0(OpNode):
    """PyTorch's binary_cross_entropy double backward: its own formulas (with eps in the
    denominators), written with tensor ops so they differentiate again."""

    def backward(self, gg):
        g, x, y, w = self.saved_tensors
        nf = self.next_functions
        red, n, eps = self.reduction, x._data.size, _BCE_EPS
        dg = dx = dy = None
        if nf[0][0] is not None:
            dg = (x - y) / ((x + eps) * (1 - x + eps)) * gg
            if w is not None:
                dg = dg * w
            if red != "none":
                dg = _bce_mean(dg, red, n).sum()
        if nf[1][0] is not None:
            dx = (x * x - x * y * 2 + y) / ((x + eps) ** 2 * (1 - x + eps) ** 2) * (gg * g)
            if w is not None:
                dx = dx * w
            dx = _bce_mean(dx, red, n)
        if nf[2][0] is not None:
            dy = -gg * g
            if w is not None:
                dy = dy * w
            denom = (1 - x) * x
            from ..autograd import grad_mode
            with grad_mode.no_grad():
                # clamped in value only: the graph keeps the unclamped product (as PyTorch does)
                denom.clamp_min_(eps)
            dy = _bce_mean(dy / denom, red, n)
        return dg, dx, dy


def _bce_backward(g, x, y, w, reduction):
    """``g * (x - y) / max(x (1 - x), eps) * w (/ n)``: PyTorch's binary_cross_entropy_backward."""
    xp = xp_for(g, x, y, w)
    gd, xd, yd = g._data, x._data, y._data
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = gd * (xd - yd) / xp.maximum((1 - xd) * xd, _EPS_F)
        if w is not None:
            r = r * w._data
        if reduction == "mean":
            r = r / xd.size
    node = node_for(BinaryCrossEntropyBackwardBackward0, (g, x, y))
    if node is not None:
        node.reduction = reduction
        save(node, g, x, y, w)
    return finish(node, arr(xp.asarray(r, xd.dtype)))


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """``-w * (y log x + (1 - y) log(1 - x))`` with logs clamped at -100."""
    xp = xp_for(input, target, weight)
    _reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({Size(target.shape)}) that is different to the input size "
                         f"({Size(input.shape)}) is deprecated. Please ensure they have the same size.")
    _no_grad_weight("binary_cross_entropy", weight=weight)
    if weight is not None and tuple(weight.shape) != tuple(target.shape):
        from .shape import expand, broadcast_shapes
        weight = expand(weight, *broadcast_shapes(tuple(target.shape), tuple(weight.shape)))
        _check_out_shape(input, weight)
    x, y = input._data, target._data
    if y.dtype != x.dtype:
        raise RuntimeError(f"Found dtype {_TN.get(y.dtype.name, y.dtype.name)} but expected "
                           f"{_TN.get(x.dtype.name, x.dtype.name)}")
    if x.dtype.kind not in "fV":
        raise NotImplementedError(f'"binary_cross_entropy" not implemented for \'{_TN.get(x.dtype.name)}\'')
    if x.size and type(x) is np.ndarray:   # (a device checks in its kernel, as CUDA's device assert: no host sync)
        with np.errstate(invalid="ignore"):
            if not ((x >= 0) & (x <= 1)).all():
                raise RuntimeError("all elements of input should be between 0 and 1")
            if not ((y >= 0) & (y <= 1)).all():
                raise RuntimeError("all elements of target should be between 0 and 1")
    with np.errstate(divide="ignore", invalid="ignore"):
        l = (y - 1) * xp.maximum(xp.log1p(-x), -100) - y * xp.maximum(xp.log(x), -100)
        if weight is not None:
            l = l * weight._data
    r = _reduce_np(arr(xp.asarray(l, x.dtype)), reduction)
    node = node_for(BinaryCrossEntropyBackward0, (input, target))
    if node is not None:
        node.reduction = reduction
        save(node, input, target, weight)
    return finish(node, r)


class BinaryCrossEntropyWithLogitsBackward0(OpNode):
    def backward(self, g):
        x, y, w, pw = self.saved_tensors
        nf = self.next_functions
        red, n = self.reduction, x._data.size
        gx = gy = None
        if nf[0][0] is not None:
            if pw is not None:
                t = pw * y
                gx = (t + 1 - y) * sigmoid(x) - t
            else:
                gx = sigmoid(x) - y
            gx = gx * g
            if w is not None:
                gx = gx * w
            gx = _bce_mean(gx, red, n)
        if nf[1][0] is not None:
            if pw is not None:
                gy = (logsigmoid(-x) - logsigmoid(x) * pw) * g
            else:
                gy = -x * g
            if w is not None:
                gy = gy * w
            gy = _bce_mean(gy, red, n)
        return gx, gy


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    """``binary_cross_entropy(sigmoid(input), target)`` computed stably; ``pos_weight`` weighs positives."""
    xp = xp_for(input, target, weight, pos_weight)
    _reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({Size(target.shape)}) must be the same as input size ({Size(input.shape)})")
    x, y = input._data, target._data
    if x.dtype.kind not in "fcV":
        raise NotImplementedError(f'"log_sigmoid_cpu" not implemented for \'{_TN.get(x.dtype.name, x.dtype.name)}\'')
    if y.dtype.kind not in "fcV":
        raise RuntimeError(f"result type {_TN[x.dtype.name]} can't be cast to the desired output type "
                           f"{_TN.get(y.dtype.name, y.dtype.name)}")
    if weight is not None or pos_weight is not None:
        _no_grad_weight("binary_cross_entropy_with_logits", weight=weight, pos_weight=pos_weight)
        _check_out_shape(input, weight, pos_weight)
    with np.errstate(invalid="ignore"):
        ls = -xp.logaddexp(0, -x)      # log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|))
        if pos_weight is not None:
            ls = ls * ((pos_weight._data - 1) * y + 1)
        l = (1 - y) * x - ls
        if weight is not None:
            l = l * weight._data
    # PyTorch computes the loss in place into ``1 - target``: the target's dtype
    r = _reduce_np(arr(xp.asarray(l, y.dtype)), reduction)
    node = node_for(BinaryCrossEntropyWithLogitsBackward0, (input, target))
    if node is not None:
        node.reduction = reduction
        save(node, input, target, weight, pos_weight)
    return finish(node, r)


# *** divergences and margins ***

def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise ``target * (log target - input)`` (input in log space), reduced."""
    legacy = size_average is not None or reduce is not None
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean" and not legacy:
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if reduction not in _REDUCTIONS and reduction != "batchmean":
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if input._data.dtype.kind in "iub" or target._data.dtype.kind in "iub":
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = exp(target) * (target - input)
    else:
        from .pointwise import xlogy
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        loss = loss.sum()
        return loss if input.ndim == 0 else loss / _const(input.shape[0], loss._data.dtype)
    return _reduce_t(loss, reduction)


def _clamp_min(t, m):
    from .pointwise import clamp_min
    return clamp_min(t, m)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """``max(0, -y * (x1 - x2) + margin)``."""
    _reduction(reduction)
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {Size(input1.shape)}, input2: {Size(input2.shape)}, target: {Size(target.shape)} ")
    return _reduce_t(_clamp_min(shifted(-target * (input1 - input2), margin), 0), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """``1 - cos(x1, x2)`` for y = 1, ``max(0, cos(x1, x2) - margin)`` for y = -1."""
    xp = xp_for(input1, input2, target)
    _reduction(reduction)
    td = target.ndim
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if td == 1 and not (input1.ndim == 2 and input2.ndim == 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    if td == 0 and not (input1.ndim == 1 and input2.ndim == 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    eps = _EPS_F
    prod_sum = (input1 * input2).sum(td)
    mag1 = shifted((input1 * input1).sum(td), eps)
    mag2 = shifted((input2 * input2).sum(td), eps)
    cos = prod_sum / sqrt(mag1 * mag2)
    y = target._data
    zeros = _const(xp.zeros(cos._data.shape), cos._data.dtype)
    out = where(finish(None, arr(y == 1)), number_minus(1, cos), zeros) + \
        where(finish(None, arr(y == -1)), _clamp_min(shifted(cos, margin, subtract=True), 0), zeros)
    return _reduce_t(out, reduction)


class NormBackward1(OpNode):
    def backward(self, g):
        if self.p == 0:
            return None     # PyTorch's norm_backward: no gradient for the 0-"norm"
        v, r = self.saved_tensors
        from .reduce import _vector_norm_grad
        return _vector_norm_grad(v, r, g, self.p, self.dims, self.keepdim)


def _norm(v, p, dim, keepdim):
    """``at::norm(v, p, dim, keepdim)``: linalg.vector_norm's value and checks, recorded as
    PyTorch's NormBackward1 (the same norm_backward formula)."""
    from .reduce import vector_norm
    from ..autograd import grad_mode
    with grad_mode.no_grad():
        r = vector_norm(v, p, dim, keepdim)
    node = node_for(NormBackward1, (v,))
    res = finish(node, r._data)
    if node is not None:
        from ._base import save_output
        node.p, node.dims, node.keepdim = float(p), (dim,) if v.ndim else (), keepdim
        save(node, v)
        save_output(node, res)
    return res


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dim."""
    nd = max(x1.ndim, x2.ndim)
    return _norm(shifted(x1 - x2, eps), p, nd - 1 if nd else 0, keepdim)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)``."""
    _reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        from .pointwise import minimum
        # a tie shares the gradient between both distances, as torch.min does
        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce_t(_clamp_min(shifted(d_pos, margin) - d_neg, 0), reduction)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))`` along ``dim``.

    As in PyTorch, each norm is clamped in value only (the gradient sees the plain norm)."""
    from ._base import result_np_dtype
    from .reduce import vector_norm
    from .shape import broadcast_tensors
    from ..autograd import grad_mode
    dt = result_np_dtype(x1, x2)
    if dt.kind not in "fV":
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {_TN.get(dt.name)}")
    if x1._data.dtype.kind in "iub":
        x1 = x1.to(_dtype_of(dt))
    if x2._data.dtype.kind in "iub":
        x2 = x2.to(_dtype_of(dt))
    if x1.shape != x2.shape:
        x1, x2 = broadcast_tensors(x1, x2)
    n1 = vector_norm(x1, 2, dim, True).clone()
    n2 = vector_norm(x2, 2, dim, True).clone()
    with grad_mode.no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def _dtype_of(npdt):
    from .. import _dtype as D
    return D._FROM_NP[npdt]


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``."""
    if out is None:
        denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
        return input / denom
    denom = input.norm(p, dim, keepdim=True).clamp_min_(eps).expand_as(input)
    from .arithmetic import div
    return div(input, denom, out=out)


def one_hot(tensor, num_classes=-1):
    """Class indices -> one-hot int64 tensor with a new last dim."""
    xp = xp_for(tensor, num_classes)
    t = tensor._data
    if t.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if t.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(t.max()) + 1
    if t.size:
        if t.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if t.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    r = (t[..., None] == xp.arange(num_classes)).astype(np.int64)
    return finish(None, r)
