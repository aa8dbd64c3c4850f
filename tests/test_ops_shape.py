"""Shape ops: parity with PyTorch (values, grad_fn, gradients), float64 gradchecks,
views sharing data and versions, and PyTorch's errors."""
import warnings

import numpy as np
import pytest

import retrograd
from helpers import check, gradcheck_op, NC, torch, needs_torch


def lib_of(x):
    return torch if torch is not None and isinstance(x, torch.Tensor) else retrograd


CASES = [
    # view / reshape / flatten / unflatten
    (lambda x: x.reshape(4, 3), [(3, 4)]),
    (lambda x: x.reshape(-1), [NC(3, 4)]),
    (lambda x: x.reshape(1, 1), [()]),
    (lambda x: x.reshape(3, 0), [(0, 3)]),
    (lambda x: x.view(2, 6), [(3, 4)]),
    (lambda x: x.flatten(), [(2, 3, 4)]),
    (lambda x: x.flatten(1), [NC(2, 3, 4)]),
    (lambda x: x.flatten(), [()]),
    (lambda x: x.flatten(0, 1), [(0, 3)]),
    (lambda x: x.unflatten(1, (2, 2)), [(3, 4)]),
    (lambda x: x.unflatten(-1, (-1, 2)), [NC(3, 4)]),
    (lambda x: x.ravel(), [NC(3, 4)]),
    # squeeze / unsqueeze
    (lambda x: x.squeeze(), [(3, 1, 4, 1)]),
    (lambda x: x.squeeze(1), [(3, 1, 4)]),
    (lambda x: x.squeeze(0), [(3, 1, 4)]),
    (lambda x: x.squeeze((1, 3)), [(3, 1, 4, 1)]),
    (lambda x: x.squeeze(), [()]),
    (lambda x: x.squeeze(), [(0, 1)]),
    (lambda x: x.unsqueeze(0), [(3, 4)]),
    (lambda x: x.unsqueeze(-1), [NC(3, 4)]),
    (lambda x: x.unsqueeze(0), [()]),
    # transposes
    (lambda x: x.transpose(0, 1), [(3, 4)]),
    (lambda x: x.transpose(-1, 0), [NC(2, 3, 4)]),
    (lambda x: x.swapaxes(0, 1), [(0, 3)]),
    (lambda x: x.swapdims(0, 0), [()]),
    (lambda x: x.permute(2, 0, 1), [(2, 3, 4)]),
    (lambda x: x.permute((1, 0)), [NC(3, 4)]),
    (lambda x: x.permute(()), [()]),
    (lambda x: x.t(), [(3, 4)]),
    (lambda x: x.t(), [(4,)]),
    (lambda x: x.t(), [()]),
    (lambda x: x.T, [NC(3, 4)]),
    (lambda x: x.T, [(4,)]),
    (lambda x: x.mT, [(2, 3, 4)]),
    (lambda x: x.mT, [(0, 3)]),
    (lambda x: x.movedim(0, -1), [(2, 3, 4)]),
    (lambda x: x.movedim((0, 1), (2, 0)), [NC(2, 3, 4)]),
    (lambda x: x.moveaxis(1, 0), [(3, 4)]),
    # repeat / tile
    (lambda x: x.repeat(2, 3), [(3, 4)]),
    (lambda x: x.repeat(2, 1, 3), [NC(3, 4)]),
    (lambda x: x.repeat(2, 2), [()]),
    (lambda x: x.repeat(0, 2), [(3, 4)]),
    (lambda x: x.repeat(2, 1), [(0, 3)]),
    (lambda x: x.tile((2,)), [(3, 4)]),
    (lambda x: x.tile((2, 1, 1)), [(3, 4)]),
    (lambda x: x.repeat_interleave(2), [(3, 4)]),
    (lambda x: x.repeat_interleave(3, dim=1), [NC(3, 4)]),
    (lambda x: lib_of(x).repeat_interleave(x, 2), [()]),
    (lambda x: x.repeat_interleave(2, 0), [(0, 3)]),
    (lambda x: x.repeat_interleave(lib_of(x).tensor([1, 0, 2]), dim=0), [(3, 4)]),
    # flip / roll
    (lambda x: x.flip(0), [(3, 4)]),
    (lambda x: x.flip((0, 1)), [NC(3, 4)]),
    (lambda x: x.flip(0, 1), [(3, 4)]),
    (lambda x: x.flip(()), [()]),
    (lambda x: x.flip(1), [(0, 3)]),
    (lambda x: x.fliplr(), [(3, 4)]),
    (lambda x: x.flipud(), [NC(3, 4)]),
    (lambda x: x.roll(1), [(3, 4)]),
    (lambda x: x.roll(-2, 1), [NC(3, 4)]),
    (lambda x: x.roll((1, 5), (0, 1)), [(3, 4)]),
    (lambda x: x.roll(1), [()]),
    (lambda x: x.roll(1, 0), [(0, 3)]),
    # cat / stack
    (lambda x, y: lib_of(x).cat([x, y]), [(3, 4), (2, 4)]),
    (lambda x, y: lib_of(x).cat((x, y), dim=1), [NC(3, 4), (3, 2)]),
    (lambda x, y: lib_of(x).cat([x, y], -1), [(3, 4), (3, 0)]),
    (lambda x, y: lib_of(x).cat([x, y]), [(3, 4), (0,)]),
    (lambda x, y: lib_of(x).concat([x, y]), [(2,), (3,)]),
    (lambda x, y: lib_of(x).concatenate([x, y], 1), [(2, 1), (2, 3)]),
    (lambda x: lib_of(x).cat([x, x * 2, x]), [(3, 2)]),
    (lambda x, y: lib_of(x).stack([x, y]), [(3, 4), (3, 4)]),
    (lambda x, y: lib_of(x).stack([x, y], 2), [NC(3, 4), (3, 4)]),
    (lambda x, y: lib_of(x).stack((x, y), dim=-1), [(), ()]),
    (lambda x, y: lib_of(x).stack([x, y], 1), [(0, 3), (0, 3)]),
    (lambda x, y: lib_of(x).hstack([x, y]), [(3, 4), (3, 1)]),
    (lambda x, y: lib_of(x).hstack([x, y]), [(3,), (2,)]),
    (lambda x, y: lib_of(x).vstack([x, y]), [(4,), (2, 4)]),
    (lambda x, y: lib_of(x).dstack([x, y]), [(3, 4), (3, 4)]),
    (lambda x, y: lib_of(x).column_stack([x, y]), [(3,), (3, 2)]),
    # split / chunk / unbind
    (lambda x: x.split(2), [(5, 3)]),
    (lambda x: x.split(2, 1), [NC(3, 4)]),
    (lambda x: x.split([1, 3], 1), [(3, 4)]),
    (lambda x: x.split([1, 0, 2]), [(3, 4)]),
    (lambda x: x.split(2), [(0, 3)]),
    (lambda x: x.chunk(2), [(5, 3)]),
    (lambda x: x.chunk(3, -1), [NC(3, 4)]),
    (lambda x: x.chunk(4), [(6,)]),
    (lambda x: x.split(2)[1], [(5, 3)]),
    (lambda x: x.unbind(), [(3, 4)]),
    (lambda x: x.unbind(1), [NC(3, 4)]),
    (lambda x: x.unbind(0)[2] * 2, [(3, 4)]),
    (lambda x: lib_of(x).unbind(x, 1), [(3, 0)]),
    (lambda x: x.tensor_split(3), [(7, 2)]),
    (lambda x: x.tensor_split([1, 3], 1), [NC(3, 4)]),
    (lambda x: lib_of(x).hsplit(x, 2), [(3, 4)]),
    (lambda x: lib_of(x).vsplit(x, [1]), [(3, 4)]),
    # narrow / select
    (lambda x: x.narrow(0, 1, 2), [(3, 4)]),
    (lambda x: x.narrow(1, -2, 2), [NC(3, 4)]),
    (lambda x: x.narrow(0, 3, 0), [(3, 4)]),
    (lambda x: x.select(1, 2), [(3, 4)]),
    (lambda x: x.select(0, -1), [NC(3, 4)]),
    # diagonal / diag / triu / tril
    (lambda x: x.diagonal(), [(3, 4)]),
    (lambda x: x.diagonal(1), [NC(3, 4)]),
    (lambda x: x.diagonal(-1, 0, 2), [(3, 4, 5)]),
    (lambda x: x.diagonal(5), [(3, 4)]),
    (lambda x: x.diagonal(), [(0, 3)]),
    (lambda x: x.diag(), [(3,)]),
    (lambda x: x.diag(1), [NC(3)]),
    (lambda x: x.diag(-1), [(3, 4)]),
    (lambda x: x.diag(), [(0,)]),
    (lambda x: lib_of(x).diag_embed(x), [(2, 3)]),
    (lambda x: lib_of(x).diag_embed(x, 1, 0, 2), [(2, 3)]),
    (lambda x: x.triu(), [(3, 4)]),
    (lambda x: x.triu(1), [NC(3, 4)]),
    (lambda x: x.tril(-1), [(2, 3, 4)]),
    (lambda x: x.tril(), [(0, 3)]),
    (lambda x: x.unfold(0, 2, 1), [(5, 3)]),
    (lambda x: x.unfold(1, 2, 2), [NC(3, 5)]),
    (lambda x: x.unfold(0, 3, 2), [(7,)]),
    (lambda x: x.unfold(0, 1, 1), [()]),
    (lambda x: x.unfold(1, 2, 1), [(0, 3)]),
    (lambda x: lib_of(x).rot90(x), [(3, 4)]),
    (lambda x: lib_of(x).rot90(x, 2, [1, 2]), [NC(2, 3, 4)]),
    (lambda x: x.rot90(-1, [1, 0]), [(3, 4)]),
    (lambda x: x.rot90(3), [(0, 3)]),
    (lambda x: x.diff(), [(3, 4)]),
    (lambda x, p: lib_of(x).diff(x, n=2, dim=0, prepend=p), [NC(3, 4), (1, 4)]),
    (lambda x, a: x.diff(dim=0, append=a), [(3,), (2,)]),
    (lambda x: x.diff(n=5), [(3, 4)]),
    (lambda x: x.diff(), [(0, 3)]),
    # expand / broadcast
    (lambda x, y: lib_of(x).broadcast_tensors(x, y), [(3, 1), (4,)]),
    (lambda x, y: lib_of(x).broadcast_tensors(x, y), [(), NC(2, 3)]),
    (lambda x, y: lib_of(x).meshgrid(x, y, indexing="ij"), [(3,), (4,)]),
    (lambda x, y: lib_of(x).meshgrid(x, y, indexing="xy"), [(3,), NC(4)]),
    (lambda x, y, z: lib_of(x).meshgrid([x, y, z], indexing="xy"), [(2,), (3,), ()]),
    (lambda x: x.expand(2, 3, 4), [(3, 1)]),
    (lambda x: x.expand(3, 2), [()]),
    (lambda x: x.broadcast_to((2, 3)), [NC(3)]),
    (lambda x: lib_of(x).atleast_2d(x), [(3,)]),
    (lambda x: lib_of(x).atleast_3d(x), [(3, 4)]),
]


@pytest.mark.parametrize("fn,specs", CASES)
def test_parity(fn, specs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(fn, specs)


GRADCHECK = [c for c in CASES if not any(isinstance(s, tuple) and 0 in s for s in c[1])]


@pytest.mark.parametrize("fn,specs", GRADCHECK)
def test_gradcheck(fn, specs):
    gradcheck_op(fn, specs)


SECOND = [
    (lambda x: (x.transpose(0, 1) * x.t()).sum(), [(3, 3)]),
    (lambda x: x.repeat(2, 1) ** 2, [(2, 3)]),
    (lambda x: retrograd.cat([x, x * x], 1), [(2, 3)]),
    (lambda x: retrograd.stack([x * x, x]), [(2, 3)]),
    (lambda x: x.split(1)[0] * x.split(1)[1], [(2, 3)]),
    (lambda x: x.unbind()[0] * x.unbind()[1], [(2, 3)]),
    (lambda x: x.diagonal() * x.diag(), [(3, 3)]),
    (lambda x: x.flip(0).roll(1, 1) * x, [(2, 3)]),
    (lambda x: x.triu() * x.tril(), [(3, 3)]),
    (lambda x: retrograd.diag_embed(x) ** 2, [(2, 3)]),
    (lambda x: x.unfold(1, 2, 1) ** 2, [(2, 4)]),
    (lambda x: x.rot90() * x.t(), [(3, 3)]),
]


@pytest.mark.parametrize("fn,specs", SECOND)
def test_second_order(fn, specs):
    gradcheck_op(fn, specs, second_order=True)


# *** views share data and the version counter ***

@pytest.mark.parametrize("fn", [
    lambda x: x.view(12), lambda x: x.reshape(2, 6), lambda x: x.flatten(), lambda x: x.transpose(0, 1),
    lambda x: x.permute(1, 0), lambda x: x.t(), lambda x: x.T, lambda x: x.unsqueeze(0),
    lambda x: x.unsqueeze(0).squeeze(0), lambda x: x.narrow(1, 1, 2), lambda x: x.select(0, 1),
    lambda x: x.diagonal(), lambda x: x.split(1)[1], lambda x: x.chunk(2, 1)[0], lambda x: x.unbind()[2],
    lambda x: x.movedim(0, 1), lambda x: x.expand(2, 3, 4), lambda x: x.unflatten(1, (2, 2)),
])
def test_views_share(fn):
    x = retrograd.zeros(3, 4)
    v = fn(x)
    v0 = x._version_value
    x.add_(1.0) if hasattr(x, "add_") else x.fill_(1.0)
    assert bool((v == 1).all())
    if v0 is not None:
        assert v._version_value == x._version_value


@pytest.mark.parametrize("fn", [lambda x: x.flip(0), lambda x: x.roll(1), lambda x: x.repeat(1, 1),
                                lambda x: retrograd.cat([x]), lambda x: x.triu(), lambda x: x.diag()])
def test_copies_do_not_share(fn):
    x = retrograd.zeros(3, 3)
    c = fn(x)
    x.fill_(1.0)
    assert not bool((c == 1).any())


def test_multi_output_grad_partial():
    """Unused outputs of split/unbind contribute zeros."""
    x = retrograd.arange(6.0).reshape(3, 2).requires_grad_()
    a, b, c = x.unbind()
    (b * 3).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0], [3.0, 3.0], [0.0, 0.0]]
    y = retrograd.arange(6.0).requires_grad_()
    p, q = y.split([4, 2])
    q.sum().backward()
    assert y.grad.tolist() == [0, 0, 0, 0, 1, 1]
    assert type(p.grad_fn).__name__ == "SplitWithSizesBackward0" and p.grad_fn is q.grad_fn
    assert (p.output_nr, q.output_nr) == (0, 1)


def test_cat_promotes_and_keeps_int():
    a = retrograd.tensor([1, 2])
    b = retrograd.tensor([0.5])
    assert retrograd.cat([a, b]).dtype == retrograd.float32
    assert retrograd.cat([a, a]).dtype == retrograd.int64
    assert retrograd.stack([a, a.double()]).dtype == retrograd.float64


def test_cat_int_and_float_grad():
    x = retrograd.ones(2, requires_grad=True)
    y = retrograd.cat([x, retrograd.tensor([1, 2])])
    assert type(y.grad_fn).__name__ == "CatBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_T_warns_above_2d():
    with pytest.warns(UserWarning, match="The use of `x.T` on tensors of dimension other than 2"):
        retrograd.zeros(2, 3, 4).T


# *** bad input: PyTorch's exception type and wording; nothing changes ***

def _lib(x):
    return lib_of(x)


BAD = [
    (lambda x: x.permute(1, 0, 2), RuntimeError, r"permute\(sparse_coo\): number of dimensions in the tensor input "
                                                 r"does not match .* input.dim\(\) = 2 is not equal to len\(dims\) = 3"),
    (lambda x: x.permute(1, 1), RuntimeError, r"permute\(\): duplicate dims are not allowed."),
    (lambda x: x.repeat(2), RuntimeError, "Number of dimensions of repeat dims can not be smaller than number of "
                                          "dimensions of tensor"),
    (lambda x: x.flip(0, 0), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda x: x.flip(5), IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)"),
    (lambda x: x[0].fliplr(), RuntimeError, "Input must be >= 2-d."),
    (lambda x: x.sum().flipud(), RuntimeError, "Input must be >= 1-d."),
    (lambda x: x.roll((1, 2), (0,)), RuntimeError, "shifts and dimensions must align. shifts: 2, dims:1"),
    (lambda x: _lib(x).cat([]), ValueError, r"torch.cat\(\): expected a non-empty list of Tensors"),
    (lambda x: _lib(x).cat([x, x[0]]), RuntimeError, "Tensors must have same number of dimensions: got 2 and 1"),
    (lambda x: _lib(x).cat([x, x[:, :2]]), RuntimeError, "Sizes of tensors must match except in dimension 0. Expected "
                                                         "size 4 but got size 2 for tensor number 1 in the list."),
    (lambda x: _lib(x).cat([x, x[:2]], 1), RuntimeError, "Sizes of tensors must match except in dimension 1. Expected "
                                                         "size 3 but got size 2 for tensor number 1 in the list."),
    (lambda x: _lib(x).cat([x, x.sum()]), RuntimeError, r"zero-dimensional tensor \(at position 1\) cannot be "
                                                        "concatenated"),
    (lambda x: _lib(x).cat([x, x], 2), IndexError, "Dimension out of range"),
    (lambda x: _lib(x).cat(x), TypeError, r"cat\(\): argument 'tensors' \(position 1\) must be tuple of Tensors, "
                                          "not Tensor"),
    (lambda x: _lib(x).stack([]), RuntimeError, "stack expects a non-empty TensorList"),
    (lambda x: _lib(x).stack([x, x[0]]), RuntimeError, r"stack expects each tensor to be equal size, but got \[3, 4\] "
                                                       r"at entry 0 and \[4\] at entry 1"),
    (lambda x: x.split(0), RuntimeError, "split_size can only be 0 if dimension size is 0, but got dimension size of 3"),
    (lambda x: x.split([1, 1]), RuntimeError, r"split_with_sizes expects split_sizes to sum exactly to 3 \(input "
                                              r"tensor's size at dimension 0\), but got split_sizes=\[1, 1\]"),
    (lambda x: x.split([2, -1, 2]), RuntimeError, r"split_with_sizes expects split_sizes have only non-negative entries, "
                                                  r"but got split_sizes=\[2, -1, 2\]"),
    (lambda x: _lib(x).hstack([]), RuntimeError, "hstack expects a non-empty TensorList"),
    (lambda x: _lib(x).column_stack([]), RuntimeError, "column_stack expects a non-empty TensorList"),
    (lambda x: x.sum().roll(1, 0), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    (lambda x: x.expand(4, -1, 5), RuntimeError, r"The expanded size of the tensor \(5\) must match the existing size "
                                                 r"\(4\) at non-singleton dimension 2."),
    (lambda x: x.chunk(0), RuntimeError, "chunk expects `chunks` to be greater than 0, got: 0"),
    (lambda x: x.narrow(0, 2, 2), RuntimeError, r"start \(2\) \+ length \(2\) exceeds dimension size \(3\)."),
    (lambda x: x.narrow(0, 4, 0), IndexError, r"start out of range \(expected to be in range of \[-3, 3\], but got 4\)"),
    (lambda x: x.select(0, 5), IndexError, r"select\(\): index 5 out of range for tensor of size \[3, 4\] at "
                                           "dimension 0"),
    (lambda x: x.sum().select(0, 0), IndexError, r"select\(\) cannot be applied to a 0-dim tensor."),
    (lambda x: x.squeeze(5), IndexError, "Dimension out of range"),
    (lambda x: x.unsqueeze(3), IndexError, r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"),
    (lambda x: x.transpose(0, 2), IndexError, "Dimension out of range"),
    (lambda x: x[None].t(), RuntimeError, r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D"),
    (lambda x: x[0].mT, RuntimeError, "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor."),
    (lambda x: x.movedim((0, 1), (1, 1)), RuntimeError, r"movedim: repeated dim in `destination` \(\[1, 1\]\)"),
    (lambda x: x.unflatten(1, (3, 2)), RuntimeError, r"unflatten: Provided sizes \[3, 2\] don't multiply up to the "
                                                     r"size of dim 1 \(4\) in the input tensor"),
    (lambda x: x.flatten(1, 0), RuntimeError, r"flatten\(\) has invalid args: start_dim cannot come after end_dim"),
    (lambda x: x.diagonal(0, 0, 0), RuntimeError, "diagonal dimensions cannot be identical 0, 0"),
    (lambda x: x.sum().diag(), RuntimeError, r"diag\(\): Supports 1D or 2D tensors. Got 0D"),
    (lambda x: x[None].diag(), RuntimeError, r"diag\(\): Supports 1D or 2D tensors. Got 3D"),
    (lambda x: x[0].triu(), RuntimeError, "triu: input tensor must have at least 2 dimensions"),
    (lambda x: x.unbind(2), IndexError, "Dimension out of range"),
    (lambda x: x.sum().unbind(), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    (lambda x: x.view(5), RuntimeError, r"shape '\[5\]' is invalid for input of size 12"),
    # the first offending size (in order) names the error
    (lambda x: x.view(-2, -1, -1), RuntimeError, r"^invalid shape dimension -2 at index 0 of shape \[-2, -1, -1\]$"),
    (lambda x: x.reshape(-1, -1, -2), RuntimeError, "^only one dimension can be inferred$"),
    (lambda x: x.reshape(3, -4), RuntimeError, r"^invalid shape dimension -4 at index 1 of shape \[3, -4\]$"),
    (lambda x: x.expand(3, 5), RuntimeError, r"The expanded size of the tensor \(5\) must match the existing size "
                                             r"\(4\) at non-singleton dimension 1.  Target sizes: \[3, 5\].  "
                                             r"Tensor sizes: \[3, 4\]"),
    (lambda x: x.t().view(12), RuntimeError, "view size is not compatible with input tensor's size and stride"),
    (lambda x: x.unfold(0, 4, 1), RuntimeError, "maximum size for tensor at dimension 0 is 3 but size is 4"),
    (lambda x: x.unfold(0, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    (lambda x: x.unfold(0, -1, 1), RuntimeError, "size is -1 but must be >= 0"),
    (lambda x: x[0].rot90(), RuntimeError, "expected total dims >= 2, but got total dims = 1"),
    (lambda x: x.rot90(1, [0, 0]), RuntimeError, "expected rotation dims to be different, but got dim0 = 0 and dim1 = 0"),
    (lambda x: x.rot90(1, [0, 1, 1]), RuntimeError, "expected total rotation dims == 2, but got dims = 3"),
    (lambda x: _lib(x).broadcast_tensors(x, x[:2]), RuntimeError, r"The size of tensor a \(3\) must match the size of "
                                                                  r"tensor b \(2\) at non-singleton dimension 0"),
    (lambda x: _lib(x).broadcast_shapes((3,), (4,)), RuntimeError, "Attempting to broadcast a dimension of length 4 "
                                                                   "at -1! Mismatching argument at index 1 had"),
    (lambda x: _lib(x).meshgrid(x[0], x[0].double(), indexing="ij"), RuntimeError, "meshgrid expects all tensors "
                                                                                    "to have the same dtype"),
    (lambda x: _lib(x).meshgrid(indexing="ij"), RuntimeError, "meshgrid expects a non-empty TensorList"),
    (lambda x: _lib(x).meshgrid(x, indexing="ij"), RuntimeError, "torch.meshgrid: Expected 0D or 1D tensor in the "
                                                                 "tensor list but got"),
]


@pytest.mark.parametrize("fn,exc,msg", BAD)
def test_bad_input(fn, exc, msg):
    libs = [retrograd] + ([torch] if torch is not None else [])
    for lib in libs:
        x = lib.ones(3, 4, requires_grad=True)
        with pytest.raises(exc, match=msg):
            fn(x)
        assert x.grad is None and bool((x == 1).all()) and tuple(x.shape) == (3, 4)


@needs_torch
@pytest.mark.parametrize("call", ["squeeze_(1)", "squeeze_((0, 1))", "squeeze_()", "unsqueeze_(0)",
                                  "swapaxes_(0, 2)", "transpose_(1, 0)", "swapdims_(0, 1)", "t_()"])
def test_shape_inplace(call):
    a = np.random.default_rng(0).standard_normal((3, 1, 4) if "t_" not in call else (3, 4))
    out = []
    for lib in (retrograd, torch):
        x0 = lib.tensor(a, requires_grad=True)
        x = x0 * 2
        ver = (lambda t: t._version) if lib is torch else (lambda t: t._version_value)
        v = ver(x)
        r = eval("x." + call)
        assert r is x and ver(x) == v + 1
        g = np.random.default_rng(1).standard_normal(tuple(x.shape))
        x.backward(lib.tensor(g))
        out.append((tuple(x.shape), type(x.grad_fn).__name__, x0.grad.numpy()))
    assert out[0][:2] == out[1][:2]
    np.testing.assert_allclose(out[0][2], out[1][2])


def test_shape_inplace_leaf_refused():
    x = retrograd.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        x.unsqueeze_(0)
    assert x.shape == (3,)


def test_broadcast_shapes_and_meshgrid_warning():
    assert retrograd.broadcast_shapes((3, 1), (4,)) == (3, 4)
    assert retrograd.broadcast_shapes(3, (2, 1)) == (2, 3)
    with pytest.warns(UserWarning, match="torch.meshgrid: in an upcoming release, it will be required to pass the "
                                         "indexing argument."):
        a, b = retrograd.meshgrid(retrograd.arange(3), retrograd.arange(2))
    assert a.shape == (3, 2) and b.tolist() == [[0, 1]] * 3


def test_unfold_is_a_view():
    x = retrograd.zeros(6)
    w = x.unfold(0, 2, 2)
    x.fill_(3.0)
    assert w.tolist() == [[3.0, 3.0]] * 3


@needs_torch
@pytest.mark.parametrize("call", ["triu_()", "tril_(-1)", "cumsum_(1)", "cumprod_(0)"])
def test_inplace_copies(call):
    a = np.random.default_rng(0).standard_normal((3, 4))
    out = []
    for lib in (retrograd, torch):
        x0 = lib.tensor(a, requires_grad=True)
        x = x0 * 2
        r = eval("x." + call)
        assert r is x
        x.backward(lib.tensor(np.arange(12.0).reshape(3, 4)))
        out.append((x.detach().numpy().copy(), type(x.grad_fn).__name__, x0.grad.numpy()))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12)
    assert out[0][1] == out[1][1]
    np.testing.assert_allclose(out[0][2], out[1][2], rtol=1e-12)
