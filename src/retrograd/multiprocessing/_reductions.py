"""How tensors in shared memory travel between processes.

multiprocessing pickles Process arguments (spawn, forkserver) and Queue items with its
ForkingPickler. A tensor whose storage lies in shared memory is sent as a descriptor of that
memory plus its view geometry, and rebuilt in the receiver as a view of the SAME memory; any other
tensor pickles as it always does (a copy).
"""
import numpy as np

from .. import _storage
from .._tensor import Tensor

_done = [False]


def _rebuild_shared(cls, dupfd, nbytes, dtype, shape, strides, offset, requires_grad, attrs):
    from .._creation import _rebuild
    buf = _storage.shm_attach(dupfd.detach(), nbytes)
    arr = np.ndarray(shape, dtype.np, buffer=buf, offset=offset, strides=strides)
    t = _rebuild(cls, arr, requires_grad)
    if attrs:
        t.__dict__.update(attrs)
    return t


def reduce_tensor(t):
    """ForkingPickler's reduction of a tensor: by reference to shared memory when it lies there."""
    a = t._data
    if type(a) is not np.ndarray or not _storage.is_shm(a):
        return t.__reduce_ex__(4)
    if t._grad_fn is not None and t._requires_grad:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
                           "does not support crossing process boundaries.  If you just want to transfer the data, "
                           "call detach() on the tensor before serializing (e.g., putting it on the queue).")
    from multiprocessing.reduction import DupFd
    root = _storage.root_of(a)
    offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    attrs = {k: v for k, v in getattr(t, "__dict__", {}).items() if not k.startswith("_")} \
        if type(t) is not Tensor else None
    return (_rebuild_shared, (type(t), DupFd(_storage.shm_fd(a)), root.nbytes, t.dtype, a.shape, a.strides,
                              offset, bool(t._requires_grad), attrs))


def _rebuild_storage(cls, dupfd, nbytes):
    return cls._wrap(_storage.shm_attach(dupfd.detach(), nbytes))


def reduce_storage(s):
    """ForkingPickler's reduction of an UntypedStorage (by reference when shared)."""
    b = s._buf
    if type(b) is np.ndarray and _storage.is_shm(b) and _storage.root_of(b) is b:
        from multiprocessing.reduction import DupFd
        return (_rebuild_storage, (type(s), DupFd(_storage.shm_fd(b)), b.nbytes))
    return s.__reduce_ex__(4)


def init_reductions():
    """Register the reductions with multiprocessing's pickler (once per process)."""
    if _done[0]:
        return
    _done[0] = True
    from multiprocessing.reduction import ForkingPickler
    from ..nn.parameter import Parameter, Buffer
    for cls in (Tensor, Parameter, Buffer):
        ForkingPickler.register(cls, reduce_tensor)
    ForkingPickler.register(_storage.UntypedStorage, reduce_storage)
