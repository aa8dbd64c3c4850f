"""Op table entries: the matrix decompositions of torch.linalg and what is built on them
(cholesky, qr, eigh, eig, svd, lu, ldl, lstsq, pinv, matrix_exp, matrix_power, norms over singular
values, ...), and their top-level / Tensor-method spellings (torch.svd, Tensor.cholesky, ...).

Eigenvectors and singular vectors are defined up to sign (phase); the entries whose outputs
include them use matrices with well-separated eigen/singular values, where LAPACK's choice is
the same for NumPy and PyTorch, and gauge-invariant products where a sign could flip."""
import numpy as np

from .core import OpInfo, Sample, method, function, _known

OPS = []
INF, NAN = np.inf, np.nan


def _add(name, op, samples, **kw):
    OPS.append(OpInfo(name, op, samples, **kw))


def _linalg(name):
    def op(lib, *args, **kwargs):
        return getattr(lib.linalg, name)(*args, **kwargs)
    op.__name__ = "linalg_" + name
    return op


def _hermitian(fn):
    """op applying ``fn`` to the symmetric part of its first argument: LAPACK reads one triangle
    only, so the finite differences of the raw op see half the matrix."""
    def op(lib, A, *args, **kwargs):
        return fn(lib, (A + A.mT) / 2, *args, **kwargs)
    op.__name__ = getattr(fn, "__name__", "op")
    return op


def _sq(mk, n, *batch):
    """Well-conditioned square matrices."""
    return mk.rand(*batch, n, n) + 3 * np.eye(n)


def _spd(mk, n, *batch):
    """Symmetric positive-definite matrices with separated eigenvalues."""
    a = mk.rand(*batch, n, n)
    return a @ np.swapaxes(a, -1, -2) + np.diag(np.arange(1.0, n + 1.0) * 2)


def _sym(mk, n, *batch):
    """Symmetric matrices (any sign) with separated eigenvalues."""
    a = mk.rand(*batch, n, n) * 0.3
    return a + np.swapaxes(a, -1, -2) + np.diag(np.arange(n) * 2.0 - n)


def _gen(mk, m, n, *batch):
    """General matrices with separated singular values."""
    k = min(m, n)
    q1, _ = np.linalg.qr(mk.rand(*batch, m, m))
    q2, _ = np.linalg.qr(mk.rand(*batch, n, n))
    s = np.zeros(batch + (m, n))
    idx = np.arange(k)
    s[..., idx, idx] = np.arange(k, 0, -1) * 1.5
    return q1 @ s @ q2


_NONSMOOTH = "nonfinite entries: LAPACK's result (or error) for inf/nan input is implementation-defined"


# ----------------------------------------------------------------------------------- cholesky

def _chol_samples(mk):
    yield Sample(_spd(mk, 3))
    yield Sample(_spd(mk, 3, 2))
    yield Sample(_spd(mk, 3), upper=True)
    yield Sample(mk.pos(1, 1), kind="size1")
    yield Sample(mk.rand(0, 0), kind="empty")
    yield Sample(mk.rand(2, 0, 0), kind="empty")
    yield Sample(-np.eye(3), kind="error")                     # not positive-definite
    yield Sample(np.stack([np.eye(2), -np.eye(2)]), kind="error")
    yield Sample(mk.rand(2, 3), kind="error")
    yield Sample(mk.rand(3), kind="error")


_SYM_SKIP = {"nonfinite": _NONSMOOTH, "ties": "ties break symmetry / definiteness",
             "noncontig": "the transposed layout of a symmetric matrix is the same matrix (covered by basic)"}
_add("linalg.cholesky", _hermitian(_linalg("cholesky")), _chol_samples, skip=dict(_SYM_SKIP), int_dtypes=False,
     gradcheck_kinds=("basic",))
_add("linalg.cholesky_ex", _hermitian(_linalg("cholesky_ex")),
     lambda mk: [Sample(_spd(mk, 3)), Sample(_spd(mk, 2, 2), upper=True), Sample(mk.rand(0, 0), kind="empty"),
                 Sample(mk.rand(3), kind="error")], skip=dict(_SYM_SKIP), gradcheck_kinds=("basic",), int_dtypes=False)
_add("cholesky", _hermitian(method("cholesky")),
     lambda mk: [Sample(_spd(mk, 3)), Sample(_spd(mk, 3), True), Sample(_spd(mk, 3, 2)),
                 Sample(-np.eye(2), kind="error"), Sample(mk.rand(3), kind="error")],
     skip=dict(_SYM_SKIP), gradcheck_kinds=("basic",), covers=("torch.cholesky",), int_dtypes=False)
# the raw ops (one triangle read): values and error parity, integer inputs included
def _nonsym(mk, n):
    """SPD plus a small strictly upper part: the upper and lower triangles hold different matrices."""
    return _spd(mk, n) + 0.3 * np.triu(mk.rand(n, n), 1)


_add("linalg.cholesky(raw)", _linalg("cholesky"),
     lambda mk: [Sample(_spd(mk, 3)), Sample(_spd(mk, 3), upper=True), Sample(_nonsym(mk, 3), upper=True, kind="nonsym"),
                 Sample(_nonsym(mk, 3), kind="nonsym_lower")],
     grad=False, skip=dict(_SYM_SKIP))
_add("cholesky(raw)", method("cholesky"),
     lambda mk: [Sample(_spd(mk, 3)), Sample(_spd(mk, 3), True), Sample(_nonsym(mk, 3), True, kind="nonsym"),
                 Sample(_nonsym(mk, 3), kind="nonsym_lower")],
     grad=False, skip=dict(_SYM_SKIP))


def _tri_samples(mk):
    up = np.triu(mk.rand(3, 3)) + 3 * np.eye(3)
    lo = np.tril(mk.rand(3, 3)) + 3 * np.eye(3)
    yield Sample(up, mk.rand(3, 2), upper=True)
    yield Sample(lo, mk.rand(3, 2), upper=False)
    yield Sample(mk.rand(3, 3) + 3 * np.eye(3), mk.rand(2, 3), upper=True, left=False)
    yield Sample(mk.rand(2, 3, 3) + 3 * np.eye(3), mk.rand(3, 4), upper=False, unitriangular=True)
    yield Sample(up, mk.rand(2, 3, 2), upper=True, kind="broadcast")
    yield Sample(mk.rand(0, 0), mk.rand(0, 2), upper=True, kind="empty")
    yield Sample(np.triu(mk.rand(3, 3)) * np.array([1.0, 0.0, 1.0]), mk.rand(3, 1), upper=True, kind="singular")
    yield Sample(up, mk.rand(4, 2), upper=True, kind="error")
    yield Sample(up, mk.rand(3), upper=True, kind="error")


_add("linalg.solve_triangular", _linalg("solve_triangular"), _tri_samples,
     gradcheck_kinds=("basic", "noncontig", "broadcast"), skip={"nonfinite": _NONSMOOTH})
_add("triangular_solve", method("triangular_solve"),
     lambda mk: [Sample(mk.rand(3, 2), np.triu(mk.rand(3, 3)) + 3 * np.eye(3)),
                 Sample(mk.rand(3, 2), np.tril(mk.rand(3, 3)) + 3 * np.eye(3), upper=False),
                 Sample(mk.rand(3, 2), mk.rand(3, 3) + 3 * np.eye(3), True, True),
                 Sample(mk.rand(3, 2), mk.rand(3, 3) + 3 * np.eye(3), False, False, True),
                 Sample(mk.rand(2, 3, 2), mk.rand(3, 3) + 3 * np.eye(3), kind="broadcast"),
                 Sample(mk.rand(3), mk.rand(3, 3), kind="error"), Sample(mk.rand(4, 2), mk.rand(3, 3), kind="error")],
     skip={"nonfinite": _NONSMOOTH}, covers=("torch.triangular_solve",))


def _chol_factor(mk, n, *batch):
    return np.linalg.cholesky(_spd(mk, n, *batch))


def _tri_factor(fn):
    """op passing the factor's triangle only: PyTorch's gradient w.r.t. the factor is a full matrix
    (it differentiates A = L L^H), so finite differences must see the triangle as the input."""
    def op(lib, *args, **kwargs):
        args = list(args)
        upper = args[2] if len(args) > 2 else kwargs.get("upper", False)
        k = 1 if fn.__name__ == "cholesky_solve" else 0
        args[k] = args[k].triu() if upper else args[k].tril()
        return fn(lib, *args, **kwargs)
    op.__name__ = fn.__name__
    return op


def _tri_upper_kw(fn):
    def op(lib, L, *args, **kwargs):
        upper = args[0] if args else kwargs.get("upper", False)
        return fn(lib, L.triu() if upper else L.tril(), *args, **kwargs)
    op.__name__ = fn.__name__
    return op


_add("cholesky_solve", _tri_factor(method("cholesky_solve")),
     lambda mk: [Sample(mk.rand(3, 2), _chol_factor(mk, 3)),
                 Sample(mk.rand(3, 2), np.swapaxes(_chol_factor(mk, 3), -1, -2), True),
                 Sample(mk.rand(2, 3, 1), _chol_factor(mk, 3, 2)),
                 Sample(mk.rand(3), _chol_factor(mk, 3), kind="error"),
                 Sample(mk.rand(4, 2), _chol_factor(mk, 3), kind="error")],
     skip={"nonfinite": _NONSMOOTH}, gradcheck_kinds=("basic",))
_add("cholesky_inverse", _tri_upper_kw(method("cholesky_inverse")),
     lambda mk: [Sample(_chol_factor(mk, 3)), Sample(np.swapaxes(_chol_factor(mk, 3), -1, -2), True),
                 Sample(_chol_factor(mk, 2, 2)), Sample(mk.rand(3), kind="error")],
     skip={"nonfinite": _NONSMOOTH}, gradcheck_kinds=("basic",))


# ----------------------------------------------------------------------------- determinants

def _slogdet_samples(mk):
    yield Sample(_sq(mk, 3))
    yield Sample(-_sq(mk, 3))                                  # negative determinant
    yield Sample(_sq(mk, 2, 3))
    yield Sample(mk.rand(1, 1), kind="size1")
    yield Sample(mk.rand(0, 0), kind="empty")
    yield Sample(mk.rand(2, 3), kind="error")
    yield Sample(mk.rand(3), kind="error")


_add("linalg.slogdet", _linalg("slogdet"), _slogdet_samples)
_add("slogdet", method("slogdet"), _slogdet_samples, covers=("torch.slogdet",))
_add("logdet", method("logdet"),
     lambda mk: [Sample(_sq(mk, 3)), Sample(-_sq(mk, 3)), Sample(_sq(mk, 2, 2)), Sample(mk.rand(0, 0), kind="empty"),
                 Sample(np.zeros((2, 2)), kind="singular"), Sample(mk.rand(2, 3), kind="error")],
     gradcheck_kinds=("basic",))


# ----------------------------------------------------------------------------------- eigh

def _eigh_samples(mk):
    yield Sample(_sym(mk, 3))
    yield Sample(_spd(mk, 4, 2))
    yield Sample(_sym(mk, 3), UPLO="U")
    yield Sample(mk.rand(1, 1), kind="size1")
    yield Sample(mk.rand(0, 0), kind="empty")
    yield Sample(mk.rand(2, 3), kind="error")
    yield Sample(_sym(mk, 2), UPLO="X", kind="error")


def _eigh_gauged(lib, A, *args, **kwargs):
    """linalg.eigh with each eigenvector's phase fixed (its largest entry made real and
    positive): eigenvectors are defined up to a sign (a phase when complex), which each LAPACK
    chooses its own way (torch 2.13's MKL syevd and NumPy's OpenBLAS disagree on ~30% of random
    3x3 matrices); the gradient of this is gauge-invariant."""
    w, v = lib.linalg.eigh(A, *args, **kwargs)
    top = v.abs().argmax(dim=-2, keepdim=True)
    return w, v * lib.sgn(v.gather(-2, top)).conj()


_eigh_gauged.__name__ = "linalg_eigh"


_add("linalg.eigh", _hermitian(_eigh_gauged), _eigh_samples, skip=dict(_SYM_SKIP), int_dtypes=False, gradcheck_kinds=("basic",))
_add("linalg.eigvalsh", _hermitian(_linalg("eigvalsh")), _eigh_samples, skip=dict(_SYM_SKIP), int_dtypes=False, gradcheck_kinds=("basic",))


_add("linalg.eigh(raw)", _linalg("eigh"), lambda mk: [Sample(_sym(mk, 3)), Sample(_sym(mk, 3), "U")],
     grad=False, skip=dict(_SYM_SKIP))
_add("linalg.eigvalsh(raw)", _linalg("eigvalsh"), lambda mk: [Sample(_sym(mk, 3)), Sample(_sym(mk, 3), "U")],
     grad=False, skip=dict(_SYM_SKIP))


def _eig_op(lib, A):
    # eigenvectors are defined up to a complex phase: compare |V| and the eigenvalues
    L, V = lib.linalg.eig(A)
    return L, V.abs()


def _eig_samples(mk):
    yield Sample(_sym(mk, 3) + np.triu(mk.rand(3, 3)) * 0.2)          # real eigenvalues
    yield Sample(np.array([[1.0, -2.0, 0.1], [2.0, 1.0, 0.2], [0.0, 0.3, 3.0]]))   # a complex pair
    yield Sample(mk.rand(0, 0), kind="empty")
    yield Sample(mk.rand(2, 3), kind="error")


_EIG_INFGRAD = ("an inf/nan upstream gradient makes PyTorch's phase-invariance check raise in its backward "
                "(retrograd checks the same quantity and raises too)")
_EIG_GG = ("double backward through the general eigendecomposition: retrograd's phase check (PyTorch's allclose "
           "test) fires on the harness's random second-order upstream; first derivatives are compared and gradchecked")
_add("linalg.eig", _eig_op, _eig_samples, skip={"nonfinite": _NONSMOOTH, "ties": "repeated eigenvalues",
                                                "infgrad": _EIG_INFGRAD, "gradgrad": _EIG_GG,
                                                "noncontig": "eig of the transposed layout: same values, covered"},
     gradcheck_kinds=("basic",))
_add("linalg.eigvals", _linalg("eigvals"), _eig_samples,
     skip={"nonfinite": _NONSMOOTH, "ties": "repeated eigenvalues", "infgrad": _EIG_INFGRAD, "gradgrad": _EIG_GG},
     gradcheck_kinds=("basic",))


# ------------------------------------------------------------------------------------ svd

def _svd_samples(mk):
    yield Sample(_gen(mk, 3, 3))
    yield Sample(_gen(mk, 4, 2))
    yield Sample(_gen(mk, 2, 4))
    yield Sample(_gen(mk, 3, 2, 2))
    yield Sample(_gen(mk, 4, 3), full_matrices=False)
    yield Sample(mk.rand(0, 3), kind="empty")
    yield Sample(mk.rand(3), kind="error")


def _svd_op(lib, A, full_matrices=True):
    U, S, Vh = lib.linalg.svd(A, full_matrices=full_matrices)
    k = S.shape[-1]
    # U and Vh up to a common sign per singular value: the products are gauge-invariant
    return S, U[..., :, :k] @ Vh[..., :k, :], U[..., :, :k] * Vh[..., :k, :1].mT
_svd_op.__name__ = "linalg_svd"


_SVD_SKIP = {"nonfinite": _NONSMOOTH, "ties": "repeated singular values: the vectors' gradient is undefined",
             "noncontig": "the SVD of the transposed layout: covered by the wide and tall samples"}
_add("linalg.svd", _svd_op, _svd_samples, skip=dict(_SVD_SKIP), gradcheck_kinds=("basic",))
_add("linalg.svd(raw)", _linalg("svd"), lambda mk: [Sample(_gen(mk, 3, 3)), Sample(_gen(mk, 4, 2), False)],
     skip=dict(_SVD_SKIP), gradcheck_kinds=())
_add("linalg.svdvals", _linalg("svdvals"),
     lambda mk: [Sample(_gen(mk, 3, 3)), Sample(_gen(mk, 4, 2)), Sample(_gen(mk, 2, 3, 2)),
                 Sample(mk.rand(0, 3), kind="empty"), Sample(mk.rand(3), kind="error")],
     skip={"nonfinite": _NONSMOOTH, "ties": "repeated singular values"}, gradcheck_kinds=("basic",))


def _torch_svd_op(lib, A, *args):
    U, S, V = A.svd(*args)
    k = S.shape[-1]
    return S, U[..., :, :k] @ V[..., :, :k].mT


_add("svd", _torch_svd_op,
     lambda mk: [Sample(_gen(mk, 3, 3)), Sample(_gen(mk, 4, 2), False), Sample(_gen(mk, 2, 3)),
                 Sample(mk.rand(3), kind="error")], skip=dict(_SVD_SKIP), gradcheck_kinds=("basic",),
     covers=("torch.svd",))


# ------------------------------------------------------------------------------------- qr

def _qr_samples(mk):
    yield Sample(_sq(mk, 3))
    yield Sample(mk.rand(4, 3))
    yield Sample(mk.rand(3, 4))
    yield Sample(mk.rand(2, 4, 2))
    yield Sample(mk.rand(3, 3), mode="complete")
    yield Sample(mk.rand(3, 4), mode="complete")
    yield Sample(mk.rand(0, 3), kind="empty")
    yield Sample(mk.rand(3), kind="error")
    yield Sample(mk.rand(3, 3), mode="x", kind="error")


_add("linalg.qr", _linalg("qr"), _qr_samples, skip={"nonfinite": _NONSMOOTH, "ties": "rank-deficient"},
     gradcheck_kinds=("basic",))
_add("linalg.qr(r)", _linalg("qr"), lambda mk: [Sample(mk.rand(4, 3), mode="r"), Sample(mk.rand(3, 4), "r")],
     grad=False, skip={"nonfinite": _NONSMOOTH})   # PyTorch refuses to differentiate mode='r' (no Q)
_add("qr", method("qr"), lambda mk: [Sample(mk.rand(4, 3)), Sample(mk.rand(3, 4), False), Sample(mk.rand(3),
                                                                                                kind="error")],
     skip={"nonfinite": _NONSMOOTH, "ties": "rank-deficient"}, gradcheck_kinds=("basic",), covers=("torch.qr",))


# ---------------------------------------------------------------------------------- inverse / solve

_add("linalg.inv_ex", _linalg("inv_ex"),
     lambda mk: [Sample(_sq(mk, 3)), Sample(_sq(mk, 2, 2)), Sample(mk.rand(0, 0), kind="empty"),
                 Sample(np.zeros((3, 3)), kind="singular"), Sample(mk.rand(2, 3), kind="error")],
     gradcheck_kinds=("basic",))
_add("linalg.solve_ex", _linalg("solve_ex"),
     lambda mk: [Sample(_sq(mk, 3), mk.rand(3, 2)), Sample(_sq(mk, 3), mk.rand(3)),
                 Sample(_sq(mk, 3, 2), mk.rand(3, 1), kind="broadcast"),
                 Sample(np.zeros((3, 3)), mk.rand(3, 1), kind="singular"), Sample(mk.rand(2, 3), mk.rand(2),
                                                                               kind="error")],
     gradcheck_kinds=("basic",))


# ------------------------------------------------------------------------------------- lu

def _lu_samples(mk):
    yield Sample(mk.rand(3, 3))
    yield Sample(mk.rand(2, 3, 3))
    yield Sample(mk.rand(4, 3))
    yield Sample(mk.rand(3, 4))
    yield Sample(mk.rand(0, 0), kind="empty")
    yield Sample(mk.rand(3), kind="error")


_LU_SKIP = {"nonfinite": _NONSMOOTH, "ties": "pivot ties: the row order is LAPACK's choice"}
_add("linalg.lu_factor_ex", _linalg("lu_factor_ex"), _lu_samples, skip=dict(_LU_SKIP), gradcheck_kinds=("basic",))
_add("linalg.lu_factor", _linalg("lu_factor"),
     lambda mk: [Sample(mk.rand(3, 3)), Sample(mk.rand(2, 4, 3)), Sample(np.zeros((3, 3)), kind="error"),
                 Sample(mk.rand(3), kind="error")], skip=dict(_LU_SKIP), gradcheck_kinds=("basic",))
def _lu_op(lib, A, **kw):
    P, L, U = lib.linalg.lu(A, **kw)
    return L, U    # P (no gradient) is compared by linalg.lu(P): gradgradcheck needs differentiable outputs


_add("linalg.lu(P)", _linalg("lu"), _lu_samples, grad=False, skip=dict(_LU_SKIP))
_add("linalg.lu", _lu_op, _lu_samples, skip=dict(_LU_SKIP), gradcheck_kinds=("basic",))
_add("lu", method("lu"), lambda mk: [Sample(mk.rand(3, 3)), Sample(mk.rand(3, 3), get_infos=True)],
     skip=dict(_LU_SKIP), gradcheck_kinds=("basic",), covers=("torch.lu",))


def _lu_of(mk, n, *batch):
    import scipy.linalg as sl
    a = mk.rand(*batch, n, n) + 2 * np.eye(n)
    flat = a.reshape(-1, n, n)
    lus, pivs = [], []
    for m in flat:
        lu, piv = sl.lu_factor(m)
        lus.append(lu)
        pivs.append(piv + 1)
    return np.stack(lus).reshape(a.shape), np.stack(pivs).reshape(a.shape[:-1]).astype(np.int32)


def _lu_solve_samples(mk):
    lu, piv = _lu_of(mk, 3)
    yield Sample(lu, mk.index(piv, np.int32), mk.rand(3, 2))
    yield Sample(lu, mk.index(piv, np.int32), mk.rand(2, 3), left=False)
    yield Sample(lu, mk.index(piv, np.int32), mk.rand(3, 2), adjoint=True)
    lu2, piv2 = _lu_of(mk, 3, 2)
    yield Sample(lu2, mk.index(piv2, np.int32), mk.rand(2, 3, 1))
    yield Sample(lu, mk.index(piv, np.int32), mk.rand(4, 2), kind="error")


_INFGRAD = ("an inf/nan upstream gradient: PyTorch's fused backward kernels and retrograd's tensor-op formulas "
            "combine the non-finite values in a different order, so inf and nan land in different places")
_add("linalg.lu_solve", _linalg("lu_solve"), _lu_solve_samples,
     skip={"nonfinite": _NONSMOOTH, "ties": "singular", "infgrad": _INFGRAD},
     gradcheck_kinds=("basic",))
_add("lu_solve", method("lu_solve"),
     lambda mk: [Sample(mk.rand(3, 2), *(lambda lu, p: (lu, mk.index(p, np.int32)))(*_lu_of(mk, 3)))],
     skip={"nonfinite": _NONSMOOTH, "ties": "singular", "infgrad": _INFGRAD}, gradcheck_kinds=("basic",),
     covers=("torch.lu_solve",))


def _lu_unpack_op(lib, A):
    LU, piv = lib.linalg.lu_factor(A)
    P, L, U = lib.lu_unpack(LU, piv)
    return L, U, P.sum().item()   # P has no gradient (a number keeps it out of gradgradcheck's outputs)


_add("lu_unpack", _lu_unpack_op, lambda mk: [Sample(mk.rand(3, 3)), Sample(mk.rand(4, 3)), Sample(mk.rand(2, 3, 4))],
     skip=dict(_LU_SKIP), gradcheck_kinds=("basic",))


# ---------------------------------------------------------------------------- matrix functions

def _mexp_samples(mk):
    yield Sample(mk.rand(3, 3))
    yield Sample(mk.rand(2, 2, 2))
    yield Sample(mk.rand(1, 1), kind="size1")
    yield Sample(mk.rand(0, 0), kind="empty")
    yield Sample(np.zeros((3, 3)), kind="degenerate")
    yield Sample(mk.rand(2, 3), kind="error")


_add("linalg.matrix_exp", _linalg("matrix_exp"), _mexp_samples, normwise=True)
_add("matrix_exp", method("matrix_exp"), lambda mk: [Sample(mk.rand(3, 3)), Sample(mk.rand(3), kind="error")],
     covers=("torch.matrix_exp",), normwise=True)


def _mpow_samples(mk):
    yield Sample(mk.rand(3, 3), 3)
    yield Sample(mk.rand(3, 3), 2)
    yield Sample(mk.rand(2, 3, 3), 5)
    yield Sample(mk.rand(3, 3), 1)
    yield Sample(mk.rand(3, 3), 0)
    yield Sample(_sq(mk, 3), -2)
    yield Sample(mk.rand(0, 0), 2, kind="empty")
    yield Sample(mk.rand(2, 3), 2, kind="error")


_add("linalg.matrix_power", _linalg("matrix_power"), _mpow_samples, skip={"nonfinite": _NONSMOOTH})
_add("matrix_power", method("matrix_power"), _mpow_samples, skip={"nonfinite": _NONSMOOTH})


def _pinv_samples(mk):
    yield Sample(_gen(mk, 3, 3))
    yield Sample(_gen(mk, 4, 2))
    yield Sample(_gen(mk, 2, 4))
    yield Sample(_gen(mk, 3, 2, 2))
    # singular values cut off: PyTorch's gradient (the formula at the truncated pinv) is not the
    # derivative of the cut-off function, so these are compared with torch but not gradchecked
    yield Sample(_gen(mk, 3, 3), rtol=0.5, kind="truncated")
    yield Sample(_gen(mk, 3, 3), atol=2.0, kind="truncated")
    yield Sample(mk.rand(0, 3), kind="empty")
    yield Sample(mk.rand(3), kind="error")


_add("linalg.pinv", _linalg("pinv"), _pinv_samples,
     skip={"nonfinite": _NONSMOOTH, "ties": "rank changes", "noncontig": "hermitian samples need symmetry"},
     gradcheck_kinds=("basic",))
_add("linalg.pinv(hermitian)", _hermitian(_linalg("pinv")), lambda mk: [Sample(_spd(mk, 3), hermitian=True),
                                                                         Sample(_sym(mk, 3, 2), hermitian=True)],
     skip={"nonfinite": _NONSMOOTH, "ties": "rank changes"}, gradcheck_kinds=("basic",), int_dtypes=False)
_add("pinverse", method("pinverse"), lambda mk: [Sample(_gen(mk, 3, 2)), Sample(_gen(mk, 3, 3), 0.5, kind="truncated")],
     skip={"nonfinite": _NONSMOOTH, "ties": "rank changes"}, gradcheck_kinds=("basic",))


def _rank_samples(mk):
    yield Sample(mk.rand(3, 3))
    yield Sample(np.ones((3, 4)))
    yield Sample(mk.rand(2, 4, 3))
    yield Sample(_spd(mk, 3), hermitian=True)
    yield Sample(_gen(mk, 3, 3), atol=2.0)
    yield Sample(_gen(mk, 3, 3), rtol=0.5)
    yield Sample(_gen(mk, 3, 3), atol=1.0, rtol=0.6)
    yield Sample(_gen(mk, 3, 3), tol=2.0)
    yield Sample(mk.rand(0, 3), kind="empty")
    yield Sample(mk.rand(3), kind="error")


_add("linalg.matrix_rank", _linalg("matrix_rank"), _rank_samples, grad=False, skip={"nonfinite": _NONSMOOTH})


def _cond_samples(mk):
    for p in (None, 2, -2, "nuc"):
        yield Sample(_sq(mk, 3), p)
    yield Sample(_gen(mk, 3, 2), kind="basic")
    yield Sample(_sq(mk, 3, 2), -2)
    yield Sample(mk.rand(0, 0), kind="empty")
    yield Sample(mk.rand(3), kind="error")
    yield Sample(_sq(mk, 3), 3, kind="error")


def _cond_norm_samples(mk):
    for p in (1, -1, INF, -INF, "fro"):
        yield Sample(_sq(mk, 3), p)
    yield Sample(_sq(mk, 3, 2), "fro")
    yield Sample(np.array([[1.0, 2.0], [2.0, 4.0]]), 1, kind="singular")
    yield Sample(mk.rand(2, 3), "fro", kind="error")


_add("linalg.cond", _linalg("cond"), _cond_samples, skip={"nonfinite": _NONSMOOTH, "ties": "singular"},
     gradcheck_kinds=("basic",), view=True)
_COND_BUG = ("PyTorch 2.13's own backward of cond with ord 1/-1/inf/-inf/'fro' raises 'modified by an inplace "
             "operation' (it masks the saved inverse in place); retrograd's gradient is checked by gradcheck")
_add("linalg.cond(norm)", _linalg("cond"), _cond_norm_samples,
     skip={"nonfinite": _NONSMOOTH, "ties": "singular", "grad": _COND_BUG, "gradgrad": _COND_BUG},
     gradcheck_kinds=("basic",))


def _lstsq_samples(mk):
    for d in ("gels", "gelsy", "gelsd", "gelss"):
        yield Sample(_gen(mk, 4, 3), mk.rand(4, 2), driver=d)
    yield Sample(_gen(mk, 4, 3), mk.rand(4, 2))
    yield Sample(_gen(mk, 3, 4), mk.rand(3, 2), driver="gelsd")
    yield Sample(_gen(mk, 4, 3, 2), mk.rand(2, 4, 2), driver="gelsd")
    yield Sample(_gen(mk, 4, 3), mk.rand(4), driver="gelss", kind="vector")
    yield Sample(_gen(mk, 3, 3), mk.rand(3, 2), driver="gelsd")
    yield Sample(np.ones((4, 3)), mk.rand(4, 2), driver="gelsd", kind="singular")
    yield Sample(mk.rand(0, 3), mk.rand(0, 2), kind="empty")
    yield Sample(mk.rand(3, 3), mk.rand(4, 2), kind="error")
    yield Sample(mk.rand(3, 3), mk.rand(3, 2), driver="bad", kind="error")


def _lstsq_op(lib, A, B, **kw):
    r = lib.linalg.lstsq(A, B, **kw)
    return r.solution, r.residuals, r.rank   # the singular values (no gradient): see linalg.lstsq(sv)


_add("linalg.lstsq", _lstsq_op, _lstsq_samples,
     skip={"nonfinite": _NONSMOOTH, "ties": "rank-deficient", "noncontig": "same values, covered by basic",
           "infgrad": _INFGRAD}, gradcheck_kinds=("basic", "vector"))
_add("linalg.lstsq(sv)", _linalg("lstsq"), _lstsq_samples, grad=False,
     skip={"nonfinite": _NONSMOOTH, "ties": "rank-deficient", "noncontig": "same values, covered by basic"})


def _mnorm_samples(mk):
    for o in ("nuc", 2, -2):
        yield Sample(_gen(mk, 3, 3), o)
        yield Sample(_gen(mk, 4, 2, 2), o)
        yield Sample(_gen(mk, 3, 2), o, (1, 0), True)
    yield Sample(_gen(mk, 3, 2, 2), "nuc", (0, 2))
    yield Sample(mk.rand(0, 3), "nuc", kind="empty")
    yield Sample(mk.rand(3), "nuc", kind="error")
    yield Sample(mk.rand(2, 3), "bad", kind="error")


_add("linalg.matrix_norm(svd)", _linalg("matrix_norm"), _mnorm_samples,
     skip={"nonfinite": _NONSMOOTH, "ties": "repeated singular values"}, gradcheck_kinds=("basic",))
_add("linalg.norm(svd)", _linalg("norm"),
     lambda mk: [Sample(_gen(mk, 3, 3), "nuc"), Sample(_gen(mk, 3, 2), 2), Sample(_gen(mk, 3, 2), -2),
                 Sample(_gen(mk, 2, 3, 2), "nuc", (1, 2)), Sample(mk.rand(2, 3, 3), "nuc", kind="error")],
     skip={"nonfinite": _NONSMOOTH, "ties": "repeated singular values"}, gradcheck_kinds=("basic",))
_add("nuclear_norm", function("nuclear_norm"),
     lambda mk: [Sample(_gen(mk, 3, 3)), Sample(_gen(mk, 3, 2), keepdim=True), Sample(_gen(mk, 2, 3, 2), (1, 2))],
     skip={"nonfinite": _NONSMOOTH, "ties": "repeated singular values"}, gradcheck_kinds=("basic",))
_add("frobenius_norm", function("frobenius_norm"),
     lambda mk: [Sample(mk.rand(3, 4), (0, 1)), Sample(mk.rand(3, 4), (1,), True), Sample(mk.rand(2, 3, 4), (0, 2)),
                 Sample(mk.rand(2, 3), (0, 1, 1), kind="error")])


def _vnorm_samples(mk):
    for o in (2, 1, -1, 0, INF, -INF, 3, 0.5, -2):
        yield Sample(mk.rand(2, 3) + 0.1, o)
    yield Sample(mk.rand(2, 3), -1, 1)


_add("linalg.vector_norm(ords)", _linalg("vector_norm"), _vnorm_samples, skip={"ties": "kinks of |x|"})


# ------------------------------------------------------------------------------- tensor ops

_add("linalg.tensorinv", _linalg("tensorinv"),
     lambda mk: [Sample(_sq(mk, 4).reshape(4, 2, 2), ind=1), Sample(_sq(mk, 6).reshape(2, 3, 6)),
                 Sample(mk.rand(4, 6), ind=1, kind="error"), Sample(mk.rand(4, 4), ind=0, kind="error")],
     skip={"nonfinite": _NONSMOOTH}, view=True)
_add("linalg.tensorsolve", _linalg("tensorsolve"),
     lambda mk: [Sample(_sq(mk, 6).reshape(2, 3, 6), mk.rand(2, 3)),
                 Sample(_sq(mk, 4).reshape(4, 2, 2), mk.rand(4)),
                 Sample(_sq(mk, 6).reshape(6, 2, 3), mk.rand(2, 3), dims=(0,)),
                 Sample(mk.rand(2, 3, 5), mk.rand(2, 3), kind="error")], skip={"nonfinite": _NONSMOOTH}, view=True)
_add("linalg.vander", _linalg("vander"),
     lambda mk: [Sample(mk.rand(3)), Sample(mk.rand(2, 3)), Sample(mk.rand(3), N=5), Sample(mk.rand(3), N=2),
                 Sample(mk.arr(1.0), kind="error"), Sample(mk.rand(3), N=1, kind="error")])
_VANDER_BUG = ("PyTorch 2.13's own torch.vander backward raises 'modified by an inplace operation' (its cumprod "
               "writes into a saved view); retrograd's gradient is checked by gradcheck")
_add("torch.vander", function("vander"),
     lambda mk: [Sample(mk.rand(3)), Sample(mk.rand(3), N=4), Sample(mk.rand(3), 2, True), Sample(mk.rand(3), N=1),
                 Sample(mk.rand(0), kind="empty"), Sample(mk.rand(2, 3), kind="error")],
     skip={"grad": _VANDER_BUG, "gradgrad": _VANDER_BUG})
_add("linalg.diagonal", _linalg("diagonal"),
     lambda mk: [Sample(mk.rand(3, 3)), Sample(mk.rand(2, 3, 4), offset=1), Sample(mk.rand(2, 3, 4), dim1=0, dim2=2),
                 Sample(mk.rand(3), kind="error")], view=True)


def _hh_samples(mk):
    a, tau, _, _ = (lambda r: r)(_geqrf_np(mk.rand(4, 3)))
    yield Sample(a, tau)
    a2, tau2 = _geqrf_np(mk.rand(3, 3))[:2]
    yield Sample(a2, tau2[:2])
    a3, tau3 = _geqrf_np(mk.rand(2, 4, 2))[:2]
    yield Sample(a3, tau3)
    yield Sample(mk.rand(2, 3), mk.rand(1), kind="error")
    yield Sample(mk.rand(3, 2), mk.rand(3), kind="error")


def _geqrf_np(x):
    from scipy.linalg import lapack
    m, n = x.shape[-2:]
    flat = x.reshape(-1, m, n)
    outs = [lapack.dgeqrf(a)[:2] for a in flat]
    return (np.stack([o[0] for o in outs]).reshape(x.shape), np.stack([o[1] for o in outs]).reshape(x.shape[:-2] + (min(m, n),)),
            None, None)


_add("linalg.householder_product", _linalg("householder_product"), _hh_samples,
     skip={"nonfinite": _NONSMOOTH, "infgrad": _INFGRAD},
     gradcheck_kinds=("basic",))
_add("orgqr", method("orgqr"), lambda mk: [Sample(*_geqrf_np(mk.rand(4, 3))[:2])],
     skip={"nonfinite": _NONSMOOTH, "infgrad": _INFGRAD},
     gradcheck_kinds=("basic",))
_add("ormqr", method("ormqr"),
     lambda mk: [Sample(*_geqrf_np(mk.rand(4, 3))[:2], mk.rand(4, 2)),
                 Sample(*_geqrf_np(mk.rand(4, 3))[:2], mk.rand(2, 4), left=False),
                 Sample(*_geqrf_np(mk.rand(3, 3))[:2], mk.rand(3, 2), transpose=True)],
     skip={"nonfinite": _NONSMOOTH, "infgrad": _INFGRAD}, gradcheck_kinds=("basic",))


def _geqrf_op(lib, A):
    a, tau = A.geqrf()
    return a, tau


_add("geqrf", _geqrf_op, lambda mk: [Sample(mk.rand(4, 3)), Sample(mk.rand(2, 3, 4)), Sample(mk.rand(3),
                                                                                            kind="error")],
     grad=False, skip={"nonfinite": _NONSMOOTH, "ties": "rank-deficient"}, covers=("torch.geqrf",))


def _ldl_samples(mk):
    yield Sample(_sym(mk, 3))
    yield Sample(_spd(mk, 4, 2))
    yield Sample(mk.rand(2, 3), kind="error")


_add("linalg.ldl_factor", _linalg("ldl_factor"), _ldl_samples, grad=False,
     skip={"nonfinite": _NONSMOOTH, "ties": "singular", "noncontig": "symmetric"})
_add("linalg.ldl_factor_ex", _linalg("ldl_factor_ex"), _ldl_samples, grad=False,
     skip={"nonfinite": _NONSMOOTH, "ties": "singular", "noncontig": "symmetric"})


def _ldl_solve_op(lib, A, B, **kw):
    LD, piv = lib.linalg.ldl_factor(A, **kw)
    return lib.linalg.ldl_solve(LD, piv, B, **kw)


_add("linalg.ldl_solve", _ldl_solve_op,
     lambda mk: [Sample(_sym(mk, 3), mk.rand(3, 2)), Sample(_spd(mk, 3, 2), mk.rand(2, 3, 1)),
                 Sample(_sym(mk, 3), mk.rand(4, 2), kind="error")], grad=False,
     skip={"nonfinite": _NONSMOOTH, "ties": "singular", "noncontig": "symmetric"})


_add("renorm", method("renorm"),
     lambda mk: [Sample(mk.rand(3, 4), 2, 0, 1.0), Sample(mk.rand(3, 4), 1, 1, 2.0), Sample(mk.rand(2, 3, 2), 3, -1, 1.5),
                 Sample(mk.rand(3, 4), 2, 0, 100.0), Sample(mk.rand(3), 2, 0, 1.0, kind="error"),
                 Sample(mk.rand(3, 4), -1, 0, 1.0, kind="error")],
     inplace="renorm_", covers=("torch.renorm",),
     skip={"nonfinite": "inf/nan entries: PyTorch's renorm backward kernel and retrograd's composite of the norm "
                        "place nan differently"})


# --- removed functions: PyTorch raises (Tensor.eig / symeig / lstsq) ---

_add("eig", method("eig"), lambda mk: [Sample(mk.rand(3, 3), kind="error")], grad=False)
_add("symeig", method("symeig"), lambda mk: [Sample(mk.rand(3, 3), kind="error")], grad=False)
_add("lstsq", method("lstsq"), lambda mk: [Sample(mk.rand(3, 3), mk.rand(3, 3), kind="error")], grad=False)
_add("solve", method("solve"), lambda mk: [Sample(mk.rand(3, 3), mk.rand(3, 3), kind="error")], grad=False)
_add("torch.matrix_rank", function("matrix_rank"), lambda mk: [Sample(mk.rand(3, 3), kind="error")], grad=False)


_known("linalg.solve_ex logdet", "gradgrad", "singular",
       "an exactly singular A: the second derivative is inf/nan garbage in PyTorch; retrograd's double backward "
       "raises LinAlgError from its regular solve")

# the fuzzer's inf/nan upstream gradients meet the same difference as the entries' "infgrad" kind
for _info in OPS:
    if "infgrad" in _info.skip:
        _known(_info.name, "fuzz:grad fuzz:gradgrad", "infgrad", _info.skip["infgrad"])
