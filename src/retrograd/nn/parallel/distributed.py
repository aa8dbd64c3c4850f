"""DistributedDataParallel over ``retrograd.distributed`` (one process per device, started by mpirun)."""
from contextlib import contextmanager

import numpy as np

from ..modules.module import Module
from ... import distributed as dist


class DistributedDataParallel(Module):
    """Data parallelism across processes, with PyTorch's API.

    At construction the parameters and buffers of rank 0 are copied to every process. Each
    backward, once the last expected parameter's gradient has been accumulated (a
    post-accumulate-grad hook on every parameter counts them), the gradients are averaged
    over all processes in one all-reduce per dtype (one flat bucket each). Inside
    :meth:`no_sync` gradients only accumulate locally; the first backward outside it
    averages what has accumulated. ``broadcast_buffers`` copies rank 0's buffers (e.g.
    BatchNorm's running statistics) to all processes at each forward.
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
        self.require_backward_grad_sync = True
        self.process_group = g
        params = [p for p in module.parameters() if p.requires_grad]
        object.__setattr__(self, "_ddp_params", params)
        object.__setattr__(self, "_ddp_expected", set(map(id, params)))
        object.__setattr__(self, "_ddp_ready", set())
        for t in list(module.parameters()) + list(module.buffers()):
            dist.broadcast(t, 0, group=g)
        for p in params:
            p.register_post_accumulate_grad_hook(self._grad_ready)

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
        if self.broadcast_buffers and g.size > 1:
            for b in self.module.buffers():
                dist.broadcast(b, 0, group=g)
        if self._ddp_ready:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
                "participate in calculating loss.")
        out = self.module(*inputs, **kwargs)
        if self.find_unused_parameters:
            object.__setattr__(self, "_ddp_expected", _reached_leaves(out) & set(map(id, self._ddp_params)))
        return out

    def _grad_ready(self, p):
        if not self.require_backward_grad_sync:
            return
        ready = self._ddp_ready
        ready.add(id(p))
        if len(ready) == len(self._ddp_expected) and ready >= self._ddp_expected:
            ready.clear()
            self._all_reduce_grads([q for q in self._ddp_params if id(q) in self._ddp_expected])

    def _all_reduce_grads(self, params):
        g = self.process_group
        if g.size == 1:
            return
        by_dtype = {}
        for p in params:
            if p.grad is not None:
                by_dtype.setdefault(p.grad.dtype, []).append(p.grad)
        for grads in by_dtype.values():
            flat = np.concatenate([_host(t).reshape(-1) for t in grads])
            bucket = _Bucket(flat)
            dist.all_reduce(bucket, dist.ReduceOp.AVG, group=g)
            off = 0
            for t in grads:
                n = t.numel()
                dist._write(t, bucket._data[off:off + n].reshape(t.shape))
                off += n


class _Bucket:
    """A flat host array standing in for a tensor in a collective."""

    def __init__(self, a):
        self._data = a

    def _bump_version(self):
        pass


def _host(t):
    d = t._data
    return d.get() if hasattr(d, "get") else np.asarray(d)


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
