"""The dataset transforms: ``retrograd.vision.transforms`` (torchvision.transforms), also
reachable here; the functional forms ``to_tensor`` and ``normalize`` too."""
from ..vision.transforms import *  # noqa: F401,F403
from ..vision.transforms import __all__ as _all
from ..vision.transforms import functional  # noqa: F401
from ..vision.transforms.functional import to_tensor, normalize  # noqa: F401

__all__ = list(_all) + ["to_tensor", "normalize", "functional"]
