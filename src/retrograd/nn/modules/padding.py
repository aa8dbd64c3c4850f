"""Padding layers: constant/zero, reflection, replication and circular, in 1, 2 and 3 dimensions."""
from .. import functional as F
from .conv import _ntuple
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


class _PadNd(Module):
    mode = "constant"
    n = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(2 * self.n)(padding)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last 1 dimension with a constant."""
    mode = "constant"
    n = 1


class ZeroPad1d(_ZeroPadNd):
    """Pads the last 1 dimension with zeros."""
    mode = "constant"
    n = 1


class ReflectionPad1d(_PadNd):
    """Pads the last 1 dimension by reflection."""
    mode = "reflect"
    n = 1


class ReplicationPad1d(_PadNd):
    """Pads the last 1 dimension by replicating the edge."""
    mode = "replicate"
    n = 1


class CircularPad1d(_PadNd):
    """Pads the last 1 dimension circularly."""
    mode = "circular"
    n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dimensions with a constant."""
    mode = "constant"
    n = 2


class ZeroPad2d(_ZeroPadNd):
    """Pads the last 2 dimensions with zeros."""
    mode = "constant"
    n = 2


class ReflectionPad2d(_PadNd):
    """Pads the last 2 dimensions by reflection."""
    mode = "reflect"
    n = 2


class ReplicationPad2d(_PadNd):
    """Pads the last 2 dimensions by replicating the edge."""
    mode = "replicate"
    n = 2


class CircularPad2d(_PadNd):
    """Pads the last 2 dimensions circularly."""
    mode = "circular"
    n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dimensions with a constant."""
    mode = "constant"
    n = 3


class ZeroPad3d(_ZeroPadNd):
    """Pads the last 3 dimensions with zeros."""
    mode = "constant"
    n = 3


class ReflectionPad3d(_PadNd):
    """Pads the last 3 dimensions by reflection."""
    mode = "reflect"
    n = 3


class ReplicationPad3d(_PadNd):
    """Pads the last 3 dimensions by replicating the edge."""
    mode = "replicate"
    n = 3


class CircularPad3d(_PadNd):
    """Pads the last 3 dimensions circularly."""
    mode = "circular"
    n = 3
