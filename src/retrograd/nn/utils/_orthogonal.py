"""parametrizations.orthogonal: a weight kept orthogonal (unitary) as the image of an
unconstrained matrix under the matrix exponential, the Cayley map or a product of Householder
reflections; with ``use_trivialization`` the image is taken relative to a ``base`` orthogonal
matrix (a buffer), which assigning to the weight resets."""
import math

import numpy as np

from ..._tensor import Tensor
from ...autograd import grad_mode
from ..modules.module import Module
from . import parametrize

_MAPS = ("matrix_exp", "cayley", "householder")


def _eye_like(x, n):
    from ... import _creation
    return _creation.eye(n, dtype=x.dtype)


def _matrix_exp(a):
    """exp(a) for (..., n, n) by scaling and squaring a degree-18 Taylor polynomial, with tensor ops
    (so it is differentiable): a / 2^s has norm <= 1/2, where the truncation error is below 1e-22."""
    n = a.shape[-1]
    with grad_mode.no_grad():
        norm = float(a.abs().sum(-2).amax()) if a.numel() else 0.0
    s = max(0, int(math.ceil(math.log2(norm))) + 1) if norm > 0.5 else 0
    x = a / (2.0 ** s) if s else a
    eye = _eye_like(a, n)
    term = eye.expand(a.shape) if a.dim() > 2 else eye
    out = term
    for k in range(1, 19):
        term = (term @ x) / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


def _householder_product(a, tau):
    """The first k columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H with v_i the i-th column of
    ``a`` below the diagonal and 1 on it (LAPACK's orgqr convention), with tensor ops."""
    from ...ops.shape import cat
    n, k = a.shape[-2], a.shape[-1]
    eye = _eye_like(a, n)
    q = eye.expand(a.shape[:-2] + (n, n)) if a.dim() > 2 else eye
    for i in range(k):
        lead = a.new_zeros(a.shape[:-2] + (i,))
        one = a.new_ones(a.shape[:-2] + (1,))
        v = cat([lead, one, a[..., i + 1:, i]], -1)            # (..., n)
        w = (q @ v.unsqueeze(-1))                               # (..., n, 1)
        q = q - (tau[..., i:i + 1].unsqueeze(-1) * w) @ v.conj().unsqueeze(-2)
    return q[..., :k]


def _geqrf(a):
    """LAPACK's geqrf of (..., n, k) as arrays: reflectors below the diagonal, R on and above, and tau."""
    import scipy.linalg
    arr = np.asarray(a._data)
    flat = arr.reshape((-1,) + arr.shape[-2:])
    outs, taus = [], []
    for m in flat:
        (qr, tau), _ = scipy.linalg.qr(m, mode="raw")
        outs.append(qr)
        taus.append(tau)
    return (np.stack(outs).reshape(arr.shape).astype(arr.dtype),
            np.stack(taus).reshape(arr.shape[:-2] + (min(arr.shape[-2:]),)).astype(arr.dtype))


def _make_orthogonal(a):
    """Q of a = QR with diag(R) >= 0 (unique for full column rank)."""
    from ...ops._base import finish
    x, tau = _geqrf(a)
    q = _householder_product(finish(None, x), finish(None, tau))
    d = np.diagonal(x, axis1=-2, axis2=-1)
    sgn = np.where(d == 0, 0, d / np.where(d == 0, 1, np.abs(d))).astype(x.dtype)
    return q * finish(None, sgn[..., None, :])


def _is_orthogonal(q):
    from ... import _creation
    n, k = q.shape[-2], q.shape[-1]
    eps = 10.0 * n * float(np.finfo(np.dtype(q._data.dtype)).eps)
    return bool(np.allclose(np.asarray((q.mH @ q)._data), np.asarray(_creation.eye(k, dtype=q.dtype)._data),
                            atol=eps, rtol=1e-5))


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:
                from ...ops.shape import cat
                X = cat([X, X.new_zeros(n, n - k).expand(X.shape[:-2] + (n, n - k))], -1)
            A = X - X.mH
            if self.orthogonal_map == "matrix_exp":
                Q = _matrix_exp(A)
            else:
                from ... import linalg
                eye = _eye_like(A, n)
                Q = linalg.solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(-2))
            Q = _householder_product(A, tau)
            # the signs of X's diagonal pick each reflection's orientation (not differentiated)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with grad_mode.no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q):
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in ("matrix_exp", "cayley"):
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            from ...ops._base import finish
            x, tau = _geqrf(Q)
            d = np.diagonal(x, axis1=-2, axis2=-1)
            # diag(R) > 0 where a reflection was used; flipped where LAPACK skipped it (tau == 0)
            nd = np.sign(d)
            nd = np.where(tau == 0.0, -nd, nd)
            idx = np.arange(d.shape[-1])
            x[..., idx, idx] = nd
            A = finish(None, x)
            return A.mT if transpose else A
        if n == k:
            Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
        else:
            from ... import _creation
            from ...ops.shape import cat
            N = _creation.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype)
            Q = _make_orthogonal(cat([Q, N], -1))
        self.base = Q
        neg_id = q_init.new_zeros(q_init.shape)
        neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain ``module.<name>`` (a matrix or batch of them) to be orthogonal (unitary)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.shape[-2] == weight.shape[-1] or weight.is_complex()
                          else "householder")
    if orthogonal_map not in _MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
