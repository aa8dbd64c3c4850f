"""``retrograd.nn.parallel``: DataParallel (one device) and DistributedDataParallel (over MPI)."""
from .data_parallel import DataParallel  # noqa: F401
from .distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DataParallel", "DistributedDataParallel"]
