"""DataParallel: PyTorch's wrapper; on the CPU it simply calls the module."""
from ..modules.module import Module
from ..._tensor import Tensor


class DataParallel(Module):
    """Wraps ``module`` as ``self.module`` (state_dict keys gain the ``module.`` prefix, as in PyTorch).

    Without CUDA it calls the module as it is. With CUDA, inputs are moved to
    ``device_ids[0]`` and outputs to ``output_device``, and the module runs there: retrograd
    does not split a batch across several GPUs in one process; for that (and for several
    machines) use :class:`DistributedDataParallel`, one process per device under ``mpirun``.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        from ... import cuda
        self.module = module
        self.dim = dim
        if not cuda.is_available():
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        self.device_ids = [d if isinstance(d, int) else cuda._index(d) for d in device_ids]
        if output_device is None:
            output_device = self.device_ids[0]
        if not isinstance(output_device, int):
            output_device = -1 if str(output_device) == "cpu" else cuda._index(output_device)
        self.output_device = output_device
        src = f"cuda:{self.device_ids[0]}"
        for t in list(module.parameters()) + list(module.buffers()):
            if t.device != src:
                raise RuntimeError(f"module must have its parameters and buffers on device {src} "
                                   f"(device_ids[0]) but found one of them on device: {t.device}")

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        src = f"cuda:{self.device_ids[0]}"
        out = self.module(*_move(inputs, src), **_move(kwargs, src))
        return _move(out, f"cuda:{self.output_device}" if self.output_device >= 0 else "cpu")


def _move(obj, dev):
    if isinstance(obj, Tensor):
        return obj.to(dev)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_move(o, dev) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_move(o, dev) for o in obj)
    if isinstance(obj, dict):
        return {k: _move(v, dev) for k, v in obj.items()}
    return obj
