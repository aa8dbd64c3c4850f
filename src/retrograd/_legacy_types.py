"""The legacy typed constructors (``torch.FloatTensor``, ``torch.LongTensor``, ...):
``FloatTensor(data)`` copies data as float32, ``FloatTensor(2, 3)`` is an uninitialised
float32 tensor of that shape, and ``isinstance(t, torch.FloatTensor)`` checks the dtype."""
import numpy as np

from . import _dtype as D
from ._tensor import Tensor

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
           "ByteTensor", "BoolTensor"]


class _LegacyType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and not obj._sparse and obj.dtype is cls._dtype and obj.device.type == "cpu"

    def __call__(cls, *args, **kwargs):
        from ._creation import _legacy_new
        t = _legacy_new(Tensor, *args, **kwargs)
        if t.dtype is cls._dtype:
            return t
        if args and not isinstance(args[0], Tensor) and not all(isinstance(a, (int, np.integer)) for a in args):
            from ._creation import tensor
            return tensor(args[0], dtype=cls._dtype)
        return t.to(cls._dtype)


def _make(name, dt):
    return _LegacyType(name, (), {"_dtype": dt, "__doc__": f"Legacy constructor of {dt} tensors."})


FloatTensor = _make("FloatTensor", D.float32)
DoubleTensor = _make("DoubleTensor", D.float64)
HalfTensor = _make("HalfTensor", D.float16)
LongTensor = _make("LongTensor", D.int64)
IntTensor = _make("IntTensor", D.int32)
ShortTensor = _make("ShortTensor", D.int16)
CharTensor = _make("CharTensor", D.int8)
ByteTensor = _make("ByteTensor", D.uint8)
BoolTensor = _make("BoolTensor", D.bool_)
