"""Resampling: padding (constant, reflect, replicate, circular), upsampling (nearest,
nearest-exact, linear/bilinear/trilinear, bicubic) and im2col/col2im (unfold/fold).

Padding and upsampling are separable linear maps: along each resampled axis, every
output element is a weighted sum of a few input elements (a gather). The forward
gathers, the backward scatters the gradient back through the same map (sorted segment
sums, no ``np.add.at``), and the backward's own backward is the forward again, so
gradients of any order come from one description of the map.
"""
import math

import numpy as np

from ._base import xp_for
from ._base import OpNode, node_for, save, finish, arr

__all__ = ["constant_pad_nd", "pixel_shuffle", "pixel_unshuffle"]


# *** separable gather maps ***

def _scatter_axis(a, idx, n, axis):
    """Adjoint of ``xp.take(., idx, axis)``: sum the slices of ``a`` into ``n`` slots."""
    xp = xp_for(a, idx, n)
    shape = list(a.shape)
    shape[axis] = n
    out = xp.zeros(shape, a.dtype)
    if idx.size == 0 or a.size == 0:
        return out
    sl = [slice(None)] * a.ndim
    m = idx.size
    if m % n == 0 and xp.array_equal(idx, xp.arange(m) // (m // n)):
        # integer nearest upsampling: each slot is the sum of a run of equal length, added
        # up as strided slices (a reduction over a short inner axis is many times slower)
        r = m // n
        sl[axis] = slice(0, None, r)
        out = xp.array(a[tuple(sl)], copy=True)
        for j in range(1, r):
            sl[axis] = slice(j, None, r)
            out += a[tuple(sl)]
        return out
    # the longest stretch copied with a constant offset (the interior of a padding) as a slice
    k = idx - xp.arange(m)
    kk = xp.bincount(k - k.min()).argmax() + k.min()
    run = xp.flatnonzero(k == kk)
    if 2 * run.size >= m and run[-1] - run[0] + 1 == run.size:
        p0, p1 = int(run[0]), int(run[-1]) + 1
        sl[axis] = slice(p0 + kk, p1 + kk)
        src = [slice(None)] * a.ndim
        src[axis] = slice(p0, p1)
        out[tuple(sl)] = a[tuple(src)]
        rest = xp.concatenate([xp.arange(p0), xp.arange(p1, m)]).astype(np.int64)
        if rest.size:
            out += _scatter_axis(xp.take(a, rest, axis=axis), idx[rest], n, axis)
        return out
    counts = xp.bincount(idx, minlength=n)
    if counts.max() <= 4:
        # few sources per slot (padding, upsampling): a few rounds of scatters with unique targets
        remaining = xp.arange(idx.size)
        while remaining.size:
            _, first = xp.unique(idx[remaining], return_index=True)
            pick = remaining[first]
            sl[axis] = idx[pick]
            out[tuple(sl)] += xp.take(a, pick, axis=axis)
            keep = xp.ones(remaining.size, bool)
            keep[first] = False
            remaining = remaining[keep]
        return out
    if xp is np and xp.all(idx[1:] >= idx[:-1]):   # (a device sorts always: no host question)
        si, src = idx, a
    else:  # many sources per slot (embedding rows): sorted segment sums
        order = xp.argsort(idx, kind="stable")
        si, src = idx[order], xp.take(a, order, axis=axis)
    starts = xp.flatnonzero(xp.concatenate(([True], si[1:] != si[:-1])))
    sl[axis] = si[starts]
    out[tuple(sl)] = xp.add.reduceat(src, starts, axis=axis)
    return out


def _weigh(a, w, axis):
    xp = xp_for(a, w)
    if w.dtype == np.bool_:
        return xp.where(_wshape(w, axis, a.ndim), a, a.dtype.type(0))
    return a * _wshape(w.astype(a.dtype, copy=False), axis, a.ndim)


def _wshape(w, axis, ndim):
    s = [1] * ndim
    s[axis] = w.shape[0]
    return w.reshape(s)


def _dense(n_in, n_out, terms, dtype):
    """The map of one axis as a dense (n_out, n_in) matrix."""
    xp = xp_for(n_in, n_out, terms)
    M = xp.zeros((n_out, n_in), dtype)
    rows = xp.arange(n_out)
    for idx, w in terms:
        M[rows, idx] += 1 if w is None else w.astype(dtype)  # (row, idx) pairs are unique within a term
    return M


def _apply_dense(a, M, axis):
    xp = xp_for(a, M)
    if axis == a.ndim - 1:
        return xp.matmul(a, M.T)
    if axis == a.ndim - 2:
        return xp.matmul(M, a)
    return xp.moveaxis(xp.tensordot(M, a, axes=([1], [axis])), 0, axis)


def _gather(a, maps, adjoint):
    """Apply each axis map (axis, n_in, n_out, [(idx, weight or None), ...]) to ``a``.
    A weight is a float array (multiplied, as PyTorch's interpolation does) or a bool mask
    (selected: a padded position is the pad value even beside an inf)."""
    xp = xp_for(a, maps)
    if xp is not np:   # host-built index maps go onto the device once
        maps = [(axis, n_in, n_out, [(xp.asarray(i), w if w is None else xp.asarray(w)) for i, w in terms])
                for axis, n_in, n_out, terms in maps]
    for axis, n_in, n_out, terms in (reversed(maps) if adjoint else maps):
        if n_in == 0 or n_out == 0:  # a map from or onto an empty axis is zero
            shape = list(a.shape)
            shape[axis] = n_in if adjoint else n_out
            a = xp.zeros(shape, a.dtype)
            continue
        if xp is np and any(w is not None for _, w in terms) and n_in * n_out <= 1 << 16 and xp.isfinite(a).all():
            # weighted (interpolating) maps: one small GEMM per axis (a GEMM would spread a
            # NaN or inf over the whole axis: those go through the gathers below)
            M = _dense(n_in, n_out, terms, a.dtype)
            a = _apply_dense(a, M.T if adjoint else M, axis)
            continue
        out = None
        for idx, w in terms:
            if adjoint:
                t = a if w is None else _weigh(a, w, axis)
                t = _scatter_axis(t, idx, n_in, axis)
            else:
                t = xp.take(a, idx, axis=axis)
                if w is not None:
                    t = _weigh(t, w, axis)
            out = t if out is None else out + t
        a = out
    return a


class _MapNode(OpNode):
    """Backward of a separable map: the adjoint map (itself differentiable).

    Where PyTorch's backward kernel takes the op's input (reflection and replication
    padding, area resampling), the forward keeps that input and the adjoint's result stays
    in the graph through it, with a zero derivative, as in PyTorch."""
    keeps_input = False

    def backward(self, g):
        xp = xp_for(g)
        nf = self.next_functions
        if len(nf) == 2:   # an adjoint tied to the forward's input
            r = _apply_map(g, self.maps, not self.adjoint, self.pair) if nf[0][0] is not None else None
            z = finish(None, xp.zeros(self.dep_shape, g._data.dtype)) if nf[1][0] is not None else None
            return r, z
        dep = self.saved_tensors[0] if self.keeps_input and not self.adjoint else None
        return _apply_map(g, self.maps, not self.adjoint, self.pair, dep=dep)


def _node_classes(name, keeps_input=False):
    fwd = type(name + "Backward0", (_MapNode,), {"__module__": __name__, "keeps_input": keeps_input})
    bwd = type(name + "BackwardBackward0", (_MapNode,), {"__module__": __name__})
    return fwd, bwd


def _apply_map(x, maps, adjoint, pair, extra=None, dep=None):
    """``x`` through the map (or its adjoint); ``pair`` = (forward node class, adjoint
    node class); ``extra`` is a constant array added to the result (a pad value); ``dep``
    the forward's input that an adjoint stays tied to."""
    r = _gather(x._data, maps, adjoint)
    if extra is not None:
        r = r + extra
    node = node_for(pair[1] if adjoint else pair[0], (x,) if dep is None else (x, dep))
    if node is not None:
        node.maps, node.adjoint, node.pair = maps, adjoint, pair
        if dep is not None:
            node.dep_shape = dep._data.shape
        elif not adjoint and node.keeps_input:
            save(node, x)
    return finish(node, arr(r))


# *** padding ***

_PAD_NODES = {}


def _pad_classes(name):
    if name not in _PAD_NODES:
        _PAD_NODES[name] = _node_classes(name, name.startswith(("Reflection", "Replication", "AdaptiveAvg"))) \
            if name != "CopySlices" else (
            type(name, (_MapNode,), {"__module__": __name__}),
            type("SliceBackward0", (_MapNode,), {"__module__": __name__}))
    return _PAD_NODES[name]


def _pad_index(n, lo, hi, mode):
    xp = xp_for(n, lo, hi)
    j = xp.arange(n + lo + hi, dtype=np.int64) - lo
    if mode == "reflect":
        j = xp.abs(j)
        j = xp.where(j >= n, 2 * (n - 1) - j, j)
    elif mode == "replicate":
        j = xp.clip(j, 0, n - 1)
    elif mode == "circular":  # crop first, then wrap around what is left
        m = n + min(lo, 0) + min(hi, 0)
        j = (xp.arange(n + lo + hi, dtype=np.int64) - max(lo, 0)) % max(m, 1) + max(-lo, 0)
    return j


_NONCONST_HELP = ("Supported combinations for non-constant padding:\n"
                  "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                  "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                  "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def pad(input, pad, mode="constant", value=None):
    """``torch.nn.functional.pad``: pads the last ``len(pad) // 2`` dimensions (last first)."""
    pad = [int(p) for p in pad]
    x = input._data
    nd = x.ndim
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > nd:
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension "
                           f"but got padding length {len(pad)} and input of dimension {nd}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant":
        if value is not None and value != 0:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
        k = len(pad) // 2
        if k not in (1, 2, 3) or nd not in (k + 1, k + 2):
            raise NotImplementedError(f"Padding size {len(pad)} is not supported for {nd}D input tensor.\n"
                                      + _NONCONST_HELP)
        if mode != "circular" and 0 in x.shape[1 if nd == k + 2 else 0:]:
            # reflect / replicate: only the batch dimension may be empty
            raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and "
                               f"other non-zero dimensions for input, but got: [{', '.join(map(str, x.shape))}]")
        if mode != "circular" and x.dtype.kind == "b":
            from .conv import check_kernel_dtype
            check_kernel_dtype(("reflection_pad%dd" if mode == "reflect" else "replication_pad%dd") % k, x)
    return _pad_nd(input, pad, mode, 0.0 if value is None else value)


def constant_pad_nd(input, pad, value=0):
    """``torch.constant_pad_nd``: constant padding (negative amounts crop)."""
    return _pad_nd(input, [int(p) for p in pad], "constant", value)


def _pad_nd(input, pad, mode, value):
    xp = xp_for(input, pad, value)
    x = input._data
    nd = x.ndim
    k = len(pad) // 2
    maps, masks = [], []
    shape = list(x.shape)
    for i in range(k):
        axis = nd - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = x.shape[axis]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({lo}, {hi}) at dimension "
                               f"{axis} of input [{', '.join(map(str, x.shape))}]")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        n_out = n + lo + hi
        if mode == "constant" and (n + min(lo, 0) < 0 or n + min(lo, 0) + min(hi, 0) < 0):
            raise RuntimeError("narrow(): length must be non-negative.")  # PyTorch crops with narrow first
        if n_out < 0:
            raise RuntimeError(f"The input size {n}, plus negative padding {lo} and {hi} resulted in a negative "
                               f"output size, which is invalid. Check dimension {axis} of your input.")
        shape[axis] = n_out
        if lo == 0 and hi == 0:
            continue
        j = xp.asarray(_pad_index(n, lo, hi, mode))   # (host-built: onto the device once)
        if mode == "constant":
            valid = (j >= 0) & (j < n)
            masks.append((axis, valid))
            maps.append((axis, n, n_out, [(xp.where(valid, j, 0), valid)]))
        else:
            maps.append((axis, n, n_out, [(j, None)]))
    extra = None
    if mode == "constant" and value != 0 and masks:
        full = xp.ones([1] * nd, bool)
        for axis, valid in masks:
            full = full & _wshape(valid, axis, nd)
        extra = xp.where(full, 0, value).astype(x.dtype)
    if mode == "constant":
        name = "ConstantPadNd"
    elif mode == "circular":
        name = "CopySlices"  # PyTorch builds circular padding from slice copies
    else:
        name = ("ReflectionPad" if mode == "reflect" else "ReplicationPad") + "%dD" % k
    if not maps:
        r = x.copy()
        if extra is not None:
            r = r + extra
        node = node_for(_pad_classes(name)[0], (input,))
        if node is not None:
            node.maps, node.adjoint, node.pair = [], False, _pad_classes(name)
            if node.keeps_input:
                save(node, input)
        return finish(node, r)
    return _apply_map(input, maps, False, _pad_classes(name), extra)


# *** upsampling ***

_UP_NAMES = {("nearest", 1): "UpsampleNearest1D", ("nearest", 2): "UpsampleNearest2D",
             ("nearest", 3): "UpsampleNearest3D", ("nearest-exact", 1): "UpsampleNearestExact1D",
             ("nearest-exact", 2): "UpsampleNearestExact2D", ("nearest-exact", 3): "UpsampleNearestExact3D",
             ("linear", 1): "UpsampleLinear1D", ("bilinear", 2): "UpsampleBilinear2D",
             ("trilinear", 3): "UpsampleTrilinear3D", ("bicubic", 2): "UpsampleBicubic2D"}


def _scale_value(scale, n_in, n_out, ft):
    if scale is not None and scale > 0:
        return ft(1.0 / scale)
    return ft(n_in) / ft(n_out)


def _nearest_terms(n_in, n_out, scale, exact):
    xp = xp_for(n_in, n_out, scale, exact)
    o = xp.arange(n_out)
    if not exact and n_out == n_in:
        return [(o, None)]
    if not exact and n_out == 2 * n_in:
        return [(o >> 1, None)]
    s = _scale_value(scale, n_in, n_out, np.float32)
    of = o.astype(np.float32)
    src = xp.floor((of + np.float32(0.5)) * s) if exact else xp.floor(of * s)
    return [(xp.minimum(src.astype(np.int64), n_in - 1), None)]


def _linear_scale(n_in, n_out, align_corners, scale, ft):
    if align_corners:
        return ft(n_in - 1) / ft(n_out - 1) if n_out > 1 else ft(0)
    return _scale_value(scale, n_in, n_out, ft)


def _linear_terms(n_in, n_out, align_corners, scale, ft):
    xp = xp_for(n_in, n_out, scale, ft)
    s = _linear_scale(n_in, n_out, align_corners, scale, ft)
    d = xp.arange(n_out).astype(ft)
    if align_corners:
        src = s * d
    else:
        src = xp.maximum(s * (d + ft(0.5)) - ft(0.5), ft(0))
    i0 = src.astype(np.int64)
    i1 = i0 + (i0 < n_in - 1)
    l1 = xp.clip(src - i0.astype(ft), 0, 1).astype(ft)
    l0 = (ft(1) - l1).astype(ft)
    return [(i0, l0), (i1, l1)]


def _cubic_terms(n_in, n_out, align_corners, scale, ft):
    xp = xp_for(n_in, n_out, scale, ft)
    s = _linear_scale(n_in, n_out, align_corners, scale, ft)
    d = xp.arange(n_out).astype(ft)
    src = s * d if align_corners else s * (d + ft(0.5)) - ft(0.5)
    i = xp.floor(src).astype(np.int64)
    t = (src - i.astype(ft)).astype(ft)
    A = ft(-0.75)

    def c1(x):  # |x| <= 1
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def c2(x):  # 1 < |x| < 2
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    ws = [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]
    return [(xp.clip(i - 1 + k, 0, n_in - 1), ws[k].astype(ft)) for k in range(4)]


def _upsample(input, out_size, scales, mode, align_corners):
    xp = xp_for(input, out_size, scales)
    x = input._data
    k = len(out_size)
    sp = x.shape[-k:]
    if 0 in sp or 0 in out_size:
        names = ("D", "H", "W")[3 - k:]
        ins = ", ".join(f"{n}: {v}" for n, v in zip(names, sp))
        outs = ", ".join(f"{n}: {v}" for n, v in zip(names, out_size))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({ins}) "
                           f"{'and ' if k == 1 else ''}output ({outs})")
    if x.size == 0 and 0 in x.shape[1:]:
        raise RuntimeError(f"Non-empty {x.ndim}D data tensor expected but got a tensor with sizes {list(x.shape)}")
    if x.dtype.kind not in "fV":
        from .conv import check_kernel_dtype
        if mode in ("nearest", "nearest-exact"):
            kernel = "upsample_nearest2d_channels_last" if k == 2 else "compute_indices_weights_nearest"
        elif mode == "bilinear":
            kernel = "upsample_bilinear2d_channels_last"
        else:
            kernel = "compute_indices_weights_cubic" if mode == "bicubic" else "compute_indices_weights_linear"
        check_kernel_dtype(kernel, x, ("uint8",) if mode not in ("linear", "trilinear") else ())
    ft = np.float64 if x.dtype == np.float64 else np.float32
    k = len(out_size)
    maps = []
    for i in range(k):
        axis = x.ndim - k + i
        n_in, n_out = x.shape[axis], out_size[i]
        sc = scales[i] if scales is not None else None
        if mode in ("nearest", "nearest-exact"):
            terms = _nearest_terms(n_in, n_out, sc, mode == "nearest-exact")
        elif mode == "bicubic":
            terms = _cubic_terms(n_in, n_out, align_corners, sc, ft)
        else:
            terms = _linear_terms(n_in, n_out, align_corners, sc, ft)
        maps.append((axis, n_in, n_out, terms))
    name = _UP_NAMES[(mode, k)]
    if x.dtype.kind == "u" and mode in ("bilinear", "bicubic"):
        # bytes are interpolated in float and rounded back (PyTorch: fixed point; may differ by one)
        r = _gather(x.astype(np.float32), maps, False)
        return finish(None, xp.clip(xp.rint(r), 0, 255).astype(x.dtype))
    return _apply_map(input, maps, False, _pad_classes(name))


_LINEAR_DIMS = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """``torch.nn.functional.interpolate`` (nearest, nearest-exact, linear, bilinear,
    bicubic, trilinear, area)."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if dim < 1:
        raise ValueError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for the "
                         f"modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact "
                         f"(got {mode})")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if scale_factor is not None:
            raise ValueError("only one of size or scale_factor should be defined")
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError("Input and output must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(input.shape[2:])} and output size of "
                                 f"{list(size)}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                                 "output size in (o1, o2, ...,oK) format.")
            out_size = [int(s) for s in size]
        else:
            out_size = [int(size)] * dim
        scales = None
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError("Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of "
                                 f"shape {list(scale_factor)}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                                 "format and scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        out_size = [int(math.floor(float(input.shape[i + 2]) * scales[i])) for i in range(dim)]
        if recompute_scale_factor:
            scales = None
    else:
        raise ValueError("either size or scale_factor should be defined")
    if antialias:
        raise NotImplementedError("Anti-alias option is not supported")
    if mode == "area":
        return _area(input, out_size)
    if mode in ("nearest", "nearest-exact"):
        if dim > 3:
            raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) "
                                      f"for the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                      f"nearest-exact (got {mode})")
        return _upsample(input, out_size, scales, mode, None)
    if mode in _LINEAR_DIMS:
        want = _LINEAR_DIMS[mode]
        if input.dim() != want:
            raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {want}D input")
        return _upsample(input, out_size, scales, mode, align_corners)
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                              f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact "
                              f"(got {mode})")


def _area(input, out_size):
    """Area interpolation: PyTorch's adaptive average pooling."""
    from .pool import adaptive_avg_pool
    return adaptive_avg_pool(input, out_size, len(out_size))


# *** im2col / col2im (unfold / fold) ***

def _pair(v, n=2):
    if isinstance(v, (tuple, list)):
        return tuple(int(a) for a in v)
    return (int(v),) * n


def _im2col_np(x, ks, dil, pad, st):
    """(N, C, H, W) -> (N, C*kh*kw, L), one strided slice per kernel position."""
    N, C, H, W = x.shape
    kh, kw = ks
    oh = (H + 2 * pad[0] - dil[0] * (kh - 1) - 1) // st[0] + 1
    ow = (W + 2 * pad[1] - dil[1] * (kw - 1) - 1) // st[1] + 1
    mod = xp_for(x)
    xpad = mod.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1]))) if pad[0] or pad[1] else x
    cols = mod.empty((N, C, kh, kw, max(oh, 0), max(ow, 0)), x.dtype)
    for i in range(kh):
        hi = i * dil[0]
        for j in range(kw):
            wj = j * dil[1]
            cols[:, :, i, j] = xpad[:, :, hi:hi + st[0] * (oh - 1) + 1:st[0], wj:wj + st[1] * (ow - 1) + 1:st[1]]
    return cols.reshape(N, C * kh * kw, oh * ow)


def _col2im_np(cols, out_hw, ks, dil, pad, st):
    """Adjoint of ``_im2col_np``: (N, C*kh*kw, L) -> (N, C, H, W), overlaps summed."""
    N = cols.shape[0]
    kh, kw = ks
    H, W = out_hw
    oh = (H + 2 * pad[0] - dil[0] * (kh - 1) - 1) // st[0] + 1
    ow = (W + 2 * pad[1] - dil[1] * (kw - 1) - 1) // st[1] + 1
    C = cols.shape[1] // (kh * kw)
    c = cols.reshape(N, C, kh, kw, oh, ow)
    xpad = xp_for(cols).zeros((N, C, H + 2 * pad[0], W + 2 * pad[1]), cols.dtype)
    for i in range(kh):
        hi = i * dil[0]
        for j in range(kw):
            wj = j * dil[1]
            xpad[:, :, hi:hi + st[0] * (oh - 1) + 1:st[0], wj:wj + st[1] * (ow - 1) + 1:st[1]] += c[:, :, i, j]
    return xpad[:, :, pad[0]:pad[0] + H, pad[1]:pad[1] + W]


class Im2ColBackward0(OpNode):
    def backward(self, g):
        return _col2im(g, self.hw, *self.args)


class Col2ImBackward0(OpNode):
    def backward(self, g):
        return _im2col(g, *self.args)


def _im2col(x, ks, dil, pad, st):
    d = x._data
    r = _im2col_np(d if d.ndim == 4 else d[None], ks, dil, pad, st)
    node = node_for(Im2ColBackward0, (x,))
    if node is not None:
        node.hw, node.args = d.shape[-2:], (ks, dil, pad, st)
    return finish(node, r if d.ndim == 4 else r[0])


def _col2im(cols, out_hw, ks, dil, pad, st):
    xp = xp_for(cols, out_hw, ks, dil, pad, st)
    d = cols._data
    r = xp.ascontiguousarray(_col2im_np(d if d.ndim == 3 else d[None], out_hw, ks, dil, pad, st))
    node = node_for(Col2ImBackward0, (cols,))
    if node is not None:
        node.args = (ks, dil, pad, st)
    return finish(node, r if d.ndim == 3 else r[0])


def _check_pos(name, vals, what):
    if any(v <= 0 for v in vals):
        raise RuntimeError(f"{what} should be greater than zero, but got "
                           f"{name}_height: {vals[0]} {name}_width: {vals[1]}")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """``torch.nn.functional.unfold`` (im2col): sliding blocks as columns."""
    nd = input.dim()
    if nd == 2:
        raise IndexError("Dimension out of range (expected to be in range of [-2, 1], but got 2)")
    if nd not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported (got {nd}D)")
    ks, dil, pad, st = _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    _check_pos("kernel", ks, "kernel size")
    _check_pos("dilation", dil, "dilation")
    _check_pos("stride", st, "stride")
    if any(p < 0 for p in pad):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {pad[0]} pad_width: {pad[1]}")
    H, W = input.shape[-2], input.shape[-1]
    oh = (H + 2 * pad[0] - dil[0] * (ks[0] - 1) - 1) // st[0] + 1
    ow = (W + 2 * pad[1] - dil[1] * (ks[1] - 1) - 1) // st[1] + 1
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Given input with spatial size ({H}, {W}), kernel_size=({ks[0]}, {ks[1]}), "
                           f"dilation=({dil[0]}, {dil[1]}), padding=({pad[0]}, {pad[1]}), calculated shape of the "
                           f"array of sliding blocks as ({oh}, {ow}), but its components must be at least one.")
    if input._data.dtype.kind in "iu":
        from .conv import check_kernel_dtype
        check_kernel_dtype("im2col_out_cpu", input._data)
    return _im2col(input, ks, dil, pad, st)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """``torch.nn.functional.fold`` (col2im): columns summed back into an image."""
    nd = input.dim()
    if nd not in (2, 3):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
                           f"non-zero dimensions for input, but got: [{', '.join(map(str, input.shape))}]")
    osz, ks, dil, pad, st = _pair(output_size), _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    _check_pos("kernel", ks, "kernel size")
    _check_pos("dilation", dil, "dilation")
    _check_pos("stride", st, "stride")
    x = input
    kk = ks[0] * ks[1]
    oh = (osz[0] + 2 * pad[0] - dil[0] * (ks[0] - 1) - 1) // st[0] + 1
    ow = (osz[1] + 2 * pad[1] - dil[1] * (ks[1] - 1) - 1) // st[1] + 1
    if x.shape[-1] != oh * ow:
        raise RuntimeError(f"Given output_size=({osz[0]}, {osz[1]}), kernel_size=({ks[0]}, {ks[1]}), "
                           f"dilation=({dil[0]}, {dil[1]}), padding=({pad[0]}, {pad[1]}), stride=({st[0]}, {st[1]}), "
                           f"expected size of input's dimension 2 to match the calculated number of sliding blocks "
                           f"{oh} * {ow} = {oh * ow}, but got input.size({nd - 1})={x.shape[-1]}.")
    if x.shape[-2] % kk:
        raise RuntimeError(f"Expected size of input's dimension {nd - 2} to be divisible by the product of "
                           f"kernel_size, but got input.size({nd - 2})={x.shape[-2]} and "
                           f"kernel_size=({ks[0]}, {ks[1]}).")
    if x._data.dtype.kind in "iu":
        from .conv import check_kernel_dtype
        check_kernel_dtype("col2im_out_cpu", x._data)
    return _col2im(x, osz, ks, dil, pad, st)


# *** pixel shuffle ***

def _shuffle_np(x, r):
    xp = xp_for(x, r)
    *lead, C, H, W = x.shape
    y = x.reshape(tuple(lead) + (C // (r * r), r, r, H, W))
    n = len(lead)
    y = y.transpose(tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    # np.array copies always (a factor of 1 would otherwise hand back the input's memory)
    return xp.array(y, order="C").reshape(tuple(lead) + (C // (r * r), H * r, W * r))


def _unshuffle_np(x, r):
    xp = xp_for(x, r)
    *lead, C, H, W = x.shape
    y = x.reshape(tuple(lead) + (C, H // r, r, W // r, r))
    n = len(lead)
    y = y.transpose(tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return xp.array(y, order="C").reshape(tuple(lead) + (C * r * r, H // r, W // r))


class PixelShuffleBackward0(OpNode):
    def backward(self, g):
        return _pixel(g, self.r, False)


class PixelUnshuffleBackward0(OpNode):
    def backward(self, g):
        return _pixel(g, self.r, True)


def _pixel(x, r, shuffle):
    d = _shuffle_np(x._data, r) if shuffle else _unshuffle_np(x._data, r)
    node = node_for(PixelShuffleBackward0 if shuffle else PixelUnshuffleBackward0, (x,))
    if node is not None:
        node.r = r
    return finish(node, d)


def pixel_shuffle(input, upscale_factor):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError("pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    C = input.shape[-3]
    if C % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={C} is not divisible by {r * r}")
    return _pixel(input, r, True)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W)."""
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError("pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    H, W = input.shape[-2], input.shape[-1]
    if H % r:
        raise RuntimeError("pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={H} is not divisible by {r}")
    if W % r:
        raise RuntimeError("pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={W} is not divisible by {r}")
    return _pixel(input, r, False)


TENSOR_METHODS = {}
INPLACE = {}
