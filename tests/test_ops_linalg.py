"""Linear algebra: every matmul rank case, mm/bmm/mv/dot, the add-products, einsum,
tensordot: parity with PyTorch (values, grad_fn, gradients), gradchecks, errors, out=."""
import numpy as np
import pytest

import retrograd
from helpers import check as _check, gradcheck_op, NC, torch


def check(fn, specs, **kw):
    if any(isinstance(s, NC) and len(s.shape) >= 2 for s in specs) and not hasattr(retrograd.Tensor, "permute"):
        pytest.skip("needs Tensor.permute")
    _check(fn, specs, **kw)


def L(t):
    return torch if torch is not None and isinstance(t, torch.Tensor) else retrograd


MATMUL_SHAPES = [
    [(3,), (3,)], [(2, 3), (3,)], [(3,), (3, 4)], [(2, 3), (3, 4)],
    [(5, 2, 3), (3,)], [(3,), (5, 3, 4)], [(5, 2, 3), (3, 4)], [(2, 3), (5, 3, 4)],
    [(5, 2, 3), (5, 3, 4)], [(5, 2, 3), (1, 3, 4)], [(6, 5, 2, 3), (5, 3, 4)], [(6, 1, 2, 3), (5, 3, 4)],
    [(0, 3), (3, 2)], [(2, 0), (0, 3)], [(0,), (0,)], [(4, 0, 3), (3, 2)],
    [NC(2, 3), (3, 4)], [(2, 3), NC(3, 4)], [NC(3), NC(3)], [NC(2, 3), NC(3)],
]


@pytest.mark.parametrize("specs", MATMUL_SHAPES)
def test_matmul_parity(specs):
    check(lambda a, b: a @ b, specs)


@pytest.mark.parametrize("specs", [[(2, 3), (5, 3, 4)], [(5, 2, 3), (3, 4)], [(3,), (3, 4)]])
def test_matmul_name_when_one_side_needs_grad(specs):
    # PyTorch's name depends on which operand requires grad (it folds differently).
    def first_only(a, b):
        return a @ b.detach()

    def second_only(a, b):
        return a.detach() @ b
    check(first_only, specs)
    check(second_only, specs)


@pytest.mark.parametrize("specs", MATMUL_SHAPES[:12])
def test_matmul_gradcheck(specs):
    gradcheck_op(lambda a, b: a @ b, specs)


def _double_backward(lib, fn, arrays):
    ins = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ins)
    gs = lib.autograd.grad((out * out).sum(), ins, create_graph=True)
    ggs = lib.autograd.grad(sum((g * g).sum() for g in gs), ins, allow_unused=True)
    return [np.asarray(g.detach().numpy()) if g is not None else None for g in ggs]


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize("fn,shapes", [
    (lambda a, b: a @ b, [(2, 3), (3, 2)]),
    (lambda a, b: a @ b, [(4, 2, 3), (3,)]),
    (lambda a, b: a @ b, [(3,), (3,)]),
    (lambda c, a, b: L(a).addmm(c, a, b, beta=0.5, alpha=2), [(2, 2), (2, 3), (3, 2)]),
    (lambda a, b: L(a).einsum("bij,bjk->bik", a, b), [(2, 2, 3), (2, 3, 2)]),
    (lambda a: L(a).einsum("ii->i", a), [(3, 3)]),
])
def test_double_backward_parity(fn, shapes):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in shapes]
    for r, t in zip(_double_backward(retrograd, fn, arrays), _double_backward(torch, fn, arrays)):
        np.testing.assert_allclose(r, t, rtol=1e-6, atol=1e-8)


OPS = [
    (lambda a, b: L(a).mm(a, b), [(2, 3), (3, 4)]),
    (lambda a, b: a.mm(b), [NC(2, 3), (3, 4)]),
    (lambda a, b: L(a).bmm(a, b), [(5, 2, 3), (5, 3, 4)]),
    (lambda a, b: L(a).bmm(a, b), [(0, 2, 3), (0, 3, 4)]),
    (lambda a, b: L(a).mv(a, b), [(2, 3), (3,)]),
    (lambda a, b: a.mv(b), [(0, 3), (3,)]),
    (lambda a, b: L(a).dot(a, b), [(3,), (3,)]),
    (lambda a, b: a.dot(b), [NC(3), (3,)]),
    (lambda a, b: L(a).vdot(a, b), [(3,), (3,)]),
    (lambda a, b: L(a).outer(a, b), [(3,), (4,)]),
    (lambda a, b: L(a).ger(a, b), [(3,), (0,)]),
    (lambda a, b: L(a).inner(a, b), [(2, 3), (4, 3)]),
    (lambda c, a, b: L(a).addmm(c, a, b), [(2, 4), (2, 3), (3, 4)]),
    (lambda c, a, b: L(a).addmm(c, a, b), [(4,), (2, 3), (3, 4)]),
    (lambda c, a, b: L(a).addmm(c, a, b, beta=0.5, alpha=2), [(2, 1), (2, 3), (3, 4)]),
    (lambda c, a, b: L(a).addmm(c, a, b, beta=0), [(), (2, 3), (3, 4)]),
    (lambda c, a, b: c.addmm(a, b), [(2, 4), NC(2, 3), (3, 4)]),
    (lambda c, a, b: L(a).addmv(c, a, b), [(2,), (2, 3), (3,)]),
    (lambda c, a, b: L(a).addmv(c, a, b, beta=2, alpha=-1), [(), (2, 3), (3,)]),
    (lambda c, a, b: L(a).addbmm(c, a, b), [(2, 4), (5, 2, 3), (5, 3, 4)]),
    (lambda c, a, b: L(a).addbmm(c, a, b, alpha=0.5), [(4,), (5, 2, 3), (5, 3, 4)]),
    (lambda c, a, b: L(a).baddbmm(c, a, b), [(5, 2, 4), (5, 2, 3), (5, 3, 4)]),
    (lambda c, a, b: L(a).baddbmm(c, a, b, beta=0.5, alpha=3), [(1, 4), (5, 2, 3), (5, 3, 4)]),
    (lambda c, a, b: L(a).addr(c, a, b), [(3, 4), (3,), (4,)]),
    (lambda a, b: L(a).tensordot(a, b, dims=1), [(2, 3), (3, 4)]),
    (lambda a, b: L(a).tensordot(a, b, dims=([1, 2], [0, 1])), [(2, 3, 4), (3, 4, 5)]),
    (lambda a, b: L(a).tensordot(a, b, dims=0), [(2, 3), (3,)]),
    (lambda a, b, c: L(a).linalg.multi_dot([a, b, c]), [(2, 3), (3, 4), (4, 2)]),
    (lambda c, a, b: (c * 1).addmm_(a, b), [(2, 4), (2, 3), (3, 4)]),
]


@pytest.mark.parametrize("fn,specs", OPS)
def test_linalg_ops_parity(fn, specs):
    check(fn, specs)


@pytest.mark.parametrize("fn,specs", OPS)
def test_linalg_ops_gradcheck(fn, specs):
    gradcheck_op(fn, specs)


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ba,ac", [(2, 3), (3, 4)]),
    ("ij->ji", [(2, 3)]),
    ("ij", [(2, 3)]),
    ("ji", [(2, 3)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->j", [NC(2, 3)]),
    ("i,i->", [(3,), (3,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,ij,ij->i", [(2, 3), (2, 3), (2, 3)]),
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("...ij,...jk", [(5, 2, 3), (5, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 3), (5, 3, 4)]),
    ("...i,...i->...", [(2, 3), (2, 3)]),
    ("i...->...", [(2, 3, 4)]),
    ("i j , j k -> i k", [(2, 3), (3, 4)]),
    ("ij,jk->ik", [(0, 3), (3, 4)]),
    ("i,->i", [(3,), ()]),
    ("iij,jk->ik", [(3, 3, 2), (2, 4)]),
    ("ab...,b->a...", [(2, 3, 4, 2), (3,)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij,ij->i", [(2, 1), (2, 3)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("iii->i", [(2, 2, 2)]),
]


@pytest.mark.parametrize("eq,specs", EINSUM)
def test_einsum_parity(eq, specs):
    check(lambda *ops: L(ops[0]).einsum(eq, *ops), specs)


@pytest.mark.parametrize("eq,specs", EINSUM)
def test_einsum_gradcheck(eq, specs):
    gradcheck_op(lambda *ops: retrograd.einsum(eq, *ops), specs)


def test_einsum_list_operands():
    check(lambda a, b: L(a).einsum("ij,jk", [a, b]), [(2, 3), (3, 4)])


def test_integer_matmul_is_exact():
    a = retrograd.tensor([[2 ** 40, 1], [3, 4]])
    b = retrograd.tensor([3, 5])
    assert (a @ b).tolist() == [3 * 2 ** 40 + 5, 29] and (a @ b).dtype == retrograd.int64


def test_chain_matmul_is_deprecated():
    with pytest.warns(UserWarning, match="torch.chain_matmul is deprecated"):
        r = retrograd.chain_matmul(retrograd.ones(2, 3), retrograd.ones(3, 4))
    assert r.tolist() == [[3.0] * 4] * 2


def test_rmatmul_and_out():
    a = retrograd.ones(2, 3)
    r = np.ones((4, 2)) @ a if False else a.__rmatmul__(retrograd.ones(4, 2))
    assert r.shape == (4, 3) and r.tolist() == [[2.0] * 3] * 4
    out = retrograd.empty(2, 2)
    res = retrograd.mm(a, retrograd.ones(3, 2), out=out)
    assert res is out and out.tolist() == [[3.0, 3.0], [3.0, 3.0]] and out._version_value == 1
    out = retrograd.empty(2)
    retrograd.matmul(a, retrograd.ones(3), out=out)
    assert out.tolist() == [3.0, 3.0]
    w = retrograd.ones(3, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"mm\(\): functions with out=... arguments don't support automatic "
                                           "differentiation, but one of the arguments requires grad."):
        retrograd.mm(a, w, out=retrograd.empty(2, 2))


def R(*s, dtype=None):
    return retrograd.zeros(*s, dtype=dtype or retrograd.float32)


@pytest.mark.parametrize("call,msg", [
    (lambda: R(3) @ R(4), r"inconsistent tensor size, expected tensor \[3\] and src \[4\] to have the same number of "
                          r"elements, but got 3 and 4 elements respectively"),
    (lambda: R(2, 3) @ R(4), r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
    (lambda: R(3) @ R(4, 5), r"mat1 and mat2 shapes cannot be multiplied \(1x3 and 4x5\)"),
    (lambda: R(64, 392) @ R(400, 512), r"mat1 and mat2 shapes cannot be multiplied \(64x392 and 400x512\)"),
    (lambda: R(5, 2, 3) @ R(4, 5), r"mat1 and mat2 shapes cannot be multiplied \(10x3 and 4x5\)"),
    (lambda: R(5, 2, 3) @ R(4), r"size mismatch, got input \(10\), mat \(10x3\), vec \(4\)"),
    (lambda: R(5, 2, 3) @ R(5, 4, 2), r"Expected size for first two dimensions of batch2 tensor to be: \[5, 3\] but "
                                      r"got: \[5, 4\]."),
    (lambda: R(5, 2, 3) @ R(4, 3, 2), r"The size of tensor a \(5\) must match the size of tensor b \(4\) at "
                                      r"non-singleton dimension 0"),
    (lambda: retrograd.tensor(1.0) @ R(3), "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    (lambda: retrograd.mm(R(3), R(3, 4)), "self must be a matrix"),
    (lambda: retrograd.mm(R(2, 3), R(3, 4, dtype=retrograd.float64)),
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda: retrograd.bmm(R(2, 3), R(3, 2)), "batch1 must be a 3D tensor"),
    (lambda: retrograd.bmm(R(5, 2, 3), R(4, 3, 2)), r"Expected size for first two dimensions of batch2 tensor to be: "
                                                    r"\[5, 3\] but got: \[4, 3\]."),
    (lambda: retrograd.mv(R(3), R(3)), "vector \\+ matrix @ vector expected, got 1, 1, 1"),
    (lambda: retrograd.dot(R(3, 1), R(3)), "1D tensors expected, but got 2D and 1D tensors"),
    (lambda: retrograd.dot(R(3), R(3, dtype=retrograd.float64)),
     "dot : expected both vectors to have same dtype, but found Float and Double"),
    (lambda: retrograd.outer(R(3, 1), R(3)), "outer: Expected 1-D argument self, but got 2-D"),
    (lambda: retrograd.addmm(R(3, 4), R(2, 3), R(3, 4)),
     r"The expanded size of the tensor \(2\) must match the existing size \(3\) at non-singleton dimension 0.  "
     r"Target sizes: \[2, 4\].  Tensor sizes: \[3, 4\]"),
    (lambda: retrograd.addmv(R(3), R(2, 3), R(3)), r"size mismatch, got input \(3\), mat \(2x3\), vec \(3\)"),
    (lambda: retrograd.einsum("ij,jk->ik", R(2, 3), R(4, 4)),
     "einsum\\(\\): subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3"),
    (lambda: retrograd.einsum("ii->ii", R(3, 3)), "einsum\\(\\): output subscript i appears more than once in the "
                                                  "output"),
    (lambda: retrograd.einsum("i1,1j", R(2, 3), R(3, 4)), "einsum\\(\\): invalid subscript given at index 1 in the "
                                                          "equation string, subscripts must be in \\[a-zA-Z\\]"),
    (lambda: retrograd.einsum("ij,jk->ik", R(2, 3)), "einsum\\(\\): fewer operands were provided than specified in "
                                                     "the equation"),
    (lambda: retrograd.einsum("ij->ik", R(2, 3)), "einsum\\(\\): output subscript k does not appear in the equation "
                                                  "for any input operand"),
    (lambda: retrograd.einsum("ijk->i", R(2, 3)), r"einsum\(\): the number of subscripts in the equation \(3\) does "
                                                  r"not match the number of dimensions \(2\) for operand 0 and no "
                                                  r"ellipsis was given"),
])
def test_linalg_errors(call, msg):
    with pytest.raises(RuntimeError, match=msg):
        call()


def test_saved_operand_modified_in_place():
    a = retrograd.ones(2, 3, requires_grad=True)
    b = retrograd.ones(3, 2)
    y = a @ b
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    # a itself is not needed for a's gradient: modifying a copy of it does not matter.
    c = a * 1
    y = c @ b
    with retrograd.no_grad():
        pass
    y.sum().backward()
    assert a.grad.tolist() == [[4.0, 4.0, 4.0]] * 2


@pytest.mark.parametrize("fn,specs", [
    (lambda a, b: a @ b, [(2, 3), (3, 2)]), (lambda a, b: a @ b, [(4, 2, 3), (3,)]), (lambda a, b: a @ b, [(3,), (2, 3, 4)]),
    (lambda c, a, b: retrograd.addmm(c, a, b, beta=0.5, alpha=2), [(2, 2), (2, 3), (3, 2)]),
    (lambda a, b: retrograd.einsum("bij,bjk->bik", a, b), [(2, 2, 3), (2, 3, 2)]),
    (lambda a: retrograd.einsum("ii->i", a), [(3, 3)]), (lambda a: retrograd.einsum("ij->", a), [(2, 3)]),
    (lambda c, a, b: retrograd.addbmm(c, a, b), [(2, 2), (3, 2, 3), (3, 3, 2)]),
    (lambda c, a, b: retrograd.addr(c, a, b), [(2, 3), (2,), (3,)]),
])
def test_second_order(fn, specs):
    gradcheck_op(fn, specs, second_order=True)


MORE = [
    (lambda a: L(a).trace(a), [(3, 4)]),
    (lambda a: a.trace(), [NC(3, 3)]),
    (lambda a, b: L(a).kron(a, b), [(2, 3), (2, 2)]),
    (lambda a, b: L(a).kron(a, b), [(2,), (2, 3)]),
    (lambda a, b: L(a).cross(a, b, dim=0), [(3,), (3,)]),
    (lambda a, b: L(a).linalg.cross(a, b), [(4, 3), (1, 3)]),
    (lambda a, b: a.cross(b, dim=0), [(3, 4), (3, 4)]),
    (lambda a: L(a).linalg.det(a), [(3, 3)]),
    (lambda a: L(a).det(a), [(2, 3, 3)]),
    (lambda a: L(a).linalg.inv(a), [(3, 3)]),
    (lambda a: a.inverse(), [(2, 3, 3)]),
    (lambda a, b: L(a).linalg.solve(a, b), [(3, 3), (3,)]),
    (lambda a, b: L(a).linalg.solve(a, b), [(3, 3), (3, 2)]),
    (lambda a, b: L(a).linalg.solve(a, b), [(2, 3, 3), (2, 3)]),
    (lambda a, b: L(a).linalg.multi_dot([a, b]), [(2, 3), (3,)]),
    (lambda a, b: L(a).linalg.vecdot(a, b), [(2, 3), (2, 3)]),
]


@pytest.mark.parametrize("fn,specs", MORE)
def test_more_linalg_parity(fn, specs):
    check(fn, specs)


@pytest.mark.parametrize("fn,specs", MORE)
def test_more_linalg_gradcheck(fn, specs):
    gradcheck_op(fn, specs)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: retrograd.trace(R(3)), RuntimeError, "trace: expected a matrix, but got tensor with dim 1"),
    (lambda: retrograd.cross(R(4, 2), R(4, 2), dim=1), RuntimeError,
     "linalg.cross: inputs dimension 1 must have length 3. Got 2 and 2"),
    (lambda: retrograd.linalg.det(R(3, 2)), RuntimeError,
     "linalg.det: A must be batches of square matrices, but they are 3 by 2 matrices"),
    (lambda: retrograd.linalg.inv(R(2, 2)), retrograd.linalg.LinAlgError,
     "linalg.inv: The diagonal element 1 is zero, the inversion could not be completed because the input matrix is "
     "singular."),
])
def test_more_linalg_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()
