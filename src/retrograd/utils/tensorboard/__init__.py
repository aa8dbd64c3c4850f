"""TensorBoard logging with PyTorch's ``torch.utils.tensorboard`` API.

    from retrograd.utils.tensorboard import SummaryWriter
    with SummaryWriter() as w:                 # runs/<Mon01_12-00-00>_<host>
        w.add_scalar("loss", loss.item(), step)

Event files are written by tensorboardX (the optional extra ``retrograd[tensorboard]``),
imported when the first writer is made; retrograd tensors are handed to it as NumPy arrays.
``add_graph`` records retrograd's own graph of one forward pass (``retrograd.viz``) and
writes it as a TensorBoard GraphDef, with nodes grouped by the module that made them.
"""
from .writer import SummaryWriter  # noqa: F401

__all__ = ["SummaryWriter"]
