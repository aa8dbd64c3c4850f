"""VGG (Simonyan & Zisserman 2014), with and without batch normalization, in torchvision's
layout: ``features`` (convolutions and pools), ``avgpool`` (to 7x7), ``classifier``."""
from ... import nn
from ...ops import flatten
from ._api import Weights, WeightsEnum, build

__all__ = ["VGG", "vgg11", "vgg11_bn", "vgg16", "vgg16_bn",
           "VGG11_Weights", "VGG11_BN_Weights", "VGG16_Weights", "VGG16_BN_Weights"]

# channel widths of the 3x3 convolutions, "M" a 2x2 max pool
_CFGS = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
}


class VGG(nn.Module):
    """``features``, adaptive average pooling to 7x7, three linear layers with dropout."""

    def __init__(self, features, num_classes=1000, init_weights=True, dropout=0.5):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes))
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = flatten(self.avgpool(self.features(x)), 1)
        return self.classifier(x)


def make_layers(cfg, batch_norm=False):
    """The ``features`` Sequential of a VGG configuration."""
    layers = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            continue
        layers.append(nn.Conv2d(in_channels, v, kernel_size=3, padding=1))
        if batch_norm:
            layers.append(nn.BatchNorm2d(v))
        layers.append(nn.ReLU(inplace=True))
        in_channels = v
    return nn.Sequential(*layers)


_IMAGENET = {"num_classes": 1000, "min_size": (32, 32)}


class VGG11_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/vgg11-8a719046.pth", _IMAGENET)
    DEFAULT = IMAGENET1K_V1


class VGG11_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/vgg11_bn-6002323d.pth", _IMAGENET)
    DEFAULT = IMAGENET1K_V1


class VGG16_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/vgg16-397923af.pth", _IMAGENET)
    DEFAULT = IMAGENET1K_V1


class VGG16_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/vgg16_bn-6c64b313.pth", _IMAGENET)
    DEFAULT = IMAGENET1K_V1


def _vgg(cfg, batch_norm, weights, enum_cls, kwargs):
    if weights is not None:
        kwargs.setdefault("init_weights", False)   # overwritten anyway: skip the random draws
    return build(lambda **kw: VGG(make_layers(_CFGS[cfg], batch_norm), **kw), weights, enum_cls, kwargs)


def vgg11(*, weights=None, progress=True, **kwargs):
    """VGG-11 (configuration A). ``weights``: None, ``VGG11_Weights.X`` or a state_dict file's path."""
    return _vgg("A", False, weights, VGG11_Weights, kwargs)


def vgg11_bn(*, weights=None, progress=True, **kwargs):
    """VGG-11 with batch normalization."""
    return _vgg("A", True, weights, VGG11_BN_Weights, kwargs)


def vgg16(*, weights=None, progress=True, **kwargs):
    """VGG-16 (configuration D)."""
    return _vgg("D", False, weights, VGG16_Weights, kwargs)


def vgg16_bn(*, weights=None, progress=True, **kwargs):
    """VGG-16 with batch normalization."""
    return _vgg("D", True, weights, VGG16_BN_Weights, kwargs)
