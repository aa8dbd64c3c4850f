"""retrograd.vision.transforms against torchvision.transforms: the same output on PIL images
(Pillow does the work in both) and on tensor images (computed here with NumPy), and random
transforms that apply exactly the parameters their get_params draws."""
import numpy as np
import pytest

import retrograd
from retrograd.vision import transforms as T
from retrograd.vision.transforms import functional as F
from helpers import torch
from vision_oracle import needs_torchvision, torchvision

Image = pytest.importorskip("PIL.Image")

if torchvision is not None:
    TT = torchvision.transforms
    TF = torchvision.transforms.functional


def _rgb(h=13, w=17, seed=0):
    a = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    return Image.fromarray(a)


def _gray(h=13, w=17, seed=1):
    return _rgb(h, w, seed).convert("L")


def _ft(c=3, h=13, w=17, seed=2, batch=()):
    return np.random.default_rng(seed).random(batch + (c, h, w), dtype=np.float32)


def _u8(c=3, h=13, w=17, seed=3):
    return np.random.default_rng(seed).integers(0, 256, (c, h, w), dtype=np.uint8)


def _same_pil(a, b):
    assert a.mode == b.mode and a.size == b.size
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _k(kw):
    """torchvision's own InterpolationMode for the oracle's keyword arguments."""
    return {k: TF.InterpolationMode(v.value) if isinstance(v, F.InterpolationMode) else v for k, v in kw.items()}


def _tv(fn_name, x, *args, **kw):
    return getattr(TF, fn_name)(torch.from_numpy(x.copy()), *args, **_k(kw)).numpy()


def _rg(fn_name, x, *args, **kw):
    return getattr(F, fn_name)(retrograd.tensor(x), *args, **kw).numpy()


IM = F.InterpolationMode

PIL_CASES = [
    ("resize", (10,), {}), ("resize", ([7, 23],), {}), ("resize", (8,), {"interpolation": IM.NEAREST}),
    ("resize", (30,), {"interpolation": IM.BICUBIC}), ("resize", ([9, 9],), {"interpolation": IM.LANCZOS}),
    ("resize", (8,), {"max_size": 10}), ("resize", (13,), {}),
    ("center_crop", (8,), {}), ("center_crop", ([20, 25],), {}), ("center_crop", ([6, 9],), {}),
    ("crop", (2, 3, 7, 9), {}), ("crop", (-2, 10, 8, 12), {}),
    ("resized_crop", (1, 2, 9, 11, [5, 6]), {}),
    ("pad", (2,), {}), ("pad", ([1, 3],), {"fill": 7}), ("pad", ([1, 2, 3, 4],), {"padding_mode": "reflect"}),
    ("pad", (3,), {"padding_mode": "edge"}), ("pad", ([2, 1],), {"padding_mode": "symmetric"}),
    ("hflip", (), {}), ("vflip", (), {}),
    ("rotate", (30,), {}), ("rotate", (-75.5,), {"interpolation": IM.BILINEAR, "fill": 9}),
    ("rotate", (45,), {"expand": True}), ("rotate", (20,), {"center": [2, 3]}),
    ("adjust_brightness", (1.4,), {}), ("adjust_contrast", (0.6,), {}), ("adjust_saturation", (1.7,), {}),
    ("adjust_hue", (0.2,), {}), ("adjust_hue", (-0.45,), {}),
    ("to_grayscale", (), {}), ("to_grayscale", (3,), {}),
]


@needs_torchvision
@pytest.mark.parametrize("mode", ["RGB", "L"])
@pytest.mark.parametrize("name,args,kw", PIL_CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(PIL_CASES)])
def test_functional_on_pil_matches_torchvision(name, args, kw, mode):
    img = _rgb() if mode == "RGB" else _gray()
    want = getattr(TF, name)(img, *args, **_k(kw))
    got = getattr(F, name)(img, *args, **kw)
    _same_pil(got, want)


@needs_torchvision
@pytest.mark.parametrize("img", [_rgb(), _gray(), _rgb().convert("RGBA"), _gray().convert("1"),
                                 _gray().convert("F"), _gray().convert("I")], ids=["RGB", "L", "RGBA", "1", "F", "I"])
def test_pil_tensor_conversions_match_torchvision(img):
    want = TF.to_tensor(img)
    got = F.to_tensor(img)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    want = TF.pil_to_tensor(img)
    got = F.pil_to_tensor(img)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@needs_torchvision
@pytest.mark.parametrize("kind", ["f32_3", "f32_1", "u8_3", "u8_1", "u8_4", "f32_hw"])
@pytest.mark.parametrize("mode", [None, "X"])
def test_to_pil_image_matches_torchvision(kind, mode):
    x = {"f32_3": _ft(), "f32_1": _ft(c=1), "u8_3": _u8(), "u8_1": _u8(c=1), "u8_4": _u8(c=4),
         "f32_hw": _ft(c=1)[0]}[kind]
    if mode == "X":
        mode = {"f32_1": "F", "f32_hw": "F", "u8_4": "RGBX", "u8_3": "RGB"}.get(kind)
        if mode is None:
            return
    _same_pil(F.to_pil_image(retrograd.tensor(x), mode), TF.to_pil_image(torch.from_numpy(x), mode))
    arr = x.transpose(1, 2, 0) if x.ndim == 3 else x
    if arr.dtype == np.uint8 or mode == "F":
        _same_pil(F.to_pil_image(arr, mode), TF.to_pil_image(arr, mode))


TENSOR_CASES = [
    ("resize", (8,), {}), ("resize", ([5, 30],), {}), ("resize", ([26, 34],), {}),
    ("resize", ([6, 7],), {"antialias": False}), ("resize", ([26, 30],), {"antialias": False}),
    ("resize", ([6, 7],), {"interpolation": IM.BICUBIC}), ("resize", ([25, 30],), {"interpolation": IM.BICUBIC}),
    ("resize", ([6, 7],), {"interpolation": IM.BICUBIC, "antialias": False}),
    ("resize", ([6, 29],), {"interpolation": IM.NEAREST}), ("resize", ([6, 29],), {"interpolation": IM.NEAREST_EXACT}),
    ("resize", (8,), {"max_size": 10}),
    ("center_crop", (8,), {}), ("center_crop", ([20, 25],), {}), ("crop", (-2, 10, 8, 12), {}),
    ("resized_crop", (1, 2, 9, 11, [5, 6]), {}),
    ("pad", ([1, 2, 3, 4],), {}), ("pad", (2,), {"fill": 0.5}), ("pad", ([1, 3],), {"padding_mode": "reflect"}),
    ("pad", (3,), {"padding_mode": "edge"}), ("pad", ([2, 1],), {"padding_mode": "symmetric"}),
    ("pad", ([-1, 2, 3, -2],), {}),
    ("hflip", (), {}), ("vflip", (), {}),
    ("rotate", (30,), {}), ("rotate", (90,), {}), ("rotate", (-75.5,), {"interpolation": IM.BILINEAR}),
    ("rotate", (33,), {"interpolation": IM.BILINEAR, "fill": [0.5]}), ("rotate", (20,), {"center": [2, 3]}),
    ("rotate", (45,), {"expand": True}), ("rotate", (-120,), {"expand": True, "interpolation": IM.BILINEAR}),
    ("adjust_brightness", (1.4,), {}), ("adjust_brightness", (0.3,), {}), ("adjust_contrast", (0.6,), {}),
    ("adjust_contrast", (1.8,), {}), ("adjust_saturation", (1.7,), {}), ("adjust_saturation", (0.2,), {}),
    ("adjust_hue", (0.2,), {}), ("adjust_hue", (-0.45,), {}),
    ("rgb_to_grayscale", (), {}), ("rgb_to_grayscale", (3,), {}),
]


@needs_torchvision
@pytest.mark.parametrize("kind", ["float32", "uint8", "batch", "gray"])
@pytest.mark.parametrize("name,args,kw", TENSOR_CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(TENSOR_CASES)])
def test_functional_on_tensors_matches_torchvision(name, args, kw, kind):
    x = {"float32": _ft(), "uint8": _u8(), "batch": _ft(batch=(2,)), "gray": _ft(c=1)}[kind]
    if kind == "uint8" and "fill" in kw and isinstance(kw["fill"], float):
        kw = dict(kw, fill=7)
    want = _tv(name, x, *args, **kw)
    got = _rg(name, x, *args, **kw)
    assert got.dtype == want.dtype and got.shape == want.shape
    if x.dtype == np.uint8:
        # torch's uint8 antialiased/bicubic kernels use fixed-point arithmetic (Pillow's): a
        # rounding of at most one level apart from float-then-round
        exact = not (name in ("resize", "resized_crop") and kw.get("interpolation", IM.BILINEAR)
                     in (IM.BILINEAR, IM.BICUBIC))
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        assert diff.max() <= (0 if exact else 1), diff.max()
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)


@needs_torchvision
@pytest.mark.parametrize("src", ["float32", "float64", "uint8", "int16", "int32", "int64"])
@pytest.mark.parametrize("dst", ["float32", "float64", "uint8", "int16", "int32", "int64"])
def test_convert_image_dtype_matches_torchvision(src, dst):
    rng = np.random.default_rng(4)
    if src.startswith("float"):
        x = np.concatenate([rng.random(20), [0.0, 1.0, 0.5, 0.999]]).astype(src)
    else:
        info = np.iinfo(src)
        x = np.concatenate([rng.integers(0, info.max, 22, endpoint=True), [0, info.max]]).astype(src)
    x = x.reshape(1, 2, 12)
    try:
        want = TF.convert_image_dtype(torch.from_numpy(x.copy()), getattr(torch, dst))
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match="cannot be performed safely"):
            F.convert_image_dtype(retrograd.tensor(x), getattr(retrograd, dst))
        assert "cannot be performed safely" in str(e)
        return
    got = F.convert_image_dtype(retrograd.tensor(x), getattr(retrograd, dst))
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-7, atol=0)


@needs_torchvision
def test_normalize_and_erase_match_torchvision():
    x = _ft(batch=(2,))
    np.testing.assert_array_equal(_rg("normalize", x, [0.4, 0.5, 0.6], [0.2, 0.3, 0.25]),
                                  _tv("normalize", x, [0.4, 0.5, 0.6], [0.2, 0.3, 0.25]))
    v = np.full((3, 4, 5), 0.25, np.float32)
    np.testing.assert_array_equal(F.erase(retrograd.tensor(x), 2, 3, 4, 5, retrograd.tensor(v)).numpy(),
                                  TF.erase(torch.from_numpy(x.copy()), 2, 3, 4, 5, torch.from_numpy(v)).numpy())


def _inputs():
    return [("pil", _rgb(24, 30)), ("tensor", _ft(h=24, w=30))]


def _apply_tv(fn, img, *a, **k):
    if isinstance(img, np.ndarray):
        return getattr(TF, fn)(torch.from_numpy(img.copy()), *a, **k).numpy()
    return np.asarray(getattr(TF, fn)(img, *a, **k))


def _out(x):
    return x.numpy() if isinstance(x, retrograd.Tensor) else np.asarray(x)


def _in(img):
    return retrograd.tensor(img) if isinstance(img, np.ndarray) else img


@needs_torchvision
@pytest.mark.parametrize("kind,img", _inputs(), ids=["pil", "tensor"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_transforms_apply_the_parameters_they_draw(kind, img, seed):
    def drawn(get):
        retrograd.manual_seed(seed)
        return get()

    # RandomCrop (with padding): the crop of the padded image at the drawn corner
    t = T.RandomCrop(20, padding=3, padding_mode="reflect")
    padded = F.pad(_in(img), 3, 0, "reflect")
    i, j, h, w = drawn(lambda: T.RandomCrop.get_params(padded, (20, 20)))
    retrograd.manual_seed(seed)
    got = _out(t(_in(img)))
    want = _apply_tv("crop", np.asarray(_out(padded)) if kind == "tensor" else _out_pil(padded), i, j, h, w)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # RandomResizedCrop
    i, j, h, w = drawn(lambda: T.RandomResizedCrop.get_params(_in(img), (0.08, 1.0), (3 / 4, 4 / 3)))
    retrograd.manual_seed(seed)
    got = _out(T.RandomResizedCrop(16)(_in(img)))
    np.testing.assert_allclose(got, _apply_tv("resized_crop", img, i, j, h, w, [16, 16]), rtol=1e-5, atol=2e-6)
    # RandomRotation
    angle = drawn(lambda: T.RandomRotation.get_params([-40, 40]))
    retrograd.manual_seed(seed)
    got = _out(T.RandomRotation(40)(_in(img)))
    fill = [0.0, 0.0, 0.0] if kind == "tensor" else 0
    np.testing.assert_allclose(got, _apply_tv("rotate", img, angle, fill=fill), rtol=1e-6)
    # ColorJitter: the four adjustments in the drawn order
    order, b, c, s, hue = drawn(lambda: T.ColorJitter.get_params([0.6, 1.4], [0.6, 1.4], [0.6, 1.4], [-0.1, 0.1]))
    retrograd.manual_seed(seed)
    got = _out(T.ColorJitter(0.4, 0.4, 0.4, 0.1)(_in(img)))
    ref = torch.from_numpy(img.copy()) if kind == "tensor" else img
    for k in order.tolist():
        ref = [lambda r: TF.adjust_brightness(r, b), lambda r: TF.adjust_contrast(r, c),
               lambda r: TF.adjust_saturation(r, s), lambda r: TF.adjust_hue(r, hue)][k](ref)
    want = ref.numpy() if kind == "tensor" else np.asarray(ref)
    if kind == "tensor":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)
    # flips: applied exactly when the draw is below p
    for cls, fn in ((T.RandomHorizontalFlip, "hflip"), (T.RandomVerticalFlip, "vflip")):
        flip = drawn(lambda: retrograd.rand(1).item()) < 0.5
        retrograd.manual_seed(seed)
        got = _out(cls()(_in(img)))
        want = _apply_tv(fn, img) if flip else (img if kind == "tensor" else np.asarray(img))
        np.testing.assert_array_equal(got, want)


def _out_pil(img):
    return img


@needs_torchvision
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("value", [0, "random", (0.1, 0.2, 0.3)])
def test_random_erasing_applies_its_draw(seed, value):
    x = _ft(h=24, w=30)
    retrograd.manual_seed(seed)
    hit = retrograd.rand(1).item() < 0.9
    vals = None if value == "random" else ([float(value)] if isinstance(value, (int, float)) else list(value))
    i, j, h, w, v = T.RandomErasing.get_params(retrograd.tensor(x), (0.02, 0.33), (0.3, 3.3), vals)
    retrograd.manual_seed(seed)
    got = T.RandomErasing(p=0.9, value=value)(retrograd.tensor(x)).numpy()
    if not hit:
        np.testing.assert_array_equal(got, x)
        return
    want = TF.erase(torch.from_numpy(x.copy()), i, j, h, w, torch.from_numpy(v.numpy().copy())).numpy()
    np.testing.assert_array_equal(got, want)


@needs_torchvision
def test_class_transforms_on_a_pipeline():
    x = _rgb(40, 36)
    pipe = T.Compose([T.Resize(32), T.CenterCrop(28), T.Grayscale(3), T.Pad(2, fill=(1, 2, 3)), T.ToTensor(),
                      T.Normalize((0.5, 0.5, 0.5), (0.25, 0.25, 0.25)), T.ConvertImageDtype(retrograd.float64),
                      T.Lambda(lambda t: t * 2)])
    ref = TT.Compose([TT.Resize(32), TT.CenterCrop(28), TT.Grayscale(3), TT.Pad(2, fill=(1, 2, 3)), TT.ToTensor(),
                      TT.Normalize((0.5, 0.5, 0.5), (0.25, 0.25, 0.25)), TT.ConvertImageDtype(torch.float64),
                      TT.Lambda(lambda t: t * 2)])
    got, want = pipe(x), ref(x)
    assert got.dtype == retrograd.float64 and tuple(got.shape) == tuple(want.shape) == (3, 32, 32)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    assert repr(T.Resize(32)) == repr(TT.Resize(32))
    _same_pil(T.ToPILImage()(T.PILToTensor()(x)), x)


def test_random_transforms_follow_retrogrds_seed_and_validate():
    img = retrograd.rand(3, 20, 20)
    outs = []
    for _ in range(2):
        retrograd.manual_seed(5)
        outs.append(T.Compose([T.RandomResizedCrop(8), T.RandomHorizontalFlip(), T.ColorJitter(0.3, 0.3, 0.3, 0.1),
                               T.RandomErasing(p=1.0)])(img).numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    with pytest.raises(ValueError, match="Required crop size \\(30, 30\\) is larger than input image size"):
        T.RandomCrop(30)(img)
    with pytest.raises(ValueError, match="hue values should be between"):
        T.ColorJitter(hue=0.7)
    with pytest.raises(TypeError, match="img should be PIL Image or Tensor"):
        F.hflip(np.zeros((3, 4, 4)))
    with pytest.raises(TypeError, match="Input tensor should be a float tensor"):
        T.Normalize([0.5], [0.5])(retrograd.zeros(1, 2, 2, dtype=retrograd.uint8))
    # the old module paths still reach the same classes
    import retrograd.transforms as old
    from retrograd.datasets import transforms as ds_t
    assert old.ToTensor is ds_t.ToTensor is T.ToTensor and old.to_tensor is F.to_tensor
