"""torch.linalg's decompositions beyond the op table: named results, the older top-level
spellings, PyTorch's rules for lstsq's fields, complex inputs (values and gradients), ill-defined
gradients, removed functions, and the distributions' use of the public ops."""
import warnings

import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from helpers import torch, needs_torch

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _np(t):
    return np.asarray(t.detach().numpy())


def _rng(seed=0):
    return np.random.default_rng(seed)


def _cplx(*shape, seed=0):
    r = _rng(seed)
    return r.standard_normal(shape) + 1j * r.standard_normal(shape)


# --- named results ---------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("call", [
    lambda L, A, S: L.linalg.svd(A), lambda L, A, S: L.linalg.eigh(S), lambda L, A, S: L.linalg.eig(A),
    lambda L, A, S: L.linalg.qr(A), lambda L, A, S: L.linalg.slogdet(A), lambda L, A, S: L.linalg.cholesky_ex(S),
    lambda L, A, S: L.linalg.inv_ex(A), lambda L, A, S: L.linalg.lu_factor(A), lambda L, A, S: L.linalg.lu_factor_ex(A),
    lambda L, A, S: L.linalg.lu(A), lambda L, A, S: L.linalg.lstsq(A, S), lambda L, A, S: L.linalg.solve_ex(A, S),
    lambda L, A, S: L.linalg.ldl_factor(S), lambda L, A, S: L.linalg.ldl_factor_ex(S), lambda L, A, S: L.svd(A),
    lambda L, A, S: L.qr(A), lambda L, A, S: L.slogdet(A), lambda L, A, S: L.geqrf(A),
    lambda L, A, S: L.triangular_solve(S, A), lambda L, A, S: L.lu_unpack(*L.linalg.lu_factor(A))])
def test_named_results_match_torch(call):
    a = _rng().standard_normal((3, 3)) + 3 * np.eye(3)
    s = a @ a.T
    r = call(retrograd, retrograd.tensor(a), retrograd.tensor(s))
    t = call(torch, torch.tensor(a), torch.tensor(s))
    assert type(r).__name__ == type(t).__name__
    assert type(r).__module__ == "torch.return_types"
    assert len(r) == len(t)
    for k, f in enumerate(r._fields):
        assert getattr(r, f).shape == tuple(getattr(t, f).shape) == tuple(t[k].shape)
    assert repr(r).startswith(f"torch.return_types.{type(t).__name__}(")


@needs_torch
def test_torch_svd_returns_V_and_zero_vectors_without_compute_uv():
    a = _rng(1).standard_normal((4, 3))
    for kw in ({}, {"some": False}, {"compute_uv": False}):
        r, t = retrograd.svd(retrograd.tensor(a), **kw), torch.svd(torch.tensor(a), **kw)
        for x, y in zip(r, t):
            assert x.shape == tuple(y.shape)
            assert np.allclose(np.abs(_np(x)), np.abs(y.numpy()))
    U, S, V = retrograd.svd(retrograd.tensor(a))
    assert np.allclose(_np(U) * _np(S) @ _np(V).T, a)


@needs_torch
def test_inverse_is_column_major_as_torch():
    a = _rng(2).standard_normal((2, 3, 3)) + 3 * np.eye(3)
    r, t = retrograd.linalg.inv(retrograd.tensor(a)), torch.linalg.inv(torch.tensor(a))
    assert r.stride() == t.stride()
    x = retrograd.tensor(a[0]).requires_grad_()
    assert type(retrograd.linalg.tensorinv(x.reshape(3, 3), ind=1).grad_fn).__name__ == "ReshapeAliasBackward0"


# --- lstsq -----------------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss", None])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 5, 3)])
def test_lstsq_fields_follow_torch(driver, shape):
    r = _rng(3)
    a, b = r.standard_normal(shape), r.standard_normal(shape[:-1] + (2,))
    got = retrograd.linalg.lstsq(retrograd.tensor(a), retrograd.tensor(b), driver=driver)
    exp = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for f in got._fields:
        g, e = getattr(got, f), getattr(exp, f)
        assert g.shape == tuple(e.shape), f
        assert str(g.dtype) == str(e.dtype), f
        assert np.allclose(_np(g), e.numpy(), atol=1e-10), f


@needs_torch
def test_lstsq_rank_deficient_gives_the_minimum_norm_solution():
    a = np.ones((4, 3))
    b = _rng(4).standard_normal((4, 2))
    for d in ("gelsy", "gelsd", "gelss"):
        got = retrograd.linalg.lstsq(retrograd.tensor(a), retrograd.tensor(b), driver=d)
        exp = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=d)
        assert np.allclose(_np(got.solution), exp.solution.numpy())
        assert int(got.rank) == int(exp.rank) == 1
        assert got.residuals.shape == tuple(exp.residuals.shape) == (0,)


# --- tolerances ------------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("kw", [{}, {"atol": 1.0}, {"rtol": 0.3}, {"atol": 0.5, "rtol": 0.6}, {"hermitian": True},
                                {"tol": 1.5}])
def test_matrix_rank_and_pinv_tolerances(kw):
    r = _rng(5)
    q, _ = np.linalg.qr(r.standard_normal((4, 4)))
    a = q @ np.diag([3.0, 1.2, 0.7, 1e-17]) @ q.T
    got = retrograd.linalg.matrix_rank(retrograd.tensor(a), **kw)
    exp = torch.linalg.matrix_rank(torch.tensor(a), **kw)
    assert int(got) == int(exp) and str(got.dtype) == str(exp.dtype)
    kw.pop("tol", None)
    assert np.allclose(_np(retrograd.linalg.pinv(retrograd.tensor(a), **kw)), torch.linalg.pinv(torch.tensor(a), **kw))


@needs_torch
@pytest.mark.parametrize("shape", [(3, 2), (2, 3), (3, 3), (2, 4, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_pinv_gradient_as_torch_with_infinite_upstream(shape, dtype):
    """pinv's backward is PyTorch's formula, term by term: with an inf in the upstream
    gradient the NaN and inf positions are torch's (a textbook sum of its three terms gave
    inf where torch has NaN), the finite values equal within rounding."""
    r = _rng(11)
    a = r.standard_normal(shape)
    up = r.standard_normal(shape[:-2] + shape[-2:][::-1])
    if dtype.startswith("complex"):
        a = a + 1j * r.standard_normal(shape)
        up = up + 1j * r.standard_normal(up.shape)
    a, up = a.astype(dtype), up.astype(dtype)
    up.reshape(-1)[1] = np.inf
    got, want = [], []
    for lib, out in ((retrograd, got), (torch, want)):
        x = lib.tensor(a, requires_grad=True)
        lib.linalg.pinv(x).backward(lib.tensor(up))
        out.append(np.asarray(x.grad.detach().numpy()))
    g, w = got[0], want[0]
    assert np.array_equal(np.isnan(g), np.isnan(w)) and np.array_equal(np.isinf(g), np.isinf(w))
    assert np.isnan(w).any()
    fin = np.isfinite(w)
    np.testing.assert_allclose(g[fin], w[fin], rtol=1e-4 if dtype == "float32" else 1e-10, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_single_precision_eig_is_computed_in_single_precision(dtype):
    """float32 / complex64 eigenvalues come from LAPACK's single-precision geev, as PyTorch's
    do: on this ill-conditioned matrix (condition number 52, from the fuzzer) NumPy's
    double-precision eig rounded to float32 is 1.0e-6 from torch's values."""
    a = np.array([[-0.4335240125656128, 1.5610973834991455, -1.09136962890625],
                  [0.49274858832359314, -1.6639386415481567, 1.3305765390396118],
                  [1.1483932733535767, -1.0425221920013428, 1.5059369802474976]]).astype(dtype)
    got = np.sort_complex(_np(retrograd.linalg.eigvals(retrograd.tensor(a))))
    want = np.sort_complex(torch.linalg.eigvals(torch.tensor(a)).numpy())
    assert got.dtype == want.dtype == np.complex64
    double = np.sort_complex(np.linalg.eigvals(a.astype(np.complex128))).astype(np.complex64)
    if dtype == "float32":
        assert np.abs(double - want).max() > 5e-7          # (what the double path gave)
    assert np.abs(got - want).max() <= 3e-7
    w, v = retrograd.linalg.eig(retrograd.tensor(a))
    np.testing.assert_allclose(_np(retrograd.tensor(a).to(w.dtype) @ v), _np(v * w), atol=2e-6)


@needs_torch
def test_cond_of_a_singular_matrix_is_inf():
    z = np.array([[1.0, 2.0], [2.0, 4.0]])
    for p in (1, -1, np.inf, "fro"):
        assert float(retrograd.linalg.cond(retrograd.tensor(z), p)) == float(torch.linalg.cond(torch.tensor(z), p))
        assert float(retrograd.linalg.cond(retrograd.tensor(z), p)) == np.inf


# --- complex inputs --------------------------------------------------------------------------

_H = (lambda a: a @ a.conj().T + 3 * np.eye(3))(_cplx(3, 3, seed=6))
_A = _cplx(3, 3, seed=7)
_B = _cplx(3, 2, seed=8)
COMPLEX = {
    "cholesky": (lambda L, h: L.linalg.cholesky((h + h.mH) / 2), _H),
    "eigvalsh": (lambda L, h: L.linalg.eigvalsh((h + h.mH) / 2), _H),
    "eigh": (lambda L, h: (lambda r: (r.eigenvalues, r.eigenvectors.abs()))(L.linalg.eigh((h + h.mH) / 2)), _H),
    "svdvals": (lambda L, a: L.linalg.svdvals(a), _A),
    "svd": (lambda L, a: (lambda r: r.U @ r.Vh)(L.linalg.svd(a)), _A),
    "qr": (lambda L, a: L.linalg.qr(a), _A),
    "slogdet": (lambda L, a: L.linalg.slogdet(a), _A),
    "pinv": (lambda L, a: L.linalg.pinv(a), _A),
    "matrix_exp": (lambda L, a: L.linalg.matrix_exp(a), _A),
    "lu_factor": (lambda L, a: L.linalg.lu_factor(a), _A),
    "solve_triangular": (lambda L, a, b: L.linalg.solve_triangular(a, b, upper=True), _A + 3 * np.eye(3), _B),
    "lstsq": (lambda L, a, b: L.linalg.lstsq(a, b).solution, _A, _B),
    "eigvals": (lambda L, a: L.linalg.eigvals(a), _A),
    "nuc": (lambda L, a: L.linalg.matrix_norm(a, "nuc"), _A),
    "inv": (lambda L, a: L.linalg.inv(a), _A),
    "inv_ex": (lambda L, a: L.linalg.inv_ex(a), _A),
    "solve": (lambda L, a, b: L.linalg.solve(a, b), _A, _B),
    "cholesky_inverse": (lambda L, a: L.cholesky_inverse(a.tril()), np.linalg.cholesky(_H)),
    "logdet": (lambda L, a: L.logdet(a), _H),
}


def _run(lib, fn, arrays):
    ts = [lib.tensor(a).requires_grad_(True) for a in arrays]
    out = fn(lib, *ts)
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o.requires_grad]
    loss = sum(((o.abs() ** 2).sum() if o.is_complex() else o.sum()) for o in outs)
    return [o.detach().numpy() for o in outs], [g.numpy() for g in lib.autograd.grad(loss, ts)]


@needs_torch
@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_values_and_gradients_match_torch(name):
    fn, *arrays = COMPLEX[name]
    rv, rg = _run(retrograd, fn, arrays)
    tv, tg = _run(torch, fn, arrays)
    assert len(rv) == len(tv)
    for a, b in zip(rv + rg, tv + tg):
        assert a.dtype == b.dtype and np.allclose(a, b, atol=1e-9)


# --- ill-defined gradients -------------------------------------------------------------------

def test_complex_singular_vectors_gauge_dependence_raises_as_torch():
    a = retrograd.tensor(_A).requires_grad_()
    U, S, Vh = retrograd.linalg.svd(a)
    with pytest.raises(RuntimeError, match=r"svd_backward: The singular vectors in the complex case are specified up "
                                           r"to multiplication by e\^\{i phi\}"):
        U.real.sum().backward()
    L, V = retrograd.linalg.eig(retrograd.tensor(_A).requires_grad_())
    with pytest.raises(RuntimeError, match=r"linalg_eig_backward: The eigenvectors in the complex case"):
        V.real.sum().backward()


@needs_torch
def test_repeated_singular_values_give_nan_vector_gradients_as_torch():
    for lib in (retrograd, torch):
        a = lib.eye(3, dtype=lib.float64).requires_grad_()
        U, S, Vh = lib.linalg.svd(a)
        U.sum().backward(retain_graph=True)
        assert np.isnan(a.grad.numpy()).all()
        a.grad = None
        S.sum().backward()   # the singular values alone stay differentiable
        assert np.allclose(a.grad.numpy(), np.eye(3))


@needs_torch
def test_qr_mode_r_backward_raises_as_torch():
    for lib in (retrograd, torch):
        a = lib.tensor(_rng().standard_normal((4, 3))).requires_grad_()
        with pytest.raises(RuntimeError, match="The derivative of linalg.qr depends on Q, which is not computed when "
                                               "mode='r'"):
            lib.linalg.qr(a, mode="r").R.sum().backward()


# --- removed functions -----------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("call", [lambda L, x: x.eig(), lambda L, x: x.symeig(), lambda L, x: x.lstsq(x),
                                  lambda L, x: L.symeig(x), lambda L, x: x.solve(x), lambda L, x: L.matrix_rank(x)])
def test_removed_functions_raise_torch_message(call):
    with pytest.raises(RuntimeError) as r:
        call(retrograd, retrograd.eye(2))
    with pytest.raises(RuntimeError) as t:
        call(torch, torch.eye(2))
    assert str(r.value) == str(t.value)


# --- gradchecks of the composites (no torch needed) ----------------------------------------

def test_gradchecks():
    r = _rng(9)
    a = retrograd.tensor(r.standard_normal((3, 3)) + 3 * np.eye(3)).requires_grad_()
    b = retrograd.tensor(r.standard_normal((3, 2))).requires_grad_()
    for f, args in [(lambda x: retrograd.linalg.matrix_power(x, -3), (a,)),
                    (lambda x: retrograd.linalg.matrix_exp(x), (a,)),
                    (lambda x, y: retrograd.linalg.lu_solve(*retrograd.linalg.lu_factor(x), y), (a, b)),
                    (lambda x, y: retrograd.linalg.lstsq(x, y, driver="gelsd").solution, (a, b)),
                    (lambda x: retrograd.linalg.cond(x, "nuc"), (a,)),
                    (lambda x: retrograd.linalg.matrix_norm(x, -2), (a,))]:
        assert gradcheck(f, args)
        assert gradgradcheck(f, args)


def test_distributions_use_the_public_linear_algebra():
    from retrograd.distributions import _ops
    for name in ("cholesky", "cholesky_ex", "solve_triangular", "slogdet", "eigvalsh", "cholesky_solve",
                 "cholesky_inverse"):
        assert not hasattr(_ops, name)
    d = retrograd.distributions.MultivariateNormal(retrograd.zeros(2), scale_tril=retrograd.eye(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert d.log_prob(retrograd.zeros(2)).shape == ()


HALF_CALLS = {
    "qr": lambda L, A, B: L.linalg.qr(A), "eig": lambda L, A, B: L.linalg.eig(A),
    "eigvals": lambda L, A, B: L.linalg.eigvals(A), "lu": lambda L, A, B: L.linalg.lu(A),
    "lu_factor": lambda L, A, B: L.linalg.lu_factor(A), "pinv": lambda L, A, B: L.linalg.pinv(A),
    "slogdet": lambda L, A, B: L.linalg.slogdet(A), "lstsq": lambda L, A, B: L.linalg.lstsq(A, B),
    "solve_triangular": lambda L, A, B: L.linalg.solve_triangular(A, B, upper=True),
    "inv_ex": lambda L, A, B: L.linalg.inv_ex(A), "geqrf": lambda L, A, B: L.geqrf(A),
    "householder_product": lambda L, A, B: L.linalg.householder_product(A, A[0, :2]),
    "ldl_factor": lambda L, A, B: L.linalg.ldl_factor(A), "cholesky_inverse": lambda L, A, B: L.cholesky_inverse(A),
    "cholesky_solve": lambda L, A, B: L.cholesky_solve(B, A), "matrix_rank": lambda L, A, B: L.linalg.matrix_rank(A),
    "svdvals": lambda L, A, B: L.linalg.svdvals(A), "cond": lambda L, A, B: L.linalg.cond(A),
    "nuc": lambda L, A, B: L.linalg.matrix_norm(A, "nuc"), "eigvalsh": lambda L, A, B: L.linalg.eigvalsh(A),
    "cholesky": lambda L, A, B: L.linalg.cholesky(A), "cdist": lambda L, A, B: L.cdist(A, A),
    "pdist": lambda L, A, B: L.pdist(A), "svd_driver": lambda L, A, B: L.linalg.svd(A.float(), driver="gesvd"),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(HALF_CALLS))
def test_half_inputs_raise_as_torch(name):
    a, b = np.eye(3) * 2, np.ones((3, 2))
    with pytest.raises(Exception) as r:
        HALF_CALLS[name](retrograd, retrograd.tensor(a).half(), retrograd.tensor(b).half())
    with pytest.raises(Exception) as t:
        HALF_CALLS[name](torch, torch.tensor(a).half(), torch.tensor(b).half())
    assert type(r.value).__name__ == type(t.value).__name__
    assert str(r.value).splitlines()[0] == str(t.value).splitlines()[0]


@needs_torch
def test_matrix_exp_of_half_is_half():
    # PyTorch 2.13 accepts half input (its CPU values for it are wrong, e.g. -2.1e4 for this
    # matrix); retrograd computes in float32 and rounds once
    import scipy.linalg
    a = np.array([[0.5, -0.25], [0.125, 0.25]])
    r = retrograd.linalg.matrix_exp(retrograd.tensor(a).half())
    assert str(r.dtype) == str(torch.linalg.matrix_exp(torch.tensor(a).half()).dtype) == "torch.float16"
    assert np.allclose(r.float().numpy(), scipy.linalg.expm(a), atol=2e-3)


def _indefinite(rng, n, complex_=False):
    m = rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n)) if complex_ else 0)
    a = m @ m.conj().T
    a[n - 2, n - 2] = -5.0          # the minor of order n - 1 fails
    return a


@needs_torch
@pytest.mark.parametrize("n,complex_,upper", [(2, False, False), (5, False, True), (13, True, False),
                                              (40, False, False), (40, True, True)])
def test_cholesky_ex_leaves_what_lapack_leaves_on_failure(n, complex_, upper):
    # the finished columns, the failing pivot's Schur complement (real part) and the later
    # columns untouched, as PyTorch's LAPACK returns them (and info, the failing order)
    a = _indefinite(np.random.default_rng(n), n, complex_)
    T = torch.linalg.cholesky_ex(torch.tensor(a), upper=upper)
    R = retrograd.linalg.cholesky_ex(retrograd.tensor(a), upper=upper)
    assert R.info.item() == T.info.item() == n - 1
    np.testing.assert_allclose(R.L.numpy(), T.L.numpy(), rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("name", ["linalg.cholesky", "cholesky"])
def test_cholesky_upper_reads_the_upper_triangle(name):
    # a matrix whose triangles differ: upper=True factors the upper one, as LAPACK's potrf('U')
    a = np.array([[4.0, 1.0, -0.5], [1.5, 5.0, 0.25], [-1.0, 0.5, 6.0]])
    f = {"linalg.cholesky": lambda lib, x, u: lib.linalg.cholesky(x, upper=u),
         "cholesky": lambda lib, x, u: lib.cholesky(x, upper=u)}[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for upper in (False, True):
            np.testing.assert_allclose(f(retrograd, retrograd.tensor(a), upper).numpy(),
                                       f(torch, torch.tensor(a), upper).numpy(), rtol=1e-12)


@needs_torch
def test_cholesky_upper_gradient_of_a_matrix_with_differing_triangles():
    # the factor comes from the upper triangle; the gradient is PyTorch's (symmetrised) one
    a = [[4.0, 1.0], [3.0, 5.0]]
    grads = []
    for lib in (torch, retrograd):
        t = lib.tensor(a, dtype=lib.float64, requires_grad=True)
        lib.linalg.cholesky(t, upper=True).sum().backward()
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
    spd = retrograd.tensor([[4.0, 1.0], [1.0, 5.0]], dtype=retrograd.float64, requires_grad=True)
    # (through a symmetric input: the derivative is defined on hermitian matrices)
    assert gradcheck(lambda x: retrograd.linalg.cholesky((x + x.mT) / 2, upper=True), (spd,))
    assert gradgradcheck(lambda x: retrograd.linalg.cholesky((x + x.mT) / 2, upper=True), (spd,))


@needs_torch
def test_cholesky_inverse_of_a_singular_factor_raises_pytorchs_error():
    for L in ([[2.0, 0, 0], [1, 0, 0], [1, 1, 3]], [[[1.0, 0], [0, 1]], [[1.0, 0], [1, 0]]]):
        for upper in (False, True):
            msgs = []
            for lib in (torch, retrograd):
                with pytest.raises(Exception) as e:
                    lib.cholesky_inverse(lib.tensor(L), upper=upper)
                msgs.append((type(e.value).__name__, str(e.value)))
            assert msgs[0] == msgs[1]


_HOUSEHOLDER_OPS = {
    "qr": lambda L, x: L.linalg.qr(x), "qr(complete)": lambda L, x: L.linalg.qr(x, mode="complete"),
    "qr(r)": lambda L, x: (L.linalg.qr(x, mode="r")[1],), "geqrf": lambda L, x: L.geqrf(x),
    "svd": lambda L, x: L.linalg.svd(x, full_matrices=False), "svd(full)": lambda L, x: L.linalg.svd(x),
    "torch.svd": lambda L, x: L.svd(x), "eigh": lambda L, x: L.linalg.eigh(x[..., :2, :2] + x[..., :2, :2].mT)}


@needs_torch
@pytest.mark.parametrize("name", list(_HOUSEHOLDER_OPS))
def test_householder_factorizations_read_negative_zero_as_zero(name):
    """A -0.0 where a Householder reflector starts: PyTorch's LAPACK gives it the sign of +0.0,
    the reference LAPACK behind NumPy / SciPy that of -0.0, which flipped whole columns of Q,
    U, Vh (and rows of R); the fuzzer's linalg.svd(raw) of [[-0.0, -0.82], [-0.81, 0.32],
    [0.5, 0.70], [1.0, 1.61]] found it."""
    fn = _HOUSEHOLDER_OPS[name]
    rng = np.random.default_rng(11)
    for i in range(40):
        shape = [(4, 2), (3, 3), (2, 2), (2, 3, 3), (5, 2)][i % 5]
        a = rng.standard_normal(shape)
        a[rng.random(shape) < 0.35] = 0.0
        if i % 3 == 0:
            a = np.round(a)
        a[a == 0] = -0.0
        got, want = fn(retrograd, retrograd.tensor(a)), fn(torch, torch.tensor(a))
        for r, t in zip(got, want):
            np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=1e-9, atol=1e-12)


def _hh_case(lib, a, t, c, up):
    A, T = lib.tensor(a, requires_grad=True), lib.tensor(t, requires_grad=True)
    Q = lib.linalg.householder_product(A, T)
    R = lib.ormqr(A, T, lib.tensor(c), left=True, transpose=True)
    gq = lib.autograd.grad(Q, (A, T), lib.tensor(up), retain_graph=True)
    gr = lib.autograd.grad(R.sum(), (A, T))
    return [Q.detach().numpy(), R.detach().numpy()] + [g.numpy() for g in gq + gr]


@needs_torch
def test_householder_product_ignores_entries_on_and_above_the_diagonal():
    """householder_product / ormqr read each reflector below the diagonal only: inf / nan on or
    above it (geqrf's R) leave the values alone and get an exactly zero gradient (they were
    multiplied by a zero mask: every value and gradient nan)."""
    rng = np.random.default_rng(5)
    for m, n, k in [(3, 2, 2), (4, 4, 4), (4, 3, 3), (2, 2, 2)]:   # (ormqr: k = n)
        a, t = rng.standard_normal((m, n)), rng.standard_normal(k)
        rows, cols = np.triu_indices(m, 0, n)
        a[rows, cols] = rng.choice([np.inf, -np.inf, np.nan], rows.size)
        c, up = rng.standard_normal((m, 2)), rng.standard_normal((m, n))
        got, want = _hh_case(retrograd, a, t, c, up), _hh_case(torch, a, t, c, up)
        for r, w in zip(got, want):
            np.testing.assert_allclose(r, w, rtol=1e-10, atol=1e-12)
        assert np.isfinite(got[0]).all()


def test_householder_product_gradgradcheck():
    rng = np.random.default_rng(6)
    A = retrograd.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    tau = retrograd.tensor(rng.standard_normal(2), requires_grad=True)
    assert gradcheck(retrograd.linalg.householder_product, (A, tau))
    assert gradgradcheck(retrograd.linalg.householder_product, (A, tau))
