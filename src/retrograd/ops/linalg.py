"""Linear algebra: matmul in all its rank cases, mm, bmm, mv, dot, vdot, outer, einsum,
tensordot, addmm, addmv, addbmm, baddbmm.

Each product is one NumPy call (BLAS) and one node. The node's name is the one PyTorch
reports for the same call (``matmul`` of a 3-D and a 2-D tensor is an
UnsafeViewBackward0 in PyTorch, which folds the batch into an mm and views it back).
Backward formulas are themselves matmuls/einsums, so double backward works.
"""
import numpy as np

from ._base import check_devices
from ._base import xp_for
from . import _blas
from ._base import OpNode, node_for, save, finish, arr, Tensor, write_out, _dtype_name, _state

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "einsum", "tensordot",
           "addmm", "addmv", "addbmm", "baddbmm", "addr", "chain_matmul", "trace", "kron", "cross", "det",
           "inverse", "svd", "qr", "cholesky", "cholesky_inverse", "cholesky_solve", "slogdet", "logdet", "pinverse",
           "matrix_exp", "matrix_power", "lu_solve", "lu_unpack", "triangular_solve", "geqrf", "orgqr", "ormqr",
           "lstsq", "eig", "symeig", "frobenius_norm", "nuclear_norm", "renorm", "lu", "vander", "matrix_rank"]

_SHORT = {"float32": "float", "float64": "double", "float16": "half", "int64": "long", "int32": "int",
          "int16": "short", "int8": "char", "uint8": "unsigned char", "bool": "bool",
          "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _mx(shape):
    return "x".join(str(s) for s in shape)


# --- a transpose of the last two dims, for backward formulas ------------------------------

class TransposeBackward0(OpNode):
    def backward(self, g):
        return _mT(g)


def _mT(t):
    xp = xp_for(t)
    x = t._data
    return finish(node_for(TransposeBackward0, (t,)), xp.swapaxes(x, -1, -2))


# --- matmul and its rank cases ------------------------------------------------------------

class _MatmulNode(OpNode):
    """Gradient of ``a @ b`` under NumPy's matmul rules (1-D operands promoted)."""

    def backward(self, g):
        a, b = self.saved_tensors
        nf = self.next_functions
        return _matmul_backward(g, a, b, nf[0][0] is not None, nf[1][0] is not None)


def _matmul_backward(g, a, b, need_a, need_b):
    an, bn = a._data.ndim, b._data.ndim
    if an == 2 and bn == 2 and not _state.grad:
        # mm without create_graph: the two products straight on the arrays (the transposes
        # are views BLAS takes as flags), not through matmul's checks and nodes
        gd, ad, bd = g._data, a._data, b._data
        if need_a and need_b and type(gd) is np.ndarray and 0 in gd.strides and gd.size > 1:
            gd = np.ascontiguousarray(gd)   # (an expanded gradient: copied once for both products)
        return (finish(None, arr(_mm_np(gd, bd.T))) if need_a else None,
                finish(None, arr(_mm_np(ad.T, gd))) if need_b else None)
    if an == 1 and bn == 1:
        return (g * b if need_a else None, g * a if need_b else None)
    A = a if an > 1 else a.reshape(1, a._data.shape[0])
    B = b if bn > 1 else b.reshape(b._data.shape[0], 1)
    G = g
    if an == 1:
        G = G.reshape(G._data.shape[:-1] + (1,) + G._data.shape[-1:]) if bn > 1 else G
    if bn == 1:
        G = G.reshape(G._data.shape + (1,))
    ga = gb = None
    if need_a:
        ga = matmul(G, _mT(B))
        if ga._data.shape != A._data.shape:
            ga = ga.sum_to_size(A._data.shape)
        if an == 1:
            ga = ga.reshape(a._data.shape)
    if need_b:
        gb = matmul(_mT(A), G)
        if gb._data.shape != B._data.shape:
            gb = gb.sum_to_size(B._data.shape)
        if bn == 1:
            gb = gb.reshape(b._data.shape)
    return ga, gb


def _named(name):
    return type(name, (_MatmulNode,), {"__module__": __name__})


DotBackward0 = _named("DotBackward0")
MvBackward0 = _named("MvBackward0")
MmBackward0 = _named("MmBackward0")
BmmBackward0 = _named("BmmBackward0")
SqueezeBackward4 = _named("SqueezeBackward4")
UnsafeViewBackward0 = _named("UnsafeViewBackward0")
CloneBackward0 = _named("CloneBackward0")


def _product(cls, a, b, r):
    node = node_for(cls, (a, b))
    if node is not None:
        save(node, a, b)
        # Like PyTorch, only what a needed gradient uses is version-checked.
        nf = node.next_functions
        v = node._saved_versions
        if len(v) == 2:
            node._saved_versions = (v[0] if nf[1][0] is not None else None, v[1] if nf[0][0] is not None else None)
    return finish(node, arr(r))


def _check_dot(x, y):
    if x.ndim != 1 or y.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {x.ndim}D and {y.ndim}D tensors")
    if x.dtype != y.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {_dtype_name(x.dtype)} and "
                           f"{_dtype_name(y.dtype)}")
    if x.shape[0] != y.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{x.shape[0]}] and src [{y.shape[0]}] to have "
                           f"the same number of elements, but got {x.shape[0]} and {y.shape[0]} elements respectively")


def _check_mm(x, y):
    if x.shape[1] != y.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_mx(x.shape)} and {_mx(y.shape)})")
    if x.dtype != y.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_SHORT[x.dtype.name]} != "
                           f"{_SHORT[y.dtype.name]}")


def _check_mv(x, y, n_in=None):
    if x.ndim != 2 or y.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {x.ndim}, {y.ndim}")
    if x.shape[1] != y.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({x.shape[0] if n_in is None else n_in}), mat "
                           f"({_mx(x.shape)}), vec ({y.shape[0]})")
    if x.dtype != y.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_dtype_name(y.dtype)}, "
                           f"{_dtype_name(x.dtype)}, and {_dtype_name(y.dtype)}")


def _check_bmm(x, y):
    if x.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if y.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if y.shape[0] != x.shape[0] or y.shape[1] != x.shape[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{x.shape[0]}, "
                           f"{x.shape[2]}] but got: [{y.shape[0]}, {y.shape[1]}].")
    if x.dtype != y.dtype:
        raise RuntimeError(f"expected scalar type {_dtype_name(x.dtype)} but found {_dtype_name(y.dtype)}")


def _mm_np(x, y, opmath=False):
    xp = xp_for(x, y)
    if x.dtype.kind == "V":  # bfloat16: float32 products and sums, rounded once (PyTorch's CPU kernels)
        r = _blas.matmul(x.astype(np.float32), y.astype(np.float32))
        return r if opmath else r.astype(x.dtype)
    return _blas.matmul(x, y)


def _no_bool(x, kernel):
    """PyTorch's CPU product kernels (and trace, cross) have no bool version; the kernel name
    is the one PyTorch's error names."""
    if x.dtype == np.bool_:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def matmul(input, other, *, out=None):
    """Matrix product with PyTorch's rank rules: dot, mv, mm, and batched with broadcasting."""
    check_devices(input, other)
    if input._sparse or other._sparse:
        from ..sparse._ops import matmul as sparse_matmul
        return sparse_matmul(input, other)
    x, y = input._data, other._data
    xn, yn = x.ndim, y.ndim
    if xn == 0 or yn == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {xn}D and {yn}D")
    if xn == 1 and yn == 1:
        _check_dot(x, y)
        _no_bool(x, "dot")
        cls = DotBackward0
    elif xn == 2 and yn == 1:
        _check_mv(x, y)
        _no_bool(x, "addmv_impl_cpu")
        cls = MvBackward0
    elif xn == 1 and yn == 2:
        if x.shape[0] != y.shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied (1x{x.shape[0]} and {_mx(y.shape)})")
        _check_mm(x.reshape(1, -1), y)
        _no_bool(x, "addmm_impl_cpu_")
        cls = SqueezeBackward4
    elif xn == 2 and yn == 2:
        _check_mm(x, y)
        _no_bool(x, "addmm_impl_cpu_")
        cls = MmBackward0
    else:
        _check_batched(x, y)
        if x.dtype == np.bool_:  # the kernel PyTorch's batched matmul lands in
            _no_bool(x, "bmm" if yn >= 3 else "addmv_impl_cpu" if yn == 1 else "addmm_impl_cpu_")
        cls = UnsafeViewBackward0
    r = _mm_np(x, y)
    # PyTorch folds a 2-D (or batch-1 3-D) left operand that requires grad into one mm against
    # the transposed right operand, then copies the transposed result back (a view if empty)
    if yn >= 3 and input._requires_grad and (xn == 2 or (xn == 3 == yn and x.shape[0] == 1 != y.shape[0])):
        if not r.size and _state.grad:  # the copy of an empty result is skipped: a transposed view
            res = matmul(other.transpose(-1, -2), input.transpose(-1, -2)).transpose(-1, -2)   # (views, as PyTorch's)
            return res if out is None else write_out(out, res, "matmul")
        cls = CloneBackward0
    res = _product(cls, input, other, r)
    return res if out is None else write_out(out, res, "matmul")


def _broadcast_batch(bx, by):
    """The broadcast of two batch shapes, with PyTorch's error when they do not broadcast."""
    try:
        return np.broadcast_shapes(bx, by)
    except ValueError:
        n = max(len(bx), len(by))
        px, py = (1,) * (n - len(bx)) + tuple(bx), (1,) * (n - len(by)) + tuple(by)
        for d in range(n - 1, -1, -1):
            if px[d] != py[d] and px[d] != 1 and py[d] != 1:
                raise RuntimeError(f"The size of tensor a ({px[d]}) must match the size of tensor b ({py[d]}) "
                                   f"at non-singleton dimension {d}") from None
        raise


def _check_batched(x, y):
    xn, yn = x.ndim, y.ndim
    k = x.shape[-1]
    ky = y.shape[-2] if yn >= 2 else y.shape[0]
    if yn == 1:
        if k != ky:
            m = x.size // k if k else int(np.prod(x.shape[:-1]))
            raise RuntimeError(f"size mismatch, got input ({m}), mat ({m}x{k}), vec ({ky})")
    elif yn == 2 and xn >= 3:
        if k != ky:
            m = int(np.prod(x.shape[:-1]))
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {_mx(y.shape)})")
    else:
        bx = x.shape[:-2] if xn >= 2 else ()
        by = y.shape[:-2]
        _broadcast_batch(bx, by)
        if k != ky:
            nb = int(np.prod(np.broadcast_shapes(bx, by)))
            if xn == 1:
                raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{nb}, {k}] but "
                                   f"got: [{nb}, {ky}].")
            raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{nb}, {k}] but "
                               f"got: [{nb}, {ky}].")
    if x.dtype != y.dtype:
        if xn >= 3 and yn == 2:  # folded into one mm
            _check_mm(x.reshape(-1, k), y)
        if xn >= 3 and yn == 1:  # folded into one mv
            _check_mv(x.reshape(-1, k), y)
        raise RuntimeError(f"expected scalar type {_dtype_name(x.dtype)} but found {_dtype_name(y.dtype)}")


def mm(input, mat2, *, out=None):
    """Matrix product of two 2-D tensors."""
    check_devices(input, mat2)
    if input._sparse or mat2._sparse:
        from ..sparse import _mm
        res = _mm(input, mat2)
        return res if out is None else write_out(out, res, "mm")
    x, y = input._data, mat2._data
    if x.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if y.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    _check_mm(x, y)
    _no_bool(x, "addmm_impl_cpu_")
    res = _product(MmBackward0, input, mat2, _mm_np(x, y))
    return res if out is None else write_out(out, res, "mm")


def bmm(input, mat2, *, out=None):
    """Batched matrix product of two 3-D tensors with the same batch size."""
    check_devices(input, mat2)
    x, y = input._data, mat2._data
    _check_bmm(x, y)
    _no_bool(x, "bmm")
    res = _product(BmmBackward0, input, mat2, _mm_np(x, y))
    return res if out is None else write_out(out, res, "bmm")


def mv(input, vec, *, out=None):
    """Matrix-vector product."""
    check_devices(input, vec)
    if input._sparse:
        from ..sparse._ops import mv as sparse_mv
        res = sparse_mv(input, vec)
        return res if out is None else write_out(out, res, "mv")
    x, y = input._data, vec._data
    _check_mv(x, y)
    _no_bool(x, "addmv_impl_cpu")
    res = _product(MvBackward0, input, vec, _mm_np(x, y))
    return res if out is None else write_out(out, res, "mv")


def dot(input, tensor, *, out=None):
    """Dot product of two 1-D tensors."""
    check_devices(input, tensor)
    x, y = input._data, tensor._data
    _check_dot(x, y)
    _no_bool(x, "dot")
    res = _product(DotBackward0, input, tensor, _mm_np(x, y))
    return res if out is None else write_out(out, res, "dot")


class _VdotNode(OpNode):
    """Real case: the gradients of a plain dot product."""
    def backward(self, g):
        a, b = self.saved_tensors
        nf = self.next_functions
        ga = gb = None
        if nf[0][0] is not None:
            ga = g * b
        if nf[1][0] is not None:
            gb = g * a
        return ga, gb


VdotBackward0 = type("VdotBackward0", (_VdotNode,), {"__module__": __name__})


def vdot(input, other, *, out=None):
    """Dot product with the first argument conjugated."""
    xp = xp_for(input, other)
    x, y = input._data, other._data
    _check_dot(x, y)
    _no_bool(x, "dot")
    node = node_for(VdotBackward0, (input, other))
    if node is not None:
        save(node, input, other)
    res = finish(node, arr(xp.vdot(x, y)))
    return res if out is None else write_out(out, res, "vdot")


def inner(input, other, *, out=None):
    """Inner product over the last dimension."""
    check_devices(input, other)
    if input._data.ndim == 0 or other._data.ndim == 0:
        from .arithmetic import mul
        return mul(input, other)
    if input._data.shape[-1] != other._data.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input._data.shape)} and {list(other._data.shape)}")
    if input._data.dtype == np.bool_:
        _no_bool(input._data, "dot" if input._data.ndim == 1 == other._data.ndim else "addmm_impl_cpu_")
    res = tensordot(input, other, ([-1], [-1]))
    return res if out is None else write_out(out, res, "inner")


def outer(input, vec2, *, out=None):
    """Outer product of two 1-D tensors (a broadcast multiply, MulBackward0)."""
    check_devices(input, vec2)
    if input._data.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input._data.ndim}-D")
    if vec2._data.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2._data.ndim}-D")
    from .arithmetic import mul
    res = mul(input.reshape(-1, 1), vec2)
    return res if out is None else write_out(out, res, "outer")


ger = outer


# --- add + product -------------------------------------------------------------------------

def _expand_check(src_shape, target):
    """PyTorch's expand check for ``input`` against the product's shape."""
    n, m = len(target), len(src_shape)
    if m > n:
        raise RuntimeError(f"expand(torch.FloatTensor{{[{', '.join(map(str, src_shape))}]}}, size=[{', '.join(map(str, target))}]): "
                           f"the number of sizes provided ({n}) must be greater or equal to the number of dimensions "
                           f"in the tensor ({m})")
    for k in range(m):
        s, t = src_shape[m - 1 - k], target[n - 1 - k]
        if s != 1 and s != t:
            raise RuntimeError(f"The expanded size of the tensor ({t}) must match the existing size ({s}) at "
                               f"non-singleton dimension {n - 1 - k}.  Target sizes: [{', '.join(map(str, target))}].  "
                               f"Tensor sizes: [{', '.join(map(str, src_shape))}]")


class _AddProductNode(OpNode):
    """``beta * input + alpha * (m1 op m2)``: op's gradient scaled by alpha, input's by beta."""
    reduce_batch = False

    def backward(self, g):
        m1, m2 = self.saved_tensors
        nf = self.next_functions
        gi = None
        if nf[0][0] is not None:
            gi = g if self.beta == 1 else g * self.beta
        gp = g if self.alpha == 1 else g * self.alpha
        if self.reduce_batch:  # addbmm: the product was summed over the batch
            gp = gp.reshape((1,) + gp._data.shape).expand(m1._data.shape[0], *gp._data.shape)
        ga, gb = _matmul_backward(gp, m1, m2, nf[1][0] is not None, nf[2][0] is not None)
        return gi, ga, gb


AddmmBackward0 = type("AddmmBackward0", (_AddProductNode,), {"__module__": __name__})
AddmvBackward0 = type("AddmvBackward0", (_AddProductNode,), {"__module__": __name__})
BaddbmmBackward0 = type("BaddbmmBackward0", (_AddProductNode,), {"__module__": __name__})
AddbmmBackward0 = type("AddbmmBackward0", (_AddProductNode,), {"__module__": __name__, "reduce_batch": True})


def _scalars(dt, beta, alpha, name):
    """beta and alpha as PyTorch applies them to a ``dt`` result: integer results truncate them
    (``addr`` refuses floating ones), bool results treat them as truths."""
    if name == "addr" and dt.kind != "b":
        for n, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, bool):
                raise RuntimeError(f"Boolean {n} only supported for Boolean results.")
    if dt.kind in "fV" or dt.kind == "c":
        return beta, alpha
    if name == "addr":
        for n, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, float) or (isinstance(v, Tensor) and v._data.dtype.kind in "fV"):
                raise RuntimeError(f"For integral input tensors, argument {n} must not be a floating point number.")
    if dt.kind == "b":
        return bool(beta), bool(alpha)
    return int(beta), int(alpha)


def _add_product(cls, input, m1, m2, prod, beta, alpha, name, out, gemm=False, rest=()):
    """``beta * input + alpha * prod``, then ``+ alpha * p`` for each ``p`` of ``rest`` in
    order (addbmm: PyTorch adds one batch's product at a time, so its roundings, and where a
    partial sum overflows, are these). As in BLAS (and PyTorch), ``input`` is not read when
    beta is 0, and for the gemm/gemv based ops (``gemm``) ``prod`` is not read when alpha is 0,
    so nan/inf there do not reach the result."""
    xp = xp_for(input, m1, m2, prod)
    c = input._data
    _expand_check(c.shape, prod.shape)
    half = c.dtype.kind == "V"
    if half:  # bfloat16: beta * input + alpha * product in float32, rounded once
        c, prod = c.astype(np.float32), prod.astype(np.float32, copy=False)
    dt = prod.dtype
    if c.dtype != dt:  # only addr gets here with mixed dtypes: it promotes
        dt = np.promote_types(c.dtype, dt)
    beta, alpha = _scalars(dt, beta, alpha, name)
    if dt.kind == "b":
        r = (c & beta) | (prod & alpha) if beta else prod & alpha
    elif beta == 0:
        r = xp.zeros(prod.shape, dt) if gemm and alpha == 0 else (alpha * prod if alpha != 1 else prod)
    elif gemm and alpha == 0:
        r = beta * c if beta != 1 else c
    else:
        r = (beta * c if beta != 1 else c) + (alpha * prod if alpha != 1 else prod)
    if len(rest) and not (gemm and alpha == 0) and dt.kind != "b":
        for p in rest:
            if half:    # (each batch's addmm rounds to bfloat16, as PyTorch's)
                r, p = r.astype(input._data.dtype).astype(np.float32), p.astype(np.float32)
            r = r + (alpha * p if alpha != 1 else p)
    if r is c or r.shape != prod.shape:
        r = xp.array(xp.broadcast_to(r, prod.shape), dtype=dt)
    elif r.dtype != dt:
        r = r.astype(dt)
    if half:
        r = r.astype(input._data.dtype)
    node = node_for(cls, (input, m1, m2))
    if node is not None:
        node.beta, node.alpha = beta, alpha
        save(node, m1, m2)
    res = finish(node, r)
    return res if out is None else write_out(out, res, name)


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)``."""
    check_devices(input, mat1, mat2)
    x, y = mat1._data, mat2._data
    if x.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {x.ndim}-D tensor")
    if y.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {y.ndim}-D tensor")
    if input._data.dtype != y.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_dtype_name(input._data.dtype)} and "
                           f"{_dtype_name(y.dtype)}")
    _check_mm(x, y)
    _no_bool(x, "addmm_impl_cpu_")
    return _add_product(AddmmBackward0, input, mat1, mat2, _mm_np(x, y, True), beta, alpha, "addmm", out, True)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat @ vec)``."""
    check_devices(input, mat, vec)
    x, y = mat._data, vec._data
    c = input._data
    n_in = c.shape[0] if c.ndim == 1 else None
    if x.ndim != 2 or y.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {c.ndim}, {x.ndim}, {y.ndim}")
    if (x.shape[1] != y.shape[0]) or (c.ndim == 1 and n_in != x.shape[0] and n_in != 1):
        raise RuntimeError(f"size mismatch, got input ({n_in if n_in is not None else x.shape[0]}), mat "
                           f"({_mx(x.shape)}), vec ({y.shape[0]})")
    if not c.dtype == x.dtype == y.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_dtype_name(c.dtype)}, "
                           f"{_dtype_name(x.dtype)}, and {_dtype_name(y.dtype)}")
    _no_bool(x, "addmv_impl_cpu")
    return _add_product(AddmvBackward0, input, mat, vec, _mm_np(x, y, True), beta, alpha, "addmv", out, True)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    check_devices(input, batch1, batch2)
    x, y = batch1._data, batch2._data
    _check_bmm(x, y)
    c = input._data
    if c.dtype != x.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {_SHORT[c.dtype.name]}, batch1: "
                           f"{_SHORT[x.dtype.name]}, batch2: {_SHORT[y.dtype.name]}")
    _no_bool(x, "baddbmm")
    return _add_product(BaddbmmBackward0, input, batch1, batch2, _mm_np(x, y, True), beta, alpha, "baddbmm", out)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    check_devices(input, batch1, batch2)
    xp = xp_for(input, batch1, batch2)
    x, y = batch1._data, batch2._data
    c = input._data
    if c.dtype != y.dtype and x.ndim == 3 == y.ndim:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_dtype_name(c.dtype)} and "
                           f"{_dtype_name(y.dtype)}")
    if x.ndim == 3 == y.ndim:
        if x.shape[0] != y.shape[0]:
            raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {x.shape[0]} and "
                               f"{y.shape[0]}")
        if x.shape[2] != y.shape[1]:
            raise RuntimeError(f"Incompatible matrix sizes for bmm ({x.shape[1]}x{x.shape[2]} and "
                               f"{y.shape[1]}x{y.shape[2]})")
    _check_bmm(x, y)
    _no_bool(x, "addmm_impl_cpu_")
    rest = ()
    if x.shape[0]:
        # (bfloat16: the float32 products, each added before it rounds, as PyTorch's addmm)
        prods = _mm_np(x, y, opmath=True)
        prods = prods if x.dtype.kind == "V" else prods.astype(x.dtype, copy=False)
        prod, rest = prods[0], prods[1:]
    else:
        prod = xp.zeros((x.shape[1], y.shape[2]), x.dtype)
    return _add_product(AddbmmBackward0, input, batch1, batch2, prod, beta, alpha, "addbmm", out, True, rest)


class AddrBackward0(_AddProductNode):
    def backward(self, g):
        v1, v2 = self.saved_tensors
        nf = self.next_functions
        gi = (g if self.beta == 1 else g * self.beta) if nf[0][0] is not None else None
        gp = g if self.alpha == 1 else g * self.alpha
        g1 = mv(gp, _as(v2, gp)) if nf[1][0] is not None else None
        g2 = mv(_mT(gp), _as(v1, gp)) if nf[2][0] is not None else None
        return gi, g1, g2


def _as(t, like):
    """``t`` in ``like``'s dtype (addr promotes mixed dtypes; its backward must too)."""
    return t if t._data.dtype == like._data.dtype else t.to(like.dtype)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)`` (mixed dtypes promote)."""
    xp = xp_for(input, vec1, vec2)
    x, y = vec1._data, vec2._data
    if x.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {x.ndim}-D")
    if y.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec2, but got {y.ndim}-D")
    return _add_product(AddrBackward0, input, vec1, vec2, xp.multiply.outer(x, y), beta, alpha, "addr", out)


def chain_matmul(*matrices, out=None):
    """Product of a chain of matrices (deprecated in PyTorch: use linalg.multi_dot)."""
    import warnings
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                  "parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = matrices[0]
    for m in matrices:
        if m._data.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m._data.ndim}, expected 2 instead.")
    r = matrices[0].clone() if len(matrices) == 1 else multi_dot(matrices)
    return r if out is None else write_out(out, r, "chain_matmul")


# --- einsum and tensordot ------------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _parse_einsum(equation, shapes):
    """(input subscripts, output subscripts) with every '...' replaced by fresh letters."""
    eq = equation.replace(" ", "")
    for k, c in enumerate(equation):
        if not (c.isascii() and c.isalpha()) and c not in " ,.->":
            raise RuntimeError(f"einsum(): invalid subscript given at index {k} in the equation string, subscripts "
                               "must be in [a-zA-Z]")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    used = set(c for c in eq if c.isalpha())
    free = [c for c in _LETTERS if c not in used]
    ell_nd = 0
    for k, (t, shp) in enumerate(zip(terms, shapes)):
        n_lab = len(t.replace("...", ""))
        if "..." in t:
            ell_nd = max(ell_nd, len(shp) - n_lab)
        elif n_lab != len(shp):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n_lab}) does not match the "
                               f"number of dimensions ({len(shp)}) for operand {k} and no ellipsis was given")
    ell = "".join(free[:ell_nd])
    out_terms = []
    for t, shp in zip(terms, shapes):
        if "..." in t:
            nd = len(shp) - len(t.replace("...", ""))
            t = t.replace("...", ell[ell_nd - nd:] if nd else "")
        out_terms.append(t)
    if rhs is None:
        counts = {}
        for t in out_terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", ell)
    seen = set("".join(out_terms))
    for k, c in enumerate(rhs):
        if c in rhs[:k]:
            raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
    for c in rhs:
        if c not in seen:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input operand")
    return out_terms, rhs


def _einsum_node_cls(terms, rhs):
    if len(terms) == 1:
        return SumBackward1 if set(terms[0]) - set(rhs) else PermuteBackward0
    contracted = set("".join(terms)) - set(rhs)
    return ViewBackward0 if contracted else MulBackward0


class _EinsumNode(OpNode):
    def backward(self, g):
        ops = self.saved_tensors
        nf = self.next_functions
        out = []
        for k, (fn, _) in enumerate(nf):
            out.append(_einsum_grad(g, ops, self.terms, self.rhs, k) if fn is not None else None)
        return tuple(out)


SumBackward1 = type("SumBackward1", (_EinsumNode,), {"__module__": __name__})
PermuteBackward0 = type("PermuteBackward0", (_EinsumNode,), {"__module__": __name__})
ViewBackward0 = type("ViewBackward0", (_EinsumNode,), {"__module__": __name__})
MulBackward0 = type("MulBackward0", (_EinsumNode,), {"__module__": __name__})


def _einsum_grad(g, ops, terms, rhs, k):
    """Gradient of einsum w.r.t. operand ``k``: an einsum of g with the other operands."""
    xp = xp_for(g, ops, terms, rhs, k)
    tk = terms[k]
    shape = ops[k]._data.shape
    uniq = "".join(dict.fromkeys(tk))
    avail = set(rhs).union(*[set(t) for j, t in enumerate(terms) if j != k])
    keep = "".join(c for c in uniq if c in avail)
    others = [ops[j] for j in range(len(ops)) if j != k]
    oterms = [terms[j] for j in range(len(ops)) if j != k]
    r = _einsum_raw(",".join([rhs] + oterms) + "->" + keep, [g] + others)
    size = {c: shape[tk.index(c)] for c in uniq}
    want = tuple(size[c] for c in keep)
    if r._data.shape != want:  # a label of size 1 here or in another operand was broadcast
        down = tuple(1 if w == 1 else h for h, w in zip(r._data.shape, want))
        if down != r._data.shape:
            r = r.sum_to_size(down)
        if down != want:
            r = r.expand(*want)
    if keep != uniq:  # labels only in this operand: its gradient is broadcast along them
        r = r.reshape(tuple(size[c] if c in keep else 1 for c in uniq))
        r = r.expand(*[size[c] for c in uniq])
    if uniq != tk:  # repeated labels: the gradient lives on a diagonal
        from .index import put_np
        idx = []
        for d, c in enumerate(tk):
            p = uniq.index(c)
            shp = [1] * len(uniq)
            shp[p] = size[c]
            idx.append(xp.arange(size[c]).reshape(shp))
        r = put_np(r, shape, tuple(idx))
    return r


def _einsum_raw(eq, tensors):
    check_devices(tensors)
    xp = xp_for(tensors)
    arrays = [t._data for t in tensors]
    lhs, rhs = eq.split("->")
    terms = lhs.split(",")
    opt = len(arrays) > 2 or (len(arrays) == 2 and bool(set("".join(terms)) - set(rhs)))
    r = xp.einsum(eq, *arrays, optimize="greedy" if opt else False)
    r = xp.asarray(r)
    dt = arrays[0].dtype
    for a in arrays[1:]:
        dt = np.promote_types(dt, a.dtype)
    if r.dtype != dt:
        r = r.astype(dt)
    if r.base is not None and not r.flags.owndata:
        r = r.copy()
    node = node_for(_einsum_node_cls(terms, rhs), tuple(tensors))
    if node is not None:
        node.terms, node.rhs = terms, rhs
        save(node, *tensors)
    return finish(node, r)


def einsum(equation, *operands):
    """Einstein summation, e.g. ``einsum('bij,bjk->bik', a, b)`` (ellipsis supported)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    shapes = [o._data.shape for o in operands]
    terms, rhs = _parse_einsum(equation, shapes)
    sizes = {}
    for k, (t, shp) in enumerate(zip(terms, shapes)):
        own = {}
        for c, s in zip(t, shp):
            if c in own and own[c] != s:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {k} but the sizes don't match, "
                                   f"{s} != {own[c]}")
            own[c] = s
        for c, s in zip(t, shp):
            if c in sizes and sizes[c] != s and s != 1 and sizes[c] != 1:
                raise RuntimeError(f"einsum(): subscript {c} has size {s} for operand {k} which does not broadcast "
                                   f"with previously seen size {sizes[c]}")
            sizes[c] = s if c not in sizes or sizes[c] == 1 else sizes[c]
    dts = {o._data.dtype for o in operands}
    if len(dts) > 1:
        names = [_dtype_name(o._data.dtype) for o in operands]
        raise RuntimeError(f"expected scalar type {names[0]} but found {[n for n in names if n != names[0]][0]}")
    if len(operands) == 1:
        return _einsum_single(operands[0], terms[0], rhs)
    res = _einsum_raw(",".join(terms) + "->" + rhs, list(operands))
    if set("".join(terms)) - set(rhs):
        # PyTorch folds a contraction into a bmm and returns a view of its output
        res = res.view(res._data.shape)
    return res


def _einsum_single(x, term, rhs):
    """One operand, as PyTorch does it: each repeated subscript's diagonal moved back to its
    first place, one permute (output subscripts first), then a sum over the rest. With
    nothing summed the result is a view."""
    labels = list(term)
    k = 0
    while k < len(labels):
        c = labels[k]
        j = labels.index(c, k + 1) if c in labels[k + 1:] else -1
        if j < 0:
            k += 1
            continue
        x = x.diagonal(0, k, j).movedim(-1, k)
        del labels[j]
    summed = [c for c in labels if c not in rhs]
    x = x.permute([labels.index(c) for c in list(rhs) + summed])
    if summed:
        x = x.sum(tuple(range(len(rhs), len(labels))))
    return x


def tensordot(a, b, dims=2, out=None):
    """Sum over the given dims of ``a`` and ``b`` (as NumPy's tensordot)."""
    check_devices(a, b)
    na, nb = a._data.ndim, b._data.ndim
    if isinstance(dims, int) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(-dims, 0)), list(range(dims))
    elif isinstance(dims, Tensor):
        return tensordot(a, b, dims.tolist() if dims._data.ndim else int(dims.item()), out)
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
    for x, y in zip(da, db):
        if a._data.shape[x] != b._data.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a._data.shape[x]} in dim "
                               f"{x} and second has size {b._data.shape[y]} in dim {y}")
    da = [d % na for d in da]
    db = [d % nb for d in db]
    la = list(_LETTERS[:na])
    lb = list(_LETTERS[na:na + nb])
    for x, y in zip(da, db):
        lb[y] = la[x]
    rhs = "".join(c for i, c in enumerate(la) if i not in da) + "".join(c for i, c in enumerate(lb) if i not in db)
    if a._data.dtype == np.bool_:
        _no_bool(a._data, "addmm_impl_cpu_")
    res = _einsum_raw("".join(la) + "," + "".join(lb) + "->" + rhs, [a, b])
    # PyTorch's result is a view of the mm its contraction is folded into
    res = res.view(res._data.shape)
    return res if out is None else write_out(out, res, "tensordot")


# --- trace, kron, cross ---------------------------------------------------------------------

class TraceBackward0(OpNode):
    def backward(self, g):
        xp = xp_for(g)
        from .index import put_np
        n, m = self.shape
        k = min(n, m)
        d = xp.arange(k)
        return put_np(g.reshape(1).expand(k), self.shape, (d, d))


def trace(input):
    """Sum of the main diagonal of a matrix."""
    xp = xp_for(input)
    x = input._data
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
    _no_bool(x, "trace")
    r = xp.trace(x)
    if x.dtype.kind in "biu":
        r = r.astype(np.int64)
    node = node_for(TraceBackward0, (input,))
    if node is not None:
        node.shape = x.shape
    return finish(node, arr(xp.asarray(r, dtype=r.dtype if x.dtype.kind in "biu" else x.dtype)))


class KronBackward(OpNode):
    def backward(self, g):
        a, b = self.saved_tensors
        nf = self.next_functions
        n = self.nd
        ash, bsh = self.ashape, self.bshape
        gg = g.reshape(tuple(v for pair in zip(ash, bsh) for v in pair))
        la, lb = _LETTERS[:n], _LETTERS[n:2 * n]
        gsub = "".join(x + y for x, y in zip(la, lb))
        ga = gb = None
        if nf[0][0] is not None:
            ga = _einsum_raw(f"{gsub},{lb}->{la}", [gg, b.reshape(bsh)]).reshape(a._data.shape)
        if nf[1][0] is not None:
            gb = _einsum_raw(f"{gsub},{la}->{lb}", [gg, a.reshape(ash)]).reshape(b._data.shape)
        return ga, gb


KronUnsafeView = type("UnsafeViewBackward0", (KronBackward,), {"__module__": __name__})


def kron(input, other, *, out=None):
    """Kronecker product."""
    check_devices(input, other)
    xp = xp_for(input, other)
    x, y = input._data, other._data
    n = max(x.ndim, y.ndim)
    ash = (1,) * (n - x.ndim) + x.shape
    bsh = (1,) * (n - y.ndim) + y.shape
    r = xp.kron(x.reshape(ash), y.reshape(bsh))
    node = node_for(KronUnsafeView, (input, other))
    if node is not None:
        node.nd, node.ashape, node.bshape = n, ash, bsh
        save(node, input, other)
    res = finish(node, arr(r))
    return res if out is None else write_out(out, res, "kron")


class LinalgCrossBackward0(OpNode):
    def backward(self, g):
        a, b = self.saved_tensors
        nf = self.next_functions
        return (linalg_cross(b, g, dim=self.dim) if nf[0][0] is not None else None,
                linalg_cross(g, a, dim=self.dim) if nf[1][0] is not None else None)


def linalg_cross(input, other, *, dim=-1, out=None):
    """Cross product of 3-vectors along ``dim`` (broadcasting)."""
    xp = xp_for(input, other)
    from ._base import wrap_dim
    x, y = input._data, other._data
    if x.ndim != y.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, x.ndim)
    if x.shape[d] != 3 or y.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {x.shape[d]} and "
                           f"{y.shape[d]}")
    if x.dtype != y.dtype:
        raise RuntimeError(f"expected scalar type {_dtype_name(x.dtype)} but found {_dtype_name(y.dtype)}")
    _no_bool(x, "cross")
    r = xp.cross(x, y, axisa=d, axisb=d, axisc=d)
    node = node_for(LinalgCrossBackward0, (input, other))
    if node is not None:
        node.dim = d
        save(node, input, other)
    res = finish(node, arr(r.astype(np.result_type(x.dtype, y.dtype), copy=False)))
    return res if out is None else write_out(out, res, "linalg_cross")


def cross(input, other, dim=None, *, out=None):
    """Cross product along ``dim`` (default: the first dimension of size 3)."""
    if dim is None:
        import warnings
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        shp = np.broadcast_shapes(input._data.shape, other._data.shape)
        dim = next((k for k, s in enumerate(shp) if s == 3), -1)
    return linalg_cross(input, other, dim=dim, out=out)


# --- det, inv, solve -----------------------------------------------------------------------

def _check_square(x, name):
    if x.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions.")
    if x.shape[-1] != x.shape[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they are {x.shape[-2]} by "
                           f"{x.shape[-1]} matrices")
    if x.dtype.kind not in "fcV":
        raise RuntimeError(f"linalg.{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_dtype_name(x.dtype)}")


class LinalgDetBackward0(OpNode):
    """PyTorch's linalg_det_backward: the gradient G solves A^T G = g det(A) I where A is
    regular; where |det A| < 100 eps it is g times the cofactor matrix (the adjugate's
    transpose), which needs no inverse and is right at singular matrices too."""

    def backward(self, g):
        xp = xp_for(g)
        a, d = self.saved_tensors
        shape = a._data.shape
        n = shape[-1]
        if a._data.size == 0:
            return finish(None, xp.zeros(shape, a._data.dtype))
        gm = g.reshape(g._data.shape + (1, 1))
        if n == 1:  # d det / dA = 1
            return gm.expand(*shape)
        from .shape import diag_embed
        dd = d._data
        singular = xp.abs(dd) < 100 * np.finfo(dd.dtype).eps
        if not singular.any():
            rhs = diag_embed((g * d).unsqueeze(-1).expand(*g._data.shape, n))
            if _state.grad or getattr(self, "use_A_T", True) or a._data.dtype.kind == "c":
                return solve(_mT(a), rhs)
            # first order, A not C-contiguous: PyTorch solves with the forward's LU of A (adjoint)
            from ._decomp import _lu_solve_raw
            r = _lu_solve_raw(a._data, rhs._data, trans=1)
            return finish(None, xp.ascontiguousarray(r.astype(rhs._data.dtype, copy=False)))
        grad_s = gm * _cofactors(a)
        if singular.all():
            return grad_s
        from .index import where
        mask = finish(None, singular.reshape(singular.shape + (1, 1)))
        safe = where(mask, finish(None, xp.eye(n, dtype=dd.dtype)), a)  # solve only the regular ones
        grad_r = solve(_mT(safe), diag_embed((g * d).unsqueeze(-1).expand(*g._data.shape, n)))
        return where(mask, grad_s, grad_r)


def _cofactors(a):
    """The cofactor matrix of (a batch of) n x n matrices, n >= 2, built from determinants of
    minors so that it is differentiable again."""
    xp = xp_for(a)
    n = a._data.shape[-1]
    keep = xp.array([[r for r in range(n) if r != i] for i in range(n)])
    minors = a[(Ellipsis, keep[:, None, :, None], keep[None, :, None, :])]
    sign = finish(None, xp.where(xp.add.outer(xp.arange(n), xp.arange(n)) % 2, -1.0, 1.0).astype(a._data.dtype))
    return det(minors) * sign


def det(A, *, out=None):
    """Determinant of (a batch of) square matrices."""
    xp = xp_for(A)
    from ._base import save_output
    x = A._data
    _check_square(x, "det")
    node = node_for(LinalgDetBackward0, (A,))
    from ._decomp import _det_factors_transpose, _nonfinite, _det_reference
    use_A_T = _det_factors_transpose(x)
    m = xp.swapaxes(x, -1, -2) if use_A_T else x
    if _nonfinite(m) and m.shape[-1]:
        d = _det_reference(m)
    else:
        with np.errstate(all="ignore"):
            d = xp.linalg.det(m)
    res = finish(node, arr(xp.asarray(d, dtype=x.dtype)))
    if node is not None:
        node.use_A_T = use_A_T
        save(node, A)
        save_output(node, res)
    return res if out is None else write_out(out, res, "linalg_det")


class LinalgInvExBackward0(OpNode):
    def backward(self, g):
        (ai,) = self.saved_tensors
        t = ai.mH if ai._data.dtype.kind == "c" else _mT(ai)
        return -matmul(matmul(t, g), t)


def inv(A, *, out=None):
    """Inverse of (a batch of) square matrices."""
    xp = xp_for(A)
    from ._base import save_output
    x = A._data
    _check_square(x, "inv")
    try:
        if xp is np:
            from ._decomp import _nonfinite, _lu_inverse_np, _lu_info
            if _nonfinite(x) and x.size:
                if _lu_info(x).any():
                    raise np.linalg.LinAlgError
                r = _lu_inverse_np(x)
            else:
                r = np.linalg.inv(x)
        else:
            from ._decomp import _checked
            with _checked(xp):   # (CuPy reads LAPACK's info only when asked: a singular A raises, as on the CPU)
                r = xp.linalg.inv(x)
    except np.linalg.LinAlgError:
        raise _singular("inv", x) from None
    node = node_for(LinalgInvExBackward0, (A,))
    # LAPACK's getri writes each inverse column-major, and PyTorch returns it with those strides
    r = xp.swapaxes(xp.ascontiguousarray(xp.swapaxes(r.astype(x.dtype, copy=False), -1, -2)), -1, -2)
    res = finish(node, r)
    if node is not None:
        save_output(node, res)
    return res if out is None else write_out(out, res, "linalg_inv")


def _singular(name, x):
    """PyTorch's error for the first singular matrix of the batch ``x`` (LAPACK's first zero
    pivot, 1-based, for inv)."""
    mats = x.reshape(-1, x.shape[-1], x.shape[-1])
    found = ((k, _zero_pivot(m)) for k, m in enumerate(mats))
    k, pivot = next(((k, p) for k, p in found if p is not None), (0, None))
    where = f"(Batch element {k}): " if x.ndim > 2 else ""
    if name == "solve":
        return _LinAlgErrorType(f"torch.linalg.solve: {where}The solver failed because the input matrix is singular.")
    return _LinAlgErrorType(f"linalg.{name}: {where}The diagonal element {pivot or x.shape[-1]} is zero, the inversion "
                            "could not be completed because the input matrix is singular.")


class _LinAlgErrorType(RuntimeError):
    pass


_LinAlgErrorType.__name__ = "_LinAlgError"


def _zero_pivot(x):
    from ._decomp import _nonfinite, _getf2_reference
    if _nonfinite(x):   # (inf / nan: the pivots of PyTorch's LAPACK, see _getf2_reference)
        return _getf2_reference(x)[2] or None
    xp = xp_for(x)
    a = xp.array(x, dtype=np.complex128 if x.dtype.kind == "c" else np.float64)
    n = a.shape[0]
    for k in range(n):
        p = k + int(xp.argmax(xp.abs(a[k:, k])))
        if a[p, k] == 0:
            return k + 1
        a[[k, p]] = a[[p, k]]
        a[k + 1:] -= xp.outer(a[k + 1:, k] / a[k, k], a[k])
    return None


class LinalgSolveExBackward0(OpNode):
    def backward(self, g):
        a, x = self.saved_tensors
        nf = self.next_functions
        vec = self.vec
        left = getattr(self, "left", True)
        from ._decomp import solve_ex, _lu_solve_raw
        if _state.grad:   # create_graph: a differentiable solve with A^H
            gb = solve_ex(a.mH, g)[0] if left else solve(a.mH, g, left=False)
        else:   # first order: A's LU (the forward's), solved with its adjoint: a singular A gives
            # LAPACK's inf/nan where PyTorch's lu_solve(adjoint=True) puts them
            gd, ad = g._data, a._data
            if not left:   # gB A^H = gX  <=>  A gB^H = gX^H
                r = _lu_solve_raw(ad, xp_for(gd).swapaxes(gd, -1, -2).conj()).swapaxes(-1, -2).conj()
            elif vec:
                r = _lu_solve_raw(ad, gd[..., None], trans=2)[..., 0]
            else:
                r = _lu_solve_raw(ad, gd, trans=2)
            gb = finish(None, xp_for(r).ascontiguousarray(r.astype(gd.dtype, copy=False)))
        ga = None
        if nf[0][0] is not None:
            xc = x.conj() if x._data.dtype.kind == "c" else x
            if not left:   # X A = B: gA = -X^H gB
                ga = -matmul(_mT(xc), gb)
            elif vec:
                ga = -(gb.reshape(gb._data.shape + (1,)) * xc.reshape(x._data.shape[:-1] + (1, x._data.shape[-1])))
            else:
                ga = -matmul(gb, _mT(xc))
        return ga, (gb if nf[1][0] is not None else None)


def solve(A, B, *, left=True, out=None):
    """The solution X of ``A @ X = B``."""
    xp = xp_for(A, B, left)
    from ._base import save_output
    a, b = A._data, B._data
    _check_square(a, "solve")
    left = bool(left)
    if left:
        vec = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
        _solve_checks(a, b, vec)
    else:   # X A = B: B is always a batch of matrices (rows of length n)
        vec = False
        n = a.shape[-1]
        if b.ndim < 2 or b.shape[-1] != n:
            raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation XA = B ({n}x{n} and "
                               f"{b.shape[-2] if b.ndim >= 2 else b.shape[-1]}x{b.shape[-1] if b.ndim >= 2 else 1})")
        _broadcast_batch(b.shape[:-2], a.shape[:-2])
    try:
        if xp is np:
            r = _solve_arrays(xp, a, b, vec, left)
        else:
            from ._decomp import _checked
            with _checked(xp):   # (a singular A raises on a device too, as PyTorch's CUDA solve does)
                r = _solve_arrays(xp, a, b, vec, left)
    except np.linalg.LinAlgError:
        raise _singular("solve", a) from None
    node = node_for(LinalgSolveExBackward0, (A, B))
    res = finish(node, arr(xp.ascontiguousarray(r.astype(np.result_type(a.dtype, b.dtype), copy=False))))
    if node is not None:
        node.vec = vec
        node.left = left
        save(node, A)
        save_output(node, res)
    return res if out is None else write_out(out, res, "linalg_solve")


def _solve_arrays(xp, a, b, vec, left=True):
    from ._decomp import _nonfinite, _lu_solve_raw, _lu_info
    if not left:   # X A = B  <=>  A^T X^T = B^T
        return xp.swapaxes(_solve_arrays(xp, xp.swapaxes(a, -1, -2), xp.swapaxes(b, -1, -2), False), -1, -2)
    if _nonfinite(a) and a.size:   # (inf / nan propagated as PyTorch's LAPACK does)
        if _lu_info(a).any():
            raise np.linalg.LinAlgError
        return _lu_solve_raw(a, b[..., None])[..., 0] if vec else _lu_solve_raw(a, b)
    return xp.linalg.solve(a, b[..., None])[..., 0] if vec else xp.linalg.solve(a, b)


def _solve_checks(a, b, vec):
    """solve's checks of B's shape against square A's (``vec``: B is a batch of vectors)."""
    n = a.shape[-1]
    if (b.shape[-1] if vec else b.shape[-2] if b.ndim >= 2 else -1) != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B ({n}x{n} and "
                           f"{b.shape[-1] if vec else b.shape[-2]}x{1 if vec else b.shape[-1]})")
    _broadcast_batch(b.shape[:-1] if vec else b.shape[:-2], a.shape[:-2])


def multi_dot(tensors, *, out=None):
    """Product of a chain of matrices (the first and last may be vectors)."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0]._data.ndim, tensors[-1]._data.ndim
    if first not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first}D")
    if last not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last}D")
    for k in range(1, n - 1):
        if tensors[k]._data.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {k} must be 2D but got {tensors[k]._data.ndim}D")
    dt = tensors[0]._data.dtype
    for k in range(1, n):
        if tensors[k]._data.dtype != dt:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{_SHORT[dt.name]} and tensor {k} {_SHORT[tensors[k]._data.dtype.name]}")
    ms = list(tensors)
    if first == 1:
        ms[0] = ms[0].unsqueeze(0)        # (PyTorch's: UnsqueezeBackward0)
    if last == 1:
        ms[-1] = ms[-1].unsqueeze(-1)
    for k in range(n - 1):
        a, b = ms[k]._data.shape, ms[k + 1]._data.shape
        if a[1] != b[0]:
            raise RuntimeError(f"multi_dot(): tensors {k} and {k + 1} with shapes {list(a)} and {list(b)} cannot be "
                               "multiplied")
    if n == 2:
        r = mm(ms[0], ms[1])
    elif n == 3:  # the cheaper of the two orders, as PyTorch decides it
        a, b = ms[0]._data.shape
        c, d = ms[2]._data.shape
        r = mm(ms[0], mm(ms[1], ms[2])) if a * c * (b + d) > b * d * (a + c) else mm(mm(ms[0], ms[1]), ms[2])
    else:
        r = _chain_product(ms, _chain_order(ms), 0, n - 1)
    shape = ms[0]._data.shape[:1] if first == 2 else ()
    shape += ms[-1]._data.shape[1:] if last == 2 else ()
    r = r.view(shape)  # PyTorch's result is a view of its last product
    return r if out is None else write_out(out, r, "linalg_multi_dot")


def _chain_order(ms):
    """The optimal parenthesisation of a matrix chain (PyTorch's dynamic programme: the first
    split of least cost wins ties, so non-finite values meet in PyTorch's order)."""
    n = len(ms)
    p = [ms[0]._data.shape[0]] + [m._data.shape[1] for m in ms]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j], split[i][j] = q, k
    return split


def _chain_product(ms, split, i, j):
    if i == j:
        return ms[i]
    k = split[i][j]
    return mm(_chain_product(ms, split, i, k), _chain_product(ms, split, k + 1, j))


def vecdot(x, y, *, dim=-1, out=None):
    """Dot product of vectors along ``dim`` (broadcasting)."""
    from .arithmetic import mul
    for t in (x, y):
        if t._data.dtype.kind not in "fcV":
            raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                               f"{_dtype_name(t._data.dtype)}")
    res = mul(x, y).sum(dim)
    return res if out is None else write_out(out, res, "linalg_vecdot")


def _rmatmul(self, other):
    return matmul(other, self)


TENSOR_METHODS = {"matmul": matmul, "__matmul__": matmul, "__rmatmul__": _rmatmul, "mm": mm, "bmm": bmm, "mv": mv,
                  "dot": dot, "vdot": vdot, "inner": inner, "outer": outer, "ger": ger, "addmm": addmm,
                  "addmv": addmv, "addbmm": addbmm, "baddbmm": baddbmm, "addr": addr, "trace": trace,
                  "kron": kron, "cross": cross, "det": det, "inverse": inv}
inverse = inv

# the decompositions and what is built on them (ops/_decomp.py), under their top-level names
from . import _decomp as D  # noqa: E402
svd, qr, cholesky, slogdet, lu_solve, lu = D.torch_svd, D.torch_qr, D.torch_cholesky, D.torch_slogdet, \
    D.torch_lu_solve, D.torch_lu
eig, lstsq, symeig, solve_removed, matrix_rank = D.torch_eig, D.torch_lstsq, D.symeig, D.torch_solve, \
    D.torch_matrix_rank
from ._decomp import (cholesky_inverse, cholesky_solve, logdet, pinverse, matrix_exp, lu_unpack,  # noqa: E402,F401
                      triangular_solve, geqrf, orgqr, ormqr, frobenius_norm, nuclear_norm, renorm, vander)
matrix_power = D.matrix_power


def _lu_method(self, pivot=True, get_infos=False):
    return D.torch_lu(self, pivot, get_infos)


def _matrix_power_method(self, n):
    return D.matrix_power(self, n)


TENSOR_METHODS.update({
    "svd": svd, "qr": qr, "cholesky": cholesky, "cholesky_inverse": cholesky_inverse, "cholesky_solve": cholesky_solve,
    "slogdet": slogdet, "logdet": logdet, "pinverse": pinverse, "matrix_exp": matrix_exp,
    "matrix_power": _matrix_power_method, "lu_solve": lu_solve, "lu": _lu_method, "triangular_solve": triangular_solve,
    "geqrf": geqrf, "orgqr": orgqr, "ormqr": ormqr, "lstsq": lstsq, "eig": eig, "symeig": symeig, "renorm": renorm,
    "solve": solve_removed})
INPLACE = {"addmm_": addmm, "addmv_": addmv, "addbmm_": addbmm, "baddbmm_": baddbmm, "addr_": addr,
           "renorm_": renorm}
