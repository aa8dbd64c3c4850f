"""``torchvision.models``: ResNet-18/34/50, VGG-11/16 (with and without batch norm),
MobileNetV2, AlexNet and SqueezeNet 1.1 with torchvision's module names, so torchvision's
state_dicts (``.pth`` files) load into them. ``weights=None`` builds an untrained model
initialised as torchvision does; ``weights=`` a weights enum member reads the published file
from the local checkpoint folders (``WeightsEnum.get_state_dict(download=True)`` fetches it),
or the path of a state_dict file."""
from ._api import WeightsEnum, Weights, get_weight  # noqa: F401
from .resnet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403
from .alexnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .mobilenetv2 import *  # noqa: F401,F403
from . import resnet, vgg, alexnet, squeezenet, mobilenetv2  # noqa: F401

_BUILDERS = {"resnet18": resnet18, "resnet34": resnet34, "resnet50": resnet50, "vgg11": vgg11,  # noqa: F405
             "vgg11_bn": vgg11_bn, "vgg16": vgg16, "vgg16_bn": vgg16_bn, "mobilenet_v2": mobilenet_v2,  # noqa: F405
             "alexnet": alexnet, "squeezenet1_1": squeezenet1_1}  # noqa: F405


def list_models(module=None, include=None, exclude=None):
    """The names of the model builders here (sorted)."""
    import fnmatch
    names = sorted(_BUILDERS)
    if include:
        pats = [include] if isinstance(include, str) else include
        names = [n for n in names if any(fnmatch.fnmatch(n, p) for p in pats)]
    if exclude:
        pats = [exclude] if isinstance(exclude, str) else exclude
        names = [n for n in names if not any(fnmatch.fnmatch(n, p) for p in pats)]
    return names


def get_model_builder(name):
    """The builder function of a model name."""
    try:
        return _BUILDERS[name.lower()]
    except KeyError:
        raise ValueError(f"Unknown model {name}") from None


def get_model(name, **config):
    """Build the model ``name`` with the builder's keyword arguments."""
    return get_model_builder(name)(**config)
