"""``torchvision.transforms.functional``: image operations on PIL images (done by Pillow, as
torchvision does) and on tensor images (..., C, H, W) (done here with NumPy; not recorded by
autograd). Pillow is imported only when a PIL image is met or made."""
import enum
import math
import numbers

import numpy as np

from ..._tensor import Tensor

__all__ = ["InterpolationMode", "to_tensor", "pil_to_tensor", "to_pil_image", "normalize", "resize", "crop",
           "center_crop", "resized_crop", "pad", "hflip", "vflip", "rotate", "adjust_brightness",
           "adjust_contrast", "adjust_saturation", "adjust_hue", "rgb_to_grayscale", "to_grayscale", "erase",
           "convert_image_dtype", "get_dimensions", "get_image_size", "get_image_num_channels"]


class InterpolationMode(enum.Enum):
    """How pixels between samples are computed when an image is resized or rotated."""
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


# Pillow's resampling filter codes
_PIL_FILTER = {InterpolationMode.NEAREST: 0, InterpolationMode.NEAREST_EXACT: 0, InterpolationMode.LANCZOS: 1,
               InterpolationMode.BILINEAR: 2, InterpolationMode.BICUBIC: 3, InterpolationMode.BOX: 4,
               InterpolationMode.HAMMING: 5}
_FROM_INT = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR, 3: InterpolationMode.BICUBIC,
             4: InterpolationMode.BOX, 5: InterpolationMode.HAMMING, 1: InterpolationMode.LANCZOS}


def _interp(mode):
    if isinstance(mode, InterpolationMode):
        return mode
    if isinstance(mode, int) and mode in _FROM_INT:     # Pillow's codes, an older spelling
        return _FROM_INT[mode]
    if isinstance(mode, str):
        return InterpolationMode(mode)
    if isinstance(mode, enum.Enum) and isinstance(mode.value, str):   # another library's equal enum
        return InterpolationMode(mode.value)
    raise TypeError("Argument interpolation should be a InterpolationMode or a corresponding Pillow integer constant")


def _is_pil(img):
    return type(img).__module__.startswith("PIL.") and hasattr(img, "getbands")


def _check(img):
    """The image to work on: a tensor or PIL image; a uint8 NumPy image (H, W[, C]), what
    retrograd's MNIST gives where torchvision's gives a PIL image, is taken as a PIL image."""
    if isinstance(img, Tensor) or _is_pil(img):
        return img
    if isinstance(img, np.ndarray) and img.dtype == np.uint8 and (img.ndim == 2 or (img.ndim == 3 and img.shape[2]
                                                                                      in (1, 3, 4))):
        from PIL import Image
        return Image.fromarray(img[:, :, 0] if img.ndim == 3 and img.shape[2] == 1 else img)
    raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")


def _arr(t):
    return t.detach().numpy() if t.device.type == "cpu" else t.detach().cpu().numpy()


def _wrap(a, like=None):
    return Tensor._make(np.ascontiguousarray(a))


def _max_value(dtype):
    if dtype.kind == "u" or dtype.kind == "i":
        return np.iinfo(dtype).max
    if dtype.kind == "b":
        return 1
    return 1.0


# ---------------------------------------------------------------- conversions

def to_tensor(pic):
    """A PIL image or NumPy array (H, W[, C]) as a tensor (C, H, W); uint8 is scaled to float32
    in [0, 1], other types keep their values."""
    if _is_pil(pic):
        if pic.mode == "1":
            a = np.array(pic, np.uint8) * np.uint8(255)
        else:
            a = np.array(pic, copy=True)
            if a.dtype == np.dtype(">i2") or pic.mode == "I;16":
                a = a.astype(np.int16 if pic.mode == "I;16" else a.dtype.newbyteorder("="))
        if a.ndim == 2:
            a = a[:, :, None]
        pic = a
    elif not isinstance(pic, np.ndarray):
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if pic.ndim not in (2, 3):
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    img = pic[None] if pic.ndim == 2 else pic.transpose(2, 0, 1)
    if img.dtype == np.uint8:
        out = img.astype(np.float32)
        out /= np.float32(255)
        return Tensor._make(out)
    if img.dtype == np.bool_:
        return Tensor._make(img.astype(np.float32))
    return Tensor._make(np.array(img, order="C"))


def pil_to_tensor(pic):
    """A PIL image as a tensor (C, H, W) of its own type (uint8 for RGB/L), values unchanged."""
    if not _is_pil(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    a = np.array(pic, copy=True)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("="))
    if a.ndim == 2:
        a = a[:, :, None]
    return Tensor._make(np.ascontiguousarray(a.transpose(2, 0, 1)))


def to_pil_image(pic, mode=None):
    """A tensor (C, H, W) or NumPy array (H, W, C) as a PIL image; float tensors are scaled by 255
    and truncated to uint8 (unless ``mode="F"``)."""
    from PIL import Image
    if isinstance(pic, Tensor):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        a = _arr(pic)
        if a.ndim == 2:
            a = a[None]
        if a.shape[-3] > 4:
            raise ValueError(f"pic should not have > 4 channels. Got {a.shape[-3]} channels.")
        if a.dtype.kind in "fV" and mode != "F":
            a = (a.astype(np.float32) * np.float32(255)).astype(np.uint8)
        a = a.transpose(1, 2, 0)
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        a = pic[:, :, None] if pic.ndim == 2 else pic
        if a.shape[-1] > 4:
            raise ValueError(f"pic should not have > 4 channels. Got {a.shape[-1]} channels.")
    else:
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    channels = a.shape[2]
    if channels == 1:
        a = a[:, :, 0]
        expected = {np.dtype(np.uint8): "L", np.dtype(np.int16): "I;16", np.dtype(np.uint16): "I;16",
                    np.dtype(np.int32): "I", np.dtype(np.float32): "F"}.get(a.dtype)
        if mode is not None and expected is not None and mode != expected and not (mode == "L" and a.dtype == np.uint8):
            raise ValueError(f"Incorrect mode ({mode}) supplied for input type {a.dtype}. Should be {expected}")
        mode = mode or expected
    elif channels == 2:
        mode = mode or "LA"
    elif channels == 4:
        mode = mode or "RGBA"
    else:
        mode = mode or "RGB"
    if mode is None:
        raise TypeError(f"Input type {a.dtype} is not supported")
    if mode in ("LA", "RGBA", "RGB", "RGBX", "CMYK", "YCbCr", "HSV", "L") and a.dtype != np.uint8:
        raise TypeError(f"Input type {a.dtype} is not supported")
    return _pil_from_array(a, mode)


def _pil_from_array(a, mode):
    """A PIL image of ``mode`` holding the pixels of ``a`` (H, W[, C]) as they are."""
    from PIL import Image
    a = np.ascontiguousarray(a)
    if mode == "1":
        return Image.fromarray(a.astype(bool))
    if mode in ("I;16", "I;16L"):
        a = a.astype("<u2")
    elif mode == "I":
        a = a.astype(np.int32)
    elif mode == "F":
        a = a.astype(np.float32)
    return Image.frombytes(mode, (a.shape[1], a.shape[0]), a.tobytes())


def get_dimensions(img):
    """[channels, height, width] of an image."""
    img = _check(img)
    if isinstance(img, Tensor):
        c = 1 if img.ndim == 2 else img.shape[-3]
        return [c, img.shape[-2], img.shape[-1]]
    return [len(img.getbands()), img.size[1], img.size[0]]


def get_image_size(img):
    """[width, height] of an image."""
    c, h, w = get_dimensions(img)
    return [w, h]


def get_image_num_channels(img):
    """The number of channels of an image."""
    return get_dimensions(img)[0]


def _check_normalizable(tensor):
    """torchvision's errors for what ``normalize`` cannot take: a float tensor (..., C, H, W)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                         f"{tensor.size()}")


def normalize(tensor, mean, std, inplace=False):
    """``(tensor - mean[c]) / std[c]`` channel by channel, for a float tensor (..., C, H, W)."""
    _check_normalizable(tensor)
    m, s = _stats(mean, std, tensor._data.dtype)
    return _normalize_with(tensor, m, s, inplace)


def _stats(mean, std, dtype):
    mean = np.asarray(mean.tolist() if isinstance(mean, Tensor) else mean, dtype=dtype)
    std = np.asarray(std.tolist() if isinstance(std, Tensor) else std, dtype=dtype)
    if (std == 0).any():
        raise ValueError(f"std evaluated to zero after conversion to {dtype}, leading to division by zero.")
    if mean.ndim == 1:
        mean = mean[:, None, None]
    if std.ndim == 1:
        std = std[:, None, None]
    return mean, std


def _normalize_with(tensor, mean, std, inplace):
    d = tensor._data
    if inplace:
        d -= mean
        d /= std
        return tensor
    out = d - mean
    out /= std
    return Tensor._make(out)


def convert_image_dtype(image, dtype=None):
    """Convert a tensor image to ``dtype``, rescaling values: float in [0, 1], integers in
    [0, max of the type]."""
    from ... import float32
    dtype = float32 if dtype is None else dtype
    if not isinstance(image, Tensor):
        raise TypeError("Input img should be Tensor Image")
    if image.dtype == dtype:
        return image
    a = _arr(image)
    out_np = dtype.np
    if a.dtype.kind in "fV":
        if out_np.kind in "fV":
            return _wrap(a.astype(out_np))
        if (a.dtype == np.float32 and out_np in (np.dtype(np.int32), np.dtype(np.int64))) or \
                (a.dtype == np.float64 and out_np == np.dtype(np.int64)):
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed safely.")
        # 1.0 must reach the top value and no value may pass it: scale by max + 1 - eps
        eps = 1e-3
        mx = float(_max_value(out_np))
        return _wrap((a * a.dtype.type(mx + 1.0 - eps)).astype(out_np))
    in_max = int(_max_value(a.dtype))
    if out_np.kind in "fV":
        return _wrap(a.astype(out_np) / out_np.type(in_max))
    out_max = int(_max_value(out_np))
    if in_max > out_max:
        factor = (in_max + 1) // (out_max + 1)
        return _wrap((a // factor).astype(out_np))
    factor = (out_max + 1) // (in_max + 1)
    return _wrap(a.astype(out_np) * out_np.type(factor))


# ---------------------------------------------------------------- geometry

def _output_size(h, w, size, max_size):
    if isinstance(size, numbers.Number):
        size = [int(size)]
    size = list(size)
    if len(size) == 1:
        short, long = (w, h) if w <= h else (h, w)
        new_short = size[0]
        new_long = int(new_short * long / short)
        if max_size is not None:
            if max_size <= new_short:
                raise ValueError(f"max_size = {max_size} must be strictly greater than the requested size for the "
                                 f"smaller edge size = {size}")
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
        return [new_h, new_w]
    if max_size is not None:
        raise ValueError("max_size should only be passed if size specifies the length of the smaller edge, i.e. "
                         "size should be an int or a sequence of length 1 in torchscript mode.")
    return [int(size[0]), int(size[1])]


def _filter_weights(n_in, n_out, kernel, support, antialias, dt):
    """(n_out, n_in) resampling matrix: each output pixel's centre mapped back, the kernel
    widened by the scale when shrinking with ``antialias``, weights normalized to sum 1.
    Computed in the image's precision ``dt`` (float32 weights for float32 images, as PyTorch
    computes them: the centres of far pixels differ in the last bits otherwise)."""
    f = dt.type
    scale = f(n_in) / f(n_out)
    fscale = max(scale, f(1)) if antialias else f(1)
    sup = f(support) * fscale
    inv = f(1) / fscale
    m = np.zeros((n_out, n_in), dt)
    for i in range(n_out):
        center = scale * (f(i) + f(0.5))
        lo = max(int(center - sup + f(0.5)), 0)
        hi = min(int(center + sup + f(0.5)), n_in)
        j = np.arange(lo, hi).astype(dt)
        w = kernel((j - center + f(0.5)) * inv).astype(dt)
        total = w.sum(dtype=dt)
        if total != 0:
            w = w / total
        m[i, lo:hi] = w
    return m


def _triangle(x):
    return np.maximum(0.0, 1.0 - np.abs(x))


def _cubic(a):
    def k(x):
        x = np.abs(x)
        return np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                        np.where(x < 2, (((x - 5) * x + 8) * x - 4) * a, 0.0))
    return k


def _resample(a, out_h, out_w, kernel, support, antialias):
    """Separable resampling of a float array (..., H, W): along the width, then the height."""
    h, w = a.shape[-2:]
    if out_w != w:
        a = np.einsum("...hw,ow->...ho", a, _filter_weights(w, out_w, kernel, support, antialias, a.dtype))
    if out_h != h:
        a = np.einsum("oh,...hw->...ow", _filter_weights(h, out_h, kernel, support, antialias, a.dtype), a)
    return a


def _bilinear_noaa(a, out_h, out_w):
    """Bilinear interpolation, align_corners=False, no antialiasing (F.interpolate's)."""
    def axis(n_in, n_out):
        scale = n_in / n_out
        src = np.maximum((np.arange(n_out) + 0.5) * scale - 0.5, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        f = src - i0
        return i0, i1, f
    y0, y1, fy = axis(a.shape[-2], out_h)
    x0, x1, fx = axis(a.shape[-1], out_w)
    rows = a[..., y0, :] * (1 - fy)[:, None] + a[..., y1, :] * fy[:, None]
    return rows[..., x0] * (1 - fx) + rows[..., x1] * fx


def _bicubic_noaa(a, out_h, out_w):
    """Bicubic interpolation (a = -0.75), align_corners=False, taps clamped at the edges."""
    k = _cubic(-0.75)

    def along(x, n_out, axis):
        n_in = x.shape[axis]
        src = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
        i0 = np.floor(src).astype(np.int64)
        t = src - i0
        out = 0.0
        for off in (-1, 0, 1, 2):
            idx = np.clip(i0 + off, 0, n_in - 1)
            w = k(t - off)
            shape = [1] * x.ndim
            shape[axis] = n_out
            out = out + np.take(x, idx, axis=axis) * w.reshape(shape)
        return out
    return along(along(a, out_h, a.ndim - 2), out_w, a.ndim - 1)


def _resize_tensor(img, out_h, out_w, mode, antialias):
    a = _arr(img)
    h, w = a.shape[-2:]
    if (h, w) == (out_h, out_w):
        return img
    squeeze = a.ndim == 2
    if squeeze:
        a = a[None]
    if mode in (InterpolationMode.NEAREST, InterpolationMode.NEAREST_EXACT):
        off = 0.5 if mode is InterpolationMode.NEAREST_EXACT else 0.0
        ys = np.minimum(np.floor((np.arange(out_h) + off) * (h / out_h)).astype(np.int64), h - 1)
        xs = np.minimum(np.floor((np.arange(out_w) + off) * (w / out_w)).astype(np.int64), w - 1)
        out = a[..., ys[:, None], xs]
    else:
        if mode not in (InterpolationMode.BILINEAR, InterpolationMode.BICUBIC):
            raise ValueError(f"Interpolation mode {mode.value} is not supported for tensor images: use nearest, "
                             "nearest-exact, bilinear or bicubic")
        x = a if a.dtype.kind == "f" else a.astype(np.float32)
        if mode is InterpolationMode.BILINEAR:
            if antialias:
                out = _resample(x, out_h, out_w, _triangle, 1.0, True)
            else:
                out = _bilinear_noaa(x, out_h, out_w)
        elif antialias:
            out = _resample(x, out_h, out_w, _cubic(-0.5), 2.0, True)     # Pillow's cubic
        else:
            out = _bicubic_noaa(x, out_h, out_w)
        if a.dtype.kind in "iub":
            info = np.iinfo(a.dtype)
            out = np.clip(np.round(out), info.min, info.max)
        out = out.astype(a.dtype)
    if squeeze:
        out = out[0]
    return _wrap(out)


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize to ``size``: (h, w), or an int for the smaller edge (keeping the aspect ratio, the
    longer edge at most ``max_size``). PIL images are resized by Pillow; tensors with
    ``antialias`` (bilinear/bicubic) filter like Pillow when shrinking."""
    img = _check(img)
    mode = _interp(interpolation)
    if isinstance(size, (list, tuple)) and len(size) not in (1, 2):
        raise ValueError(f"Size must be an int or a 1 or 2 element tuple/list, not a {len(size)} element tuple/list")
    c, h, w = get_dimensions(img)
    out_h, out_w = _output_size(h, w, size, max_size)
    if _is_pil(img):
        if [h, w] == [out_h, out_w]:
            return img
        return img.resize((out_w, out_h), _PIL_FILTER[mode])
    return _resize_tensor(img, out_h, out_w, mode, antialias)


def crop(img, top, left, height, width):
    """The ``height`` x ``width`` region at (``top``, ``left``); outside the image is zeros."""
    img = _check(img)
    if _is_pil(img):
        return img.crop((left, top, left + width, top + height))
    a = _arr(img)
    h, w = a.shape[-2:]
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        pads = [(0, 0)] * (a.ndim - 2) + [(max(-top, 0), max(bottom - h, 0)), (max(-left, 0), max(right - w, 0))]
        part = a[..., max(top, 0):min(bottom, h), max(left, 0):min(right, w)]
        return _wrap(np.pad(part, pads))
    return _wrap(a[..., top:bottom, left:right])


def _pair(size, name="size"):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, (list, tuple)) and len(size) == 1:
        return int(size[0]), int(size[0])
    if isinstance(size, (list, tuple)) and len(size) == 2:
        return int(size[0]), int(size[1])
    raise ValueError(f"Please provide only two dimensions (h, w) for {name}.")


def center_crop(img, output_size):
    """The centre ``output_size`` region (zero-padded first when the image is smaller)."""
    crop_h, crop_w = _pair(output_size, "size")
    c, h, w = get_dimensions(img)
    if crop_w > w or crop_h > h:
        ltrb = [(crop_w - w) // 2 if crop_w > w else 0, (crop_h - h) // 2 if crop_h > h else 0,
                (crop_w - w + 1) // 2 if crop_w > w else 0, (crop_h - h + 1) // 2 if crop_h > h else 0]
        img = pad(img, ltrb, fill=0)
        c, h, w = get_dimensions(img)
        if crop_w == w and crop_h == h:
            return img
    top = int(round((h - crop_h) / 2.0))
    left = int(round((w - crop_w) / 2.0))
    return crop(img, top, left, crop_h, crop_w)


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True):
    """``crop`` then ``resize``."""
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def _ltrb(padding):
    if isinstance(padding, numbers.Number):
        p = int(padding)
        return p, p, p, p
    if not isinstance(padding, (list, tuple)):
        raise TypeError("Got inappropriate padding arg")
    if len(padding) == 1:
        return (int(padding[0]),) * 4
    if len(padding) == 2:
        return int(padding[0]), int(padding[1]), int(padding[0]), int(padding[1])
    if len(padding) == 4:
        return tuple(int(p) for p in padding)
    raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")


_NP_PAD = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pad the borders: ``padding`` int (all), (left/right, top/bottom) or (left, top, right,
    bottom); ``padding_mode`` constant (``fill``), edge, reflect or symmetric."""
    img = _check(img)
    if padding_mode not in _NP_PAD:
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    left, top, right, bottom = _ltrb(padding)
    if _is_pil(img):
        from PIL import Image
        a = np.asarray(img)
        spec = [(max(top, 0), max(bottom, 0)), (max(left, 0), max(right, 0))] + [(0, 0)] * (a.ndim - 2)
        a = a[max(-top, 0):a.shape[0] - max(-bottom, 0), max(-left, 0):a.shape[1] - max(-right, 0)]
        if padding_mode == "constant":
            out = np.empty((a.shape[0] + spec[0][0] + spec[0][1], a.shape[1] + spec[1][0] + spec[1][1])
                           + a.shape[2:], a.dtype)
            out[...] = np.asarray(fill if not isinstance(fill, (list, tuple)) or a.ndim == 3 else fill[0],
                                  dtype=a.dtype)
            out[spec[0][0]:spec[0][0] + a.shape[0], spec[1][0]:spec[1][0] + a.shape[1]] = a
        else:
            out = np.pad(a, spec, mode=_NP_PAD[padding_mode])
        res = _pil_from_array(out, img.mode)
        if img.mode == "P":
            res.putpalette(img.getpalette())
        return res
    a = _arr(img)
    # negative padding crops
    a = a[..., max(-top, 0):a.shape[-2] - max(-bottom, 0), max(-left, 0):a.shape[-1] - max(-right, 0)]
    spec = [(0, 0)] * (a.ndim - 2) + [(max(top, 0), max(bottom, 0)), (max(left, 0), max(right, 0))]
    if padding_mode == "constant":
        return _wrap(np.pad(a, spec, constant_values=np.asarray(fill).astype(a.dtype) if fill is not None else 0))
    return _wrap(np.pad(a, spec, mode=_NP_PAD[padding_mode]))


def hflip(img):
    """Mirror left-right."""
    img = _check(img)
    if _is_pil(img):
        from PIL import Image
        return img.transpose(Image.FLIP_LEFT_RIGHT)
    return _wrap(_arr(img)[..., ::-1])


def vflip(img):
    """Mirror top-bottom."""
    img = _check(img)
    if _is_pil(img):
        from PIL import Image
        return img.transpose(Image.FLIP_TOP_BOTTOM)
    return _wrap(_arr(img)[..., ::-1, :])


def _pil_fill(fill, img):
    bands = len(img.getbands())
    if fill is None:
        fill = 0
    if isinstance(fill, (int, float)) and bands > 1:
        fill = tuple([fill] * bands)
    if isinstance(fill, (list, tuple)):
        if len(fill) == 1:
            fill = fill * bands
        if len(fill) != bands:
            raise ValueError(f"The number of elements in 'fill' does not match the number of bands of the image "
                             f"({len(fill)} != {bands})")
        fill = tuple(fill)
    if img.mode != "F":
        fill = tuple(int(v) for v in fill) if isinstance(fill, tuple) else int(fill)
    return fill


def rotate(img, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=None):
    """Rotate by ``angle`` degrees counter-clockwise about ``center`` (default: the image's
    centre); ``expand`` grows the output to hold the whole rotated image; uncovered pixels get
    ``fill``."""
    img = _check(img)
    mode = _interp(interpolation)
    if _is_pil(img):
        return img.rotate(angle, _PIL_FILTER[mode], expand, center, fillcolor=_pil_fill(fill, img))
    if mode not in (InterpolationMode.NEAREST, InterpolationMode.BILINEAR):
        raise ValueError(f"Interpolation mode '{mode.value}' is unsupported with Tensor input")
    a = _arr(img)
    h, w = a.shape[-2:]
    dt = a.dtype if a.dtype.kind == "f" else np.dtype(np.float32)
    f = dt.type
    # the inverse map (output pixel -> input pixel), about the centre, in pixel units relative
    # to the image's middle; computed in double, then used in the image's float precision
    cx, cy = (0.0, 0.0) if center is None else (center[0] - w * 0.5, center[1] - h * 0.5)
    rad = math.radians(angle)
    m = [math.cos(rad), -math.sin(rad), 0.0, math.sin(rad), math.cos(rad), 0.0]
    m[2] += m[0] * -cx + m[1] * -cy
    m[5] += m[3] * -cx + m[4] * -cy
    m[2] += cx
    m[5] += cy
    ow, oh = w, h
    if expand:
        # the rotated corners' extent in image coordinates (origin at the top-left corner, as
        # Pillow counts it), trimmed to 1e-4 so round angles give exact sizes
        corners = np.array([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0], [0.5 * w, 0.5 * h, 1.0],
                            [0.5 * w, -0.5 * h, 1.0]], np.float32)
        pts = corners @ np.array(m, np.float32).reshape(2, 3).T + np.array([0.5 * w, 0.5 * h], np.float32)
        tol = np.float32(1e-4)
        hi = np.ceil(np.trunc(pts.max(0) / tol) * tol)
        lo = np.floor(np.trunc(pts.min(0) / tol) * tol)
        ow, oh = int((hi - lo)[0]), int((hi - lo)[1])
    theta = np.array(m, dt).reshape(2, 3)
    r = theta.T / np.array([0.5 * w, 0.5 * h], dt)                 # (3, 2)
    bx = (np.arange(ow, dtype=np.float64) - ow * 0.5 + 0.5).astype(dt)
    by = (np.arange(oh, dtype=np.float64) - oh * 0.5 + 0.5).astype(dt)
    by, bx = np.meshgrid(by, bx, indexing="ij")
    gx = bx * r[0, 0] + by * r[1, 0] + r[2, 0]
    gy = bx * r[0, 1] + by * r[1, 1] + r[2, 1]
    # grid coordinates in [-1, 1] to pixel indices (align_corners=False)
    sx = ((gx + f(1)) * f(w) - f(1)) / f(2)
    sy = ((gy + f(1)) * f(h) - f(1)) / f(2)
    squeeze = a.ndim == 2
    if squeeze:
        a = a[None]
    chans = a.shape[-3]
    if fill is None:
        fill_v = None
    else:
        fv = [float(fill)] * chans if isinstance(fill, numbers.Number) else [float(v) for v in fill]
        if len(fv) == 1:
            fv = fv * chans
        if len(fv) != chans:
            raise ValueError("The number of elements in 'fill' cannot broadcast to match the number of channels of the "
                             f"image ({len(fv)} != {chans})")
        fill_v = np.array(fv, dt)[:, None, None]
    x = a.astype(dt)
    if mode is InterpolationMode.NEAREST:
        ix, iy = np.rint(sx).astype(np.int64), np.rint(sy).astype(np.int64)
        inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        out = np.where(inside, x[..., np.clip(iy, 0, h - 1), np.clip(ix, 0, w - 1)], f(0))
        if fill_v is not None:
            out = np.where(inside, out, fill_v)
    else:
        x0, y0 = np.floor(sx), np.floor(sy)
        wx1, wy1 = sx - x0, sy - y0
        wx0, wy0 = (x0 + f(1)) - sx, (y0 + f(1)) - sy
        x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
        out = np.zeros(x.shape[:-2] + (oh, ow), dt)
        mask = np.zeros((oh, ow), dt)
        for dy, wy in ((0, wy0), (1, wy1)):
            for dx, wx in ((0, wx0), (1, wx1)):
                xi, yi = x0 + dx, y0 + dy
                ok = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
                wgt = np.where(ok, wx * wy, f(0))
                out += x[..., np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)] * wgt
                mask += wgt
        if fill_v is not None:
            # as if sampled together with a channel of ones: blend towards fill by what fell outside
            out = out * mask + (f(1) - mask) * fill_v
    if a.dtype.kind in "iub" and mode is InterpolationMode.BILINEAR:
        out = np.round(out)
    out = out.astype(a.dtype)
    if squeeze:
        out = out[0]
    return _wrap(out)


# ---------------------------------------------------------------- colour

_GRAY = (0.2989, 0.587, 0.114)


def _gray_np(a):
    r, g, b = a[..., 0, :, :], a[..., 1, :, :], a[..., 2, :, :]
    if a.dtype.kind in "fV":
        t = a.dtype.type
        return (t(_GRAY[0]) * r + t(_GRAY[1]) * g + t(_GRAY[2]) * b)[..., None, :, :]
    f = np.float32
    return (f(_GRAY[0]) * r.astype(f) + f(_GRAY[1]) * g.astype(f) + f(_GRAY[2]) * b.astype(f)).astype(a.dtype)[
        ..., None, :, :]


def rgb_to_grayscale(img, num_output_channels=1):
    """Luma 0.2989 R + 0.587 G + 0.114 B (Pillow's "L" conversion for PIL images), as 1 or 3
    channels."""
    img = _check(img)
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    if _is_pil(img):
        from PIL import Image
        g = img.convert("L")
        if num_output_channels == 3:
            a = np.asarray(g)
            g = Image.fromarray(np.ascontiguousarray(np.dstack([a, a, a])))
        return g
    a = _arr(img)
    c = a.shape[-3]
    if c not in (1, 3):
        raise TypeError(f"Input image tensor permitted channel values are [1, 3], but found {c}")
    if c == 1:      # already grey: returned as it is, whatever num_output_channels says
        return _wrap(a.copy())
    out = _gray_np(a)
    if num_output_channels == 3:
        out = np.repeat(out, 3, axis=-3)
    return _wrap(out)


def to_grayscale(img, num_output_channels=1):
    """``rgb_to_grayscale`` for PIL images."""
    return rgb_to_grayscale(img, num_output_channels)


def _blend(a, b, ratio):
    bound = _max_value(a.dtype)
    f = a.dtype.type if a.dtype.kind in "fV" else np.float32
    out = f(ratio) * a.astype(f) + f(1.0 - ratio) * np.asarray(b).astype(f)
    np.clip(out, 0, bound, out=out)
    return out.astype(a.dtype)


def _tensor_image_check(img, name):
    a = _arr(img)
    if a.ndim < 3 or a.shape[-3] not in (1, 3):
        c = a.shape[-3] if a.ndim >= 3 else 1
        raise TypeError(f"Input image tensor permitted channel values are [1, 3], but found {c}")
    return a


def adjust_brightness(img, brightness_factor):
    """Scale the brightness: 0 black, 1 unchanged."""
    if brightness_factor < 0:
        raise ValueError(f"brightness_factor ({brightness_factor}) is not non-negative.")
    img = _check(img)
    if _is_pil(img):
        from PIL import ImageEnhance
        return ImageEnhance.Brightness(img).enhance(brightness_factor)
    a = _tensor_image_check(img, "brightness")
    return _wrap(_blend(a, 0, brightness_factor))


def adjust_contrast(img, contrast_factor):
    """Blend with the mean grey: 0 a flat grey image, 1 unchanged."""
    if contrast_factor < 0:
        raise ValueError(f"contrast_factor ({contrast_factor}) is not non-negative.")
    img = _check(img)
    if _is_pil(img):
        from PIL import ImageEnhance
        return ImageEnhance.Contrast(img).enhance(contrast_factor)
    a = _tensor_image_check(img, "contrast")
    f = a.dtype if a.dtype.kind in "fV" else np.dtype(np.float32)
    g = _gray_np(a) if a.shape[-3] == 3 else a
    mean = g.astype(f).mean(axis=(-3, -2, -1), keepdims=True, dtype=f)
    return _wrap(_blend(a, mean, contrast_factor))


def adjust_saturation(img, saturation_factor):
    """Blend with the grey image: 0 grey, 1 unchanged, 2 doubled saturation."""
    if saturation_factor < 0:
        raise ValueError(f"saturation_factor ({saturation_factor}) is not non-negative.")
    img = _check(img)
    if _is_pil(img):
        from PIL import ImageEnhance
        return ImageEnhance.Color(img).enhance(saturation_factor)
    a = _tensor_image_check(img, "saturation")
    if a.shape[-3] == 1:
        return img
    return _wrap(_blend(a, _gray_np(a), saturation_factor))


def _rgb2hsv(a):
    r, g, b = a[..., 0, :, :], a[..., 1, :, :], a[..., 2, :, :]
    maxc, minc = np.maximum(np.maximum(r, g), b), np.minimum(np.minimum(r, g), b)
    flat = maxc == minc
    one = a.dtype.type(1)
    spread = maxc - minc
    s = spread / np.where(flat, one, maxc)
    div = np.where(flat, one, spread)
    rc, gc, bc = (maxc - r) / div, (maxc - g) / div, (maxc - b) / div
    hue = np.where(maxc == r, bc - gc, np.where(maxc == g, a.dtype.type(2.0) + rc - bc,
                                                 a.dtype.type(4.0) + gc - rc))
    hue = np.where(flat, a.dtype.type(0), hue)
    hue = np.fmod(hue / a.dtype.type(6.0) + one, one)
    return hue, s, maxc


def _hsv2rgb(h, s, v):
    t = h.dtype.type
    i = np.floor(h * t(6.0))
    f = h * t(6.0) - i
    i = i.astype(np.int32) % 6
    p = np.clip(v * (t(1.0) - s), 0.0, 1.0)
    q = np.clip(v * (t(1.0) - s * f), 0.0, 1.0)
    u = np.clip(v * (t(1.0) - s * (t(1.0) - f)), 0.0, 1.0)
    choices_r, choices_g, choices_b = (v, q, p, p, u, v), (u, v, v, q, p, p), (p, p, u, v, v, q)
    r = np.choose(i, choices_r)
    g = np.choose(i, choices_g)
    b = np.choose(i, choices_b)
    return np.stack([r, g, b], axis=-3)


def adjust_hue(img, hue_factor):
    """Shift the hue by ``hue_factor`` turns (in [-0.5, 0.5])."""
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    img = _check(img)
    if _is_pil(img):
        from PIL import Image
        if img.mode in ("L", "1", "I", "F"):
            return img
        h, s, v = img.convert("HSV").split()
        hh = np.array(h, dtype=np.uint8)
        with np.errstate(over="ignore", invalid="ignore"):
            hh += np.array(hue_factor * 255).astype(np.uint8)   # hue is cyclic: wraps modulo 256
        return Image.merge("HSV", (Image.fromarray(hh), s, v)).convert(img.mode)
    a = _tensor_image_check(img, "hue")
    if a.shape[-3] == 1:
        return img
    orig = a.dtype
    x = a if a.dtype.kind in "fV" else a.astype(np.float32) / np.float32(_max_value(a.dtype))
    h, s, v = _rgb2hsv(x)
    h = np.fmod(h + x.dtype.type(hue_factor), x.dtype.type(1.0))
    h = np.where(h < 0, h + x.dtype.type(1.0), h)   # the remainder's sign follows the divisor
    out = _hsv2rgb(h, s, v)
    if orig.kind not in "fV":
        out = (out * np.float32(_max_value(orig) + 1.0 - 1e-3)).astype(orig)
    return _wrap(out)


def erase(img, i, j, h, w, v, inplace=False):
    """Set the region at (``i``, ``j``) of size ``h`` x ``w`` of a tensor image to ``v``."""
    if not isinstance(img, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    if inplace:
        img._data[..., i:i + h, j:j + w] = _arr(v) if isinstance(v, Tensor) else v
        return img
    a = _arr(img).copy()
    a[..., i:i + h, j:j + w] = _arr(v) if isinstance(v, Tensor) else v
    return _wrap(a)
