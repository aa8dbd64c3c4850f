"""Linear algebra and fills at the edges, each against PyTorch 2.13 (skipped without torch) and,
for gradients, by float64 gradcheck/gradgradcheck (no torch needed): bool kernels, BLAS's
beta/alpha = 0, integer scalars, dtype and shape messages, matmul's node names, views of the
contraction ops, multi_dot's order, det's gradient at singular matrices, torch.linalg.norm /
matrix_norm, and fills (fill_, zero_, the random fills) in autograd."""
import math
import warnings

import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from helpers import torch, needs_torch

INF, NAN = math.inf, math.nan


def both(arrays, requires_grad=False):
    """The same NumPy arrays as retrograd and torch tensors."""
    out = {}
    for lib in (retrograd, torch) if torch is not None else (retrograd,):
        frm = torch.from_numpy if lib is torch else retrograd.from_numpy
        out[lib] = [frm(np.array(a, copy=True)).requires_grad_(requires_grad and a.dtype.kind == "f") for a in arrays]
    return out


def raised(fn):
    try:
        fn()
    except Exception as e:
        return type(e).__name__, str(e).splitlines()[0]
    return None


def np_(t):
    return np.asarray(t.detach().numpy() if torch is not None and isinstance(t, torch.Tensor) else t.detach()._data)


def same(r, t, atol=1e-12):
    r, t = np_(r), np_(t)
    assert r.shape == t.shape and r.dtype == t.dtype, (r.shape, r.dtype, t.shape, t.dtype)
    np.testing.assert_allclose(r, t, atol=atol, rtol=1e-9, equal_nan=True)
    assert np.array_equal(np.isinf(r), np.isinf(t)) and np.array_equal(np.isnan(r), np.isnan(t))


rng = np.random.default_rng(0)
R = lambda *s: rng.uniform(-2, 2, s)            # noqa: E731
B = lambda *s: rng.uniform(-2, 2, s) > 0        # noqa: E731


# ------------------------------------------------------------------ error types and wording

ERRORS = [
    ("mm", lambda t, a, b: t.mm(a, b), [R(2, 3), R(4, 5)]),
    ("mm dtype", lambda t, a, b: t.mm(a, b), [R(2, 3), R(3, 4).astype(np.float32)]),
    ("matmul dtype", lambda t, a, b: t.matmul(a, b), [R(2, 2, 3), R(3, 4).astype(np.float32)]),
    ("matmul 1d-2d", lambda t, a, b: t.matmul(a, b), [R(4), R(3, 2)]),
    ("addmm input dtype", lambda t, c, a, b: t.addmm(c, a, b), [R(2, 4).astype(np.float32), R(2, 3), R(3, 4)]),
    ("addmm mat2 dtype", lambda t, c, a, b: t.addmm(c, a, b), [R(2, 4), R(2, 3), R(3, 4).astype(np.float32)]),
    ("addmm shape", lambda t, c, a, b: t.addmm(c, a, b), [R(2, 4), R(2, 3), R(4, 4)]),
    ("addmv dtype", lambda t, c, a, b: t.addmv(c, a, b), [R(2).astype(np.float32), R(2, 3), R(3)]),
    ("addmv shape", lambda t, c, a, b: t.addmv(c, a, b), [R(2), R(2, 3), R(4)]),
    ("baddbmm dtype", lambda t, c, a, b: t.baddbmm(c, a, b), [R(2, 2, 4).astype(np.float32), R(2, 2, 3), R(2, 3, 4)]),
    ("addbmm dtype", lambda t, c, a, b: t.addbmm(c, a, b), [R(2, 4).astype(np.float32), R(2, 2, 3), R(2, 3, 4)]),
    ("addr int float beta", lambda t, c, a, b: t.addr(c, a, b, beta=0.5), [np.ones((2, 3), np.int64),
                                                                          np.ones(2, np.int64), np.ones(3, np.int64)]),
    ("addr bool float alpha", lambda t, c, a, b: t.addr(c, a, b, alpha=2.0), [B(2, 3), B(2), B(3)]),
    ("cross dtype", lambda t, a, b: t.cross(a, b, dim=0), [R(3), R(3).astype(np.float32)]),
    ("solve shapes", lambda t, a, b: t.linalg.solve(a, b), [R(3, 3), R(4, 2)]),
    ("solve vector", lambda t, a, b: t.linalg.solve(a, b), [R(3, 3), R(4)]),
    ("solve batch", lambda t, a, b: t.linalg.solve(a, b), [R(2, 3, 3), R(3, 3, 2)]),
    ("vecdot int", lambda t, a, b: t.linalg.vecdot(a, b), [np.ones(3, np.int64), np.ones(3, np.int64)]),
    ("multi_dot shapes", lambda t, a, b, c: t.linalg.multi_dot([a, b, c]), [R(2, 3), R(3, 4), R(5, 2)]),
    ("multi_dot dtype", lambda t, a, b: t.linalg.multi_dot([a, b]), [R(3), R(3).astype(np.float32)]),
    ("multi_dot rank", lambda t, a, b: t.linalg.multi_dot([a, b]), [R(2, 2, 3), R(3, 4)]),
    ("matrix_norm ord", lambda t, a: t.linalg.matrix_norm(a, ord=3), [R(2, 3)]),
    ("matrix_norm 1-D", lambda t, a: t.linalg.matrix_norm(a), [R(3)]),
    ("matrix_norm int", lambda t, a: t.linalg.matrix_norm(a), [np.ones((2, 3), np.int64)]),
    ("norm 3-D with ord", lambda t, a: t.linalg.norm(a, ord=1), [R(2, 3, 4)]),
    ("norm dims", lambda t, a: t.linalg.norm(a, dim=(0, 1, 1)), [R(2, 3)]),
    ("inner shapes", lambda t, a, b: t.inner(a, b), [R(2, 3), R(4)]),
    ("tensordot shapes", lambda t, a, b: t.tensordot(a, b, dims=1), [R(2, 3), R(4, 2)]),
    ("tensordot negative dims", lambda t, a, b: t.tensordot(a, b, dims=([-1], [-2])), [R(2, 3), R(4, 2)]),
    ("addbmm shapes", lambda t, c, a, b: t.addbmm(c, a, b), [R(2, 4), R(2, 2, 3), R(2, 4, 4)]),
    ("addbmm batches", lambda t, c, a, b: t.addbmm(c, a, b), [R(2, 4), R(2, 2, 3), R(3, 3, 4)]),
    ("cross 0-d", lambda t, a, b: t.cross(a, b, dim=0), [np.array(1.0), np.array(2.0)]),
    ("solve singular", lambda t, a, b: t.linalg.solve(a, b), [np.array([[1.0, 2.0], [2.0, 4.0]]), R(2)]),
    ("solve singular batch", lambda t, a, b: t.linalg.solve(a, b), [np.zeros((2, 2, 3, 3)), R(3)]),
    ("inv singular", lambda t, a: t.linalg.inv(a), [np.array([[1.0, 2.0], [2.0, 4.0]])]),
    ("inv singular batch", lambda t, a: t.linalg.inv(a), [np.stack([np.eye(3), np.zeros((3, 3))])]),
]
for _name, _k, _shapes in [("mm", "addmm_impl_cpu_", [(2, 3), (3, 4)]), ("bmm", "bmm", [(2, 2, 3), (2, 3, 4)]),
                           ("mv", "addmv_impl_cpu", [(2, 3), (3,)]), ("dot", "dot", [(3,), (3,)]),
                           ("vdot", "dot", [(3,), (3,)]), ("inner", "dot", [(3,), (3,)]),
                           ("matmul", "bmm", [(2, 3), (2, 3, 4)]), ("matmul", "addmm_impl_cpu_", [(2, 2, 3), (3, 4)]),
                           ("matmul", "addmv_impl_cpu", [(2, 2, 3), (3,)]), ("trace", "trace", [(3, 3)]),
                           ("tensordot", "addmm_impl_cpu_", [(2, 3), (3, 2)])]:
    ERRORS.append((f"bool {_name} ({_k})",
                   (lambda n: lambda t, *xs: getattr(t, n)(*xs, dims=1) if n == "tensordot" else getattr(t, n)(*xs))(_name),
                   [B(*s) for s in _shapes]))
ERRORS.append(("bool cross", lambda t, a, b: t.cross(a, b, dim=0), [B(3), B(3)]))
ERRORS.append(("bool baddbmm", lambda t, c, a, b: t.baddbmm(c, a, b), [B(2, 2, 4), B(2, 2, 3), B(2, 3, 4)]))
ERRORS.append(("bool addbmm", lambda t, c, a, b: t.addbmm(c, a, b), [B(2, 4), B(2, 2, 3), B(2, 3, 4)]))


@needs_torch
@pytest.mark.parametrize("name,fn,arrays", ERRORS, ids=[e[0] for e in ERRORS])
def test_error_type_and_message(name, fn, arrays):
    ts = both(arrays)
    expected = raised(lambda: fn(torch, *ts[torch]))
    assert expected is not None, "torch accepts this: not an error case"
    assert raised(lambda: fn(retrograd, *ts[retrograd])) == expected


def test_shape_message_names_both_shapes():
    """The message torch users grep for, independent of torch being installed."""
    a, b = retrograd.zeros(2, 3), retrograd.zeros(4, 5)
    with pytest.raises(RuntimeError, match=r"^mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)$"):
        a.mm(b)
    with pytest.raises(RuntimeError, match=r"^expected m1 and m2 to have the same dtype, but got: double != float$"):
        a.double().mm(retrograd.zeros(3, 4))


# --------------------------------------------------------- add + product: beta, alpha, ints

ADDPROD = [
    ("addmm", (2, 4), (2, 3), (3, 4)), ("addmv", (2,), (2, 3), (3,)), ("addbmm", (2, 4), (2, 2, 3), (2, 3, 4)),
    ("baddbmm", (2, 2, 4), (2, 2, 3), (2, 3, 4)), ("addr", (2, 3), (2,), (3,)),
]


def _planted(shape):
    a = R(*shape)
    a.reshape(-1)[:2] = [NAN, INF]
    return a


@needs_torch
@pytest.mark.parametrize("name,si,s1,s2", ADDPROD, ids=[a[0] for a in ADDPROD])
@pytest.mark.parametrize("beta,alpha", [(0, 1), (0, 0), (2, 0), (0.5, -1.5)])
def test_nonfinite_operands_with_zero_scalars(name, si, s1, s2, beta, alpha):
    """beta = 0 never reads input; alpha = 0 never reads the product of the gemm/gemv based ops
    (addmm, addmv, addbmm) while baddbmm and addr still propagate nan: as in PyTorch."""
    ts = both([_planted(si), _planted(s1), _planted(s2)])
    r = getattr(retrograd, name)(*ts[retrograd], beta=beta, alpha=alpha)
    same(r, getattr(torch, name)(*ts[torch], beta=beta, alpha=alpha))


@needs_torch
@pytest.mark.parametrize("name,si,s1,s2", ADDPROD, ids=[a[0] for a in ADDPROD])
@pytest.mark.parametrize("beta,alpha", [(0.5, -2.0), (1.5, -2.7), (2, 3), (True, 1)])
def test_integer_inputs_truncate_scalars(name, si, s1, s2, beta, alpha):
    arrays = [rng.integers(-3, 4, s) for s in (si, s1, s2)]
    ts = both(arrays)
    expected = raised(lambda: getattr(torch, name)(*ts[torch], beta=beta, alpha=alpha))
    if expected is not None:  # addr refuses floating scalars for integer tensors
        assert raised(lambda: getattr(retrograd, name)(*ts[retrograd], beta=beta, alpha=alpha)) == expected
        return
    same(getattr(retrograd, name)(*ts[retrograd], beta=beta, alpha=alpha),
         getattr(torch, name)(*ts[torch], beta=beta, alpha=alpha))


@needs_torch
def test_addr_bool_and_mixed_dtypes():
    b = both([B(2, 3), B(2), B(3)])
    for beta, alpha in ((1, 1), (0, 1), (True, False)):
        same(retrograd.addr(*b[retrograd], beta=beta, alpha=alpha), torch.addr(*b[torch], beta=beta, alpha=alpha))
    m = both([R(2, 3).astype(np.float32), R(2), R(3)])
    same(retrograd.addr(*m[retrograd]), torch.addr(*m[torch]), atol=1e-6)


def test_addr_mixed_dtype_gradient():
    """addr promotes mixed dtypes; its backward must too (torch 2.13's raises here)."""
    c, v1 = retrograd.tensor(R(2, 3), requires_grad=True), retrograd.tensor(R(2), requires_grad=True)
    v2 = retrograd.tensor(R(3).astype(np.float32), requires_grad=True)
    out = retrograd.addr(c, v1, v2, alpha=2.0)
    assert out.dtype == retrograd.float64
    g = R(2, 3)
    gc, g1, g2 = retrograd.autograd.grad(out, (c, v1, v2), retrograd.tensor(g))
    np.testing.assert_allclose(g1.numpy(), 2 * g @ v2.detach().numpy().astype(np.float64), rtol=1e-6)
    np.testing.assert_allclose(g2.numpy(), 2 * g.T @ v1.detach().numpy(), rtol=1e-6)
    assert g2.dtype == retrograd.float32 and gc.dtype == retrograd.float64


@pytest.mark.parametrize("name,si,s1,s2", ADDPROD, ids=[a[0] for a in ADDPROD])
def test_addprod_gradcheck_with_zero_scalars(name, si, s1, s2):
    xs = [retrograd.tensor(R(*s), requires_grad=True) for s in (si, s1, s2)]
    for beta, alpha in ((0, 1.5), (2.0, 0), (0.5, -1.0)):
        fn = lambda *a: getattr(retrograd, name)(*a, beta=beta, alpha=alpha)  # noqa: E731
        assert gradcheck(fn, xs) and gradgradcheck(fn, xs)


# -------------------------------------------------------------------- matmul's node names

MATMUL_NODES = [((1, 2, 3), (4, 3, 2)), ((2, 3), (2, 3, 4)), ((2, 3), (1, 1, 3, 2)), ((1, 2, 3), (1, 3, 2)),
                ((1, 2, 3), (2, 1, 3, 2)), ((2, 3), (0, 3, 4)), ((1, 2, 3), (0, 3, 2)), ((2, 2, 3), (3, 4)),
                ((3,), (2, 3, 4)), ((1, 1, 2, 3), (4, 3, 2))]


@needs_torch
@pytest.mark.parametrize("sa,sb", MATMUL_NODES)
@pytest.mark.parametrize("which", [(True, False), (False, True), (True, True)])
def test_matmul_grad_fn_names(sa, sb, which):
    names = {}
    for lib in (retrograd, torch):
        a = lib.tensor(R(*sa)).requires_grad_(which[0])
        b = lib.tensor(R(*sb)).requires_grad_(which[1])
        out = a @ b
        names[lib] = type(out.grad_fn).__name__, out._base is not None
        if out.numel():
            g = lib.autograd.grad(out.sum(), [t for t, w in zip((a, b), which) if w])
            names[lib, "g"] = [tuple(x.shape) for x in g]
    assert names[retrograd] == names[torch]
    assert names.get((retrograd, "g")) == names.get((torch, "g"))


# ---------------------------------------------------- views of the contraction ops, multi_dot

VIEWS = [
    ("tensordot", lambda t, a, b: t.tensordot(a, b), [R(2, 3, 4), R(3, 4, 2)]),
    ("tensordot dims=0", lambda t, a, b: t.tensordot(a, b, dims=0), [R(2, 3), R(4)]),
    ("inner 1-D", lambda t, a, b: t.inner(a, b), [R(3), R(3)]),
    ("inner 2-D", lambda t, a, b: t.inner(a, b), [R(2, 3), R(4, 3)]),
    ("multi_dot", lambda t, a, b, c: t.linalg.multi_dot([a, b, c]), [R(2, 3), R(3, 4), R(4, 2)]),
    ("multi_dot vectors", lambda t, a, b, c: t.linalg.multi_dot([a, b, c]), [R(3), R(3, 4), R(4)]),
    ("multi_dot 4", lambda t, *m: t.linalg.multi_dot(list(m)), [R(5, 2), R(2, 6), R(6, 3), R(3, 4)]),
    ("chain_matmul", lambda t, a, b, c: t.chain_matmul(a, b, c), [R(2, 3), R(3, 4), R(4, 2)]),
    ("chain_matmul one", lambda t, a: t.chain_matmul(a), [R(2, 3)]),
]


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name,fn,arrays", VIEWS, ids=[v[0] for v in VIEWS])
def test_contractions_are_views_of_their_product(name, fn, arrays):
    ts = both(arrays, requires_grad=True)
    r, t = fn(retrograd, *ts[retrograd]), fn(torch, *ts[torch])
    same(r, t, atol=1e-10)
    assert (r._base is not None) == (t._base is not None)
    assert type(r.grad_fn).__name__ == type(t.grad_fn).__name__


def _chain(k):
    """A chain of k matrices with nan/inf planted, so the order of products shows."""
    dims = [2, 3, 4, 2, 5, 3][:k + 1]
    ms = [R(dims[i], dims[i + 1]) for i in range(k)]
    ms[1][1, 0], ms[1][0, 2] = INF, -INF
    ms[0][0, 1] = NAN
    return ms


@needs_torch
@pytest.mark.parametrize("k", [3, 4, 5])
def test_multi_dot_multiplies_in_torchs_order(k):
    ts = both(_chain(k), requires_grad=True)
    r, t = retrograd.linalg.multi_dot(ts[retrograd]), torch.linalg.multi_dot(ts[torch])
    same(r, t, atol=1e-10)
    up = R(*r.shape)
    for gr, gt in zip(retrograd.autograd.grad(r, ts[retrograd], retrograd.tensor(up)),
                      torch.autograd.grad(t, ts[torch], torch.tensor(up))):
        same(gr, gt, atol=1e-10)


def test_multi_dot_gradcheck():
    ms = [retrograd.tensor(R(*s), requires_grad=True) for s in ((5, 2), (2, 6), (6, 3), (3, 4))]
    fn = lambda *m: retrograd.linalg.multi_dot(list(m))  # noqa: E731
    assert gradcheck(fn, ms) and gradgradcheck(fn, ms)


@needs_torch
def test_kron_of_different_ranks_non_contiguous():
    """torch 2.13's kron raises "view size is not compatible" for a non-contiguous operand of a
    lower rank than the other; retrograd computes the product (compared with torch's result for
    the contiguous copies)."""
    a, b = R(3, 2), R(3)
    ra = retrograd.tensor(a).t()
    r = retrograd.kron(ra, retrograd.tensor(b))
    same(r, torch.kron(torch.tensor(a.T.copy()), torch.tensor(b)))
    assert raised(lambda: torch.kron(torch.tensor(a).t(), torch.tensor(b))) is not None


def _laid_out(lib, a, layout):
    """``a`` as a ``lib`` tensor: contiguous ("c"), a transposed view ("T") or a strided view
    ("s", every other row of a wider buffer)."""
    if layout == "T" and a.ndim:
        return lib.tensor(np.ascontiguousarray(a.T)).permute(*reversed(range(a.ndim)))
    if layout == "s" and a.ndim:
        w = np.zeros((2 * a.shape[0],) + a.shape[1:])
        w[::2] = a
        return lib.tensor(w)[::2]
    return lib.tensor(a)


KRON_SHAPES = [((2, 3), (2, 2)), ((2,), (3,)), ((2, 3), (3,)), ((3,), (2, 2)), ((2, 2), (2, 1, 2)), ((2, 2, 2), (2, 2))]


@needs_torch
@pytest.mark.parametrize("shapes", KRON_SHAPES)
@pytest.mark.parametrize("layouts", ["cT", "Tc", "Ts", "sT", "TT", "cs", "ss"])
def test_kron_of_non_contiguous_operands(shapes, layouts):
    """kron of any layout equals torch's kron of the contiguous copies (values and gradients).
    torch 2.13 itself raises "view size is not compatible" for some mixed layouts (a transposed
    operand with a contiguous or strided one): a torch bug, listed in KNOWN_MISMATCHES for the
    fuzzer; where torch does compute, it agrees."""
    a, b = R(*shapes[0]), R(*shapes[1])
    up = R(*np.kron(a, b).shape)
    ra, rb = (_laid_out(retrograd, v, lay).requires_grad_() for v, lay in zip((a, b), layouts))
    r = retrograd.kron(ra, rb)
    r.backward(retrograd.tensor(up))
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (a, b))
    t = torch.kron(ta, tb)
    t.backward(torch.tensor(up))
    same(r, t)
    same(ra.grad, ta.grad)
    same(rb.grad, tb.grad)
    direct = raised(lambda: torch.kron(*(_laid_out(torch, v, lay) for v, lay in zip((a, b), layouts))))
    if direct is None:
        same(r, torch.kron(*(_laid_out(torch, v, lay) for v, lay in zip((a, b), layouts))))
    else:
        assert "view size is not compatible" in direct[1]


def test_kron_non_contiguous_gradcheck():
    a = _laid_out(retrograd, R(2, 3), "T").requires_grad_()
    b = _laid_out(retrograd, R(2, 2), "s").requires_grad_()
    assert gradcheck(retrograd.kron, (a, b)) and gradgradcheck(retrograd.kron, (a, b))


# ------------------------------------------------------------------------------------- det

SINGULAR = [
    [[1.0, 2.0], [2.0, 4.0]],
    [[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]],
    [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 2.0, 3.0]],
    [[0.0, 0.0], [0.0, 0.0]],
]


def _adjugate_t(a):
    """The cofactor matrix by definition (determinants of minors)."""
    n = a.shape[0]
    c = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            m = np.delete(np.delete(a, i, 0), j, 1)
            c[i, j] = (-1) ** (i + j) * (np.linalg.det(m) if m.size else 1.0)
    return c


@pytest.mark.parametrize("m", SINGULAR)
def test_det_gradient_at_singular_matrices_is_the_cofactor_matrix(m):
    """First derivative: the cofactor matrix (and finite differences of det agree). Second
    derivative: finite differences of the cofactor matrix by definition. (gradgradcheck itself
    cannot be used here: its perturbed matrices are barely regular, where the solve formula
    loses digits, as in torch.)"""
    a0 = np.array(m)
    a = retrograd.tensor(a0, requires_grad=True)
    (g,) = retrograd.autograd.grad(retrograd.linalg.det(a), a, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), _adjugate_t(a0), atol=1e-12)
    assert gradcheck(retrograd.linalg.det, (a,))
    w = R(*a0.shape)
    (h,) = retrograd.autograd.grad((g * retrograd.tensor(w)).sum(), a)
    eps, num = 1e-6, np.empty_like(a0)
    for idx in np.ndindex(*a0.shape):
        d = np.zeros_like(a0)
        d[idx] = eps
        num[idx] = ((_adjugate_t(a0 + d) - _adjugate_t(a0 - d)) * w).sum() / (2 * eps)
    np.testing.assert_allclose(h.numpy(), num, atol=1e-7)


@needs_torch
@pytest.mark.parametrize("m", SINGULAR[:3])
def test_det_create_graph_at_singular_matrices_matches_torch(m):
    """With create_graph torch takes its singular-matrix formula (SVD), which retrograd's
    cofactors agree with, first and second derivative. (Without create_graph torch 2.13
    returns 0 here, which is wrong: see the op table's KNOWN_MISMATCHES.)"""
    res = {}
    for lib in (retrograd, torch):
        a = lib.tensor(m, dtype=lib.float64).requires_grad_()
        (g,) = lib.autograd.grad(lib.linalg.det(a), a, create_graph=True)
        (h,) = lib.autograd.grad((g * lib.tensor(np.arange(g.numel()).reshape(g.shape) + 1.0)).sum(), a)
        res[lib] = g, h
    for x, y in zip(res[retrograd], res[torch]):
        np.testing.assert_allclose(np_(x), np_(y), atol=1e-9)


@needs_torch
def test_det_batch_mixing_singular_and_regular():
    arrays = [np.stack([np.array(SINGULAR[0]), R(2, 2) + 3 * np.eye(2)])]
    ts = both(arrays, requires_grad=True)
    up = R(2)
    for create in (False, True):
        gr = retrograd.autograd.grad(retrograd.linalg.det(ts[retrograd][0]), ts[retrograd], retrograd.tensor(up),
                                     create_graph=create)[0]
        gt = torch.autograd.grad(torch.linalg.det(ts[torch][0]), ts[torch], torch.tensor(up), create_graph=create)[0]
        if create:  # (torch's first-order gradient of the singular one is 0: its bug)
            np.testing.assert_allclose(np_(gr), np_(gt), atol=1e-9)
        np.testing.assert_allclose(np_(gr)[1], np_(gt)[1], atol=1e-9)
    a = retrograd.tensor(arrays[0], requires_grad=True)
    assert gradcheck(retrograd.linalg.det, (a,))


@needs_torch
@pytest.mark.parametrize("shape", [(1, 1), (0, 0), (2, 0, 0), (3, 3)])
def test_det_gradient_dependencies_match_torch(shape):
    """1x1: d det/dA = 1 does not depend on A (torch: no second derivative); empty: the
    gradient is a constant zero; inf upstream: torch's solve spreads nan exactly so."""
    a = R(*shape) + (3 * np.eye(shape[-1]) if shape[-1] else 0)
    res = {}
    for lib in (retrograd, torch):
        x = lib.tensor(a).requires_grad_()
        up = lib.tensor(R(*shape[:-2])).requires_grad_()
        (g,) = lib.autograd.grad(lib.linalg.det(x), x, up, create_graph=True)
        h = lib.autograd.grad(g.sum(), x, allow_unused=True)[0] if g.requires_grad else "no graph"
        (gi,) = lib.autograd.grad(lib.linalg.det(x), x, lib.full(shape[:-2], INF, dtype=lib.float64))
        res[lib] = (g.requires_grad, h if h is None or isinstance(h, str) else np_(h).shape, np_(gi))
    assert res[retrograd][:2] == res[torch][:2]
    np.testing.assert_array_equal(np.isnan(res[retrograd][2]), np.isnan(res[torch][2]))


def test_det_gradcheck_batch():
    a = retrograd.tensor(R(2, 3, 3) + 3 * np.eye(3), requires_grad=True)
    assert gradcheck(retrograd.linalg.det, (a,)) and gradgradcheck(retrograd.linalg.det, (a,))


# ------------------------------------------------------------- torch.linalg.norm / matrix_norm

NORMS = [
    ("norm", dict()), ("norm", dict(ord=1)), ("norm", dict(ord=-INF)), ("norm", dict(ord="fro")),
    ("norm", dict(ord=INF, dim=(1, 0), keepdim=True)), ("norm", dict(ord=3, dim=1)), ("norm", dict(dim=(0, 1))),
    ("matrix_norm", dict()), ("matrix_norm", dict(ord=1)), ("matrix_norm", dict(ord=-1)),
    ("matrix_norm", dict(ord=INF, keepdim=True)), ("matrix_norm", dict(ord=-INF, dim=(1, 0))),
]


@needs_torch
@pytest.mark.parametrize("fn,kw", NORMS, ids=[f"{f}-{k}" for f, k in NORMS])
def test_linalg_norms_match_torch(fn, kw):
    ts = both([R(3, 4)], requires_grad=True)
    r, t = getattr(retrograd.linalg, fn)(*ts[retrograd], **kw), getattr(torch.linalg, fn)(*ts[torch], **kw)
    same(r, t, atol=1e-10)
    up = R(*r.shape)
    same(retrograd.autograd.grad(r, ts[retrograd], retrograd.tensor(up))[0],
         torch.autograd.grad(t, ts[torch], torch.tensor(up))[0], atol=1e-10)


@pytest.mark.parametrize("fn,kw", NORMS, ids=[f"{f}-{k}" for f, k in NORMS])
def test_linalg_norms_gradcheck(fn, kw):
    x = retrograd.tensor(R(3, 4), requires_grad=True)
    f = lambda a: getattr(retrograd.linalg, fn)(a, **kw)  # noqa: E731
    assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))


# ------------------------------------------------------------------------------------ fills

FILLS = [("fill_", (1.5,)), ("zero_", ()), ("normal_", ()), ("uniform_", (-1, 2)), ("bernoulli_", (0.3,)),
         ("bernoulli_", ()), ("exponential_", (2.0,)), ("log_normal_", ()), ("random_", ()), ("random_", (5,)),
         ("random_", (2, 5))]


@needs_torch
@pytest.mark.parametrize("name,args", FILLS, ids=[f"{n}{a}" for n, a in FILLS])
def test_fill_of_a_non_leaf_is_recorded_with_a_constant_zero_gradient(name, args):
    """A fill overwrites every value: the gradient reaching the tensor before it is 0, exactly
    (inf upstream too), and it belongs to no graph (create_graph gives a constant)."""
    res = {}
    for lib in (retrograd, torch):
        x = lib.tensor(R(2, 3)).requires_grad_()
        y = x * 2
        v = y._version
        out = getattr(y, name)(*args)
        assert out is y and y._version == v + 1 and tuple(y.shape) == (2, 3) and y.dtype == lib.float64
        (g,) = lib.autograd.grad(y, x, lib.full((2, 3), INF, dtype=lib.float64), create_graph=True)
        res[lib] = type(y.grad_fn).__name__, np_(g).tolist(), g.requires_grad
    assert res[retrograd] == res[torch]
    assert res[retrograd][1] == [[0.0] * 3] * 2


@needs_torch
@pytest.mark.parametrize("name,args", FILLS, ids=[f"{n}{a}" for n, a in FILLS])
def test_fill_of_a_leaf_that_requires_grad_raises(name, args):
    ts = {lib: lib.tensor(R(2, 3)).requires_grad_() for lib in (retrograd, torch)}
    expected = raised(lambda: getattr(ts[torch], name)(*args))
    assert expected is not None and raised(lambda: getattr(ts[retrograd], name)(*args)) == expected


BAD_FILLS = [("uniform_", (2, 1), "float64"), ("normal_", (0, -1), "float64"), ("exponential_", (-1,), "float64"),
             ("exponential_", (0,), "float64"), ("random_", (5, 2), "float64"), ("bernoulli_", (1.5,), "float64"),
             ("log_normal_", (0, -1), "float64"), ("log_normal_", (0, 0), "float64"), ("normal_", (), "int64"),
             ("uniform_", (), "int64"), ("log_normal_", (), "int64"), ("exponential_", (), "int64"),
             ("normal_", (), "bool")]


@needs_torch
@pytest.mark.parametrize("name,args,dt", BAD_FILLS, ids=[f"{n}{a}{d}" for n, a, d in BAD_FILLS])
def test_fill_argument_and_dtype_errors(name, args, dt):
    ts = {lib: lib.zeros(3, dtype=getattr(lib, dt)) for lib in (retrograd, torch)}
    expected = raised(lambda: getattr(ts[torch], name)(*args))
    assert expected is not None and raised(lambda: getattr(ts[retrograd], name)(*args)) == expected


@pytest.mark.parametrize("dt,top", [("float64", 2 ** 53), ("float32", 2 ** 24), ("int64", 2 ** 63 - 1),
                                    ("int16", 2 ** 15 - 1), ("bool", 1)])
def test_random_fills_stay_in_their_ranges(dt, top):
    retrograd.manual_seed(0)
    x = retrograd.zeros(4000, dtype=getattr(retrograd, dt))
    v = x.random_().numpy().astype(np.float64)
    assert v.min() >= 0 and v.max() <= top and v.max() > top / 2 and x.dtype == getattr(retrograd, dt)
    assert set(np.unique(retrograd.zeros(4000).random_(5).numpy())) == {0, 1, 2, 3, 4}
    assert set(np.unique(retrograd.zeros(4000).random_(-2, 1).numpy())) == {-2, -1, 0}
    u = retrograd.zeros(4000, dtype=retrograd.float32).uniform_(-1, 2).numpy()
    assert u.min() >= -1 and u.max() < 2 and u.dtype == np.float32
    b = retrograd.zeros(4000, dtype=retrograd.int64).bernoulli_(0.25).numpy()
    assert set(np.unique(b)) == {0, 1} and 0.2 < b.mean() < 0.3
    assert (retrograd.zeros(4000).exponential_(2.0).numpy() > 0).all()
    assert (retrograd.zeros(4000).log_normal_().numpy() > 0).all()
    p = retrograd.tensor([0.0, 1.0, 1.0, 0.0])
    assert retrograd.zeros(4).bernoulli_(p).tolist() == [0.0, 1.0, 1.0, 0.0]


@needs_torch
def test_bernoulli_with_a_probability_tensor_that_requires_grad():
    """bernoulli_(p) is recorded when p requires grad (even if self does not); p's gradient is
    zeros, like the overwritten values'."""
    res = {}
    for lib in (retrograd, torch):
        x = lib.tensor([0.3, -1.0, 2.0]).requires_grad_()
        p = lib.tensor([0.2, 0.5, 0.9]).requires_grad_()
        y = x * 2
        y.bernoulli_(p)
        gx, gp = lib.autograd.grad(y, (x, p), lib.full((3,), INF))
        z = lib.zeros(3)
        z.bernoulli_(p)
        res[lib] = (type(y.grad_fn).__name__, np_(gx).tolist(), np_(gp).tolist(), z.requires_grad,
                    type(z.grad_fn).__name__, set(np_(z).tolist()) <= {0.0, 1.0})
    assert res[retrograd] == res[torch]


def _renorm_derivs(lib, a, up, direction, p, dim, maxnorm):
    x = lib.tensor(a, requires_grad=True)
    u = lib.tensor(up, requires_grad=True)
    y = x.renorm(p, dim, maxnorm)
    (g,) = lib.autograd.grad(y, x, u, create_graph=True)
    gx, gu = lib.autograd.grad((g * lib.tensor(direction)).sum(), (x, u), allow_unused=True)
    return [t.detach().numpy() for t in (y, g, gx, gu)]


@needs_torch
@pytest.mark.parametrize("p", [1, 2, 3, 0.5, math.inf])
def test_renorm_derivatives_with_nonfinite_values_match_torch(p):
    """renorm's backward is PyTorch's formula op for op (the norm's gradient of sum(x * g) per
    slice, scaled, selected where the norm exceeds maxnorm), so inf/nan upstream gradients and
    inputs reach the same entries of the first and second derivatives (it was the gradient of
    the forward composite: -inf where PyTorch has nan)."""
    rng = np.random.default_rng(int(p * 10) if math.isfinite(p) else 99)
    for _ in range(20):
        a = rng.standard_normal((3, 4))
        up = rng.standard_normal((3, 4))
        up.reshape(-1)[:3] = [np.inf, -np.inf, np.nan]
        if rng.random() < 0.5:
            a[rng.integers(3), rng.integers(4)] = rng.choice([np.inf, np.nan, 0.0])
        d = rng.standard_normal((3, 4))
        dim, maxnorm = int(rng.integers(2)), float(rng.choice([0.5, 2.0, 10.0]))
        got = _renorm_derivs(retrograd, a, up, d, p, dim, maxnorm)
        want = _renorm_derivs(torch, a, up, d, p, dim, maxnorm)
        for r, t in zip(got, want):
            np.testing.assert_allclose(r, t, rtol=1e-10, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("p", [1, 2, 3, math.inf])
def test_renorm_gradgradcheck(p):
    x = retrograd.tensor(np.random.default_rng(2).standard_normal((3, 4)) * 2, requires_grad=True)
    fn = lambda t: t.renorm(p, 1, 3.0)   # noqa: E731  (slices 0 and 3 above maxnorm, 1 and 2 below for p > 1)
    assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))


def test_addbmm_adds_one_batch_at_a_time():
    """addbmm is beta * input + alpha * P0, then + alpha * P1, ... (PyTorch's addmm_ per batch):
    where a partial sum overflows float32 the result is inf even if the whole sum is not."""
    big = np.float32(3e38)
    b1 = np.array([[[big]], [[-big]]], np.float32)          # P0 = 3e38, P1 = -3e38
    b2 = np.ones((2, 1, 1), np.float32)
    c = np.full((1, 1), 1e38, np.float32)
    r = retrograd.addbmm(retrograd.from_numpy(c), retrograd.from_numpy(b1), retrograd.from_numpy(b2))
    with np.errstate(over="ignore"):
        want = (c[0, 0] + big) - big            # inf: 4e38 overflows before the second batch comes
    assert want == np.inf and r.numpy()[0, 0] == want
    if torch is not None:
        t = torch.addbmm(torch.from_numpy(c), torch.from_numpy(b1), torch.from_numpy(b2))
        assert t.numpy()[0, 0] == r.numpy()[0, 0]
