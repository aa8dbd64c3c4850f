"""Devices: ``cpu`` runs on NumPy, ``cuda`` on CuPy (imported only when first used)."""
from builtins import type as builtins_type

import numpy as np

__all__ = ["device", "set_default_device", "get_default_device"]


class device:
    """Where a tensor's storage lives: ``device('cpu')`` or ``device('cuda', 0)``."""
    __slots__ = ("type", "index")

    def __new__(cls, type, index=None):
        if isinstance(type, device):
            return type
        if isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        if not isinstance(type, str):
            t = builtins_type(type).__name__
            raise TypeError(f"device() received an invalid combination of arguments - got ({t}), but expected one "
                            f"of:\n * (torch.device device)\n      didn't match because some of the arguments have "
                            f"invalid types: (!{t}!)\n * (str type, int index = -1)\n")
        if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
            raise TypeError(f"device(): argument 'index' (position 2) must be int, not "
                            f"{builtins_type(index).__name__}")
        if ":" in type:
            if index is not None:
                raise RuntimeError("type (string) must not include an index because index was passed explicitly: "
                                   + type)
            name, idx = type.split(":", 1)
            # PyTorch's rule: a non-negative decimal index without sign, spaces or leading zeros.
            if not idx.isdigit() or not idx.isascii() or (len(idx) > 1 and idx[0] == "0"):
                raise RuntimeError(f"Invalid device string: '{type}'")
            type, index = name, int(idx)
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        if type not in ("cpu", "cuda", "meta"):
            raise RuntimeError(
                "Expected one of cpu, cuda, meta device type at start of device string: " + type)
        if type == "cpu":
            if index not in (None, 0):
                raise RuntimeError(f"CPU device index must be -1 or zero, got {index}")
            if index is None and _CPU is not None:
                return _CPU
        self = object.__new__(cls)
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "index", index)
        return self

    def __setattr__(self, k, v):
        raise AttributeError("device objects are immutable")

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and (self.index or 0) == (other.index or 0)

    def __hash__(self):
        return hash((self.type, self.index or 0))

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        """``with torch.device('meta'):`` makes this the default device of tensor creation."""
        _DEFAULT_STACK.append(DEFAULT[0])
        DEFAULT[0] = None if self is _CPU else self
        return self

    def __exit__(self, *exc):
        DEFAULT[0] = _DEFAULT_STACK.pop()
        return False


# The device tensor creation uses when none is given (None: the CPU), and the values it had
# before each `with device(...)` block.
DEFAULT = [None]
_DEFAULT_STACK = []


def set_default_device(d):
    """Make ``d`` (a device, a string, or None for the CPU) the device of tensor creation."""
    DEFAULT[0] = None if d is None else device(d)
    if DEFAULT[0] is not None and DEFAULT[0].type == "cpu":
        DEFAULT[0] = None


def get_default_device():
    """The device tensor creation uses when none is given."""
    return DEFAULT[0] if DEFAULT[0] is not None else _CPU


_CPU = None
_CPU = device("cpu")
CPU = _CPU
META = device("meta")


def to_device(d):
    if d is None or d is _CPU:
        return _CPU
    return device(d)


# The array module of 'cuda' tensors when it is not CuPy: the emulated device of
# retrograd.cuda._emulator, set only by its enable() (tests, benchmarks --emulate).
_CUDA_XP = [None]


def array_module(dev):
    """NumPy for the CPU, CuPy for CUDA (raising a clear error when CuPy is missing)."""
    if dev.type == "cpu":
        return np
    if dev.type == "meta":
        from ._meta import xp
        return xp
    if dev.type == "cuda":
        if _CUDA_XP[0] is not None:
            return _CUDA_XP[0]
        try:
            import cupy
        except ImportError as e:
            raise AssertionError("Torch not compiled with CUDA enabled "
                                 "(retrograd needs CuPy for cuda tensors: pip install retrograd[cuda])") from e
        return cupy
    raise RuntimeError(f"unsupported device {dev}")


def special_module(a):
    """scipy.special for NumPy arrays, its CuPy counterpart (cupyx.scipy.special) for device ones."""
    dev = device_of_array(a)
    if dev.type != "cuda":      # (the meta device's arrays take scipy.special's ufuncs too)
        import scipy.special
        return scipy.special
    xp = array_module(dev)
    sp = getattr(xp, "_scipy_special", None)    # the emulated device's
    if sp is not None:
        return sp
    import cupyx.scipy.special
    return cupyx.scipy.special


def device_of_array(a):
    if isinstance(a, np.ndarray) or np.isscalar(a):
        return _CPU
    if type(a).__name__ == "MetaArray":
        return META
    dev = getattr(a, "device", None)
    if dev is not None and (type(a).__module__.startswith("cupy") or getattr(a, "_retrograd_cuda", False)):
        return device("cuda", int(dev.id))
    return _CPU


def cuda_is_available():
    if _CUDA_XP[0] is not None:
        return True
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False
