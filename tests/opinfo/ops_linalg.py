"""Op table entries: linear algebra (matmul in every rank case, mm, bmm, mv, dot, vdot, inner,
outer, the add+product family, kron, cross, trace, det, inverse, tensordot, einsum, chain_matmul),
the triangle/diagonal matrix ops, torch.linalg's functions and the autograd-visible fills
(fill_, zero_). The random fills (normal_, uniform_, ...) cannot be compared by value: see
tests/test_edges_linalg.py."""
import numpy as np

from .core import OpInfo, Sample, method, function, GRADCHECK_KINDS, _known

OPS = []
INF, NAN = np.inf, np.nan
# Known differences from torch are recorded here (core.KNOWN_MISMATCHES) next to their entries.


def _add(name, op, samples, **kw):
    OPS.append(OpInfo(name, op, samples, **kw))


def _linalg(name):
    """op calling lib.linalg.<name>."""
    def op(lib, *args, **kwargs):
        return getattr(lib.linalg, name)(*args, **kwargs)
    op.__name__ = "linalg_" + name
    return op


# ---------------------------------------------------------------------------------- products

def _matmul_samples(mk):
    r = mk.rand
    yield Sample(r(2, 3), r(3, 4))                      # mm
    yield Sample(r(3), r(3))                            # dot
    yield Sample(r(2, 3), r(3))                         # mv
    yield Sample(r(3), r(3, 4))                         # vector @ matrix
    yield Sample(r(2, 2, 3), r(3, 4))                   # batched @ matrix (folded into an mm)
    yield Sample(r(2, 2, 3), r(3))                      # batched @ vector
    yield Sample(r(3), r(2, 3, 4))                      # vector @ batched
    yield Sample(r(2, 3), r(2, 3, 4))                   # matrix @ batched
    yield Sample(r(2, 2, 3), r(2, 3, 4))                # bmm
    yield Sample(r(2, 1, 2, 3), r(3, 3, 2))             # broadcast batch dims
    yield Sample(r(1, 2, 3), r(4, 3, 2))
    yield Sample(r(1, 1), r(1, 1), kind="size1")
    yield Sample(r(1), r(1), kind="size1")
    yield Sample(r(0), r(0), kind="empty")              # 0 = sum of nothing
    yield Sample(r(2, 0), r(0, 4), kind="empty")
    yield Sample(r(0, 3), r(3, 4), kind="empty")
    yield Sample(r(2, 0), r(0), kind="empty")
    yield Sample(r(0, 2, 3), r(3, 4), kind="empty")
    yield Sample(r(2, 0, 3), r(2, 3, 4), kind="empty")
    yield Sample(r(2, 3, 0), r(2, 0, 4), kind="empty")
    yield Sample(r(0, 2, 3), r(1, 3, 2), kind="empty")
    yield Sample(r(3), r(0, 3, 2), kind="empty")
    yield Sample(r(2, 3), r(0, 3, 4), kind="empty")
    yield Sample(r(1, 2, 3), r(0, 3, 2), kind="empty")
    yield Sample(mk.arr([[0.0, 0.0], [1.0, INF]]), mk.arr([[0.0, 1.0], [2.0, 0.0]]), kind="degenerate")
    yield Sample(r(2, 3), r(3, 4).astype(np.float32), kind="mixed_dtype")
    yield Sample(r(2, 3), r(4, 5), kind="error")
    yield Sample(r(3), r(4), kind="error")
    yield Sample(r(2, 3), r(4), kind="error")
    yield Sample(r(4), r(3, 2), kind="error")
    yield Sample(r(2, 2, 3), r(4, 2), kind="error")
    yield Sample(r(2, 2, 3), r(3, 3, 2), kind="error")
    yield Sample(mk.arr(2.0), r(3), kind="error")
    yield Sample(r(3), mk.arr(2.0), kind="error")


for _n in ("matmul", "__matmul__"):
    _add(_n, method(_n), _matmul_samples)
_add("__rmatmul__", lambda t, x, y: x.__rmatmul__(y),
     lambda mk: [Sample(mk.rand(3, 4), mk.rand(2, 3)), Sample(mk.rand(3), mk.rand(3)),
                 Sample(mk.rand(2, 3, 4), mk.rand(3)), Sample(mk.rand(4, 2), mk.rand(2, 3), kind="error")])
_add("torch.matmul", function("matmul"), lambda mk: [Sample(mk.rand(2, 2, 3), mk.rand(3, 4)),
                                                      Sample(mk.rand(3), mk.rand(3))])
_add("linalg.matmul", _linalg("matmul"), lambda mk: [Sample(mk.rand(2, 3), mk.rand(3, 4)),
                                                      Sample(mk.rand(3), mk.rand(2, 3, 4))])

_add("mm", method("mm"),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(3, 4)), Sample(mk.rand(1, 1), mk.rand(1, 1), kind="size1"),
                 Sample(mk.rand(0, 3), mk.rand(3, 4), kind="empty"), Sample(mk.rand(2, 0), mk.rand(0, 4), kind="empty"),
                 Sample(mk.rand(2, 3), mk.rand(3, 0), kind="empty"),
                 Sample(mk.arr([[0.0, INF], [1.0, 2.0]]), mk.arr([[0.0, 0.0], [0.0, 1.0]]), kind="degenerate"),
                 Sample(mk.rand(2, 3), mk.rand(3, 4).astype(np.float32), kind="mixed_dtype"),
                 Sample(mk.rand(2, 3), mk.rand(4, 5), kind="error"), Sample(mk.rand(3), mk.rand(3, 4), kind="error"),
                 Sample(mk.rand(2, 3), mk.rand(2, 3, 4), kind="error")])
_add("bmm", method("bmm"),
     lambda mk: [Sample(mk.rand(2, 2, 3), mk.rand(2, 3, 4)), Sample(mk.rand(1, 1, 1), mk.rand(1, 1, 1), kind="size1"),
                 Sample(mk.rand(0, 2, 3), mk.rand(0, 3, 4), kind="empty"),
                 Sample(mk.rand(2, 2, 0), mk.rand(2, 0, 4), kind="empty"),
                 Sample(mk.rand(2, 2, 3), mk.rand(2, 3, 4).astype(np.float32), kind="mixed_dtype"),
                 Sample(mk.rand(2, 2, 3), mk.rand(3, 3, 4), kind="error"),
                 Sample(mk.rand(2, 2, 3), mk.rand(2, 4, 4), kind="error"),
                 Sample(mk.rand(2, 3), mk.rand(3, 4), kind="error"), Sample(mk.arr(1.0), mk.arr(2.0), kind="error")])
_add("mv", method("mv"),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(3)), Sample(mk.rand(1, 1), mk.rand(1), kind="size1"),
                 Sample(mk.rand(0, 3), mk.rand(3), kind="empty"), Sample(mk.rand(2, 0), mk.rand(0), kind="empty"),
                 Sample(mk.rand(2, 3), mk.rand(3).astype(np.float32), kind="mixed_dtype"),
                 Sample(mk.rand(2, 3), mk.rand(4), kind="error"), Sample(mk.rand(3), mk.rand(3), kind="error"),
                 Sample(mk.rand(2, 3), mk.arr(1.0), kind="error")])


def _vec_pairs(mk):
    yield Sample(mk.rand(3), mk.rand(3))
    yield Sample(mk.rand(1), mk.rand(1), kind="size1")
    yield Sample(mk.rand(0), mk.rand(0), kind="empty")
    yield Sample(mk.arr([0.0, 0.0, 0.0]), mk.rand(3), kind="degenerate")       # zero vector
    yield Sample(mk.arr([0.0, 1.0]), mk.arr([INF, 2.0]), kind="degenerate")    # 0 * inf
    yield Sample(mk.rand(3), mk.rand(3).astype(np.float32), kind="mixed_dtype")
    yield Sample(mk.rand(3), mk.rand(4), kind="error")
    yield Sample(mk.rand(2, 3), mk.rand(3), kind="error")
    yield Sample(mk.arr(1.0), mk.arr(2.0), kind="error")


for _n in ("dot", "vdot"):
    _add(_n, method(_n), _vec_pairs)

_add("inner", method("inner"),
     lambda mk: [Sample(mk.rand(3), mk.rand(3)), Sample(mk.rand(2, 3), mk.rand(4, 3)),
                 Sample(mk.rand(2, 2, 3), mk.rand(3)), Sample(mk.arr(1.5), mk.rand(2, 3), kind="0d"),
                 Sample(mk.rand(2, 3), mk.arr(-0.5), kind="0d"), Sample(mk.rand(0), mk.rand(0), kind="empty"),
                 Sample(mk.rand(2, 0), mk.rand(3, 0), kind="empty"),
                 Sample(mk.rand(2, 3), mk.rand(4), kind="error")], view=True)
for _n in ("outer", "ger"):
    _add(_n, method(_n),
         lambda mk: [Sample(mk.rand(3), mk.rand(4)), Sample(mk.rand(1), mk.rand(1), kind="size1"),
                     Sample(mk.rand(0), mk.rand(3), kind="empty"),
                     Sample(mk.arr([0.0, INF]), mk.arr([0.0, 1.0]), kind="degenerate"),
                     Sample(mk.rand(3), mk.rand(4).astype(np.float32), kind="mixed_dtype"),
                     Sample(mk.rand(2, 3), mk.rand(4), kind="error"), Sample(mk.arr(1.0), mk.rand(4), kind="error")])


# ------------------------------------------------------------------------ add + product family

def _addprod(name, inp, a, b, bad):
    """beta * input + alpha * (a op b): input of the product's shape, broadcast and 0-d; scaled;
    beta=0 with nan/inf in input (torch ignores input then); empty; dtype/shape errors."""
    def samples(mk):
        out = _shape(name, a, b)
        yield Sample(mk.rand(*out), mk.rand(*a), mk.rand(*b))
        yield Sample(mk.rand(*out[-1:]), mk.rand(*a), mk.rand(*b), kind="broadcast")
        yield Sample(mk.arr(0.7), mk.rand(*a), mk.rand(*b), kind="0d")
        yield Sample(mk.rand(*out), mk.rand(*a), mk.rand(*b), beta=0.5, alpha=-2.0)
        yield Sample(mk.rand(*out), mk.rand(*a), mk.rand(*b), beta=2, alpha=0)
        nanin = mk.rand(*out)
        nanin.reshape(-1)[:2] = [NAN, INF]
        yield Sample(nanin, mk.rand(*a), mk.rand(*b), beta=0, kind="degenerate")
        yield Sample(nanin, mk.rand(*a), mk.rand(*b), beta=0, alpha=1.5, kind="degenerate")
        zb = tuple(0 if k == len(b) - 2 else s for k, s in enumerate(b)) if name != "addr" else (0,)
        za = tuple(0 if k == len(a) - 1 else s for k, s in enumerate(a)) if name != "addr" else a
        if name == "addr":
            yield Sample(mk.rand(*a, 0), mk.rand(*a), mk.rand(0), kind="empty")
        else:
            yield Sample(mk.rand(*out), mk.rand(*za), mk.rand(*zb), kind="empty")   # k = 0: beta * input
        yield Sample(mk.rand(*out).astype(np.float32), mk.rand(*a), mk.rand(*b), grad=[1, 2], kind="mixed_dtype")
        # (torch 2.13's addr backward raises for mixed-dtype vectors, so only input's gradient
        # is compared there; tests/test_edges_linalg.py checks retrograd's)
        yield Sample(mk.rand(*out), mk.rand(*a), mk.rand(*b).astype(np.float32), grad=[0] if name == "addr" else [0, 1],
                     kind="mixed_dtype")
        for args in bad(mk):
            yield Sample(*args, kind="error")
    _add(name, method(name), samples, inplace=name + "_")
    _add("torch." + name, function(name),
         lambda mk: [Sample(mk.rand(*_shape(name, a, b)), mk.rand(*a), mk.rand(*b), beta=0.5, alpha=2)])


def _shape(name, a, b):
    if name == "addmm":
        return (a[0], b[1])
    if name == "addmv":
        return (a[0],)
    if name == "addr":
        return (a[0], b[0])
    if name == "baddbmm":
        return (a[0], a[1], b[2])
    return (a[1], b[2])   # addbmm


_addprod("addmm", None, (2, 3), (3, 4),
         lambda mk: [(mk.rand(2, 4), mk.rand(2, 3), mk.rand(4, 4)), (mk.rand(3, 4), mk.rand(2, 3), mk.rand(3, 4)),
                     (mk.rand(2, 4), mk.rand(3), mk.rand(3, 4))])
_addprod("addmv", None, (2, 3), (3,),
         lambda mk: [(mk.rand(2), mk.rand(2, 3), mk.rand(4)), (mk.rand(3), mk.rand(2, 3), mk.rand(3)),
                     (mk.rand(2), mk.rand(3), mk.rand(3))])
_addprod("addr", None, (2,), (3,),
         lambda mk: [(mk.rand(3, 3), mk.rand(2), mk.rand(3)), (mk.rand(2, 3), mk.rand(2, 2), mk.rand(3))])
_addprod("baddbmm", None, (2, 2, 3), (2, 3, 4),
         lambda mk: [(mk.rand(2, 2, 4), mk.rand(2, 2, 3), mk.rand(3, 3, 4)),
                     (mk.rand(3, 2, 4), mk.rand(2, 2, 3), mk.rand(2, 3, 4))])
_addprod("addbmm", None, (2, 2, 3), (2, 3, 4),
         lambda mk: [(mk.rand(2, 4), mk.rand(2, 2, 3), mk.rand(2, 4, 4)),
                     (mk.rand(3, 4), mk.rand(2, 2, 3), mk.rand(2, 3, 4))])


# ------------------------------------------------------------------------- kron, cross, trace

# Operands of different ranks get their own kind ("ranks"), so no non-contiguous variant is
# derived from them: torch 2.13's kron raises "view size is not compatible" for those.
_add("kron", method("kron"),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 2)), Sample(mk.rand(2), mk.rand(3)),
                 Sample(mk.rand(2, 3), mk.rand(3), kind="ranks"), Sample(mk.rand(2), mk.rand(2, 1, 2), kind="ranks"),
                 Sample(mk.arr(1.5), mk.rand(2, 2), kind="0d"), Sample(mk.arr(1.5), mk.arr(-2.0), kind="0d"),
                 Sample(mk.rand(0, 2), mk.rand(2, 2), kind="empty"),
                 Sample(mk.arr([[0.0, INF]]), mk.arr([[0.0], [1.0]]), kind="degenerate")],
     gradcheck_kinds=GRADCHECK_KINDS + ("ranks",))


def _cross_samples(mk):
    yield Sample(mk.rand(3), mk.rand(3), dim=0)
    yield Sample(mk.rand(2, 3), mk.rand(2, 3), dim=1)
    yield Sample(mk.rand(3, 2), mk.rand(3, 2), dim=0)
    yield Sample(mk.rand(4, 3), mk.rand(1, 3), dim=-1, kind="broadcast")
    yield Sample(mk.rand(3, 4), mk.rand(3, 4))                      # dim=None: first dim of size 3
    yield Sample(mk.rand(0, 3), mk.rand(0, 3), dim=1, kind="empty")
    yield Sample(mk.arr([1.0, 2.0, 3.0]), mk.arr([2.0, 4.0, 6.0]), dim=0, kind="degenerate")   # parallel
    yield Sample(mk.rand(2, 3), mk.rand(2, 3).astype(np.float32), dim=1, kind="mixed_dtype")
    yield Sample(mk.rand(2, 4), mk.rand(2, 4), dim=1, kind="error")
    yield Sample(mk.rand(2, 3), mk.rand(3), dim=-1, kind="error")
    yield Sample(mk.arr(1.0), mk.arr(2.0), dim=0, kind="error")


_add("cross", method("cross"), _cross_samples)
_add("linalg.cross", _linalg("cross"),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 3)), Sample(mk.rand(3, 2), mk.rand(3, 2), dim=0),
                 Sample(mk.rand(4, 3), mk.rand(1, 3), kind="broadcast"), Sample(mk.rand(3), mk.rand(2, 3), kind="error"),
                 Sample(mk.rand(2, 4), mk.rand(2, 4), kind="error")])
_add("trace", method("trace"),
     lambda mk: [Sample(mk.rand(3, 3)), Sample(mk.rand(2, 4)), Sample(mk.rand(4, 2)),
                 Sample(mk.rand(1, 1), kind="size1"), Sample(mk.rand(0, 0), kind="empty"),
                 Sample(mk.rand(0, 3), kind="empty"),
                 Sample(mk.rand(3), kind="error"), Sample(mk.rand(2, 2, 2), kind="error"),
                 Sample(mk.arr(1.0), kind="error")])


# ----------------------------------------------------------------------------- det, inverse

def _square(mk, n, *batch):
    """Well-conditioned matrices: random plus a diagonal shift."""
    return mk.rand(*batch, n, n) + 3 * np.eye(n)


def _det_samples(mk):
    yield Sample(_square(mk, 3))
    yield Sample(mk.rand(3, 3))
    yield Sample(_square(mk, 2, 2))
    yield Sample(mk.rand(1, 1), kind="size1")
    yield Sample(mk.rand(0, 0), kind="empty")
    yield Sample(mk.rand(2, 0, 0), kind="empty")
    yield Sample(mk.rand(0, 3, 3), kind="empty")
    # singular: rank n-1 (gradient = adjugate, nonzero), rank n-2 (gradient 0), the zero matrix,
    # and a batch mixing singular and regular matrices
    u, v = mk.rand(3, 1), mk.rand(3, 1)
    w = mk.rand(3, 1)
    yield Sample(u @ v.T + w @ mk.rand(1, 3), kind="degenerate")
    yield Sample(u @ v.T, kind="degenerate")
    # exactly singular (an exact zero LU pivot): torch 2.13's first derivative there is 0, not
    # the adjugate (see KNOWN_MISMATCHES below)
    yield Sample(mk.arr([[1.0, 2.0], [2.0, 4.0]]), kind="singular")
    yield Sample(mk.arr([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]]), kind="singular")   # rank 2
    yield Sample(mk.arr([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 2.0, 3.0]]), kind="singular")   # rank 1
    yield Sample(np.stack([mk.arr([[1.0, 2.0], [2.0, 4.0]]), _square(mk, 2)]), kind="singular")
    yield Sample(np.zeros((3, 3)), kind="zero")
    yield Sample(mk.rand(2, 3), kind="error")
    yield Sample(mk.rand(3), kind="error")
    yield Sample(mk.arr(2.0), kind="error")


_DET_FD = ("basic", "noncontig", "size1", "degenerate", "singular", "zero")
_add("det", method("det"), _det_samples, gradcheck_kinds=_DET_FD)
_add("torch.det", function("det"), lambda mk: [Sample(_square(mk, 3))])
_add("linalg.det", _linalg("det"), _det_samples, gradcheck_kinds=_DET_FD)
_known("det linalg.det", "grad", "singular",
       "torch 2.13 bug, retrograd is right: without create_graph torch's gradient at an exactly singular "
       "matrix is 0 (LU solve of det*I = 0), not the adjugate it gives with create_graph")
_known("det linalg.det", "gradgrad", "zero",
       "torch 2.13 bug, retrograd is right: the second derivative at the zero 3x3 matrix is 0; torch's "
       "SVD-based formula gives nan (repeated zero singular values)")


def _inv_samples(mk):
    yield Sample(_square(mk, 3))
    yield Sample(_square(mk, 2, 2))
    yield Sample(mk.rand(1, 1), kind="size1")
    yield Sample(mk.rand(0, 0), kind="empty")
    yield Sample(mk.rand(2, 0, 0), kind="empty")
    yield Sample(mk.arr([[1.0, 2.0], [2.0, 4.0]]), kind="degenerate")   # singular: error
    yield Sample(np.zeros((2, 2)), kind="degenerate")
    yield Sample(mk.rand(2, 3), kind="error")
    yield Sample(mk.rand(3), kind="error")
    yield Sample(mk.arr(2.0), kind="error")


_add("inverse", method("inverse"), _inv_samples)
_add("linalg.inv", _linalg("inv"), _inv_samples)


def _solve_samples(mk):
    yield Sample(_square(mk, 3), mk.rand(3, 2))
    yield Sample(_square(mk, 3), mk.rand(3))
    yield Sample(_square(mk, 3, 2), mk.rand(2, 3, 2))
    yield Sample(_square(mk, 3, 2), mk.rand(2, 3))                    # batch of vectors
    yield Sample(_square(mk, 3, 2), mk.rand(3, 1), kind="broadcast")
    yield Sample(_square(mk, 3), mk.rand(2, 3, 2), kind="broadcast")
    yield Sample(mk.rand(1, 1) + 2, mk.rand(1, 1), kind="size1")
    yield Sample(mk.rand(0, 0), mk.rand(0, 2), kind="empty")
    yield Sample(_square(mk, 3), mk.rand(3, 0), kind="empty")
    yield Sample(mk.arr([[1.0, 2.0], [2.0, 4.0]]), mk.rand(2), kind="degenerate")
    yield Sample(_square(mk, 3), mk.rand(4, 2), kind="error")
    yield Sample(mk.rand(2, 3), mk.rand(2), kind="error")


_add("linalg.solve", _linalg("solve"), _solve_samples)
_add("linalg.multi_dot", lambda t, *xs: t.linalg.multi_dot(list(xs)),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(3, 4), mk.rand(4, 2)), Sample(mk.rand(3), mk.rand(3, 4), mk.rand(4)),
                 Sample(mk.rand(3), mk.rand(3)), Sample(mk.rand(2, 3), mk.rand(3, 4), mk.rand(4)),
                 Sample(mk.rand(0, 3), mk.rand(3, 2), kind="empty"),
                 Sample(mk.rand(2, 3), mk.rand(4, 2), kind="error")], view=True)
_add("linalg.vecdot", _linalg("vecdot"),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 3)), Sample(mk.rand(2, 3), mk.rand(3), kind="broadcast"),
                 Sample(mk.rand(3, 2), mk.rand(3, 2), dim=0), Sample(mk.rand(0, 3), mk.rand(0, 3), kind="empty"),
                 Sample(mk.rand(2, 3), mk.rand(2, 4), kind="error")])
_add("chain_matmul", lambda t, *xs: t.chain_matmul(*xs),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(3, 4), mk.rand(4, 2)), Sample(mk.rand(2, 3), mk.rand(3, 4)),
                 Sample(mk.rand(2, 3), mk.rand(4, 2), kind="error")], view=True)
_add("tensordot", function("tensordot"),
     lambda mk: [Sample(mk.rand(2, 3, 4), mk.rand(3, 4, 2)), Sample(mk.rand(2, 3, 4), mk.rand(4, 3), dims=([1, 2], [1, 0])),
                 Sample(mk.rand(2, 3), mk.rand(4, 5), dims=0), Sample(mk.rand(2, 3), mk.rand(3, 2), dims=1),
                 Sample(mk.rand(2, 0), mk.rand(0, 3), dims=1, kind="empty"),
                 Sample(mk.rand(2, 3), mk.rand(4, 2), dims=1, kind="error")], view=True)


def _norm_samples(mk):
    yield Sample(mk.rand(2, 3))
    yield Sample(mk.rand(2, 3), ord=1)
    yield Sample(mk.rand(2, 3), ord=INF)
    yield Sample(mk.rand(4), ord=3, dim=0)
    yield Sample(mk.rand(2, 3), ord=2, dim=1, keepdim=True)
    yield Sample(mk.arr(-1.5), kind="0d")
    yield Sample(mk.rand(0, 3), kind="empty")
    yield Sample(np.zeros((2, 3)), kind="degenerate")                   # zero norm
    yield Sample(mk.arr([0.0, 3.0, -3.0]), ord=INF, kind="degenerate")  # ties of |x|
    yield Sample(mk.arr([0.0, 1.0, -2.0]), ord=0, kind="degenerate")


_add("linalg.vector_norm", _linalg("vector_norm"), _norm_samples)
_add("linalg.norm", _linalg("norm"),
     lambda mk: [Sample(mk.rand(2, 3)), Sample(mk.rand(4)), Sample(mk.rand(2, 3), ord="fro"),
                 Sample(mk.rand(2, 3), ord=1), Sample(mk.rand(2, 3), ord=-INF), Sample(mk.rand(4), ord=3),
                 Sample(mk.rand(2, 3, 4), dim=(1, 2)), Sample(mk.rand(2, 3), dim=1, keepdim=True),
                 Sample(mk.rand(2, 3), ord=INF, dim=(1, 0), keepdim=True), Sample(mk.rand(3, 2, 2), ord=-1, dim=(0, 2)),
                 Sample(np.zeros((2, 3)), kind="degenerate"), Sample(mk.rand(0, 3), kind="empty"),
                 Sample(mk.arr([[1.0, -2.0], [2.0, 1.0]]), ord=1, kind="degenerate"),      # tied column sums
                 Sample(mk.rand(2, 3, 4), ord=1, kind="error"), Sample(mk.rand(2, 3, 4), ord="fro", kind="error"),
                 Sample(mk.rand(2, 3), dim=(0, 1, 1), kind="error")])
_add("linalg.matrix_norm", _linalg("matrix_norm"),
     lambda mk: [Sample(mk.rand(2, 3)), Sample(mk.rand(2, 3), ord=1), Sample(mk.rand(2, 3), ord=-1),
                 Sample(mk.rand(2, 3), ord=INF), Sample(mk.rand(2, 3), ord=-INF), Sample(mk.rand(2, 3, 4), ord=1),
                 Sample(mk.rand(2, 3, 4), "fro", (0, 2), True), Sample(mk.rand(2, 3, 4), ord=-INF, dim=(2, 0)),
                 Sample(mk.rand(1, 1), kind="size1"), Sample(np.zeros((2, 2)), kind="degenerate"),
                 Sample(mk.arr([[1.0, -2.0], [2.0, 1.0]]), ord=INF, kind="degenerate"),
                 Sample(mk.rand(0, 3), ord=1, kind="empty"),
                 Sample(mk.rand(3), kind="error"), Sample(mk.rand(2, 3), ord=3, kind="error"),
                 Sample(mk.rand(2, 3), dim=(0, 0), kind="error")])


# ------------------------------------------------------------------------------- einsum
# einsum's own view semantics are checked here too: torch returns views for pure relabelings.

def _einsum(eq):
    def op(lib, *xs):
        return lib.einsum(eq, *xs)
    op.__name__ = "einsum"
    return op


_EINSUM = [
    ("ij,jk->ik", ((2, 3), (3, 4))), ("bij,bjk->bik", ((2, 2, 3), (2, 3, 4))), ("i,i->", ((3,), (3,))),
    ("i,j->ij", ((2,), (3,))), ("ij->", ((2, 3),)), ("ij->j", ((2, 3),)), ("ii->", ((3, 3),)),
    ("ii->i", ((3, 3),)), ("ij->ji", ((2, 3),)), ("...ij,...jk->...ik", ((2, 2, 3), (3, 4))),
    ("ij,ij->ij", ((2, 3), (2, 3))), ("i,i,i->", ((3,), (3,), (3,))), ("bi,bj->bij", ((2, 0), (2, 3))),
]


def _einsum_samples(mk):
    for eq, shapes in _EINSUM:
        yield Sample(eq, *[mk.rand(*s) for s in shapes])


_add("einsum", lambda t, eq, *xs: t.einsum(eq, *xs), _einsum_samples)
_add("einsum(ii->i)", _einsum("ii->i"), lambda mk: [Sample(mk.rand(3, 3))], view=True)
_add("einsum(ij->ji)", _einsum("ij->ji"), lambda mk: [Sample(mk.rand(2, 3))], view=True)


# ------------------------------------------------------------------ triangle / diagonal matrices

def _tri_samples(mk):
    yield Sample(mk.rand(3, 4))
    yield Sample(mk.rand(3, 4), 1)
    yield Sample(mk.rand(3, 4), -1)
    yield Sample(mk.rand(4, 3), diagonal=-5)
    yield Sample(mk.rand(2, 3, 3), 2)
    yield Sample(mk.rand(1, 1), kind="size1")
    yield Sample(mk.rand(0, 3), kind="empty")
    yield Sample(mk.arr([[NAN, INF], [-INF, 1.0]]), kind="degenerate")
    yield Sample(mk.rand(3), kind="error")
    yield Sample(mk.arr(1.0), kind="error")


for _n in ("tril", "triu"):
    _add(_n, method(_n), _tri_samples, inplace=_n + "_")

_add("diag", method("diag"),
     lambda mk: [Sample(mk.rand(3)), Sample(mk.rand(3), 1), Sample(mk.rand(3), -2),
                 Sample(mk.rand(3, 4)), Sample(mk.rand(3, 4), 1), Sample(mk.rand(3, 4), -2),
                 Sample(mk.rand(3, 4), 5), Sample(mk.rand(1), kind="size1"), Sample(mk.rand(0), kind="empty"),
                 Sample(mk.rand(0, 3), kind="empty"), Sample(mk.rand(2, 2, 2), kind="error"),
                 Sample(mk.arr(1.0), kind="error")])
_add("diag_embed", method("diag_embed"),
     lambda mk: [Sample(mk.rand(3)), Sample(mk.rand(2, 3)), Sample(mk.rand(2, 3), 1),
                 Sample(mk.rand(2, 3), -1, 0, 2), Sample(mk.rand(2, 3), offset=0, dim1=0, dim2=-1),
                 Sample(mk.rand(1), kind="size1"), Sample(mk.rand(0), kind="empty"),
                 Sample(mk.arr(1.5), kind="error"), Sample(mk.rand(2, 3), 0, 1, 1, kind="error")])


# ------------------------------------------------------------------------------ fills

_add("fill_", lambda t, x, v: (x * 1).fill_(v),
     lambda mk: [Sample(mk.rand(2, 3), 1.5), Sample(mk.rand(2, 3), mk.arr(2.5)), Sample(mk.rand(2, 3), mk.arr(2.5), grad=[1]),
                 Sample(mk.arr(1.0), -3.0, kind="0d"), Sample(mk.rand(0, 3), 1.0, kind="empty"),
                 Sample(mk.rand(2, 3), NAN, kind="degenerate"), Sample(mk.rand(2, 3), mk.rand(2), kind="error")])
_add("zero_", lambda t, x: (x * 1).zero_(),
     lambda mk: [Sample(mk.rand(2, 3)), Sample(mk.arr(1.0), kind="0d"), Sample(mk.rand(0, 3), kind="empty")])


# ------------------------------------------------------------- differences owned elsewhere
_known("einsum(ii->i) einsum(ij->ji)", "views", "basic noncontig nonfinite ties",
       "einsum returns a copy for a pure relabeling/diagonal; torch returns a view")
_known("einsum", "values", "bool", "bool reductions keep dtype bool; torch sums bools to int64")
_known("einsum", "errors", "bool", "bool products are computed; torch raises NotImplementedError (\"bmm\")")
_known("linalg.vector_norm linalg.norm linalg.matrix_norm", "gradgrad", "infgrad",
       "vector_norm's double backward (ops/reduce.py) with inf upstream gives -inf where torch gives nan")
_known("linalg.norm linalg.matrix_norm", "gradgrad", "degenerate",
       "vector_norm's double backward (ops/reduce.py) at a zero norm is 0 where torch gives nan")
_known("linalg.vector_norm", "gradgrad", "degenerate",
       "vector_norm's double backward (ops/reduce.py) at a zero norm is 0 where torch gives nan; ord=0 "
       "gradient requires grad where torch gives None")
_known("linalg.norm linalg.matrix_norm", "grad gradgrad", "nonfinite",
       "amax/amin backward (ops/reduce.py) when the maximum is nan gives 0 where torch's count-scaled "
       "mask gives nan")
