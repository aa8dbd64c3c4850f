"""``torch.linalg``: matrix functions under PyTorch's names (each lives with its op family)."""
import math

import numpy as np

from .ops.linalg import (matmul, det, inv, solve, multi_dot, vecdot, linalg_cross as cross,  # noqa: F401
                         _LinAlgErrorType as LinAlgError)
from .ops.reduce import vector_norm
from .ops._base import _dtype_name, wrap_dim
from .ops._decomp import (cholesky, cholesky_ex, cond, eig, eigh, eigvals, eigvalsh,  # noqa: F401
                          householder_product, inv_ex, ldl_factor, ldl_factor_ex, ldl_solve, lstsq, lu,
                          lu_factor, lu_factor_ex, lu_solve, matrix_exp, matrix_power, matrix_rank, pinv, qr, slogdet,
                          solve_ex, solve_triangular, svd, svdvals, tensorinv, tensorsolve,
                          linalg_vander as vander, linalg_diagonal as diagonal)

__all__ = ["matmul", "det", "inv", "solve", "multi_dot", "vecdot", "cross", "LinAlgError", "vector_norm",
           "matrix_norm", "norm", "cholesky", "cholesky_ex", "cond", "diagonal", "eig", "eigh", "eigvals", "eigvalsh",
           "householder_product", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor",
           "lu_factor_ex", "lu_solve", "matrix_exp", "matrix_power", "matrix_rank", "pinv", "qr", "slogdet",
           "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander"]


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """The matrix norm of (a batch of) matrices: 'fro', 'nuc' (the sum of singular values),
    2 / -2 (the largest / smallest singular value), 1 / -1 / inf / -inf (the largest / smallest
    absolute column / row sum)."""
    x = A._data
    if x.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if (dtype is None and x.dtype.kind not in "fcV"):
        raise RuntimeError("linalg.matrix_norm: Expected a floating point or complex tensor as input. Got "
                           f"{_dtype_name(x.dtype)}")
    dims = [dim] if isinstance(dim, int) else list(dim)
    if len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dims))}")
    d0, d1 = wrap_dim(dims[0], x.ndim), wrap_dim(dims[1], x.ndim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, {dims[1]})")
    if isinstance(ord, str):
        if ord == "fro":
            res = vector_norm(A, 2, (d0, d1), keepdim, dtype=dtype)
        elif ord == "nuc":
            res = _svd_norm(A, d0, d1, keepdim, dtype, "nuc")
        else:
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    else:
        a = abs(ord)
        if a == 2:
            res = _svd_norm(A, d0, d1, keepdim, dtype, ord)
            if out is not None:
                from .ops._base import write_out
                return write_out(out, res, "linalg_matrix_norm")
            return res
        if a not in (1, math.inf):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
        # as PyTorch: a 1-norm along one dim, then the max/min along the other (ties share the
        # gradient as amax/amin's do)
        if a == math.inf:
            d0, d1 = d1, d0
        if not keepdim and d0 < d1:
            d1 -= 1
        sums = vector_norm(A, 1, (d0,), keepdim, dtype=dtype)
        res = sums.amax(d1, keepdim=keepdim) if ord > 0 else sums.amin(d1, keepdim=keepdim)
    if out is not None:
        from .ops._base import write_out
        return write_out(out, res, "linalg_matrix_norm")
    return res


def _svd_norm(A, d0, d1, keepdim, dtype, ord):
    """'nuc' / 2 / -2: the sum / max / min of the singular values of the matrices over (d0, d1)."""
    if dtype is not None:
        A = A.to(dtype)
    if A._data.dtype.kind == "V" or A._data.dtype == np.float16:
        raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got {_dtype_name(A._data.dtype)}")
    n = A._data.ndim
    rest = [d for d in range(n) if d not in (d0, d1)]
    M = A.permute(*rest, d0, d1)
    S = svdvals(M)
    if ord == "nuc":
        r = S.sum(-1)
    elif ord > 0:
        r = S.amax(-1)
    else:
        r = S.amin(-1)
    if keepdim:   # as PyTorch: two trailing unit dims, moved back where (d0, d1) were
        perm = rest + [d0, d1]
        r = r.unsqueeze(-1).unsqueeze(-1).permute(*[perm.index(k) for k in range(n)])
    return r


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """``torch.linalg.norm``: a vector norm, or a matrix norm when ``ord`` is given and the
    norm is over two dims (``dim`` a 2-tuple, or a 2-D input without ``dim``)."""
    x = A._data
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {dims}")
    else:
        dims = None
        if ord is not None and x.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                               f"{x.ndim}D.")
    if isinstance(ord, str) or (ord is not None and (len(dims) == 2 if dims is not None else x.ndim == 2)):
        return matrix_norm(A, ord, dims if dims is not None else (0, 1), keepdim, dtype=dtype, out=out)
    return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype, out=out)
