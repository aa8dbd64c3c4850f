"""Pooling: max (with indices, ceil_mode, padding, dilation), average (count_include_pad,
ceil_mode, divisor_override), adaptive average and adaptive max; 1-D, 2-D and 3-D.

Windows are strided views of the (padded) input; the kernel is walked one offset at a
time (a handful of whole-array operations), never one pixel at a time. Max pooling's
backward sends each gradient to its window's maximum (one scatter through flat positions
when windows cannot overlap, one masked add per kernel offset when they can).
"""
import functools
import itertools

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ._base import OpNode, node_for, save, finish
from .conv import _tup, SqueezeBackward1

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d"]
TENSOR_METHODS = {}
INPLACE = {}


def _prod(t):
    n = 1
    for s in t:
        n *= s
    return n


def _lead(x, nd, name):
    if x.ndim not in (nd + 1, nd + 2) or x.size == 0:
        if nd == 1:
            raise RuntimeError(f"{name}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                               f"input, but got:{list(x.shape)}")
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    return x.shape[:-nd], x.shape[-nd:]


def _pool_out(S, k, s, p, d, ceil_mode):
    num = S + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= S + p:
        out -= 1
    return out


def _geometry(x, kernel_size, stride, padding, dilation, ceil_mode, nd, name):
    k = _tup(kernel_size, nd, "kernel_size")
    s = _tup(stride if (stride is not None and stride != [] and stride != ()) else k, nd, "stride")
    p = _tup(padding, nd, "padding")
    d = _tup(dilation, nd, "dilation")
    lead, S = _lead(x, nd, name)
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    for i in range(nd):
        if p[i] * 2 > (k[i] - 1) * d[i] + 1:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p[i]}, "
                               f"kernel_size={k[i]} and dilation={d[i]}")
    out = tuple(_pool_out(S[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(nd))
    if any(o <= 0 for o in out):
        c = lead[-1] if lead else 1
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (c,) + S))}). Calculated output size: "
                           f"({'x'.join(map(str, (c,) + out))}). Output size is too small")
    return k, s, p, d, lead, S, out


def _padded(x3, S, k, s, p, d, out, fill):
    """(B, *S) padded with ``fill`` so every window of the output lies inside."""
    nd = len(S)
    hi = tuple(max(0, (out[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 - S[i] - p[i]) for i in range(nd))
    if not any(p) and not any(hi):
        return x3
    xp = np.full((x3.shape[0],) + tuple(S[i] + p[i] + hi[i] for i in range(nd)), fill, x3.dtype)
    xp[(slice(None),) + tuple(slice(p[i], p[i] + S[i]) for i in range(nd))] = x3
    return xp


def _window(xp, off, s, d, out):
    nd = len(out)
    return xp[(slice(None),) + tuple(slice(off[i] * d[i], off[i] * d[i] + s[i] * (out[i] - 1) + 1, s[i])
                                     for i in range(nd))]


# *** max pooling ***

class _MaxPoolBackward(OpNode):
    def backward(self, g):
        (arg,) = self.saved_tensors
        return _max_spread(g, arg, self.geo)


MaxPool2DWithIndicesBackward0 = type("MaxPool2DWithIndicesBackward0", (_MaxPoolBackward,), {})
MaxPool3DWithIndicesBackward0 = type("MaxPool3DWithIndicesBackward0", (_MaxPoolBackward,), {})


class _MaxSpreadBackward(OpNode):
    def backward(self, gg):
        (arg,) = self.saved_tensors
        return _max_pick(gg, arg, self.geo)


class _MaxPickBackward(OpNode):
    def backward(self, g):
        (arg,) = self.saved_tensors
        return _max_spread(g, arg, self.geo)


def _max_spread(g, arg, geo):
    """Differentiable: each output gradient sent back to the input position its window's
    maximum came from (one masked slice-add per kernel offset; overlapping windows add)."""
    lead, S, k, s, p, d, out = geo
    B = _prod(lead)
    gd = g._data.reshape((B,) + out)
    a = arg._data.reshape((B,) + out)
    hi = tuple(max(0, (out[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 - S[i] - p[i]) for i in range(len(S)))
    gp = np.zeros((B,) + tuple(S[i] + p[i] + hi[i] for i in range(len(S))), gd.dtype)
    overlap = any(s[i] < d[i] * (k[i] - 1) + 1 for i in range(len(S)))
    if overlap:
        for j, off in enumerate(itertools.product(*[range(v) for v in k])):
            win = _window(gp, off, s, d, out)
            win += np.where(a == j, gd, 0).astype(gd.dtype, copy=False)
    else:
        # each input position belongs to one window at most: one scatter through the
        # flat positions (window start + offset of its maximum)
        base, offs = _flat_positions(B, gp.shape[1:], k, s, d, out)
        gp.reshape(-1)[base + offs[a]] = gd
    r = gp[(slice(None),) + tuple(slice(p[i], p[i] + S[i]) for i in range(len(S)))]
    node = node_for(_MaxSpreadBackward, (g,))
    if node is not None:
        node.geo = geo
        save(node, arg)
    return finish(node, np.ascontiguousarray(r).reshape(tuple(lead) + S))


@functools.lru_cache(maxsize=16)
def _flat_positions(B, P, k, s, d, out):
    """Flat index, in a (B, *P) array, of each window's first element (B, *out), and of
    each kernel offset relative to it (prod(k),): read-only, cached per geometry."""
    nd = len(P)
    strides = [1] * nd
    for i in range(nd - 2, -1, -1):
        strides[i] = strides[i + 1] * P[i + 1]
    base = (np.arange(B, dtype=np.intp) * _prod(P)).reshape((B,) + (1,) * nd)
    for i in range(nd):
        base = base + (np.arange(out[i], dtype=np.intp) * (s[i] * strides[i])).reshape(
            (1,) + tuple(-1 if j == i else 1 for j in range(nd)))
    offs = np.zeros(k, np.intp)
    for i in range(nd):
        offs = offs + (np.arange(k[i], dtype=np.intp) * (d[i] * strides[i])).reshape(
            tuple(-1 if j == i else 1 for j in range(nd)))
    base.flags.writeable = False
    offs = offs.reshape(-1)
    offs.flags.writeable = False
    return base, offs


def _max_pool_2x2(x3, out):
    """Kernel 2x2, stride 2, no padding, no NaN: the same maximum and first-maximum offset
    as the general loop, on the four window corners copied apart first (one strided copy;
    every later operation runs on contiguous arrays)."""
    st = x3.strides
    q = np.ascontiguousarray(as_strided(x3, (2, 2, x3.shape[0]) + tuple(out),
                                        (st[1], st[2], st[0], 2 * st[1], 2 * st[2]), writeable=False))
    a, b, c, e = q[0, 0], q[0, 1], q[1, 0], q[1, 1]
    best = np.maximum(a, b)
    np.maximum(best, c, out=best)
    np.maximum(best, e, out=best)
    past_a = a != best                                   # earliest offset wins ties
    past_b = past_a & (b != best)
    arg = past_a.view(np.int8) + past_b.view(np.int8)
    arg += (past_b & (c != best)).view(np.int8)
    return best, arg


def _max_pick(x, arg, geo):
    """Differentiable: the input values at each window's argmax (the adjoint of _max_spread)."""
    lead, S, k, s, p, d, out = geo
    B = _prod(lead)
    xp = _padded(x._data.reshape((B,) + S), S, k, s, p, d, out, 0)
    a = arg._data.reshape((B,) + out)
    r = np.zeros(a.shape, xp.dtype)
    for j, off in enumerate(itertools.product(*[range(v) for v in k])):
        np.copyto(r, _window(xp, off, s, d, out), where=a == j)
    node = node_for(_MaxPickBackward, (x,))
    if node is not None:
        node.geo = geo
        save(node, arg)
    return finish(node, r.reshape(tuple(lead) + out))


def max_pool(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False,
             nd=2):
    """Max pooling over the last ``nd`` dims; optionally also the flat argmax indices."""
    x = input._data
    name = f"max_pool{nd}d"
    k, s, p, d, lead, S, out = _geometry(x, kernel_size, stride, padding, dilation, ceil_mode, nd, name)
    if nd == 1:
        # PyTorch pools 1-D signals as 2-D ones of height 1.
        r = max_pool(_unsq(input, -2), (1, k[0]), (1, s[0]), (0, p[0]), (1, d[0]), ceil_mode, return_indices, 2)
        if return_indices:
            return _sq(r[0], -2), finish(None, r[1]._data[..., 0, :])
        return _sq(r, -2)
    B = _prod(lead)
    x3 = x.reshape((B,) + S)
    if (k == (2, 2) and s == (2, 2) and p == (0, 0) and d == (1, 1) and x.dtype.kind == "f"
            and 2 * out[0] <= S[0] and 2 * out[1] <= S[1] and not np.isnan(x3.max())):
        best, arg = _max_pool_2x2(x3, out)
        return _max_pool_result(input, best, arg, (tuple(lead), tuple(S), k, s, p, d, out), return_indices)
    neg = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = _padded(x3, S, k, s, p, d, out, neg)
    offs = list(itertools.product(*[range(v) for v in k]))
    wins = [_window(xp, off, s, d, out) for off in offs]
    best = wins[0].copy()
    for w in wins[1:]:
        np.maximum(best, w, out=best)                    # NaN propagates, as in PyTorch
    kidx = np.int8 if len(offs) < 128 else np.int64
    arg = np.zeros(best.shape, kidx)
    nan = x.dtype.kind == "f" and np.isnan(best).any()
    for j in range(len(offs) - 1, -1, -1):               # earliest offset wins ties
        np.copyto(arg, j, where=wins[j] == best)
    if nan:                                              # a NaN wins its window (PyTorch: the last one)
        for j in range(len(offs)):
            np.copyto(arg, j, where=np.isnan(wins[j]))
    return _max_pool_result(input, best, arg, (tuple(lead), tuple(S), k, s, p, d, out), return_indices)


def _max_pool_result(input, best, arg, geo, return_indices):
    lead, S, k, s, p, d, out = geo
    nd = len(S)
    cls = MaxPool2DWithIndicesBackward0 if nd == 2 else MaxPool3DWithIndicesBackward0
    node = node_for(cls, (input,))
    res = finish(node, best.reshape(tuple(lead) + out))
    arg_t = finish(None, arg)
    if node is not None:
        node.geo = geo
        save(node, arg_t)
    if not return_indices:
        return res
    koff = np.unravel_index(arg.astype(np.int64), k)
    flat = None
    for i in range(nd):
        pos = (np.arange(out[i]) * s[i] - p[i]).reshape((1,) + tuple(-1 if j == i else 1 for j in range(nd)))
        pos = pos + koff[i] * d[i]
        flat = pos if flat is None else flat * S[i] + pos
    return res, finish(None, flat.reshape(tuple(lead) + out).astype(np.int64))


class UnsqueezeBackward0(OpNode):
    def backward(self, g):
        return g.reshape(self.shape)


def _unsq(t, dim):
    x = t._data
    dim = dim % (x.ndim + 1)
    node = node_for(UnsqueezeBackward0, (t,))
    if node is not None:
        node.shape = x.shape
    return finish(node, np.expand_dims(x, dim))


def _sq(t, dim):
    x = t._data
    node = node_for(SqueezeBackward1, (t,))
    if node is not None:
        node.shape = x.shape
    return finish(node, np.squeeze(x, dim % x.ndim))


# *** average pooling ***

def _avg_divisor(S, k, s, p, out, count_include_pad, divisor_override):
    if divisor_override:
        return np.asarray(float(divisor_override))
    div = None
    for i in range(len(S)):
        start = np.arange(out[i]) * s[i] - p[i]
        end = np.minimum(start + k[i], S[i] + p[i])
        size = end - start
        if not count_include_pad:
            size = np.minimum(end, S[i]) - np.maximum(start, 0)
        shp = tuple(-1 if j == i else 1 for j in range(len(S)))
        size = size.reshape(shp)
        div = size if div is None else div * size
    return div.astype(np.float64)


def _avg_fwd(x3, S, k, s, p, out, div):
    xp = _padded(x3, S, k, s, p, (1,) * len(S), out, 0)
    acc = None
    for off in itertools.product(*[range(v) for v in k]):
        w = _window(xp, off, s, (1,) * len(S), out)
        acc = w.astype(x3.dtype, copy=True) if acc is None else acc.__iadd__(w)
    return (acc / div).astype(x3.dtype, copy=False)


def _avg_bwd(g3, S, k, s, p, out, div):
    nd = len(S)
    hi = tuple(max(0, (out[i] - 1) * s[i] + k[i] - S[i] - p[i]) for i in range(nd))
    gp = np.zeros((g3.shape[0],) + tuple(S[i] + p[i] + hi[i] for i in range(nd)), g3.dtype)
    gd = (g3 / div).astype(g3.dtype, copy=False)
    for off in itertools.product(*[range(v) for v in k]):
        _window(gp, off, s, (1,) * nd, out).__iadd__(gd)
    return np.ascontiguousarray(gp[(slice(None),) + tuple(slice(p[i], p[i] + S[i]) for i in range(nd))])


class _AvgPoolBackward(OpNode):
    def backward(self, g):
        return _avg_pool_grad(g, self.geo)


AvgPool2DBackward0 = type("AvgPool2DBackward0", (_AvgPoolBackward,), {})
AvgPool3DBackward0 = type("AvgPool3DBackward0", (_AvgPoolBackward,), {})


class AvgPool2DBackwardBackward0(OpNode):
    def backward(self, gg):
        return _avg_pool_apply(gg, self.geo, _AvgPoolBackward)


def _avg_pool_apply(input, geo, cls):
    lead, S, k, s, p, out, div = geo
    B = _prod(lead)
    r = _avg_fwd(input._data.reshape((B,) + S), S, k, s, p, out, div).reshape(tuple(lead) + out)
    node = node_for(cls, (input,))
    if node is not None:
        node.geo = geo
    return finish(node, r)


def _avg_pool_grad(g, geo):
    lead, S, k, s, p, out, div = geo
    B = _prod(lead)
    r = _avg_bwd(g._data.reshape((B,) + out), S, k, s, p, out, div).reshape(tuple(lead) + S)
    node = node_for(AvgPool2DBackwardBackward0, (g,))
    if node is not None:
        node.geo = geo
    return finish(node, r)


def avg_pool(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
             divisor_override=None, nd=2):
    """Average pooling over the last ``nd`` dims."""
    x = input._data
    if nd == 1:
        if x.ndim not in (2, 3):
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for argument #1 "
                               "'self' (while checking arguments for avg_pool1d)")
        k = _tup(kernel_size, 1, "kernel_size")
        s = _tup(stride if stride is not None else k, 1, "stride")
        p = _tup(padding, 1, "padding")
        r = avg_pool(_unsq(input, -2), (1, k[0]), (1, s[0]), (0, p[0]), ceil_mode, count_include_pad, None, 2)
        return _sq(r, -2)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    k, s, p, d, lead, S, out = _geometry(x, kernel_size, stride, padding, 1, ceil_mode, nd, f"avg_pool{nd}d")
    div = _avg_divisor(S, k, s, p, out, count_include_pad, divisor_override)
    geo = (lead, S, k, s, p, out, div)
    return _avg_pool_apply(input, geo, AvgPool2DBackward0 if nd == 2 else AvgPool3DBackward0)


# *** adaptive pooling ***

def _adaptive_bounds(S, o):
    i = np.arange(o)
    start = (i * S) // o
    end = -((-(i + 1) * S) // o)
    return start, end


def _adaptive_out(x, output_size, nd, name):
    if x.ndim not in (nd + 1, nd + 2):
        colon = ":" if name.startswith("adaptive_max") else ""
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got{colon} {list(x.shape)}")
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != nd:
            raise RuntimeError(f"{name}(): internal error: output_size.size() must be {nd}")
        osz = output_size
    else:
        osz = (output_size,) * nd
    S = x.shape[-nd:]
    out = tuple(S[i] if osz[i] is None else int(osz[i]) for i in range(nd))
    for j in range(1, x.ndim):
        if x.shape[j] == 0 and j >= x.ndim - nd:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                               f"input has sizes {list(x.shape)} with dimension {j} being empty")
    return out


def _adaptive_mats(S, out, dtype):
    mats = []
    for i in range(len(S)):
        st, en = _adaptive_bounds(S[i], out[i])
        j = np.arange(S[i])
        m = ((j[None, :] >= st[:, None]) & (j[None, :] < en[:, None])).astype(dtype)
        m /= (en - st)[:, None].astype(dtype)
        mats.append(m)
    return mats


def _apply_mats(x, mats, transpose):
    nd = len(mats)
    r = x
    for i, m in enumerate(mats):
        ax = x.ndim - nd + i
        r = np.moveaxis(np.tensordot(r, m if transpose else m.T, axes=([ax], [0])), -1, ax)
    return np.ascontiguousarray(r)


class _AdaptiveAvgBackward(OpNode):
    def backward(self, g):
        return _adaptive_avg_apply(g, self.mats, True, _AdaptiveAvgBackBackward)


class _AdaptiveAvgBackBackward(OpNode):
    def backward(self, gg):
        return _adaptive_avg_apply(gg, self.mats, False, _AdaptiveAvgBackward)


AdaptiveAvgPool2DBackward0 = type("AdaptiveAvgPool2DBackward0", (_AdaptiveAvgBackward,), {})
AdaptiveAvgPool3DBackward0 = type("AdaptiveAvgPool3DBackward0", (_AdaptiveAvgBackward,), {})


def _adaptive_avg_apply(input, mats, transpose, cls):
    r = _apply_mats(input._data, mats, transpose)
    node = node_for(cls, (input,))
    if node is not None:
        node.mats = mats
    return finish(node, r)


def adaptive_avg_pool(input, output_size, nd=2):
    """Adaptive average pooling: window i covers [floor(i*S/o), ceil((i+1)*S/o))."""
    x = input._data
    name = f"adaptive_avg_pool{nd}d"
    if nd == 1:
        if x.ndim not in (2, 3):
            raise RuntimeError(f"adaptive_avg_pool1d(): Expected 2D or 3D tensor, but got {list(x.shape)}")
        osz = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
        return _sq(adaptive_avg_pool(_unsq(input, -2), (1, osz), 2), -2)
    out = _adaptive_out(x, output_size, nd, name)
    if all(o == 1 for o in out):
        from .reduce import mean
        return mean(input, tuple(range(x.ndim - nd, x.ndim)), keepdim=True)
    mats = _adaptive_mats(x.shape[-nd:], out, x.dtype)
    return _adaptive_avg_apply(input, mats, False,
                               AdaptiveAvgPool2DBackward0 if nd == 2 else AdaptiveAvgPool3DBackward0)


class _IndexMaxBackward(OpNode):
    def backward(self, g):
        (idx,) = self.saved_tensors
        return _scatter(g, idx, self.in_shape)


AdaptiveMaxPool2DBackward0 = type("AdaptiveMaxPool2DBackward0", (_IndexMaxBackward,), {})
AdaptiveMaxPool3DBackward0 = type("AdaptiveMaxPool3DBackward0", (_IndexMaxBackward,), {})


class _ScatterBackward(OpNode):
    def backward(self, gg):
        (idx,) = self.saved_tensors
        return _gather(gg, idx, self.nd)


class _GatherBackward(OpNode):
    def backward(self, g):
        (idx,) = self.saved_tensors
        return _scatter(g, idx, self.in_shape)


def _scatter(g, idx, in_shape):
    """Differentiable: zeros(in_shape) with g added at flat spatial indices idx (one bincount)."""
    gd = g._data
    lead, sp = in_shape
    B = _prod(lead)
    plane = _prod(sp)
    pos = (idx._data.reshape(B, -1) + (np.arange(B) * plane)[:, None]).ravel()
    out = np.bincount(pos, weights=gd.reshape(-1), minlength=B * plane).astype(gd.dtype, copy=False)
    node = node_for(_ScatterBackward, (g,))
    if node is not None:
        node.nd = len(sp)
        save(node, idx)
    return finish(node, out.reshape(tuple(lead) + tuple(sp)))


def _gather(x, idx, nd):
    """Differentiable: x's spatial planes read at flat indices idx."""
    xd = x._data
    lead, sp = _split(xd.shape, nd)
    B = _prod(lead)
    r = np.take_along_axis(xd.reshape(B, -1), idx._data.reshape(B, -1), axis=1).reshape(idx._data.shape)
    node = node_for(_GatherBackward, (x,))
    if node is not None:
        node.in_shape = (lead, sp)
        save(node, idx)
    return finish(node, r)


def _split(shape, nd):
    return shape[:len(shape) - nd], shape[len(shape) - nd:]


def adaptive_max_pool(input, output_size, return_indices=False, nd=2):
    """Adaptive max pooling, with flat argmax indices."""
    x = input._data
    if nd == 1:
        if x.ndim not in (2, 3):
            raise RuntimeError(f"adaptive_max_pool1d(): Expected 2D or 3D tensor, but got: {list(x.shape)}")
        osz = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
        y, i = adaptive_max_pool(_unsq(input, -2), (1, osz), True, 2)
        y, i = _sq(y, -2), finish(None, i._data[..., 0, :])
        return (y, i) if return_indices else y
    out = _adaptive_out(x, output_size, nd, f"adaptive_max_pool{nd}d")
    lead, S = _split(x.shape, nd)
    B = _prod(lead)
    x3 = x.reshape((B,) + S)
    idxs = []
    for i in range(nd):
        st, en = _adaptive_bounds(S[i], out[i])
        kmax = int((en - st).max())
        ii = np.minimum(st[:, None] + np.arange(kmax)[None, :], (en - 1)[:, None])   # (o_i, kmax_i)
        idxs.append(ii)
    # gather windows: (B, o_0, k_0, o_1, k_1, ...)
    index = [slice(None)]
    for i, ii in enumerate(idxs):
        shp = [1] * (2 * nd)
        shp[2 * i], shp[2 * i + 1] = ii.shape
        index.append(ii.reshape(shp))
    win = x3[tuple(index)]
    perm = (0,) + tuple(1 + 2 * i for i in range(nd)) + tuple(2 + 2 * i for i in range(nd))
    win = win.transpose(perm)
    ks = win.shape[1 + nd:]
    win = win.reshape(win.shape[:1 + nd] + (-1,))
    arg = np.argmax(win, axis=-1)
    y = np.take_along_axis(win, arg[..., None], axis=-1)[..., 0]
    koff = np.unravel_index(arg, ks)
    flat = None
    for i in range(nd):
        shp = (1,) + tuple(-1 if j == i else 1 for j in range(nd))
        rows = np.broadcast_to(np.arange(out[i]).reshape(shp), arg.shape)
        pos = idxs[i][rows, koff[i]]
        flat = pos if flat is None else flat * S[i] + pos
    y = y.reshape(tuple(lead) + out)
    ind = flat.astype(np.int64).reshape(tuple(lead) + out)
    node = node_for(AdaptiveMaxPool2DBackward0 if nd == 2 else AdaptiveMaxPool3DBackward0, (input,))
    idx_t = finish(None, ind)
    res = finish(node, y)
    if node is not None:
        node.in_shape = (lead, S)
        save(node, idx_t)
    return (res, idx_t) if return_indices else res


# *** PyTorch's top-level forms (torch.max_pool2d, ...) ***

def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return max_pool(input, kernel_size, stride or None, padding, dilation, ceil_mode, False, 1)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return max_pool(input, kernel_size, stride or None, padding, dilation, ceil_mode, False, 2)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return max_pool(input, kernel_size, stride or None, padding, dilation, ceil_mode, False, 3)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    return avg_pool(input, kernel_size, stride or None, padding, ceil_mode, count_include_pad, None, 1)


def adaptive_avg_pool1d(input, output_size):
    return adaptive_avg_pool(input, output_size, 1)


def adaptive_max_pool1d(input, output_size):
    return adaptive_max_pool(input, output_size, True, 1)
