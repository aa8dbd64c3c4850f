"""Indexing: ``t[idx]`` (basic indexing gives views, advanced indexing copies),
``t[idx] = v`` as an in-place op, and ``where``/``nonzero``/``argwhere``.

``t[idx]`` is applied the way PyTorch applies it, one index item at a time: an integer
is a select, a slice a slice, ``None`` an unsqueeze, and tensors (or lists, or bools)
are gathered into one advanced index applied last. So the grad_fn chain is PyTorch's
(``x[0, 1:]`` is a SliceBackward0 whose input is a SelectBackward0). The array work is
done once, on the combined NumPy index.
"""
import warnings

import numpy as np

from ._base import check_devices
from ._base import xp_for
from ._base import (OpNode, node_for, save, finish, view_of, arr, binary_operands, Tensor, _state,
                    check_inplace, view_rebase_error, check_internal_overlap, check_partial_overlap,
                    LEAF_INPLACE_MSG, zeros_grad, set_history)
from ..autograd.graph import _seq, Node

__all__ = ["where", "nonzero", "argwhere", "index_put"]

_ndarray = np.ndarray
_INT_TYPES = (int, np.integer)


# --- the differentiable scatter/gather pair behind every index backward -----------------

_ADD_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def add_rows(out, idx, rows):
    """``out[idx[i]] += rows[i]`` for each i in order, in place: a float32/float64 host
    (M, D) ``out``, int64 ``idx`` in range, ``rows`` (len(idx), D) of ``out``'s dtype.
    Repeated rows are summed in the order they come, as PyTorch's CPU kernels add them
    (index_put with accumulate, embedding's backward, scatter_add): its single-thread
    bits. A numba kernel where present, else NumPy's add.at over flat positions."""
    from .conv import _conv_kernels
    rows = np.ascontiguousarray(rows)
    k = _conv_kernels(rows)
    if k is not None:
        k.index_add_rows(out, np.ascontiguousarray(idx, dtype=np.int64), rows)
        return out
    d = out.shape[1]
    np.add.at(out.reshape(-1), (idx[:, None] * d + np.arange(d)).ravel(), rows.reshape(-1))
    return out


def add_flat(out, lin, w):
    """``out[lin[i]] += w[i]`` in order, in place (1-D; see add_rows)."""
    from .conv import _conv_kernels
    w = np.ascontiguousarray(w)
    k = _conv_kernels(w)
    if k is not None:
        k.index_add_flat(out, np.ascontiguousarray(lin, dtype=np.int64), w)
        return out
    np.add.at(out, lin, w)
    return out


def _acc_into(shape, npdt, np_index, g, xp=np):
    """zeros(shape) with ``g`` added at ``np_index`` (repeats accumulate), vectorized.

    The usual index (full slices and integer/bool arrays) becomes a segment sum over
    rows: the indexed dims are moved to the front and flattened, the rest of each
    element is a row. Anything else goes through flat positions and bincount.
    """
    n = 1
    for s_ in shape:
        n *= s_
    if g.size == 0 or n == 0:
        return xp.zeros(shape, npdt)
    if xp is not np:   # host-built index arrays onto the device once
        np_index = tuple(xp.asarray(i) if type(i) is np.ndarray else i for i in np_index)
    if all((isinstance(i, slice) and i == slice(None)) or (hasattr(i, "dtype") and i.dtype.kind == "b")
           for i in np_index):  # masks select each element at most once: a plain write
        z = xp.zeros(shape, npdt)
        z[np_index] = g
        return z
    rows = _rows_form(shape, np_index, xp)
    if rows is None:
        lin = xp.arange(n).reshape(shape)[np_index]
        g = xp.broadcast_to(g, lin.shape)
        if xp is not np:   # a device scatters with atomic adds (bincount would size itself: a sync)
            z = xp.zeros(n, npdt)
            xp.add.at(z, lin.ravel(), g.ravel().astype(npdt, copy=False))
            return z.reshape(shape)
        if npdt.kind == "c":
            re = xp.bincount(lin.ravel(), weights=g.real.ravel(), minlength=n)
            im = xp.bincount(lin.ravel(), weights=g.imag.ravel(), minlength=n)
            return (re + 1j * im).astype(npdt).reshape(shape)
        return xp.bincount(lin.ravel(), weights=g.ravel().astype(np.float64, copy=False),
                           minlength=n).astype(npdt, copy=False).reshape(shape)
    pos, arrays, lead = rows
    bshape = xp.broadcast_shapes(*[a.shape for a in arrays])
    nb = len(bshape)
    g = xp.broadcast_to(g, _result_shape(shape, pos, bshape, lead))
    if lead and pos[0] != 0:
        g = xp.moveaxis(g, tuple(range(pos[0], pos[0] + nb)), tuple(range(nb)))
    idims = tuple(shape[p] for p in pos)
    rest = tuple(shape[k] for k in range(len(shape)) if k not in pos)
    r = 1
    for s_ in rest:
        r *= s_
    flat = xp.ravel_multi_index(tuple(xp.broadcast_to(a % d, bshape) for a, d in zip(arrays, idims)), idims).ravel()
    g2 = g.reshape(flat.size, r)
    if xp is not np:   # a device scatters with atomic adds (segment starts would be a data-sized list: a sync)
        m = 1
        for d in idims:
            m *= d
        z = xp.zeros((m, r), npdt)
        xp.add.at(z, flat, g2.astype(npdt, copy=False))
        return xp.moveaxis(z.reshape(idims + rest), tuple(range(len(pos))), pos)
    m = 1
    for d in idims:
        m *= d
    z = xp.zeros((m, r), npdt)
    if npdt in _ADD_FLOATS:
        add_rows(z, flat, g2.astype(npdt, copy=False))
    else:
        order = xp.argsort(flat, kind="stable")
        sf = flat[order]
        starts = xp.flatnonzero(xp.concatenate((xp.ones(1, bool), sf[1:] != sf[:-1])))
        z[sf[starts]] = xp.add.reduceat(g2[order], starts, axis=0)
    z = z.reshape(idims + rest)
    return xp.moveaxis(z, tuple(range(len(pos))), pos)


def _rows_form(shape, np_index, xp):
    """(indexed dims, their int arrays, adjacent?) when ``np_index`` is full slices and arrays."""
    pos, arrays = [], []
    d = 0
    for it in np_index:
        if isinstance(it, slice) and it == slice(None):
            d += 1
        elif hasattr(it, "dtype") and hasattr(it, "ndim"):
            if it.dtype.kind == "b":
                for a in xp.nonzero(it):
                    pos.append(d)
                    arrays.append(a)
                    d += 1
            elif it.dtype.kind in "iu":
                pos.append(d)
                arrays.append(it.astype(np.int64, copy=False))
                d += 1
            else:
                return None
        else:
            return None
    if not pos or d > len(shape):
        return None
    lead = pos == list(range(pos[0], pos[0] + len(pos)))
    return tuple(pos), arrays, lead


def _result_shape(shape, pos, bshape, lead):
    rest = [shape[k] for k in range(len(shape)) if k not in pos]
    if lead:
        k = pos[0]
        return tuple(rest[:k]) + tuple(bshape) + tuple(rest[k:])
    return tuple(bshape) + tuple(rest)


def _is_basic(np_index):
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice)) for i in np_index)


class IndexBackwardBackward0(OpNode):
    """Backward of a placement into zeros: read the same positions back."""
    def backward(self, gg):
        return take_np(gg, self.np_index)


class TakeNpBackward(OpNode):
    def backward(self, g):
        return put_np(g, self.shape, self.np_index)


def put_np(g, shape, np_index, accumulate=True):
    """zeros(shape) with tensor ``g`` placed (added, for advanced indices) at a NumPy index."""
    xp = xp_for(g, shape, np_index, accumulate)
    gd = g._data
    npdt = gd.dtype
    if _is_basic(np_index):
        z = xp.zeros(shape, npdt) if type(gd) is _ndarray else _xp(gd).zeros(shape, npdt)
        z[np_index] = gd
    else:
        z = _acc_into(shape, npdt, np_index, gd, np if type(gd) is _ndarray else _xp(gd))
    node = node_for(IndexBackwardBackward0, (g,))
    if node is not None:
        node.np_index = np_index
    return finish(node, z)


class ZeroRegionBackward(OpNode):
    def backward(self, g):
        return zero_region(g, self.np_index)


def zero_region(t, np_index):
    """A copy of ``t`` with zeros at ``np_index`` (differentiable)."""
    r = t._data.copy()
    r[np_index] = 0
    node = node_for(ZeroRegionBackward, (t,))
    if node is not None:
        node.np_index = np_index
    return finish(node, r)


def take_np(t, np_index):
    """``t[np_index]`` for a ready NumPy index (differentiable, always a copy)."""
    xp = xp_for(t, np_index)
    x = t._data
    r = x[np_index]
    r = xp.array(r) if type(x) is _ndarray else r.copy()
    node = node_for(TakeNpBackward, (t,))
    if node is not None:
        node.shape, node.np_index = x.shape, np_index
    return finish(node, r)


def _xp(a):
    from ._base import xp_of
    return xp_of(a)


# --- getitem ----------------------------------------------------------------------------

class SelectBackward0(OpNode):
    def backward(self, g):
        return put_np(g, self.in_shape, self.np_index)


class SliceBackward0(SelectBackward0):
    pass


class IndexBackward0(SelectBackward0):
    def backward(self, g):
        _ = self.saved_tensors  # the index tensors: refused if modified in place since
        return put_np(g, self.in_shape, self.np_index)


class UnsqueezeBackward0(OpNode):
    def backward(self, g):
        return g.reshape(self.in_shape)


class AliasBackward0(OpNode):
    def backward(self, g):
        return g


_INDEX_TYPE_MSG = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                   "valid indices (got {})")
_TENSOR_INDEX_MSG = "tensors used as indices must be long, int, byte or bool tensors"
_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.uint8), np.dtype(np.bool_))


def _user_level():
    """The stack level of the first frame outside this module (where a warning belongs)."""
    import sys
    f, level = sys._getframe(1), 1
    while f is not None and f.f_globals.get("__name__") == __name__:
        f, level = f.f_back, level + 1
    return level


def _as_index_tuple(idx):
    """PyTorch's rule for when a sequence index is a tuple of indices."""
    if type(idx) is tuple:
        return idx, False
    if isinstance(idx, list) and len(idx) < 32:
        for it in idx:
            if it is None or it is Ellipsis or isinstance(it, (slice, Tensor, list, tuple)):
                warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated and will "
                              "be changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this "
                              "will be interpreted as tensor index, x[torch.tensor(seq)], which will result either "
                              "in an error or a different result", UserWarning, stacklevel=_user_level())
                return tuple(idx), False
    return (idx,), isinstance(idx, slice)


def _index_array(i):
    """An advanced index item (Tensor or nested list) as an integer or bool array."""
    xp = xp_for(i)
    if isinstance(i, Tensor):
        a = i._data
        if a.dtype not in _INDEX_DTYPES:
            raise IndexError(_TENSOR_INDEX_MSG)
        if a.dtype == np.uint8:
            warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
                          "instead.", UserWarning, stacklevel=_user_level())
            a = a.astype(bool)
        return a
    try:
        a = xp.asarray(i)
    except ValueError:
        raise IndexError(_TENSOR_INDEX_MSG)
    if a.size == 0:
        return a.astype(np.int64)
    if a.dtype.kind not in "biu":
        raise IndexError(_TENSOR_INDEX_MSG)
    return a if a.dtype.kind == "b" else a.astype(np.int64, copy=False)


def _shape_str(s):
    return "[" + ", ".join(str(int(v)) for v in s) + "]"


def _whole(start, stop, step, n):
    """PyTorch skips a slice (no SliceBackward0) only when it is written as the whole
    dimension: start 0 (or none), stop at least the size (or none), step 1 (or none)."""
    return (start is None or start == 0) and (stop is None or stop >= n) and (step is None or step == 1)


def _parse(shape, idx, setting=False):
    """Walk a PyTorch index over ``shape``.

    Returns (steps, np_basic, adv, out_shape_after_basic) where ``steps`` lists the
    basic ops in PyTorch's order as (node class, in_shape, np_index on that input), and
    ``adv`` is None or the full NumPy index (slices elsewhere) for the advanced part.
    """
    xp = xp_for(shape, idx, setting)
    items, single_slice = _as_index_tuple(idx)
    single_slice = single_slice and not setting
    ndim = len(shape)
    specified = 0
    for it in items:
        t = type(it)
        if t is int or t is slice:
            specified += 1
        elif it is None or it is Ellipsis or t is bool:
            continue
        elif isinstance(it, Tensor):
            specified += it._data.ndim if it._data.dtype.kind == "b" or it._data.dtype == np.uint8 else 1
        else:
            specified += 1
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    cur = list(shape)
    steps = []
    basic = []        # NumPy index applied to the original array for the basic part
    adv = {}          # result dim -> index array
    dim = 0
    n_adv = 0         # advanced index tensors so far (PyTorch names them in bounds errors)
    for pos, it in enumerate(items):
        t = type(it)
        if t is int:
            n = cur[dim]
            if not -n <= it < n:
                raise IndexError(f"index {it} is out of bounds for dimension {pos} with size {n}")
            steps.append((SelectBackward0, tuple(cur), (slice(None),) * dim + (it,)))
            del cur[dim]
            basic.append(it)
            continue
        if t is slice and (it.step is None or (type(it.step) is int and it.step > 0)) \
                and (it.start is None or type(it.start) is int) and (it.stop is None or type(it.stop) is int):
            n = cur[dim]
            a, b, c = it.indices(n)
            if _whole(it.start, it.stop, it.step, n) and not single_slice:
                basic.append(slice(None))
            else:
                steps.append((SliceBackward0, tuple(cur), (slice(None),) * dim + (it,)))
                cur[dim] = len(range(a, b, c))
                basic.append(it)
            dim += 1
            continue
        if isinstance(it, Tensor) and it._data.ndim == 0:
            k = it._data.dtype.kind
            if k in "iu" and it._data.dtype != np.uint8:
                it = int(it._data)
            elif k == "b" or it._data.dtype == np.uint8:
                it = bool(it._data)
            else:
                raise IndexError(_TENSOR_INDEX_MSG)
        if isinstance(it, bool):
            steps.append((UnsqueezeBackward0, tuple(cur), None))
            cur.insert(dim, 1)
            basic.append(None)
            adv[dim] = xp.zeros(1 if it else 0, np.int64)
            dim += 1
        elif isinstance(it, _INT_TYPES):
            i = int(it)
            n = cur[dim]
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {pos} with size {n}")
            np_idx = (slice(None),) * dim + (i,)
            steps.append((SelectBackward0, tuple(cur), np_idx))
            del cur[dim]
            basic.append(i)
        elif isinstance(it, slice):
            vals = []
            for v in (it.start, it.stop, it.step):
                if isinstance(v, Tensor):
                    v = v.item()
                elif v is not None and not isinstance(v, _INT_TYPES):
                    v = v.__index__()
                vals.append(v)
            start, stop, step = vals
            if step is not None and step <= 0:
                raise ValueError("step must be greater than zero" if step else "slice step cannot be zero")
            n = cur[dim]
            s = slice(start, stop, step)
            a, b, c = s.indices(n)
            length = len(range(a, b, c))
            if _whole(start, stop, step, n) and not single_slice:
                basic.append(slice(None))
            else:
                np_idx = (slice(None),) * dim + (s,)
                steps.append((SliceBackward0, tuple(cur), np_idx))
                cur[dim] = length
                basic.append(s)
            dim += 1
        elif it is None:
            steps.append((UnsqueezeBackward0, tuple(cur), None))
            cur.insert(dim, 1)
            basic.append(None)
            dim += 1
        elif it is Ellipsis:
            skip = ndim - specified
            if Ellipsis in basic:  # PyTorch accepts a second '...' (it spans no dims then)
                basic.extend([slice(None)] * skip)
            else:
                basic.append(Ellipsis)
            dim += skip
        elif isinstance(it, np.ndarray) and it.ndim == 0 and it.dtype.kind in "iu":
            i = int(it)
            n = cur[dim]
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {pos} with size {n}")
            steps.append((SelectBackward0, tuple(cur), (slice(None),) * dim + (i,)))
            del cur[dim]
            basic.append(i)
        elif isinstance(it, (Tensor, list, tuple, np.ndarray, range)):
            a = _index_array(it)
            if a.dtype.kind == "b":
                for k in range(a.ndim):
                    if dim + k >= len(cur) or a.shape[k] != cur[dim + k]:
                        raise IndexError(f"The shape of the mask {_shape_str(a.shape)} at index {k} does not match "
                                         f"the shape of the indexed tensor {_shape_str(cur)} at index {dim + k}")
                adv[dim] = a
                basic.extend([slice(None)] * a.ndim)
                dim += a.ndim
                n_adv += a.ndim
            else:
                n = cur[dim]
                if a.size:
                    if n == 0:
                        raise IndexError("index is out of bounds for dimension with size 0")
                if a.size and type(a) is np.ndarray:   # (a device checks in its kernel, as CUDA's device assert: no host sync)
                    hi, lo = int(a.max()), int(a.min())
                    if hi >= n or lo < -n:
                        raise IndexError(f"index {hi if hi >= n else lo} is out of bounds for dimension {n_adv} "
                                         f"with size {n}")
                adv[dim] = a
                basic.append(slice(None))
                dim += 1
                n_adv += 1
        elif isinstance(it, str):
            raise TypeError("new(): invalid data type 'str'")
        else:
            raise IndexError(_INDEX_TYPE_MSG.format(type(it).__name__))
    if adv:
        shapes = []
        for k in sorted(adv):
            a = adv[k]
            shapes += [(int(xp.count_nonzero(a)),)] * a.ndim if a.dtype.kind == "b" else [a.shape]
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                             + ", ".join(_shape_str(sh) for sh in shapes)) from None
        full = []
        d = 0
        for k in sorted(adv):
            full.extend([slice(None)] * (k - d))
            a = adv[k]
            full.append(a)
            d = k + (a.ndim if a.dtype.kind == "b" else 1)
        adv_index = tuple(full)
    else:
        adv_index = None
    return steps, tuple(basic), adv_index, tuple(cur)


def _chain(x_tensor, steps, final_cls=None, adv_index=None, adv_in_shape=None):
    """Build the grad_fn chain for ``steps`` (+ an optional IndexBackward0); return the last node."""
    if not (_state.grad and _rg(x_tensor)):
        return None
    npdt = x_tensor._data.dtype
    edge = x_tensor._edge()
    node = None
    for k, (cls, in_shape, np_idx) in enumerate(steps):
        node = _new_node(cls, edge)
        node.in_shape, node.np_index = in_shape, np_idx
        edge = (node, 0)
        nxt = steps[k + 1][1] if k + 1 < len(steps) else adv_in_shape
        if nxt is not None:
            node._out_meta = ((nxt, npdt),)
    if final_cls is not None:
        node = _new_node(final_cls, edge)
        node.in_shape, node.np_index = adv_in_shape, adv_index
    return node


def _rg(t):
    """Whether ``t`` requires grad (a view does when its base does)."""
    return t._requires_grad or (t._base is not None and t._base._requires_grad)


def _new_node(cls, edge):
    n = object.__new__(cls)
    n.next_functions = (edge,)
    n._seq = next(_seq)
    if Node._anomaly_stack is not None:
        n._trace = Node._anomaly_stack()
    return n


def _basic_view(x, basic):
    xp = xp_for(x, basic)
    r = x[basic]
    if type(r) is not type(x):
        r = x[basic + (Ellipsis,)] if Ellipsis not in basic else xp.asarray(r)
    return r


_ZERO_DIM_INT = ("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ "
                 "to convert a 0-dim tensor to a number")


def getitem(self, idx):
    """``t[idx]``: basic indexing gives a view, advanced indexing a copy."""
    x = self._data
    t = type(idx)
    if t is int or t is slice:  # the common cases, without the general walk
        if not x.ndim:
            raise IndexError(_ZERO_DIM_INT if t is int else "slice() cannot be applied to a 0-dim tensor.")
        n = x.shape[0]
        if t is int:
            if not -n <= idx < n:
                raise IndexError(f"index {idx} is out of bounds for dimension 0 with size {n}")
            r = x[idx, ...]
            cls = SelectBackward0
        else:
            if idx.step is not None and not (type(idx.step) is int and idx.step > 0):
                return _getitem_general(self, idx)
            if (idx.start is not None and type(idx.start) is not int) or \
                    (idx.stop is not None and type(idx.stop) is not int):
                return _getitem_general(self, idx)
            r = x[idx]
            cls = SliceBackward0
        node = None
        if _state.grad and _rg(self):
            node = _new_node(cls, self._edge())
            node.in_shape, node.np_index = x.shape, (idx,)
        return view_of(self, finish(node, r), lambda b, i=idx: getitem(b, i))
    if t is tuple and len(idx) <= x.ndim:
        r = _getitem_basic_tuple(self, x, idx)
        if r is not None:
            return r
    return _getitem_general(self, idx)


def _getitem_basic_tuple(self, x, idx):
    """``t[i, a:b, ...]`` with only ints and plain slices: one NumPy view, PyTorch's node chain."""
    steps = []
    shape = list(x.shape)
    dim = 0
    for pos, it in enumerate(idx):
        t = type(it)
        if t is int:
            n = shape[dim]
            if not -n <= it < n:
                raise IndexError(f"index {it} is out of bounds for dimension {pos} with size {n}")
            steps.append((SelectBackward0, tuple(shape), (slice(None),) * dim + (it,)))
            del shape[dim]
        elif t is slice and (it.step is None or (type(it.step) is int and it.step > 0)) \
                and (it.start is None or type(it.start) is int) and (it.stop is None or type(it.stop) is int):
            n = shape[dim]
            a, b, c = it.indices(n)
            if not _whole(it.start, it.stop, it.step, n):
                steps.append((SliceBackward0, tuple(shape), (slice(None),) * dim + (it,)))
                shape[dim] = len(range(a, b, c))
            dim += 1
        else:
            return None
    r = x[idx + (Ellipsis,)]
    if not steps:
        steps = [(AliasBackward0, x.shape, None)]
    node = _chain(self, steps)
    return view_of(self, finish(node, r), lambda b, i=idx: getitem(b, i))


def _getitem_general(self, idx):
    x = self._data
    if not x.ndim and isinstance(idx, (int, np.integer)) and not isinstance(idx, bool):
        raise IndexError(_ZERO_DIM_INT)
    steps, basic, adv_index, mid_shape = _parse(x.shape, idx)
    r = _basic_view(x, basic) if basic else x
    if adv_index is None:
        if not steps:
            steps = [(AliasBackward0, x.shape, None)]
        node = _chain(self, steps)
        return view_of(self, finish(node, r), lambda b, i=idx: getitem(b, i))
    r = r[adv_index]
    if type(r) is _ndarray and r.base is not None:
        r = r.copy()
    r = arr(r)
    node = _chain(self, steps, IndexBackward0, adv_index, mid_shape)
    if node is not None:
        # Our own copy of masks, so a bad write to one is reported, never read.
        node.np_index = tuple(a.copy() if isinstance(a, np.ndarray) and a.dtype.kind == "b" else a for a in adv_index)
        items = idx if type(idx) is tuple else (idx,)
        save(node, *[i for i in items if isinstance(i, Tensor) and i._data.ndim])
    return finish(node, r)


# --- setitem: an in-place op ------------------------------------------------------------

class CopySlices(OpNode):
    """Gradient of ``y[idx] = v``: y's gradient with the region zeroed, v's gradient the region."""
    overlapping = False   # written through a view whose elements share memory (PyTorch refuses)

    def backward(self, g):
        if self.overlapping and self.next_functions[0][0] is not None:
            from ._base import INTERNAL_OVERLAP_MSG
            raise RuntimeError(INTERNAL_OVERLAP_MSG)
        nf = self.next_functions
        gy = gv = None
        if nf[0][0] is not None:
            gy = zero_region(g, self.np_index)
        if len(nf) > 1 and nf[1][0] is not None:
            gv = _fit_value_grad(take_np(g, self.np_index), self.value_shape)
        return gy, gv


class IndexPutBackward0(CopySlices):
    accumulate = False

    def backward(self, g):
        nf = self.next_functions
        gy = gv = None
        if nf[0][0] is not None:
            gy = g if self.accumulate else zero_region(g, self.np_index)
        if len(nf) > 1 and nf[1][0] is not None:
            gv = _fit_value_grad(take_np(g, self.np_index), self.value_shape)
        return gy, gv


class FillBackward3(OpNode):
    def backward(self, g):
        nf = self.next_functions
        return (zeros_grad(g) if nf[0][0] is not None else None,
                g.sum() if len(nf) > 1 and nf[1][0] is not None else None)


class CopyBackwards(OpNode):
    def backward(self, g):
        nf = self.next_functions
        gv = _fit_value_grad(g, self.value_shape) if nf[1][0] is not None else None
        return (zeros_grad(g) if nf[0][0] is not None else None, gv)


def _fit_value_grad(gv, vshape):
    """Sum the region's gradient down to the value's shape (it was broadcast)."""
    if tuple(gv._data.shape) == tuple(vshape):
        return gv
    n = 1
    for s in vshape:
        n *= s
    lead = len(gv._data.shape) - len(vshape)
    if lead < 0:  # the value had extra leading 1-dims, stripped before the copy
        return gv.reshape(vshape)
    return gv.sum_to_size(vshape) if vshape else gv.sum()


def _value_array(self, value):
    if isinstance(value, Tensor):
        return value, value._data
    if isinstance(value, (bool, int, float, complex, np.integer)) and not isinstance(value, np.bool_):
        return None, value   # (numbers; NumPy's float32 or bool scalars are refused, as PyTorch does)
    tp = type(value)
    name = tp.__name__ if tp.__module__ == "builtins" else f"{tp.__module__}.{tp.__name__}"
    raise TypeError(f"can't assign a {name} to a {_type_name(self)}")


def _type_name(t):
    from ._base import type_name
    return type_name(t)


def _strip_leading_ones(shape):
    shape = list(shape)
    while shape and shape[0] == 1:
        shape.pop(0)
    return tuple(shape)


def _check_copy_shape(v_shape, target, vt):
    """PyTorch's copy_ broadcast check of a value into the indexed region."""
    vs = _strip_leading_ones(v_shape) if len(v_shape) > len(target) else tuple(v_shape)
    if len(vs) > len(target):
        raise RuntimeError(f"expand({_type_name(vt)}{{{_shape_str(v_shape)}}}, size={_shape_str(target)}): the "
                           f"number of sizes provided ({len(target)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(v_shape)})")
    off = len(target) - len(vs)
    for k, s in enumerate(vs):
        t = target[off + k]
        if s != 1 and s != t:
            raise RuntimeError(f"The expanded size of the tensor ({t}) must match the existing size ({s}) at "
                               f"non-singleton dimension {off + k}.  Target sizes: {_shape_str(target)}.  "
                               f"Tensor sizes: {_shape_str(vs)}")
    return vs


def setitem(self, idx, value):
    """``t[idx] = value``: an in-place write that keeps gradients right."""
    x = self._data
    vt, v = _value_array(self, value)
    if idx is False:   # PyTorch writes nothing and records nothing
        return
    if not x.ndim and (type(idx) is int or type(idx) is slice):
        raise IndexError(_ZERO_DIM_INT if type(idx) is int else "slice() cannot be applied to a 0-dim tensor.")
    steps, basic, adv_index, mid_shape = _parse(x.shape, idx, setting=True)
    # The written region as one NumPy index on ``x``.
    if adv_index is None:
        region_index = basic if basic else (Ellipsis,)
        kind = "self" if not steps else "slices"
    else:
        region_index = _compose(x.shape, basic, adv_index)
        kind = "index_put" if not steps else "slices"
    if kind == "slices" and self._base is not None and _state.grad:
        self._refresh_view()   # (PyTorch writes through the view self[idx], made first)
    if _state.grad and self._requires_grad and self._grad_fn is None:
        if kind == "slices":
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
        raise RuntimeError(LEAF_INPLACE_MSG)
    if (kind == "slices" and (self._nograd_view or self._multi_view) and _state.grad
            and (_rg(self) or (vt is not None and vt.requires_grad))):
        # The write goes into the view ``self[idx]``, which inherits how ``self`` was made
        # (making it first brings ``self``'s own grad_fn up to date, which may refuse).
        if self._base is not None:
            self._refresh_view()
        raise view_rebase_error(self, False, steps[-1][0] if _rg(self) else None)
    check_inplace(self, vt, overlap=False)
    if kind == "index_put":   # (PyTorch's index_put_ writes expanded tensors, with a deprecation warning)
        if vt is not None:
            check_partial_overlap(x, vt._data)
    else:                     # a copy into the region, a view of ``x``
        reg = x[region_index]
        if type(reg) is _ndarray:
            check_internal_overlap(reg)
            if vt is not None:
                check_partial_overlap(reg, vt._data)
    region_shape = _region_shape(x.shape, region_index)
    vd = v
    if vt is not None:
        if adv_index is not None and idx is not True:   # (PyTorch's index_put_, on self or on self[basic];
            # a lone True is a copy into self.unsqueeze(0))
            vs = _strip_leading_ones(vd.shape) if len(vd.shape) > len(region_shape) else vd.shape
            try:
                ok = len(vs) <= len(region_shape) and np.broadcast_shapes(vs, region_shape) == tuple(region_shape)
            except ValueError:
                ok = False
            if not ok:
                raise RuntimeError(f"shape mismatch: value tensor of shape {_shape_str(vd.shape)} cannot be "
                                   f"broadcast to indexing result of shape {_shape_str(region_shape)}")
            if vd.dtype != x.dtype:
                raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                                   f"{_dname(x.dtype)} for the destination and {_dname(vd.dtype)} for the source.")
        else:
            vs = _check_copy_shape(vd.shape, region_shape, vt)
        vd = vd.reshape(vs)
        if vd.dtype != x.dtype:
            vd = vd.astype(x.dtype)
    recording = (_state.grad and x.dtype.kind in "fcV"
                 and (self.requires_grad or (vt is not None and vt.requires_grad)))
    if recording and adv_index is None and vt is not None and vt._requires_grad and vt._data.ndim \
            and vt._data.shape != tuple(region_shape):
        # PyTorch's copy_to: the value viewed without its leading ones, then expanded to the
        # region (ViewBackward0, ExpandBackward0 in its graph)
        vt = vt.view(vs)
        if tuple(vs) != tuple(region_shape):
            vt = vt.expand(*region_shape)
    x[region_index] = vd
    self._bump_version()
    if not recording:
        return
    # (PyTorch fills a tensor of 1+ dims with a number or 0-d value; otherwise it copies)
    fill = x.ndim and (vt is None or not vt._data.ndim)
    cls = {"self": FillBackward3 if fill else CopyBackwards, "slices": CopySlices,
           "index_put": IndexPutBackward0}[kind]
    vedge = vt._edge() if vt is not None else (None, 0)
    vshape = vt._data.shape if vt is not None else ()
    base = self._base
    if base is not None and self._view_fn is not None:
        _rebase_view(self, base, cls, region_index, vedge, vshape, basic if kind == "slices" else None)
        return
    node = _new_node(cls, self._edge())
    node.next_functions = node.next_functions + (vedge,)
    node.np_index = region_index
    node.value_shape = vshape
    node._out_meta = ((x.shape, x.dtype),)
    self._grad_fn = node
    self._output_nr = 0
    self._requires_grad = True


def _rebase_view(view, base, cls, region_index, vedge, vshape, basic):
    """``view[idx] = v`` where ``view`` is a view of ``base``: the base gets a CopySlices
    node over the written part of its own storage, and the view is re-derived from it.
    ``basic``: the basic part of ``idx`` when PyTorch writes through the view ``view[basic]``."""
    xp = xp_for(view, base, region_index, vedge, vshape, basic)
    from .view_inplace import _positions, regenerate_view
    bd = base._data
    allpos = _positions(view, base)
    allpos = (xp.arange(bd.size, dtype=np.int64) if allpos is None else allpos).reshape(view._data.shape)
    written = _basic_view(allpos, basic) if basic else allpos
    overlapping = xp.unique(written).size < written.size   # (PyTorch's backward then refuses)
    pos = allpos[region_index]
    bregion = np.unravel_index(pos, bd.shape) if bd.ndim else (xp.array(pos.size > 0),)
    node = _new_node(CopySlices,
                     base._edge() if base._requires_grad else (None, 0))
    node.next_functions = node.next_functions + (vedge,)
    node.np_index = bregion
    node.value_shape = vshape
    node.overlapping = overlapping
    node._out_meta = ((bd.shape, bd.dtype),)
    set_history(base, node)
    if not basic:
        # Written itself: its grad_fn is rebuilt now. (Written through the view view[basic],
        # as PyTorch does, it is left stale, rebuilt when next used.)
        regenerate_view(view)


def _dname(npdt):
    from ._base import _dtype_name
    return _dtype_name(npdt)


def _region_shape(shape, np_index):
    xp = xp_for(shape, np_index)
    n = 1
    for s in shape:
        n *= s
    return xp.broadcast_to(xp.empty((), np.bool_), shape)[np_index].shape


def _compose(shape, basic, adv_index):
    """One NumPy index (a tuple of int arrays) for applying ``basic`` and then ``adv_index``."""
    xp = xp_for(shape, basic, adv_index)
    n = 1
    for v in shape:
        n *= v
    lin = xp.arange(n, dtype=np.int64).reshape(shape)
    if basic:
        lin = _basic_view(lin, basic)
    lin = lin[adv_index]
    if not shape:   # a 0-d tensor: its one element, selected or not (a 0-d mask)
        return (xp.array(lin.size > 0),)
    return xp_for(lin).unravel_index(lin, shape)


def _check_values(name, values):
    if not isinstance(values, Tensor):
        raise TypeError(f"{name}(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")


def index_put(input, indices, values, accumulate=False):
    """Out-of-place ``input[indices] = values`` (or ``+=`` with ``accumulate``)."""
    check_devices(input, indices, values)
    _check_values("index_put", values)
    r = input.clone()
    return index_put_(r, indices, values, accumulate) if not accumulate else _index_put_acc(input, indices, values)


def index_put_(self, indices, values, accumulate=False):
    """``self[indices] = values`` in place (``+=`` with ``accumulate``)."""
    check_devices(self, indices, values)
    _check_values("index_put_", values)
    if not accumulate:
        setitem(self, tuple(indices), values)
        return self
    from ._base import apply_inplace
    return apply_inplace(self, _index_put_acc, indices, values)


def _index_put_acc(input, indices, values):
    """``input`` with ``values`` added at ``indices`` (repeats accumulate)."""
    xp = xp_for(input, indices, values)
    x = input._data
    steps, basic, adv_index, mid_shape = _parse(x.shape, tuple(indices))
    region = _compose(x.shape, basic, adv_index) if adv_index is not None else basic
    vd = values._data if isinstance(values, Tensor) else values
    if isinstance(values, Tensor) and vd.dtype != x.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_dname(x.dtype)} for the destination and {_dname(vd.dtype)} for the source.")
    rs = _region_shape(x.shape, region)
    vs = getattr(vd, "shape", ())
    vs = _strip_leading_ones(vs) if len(vs) > len(rs) else vs
    try:
        ok = len(vs) <= len(rs) and np.broadcast_shapes(vs, rs) == tuple(rs)
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(f"shape mismatch: value tensor of shape {_shape_str(np.shape(vd))} cannot be broadcast "
                           f"to indexing result of shape {_shape_str(rs)}")
    vd = xp.reshape(vd, vs)
    z = _acc_into(x.shape, x.dtype, region, xp.broadcast_to(xp.asarray(vd, x.dtype), _region_shape(x.shape, region)), xp)
    vt = values if isinstance(values, Tensor) else None
    node = node_for(IndexPutBackward0, (input, vt))
    if node is not None:
        node.accumulate = True
        node.np_index = region
        node.value_shape = vt._data.shape if vt is not None else ()
    return finish(node, x + z)


_index_put_acc._overlap_ok = True   # (PyTorch's index_put_ writes expanded tensors, with a deprecation warning)


# --- where, nonzero, argwhere -----------------------------------------------------------

class WhereBackward0(OpNode):
    """Each branch gets the gradient where it was chosen and exactly 0 elsewhere (selected,
    so an infinite or NaN gradient of the other branch does not leak in)."""

    def backward(self, g):
        from ._base import masked_grad
        (cond,) = self.saved_tensors
        c = cond._data
        if c.dtype.kind != "b":
            c = c.astype(bool)
        nf = self.next_functions
        return (masked_grad(g, c, None, "WhereBackward0") if nf[0][0] is not None else None,
                masked_grad(g, ~c, None, "WhereBackward0") if nf[1][0] is not None else None)


def where(condition, input=None, other=None, *, out=None):
    """Elements of ``input`` where ``condition``, else of ``other``; one-argument form: nonzero."""
    xp = xp_for(condition, input, other)
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    c = condition._data if isinstance(condition, Tensor) else xp.asarray(condition)
    if c.dtype != np.bool_:
        if c.dtype == np.uint8:
            c = c.astype(bool)
        else:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{_dname(c.dtype)}")
    a, b, x, y, dt = binary_operands(input, other)
    from .arithmetic import broadcast_error
    shp = c.shape
    for o in (x, y):
        os_ = getattr(o, "shape", ())
        try:
            shp = np.broadcast_shapes(shp, os_)
        except ValueError:
            raise broadcast_error(shp, os_) from None
    r = xp.where(c, x, y).astype(dt, copy=False)
    node = node_for(WhereBackward0, (a, b))
    if node is not None:
        save(node, condition if isinstance(condition, Tensor) else finish(None, c))
    res = finish(node, arr(r))
    if out is not None:
        from ._base import write_out
        return write_out(out, res, "where")
    return res


def nonzero(input, *, out=None, as_tuple=False):
    """Indices of the non-zero elements: an (n, ndim) long tensor, or a tuple of index tensors."""
    xp = xp_for(input, as_tuple)
    x = input._data
    if as_tuple:   # (PyTorch: the columns of nonzero(), as views)
        from .shape import unbind
        return unbind(nonzero(input if x.ndim else input.reshape(1)), 1)
    r = xp.argwhere(x).astype(np.int64) if x.ndim else xp.zeros((int(bool(x)), 0), np.int64)
    res = finish(None, r)
    if out is not None:
        from ._base import write_out
        return write_out(out, res, "nonzero")
    return res


def argwhere(input):
    """Indices of the non-zero elements as an (n, ndim) long tensor."""
    return nonzero(input)


TENSOR_METHODS = {"__getitem__": getitem, "__setitem__": setitem,
                  "where": lambda self, condition, other: where(condition, self, other),
                  "nonzero": nonzero, "argwhere": argwhere, "index_put": index_put,
                  "index_put_": index_put_}
INPLACE = {}
