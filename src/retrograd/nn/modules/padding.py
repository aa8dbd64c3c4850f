"""Padding layers: constant/zero, reflection, replication and circular, in 1, 2 and 3 dimensions."""
from .. import functional as F
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


def _ntuple(padding, n):
    if isinstance(padding, (tuple, list)):
        return tuple(padding)
    return (padding,) * (2 * n)


class _PadNd(Module):
    mode = "constant"
    n = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, self.n)

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


def _make(name, base, mode, n):
    cls = type(name, (base,), {"mode": mode, "n": n, "__module__": __name__,
                               "__doc__": f"Pads the last {n} dimension(s) ({mode})."})
    globals()[name] = cls


for _n in (1, 2, 3):
    _make(f"ConstantPad{_n}d", _ConstantPadNd, "constant", _n)
    _make(f"ZeroPad{_n}d", _ZeroPadNd, "constant", _n)
    _make(f"ReflectionPad{_n}d", _PadNd, "reflect", _n)
    _make(f"ReplicationPad{_n}d", _PadNd, "replicate", _n)
    _make(f"CircularPad{_n}d", _PadNd, "circular", _n)
