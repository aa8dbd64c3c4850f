"""The numba kernels of the serial samplers (imported only where numba is installed):
``exponential_``, ``cauchy_``, ``geometric_`` and multinomial's exponential keys.

PyTorch's CPU kernels for these call the C library's ``log1p``/``tan``/``log`` once per
53-bit uniform. Python's ``math`` functions call the same C library, and so does numba's
compiled code (no vector math library is linked in, and nothing is fused without fastmath),
so these loops give the Python fallback's bits (``_rng.Engine.unit53_map``) at compiled speed.
"""
import math

import numba

__all__ = ["log1p_neg", "cauchy", "geometric"]


@numba.njit(cache=True, nogil=True, boundscheck=False)
def log1p_neg(u, out):
    for i in range(u.shape[0]):
        out[i] = math.log1p(-u[i])


@numba.njit(cache=True, nogil=True, boundscheck=False)
def cauchy(u, out, median, sigma):
    for i in range(u.shape[0]):
        out[i] = median + sigma * math.tan(math.pi * (u[i] - 0.5))


@numba.njit(cache=True, nogil=True, boundscheck=False)
def geometric(u, out, scale):
    for i in range(u.shape[0]):
        out[i] = math.ceil(math.log(u[i]) / scale) if u[i] > 0 else math.inf
