"""torch.nn.modules.pixelshuffle: the layers PyTorch keeps in this module (defined elsewhere in retrograd.nn.modules;
scripts and pickles name them by this path)."""
from . import (PixelShuffle, PixelUnshuffle,)  # noqa: F401

__all__ = ['PixelShuffle', 'PixelUnshuffle']
