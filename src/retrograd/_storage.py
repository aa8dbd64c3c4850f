"""Storages: the flat memory behind tensors (``Tensor.untyped_storage()``, ``Tensor.storage()``,
``torch.UntypedStorage``, ``torch.TypedStorage`` and the legacy ``torch.FloatStorage``-style classes).

A tensor's storage is the NumPy allocation its array is a view of (the root of its ``.base``
chain), seen as bytes. Storage objects are thin wrappers: two storages of the same allocation
report the same ``data_ptr()``, and writes through a storage are seen by every tensor on it.
Unlike PyTorch, growing a storage in place (``resize_`` past its size) moves it to a new
allocation that tensors made earlier from it do not follow (NumPy cannot grow memory in place).
"""
import mmap
import os
import warnings
import weakref

import numpy as np

from . import _dtype as D

__all__ = ["UntypedStorage", "TypedStorage", "is_storage", "storage_of"]

_warned = [False]


def _warn_typed():
    # PyTorch warns once per process (until torch.storage._always_warn_typed_storage_removal).
    if not _warned[0]:
        _warned[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the "
                      "only storage class. This should only matter to you if you are using storages directly.  To "
                      "access UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=3)


def root_of(a):
    """The allocation an array is a view of (its storage)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _bytes_of(root):
    if root.flags.c_contiguous or root.flags.f_contiguous:
        return root.reshape(-1, order="A").view(np.uint8) if root.ndim != 1 or root.dtype != np.uint8 else root
    # a root that is itself strided (e.g. made by np.lib.stride_tricks): its span of memory
    return np.ndarray((root.nbytes,), np.uint8, buffer=root)


class _ShmMap(mmap.mmap):
    """A mapping of a shared-memory file; ``fd`` stays open so the memory can be handed to other
    processes (``retrograd.multiprocessing`` passes the descriptor, not the bytes)."""


def _close_fd(fd):
    try:
        os.close(fd)
    except OSError:
        pass


def _map_fd(fd, nbytes):
    m = _ShmMap(fd, max(nbytes, 1))
    m.fd = fd
    weakref.finalize(m, _close_fd, fd)
    return np.frombuffer(m, np.uint8, count=nbytes)


def shm_empty(nbytes):
    """A zeroed uint8 array of ``nbytes`` in shared memory. The memory has no name on the file
    system (an anonymous memfd, or a /dev/shm file unlinked at once): the kernel frees it when the
    last process that maps it lets go, so nothing is left behind and no resource tracker is needed."""
    nbytes = int(nbytes)
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("retrograd-shm", os.MFD_CLOEXEC)
    else:
        import tempfile
        d = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
        fd, path = tempfile.mkstemp(prefix="retrograd-shm-", dir=d)
        os.unlink(path)
    try:
        os.ftruncate(fd, max(nbytes, 1))
        return _map_fd(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise


def shm_attach(fd, nbytes):
    """The uint8 array on a shared segment received as the descriptor ``fd`` (owned from now on)."""
    return _map_fd(fd, int(nbytes))


def shm_fd(a):
    """The descriptor of the shared segment array ``a`` lies on, or None."""
    r = root_of(a)
    b = r.base
    if isinstance(b, memoryview) and isinstance(b.obj, _ShmMap):
        return b.obj.fd
    return None


def is_shm(a):
    """Whether array ``a`` lies in shared memory made by ``shm_empty``/``shm_attach``."""
    return shm_fd(a) is not None


def storage_of(t):
    """The UntypedStorage behind tensor ``t``."""
    if type(t._data) is not np.ndarray:
        if t.is_meta:
            return UntypedStorage(t._data.nbytes, device="meta")
        return UntypedStorage._wrap(t._data, t.device)   # another device's array: no byte view here
    return UntypedStorage._wrap(_bytes_of(root_of(t._data)))


class UntypedStorage:
    """A flat block of bytes (``torch.UntypedStorage``)."""
    is_sparse = False

    def __init__(self, *args, device=None):
        self._device = "cpu" if device is None else str(device)
        if len(args) == 1 and isinstance(args[0], (int, np.integer)) and not isinstance(args[0], bool):
            self._buf = np.zeros(int(args[0]), np.uint8)
        elif not args:
            self._buf = np.zeros(0, np.uint8)
        elif len(args) == 1:
            self._buf = np.array(list(args[0]), dtype=np.uint8)
        else:
            raise TypeError(f"{type(self).__name__}(): Could not parse arguments")

    @classmethod
    def _wrap(cls, buf, device="cpu"):
        s = cls.__new__(cls)
        s._buf = buf
        s._device = str(device)
        return s

    # ---- metadata ----
    @property
    def device(self):
        from ._device import device
        return device(self._device)

    @property
    def is_cuda(self):
        return self._device.startswith("cuda")

    @property
    def filename(self):
        return getattr(self, "_filename", None)

    def size(self):
        return int(self._buf.nbytes)

    def nbytes(self):
        return int(self._buf.nbytes)

    def __len__(self):
        return self.nbytes()

    def element_size(self):
        return 1

    def data_ptr(self):
        b = self._buf
        return b.__array_interface__["data"][0] if type(b) is np.ndarray else b.data.ptr

    def is_pinned(self, device="cuda"):
        return False

    def is_shared(self):
        return type(self._buf) is np.ndarray and is_shm(self._buf)

    def share_memory_(self):
        """Move these bytes into shared memory (a no-op when already there or not on the CPU).
        Tensors made from the storage earlier keep the old memory; ``Tensor.share_memory_()``
        moves a tensor itself."""
        if type(self._buf) is np.ndarray and not is_shm(self._buf):
            new = shm_empty(self._buf.nbytes)
            new[...] = self._buf
            self._buf = new
        return self

    def _bytes(self):
        if type(self._buf) is not np.ndarray:
            raise RuntimeError(f"storage on {self._device}: only CPU storages give access to their bytes")
        return self._buf

    # ---- contents ----
    def tolist(self):
        return self._bytes().tolist()

    def __getitem__(self, i):
        b = self._bytes()
        if isinstance(i, slice):
            return UntypedStorage._wrap(b[i], self._device)
        return int(b[i])

    def __setitem__(self, i, v):
        self._bytes()[i] = v

    def __iter__(self):
        return iter(self.tolist())

    def fill_(self, value):
        self._bytes()[...] = value
        return self

    def copy_(self, src, non_blocking=None):
        sb = src._bytes() if isinstance(src, (UntypedStorage, TypedStorage)) else None
        if sb is None:
            raise TypeError(f"copy_(): expected a storage, got {type(src).__name__}")
        if isinstance(src, TypedStorage):
            sb = src._untyped._bytes()[src._offset:src._offset + src.nbytes()]
        if sb.nbytes != self.nbytes():
            raise RuntimeError(f"size mismatch, m1: [{self.nbytes()}], m2: [{sb.nbytes}]")
        self._bytes()[...] = sb
        return self

    def resize_(self, size):
        size = int(size)
        old = self._bytes()
        new = np.zeros(size, np.uint8)
        n = min(size, old.nbytes)
        new[:n] = old[:n]
        self._buf = new
        return self

    def clone(self):
        return UntypedStorage._wrap(self._bytes().copy(), self._device)

    def cpu(self):
        return self

    def untyped(self):
        return self

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self.tolist()) if type(self._buf) is np.ndarray else ""
        head = f"[torch.storage.UntypedStorage(device={self._device}) of size {self.nbytes()}]"
        return f"{body}\n{head}" if body else head

    def __copy__(self):
        return self.clone()

    def __deepcopy__(self, memo):
        return memo.setdefault(id(self), self.clone())


class TypedStorage:
    """A storage seen as elements of one dtype (``torch.TypedStorage``, deprecated by PyTorch)."""
    is_sparse = False
    _legacy_dtype = None

    def __init__(self, *args, dtype=None, device=None, wrap_storage=None, _internal=False):
        if not _internal:
            _warn_typed()
        dt = D.to_dtype(dtype) if dtype is not None else (self._legacy_dtype or D.get_default_dtype())
        self.dtype = dt
        self._offset = 0
        if wrap_storage is not None:
            self._untyped = wrap_storage
            self._count = wrap_storage.nbytes() // dt.itemsize
            return
        if len(args) == 1 and isinstance(args[0], (int, np.integer)) and not isinstance(args[0], bool):
            arr = np.zeros(int(args[0]), dt.np)
        elif not args:
            arr = np.zeros(0, dt.np)
        elif len(args) == 1:
            arr = np.array(list(args[0]), dtype=dt.np)
        else:
            raise TypeError(f"{type(self).__name__}(): Could not parse arguments")
        self._untyped = UntypedStorage._wrap(arr.view(np.uint8), "cpu" if device is None else device)
        self._count = arr.size

    @classmethod
    def _of(cls, untyped, dtype):
        s = cls.__new__(cls)
        s.dtype, s._untyped, s._offset = dtype, untyped, 0
        s._count = untyped.nbytes() // dtype.itemsize
        return s

    def _view(self):
        b = self._untyped._bytes()
        return np.ndarray((self._count,), self.dtype.np, buffer=b, offset=self._offset)

    def _bytes(self):
        return self._untyped._bytes()

    @property
    def device(self):
        return self._untyped.device

    @property
    def is_cuda(self):
        return self._untyped.is_cuda

    def size(self):
        return self._count

    def __len__(self):
        return self._count

    def nbytes(self):
        return self._count * self.dtype.itemsize

    def element_size(self):
        return self.dtype.itemsize

    def data_ptr(self):
        return self._untyped.data_ptr() + self._offset

    def untyped(self):
        return self._untyped

    def _untyped_storage(self):
        return self._untyped

    def pickle_storage_type(self):
        return _LEGACY_NAMES.get(self.dtype.name, "TypedStorage")

    def is_pinned(self, device="cuda"):
        return False

    def is_shared(self):
        return self._untyped.is_shared()

    def share_memory_(self):
        self._untyped.share_memory_()
        return self

    def tolist(self):
        return self._view().tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __getitem__(self, i):
        v = self._view()
        if isinstance(i, slice):
            start, stop, step = i.indices(self._count)
            if step != 1:
                raise RuntimeError("slices with step are not supported")
            s = TypedStorage._of(self._untyped, self.dtype)
            s._offset = self._offset + start * self.dtype.itemsize
            s._count = max(stop - start, 0)
            return s
        if not isinstance(i, (int, np.integer)):
            raise RuntimeError(f"can't index a {type(self).__name__} with {type(i).__name__}")
        if not -self._count <= i < self._count:
            raise IndexError(f"index {i} out of range for storage of size {self._count}")
        return v[i].item()

    def __setitem__(self, i, value):
        self._view()[i] = value

    def fill_(self, value):
        self._view()[...] = value
        return self

    def copy_(self, src, non_blocking=None):
        if not isinstance(src, TypedStorage):
            raise TypeError(f"copy_(): expected a TypedStorage, got {type(src).__name__}")
        if src.size() != self._count:
            raise RuntimeError(f"size mismatch, m1: [{self._count}], m2: [{src.size()}]")
        self._view()[...] = src._view()
        return self

    def resize_(self, size):
        self._untyped.resize_(self._offset + int(size) * self.dtype.itemsize)
        self._count = int(size)
        return self

    def clone(self):
        s = TypedStorage._of(UntypedStorage._wrap(self._view().copy().view(np.uint8), self._untyped._device),
                             self.dtype)
        return s

    def cpu(self):
        return self

    def _to(self, dtype):
        s = TypedStorage._of(UntypedStorage._wrap(self._view().astype(dtype.np).view(np.uint8)), dtype)
        return s

    def double(self):
        return self._to(D.float64)

    def float(self):
        return self._to(D.float32)

    def half(self):
        return self._to(D.float16)

    def long(self):
        return self._to(D.int64)

    def int(self):
        return self._to(D.int32)

    def short(self):
        return self._to(D.int16)

    def char(self):
        return self._to(D.int8)

    def byte(self):
        return self._to(D.uint8)

    def bool(self):
        return self._to(D.bool_)

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self.tolist())
        head = f"[torch.storage.TypedStorage(dtype={self.dtype}, device={self._untyped._device}) of size {self._count}]"
        return f"{body}\n{head}" if body else head

    def __copy__(self):
        return self.clone()

    def __deepcopy__(self, memo):
        return memo.setdefault(id(self), self.clone())


_LEGACY_NAMES = {"float64": "DoubleStorage", "float32": "FloatStorage", "float16": "HalfStorage",
                 "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
                 "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
                 "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage"}


class _LegacyMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, TypedStorage) and (cls._legacy_dtype is None or obj.dtype == cls._legacy_dtype)


def _legacy_class(storage_name, dtype_name):
    def __new__(cls, *args, **kwargs):
        # PyTorch's legacy classes construct a plain TypedStorage of their dtype
        if "dtype" in kwargs:
            raise RuntimeError("__new__ received an unexpected keyword argument 'dtype'")
        _warn_typed()
        return TypedStorage(*args, dtype=getattr(D, dtype_name), _internal=True, **kwargs)
    return _LegacyMeta(storage_name, (TypedStorage,), {"__new__": __new__, "_legacy_dtype": getattr(D, dtype_name),
                                                       "__module__": "torch"})


LEGACY_STORAGES = {name: _legacy_class(name, "bool_" if dt == "bool" else dt) for dt, name in _LEGACY_NAMES.items()
                   if hasattr(D, "bool_" if dt == "bool" else dt)}


def is_storage(obj):
    """Whether ``obj`` is a storage object."""
    return isinstance(obj, (UntypedStorage, TypedStorage))
