"""Optional compiled kernels (numba) for the special functions NumPy has no ufunc for.

``scipy.special.erf`` and a float32 rational function in NumPy take a dozen passes over
memory; exact GELU forward and backward take a dozen more around them. These kernels do
each in one pass: erf/erfc from libm's double ``erf``/``erfc`` (float32: computed in double
and rounded once, within 1 ulp of the exact value, as torch's kernels are), GELU forward
and backward as the NumPy path associates them. They are used only when numba is installed
(``pip install retrograd[accel]``) and the array is large enough that the call pays
(:data:`MIN_SIZE`); the NumPy path stays the reference: ``RETROGRAD_NO_NUMBA=1`` turns
these off.
"""
import math
import os

import numpy as np

# Below this many elements the NumPy/SciPy ufuncs win or tie: a compiled call costs a few
# microseconds of dispatch and an empty() (measured crossover ~100-300 elements), and a
# small tensor must never pay numba's import.
MIN_SIZE = 64

_KERNELS = []
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def kernels():
    """The kernel module, compiled (or loaded from numba's cache) on first use, or None."""
    if not _KERNELS:
        k = None
        if not os.environ.get("RETROGRAD_NO_NUMBA"):
            try:
                from . import _accel_kernels as k
            except ImportError:
                k = None
        _KERNELS.append(k)
    return _KERNELS[0]


def usable(*arrays):
    """The kernel module when it should run on these arrays (same float32/float64 dtype, same
    shape, at least MIN_SIZE elements), else None."""
    a = arrays[0]
    if a.size < MIN_SIZE or a.dtype not in _FLOATS:
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
    k.gelu(_flat(x), out.reshape(-1), t(0.5), t(1.0), t(_SQRT1_2))
    return out


_CHUNK = 1 << 15


def gelu_backward(k, g, x):
    t = x.dtype.type
    shape = x.shape
    x, g = _flat(x), _flat(g)
    out = np.empty(x.size, x.dtype)
    # pdf's exp(x * x * -0.5) from NumPy (its SIMD exp and its bits; libm's scalar exp would cost
    # more than the rest), a cache-sized chunk at a time into one reused buffer, which must not
    # be the output (the kernel would not vectorise over aliased arrays)
    buf = np.empty(min(x.size, _CHUNK), x.dtype)
    half, one, rsqrt2, c = t(0.5), t(1.0), t(_SQRT1_2), t(_INV_SQRT_2PI)
    for i in range(0, x.size, _CHUNK):
        xs = x[i:i + _CHUNK]
        e = buf[:xs.size]
        np.multiply(xs, xs, out=e)
        e *= t(-0.5)
        np.exp(e, out=e)
        k.gelu_backward(g[i:i + _CHUNK], xs, e, out[i:i + _CHUNK], half, one, rsqrt2, c)
    return out.reshape(shape)
