"""Image transforms for datasets (torchvision.transforms' basics): ToTensor, Normalize,
Compose, Lambda. They work on NumPy images (and PIL images when Pillow is installed)."""
import numpy as np

from .._tensor import Tensor

__all__ = ["Compose", "ToTensor", "Normalize", "Lambda", "to_tensor", "normalize"]


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


def to_tensor(pic):
    """An image (H, W) or (H, W, C), NumPy array or PIL image, as a float32 tensor (C, H, W).
    uint8 images are scaled from 0..255 to [0, 1]."""
    if not isinstance(pic, np.ndarray):
        if type(pic).__module__.startswith("PIL"):
            pic = np.array(pic, copy=True)
        else:
            raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if pic.ndim not in (2, 3):
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    if pic.ndim == 2:
        img = pic[None]                      # (1, H, W): no transpose needed
    else:
        img = pic.transpose(2, 0, 1)
    if img.dtype == np.uint8:
        out = img.astype(np.float32)         # a new C-contiguous array
        out /= np.float32(255)
        return Tensor._make(out)
    if img.dtype == np.bool_:
        return Tensor._make(img.astype(np.float32))
    return Tensor._make(np.array(img, order="C"))


class ToTensor:
    """Convert an image (NumPy array or PIL image, H x W [x C]) to a float tensor C x H x W in [0, 1]."""

    def __call__(self, pic):
        return to_tensor(pic)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


def _stats(mean, std, dtype):
    mean = np.asarray(mean, dtype=dtype)
    std = np.asarray(std, dtype=dtype)
    if (std == 0).any():
        raise ValueError(f"std evaluated to zero after conversion to {dtype}, leading to division by zero.")
    if mean.ndim == 1:
        mean = mean[:, None, None]
    if std.ndim == 1:
        std = std[:, None, None]
    return mean, std


def _check_image(tensor):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                         f"{tensor.size()}")


def _apply(tensor, mean, std, inplace):
    d = tensor._data
    if inplace:
        d -= mean
        d /= std
        return tensor
    out = d - mean
    out /= std
    return Tensor._make(out)


def normalize(tensor, mean, std, inplace=False):
    """``(tensor - mean) / std`` channel by channel, for a (..., C, H, W) float tensor."""
    _check_image(tensor)
    m, s = _stats(mean, std, tensor._data.dtype)
    return _apply(tensor, m, s, inplace)


class Normalize:
    """Normalize a float tensor image channel by channel: ``(x - mean[c]) / std[c]``."""

    def __init__(self, mean, std, inplace=False):
        self.mean, self.std, self.inplace = mean, std, inplace
        self._prepared = {}

    def __call__(self, tensor):
        _check_image(tensor)
        dt = tensor._data.dtype
        stats = self._prepared.get(dt)
        if stats is None:
            stats = self._prepared[dt] = _stats(self.mean, self.std, dt)
        return _apply(tensor, stats[0], stats[1], self.inplace)

    def __repr__(self):
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


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
