"""``torchvision.transforms``: image transforms on PIL images and tensor images, with
torchvision's defaults (bilinear, antialiased resizing; Pillow does the work on PIL images)."""
from .transforms import *  # noqa: F401,F403
from .transforms import __all__  # noqa: F401
from . import functional  # noqa: F401
from .functional import InterpolationMode  # noqa: F401
