"""``torchvision.datasets``: retrograd's datasets (``retrograd.datasets``)."""
from ..datasets import *  # noqa: F401,F403
from ..datasets import __all__  # noqa: F401
