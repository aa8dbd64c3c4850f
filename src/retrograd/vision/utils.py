"""``torchvision.utils``: ``make_grid`` (a batch of images tiled into one), ``save_image``
(through Pillow) and ``draw_bounding_boxes``."""
import math
import os

import numpy as np

from .._tensor import Tensor

__all__ = ["make_grid", "save_image", "draw_bounding_boxes"]


def _array(t):
    if isinstance(t, Tensor):
        return t.detach().cpu().numpy()
    return np.asarray(t)


def _normalize_range(a, low, high):
    np.clip(a, low, high, out=a)
    a -= a.dtype.type(low)
    a /= a.dtype.type(max(high - low, 1e-5))


def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False, pad_value=0.0,
              **kwargs):
    """Tile a batch of images (B, C, H, W), or a list of (C, H, W) images, into one image of
    ``nrow`` images a row with ``padding`` pixels of ``pad_value`` between them. One-channel
    images become three-channel; ``normalize`` shifts each (``scale_each``) or all images to
    [0, 1] from ``value_range`` (default: their min and max). Not recorded by autograd."""
    if not (isinstance(tensor, Tensor) or (isinstance(tensor, list) and all(isinstance(t, Tensor) for t in tensor))):
        raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if "range" in kwargs:
        raise TypeError("make_grid() got an unexpected keyword argument 'range': it is called 'value_range'")
    if kwargs:
        raise TypeError(f"make_grid() got an unexpected keyword argument {next(iter(kwargs))!r}")
    if isinstance(tensor, list):
        a = np.stack([_array(t) for t in tensor])
    else:
        a = _array(tensor)
    if a.ndim == 2:
        a = a[None]
    if a.ndim == 3:
        if a.shape[0] == 1:
            a = np.concatenate([a, a, a], 0)
        a = a[None]
    if a.ndim == 4 and a.shape[1] == 1:
        a = np.concatenate([a, a, a], 1)
    if normalize:
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")
        a = a.copy()
        parts = list(a) if scale_each else [a]
        for p in parts:
            low, high = value_range if value_range is not None else (float(p.min()), float(p.max()))
            _normalize_range(p, low, high)
    if a.shape[0] == 1:
        return Tensor._make(np.array(a[0], copy=True))
    nmaps = a.shape[0]
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    height, width = int(a.shape[2] + padding), int(a.shape[3] + padding)
    grid = np.full((a.shape[1], height * ymaps + padding, width * xmaps + padding), pad_value, dtype=a.dtype)
    k = 0
    for y in range(ymaps):
        for x in range(xmaps):
            if k >= nmaps:
                break
            top, left = y * height + padding, x * width + padding
            grid[:, top:top + height - padding, left:left + width - padding] = a[k]
            k += 1
    return Tensor._make(grid)


def _to_uint8_hwc(grid):
    """A float image (C, H, W) in [0, 1] as uint8 (H, W, C): x * 255 + 0.5, clamped, truncated
    (in the image's own float precision)."""
    a = _array(grid)
    if a.dtype.kind in "fV":
        a = a.astype(np.float32) if a.dtype.kind == "V" else a
        a = a * a.dtype.type(255)
        a += a.dtype.type(0.5)
        np.clip(a, 0, 255, out=a)
    return np.ascontiguousarray(a.transpose(1, 2, 0)).astype(np.uint8)


def save_image(tensor, fp, format=None, **kwargs):
    """Save a tensor (an image, or a batch tiled with ``make_grid(**kwargs)``) to ``fp`` (a
    path or a file object) with Pillow; ``format`` (else the file name's extension) picks
    the file format."""
    from PIL import Image
    grid = make_grid(tensor, **kwargs)
    arr = _to_uint8_hwc(grid)
    if arr.shape[2] == 1:
        arr = arr[:, :, 0]
    im = Image.fromarray(arr)
    if isinstance(fp, os.PathLike):
        fp = os.fspath(fp)
    im.save(fp, format=format)


def _palette(n):
    # distinct colours for n boxes: i * (2**25-1, 2**15-1, 2**21-1) mod 255
    base = np.array([2 ** 25 - 1, 2 ** 15 - 1, 2 ** 21 - 1], dtype=np.int64)
    return [tuple(int(v) for v in (i * base) % 255) for i in range(n)]


def _color(c):
    from PIL import ImageColor
    if isinstance(c, str):
        return ImageColor.getrgb(c)
    if isinstance(c, Tensor):
        c = c.tolist()
    return tuple(int(v) for v in c)


def draw_bounding_boxes(image, boxes, labels=None, colors=None, fill=False, width=1, font=None, font_size=None,
                        label_colors=None):
    """Draw ``boxes`` (N, 4; x1, y1, x2, y2 in pixels) on a (C, H, W) uint8 (or float in [0, 1])
    image with Pillow; returns a new 3-channel image tensor of the input's dtype. ``colors``:
    one colour (a name or an RGB tuple) or one per box (default: a fixed palette); ``fill``
    fills the boxes at alpha 100/255; ``labels`` are written inside each box's top-left corner."""
    from PIL import Image, ImageDraw, ImageFont
    if not isinstance(image, Tensor):
        raise TypeError(f"Tensor expected, got {type(image)}")
    if image.dim() != 3:
        raise ValueError("Pass individual images, not batches")
    if image.size(0) not in (1, 3):
        raise ValueError("Only grayscale and RGB images are supported")
    b = _array(boxes)
    if b.ndim != 2 or b.shape[-1] != 4:
        raise ValueError(f"boxes should be of shape (N, 4), got {tuple(b.shape)}")
    if ((b[:, 0] > b[:, 2]) | (b[:, 1] > b[:, 3])).any():
        raise ValueError("Boxes need to be in (xmin, ymin, xmax, ymax) format. Use torchvision.ops.box_convert to "
                         "convert them")
    num = b.shape[0]
    if num == 0:
        import warnings
        warnings.warn("boxes doesn't contain any box. No box was drawn")
        return image
    if labels is None:
        labels = [None] * num
    elif len(labels) != num:
        raise ValueError(f"Number of boxes ({num}) and labels ({len(labels)}) mismatch. Please specify labels for "
                         "each box.")
    if colors is None:
        colors = _palette(num)
    elif isinstance(colors, list):
        if len(colors) < num:
            raise ValueError(f"Number of colors ({len(colors)}) is less than number of boxes ({num}). ")
    else:
        colors = [colors] * num
    colors = [_color(c) for c in colors]
    if label_colors is None:
        label_colors = colors
    elif isinstance(label_colors, list):
        label_colors = [_color(c) for c in label_colors]
    else:
        label_colors = [_color(label_colors)] * num
    if font is None and font_size is None:
        txt_font = ImageFont.load_default()
    else:
        txt_font = ImageFont.truetype(font=font, size=font_size or 10)

    a = _array(image)
    float_in = a.dtype.kind in "fV"
    if float_in:
        a = (a.astype(np.float32) * 255).astype(np.uint8)
    elif a.dtype != np.uint8:
        raise ValueError(f"The image dtype must be uint8 or a float type, got {image.dtype}")
    if a.shape[0] == 1:
        a = np.tile(a, (3, 1, 1))
    canvas = Image.fromarray(np.ascontiguousarray(a.transpose(1, 2, 0)))
    draw = ImageDraw.Draw(canvas, "RGBA") if fill else ImageDraw.Draw(canvas)
    for box, color, label, lcolor in zip(b.astype(np.int64).tolist(), colors, labels, label_colors):
        if fill:
            draw.rectangle(box, width=width, outline=color, fill=color + (100,))
        else:
            draw.rectangle(box, width=width, outline=color)
        if label is not None:
            margin = width + 1
            draw.text((box[0] + margin, box[1] + margin), label, fill=lcolor, font=txt_font)
    out = np.array(canvas).transpose(2, 0, 1)
    if float_in:
        return Tensor._make(np.ascontiguousarray(out).astype(np.float32) / np.float32(255)).to(image.dtype)
    return Tensor._make(np.ascontiguousarray(out))
