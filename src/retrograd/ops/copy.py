"""Copies and conversions: to, clone, contiguous, the dtype shorthands, cpu/cuda."""
import weakref

import numpy as np

from ._base import xp_for
from ._base import OpNode, node_for, finish, Tensor, zeros_grad
from .. import _dtype as D
from .._device import device as _device_cls, to_device, array_module, CPU

__all__ = ["clone"]


class ToCopyBackward0(OpNode):
    def backward(self, g):
        if g._data.dtype.kind == "c" and self.src_dtype.kind != "c":
            g = g.real   # PyTorch's real(grad): the imaginary part has no real source
        return g._to(self.src_dtype, self.src_device)


class CloneBackward0(OpNode):
    def backward(self, g):
        return g


def clone(input, *, memory_format=None):
    """A copy with its own storage (differentiable). As PyTorch's ``preserve_format``, the
    copy keeps the input's order of strides (a transposed tensor's clone is transposed too);
    an expanded input or an explicit ``memory_format`` gives a contiguous copy."""
    x = input._data
    keep = memory_format is None and not x.flags.c_contiguous and all(st for st, n in zip(x.strides, x.shape) if n > 1)
    return finish(node_for(CloneBackward0, (input,)), x.copy(order="K" if keep else "C"))


class CopyBackwards(OpNode):
    """``self.copy_(src)``: no gradient to the overwritten value, all of it to ``src``."""

    def backward(self, g):
        nf = self.next_functions
        gs = None
        if nf[1][0] is not None:
            gs = g if g._data.dtype == self.src_dtype else g.to(D._FROM_NP[self.src_dtype])
        if nf[0][0] is not None:
            return zeros_grad(g), gs
        return None, gs


def _copy_check(dst_shape, src_shape):
    """PyTorch's errors for a source that cannot be broadcast into the destination."""
    for i in range(1, min(len(dst_shape), len(src_shape)) + 1):
        a, b = dst_shape[-i], src_shape[-i]
        if a != b and b != 1:
            if a == 1:
                break
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                               f"non-singleton dimension {len(dst_shape) - i}")
    try:
        full = np.broadcast_shapes(dst_shape, src_shape)
    except ValueError:
        full = None
    if full != tuple(dst_shape):
        raise RuntimeError(f"output with shape {list(dst_shape)} doesn't match the broadcast shape "
                           f"{list(full if full is not None else src_shape)}")


def _copied(input, src):
    x, y = input._data, src._data
    _copy_check(x.shape, y.shape)
    xp = np if type(x) is np.ndarray else (x.__array_namespace__() if type(x).__name__ == "MetaArray" else xp_for(x))
    r = xp.broadcast_to(y, x.shape).astype(x.dtype, copy=True)
    # an integral destination cannot carry a gradient
    node = node_for(CopyBackwards, (input, src)) if x.dtype.kind in "fcV" else None
    if node is not None:
        node.src_dtype = y.dtype
    return finish(node, r)


def copy_(self, src, non_blocking=False):
    """Copy ``src`` (broadcast, cast) into this tensor, in place; differentiable in both."""
    from ._base import apply_inplace, check_inplace, _state
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not {type(src).__name__}")
    if type(src._data) is not type(self._data):
        src = src._to(None, self.device)
    if _state.grad and (self._requires_grad or src._requires_grad):
        return apply_inplace(self, _copied, src)
    check_inplace(self, src)
    x = self._data
    _copy_check(x.shape, src._data.shape)
    if x.ndim == 0 and type(x) is np.ndarray:
        x[()] = src._data
    else:
        x[...] = src._data
    self._bump_version()
    return self


def contiguous(input, memory_format=None):
    """This tensor if C-contiguous, else a contiguous copy."""
    if input._data.flags.c_contiguous:
        return input
    return clone(input, memory_format="contiguous_format")


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
    xp = xp_for(input, copy)
    x = input._data
    src_dev = input.device
    npdt = dtype.np if isinstance(dtype, D.dtype) else (np.dtype(dtype) if dtype is not None else x.dtype)
    dev = device if device is not None else src_dev
    if npdt == x.dtype and dev == src_dev and not copy:
        return input
    if npdt.kind not in "fcV" and input._requires_grad:
        pass  # result simply does not require grad
    if dev != src_dev:
        xp = array_module(dev)
        if dev.type == "meta":
            from .._meta import MetaArray, like_strides
            r = MetaArray(x.shape, npdt, like_strides(x, npdt) if not x.flags.c_contiguous else None)
        elif dev.type == "cpu":
            r = x.get() if hasattr(x, "get") else xp.asarray(x)
        else:
            with xp.cuda.Device(dev.index or 0):
                r = xp.asarray(x)
        r = r.astype(npdt, copy=False)
    else:
        r = x.astype(npdt, copy=True) if npdt.itemsize != 1 or npdt.kind != "V" else D.cast_to_float8(x, npdt)
    node = node_for(ToCopyBackward0, (input,)) if npdt.kind in "fcV" else None
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
        from ._base import type_name
        return type_name(self)
    from .._legacy import legacy_type
    spec = legacy_type(dtype)
    if spec is not None:
        dt, cuda = spec
        on_cuda = self.device.type == "cuda"
        return self._to(dt, None if cuda == on_cuda else to_device("cuda" if cuda else "cpu"))
    return self._to(D.to_dtype(dtype))


def _cuda(self, device=None, non_blocking=False, **kw):
    return self._to(None, to_device("cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device)))


# Host buffers in page-locked (pinned) memory, by id: the roots of pinned tensors' arrays.
_PINNED = weakref.WeakValueDictionary()


def _root(d):
    while isinstance(d.base, np.ndarray):
        d = d.base
    return d


def pin_memory(self, device=None):
    """A copy of this CPU tensor in page-locked host memory (copies to the GPU from it can be
    asynchronous); the tensor itself when it already is pinned."""
    from .. import cuda
    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    d = self._data
    if type(d) is not np.ndarray:
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    if _PINNED.get(id(_root(d))) is _root(d):
        return self
    xp = array_module(_device_cls("cuda", 0))
    alloc = getattr(xp, "_pinned_empty", None)
    if alloc is None:
        import cupyx
        alloc = cupyx.empty_pinned
    buf = alloc(d.shape, d.dtype)
    buf[...] = d
    _PINNED[id(buf)] = buf
    return Tensor._make(buf)


def is_pinned(self, device=None):
    """Whether this tensor's memory is page-locked host memory (made by ``pin_memory``)."""
    d = self._data
    if type(d) is not np.ndarray:
        return False
    r = _root(d)
    return _PINNED.get(id(r)) is r


TENSOR_METHODS = {
    "clone": clone, "contiguous": contiguous, "copy_": copy_, "to": to, "_to": _to,
    "float": _conv(D.float32), "double": _conv(D.float64), "half": _conv(D.float16),
    "bfloat16": _conv(D.bfloat16), "long": _conv(D.int64), "int": _conv(D.int32),
    "short": _conv(D.int16), "char": _conv(D.int8), "byte": _conv(D.uint8), "bool": _conv(D.bool_),
    "cfloat": _conv(D.complex64), "cdouble": _conv(D.complex128), "chalf": _conv(D.complex32),
    "type": _type, "type_as": lambda self, other: self._to(other.dtype),
    "cpu": lambda self, memory_format=None: self._to(None, CPU), "cuda": _cuda,
    "pin_memory": pin_memory, "is_pinned": is_pinned,
}
INPLACE = {}
