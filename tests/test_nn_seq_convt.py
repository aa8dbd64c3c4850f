"""ConvTranspose1d/2d and Bilinear against PyTorch."""
import numpy as np
import pytest

import retrograd
import retrograd.nn as rnn
import retrograd.nn.functional as RF
from helpers import check, gradcheck_op, needs_torch
from nn_seq_helpers import lib_of, module_parity

CT2 = [([(2, 4, 5, 6), (4, 3, 3, 2), (3,)], {}),
       ([(2, 4, 5, 6), (4, 3, 3, 2), (6,)], dict(stride=(2, 3), padding=(1, 2), output_padding=(1, 0), groups=2,
                                                 dilation=(2, 1))),
       ([(2, 4, 5, 6), (4, 3, 3, 2)], dict(stride=2, output_padding=2, dilation=3)),
       ([(1, 2, 3, 3), (2, 1, 1, 1)], dict(stride=3)),
       ([(1, 4, 4, 3), (4, 1, 2, 2), (4,)], dict(groups=4, padding=1))]


@pytest.mark.parametrize("specs,kw", CT2)
def test_conv_transpose2d_parity(specs, kw):
    check(lambda *a: lib_of(a[0]).nn.functional.conv_transpose2d(*a, **kw), specs)


@pytest.mark.parametrize("specs,kw", [([(2, 4, 7), (4, 1, 3), (4,)], dict(stride=2, groups=4, padding=1,
                                                                          output_padding=1)),
                                      ([(2, 3, 5), (3, 2, 4)], dict(dilation=2))])
def test_conv_transpose1d_parity(specs, kw):
    check(lambda *a: lib_of(a[0]).nn.functional.conv_transpose1d(*a, **kw), specs)


def test_conv_transpose_unbatched():
    # PyTorch squeezes the batch dimension last (SqueezeBackward1); values and gradients agree
    check(lambda x, w: lib_of(x).nn.functional.conv_transpose2d(x, w, stride=2) * 1.0, [(4, 5, 6), (4, 3, 3, 2)])
    check(lambda x, w: lib_of(x).nn.functional.conv_transpose1d(x, w) * 1.0, [(4, 7), (4, 2, 3)])


def test_conv_transpose_gradcheck():
    gradcheck_op(lambda x, w, b: RF.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
                 [(1, 2, 2, 3), (2, 2, 2, 2), (2,)])
    gradcheck_op(lambda x, w: RF.conv_transpose1d(x, w, groups=2, dilation=2), [(1, 2, 3), (2, 1, 2)])


@needs_torch
@pytest.mark.parametrize("cls,args,kw,shape", [
    ("ConvTranspose2d", (2, 4, 3), dict(stride=2, padding=1, output_padding=1, groups=2), (2, 2, 4, 5)),
    ("ConvTranspose2d", (3, 2, (2, 3)), dict(bias=False, dilation=(1, 2)), (1, 3, 3, 4)),
    ("ConvTranspose1d", (2, 3, 3), dict(stride=3), (2, 2, 5)),
])
def test_conv_transpose_modules(cls, args, kw, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    m, mt = module_parity(lambda lib: getattr(lib.nn, cls)(*args, **kw).double(), [x])
    assert repr(m) == repr(mt)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in mt.named_parameters()]


@needs_torch
def test_conv_transpose_output_size():
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4))
    module_parity(lambda lib: lib.nn.ConvTranspose2d(2, 3, 3, stride=2).double(), [x],
                  call=lambda m, lib, x: m(x, output_size=[10, 9]))
    with pytest.raises(ValueError, match="requested an output size of \\[12, 9\\], but valid sizes range from "
                                         "\\[9, 9\\] to \\[10, 10\\]"):
        rnn.ConvTranspose2d(2, 3, 3, stride=2)(retrograd.zeros(1, 2, 4, 4), output_size=[12, 9])


def test_conv_transpose_init_bounds():
    retrograd.manual_seed(0)
    m = rnn.ConvTranspose2d(16, 8, 3)
    fan_in = 8 * 9
    bound = 1 / np.sqrt(fan_in)
    assert np.abs(m.weight.detach().numpy()).max() <= bound + 1e-7
    assert np.abs(m.bias.detach().numpy()).max() <= bound + 1e-7
    assert tuple(m.weight.shape) == (16, 8, 3, 3)


def test_conv_transpose_errors():
    x = retrograd.zeros(2, 4, 5, 5)
    w = retrograd.zeros(4, 3, 3, 3)
    with pytest.raises(RuntimeError, match=r"Given transposed=1, weight of size \[4, 3, 3, 3\], expected "
                                           r"input\[2, 2, 5, 5\] to have 4 channels, but got 2 channels instead"):
        RF.conv_transpose2d(retrograd.zeros(2, 2, 5, 5), w)
    with pytest.raises(RuntimeError, match="Given groups=3, expected weight to be divisible by 3 at dimension 0"):
        RF.conv_transpose2d(x, w, groups=3)
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv_transpose2d, "
                                           r"but got input of size: \[5\]"):
        RF.conv_transpose2d(retrograd.zeros(5), w)
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation, but got "
                                           "output_padding_height: 1 output_padding_width: 1 stride_height: 1 "
                                           "stride_width: 1 dilation_height: 1 dilation_width: 1"):
        RF.conv_transpose2d(x, w, output_padding=1)
    with pytest.raises(RuntimeError, match=r"expected bias to be 1-dimensional with 3 elements, but got bias of "
                                           r"size \[4\] instead"):
        RF.conv_transpose2d(x, w, bias=retrograd.zeros(4))
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        rnn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")


@pytest.mark.parametrize("specs", [[(5, 3), (5, 4), (2, 3, 4), (2,)], [(2, 5, 3), (2, 5, 4), (2, 3, 4)],
                                   [(3,), (4,), (2, 3, 4), (2,)]])
def test_bilinear_parity(specs):
    check(lambda *a: lib_of(a[0]).nn.functional.bilinear(*a), specs)


def test_bilinear_gradcheck():
    gradcheck_op(lambda a, b, w, c: RF.bilinear(a, b, w, c), [(2, 2), (2, 3), (2, 2, 3), (2,)])


@needs_torch
def test_bilinear_module():
    rng = np.random.default_rng(0)
    m, mt = module_parity(lambda lib: lib.nn.Bilinear(3, 4, 5).double(),
                          [rng.standard_normal((6, 3)), rng.standard_normal((6, 4))])
    assert repr(m) == repr(mt)
    module_parity(lambda lib: lib.nn.Bilinear(3, 4, 2, bias=False).double(),
                  [rng.standard_normal((2, 6, 3)), rng.standard_normal((2, 6, 4))])


def test_bilinear_errors():
    with pytest.raises(RuntimeError, match="bilinear\\(\\): input1 size does not match weight size: got 3 but "
                                           "expected 4"):
        RF.bilinear(retrograd.zeros(2, 3), retrograd.zeros(2, 4), retrograd.zeros(5, 4, 4))
    with pytest.raises(RuntimeError, match="bilinear\\(\\): input batch dimensions do not match at dim 0: got 2 "
                                           "and 3"):
        RF.bilinear(retrograd.zeros(2, 3), retrograd.zeros(3, 4), retrograd.zeros(5, 3, 4))


@needs_torch
def test_conv_transpose_and_bilinear_double_backward():
    from nn_seq_helpers import double_backward_parity
    rng = np.random.default_rng(3)
    W, B, W1, W3 = (rng.standard_normal(s) for s in ((4, 3, 3, 2), (6,), (4, 2, 3), (5, 3, 3)))

    def T(x, a):
        return lib_of(x).from_numpy(a.copy())
    double_backward_parity(lambda x: lib_of(x).nn.functional.conv_transpose2d(
        x, T(x, W) * x.sum(), T(x, B), stride=2, padding=1, output_padding=1, groups=2), (2, 4, 3, 3))
    double_backward_parity(lambda x: lib_of(x).nn.functional.conv_transpose1d(x, T(x, W1) * x.mean(), stride=2),
                           (4, 5))
    double_backward_parity(lambda x: lib_of(x).nn.functional.bilinear(x, x.sin(), T(x, W3) * x.sum()), (2, 2, 3))
