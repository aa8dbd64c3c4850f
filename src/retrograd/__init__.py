"""retrograd: define-by-run autograd with PyTorch's API, on NumPy (and CuPy).

``import retrograd as torch`` and PyTorch programs run unchanged.
"""
import math as _math
import warnings as _warnings

import numpy as _np

# PyTorch's kernels never warn about floating-point exceptions (log(0) is -inf, 0/0 nan, an
# overflowing exp inf); NumPy's warn by default. NumPy reads its error mode (a context
# variable) on every ufunc call, so it is set once here: an np.errstate around each op would
# cost ~1.5 us, half of a 0-d add. It applies to the importing thread's context (new threads
# start from NumPy's default).
_np.seterr(all="ignore")

from . import _alloc  # noqa: E402
_alloc.tune()      # glibc's mmap / trim thresholds for steps that make and free large arrays

from . import _dtype  # noqa: E402
from ._dtype import (dtype, float16, half, float32, float64, double, bfloat16, int8, int16, short,  # noqa: F401
                     int32, int64, long, uint8, complex64, complex128, cfloat, cdouble,
                     get_default_dtype, set_default_dtype, promote_types, can_cast, finfo, iinfo)
from ._dtype import (uint16, uint32, uint64, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz,  # noqa: F401,E402
                     float8_e5m2fnuz, float8_e8m0fnu, complex32, chalf)
from ._device import device, set_default_device, get_default_device  # noqa: F401
from ._tensor import Tensor, Size  # noqa: F401
from ._tensor_str import set_printoptions  # noqa: F401
from ._creation import *  # noqa: F401,F403
from .ops import *  # noqa: F401,F403
from .ops._base import typename  # noqa: F401
from . import _tensor_methods  # noqa: F401
from . import autograd  # noqa: F401
from . import linalg  # noqa: F401
from . import fft  # noqa: F401
from . import special  # noqa: F401
from . import nn  # noqa: F401
from . import optim  # noqa: F401
from . import sparse  # noqa: F401
from ._layout import layout, strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc  # noqa: F401
from .sparse import (sparse_coo_tensor, sparse_csr_tensor, sparse_csc_tensor,  # noqa: F401
                     sparse_compressed_tensor, spmm)
from . import viz  # noqa: F401  (light: the drawing code loads on first use)
from .autograd import (no_grad, enable_grad, set_grad_enabled, is_grad_enabled,  # noqa: F401
                       inference_mode, is_inference_mode_enabled)
from . import utils  # noqa: F401
from .serialization import save, load  # noqa: F401
from ._threads import set_num_threads, get_num_threads, set_num_interop_threads, get_num_interop_threads  # noqa: F401

# Light modules (CuPy, mpi4py and threadpoolctl load only inside their functions).
from . import amp, cpu, cuda, backends, distributed, testing  # noqa: F401,E402
from . import func  # noqa: F401,E402
from .amp import autocast, is_autocast_enabled, get_autocast_dtype, set_autocast_dtype  # noqa: F401,E402
from .amp import GradScaler  # noqa: F401,E402
from .func import vmap  # noqa: F401,E402


class OutOfMemoryError(RuntimeError):
    """An allocation on a device failed (``torch.OutOfMemoryError``; ``torch.cuda.OutOfMemoryError``)."""


def poisson(input, generator=None):
    """Samples from Poisson distributions with rates ``input`` (``torch.poisson``)."""
    from .distributions._ops import poisson as _poisson
    return _poisson(input, generator)


def binomial(count, prob, generator=None):
    """Samples from Binomial(count, prob) (``torch.binomial``)."""
    from .distributions._ops import binomial as _binomial
    return _binomial(count, prob, generator)
from ._global_state import *  # noqa: F401,F403,E402

from ._legacy import LEGACY_TYPES as _LEGACY_TYPES, tensortype  # noqa: E402,F401
from ._compile_notice import notice as _notice_once  # noqa: E402
from . import jit, compiler, version  # noqa: F401,E402  (small: nothing heavy behind them)

globals().update(_LEGACY_TYPES)     # FloatTensor, LongTensor, ... (PyTorch's legacy constructors)
from ._storage import UntypedStorage, TypedStorage, LEGACY_STORAGES as _LEGACY_STORAGES  # noqa: E402,F401
globals().update(_LEGACY_STORAGES)  # FloatStorage, LongStorage, ...

bool = _dtype.bool_
float = _dtype.float32
int = _dtype.int32

# torch's numeric constants (Python floats, as torch's)
e, pi, inf, nan = _math.e, _math.pi, _math.inf, _math.nan
newaxis = None

__version__ = version.retrograd


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None, options=None, name=None,
            disable=False, **kwargs):
    """Returns ``model`` unchanged (or, without it, a decorator that does): retrograd runs
    eagerly, so there is nothing to compile. A notice says so once; the common guard
    ``if hasattr(torch, "compile"): model = torch.compile(model)`` keeps working."""
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if not disable:
        _notice_once("torch.compile")
    return model


_MATMUL_PRECISION = ["highest"]


def set_float32_matmul_precision(precision):
    """Accepted and remembered ('highest', 'high', 'medium'): retrograd's float32 matmul is
    always full precision (NumPy/CuPy), which is what 'highest' asks for."""
    if precision not in ("highest", "high", "medium"):
        _warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _MATMUL_PRECISION[0] = precision


def get_float32_matmul_precision():
    """What ``set_float32_matmul_precision`` last set ('highest' at first)."""
    return _MATMUL_PRECISION[0]


def is_tensor(obj):
    """True if ``obj`` is a retrograd Tensor."""
    return isinstance(obj, Tensor)


def numel(input):
    """Number of elements of ``input``."""
    return input.numel()


def is_floating_point(input):
    return input.is_floating_point()


def is_complex(input):
    return input.is_complex()


_LAZY_SUBMODULES = ("distributions", "vision", "playground", "multiprocessing", "random")


def __getattr__(name):
    # Heavier subpackages load on first use, keeping ``import retrograd`` fast.
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
