"""``torchvision.transforms``: the transform classes. Random transforms draw from retrograd's
generator (``retrograd.manual_seed``) in the order torchvision draws from torch's, and expose
``get_params`` so the drawn parameters can be reused."""
import math
import numbers

from ... import nn
from ..._tensor import Tensor
from . import functional as F
from .functional import InterpolationMode

__all__ = ["Compose", "ToTensor", "PILToTensor", "ToPILImage", "Normalize", "Resize", "CenterCrop", "RandomCrop",
           "RandomResizedCrop", "RandomHorizontalFlip", "RandomVerticalFlip", "Pad", "RandomRotation",
           "ColorJitter", "Grayscale", "RandomGrayscale", "RandomErasing", "Lambda", "ConvertImageDtype",
           "RandomApply", "RandomChoice", "RandomOrder", "InterpolationMode"]


def _rt():
    import retrograd
    return retrograd


def _rand():
    return float(_rt().rand(1).item())


def _uniform(lo, hi):
    return float(_rt().empty(1).uniform_(lo, hi).item())


def _randint(lo, hi):
    return int(_rt().randint(lo, hi, size=(1,)).item())


class Compose:
    """Apply the given transforms one after another."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}({body}\n)"


class ToTensor:
    """A PIL image or NumPy array (H x W x C) as a float tensor (C x H x W) in [0, 1] (uint8
    input), other types keeping their values."""

    def __call__(self, pic):
        return F.to_tensor(pic)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class PILToTensor:
    """A PIL image as a tensor (C x H x W) of its own type, values unchanged."""

    def __call__(self, pic):
        return F.pil_to_tensor(pic)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class ToPILImage:
    """A tensor (C x H x W) or array (H x W x C) as a PIL image (``mode`` inferred when None)."""

    def __init__(self, mode=None):
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)

    def __repr__(self):
        return f"{self.__class__.__name__}(" + (f"mode={self.mode}" if self.mode is not None else "") + ")"


class Lambda:
    """Apply a user function as a transform."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {repr(type(lambd).__name__)}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class Normalize(nn.Module):
    """Normalize a float tensor image channel by channel: ``(x - mean[c]) / std[c]``."""

    def __init__(self, mean, std, inplace=False):
        super().__init__()
        self.mean, self.std, self.inplace = mean, std, inplace
        self._prepared = {}

    def forward(self, tensor):
        F._check_normalizable(tensor)
        dt = tensor._data.dtype
        stats = self._prepared.get(dt)
        if stats is None:
            stats = self._prepared[dt] = F._stats(self.mean, self.std, dt)
        return F._normalize_with(tensor, stats[0], stats[1], self.inplace)

    def __repr__(self):
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


def _size_arg(size, name="size"):
    if isinstance(size, numbers.Number):
        return (int(size), int(size))
    if isinstance(size, (list, tuple)) and len(size) == 1:
        return (int(size[0]), int(size[0]))
    if not isinstance(size, (list, tuple)) or len(size) != 2:
        raise ValueError(f"Please provide only two dimensions (h, w) for {name}.")
    return tuple(int(s) for s in size)


class Resize(nn.Module):
    """Resize to ``size`` ((h, w), or an int for the smaller edge); bilinear with antialiasing
    by default."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
        super().__init__()
        if not isinstance(size, (int, list, tuple)):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, (list, tuple)) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size, self.max_size, self.antialias = size, max_size, antialias
        self.interpolation = F._interp(interpolation)

    def forward(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self):
        return (f"{self.__class__.__name__}(size={self.size}, interpolation={self.interpolation.value}, "
                f"max_size={self.max_size}, antialias={self.antialias})")


class CenterCrop(nn.Module):
    """The centre ``size`` region (an int for a square)."""

    def __init__(self, size):
        super().__init__()
        self.size = _size_arg(size)

    def forward(self, img):
        return F.center_crop(img, self.size)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size})"


class Pad(nn.Module):
    """Pad the borders (see ``functional.pad``)."""

    def __init__(self, padding, fill=0, padding_mode="constant"):
        super().__init__()
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        if isinstance(padding, (tuple, list)) and len(padding) not in (1, 2, 4):
            raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element "
                             "tuple")
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def forward(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def __repr__(self):
        return f"{self.__class__.__name__}(padding={self.padding}, fill={self.fill}, padding_mode={self.padding_mode})"


class RandomCrop(nn.Module):
    """A random ``size`` region, after optional padding (``pad_if_needed`` pads a smaller image
    up to ``size``)."""

    @staticmethod
    def get_params(img, output_size):
        """(top, left, height, width) of a random crop of ``output_size``."""
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        i = _randint(0, h - th + 1)
        j = _randint(0, w - tw + 1)
        return i, j, th, tw

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        super().__init__()
        self.size = _size_arg(size)
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    def forward(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, h, w = F.get_dimensions(img)
        if self.pad_if_needed and w < self.size[1]:
            img = F.pad(img, [self.size[1] - w, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and h < self.size[0]:
            img = F.pad(img, [0, self.size[0] - h], self.fill, self.padding_mode)
        i, j, h, w = self.get_params(img, self.size)
        return F.crop(img, i, j, h, w)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size}, padding={self.padding})"


class RandomResizedCrop(nn.Module):
    """A random region (area fraction in ``scale``, aspect ratio in ``ratio``, log-uniform)
    resized to ``size``; the centre crop after 10 failed draws."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__()
        self.size = _size_arg(size)
        if not isinstance(scale, (tuple, list)):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, (tuple, list)):
            raise TypeError("Ratio should be a sequence")
        self.scale, self.ratio, self.antialias = scale, ratio, antialias
        self.interpolation = F._interp(interpolation)

    @staticmethod
    def get_params(img, scale, ratio):
        """(top, left, height, width) of a random region."""
        _, height, width = F.get_dimensions(img)
        area = height * width
        log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
        for _ in range(10):
            target_area = area * _uniform(scale[0], scale[1])
            aspect = math.exp(_uniform(log_lo, log_hi))
            w = int(round(math.sqrt(target_area * aspect)))
            h = int(round(math.sqrt(target_area / aspect)))
            if 0 < w <= width and 0 < h <= height:
                i = _randint(0, height - h + 1)
                j = _randint(0, width - w + 1)
                return i, j, h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w = width
            h = int(round(w / min(ratio)))
        elif in_ratio > max(ratio):
            h = height
            w = int(round(h * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def forward(self, img):
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, i, j, h, w, self.size, self.interpolation, antialias=self.antialias)

    def __repr__(self):
        return (f"{self.__class__.__name__}(size={self.size}, scale={tuple(round(s, 4) for s in self.scale)}, "
                f"ratio={tuple(round(r, 4) for r in self.ratio)}, interpolation={self.interpolation.value}, "
                f"antialias={self.antialias})")


class RandomHorizontalFlip(nn.Module):
    """Mirror left-right with probability ``p``."""

    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        return F.hflip(img) if _rand() < self.p else img

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


class RandomVerticalFlip(nn.Module):
    """Mirror top-bottom with probability ``p``."""

    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        return F.vflip(img) if _rand() < self.p else img

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


def _range(value, name, center=None, bound=(0, float("inf")), clip_first_on_zero=True):
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be non negative.")
        value = [center - float(value), center + float(value)] if center is not None else [-float(value),
                                                                                           float(value)]
        if clip_first_on_zero:
            value[0] = max(value[0], 0.0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        value = [float(value[0]), float(value[1])]
    else:
        raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
    if not bound[0] <= value[0] <= value[1] <= bound[1]:
        raise ValueError(f"{name} values should be between {bound}, but got {value}.")
    if center is not None and value[0] == value[1] == center:
        return None
    return value


class RandomRotation(nn.Module):
    """Rotate by an angle drawn uniformly from ``degrees`` ((-d, d) for a number)."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=0):
        super().__init__()
        if isinstance(degrees, numbers.Number):
            if degrees < 0:
                raise ValueError("If degrees is a single number, it must be positive.")
            degrees = [-float(degrees), float(degrees)]
        elif isinstance(degrees, (list, tuple)) and len(degrees) == 2:
            degrees = [float(d) for d in degrees]
        else:
            raise ValueError("If degrees is a sequence, it must be of len 2.")
        self.degrees = degrees
        self.interpolation = F._interp(interpolation)
        self.expand, self.center = expand, center
        if fill is None:
            fill = 0
        elif not isinstance(fill, (numbers.Number, list, tuple)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.fill = fill

    @staticmethod
    def get_params(degrees):
        """The random angle."""
        return _uniform(float(degrees[0]), float(degrees[1]))

    def forward(self, img):
        fill = self.fill
        if isinstance(img, Tensor) and isinstance(fill, numbers.Number):
            fill = [float(fill)] * F.get_dimensions(img)[0]
        angle = self.get_params(self.degrees)
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, fill)

    def __repr__(self):
        return (f"{self.__class__.__name__}(degrees={self.degrees}, interpolation={self.interpolation.value}, "
                f"expand={self.expand}" + (f", center={self.center}" if self.center is not None else "")
                + (f", fill={self.fill}" if self.fill is not None else "") + ")")


class ColorJitter(nn.Module):
    """Random brightness, contrast, saturation and hue changes, applied in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self.brightness = _range(brightness, "brightness", center=1)
        self.contrast = _range(contrast, "contrast", center=1)
        self.saturation = _range(saturation, "saturation", center=1)
        self.hue = _range(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        """(order of the four adjustments, brightness, contrast, saturation, hue factors)."""
        order = _rt().randperm(4)
        b = None if brightness is None else _uniform(brightness[0], brightness[1])
        c = None if contrast is None else _uniform(contrast[0], contrast[1])
        s = None if saturation is None else _uniform(saturation[0], saturation[1])
        h = None if hue is None else _uniform(hue[0], hue[1])
        return order, b, c, s, h

    def forward(self, img):
        order, b, c, s, h = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        for k in order.tolist():
            if k == 0 and b is not None:
                img = F.adjust_brightness(img, b)
            elif k == 1 and c is not None:
                img = F.adjust_contrast(img, c)
            elif k == 2 and s is not None:
                img = F.adjust_saturation(img, s)
            elif k == 3 and h is not None:
                img = F.adjust_hue(img, h)
        return img

    def __repr__(self):
        return (f"{self.__class__.__name__}(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")


class Grayscale(nn.Module):
    """To grey (1 or 3 channels)."""

    def __init__(self, num_output_channels=1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def forward(self, img):
        return F.rgb_to_grayscale(img, self.num_output_channels)

    def __repr__(self):
        return f"{self.__class__.__name__}(num_output_channels={self.num_output_channels})"


class RandomGrayscale(nn.Module):
    """To grey (keeping the number of channels) with probability ``p``."""

    def __init__(self, p=0.1):
        super().__init__()
        self.p = p

    def forward(self, img):
        c = F.get_dimensions(img)[0]
        return F.rgb_to_grayscale(img, c) if _rand() < self.p else img

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


class RandomErasing(nn.Module):
    """With probability ``p``, overwrite a random rectangle of a tensor image (area fraction in
    ``scale``, aspect ratio in ``ratio``) with ``value`` (a number, per-channel values, or
    ``"random"`` for standard normal noise)."""

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        super().__init__()
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if not isinstance(scale, (tuple, list)):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, (tuple, list)):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            import warnings
            warnings.warn("Scale and ratio should be of kind (min, max)")
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        if p < 0 or p > 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p, self.scale, self.ratio, self.value, self.inplace = p, scale, ratio, value, inplace

    @staticmethod
    def get_params(img, scale, ratio, value=None):
        """(top, left, height, width, values) of the rectangle; the whole image unchanged after
        10 failed draws."""
        rt = _rt()
        c, h, w = img.shape[-3], img.shape[-2], img.shape[-1]
        area = h * w
        log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
        for _ in range(10):
            erase_area = area * _uniform(scale[0], scale[1])
            aspect = math.exp(_uniform(log_lo, log_hi))
            eh = int(round(math.sqrt(erase_area * aspect)))
            ew = int(round(math.sqrt(erase_area / aspect)))
            if not (eh < h and ew < w):
                continue
            if value is None:
                v = rt.empty([c, eh, ew], dtype=rt.float32).normal_()
            else:
                v = rt.tensor(value)[:, None, None]
            i = _randint(0, h - eh + 1)
            j = _randint(0, w - ew + 1)
            return i, j, eh, ew, v
        return 0, 0, h, w, img

    def forward(self, img):
        if _rand() < self.p:
            if isinstance(self.value, numbers.Number):
                value = [float(self.value)]
            elif isinstance(self.value, str):
                value = None
            else:
                value = [float(v) for v in self.value]
            c = img.shape[-3]
            if value is not None and len(value) not in (1, c):
                raise ValueError("If value is a sequence, it should have either a single value or "
                                 f"{c} (number of input channels)")
            i, j, h, w, v = self.get_params(img, self.scale, self.ratio, value)
            return F.erase(img, i, j, h, w, v, self.inplace)
        return img

    def __repr__(self):
        return (f"{self.__class__.__name__}(p={self.p}, scale={self.scale}, ratio={self.ratio}, value={self.value}, "
                f"inplace={self.inplace})")


class ConvertImageDtype(nn.Module):
    """Convert a tensor image to ``dtype``, rescaling its values."""

    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, image):
        return F.convert_image_dtype(image, self.dtype)


class RandomApply(nn.Module):
    """Apply a list of transforms with probability ``p``."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms, self.p = transforms, p

    def forward(self, img):
        if self.p < _rand():
            return img
        for t in self.transforms:
            img = t(img)
        return img


class RandomChoice:
    """Apply one transform picked at random (weights ``p``)."""

    def __init__(self, transforms, p=None):
        self.transforms = transforms
        self.p = p

    def __call__(self, *args):
        import random
        t = random.choices(self.transforms, weights=self.p)[0]
        return t(*args)


class RandomOrder:
    """Apply the transforms in a random order."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        import random
        order = list(range(len(self.transforms)))
        random.shuffle(order)
        for i in order:
            img = self.transforms[i](img)
        return img
