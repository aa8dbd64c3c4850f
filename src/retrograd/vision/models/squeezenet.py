"""SqueezeNet 1.1 (Iandola et al. 2016; the 1.1 variant: 2.4x less computation than 1.0)."""
from ... import nn
from ...ops import cat, flatten
from ._api import Weights, WeightsEnum, build

__all__ = ["SqueezeNet", "Fire", "squeezenet1_1", "SqueezeNet1_1_Weights"]


class Fire(nn.Module):
    """A 1x1 squeeze, then 1x1 and 3x3 expansions concatenated along the channels."""

    def __init__(self, inplanes, squeeze_planes, expand1x1_planes, expand3x3_planes):
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        s = self.squeeze_activation(self.squeeze(x))
        return cat([self.expand1x1_activation(self.expand1x1(s)), self.expand3x3_activation(self.expand3x3(s))], 1)


class SqueezeNet(nn.Module):
    """Fire modules between max pools; a 1x1 convolution to the classes, averaged spatially."""

    def __init__(self, version="1_1", num_classes=1000, dropout=0.5):
        super().__init__()
        if version != "1_1":
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1_1 expected")
        self.num_classes = num_classes
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=3, stride=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            Fire(64, 16, 64, 64), Fire(128, 16, 64, 64),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            Fire(128, 32, 128, 128), Fire(256, 32, 128, 128),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256))
        final_conv = nn.Conv2d(512, self.num_classes, kernel_size=1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d((1, 1)))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:
                    nn.init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    nn.init.kaiming_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        return flatten(self.classifier(self.features(x)), 1)


class SqueezeNet1_1_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights("https://download.pytorch.org/models/squeezenet1_1-b8a52dc0.pth",
                            {"num_classes": 1000, "min_size": (17, 17)})
    DEFAULT = IMAGENET1K_V1


def squeezenet1_1(*, weights=None, progress=True, **kwargs):
    """SqueezeNet 1.1. ``weights``: None, ``SqueezeNet1_1_Weights.X`` or a state_dict file's path."""
    return build(lambda **kw: SqueezeNet("1_1", **kw), weights, SqueezeNet1_1_Weights, kwargs)
