"""DistributedDataParallel over ``retrograd.distributed`` (one process per device, started by mpirun).

Gradients travel in buckets, as in PyTorch: parameters are taken in reverse registration order
(roughly the order backward produces their gradients), grouped by dtype and device, and cut
into buckets of at most ``bucket_cap_mb`` (the first one smaller, so communication starts
early). When the last gradient of a bucket has been accumulated, the bucket's non-blocking
all-reduce (MPI ``Iallreduce``) starts while backward goes on computing the gradients of the
layers below; buckets start strictly in index order so that every process issues the same
sequence of collectives. Open MPI progresses a non-blocking collective only inside MPI calls,
so each gradient hook also tests the pending requests. When the last bucket has started, the
reducer waits for all of them, averages, and writes the results back into ``.grad``.
"""
import time
from contextlib import contextmanager

import numpy as np

from ..modules.module import Module
from ... import distributed as dist
from ...autograd import is_grad_enabled

_FIRST_BUCKET_BYTES = 1024 * 1024           # PyTorch's first-bucket size (1 MiB)
_DEFAULT_BUCKET_CAP_MB = 25

_UNFINISHED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This error "
    "indicates that your module has parameters that were not used in producing loss. You can enable "
    "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
    "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
    "participate in calculating loss.")


class DistributedDataParallel(Module):
    """Data parallelism across processes, with PyTorch's API.

    At construction rank 0's parameters and buffers are copied to every process. During
    backward each bucket of gradients is averaged over all processes by a non-blocking
    all-reduce that starts as soon as the bucket is complete, overlapping the rest of
    backward. Inside :meth:`no_sync` gradients only accumulate locally; the first backward
    outside it averages what has accumulated. ``find_unused_parameters`` lets a forward skip
    parameters (their share is zero; a parameter no process used keeps ``grad=None``);
    ``static_graph`` detects the unused ones once, on the first iteration;
    ``gradient_as_bucket_view`` makes each ``.grad`` a view into its bucket (no copies back);
    ``broadcast_buffers`` copies rank 0's buffers (e.g. BatchNorm statistics) at each forward.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        super().__init__()
        g = dist._pg(process_group)
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.process_group = g
        cap = _DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap * 1024 * 1024)
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        for t in list(module.parameters()) + list(module.buffers()):
            dist.broadcast(t, 0, group=g)
        object.__setattr__(self, "reducer", _Reducer(params, g, self.bucket_bytes_cap, gradient_as_bucket_view))
        for p in params:
            p.register_post_accumulate_grad_hook(self.reducer.grad_ready)

    @contextmanager
    def no_sync(self):
        """Gradients accumulate locally inside; the next backward outside averages them."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def forward(self, *inputs, **kwargs):
        g = self.process_group
        red = self.reducer
        if red.in_progress():
            raise RuntimeError(_UNFINISHED)
        if self.broadcast_buffers and g.size > 1:
            for b in self.module.buffers():
                dist.broadcast(b, 0, group=g)
        red.t_forward = time.perf_counter()
        out = self.module(*inputs, **kwargs)
        red.t_forward = time.perf_counter() - red.t_forward
        if not is_grad_enabled():
            return out
        if not self.require_backward_grad_sync:
            red.enabled = False
            return out
        red.enabled = True
        unused = None
        if self.find_unused_parameters or self.static_graph:
            if self.static_graph and red.static_unused is not None:
                unused = red.static_unused
            else:
                reached = _reached_leaves(out)
                unused = {i for i, p in enumerate(red.params) if id(p) not in reached}
                if self.static_graph:
                    red.static_unused = unused
        red.prepare(unused if (self.find_unused_parameters or self.static_graph) else None)
        return out

    def _get_ddp_logging_data(self):
        """Bucket sizes and the last synchronised iteration's timings (ns), under PyTorch's key names."""
        return self.reducer.logging_data()


class _Bucket:
    __slots__ = ("index", "params", "offsets", "buf", "pending", "request", "t_start", "dtype", "nbytes")

    def __init__(self, index, params, dtype):
        self.index = index
        self.params = params                      # indices into the reducer's params
        self.dtype = dtype
        self.offsets = []
        self.buf = None
        self.pending = 0
        self.request = None
        self.t_start = 0.0
        self.nbytes = 0


class _Reducer:
    """The bucketed, overlapping gradient all-reduce behind DistributedDataParallel."""

    def __init__(self, params, group, cap_bytes, as_view):
        self.params = params
        self.group = group
        self.as_view = as_view
        self.where = {}                 # id(param) -> (bucket, offset, size)
        self.buckets = _assign_buckets(params, cap_bytes)
        for b in self.buckets:
            off = 0
            for i in b.params:
                n = params[i].numel()
                b.offsets.append(off)
                self.where[id(params[i])] = (b, off, n)
                off += n
            # MPI has no 16-bit float type: half-precision buckets travel as float32
            wire = np.float32 if np.dtype(b.dtype).itemsize < 4 and np.dtype(b.dtype).kind in "fV" else b.dtype
            b.buf = np.zeros(off, dtype=wire)
        self.enabled = True
        self.active = False
        self.hooks_fired = False
        self.next_launch = 0
        self.ready_buckets = set()
        self.locally_used = None
        self.static_unused = None
        self.t_forward = 0.0
        self.t_first_grad = self.t_last_grad = self.t_done = None
        self.stats = {}

    # -- an iteration ---------------------------------------------------------------------

    def in_progress(self):
        """True when a backward has started reducing and not finished (a parameter went unused)."""
        return self.active and self.hooks_fired

    def prepare(self, unused):
        """Arm the buckets for the next backward; ``unused`` (indices) count as ready with zeros."""
        self.active = True
        self.hooks_fired = False
        self.next_launch = 0
        self.ready_buckets = set()
        self.t_first_grad = self.t_last_grad = None
        for b in self.buckets:
            b.pending = len(b.params)
            b.request = None
        self.locally_used = None
        if unused is not None:
            self.locally_used = np.ones(len(self.params), dtype=np.int32)
            for i in unused:
                self.locally_used[i] = 0
                b, off, n = self.where[id(self.params[i])]
                b.buf[off:off + n] = 0
                self._mark(b)
            self._launch_ready()

    def grad_ready(self, p):
        """Post-accumulate-grad hook: copy the gradient into its bucket; start complete buckets."""
        if not (self.active and self.enabled):
            return
        now = time.perf_counter()
        if self.t_first_grad is None:
            self.t_first_grad = now
        self.t_last_grad = now
        self.hooks_fired = True
        b, off, n = self.where[id(p)]
        if self.group.size > 1:
            self._fill(p, b, off, n)
        self._mark(b)
        self._launch_ready()
        if self.next_launch == len(self.buckets):
            self._finish()
        elif self.group.size > 1:
            self._progress()

    def _fill(self, p, b, off, n):
        g = p.grad
        view = b.buf[off:off + n]
        d = g._data
        if hasattr(d, "get"):
            d = d.get()
        if not (isinstance(d, np.ndarray) and np.shares_memory(d, view)):
            view[...] = np.asarray(d).reshape(-1)
            if self.as_view and b.buf.dtype == d.dtype and isinstance(g._data, np.ndarray):
                # .grad becomes a view into the bucket: the averaged values land there directly
                g._data = view.reshape(d.shape)

    def _mark(self, b):
        b.pending -= 1
        if b.pending == 0:
            self.ready_buckets.add(b.index)

    def _launch_ready(self):
        """Start the complete buckets, in index order (every process issues the same sequence)."""
        while self.next_launch in self.ready_buckets:
            b = self.buckets[self.next_launch]
            self.ready_buckets.discard(b.index)
            b.t_start = time.perf_counter()
            if self.group.size > 1:
                from mpi4py import MPI
                b.request = self.group.comm.Iallreduce(MPI.IN_PLACE, b.buf, op=MPI.SUM)
            self.next_launch += 1

    def _progress(self):
        for b in self.buckets[:self.next_launch]:
            if b.request is not None:
                b.request.Test()

    def _finish(self):
        """Wait for every bucket, average, write back; record the iteration's timings."""
        g = self.group
        self.active = False
        t_end_backward = self.t_last_grad if self.t_last_grad is not None else time.perf_counter()
        if g.size == 1:
            return
        from mpi4py import MPI
        used = None
        if self.locally_used is not None:
            used = self.locally_used.copy()
            g.comm.Allreduce(MPI.IN_PLACE, used, op=MPI.MAX)
        MPI.Request.Waitall([b.request for b in self.buckets])
        t_done = time.perf_counter()
        for b in self.buckets:
            b.buf /= g.size
            for i, off in zip(b.params, b.offsets):
                p = self.params[i]
                n = p.numel()
                view = b.buf[off:off + n]
                if used is not None and not used[i]:
                    continue                        # no process used it: .grad stays as it is
                grad = p.grad
                if grad is None:                    # used elsewhere, not here: receives the average
                    from ..._tensor import Tensor
                    p.grad = Tensor._make(_to_device(view.reshape(tuple(p.shape)).astype(p._data.dtype), p))
                    continue
                d = grad._data
                if isinstance(d, np.ndarray) and np.shares_memory(d, view):
                    grad._bump_version()
                else:
                    dist._write(grad, view.reshape(d.shape))
        first = min(b.t_start for b in self.buckets)
        t0 = self.t_first_grad if self.t_first_grad is not None else first
        ns = 1e9
        self.stats = {
            "avg_forward_compute_time": int(self.t_forward * ns),
            "avg_backward_compute_time": int((t_end_backward - t0) * ns),
            "avg_backward_comm_time": int((t_done - first) * ns),
            "avg_backward_compute_comm_overlap_time": int(max(0.0, t_end_backward - first) * ns),
            # what backward's end still waited for: the communication that did not overlap
            "avg_backward_comm_exposed_time": int(max(0.0, t_done - t_end_backward) * ns),
            "bucket_start_times": [b.t_start for b in self.buckets],
            "backward_end_time": t_end_backward,
        }

    def logging_data(self):
        d = {"world_size": self.group.size, "num_buckets": len(self.buckets),
             "bucket_sizes": [int(b.buf.nbytes) for b in self.buckets],
             "gradient_as_bucket_view": int(self.as_view)}
        d.update(self.stats)
        return d


def _assign_buckets(params, cap_bytes):
    """Buckets in reverse registration order, one dtype/device each; a dtype's first bucket is
    capped at 1 MiB so that its all-reduce starts early in backward."""
    buckets, open_, made = [], {}, {}
    for i in reversed(range(len(params))):
        p = params[i]
        key = (p._data.dtype, str(p.device))
        size = p.numel() * p._data.dtype.itemsize
        b = open_.get(key)
        limit = min(_FIRST_BUCKET_BYTES, cap_bytes) if made.get(key, 0) == 1 else cap_bytes
        if b is not None and b.nbytes + size > limit:
            b = None
        if b is None:
            b = _Bucket(len(buckets), [], p._data.dtype)
            buckets.append(b)
            open_[key] = b
            made[key] = made.get(key, 0) + 1
        b.params.append(i)
        b.nbytes += size
    return buckets


def _to_device(a, like):
    d = like._data
    if isinstance(d, np.ndarray):
        return a
    from ..._device import array_module, device_of_array
    return array_module(device_of_array(d)).asarray(a)


def _reached_leaves(out):
    """ids of the leaf tensors whose gradients a backward from ``out`` would reach."""
    roots = []
    stack = [out]
    while stack:  # outputs may be nested tuples, lists or dicts
        o = stack.pop()
        if isinstance(o, (tuple, list)):
            stack.extend(o)
        elif isinstance(o, dict):
            stack.extend(o.values())
        elif getattr(o, "grad_fn", None) is not None:
            roots.append(o.grad_fn)
    seen, leaves = set(), set()
    while roots:
        fn = roots.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        var = getattr(fn, "variable", None)
        if var is not None:
            leaves.add(id(var))
        roots.extend(f for f, _ in fn.next_functions)
    return leaves
