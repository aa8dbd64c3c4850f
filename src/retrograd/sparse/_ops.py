"""Sparse products (scipy.sparse), sums, softmax and printing."""
import numpy as np

from .. import _dtype as D
from .._layout import sparse_coo, sparse_csr, sparse_csc
from .._tensor import Tensor
from ..autograd import grad_mode
from ..ops._base import OpNode, node_for, finish
from ._tensor import (SparseTensor, _coo, _like, _finish_sparse, _coalesce_arrays, _gather, _linear, _scipy, _xp,
                      _to_compressed, not_implemented)

_state = grad_mode._state


# --- products ------------------------------------------------------------------------------

def _scipy_t(s):
    """The transpose of ``s``'s scipy matrix, cached (backward multiplies by it every step)."""
    m = s._matT
    if m is None:
        m = s._matT = _scipy(s).T.tocsr()
    return m


def _type_name(npdt):
    return D._SCALAR_TYPE_NAMES[D._FROM_NP[npdt].name]


def _check_pair(s, d, sparse_left):
    """PyTorch's shape and dtype checks for sparse @ dense (and dense @ sparse)."""
    if s._data.ndim != 2 or (s._data.layout is sparse_coo and s._idx.shape[0] != 2):
        raise RuntimeError(f"addmm: matrices expected, got {s.sparse_dim()}D tensor" if s._data.layout is sparse_coo
                           else "addmm: matrices expected")
    if d._data.ndim != 2:
        raise RuntimeError(f"addmm: matrices expected, got {d._data.ndim}D tensor")
    if sparse_left and s._data.shape[1] != d._data.shape[0]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s._data.shape[1]}, got "
                           f"{d._data.shape[0]}")
    if not sparse_left and d._data.shape[1] != s._data.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({d._data.shape[0]}x{d._data.shape[1]} and "
                           f"{s._data.shape[0]}x{s._data.shape[1]})")
    if s._data.dtype != d._data.dtype:
        a, b = (s, d) if sparse_left else (d, s)
        raise RuntimeError(f"expected scalar type {_type_name(a._data.dtype)} but found {_type_name(b._data.dtype)}")


class _LeftProductBackward(OpNode):
    """``M @ x`` for a constant sparse M: its gradient is ``M^T @ g`` (itself differentiable)."""
    def backward(self, g):
        return _left(self.mt, self.m, g, type(self))


class MmBackward0(OpNode):
    """sparse @ dense or dense @ sparse through torch.mm / spmm / matmul: dense gradients
    for both operands (as PyTorch gives them, the sparse one's too)."""
    def backward(self, g):
        s, d, left = self.s, self.d, self.sparse_left
        nf = self.next_functions
        gs = gd = None
        if left:
            if nf[0][0] is not None:
                gs = g.mm(d.t())
            if nf[1][0] is not None:
                gd = _left(_scipy_t(s), _scipy(s), g, MmBackward0)
            return gs, gd
        if nf[0][0] is not None:
            gd = _left(_scipy(s), _scipy_t(s), g.t(), MmBackward0).t()
        if nf[1][0] is not None:
            gs = d.t().mm(g)
        return gd, gs


def _left(m, mt, x, cls):
    """``m @ x`` (m a scipy matrix, x a dense 2-D tensor), recorded so that create_graph works."""
    r = np.asarray(m @ x._data)
    if r.dtype != x._data.dtype:
        r = r.astype(x._data.dtype)
    node = node_for(_LeftProductBackward, (x,))
    if node is not None:
        node.m, node.mt = m, mt
    return finish(node, r)


def _sparse_dense_mm(s, d):
    _check_pair(s, d, True)
    r = np.asarray(_scipy(s) @ d._data).astype(d._data.dtype, copy=False)
    node = node_for(MmBackward0, (s, d))
    if node is not None:
        node.s, node.d, node.sparse_left = s, d.detach(), True
    return finish(node, r)


def _dense_sparse_mm(d, s):
    _check_pair(s, d, False)
    r = np.asarray(_scipy_t(s) @ d._data.T).T.astype(d._data.dtype, copy=False)
    r = np.ascontiguousarray(r)
    node = node_for(MmBackward0, (d, s))
    if node is not None:
        node.s, node.d, node.sparse_left = s, d.detach(), False
    return finish(node, r)


def _sparse_sparse_mm(a, b):
    if a._data.shape[1] != b._data.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a._data.shape[0]}x{a._data.shape[1]} and "
                           f"{b._data.shape[0]}x{b._data.shape[1]})")
    if _state.grad and (a._requires_grad or b._requires_grad):
        raise RuntimeError("the gradient of sparse @ sparse is not supported in retrograd")
    m = (_scipy(a) @ _scipy(b)).tocoo()
    m.sum_duplicates()
    xp = _xp(a._vals)
    idx = xp.stack([xp.asarray(m.row, dtype=np.int64), xp.asarray(m.col, dtype=np.int64)])
    r = _coo(idx, xp.asarray(m.data).astype(a._data.dtype, copy=False), (a._data.shape[0], b._data.shape[1]), True)
    if a._data.layout is sparse_csr and b._data.layout is sparse_csr:
        return _to_compressed(r, sparse_csr)
    return r


def mm(input, mat2):
    """``torch.mm`` / ``torch.spmm`` with a sparse operand: dense result unless both are sparse."""
    a_sp, b_sp = input._sparse, mat2._sparse
    if a_sp and b_sp:
        return _sparse_sparse_mm(input, mat2)
    if a_sp:
        return _sparse_dense_mm(input, mat2)
    return _dense_sparse_mm(input, mat2)


def matmul(input, other):
    """``@`` with a sparse operand: 2-D products, and a sparse matrix times a vector."""
    if not isinstance(other, Tensor) or not isinstance(input, Tensor):
        raise TypeError(f"matmul(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__ if not isinstance(other, Tensor) else type(input).__name__}")
    if input._sparse and not other._sparse and other._data.ndim == 1:
        return mv(input, other)
    if other._sparse and not input._sparse and input._data.ndim == 1:
        return mm(input.unsqueeze(0), other).squeeze(0)
    if input._data.ndim != 2 or other._data.ndim != 2:
        raise not_implemented("matmul", (input if input._sparse else other)._data.layout)
    return mm(input, other)


class MvBackward0(OpNode):
    """sparse matrix @ dense vector: a dense gradient for both."""
    def backward(self, g):
        s, v = self.s, self.v
        nf = self.next_functions
        gs = gv = None
        if nf[0][0] is not None:
            gs = g.unsqueeze(1) * v.unsqueeze(0)
        if nf[1][0] is not None:
            gv = _left(_scipy_t(s), _scipy(s), g.unsqueeze(1), MmBackward0).squeeze(1)
        return gs, gv


def mv(input, vec):
    """``torch.mv`` / ``@`` of a sparse matrix and a dense vector."""
    if vec._data.ndim != 1 or input._data.ndim != 2:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input._data.ndim}, {input._data.ndim}, "
                           f"{vec._data.ndim}")
    if input._data.shape[1] != vec._data.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input._data.shape[0]}), mat ({input._data.shape[0]}x"
                           f"{input._data.shape[1]}), vec ({vec._data.shape[0]})")
    if input._data.dtype != vec._data.dtype:
        raise RuntimeError(f"expected scalar type {_type_name(input._data.dtype)} but found "
                           f"{_type_name(vec._data.dtype)}")
    r = np.asarray(_scipy(input) @ vec._data).astype(vec._data.dtype, copy=False)
    node = node_for(MvBackward0, (input, vec))
    if node is not None:
        node.s, node.v = input, vec.detach()
    return finish(node, r)


class SparseAddmmBackward0(OpNode):
    def backward(self, g):
        s, d, alpha, beta = self.s, self.d, self.alpha, self.beta
        nf = self.next_functions
        gb = gs = gd = None
        if nf[0][0] is not None:
            gb = g * beta if beta != 1 else g
        if nf[1][0] is not None:
            gs = _mm_grad_masked(g, d, s, alpha)
        if nf[2][0] is not None:
            gd = _left(_scipy_t(s), _scipy(s), g, MmBackward0)
            if alpha != 1:
                gd = gd * alpha
        return gb, gs, gd


def _mm_grad_masked(g, d, s, alpha):
    """``(g @ d^T).sparse_mask(s) * alpha``: only the entries at s's positions are computed."""
    compressed = s._data.layout is not sparse_coo
    if not compressed:
        idx = s._idx if s._coalesced else _coalesce_arrays(s._idx, s._vals, s._data.shape)[0]
    else:
        from ._tensor import _compressed_positions
        idx = _compressed_positions(s)
    gd, dd = g._data, d._data
    vals = (gd[idx[0]] * dd[idx[1]]).sum(axis=1)
    if alpha != 1:
        vals = vals * alpha
    vals = vals.astype(gd.dtype, copy=False)
    return _like(s, vals) if compressed else _coo(idx, vals, s._data.shape, True)


def addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``torch.sparse.addmm``: ``beta * input + alpha * (mat1 @ mat2)``, mat1 sparse."""
    if not mat1._sparse:
        from ..ops.linalg import addmm as dense_addmm
        return dense_addmm(input, mat1, mat2, beta=beta, alpha=alpha)
    _check_pair(mat1, mat2, True)
    p = np.asarray(_scipy(mat1) @ mat2._data)
    if alpha != 1:
        p = p * alpha
    if input is not None:
        b = input._data
        p = p + (b * beta if beta != 1 else b)
    p = p.astype(mat2._data.dtype, copy=False)
    node = node_for(SparseAddmmBackward0, (input, mat1, mat2))
    if node is not None:
        node.s, node.d, node.alpha, node.beta = mat1, mat2.detach(), alpha, beta
    return finish(node, np.ascontiguousarray(p))


def sparse_mm(sparse, dense, reduce="sum"):
    """``torch.sparse.mm``: the sparse operand's gradient keeps its sparsity (SparseAddmmBackward0)."""
    if reduce != "sum":
        raise NotImplementedError("torch.sparse.mm: reduce other than 'sum' is not supported in retrograd")
    if not sparse._sparse:
        from ..ops.linalg import mm as dense_mm
        return dense_mm(sparse, dense)
    if dense._sparse:
        return _sparse_sparse_mm(sparse, dense)
    return addmm(None, sparse, dense)


# --- sums ----------------------------------------------------------------------------------

class SumBackward0(OpNode):
    def backward(self, g):
        c = self.coal
        xp = _xp(c._vals)
        vals = xp.broadcast_to(g._data, c._vals.shape).copy()
        r = _coo(c._idx, vals, c._data.shape, True)
        r._shared = True
        return r


class DenseSumBackward0(OpNode):
    def backward(self, g):
        return g.expand(self.shape)


class SparseSumBackward0(OpNode):
    def backward(self, g):
        c, keep_sparse, dense_axes = self.coal, self.keep_sparse, self.dense_axes
        shape = c._data.shape
        sd = c._idx.shape[0]
        gd = g.to_dense()._data if g._sparse else g._data
        # g's dense layout: the kept sparse dims, then the dense dims with summed ones of size 1
        dense_shape = tuple(1 if (i + sd) in dense_axes else s for i, s in enumerate(shape[sd:]))
        gd = gd.reshape(tuple(shape[d] for d in keep_sparse) + dense_shape)
        rows = gd[tuple(c._idx[list(keep_sparse)])] if keep_sparse else _xp(gd).broadcast_to(
            gd, (c._idx.shape[1],) + gd.shape)
        vals = _xp(gd).broadcast_to(rows, c._vals.shape).astype(c._vals.dtype)
        return _coo(c._idx, vals, shape, True)


def sum_all(input):
    """``Tensor.sum()`` of a sparse tensor: a dense 0-d tensor whose gradient is dense."""
    v = input._vals
    r = v.sum(dtype=v.dtype if v.dtype.kind in "fcV" else np.int64)
    r = _xp(v).asarray(r)
    node = node_for(DenseSumBackward0, (input,))
    if node is not None:
        node.shape = input._data.shape
        node.__class__ = _named("SumBackward0", DenseSumBackward0)
    return finish(node, r)


_NAMED = {}


def _named(name, base):
    cls = _NAMED.get((name, base))
    if cls is None:
        cls = _NAMED[(name, base)] = type(name, (base,), {})
    return cls


def sparse_sum(input, dim=None, dtype=None, name="SparseSumBackward0"):
    """``torch.sparse.sum``: over all dims (dense 0-d) or over ``dim`` (sparse, or dense
    when every sparse dim is summed)."""
    if not input._sparse:
        return input.sum(dim) if dim is not None else input.sum()
    if input._data.layout is not sparse_coo:
        raise not_implemented("_sparse_sum", input._data.layout)
    c = input.coalesce().detach()
    if dtype is not None:
        c = _like(c, c._vals.astype(dtype.np))
    v = c._vals
    if dim is None:
        r = _xp(v).asarray(v.sum(dtype=v.dtype if v.dtype.kind in "fcV" else np.int64))
        node = node_for(SumBackward0, (input,))
        if node is not None:
            node.coal = c
        return finish(node, r)
    ndim = input._data.ndim
    dims = [dim] if isinstance(dim, int) else list(dim)
    dims = sorted({d + ndim if d < 0 else d for d in dims})
    for d in dims:
        if not 0 <= d < ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got "
                             f"{d if d < ndim else d})")
    sd = c._idx.shape[0]
    keep_sparse = [d for d in range(sd) if d not in dims]
    dense_axes = [d for d in dims if d >= sd]
    vals = v.sum(axis=tuple(d - sd + 1 for d in dense_axes)) if dense_axes else v
    shape = input._data.shape
    rest_dense = tuple(s for i, s in enumerate(shape[sd:]) if i + sd not in dense_axes)
    if not keep_sparse:
        out = _xp(vals).asarray(vals.sum(axis=0))
        node = node_for(_named(name, SparseSumBackward0), (input,))
        if node is not None:
            node.coal, node.keep_sparse, node.dense_axes, node.flag = c, keep_sparse, dense_axes, input._coalesced
        return finish(node, out)
    idx = c._idx[keep_sparse]
    new_shape = tuple(shape[d] for d in keep_sparse) + rest_dense
    idx, vals = _coalesce_arrays(idx, vals, new_shape)
    r = _coo(idx, vals, new_shape, True)
    node = node_for(_named(name, SparseSumBackward0), (input,))
    if node is not None:
        node.coal, node.keep_sparse, node.dense_axes, node.flag = c, keep_sparse, dense_axes, input._coalesced
    return _finish_sparse(node, r)


# --- softmax -------------------------------------------------------------------------------

def _groups(idx, shape, dim):
    """Group id of each nnz: the entries that share every sparse index but ``dim``'s."""
    xp = _xp(idx)
    keep = [d for d in range(idx.shape[0]) if d != dim]
    if not keep:
        return xp.zeros(idx.shape[1], np.int64), 1
    lin = _linear(idx[keep], tuple(shape[d] for d in keep))
    u, inv = xp.unique(lin, return_inverse=True)
    return inv.reshape(-1), u.shape[0]


def _softmax_vals(c, dim, log):
    v = c._vals
    xp = _xp(v)
    sd = c._idx.shape[0]
    if dim >= sd:   # along a dense dim: each nnz's block on its own
        ax = dim - sd + 1
        m = v.max(axis=ax, keepdims=True)
        e = xp.exp(v - m)
        s = e.sum(axis=ax, keepdims=True)
        return (v - m - xp.log(s)) if log else e / s
    gid, n = _groups(c._idx, c._data.shape, dim)
    mx = xp.full((n,) + v.shape[1:], -np.inf, v.dtype)
    xp.maximum.at(mx, gid, v)
    z = v - mx[gid]
    e = xp.exp(z)
    s = xp.zeros((n,) + v.shape[1:], v.dtype)
    xp.add.at(s, gid, e)
    return (z - xp.log(s[gid])) if log else e / s[gid]


def _group_sum(x, c, dim):
    xp = _xp(x)
    sd = c._idx.shape[0]
    if dim >= sd:
        return x.sum(axis=dim - sd + 1, keepdims=True)
    gid, n = _groups(c._idx, c._data.shape, dim)
    s = xp.zeros((n,) + x.shape[1:], x.dtype)
    xp.add.at(s, gid, x)
    return s[gid]


class SparseSoftmaxBackward0(OpNode):
    def backward(self, g):
        c, y, dim = self.coal, self.out, self.dim
        gv = _gather(g, c._idx, c._data.shape)
        if self.log:
            gi = gv - np.exp(y) * _group_sum(gv, c, dim)
        else:
            gi = y * (gv - _group_sum(gv * y, c, dim))
        return _coo(c._idx, gi.astype(y.dtype, copy=False), c._data.shape, True)


class SparseLogSoftmaxBackward0(SparseSoftmaxBackward0):
    pass


def _softmax(input, dim, dtype, log):
    if input._data.layout is not sparse_coo:
        raise not_implemented("_sparse_log_softmax" if log else "_sparse_softmax", input._data.layout)
    ndim = input._data.ndim
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    dim = dim % ndim
    c = input.coalesce().detach()
    if dtype is not None:
        c = _like(c, c._vals.astype(dtype.np))
    if c._vals.dtype.kind not in "fcV":
        raise RuntimeError(f"\"{'log_softmax' if log else 'softmax'}\" not implemented for "
                           f"'{_type_name(c._vals.dtype)}'")
    y = _softmax_vals(c, dim, log)
    r = _coo(c._idx, y, c._data.shape, True)
    node = node_for(SparseLogSoftmaxBackward0 if log else SparseSoftmaxBackward0, (input,))
    if node is not None:
        node.coal, node.out, node.dim, node.log, node.flag = c, y, dim, log, input._coalesced
    return _finish_sparse(node, r)


def softmax(input, dim, *, dtype=None):
    """``torch.sparse.softmax``: softmax over the specified entries only (absent ones are -inf)."""
    return _softmax(input, dim, dtype, False)


def log_softmax(input, dim, *, dtype=None):
    """``torch.sparse.log_softmax``."""
    return _softmax(input, dim, dtype, True)


# --- printing ------------------------------------------------------------------------------

def _add_suffixes(text, suffixes, indent, force_newline):
    from .._tensor_str import PRINT_OPTS
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if force_newline or last_line_len + len(s) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + s)
            last_line_len = indent + len(s)
            force_newline = False
        else:
            parts.append(", " + s)
            last_line_len += len(s) + 2
    parts.append(")")
    return "".join(parts)


def _part(a, indent):
    from .._tensor_str import array_str
    if type(a) is not np.ndarray:
        a = a.get()
    s = array_str(a, indent)
    if a.size == 0:
        s += ", size=" + str(tuple(a.shape))
    return s


def sparse_repr(t):
    """A sparse tensor printed as PyTorch prints it (indices, values, size, nnz, layout)."""
    prefix = "tensor("
    indent = len(prefix)
    lay = t._data.layout
    suffixes = []
    dev = t.device
    if dev.type != "cpu":
        suffixes.append(f"device='{dev}'")
    suffixes.append("size=" + str(tuple(t._data.shape)))
    suffixes.append("nnz=" + str(t._nnz()))
    dt = t.dtype
    default = D.get_default_dtype()
    if dt not in (default, D.int64, D.bool_, default.to_complex()):
        suffixes.append("dtype=" + repr(dt))
    if lay is sparse_coo:
        ip, vp = "indices=tensor(", "values=tensor("
        body = (ip + _part(t._idx, indent + len(ip)) + "),\n" + " " * indent + vp
                + _part(t._vals, indent + len(vp)) + ")")
    else:
        cp, pp = ("crow_indices=tensor(", "col_indices=tensor(") if lay is sparse_csr else \
            ("ccol_indices=tensor(", "row_indices=tensor(")
        vp = "values=tensor("
        body = (cp + _part(t._cidx, indent + len(cp)) + "),\n" + " " * indent + pp
                + _part(t._pidx, indent + len(pp)) + "),\n" + " " * indent + vp
                + _part(t._vals, indent + len(vp)) + ")")
    suffixes.append("layout=" + repr(lay))
    fn = t._grad_fn
    if fn is not None:
        suffixes.append(f"grad_fn=<{type(fn).__name__}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent, lay is sparse_coo)


__all__ = ["mm", "matmul", "addmm", "sparse_mm", "sparse_sum", "sum_all", "softmax", "log_softmax", "sparse_repr",
           "SparseTensor", "sparse_csc"]
