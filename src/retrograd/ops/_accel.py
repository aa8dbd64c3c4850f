"""Optional compiled kernels (numba) for the special functions NumPy has no ufunc for.

The NumPy path's float32 erf and exact GELU are a dozen or two NumPy passes each (SciPy's
float64 erf a per-element routine); these kernels do each in one pass:

- float32 erf, the Gaussian's exp and exact GELU forward and backward: unary._erf_f32 and
  unary._exp_neg_f32 (erf within 1.32 ulp of the correctly rounded value on every float32,
  torch's kernel within 2; exp within 1.2) in float32 arithmetic, operation for operation
  the NumPy path's (no fused multiply-adds: the same bits), branch-free so that LLVM
  vectorises them, over 512-bit vectors (see _accel_kernels.wide_vectors). GELU's pdf
  exp(-x*x/2) also serves as its erf's exp(-z*z): one exp per element.
- float64 erf/erfc: libm's ``erf``/``erfc``, as torch's scalar kernels use (erf within 1 ulp,
  SciPy's up to 2; erfc within 2, SciPy's ~500 in its tail); float32 erfc: libm's double erfc
  rounded once, as SciPy does (the same bits). float64 GELU takes its exp from NumPy.

The convolution kernels (stride-1 depthwise correlation and weight gradient; the col2im of
transposed convolution's column path) work one (sample, channel) plane at a time in cache
where the NumPy path makes several passes over whole arrays (see ops.conv; ordinary 2-D
convolutions use ops._accel_conv's sample-blocked kernels).

They are used only when numba is installed (``pip install retrograd[accel]``) and the array
has at least :data:`MIN_SIZE` elements; the NumPy path stays the reference:
``RETROGRAD_NO_NUMBA=1`` turns these off.
"""
import math
import os

import numpy as np

# Measured (single thread, after numba is loaded): a compiled call beats or ties the NumPy/SciPy
# path at every size (float32 0-d erf 1.1 us against 5.9; float64 0-d 2.3 against 1.8, a tie
# from ~64 elements). The bound keeps 0-d and tiny tensors on the ufuncs, so a program of small
# tensors never pays numba's import and first call (~2-4 s, once per process).
MIN_SIZE = 64

_KERNELS = []
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def load(cache, name):
    """The kernel module ``retrograd.ops.<name>``, compiled (or loaded from numba's cache) on
    first use and kept in the list ``cache``, or None without numba or with
    ``RETROGRAD_NO_NUMBA=1`` (each kernel family keeps its own cache, which tests replace)."""
    if not cache:
        k = None
        if not os.environ.get("RETROGRAD_NO_NUMBA"):
            import importlib
            try:
                k = importlib.import_module("retrograd.ops." + name)
            except ImportError:
                k = None
        cache.append(k)
    return cache[0]


def kernels():
    """The kernel module, compiled (or loaded from numba's cache) on first use, or None."""
    return load(_KERNELS, "_accel_kernels")


def usable(*arrays):
    """The kernel module when it should run on these arrays (same float32/float64 dtype, same
    shape, at least MIN_SIZE elements), else None."""
    a = arrays[0]
    if a.size < MIN_SIZE or a.dtype not in _FLOATS or type(a) is not np.ndarray:   # (host kernels)
        return None
    for b in arrays[1:]:
        if b.dtype != a.dtype or b.shape != a.shape:
            return None
    return kernels()


def _flat(a):
    return np.ascontiguousarray(a).reshape(-1)


def erf(k, x):
    out = np.empty(x.shape, x.dtype)
    k.erf(_flat(x), out.reshape(-1))
    return out


def erfc(k, x):
    out = np.empty(x.shape, x.dtype)
    k.erfc(_flat(x), out.reshape(-1))
    return out


_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def gelu(k, x):
    t = x.dtype.type
    out = np.empty(x.shape, x.dtype)
    if t is np.float32:
        k.gelu_f32(_flat(x), out.reshape(-1), t(0.5), t(1.0), t(_SQRT1_2), t(-0.5))
    else:
        k.gelu(_flat(x), out.reshape(-1), t(0.5), t(1.0), t(_SQRT1_2))
    return out


_CHUNK = 1 << 15


def pdf_chunks(x):
    """``(start, chunk, exp(chunk * chunk * -0.5))`` over cache-sized chunks of the flat ``x``:
    the Gaussian pdf's exp from NumPy (its SIMD exp and its bits; libm's scalar exp would cost
    more than the rest of a GELU backward), into one reused buffer, which is never a kernel's
    output (the kernels would not vectorise over aliased arrays)."""
    t = x.dtype.type
    buf = np.empty(min(x.size, _CHUNK), x.dtype)
    for i in range(0, x.size, _CHUNK):
        xs = x[i:i + _CHUNK]
        e = buf[:xs.size]
        np.multiply(xs, xs, out=e)
        e *= t(-0.5)
        np.exp(e, out=e)
        yield i, xs, e


def gelu_backward(k, g, x):
    t = x.dtype.type
    shape = x.shape
    x, g = _flat(x), _flat(g)
    out = np.empty(x.size, x.dtype)
    half, one, rsqrt2, c = t(0.5), t(1.0), t(_SQRT1_2), t(_INV_SQRT_2PI)
    if t is np.float32:     # (its exp in the kernel: one pass)
        k.gelu_backward_f32(g, x, out, half, one, rsqrt2, c, t(-0.5))
        return out.reshape(shape)
    for i, xs, e in pdf_chunks(x):
        k.gelu_backward(g[i:i + _CHUNK], xs, e, out[i:i + _CHUNK], half, one, rsqrt2, c)
    return out.reshape(shape)


def for_arrays(*arrays):
    """The kernel module when its array kernels (depthwise convolution, col2im) should run on
    these arrays (one float32/float64 dtype, at least MIN_SIZE elements in the first), else None."""
    a = arrays[0]
    if a.size < MIN_SIZE or a.dtype not in _FLOATS or any(type(b) is not np.ndarray for b in arrays) \
            or any(b.dtype != a.dtype for b in arrays[1:]):
        return None      # (not for meta tensors' arrays, nor mixed dtypes)
    return kernels()


def add_row(k, r, b):
    """r += b for a C-contiguous 2-D ``r`` and 1-D ``b`` of its dtype and row length (in place)."""
    k.add_row(r, np.ascontiguousarray(b))


def sum_rows(k, g):
    """g.sum(0) of a C-contiguous 2-D float ``g`` with at least one row (NumPy's bits)."""
    out = np.empty(g.shape[1], g.dtype)
    k.sum_rows(g, out, g.dtype.type(0))
    return out
