"""Copies and conversions: to, clone, contiguous, the dtype shorthands, cpu/cuda."""
import numpy as np

from ._base import OpNode, node_for, finish, Tensor
from .. import _dtype as D
from .._device import device as _device_cls, to_device, array_module, CPU

__all__ = ["clone"]


class ToCopyBackward0(OpNode):
    def backward(self, g):
        return g._to(self.src_dtype, self.src_device)


class CloneBackward0(OpNode):
    def backward(self, g):
        return g


def clone(input, *, memory_format=None):
    """A copy with its own storage (differentiable)."""
    x = input._data
    return finish(node_for(CloneBackward0, (input,)), x.copy())


def contiguous(input, memory_format=None):
    """This tensor if C-contiguous, else a contiguous copy."""
    if input._data.flags.c_contiguous:
        return input
    return clone(input)


def _parse_to(args, kwargs):
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments - got unexpected keyword "
                        f"{next(iter(kwargs))}")
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, D.dtype) or (isinstance(a, type) and a in (float, int, bool, complex)):
            dtype = a
        elif isinstance(a, (str, _device_cls)) or (isinstance(a, int) and not isinstance(a, bool)):
            device = a
        elif isinstance(a, bool):
            copy = a
        elif a is None:
            continue
        else:
            try:
                dtype = D.to_dtype(a)
            except TypeError:
                raise TypeError(f"to() received an invalid combination of arguments - got ({type(a).__name__})")
    return dtype, device, copy


def to(input, *args, **kwargs):
    """Convert dtype and/or move device: ``t.to(torch.float64)``, ``t.to('cpu')``, ``t.to(other)``."""
    dtype, device, copy = _parse_to(args, dict(kwargs))
    return input._to(D.to_dtype(dtype) if dtype is not None else None,
                     to_device(device) if device is not None else None, copy)


def _to(input, dtype=None, device=None, copy=False):
    x = input._data
    src_dev = input.device
    npdt = dtype.np if isinstance(dtype, D.dtype) else (np.dtype(dtype) if dtype is not None else x.dtype)
    dev = device if device is not None else src_dev
    if npdt == x.dtype and dev == src_dev and not copy:
        return input
    if npdt.kind not in "fc" and input._requires_grad:
        pass  # result simply does not require grad
    if dev != src_dev:
        xp = array_module(dev)
        if dev.type == "cpu":
            r = x.get() if hasattr(x, "get") else np.asarray(x)
        else:
            with xp.cuda.Device(dev.index or 0):
                r = xp.asarray(x)
        r = r.astype(npdt, copy=False)
    else:
        r = x.astype(npdt, copy=True)
    node = node_for(ToCopyBackward0, (input,)) if npdt.kind in "fc" else None
    if node is not None:
        node.src_dtype, node.src_device = x.dtype, src_dev
    return finish(node, r)


def _conv(dt):
    def f(self, memory_format=None):
        return self._to(dt)
    f.__name__ = dt.name
    f.__doc__ = f"This tensor as ``{dt!r}``."
    return f


def _type(self, dtype=None, non_blocking=False, **kw):
    if dtype is None:
        return ("torch.cuda." if self.is_cuda else "torch.") + {
            "float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor", "int64": "LongTensor",
            "int32": "IntTensor", "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
            "bool": "BoolTensor"}.get(self.dtype.name, self.dtype.name)
    if isinstance(dtype, str):
        names = {"FloatTensor": D.float32, "DoubleTensor": D.float64, "HalfTensor": D.float16,
                 "LongTensor": D.int64, "IntTensor": D.int32, "ShortTensor": D.int16,
                 "CharTensor": D.int8, "ByteTensor": D.uint8, "BoolTensor": D.bool_}
        dtype = names[dtype.rsplit(".", 1)[-1]]
    return self._to(D.to_dtype(dtype))


def _cuda(self, device=None, non_blocking=False, **kw):
    return self._to(None, to_device("cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device)))


TENSOR_METHODS = {
    "clone": clone, "contiguous": contiguous, "to": to, "_to": _to,
    "float": _conv(D.float32), "double": _conv(D.float64), "half": _conv(D.float16),
    "bfloat16": _conv(D.bfloat16), "long": _conv(D.int64), "int": _conv(D.int32),
    "short": _conv(D.int16), "char": _conv(D.int8), "byte": _conv(D.uint8), "bool": _conv(D.bool_),
    "cfloat": _conv(D.complex64), "cdouble": _conv(D.complex128),
    "type": _type, "type_as": lambda self, other: self._to(other.dtype),
    "cpu": lambda self, memory_format=None: self._to(None, CPU), "cuda": _cuda,
}
INPLACE = {}
