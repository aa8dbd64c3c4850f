"""Embedding and EmbeddingBag against PyTorch."""
import numpy as np
import pytest

import retrograd
import retrograd.nn as rnn
import retrograd.nn.functional as RF
from helpers import check, gradcheck_op, needs_torch, torch
from nn_seq_helpers import lib_of, module_parity, double_backward_parity

IDX = [[1, 2, 4, 2], [0, 9, 1, 1]]
FLAT = [1, 2, 4, 2, 0, 9, 1, 1, 5]


def T(x, v):
    return lib_of(x).tensor(v)


@pytest.mark.parametrize("kw", [{}, dict(padding_idx=1), dict(padding_idx=-9), dict(scale_grad_by_freq=True),
                                dict(padding_idx=2, scale_grad_by_freq=True)])
def test_embedding_parity(kw):
    check(lambda w: lib_of(w).nn.functional.embedding(T(w, IDX), w, **kw), [(10, 3)])
    check(lambda w: lib_of(w).nn.functional.embedding(T(w, 7), w, **kw), [(10, 3)])


def test_embedding_gradcheck():
    idx = retrograd.tensor([[1, 2], [2, 0]])
    gradcheck_op(lambda w: RF.embedding(idx, w), [(3, 2)])


@needs_torch
def test_embedding_double_backward():
    double_backward_parity(lambda w: lib_of(w).nn.functional.embedding(T(w, IDX), w, padding_idx=1) ** 2, (10, 3))


@needs_torch
@pytest.mark.parametrize("max_norm,norm_type", [(1.0, 2.0), (1.5, 1.0), (0.5, float("inf"))])
def test_embedding_max_norm_renormalises_in_place(max_norm, norm_type):
    m, mt = module_parity(lambda lib: lib.nn.Embedding(10, 3, max_norm=max_norm, norm_type=norm_type).double(),
                          [np.array(IDX)])
    np.testing.assert_allclose(m.weight.detach().numpy(), mt.weight.detach().numpy(), atol=1e-12)
    v = m.weight._version[0]
    m(retrograd.tensor([3]))
    assert m.weight._version[0] > v


@needs_torch
@pytest.mark.parametrize("kw", [dict(), dict(padding_idx=0), dict(padding_idx=-1, scale_grad_by_freq=True)])
def test_embedding_module(kw):
    m, mt = module_parity(lambda lib: lib.nn.Embedding(10, 4, **kw).double(), [np.array([[0, 2, 9], [9, 9, 1]])])
    assert repr(m) == repr(mt)
    if "padding_idx" in kw:
        assert not np.any(m.weight.grad.numpy()[m.padding_idx])


def test_embedding_init_and_padding_row():
    retrograd.manual_seed(0)
    m = rnn.Embedding(1000, 8, padding_idx=3)
    w = m.weight.detach().numpy()
    assert not np.any(w[3])
    assert abs(w.std() - 1) < 0.05 and abs(w.mean()) < 0.05
    assert [n for n, _ in m.named_parameters()] == ["weight"]


def test_embedding_from_pretrained():
    w = retrograd.tensor([[1.0, 2.0], [3.0, 4.0]])
    m = rnn.Embedding.from_pretrained(w)
    assert not m.weight.requires_grad
    np.testing.assert_allclose(m(retrograd.tensor([1, 0])).numpy(), [[3, 4], [1, 2]])
    m2 = rnn.Embedding.from_pretrained(w, freeze=False, padding_idx=0)
    assert m2.weight.requires_grad and m2.padding_idx == 0
    bag = rnn.EmbeddingBag.from_pretrained(w, mode="sum")
    np.testing.assert_allclose(bag(retrograd.tensor([[0, 1]])).numpy(), [[4, 6]])


def test_embedding_errors():
    w = retrograd.zeros(10, 3, requires_grad=True)
    with pytest.raises(IndexError, match="index out of range in self"):
        RF.embedding(retrograd.tensor([10]), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        RF.embedding(retrograd.tensor([-1]), w)
    with pytest.raises(RuntimeError, match=r"Expected tensor for argument #1 'indices' to have one of the following "
                                           r"scalar types: Long, Int; but got torch.FloatTensor instead \(while "
                                           r"checking arguments for embedding\)"):
        RF.embedding(retrograd.tensor([1.0]), w)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        RF.embedding(retrograd.tensor([1]), w, padding_idx=10)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        rnn.Embedding(5, 2, padding_idx=-6)


BAGS = [([FLAT, [0, 3, 3, 5]], {}), ([IDX], {}), ([FLAT, [0, 3, 3, 5, 9]], dict(include_last_offset=True)),
        ([FLAT, [0, 3, 3, 5]], dict(padding_idx=1)), ([FLAT, [0, 2, 2, 9]], dict(padding_idx=-1))]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("args,kw", BAGS)
def test_embedding_bag_parity(mode, args, kw):
    check(lambda w: lib_of(w).nn.functional.embedding_bag(*[T(w, a) for a in args[:1]], w,
                                                          *[T(w, a) for a in args[1:]], mode=mode, **kw),
          [(10, 3)])


def test_embedding_bag_per_sample_weights():
    check(lambda w, p: lib_of(w).nn.functional.embedding_bag(T(w, FLAT), w, T(w, [0, 3, 3, 5]), mode="sum",
                                                             per_sample_weights=p), [(10, 3), (9,)])


def test_embedding_bag_gradcheck():
    idx, off = retrograd.tensor([1, 2, 0, 2]), retrograd.tensor([0, 1, 1])
    for mode in ("sum", "mean", "max"):
        gradcheck_op(lambda w: RF.embedding_bag(idx, w, off, mode=mode), [(3, 2)])
    gradcheck_op(lambda w, p: RF.embedding_bag(idx, w, off, mode="sum", per_sample_weights=p), [(3, 2), (4,)])


@needs_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_module(mode):
    m, mt = module_parity(lambda lib: lib.nn.EmbeddingBag(10, 4, mode=mode).double(),
                          [np.array(FLAT), np.array([0, 4, 4, 7])])
    assert repr(m) == repr(mt)
    module_parity(lambda lib: lib.nn.EmbeddingBag(10, 4, mode=mode, padding_idx=2).double(), [np.array(IDX)])


def test_embedding_bag_errors():
    w = retrograd.zeros(10, 3, requires_grad=True)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        RF.embedding_bag(retrograd.tensor([1, 2]), w)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        RF.embedding_bag(retrograd.tensor([[1, 2]]), w, retrograd.tensor([0]))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0, i.e., the first sequence in the mini-batch "
                                           "has to start from position 0. However, got 1"):
        RF.embedding_bag(retrograd.tensor([1, 2]), w, retrograd.tensor([1]))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum' "
                                                  "\\(got mode='mean'\\)"):
        RF.embedding_bag(retrograd.tensor([1, 2]), w, retrograd.tensor([0]), per_sample_weights=retrograd.ones(2))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        RF.embedding_bag(retrograd.tensor([1, 2]), w, retrograd.tensor([0]), mode="foo")
    with pytest.raises(RuntimeError, match="Index 1 of input takes value 12 which is not in the valid range \\[0, 10\\)"):
        RF.embedding_bag(retrograd.tensor([1, 12]), w, retrograd.tensor([0]))
    with pytest.raises(RuntimeError, match="offsets\\[-1\\] can not be greater than input's length 2 but got "
                                           "offsets\\[-1\\] of 3"):
        RF.embedding_bag(retrograd.tensor([1, 2]), w, retrograd.tensor([0, 3]))


@needs_torch
@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_double_backward(mode):
    # PyTorch has no double backward for embedding_bag: compare with its lookup-and-reduce form
    P = np.random.default_rng(3).standard_normal(9)
    S = np.zeros((4, 9))
    for b, (lo, hi) in enumerate([(0, 3), (3, 3), (3, 5), (5, 9)]):
        S[b, lo:hi] = 1.0 / max(hi - lo, 1) if mode == "mean" else 1.0

    def f(w):
        lib = lib_of(w)
        psw = lib.from_numpy(P.copy()) * w.sum() if mode == "sum" else None
        if lib is retrograd:
            return RF.embedding_bag(lib.tensor(FLAT), w * w.sum(), lib.tensor([0, 3, 3, 5]), mode=mode,
                                    per_sample_weights=psw)
        rows = torch.nn.functional.embedding(torch.tensor(FLAT), w * w.sum())
        if psw is not None:
            rows = rows * psw[:, None]
        return torch.from_numpy(S) @ rows
    double_backward_parity(f, (10, 3))
