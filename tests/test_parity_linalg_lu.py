"""LU-based linear algebra at the edges, against PyTorch 2.13 (skipped without torch) and, for
gradients, by float64 gradcheck (no torch needed): which matrix det / slogdet factor (A^T for a
real C-contiguous A), inf / nan propagated through the LU as PyTorch's LAPACK does (det, slogdet,
inv, solve, lu_factor), slogdet's backward (the forward's factorization at first order, a
raising linalg.solve under create_graph) with infinite upstream gradients and singular inputs."""
import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from helpers import torch, needs_torch

INF, NAN = np.inf, np.nan


def _same(a, b):
    """Equal values with nan where the other has nan (rounding-level differences allowed)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    assert np.array_equal(np.isnan(a), np.isnan(b)), (a, b)
    fin = ~np.isnan(a)
    np.testing.assert_allclose(a[fin], b[fin], rtol=1e-9, atol=1e-12)


def _leaf(lib, a, layout, requires_grad=False):
    """(argument, leaf): a C-contiguous leaf, or the transposed view of a contiguous leaf."""
    if layout == "contig":
        base = lib.tensor(a).requires_grad_(requires_grad)
        return base, base
    base = lib.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).requires_grad_(requires_grad)
    return base.mT, base


def _nonfinite_matrices(seed, count):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.choice([2, 3, 4, 6, 9]))
        a = rng.standard_normal((n, n))
        for _ in range(rng.integers(1, 3)):
            a[rng.integers(n), rng.integers(n)] = rng.choice([INF, -INF, NAN])
        yield a


@needs_torch
@pytest.mark.parametrize("layout", ["contig", "noncontig"])
def test_nonfinite_lu_results_match_torch(layout):
    # torch's LAPACK passes over a nan pivot candidate unless it comes first and scales by the
    # pivot's reciprocal (OpenBLAS, under NumPy, picks the nan and zeroes a column scaled by 1/inf)
    for a in _nonfinite_matrices(1, 30):
        b = np.random.default_rng(2).standard_normal((a.shape[0], 2))
        res = {}
        for lib in (torch, retrograd):
            x, _ = _leaf(lib, a, layout)
            B = lib.tensor(b)
            s, l = lib.linalg.slogdet(x)
            res[lib] = [lib.linalg.det(x), s, l, lib.linalg.inv_ex(x).inverse, lib.linalg.solve_ex(x, B).result,
                        lib.linalg.solve(x, B), lib.linalg.inv(x), lib.linalg.lu_factor_ex(x).LU]
        for t, r in zip(res[torch], res[retrograd]):
            _same(r.detach().numpy(), t.detach().numpy())


@needs_torch
def test_det_factors_the_transpose_of_a_contiguous_matrix():
    # A and A^T give different rounding at an exactly singular matrix: torch's det of a
    # contiguous A is LAPACK's det of A^T (no copy), of a transposed view LAPACK's det of A
    a = np.array([[3.5, INF, -1.8], [-1.9, 4.3, 1.7], [0.4, -INF, 3.2]])
    for layout in ("contig", "noncontig"):
        got = [lib.linalg.det(_leaf(lib, a, layout)[0]).item() for lib in (torch, retrograd)]
        _same(got[1], got[0])
    c = np.array([[0.3, -1.2, 0.5], [0.7, INF, 2.0], [1.0, 0.1, 0.2]])
    for layout, want in (("contig", NAN), ("noncontig", -INF)):
        for lib in (torch, retrograd):
            _same(lib.linalg.det(_leaf(lib, c, layout)[0]).item(), want)
            s, l = lib.linalg.slogdet(_leaf(lib, c, layout)[0])
            _same([s.item(), l.item()], [0.0, NAN] if layout == "contig" else [-1.0, INF])


@needs_torch
@pytest.mark.parametrize("layout", ["contig", "noncontig"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_slogdet_backward_infinite_upstream(layout, create_graph):
    # the fuzzer's finding: gA = A^-T g with g = inf, solved with the forward's LU of A^T (a
    # contiguous A) or of A (adjoint solve); under create_graph with linalg.solve(A^H, .)
    rng = np.random.default_rng(3)
    for shape in [(3, 3), (4, 4), (2, 3, 3)]:
        a = rng.standard_normal(shape)
        a[..., 1, 2] = a[..., 0, 0]
        up = np.full(shape[:-2], INF)
        if up.size > 1:
            up.reshape(-1)[1] = NAN
        got = []
        for lib in (torch, retrograd):
            x, leaf = _leaf(lib, a, layout, True)
            s, l = lib.linalg.slogdet(x)
            g, = lib.autograd.grad(l, leaf, lib.tensor(up), create_graph=create_graph)
            got.append(g.detach().numpy())
        _same(got[1], got[0])


@needs_torch
def test_slogdet_backward_singular():
    a = np.array([[0., 0, 0], [1, 2, 3], [0.5, 0.1, 0.2]])
    for lib in (torch, retrograd):
        x = lib.tensor(a, requires_grad=True)
        g, = lib.autograd.grad(lib.linalg.slogdet(x)[1], x, lib.tensor(0.7, dtype=lib.float64))
        _same(g.numpy(), [[INF, INF, -INF], [0.0, 1.4, -0.7], [0.0, -21.0, 14.0]])
        # create_graph: the differentiable path is linalg.solve, which refuses a singular matrix
        l = lib.linalg.slogdet(x)[1]
        with pytest.raises(RuntimeError, match="The solver failed because the input matrix is singular"):
            lib.autograd.grad(l, x, create_graph=True)


@needs_torch
def test_slogdet_sign_of_nan():
    a = np.array([[NAN, -1.2, 0.5], [0.7, 1.0, 2.0], [1.0, 0.1, 0.2]])
    for layout in ("contig", "noncontig"):
        got = [[t.item() for t in lib.linalg.slogdet(_leaf(lib, a, layout)[0])] for lib in (torch, retrograd)]
        _same(got[1], got[0])
        assert got[1][0] == 0


@pytest.mark.parametrize("layout", ["contig", "noncontig"])
def test_slogdet_gradcheck(layout):
    a = np.random.default_rng(4).standard_normal((2, 3, 3)) + 3 * np.eye(3)
    x, leaf = _leaf(retrograd, a, layout, True)

    def f(base):
        return retrograd.linalg.slogdet(base.mT if layout == "noncontig" else base)[1]
    assert gradcheck(f, (leaf,))
    assert gradgradcheck(f, (leaf,))
    assert gradcheck(lambda base: retrograd.linalg.det(base.mT if layout == "noncontig" else base), (leaf,))


def test_nonfinite_lu_is_reference_order():
    # no torch needed: a nan that is not the first candidate is never the pivot; the column is
    # scaled by 1/pivot, so a finite entry over an infinite pivot becomes 0 and an infinite one nan
    from retrograd.ops._decomp import _getf2_reference
    lu, piv, info = _getf2_reference(np.array([[0.3, 1.0], [NAN, 2.0]]))
    assert piv.tolist() == [0, 1] and lu[0].tolist() == [0.3, 1.0] and np.isnan(lu[1]).all()
    lu, piv, info = _getf2_reference(np.array([[-0.5, 1.0, 2.0], [INF, 0.4, 0.8], [-INF, -0.8, 1.2]]))
    assert piv.tolist() == [1, 1, 2] and info == 0
    np.testing.assert_array_equal(lu[:2], [[INF, 0.4, 0.8], [0.0, 1.0, 2.0]])
    assert np.signbit(lu[1, 0]) and np.isnan(lu[2]).all()
    x = retrograd.tensor(np.array([[NAN, 1.0], [2.0, 3.0]]))
    assert np.isnan(retrograd.linalg.inv(x).numpy()).all()


def _outcome(fn):
    try:
        r = fn()
    except RuntimeError as e:
        return str(e)
    return int(r.info.item()) if hasattr(r, "info") else None


@needs_torch
def test_nonfinite_singular_info_and_errors():
    # a zero pivot of the reference-order factorization: info, and inv / solve raising
    rng = np.random.default_rng(5)
    for k in range(80):
        n = int(rng.integers(2, 6))
        a = rng.standard_normal((n, n))
        for _ in range(rng.integers(1, 3)):
            a[rng.integers(n), rng.integers(n)] = rng.choice([INF, -INF, NAN, 0.0])
        if k % 3 == 0:
            a[:, rng.integers(n)] = 0
        b = np.ones((n, 1))
        for name in ("inv_ex", "solve_ex", "lu_factor_ex", "inv", "solve"):
            got = [_outcome(lambda: getattr(lib.linalg, name)(*((lib.tensor(a),) if "solve" not in name else
                                                                (lib.tensor(a), lib.tensor(b)))))
                   for lib in (torch, retrograd)]
            assert got[1] == got[0], (name, a)


@needs_torch
def test_solve_left_false_matches_torch():
    rng = np.random.default_rng(6)
    for ash, bsh in [((3, 3), (2, 3)), ((2, 3, 3), (2, 4, 3)), ((3, 3), (2, 2, 3))]:
        a = rng.standard_normal(ash) + 3 * np.eye(3)
        b = rng.standard_normal(bsh)
        got = []
        for lib in (torch, retrograd):
            A, B = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
            x = lib.linalg.solve(A, B, left=False)
            g = lib.autograd.grad(x, [A, B], lib.tensor(np.cos(np.arange(x.numel())).reshape(tuple(x.shape))))
            got.append([type(x.grad_fn).__name__, x.detach().numpy(), *[t.numpy() for t in g]])
        assert got[0][0] == got[1][0]
        for t, r in zip(got[0][1:], got[1][1:]):
            np.testing.assert_allclose(r, t, rtol=1e-10, atol=1e-12)
    for bs in [(3,), (3, 2), (2,)]:
        msgs = []
        for lib in (torch, retrograd):
            with pytest.raises(RuntimeError) as e:
                lib.linalg.solve(lib.eye(3), lib.ones(bs), left=False)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]


def test_solve_left_false_gradcheck():
    rng = np.random.default_rng(7)
    A = retrograd.tensor(rng.standard_normal((2, 3, 3)) + 3 * np.eye(3), requires_grad=True)
    B = retrograd.tensor(rng.standard_normal((2, 4, 3)), requires_grad=True)
    f = lambda A, B: retrograd.linalg.solve(A, B, left=False)   # noqa: E731
    assert gradcheck(f, (A, B))
    assert gradgradcheck(f, (A, B))
    np.testing.assert_allclose((f(A, B) @ A).detach().numpy(), B.detach().numpy(), atol=1e-12)


@needs_torch
@pytest.mark.parametrize("layout", ["contig", "noncontig"])
def test_nonfinite_first_order_gradients(layout):
    # det's regular-path gradient solves with the forward's factorization as slogdet's does
    for a in _nonfinite_matrices(8, 40):
        got = []
        for lib in (torch, retrograd):
            x, leaf = _leaf(lib, a, layout, True)
            outs = [lib.linalg.det(x), lib.linalg.inv_ex(x).inverse, lib.linalg.solve_ex(x, lib.ones(a.shape[0], 1,
                                                                                            dtype=lib.float64)).result]
            got.append([lib.autograd.grad(o, leaf, lib.ones(tuple(o.shape), dtype=o.dtype))[0].numpy() for o in outs])
        for t, r in zip(*got):
            _same(r, t)


@needs_torch
def test_negative_stride_counts_as_contiguous():
    # torch has no negative strides: such a leaf stands for its contiguous copy (A^T factored)
    a = np.array([[4.25308095680109, INF, 4.25308095680109], [4.25308095680109, 4.25308095680109, 1.6510223091108869],
                  [0.42654310306871945, 0.9179862439359936, 3.1744999658616915]])
    neg = retrograd.from_numpy(np.ascontiguousarray(a[::-1])[::-1])
    assert neg._data.strides[0] < 0
    want = [t.item() for t in torch.linalg.slogdet(torch.tensor(a))] + [torch.linalg.det(torch.tensor(a)).item()]
    got = [t.item() for t in retrograd.linalg.slogdet(neg)] + [retrograd.linalg.det(neg).item()]
    _same(got, want)


@needs_torch
def test_lu_backward_infinite_gradient_outside_the_triangles():
    # log(L) is -inf above L's diagonal: torch takes tril(L^H gL), so the inf reaches every entry
    a = np.array([[0.548, -0.921, -1.836], [-1.934, 1.253, 1.651], [0.427, 0.918, 0.174]])
    got = []
    for lib in (torch, retrograd):
        x = lib.tensor(a, requires_grad=True)
        P, L, U = lib.linalg.lu(x)
        got.append(lib.autograd.grad(L.log().sum() + U.sum(), x)[0].numpy())
    _same(got[1], got[0])
    x = retrograd.tensor(a, requires_grad=True)
    assert gradcheck(lambda x: retrograd.linalg.lu(x)[1] * 2 + retrograd.linalg.lu(x)[2], (x,))


@needs_torch
def test_cdist_result_is_writable():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 2)), rng.standard_normal((4, 2))
    got = []
    for lib in (torch, retrograd):
        d = lib.cdist(lib.tensor(a), lib.tensor(b))
        got.append(d.exp_().numpy())
    np.testing.assert_allclose(got[1], got[0], rtol=1e-12)


@needs_torch
def test_cov_nan_weight_refused():
    x = np.random.default_rng(1).standard_normal((2, 4))
    for w in ([1.0, 2.0, np.nan, 1.0], [1.0, -2.0, 1.0, 1.0]):
        msgs = []
        for lib in (torch, retrograd):
            with pytest.raises(RuntimeError) as e:
                lib.tensor(x).cov(aweights=lib.tensor(w))
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1] == "cov(): aweights cannot be negative"
    np.testing.assert_allclose(retrograd.tensor(x).cov(aweights=retrograd.tensor([1.0, 2.0, 0.5, 1.0])).numpy(),
                               torch.tensor(x).cov(aweights=torch.tensor([1.0, 2.0, 0.5, 1.0])).numpy(), rtol=1e-12)


def test_inv_ex_never_raises_where_numpys_lapack_meets_a_zero_pivot():
    """A matrix singular to rounding whose reference-order LU has no zero pivot (PyTorch's info
    is 0 too) but NumPy's LAPACK meets one: inv_ex reports info 0 and solves with the LU instead
    of raising NumPy's LinAlgError (the values are singular garbage either way)."""
    a = np.array([[1.399592714776946, 0.5257041475833385, -1.269166683312418],
                  [0.5536903276655881, -0.17175262841200212, -0.9072006292804866],
                  [0.4966626310111988, -1.449940529530146, -2.1962623884092674]])
    inv, info = retrograd.linalg.inv_ex(retrograd.tensor(a))
    assert int(info) == 0 and inv.shape == (3, 3) and inv.dtype == retrograd.float64
    if torch is not None:
        assert int(torch.linalg.inv_ex(torch.tensor(a))[1]) == 0


def _lu_grads(lib, a, gl, gu, packed):
    x = lib.tensor(a, requires_grad=True)
    if packed:   # lu_factor: one gradient for the packed factors, taken whole by both triangles
        return lib.autograd.grad(lib.linalg.lu_factor(x)[0], x, lib.tensor(gl))[0].numpy()
    P, L, U = lib.linalg.lu(x)
    outs, grads = zip(*[(t, lib.tensor(g)) for t, g in ((L, gl), (U, gu)) if g is not None])
    return lib.autograd.grad(outs, x, grads)[0].numpy()


@needs_torch
@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2), (2, 3, 5), (1, 3), (3, 1)])
@pytest.mark.parametrize("which", ["L U", "L", "U", "packed"])
def test_lu_backward_nonfinite_upstream_matches_torch(shape, which):
    """inf / nan in the factors' gradients reach A's gradient where PyTorch's do: the products,
    triangle cuts and triangular solves are taken in its order for square, wide (U = [U1 | U2])
    and tall (L = [L1; L2]) inputs, and lu_factor's gradient is passed on whole (not cut to the
    triangles first)."""
    rng = np.random.default_rng(sum(shape) * 7 + len(which))
    m, n = shape[-2:]
    k = min(m, n)
    for _ in range(25):
        a = rng.standard_normal(shape)
        gs = []
        for sh in (shape[:-1] + (k if which != "packed" else n,), shape[:-2] + (k, n)):
            g = rng.standard_normal(sh)
            pick = rng.random(sh)
            g[pick < 0.12] = NAN
            g[(pick >= 0.12) & (pick < 0.2)] = rng.choice([INF, -INF])
            gs.append(g)
        gl = gs[0] if "L" in which or which == "packed" else None
        gu = gs[1] if "U" in which else None
        _same(_lu_grads(retrograd, a, gl, gu, which == "packed"), _lu_grads(torch, a, gl, gu, which == "packed"))


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2), (2, 2, 3)])
def test_lu_gradcheck_wide_tall(shape):
    a = retrograd.tensor(np.random.default_rng(3).standard_normal(shape) + np.eye(*shape[-2:]), requires_grad=True)
    for f in (lambda x: retrograd.linalg.lu(x)[1:], lambda x: retrograd.linalg.lu(x)[1],
              lambda x: retrograd.linalg.lu(x)[2], lambda x: retrograd.linalg.lu_factor(x)[0]):
        assert gradcheck(f, (a,))
        assert gradgradcheck(f, (a,))
