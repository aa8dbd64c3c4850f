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

from ._base import xp_for, strided
from ._base import OpNode, node_for, save, finish
from .conv import _tup, SqueezeBackward1, check_kernel_dtype, _INTS

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d"]
TENSOR_METHODS = {}
INPLACE = {}


def _prod(t):
    n = 1
    for s in t:
        n *= s
    return n


def _lead(x, nd, name):
    if x.ndim not in (nd + 1, nd + 2):
        if nd == 1:
            raise RuntimeError(f"{name}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                               f"input, but got:{list(x.shape)}")
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    if 0 in x.shape[x.ndim - nd - 1:]:   # only a batch dimension may be empty
        if nd == 1:
            raise RuntimeError(f"{name}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                               f"input, but got:{list(x.shape)}")
        if nd == 2:
            raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                               f"got:{list(x.shape)}")
        who = "max_pool3d_with_indices_out_cpu_template" if name.startswith("max") else "avg_pool3d"
        raise RuntimeError(f"{who}(): Expected input's non-batch dimensions to have positive length, but input has a "
                           f"shape of {list(x.shape)} and non-batch dimension 0 has length zero!")
    return x.shape[:-nd], x.shape[-nd:]


def _pool_out(S, k, s, p, d, ceil_mode):
    num = S + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= S + p:
        out -= 1
    return out


def _geometry(x, kernel_size, stride, padding, dilation, ceil_mode, nd, name, check_image=False):
    k = _tup(kernel_size, nd, "kernel_size")
    s = _tup(stride if (stride is not None and stride != [] and stride != ()) else k, nd, "stride")
    p = _tup(padding, nd, "padding")
    d = _tup(dilation, nd, "dilation")
    lead, S = _lead(x, nd, name)
    if check_image and any(S[i] < k[i] for i in range(nd)):   # PyTorch's 3-D average pool, before padding
        raise RuntimeError(f"input image (T: {S[0]} H: {S[1]} W: {S[2]}) smaller than kernel size (kT: {k[0]} "
                           f"kH: {k[1]} kW: {k[2]})")
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
    xpad = xp_for(x3).full((x3.shape[0],) + tuple(S[i] + p[i] + hi[i] for i in range(nd)), fill, x3.dtype)
    xpad[(slice(None),) + tuple(slice(p[i], p[i] + S[i]) for i in range(nd))] = x3
    return xpad


def _window(xpad, off, s, d, out):
    nd = len(out)
    return xpad[(slice(None),) + tuple(slice(off[i] * d[i], off[i] * d[i] + s[i] * (out[i] - 1) + 1, s[i])
                                     for i in range(nd))]


# *** max pooling ***

class _MaxPoolBackward(OpNode):
    def backward(self, g):
        arg, x = self.saved_tensors
        return _max_spread(g, arg, self.geo, x)


MaxPool2DWithIndicesBackward0 = type("MaxPool2DWithIndicesBackward0", (_MaxPoolBackward,), {})
MaxPool3DWithIndicesBackward0 = type("MaxPool3DWithIndicesBackward0", (_MaxPoolBackward,), {})


class _MaxSpreadBackward(OpNode):
    def backward(self, gg):
        (arg,) = self.saved_tensors
        nf = self.next_functions
        r = _max_pick(gg, arg, self.geo) if nf[0][0] is not None else None
        return (r, _zeros_for(nf, self.dep_shape, gg)) if len(nf) > 1 else r


_MAX_SPREAD = {n: type(f"MaxPool{n}DWithIndicesBackwardBackward0", (_MaxSpreadBackward,), {}) for n in (2, 3)}


class _MaxPickBackward(OpNode):
    def backward(self, g):
        (arg,) = self.saved_tensors
        return _max_spread(g, arg, self.geo)


def _max_spread(g, arg, geo, dep=None):
    """Differentiable: each output gradient sent back to the input position its window's
    maximum came from (one masked slice-add per kernel offset; overlapping windows add);
    ``dep`` is the pooled input the result stays tied to (zero derivative)."""
    xp = xp_for(g, arg, geo, dep)
    lead, S, k, s, p, d, out = geo
    B = _prod(lead)
    gd = g._data.reshape((B,) + out)
    a = arg._data.reshape((B,) + out)
    hi = tuple(max(0, (out[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 - S[i] - p[i]) for i in range(len(S)))
    gp = xp.zeros((B,) + tuple(S[i] + p[i] + hi[i] for i in range(len(S))), gd.dtype)
    overlap = any(s[i] < d[i] * (k[i] - 1) + 1 for i in range(len(S)))
    if overlap:
        for j, off in enumerate(itertools.product(*[range(v) for v in k])):
            win = _window(gp, off, s, d, out)
            win += xp.where(a == j, gd, 0).astype(gd.dtype, copy=False)
    else:
        # each input position belongs to one window at most: one scatter through the
        # flat positions (window start + offset of its maximum)
        base, offs = _flat_positions(B, gp.shape[1:], k, s, d, out)
        if xp is not np:   # (host-built positions onto the device)
            base, offs = xp.asarray(base), xp.asarray(offs)
        gp.reshape(-1)[base + offs[a]] = gd
    r = gp[(slice(None),) + tuple(slice(p[i], p[i] + S[i]) for i in range(len(S)))]
    node = node_for(_MAX_SPREAD[len(S)] if dep is not None else _MaxSpreadBackward, (g,) if dep is None else (g, dep))
    if node is not None:
        node.geo = geo
        node.dep_shape = None if dep is None else dep._data.shape
        save(node, arg)
    return finish(node, xp.ascontiguousarray(r).reshape(tuple(lead) + S))


@functools.lru_cache(maxsize=16)
def _flat_positions(B, P, k, s, d, out):
    """Flat index, in a (B, *P) array, of each window's first element (B, *out), and of
    each kernel offset relative to it (prod(k),): read-only, cached per geometry."""
    xp = xp_for(B, P, k, s, d)
    nd = len(P)
    strides = [1] * nd
    for i in range(nd - 2, -1, -1):
        strides[i] = strides[i + 1] * P[i + 1]
    base = (xp.arange(B, dtype=np.intp) * _prod(P)).reshape((B,) + (1,) * nd)
    for i in range(nd):
        base = base + (xp.arange(out[i], dtype=np.intp) * (s[i] * strides[i])).reshape(
            (1,) + tuple(-1 if j == i else 1 for j in range(nd)))
    offs = xp.zeros(k, np.intp)
    for i in range(nd):
        offs = offs + (xp.arange(k[i], dtype=np.intp) * (d[i] * strides[i])).reshape(
            tuple(-1 if j == i else 1 for j in range(nd)))
    base.flags.writeable = False
    offs = offs.reshape(-1)
    offs.flags.writeable = False
    return base, offs


def _max_pool_2x2(x3, out):
    """Kernel 2x2, stride 2, no padding, no NaN: the same maximum and first-maximum offset
    as the general loop, on the four window corners copied apart first (one strided copy;
    every later operation runs on contiguous arrays)."""
    xp = xp_for(x3)
    st = x3.strides
    q = xp.ascontiguousarray(strided(x3, (2, 2, x3.shape[0]) + tuple(out),
                                     (st[1], st[2], st[0], 2 * st[1], 2 * st[2]), writeable=False))
    a, b, c, e = q[0, 0], q[0, 1], q[1, 0], q[1, 1]
    best = xp.maximum(a, b)
    xp.maximum(best, c, out=best)
    xp.maximum(best, e, out=best)
    past_a = a != best                                   # earliest offset wins ties
    past_b = past_a & (b != best)
    arg = past_a.view(np.int8) + past_b.view(np.int8)
    arg += (past_b & (c != best)).view(np.int8)
    _zeros_from_argmax(best, arg, (a, b, c, e))
    return best, arg


def _zeros_from_argmax(best, arg, wins):
    """A window's maximum is the value at its argmax (PyTorch's kernel keeps the first
    maximum): a maximum of 0 takes its sign from there, whichever of +0 and -0 ``maximum``
    returned for the tie."""
    xp = xp_for(best)
    if best.dtype.kind not in "fV":
        return
    z = best == 0
    if xp is np and not z.any():
        return
    for j, w in enumerate(wins):
        xp.copyto(best, w, where=z & (arg == j))


def _max_pick(x, arg, geo):
    """Differentiable: the input values at each window's argmax (the adjoint of _max_spread)."""
    lead, S, k, s, p, d, out = geo
    B = _prod(lead)
    xp = xp_for(x)
    xpad = _padded(x._data.reshape((B,) + S), S, k, s, p, d, out, 0)
    a = arg._data.reshape((B,) + out)
    r = xp.zeros(a.shape, xpad.dtype)
    for j, off in enumerate(itertools.product(*[range(v) for v in k])):
        xp.copyto(r, _window(xpad, off, s, d, out), where=a == j)
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
    if nd == 1:
        # PyTorch pools 1-D signals as 2-D ones of height 1 (with indices, checked as such)
        if not return_indices:
            _geometry(x, kernel_size, stride, padding, dilation, ceil_mode, nd, name)
            check_kernel_dtype("max_pool1d_impl", x)
        k = _tup(kernel_size, 1, "kernel_size")
        s = _tup(stride if (stride is not None and stride != [] and stride != ()) else k, 1, "stride")
        p, d = _tup(padding, 1, "padding"), _tup(dilation, 1, "dilation")
        r = max_pool(input.unsqueeze(-2), (1, k[0]), (1, s[0]), (0, p[0]), (1, d[0]), ceil_mode, return_indices, 2)
        if return_indices:
            return _sq(r[0], -2), r[1].squeeze(-2)
        # PyTorch: with a gradient to record, the indices kernel and a squeeze (a view); its
        # plain max_pool1d kernel otherwise (no view)
        return _sq(r, -2) if r._grad_fn is not None else _sq_copy(r, -2)
    k, s, p, d, lead, S, out = _geometry(x, kernel_size, stride, padding, dilation, ceil_mode, nd, name)
    check_kernel_dtype(name, x, _INTS)
    B = _prod(lead)
    x3 = x.reshape((B,) + S)
    xp = xp_for(x)
    host = xp is np   # (on a device: no question to the host about NaNs or padding)
    if (host and k == (2, 2) and s == (2, 2) and p == (0, 0) and d == (1, 1) and B
            and 2 * out[0] <= S[0] and 2 * out[1] <= S[1]):
        from . import _accel
        kern = _accel.usable(x3)
        if kern is not None:       # one compiled pass: PyTorch's pick, NaN and signed zeros included
            best, arg = np.empty((B,) + tuple(out), x3.dtype), np.empty((B,) + tuple(out), np.int8)
            kern.max_pool_2x2(x3, best, arg)
            return _max_pool_result(input, best, arg, (tuple(lead), tuple(S), k, s, p, d, out), return_indices)
    if (host and k == (2, 2) and s == (2, 2) and p == (0, 0) and d == (1, 1) and x.dtype.kind in "fV" and B
            and 2 * out[0] <= S[0] and 2 * out[1] <= S[1] and not np.isnan(x3.max())):
        best, arg = _max_pool_2x2(x3, out)
        return _max_pool_result(input, best, arg, (tuple(lead), tuple(S), k, s, p, d, out), return_indices)
    neg = -np.inf if x.dtype.kind in "fV" else np.iinfo(x.dtype).min
    xpad = _padded(x3, S, k, s, p, d, out, neg)
    offs = list(itertools.product(*[range(v) for v in k]))
    wins = [_window(xpad, off, s, d, out) for off in offs]
    best = wins[0].copy()
    for w in wins[1:]:
        xp.maximum(best, w, out=best)                    # NaN propagates, as in PyTorch
    kidx = np.int8 if len(offs) < 128 else np.int64
    arg = xp.zeros(best.shape, kidx)
    nan = x.dtype.kind in "fV" and (not host or xp.isnan(best).any())
    for j in range(len(offs) - 1, -1, -1):               # earliest offset wins ties
        xp.copyto(arg, j, where=wins[j] == best)
    if nan:                                              # a NaN wins its window (PyTorch: the last one)
        for j in range(len(offs)):
            xp.copyto(arg, j, where=xp.isnan(wins[j]))
    if xpad is not x3:
        low = best == neg
        if not host or low.any():   # nothing above the padding value: PyTorch's argmax is the first in-range element
            first = _first_inside(S, k, s, p, d, out).astype(kidx)
            xp.copyto(arg, first if host else xp.asarray(first), where=low)
    _zeros_from_argmax(best, arg, wins)
    return _max_pool_result(input, best, arg, (tuple(lead), tuple(S), k, s, p, d, out), return_indices)


def _first_inside(S, k, s, p, d, out):
    """(1, *out): the first kernel offset of each window that lies inside the input (0 for
    a window wholly in the padding, which only dilation allows)."""
    xp = xp_for(S, k, s, p, d)
    nd = len(S)
    j = xp.zeros((1,) + (1,) * nd, np.int64)
    for i in range(nd):
        pos = xp.arange(out[i])[:, None] * s[i] + xp.arange(k[i])[None, :] * d[i] - p[i]
        first = xp.argmax((pos >= 0) & (pos < S[i]), axis=1)
        j = j * k[i] + first.reshape((1,) + tuple(-1 if a == i else 1 for a in range(nd)))
    return j


def _max_pool_result(input, best, arg, geo, return_indices):
    xp = xp_for(input, best, arg, geo)
    lead, S, k, s, p, d, out = geo
    nd = len(S)
    cls = MaxPool2DWithIndicesBackward0 if nd == 2 else MaxPool3DWithIndicesBackward0
    node = node_for(cls, (input,))
    res = finish(node, best.reshape(tuple(lead) + out))
    arg_t = finish(None, arg)
    if node is not None:
        node.geo = geo
        save(node, arg_t, input)
    if not return_indices:
        return res
    koff = xp.unravel_index(arg.astype(np.int64), k)
    flat = None
    for i in range(nd):
        pos = (xp.arange(out[i]) * s[i] - p[i]).reshape((1,) + tuple(-1 if j == i else 1 for j in range(nd)))
        pos = pos + koff[i] * d[i]
        flat = pos if flat is None else flat * S[i] + pos
    return res, finish(None, flat.reshape(tuple(lead) + out).astype(np.int64))


def _sq(t, dim):
    return t.squeeze(dim)   # a view, as PyTorch's (SqueezeBackward1)


def _sq_copy(t, dim):
    xp = xp_for(t)
    x = t._data
    node = node_for(SqueezeBackward1, (t,))
    if node is not None:
        node.shape = x.shape
    return finish(node, xp.squeeze(x, dim % x.ndim))


# *** average pooling ***

def _avg_divisor(S, k, s, p, out, count_include_pad, divisor_override):
    xp = xp_for(S, k, s, p)
    if divisor_override:
        return xp.asarray(float(divisor_override))
    div = None
    for i in range(len(S)):
        start = xp.arange(out[i]) * s[i] - p[i]
        end = xp.minimum(start + k[i], S[i] + p[i])
        size = end - start
        if not count_include_pad:
            size = xp.minimum(end, S[i]) - xp.maximum(start, 0)
        shp = tuple(-1 if j == i else 1 for j in range(len(S)))
        size = size.reshape(shp)
        div = size if div is None else div * size
    return div.astype(np.float64)


def _avg_fwd(x3, S, k, s, p, out, div):
    xpad = _padded(x3, S, k, s, p, (1,) * len(S), out, 0)
    div = div if type(x3) is np.ndarray else xp_for(x3).asarray(div)
    acc = None
    for off in itertools.product(*[range(v) for v in k]):
        w = _window(xpad, off, s, (1,) * len(S), out)
        acc = w.astype(x3.dtype, copy=True) if acc is None else acc.__iadd__(w)
    return (acc / div).astype(x3.dtype, copy=False)


def _avg_bwd(g3, S, k, s, p, out, div):
    xp = xp_for(g3, S, k, s, p, div)
    nd = len(S)
    hi = tuple(max(0, (out[i] - 1) * s[i] + k[i] - S[i] - p[i]) for i in range(nd))
    gp = xp.zeros((g3.shape[0],) + tuple(S[i] + p[i] + hi[i] for i in range(nd)), g3.dtype)
    gd = (g3 / (div if xp is np else xp.asarray(div))).astype(g3.dtype, copy=False)
    for off in itertools.product(*[range(v) for v in k]):
        _window(gp, off, s, (1,) * nd, out).__iadd__(gd)
    return xp.ascontiguousarray(gp[(slice(None),) + tuple(slice(p[i], p[i] + S[i]) for i in range(nd))])


class _AvgPoolBackward(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return _avg_pool_grad(g, self.geo, x)


AvgPool2DBackward0 = type("AvgPool2DBackward0", (_AvgPoolBackward,), {})
AvgPool3DBackward0 = type("AvgPool3DBackward0", (_AvgPoolBackward,), {})
_AVG_NODES = {2: AvgPool2DBackward0, 3: AvgPool3DBackward0}


class AvgPool2DBackwardBackward0(OpNode):
    def backward(self, gg):
        nf = self.next_functions
        r = _avg_pool_apply(gg, self.geo, _AVG_NODES[len(self.geo[1])]) if nf[0][0] is not None else None
        return r, _zeros_for(nf, self.dep_shape, gg)


AvgPool3DBackwardBackward0 = type("AvgPool3DBackwardBackward0", (AvgPool2DBackwardBackward0,), {})


def _avg_pool_apply(input, geo, cls):
    lead, S, k, s, p, out, div = geo
    B = _prod(lead)
    r = _avg_fwd(input._data.reshape((B,) + S), S, k, s, p, out, div).reshape(tuple(lead) + out)
    node = node_for(cls, (input,))
    if node is not None:
        node.geo = geo
        save(node, input)
    return finish(node, r)


def _avg_pool_grad(g, geo, dep):
    lead, S, k, s, p, out, div = geo
    B = _prod(lead)
    r = _avg_bwd(g._data.reshape((B,) + out), S, k, s, p, out, div).reshape(tuple(lead) + S)
    node = node_for(AvgPool2DBackwardBackward0 if len(S) == 2 else AvgPool3DBackwardBackward0, (g, dep))
    if node is not None:
        node.geo = geo
        node.dep_shape = dep._data.shape
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
        r = avg_pool(input.unsqueeze(-2), (1, k[0]), (1, s[0]), (0, p[0]), ceil_mode, count_include_pad, None, 2)
        return _sq(r, -2)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    k, s, p, d, lead, S, out = _geometry(x, kernel_size, stride, padding, 1, ceil_mode, nd, f"avg_pool{nd}d",
                                         check_image=nd == 3)
    check_kernel_dtype("avg_pool2d" if nd == 2 else "avg_pool3d_out_frame", x, ("int64",))
    div = _avg_divisor(S, k, s, p, out, count_include_pad, divisor_override)
    geo = (lead, S, k, s, p, out, div)
    return _avg_pool_apply(input, geo, _AVG_NODES[nd])


# *** adaptive pooling ***

def _adaptive_bounds(S, o):
    xp = xp_for(S, o)
    i = xp.arange(o)
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
    if name.startswith("adaptive_avg") and any(o < 0 for o in out):
        shown = ", ".join(map(str, out)) if nd == 2 else f"{out[0]}, {out[1]},{out[2]}"
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{shown}}}")
    if name.startswith("adaptive_avg") and all(o == 1 for o in out):
        return out   # a mean, which PyTorch takes without checking the sizes
    # PyTorch's 2-D average pool checks only the pooled dims; the others every non-batch dim
    _check_nonempty(x.shape, x.ndim - nd if name == "adaptive_avg_pool2d" else 1, f"{name}()", "input")
    return out


def _check_nonempty(shape, first, who, what):
    for j in range(first, len(shape)):
        if shape[j] == 0:
            raise RuntimeError(f"{who}: Expected {what} to have non-zero size for non-batch dimensions, but {what} "
                               f"has sizes {list(shape)} with dimension {j} being empty")


def _int_size(v, name):
    if v is None or isinstance(v, float):
        raise TypeError(f"{name}(): argument 'output_size' (position 2) must be tuple of ints, not {type(v).__name__}")


def _adaptive_mats(S, out, dtype):
    xp = xp_for(S)
    mats = []
    for i in range(len(S)):
        st, en = _adaptive_bounds(S[i], out[i])
        j = xp.arange(S[i])
        m = ((j[None, :] >= st[:, None]) & (j[None, :] < en[:, None])).astype(dtype)
        m /= (en - st)[:, None].astype(dtype)
        mats.append(m)
    return mats


def _apply_mats(x, mats, transpose):
    """The adaptive average map (or its adjoint) along each pooled dim: one small GEMM per
    dim, or window sums where ``x`` is not finite (a GEMM would spread a NaN or inf over
    every window, PyTorch's sums keep it in its own)."""
    xp = xp_for(x)
    nd = len(mats)
    r = x
    # (a device takes the window sums: the GEMM's test for non-finite values would ask the host)
    finite = xp is np and xp.isfinite(x).all()
    for i, m in enumerate(mats):
        ax = x.ndim - nd + i
        if finite:
            r = xp.moveaxis(xp.tensordot(r, m if transpose else m.T, axes=([ax], [0])), -1, ax)
        else:
            r = _window_sums(r, m, ax, transpose)
    return xp.ascontiguousarray(r)


def _window_sums(a, m, ax, adjoint):
    """``m`` (o, S) holds 1/width over each window: sums of the selected elements (never a
    product with a zero weight), scaled by 1/width; or the adjoint."""
    xp = xp_for(a)
    from .resample import _scatter_axis
    inside = m != 0       # (m: the host's constant map; what comes from it goes onto a's device)
    st = np.argmax(inside, axis=1)
    width = inside.sum(axis=1)
    n = m.shape[1]
    shp = [1] * a.ndim
    shp[ax] = m.shape[0]
    scale = xp.asarray(m[np.arange(m.shape[0]), st].reshape(shp))
    if adjoint:
        a = a * scale
    out = None
    for j in range(int(width.max())):
        idx = xp.asarray(np.minimum(st + j, n - 1))
        keep = xp.asarray((j < width).reshape(shp))
        if adjoint:
            t = _scatter_axis(xp.where(keep, a, a.dtype.type(0)), idx, n, ax)
        else:
            t = xp.where(keep, xp.take(a, idx, axis=ax), a.dtype.type(0))
        out = t if out is None else out + t
    return out if adjoint else out * scale


class _AdaptiveAvgBackward(OpNode):
    def backward(self, g):
        _check_nonempty(g._data.shape, 1, f"adaptive_avg_pool{len(self.mats)}d_backward()", "grad_output")
        (x,) = self.saved_tensors
        return _adaptive_avg_apply(g, self.mats, True, _ADAPTIVE_AVG[len(self.mats)][1], x)


class _AdaptiveAvgBackBackward(OpNode):
    def backward(self, gg):
        nf = self.next_functions
        r = _adaptive_avg_apply(gg, self.mats, False, _ADAPTIVE_AVG[len(self.mats)][0]) if nf[0][0] is not None \
            else None
        return r, _zeros_for(nf, self.dep_shape, gg)


def _zeros_for(nf, shape, like):
    """The zero derivative of a pooling backward w.r.t. the pooled input (PyTorch's
    ``*_backward`` kernels take that input, so their results stay in its graph)."""
    xp = xp_for(nf, shape, like)
    return finish(None, xp.zeros(shape, like._data.dtype)) if len(nf) > 1 and nf[1][0] is not None else None


AdaptiveAvgPool2DBackward0 = type("AdaptiveAvgPool2DBackward0", (_AdaptiveAvgBackward,), {})
AdaptiveAvgPool3DBackward0 = type("AdaptiveAvgPool3DBackward0", (_AdaptiveAvgBackward,), {})
_ADAPTIVE_AVG = {n: (f, type(f.__name__[:-1] + "Backward0", (_AdaptiveAvgBackBackward,), {}))
                 for n, f in ((2, AdaptiveAvgPool2DBackward0), (3, AdaptiveAvgPool3DBackward0))}


def _adaptive_avg_apply(input, mats, transpose, cls, dep=None):
    r = _apply_mats(input._data, mats, transpose)
    node = node_for(cls, (input,) if dep is None else (input, dep))
    if node is not None:
        node.mats = mats
        if dep is not None:
            node.dep_shape = dep._data.shape
        elif not transpose:
            save(node, input)
    return finish(node, r)


def adaptive_avg_pool(input, output_size, nd=2):
    """Adaptive average pooling: window i covers [floor(i*S/o), ceil((i+1)*S/o))."""
    x = input._data
    name = f"adaptive_avg_pool{nd}d"
    if nd == 1:
        if x.ndim not in (2, 3):
            raise RuntimeError(f"adaptive_avg_pool1d(): Expected 2D or 3D tensor, but got {list(x.shape)}")
        osz = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
        _int_size(osz, "adaptive_avg_pool1d")
        return _sq(adaptive_avg_pool(input.unsqueeze(-2), (1, osz), 2), -2)
    out = _adaptive_out(x, output_size, nd, name)
    if all(o == 1 for o in out):
        from .reduce import mean
        return mean(input, tuple(range(x.ndim - nd, x.ndim)), keepdim=True)
    check_kernel_dtype("adaptive_avg_pool2d" if nd == 2 else "adaptive_avg_pool3d_cpu", x)
    mats = _adaptive_mats(x.shape[-nd:], out, x.dtype)
    return _adaptive_avg_apply(input, mats, False, _ADAPTIVE_AVG[nd][0])


class _IndexMaxBackward(OpNode):
    def backward(self, g):
        nd = len(self.in_shape[1])
        _check_nonempty(g._data.shape, 1, f"adaptive_max_pool{nd}d_backward()", "grad_output")
        idx, x = self.saved_tensors
        return _scatter(g, idx, self.in_shape, x, _ADAPTIVE_MAX_BB[nd])


AdaptiveMaxPool2DBackward0 = type("AdaptiveMaxPool2DBackward0", (_IndexMaxBackward,), {})
AdaptiveMaxPool3DBackward0 = type("AdaptiveMaxPool3DBackward0", (_IndexMaxBackward,), {})


class _ScatterBackward(OpNode):
    def backward(self, gg):
        (idx,) = self.saved_tensors
        nf = self.next_functions
        r = _gather(gg, idx, self.nd) if nf[0][0] is not None else None
        return (r, _zeros_for(nf, self.dep_shape, gg)) if len(nf) > 1 else r


_ADAPTIVE_MAX_BB = {n: type(f"AdaptiveMaxPool{n}DBackwardBackward0", (_ScatterBackward,), {}) for n in (2, 3)}


class _GatherBackward(OpNode):
    def backward(self, g):
        (idx,) = self.saved_tensors
        return _scatter(g, idx, self.in_shape)


def _scatter(g, idx, in_shape, dep=None, cls=_ScatterBackward):
    """Differentiable: zeros(in_shape) with g added at flat spatial indices idx (one
    bincount); ``dep`` is the pooled input the result stays tied to (zero derivative)."""
    xp = xp_for(g, idx, in_shape, dep)
    gd = g._data
    lead, sp = in_shape
    B = _prod(lead)
    plane = _prod(sp)
    pos = (idx._data.reshape(B, idx._data.size // B if B else 0) + (xp.arange(B) * plane)[:, None]).ravel()
    out = xp.bincount(pos, weights=gd.reshape(-1), minlength=B * plane).astype(gd.dtype, copy=False)
    node = node_for(cls, (g,) if dep is None else (g, dep))
    if node is not None:
        node.nd = len(sp)
        node.dep_shape = None if dep is None else dep._data.shape
        save(node, idx)
    return finish(node, out.reshape(tuple(lead) + tuple(sp)))


def _gather(x, idx, nd):
    """Differentiable: x's spatial planes read at flat indices idx."""
    xp = xp_for(x, idx)
    xd = x._data
    lead, sp = _split(xd.shape, nd)
    B = _prod(lead)
    i = idx._data
    r = xp.take_along_axis(xd.reshape(B, _prod(sp)), i.reshape(B, i.size // B if B else 0), axis=1).reshape(i.shape)
    node = node_for(_GatherBackward, (x,))
    if node is not None:
        node.in_shape = (lead, sp)
        save(node, idx)
    return finish(node, r)


def _split(shape, nd):
    return shape[:len(shape) - nd], shape[len(shape) - nd:]


def adaptive_max_pool(input, output_size, return_indices=False, nd=2):
    """Adaptive max pooling, with flat argmax indices."""
    xp = xp_for(input, output_size)
    x = input._data
    if nd == 1:
        if x.ndim not in (2, 3):
            raise RuntimeError(f"adaptive_max_pool1d(): Expected 2D or 3D tensor, but got: {list(x.shape)}")
        _check_nonempty(x.shape, 1, "adaptive_max_pool1d()", "input")
        osz = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
        _int_size(osz, "adaptive_max_pool1d")
        y, i = adaptive_max_pool(input.unsqueeze(-2), (1, osz), True, 2)
        y, i = _sq(y, -2), i.squeeze(-2)
        return (y, i) if return_indices else y
    out = _adaptive_out(x, output_size, nd, f"adaptive_max_pool{nd}d")
    check_kernel_dtype(f"adaptive_max_pool{nd}d", x)
    lead, S = _split(x.shape, nd)
    B = _prod(lead)
    x3 = x.reshape((B,) + S)
    if B == 0 or 0 in out:
        y = xp.zeros(tuple(lead) + out, x.dtype)
        ind = xp.zeros(tuple(lead) + out, np.int64)
    else:
        y, ind = _adaptive_max_arrays(x3, S, out, nd)
        y, ind = y.reshape(tuple(lead) + out), ind.reshape(tuple(lead) + out)
    node = node_for(AdaptiveMaxPool2DBackward0 if nd == 2 else AdaptiveMaxPool3DBackward0, (input,))
    idx_t = finish(None, ind)
    res = finish(node, y)
    if node is not None:
        node.in_shape = (lead, S)
        save(node, idx_t, input)
    return (res, idx_t) if return_indices else res


def _adaptive_max_arrays(x3, S, out, nd):
    """Maxima and flat argmax positions of every adaptive window of (B, *S)."""
    xp = xp_for(x3)
    idxs = []
    for i in range(nd):
        st, en = _adaptive_bounds(S[i], out[i])
        kmax = int((en - st).max())
        ii = np.minimum(st[:, None] + np.arange(kmax)[None, :], (en - 1)[:, None])   # (o_i, kmax_i)
        idxs.append(ii if xp is np else xp.asarray(ii))
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
    arg = xp.argmax(win, axis=-1)
    y = xp.take_along_axis(win, arg[..., None], axis=-1)[..., 0]
    if y.dtype.kind in "fV":
        nan = xp.isnan(y)
        if xp is not np or nan.any():   # PyTorch: the last NaN of a window wins
            last = win.shape[-1] - 1 - xp.argmax(xp.isnan(win[..., ::-1]), axis=-1)
            arg = xp.where(nan, last, arg)
    koff = xp.unravel_index(arg, ks)
    flat = None
    for i in range(nd):
        shp = (1,) + tuple(-1 if j == i else 1 for j in range(nd))
        rows = xp.broadcast_to(xp.arange(out[i]).reshape(shp), arg.shape)
        pos = idxs[i][rows, koff[i]]
        flat = pos if flat is None else flat * S[i] + pos
    return y, flat.astype(np.int64)


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


# *** power-average pooling (PyTorch's composite) ***

def lp_pool(input, norm_type, kernel_size, stride=None, ceil_mode=False, nd=2):
    """``(sum over each window of x**p) ** (1/p)``; p = inf is max pooling of |x|. A window
    whose sum is zero gets a zero gradient (the relu below selects it away)."""
    k = _tup(kernel_size, nd, "kernel_size")
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode, False, nd)
        if norm_type == -float("inf"):
            return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode, False, nd)
    out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode, True, None, nd)
    return (out.sign() * out.abs().relu()).mul(_prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)
