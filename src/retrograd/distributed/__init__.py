"""``retrograd.distributed``: process groups over MPI, PyTorch's collective API.

One process needs nothing: ``init_process_group("gloo")`` makes a group of one and every
collective leaves its tensor as it is. Several processes are started by ``mpirun -n N``
and talk through mpi4py (imported only here, on first use); the backend names "mpi",
"gloo" and "nccl" are all accepted and all run on MPI. Collectives work in place on a
tensor's array (a CUDA tensor's array is copied through the host).
"""
import os

import numpy as np

__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "is_available",
           "is_mpi_available", "is_gloo_available", "is_nccl_available", "is_torchelastic_launched",
           "get_rank", "get_world_size", "get_backend", "ReduceOp", "Backend", "all_reduce", "broadcast",
           "all_gather", "all_gather_object", "broadcast_object_list", "reduce", "barrier", "group",
           "GroupMember", "gather", "scatter", "all_gather_into_tensor", "send", "recv"]

_NOT_INIT = "Default process group has not been initialized, please make sure to call init_process_group."
# Variables that launchers (Open MPI, MPICH/Hydra, Slurm's PMI) set in every process they start.
_MPI_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS")


class ReduceOp:
    """Reduction operations: ``ReduceOp.SUM``, ``AVG``, ``PRODUCT``, ``MIN``, ``MAX``."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<RedOpType.{self.name}: {_OPS.index(self.name)}>"

    def __eq__(self, other):
        return isinstance(other, ReduceOp) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


_OPS = ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "AVG"]
for _n in _OPS:
    setattr(ReduceOp, _n, ReduceOp(_n))


class Backend(str):
    """A backend name: ``Backend("gloo")``; MPI carries every one of them here."""
    MPI, GLOO, NCCL, UNDEFINED = "mpi", "gloo", "nccl", "undefined"

    def __new__(cls, name):
        low = str(name).lower()
        if low not in ("mpi", "gloo", "nccl", "cpu:gloo,cuda:nccl"):
            raise ValueError(f"Invalid backend: '{name}'")
        return str.__new__(cls, low)


class _Group:
    def __init__(self, backend, comm, rank, size):
        self.backend, self.comm, self.rank, self.size = backend, comm, rank, size


class group:
    WORLD = None


GroupMember = group
_default = None


class _Work:
    """What ``async_op=True`` returns: the work is already done when it is handed back."""

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def is_success(self):
        return True


def is_available():
    return True


def is_mpi_available():
    try:
        import mpi4py  # noqa: F401
        return True
    except ImportError:
        return False


is_gloo_available = is_mpi_available


def is_nccl_available():
    return False


def is_torchelastic_launched():
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def _launched_size():
    for v in _MPI_SIZE_VARS:
        if os.environ.get(v):
            return int(os.environ[v])
    return 1


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join the default process group: every process started by ``mpirun`` (a group of one otherwise)."""
    global _default
    if _default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = Backend(backend if backend is not None else "gloo")
    size = _launched_size()
    env_size = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if size == 1 and env_size > 1:
        raise RuntimeError(f"WORLD_SIZE={env_size} but this process was not started by mpirun: retrograd's "
                           f"process groups run over MPI; start the script with mpirun -n {env_size}")
    if size > 1 or world_size > 1:
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise RuntimeError("retrograd.distributed runs several processes over MPI: install mpi4py "
                               "(pip install mpi4py, with an MPI library) and start them with mpirun") from e
        comm = MPI.COMM_WORLD
        if world_size not in (-1, comm.Get_size()):
            raise ValueError(f"world_size={world_size} but mpirun started {comm.Get_size()} processes")
        if rank not in (-1, comm.Get_rank()):
            raise ValueError(f"rank={rank} but MPI gave this process rank {comm.Get_rank()}")
        _default = _Group(name, comm, comm.Get_rank(), comm.Get_size())
    else:
        if rank not in (-1, 0):
            raise ValueError(f"Invalid rank {rank}: a single process has rank 0")
        _default = _Group(name, None, 0, 1)
    group.WORLD = _default


def destroy_process_group(group=None):
    global _default
    _default = None
    globals()["group"].WORLD = None


def is_initialized():
    return _default is not None


def _pg(g=None):
    if g is not None and g is not _default:
        return g
    if _default is None:
        raise ValueError(_NOT_INIT)
    return _default


def get_rank(group=None):
    return _pg(group).rank


def get_world_size(group=None):
    return _pg(group).size


def get_backend(group=None):
    return str(_pg(group).backend)


# --- collectives -----------------------------------------------------------------------

def _host(t):
    """A C-contiguous host copy of ``t``'s array that MPI can send (float16 travels as float32)."""
    a = t._data
    a = a.get() if hasattr(a, "get") else a
    a = np.ascontiguousarray(a)
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _write(t, a):
    """Write ``a`` back into ``t`` in place (bumping its version like any in-place op)."""
    d = t._data
    if isinstance(d, np.ndarray):
        d[...] = a
    else:  # a CUDA array: back onto its device
        from .._device import array_module, device_of_array
        xp = array_module(device_of_array(d))
        with xp.cuda.Device(d.device.id):
            d[...] = xp.asarray(a)
    t._bump_version()


def _mpi_op(op):
    from mpi4py import MPI
    return {"SUM": MPI.SUM, "AVG": MPI.SUM, "PRODUCT": MPI.PROD, "MIN": MPI.MIN, "MAX": MPI.MAX,
            "BAND": MPI.BAND, "BOR": MPI.BOR, "BXOR": MPI.BXOR}[op.name]


def _done(async_op):
    return _Work() if async_op else None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over all processes, in place, so every one holds the result."""
    g = _pg(group)
    if g.size > 1:
        from mpi4py import MPI
        buf = _host(tensor)
        g.comm.Allreduce(MPI.IN_PLACE, buf, op=_mpi_op(op))
        if op == ReduceOp.AVG:
            buf = buf / g.size if buf.dtype.kind in "fcV" else buf // g.size
        _write(tensor, buf)
    return _done(async_op)


def reduce(tensor, dst=0, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` over all processes into the one of rank ``dst``."""
    g = _pg(group)
    dst = group_dst if group_dst is not None else dst
    if g.size > 1:
        from mpi4py import MPI
        buf = _host(tensor)
        if g.rank == dst:
            g.comm.Reduce(MPI.IN_PLACE, buf, op=_mpi_op(op), root=dst)
            if op == ReduceOp.AVG:
                buf = buf / g.size if buf.dtype.kind in "fcV" else buf // g.size
            _write(tensor, buf)
        else:
            g.comm.Reduce(buf, None, op=_mpi_op(op), root=dst)
    return _done(async_op)


def broadcast(tensor, src=0, group=None, async_op=False, group_src=None):
    """Copy rank ``src``'s ``tensor`` into the same tensor of every process."""
    g = _pg(group)
    src = group_src if group_src is not None else src
    if g.size > 1:
        buf = _host(tensor)
        g.comm.Bcast(buf, root=src)
        if g.rank != src:
            _write(tensor, buf)
    return _done(async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fill ``tensor_list[i]`` with rank i's ``tensor`` in every process."""
    g = _pg(group)
    if len(tensor_list) != g.size:
        raise ValueError(f"all_gather expects a list of {g.size} tensors, got {len(tensor_list)}")
    buf = _host(tensor)
    if g.size > 1:
        out = np.empty((g.size,) + buf.shape, buf.dtype)
        g.comm.Allgather(buf, out)
    else:
        out = buf[None]
    for t, a in zip(tensor_list, out):
        _write(t, a)
    return _done(async_op)


def all_gather_object(object_list, obj, group=None):
    """``object_list[i]`` = rank i's ``obj`` (any picklable object)."""
    import pickle
    g = _pg(group)
    objs = g.comm.allgather(obj) if g.size > 1 else [pickle.loads(pickle.dumps(obj))]
    object_list[:] = objs


def broadcast_object_list(object_list, src=0, group=None, device=None, group_src=None):
    """Replace ``object_list``'s items with rank ``src``'s, in every process."""
    g = _pg(group)
    src = group_src if group_src is not None else src
    if g.size > 1:
        object_list[:] = g.comm.bcast(list(object_list), root=src)


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every process has reached this call."""
    g = _pg(group)
    if g.size > 1:
        g.comm.Barrier()
    return _done(async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Rank ``dst`` receives every rank's ``tensor`` in ``gather_list`` (others pass None)."""
    g = _pg(group)
    dst = group_dst if group_dst is not None else (0 if dst is None else dst)
    buf = _host(tensor)
    if g.rank == dst:
        if gather_list is None or len(gather_list) != g.size:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        out = np.empty((g.size,) + buf.shape, buf.dtype)
        if g.size > 1:
            g.comm.Gather(buf, out, root=dst)
        else:
            out[0] = buf
        for t, a in zip(gather_list, out):
            _write(t, a)
    else:
        if gather_list:
            raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
        g.comm.Gather(buf, None, root=dst)
    return _done(async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank ``src`` hands ``scatter_list[i]`` to rank i, which receives it in ``tensor``."""
    g = _pg(group)
    src = group_src if group_src is not None else (0 if src is None else src)
    buf = _host(tensor)
    if g.rank == src:
        if scatter_list is None or len(scatter_list) != g.size:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        send = np.ascontiguousarray(np.stack([_host(t).astype(buf.dtype, copy=False) for t in scatter_list]))
        if g.size > 1:
            g.comm.Scatter(send, buf, root=src)
        else:
            buf = send[0]
    else:
        if scatter_list:
            raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
        g.comm.Scatter(None, buf, root=src)
    _write(tensor, buf)
    return _done(async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """``output_tensor`` = every rank's ``input_tensor`` concatenated (or stacked) along dim 0."""
    g = _pg(group)
    buf = _host(input_tensor)
    out = np.empty((g.size,) + buf.shape, buf.dtype)
    if g.size > 1:
        g.comm.Allgather(buf, out)
    else:
        out[0] = buf
    _write(output_tensor, out.reshape(tuple(output_tensor.shape)))
    return _done(async_op)


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst`` (blocking)."""
    g = _pg(group)
    dst = group_dst if group_dst is not None else dst
    if dst == g.rank:
        raise ValueError("Invalid destination rank: destination rank should not be the same as the rank of "
                         "the current process.")
    g.comm.Send(_host(tensor), dest=dst, tag=tag)


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender's rank."""
    from mpi4py import MPI
    g = _pg(group)
    src = group_src if group_src is not None else src
    buf = _host(tensor)
    status = MPI.Status()
    g.comm.Recv(buf, source=MPI.ANY_SOURCE if src is None else src, tag=tag, status=status)
    _write(tensor, buf)
    return status.Get_source()
