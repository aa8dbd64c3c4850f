"""The numba kernels of :mod:`retrograd.ops._accel` (imported only where numba is installed).

Module-level functions, so that numba's on-disk cache (``cache=True``) finds them again in
the next process instead of compiling anew. Each takes contiguous 1-D arrays of one dtype
(float32 or float64) and an output array of that dtype; constants come in already cast to
that dtype, so every operation is the IEEE operation the NumPy path does, in its precision.
"""
import math

import numba
import numpy as np
from numba import types
from numba.extending import overload

from .unary import _ERF_P, _ERF_Q

__all__ = ["erf", "erfc", "gelu", "gelu_backward"]


P0, P1, P2, P3, P4, P5, P6 = _ERF_P
Q0, Q1, Q2, Q3, Q4 = _ERF_Q


def _erf(t):
    """erf in t's precision (float32: the NumPy path's rational function, bit for bit)."""


def _erfc(t):
    """erfc in t's precision: libm's double erfc, rounded once for float32."""


def _erf_f32(t):
    # unary._erf_f32, operation for operation (same IEEE ops in the same order, no contraction:
    # the same bits); branch-free, so that LLVM vectorises it, where libm's scalar erf cannot be.
    a = np.float64(t)
    a = 4.0 if a > 4.0 else a       # NaN passes both, as np.clip lets it through
    a = -4.0 if a < -4.0 else a
    x2 = a * a
    p = x2 * P0 + P1
    p = p * x2 + P2
    p = p * x2 + P3
    p = p * x2 + P4
    p = p * x2 + P5
    p = p * x2 + P6
    q = x2 * Q0 + Q1
    q = q * x2 + Q2
    q = q * x2 + Q3
    q = q * x2 + Q4
    return np.float32(p / q * a)


@overload(_erf, inline="always")
def _erf_typer(t):
    if isinstance(t, types.Float) and t.bitwidth == 32:
        return _erf_f32
    if isinstance(t, types.Float):
        return lambda t: math.erf(t)
    return None


@overload(_erfc, inline="always")
def _erfc_typer(t):
    if isinstance(t, types.Float) and t.bitwidth == 32:
        return lambda t: np.float32(math.erfc(np.float64(t)))
    if isinstance(t, types.Float):
        return lambda t: math.erfc(t)
    return None

# nogil: NumPy-style release of the GIL; no parallel=True, the BLAS thread policy
# (retrograd._threads) owns the cores.
_jit = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)


@_jit
def erf(x, out):
    for i in range(x.shape[0]):
        out[i] = _erf(x[i])


@_jit
def erfc(x, out):
    for i in range(x.shape[0]):
        out[i] = _erfc(x[i])


@_jit
def gelu(x, out, half, one, rsqrt2):
    # x * 0.5 * (1 + erf(x / sqrt 2)), associated as the NumPy path and torch's kernel do
    for i in range(x.shape[0]):
        xi = x[i]
        out[i] = xi * half * (one + _erf(xi * rsqrt2))


@_jit
def gelu_backward(g, x, e, out, half, one, rsqrt2, inv_sqrt_2pi):
    # g * (cdf + x * pdf), cdf = 0.5 * (1 + erf(x / sqrt 2)), pdf = e / sqrt(2 pi) with
    # e = exp(-x*x/2) from NumPy (its SIMD exp; libm's scalar one would cost more than the rest)
    for i in range(x.shape[0]):
        xi = x[i]
        cdf = half * (one + _erf(xi * rsqrt2))
        out[i] = g[i] * (cdf + xi * (inv_sqrt_2pi * e[i]))
