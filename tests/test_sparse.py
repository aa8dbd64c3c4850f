"""Sparse tensors against PyTorch: construction, layouts, printing, conversions, products,
sums, softmax, their gradients (layouts, coalesced flags, grad_fn names) and errors."""
import re

import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck
from helpers import torch, needs_torch

LIBS = pytest.mark.parametrize("lib", [retrograd] + ([torch] if torch is not None else []),
                               ids=lambda m: m.__name__)


def _both(fn):
    """fn(lib) on retrograd and on torch."""
    return fn(retrograd), fn(torch)


def _norm(s):
    return re.sub(r"0x[0-9a-fA-F]+", "0x?", s)


def _dense(t):
    t = t.detach()
    if repr(t.layout) != "torch.strided":
        t = t.to_dense()
    return np.asarray(t.numpy())


def _same(a, b, rtol=1e-6, atol=1e-7):
    """Values, dtype, layout (and coalesced flag for COO) equal."""
    assert repr(a.layout) == repr(b.layout)
    assert str(a.dtype) == str(b.dtype)
    assert tuple(a.shape) == tuple(b.shape)
    if repr(a.layout) == "torch.sparse_coo":
        assert a.is_coalesced() == b.is_coalesced()
        assert a._nnz() == b._nnz()
    np.testing.assert_allclose(_dense(a), _dense(b), rtol=rtol, atol=atol)


def _coo(lib, requires_grad=False, dtype=None):
    i = lib.tensor([[0, 1, 1, 0], [2, 0, 2, 2]])
    v = lib.tensor([3., 4., 5., -1.], dtype=dtype)
    return lib.sparse_coo_tensor(i, v, (2, 3), requires_grad=requires_grad)


# --- construction, metadata, printing ----------------------------------------------------------

@needs_torch
def test_metadata_matches_torch():
    def f(lib):
        s = _coo(lib)
        c = s.coalesce()
        r = s.to_sparse_csr()
        return (repr(s.layout), s.is_sparse, s.is_coalesced(), s._nnz(), s.sparse_dim(), s.dense_dim(),
                tuple(s.shape), str(s.dtype), s.dim(), s.numel(), c.is_coalesced(), c._nnz(), c.indices().tolist(),
                c.values().tolist(), repr(r.layout), r.is_sparse, r.is_sparse_csr, r.crow_indices().tolist(),
                r.col_indices().tolist(), r.values().tolist(), s.stride(), s.is_contiguous(),
                repr(lib.zeros(2).layout), lib.zeros(2).is_sparse, lib.zeros(2).is_sparse_csr,
                s.requires_grad, s.is_leaf)
    ours, theirs = _both(f)
    assert ours == theirs


@needs_torch
@pytest.mark.parametrize("case", ["coo", "coalesced", "csr", "csc", "hybrid64", "int", "empty", "grad", "leaf",
                                  "to_sparse", "csr_leaf", "big"])
def test_printing_matches_torch(case):
    def f(lib):
        i = lib.tensor([[0, 1, 1], [2, 0, 2]])
        v = lib.tensor([3., 4., 5.])
        if case == "coo":
            return lib.sparse_coo_tensor(i, v, (2, 3))
        if case == "coalesced":
            return lib.sparse_coo_tensor(i, v, (2, 3)).coalesce()
        if case == "csr":
            return lib.sparse_coo_tensor(i, v, (2, 3)).to_sparse_csr()
        if case == "csc":
            return lib.sparse_coo_tensor(i, v, (2, 3)).to_sparse_csc()
        if case == "hybrid64":
            return lib.sparse_coo_tensor(i, lib.tensor([[3., 1], [4, 1], [5, 1]], dtype=lib.float64), (2, 3, 2))
        if case == "int":
            return lib.sparse_coo_tensor(i, lib.tensor([3, 4, 5]), (2, 3))
        if case == "empty":
            return lib.sparse_coo_tensor(lib.zeros(2, 0, dtype=lib.int64), lib.zeros(0), (2, 3))
        if case == "grad":
            return lib.sparse_coo_tensor(i, v.requires_grad_(), (2, 3))
        if case == "leaf":
            return lib.sparse_coo_tensor(i, v, (2, 3), requires_grad=True)
        if case == "to_sparse":
            return lib.tensor([[0., 1.5], [2., 0.]]).to_sparse()
        if case == "csr_leaf":
            return lib.sparse_csr_tensor(lib.tensor([0, 1, 3]), lib.tensor([2, 0, 2]), v, (2, 3), requires_grad=True)
        if case == "big":
            g = np.random.default_rng(0)
            d = g.standard_normal((6, 7)) * (g.random((6, 7)) < 0.3)
            return lib.tensor(d).to_sparse()
    ours, theirs = _both(f)
    assert _norm(repr(ours)) == _norm(repr(theirs))


@needs_torch
def test_constructor_forms():
    def f(lib):
        out = []
        # numpy int32 indices and a dtype cast (pytorch/examples' gcn builds its adjacency so)
        s = lib.sparse_coo_tensor(np.array([[0, 1], [1, 0]], dtype=np.int32), lib.ones(2), (2, 2), dtype=lib.int64)
        out.append((str(s.dtype), s._indices().dtype == lib.int64, s.to_dense().tolist()))
        s = lib.sparse_coo_tensor([[0, 1], [1, 0]], [1, 2], (2, 2))
        out.append((str(s.dtype), s.to_dense().tolist()))
        s = lib.sparse_coo_tensor(lib.tensor([[0, 3]]), lib.tensor([1., 2.]))   # size inferred
        out.append(tuple(s.shape))
        s = lib.sparse_coo_tensor(lib.tensor([[0, 0, 1]]), lib.tensor([1., 2, 3]), (2,))
        out.append((s.coalesce().indices().tolist(), s.coalesce().values().tolist()))
        r = lib.sparse_csr_tensor(lib.tensor([0, 1, 3]), lib.tensor([2, 0, 2]), lib.tensor([1., 2., 3.]))
        out.append((tuple(r.shape), r.to_dense().tolist(), r.to_sparse().is_coalesced(),
                    r.to_sparse().indices().tolist()))
        c = lib.sparse_csc_tensor(lib.tensor([0, 1, 1, 3]), lib.tensor([1, 0, 1]), lib.tensor([4., 3., 5.]), (2, 3))
        out.append((c.to_dense().tolist(), c.to_sparse_csr().col_indices().tolist()))
        return out
    ours, theirs = _both(f)
    assert ours == theirs


@needs_torch
@pytest.mark.parametrize("code", [
    "lib.sparse_coo_tensor(i, v, (2, 3, 4))",
    "lib.sparse_coo_tensor(i, v[:2], (2, 3))",
    "lib.sparse_coo_tensor(i[0], v, (2, 3))",
    "s.indices()",
    "s.values()",
    "s.to_sparse_csr().indices()",
    "s.is_coalesced() if False else s.to_sparse_csr().is_coalesced()",
    "lib.exp(s)",
    "s.view(6)",
    "s.numpy()",
    "s + 1",
    "1 + s",
    "s - 1",
    "1 - s",
    "lib.tensor(1.) + s",
    "s / s",
    "2 / s",
    "lib.ones(3) + s",
    "s + lib.ones(2, 3)",
    "lib.mm(s, lib.ones(2, 2))",
    "lib.sparse.mm(s, lib.ones(2, 2))",
    "lib.mm(s, lib.ones(3, 2, dtype=lib.float64))",
    "s.item()",
    "s.to_sparse_csr().stride()", "s.to_sparse_csc().stride()", "s.to_sparse_csr().is_contiguous()",
    "s.to_sparse_csc().is_contiguous()", "s.crow_indices()", "s.to_sparse_csr().ccol_indices()",
    "s.to_sparse_csc().crow_indices()", "s.to_sparse_csr().row_indices()", "s.to_sparse_csr().is_coalesced()",
    "v.is_coalesced()", "v.indices()", "v.values()", "v._nnz()", "v.coalesce()", "v.crow_indices()",
    "s.to_sparse_csr().coalesce()", "s.to_sparse_csr()._indices()", "s.data_ptr()",
    "lib.ones(2, 2, 2).to_sparse().to_sparse_csr()",
    "lib.sparse_coo_tensor([[0, 2]], [1., 2.], (2,), check_invariants=True)",
    "lib.sparse_coo_tensor([[0, -1]], [1., 2.], (2,), check_invariants=True)",
    "invariants_on(lambda: lib.sparse_coo_tensor([[0, 2]], [1., 2.], (2,)))",
])
def test_errors_match_torch(code):
    def f(lib):
        i = lib.tensor([[0, 1, 1], [2, 0, 2]])
        v = lib.tensor([3., 4., 5.])
        s = lib.sparse_coo_tensor(i, v, (2, 3))  # noqa: F841  (the codes use it)

        def invariants_on(fn):
            with lib.sparse.check_sparse_tensor_invariants():
                fn()
        try:
            eval(code)
        except Exception as e:
            msg = str(e)
            if "Could not run" in msg:   # the backend list after it is PyTorch's build's
                msg = msg.split(" is only available for these backends")[0]
            return type(e).__name__, msg
        return None
    ours, theirs = _both(f)
    assert theirs is not None
    assert ours == theirs


# --- values of ops ---------------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("op", ["s+s", "s+s2", "s-s2", "d+s", "d-s", "s*2", "2*s", "s/2", "-s", "s.t()",
                                "sum", "sum0", "sum1", "sumtuple", "softmax1", "softmax0", "logsoftmax1",
                                "mm", "spmm", "sparse.mm", "matmul", "s@d", "d@s", "s@vec", "addmm", "csr@d",
                                "s@s", "to_dense", "coalesce", "csr_roundtrip", "csc_roundtrip", "s.sum()",
                                "dense_to_sparse_hybrid", "sparse_mask", "s*d", "double", "s*s", "s**2"])
def test_op_values_match_torch(op):
    def f(lib):
        g = np.random.default_rng(1)
        s = _coo(lib)
        s2 = lib.sparse_coo_tensor(lib.tensor([[0, 1], [0, 0]]), lib.tensor([1., 2.]), (2, 3))
        d = lib.tensor(g.standard_normal((3, 2)).astype(np.float32))
        d23 = lib.tensor(g.standard_normal((2, 3)).astype(np.float32))
        return {
            "s+s": lambda: s + s, "s+s2": lambda: s + s2, "s-s2": lambda: s - s2, "d+s": lambda: d23 + s,
            "d-s": lambda: d23 - s, "s*2": lambda: s * 2, "2*s": lambda: 2 * s, "s/2": lambda: s / 2,
            "-s": lambda: -s, "s.t()": lambda: s.t(),
            "sum": lambda: lib.sparse.sum(s), "sum0": lambda: lib.sparse.sum(s, 0),
            "sum1": lambda: lib.sparse.sum(s, dim=1), "sumtuple": lambda: lib.sparse.sum(s, (0, 1)),
            "softmax1": lambda: lib.sparse.softmax(s, 1), "softmax0": lambda: lib.sparse.softmax(s, 0),
            "logsoftmax1": lambda: lib.sparse.log_softmax(s, 1),
            "mm": lambda: lib.mm(s, d), "spmm": lambda: lib.spmm(s, d), "sparse.mm": lambda: lib.sparse.mm(s, d),
            "matmul": lambda: lib.matmul(s, d), "s@d": lambda: s @ d, "d@s": lambda: d.t() @ s.t(),
            "s@vec": lambda: s @ lib.ones(3),
            "addmm": lambda: lib.sparse.addmm(lib.ones(2, 2), s, d, beta=0.5, alpha=2),
            "csr@d": lambda: s.to_sparse_csr() @ d, "s@s": lambda: s @ s.t(),
            "to_dense": lambda: s.to_dense(), "coalesce": lambda: s.coalesce(),
            "csr_roundtrip": lambda: s.to_sparse_csr().to_sparse(), "csc_roundtrip": lambda: s.to_sparse_csc(),
            "s.sum()": lambda: s.sum(),
            "dense_to_sparse_hybrid": lambda: lib.tensor([[0., 0.], [1., 0.], [0., 0.]]).to_sparse(1),
            "sparse_mask": lambda: d23.sparse_mask(s.coalesce()),
            "s*d": lambda: s * d23, "double": lambda: s.double(), "s*s": lambda: s * s, "s**2": lambda: s ** 2,
        }[op]()
    ours, theirs = _both(f)
    _same(ours, theirs, rtol=1e-5, atol=1e-6)


# --- gradients ------------------------------------------------------------------------------------

GRAD_OPS = ["mm", "spmm", "matmul", "sparse.mm", "addmm", "to_dense", "coalesce", "values", "mul", "div", "neg",
            "add", "t", "pow", "sparse.sum", "sparse.sum1", "softmax", "log_softmax", "csr", "s.sum()", "d@s"]


@needs_torch
@pytest.mark.parametrize("op", GRAD_OPS)
def test_sparse_leaf_gradients_match_torch(op):
    """A sparse leaf's gradient: layout (sparse or dense, as torch), coalesced flag, values,
    and the grad_fn name of the op's output."""
    def f(lib):
        g = np.random.default_rng(2)
        s = _coo(lib, requires_grad=True)
        d = lib.tensor(g.standard_normal((3, 2)).astype(np.float32), requires_grad=True)
        w = lib.tensor(g.standard_normal((2, 3)).astype(np.float32))
        fn = {
            "mm": lambda: lib.mm(s, d), "spmm": lambda: lib.spmm(s, d), "matmul": lambda: lib.matmul(s, d),
            "sparse.mm": lambda: lib.sparse.mm(s, d),
            "addmm": lambda: lib.sparse.addmm(lib.ones(2, 2, requires_grad=True), s, d, beta=0.5, alpha=2),
            "to_dense": lambda: s.to_dense(), "coalesce": lambda: s.coalesce(),
            "values": lambda: s.coalesce().values(), "mul": lambda: s * 3, "div": lambda: s / 4,
            "neg": lambda: -s, "add": lambda: s + s, "t": lambda: s.t(), "sparse.sum": lambda: lib.sparse.sum(s),
            "sparse.sum1": lambda: lib.sparse.sum(s, 1), "softmax": lambda: lib.sparse.softmax(s, 1),
            "log_softmax": lambda: lib.sparse.log_softmax(s, 1), "csr": lambda: s.to_sparse_csr(),
            "s.sum()": lambda: s.sum(), "d@s": lambda: lib.mm(d.t(), s.t()), "pow": lambda: s ** 3,
        }[op]
        o = fn()
        name = type(o.grad_fn).__name__
        dense = o if o.layout == lib.strided else o.to_dense()
        if dense.dim() == 2 and dense.shape == (2, 3):
            dense = dense * w
        (dense * dense).sum().backward()
        return name, s.grad, d.grad
    (n1, g1, d1), (n2, g2, d2) = _both(f)
    assert n1 == n2
    _same(g1, g2, rtol=1e-5, atol=1e-5)
    assert (d1 is None) == (d2 is None)
    if d1 is not None:
        _same(d1, d2, rtol=1e-5, atol=1e-5)


@needs_torch
def test_values_tensor_gradient_matches_torch():
    """Gradients reach a dense values tensor through sparse_coo_tensor (gathered per nnz)."""
    def f(lib):
        out = []
        for k in range(3):
            v = lib.tensor([3., 4., 5., 1.], requires_grad=True)
            s = lib.sparse_coo_tensor(lib.tensor([[0, 1, 1, 1], [2, 0, 2, 2]]), v, (2, 3))
            name = type(s.grad_fn).__name__
            if k == 0:
                (s.to_dense() * lib.arange(6.).view(2, 3)).sum().backward()
            elif k == 1:
                lib.sparse.mm(s, lib.arange(6.).view(3, 2)).pow(2).sum().backward()
            else:
                lib.mm(s, lib.arange(6.).view(3, 2)).pow(2).sum().backward()
            out.append((name, v.grad.tolist()))
        return out
    ours, theirs = _both(f)
    assert ours == theirs


@needs_torch
def test_dense_operand_gradient_through_two_sparse_products():
    """The gcn pattern: dense features -> sparse adj @ (x @ W) twice, gradients for W."""
    def f(lib):
        g = np.random.default_rng(3)
        a = g.random((8, 8)) * (g.random((8, 8)) < 0.3) + np.eye(8)
        adj = lib.tensor(a.astype(np.float32)).to_sparse()
        x = lib.tensor(g.standard_normal((8, 5)).astype(np.float32)).to_sparse()
        w1 = lib.tensor(g.standard_normal((5, 4)).astype(np.float32), requires_grad=True)
        w2 = lib.tensor(g.standard_normal((4, 3)).astype(np.float32), requires_grad=True)
        h = lib.relu(lib.spmm(adj, lib.mm(x, w1)))
        o = lib.spmm(adj, lib.mm(h, w2))
        lib.nn.functional.log_softmax(o, 1).sum().backward()
        return o, w1.grad, w2.grad
    ours, theirs = _both(f)
    for a, b in zip(ours, theirs):
        _same(a, b, rtol=1e-5, atol=1e-5)


def test_gradcheck_dense_operands():
    """float64 finite differences through sparse @ dense, dense @ sparse and sparse.addmm."""
    g = np.random.default_rng(4)
    a = g.standard_normal((4, 5)) * (g.random((4, 5)) < 0.5)
    s = retrograd.tensor(a).to_sparse()
    d = retrograd.tensor(g.standard_normal((5, 3)), requires_grad=True)
    e = retrograd.tensor(g.standard_normal((2, 4)), requires_grad=True)
    b = retrograd.tensor(g.standard_normal((4, 3)), requires_grad=True)
    assert gradcheck(lambda x: retrograd.mm(s, x), (d,))
    assert gradcheck(lambda x: x @ s, (e,))
    assert gradcheck(lambda x, y: retrograd.sparse.addmm(y, s, x, beta=0.5, alpha=1.5), (d, b))
    assert gradcheck(lambda x: retrograd.spmm(s, retrograd.tanh(x)).pow(2), (d,))


def test_gradcheck_values():
    """float64 finite differences w.r.t. the values of a sparse tensor (dense values leaf)."""
    g = np.random.default_rng(5)
    i = retrograd.tensor([[0, 1, 2, 2], [1, 0, 2, 1]])
    v = retrograd.tensor(g.standard_normal(4), requires_grad=True)
    d = retrograd.tensor(g.standard_normal((3, 2)))
    assert gradcheck(lambda x: retrograd.sparse_coo_tensor(i, x, (3, 3)).to_dense(), (v,))
    assert gradcheck(lambda x: retrograd.sparse.mm(retrograd.sparse_coo_tensor(i, x, (3, 3)), d), (v,))
    assert gradcheck(lambda x: retrograd.sparse.softmax(retrograd.sparse_coo_tensor(i, x, (3, 3)), 1).to_dense(),
                     (v,))
    assert gradcheck(lambda x: retrograd.sparse.log_softmax(retrograd.sparse_coo_tensor(i, x, (3, 3)), 0)
                     .to_dense(), (v,))
    assert gradcheck(lambda x: retrograd.sparse.sum(retrograd.sparse_coo_tensor(i, x, (3, 3)), 1).to_dense(), (v,))


def test_create_graph_through_dense_operand():
    """The dense operand's gradient is itself differentiable (create_graph)."""
    g = np.random.default_rng(6)
    s = retrograd.tensor(g.standard_normal((3, 4)) * (g.random((3, 4)) < 0.6)).to_sparse()
    x = retrograd.tensor(g.standard_normal((4, 2)), requires_grad=True)
    y = retrograd.mm(s, x).pow(2).sum()
    (gx,) = retrograd.autograd.grad(y, x, create_graph=True)
    (ggx,) = retrograd.autograd.grad(gx.sum(), x)
    m = s.to_dense().numpy()
    np.testing.assert_allclose(ggx.numpy(), 2 * m.T @ m @ np.ones((4, 2)), rtol=1e-10)


# --- accumulation, embedding, optimizers ------------------------------------------------------------

@needs_torch
def test_accumulation_layouts_match_torch():
    def f(lib):
        w = lib.ones(5, 3, requires_grad=True)
        F = lib.nn.functional
        out = []
        F.embedding(lib.tensor([[1, 2], [1, 4]]), w, sparse=True).sum().backward()
        out.append(w.grad)
        F.embedding(lib.tensor([4]), w, sparse=True).sum().backward()      # sparse + sparse
        out.append(w.grad)
        (w * 2).sum().backward()                                            # sparse .grad + dense
        out.append(w.grad)
        F.embedding(lib.tensor([0, 0]), w, sparse=True).sum().backward()   # dense .grad + sparse
        out.append(w.grad)
        e = lib.nn.Embedding(6, 2, sparse=True, padding_idx=1)
        with lib.no_grad():
            e.weight.copy_(lib.arange(12.).view(6, 2))
        e(lib.tensor([[1, 2, 2], [3, 1, 5]])).pow(2).sum().backward()
        out.append(e.weight.grad)
        return out, type(F.embedding(lib.tensor([1]), w, sparse=True).grad_fn).__name__
    (ours, n1), (theirs, n2) = _both(f)
    assert n1 == n2
    for a, b in zip(ours, theirs):
        _same(a, b)


def _embedding_run(lib, opt_name, steps=4, **kw):
    lib.manual_seed(0)
    g = np.random.default_rng(7)
    emb = lib.nn.Embedding(10, 4, sparse=True)
    with lib.no_grad():
        emb.weight.copy_(lib.tensor(g.standard_normal((10, 4)).astype(np.float32)))
    opt = getattr(lib.optim, opt_name)(emb.parameters(), **kw)
    target = lib.tensor(g.standard_normal((3, 4)).astype(np.float32))
    for k in range(steps):
        idx = lib.tensor([[1, 2, 1], [7, 2, 0], [3, 3, 3], [9, 1, 2]][k])
        opt.zero_grad()
        ((emb(idx) - target) ** 2).sum().backward()
        opt.step()
    return emb.weight.detach().numpy().copy()


@needs_torch
@pytest.mark.parametrize("opt,kw", [("SparseAdam", {"lr": 0.1}), ("SparseAdam", {"lr": 0.05, "maximize": True}),
                                    ("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9}),
                                    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
                                    ("SGD", {"lr": 0.1, "momentum": 0.5, "dampening": 0.3, "maximize": True}),
                                    ("Adagrad", {"lr": 0.5}), ("Adagrad", {"lr": 0.5, "lr_decay": 0.1})])
def test_optimizers_with_sparse_gradients_match_torch(opt, kw):
    np.testing.assert_allclose(_embedding_run(retrograd, opt, **kw), _embedding_run(torch, opt, **kw),
                               rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("code", [
    "lib.optim.SparseAdam([lib.nn.Parameter(lib.ones(2))], lr=0)",
    "lib.optim.SparseAdam([lib.nn.Parameter(lib.ones(2))], eps=0)",
    "lib.optim.SparseAdam([lib.nn.Parameter(lib.ones(2))], betas=(1.0, 0.9))",
    "lib.optim.SparseAdam([lib.sparse_coo_tensor([[0]], [1.], (2,), requires_grad=True)])",
    "dense_grad_sparse_adam()",
    "lib.optim.Adagrad(e.parameters(), weight_decay=0.1).step()",
    "lib.optim.SGD(e.parameters(), lr=0.1, weight_decay=0.1).step()",
    "lib.nn.Embedding(3, 2, sparse=True, scale_grad_by_freq=True)(lib.tensor([1])).sum().backward()",
])
def test_optimizer_errors_match_torch(code):
    def f(lib):
        e = lib.nn.Embedding(4, 2, sparse=True)
        e(lib.tensor([1, 2])).sum().backward()

        def dense_grad_sparse_adam():
            p = lib.nn.Parameter(lib.ones(2))
            p.sum().backward()
            lib.optim.SparseAdam([p]).step()
        try:
            eval(code)
        except Exception as ex:
            return type(ex).__name__, str(ex)
        return None
    ours, theirs = _both(f)
    assert theirs is not None
    assert ours == theirs


@LIBS
def test_sparse_adam_state_layout(lib):
    emb = lib.nn.Embedding(4, 2, sparse=True)
    opt = lib.optim.SparseAdam(emb.parameters(), lr=0.1)
    emb(lib.tensor([1, 3])).sum().backward()
    opt.step()
    st = opt.state[emb.weight]
    assert list(st) == ["step", "exp_avg", "exp_avg_sq"]
    assert st["step"] == 1
    assert st["exp_avg"].layout == lib.strided
    assert st["exp_avg"][0].abs().sum().item() == 0 and st["exp_avg"][1].abs().sum().item() > 0


@needs_torch
def test_zero_grad_set_to_none_false_empties_sparse_grad():
    def f(lib):
        e = lib.nn.Embedding(4, 2, sparse=True)
        out = []
        for zero in (lambda: lib.optim.SGD(e.parameters(), lr=0.1).zero_grad(set_to_none=False),
                     lambda: e.zero_grad(set_to_none=False)):
            e(lib.tensor([1, 2])).sum().backward()
            zero()
            out.append(_norm(repr(e.weight.grad)))
            e(lib.tensor([3, 2])).sum().backward()
            out.append(_norm(repr(e.weight.grad)))
        return out
    ours, theirs = _both(f)
    assert ours == theirs


@LIBS
def test_to_and_casts(lib):
    s = lib.sparse_coo_tensor([[0, 1]], [1., 2.], (3,))
    assert s.to("cpu") is s and s.to(lib.float32) is s
    d = s.to(lib.float64)
    assert d.dtype == lib.float64 and d.layout == lib.sparse_coo and d.to_dense().tolist() == [1., 2., 0.]
    assert s.double().dtype == lib.float64 and s.float().dtype == lib.float32


def test_save_refuses_sparse_clearly(tmp_path):
    s = retrograd.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3., 4., 5.], (2, 3))
    with pytest.raises(TypeError, match="cannot store a sparse tensor"):
        retrograd.save({"s": s}, str(tmp_path / "s.pt"))


DENSE_PATHS = ["to_sparse", "to_sparse_csr", "to_sparse_csc", "to_sparse_sum", "to_sparse_mm", "to_sparse_softmax",
               "csr_mm_dense", "csr_to_dense", "d_minus_s", "mv", "sparse_mask", "sparse_sum_dtype"]


@needs_torch
@pytest.mark.parametrize("path", DENSE_PATHS)
def test_dense_leaf_through_sparse_layouts_matches_torch(path):
    """A dense leaf made sparse (or meeting a sparse operand) and back: values, grad_fn names
    along the way, and the dense leaf's gradient."""
    def f(lib):
        g = np.random.default_rng(8)
        a = g.standard_normal((3, 4)) * (g.random((3, 4)) < 0.6)
        x = lib.tensor(a, requires_grad=True)
        s = lib.tensor(a).to_sparse()
        w = lib.tensor(g.standard_normal((3, 4)))
        v = lib.tensor(g.standard_normal(4), requires_grad=True)
        d = lib.tensor(g.standard_normal((4, 2)), requires_grad=True)
        names = []

        def n(t):
            names.append(type(t.grad_fn).__name__)
            return t
        out = {
            "to_sparse": lambda: n(n(x.to_sparse()).to_dense()) * w,
            "to_sparse_csr": lambda: n(n(x.to_sparse_csr()).to_dense()) * w,
            "to_sparse_csc": lambda: n(n(x.to_sparse_csc()).to_dense()) * w,
            "to_sparse_sum": lambda: n(lib.sparse.sum(n(x.to_sparse()), 1)).to_dense(),
            "to_sparse_mm": lambda: n(lib.sparse.mm(n(x.to_sparse()), d)),
            "to_sparse_softmax": lambda: n(lib.sparse.softmax(n(x.to_sparse()), 1)).to_dense() * w,
            "csr_mm_dense": lambda: n(lib.mm(s.to_sparse_csr(), d)),
            "csr_to_dense": lambda: n(s.to_sparse_csr() * 2).to_dense() + x,
            "d_minus_s": lambda: n(x - s) * w,
            "mv": lambda: n(s @ v),
            "sparse_mask": lambda: n(n(x.sparse_mask(s)).to_dense()) * w,
            "sparse_sum_dtype": lambda: n(lib.sparse.sum(s, 0, dtype=lib.float32)).to_dense() * 2,
        }[path]()
        loss = (out * out).sum()
        if loss.requires_grad:
            loss.backward()
        return out, names, x.grad, v.grad, d.grad
    (o1, n1, *g1), (o2, n2, *g2) = _both(f)
    # float32 results (sparse_sum_dtype) may differ in the last bit: summation order
    tol = dict(rtol=1e-10, atol=1e-12) if o2.dtype == torch.float64 else dict(rtol=1e-6, atol=1e-7)
    _same(o1, o2, **tol)
    assert n1 == n2
    for a, b in zip(g1, g2):
        assert (a is None) == (b is None)
        if a is not None:
            _same(a, b, rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("layout", ["csr", "csc"])
@pytest.mark.parametrize("op", ["to_dense", "sparse.mm", "mm", "values_leaf"])
def test_compressed_leaf_gradients_match_torch(layout, op):
    if layout == "csc" and op in ("to_dense", "sparse.mm"):
        pytest.skip("PyTorch 2.13 has no backward for a CSC leaf here (retrograd gives the masked gradient)")

    def f(lib):
        g = np.random.default_rng(9)
        a = g.standard_normal((3, 4)) * (g.random((3, 4)) < 0.6)
        d = lib.tensor(g.standard_normal((4, 2)), requires_grad=True)
        w = lib.tensor(g.standard_normal((3, 4)))
        base = lib.tensor(a).to_sparse_csr() if layout == "csr" else lib.tensor(a).to_sparse_csc()
        if op == "values_leaf":
            v = base.values().clone().requires_grad_()
            if layout == "csr":
                s = lib.sparse_csr_tensor(base.crow_indices(), base.col_indices(), v, (3, 4))
            else:
                s = lib.sparse_csc_tensor(base.ccol_indices(), base.row_indices(), v, (3, 4))
            o = s.to_dense() * w
            (o * o).sum().backward()
            return type(s.grad_fn).__name__, v.grad, None, None
        s = base.detach().requires_grad_()
        o = {"to_dense": lambda: s.to_dense() * w, "sparse.mm": lambda: lib.sparse.mm(s, d),
             "mm": lambda: lib.mm(s, d)}[op]()
        (o * o).sum().backward()
        return type(o.grad_fn).__name__, s.grad, d.grad, o
    (n1, g1, d1, o1), (n2, g2, d2, o2) = _both(f)
    assert n1 == n2
    assert repr(g1.layout) == repr(g2.layout)
    np.testing.assert_allclose(_dense(g1), _dense(g2), rtol=1e-10, atol=1e-12)
    if repr(g2.layout) != "torch.strided":
        np.testing.assert_allclose(g1.values().numpy(), g2.values().numpy(), rtol=1e-10, atol=1e-12)
    if d2 is not None:
        np.testing.assert_allclose(d1.numpy(), d2.numpy(), rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("log", [False, True])
def test_hybrid_softmax_matches_torch(dim, log):
    """Softmax of a hybrid COO tensor (2 sparse + 1 dense dim) along a sparse or the dense dim."""
    def f(lib):
        g = np.random.default_rng(10)
        i = lib.tensor([[0, 1, 1, 2, 0], [1, 0, 2, 2, 1]])
        v = lib.tensor(g.standard_normal((5, 3)), requires_grad=True)
        s = lib.sparse_coo_tensor(i, v, (3, 3, 3))
        fn = lib.sparse.log_softmax if log else lib.sparse.softmax
        o = fn(s, dim)
        w = lib.tensor(g.standard_normal((3, 3, 3)))
        (o.to_dense() * w).sum().backward()
        return o, type(o.grad_fn).__name__, v.grad
    (o1, n1, g1), (o2, n2, g2) = _both(f)
    assert n1 == n2
    _same(o1, o2, rtol=1e-10, atol=1e-12)
    if dim == -1:
        # PyTorch 2.13's backward mishandles a negative dense dim (its own gradcheck fails there);
        # retrograd's gradient is checked by finite differences instead
        i = retrograd.tensor([[0, 1, 1, 2, 0], [1, 0, 2, 2, 1]])
        v = retrograd.tensor(np.random.default_rng(11).standard_normal((5, 3)), requires_grad=True)
        fn = retrograd.sparse.log_softmax if log else retrograd.sparse.softmax
        assert gradcheck(lambda x: fn(retrograd.sparse_coo_tensor(i, x, (3, 3, 3)), dim).to_dense(), (v,))
        return
    np.testing.assert_allclose(g1.numpy(), g2.numpy(), rtol=1e-10, atol=1e-12)


@needs_torch
def test_dense_sparse_dims_match_torch():
    def f(lib):
        x = lib.ones(2, 3)
        return x.sparse_dim(), x.dense_dim(), x.to_dense() is x, x.is_sparse, x.is_sparse_csr, repr(x.layout)
    ours, theirs = _both(f)
    assert ours == theirs


@needs_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("extra", ["plain", "psw_padding", "module"])
def test_embedding_bag_sparse_gradients_match_torch(mode, extra):
    def f(lib):
        F = lib.nn.functional
        w = lib.arange(12.).view(6, 2).requires_grad_()
        try:
            if extra == "plain":
                o = F.embedding_bag(lib.tensor([1, 2, 4, 5, 4, 3]), w, lib.tensor([0, 2, 2, 4]), mode=mode, sparse=True)
            elif extra == "psw_padding":
                if mode != "sum":
                    return None
                o = F.embedding_bag(lib.tensor([1, 2, 4, 5]), w, lib.tensor([0, 2]), mode="sum", sparse=True,
                                    per_sample_weights=lib.tensor([1., 2, 3, 4]), padding_idx=2)
            else:
                bag = lib.nn.EmbeddingBag(6, 2, mode=mode, sparse=True)
                with lib.no_grad():
                    bag.weight.copy_(lib.arange(12.).view(6, 2))
                w = bag.weight
                o = bag(lib.tensor([[1, 2], [3, 3]]))
        except Exception as e:
            return type(e).__name__, str(e)
        (o * lib.arange(float(o.numel())).view(o.shape)).sum().backward()
        return _norm(repr(w.grad)), w.grad.is_coalesced(), type(o.grad_fn).__name__
    ours, theirs = _both(f)
    assert ours == theirs


@LIBS
def test_data_and_detach_keep_the_layout(lib):
    s = lib.sparse_coo_tensor([[0, 1]], [1., 2.], (3,), requires_grad=True)
    for t in (s.data, s.detach()):
        assert t.layout == lib.sparse_coo and not t.requires_grad and t.to_dense().tolist() == [1., 2., 0.]
    c = s.clone()
    assert type(c.grad_fn).__name__ == "CloneBackward0" and c.to_dense().tolist() == [1., 2., 0.]


@needs_torch
@pytest.mark.parametrize("code", ["lib.exp(s)", "s.view(3)", "s.exp()", "lib.cos(s)", "s.log()", "s.cumsum(0)",
                                  "s.flip(0)", "s.max()", "s.prod()"])
def test_unsupported_dense_ops_name_the_op_as_torch(code):
    """A dense op reaching a sparse tensor fails with PyTorch's missing-kernel error naming the op."""
    def f(lib):
        s = lib.sparse_coo_tensor([[0, 1]], [1., 2.], (3,))  # noqa: F841  (the codes use it)
        try:
            eval(code)
        except NotImplementedError as e:
            return str(e).split(" is only available for these backends")[0]
        return None
    ours, theirs = _both(f)
    assert theirs is not None and ours == theirs
