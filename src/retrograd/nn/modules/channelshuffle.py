"""torch.nn.modules.channelshuffle: the layers PyTorch keeps in this module (defined elsewhere in retrograd.nn.modules;
scripts and pickles name them by this path)."""
from . import (ChannelShuffle,)  # noqa: F401

__all__ = ['ChannelShuffle']
