"""Padding, interpolation, unfold/fold and grid_sample against PyTorch."""
import numpy as np
import pytest

import retrograd
import retrograd.nn as rnn
import retrograd.nn.functional as RF
from helpers import check, gradcheck_op, needs_torch, torch
from retrograd.autograd.gradcheck import gradcheck
from nn_seq_helpers import lib_of, module_parity, double_backward_parity


def F(t):
    return lib_of(t).nn.functional


PAD_CASES = [
    ((2, 3, 4, 5), (1, 2), "constant"),
    ((2, 3, 4, 5), (2, 1, 0, 2), "constant"),
    ((2, 3, 4, 5), (-1, 2, 1, -1), "constant"),
    ((3, 4), (1, 1, 2, 0), "constant"),
    ((2, 3, 5), (2, 3), "reflect"),
    ((3, 5), (1, 4), "reflect"),
    ((2, 3, 4, 5), (2, 1, 0, 3), "reflect"),
    ((1, 2, 3, 4, 5), (1, 1, 2, 0, 1, 2), "reflect"),
    ((2, 3, 4, 5), (-1, 2, 1, -1), "reflect"),
    ((2, 3, 5), (3, 2), "replicate"),
    ((2, 3, 4, 5), (2, 1, 0, 3), "replicate"),
    ((2, 2, 3, 4), (1, 2, 3, 0, 1, 1), "replicate"),
]


@pytest.mark.parametrize("shape,pad,mode", PAD_CASES)
def test_pad_parity(shape, pad, mode):
    check(lambda x: F(x).pad(x, pad, mode=mode), [shape])


@pytest.mark.parametrize("pad", [(1, 2, 0, 0), (3, 0, 1, 2), (-1, 2, 1, -2), (2, -1, 0, 0)])
def test_pad_circular(pad):
    # PyTorch builds circular padding from slices (grad_fn CopySlices): values and gradients only
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4, 5))
    x = retrograd.from_numpy(a.copy()).requires_grad_(True)
    y = RF.pad(x, pad, mode="circular")
    if torch is not None:
        xt = torch.from_numpy(a.copy()).requires_grad_(True)
        yt = torch.nn.functional.pad(xt, pad, mode="circular")
        np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy())
        g = rng.standard_normal(tuple(yt.shape))
        y.backward(retrograd.from_numpy(g))
        yt.backward(torch.from_numpy(g))
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), atol=1e-12)


def test_pad_value():
    check(lambda x: F(x).pad(x, (1, 2, 0, 1), value=2.5), [(2, 3, 4)])


@pytest.mark.parametrize("shape,pad,mode", [((1, 3, 4), (1, 2), "constant"), ((1, 3, 4), (2, 1), "reflect"),
                                            ((1, 2, 3), (2, 1, 1, 0), "replicate"),
                                            ((1, 2, 3), (2, 1, 1, 0), "circular")])
def test_pad_gradcheck(shape, pad, mode):
    gradcheck_op(lambda x: RF.pad(x, pad, mode=mode), [shape])


@needs_torch
@pytest.mark.parametrize("pad,mode", [((1, 2, 0, 1), "constant"), ((2, 1, 1, 2), "reflect"),
                                      ((2, 1, 1, 2), "replicate")])
def test_pad_double_backward(pad, mode):
    double_backward_parity(lambda x: lib_of(x).nn.functional.pad(x, pad, mode=mode) ** 2, (1, 2, 3, 4))


def test_pad_errors():
    x = retrograd.zeros(1, 2, 3, 3)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        RF.pad(x, (1,))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two times the input "
                                           "dimension but got padding length 10 and input of dimension 4"):
        RF.pad(x, (1, 1) * 5)
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D input tensor"):
        RF.pad(x, (1, 1), mode="reflect")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        RF.pad(x, (1, 1), mode="foo")
    with pytest.raises(RuntimeError, match=r"Argument #4: Padding size should be less than the corresponding input "
                                           r"dimension, but got: padding \(3, 3\) at dimension 3 of input "
                                           r"\[1, 2, 3, 3\]"):
        RF.pad(x, (3, 3, 0, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than once."):
        RF.pad(x, (4, 4, 0, 0), mode="circular")
    with pytest.raises(RuntimeError, match='Padding mode "reflect" doesn\'t take in value argument'):
        RF.pad(retrograd.zeros(2, 3, 3), (1, 1), mode="reflect", value=1.0)


INTERP = [
    ((2, 3, 4, 5), dict(scale_factor=2)),
    ((2, 3, 4, 5), dict(size=(7, 3))),
    ((2, 3, 4, 5), dict(scale_factor=1.7)),
    ((2, 3, 4, 5), dict(scale_factor=(0.6, 2.3))),
    ((2, 3, 4, 5), dict(size=(7, 3), mode="nearest-exact")),
    ((2, 3, 4, 5), dict(size=(7, 3), mode="bilinear")),
    ((2, 3, 4, 5), dict(size=(7, 3), mode="bilinear", align_corners=True)),
    ((2, 3, 4, 5), dict(scale_factor=1.7, mode="bilinear")),
    ((1, 1, 4, 5), dict(size=(1, 1), mode="bilinear", align_corners=True)),
    ((2, 3, 4, 5), dict(scale_factor=2.5, mode="bicubic")),
    ((2, 3, 4, 5), dict(scale_factor=2.5, mode="bicubic", align_corners=True)),
    ((2, 3, 7, 5), dict(size=(3, 2), mode="area")),
    ((2, 3, 5), dict(scale_factor=1.5, mode="linear")),
    ((2, 3, 5), dict(size=8, mode="linear", align_corners=True)),
    ((2, 3, 5), dict(scale_factor=3)),
    ((1, 2, 3, 4, 5), dict(scale_factor=1.5, mode="trilinear")),
    ((1, 2, 3, 4, 5), dict(scale_factor=1.5)),
]


@pytest.mark.parametrize("shape,kw", INTERP)
def test_interpolate_parity(shape, kw):
    check(lambda x: F(x).interpolate(x, **kw), [shape])


@pytest.mark.parametrize("kw", [dict(scale_factor=1.5), dict(size=(3, 2), mode="bilinear"),
                                dict(size=(4, 3), mode="bicubic", align_corners=True), dict(size=(2, 2), mode="area")])
def test_interpolate_gradcheck(kw):
    gradcheck_op(lambda x: RF.interpolate(x, **kw), [(1, 1, 3, 3)])


@needs_torch
def test_interpolate_double_backward():
    double_backward_parity(lambda x: lib_of(x).nn.functional.interpolate(x, scale_factor=1.5, mode="bilinear") ** 2,
                           (1, 2, 3, 4))


def test_interpolate_float32_matches():
    check(lambda x: F(x).interpolate(x.float(), scale_factor=1.3, mode="bilinear"), [(1, 2, 5, 6)], atol=1e-6)


def test_interpolate_errors():
    x = retrograd.zeros(1, 2, 3, 3)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        RF.interpolate(x, size=2, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        RF.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        RF.interpolate(x, scale_factor=2, align_corners=True)
    with pytest.raises(NotImplementedError, match="Got 4D input, but linear mode needs 3D input"):
        RF.interpolate(x, scale_factor=2, mode="linear")


@needs_torch
def test_upsample_modules():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 5))
    for kw in [dict(scale_factor=2), dict(size=(3, 7), mode="bilinear", align_corners=True),
               dict(scale_factor=(1.5, 2.0), mode="bicubic")]:
        module_parity(lambda lib: lib.nn.Upsample(**kw), [x])
        assert repr(rnn.Upsample(**kw)) == repr(torch.nn.Upsample(**kw))
    module_parity(lambda lib: lib.nn.UpsamplingNearest2d(scale_factor=2), [x])
    module_parity(lambda lib: lib.nn.UpsamplingBilinear2d(size=(5, 3)), [x])
    assert repr(rnn.UpsamplingBilinear2d(size=3)) == "UpsamplingBilinear2d(size=3, mode='bilinear')"


PAD_MODULES = [("ZeroPad2d", ((1, 2, 0, 1),), (2, 3, 4, 5)), ("ConstantPad1d", (2, 3.5), (2, 3, 4)),
               ("ConstantPad3d", (1, -0.5), (1, 2, 3, 4, 2)), ("ReflectionPad1d", ((2, 1),), (2, 3, 4)),
               ("ReflectionPad2d", (1,), (2, 3, 4, 5)), ("ReplicationPad2d", ((1, 0, 2, 1),), (1, 2, 3, 4)),
               ("ReplicationPad3d", (1,), (1, 2, 3, 2, 2)), ("CircularPad1d", (2,), (2, 3, 4)),
               ("CircularPad2d", ((1, 0, 2, 1),), (1, 2, 3, 4)), ("ZeroPad1d", (1,), (3, 4)),
               ("ReflectionPad3d", (1,), (1, 1, 2, 3, 3))]


@needs_torch
@pytest.mark.parametrize("name,args,shape", PAD_MODULES)
def test_padding_modules(name, args, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    module_parity(lambda lib: getattr(lib.nn, name)(*args), [x])
    assert repr(getattr(rnn, name)(*args)) == repr(getattr(torch.nn, name)(*args))


UNFOLD = [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
          dict(kernel_size=3, padding=1, stride=2)]


@pytest.mark.parametrize("kw", UNFOLD)
def test_unfold_fold_parity(kw):
    check(lambda x: F(x).unfold(x, **kw), [(2, 3, 6, 7)])
    check(lambda x: F(x).unfold(x, **kw), [(3, 6, 7)])
    check(lambda x: F(x).fold(F(x).unfold(x, **kw) * 1.0, (6, 7), **kw), [(2, 3, 6, 7)])


def test_fold_parity_direct():
    check(lambda c: F(c).fold(c, (4, 5), (2, 3), stride=(1, 2)), [(2, 12, 6)])
    check(lambda c: F(c).fold(c, (4, 5), (2, 3), stride=(1, 2)), [(12, 6)])


@pytest.mark.parametrize("kw", UNFOLD[:2])
def test_unfold_fold_gradcheck(kw):
    gradcheck_op(lambda x: RF.unfold(x, **kw), [(1, 1, 4, 5)])
    gradcheck_op(lambda x: RF.fold(x, (3, 3), 2), [(1, 4, 4)])


@needs_torch
def test_unfold_fold_double_backward():
    double_backward_parity(lambda x: lib_of(x).nn.functional.unfold(x, 2, stride=1, padding=1) ** 2, (1, 2, 3, 4))


def test_unfold_fold_errors():
    x = retrograd.zeros(2, 3, 4, 5)
    with pytest.raises(RuntimeError, match="kernel size should be greater than zero, but got kernel_height: 0 "
                                           "kernel_width: 0"):
        RF.unfold(x, 0)
    with pytest.raises(RuntimeError, match=r"Given input with spatial size \(4, 5\), kernel_size=\(9, 9\)"):
        RF.unfold(x, 9)
    with pytest.raises(RuntimeError, match="expected size of input's dimension 2 to match the calculated number "
                                           "of sliding blocks 2 \\* 2 = 4, but got input.size\\(2\\)=5."):
        RF.fold(retrograd.zeros(1, 12, 5), (3, 3), 2)
    with pytest.raises(RuntimeError, match="Expected size of input's dimension 1 to be divisible by the product "
                                           "of kernel_size"):
        RF.fold(retrograd.zeros(1, 10, 4), (3, 3), 2)


@needs_torch
def test_fold_unfold_modules():
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 6))
    module_parity(lambda lib: lib.nn.Unfold((2, 3), stride=2, padding=1), [x])
    c = np.random.default_rng(1).standard_normal((2, 12, 12))
    module_parity(lambda lib: lib.nn.Fold((4, 5), 2), [c])
    assert repr(rnn.Fold((4, 5), 2)) == repr(torch.nn.Fold((4, 5), 2))
    assert repr(rnn.Unfold((2, 3), stride=2)) == repr(torch.nn.Unfold((2, 3), stride=2))


GRID = [(m, p, a) for m in ("bilinear", "nearest") for p in ("zeros", "border", "reflection") for a in (False, True)]


@pytest.mark.parametrize("mode,pm,ac", GRID)
def test_grid_sample_parity(mode, pm, ac):
    rng = np.random.default_rng(1)
    grid = rng.uniform(-1.3, 1.3, (2, 3, 6, 2))
    check(lambda x, g: F(x).grid_sample(x, lib_of(x).from_numpy(grid.copy()) * 1.0 + g * 0.1, mode=mode,
                                         padding_mode=pm, align_corners=ac), [(2, 3, 4, 5), (2, 3, 6, 2)])


def test_grid_sample_gradcheck():
    rng = np.random.default_rng(2)
    grid = rng.uniform(-0.9, 0.9, (1, 2, 3, 2))
    x = retrograd.from_numpy(rng.standard_normal((1, 2, 3, 4))).requires_grad_(True)
    g = retrograd.from_numpy(grid).requires_grad_(True)
    assert gradcheck(lambda x, g: RF.grid_sample(x, g, align_corners=False), (x, g),
                                        atol=1e-5, rtol=1e-3)


def test_affine_grid_parity():
    for ac in (False, True):
        check(lambda t: F(t).affine_grid(t, (2, 3, 4, 5), align_corners=ac), [(2, 2, 3)])


def test_grid_sample_errors():
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'foo'"):
        RF.grid_sample(retrograd.zeros(1, 1, 2, 2), retrograd.zeros(1, 2, 2, 2), mode="foo")
    with pytest.raises(RuntimeError, match="expected grid and input to have same batch size"):
        RF.grid_sample(retrograd.zeros(1, 1, 2, 2), retrograd.zeros(2, 2, 2, 2))




@needs_torch
@pytest.mark.parametrize("mode,pm", [("bilinear", "zeros"), ("bilinear", "border"), ("nearest", "zeros")])
def test_grid_sample_double_backward(mode, pm):
    X = np.random.default_rng(3).standard_normal((2, 3, 4, 5))
    for ac in (False, True):
        double_backward_parity(lambda g: lib_of(g).nn.functional.grid_sample(
            lib_of(g).from_numpy(X.copy()) * g.sum(), g, mode=mode, padding_mode=pm, align_corners=ac), (2, 3, 3, 2))


@pytest.mark.parametrize("shape,r", [((1, 8, 3, 3), 2), ((2, 9, 2, 1), 3), ((4, 2, 2), 1), ((2, 1, 4, 2, 2), 2)])
def test_pixel_shuffle_parity(shape, r):
    check(lambda x: F(x).pixel_shuffle(x, r), [shape])
    check(lambda x: F(x).pixel_unshuffle(F(x).pixel_shuffle(x, r) * 1.0, r), [shape])


def test_pixel_shuffle_gradcheck_and_modules():
    gradcheck_op(lambda x: RF.pixel_shuffle(x, 2), [(1, 4, 2, 1)])
    gradcheck_op(lambda x: RF.pixel_unshuffle(x, 2), [(1, 1, 2, 4)])
    assert repr(rnn.PixelShuffle(2)) == "PixelShuffle(upscale_factor=2)"
    assert repr(rnn.PixelUnshuffle(3)) == "PixelUnshuffle(downscale_factor=3)"
    x = retrograd.arange(16.0).reshape(1, 4, 2, 2)
    np.testing.assert_array_equal(rnn.PixelUnshuffle(2)(rnn.PixelShuffle(2)(x)).numpy(), x.numpy())
    with pytest.raises(RuntimeError, match="pixel_shuffle expects its input's 'channel' dimension to be divisible by "
                                           "the square of upscale_factor, but input.size\\(-3\\)=7 is not divisible "
                                           "by 4"):
        RF.pixel_shuffle(retrograd.zeros(1, 7, 3, 3), 2)
    with pytest.raises(RuntimeError, match="pixel_unshuffle expects height to be divisible by downscale_factor, but "
                                           "input.size\\(-2\\)=3 is not divisible by 2"):
        RF.pixel_unshuffle(retrograd.zeros(1, 7, 3, 3), 2)
