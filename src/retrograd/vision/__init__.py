"""``retrograd.vision``: the parts of torchvision a training script uses (reached as
``torchvision`` under ``retrograd run``): ``models``, ``transforms``, ``datasets``, ``utils``.

Submodules load on first use, so ``import retrograd.vision`` stays light (Pillow is needed
only by the functions that read, write or convert PIL images).
"""
import importlib as _importlib

__version__ = "0.28.0"   # the torchvision API these modules follow

_SUBMODULES = ("models", "transforms", "datasets", "utils")

__all__ = list(_SUBMODULES)


def __getattr__(name):
    if name in _SUBMODULES:
        return _importlib.import_module("." + name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_image_backend():
    """The package used to load images: always ``"PIL"``."""
    return "PIL"


def set_image_backend(backend):
    """Only the ``"PIL"`` backend exists here."""
    if backend != "PIL":
        raise ValueError(f"Invalid backend '{backend}'. Options are 'PIL'")
