"""The remaining losses of nn.functional: soft margin, hinge embedding, multi-class and
multi-label margins, multi-label soft margin, Poisson and Gaussian negative log likelihood,
triplet margin with a custom distance, and CTC.

PyTorch computes soft_margin_loss, multi_margin_loss, multilabel_margin_loss and ctc_loss
with dedicated kernels (their grad_fn is the kernel's node; the last three have no second
derivative); the rest are composites of tensor ops in PyTorch's order, so grad_fn names and
edge-case values follow from the ops themselves.
"""
import functools
import math

import numpy as np

from ._base import OpNode, node_for, save, save_output, finish, arr, xp_for
from .special import number_minus, shifted, scaled
from .loss import (_reduction, _reduce_np, _reduce_t, _check_out_shape, _no_grad_weight, _const,
                   pairwise_distance, _TN)

__all__ = []
TENSOR_METHODS = {}
INPLACE = {}


def _tn(dt):
    return _TN.get(np.dtype(dt).name, np.dtype(dt).name)


def _float_input(name, *arrays):
    for a in arrays:
        if a.dtype.kind not in "fV":
            raise NotImplementedError(f'"{name}" not implemented for \'{_tn(a.dtype)}\'')


# *** soft margin ***

def _soft_margin_grad(gd, x, y, reduction):
    n = x.size
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        e = xp_for(x).exp(-y * x)
        r = -y * e / (1 + e) * _grad_scale_arr(gd, reduction, n, x.shape)
    return r


def _grad_scale_arr(gd, reduction, n, shape):
    if reduction == "none":
        return gd
    if reduction == "mean":
        with np.errstate(divide="ignore", invalid="ignore"):
            gd = gd / n if n else gd * np.inf
    return xp_for(gd).broadcast_to(gd, shape)


class SoftMarginLossBackward0(OpNode):
    def backward(self, g):
        x, y = self.saved_tensors
        return _soft_margin_backward(g, x, y, self.reduction), None


class SoftMarginLossBackwardBackward0(OpNode):
    def backward(self, gg):
        g, x, y = self.saved_tensors
        nf = self.next_functions
        red = self.reduction
        dg = dx = None
        if nf[0][0] is not None:
            ones = _const(xp_for(g).ones(g._data.shape), g._data.dtype)
            unit = _soft_margin_backward(ones, x, y, red)
            dg = unit * gg if red == "none" else (unit * gg).sum()
        if nf[1][0] is not None:
            xd, yd = x._data, y._data
            xp = xp_for(xd)
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                e = xp.exp(-yd * xd)
                h = yd * yd * e / ((1 + e) * (1 + e))
                h = h * _grad_scale_arr(xp.ones_like(g._data), red, xd.size, xd.shape)
            dx = gg * g * _const(h.astype(xd.dtype, copy=False), xd.dtype)
        return dg, dx, None


def _soft_margin_backward(g, x, y, reduction):
    r = _soft_margin_grad(g._data, x._data, y._data, reduction)
    node = node_for(SoftMarginLossBackwardBackward0, (g, x, y))
    if node is not None:
        node.reduction = reduction
        save(node, g, x, y)
    return finish(node, arr(xp_for(r).asarray(r, x._data.dtype)))


def soft_margin_loss(input, target, reduction="mean"):
    """``log(1 + exp(-target * input))``, reduced."""
    _reduction(reduction)
    _no_grad_weight("soft_margin_loss", target=target)
    _check_out_shape(input, target)
    x = input._data
    if x.dtype.kind not in "fV":
        dt = np.result_type(x.dtype, target._data.dtype)
        raise RuntimeError(f"result type {_tn(dt if dt.kind in 'fV' else np.float32)} can't be cast to the "
                           f"desired output type {_tn(x.dtype)}")
    xp = xp_for(x, target)
    y = xp.broadcast_to(target._data.astype(x.dtype, copy=False), x.shape)
    from .loss import _expanded
    input, target = _expanded(input, target) if target._data.shape != x.shape else (input, target)
    with np.errstate(over="ignore", invalid="ignore"):
        r = xp.log1p(xp.exp(-y * x)).astype(x.dtype, copy=False)
    out = _reduce_np(arr(r), reduction)
    node = node_for(SoftMarginLossBackward0, (input, target))
    if node is not None:
        node.reduction = reduction
        save(node, input, finish(None, xp.ascontiguousarray(y)))
    return finish(node, out)


# *** hinge embedding, multilabel soft margin, Poisson / Gaussian nll, triplet with distance ***

def hinge_embedding_loss(input, target, margin=1.0, reduction="mean"):
    """``input`` where ``target == 1``, ``max(0, margin - input)`` where ``target == -1``."""
    from .index import where
    _reduction(reduction)
    zeros = input.new_zeros(input.shape)
    if input._data.dtype.kind in "iu":
        margin = int(margin)    # PyTorch computes in the input's dtype: the margin is truncated
    margin_clamp = number_minus(margin, input).clamp_min(0)
    output_margin = where(target != 1, margin_clamp, zeros)
    output_self = where(target != -1, input, zeros)
    return _reduce_t(output_margin + output_self, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, reduction="mean"):
    """Per-class binary logistic loss, averaged over the last (class) dim."""
    from .activation import logsigmoid
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    c = input.shape[class_dim]
    loss = loss.sum(dim=class_dim) / c
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(reduction + " is not valid")


def poisson_nll_loss(input, target, log_input=True, full=False, eps=1e-8, reduction="mean"):
    """Negative log likelihood of ``target`` under Poisson(``input``) (or Poisson(exp(input)))."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * shifted(input, eps).log()
    if full:
        stirling = target * target.log() - target + scaled(scaled(target, 2 * math.pi).log(), 0.5)
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce_t(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Negative log likelihood of ``target`` under Normal(``input``, ``var``)."""
    from .. import _creation
    from ..autograd import grad_mode
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * _creation.ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape)[:-1] == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(b for a, b in zip(input.shape, var.shape) if a != b) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with grad_mode.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce_t(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """Triplet margin loss with any distance (default: pairwise distance)."""
    from .pointwise import minimum
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, p, n = anchor.ndim, positive.ndim, negative.ndim
    if not (a == p == n):
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")
    dist = distance_function if distance_function is not None else pairwise_distance
    dist_pos = dist(anchor, positive)
    dist_neg = dist(anchor, negative)
    if swap:
        dist_neg = minimum(dist_neg, dist(positive, negative))
    loss = (margin + dist_pos - dist_neg).clamp_min(0)
    return _reduce_t(loss, reduction)


# *** multi-class / multi-label margin (no second derivative, as in PyTorch) ***

def _not_implemented_grad(value, inputs, op_name):
    from .activation import _grad_op, NotImplemented_
    return _grad_op(NotImplemented_, value, inputs, op_name=op_name)


def _margin_frame(x, fn):
    if x.ndim > 2 or (x.ndim == 2 and x.shape[1] == 0) or (x.ndim == 1 and x.shape[0] == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(x.shape)}")
    return x.reshape(1, -1) if x.ndim < 2 else x


def _long_target(t):
    if t.dtype != np.int64:
        raise RuntimeError(f"expected scalar type Long but found {_tn(t.dtype)}")


def _mm_parts(x2, y, p, margin, w):
    """Per-element margins (masked) and the class weight per row, for multi_margin_loss."""
    n, c = x2.shape
    rows = xp_for(x2).arange(n)
    with np.errstate(invalid="ignore", over="ignore"):
        z = margin - x2[rows, y][:, None] + x2
    mask = z > 0
    mask[rows, y] = False
    wy = w[y][:, None] if w is not None else None
    return z, mask, wy


class MultiMarginLossBackward0(OpNode):
    def backward(self, g):
        x, y, w = self.saved_tensors
        x2 = x._data.reshape(self.frame)
        yd = y._data.reshape(-1)
        wd = None if w is None else w._data
        z, mask, wy = _mm_parts(x2, yd, self.p, self.margin, wd)
        n, c = x2.shape
        xp = xp_for(x2)
        with np.errstate(invalid="ignore", over="ignore"):
            h = 1.0 if self.p == 1 else 2 * z
            if wy is not None:
                h = h * wy
            # only counted margins contribute: never 0 * inf from a weight or a margin
            h = xp.where(mask, h / c, 0).astype(x2.dtype)
            gd = g._data.reshape(-1)
            gs = gd if self.reduction == "none" else xp.broadcast_to(gd / n if self.reduction == "mean" else gd, (n,))
            r = h * gs[:, None].astype(x2.dtype)
        r[xp.arange(n), yd] = -(h.sum(1)) * gs
        inputs = (g, x) if w is None else (g, x, w)
        return _not_implemented_grad(r.reshape(x._data.shape).astype(x._data.dtype, copy=False), inputs,
                                     "multi_margin_loss_backward"), None, None


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, reduction="mean"):
    """Multi-class hinge loss ``sum_{j != y} max(0, margin - x[y] + x[j])^p / C``."""
    _reduction(reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    x = input._data
    x2 = _margin_frame(x, "multi_margin_loss")
    n, c = x2.shape
    t = target._data
    if not (t.ndim <= 1 and t.size == n):
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got {list(t.shape)}. Input has "
                           f"shape {list(x.shape)}.")
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got {list(weight.shape)}")
    _float_input("multi_margin_loss_cpu_kernel", x)
    _long_target(t)
    if weight is not None and weight._data.dtype != x.dtype:
        raise RuntimeError(f"expected scalar type {_tn(x.dtype)} but found {_tn(weight._data.dtype)}")
    y = t.reshape(-1)
    xp = xp_for(x, t)
    # (checked on the host only: CUDA's kernel asserts on the device, it asks the host nothing)
    if xp is np and ((y < 0) | (y >= c)).any():
        raise RuntimeError("target out of range")
    _no_grad_weight("multi_margin_loss", weight=weight)
    wd = None if weight is None else weight._data
    z, mask, wy = _mm_parts(x2, y, p, margin, wd)
    with np.errstate(invalid="ignore", over="ignore"):
        e = z if p == 1 else z * z
        if wy is not None:
            e = e * wy
        e = xp.where(mask, e, 0)
        per = (e.sum(1) / c).astype(x.dtype)
    out = per.reshape(t.shape if x.ndim < 2 else (n,)) if reduction == "none" else _reduce_np(per, reduction)
    node = node_for(MultiMarginLossBackward0, (input,))
    if node is not None:
        node.p, node.margin, node.reduction, node.frame = p, margin, reduction, x2.shape
        save(node, input, target, weight)
    return finish(node, arr(xp.asarray(out, x.dtype)))


def _mlm_targets(t2, c):
    """(slot mask, slot x class one-hot of the targets) of multilabel targets: each row's target
    slots end at its first negative entry (no per-row host loop: the slots are masked)."""
    xp = xp_for(t2)
    slot = xp.cumsum(t2 < 0, axis=1) == 0
    onehot = (t2[:, :, None] == xp.arange(c)) & slot[:, :, None]
    return slot, onehot


def _mlm_parts(x2, t2):
    """(loss per row, gradient per element): each target slot's hinge ``1 - x[target] + x[j]``
    over the non-target classes j."""
    xp = xp_for(x2, t2)
    n, c = x2.shape
    slot, onehot = _mlm_targets(t2, c)
    others = ~onehot.any(1)
    per = xp.zeros(n, x2.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        xt = xp.take_along_axis(x2, xp.where(slot, t2, 0), 1)
        z = 1 - xt[:, :, None] + x2[:, None, :]            # (row, slot, class)
        m = (z > 0) & others[:, None, :] & slot[:, :, None]
        sums = xp.where(m, z, 0).sum(2)
        for j in range(c):      # (slot by slot: the order of the sums of a loop over the targets)
            per = per + sums[:, j]
        counts = m.sum(2)                                   # margins counted per slot
        grad = m.sum(1) - (onehot * counts[:, :, None]).sum(1)
    return per / c, (grad / c).astype(x2.dtype)


class MultilabelMarginLossBackward0(OpNode):
    def backward(self, g):
        x, t = self.saved_tensors
        x2 = x._data.reshape(self.frame)
        _, gr = _mlm_parts(x2, t._data.reshape(self.frame))
        n = x2.shape[0]
        gd = g._data.reshape(-1)
        gs = gd if self.reduction == "none" else \
            xp_for(gd).broadcast_to(gd / n if self.reduction == "mean" else gd, (n,))
        with np.errstate(invalid="ignore", over="ignore"):
            r = (gr * gs[:, None]).astype(x._data.dtype, copy=False)
        return _not_implemented_grad(r.reshape(x._data.shape), (g, x), "multilabel_margin_loss_backward"), None


def multilabel_margin_loss(input, target, reduction="mean"):
    """Multi-label hinge loss: every target class against every non-target class."""
    _reduction(reduction)
    x = input._data
    x2 = _margin_frame(x, "multilabel_margin_loss")
    n, c = x2.shape
    t = target._data
    if t.shape != x.shape and not (x.ndim == 0 and t.size == 1):
        raise RuntimeError(f"inconsistent target size: {list(t.shape)} for input of size: {list(x.shape)}")
    _float_input("multilabel_margin_loss_forward_out_frame", x)
    _long_target(t)
    t2 = t.reshape(n, c)
    xp = xp_for(x, t)
    # (checked on the host only: CUDA's kernel asserts on the device, it asks the host nothing)
    if xp is np and ((t2 < -1) | (t2 >= c)).any():
        raise RuntimeError("argument #2 'target' is out of range")
    per, _ = _mlm_parts(x2, t2)
    out = (per.reshape(() if x.ndim < 2 else (n,)) if reduction == "none" else _reduce_np(per, reduction))
    node = node_for(MultilabelMarginLossBackward0, (input,))
    if node is not None:
        node.reduction, node.frame = reduction, x2.shape
        save(node, input, target)
    return finish(node, arr(xp.asarray(out, x.dtype)))


# *** CTC ***

def _lse(*vals):
    xp = xp_for(*vals)
    m = functools.reduce(xp.maximum, vals)
    m0 = xp.where(m == -np.inf, 0.0, m)
    with np.errstate(divide="ignore"):
        return xp.log(sum(xp.exp(v - m0) for v in vals)) + m0


def _ctc_one(lp, tgt, blank):
    """(nll, log_alpha, log_beta, extended labels) of one sequence; ``lp`` is (T, C) float64.
    On a device all stay there (the nll a 0-d array): the recursions run over time steps, each
    step one vector of the extended labels."""
    xp = xp_for(lp, tgt)
    T = lp.shape[0]
    L = tgt.shape[0]
    S = 2 * L + 1
    ext = xp.full(S, blank, np.int64)
    ext[1::2] = tgt
    ninf = -np.inf
    la = xp.full((T, S), ninf)
    lb = xp.full((T, S), ninf)
    if T == 0:
        return (0.0 if L == 0 else np.inf), la, lb, ext
    edge1, edge2 = xp.full(1, ninf), xp.full(2, ninf)
    # s-2 transitions allowed into a label that differs from the label two back
    skip = xp.zeros(S, bool)
    if S > 2:
        skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    emit = lp[:, ext]
    la[0, 0] = emit[0, 0]
    if S > 1:
        la[0, 1] = emit[0, 1]
    for t in range(1, T):
        prev = la[t - 1]
        p1 = xp.concatenate((edge1, prev[:-1]))
        p2 = xp.where(skip, xp.concatenate((edge2, prev[:-2])) if S > 2 else ninf, ninf)
        la[t] = _lse(prev, p1, p2) + emit[t]
    lb[T - 1, S - 1] = emit[T - 1, S - 1]
    if S > 1:
        lb[T - 1, S - 2] = emit[T - 1, S - 2]
    skip_fwd = xp.zeros(S, bool)
    if S > 2:
        skip_fwd[:-2] = skip[2:]
    for t in range(T - 2, -1, -1):
        nxt = lb[t + 1]
        n1 = xp.concatenate((nxt[1:], edge1))
        n2 = xp.where(skip_fwd, xp.concatenate((nxt[2:], edge2)) if S > 2 else ninf, ninf)
        lb[t] = _lse(nxt, n1, n2) + emit[t]
    end = la[T - 1, S - 1] if S == 1 else _lse(la[T - 1, S - 1], la[T - 1, S - 2])
    return (-float(end) if xp is np else -end), la, lb, ext


class CtcLossBackward0(OpNode):
    """PyTorch's CTC gradient w.r.t. the log-probabilities: ``exp(lp) - exp(log(alpha beta) + nll - lp)``
    (the gradient through a log_softmax of the activations; it differs from the plain derivative
    by ``exp(lp)``, which log_softmax's backward cancels)."""

    def backward(self, g):
        lp_t, _ = self.saved_tensors     # (and the loss itself, saved as PyTorch's node saves it)
        lp = lp_t._data
        lp = lp[:, None, :] if lp.ndim == 2 else lp
        xp = xp_for(lp)
        gd = xp.broadcast_to(g._data, (lp.shape[1],))
        out = xp.zeros(lp.shape, np.float64)
        for b, (nll, la, lb, ext) in enumerate(self.parts):
            T = la.shape[0]
            if T == 0:
                continue
            lpb = lp[:T, b].astype(np.float64)
            lcab = xp.full(lpb.shape, -np.inf)
            with np.errstate(invalid="ignore", over="ignore"):
                ab = la + lb
                for s in range(ext.shape[0]):
                    c = ext[s]
                    lcab[:, c] = xp.logaddexp(lcab[:, c], ab[:, s])
                r = (xp.exp(lpb) - xp.exp(lcab + nll - lpb)) * gd[b]
            if self.zero_infinity:   # (selected on the device: an infinite nll's gradient is 0)
                r = xp.where(xp.isinf(xp.asarray(nll)), 0.0, r)
            out[:T, b] = r
        out = out.reshape(lp_t._data.shape).astype(lp.dtype)
        return _not_implemented_grad(out, (g, lp_t), "_ctc_loss_backward"), None


def _host_lengths(v):
    """The lengths as a host array (their own dtype): a device tensor's are copied to the host,
    as PyTorch's CUDA ctc_loss does (they size the recursions)."""
    from .._tensor import Tensor
    if isinstance(v, Tensor):
        d = v._data
        return (d if type(d) is np.ndarray else d.get()).reshape(-1)
    return np.asarray(list(v), np.int64).reshape(-1)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist temporal classification loss of (T, N, C) (or (T, C)) log-probabilities."""
    from .._tensor import Tensor
    _reduction(reduction)
    lp = log_probs._data
    _float_input("ctc_loss_cpu", lp)
    unbatched = lp.ndim == 2
    lp3 = lp[:, None, :] if unbatched else lp
    if lp3.ndim != 3:
        raise RuntimeError(f"ctc_loss: log_probs must be 2-D (T, C) or 3-D (T, N, C), got {lp.ndim}-D")
    T, N, C = lp3.shape
    tg = targets._data
    if tg.dtype.kind not in "iu":
        raise RuntimeError(f"ctc_loss: targets must be of an integer type, got {_tn(tg.dtype)}")
    if unbatched:
        tg = tg[None] if tg.ndim == 1 else tg
    il = _host_lengths(input_lengths).astype(np.int64)
    tl_own = _host_lengths(target_lengths)
    tl = tl_own.astype(np.int64)
    xp = xp_for(lp)
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    if il.shape[0] != N:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tl.shape[0] != N:
        raise RuntimeError("target_lengths must be of size batch_size")
    concat = tg.ndim == 1
    offs = np.concatenate(([0], np.cumsum(tl)[:-1])) if concat else None
    lp64 = lp3.astype(np.float64)
    parts = []
    nll = xp.zeros(N)
    for b in range(N):
        if il[b] > T or il[b] < 0:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value {il[b]} "
                               f"(while checking arguments for ctc_loss_cpu)")
        if concat:
            tgt = tg[offs[b]:offs[b] + tl[b]]
        else:
            if tl[b] > tg.shape[1]:
                raise RuntimeError(f"Expected tensor to have size at least {tl[b]} at dimension 1, but got size "
                                   f"{tg.shape[1]} for argument #2 'targets' (while checking arguments for ctc_loss_cpu)")
            tgt = tg[b, :tl[b]]
        tgt = tgt.astype(np.int64)
        val, la, lb, ext = _ctc_one(lp64[:il[b], b], tgt, blank)
        parts.append((val, la, lb, ext))
        nll[b] = val
    node = node_for(CtcLossBackward0, (log_probs,))
    if node is not None:
        node.parts, node.zero_infinity = parts, zero_infinity
        save(node, log_probs)
    res = finish(node, arr(nll.astype(lp.dtype)))
    if node is not None:
        # PyTorch's node saves its result (the per-sample losses, what reduction='none'
        # returns): modifying that in place makes the backward raise, as there
        save_output(node, res)
    if zero_infinity:
        from .index import where
        res = where(res == np.inf, _const(xp.zeros(()), res._data.dtype), res)
    if unbatched:
        res = res.squeeze(0)
    if reduction == "none":
        return res
    if reduction == "sum":
        return res.sum()
    # (the lengths' own dtype when given as a tensor; on the loss's device)
    tlt = finish(None, xp.asarray(tl_own if isinstance(target_lengths, Tensor) else tl).reshape(
        () if unbatched else (N,)))
    return (res / tlt.clamp_min(1)).mean()


