"""Tensor plumbing: storage access, resizing and re-pointing (set_, resize_, as_strided_),
memory queries (pinning, sharing, devices, dim_order), Python-callable maps (apply_, map_,
map2_), the in-place comparison aliases, bit shifts, index_reduce, fill_diagonal_,
as_strided_scatter, the ``*_copy`` variants of view ops, nonzero_static, and the random fills
cauchy_ / geometric_.
"""
import builtins
import warnings

import numpy as np

from ._base import (Tensor, OpNode, node_for, finish, apply_inplace, check_inplace, _state,
                    _dtype_name, zeros_grad, binary_operands, xp_for, strided, check_devices)
from .. import _dtype as D
from .. import _storage
from .random_ops import _fill, _fill_node, _g, _draw
from .index_ops import scatter_reduce, ScatterReduceBackward0
from .shape import as_strided, _copy_variant, _alias

__all__ = ["bitwise_left_shift", "bitwise_right_shift", "fill", "detach", "detach_copy",
           "as_strided_copy", "as_strided_", "as_strided_scatter", "view_as_real_copy", "view_as_complex_copy",
           "split_with_sizes_copy", "index_reduce", "nonzero_static", "is_nonzero", "is_same_size", "is_signed",
           "is_distributed", "get_device", "resize_as_", "empty_permuted", "frombuffer", "from_file",
           "is_storage", "values_copy", "indices_copy", "crow_indices_copy", "col_indices_copy", "ccol_indices_copy",
           "row_indices_copy"]

_shape = lambda s: "[" + ", ".join(str(int(v)) for v in s) + "]"   # noqa: E731


# --------------------------------------------------------------------------------- storage

def untyped_storage(self):
    """The untyped storage (bytes) under this tensor; views share their base's storage."""
    return _storage.storage_of(self)


def storage(self):
    """The storage under this tensor as a TypedStorage of its dtype (deprecated by PyTorch)."""
    _storage._warn_typed()
    return _storage.TypedStorage._of(_storage.storage_of(self), self.dtype)


def storage_type(self):
    """The legacy storage class of this tensor's dtype (``torch.FloatStorage`` ...)."""
    _storage._warn_typed()
    name = _storage._LEGACY_NAMES.get(self.dtype.name)
    return _storage.LEGACY_STORAGES[name] if name else _storage.TypedStorage


def is_storage(obj):
    """Whether ``obj`` is a storage object."""
    return _storage.is_storage(obj)


def _layout_of(a):
    root = _storage.root_of(a)
    off = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return root, off


def is_set_to(self, tensor):
    """True when both tensors use the same storage with the same offset, sizes and strides."""
    a, b = self._data, tensor._data
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        return a is b
    ra, oa = _layout_of(a)
    rb, ob = _layout_of(b)
    return (ra.__array_interface__["data"][0] == rb.__array_interface__["data"][0] and oa == ob
            and a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype)


def _contig_strides(size):
    st, acc = [], 1
    for s in reversed(size):
        st.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(st))


def _check_meta_change(self, name):
    if _state.grad and self._requires_grad and self._grad_fn is None and self._base is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def _rebind(self, data):
    """Point ``self`` at ``data`` (a metadata change: the values of views made earlier stay theirs)."""
    self._data = data
    self._bump_version()
    return self


def _storage_need(size, stride, offset):
    """The elements of storage a (size, stride, offset) view reaches (0 when it has none)."""
    return (1 + builtins.sum((s - 1) * st for s, st in zip(size, stride)) + offset) if all(size) else 0


def _strided_on(buf_bytes, dtype_np, size, stride, offset, what="setStorage"):
    k = np.dtype(dtype_np).itemsize
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    need = _storage_need(size, stride, offset)
    if need * k > buf_bytes.nbytes:
        return None, need
    return np.ndarray(size, dtype_np, buffer=buf_bytes, offset=offset * k if all(size) else 0,
                      strides=tuple(st * k for st in stride)), need


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Make this tensor use ``source``'s memory: a tensor (same storage, offset, sizes and strides)
    or a storage (with ``storage_offset``, ``size`` and ``stride`` in elements); no source: an
    empty storage."""
    _check_meta_change(self, "set_")
    dt = self._data.dtype
    if source is None:
        return _rebind(self, np.zeros((0,), dt))
    if isinstance(source, Tensor):
        if source._data.dtype != dt:
            raise RuntimeError(f"Could not set tensor of type {_ctype(source._data.dtype)} to a tensor of type "
                               f"{_ctype(dt)}")
        if size is None:
            return _rebind(self, source._data.view())
        source = source.untyped_storage()
    if isinstance(source, _storage.TypedStorage):
        if source.dtype.np != dt:
            raise RuntimeError(f"Expected a Storage of type {self.dtype} or an UntypedStorage, but got type "
                               f"{source.dtype} for argument 1 'storage'")
        storage_offset += source._offset // source.dtype.itemsize
        source = source._untyped
    if not isinstance(source, _storage.UntypedStorage):
        raise TypeError(f"set_() received an invalid combination of arguments - got ({type(source).__name__})")
    buf = source._bytes()
    if size is None:
        size = (buf.nbytes // dt.itemsize - storage_offset,)
    size = tuple(size)
    stride = _contig_strides(size) if stride is None else tuple(stride)
    arr, need = _strided_on(buf, dt, size, stride, int(storage_offset))
    if arr is None:
        # PyTorch grows the storage to fit (tensors already on it follow; here they keep the old memory)
        source.resize_(need * dt.itemsize)
        arr, _ = _strided_on(source._bytes(), dt, size, stride, int(storage_offset))
    return _rebind(self, arr)


def _ctype(npd):
    return {"float32": "float", "float64": "double", "int64": "long int", "int32": "int", "int16": "short int",
            "int8": "signed char", "uint8": "unsigned char", "bool": "bool", "float16": "c10::Half",
            "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}.get(str(npd), str(npd))


def resize_(self, *sizes, memory_format=None):
    """Give this tensor new sizes (contiguous strides), keeping its storage when it is large
    enough; new elements are uninitialised (retrograd: whatever the storage holds, else zeros)."""
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    size = tuple(int(a) for a in (sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes))
    if any(a < 0 for a in size):
        raise RuntimeError("numel: integer multiplication overflow")
    dt = self._data.dtype
    if type(self._data) is not np.ndarray:
        if self.is_meta:
            from .._meta import MetaArray
            return _rebind(self, MetaArray(size, dt, tuple(s * dt.itemsize for s in _contig_strides(size))))
        raise NotImplementedError("resize_ of a tensor that is not on the CPU")
    if size == self._data.shape and self._data.flags.c_contiguous:
        return self
    root, off = _layout_of(self._data)
    buf = _storage._bytes_of(root)
    stride = _contig_strides(size)
    arr, need = _strided_on(buf, dt, size, stride, off // dt.itemsize)
    if arr is None:
        new = np.zeros(need * dt.itemsize, np.uint8)
        new[:buf.nbytes] = buf
        arr, _ = _strided_on(new, dt, size, stride, off // dt.itemsize)
    if memory_format is not None and str(memory_format) != "torch.contiguous_format" and len(size) == 4:
        n, c, h, w = size
        cl = np.ndarray(size, dt, buffer=arr.reshape(-1).view(np.uint8) if arr.size else np.zeros(0, np.uint8),
                        strides=tuple(s * dt.itemsize for s in (h * w * c, 1, w * c, c))) if arr.size else arr
        arr = cl
    return _rebind(self, arr)


def resize_as_(input, the_template, *, memory_format=None):
    """``resize_`` to ``the_template``'s sizes."""
    return resize_(input, tuple(the_template.shape), memory_format=memory_format)


class ResizeBackward(OpNode):
    def backward(self, g):
        return g.reshape(self.in_shape)


def _resize_reshape(self, size, what):
    warnings.warn(f"non-inplace {what} is deprecated", UserWarning, stacklevel=3)
    size = tuple(int(v) for v in size)
    n = int(np.prod(size)) if size else 1
    if n != self._data.size:
        raise RuntimeError(f"requested resize to {'x'.join(map(str, size))} ({n} elements in total), but the given "
                           f"tensor has a size of {'x'.join(map(str, self._data.shape))} ({self._data.size} elements). "
                           "autograd's resize can only change the shape of a given tensor, while preserving the number "
                           "of elements. ")
    node = node_for(ResizeBackward, (self,))
    if node is not None:
        node.in_shape = self._data.shape
    return finish(node, np.reshape(self._data, size))


def _resize(self, *sizes):
    """Deprecated out-of-place resize: a reshape to the same number of elements (ResizeBackward)."""
    return _resize_reshape(self, sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes,
                           "resize")


def _resize_as(self, tensor):
    """Deprecated out-of-place resize_as: ``resize(tensor.shape)``."""
    return _resize_reshape(self, tuple(tensor.shape), "resize_as")


def as_strided_(input, size, stride, storage_offset=None):
    """Give this tensor the sizes, strides and storage offset given (on the same storage)."""
    _check_meta_change(input, "as_strided_")
    r = as_strided(input.detach(), size, stride, storage_offset)
    return _rebind(input, r._data)


# --------------------------------------------------------------------------------- queries

def is_nonzero(input):
    """The truth value of a one-element tensor."""
    n = input._data.size
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input._data.reshape(-1)[0])


def is_same_size(input, other):
    """Whether both tensors have the same sizes."""
    return tuple(input._data.shape) == tuple(other._data.shape)


def is_signed(input):
    """Whether the dtype is signed (every floating and complex dtype, and the signed integers)."""
    return input._data.dtype.kind in "ifcV"


def is_distributed(input):
    """Always False (no distributed tensors)."""
    return False


def get_device(input):
    """The CUDA device index of a CUDA tensor; -1 on the CPU."""
    dev = input.device
    return dev.index if dev.type == "cuda" and dev.index is not None else (0 if dev.type == "cuda" else -1)


def const_data_ptr(self):
    """The address of the first element (as data_ptr)."""
    return self.data_ptr()


def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (by decreasing stride)."""
    st = self.stride()
    order = sorted(range(len(st)), key=lambda d: -st[d])
    if ambiguity_check:
        if isinstance(ambiguity_check, (list, tuple)):
            raise NotImplementedError("dim_order with a list of memory formats")
        seen = [st[d] for d in order]
        if len(set(seen)) != len(seen):
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given "
                               "memory formats.")
    return tuple(order)


def share_memory_(self):
    """Move this CPU tensor's storage into shared memory, keeping its values (returns ``self``;
    a no-op when it is already there). Processes it is then sent to through
    ``retrograd.multiprocessing`` (or that are forked) see the same memory. Unlike PyTorch, other
    tensors of this process made earlier as views of the same storage keep the old memory."""
    a = self._data
    if type(a) is not np.ndarray:          # another device's memory: nothing to move, as torch
        self._shared_flag = True
        return self
    if not _storage.is_shm(a):
        root = _storage.root_of(a)
        if root.flags.c_contiguous or root.flags.f_contiguous:
            buf = _storage.shm_empty(root.nbytes)
            buf[...] = root.reshape(-1, order="A").view(np.uint8)
            offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
            new = np.ndarray(a.shape, a.dtype, buffer=buf, offset=offset, strides=a.strides)
        else:                              # a strided root: the tensor's own elements, compacted
            buf = _storage.shm_empty(a.nbytes)
            new = np.ndarray(a.shape, a.dtype, buffer=buf)
            new[...] = a
        self._data = new
    from ..multiprocessing import _reductions
    _reductions.init_reductions()
    return self


def is_shared(self):
    """Whether the tensor's storage lies in shared memory (after ``share_memory_()``, or when
    received from another process)."""
    a = self._data
    if type(a) is not np.ndarray:
        return bool(getattr(self, "_shared_flag", False))
    return _storage.is_shm(a)


def record_stream(self, stream):
    """Mark the memory as in use by ``stream`` (a no-op: retrograd's streams are synchronous)."""
    from .. import cuda
    if not isinstance(stream, getattr(cuda, "Stream", ())):
        raise RuntimeError("unknown parameter type")
    return None


def as_subclass(self, cls):
    """An alias of this tensor as an instance of the Tensor subclass ``cls`` (attached to the graph)."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): argument 'cls' must be a subclass of Tensor (got {cls!r})")
    t = _alias(self)
    obj = object.__new__(cls)
    obj.__dict__.update(t.__dict__)
    return obj


def _no_grad_callable(self, name):
    if self._requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    if type(self._data) is not np.ndarray:
        raise TypeError(f"{name}_ is only implemented on CPU tensors")


def apply_(self, callable):
    """Apply a Python callable to every element, in place (CPU; slow: for tests and small tensors)."""
    _no_grad_callable(self, "apply_")
    d = self._data
    for idx in np.ndindex(d.shape):
        d[idx] = callable(d[idx].item())
    self._bump_version()
    return self


def map_(self, tensor, callable):
    """``self[i] = callable(self[i], tensor[i])`` in place (``tensor`` broadcast to ``self``)."""
    _no_grad_callable(self, "map_")
    d, o = self._data, np.broadcast_to(tensor._data, self._data.shape)
    for idx in np.ndindex(d.shape):
        d[idx] = callable(d[idx].item(), o[idx].item())
    self._bump_version()
    return self


def map2_(self, x, y, callable):
    """``self[i] = callable(self[i], x[i], y[i])`` in place."""
    _no_grad_callable(self, "map2_")
    d = self._data
    a, b = np.broadcast_to(x._data, d.shape), np.broadcast_to(y._data, d.shape)
    for idx in np.ndindex(d.shape):
        d[idx] = callable(d[idx].item(), a[idx].item(), b[idx].item())
    self._bump_version()
    return self


def module_load(self, other, assign=False):
    """What ``load_state_dict`` stores for this parameter/buffer: ``other`` detached when
    ``assign``, else ``other`` copied into this tensor (a subclass may override it to convert)."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


def new(self, *args, **kwargs):
    """The legacy constructor with this tensor's dtype and device: ``new(2, 3)`` (uninitialised),
    ``new([1, 2])`` (data), ``new(tensor)`` (an alias), ``new()`` (empty)."""
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"new() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if len(args) == 1 and isinstance(args[0], Tensor):
        if args[0]._data.dtype != self._data.dtype:
            raise TypeError(f"expected {_options(self._data.dtype)} (got {_options(args[0]._data.dtype)})")
        return args[0].detach()
    from .._creation import _legacy_new
    r = _legacy_new(Tensor, *args).to(self.dtype)
    dev = device if device is not None else self.device
    return r if str(dev) == str(r.device) else r.to(dev)


def _options(npd):
    return (f"TensorOptions(dtype={_ctype(npd)}, device=cpu, layout=Strided, requires_grad=false (default), "
            "pinned_memory=false (default), memory_format=(nullopt))")


def _alloc_strided(size, stride, dtype_np):
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    need = (1 + builtins.sum((s - 1) * st for s, st in zip(size, stride))) if all(size) else 0
    buf = np.zeros(need * np.dtype(dtype_np).itemsize, np.uint8)
    arr, _ = _strided_on(buf, dtype_np, size, stride, 0)
    return arr


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, layout=None,
                      pin_memory=False):
    """An uninitialised tensor of the given sizes and strides (this tensor's dtype by default)."""
    dt = D.to_dtype(dtype) if dtype is not None else self.dtype
    t = Tensor._make(_alloc_strided(size, stride, dt.np))
    if device is not None and str(device) != "cpu":
        t = t.to(device)
    elif device is None and self.device.type != "cpu":
        t = t.to(self.device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialised tensor of ``size`` laid out in memory in the dim order ``physical_layout``."""
    size, perm = tuple(int(s) for s in size), tuple(int(p) for p in physical_layout)
    if len(perm) != len(size) or sorted(perm) != list(range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; "
                           f"i.e. len(size) = {len(size)} is not equal to len(physical_layout) = {len(perm)}"
                           if len(perm) != len(size) else "Dimension {} is duplicated in physical_layout".format(
                               next(p for p in perm if perm.count(p) > 1)))
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    phys = np.zeros(tuple(size[p] for p in perm), dt.np)
    t = Tensor._make(np.transpose(phys, np.argsort(perm)))
    if device is not None and str(device) != "cpu":
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


_frombuffer_warned = [False]


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor on the memory of an object exposing the buffer protocol (shared, not copied)."""
    dt = D.to_dtype(dtype)
    mv = memoryview(buffer).cast("B")
    n, k = mv.nbytes, dt.itemsize
    if n <= 0 and count <= 0 or count == 0:
        raise ValueError(f"both buffer length ({n}) and count ({count}) must not be 0")
    if not 0 <= offset < n:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({n} bytes) minus 1")
    if count < 0:
        if (n - offset) % k:
            raise ValueError(f"buffer length ({n - offset} bytes) after offset ({offset} bytes) must be a multiple "
                             f"of element size ({k})")
        count = (n - offset) // k
    elif offset + count * k > n:
        raise ValueError(f"requested buffer length ({count} * {k} bytes) after offset ({offset} bytes) must not be "
                         f"greater than actual buffer length ({n} bytes)")
    arr = np.frombuffer(mv, dtype=dt.np, count=count, offset=offset)
    if mv.readonly:
        if not _frombuffer_warned[0]:
            _frombuffer_warned[0] = True
            warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
                          "means you can write to the underlying (supposedly non-writable) buffer using the tensor. "
                          "You may want to copy the buffer to protect its data or make it writable before "
                          "converting it to a tensor. This type of warning will be suppressed for the rest of this "
                          "program.", UserWarning, stacklevel=2)
        arr = arr.copy()   # NumPy cannot write to read-only memory: a private copy instead
    return Tensor._make(arr, requires_grad=requires_grad)


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False):
    """``size`` elements read from a file; ``shared=True`` maps the file (writes go to it)."""
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    import os
    nbytes = int(size) * dt.itemsize
    have = os.path.getsize(filename) if os.path.exists(filename) else -1
    if shared:
        if have < nbytes:
            with open(filename, "ab") as f:
                f.truncate(nbytes)
        arr = np.memmap(filename, dtype=dt.np, mode="r+", shape=(int(size),)) if size else np.zeros(0, dt.np)
    else:
        if have < 0:
            raise RuntimeError(f"unable to open file <{filename}> in read-only mode: No such file or directory (2)")
        if have < nbytes:
            raise RuntimeError(f"unable to mmap {nbytes} bytes from file <{filename}>: Cannot allocate memory (12)")
        arr = np.fromfile(filename, dtype=dt.np, count=int(size))
    t = Tensor._make(arr.view(np.ndarray) if isinstance(arr, np.memmap) else arr, requires_grad=requires_grad)
    if isinstance(arr, np.memmap):
        t._mmap = arr   # keeps the mapping open as long as the tensor lives
    return t


# ------------------------------------------------------------------------ differentiable ops

def _shift(input, other, left, name):
    _, _, x, y, dt = binary_operands(input, other)
    dt = np.dtype(dt)
    if dt.kind not in "iub":
        raise NotImplementedError(f"\"{'lshift' if left else 'rshift'}_cpu\" not implemented for "
                                  f"'{_dtype_name(dt)}'")
    work = np.dtype(np.uint8) if dt.kind == "b" else dt
    xa, ya = np.asarray(x).astype(work), np.asarray(y).astype(np.int64)
    bits = work.itemsize * 8
    big = (ya < 0) | (ya >= bits)      # shifts C leaves undefined: PyTorch gives 0 (or -1 for negatives >>)
    ys = np.where(big, 0, ya).astype(work)
    with np.errstate(over="ignore"):
        if left:
            r = np.where(big, 0, np.left_shift(xa, ys))
        else:
            r = np.where(big, np.where(xa < 0, -1, 0) if work.kind == "i" else 0, np.right_shift(xa, ys))
    return Tensor._make(np.asarray(r).astype(dt))


def bitwise_left_shift(input, other, *, out=None):
    """``input << other`` (bits shifted out are lost; shifts past the width give 0)."""
    r = _shift(input, other, True, "bitwise_left_shift")
    return r if out is None else out.copy_(r)


def bitwise_right_shift(input, other, *, out=None):
    """``input >> other`` (arithmetic shift for signed integers)."""
    r = _shift(input, other, False, "bitwise_right_shift")
    return r if out is None else out.copy_(r)


def _rlshift(self, other):
    return bitwise_left_shift(other, self)


def _rrshift(self, other):
    return bitwise_right_shift(other, self)


def _shift_dunder(fn):
    def op(self, other):
        if not isinstance(other, (Tensor, int, float, bool, np.integer, np.ndarray)):
            return NotImplemented
        return fn(self, other)
    return op


def _shift_inplace(fn):
    def method(self, other):
        r = fn(self, other)
        if r._data.dtype != self._data.dtype and not D.can_cast(r.dtype, self.dtype):
            raise RuntimeError(f"result type {_dtype_name(r._data.dtype)} can't be cast "
                               f"to the desired output type {_dtype_name(self._data.dtype)}")
        check_inplace(self)
        np.copyto(self._data, np.broadcast_to(r._data, self._data.shape), casting="unsafe")
        self._bump_version()
        return self
    return method


def fill(input, value):
    """A tensor of ``input``'s shape and dtype filled with ``value`` (FillBackward0)."""
    from .._creation import full_like
    r = full_like(input.detach(), value._data.item() if isinstance(value, Tensor) else value)
    node = node_for(FillBackward0, (input,)) if not isinstance(value, Tensor) else node_for(FillBackward1,
                                                                                           (input, value))
    if node is None:
        return r
    node.shape = input._data.shape
    return finish(node, r._data)


class FillBackward0(OpNode):
    def backward(self, g):
        nf = self.next_functions
        return (zeros_grad(g) if nf[0][0] is not None else None,
                g.sum() if len(nf) > 1 and nf[1][0] is not None else None)


class FillBackward1(FillBackward0):
    pass


def detach(input):
    """``input.detach()``."""
    return input.detach()


def detach_copy(input):
    """A copy of ``input``'s values. As in PyTorch, the result of one that requires grad still
    requires grad, through a node whose backward raises (no derivative is defined)."""
    from .activation import NotImplemented_
    node = node_for(NotImplemented_, (input,))
    if node is not None:
        node.op_name = "detach_copy"
    return finish(node, input._data.copy(order="K"))


def _view_as_real(input):
    from .complex_ops import view_as_real
    return view_as_real(input)


def _view_as_complex(input):
    from .complex_ops import view_as_complex
    return view_as_complex(input)


def _split_with_sizes(input, split_sizes, dim=0):
    from .shape import split_with_sizes
    return split_with_sizes(input, split_sizes, dim)


as_strided_copy = _copy_variant(as_strided, "as_strided_copy")
view_as_real_copy = _copy_variant(_view_as_real, "view_as_real_copy")
view_as_complex_copy = _copy_variant(_view_as_complex, "view_as_complex_copy")
split_with_sizes_copy = _copy_variant(_split_with_sizes, "split_with_sizes_copy")
values_copy = _copy_variant(lambda t: t.values(), "values_copy")
indices_copy = _copy_variant(lambda t: t.indices(), "indices_copy")
crow_indices_copy = _copy_variant(lambda t: t.crow_indices(), "crow_indices_copy")
col_indices_copy = _copy_variant(lambda t: t.col_indices(), "col_indices_copy")
ccol_indices_copy = _copy_variant(lambda t: t.ccol_indices(), "ccol_indices_copy")
row_indices_copy = _copy_variant(lambda t: t.row_indices(), "row_indices_copy")


class AsStridedScatterBackward0(OpNode):
    def backward(self, g):
        nf = self.next_functions
        gc = g.contiguous()
        gi = gs = None
        if nf[0][0] is not None:
            gi = as_strided_scatter(gc, g.new_zeros(self.size), self.size, self.stride, self.offset)
        if nf[1][0] is not None:
            gs = as_strided(gc, self.size, self.stride, self.offset).clone()
        return gi, gs


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """``input`` (contiguous copy) with its ``as_strided(size, stride, storage_offset)`` view set to ``src``."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    off = 0 if storage_offset is None else int(storage_offset)
    if tuple(src._data.shape) != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{_shape(src._data.shape)}, slice size = {_shape(size)}")
    check_devices(input, src)
    out = input._data.copy(order="C")
    if out.size:
        need = _storage_need(size, stride, off)
        if need > out.size:
            raise RuntimeError(f"setStorage: sizes {_shape(size)}, strides {_shape(stride)}, storage offset {off}, "
                               f"and itemsize {out.itemsize} requiring a storage size of {need * out.itemsize} are "
                               f"out of bounds for storage of size {out.nbytes}")
        if need:
            k = out.itemsize
            strided(out.reshape(-1)[off:], size, tuple(st * k for st in stride))[...] = src._data
    node = node_for(AsStridedScatterBackward0, (input, src))
    if node is not None:
        node.size, node.stride, node.offset = size, stride, off
    return finish(node, out)


class IndexReduceBackward0(ScatterReduceBackward0):
    pass


_index_reduce_warned = [False]


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    """``input`` with the slices of ``source`` reduced ('prod', 'mean', 'amax', 'amin') into the
    slices ``index`` along ``dim``."""
    if not _index_reduce_warned[0]:
        _index_reduce_warned[0] = True
        warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning, stacklevel=2)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    nd = input._data.ndim
    d = dim + max(nd, 1) if dim < 0 else dim
    idx = index._data
    if idx.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if idx.dtype.kind not in "iu":
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError("index_reduce_(): self and source expected to have the same dtype.")
    if nd and source._data.ndim and source._data.shape[d] != idx.size:
        raise RuntimeError("index_reduce_(): Expected index and source to have the same size along dim.")
    # as a scatter_reduce: the index of each source element is index[k] for its position k along dim
    shp = [1] * source._data.ndim
    if shp:
        shp[d] = idx.size
    xp = xp_for(idx)
    full_idx = xp.broadcast_to(idx.reshape(shp), source._data.shape)
    r = scatter_reduce(input, dim, Tensor._make(xp.ascontiguousarray(full_idx).astype(np.int64)), source, reduce,
                       include_self=include_self)
    if r._grad_fn is not None and type(r._grad_fn) is ScatterReduceBackward0:
        r._grad_fn.__class__ = IndexReduceBackward0
    return r if out is None else out.copy_(r)


def fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal (all dims equal for >2-d; ``wrap``: a tall matrix's diagonal
    restarts every ncols+1 rows). Written through diagonal views, so autograd records CopySlices."""
    d = self._data
    if d.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if d.ndim > 2 and len(set(d.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if d.ndim == 2:
        self.diagonal().fill_(fill_value)
        h, w = d.shape
        if wrap and h > w + 1:
            for start in range(w + 1, h, w + 1):
                self[start:].diagonal().fill_(fill_value)
    else:
        self.as_strided((d.shape[0],), (builtins.sum(self.stride()),), self.storage_offset()).fill_(fill_value)
    return self


def nonzero_static(input, *, size, fill_value=-1):
    """The indices of the nonzero elements (as ``nonzero``), cut or padded with ``fill_value`` to
    exactly ``size`` rows."""
    size = int(size)
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    nz = np.argwhere(input._data)
    out = np.full((size, input._data.ndim), fill_value, np.int64)
    k = min(size, len(nz))
    out[:k] = nz[:k]
    return Tensor._make(out)


# ------------------------------------------------------------------------ random fills

CauchyBackward0 = _fill_node("CauchyBackward0")
GeometricBackward0 = _fill_node("GeometricBackward0")


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with Cauchy samples of location ``median`` and scale ``sigma``."""
    if self._data.dtype.kind not in "fcV":
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype must be a floating "
                           f"point but you specified {_ctype(self._data.dtype)}")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_g(sigma)}")
    import math
    # (one 53-bit uniform each, through the C library's tan: PyTorch's serial kernel)
    f = lambda u: median + sigma * math.tan(math.pi * (u - 0.5))
    return _fill(self, _draw(self, generator, lambda e, n: e.unit53_map(n, f, ("cauchy", float(median), float(sigma))),
                       np.float64), CauchyBackward0)


def geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(``p``) trials up to the first success (>= 1)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_g(p)}")
    import math
    scale = math.log1p(-p)
    f = lambda u: math.ceil(math.log(u) / scale) if u > 0 else math.inf
    return _fill(self, _draw(self, generator, lambda e, n: e.unit53_map(n, f, ("geometric", scale)),
                       np.float64), GeometricBackward0)


def bernoulli(self, p=None, *, generator=None):
    """0/1 draws with probabilities ``self`` (or ``p``), recorded as BernoulliBackward0."""
    from .. import _creation
    probs = self._data if p is None else p
    pa = np.asarray(probs, dtype=np.float64)
    if ((pa < 0) | (pa > 1)).any() or np.isnan(pa).any():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be "
                           "improved?  If so, please report an enhancement request to PyTorch.)")
    r = _creation.bernoulli(self.detach(), p, generator=generator)
    node = node_for(BernoulliBackward0, (self,))
    return finish(node, r._data) if node is not None else r


BernoulliBackward0 = _fill_node("BernoulliBackward0")


def multinomial(self, num_samples, replacement=False, *, generator=None):
    """``torch.multinomial(self, ...)``."""
    from .. import _creation
    return _creation.multinomial(self, num_samples, replacement, generator=generator)


def _index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    return apply_inplace(self, index_reduce, dim, index, source, reduce, include_self=include_self)


def is_inference(input):
    """Whether ``input`` was made in inference mode."""
    return input.is_inference()


__all__.append("is_inference")

TENSOR_METHODS = {
    "untyped_storage": untyped_storage, "storage": storage, "storage_type": storage_type, "is_set_to": is_set_to,
    "set_": set_, "resize_": resize_, "resize_as_": resize_as_, "resize": _resize,
    "resize_as": _resize_as,
    "as_strided_": as_strided_, "is_nonzero": is_nonzero, "is_same_size": is_same_size, "is_signed": is_signed,
    "is_distributed": is_distributed, "get_device": get_device, "const_data_ptr": const_data_ptr,
    "dim_order": dim_order, "share_memory_": share_memory_, "is_shared": is_shared,
    "record_stream": record_stream, "as_subclass": as_subclass, "apply_": apply_, "map_": map_, "map2_": map2_,
    "module_load": module_load, "new": new, "new_empty_strided": new_empty_strided,
    "bitwise_left_shift": bitwise_left_shift, "bitwise_right_shift": bitwise_right_shift,
    "__lshift__": _shift_dunder(bitwise_left_shift), "__rshift__": _shift_dunder(bitwise_right_shift),
    "__rlshift__": _shift_dunder(_rlshift), "__rrshift__": _shift_dunder(_rrshift),
    "bitwise_left_shift_": _shift_inplace(bitwise_left_shift),
    "bitwise_right_shift_": _shift_inplace(bitwise_right_shift),
    "__ilshift__": _shift_inplace(bitwise_left_shift), "__irshift__": _shift_inplace(bitwise_right_shift),
    "as_strided_scatter": as_strided_scatter, "index_reduce": index_reduce, "index_reduce_": _index_reduce_,
    "fill_diagonal_": fill_diagonal_, "nonzero_static": lambda self, *, size, fill_value=-1:
        nonzero_static(self, size=size, fill_value=fill_value),
    "cauchy_": cauchy_, "geometric_": geometric_, "bernoulli": bernoulli, "multinomial": multinomial,
}
INPLACE = {}
