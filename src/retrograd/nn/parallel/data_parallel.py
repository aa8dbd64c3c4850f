"""DataParallel: PyTorch's wrapper; on the CPU or one GPU it simply calls the module."""
from ..modules.module import Module


class DataParallel(Module):
    """Wraps ``module`` as ``self.module`` (state_dict keys gain the ``module.`` prefix, as in PyTorch).

    retrograd runs one device per process: the batch is not split across GPUs here; for several
    devices or machines use :class:`DistributedDataParallel` with one process each (``mpirun``).
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
