"""torch.nn.modules.distance: the layers PyTorch keeps in this module (defined elsewhere in retrograd.nn.modules;
scripts and pickles name them by this path)."""
from . import (PairwiseDistance, CosineSimilarity,)  # noqa: F401

__all__ = ['PairwiseDistance', 'CosineSimilarity']
