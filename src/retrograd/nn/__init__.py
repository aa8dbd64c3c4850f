"""retrograd.nn: modules, layers, losses, initialisation (PyTorch's torch.nn)."""
from .parameter import Parameter, Buffer, UninitializedParameter, UninitializedBuffer  # noqa: F401
from . import modules as _modules
from .modules import Module  # noqa: F401
from . import functional, init, utils  # noqa: F401
from . import parallel  # noqa: F401
from .parallel import DataParallel  # noqa: F401

# Every layer class defined under nn/modules is nn.<Name>.
globals().update({k: v for k, v in vars(_modules).items() if isinstance(v, type) and not k.startswith("_")})
