"""Decompositions on the emulated CUDA device beyond the op table's few samples: batches,
singular and non-positive-definite matrices, complex inputs, tall and wide shapes, and errors,
each compared with the CPU (values, dtypes, gradients, exception type and wording); which ops
ask the host (only the routines CuPy lacks, through one explicit copy), and that the emulated
cupy.linalg / cupyx.scipy.linalg offer only CuPy 13's names."""
import numpy as np
import pytest

import retrograd
import retrograd.linalg as LA
from retrograd.cuda import _emulator as E

CUDA = retrograd.device("cuda", 0)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")


def _leaves(arrays, device, grad):
    out = []
    for a in arrays:
        t = retrograd.from_numpy(np.array(a, copy=True)).to(device)
        if grad and t.dtype.is_floating_point or grad and t.dtype.is_complex:
            t.requires_grad_()
        out.append(t)
    return out


def _flat(r):
    if isinstance(r, (tuple, list)):
        return [x for v in r for x in _flat(v)]
    return [r]


def _run(fn, arrays, device, grad):
    ts = _leaves(arrays, device, grad)
    try:
        outs = _flat(fn(*ts))
    except Exception as e:
        return e
    vals = [o.detach().cpu().numpy() for o in outs]
    devs = {str(o.device) for o in outs}
    grads = []
    if grad:
        diff = [o for o in outs if o.requires_grad]
        rng = np.random.default_rng(1)
        ups = [retrograd.from_numpy(rng.standard_normal(o.shape).astype(o.detach().cpu().numpy().dtype)).to(device)
               for o in diff]
        leaves = [t for t in ts if t.requires_grad]
        gs = retrograd.autograd.grad(diff, leaves, ups, allow_unused=True)
        grads = [None if g is None else g.cpu().numpy() for g in gs]
        devs |= {str(g.device) for g in gs if g is not None}
    return vals, grads, devs


def same(fn, *arrays, grad=False, rtol=1e-5, atol=1e-6):
    """``fn`` on the device gives the CPU's results (or raises the CPU's exception)."""
    cpu = _run(fn, arrays, "cpu", grad)
    dev = _run(fn, arrays, CUDA, grad)
    if isinstance(cpu, Exception):
        assert type(dev) is type(cpu) and str(dev) == str(cpu), (cpu, dev)
        return cpu
    assert not isinstance(dev, Exception), dev
    assert dev[2] == {"cuda:0"}, dev[2]
    for a, b in zip(cpu[0] + cpu[1], dev[0] + dev[1]):
        if a is None or b is None:
            assert a is None and b is None
            continue
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, equal_nan=True)
    return cpu


def _spd(rng, *shape, dtype=np.float64):
    a = rng.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


RNG = np.random.default_rng(0)


def test_cholesky_batches_with_a_failing_matrix():
    a = _spd(RNG, 3, 4, 4)
    a[1, 2, 2] = -50.0        # the leading minor of order 3 fails
    vals, _, _ = same(lambda x: LA.cholesky_ex(x), a)
    assert vals[1].tolist() == [0, 3, 0]
    same(lambda x: LA.cholesky_ex(x, upper=True), a)
    e = same(lambda x: LA.cholesky(x), a)
    assert "(Batch element 1)" in str(e) and "order 3" in str(e)
    same(lambda x: LA.cholesky(x, upper=True), _spd(RNG, 2, 3, 3).astype(np.complex128), grad=True)
    same(lambda x: LA.cholesky(x), _spd(RNG, 2, 5, 5, dtype=np.float32), grad=True, rtol=1e-4, atol=1e-5)


def test_lu_family_on_batches_tall_wide_and_singular():
    sq = RNG.standard_normal((3, 4, 4))
    sq[2, :, 1] = 0.0         # a zero column: U[2, 2] is exactly zero
    vals, _, _ = same(lambda x: LA.lu_factor_ex(x), sq)
    assert vals[2].tolist() == [0, 0, 2] and vals[1].dtype == np.int32
    e = same(lambda x: LA.lu_factor(x), sq)
    assert "U[2,2] is zero" in str(e)
    for shape in ((2, 5, 3), (2, 3, 5), (4, 4)):
        same(lambda x: LA.lu(x), RNG.standard_normal(shape), grad=True)
        same(lambda x: retrograd.lu_unpack(*LA.lu_factor(x)), RNG.standard_normal(shape), grad=True)
    a, b = RNG.standard_normal((2, 4, 4)), RNG.standard_normal((2, 4, 3))
    for left in (True, False):
        for adjoint in (False, True):
            rhs = b if left else np.swapaxes(b, -1, -2)
            same(lambda x, y: LA.lu_solve(*LA.lu_factor(x), y, left=left, adjoint=adjoint), a, rhs, grad=True)


def test_inverse_and_solve_of_singular_batches():
    a = RNG.standard_normal((3, 3, 3))
    a[0, 1] = a[0, 0]         # two equal rows
    vals, _, _ = same(lambda x: LA.inv_ex(x), a)
    assert vals[1].tolist()[0] != 0 and vals[1].tolist()[1:] == [0, 0]
    same(lambda x: LA.inv_ex(x, check_errors=True), a)
    same(lambda x: LA.inv(x), a)                                   # raises the CPU's error
    same(lambda x: LA.inv(x), a[1:], grad=True)
    b = RNG.standard_normal((3, 3, 2))
    same(lambda x, y: LA.solve_ex(x, y), a, b)
    same(lambda x, y: LA.solve_ex(x, y, check_errors=True), a, b)
    same(lambda x, y: LA.solve_ex(x, y), a[1:], b[1:], grad=True)
    same(lambda x, y: LA.solve_ex(x, y), a[1:], b[1:, :, 0], grad=True)   # a batch of vectors
    same(lambda x, y: LA.solve_ex(x, y), a[1:], RNG.standard_normal((2, 4, 2)))   # incompatible shapes


def test_triangular_solves_zero_pivots_unit_diagonals_and_broadcasting():
    a = np.triu(RNG.standard_normal((2, 4, 4)))
    a[1, 2, 2] = 0.0
    b = RNG.standard_normal((3, 1, 4, 2))
    same(lambda x, y: LA.solve_triangular(x, y, upper=True), a, b)       # inf / nan where LAPACK's are
    good = np.tril(RNG.standard_normal((4, 4))) + 4 * np.eye(4)
    for left in (True, False):
        for unit in (False, True):
            rhs = b[0, 0] if left else b[0, 0].T
            same(lambda x, y: LA.solve_triangular(x, y, upper=False, left=left, unitriangular=unit), good, rhs,
                 grad=True)
    same(lambda y, x: retrograd.triangular_solve(y, x, upper=False, transpose=True), b[0], good, grad=True)


def test_eigen_svd_qr_complex_and_tall():
    h = RNG.standard_normal((2, 4, 4)) + 1j * RNG.standard_normal((2, 4, 4))
    h = h + np.conj(np.swapaxes(h, -1, -2))
    same(lambda x: LA.eigh(x)[0], h, grad=True)
    same(lambda x: LA.eigvalsh(x, UPLO="U"), h)
    g = RNG.standard_normal((2, 3, 3))
    same(lambda x: LA.eig(x), g)
    same(lambda x: LA.eig(x)[0], g, grad=True)   # (a loss of the eigenvectors' phase is ill-defined)
    same(lambda x: LA.eigvals(x), g)
    for shape in ((2, 5, 3), (3, 5)):
        m = RNG.standard_normal(shape)
        same(lambda x: LA.svd(x, full_matrices=False), m, grad=True)
        same(lambda x: LA.svdvals(x), m, grad=True)
        same(lambda x: LA.qr(x, mode="complete"), m)
        same(lambda x: LA.qr(x), m, grad=True)
        same(lambda x: LA.qr(x, mode="r"), m)
        same(lambda x: LA.pinv(x), m, grad=True)
        same(lambda x: LA.matrix_rank(x, atol=1.0), m)
        same(lambda x: LA.lstsq(x, x[..., :2], driver="gelsd"), m, grad=True)
    same(lambda x: LA.pinv(x, hermitian=True), _spd(RNG, 2, 3, 3), grad=True)
    same(lambda x: LA.slogdet(x), g, grad=True)
    same(lambda x: LA.cond(x, 1), np.stack([g[0], np.zeros((3, 3))]))   # a singular member: inf


def test_hybrid_routines_on_batches():
    same(lambda x: LA.matrix_exp(x), RNG.standard_normal((2, 3, 3)), grad=True)
    same(lambda x: retrograd.geqrf(x), RNG.standard_normal((2, 4, 3)))
    s = _spd(RNG, 2, 4, 4)
    same(lambda x: LA.ldl_factor_ex(x), s)
    same(lambda x, y: LA.ldl_solve(*LA.ldl_factor(x), y), s, RNG.standard_normal((2, 4, 2)))


def _syncs(fn, *arrays, grad=True):
    ts = _leaves(arrays, CUDA, grad)
    with E.count_host_syncs() as log:
        outs = [o for o in _flat(fn(*ts)) if o.requires_grad]
        if outs:
            retrograd.autograd.grad([o.sum() for o in outs], [t for t in ts if t.requires_grad], allow_unused=True)
    return [w for w, _ in log]


def test_cusolver_ops_stay_on_the_device():
    a = _spd(RNG, 2, 3, 3, dtype=np.float32)
    b = RNG.standard_normal((2, 3, 2)).astype(np.float32)
    for fn in (LA.cholesky, lambda x: LA.cholesky_ex(x), LA.eigh, LA.svd, LA.qr, LA.inv, LA.pinv, LA.svdvals):
        assert _syncs(fn, a) == [], fn
    assert _syncs(LA.slogdet, a, grad=False) == []     # (its backward solves through an LU: see below)
    for fn in (lambda x, y: LA.solve_triangular(x, y, upper=False), lambda x, y: retrograd.cholesky_solve(y, x)):
        assert _syncs(fn, a, b) == [], fn
    # the LU routines: CuPy's lu_factor / lu_solve read cuSOLVER's info on the host after each
    # matrix, but nothing is copied there
    reads = {"lu_factor info", "lu_solve info"}
    for fn in (lambda x: LA.inv_ex(x), lambda x: LA.lu_factor_ex(x), LA.lu):
        assert "lu_factor info" in _syncs(fn, a, grad=False) and set(_syncs(fn, a, grad=False)) <= reads, fn
    for fn in (lambda x, y: LA.solve_ex(x, y), lambda x, y: LA.lu_solve(*LA.lu_factor_ex(x)[:2], y)):
        assert set(_syncs(fn, a, b, grad=False)) <= reads, fn


def test_routines_cupy_lacks_copy_to_the_host_once():
    a = RNG.standard_normal((2, 3, 3)).astype(np.float32)
    assert _syncs(LA.eigvals, a, grad=False) == ["get"]
    assert _syncs(LA.matrix_exp, a, grad=False) == ["get"]
    assert _syncs(LA.ldl_factor_ex, a, grad=False) == ["get"]
    assert _syncs(retrograd.geqrf, a, grad=False) == ["get"]


def test_emulated_linalg_modules_have_only_cupy_13s_names():
    xp = E.xp
    for name in ("cholesky", "qr", "svd", "eigh", "eigvalsh", "inv", "pinv", "solve", "lstsq", "det", "slogdet",
                 "matrix_rank", "norm", "tensorinv", "tensorsolve", "matrix_power"):
        assert callable(getattr(xp.linalg, name))
    for name in ("eig", "eigvals", "cond", "multi_dot", "svdvals", "matrix_norm"):
        with pytest.raises(AttributeError, match="emulated CuPy"):
            getattr(xp.linalg, name)
    sl = xp._scipy_linalg
    for name in ("expm", "ldl", "qr", "eig", "cho_factor", "get_lapack_funcs"):
        with pytest.raises(AttributeError, match="emulated CuPy"):
            getattr(sl, name)
    lu, piv = sl.lu_factor(xp.asarray(np.array([[0.0, 1.0], [2.0, 3.0]])))
    assert type(lu) is xp.ndarray and piv.tolist() == [1, 1]
    # cuBLAS's trsm: a zero pivot gives inf/nan, never an error (SciPy's raises)
    x = sl.solve_triangular(xp.asarray(np.array([[1.0, 2.0], [0.0, 0.0]])), xp.asarray(np.array([1.0, 1.0])))
    assert type(x) is xp.ndarray and np.isinf(x.get()).any()
