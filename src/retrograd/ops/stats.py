"""Searching, counting and order statistics: searchsorted/bucketize, histc/histogram/histogramdd,
bincount, unique/unique_consecutive, isin, and quantile/nanquantile (differentiable, as
PyTorch's composite: a sort, two gathers and a lerp)."""
import math

import numpy as np

from ._base import OpNode, node_for, finish, arr, write_out, Tensor, wrap_dim, xp_for

__all__ = ["searchsorted", "bucketize", "histc", "histogram", "histogramdd", "bincount", "unique",
           "unique_consecutive", "isin", "quantile", "nanquantile"]

_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
          "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
          "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _word(npdt):
    return _NAMES.get(str(npdt), str(npdt))


def _const(a):
    """A constant tensor of the array (or NumPy scalar) ``a``, on the device of its data."""
    return finish(None, arr(a))


def _bin_sums(idx, n, w=None):
    """The counts (int64) or float64 sums of the weights ``w`` of each of the ``n`` bins that the
    non-negative ``idx`` name (none larger than n - 1). A device scatters with atomic adds:
    its bincount would size its result from the data (a host synchronisation)."""
    xp = xp_for(idx, w)
    if xp is np:
        return np.bincount(idx, w, minlength=n)
    if w is None:   # (uint64: CUDA's atomic adds have no signed 64-bit form)
        z = xp.zeros(n, np.uint64)
        xp.add.at(z, idx, xp.ones(idx.shape, np.uint64))
        return z.astype(np.int64)
    z = xp.zeros(n, np.float64)
    xp.add.at(z, idx, w.astype(np.float64))
    return z


def _refusing(node_name, message):
    """A node class whose backward raises ``message`` (PyTorch records such a node for ops
    without a derivative, so the output requires grad and backward fails)."""
    def backward(self, g):
        raise (NotImplementedError if message.startswith("the derivative") else RuntimeError)(message)
    return type(node_name, (OpNode,), {"backward": backward, "__module__": __name__})


def _recorded(cls, inputs, data):
    return finish(node_for(cls, inputs), arr(data))


class _Pair(tuple):
    """A PyTorch named tuple (``torch.return_types.<name>``)."""
    __slots__ = ()
    _fields = ()

    def __new__(cls, *items):
        return tuple.__new__(cls, items)

    def __getattr__(self, name):
        try:
            return self[type(self)._fields.index(name)]
        except ValueError:
            raise AttributeError(name) from None

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"torch.return_types.{type(self).__name__}(\n{body})"

    def __reduce__(self):
        return (type(self), tuple(self))


def _named_tuple(name, fields):
    return type(name, (_Pair,), {"__slots__": (), "_fields": fields, "__module__": "torch.return_types"})


_Histogram = _named_tuple("histogram", ("hist", "bin_edges"))
_Histogramdd = _named_tuple("histogramdd", ("hist", "bin_edges"))


# *** searchsorted / bucketize ***

def _bound(seq, vals, right, sorter=None):
    """Binary search of each row of ``vals`` in the matching row of ``seq`` (both 2-D), with
    PyTorch's comparisons: the first position whose value is >= (right: >) the value, so a NaN
    value lands past the end and NaNs in the sequence compare as PyTorch's do."""
    xp = xp_for(seq, vals)
    n = seq.shape[1]
    start = xp.zeros(vals.shape, np.int64)
    end = xp.full(vals.shape, n, np.int64)
    # each halving leaves at most floor(width / 2) candidates, so n.bit_length() of them end
    # every search (a fixed count: the host never asks whether one is still going)
    with np.errstate(invalid="ignore"):
        for _ in range(n.bit_length()):
            active = start < end
            mid = start + ((end - start) >> 1)
            pos = xp.minimum(mid, n - 1)
            if sorter is not None:
                pos = xp.take_along_axis(sorter, pos, 1)
            midv = xp.take_along_axis(seq, pos, 1)
            go = ~(midv > vals) if right else ~(midv >= vals)
            start = xp.where(active & go, mid + 1, start)
            end = xp.where(active & ~go, mid, end)
    return start


def _common_dtype(a, b):
    return np.result_type(a.dtype, b.dtype) if a.dtype != b.dtype else a.dtype


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """Indices where ``input``'s values would be inserted into ``sorted_sequence`` (innermost
    dimension) to keep it sorted; ``right``/``side="right"``: after equal values."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    seq = sorted_sequence._data
    scalar = not isinstance(input, Tensor)
    vals = xp_for(seq).asarray(input) if scalar else input._data
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if seq.ndim > 1 and (scalar or vals.ndim != seq.ndim or seq.shape[:-1] != vals.shape[:-1]):
        vs = [] if scalar else list(vals.shape)
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(seq.shape)} and input value tensor {vs}")
    srt = None
    if sorter is not None:
        srt = sorter._data
        if srt.dtype != np.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{_word(srt.dtype)}")
        if srt.shape != seq.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                               f"tensor {list(seq.shape)}and got sorter tensor {list(srt.shape)}")
        if srt.size and (srt.min() < 0 or srt.max() >= seq.shape[-1]):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
    dt = _common_dtype(seq, vals)
    if dt.kind in "bc":
        raise NotImplementedError(f"\"searchsorted_out_cpu\" not implemented for '{_word(dt)}'")
    s, v = seq.astype(dt, copy=False), vals.astype(dt, copy=False)
    n = s.shape[-1]
    if s.ndim == 1:
        s2, v2 = s.reshape(1, n), v.reshape(1, -1)
        srt2 = None if srt is None else srt.reshape(1, n)
    else:
        s2 = s.reshape(-1, n)
        v2 = v.reshape(s2.shape[0], v.shape[-1])
        srt2 = None if srt is None else srt.reshape(-1, n)
    r = _bound(s2, v2, right, srt2).reshape(v.shape)
    r = r.astype(np.int32 if out_int32 else np.int64)
    res = finish(None, arr(r))
    return res if out is None else write_out(out, res, "searchsorted")


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The index of the bucket (given by the sorted 1-D ``boundaries``) each value falls in."""
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries._data.ndim})")
    res = searchsorted(boundaries, input, out_int32=out_int32, right=right)
    return res if out is None else write_out(out, res, "bucketize")


# *** histograms ***

def _hist_bins_check(bins, d=0):
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension {d}")


def _bin_of(xp, edges, x, nb):
    """(bin index, whether counted) of each value, as PyTorch's kernel finds them: a value
    counts where first edge <= x <= last edge (so NaN never, and nothing at all for edges whose
    last is below their first), in the bin the binary search for it gives, the last edge
    itself in the last bin."""
    idx = xp.searchsorted(edges, x, side="right") - 1
    idx = xp.where(idx >= nb, nb - 1, idx)
    keep = (x >= edges[0]) & (x <= edges[-1]) & (idx >= 0)
    return idx, keep


def _counts(x, edges, w, dt):
    """Counts (or weight sums) of ``x`` in the bins ``edges`` (each bin closed on the left, the
    last also on the right); values outside are ignored."""
    xp = xp_for(x, edges)
    nb = edges.size - 1
    with np.errstate(invalid="ignore"):
        idx, keep = _bin_of(xp, edges, x, nb)
    # (values outside go to one more bin, dropped: no data-sized selection)
    return _bin_sums(xp.where(keep, idx, nb), nb + 1, w)[:nb].astype(dt)


def histc(input, bins=100, min=0, max=0, *, out=None):
    """Histogram of ``input`` in ``bins`` equal bins over [min, max] (the data's range when both
    are 0); values outside are ignored."""
    x = input._data
    if x.dtype.kind not in "fV":
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_word(x.dtype)}'")
    _hist_bins_check(bins)
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    xf = x.astype(np.float32) if x.dtype.kind == "V" else x
    if lo == hi and xf.size:   # (the data's range as host numbers: a synchronisation on a device, as in PyTorch)
        lo, hi = float(xf.min()), float(xf.max())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_fmt(lo)}, {_fmt(hi)}] is not finite")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    t = xf.dtype.type
    # the bin of each value as PyTorch's kernel computes it: (x - min) * bins / (max - min), truncated
    xp = xp_for(xf)
    with np.errstate(invalid="ignore"):
        inside = (xf >= t(lo)) & (xf <= t(hi))
        pos = ((xf - t(lo)) * t(bins) / (t(hi) - t(lo)))
        # values outside (and NaNs) go to one more bin, dropped
        pos = xp.where(inside, pos, t(bins)).astype(np.int64)
    pos = xp.where(inside, xp.minimum(pos, bins - 1), bins)
    r = _bin_sums(pos.reshape(-1), bins + 1)[:bins].astype(x.dtype)
    res = finish(None, arr(r))
    return res if out is None else write_out(out, res, "histc")


def _fmt(v):
    if math.isinf(v) or math.isnan(v):
        return str(v)
    return str(int(v)) if v == int(v) else repr(v)


_HistogramNode = _refusing("NotImplemented", "derivative for aten::histogram is not implemented")
_HistogramddNode = _refusing("NotImplemented", "derivative for aten::_histogramdd_from_bin_cts is not implemented")
_HistogramddEdgesNode = _refusing("NotImplemented", "derivative for aten::_histogramdd_bin_edges is not implemented")


def _edges_for(col, bins, rng, d, fn):
    """The bin edges of one dimension: ``bins`` a count (equal bins over ``rng`` or the data's
    range, widened by 1/2 on each side when empty) or a tensor of edges."""
    dt = col.dtype
    if isinstance(bins, Tensor):
        e = bins._data
        if e.dtype != dt:
            from ._linear import _CN
            raise RuntimeError("torch.histogramdd: input tensor and bins tensors should have the same dtype, but got "
                               f"input with dtype {_CN.get(dt.name, dt.name)} and bins for dimension {d} with dtype "
                               f"{_CN.get(e.dtype.name, e.dtype.name)}")
        if e.ndim != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {e.ndim} "
                               f"dimensions in the bins tensor for dimension {d}")
        return e
    bins = int(bins)
    _hist_bins_check(bins, d)
    if rng is not None:
        lo, hi = float(rng[0]), float(rng[1])
    elif col.size:   # (host numbers: a synchronisation on a device)
        lo, hi = float(col.min()), float(col.max())
    else:  # no data: the unit interval
        lo, hi = 0.0, 1.0
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_fmt(lo)} max {_fmt(hi)} "
                           f"for dimension {d}")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{_fmt(lo)}, {_fmt(hi)}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return xp_for(col).linspace(lo, hi, bins + 1).astype(dt)


def _check_float(x, name, weight=None):
    if weight is not None and weight._data.dtype != x.dtype:
        from ._linear import _CN
        raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should "
                           f"have the same dtype, but got input({_CN.get(x.dtype.name, x.dtype.name)}), and "
                           f"weight({_CN.get(weight._data.dtype.name, weight._data.dtype.name)})")
    if x.dtype.kind not in "f":
        raise NotImplementedError(f"\"{name}\" not implemented for '{_word(x.dtype)}'")


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """(hist, bin_edges): counts (or ``weight`` sums; with ``density``, a density) of ``input`` in
    ``bins`` (a count of equal bins over ``range`` or the data's range, or a 1-D tensor of edges)."""
    x = input._data
    if isinstance(bins, Tensor):  # PyTorch checks the weight's dtype first on this path
        _check_float(x, "histogramdd", weight)
    _check_float(x, "histogramdd")
    _check_float(x, "histogramdd", weight)
    flat = x.reshape(-1)
    w = None if weight is None else weight._data.reshape(-1)
    edges = _edges_for(flat, bins, range, 0, "torch.histogram()")
    if isinstance(bins, Tensor):   # a new tensor holding a copy of the given edges
        edges = edges.copy()
    h = _counts(flat, edges, w, x.dtype)
    if density:
        tot = h.sum()
        h = (h / (tot * xp_for(edges).diff(edges))).astype(x.dtype)
    inputs = (input,) + ((weight,) if weight is not None else ()) + ((bins,) if isinstance(bins, Tensor) else ())
    hist = _recorded(_HistogramNode, inputs, h)
    e = _recorded(_HistogramNode, inputs, edges)
    if out is not None:
        write_out(out[0], hist, "histogram")
        write_out(out[1], e, "histogram")
        return _Histogram(out[0], out[1])
    return _Histogram(hist, e)


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):
    """(hist, bin_edges): the D-dimensional histogram of the rows of ``input`` (..., D)."""
    x = input._data
    _check_float(x, "histogramdd", weight)
    D_ = x.shape[-1]
    pts = x.reshape(-1, D_)
    if isinstance(bins, (int, np.integer)):
        bins = [int(bins)] * D_
    if len(bins) != D_:
        raise RuntimeError(f"torch.histogramdd: expected {D_} sequences of bin edges for each of the {D_} "
                           f"dimensions of the input, but got {len(bins)}")
    if range is not None and len(range) != 2 * D_:
        raise RuntimeError(f"torch.histogramdd: for a {D_}-dimensional histogram range should have {2 * D_} "
                           f"elements, but got {len(range)}")
    edges = [_edges_for(pts[:, d], b, None if range is None else range[2 * d:2 * d + 2], d, "torch.histogramdd")
             for d, b in enumerate(bins)]
    w = None if weight is None else weight._data.reshape(-1)
    nbs = [e.size - 1 for e in edges]
    xp = xp_for(x)
    keep = xp.ones(pts.shape[0], bool)
    flat_idx = xp.zeros(pts.shape[0], np.int64)
    with np.errstate(invalid="ignore"):
        for d, e in enumerate(edges):
            c = pts[:, d]
            idx, inside = _bin_of(xp, e, c, nbs[d])
            keep &= inside
            flat_idx = flat_idx * nbs[d] + xp.clip(idx, 0, nbs[d] - 1)
    total = math.prod(nbs)
    h = _bin_sums(xp.where(keep, flat_idx, total), total + 1, w)[:total].astype(x.dtype)
    h = h.reshape(nbs)
    if density:
        vol = xp.ones(nbs)
        for d, e in enumerate(edges):
            shape = [1] * D_
            shape[d] = nbs[d]
            vol = vol * xp.diff(e).reshape(shape)
        h = (h / (h.sum() * vol)).astype(x.dtype)
    inputs = (input,) + ((weight,) if weight is not None else ())
    hist = _recorded(_HistogramddNode, inputs, h)
    # edges given as tensors come back as those tensors; computed ones (from the input's range, with the
    # weight among their arguments) are outputs of a node without a derivative
    return _Histogramdd(hist, tuple(b if isinstance(b, Tensor) else _recorded(_HistogramddEdgesNode, inputs, e)
                                    for b, e in zip(bins, edges)))


# *** bincount ***

_BincountNode = _refusing("NotImplemented", "derivative for aten::bincount is not implemented")


def bincount(input, weights=None, minlength=0):
    """Counts of each non-negative integer in the 1-D ``input`` (or sums of ``weights``)."""
    x = input._data
    if x.dtype.kind not in "iub":
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_word(x.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if x.ndim != 1 or (x.size and x.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None:
        w = weights._data
        if w.ndim != 1 or w.shape[0] != x.shape[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
        dt = np.float32 if w.dtype == np.float32 else np.float64
        # (the device module's bincount sizes its result from the data's maximum: a synchronisation,
        # as PyTorch's CUDA bincount's)
        r = xp_for(x, w).bincount(x.astype(np.int64), w.astype(np.float64), minlength=minlength).astype(dt)
        return _recorded(_BincountNode, (weights,), r)
    return finish(None, arr(xp_for(x).bincount(x.astype(np.int64), minlength=minlength).astype(np.int64)))


# *** unique / unique_consecutive ***

_Unique2Node = _refusing("Unique2Backward0", "the derivative for '_unique2' is not implemented.")
_UniqueDimNode = _refusing("UniqueDimBackward0", "the derivative for 'unique_dim' is not implemented.")
_UniqueConsecutiveNode = _refusing("UniqueConsecutiveBackward0",
                                   "the derivative for 'unique_consecutive' is not implemented.")


def _results(input, node_cls, values, inverse, counts, return_inverse, return_counts):
    out = _recorded(node_cls, (input,), values)
    if not (return_inverse or return_counts):
        return out
    res = [out]
    if return_inverse:
        res.append(finish(None, arr(inverse.astype(np.int64))))
    if return_counts:
        res.append(finish(None, arr(counts.astype(np.int64))))
    return tuple(res)


def _as_rows(x, d):
    """``x`` with dim ``d`` first, each slice along it flattened into a row (PyTorch's error when
    the slices are empty but not their number)."""
    if x.size == 0 and x.shape[d] != 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
    m = xp_for(x).moveaxis(x, d, 0)
    return m, m.reshape(m.shape[0], math.prod(m.shape[1:]))   # (-1 is ambiguous with 0 rows)


def _runs(new, order=None):
    """(group of each element, count of each group, positions of the groups' first elements)
    from the mask ``new`` of the elements that start a group (``order``: their positions in the
    input, the inverse mapped back through it). The number of groups is data: on a device, the
    selection of the first elements synchronises once to size it (as PyTorch's CUDA unique)."""
    xp = xp_for(new)
    group = xp.cumsum(new) - 1
    firsts = xp.flatnonzero(new)
    cnt = _bin_sums(group, firsts.size) if new.size else xp.zeros(0, np.int64)
    if order is not None:
        inv = xp.empty(order.size, np.int64)
        inv[order] = group
        group = inv
    return group, cnt, firsts


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values of ``input`` (sorted; NaNs are each distinct), or its distinct slices
    along ``dim``; optionally the inverse indices and counts."""
    x = input._data
    xp = xp_for(x)
    if dim is None:
        flat = x.reshape(-1)
        if flat.size == 0:
            return _results(input, _Unique2Node, flat.copy(), xp.zeros(x.shape, np.int64),
                            xp.zeros(0, np.int64), return_inverse, return_counts)
        # sorted, a group starting wherever the value changes (NaN != NaN: each NaN its own)
        order = flat.argsort()
        srt = flat[order]
        new = xp.ones(flat.size, bool)
        new[1:] = srt[1:] != srt[:-1]
        inv, cnt, firsts = _runs(new, order)
        return _results(input, _Unique2Node, srt[firsts].astype(x.dtype), inv.reshape(x.shape), cnt,
                        return_inverse, return_counts)
    d = wrap_dim(dim, x.ndim)
    m, rows = _as_rows(x, d)
    if rows.shape[0] == 0:
        return _results(input, _UniqueDimNode, x.copy(), xp.zeros(0, np.int64), xp.zeros(0, np.int64),
                        return_inverse, return_counts)
    order = xp.lexsort(rows.T[::-1]) if rows.shape[1] else xp.arange(rows.shape[0])
    srows = rows[order]
    new = xp.ones(order.size, bool)
    if order.size > 1:
        new[1:] = (srows[1:] != srows[:-1]).any(axis=1) if rows.shape[1] else False
    inv, cnt, firsts = _runs(new, order)
    vals = xp.moveaxis(m[order[firsts]], 0, d)
    return _results(input, _UniqueDimNode, xp.ascontiguousarray(vals), inv, cnt, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """``input`` with each run of equal consecutive values (or slices along ``dim``) kept once;
    optionally the inverse indices and the run lengths."""
    x = input._data
    xp = xp_for(x)
    if dim is None:
        flat = x.reshape(-1)
        new = xp.ones(flat.size, bool)
        if flat.size > 1:
            new[1:] = flat[1:] != flat[:-1]
        group, cnt, firsts = _runs(new)
        return _results(input, _UniqueConsecutiveNode, flat[firsts], group.reshape(x.shape), cnt,
                        return_inverse, return_counts)
    d = wrap_dim(dim, x.ndim)
    m, rows = _as_rows(x, d)
    new = xp.ones(rows.shape[0], bool)
    if rows.shape[0] > 1:
        new[1:] = (rows[1:] != rows[:-1]).any(axis=1) if rows.shape[1] else False
    group, cnt, firsts = _runs(new)
    vals = xp.ascontiguousarray(xp.moveaxis(m[firsts], 0, d))
    return _results(input, _UniqueConsecutiveNode, vals, group, cnt, return_inverse, return_counts)


# *** isin ***

def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of ``elements`` occurs in ``test_elements`` (either may be a number)."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__})")
    xp = xp_for(elements, test_elements)
    e = elements._data if isinstance(elements, Tensor) else xp.asarray(elements)
    t = test_elements._data if isinstance(test_elements, Tensor) else xp.asarray(test_elements)
    for a in (e, t):
        if a.dtype.kind in "bc":
            raise RuntimeError(f"Unsupported input type encountered for isin(): {_word(a.dtype)}")
    dt = np.result_type(e.dtype, t.dtype)
    r = xp.isin(e.astype(dt, copy=False), t.astype(dt, copy=False).reshape(-1), invert=invert)
    return finish(None, arr(xp.asarray(r, bool)))


# *** quantile / nanquantile ***

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(opname, input, q, dim, keepdim, interpolation, ignore_nan, out):
    if out is not None:  # PyTorch's composite out= variant records nothing, even for inputs requiring grad
        from ..autograd import no_grad
        with no_grad():
            return write_out(out, _quantile(opname, input, q, dim, keepdim, interpolation, ignore_nan, None),
                             opname)
    from .reduce import sort
    from .index_ops import gather
    from .index import where
    from .pointwise import lerp
    from ._linear import _reshape_named
    name = "quantile"  # PyTorch's messages say quantile() for nanquantile too
    x = input._data
    if x.size == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    qt = q if isinstance(q, Tensor) else None
    if qt is not None and qt._data.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if x.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if qt is not None and qt._data.dtype != x.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    xp = xp_for(x)
    if qt is None:
        if not 0 <= q <= 1:     # (NaN too)
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
        qarr = xp.full(1, q, x.dtype)
    else:
        qarr = qt._data.reshape(-1)
        # (checked for host q only, as PyTorch: on a device it would be a synchronisation)
        if type(qarr) is np.ndarray and not ((qarr >= 0) & (qarr <= 1)).all():      # (NaN too, as PyTorch's)
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    scalar_q = qt is None or qt._data.ndim == 0
    if dim is None:
        src = input.reshape(-1)
        out_shape = (1,) * x.ndim if keepdim else ()
        d = 0
    else:
        d = wrap_dim(dim, x.ndim)
        src = input.movedim(d, -1) if d != x.ndim - 1 else input
        out_shape = tuple(1 if i == d else s for i, s in enumerate(x.shape)) if keepdim else \
            tuple(s for i, s in enumerate(x.shape) if i != d)
    srt = sort(src, -1)[0]
    s = srt._data
    n = s.shape[-1]
    nq = qarr.size
    with np.errstate(invalid="ignore"):
        isnan = xp.isnan(s)
        if ignore_nan:  # ranks among the non-NaN values
            last = (n - isnan.sum(-1, keepdims=True) - 1).astype(x.dtype)
        else:
            last = xp.full(s.shape[:-1] + (1,), n - 1, x.dtype)
        shape_q = (1,) * (s.ndim - 1) + (nq,)
        raw = qarr.reshape(shape_q) * last
        # quantile: a row holding a NaN takes the last rank (its result is NaN); nanquantile: a
        # negative rank (a row of only NaNs, q > 0) becomes 0. Selected, as PyTorch's masked_fill:
        # q's gradient there is 0
        fill = (raw < 0) if ignore_nan else xp.broadcast_to(isnan.any(-1, keepdims=True), raw.shape)
        fill_rank = xp.asarray(0 if ignore_nan else n - 1, x.dtype)
        if qt is not None and qt._requires_grad and interpolation == "linear":
            rank_t = qt.reshape(shape_q) * _const(last)
            rank_t = where(_const(fill), _const(fill_rank), rank_t)
            ranks = rank_t._data
        else:
            rank_t = None
            ranks = xp.where(fill, fill_rank, raw)
        if interpolation == "lower":
            ranks = xp.floor(ranks)
        elif interpolation == "higher":
            ranks = xp.ceil(ranks)
        elif interpolation == "nearest":
            ranks = xp.round(ranks)  # half to even, as PyTorch's round
    below = xp.floor(ranks).astype(np.int64) if interpolation in ("linear", "midpoint") else ranks.astype(np.int64)
    vb = gather(srt, -1, _const(below))
    if interpolation in ("linear", "midpoint"):
        above = xp.ceil(ranks).astype(np.int64)
        va = gather(srt, -1, _const(above))
        if interpolation == "midpoint":
            w = _const(xp.full(ranks.shape, 0.5, x.dtype))
        elif rank_t is not None:
            w = rank_t - _const(below.astype(x.dtype))
        else:
            w = _const((ranks - below).astype(x.dtype))
        vb = lerp(vb, va, w)
    # (..., nq) -> (nq, *out_shape): the q dimension first, as PyTorch's
    res = vb.movedim(-1, 0) if vb.ndim > 1 else vb
    final = out_shape if scalar_q else (nq,) + out_shape
    res = _reshape_named(res, final, "SqueezeBackward4")
    return res if out is None else write_out(out, res, opname)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The ``q``-quantiles (a number or a 0-d/1-D tensor in [0, 1]) of ``input`` along ``dim``
    (all elements when None); NaN where a NaN is among the values."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False, out)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """``quantile`` ignoring NaN values (NaN where a row has no other value)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True, out)


TENSOR_METHODS = {n: globals()[n] for n in ("histc", "histogram", "bincount", "unique", "unique_consecutive",
                                            "quantile", "nanquantile")}
INPLACE = {}
