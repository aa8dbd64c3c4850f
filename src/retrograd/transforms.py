"""``retrograd.transforms``: the dataset transforms (see ``retrograd.datasets.transforms``)."""
from .datasets.transforms import *  # noqa: F401,F403
from .datasets.transforms import __all__  # noqa: F401
