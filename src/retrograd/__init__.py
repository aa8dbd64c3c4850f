"""retrograd: define-by-run autograd with PyTorch's API, on NumPy (and CuPy).

``import retrograd as torch`` and PyTorch programs run unchanged.
"""
from . import _dtype
from ._dtype import (dtype, float16, half, float32, float64, double, bfloat16, int8, int16, short,  # noqa: F401
                     int32, int64, long, uint8, complex64, complex128, cfloat, cdouble,
                     get_default_dtype, set_default_dtype, promote_types, can_cast, finfo, iinfo)
from ._device import device  # noqa: F401
from ._tensor import Tensor, Size  # noqa: F401
from ._tensor_str import set_printoptions  # noqa: F401
from ._creation import *  # noqa: F401,F403
from .ops import *  # noqa: F401,F403
from .ops._base import typename  # noqa: F401
from . import _tensor_methods  # noqa: F401
from . import autograd  # noqa: F401
from . import linalg  # noqa: F401
from . import nn  # noqa: F401
from . import optim  # noqa: F401
from . import sparse  # noqa: F401
from ._layout import layout, strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc  # noqa: F401
from ._legacy_types import (FloatTensor, DoubleTensor, HalfTensor, LongTensor, IntTensor,  # noqa: F401
                            ShortTensor, CharTensor, ByteTensor, BoolTensor)
from .sparse import (sparse_coo_tensor, sparse_csr_tensor, sparse_csc_tensor,  # noqa: F401
                     sparse_compressed_tensor, spmm)
from . import viz  # noqa: F401  (light: the drawing code loads on first use)
from .autograd import (no_grad, enable_grad, set_grad_enabled, is_grad_enabled,  # noqa: F401
                       inference_mode, is_inference_mode_enabled)
from . import utils  # noqa: F401
from .serialization import save, load  # noqa: F401
from ._threads import set_num_threads, get_num_threads, set_num_interop_threads, get_num_interop_threads  # noqa: F401

# Light modules (CuPy, mpi4py and threadpoolctl load only inside their functions).
from . import amp, cuda, backends, distributed, testing  # noqa: F401,E402
from . import func  # noqa: F401,E402
from .amp import autocast, is_autocast_enabled, get_autocast_dtype, set_autocast_dtype  # noqa: F401,E402

bool = _dtype.bool_
float = _dtype.float32
int = _dtype.int32

__version__ = "0.1.0"


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
