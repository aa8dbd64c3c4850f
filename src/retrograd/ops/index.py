"""Indexing: basic and advanced __getitem__, setitem (in place), where, and (more to come)
index_select, gather, scatter, masked_fill, masked_select."""
import numpy as np

from ._base import OpNode, node_for, save, finish, view_of, arr, binary_operands, Tensor, _state
from .. import _dtype as D

__all__ = ["where"]


def _convert_index(idx, shape):
    """Turn a PyTorch index into a NumPy one; returns (index, is_basic)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    out = []
    basic = True
    dim = 0
    for i in idx:
        if isinstance(i, Tensor):
            a = i._data
            if a.dtype.kind not in "biu":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            if a.ndim == 0 and a.dtype.kind in "iu":
                i = int(a)
            else:
                out.append(a)
                basic = False
                dim += a.ndim if a.dtype.kind == "b" else 1
                continue
        if isinstance(i, (list, np.ndarray)):
            a = np.asarray(i)
            if a.dtype.kind not in "biu" and a.size:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            out.append(a.astype(np.int64) if a.dtype.kind != "b" else a)
            basic = False
            dim += 1
            continue
        if isinstance(i, bool):
            out.append(i)
            basic = False
            continue
        if isinstance(i, (int, np.integer)):
            i = int(i)
            if dim >= len(shape):
                raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
            n = shape[dim]
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {n}")
            dim += 1
        elif isinstance(i, slice):
            if i.step is not None and (i.step.item() if isinstance(i.step, Tensor) else i.step) <= 0:
                raise ValueError("step must be greater than zero")
            i = slice(*(s.item() if isinstance(s, Tensor) else s for s in (i.start, i.stop, i.step)))
            dim += 1
        elif i is Ellipsis:
            dim = len(shape) - sum(1 for j in idx[len(out) + 1:] if j is not None and j is not Ellipsis)
        elif i is None:
            pass
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                             "are valid indices (got " + type(i).__name__ + ")")
        out.append(i)
    if dim > len(shape) and basic:
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    return tuple(out), basic


def _check_adv_bounds(x, idx):
    dim = 0
    for i in idx:
        if isinstance(i, np.ndarray) and i.dtype.kind in "iu":
            n = x.shape[dim]
            if i.size and (i.max() >= n or i.min() < -n):
                bad = int(i.max()) if i.max() >= n else int(i.min())
                raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {n}")
            dim += 1
        elif isinstance(i, np.ndarray) and i.dtype.kind == "b":
            for k in range(i.ndim):
                if i.shape[k] != x.shape[dim + k]:
                    raise IndexError(f"The shape of the mask [{', '.join(map(str, i.shape))}] at index {k} "
                                     f"does not match the shape of the indexed tensor "
                                     f"[{', '.join(map(str, x.shape))}] at index {dim + k}")
            dim += i.ndim
        elif i is None:
            continue
        elif i is Ellipsis:
            dim = x.ndim - sum(1 for j in idx[idx.index(i) + 1:] if j is not None)
        elif isinstance(i, bool):
            continue
        else:
            dim += 1


class SelectBackward0(OpNode):
    def backward(self, g):
        return _scatter_into_zeros(g, self.shape, self.dtype, self.index)


SliceBackward0 = type("SliceBackward0", (SelectBackward0,), {})
IndexBackward0 = type("IndexBackward0", (SelectBackward0,), {})
AliasBackward0 = type("AliasBackward0", (SelectBackward0,), {})
UnsqueezeBackward0 = None  # defined in shape ops


def _scatter_into_zeros(g, shape, npdt, index):
    """Gradient of ``x[index]``: a zero tensor with ``g`` added at ``index`` (differentiable)."""
    from .index_ops import index_put_grad
    return index_put_grad(g, shape, npdt, index)


def getitem(self, idx):
    """``t[idx]``: basic indexing gives a view, advanced indexing a copy."""
    x = self._data
    nidx, basic = _convert_index(idx, x.shape)
    if basic:
        r = x[nidx]
        if not isinstance(r, np.ndarray) and type(x) is np.ndarray:
            r = x[nidx + (Ellipsis,)] if Ellipsis not in nidx else np.asarray(r)
        single = isinstance(idx, (int, np.integer)) or (isinstance(idx, Tensor) and idx._data.ndim == 0)
        cls = SelectBackward0 if single else (AliasBackward0 if False else SliceBackward0)
        if isinstance(idx, tuple) and all(isinstance(i, (int, np.integer)) for i in idx) and idx:
            cls = SelectBackward0
        node = node_for(cls, (self,))
        if node is not None:
            node.shape, node.dtype, node.index = x.shape, x.dtype, nidx
        return view_of(self, finish(node, r), lambda b, i=idx: b[i])
    _check_adv_bounds(x, nidx)
    r = arr(x[nidx])
    if type(r) is np.ndarray and np.shares_memory(r, x):
        r = r.copy()
    node = node_for(IndexBackward0, (self,))
    if node is not None:
        node.shape, node.dtype, node.index = x.shape, x.dtype, nidx
    return finish(node, r)


class WhereBackward0(OpNode):
    def backward(self, g):
        (cond,) = self.saved_tensors
        nf = self.next_functions
        z = g * 0
        return (where(cond, g, z) if nf[0][0] is not None else None,
                where(cond, z, g) if nf[1][0] is not None else None)


def where(condition, input=None, other=None, *, out=None):
    """Elements of ``input`` where ``condition``, else of ``other``; one-argument form: nonzero."""
    if input is None and other is None:
        return tuple(finish(None, a.astype(np.int64)) for a in np.nonzero(condition._data))
    c = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
    if c.dtype != np.bool_:
        if c.dtype == np.uint8:
            c = c.astype(bool)
        else:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{D._FROM_NP[c.dtype].name.capitalize()}")
    a, b, x, y, dt = binary_operands(input, other)
    r = np.where(c, x, y).astype(dt, copy=False)
    node = node_for(WhereBackward0, (a, b))
    if node is not None:
        save(node, condition if isinstance(condition, Tensor) else finish(None, c))
    return finish(node, arr(r))


TENSOR_METHODS = {"__getitem__": getitem, "where": lambda self, condition, other: where(condition, self, other)}
INPLACE = {}
