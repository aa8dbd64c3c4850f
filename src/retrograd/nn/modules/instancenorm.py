"""torch.nn.modules.instancenorm: the layers PyTorch keeps in this module (defined elsewhere in retrograd.nn.modules;
scripts and pickles name them by this path)."""
from . import (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d,)  # noqa: F401

__all__ = ['InstanceNorm1d', 'InstanceNorm2d', 'InstanceNorm3d', 'LazyInstanceNorm1d', 'LazyInstanceNorm2d', 'LazyInstanceNorm3d']
