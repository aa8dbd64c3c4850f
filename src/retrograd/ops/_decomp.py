"""Matrix decompositions and the functions built on them (torch.linalg's cholesky, qr, eigh, eig,
svd, lu, ldl, lstsq, pinv, matrix_exp, ... and their older top-level spellings).

Forward passes are NumPy / SciPy (LAPACK) calls on the CPU, and CuPy's (cuSOLVER) on CUDA where
CuPy has the routine (the others copy to the host and back: see ``_host``). Each differentiable op
records one node named as PyTorch names it, whose backward is written with tensor ops (so double
backward works). The formulas are the standard ones (e.g. Giles' matrix derivative results): a
gradient is unique wherever the decomposition is a smooth function of its input, so it agrees with
PyTorch's. SciPy is imported inside the functions that need it.
"""
import math

import numpy as np

from ._base import refuse_meta
from ._base import OpNode, node_for, save, save_output, finish, finish_multi, arr, Tensor, _dtype_name, _state
from ._base import wrap_dim, xp_for


# --- named results -------------------------------------------------------------------------

class _Named(tuple):
    """A ``torch.return_types.<name>`` tuple: fields by attribute, PyTorch's repr."""
    __slots__ = ()
    _name = ""
    _fields = ()

    def __new__(cls, *items):
        return tuple.__new__(cls, items)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"torch.return_types.{self._name}(\n{body})"

    def __reduce__(self):
        return (type(self), tuple(self))


def _named(name, fields):
    ns = {"__slots__": (), "_name": name, "_fields": tuple(fields), "__module__": "torch.return_types"}
    for i, f in enumerate(fields):
        ns[f] = property(lambda self, i=i: self[i])
    cls = type(name, (_Named,), ns)
    from .reduce import return_types
    setattr(return_types, name, cls)
    return cls


RT = {n: _named(n, f.split()) for n, f in {
    "linalg_cholesky_ex": "L info", "linalg_slogdet": "sign logabsdet", "slogdet": "sign logabsdet",
    "linalg_eigh": "eigenvalues eigenvectors", "linalg_eig": "eigenvalues eigenvectors",
    "linalg_svd": "U S Vh", "svd": "U S V", "linalg_qr": "Q R", "qr": "Q R",
    "linalg_inv_ex": "inverse info", "linalg_solve_ex": "result info",
    "linalg_lu_factor": "LU pivots", "linalg_lu_factor_ex": "LU pivots info", "linalg_lu": "P L U",
    "lu_unpack": "P L U", "linalg_ldl_factor": "LD pivots", "linalg_ldl_factor_ex": "LD pivots info",
    "linalg_lstsq": "solution residuals rank singular_values", "triangular_solve": "solution cloned_coefficient",
    "geqrf": "a tau"}.items()}


# --- helpers -------------------------------------------------------------------------------

class _LNode(OpNode):
    """A node whose ``grad(grads)`` gets one gradient (or None) per differentiable output."""
    _materialize_grads = False

    def _apply(self, grads):
        if all(g is None for g in grads):
            return None
        return self.grad(list(grads))


def _node(name, grad):
    return type(name, (_LNode,), {"grad": grad, "__module__": __name__})


def _record(cls, inputs, outs, saved=(), out_saved=(), **attrs):
    """Tensors for the arrays ``outs`` (all outputs of one node ``cls`` over ``inputs``)."""
    node = node_for(cls, inputs)
    xp = xp_for(*inputs)
    # (outputs are the caller's to modify: a broadcast or otherwise read-only array is copied)
    if xp is np:
        outs = [o if o.flags.c_contiguous and o.flags.writeable else np.array(o, order="C")
                for o in map(np.asarray, outs)]
    else:
        outs = [o if o.flags.c_contiguous else xp.ascontiguousarray(o) for o in map(xp.asarray, outs)]
    res = finish_multi(node, outs)
    if node is not None:
        save(node, *saved)
        for k in out_saved:
            save_output(node, res[k])
        for k, v in attrs.items():
            setattr(node, k, v)
    return res


def _const(a, like=None):
    """A constant tensor of ``a``, on the device of ``like`` (a tensor or array) when given."""
    xp = xp_for(a if like is None else like)
    if xp is not np:
        return finish(None, xp.asarray(a))
    return finish(None, arr(np.asarray(a)))


def _t(x):
    return x.mT


def _h(x):
    return x.mH


def _eye(n, like, dtype=None):
    """The n x n identity of ``like``'s device (and dtype, unless given)."""
    return _const(xp_for(like).eye(n, dtype=like._data.dtype if dtype is None else dtype), like)


def _zeros(shape, dtype, like):
    return _const(xp_for(like).zeros(shape, dtype), like)


def _check_nd(x, name, what="A"):
    if x.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {what} must have at least 2 dimensions.")


def _check_float(x, name):
    if x.dtype.kind not in "fc":
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {_dtype_name(x.dtype)}")


def _check_sq(x, name):
    if x.shape[-1] != x.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {x.shape[-2]} by "
                           f"{x.shape[-1]} matrices")


def _square(A, name, kernel=None):
    """The array of ``A`` after PyTorch's checks (2+ dims, square, floating)."""
    x = A._data
    _check_nd(x, name)
    _check_sq(x, name)
    if kernel is not None and x.dtype.kind not in "fc":
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype_name(x.dtype)}'")
    _check_float(x, name)
    return x


def _lapack_dtype(x, kernel=None, runtime=None):
    """LAPACK computes float32 / float64 / complex64 / complex128: half types get PyTorch's error
    (its kernel's dispatch error, or ``runtime``'s message)."""
    if x.dtype.kind == "V" or x.dtype == np.float16:
        if runtime is not None:
            raise RuntimeError(runtime.format(_dtype_name(x.dtype)))
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype_name(x.dtype)}'")
    return x


def _plus_zero(x):
    """``x`` with -0.0 read as +0.0, for the Householder-based LAPACK routines (QR, SVD, eigh,
    eig): PyTorch's LAPACK (MKL) gives a reflector whose leading entry is -0.0 the sign of +0.0,
    the reference LAPACK that NumPy / SciPy call gives it the sign of -0.0, which flips whole
    columns of Q, U, Vh or eigenvectors; adding +0.0 changes -0.0 only."""
    return x + 0.0 if x.dtype.kind in "fc" else x


def _lapack(name, arrays):
    """SciPy's LAPACK routine ``name`` for ``arrays``: host memory only, so a device array is
    refused here (SciPy's wrappers must never see one: ``_host`` copies device arrays first)."""
    if any(type(a) is not np.ndarray for a in arrays):
        raise NotImplementedError(f"LAPACK {name}: SciPy's wrappers take host arrays only; copy a device array to "
                                  "the host first (.cpu())")
    from scipy.linalg import lapack
    return lapack.get_lapack_funcs(name, arrays)


def _host(fn, *args, **kwargs):
    """``fn`` (NumPy / SciPy code) for the routines CuPy lacks (general eig, LDL, geqrf, the exact
    LAPACK info of a failed factorization, matrix_exp): on device arrays, as PyTorch's CUDA backend
    does for its hybrid MAGMA routines, an explicit copy to the host, the host computation and a
    copy of its arrays back (a synchronisation: these ops do not belong in a training step's hot
    path). On host arrays, ``fn`` itself."""
    xp = xp_for(*args)
    if xp is np:
        return fn(*args, **kwargs)
    return _to_device(xp, fn(*[xp.asnumpy(a) if xp_for(a) is not np else a for a in args], **kwargs))


def _to_device(xp, r):
    if type(r) is np.ndarray:
        return xp.asarray(r)
    if type(r) is tuple or type(r) is list:
        return type(r)(_to_device(xp, v) for v in r)
    return r


def _scipy_linalg(xp):
    """cupyx.scipy.linalg, the device's SciPy linalg (the emulated device brings its own)."""
    m = getattr(xp, "_scipy_linalg", None)
    if m is not None:
        return m
    import cupyx.scipy.linalg
    return cupyx.scipy.linalg


def _low_precision(name):
    return name + ": Low precision dtypes not supported. Got {}"


def _real_dt(dt):
    return np.empty(0, dt).real.dtype


def _linalg_error(msg):
    from .linalg import _LinAlgErrorType
    return _LinAlgErrorType(msg)


def _on_host(a):
    """A device array's values on the host (a synchronisation), for an error message."""
    xp = xp_for(a)
    return a if xp is np else xp.asnumpy(a)


def _batch_where(info):
    info = _on_host(info)
    return "" if info.ndim == 0 else f"(Batch element {int(np.flatnonzero(info.reshape(-1))[0])}): "


def _first_info(info):
    f = _on_host(info).reshape(-1)
    return int(f[f != 0][0])


def _per_matrix(fn, x, *outs_tail):
    """Apply ``fn`` (one matrix -> tuple of arrays) over the batch of ``x``; stack the results."""
    batch = x.shape[:-2]
    flat = x.reshape((-1,) + x.shape[-2:])
    res = [fn(m) for m in flat]
    if not res:
        return None
    return tuple(np.stack([r[k] for r in res]).reshape(batch + np.shape(res[0][k])) for k in range(len(res[0])))


def _gather_diag(x):
    return x.diagonal(0, -2, -1)


def _diag_embed(v):
    return v.diag_embed()


# --- cholesky ------------------------------------------------------------------------------

def _chol_backward(self, grads):
    (L,) = self.saved_tensors
    g = grads[0]
    if self.upper:
        L, g = _h(L), _h(g)
    # gA = L^-H Phi(L^H gL) L^-1, Phi taking the lower triangle with a halved diagonal, made hermitian
    M = (_h(L) @ g).tril()
    S = (M + _h(M.tril(-1))) * 0.5
    d = _gather_diag(M)
    if d.is_complex():
        S = S - _diag_embed(d * 0.5) + _diag_embed(d.real.to(d.dtype) * 0.5)
    S = solve_triangular(_h(L), S, upper=True, left=True)
    return solve_triangular(L, S, upper=False, left=False)


LinalgCholeskyExBackward0 = _node("LinalgCholeskyExBackward0", _chol_backward)
CholeskyBackward0 = _node("CholeskyBackward0", _chol_backward)


def _cholesky_np(a, upper):
    """(factor, info) of ``a`` read from its lower triangle, or its upper one for ``upper``
    (the upper triangle of A is the lower one of A^H: U = (chol A^H)^H)."""
    if upper:
        a = np.swapaxes(a, -1, -2).conj()
    shape = a.shape
    info = np.zeros(shape[:-2], dtype=np.int32)
    if a.size == 0:
        return a.copy(), info
    try:
        L = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        flat = a.reshape((-1,) + shape[-2:])
        L = np.zeros_like(flat)
        fi = info.reshape(-1)
        for i, m in enumerate(flat):
            try:
                L[i] = np.linalg.cholesky(m)
            except np.linalg.LinAlgError:
                w = m.copy()
                fi[i] = _potf2(w)
                L[i] = np.tril(w)
        L = L.reshape(shape)
    if upper:
        L = np.swapaxes(L, -1, -2).conj()
    return L, info


def _checked(xp):
    """CuPy reading LAPACK's info after its cuSOLVER call (one synchronisation), raising
    LinAlgError on a failure as NumPy does (NumPy, and the emulated device's, raise by themselves)."""
    if xp is np or getattr(xp, "emulated", False):
        import contextlib
        return contextlib.nullcontext()
    import cupyx
    return cupyx.errstate(linalg="raise")


def _cholesky(x, upper):
    """``(L, info, failed)``: on a device cuSOLVER's factor, with a failure's exact info and
    partial factor computed on the host."""
    xp = xp_for(x)
    if xp is np:
        L, info = _cholesky_np(x, upper)
        return L, info, bool(info.any())
    if upper:
        x = xp.swapaxes(x, -1, -2).conj()     # (factor A^H from its lower triangle)
    if x.size:
        try:
            with _checked(xp):
                L = xp.linalg.cholesky(x)
        except np.linalg.LinAlgError:
            L, info = _host(_cholesky_np, x, False)
            if upper:
                L = xp.swapaxes(L, -1, -2).conj()
            return L, info, True
    else:
        L = x.copy()
    if upper:
        L = xp.swapaxes(L, -1, -2).conj()
    return L, xp.zeros(x.shape[:-2], np.int32), False


def _potf2(a):
    """The column-by-column lower Cholesky in place on the square matrix ``a``: 0, or the
    order of the first minor that is not positive-definite, with ``a`` left as PyTorch's
    LAPACK (MKL) leaves it: the finished columns, the failing pivot's Schur complement (its
    real part) unrooted, the later columns as they were. (MKL switches to blocked code for
    large matrices, which leaves the later columns partly updated: from n ~ 200 the entries
    past the failing pivot differ; the finished columns and info agree.)"""
    n = a.shape[0]
    for j in range(n):
        r = a[j, :j]
        d = (a[j, j] - np.vdot(r, r)).real
        if not d > 0:                    # (NaN fails too)
            a[j, j] = d
            return j + 1
        d = np.sqrt(d)
        a[j, j] = d
        a[j + 1:, j] = (a[j + 1:, j] - a[j + 1:, :j] @ r.conj()) / d
    return 0


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """``(L, info)``: the Cholesky factor and 0 / the order of the first failing leading minor."""
    x = _lapack_dtype(_square(A, "linalg.cholesky"), "cholesky_cpu")
    L, info, failed = _cholesky(x, upper)
    if check_errors and failed:
        raise _chol_error(info, "linalg.cholesky_ex")
    Lt, = _record(LinalgCholeskyExBackward0, (A,), [L], out_saved=(0,), upper=upper)
    return RT["linalg_cholesky_ex"](Lt, _const(info))


def _chol_error(info, name="linalg.cholesky"):
    return _linalg_error(f"{name}: {_batch_where(info)}The factorization could not be completed because the "
                         f"input is not positive-definite (the leading minor of order {_first_info(info)} is not "
                         "positive-definite).")


def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor of (a batch of) hermitian positive-definite matrices."""
    x = _lapack_dtype(_square(A, "linalg.cholesky"), "cholesky_cpu")
    L, info, failed = _cholesky(x, upper)
    if failed:
        raise _chol_error(info)
    Lt, = _record(LinalgCholeskyExBackward0, (A,), [L], out_saved=(0,), upper=upper)
    return _out(Lt, out, "linalg_cholesky")


def torch_cholesky(input, upper=False, *, out=None):
    """``torch.cholesky`` (deprecated spelling of linalg.cholesky, lower by default)."""
    import warnings
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                  "PyTorch release.", UserWarning, stacklevel=2)
    x = _lapack_dtype(_square(input, "linalg.cholesky", "cholesky_cpu"), "cholesky_cpu")
    L, info, failed = _cholesky(x, upper)
    if failed:
        raise _chol_error(info)
    Lt, = _record(CholeskyBackward0, (input,), [L], out_saved=(0,), upper=upper)
    return _out(Lt, out, "cholesky")


def _out(res, out, name):
    if out is None:
        return res
    from ._base import write_out
    return write_out(out, res, name)


# --- triangular solves ---------------------------------------------------------------------

def _solve_tri_backward(self, grads):
    A, X = self.saved_tensors
    g = grads[0]
    nf = self.next_functions
    upper, left, unit = self.upper, self.left, self.unitriangular
    gB = solve_triangular(_h(A), g, upper=not upper, left=left, unitriangular=unit)
    gA = None
    if nf[0][0] is not None:
        gA = -(gB @ _h(X)) if left else -(_h(X) @ gB)
        gA = gA.triu(1 if unit else 0) if upper else gA.tril(-1 if unit else 0)
        if gA._data.shape != A._data.shape:
            gA = gA.sum_to_size(A._data.shape)
    if gB is not None and nf[1][0] is not None and gB._data.shape != self.bshape:
        gB = gB.sum_to_size(self.bshape)
    return gA, (gB if nf[1][0] is not None else None)


LinalgSolveTriangularBackward0 = _node("LinalgSolveTriangularBackward0", _solve_tri_backward)


def _tri_solve_np(a, b, upper, left, unit):
    """Solve with triangular ``a`` over broadcast batches (a zero pivot gives inf/nan as LAPACK's
    trtrs does, rather than raising)."""
    dt = np.result_type(a, b)
    a = np.triu(a) if upper else np.tril(a)
    if unit:
        a = a.copy()
        n = a.shape[-1]
        a[..., np.arange(n), np.arange(n)] = 1
    if not left:   # X A = B  <=>  A^T X^T = B^T
        a, b, upper = np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), not upper
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:]).astype(dt, copy=False)
    b = np.broadcast_to(b, batch + b.shape[-2:]).astype(dt, copy=False)
    x = np.empty(b.shape, dt)
    if x.size:
        from scipy.linalg import solve_triangular as st
        fa, fb, fx = a.reshape((-1,) + a.shape[-2:]), b.reshape((-1,) + b.shape[-2:]), x.reshape((-1,) + x.shape[-2:])
        with np.errstate(all="ignore"):
            for i in range(fa.shape[0]):
                fx[i] = _trsm(st, fa[i], fb[i], upper)
    if not left:
        x = np.swapaxes(x, -1, -2)
    return np.ascontiguousarray(x)


def _tri_solve(a, b, upper, left, unit):
    """_tri_solve_np's solution; on a device cuBLAS's trsm (cupyx.scipy.linalg.solve_triangular)
    per matrix, whose zero pivots give inf/nan as LAPACK's trtrs does."""
    xp = xp_for(a, b)
    if xp is np:
        return _tri_solve_np(a, b, upper, left, unit)
    dt = xp.result_type(a, b)
    if not left:
        a, b, upper = xp.swapaxes(a, -1, -2), xp.swapaxes(b, -1, -2), not upper
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = xp.broadcast_to(a, batch + a.shape[-2:]).astype(dt, copy=False)
    b = xp.broadcast_to(b, batch + b.shape[-2:]).astype(dt, copy=False)
    x = xp.empty(b.shape, dt)
    if x.size:
        st = _scipy_linalg(xp).solve_triangular
        fa, fb, fx = a.reshape((-1,) + a.shape[-2:]), b.reshape((-1,) + b.shape[-2:]), x.reshape((-1,) + x.shape[-2:])
        for i in range(fa.shape[0]):
            fx[i] = st(fa[i], fb[i], lower=not upper, unit_diagonal=unit)
    if not left:
        x = xp.swapaxes(x, -1, -2)
    return xp.ascontiguousarray(x)


def _trsm(st, a, b, upper):
    d = np.diagonal(a)
    if np.all(d != 0):
        return st(a, b, lower=not upper, check_finite=False)
    # a zero pivot: substitution by hand so that inf/nan come out where LAPACK puts them
    n = a.shape[0]
    x = np.zeros(b.shape, np.result_type(a, b))
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        x[i] = (b[i] - a[i] @ x) / a[i, i]
    return x


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """Solve ``A X = B`` (``X A = B`` when ``left=False``) for triangular ``A``."""
    a, b = A._data, B._data
    name = "linalg.solve_triangular"
    _check_nd(a, name)
    _check_nd(b, name, "B")
    _check_sq(a, name)
    for x in (a, b):
        if x.dtype.kind not in "fc":
            raise NotImplementedError(f"\"triangular_solve_cpu\" not implemented for '{_dtype_name(x.dtype)}'")
        _lapack_dtype(x, "triangular_solve_cpu")
    n = a.shape[-1]
    k = b.shape[-2] if left else b.shape[-1]
    if k != n:
        shp = f"{n}x{n} and {b.shape[-2]}x{b.shape[-1]}" if left else f"{b.shape[-2]}x{b.shape[-1]} and {n}x{n}"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({shp})")
    from .linalg import _broadcast_batch
    _broadcast_batch(a.shape[:-2], b.shape[:-2])
    x = _tri_solve(a, b, upper, left, unitriangular)
    X, = _record(LinalgSolveTriangularBackward0, (A, B), [x], saved=(A,), out_saved=(0,), upper=upper, left=left,
                 unitriangular=unitriangular, bshape=b.shape)
    return _out(X, out, "linalg_solve_triangular")


def _tri_solve_old_backward(self, grads):
    A, _, X = self.saved_tensors      # (b: for its version check, as PyTorch saves it)
    gX = grads[0]
    gM = grads[1] if len(grads) > 1 else None
    nf = self.next_functions
    upper, trans, unit = self.upper, self.transpose, self.unitriangular
    gB = gA = None
    if gX is not None:
        Aeff = _t(A) if trans else A
        up = upper != trans
        gB = solve_triangular(_h(Aeff), gX, upper=not up, unitriangular=unit)
        if nf[1][0] is not None:
            gAe = -(gB @ _h(X))
            gAe = gAe.triu(1 if unit else 0) if up else gAe.tril(-1 if unit else 0)
            gA = _t(gAe) if trans else gAe
    if gM is not None and nf[1][0] is not None:
        gA = gM if gA is None else gA + gM
    if gB is not None and gB._data.shape != self.bshape:
        gB = gB.sum_to_size(self.bshape)
    if gA is not None and gA._data.shape != self.ashape:
        gA = gA.sum_to_size(self.ashape)
    return (gB if nf[0][0] is not None else None), gA


TriangularSolveBackward0 = _node("TriangularSolveBackward0", _tri_solve_old_backward)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """``torch.triangular_solve`` (deprecated): ``(solution, cloned_coefficient)`` of ``A X = b``."""
    import warnings
    warnings.warn("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be removed "
                  "in a future PyTorch release.", UserWarning, stacklevel=2)
    bd, ad = b._data, A._data
    if bd.ndim < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has {bd.ndim} "
                           "dimensions instead")
    if ad.ndim < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected A to have at least 2 dimensions, but it has {ad.ndim} "
                           "dimensions instead")
    if bd.dtype != ad.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_dtype_name(bd.dtype)} "
                           f"and A of type {_dtype_name(ad.dtype)} instead.")
    _check_sq(ad, "linalg.solve_triangular")
    if ad.shape[-1] != bd.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is {ad.shape[-1]} by "
                           f"{ad.shape[-1]} but each b matrix is {bd.shape[-2]} by {bd.shape[-1]}")
    if ad.dtype.kind not in "fc":
        raise NotImplementedError(f"\"triangular_solve_cpu\" not implemented for '{_dtype_name(ad.dtype)}'")
    xp = xp_for(ad, bd)
    batch = np.broadcast_shapes(ad.shape[:-2], bd.shape[:-2])
    aeff = xp.swapaxes(ad, -1, -2) if transpose else ad
    x = _tri_solve(aeff, bd, upper != transpose, True, unitriangular)
    x = xp.broadcast_to(x, batch + x.shape[-2:])
    m = xp.broadcast_to(ad, batch + ad.shape[-2:]).copy()
    X, M = _record(TriangularSolveBackward0, (b, A), [x, m], saved=(A, b), out_saved=(0,), upper=upper,
                   transpose=transpose, unitriangular=unitriangular, bshape=bd.shape, ashape=ad.shape)
    return RT["triangular_solve"](X, M)


# --- determinants --------------------------------------------------------------------------

def _slogdet_backward(self, grads):
    A, sign = self.saved_tensors
    gsign, glog = grads
    if glog is None and not A.is_complex():
        return None
    n = A._data.shape[-1]
    if not A.is_complex():
        g = glog
    else:   # d logabsdet = Re tr(A^-1 dA), d sign = i sign Im tr(A^-1 dA)
        g = glog.to(A.dtype) if glog is not None else 0
        if gsign is not None:
            g = g - 1j * (sign.conj() * gsign).imag.to(A.dtype)
    # gA = A^-H g: one solve with g on the diagonal, as PyTorch does (a singular A, or an infinite
    # g, gives LAPACK's inf/nan, so the factorization solved with must be PyTorch's too)
    D = _diag_embed(g.unsqueeze(-1).expand(*g._data.shape, n))
    if _state.grad:   # create_graph: linalg.solve with A^H (differentiable; a singular A raises)
        from .linalg import solve
        return solve(_h(A), D)
    # first order: the forward's LU, of A^T for a real C-contiguous A (A^T X = D solved directly),
    # else of A (solved with its adjoint)
    x = A._data
    if self.use_A_T:
        r = _lu_solve_raw(xp_for(x).swapaxes(x, -1, -2), D._data)
    else:
        r = _lu_solve_raw(x, D._data, trans=2)
    return finish(None, xp_for(x).ascontiguousarray(r.astype(x.dtype, copy=False)))


LinalgSlogdetBackward0 = _node("LinalgSlogdetBackward0", _slogdet_backward)


def _det_factors_transpose(x):
    """Whether PyTorch's det / slogdet factor A^T instead of A: for a real C-contiguous A (the
    column-major A^T LAPACK wants, without a copy). Where A is singular or holds inf / nan, the
    result (an exact 0 or not, inf or nan) depends on which of the two is factored. A negative-
    stride array has no PyTorch counterpart but its contiguous copy (torch.tensor of it), so it
    counts as contiguous."""
    return x.dtype.kind != "c" and (bool(x.flags.c_contiguous) or any(st < 0 for st in x.strides))


def _lu_diag_sign(x):
    """(diag U, permutation sign) of each matrix of a real host batch, from _getf2_reference."""
    n = x.shape[-1]
    flat = x.reshape((-1, n, n))
    d = np.empty(flat.shape[:2], x.dtype)
    sg = np.empty(flat.shape[0], x.dtype)
    for i, m in enumerate(flat):
        lu, piv, _ = _getf2_reference(m)
        d[i] = np.diagonal(lu)
        sg[i] = -1.0 if int((piv != np.arange(n)).sum()) % 2 else 1.0
    return d.reshape(x.shape[:-1]), sg.reshape(x.shape[:-2])


def _slogdet_reference(x):
    d, sg = _lu_diag_sign(x)
    with np.errstate(all="ignore"):
        return sg * np.prod(np.where(np.isnan(d), 0, np.sign(d)), -1), np.sum(np.log(np.abs(d)), -1)


def _det_reference(x):
    """det of a real host batch holding inf / nan, with PyTorch's LAPACK's propagation."""
    d, sg = _lu_diag_sign(x)
    with np.errstate(all="ignore"):
        return sg * np.prod(d, -1)


def _slogdet_np(x, use_A_T=False):
    xp = xp_for(x)
    if x.shape[-1] == 0:
        return xp.ones(x.shape[:-2], x.dtype), xp.zeros(x.shape[:-2], _real_dt(x.dtype))
    m = xp.swapaxes(x, -1, -2) if use_A_T else x
    if _nonfinite(m):
        s, l = _slogdet_reference(m)
    else:
        s, l = xp.linalg.slogdet(m)
    if x.dtype.kind != "c":   # sign = prod sgn(diag U) with sgn(nan) = 0, as PyTorch: 0 where log|det| is nan
        s = xp.where(xp.isnan(l), 0 * s, s)
    return s.astype(x.dtype), l.astype(_real_dt(x.dtype))


def slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of (a batch of) square matrices."""
    x = _lapack_dtype(_square(A, "linalg.slogdet"), runtime=_low_precision("linalg.slogdet"))
    use_A_T = _det_factors_transpose(A._data)
    s, l = _slogdet_np(x, use_A_T)
    S, Lg = _record(LinalgSlogdetBackward0, (A,), [s, l], saved=(A,), out_saved=(0,), use_A_T=use_A_T)
    return RT["linalg_slogdet"](S, Lg)


def torch_slogdet(input, *, out=None):
    """``torch.slogdet``: the same values as linalg.slogdet (named ``torch.return_types.slogdet``)."""
    r = slogdet(input)
    return RT["slogdet"](*r)


def logdet(input):
    """``log(det(A))``: nan for a negative determinant, -inf for a zero one."""
    from .index import where
    s, l = slogdet(input)
    if input._data.dtype.kind == "c":
        from .unary import log
        return log(s) + l
    nan = _const(np.array(np.nan, l._data.dtype))   # (0-d: joins a device tensor as a scalar)
    return where(s == -1, nan, l)


# --- eigendecompositions -------------------------------------------------------------------

def _eig_grad_core(L, V, gL, gV, hermitian):
    """The gradient of the eigendecomposition A = V diag(L) V^-1 (V^H for hermitian A) w.r.t. A,
    in PyTorch's gauge (the projected V^H gV, divided by the eigenvalue gaps)."""
    if gV is None:
        D = _diag_embed(gL.to(V.dtype) if gL.dtype != V.dtype else gL)
        return V @ D @ _h(V) if hermitian else _eig_conj(V, D)
    VhgV = _h(V) @ gV
    if hermitian:
        VhgV = (VhgV - _h(VhgV)) * 0.5
    else:
        VhgV = VhgV - _h(V) @ (V * _gather_diag(VhgV).real.to(V.dtype).unsqueeze(-2))
    Lc = L.conj() if L.is_complex() else L
    E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1)
    n = E._data.shape[-1]
    from .index import where
    # the diagonal is 1, selected (as PyTorch's fill_): no dependence on L there, so that a NaN
    # on VhgV's diagonal (inf - inf from an inf upstream) does not reach L in a double backward
    E = where(_eye(n, E, bool), _const(np.ones((), E._data.dtype), E), E)
    ret = VhgV / E.to(VhgV.dtype) if E.dtype != VhgV.dtype else VhgV / E
    gd = gL.to(ret.dtype) if gL is not None and gL.dtype != ret.dtype else gL
    # the diagonal is replaced by gL (selected, so that inf/nan off it do not reach it)
    diag = _diag_embed(gd) if gd is not None else _const(np.zeros((), ret._data.dtype))
    ret = where(_eye(n, ret, bool), diag, ret)
    return V @ ret @ _h(V) if hermitian else _eig_conj(V, ret)


def _eig_conj(V, M):
    from .linalg import solve
    return solve(_h(V), M @ _h(V))


def _eigh_backward(self, grads):
    A, L, V = self.saved_tensors
    gL = grads[0]
    gV = grads[1] if len(grads) > 1 else None
    if V is None:
        raise RuntimeError("linalg_eigh: the eigenvectors are needed to differentiate the eigenvalues")
    if gV is not None and V.is_complex():
        _check_phase(V, gV, "linalg_eig_backward")
    return _eig_grad_core(L, V, gL, gV, True)


def _check_phase(V, gV, name):
    # PyTorch's test: allclose(Im diag(V^H gV), 0) with rtol = atol = 1e-2 (nan fails it)
    d = _gather_diag(_h(V) @ gV)._data.imag
    xp = xp_for(d)
    if not bool(xp.all(xp.abs(d) <= 1e-2)):   # (on a device a synchronisation, as PyTorch's check)
        raise RuntimeError(f"{name}: The eigenvectors in the complex case are specified up to multiplication by "
                           "e^{i phi}. The specified loss function depends on this quantity, so it is ill-defined.")


LinalgEighBackward0 = _node("LinalgEighBackward0", _eigh_backward)


def _eigh_np(x, uplo, vectors):
    xp = xp_for(x)
    x = _plus_zero(x)
    if x.shape[-1] == 0:
        return xp.zeros(x.shape[:-1], _real_dt(x.dtype)), x.copy()
    if vectors:
        w, v = xp.linalg.eigh(x, UPLO=uplo)
        return w.astype(_real_dt(x.dtype)), v.astype(x.dtype)
    return xp.linalg.eigvalsh(x, UPLO=uplo).astype(_real_dt(x.dtype)), None


def _uplo(UPLO):
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


def eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and orthonormal eigenvectors of hermitian matrices."""
    x = _square(A, "linalg.eigh", "linalg_eigh_cpu")
    uplo = _uplo(UPLO)
    w, v = _eigh_np(_lapack_dtype(x, "linalg_eigh_cpu"), uplo, True)
    L, V = _record(LinalgEighBackward0, (A,), [w, v], saved=(None,), out_saved=(0, 1))
    return RT["linalg_eigh"](L, V)


def eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) of hermitian matrices."""
    x = _square(A, "linalg.eigh", "linalg_eigh_cpu")
    uplo = _uplo(UPLO)
    if node_for(LinalgEighBackward0, (A,)) is None:
        w, _ = _eigh_np(_lapack_dtype(x, "linalg_eigh_cpu"), uplo, False)
        return _out(_const(w), out, "linalg_eigvalsh")
    L = eigh(A, UPLO)[0]
    return _out(L, out, "linalg_eigvalsh")


def _eig_backward(self, grads):
    _, L, V = self.saved_tensors
    gL = grads[0]
    gV = grads[1] if len(grads) > 1 else None
    if gV is not None:
        _check_phase(V, gV, "linalg_eig_backward")
    g = _eig_grad_core(L, V, gL, gV, False)
    return g.real if not self.complex_in else g


LinalgEigBackward0 = _node("LinalgEigBackward0", _eig_backward)


def _complex_dt(dt):
    return np.dtype(np.complex64) if dt in (np.float32, np.complex64) else np.dtype(np.complex128)


def _eig_single(x, cdt):
    """SciPy's eig (LAPACK's sgeev/cgeev) matrix by matrix over the batch dimensions (SciPy
    before 1.15 takes one matrix), as ``cdt`` arrays."""
    import scipy.linalg
    flat = x.reshape((-1,) + x.shape[-2:])
    w = np.empty(flat.shape[:-1], cdt)
    v = np.empty(flat.shape, cdt)
    for i in range(flat.shape[0]):
        w[i], v[i] = scipy.linalg.eig(flat[i], check_finite=False)
    return w.reshape(x.shape[:-1]), v.reshape(x.shape)


def _eig_np(x):
    cdt = _complex_dt(x.dtype)
    if x.shape[-1] == 0:
        return np.zeros(x.shape[:-1], cdt), np.zeros(x.shape, cdt)
    if not np.isfinite(x).all():        # (LAPACK's geev would refuse them, printing to stdout)
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    if x.dtype.itemsize * (2 if x.dtype.kind == "f" else 1) == 8:
        # single precision as PyTorch computes it (LAPACK's sgeev / cgeev, through SciPy):
        # NumPy's eig computes in double, whose eigenvalues of an ill-conditioned float32
        # matrix differ from torch's by more than float32's rounding (1e-6 at a condition
        # number of 52)
        w, v = _eig_single(_plus_zero(x), cdt)
    else:
        w, v = np.linalg.eig(_plus_zero(x))
    return w.astype(cdt), v.astype(cdt)


def _eig_checks(A, name):
    x = A._data
    _check_nd(x, name)
    _check_sq(x, name)
    if x.dtype.kind not in "fc":
        raise RuntimeError(f"Unknown Complex ScalarType for {_dtype_name(x.dtype)}")
    return _lapack_dtype(x, "linalg_eig_out_cpu")


def eig(A, *, out=None):
    """Eigenvalues and (unit-norm) eigenvectors of general square matrices, complex-valued."""
    x = _eig_checks(A, "linalg.eig")
    w, v = _host(_eig_np, x)   # (CuPy 13 has no general eigensolver)
    L, V = _record(LinalgEigBackward0, (A,), [w, v], saved=(None,), out_saved=(0, 1), complex_in=x.dtype.kind == "c")
    return RT["linalg_eig"](L, V)


def eigvals(A, *, out=None):
    """Eigenvalues of general square matrices (complex)."""
    x = _eig_checks(A, "linalg.eigvals")
    if node_for(LinalgEigBackward0, (A,)) is None:
        return _out(_const(_host(_eig_np, x)[0]), out, "linalg_eigvals")
    L = eig(A)[0]
    return _out(L, out, "linalg_eigvals")


# --- singular value decomposition ----------------------------------------------------------

def _svd_backward(self, grads):
    U, S, Vh = self.saved_tensors
    if self.vals_only:
        gU, gS, gVh = None, grads[0], None
    else:
        gU, gS, gVh = grads
    k = S._data.shape[-1]
    if self.full:
        U, Vh = U[..., :k], Vh[..., :k, :]
        if gU is not None:
            gU = gU[..., :k]
        if gVh is not None:
            gVh = gVh[..., :k, :]
    m, n = U._data.shape[-2], Vh._data.shape[-1]
    cplx = U.is_complex()
    Sc = S.to(U.dtype) if cplx else S
    if gU is None and gVh is None:
        return U @ (_diag_embed(gS.to(U.dtype) if cplx else gS)) @ Vh if gS is not None else None
    V = _h(Vh)
    gV = _h(gVh) if gVh is not None else None
    UhgU = _h(U) @ gU if gU is not None else None
    VhgV = _h(V) @ gV if gV is not None else None
    if cplx:
        d = 0
        if UhgU is not None:
            d = d + _gather_diag(UhgU)._data
        if VhgV is not None:
            d = d + _gather_diag(VhgV)._data
        xp = xp_for(d)
        if not bool(xp.all(xp.abs(d.imag) <= 1e-2)):
            raise RuntimeError("svd_backward: The singular vectors in the complex case are specified up to "
                               "multiplication by e^{i phi}. The specified loss function depends on this phase term, "
                               "making it ill-defined.")
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    E = E + _eye(k, E)
    if cplx:
        E = E.to(U.dtype)
    ret = 0
    if UhgU is not None:
        ret = (UhgU - _h(UhgU)) * Sc.unsqueeze(-2)
    if VhgV is not None:
        ret = ret + Sc.unsqueeze(-1) * (VhgV - _h(VhgV))
    ret = ret / E
    if gS is not None:
        ret = ret + _diag_embed(gS.to(U.dtype) if cplx else gS)
    if cplx and UhgU is not None:
        ret = ret + _diag_embed(_gather_diag(UhgU).imag.to(U.dtype) * 1j / (2 * Sc))
    if m > k and gU is not None:
        gA = U @ ret
        gUS = gU / Sc.unsqueeze(-2)
        gA = (gA + gUS - U @ (_h(U) @ gUS)) @ Vh
    elif n > k and gV is not None:
        gA = ret @ Vh
        gVS = gV / Sc.unsqueeze(-2)
        gA = U @ (gA + _h(gVS - V @ (Vh @ gVS)))
    else:
        gA = U @ ret @ Vh
    return gA


LinalgSvdBackward0 = _node("LinalgSvdBackward0", _svd_backward)


def _svd_checked(xp, x, **kw):
    """``xp.linalg.svd``, with PyTorch's error when LAPACK gives up on inf / nan entries."""
    try:
        return xp.linalg.svd(x, **kw)
    except np.linalg.LinAlgError:
        bad = ~xp.isfinite(x).all((-2, -1))
        if not bool(bad.any()):
            raise
        raise _linalg_error(f"linalg.svd: {_batch_where(bad)}The algorithm failed to converge because the input "
                            "matrix contained non-finite values.") from None


def _svd_np(x, full, uv=True):
    xp = xp_for(x)
    x = _plus_zero(x)
    m, n = x.shape[-2:]
    k = min(m, n)
    rdt = _real_dt(x.dtype)
    if x.size == 0:
        b = x.shape[:-2]
        s = xp.zeros(b + (k,), rdt)
        if not uv:
            return None, s, None
        eu = xp.broadcast_to(xp.eye(m, m if full else k, dtype=x.dtype), b + (m, m if full else k)).copy()
        ev = xp.broadcast_to(xp.eye(n if full else k, n, dtype=x.dtype), b + (n if full else k, n)).copy()
        return eu, s, ev
    if not uv:
        return None, _svd_checked(xp, x, compute_uv=False).astype(rdt), None
    u, s, vh = _svd_checked(xp, x, full_matrices=full)
    return u.astype(x.dtype), s.astype(rdt), vh.astype(x.dtype)


def _no_driver(driver):
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")


def svd(A, full_matrices=True, *, driver=None, out=None):
    """``(U, S, Vh)`` with ``A = U diag(S) Vh`` (reduced when ``full_matrices=False``)."""
    _no_driver(driver)
    x = A._data
    _check_nd(x, "linalg.svd")
    _check_float(x, "linalg.svd")
    u, s, vh = _svd_np(_lapack_dtype(x, "linalg_svd_cpu"), full_matrices)
    outs = _record(LinalgSvdBackward0, (A,), [u, s, vh], out_saved=(0, 1, 2), full=full_matrices, vals_only=False)
    return RT["linalg_svd"](*outs)


def svdvals(A, *, driver=None, out=None):
    """Singular values (descending)."""
    _no_driver(driver)
    x = A._data
    _check_nd(x, "linalg.svd")
    _check_float(x, "linalg.svd")
    if node_for(LinalgSvdBackward0, (A,)) is None:
        return _out(_const(_svd_np(_lapack_dtype(x, "linalg_svd_cpu"), False, False)[1]), out, "linalg_svdvals")
    # differentiable: U and Vh are the node's (unreturned) outputs, which its double backward needs
    return _out(svd(A, full_matrices=False)[1], out, "linalg_svdvals")


def _append_saved(node, t):
    """Keep a constant (no version check) after what ``node`` saved."""
    node._saved = node._saved + (t,)
    node._saved_versions = node._saved_versions + (None,)


def torch_svd(input, some=True, compute_uv=True, *, out=None):
    """``torch.svd``: ``(U, S, V)`` (V, not Vh; zero U and V when ``compute_uv=False``)."""
    x = input._data
    _check_nd(x, "linalg.svd")
    _check_float(x, "linalg.svd")
    if not compute_uv:
        S = svdvals(input)
        m, n = x.shape[-2:]
        b = x.shape[:-2]
        return RT["svd"](_zeros(b + (m, m), x.dtype, x), S, _zeros(b + (n, n), x.dtype, x))
    U, S, Vh = svd(input, full_matrices=not some)
    return RT["svd"](U, S, _h(Vh))


# --- QR ------------------------------------------------------------------------------------

def _qr_backward(self, grads):
    Q, R = self.saved_tensors
    gQ, gR = grads
    mode = self.mode
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
                           "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    m, n = Q._data.shape[-2], R._data.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    if m >= n:
        return _qr_tall_grad(Q, R, gQ, gR)
    # wide: A = Q [X | Y], X = Q R1 square
    R1 = R[..., :, :m]
    Y = Q @ R[..., :, m:]   # A's last columns (A itself is not saved, as in PyTorch)
    gY = gR2 = None
    if gR is not None:
        gR2 = gR[..., :, m:]
        gR = gR[..., :, :m]
        gY = Q @ gR2
    gQx = gQ
    if gR2 is not None:
        t = Y @ _h(gR2)
        gQx = t if gQx is None else gQx + t
    gX = _qr_tall_grad(Q, R1, gQx, gR)
    if gY is None:
        gY = _zeros(Y._data.shape, Y._data.dtype, Y)
    from .shape import cat
    return cat([gX, gY], -1)


def _qr_tall_grad(Q, R, gQ, gR):
    """A = Q R with Q m x n orthonormal columns, R n x n upper: gA = (gQ + Q copyltu(M)) R^-H,
    M = R gR^H - gQ^H Q."""
    M = 0
    if gR is not None:
        M = R @ _h(gR)
    if gQ is not None:
        M = M - _h(gQ) @ Q
    if isinstance(M, int):
        return None
    low = M.tril(-1)
    sym = low + _h(low) + _diag_embed(_gather_diag(M).real.to(M.dtype) if M.is_complex() else _gather_diag(M))
    b = Q @ sym
    if gQ is not None:
        b = gQ + b
    return solve_triangular(_h(R), b, upper=False, left=False)


LinalgQrBackward0 = _node("LinalgQrBackward0", _qr_backward)


def _qr_np(x, mode):
    xp = xp_for(x)
    x = _plus_zero(x)
    m, n = x.shape[-2:]
    k = min(m, n)
    b = x.shape[:-2]
    if x.size == 0:
        qc = m if mode == "complete" else k
        q = xp.broadcast_to(xp.eye(m, qc, dtype=x.dtype), b + (m, qc)).copy()
        r = xp.zeros(b + ((m if mode == "complete" else k), n), x.dtype)
        return (xp.zeros((0,), x.dtype) if mode == "r" else q), r
    if mode == "r":
        return xp.zeros((0,), x.dtype), xp.linalg.qr(x, mode="r").astype(x.dtype)
    q, r = xp.linalg.qr(x, mode="complete" if mode == "complete" else "reduced")
    return q.astype(x.dtype), r.astype(x.dtype)


def qr(A, mode="reduced", *, out=None):
    """``(Q, R)``: modes 'reduced' (default), 'complete', 'r' (Q empty)."""
    x = A._data
    _check_nd(x, "linalg.qr")
    _check_float(x, "linalg.qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or "
                           "'complete'")
    q, r = _qr_np(_lapack_dtype(x, "geqrf_cpu"), mode)
    Q, R = _record(LinalgQrBackward0, (A,), [q, r], out_saved=(0, 1), mode=mode)
    return RT["linalg_qr"](Q, R)


def torch_qr(input, some=True, *, out=None):
    """``torch.qr`` (deprecated): linalg.qr with ``some`` for 'reduced' / 'complete'."""
    import warnings
    warnings.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch release.",
                  UserWarning, stacklevel=2)
    return RT["qr"](*qr(input, "reduced" if some else "complete"))


# --- inverse / solve with info -------------------------------------------------------------

def _lu_info(x):
    """LAPACK getrf's info for each matrix of the batch (0, or the first zero pivot, 1-based)."""
    if xp_for(x) is not np:
        return _getrf(x)[2]
    from .linalg import _zero_pivot
    info = np.zeros(x.shape[:-2], np.int32)
    fi = info.reshape(-1)
    for i, m in enumerate(x.reshape((-1,) + x.shape[-2:])):
        p = _zero_pivot(m) if x.shape[-1] else None
        fi[i] = p or 0
    return info


def inv_ex(A, *, check_errors=False, out=None):
    """``(inverse, info)``: info is 0 or the first zero pivot of the LU factorization."""
    from .linalg import LinalgInvExBackward0
    x = _lapack_dtype(_square(A, "linalg.inv_ex"), runtime=_low_precision("linalg.inv"))
    xp = xp_for(x)
    info = _lu_info(x) if x.size else xp.zeros(x.shape[:-2], np.int32)
    if check_errors and bool(info.any()):
        raise _linalg_error(f"linalg.inv_ex: {_batch_where(info)}The diagonal element {_first_info(info)} is zero, "
                            "the inversion could not be completed because the input matrix is singular.")
    with np.errstate(all="ignore"):
        if xp is not np:   # getrf + getrs on the device, whatever the pivots: the host is not asked
            r = _lu_inverse_np(x) if x.size else x.copy()
        elif info.any() or _nonfinite(x):
            r = _lu_inverse_np(x)
        else:
            try:
                r = np.linalg.inv(x) if x.size else x.copy()
            except np.linalg.LinAlgError:
                # (NumPy's LAPACK met an exact zero pivot that the reference-order LU of
                # _lu_info did not: inv_ex never raises, it solves with that LU instead)
                r = _lu_inverse_np(x)
    node = node_for(LinalgInvExBackward0, (A,))
    res = finish(node, xp.ascontiguousarray(r.astype(x.dtype, copy=False)))
    if node is not None:
        save_output(node, res)
    return RT["linalg_inv_ex"](res, _const(info))


def _lu_inverse_np(x):
    n = x.shape[-1]
    xp = xp_for(x)
    return _lu_solve_raw(x, xp.broadcast_to(xp.eye(n, dtype=x.dtype), x.shape))


def _nonfinite(x):
    """Whether a real host array holds an inf or nan (where LU results depend on the LAPACK)."""
    return x.dtype.kind == "f" and xp_for(x) is np and not bool(np.isfinite(x).all())


def _getf2_reference(a):
    """LU with partial pivoting of one real square matrix in the order of the reference
    LAPACK getf2, for matrices holding inf / nan: PyTorch's CPU LAPACK (MKL) propagates them
    that way, while OpenBLAS picks a nan as pivot and zeroes a column scaled by 1/inf. The pivot
    is the first entry of largest magnitude (a nan is passed over unless it comes first), the
    column is scaled by the pivot's reciprocal, and every rank-1 update is applied in full.
    Returns (lu, 0-based pivots, info)."""
    a = np.array(a, dtype=a.dtype, order="F")
    n = a.shape[0]
    piv = np.arange(n, dtype=np.int32)
    info = 0
    with np.errstate(all="ignore"):
        for k in range(n):
            col = np.abs(a[k:, k])
            p, best = 0, col[0]
            for i in range(1, col.shape[0]):   # (nan comparisons are false)
                if col[i] > best:
                    p, best = i, col[i]
            p += k
            piv[k] = p
            if a[p, k] != 0:
                if p != k:
                    a[[k, p]] = a[[p, k]]
                a[k + 1:, k] *= 1 / a[k, k]
            elif info == 0:
                info = k + 1
            a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return a, piv, info


def _lu_factor_np(m):
    """(lu, 0-based pivots) of one host matrix, as PyTorch's LAPACK gives them."""
    if _nonfinite(m) and m.shape[-1] == m.shape[-2]:
        return _getf2_reference(m)[:2]
    from scipy.linalg import lu_factor
    return lu_factor(m, check_finite=False)


def _lu_solve_raw(x, b, trans=0):
    """LAPACK getrf + getrs matrix by matrix (no singularity check: a zero pivot gives the
    inf / nan LAPACK gives); ``trans`` 1 / 2 solves with x^T / x^H. On a device, cuSOLVER's
    (cupyx.scipy.linalg)."""
    import warnings
    xp = xp_for(x, b)
    if xp is np:
        from scipy.linalg import lu_solve
        lu_factor = _lu_factor_np
    else:
        sl = _scipy_linalg(xp)
        lu_factor, lu_solve = sl.lu_factor, sl.lu_solve
    batch = np.broadcast_shapes(x.shape[:-2], b.shape[:-2])
    if x.size == 0 or b.size == 0:
        return xp.zeros(batch + b.shape[-2:], xp.result_type(x, b))
    xb = xp.broadcast_to(x, batch + x.shape[-2:]).reshape((-1,) + x.shape[-2:])
    bb = xp.broadcast_to(b, batch + b.shape[-2:]).reshape((-1,) + b.shape[-2:])
    out = xp.empty(bb.shape, xp.result_type(x, b))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for i in range(xb.shape[0]):
            lu, piv = lu_factor(xb[i]) if xp is np else lu_factor(xb[i], check_finite=False)
            out[i] = lu_solve((lu, piv), bb[i], trans=trans, check_finite=False)
    return out.reshape(batch + b.shape[-2:])


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """``(result, info)`` of ``A X = B`` (info: the first zero pivot of A's LU, or 0)."""
    from .linalg import solve
    x = _lapack_dtype(_square(A, "linalg.solve_ex"), runtime=_low_precision("linalg.solve"))
    xp = xp_for(x)
    info = _lu_info(x) if x.size else xp.zeros(x.shape[:-2], np.int32)
    if check_errors and bool(info.any()):
        raise _linalg_error(f"torch.linalg.solve_ex: {_batch_where(info)}The solver failed because the input "
                            "matrix is singular.")
    if xp is np and not info.any() and not _nonfinite(x):
        X = solve(A, B, left=left)
    else:   # (on a device getrf + getrs whatever the pivots: the host is not asked)
        b = B._data
        vec = b.ndim == 1 or (b.ndim == x.ndim - 1 and b.shape == x.shape[:-1])
        if xp is not np and left:
            from .linalg import _solve_checks
            _solve_checks(x, b, vec)
        if left:
            r = _lu_solve_raw(x, b[..., None])[..., 0] if vec else _lu_solve_raw(x, b)
        else:   # X A = B  <=>  A^T X^T = B^T
            r = xp.swapaxes(_lu_solve_raw(xp.swapaxes(x, -1, -2), xp.swapaxes(b, -1, -2)), -1, -2)
        from .linalg import LinalgSolveExBackward0
        node = node_for(LinalgSolveExBackward0, (A, B))
        X = finish(node, xp.ascontiguousarray(r.astype(xp.result_type(x, b))))
        if node is not None:
            node.vec = vec
            save(node, A)
            save_output(node, X)
    return RT["linalg_solve_ex"](X, _const(info))


# --- LU ------------------------------------------------------------------------------------

def _getrf(x):
    """Packed LU and 1-based int32 pivots of each matrix (LAPACK getrf), plus info."""
    m, n = x.shape[-2:]
    k = min(m, n)
    b = x.shape[:-2]
    xp = xp_for(x)
    lu = xp.empty(x.shape, x.dtype)
    piv = xp.empty(b + (k,), np.int32)
    info = xp.zeros(b, np.int32)
    piv[...] = xp.arange(1, k + 1, dtype=np.int32)
    if x.size == 0:
        return lu, piv, info
    if xp is not np:
        return _getrf_device(xp, x, lu, piv)
    fn = _lapack("getrf", (x,))
    if m == n and _nonfinite(x):
        fn = _getf2_reference
    fl, fp, fi = lu.reshape((-1, m, n)), piv.reshape((-1, k)), info.reshape(-1)
    for i, mat in enumerate(x.reshape((-1, m, n))):
        a, p, inf = fn(mat)
        fl[i], fp[i], fi[i] = a, p + 1, inf
    return lu, piv, info


def _getrf_device(xp, x, lu, piv):
    """_getrf on a device: cuSOLVER's getrf (cupyx.scipy.linalg.lu_factor, 0-based pivots) per
    matrix; info (the first exactly zero pivot of U) computed there too."""
    import warnings
    m, n = x.shape[-2:]
    lu_factor = _scipy_linalg(xp).lu_factor
    fl, fp = lu.reshape((-1, m, n)), piv.reshape((-1, piv.shape[-1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (a singular matrix's warning: info says it)
        for i, mat in enumerate(x.reshape((-1, m, n))):
            a, p = lu_factor(mat, check_finite=False)
            fl[i], fp[i] = a, p + 1
    zero = xp.diagonal(lu, 0, -2, -1) == 0
    info = xp.where(zero.any(-1), zero.argmax(-1) + 1, 0).astype(np.int32)
    return lu, piv, info


def _perm_matrix(piv, m, dtype):
    """P with A = P L U from 1-based LAPACK pivots (rows swapped in order)."""
    b = piv.shape[:-1]
    k = piv.shape[-1]
    xp = xp_for(piv)
    if k == 0 or piv.size == 0:
        return xp.broadcast_to(xp.eye(m, dtype=dtype), b + (m, m)).copy()
    if xp is not np:   # the swaps applied to all the batch's permutations at once (no host reads)
        fp = piv.reshape((-1, k)).astype(np.int64) - 1
        rows = xp.arange(fp.shape[0])
        perm = xp.broadcast_to(xp.arange(m), (fp.shape[0], m)).copy()
        for j in range(k):
            q = fp[:, j]
            at_j, at_q = perm[:, j].copy(), perm[rows, q]
            perm[:, j] = at_q
            perm[rows, q] = at_j
        return (xp.arange(m)[:, None] == perm[:, None, :]).astype(dtype).reshape(b + (m, m))
    P = np.empty(b + (m, m), dtype)
    fp, fP = piv.reshape((-1, k)), P.reshape((-1, m, m))
    for i, p in enumerate(fp):
        perm = np.arange(m)
        for j, q in enumerate(p):
            q = int(q) - 1
            perm[j], perm[q] = perm[q], perm[j]
        fP[i] = np.eye(m, dtype=dtype)[:, perm] if m else np.zeros((0, 0), dtype)
    return P


def _unpack_np(lu, piv, unpack_data=True, unpack_pivots=True):
    m, n = lu.shape[-2:]
    k = min(m, n)
    L = U = P = None
    xp = xp_for(lu)
    if unpack_data:
        L = xp.tril(lu[..., :, :k], -1) + xp.eye(m, k, dtype=lu.dtype)
        U = xp.triu(lu[..., :k, :])
    if unpack_pivots:
        P = _perm_matrix(piv, m, lu.dtype)
    return P, L, U


def _lu_factor_checks(A, name):
    x = A._data
    if x.ndim < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: {list(x.shape)} "
                           "instead")
    if x.dtype.kind not in "fc":
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{_dtype_name(x.dtype)}'")
    return _lapack_dtype(x, "lu_cpu")


def _lu_core_grad(L, U, P, gL, gU):
    """The gradient w.r.t. A of A = P L U (L unit lower m x k, U upper k x n), for the gradients
    gL, gU of the factors (None: zero), taken whole: the triangles are cut from the products,
    in PyTorch's order of products, cuts and triangular solves (where an inf/nan gradient
    reaches, through 0 * inf, depends on it)."""
    m, k = L._data.shape[-2:]
    n = U._data.shape[-1]
    from .shape import cat
    if m == n:   # L^-H [tril(L^H gL, -1) + triu(gU U^H)] U^-H
        M = None if gL is None else (_h(L) @ gL).tril(-1)
        if gU is not None:
            t = (gU @ _h(U)).triu()
            M = t if M is None else M + t
        M = solve_triangular(_h(U), M, upper=False, left=False)
        return P @ solve_triangular(_h(L), M, upper=True, unitriangular=True)
    if m < n:   # wide, U = [U1 | U2]: L^-H [tril(L^H gL - triu(gU) U^H, -1) U1^-H + triu(gU1) | gU2]
        M = None if gL is None else _h(L) @ gL
        if gU is not None:
            t = gU.triu() @ _h(U)
            M = -t if M is None else M - t
        M = solve_triangular(_h(U[..., :, :m]), M.tril(-1), upper=False, left=False)
        if gU is not None:
            M = cat([M + gU[..., :, :m].triu(), gU[..., :, m:]], -1)
        M = solve_triangular(_h(L), M, upper=True, unitriangular=True)
        if gU is None:
            M = cat([M, _zeros(U._data.shape[:-2] + (m, n - m), U._data.dtype, U)], -1)
        return P @ M
    # tall, L = [L1; L2]: [L1^-H triu(gU U^H - L^H tril(gL, -1)) + tril(gL1, -1); gL2] U^-H
    M = None if gU is None else gU @ _h(U)
    if gL is not None:
        t = _h(L) @ gL.tril(-1)
        M = -t if M is None else M - t
    M = solve_triangular(_h(L[..., :n, :]), M.triu(), upper=True, unitriangular=True)
    if gL is not None:
        M = cat([M + gL[..., :n, :].tril(-1), gL[..., n:, :]], -2)
    M = solve_triangular(_h(U), M, upper=False, left=False)
    if gL is None:
        M = cat([M, _zeros(L._data.shape[:-2] + (m - n, n), L._data.dtype, L)], -2)
    return P @ M


def _lu_factor_backward(self, grads):
    LU, piv = self.saved_tensors
    g = grads[0]
    P, L, U = _unpack_np(LU._data, piv._data)
    Lt, Ut = _const(L), _const(U)
    if _state.grad:   # create_graph: the factors as functions of the saved LU
        Lt, Ut = _unpack_t(LU)
    k = L.shape[-1]
    return _lu_core_grad(Lt, Ut, _const(P), g[..., :, :k], g[..., :k, :])


def _unpack_t(LU):
    m, n = LU._data.shape[-2:]
    k = min(m, n)
    L = LU[..., :, :k].tril(-1) + _const(xp_for(LU).eye(m, k, dtype=LU._data.dtype), LU)
    U = LU[..., :k, :].triu()
    return L, U


LinalgLuFactorExBackward0 = _node("LinalgLuFactorExBackward0", _lu_factor_backward)


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """``(LU, pivots, info)``: packed LU factors with partial pivoting (LAPACK getrf)."""
    x = _lu_factor_checks(A, "linalg.lu_factor_ex")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    lu, piv, info = _getrf(x)
    if check_errors and bool(info.any()):
        raise _linalg_error(f"torch.linalg.lu_factor_ex: {_batch_where(info)}U[{_first_info(info)},"
                            f"{_first_info(info)}] is zero and using it on lu_solve would result in a division by "
                            "zero. If you still want to perform the factorization, consider calling linalg.lu(A, "
                            "pivot) or linalg.lu_factor_ex(A, pivot)")
    LU, = _record(LinalgLuFactorExBackward0, (A,), [lu], out_saved=(0,))
    pv = _const(piv)
    node = LU.grad_fn
    if node is not None:
        node._saved = node._saved + (pv,)
        node._saved_versions = node._saved_versions + (None,)
    return RT["linalg_lu_factor_ex"](LU, pv, _const(info))


def lu_factor(A, *, pivot=True, out=None):
    """``(LU, pivots)``; raises when a pivot is zero (see lu_factor_ex)."""
    x = _lu_factor_checks(A, "linalg.lu_factor")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    lu, piv, info = _getrf(x)
    if bool(info.any()):
        raise RuntimeError(f"torch.linalg.lu_factor: {_batch_where(info)}U[{_first_info(info)},{_first_info(info)}] "
                           "is zero and using it on lu_solve would result in a division by zero. If you still want "
                           "to perform the factorization, consider calling linalg.lu(A, pivot) or "
                           "linalg.lu_factor_ex(A, pivot)")
    r = lu_factor_ex(A, pivot=pivot)
    return RT["linalg_lu_factor"](r[0], r[1])


def _lu_backward(self, grads):
    A, L, U = self.saved_tensors
    _, gL, gU = ([None] + list(grads))[-3:] if len(grads) == 2 else grads
    return _lu_core_grad(L, U, _const(self.P), gL, gU)


LinalgLuBackward0 = _node("LinalgLuBackward0", _lu_backward)


def lu(A, *, pivot=True, out=None):
    """``(P, L, U)`` with ``A = P L U`` (partial pivoting)."""
    x = A._data
    _check_nd(x, "linalg.lu")
    if x.dtype.kind not in "fc":
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{_dtype_name(x.dtype)}'")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    lu_, piv, _ = _getrf(_lapack_dtype(x, "lu_cpu"))
    P, L, U = _unpack_np(lu_, piv)
    Lt, Ut = _record(LinalgLuBackward0, (A,), [L, U], saved=(None,), out_saved=(0, 1), P=P)
    return RT["linalg_lu"](_const(P), Lt, Ut)


def _lu_solve_np(lu, piv, b, left, adjoint):
    P, L, U = _unpack_np(lu, piv)
    xp = xp_for(lu, b)
    bs = np.broadcast_shapes(lu.shape[:-2], b.shape[:-2])
    dt = xp.result_type(lu, b)

    def tri(a, rhs, upper, unit, lft=True):
        return _tri_solve(a, rhs, upper, lft, unit)
    with np.errstate(all="ignore"):
        if left and not adjoint:      # A X = B: X = U^-1 L^-1 P^T B
            y = xp.swapaxes(P, -1, -2) @ b
            x = tri(U, tri(L, y, False, True), True, False)
        elif left:                    # A^H X = B: X = P L^-H U^-H B
            Uh, Lh = xp.swapaxes(U, -1, -2).conj(), xp.swapaxes(L, -1, -2).conj()
            x = P @ tri(Lh, tri(Uh, b, False, False), True, True)
        elif not adjoint:             # X A = B: X = B U^-1 L^-1 P^T
            x = tri(L, tri(U, b, True, False, False), False, True, False) @ xp.swapaxes(P, -1, -2)
        else:                         # X A^H = B: X = B P L^-H U^-H
            Uh, Lh = xp.swapaxes(U, -1, -2).conj(), xp.swapaxes(L, -1, -2).conj()
            x = tri(Uh, tri(Lh, b @ P, True, True, False), False, False, False)
    return xp.ascontiguousarray(xp.broadcast_to(x, bs + x.shape[-2:]).astype(dt))


def _lu_solve_backward(self, grads):
    LU, piv, X = self.saved_tensors
    g = grads[0]
    nf = self.next_functions
    left, adjoint = self.left, self.adjoint
    gB = lu_solve(LU, piv, g, left=left, adjoint=not adjoint)
    gLU = None
    if nf[0][0] is not None:
        # the gradient w.r.t. the matrix A = P L U, then w.r.t. its packed factors
        if left:
            gA = -(gB @ _h(X)) if not adjoint else -(X @ _h(gB))
        else:
            gA = -(_h(X) @ gB) if not adjoint else -(_h(gB) @ X)
        L, U = _unpack_t(LU)
        P = _const(_unpack_np(LU._data, piv._data, False, True)[0])
        PtgA = _h(P) @ gA
        gLU = (PtgA @ _h(U)).tril(-1) + (_h(L) @ PtgA).triu()
        if gLU._data.shape != LU._data.shape:
            gLU = gLU.sum_to_size(LU._data.shape)
    if gB is not None and gB._data.shape != self.bshape:
        gB = gB.sum_to_size(self.bshape)
    return gLU, None, (gB if nf[2][0] is not None else None)


LinalgLuSolveBackward0 = _node("LinalgLuSolveBackward0", _lu_solve_backward)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """Solve ``A X = B`` from ``lu_factor``'s ``(LU, pivots)`` (``left``, ``adjoint`` as PyTorch)."""
    lu_, piv, b = LU._data, pivots._data, B._data
    name = "linalg.lu_solve"
    if lu_.ndim < 2:
        raise RuntimeError(f"torch.{name}: Expected LU to have at least 2 dimensions, but it has {lu_.ndim} "
                           "dimensions instead")
    if b.ndim < 2:
        raise RuntimeError(f"torch.{name}: Expected B to have at least 2 dimensions, but it has {b.ndim} dimensions "
                           "instead")
    if lu_.shape[-1] != lu_.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {lu_.shape[-2]} by "
                           f"{lu_.shape[-1]} matrices")
    n = lu_.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'} "
                           f"({n}x{n} and {b.shape[-2]}x{b.shape[-1]})")
    if piv.dtype != np.int32:
        raise RuntimeError(f"{name}: Expected pivots to be of type Int but got {_dtype_name(piv.dtype)}")
    if lu_.dtype != b.dtype:
        raise RuntimeError(f"{name}: Expected LU and B to have the same dtype, but found LU of type "
                           f"{_dtype_name(lu_.dtype)} and B of type {_dtype_name(b.dtype)} instead")
    if lu_.dtype.kind not in "fc":
        raise RuntimeError(f"torch.{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_dtype_name(lu_.dtype)}")
    x = _lu_solve_np(lu_, piv, b, left, adjoint)
    X, = _record(LinalgLuSolveBackward0, (LU, None, B), [x], saved=(LU, pivots), out_saved=(0,), left=left,
                 adjoint=adjoint, bshape=b.shape)
    return _out(X, out, "linalg_lu_solve")


def torch_lu_solve(b, LU_data, LU_pivots, *, out=None):
    """``torch.lu_solve`` (deprecated): ``linalg.lu_solve(LU, pivots, b)``."""
    import warnings
    warnings.warn("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a future "
                  "PyTorch release.", UserWarning, stacklevel=2)
    return _out(lu_solve(LU_data, LU_pivots, b), out, "lu_solve")


def _lu_unpack_backward(self, grads):
    gL, gU = grads
    m, n = self.shape[-2:]
    k = min(m, n)
    parts = []
    if gL is not None:
        parts.append(("L", gL[..., :, :k].tril(-1)))
    if gU is not None:
        parts.append(("U", gU[..., :k, :].triu()))
    g = None
    for which, p in parts:
        if which == "L" and n > k:
            p = _pad_last(p, n - k)
        elif which == "U" and m > k:
            p = _pad_rows(p, m - k)
        g = p if g is None else g + p
    return g, None


def _pad_last(p, extra):
    from .shape import cat
    z = _zeros(p._data.shape[:-1] + (extra,), p._data.dtype, p)
    return cat([p, z], -1)


def _pad_rows(p, extra):
    from .shape import cat
    z = _zeros(p._data.shape[:-2] + (extra, p._data.shape[-1]), p._data.dtype, p)
    return cat([p, z], -2)


LuUnpackBackward0 = _node("LuUnpackBackward0", _lu_unpack_backward)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """``(P, L, U)`` from packed LU factors and pivots."""
    lu_, piv = LU_data._data, LU_pivots._data
    if lu_.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected LU_data to have at least 2 dimensions, but it has {lu_.ndim} "
                           "dimensions instead")
    if piv.dtype != np.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype. "
                           "Note: this function is intended to be used with the output produced by torch.linalg."
                           "lu_factor")
    P, L, U = _unpack_np(lu_, piv, unpack_data, unpack_pivots)
    if unpack_data:
        Lt, Ut = _record(LuUnpackBackward0, (LU_data, None), [L, U], shape=lu_.shape)
    else:
        Lt = Ut = _zeros((0,), lu_.dtype, lu_)
    Pt = _const(P) if unpack_pivots else _zeros((0,), lu_.dtype, lu_)
    return RT["lu_unpack"](Pt, Lt, Ut)


def torch_lu(A, pivot=True, get_infos=False, out=None):
    """``torch.lu`` (deprecated): ``(LU, pivots)`` or ``(LU, pivots, infos)``."""
    import warnings
    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be "
                  "removed in a future PyTorch release.", UserWarning, stacklevel=2)
    r = lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    return (r[0], r[1], r[2]) if get_infos else (r[0], r[1])


# --- matrix functions ----------------------------------------------------------------------

# Taylor-type approximants of exp of Bader, Blanes and Casas ("Computing the matrix exponential
# with an optimized Taylor polynomial approximation", Mathematics 7, 2019), which PyTorch uses:
# the degree is the lowest whose 1-norm bound holds, past the last one the matrix is scaled by
# 2^-s into it and the result squared s times. The same choices give PyTorch's values, also
# where scaling and squaring loses accuracy (huge norms) and where SciPy's expm overflows.
_EXPM_THETAS = {  # 1-norm bounds of the degrees 1, 2, 4, 8, 12, 18
    np.dtype(np.float64): (2.220446049250313e-16, 2.580956802971767e-08, 3.397168839976962e-04,
                           4.991228871115323e-02, 2.996158913811580e-01, 1.090863719290036e+00),
    np.dtype(np.float32): (1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02,
                           5.800524627688768e-01, 1.461661507209034e+00, 3.010066362817634e+00),
}
# degree 12: B_i = sum_j b_ij A^j (A^0..A^3); A6 = B_2 + B_3^2; T = B_0 + (B_1 + A6) A6
_EXPM_B12 = ((9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740),
             (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031, 0.01108844528519167989),
             (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968, 0.00610700528898058230),
             (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079, -0.00675951846863086359))
# degree 18: B_i = sum_j b_ij P_j (P = I, A, A^2, A^3, A^6); A9 = B_0 B_4 + B_3; T = B_1 + (B_2 + A9) A9
_EXPM_B18 = ((0., -1.00365581030144618291e-01, -8.02924648241156932449e-03, -8.92138498045729985177e-04, 0.),
             (0., 3.97849749499645077844e-01, 1.36783778460411720168e+00, 4.98289622525382669416e-01,
              -6.37898194594723280150e-04),
             (-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
              -6.98210122488052056106e-03, 3.34975017086070470649e-05),
             (-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
              2.95552570429315521194e-02, -1.39180257516060693404e-05),
             (0., 0., -9.23364619367118555360e-02, -1.69364939002081722752e-02, -1.40086798182036094347e-05))


def _expm_taylor(a, degree):
    """The degree-``degree`` approximant of exp for a batch ``a`` (n x n, n >= 2)."""
    dt = a.dtype
    eye = np.broadcast_to(np.eye(a.shape[-1], dtype=dt), a.shape)
    if degree == 1:
        return eye + a
    a2 = a @ a
    if degree == 2:
        return eye + a + a2 / dt.type(2)
    if degree == 4:
        return eye + a + a2 @ (eye * dt.type(1 / 2) + a * dt.type(1 / 6) + a2 * dt.type(1 / 24))
    if degree == 8:
        r = 0.1330413469565007072504e+2   # sqrt(177)
        x3 = 2 / 3
        x1, x2 = x3 * ((1 + r) / 88), x3 * ((1 + r) / 352)
        x4, x5 = (-271 + 29 * r) / (315 * x3), (-11 + 11 * r) / (1260 * x3)
        x6, x7 = (-99 + 11 * r) / (5040 * x3), (89 - r) / (5040 * x3)
        y2 = (857 - 58 * r) / 630
        c = [dt.type(v) for v in (x1, x2, x3, x4, x5, x6, x7, y2)]
        a4 = a2 @ (c[0] * a + c[1] * a2)
        a8 = (c[2] * a2 + a4) @ (c[3] * eye + c[4] * a + c[5] * a2 + c[6] * a4)
        return eye + a + c[7] * a2 + a8
    powers = [eye, a, a2, a2 @ a]
    if degree == 12:
        b = [sum(dt.type(bij) * p for bij, p in zip(row, powers)) for row in _EXPM_B12]
        a6 = b[2] + b[3] @ b[3]
        return b[0] + (b[1] + a6) @ a6
    powers.append(powers[3] @ powers[3])
    b = [sum(dt.type(bij) * p for bij, p in zip(row, powers)) for row in _EXPM_B18]
    a9 = b[0] @ b[4] + b[3]
    return b[1] + (b[2] + a9) @ a9


def _expm_np(x):
    if x.size == 0:
        return x.copy()
    if x.shape[-1] == 1:
        with np.errstate(all="ignore"):
            return np.exp(x)
    thetas = _EXPM_THETAS[np.dtype(np.float32 if x.dtype in (np.float32, np.complex64) else np.float64)]
    flat = x.reshape((-1,) + x.shape[-2:])
    norm = np.abs(flat).sum(-2).max(-1)
    out = np.full(flat.shape, np.nan, x.dtype)   # (a non-finite norm: nan throughout, as PyTorch)
    with np.errstate(all="ignore"):
        lower = -1.0
        for degree, theta in zip((1, 2, 4, 8, 12), thetas):
            if flat.shape[0] > 1:   # (a batch: PyTorch takes the highest degree for every matrix)
                break
            sel = (norm > lower) & (norm <= theta)
            if sel.any():
                out[sel] = _expm_taylor(flat[sel], degree)
            lower = theta
        big = np.nonzero((norm >= thetas[4]) | (flat.shape[0] > 1) & np.isfinite(norm))[0]   # (at the bound: T18, as PyTorch)
        if big.size:
            s = np.maximum(0, np.ceil(np.log2(norm[big] / thetas[5]))).astype(np.int64)
            scaled = flat[big] / np.ldexp(1.0, s).astype(x.real.dtype)[:, None, None]
            t = _expm_taylor(scaled, 18)
            for p in range(int(s.max())):
                sq = s > p
                t[sq] = t[sq] @ t[sq]
            out[big] = t
    return out.reshape(x.shape)


def _matrix_exp_backward(self, grads):
    (A,) = self.saved_tensors
    g = grads[0]
    # d exp(A)[G] is the upper-right block of exp([[A^H, G], [0, A^H]])
    from .shape import cat
    n = A._data.shape[-1]
    Ah = _h(A)
    z = _zeros(g._data.shape, g._data.dtype, g)
    big = cat([cat([Ah, g], -1), cat([z, Ah], -1)], -2)
    return matrix_exp(big)[..., :n, n:]


LinalgMatrixExpBackward0 = _node("LinalgMatrixExpBackward0", _matrix_exp_backward)


def matrix_exp(A):
    """The matrix exponential of (a batch of) square matrices."""
    x = _square(A, "linalg.matrix_exp")
    # (on a device through the host: SciPy's expm, whose Pade degree and scaling adapt to the matrix,
    # gives the CPU's values; CuPy 13 has no expm)
    if x.dtype == np.float16 or x.dtype.kind == "V":   # PyTorch computes half types (in float32 here)
        r = _host(_expm_np, x.astype(np.float32)).astype(x.dtype)
    else:
        r = _host(_expm_np, x)
    E, = _record(LinalgMatrixExpBackward0, (A,), [r], saved=(A,))
    return E


def matrix_power(A, n, *, out=None):
    """``A`` to the integer power ``n`` (negative powers through the inverse)."""
    x = A._data
    _check_nd(x, "linalg.matrix_power")
    _check_sq(x, "linalg.matrix_power")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    from .linalg import inv, matmul
    if n == 0:
        xp = xp_for(x)
        eye = _const(xp.broadcast_to(xp.eye(x.shape[-1], dtype=x.dtype), x.shape), x)
        return _out(A.clone().copy_(eye), out, "linalg_matrix_power")
    if n < 0:
        A = inv(A)
        n = -n
    if n == 1:
        return _out(A.clone(), out, "linalg_matrix_power")
    # binary powering as PyTorch does: the squares of A, multiplied in as the bits of n come
    res = None
    z = A
    while True:
        if n & 1:
            res = z if res is None else matmul(res, z)
        n >>= 1
        if not n:
            break
        z = matmul(z, z)
    return _out(res, out, "linalg_matrix_power")


def _pinv_backward(self, grads):
    # PyTorch's pinv_backward, term by term and in its order (for A and pinv(A) hermitian
    # too): the same rounding, and the same NaN where an inf of the upstream gradient meets
    # the products' zeros (a sum of the three textbook terms put inf where torch has NaN)
    A, X = self.saved_tensors
    g = grads[0]
    m, n = A._data.shape[-2:]
    Xh, gh = _h(X), _h(g)
    if m <= n:
        K = gh @ X
        KXh = K @ Xh
        return -_h(X @ K) + KXh - (A @ X) @ KXh + (Xh @ X) @ (gh - K @ A)
    K = X @ gh
    XhK = Xh @ K
    return -_h(K @ X) + (gh - A @ K) @ X @ Xh + XhK - XhK @ X @ A


LinalgPinvBackward0 = _node("LinalgPinvBackward0", _pinv_backward)


def _tol_arrays(atol, rtol, rcond, smax, dt, m, n, rtol_default_when_atol_none=True):
    xp = xp_for(smax)
    a = 0.0 if atol is None else (atol._data if isinstance(atol, Tensor) else atol)
    if rcond is not None:
        r = rcond._data if isinstance(rcond, Tensor) else rcond
    elif rtol is None:
        eps = np.finfo(dt).eps
        r = eps * max(m, n) if (atol is None or bool(xp.all(xp.asarray(a) <= 0))) else 0.0
    else:
        r = rtol._data if isinstance(rtol, Tensor) else rtol
    return xp.maximum(xp.asarray(a), xp.asarray(r) * smax)


def pinv(A, *, atol=None, rtol=None, hermitian=False, rcond=None, out=None):
    """The Moore-Penrose pseudoinverse (singular values below max(atol, rtol * sigma_max) dropped)."""
    x = A._data
    if x.ndim < 2 or x.dtype.kind not in "fc" or x.dtype == np.float16:
        kind = {"float32": "Float", "float64": "Double", "complex64": "ComplexFloat",
                "complex128": "ComplexDouble"}.get(x.dtype.name, _dtype_name(x.dtype))
        raise RuntimeError(f"linalg.pinv({kind}{{{list(x.shape)}}}): expected a tensor with 2 or more dimensions of "
                           "float, double, cfloat or cdouble types")
    xp = xp_for(x)
    m, n = x.shape[-2:]
    rdt = _real_dt(x.dtype)
    if x.size == 0:
        r = xp.zeros(x.shape[:-2] + (n, m), x.dtype)
    else:
        with np.errstate(all="ignore"):
            if hermitian:
                w, v = xp.linalg.eigh(x)
                aw = xp.abs(w)
                tol = _tol_arrays(atol, rtol, rcond, aw.max(-1), rdt, m, n)
                keep = aw > xp.asarray(tol)[..., None]
                winv = xp.where(keep, 1 / xp.where(keep, w, 1), 0).astype(x.dtype)
                r = (v * winv[..., None, :]) @ xp.swapaxes(v, -1, -2).conj()
            else:
                u, s, vh = _svd_checked(xp, x, full_matrices=False)
                tol = _tol_arrays(atol, rtol, rcond, s[..., :1][..., 0] if s.shape[-1] else 0, rdt, m, n)
                keep = s > xp.asarray(tol)[..., None]
                sinv = xp.where(keep, 1 / xp.where(keep, s, 1), 0).astype(x.dtype)
                r = (xp.swapaxes(vh, -1, -2).conj() * sinv[..., None, :]) @ xp.swapaxes(u, -1, -2).conj()
    P, = _record(LinalgPinvBackward0, (A,), [r.astype(x.dtype)], saved=(A,), out_saved=(0,), hermitian=hermitian)
    return _out(P, out, "linalg_pinv")


def pinverse(input, rcond=1e-15):
    """``torch.pinverse``: pinv with a relative cutoff ``rcond``."""
    return pinv(input, rtol=rcond)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The number of singular values above max(atol, rtol * sigma_max) (int64, no gradient)."""
    x = A._data
    if x.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    if x.dtype.kind not in "fc":
        raise RuntimeError("This function doesn't handle types other than float and double")
    _lapack_dtype(x, runtime="This function doesn't handle types other than float and double")
    m, n = x.shape[-2:]
    if tol is not None:
        atol, rtol = tol, 0.0
    xp = xp_for(x)
    if x.size == 0:
        s = xp.zeros(x.shape[:-2] + (min(m, n),), _real_dt(x.dtype))
    elif hermitian:
        s = xp.abs(xp.linalg.eigvalsh(x))
    else:
        s = _svd_checked(xp, x, compute_uv=False)
    smax = s.max(-1) if s.shape[-1] else xp.zeros(s.shape[:-1], s.dtype)
    t = _tol_arrays(atol, rtol, None, smax, _real_dt(x.dtype), m, n)
    r = (s > xp.asarray(t)[..., None]).sum(-1).astype(np.int64)
    return _out(_const(r), out, "linalg_matrix_rank")


# --- least squares -------------------------------------------------------------------------

def _lstsq_backward(self, grads):
    A, B, _ = self.saved_tensors     # (and the solution, saved as PyTorch's node saves it)
    gX, gR = (list(grads) + [None])[:2]
    from ._seqkit import graph_grads
    from ..autograd.grad_mode import enable_grad
    with enable_grad():
        res = graph_grads(lambda a, b: _lstsq_composite(a, b, self.vec, self.with_res), [A, B], [gX, gR])
    if not _state.grad:
        res = [r.detach() if r is not None else None for r in res]
    return tuple(res)


def _lstsq_composite(A, B, vec, with_res):
    Bm = B.unsqueeze(-1) if vec else B
    X = pinv(A) @ Bm
    R = None
    if with_res:
        R = ((A @ X - Bm).abs() ** 2).sum(-2)
    if vec:
        X = X.squeeze(-1)
    return X, R


LinalgLstsqBackward0 = _node("LinalgLstsqBackward0", _lstsq_backward)


def lstsq(A, B, rcond=None, *, driver=None):
    """``(solution, residuals, rank, singular_values)`` of min ||A X - B|| (PyTorch's rules for
    which fields are empty: residuals when m > n at full rank, rank except for 'gels', singular
    values for 'gelsd' / 'gelss')."""
    a, b = A._data, B._data
    name = "torch.linalg.lstsq"
    if a.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if b.ndim < 1:
        raise RuntimeError(f"{name}: other must have at least 1 dimension.")
    if a.dtype != b.dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but got input's dtype "
                           f"{_dtype_name(a.dtype)} and other's dtype {_dtype_name(b.dtype)}")
    vec = b.ndim == a.ndim - 1
    if (b.shape[-1] if vec else b.shape[-2]) != a.shape[-2]:
        raise RuntimeError(f"{name}: input.size(-2) should match other.size({-1 if vec else -2})")
    if driver is None:
        driver = "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"{name}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if a.dtype.kind not in "fc":
        raise RuntimeError(f"{name}: Expected input and other to have a floating point or complex dtype, but got "
                           f"{_dtype_name(a.dtype)}")
    _lapack_dtype(a, runtime="This function doesn't handle types other than float and double")
    m, n = a.shape[-2:]
    xp = xp_for(a, b)
    bm = b[..., None] if vec else b
    batch = np.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
    rdt = _real_dt(a.dtype)
    k = min(m, n)
    if a.size and bm.size:
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
        r = np.finfo(rdt).eps * max(m, n) if rcond is None else rcond
        smax = s[..., :1]
        keep = s > r * smax
        with np.errstate(all="ignore"):
            sinv = xp.where(keep, 1 / xp.where(keep, s, 1), 0).astype(a.dtype)
        x = (xp.swapaxes(vh, -1, -2).conj() * sinv[..., None, :]) @ (xp.swapaxes(u, -1, -2).conj() @ bm)
        rank = keep.sum(-1).astype(np.int64)
    else:
        s = xp.zeros(a.shape[:-2] + (k,), rdt)
        x = xp.zeros(batch + (n, bm.shape[-1]), a.dtype)
        rank = xp.zeros(a.shape[:-2], np.int64)
    x = xp.broadcast_to(x, batch + (n, bm.shape[-1]))
    full_rank = bool(xp.all(rank == n)) if driver != "gels" else True
    with_res = m > n and driver != "gelsy" and full_rank and a.size > 0 and bm.size > 0
    if with_res:
        res = (xp.abs(a @ x - xp.broadcast_to(bm, batch + bm.shape[-2:])) ** 2).sum(-2).astype(rdt)
    else:
        res = xp.zeros((0,), rdt)
    # the residuals are an output of the node even when empty (PyTorch's requires grad too)
    outs = [x[..., 0] if vec else x, res]
    X, R = _record(LinalgLstsqBackward0, (A, B), outs, saved=(A, B), out_saved=(0,), vec=vec, with_res=with_res)
    rk = _const(xp.zeros((0,), np.int64)) if driver == "gels" else _const(xp.broadcast_to(rank, batch).copy()
                                                                          if a.shape[:-2] == batch else rank)
    sv = _const(s) if driver in ("gelsd", "gelss") else _const(xp.zeros((0,), rdt))
    return RT["linalg_lstsq"](X, R, rk, sv)


# --- householder products, geqrf, ormqr ------------------------------------------------------

def _householder_composite(V, tau):
    """prod_i (I - tau_i v_i v_i^H), v_i the i-th column of V below the diagonal with a unit head."""
    m, n = V._data.shape[-2:]
    k = tau._data.shape[-1]
    xp = xp_for(V)
    # (tril selects: entries on and above the diagonal take no part, even inf / nan ones)
    vs = V.tril(-1) + _const(xp.eye(m, n, dtype=V._data.dtype), V)
    Q = None
    for i in range(k):
        v = vs[..., :, i:i + 1]
        H = _eye(m, V) - tau[..., i:i + 1].unsqueeze(-1) * (v @ _h(v))
        Q = H if Q is None else Q @ H
    if Q is None:
        Q = _eye(m, V).expand(*V._data.shape[:-2], m, m)
    return Q[..., :, :n]


def _composite_backward(fn_name):
    def grad(self, grads):
        from ._seqkit import graph_grads
        from ..autograd.grad_mode import enable_grad
        inputs = list(self.saved_tensors)[:getattr(self, "n_inputs", None)]
        with enable_grad():
            res = graph_grads(getattr(self, "composite"), inputs, grads)
        if not _state.grad:
            res = [r.detach() if r is not None else None for r in res]
        return tuple(res)
    return _node(fn_name, grad)


LinalgHouseholderProductBackward0 = _composite_backward("LinalgHouseholderProductBackward0")


def _hh_checks(x, t, name):
    if x.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if x.shape[-2] < x.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if x.shape[-1] < t.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if x.ndim - t.ndim != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{t.ndim} and input.ndim is equal to {x.ndim}")
    if x.dtype != t.dtype:
        raise RuntimeError(f"{name}: tau dtype {_dtype_name(t.dtype)} does not match input dtype "
                           f"{_dtype_name(x.dtype)}")
    if x.dtype.kind not in "fc":
        raise NotImplementedError(f"\"orgqr_cpu\" not implemented for '{_dtype_name(x.dtype)}'")


def householder_product(A, tau, *, out=None):
    """The first n columns of the product of Householder reflectors (LAPACK orgqr)."""
    x, t = A._data, tau._data
    _hh_checks(x, t, "torch.linalg.householder_product")
    _lapack_dtype(x, "orgqr_cpu")
    from ..autograd.grad_mode import no_grad
    with no_grad():
        q = _householder_composite(_const(x), _const(t))._data
    node = node_for(LinalgHouseholderProductBackward0, (A, tau))
    res = finish(node, xp_for(q).ascontiguousarray(q))
    if node is not None:
        save(node, A, tau)
        save_output(node, res)   # saved (and version-checked) as PyTorch's node saves it
        node.composite, node.n_inputs = _householder_composite, 2
    return _out(res, out, "linalg_householder_product")


def orgqr(input, tau):
    """``torch.orgqr``: linalg.householder_product."""
    return householder_product(input, tau)


def geqrf(input, *, out=None):
    """``(a, tau)``: LAPACK geqrf's packed QR (reflectors below the diagonal, R on and above)."""
    x = input._data
    if x.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if x.dtype.kind not in "fc":
        raise NotImplementedError(f"\"geqrf_cpu\" not implemented for '{_dtype_name(x.dtype)}'")
    _lapack_dtype(x, "geqrf_cpu")
    outs = _record(GeqrfBackward0, (input,), _host(_geqrf_np, x))   # (CuPy 13 has no geqrf)
    return RT["geqrf"](*outs)


def _geqrf_np(x):
    m, n = x.shape[-2:]
    k = min(m, n)
    a = np.empty(x.shape, x.dtype)
    tau = np.empty(x.shape[:-2] + (k,), x.dtype)
    if x.size:
        fn = _lapack("geqrf", (x,))
        fa, ft = a.reshape((-1, m, n)), tau.reshape((-1, k))
        for i, mat in enumerate(_plus_zero(x).reshape((-1, m, n))):
            qr_, tau_, _, _ = fn(mat)
            fa[i], ft[i] = qr_, tau_
    return [a, tau]


def _geqrf_backward(self, grads):
    raise RuntimeError("The derivative of geqrf is not implemented.")


GeqrfBackward0 = _node("GeqrfBackward0", _geqrf_backward)

OrmqrBackward0 = _composite_backward("OrmqrBackward0")


def _ormqr_composite(A, tau, C, left, transpose):
    m = A._data.shape[-2]
    n = A._data.shape[-1]
    if n < m:
        from .shape import cat
        A = cat([A, _zeros(A._data.shape[:-1] + (m - n,), A._data.dtype, A)], -1)
    Q = _householder_composite(A, tau) if m else _eye(m, A)
    if transpose:
        Q = _h(Q)
    return Q @ C if left else C @ Q


def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    """``Q @ C`` (or ``C @ Q``, with ``Q^H`` when ``transpose``) for Q given by geqrf's reflectors."""
    x, t, c = input._data, input2._data, input3._data
    if x.ndim < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if c.ndim < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    if x.dtype.kind not in "fc":
        raise NotImplementedError(f"\"ormqr_cpu\" not implemented for '{_dtype_name(x.dtype)}'")
    from ..autograd.grad_mode import no_grad
    mm = c.shape[-2] if left else c.shape[-1]
    if x.shape[-2] != mm:
        raise RuntimeError(f"torch.ormqr: other.shape[{-2 if left else -1}] must be equal to input.shape[-2]")

    def comp(a, tt, cc):
        return _ormqr_composite(a, tt, cc, left, transpose)
    with no_grad():
        r = comp(_const(x), _const(t), _const(c))._data
    node = node_for(OrmqrBackward0, (input, input2, input3))
    res = finish(node, xp_for(r).ascontiguousarray(r))
    if node is not None:
        save(node, input, input2, input3)
        save_output(node, res)      # (unused by the composite; kept as PyTorch's node keeps its result)
        node.n_inputs = 3
        node.composite = comp
    return _out(res, out, "ormqr")


# --- LDL -----------------------------------------------------------------------------------

def _ldl_checks(x, name):
    _check_nd(x, name)
    _check_sq(x, name)
    if x.dtype.kind not in "fc":
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {_dtype_name(x.dtype)}")


def _ldl_np(x, hermitian):
    n = x.shape[-1]
    ld = np.empty(x.shape, x.dtype)
    piv = np.empty(x.shape[:-1], np.int32)
    info = np.zeros(x.shape[:-2], np.int32)
    if x.size:
        kind = "hetrf" if (hermitian and x.dtype.kind == "c") else "sytrf"
        fn = _lapack(kind, (x,))
        fl, fp, fi = ld.reshape((-1, n, n)), piv.reshape((-1, n)), info.reshape(-1)
        for i, m in enumerate(x.reshape((-1, n, n))):
            a, p, inf = fn(m, lower=1)[:3]
            fl[i], fp[i], fi[i] = np.tril(a), p, inf
    return ld, piv, info


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """``(LD, pivots, info)``: the compact LDL^T (LDL^H) factorization of LAPACK sytrf / hetrf."""
    x = A._data
    _ldl_checks(x, "torch.linalg.ldl_factor_ex")
    ld, piv, info = _host(_ldl_np, _lapack_dtype(x, "ldl_factor_kernel_cpu"), hermitian)   # (CuPy has no LDL)
    if check_errors and bool(info.any()):
        raise _linalg_error(f"torch.linalg.ldl_factor_ex: {_batch_where(info)}The factorization could not be "
                            f"completed because the input is not invertible (D[{_first_info(info)},"
                            f"{_first_info(info)}] is zero).")
    return RT["linalg_ldl_factor_ex"](_const(ld), _const(piv), _const(info))


def ldl_factor(A, *, hermitian=False, out=None):
    """``(LD, pivots)`` of ldl_factor_ex (raises when D is singular)."""
    x = A._data
    _ldl_checks(x, "torch.linalg.ldl_factor")
    ld, piv, info = _host(_ldl_np, _lapack_dtype(x, "ldl_factor_kernel_cpu"), hermitian)   # (CuPy has no LDL)
    if bool(info.any()):
        raise _linalg_error(f"torch.linalg.ldl_factor: {_batch_where(info)}The factorization could not be completed "
                            f"because the input is not invertible (D[{_first_info(info)},{_first_info(info)}] is "
                            "zero).")
    return RT["linalg_ldl_factor"](_const(ld), _const(piv))


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """Solve ``A X = B`` from ldl_factor's ``(LD, pivots)`` (LAPACK sytrs / hetrs)."""
    ld, piv, b = LD._data, pivots._data, B._data
    name = "torch.linalg.ldl_solve"
    if ld.ndim < 2:
        raise RuntimeError(f"{name}: LD must have at least 2 dimensions.")
    if b.ndim < 2:
        raise RuntimeError(f"{name}: B must have at least 2 dimensions.")
    if ld.shape[-1] != ld.shape[-2]:
        raise RuntimeError(f"{name}: LD must be batches of square matrices, but they are {ld.shape[-2]} by "
                           f"{ld.shape[-1]} matrices")
    if b.shape[-2] != ld.shape[-1]:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation AX = B "
                           f"({ld.shape[-2]}x{ld.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    if ld.dtype != b.dtype:
        raise RuntimeError(f"{name}: Expected LD and B to have the same dtype, but found LD of type "
                           f"{_dtype_name(ld.dtype)} and B of type {_dtype_name(b.dtype)} instead")
    if ld.dtype.kind not in "fc":
        raise NotImplementedError(f"\"ldl_solve_cpu\" not implemented for '{_dtype_name(ld.dtype)}'")
    x = _host(_ldl_solve_np, ld, piv, b, hermitian)   # (CuPy has no LDL)
    return _out(_const(x), out, "linalg_ldl_solve")


def _ldl_solve_np(ld, piv, b, hermitian):
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    n = ld.shape[-1]
    ldb = np.broadcast_to(ld, batch + (n, n)).reshape((-1, n, n))
    pb = np.broadcast_to(piv, batch + (n,)).reshape((-1, n))
    bb = np.broadcast_to(b, batch + b.shape[-2:]).reshape((-1,) + b.shape[-2:])
    x = np.empty(bb.shape, b.dtype)
    if x.size:
        kind = "hetrs" if (hermitian and ld.dtype.kind == "c") else "sytrs"
        fn = _lapack(kind, (ld,))
        for i in range(x.shape[0]):
            x[i] = fn(ldb[i], pb[i], bb[i], lower=1)[0]
    return x.reshape(batch + b.shape[-2:])


# --- cholesky_solve / cholesky_inverse ----------------------------------------------------

def _chol_solve_composite(upper):
    def fn(B, L):
        if upper:
            return solve_triangular(L, solve_triangular(_h(L), B, upper=False), upper=True)
        return solve_triangular(_h(L), solve_triangular(L, B, upper=False), upper=True)
    return fn


def _chol_solve_backward(self, grads):
    B, L, X = self.saved_tensors
    gX = grads[0]
    nf = self.next_functions
    gB = cholesky_solve(gX, L, self.upper)
    gL = None
    if nf[1][0] is not None:
        # A = L L^H: gA = -gB X^H, made hermitian, then through the factor
        common = gB @ _h(X)
        common = common + _h(common)
        gL = -(L @ common) if self.upper else -(common @ L)
        if gL._data.shape != L._data.shape:
            gL = gL.sum_to_size(L._data.shape)
    if gB._data.shape != B._data.shape:
        gB = gB.sum_to_size(B._data.shape)
    return (gB if nf[0][0] is not None else None), gL


def _chol_inverse_backward(self, grads):
    L, Ainv = self.saved_tensors
    g = grads[0]
    common = Ainv @ ((g + _h(g)) @ Ainv)
    return -(L @ common) if self.upper else -(common @ L)


CholeskySolveBackward0 = _node("CholeskySolveBackward0", _chol_solve_backward)
CholeskyInverseBackward0 = _node("CholeskyInverseBackward0", _chol_inverse_backward)


def cholesky_solve(B, L, upper=False, *, out=None):
    """Solve ``A X = B`` given the Cholesky factor ``L`` of ``A`` (``U`` when ``upper``)."""
    b, l = B._data, L._data
    if b.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {b.ndim} dimensions instead")
    if l.ndim < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {l.ndim} dimensions instead")
    if b.dtype != l.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_dtype_name(b.dtype)} and "
                           f"A of type {_dtype_name(l.dtype)} instead.")
    if b.dtype.kind not in "fc":
        raise NotImplementedError(f"\"cholesky_solve_cpu\" not implemented for '{_dtype_name(b.dtype)}'")
    _lapack_dtype(b, "cholesky_solve_cpu")
    if l.shape[-1] != l.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {l.shape[-2]} by {l.shape[-1]} "
                           "matrices")
    if l.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is {l.shape[-1]} by "
                           f"{l.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    comp = _chol_solve_composite(upper)
    from ..autograd.grad_mode import no_grad
    with no_grad():
        r = comp(_const(b), _const(l))._data
    X, = _record(CholeskySolveBackward0, (B, L), [r], saved=(B, L), out_saved=(0,), upper=upper)
    return _out(X, out, "cholesky_solve")


def cholesky_inverse(L, upper=False, *, out=None):
    """``A^-1`` given the Cholesky factor of ``A``."""
    l = L._data
    if l.ndim < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 dimensions.")
    if l.shape[-1] != l.shape[-2]:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but they are {l.shape[-2]} by "
                           f"{l.shape[-1]} matrices")
    if l.dtype.kind not in "fc":
        raise NotImplementedError(f"\"cholesky_inverse_out_cpu\" not implemented for '{_dtype_name(l.dtype)}'")
    _lapack_dtype(l, "cholesky_inverse_out_cpu")
    n = l.shape[-1]
    if type(l) is np.ndarray and n:      # (LAPACK's potri reports a zero pivot; a device skips the check)
        zero = np.diagonal(l, axis1=-2, axis2=-1) == 0
        if zero.any():
            info = np.where(zero.any(-1), zero.argmax(-1) + 1, 0)
            raise _linalg_error(f"cholesky_inverse: {_batch_where(info)}The diagonal element {_first_info(info)} is "
                                "zero, the inversion could not be completed because the input matrix is singular.")

    def comp(Lt):
        xp = xp_for(l)
        eye = _const(xp.broadcast_to(xp.eye(n, dtype=l.dtype), l.shape).copy(), l)
        return _chol_solve_composite(upper)(eye, Lt)
    from ..autograd.grad_mode import no_grad
    with no_grad():
        r = comp(_const(l))._data
    res, = _record(CholeskyInverseBackward0, (L,), [r], saved=(L,), out_saved=(0,), upper=upper)
    return _out(res, out, "cholesky_inverse")


# --- built on the above ----------------------------------------------------------------------

def cond(A, p=None, *, out=None):
    """The condition number of ``A`` in the norm ``p`` (2 by default: the ratio of extreme
    singular values)."""
    x = A._data
    if x.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if p not in (None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc"):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    _check_float(x, "linalg.cond")
    if p in (None, 2, -2):
        S = svdvals(A)
        if S._data.shape[-1] == 0:
            return _out(_zeros(S._data.shape[:-1], S._data.dtype, S), out, "linalg_cond")
        r = S[..., :1] / S[..., -1:] if p != -2 else S[..., -1:] / S[..., :1]
        return _out(r.squeeze(-1), out, "linalg_cond")
    if x.shape[-1] != x.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                           f"{x.shape[-2]} by {x.shape[-1]} matrices")
    from ..linalg import matrix_norm
    if x.size == 0:
        return _out(_zeros(x.shape[:-2], _real_dt(x.dtype), x), out, "linalg_cond")
    Ai, info = inv_ex(A)
    if p == "nuc":
        return _out(matrix_norm(A, p) * matrix_norm(Ai, p), out, "linalg_cond")
    bad = info._data != 0
    if xp_for(bad) is not np or bad.any():   # a singular matrix: its inverse counts as infinite
        from .index import where   # (on a device selected without asking the host which)
        Ai = where(_const(bad[..., None, None]), _const(np.array(np.inf, Ai._data.dtype)), Ai)
    return _out(_nan_to_inf(matrix_norm(A, p) * matrix_norm(Ai, p)), out, "linalg_cond")


def _nan_to_inf_backward(self, grads):
    from ._base import masked_grad
    (x,) = self.saved_tensors
    return masked_grad(grads[0], xp_for(x).isfinite(x._data), x, name="MulBackward0")


NanToNumBackward0 = _node("NanToNumBackward0", _nan_to_inf_backward)


def _nan_to_inf(r):
    """nan -> inf (the condition number of a singular matrix), gradient only where finite."""
    d = r._data
    xp = xp_for(d)
    out, = _record(NanToNumBackward0, (r,), [xp.where(xp.isnan(d), np.inf, d)], saved=(r,))
    return out


def tensorinv(A, ind=2, *, out=None):
    """The inverse of ``A`` as a tensor operator: ``tensordot(tensorinv(A), A, ind) = I``."""
    x = A._data
    if not isinstance(ind, int) or ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    left, right = x.shape[:ind], x.shape[ind:]
    pl, pr = int(np.prod(left)), int(np.prod(right))
    if pl != pr:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {pr} != {pl}")
    from .linalg import inv
    r = inv(A.reshape(pl, pr)).reshape(*right, *left)
    return _out(r, out, "linalg_tensorinv")


def tensorsolve(A, B, dims=None, *, out=None):
    """The X with ``tensordot(A, X, X.ndim) = B``."""
    x, b = A._data, B._data
    if dims is not None:
        nd = x.ndim
        dims = [wrap_dim(d, nd) for d in dims]
        rest = [d for d in range(nd) if d not in dims]
        A = A.permute(*(rest + dims))
        x = A._data
    xs = x.shape[b.ndim:]
    pb, px = int(np.prod(b.shape)), int(np.prod(xs))
    from .linalg import solve
    if int(np.prod(x.shape[:b.ndim])) != pb or x.shape[:b.ndim] != b.shape:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {px} != {int(np.prod(x.shape[:b.ndim]))}")
    if px != pb:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {px} != {pb}")
    r = solve(A.reshape(pb, px), B.reshape(pb)).view(*xs)
    return _out(r, out, "linalg_tensorsolve")


def linalg_vander(x, *, N=None):
    """Vandermonde matrix with increasing powers: ``[1, x, x^2, ...]`` along the last dim."""
    d = x._data
    if d.ndim == 0:
        raise RuntimeError("N must be greater than 1.")
    if d.dtype == np.bool_:
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got Bool")
    n = d.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    from .shape import cat
    ones = _const(xp_for(d).ones(d.shape + (1,), d.dtype), d)
    pows = x.unsqueeze(-1).expand(*d.shape, n - 1).cumprod(-1)
    return cat([ones, pows], -1)


def vander(x, N=None, increasing=False):
    """``torch.vander``: powers of a 1-D ``x`` as columns, decreasing unless ``increasing``."""
    d = x._data
    if d.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = d.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    from .shape import cat
    if d.dtype.kind in "biu":
        x = x.to(_int64())
        d = x._data
    if n == 0:
        return _zeros((d.shape[0], 0), d.dtype, d)
    ones = _const(xp_for(d).ones(d.shape + (1,), d.dtype), d)
    res = ones if n == 1 else cat([ones, x.unsqueeze(-1).expand(d.shape[0], n - 1).cumprod(-1)], -1)
    return res if increasing else res.flip(-1)


def _int64():
    from .. import _dtype as D
    return D.int64


def linalg_diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """``torch.linalg.diagonal``: ``A.diagonal`` with the last two dims by default."""
    return A.diagonal(offset, dim1, dim2)


def symeig(input, eigenvectors=False, upper=True, *, out=None):
    """Removed from PyTorch: raises PyTorch's message pointing at linalg.eigh / eigvalsh."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. The default behavior has changed from "
        "using the upper triangular portion of the matrix by default to using the lower triangular portion.\n\n"
        "L, _ = torch.symeig(A, upper=upper) should be replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper "
        "else 'L')\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) should be replaced with:\nL, V = "
        "torch.linalg.eigh(A, UPLO='U' if upper else 'L')")


def torch_eig(input, eigenvectors=False, *, out=None):
    """Removed from PyTorch: raises PyTorch's message pointing at linalg.eig / eigvals."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. `torch.linalg.eig` returns complex "
        "tensors of dtype `cfloat` or `cdouble` rather than real tensors mimicking complex tensors.\n\nL, _ = "
        "torch.eig(A) should be replaced with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, "
        "eigenvectors=True) should be replaced with:\nL_complex, V_complex = torch.linalg.eig(A)")


def torch_lstsq(input, A, *, out=None):
    """Removed from PyTorch: raises PyTorch's message pointing at linalg.lstsq."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. `torch.lstsq` is deprecated in favor of "
        "`torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition "
        "in the returned tuple (although it returns other information about the problem).\n\nTo get the QR "
        "decomposition consider using `torch.linalg.qr`.\n\nThe returned solution in `torch.lstsq` stored the "
        "residuals of the solution in the last m - n columns of the returned value whenever m > n. In "
        "torch.linalg.lstsq, the residuals are in the field 'residuals' of the returned named tuple.\n\nThe "
        "unpacking of the solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced "
        "with:\nX = torch.linalg.lstsq(A, B).solution")


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """``torch.frobenius_norm`` (deprecated): the 2-norm over ``dim``."""
    import warnings
    from .reduce import vector_norm, LinalgVectorNormBackward0
    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed in "
                  "a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    res = vector_norm(input, 2, dims, keepdim)
    if res.grad_fn is not None and type(res.grad_fn) is LinalgVectorNormBackward0:
        res.grad_fn.__class__ = _NormBackward1()
    return _out(res, out, "frobenius_norm")


_NB1 = []


def _NormBackward1():
    if not _NB1:
        from .reduce import LinalgVectorNormBackward0
        _NB1.append(type("NormBackward1", (LinalgVectorNormBackward0,), {"__module__": __name__}))
    return _NB1[0]


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """``torch.nuclear_norm`` (deprecated): the sum of singular values over the two dims ``dim``."""
    import warnings
    warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
                  "future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    from ..linalg import matrix_norm
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    if input._data.ndim != 2 and dim is None:
        raise RuntimeError(f"Expected a tensor with 2 dimensions, but got a tensor with {input._data.ndim} "
                           f"dimension{'' if input._data.ndim == 1 else 's'} instead.")
    return matrix_norm(input, "nuc", (0, 1) if dim is None else dim, keepdim, out=out)


def _renorm_composite(p, dim, maxnorm):
    def fn(x):
        from .reduce import vector_norm
        from .index import where
        dims = [d for d in range(x._data.ndim) if d != dim]
        nrm = vector_norm(x, p, dims, True)
        big = _const(nrm._data > maxnorm)
        factor = where(big, maxnorm / (nrm + 1e-7), _const(np.ones((), x._data.dtype)))
        return x * factor
    return fn


def _renorm_backward(self, grads):
    """PyTorch's renorm_backward, op for op (where an inf/nan upstream gradient reaches, first
    and second order, depends on it): with n the slice norms and nb the norm's gradient for the
    upstream sum(conj(x) * g) of each slice, ``where(n > maxnorm, maxnorm/(n+1e-7) * (g -
    nb/(n+1e-7)), g)``."""
    from .reduce import vector_norm, _vector_norm_grad
    from .index import where
    (x,) = self.saved_tensors
    g = grads[0]
    p, dims, maxnorm = self.p, self.dims, self.maxnorm
    nrm = vector_norm(x, p, dims, True)
    go = ((x.conj() * g).real if x._data.dtype.kind == "c" else x * g).sum(dims, keepdim=True)
    nb = _vector_norm_grad(x, nrm, go, p, dims, True)
    inv = (nrm + 1e-7).reciprocal()
    gn = maxnorm * inv * (g - inv * nb)
    return (where(_const(nrm._data > maxnorm), gn.to(g.dtype), g),)


RenormBackward0 = _node("RenormBackward0", _renorm_backward)


def renorm(input, p, dim, maxnorm, *, out=None):
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm ``maxnorm``."""
    x = input._data
    if x.dtype.kind not in "fcV":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{_dtype_name(x.dtype)}")
    if not isinstance(p, (int, float)) or p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if x.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {x.ndim} dimensions")
    d = wrap_dim(dim, x.ndim)
    comp = _renorm_composite(float(p), d, maxnorm)
    from ..autograd.grad_mode import no_grad
    with no_grad():
        r = comp(_const(x))._data
    node = node_for(RenormBackward0, (input,))
    res = finish(node, xp_for(r).ascontiguousarray(r.astype(x.dtype, copy=False)))
    if node is not None:
        save(node, input)
        node.p, node.dims, node.maxnorm = float(p), [i for i in range(x.ndim) if i != d], maxnorm
    return _out(res, out, "renorm")


def torch_solve(input, A, *, out=None):
    """Removed from PyTorch: raises PyTorch's message pointing at linalg.solve."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. `torch.solve` is deprecated in favor of "
        "`torch.linalg.solve`. `torch.linalg.solve` has its arguments reversed and does not return the LU "
        "factorization.\n\nTo get the LU factorization see `torch.lu`, which can be used with `torch.lu_solve` or "
        "`torch.lu_unpack`.\nX = torch.solve(B, A).solution should be replaced with:\nX = torch.linalg.solve(A, B)")


def torch_matrix_rank(input, tol=None, symmetric=False, *, out=None):
    """Removed from PyTorch: raises PyTorch's message pointing at linalg.matrix_rank."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed.\nPlease use the "
        "`torch.linalg.matrix_rank` function instead. The parameter 'symmetric' was renamed in "
        "`torch.linalg.matrix_rank()` to 'hermitian'.")


for _n, _f in list(globals().items()):
    if (not _n.startswith("_") and callable(_f) and getattr(_f, "__module__", None) == __name__
            and not isinstance(_f, type)):
        globals()[_n] = refuse_meta(_f)
