"""The numba kernels of ``ops._base.masked_grad`` (imported only where numba is installed):
the mask-shaped selection of a gradient in one pass; and ReLU's forward, whose mask that is.

A module-level function, so that numba's on-disk cache (``cache=True``) finds it again in
the next process. It works on the gradient's bits (an unsigned integer view of the same
width), so every element is kept exactly, NaN payloads and signed zeros included, or is +0.
"""
import numba

from ._accel_kernels import wide_vectors

__all__ = ["select", "relu", "relu_inplace"]


@numba.njit(cache=True, nogil=True, boundscheck=False)
def select(a, mask, out, zero):
    # a, out: contiguous 1-D unsigned views of one width; mask: contiguous 1-D bool; zero: 0 of
    # a's type (a literal 0 would unify uint64 with int64 as float64 and round the bits)
    for i in range(a.shape[0]):
        out[i] = a[i] if mask[i] else zero


@numba.njit(cache=True, nogil=True, boundscheck=False)
def relu_inplace(a, zero):
    # relu over a itself (one array: two aliased ones would keep LLVM from vectorising)
    wide_vectors()
    for i in range(a.shape[0]):
        v = a[i]
        a[i] = zero if v < zero else v


@numba.njit(cache=True, nogil=True, boundscheck=False)
def relu(a, out, zero):
    # 0 where a < 0, else a itself (NaN and -0.0 kept, as PyTorch's relu); a, out: contiguous
    # 1-D float arrays of one dtype, zero of that dtype. A compare and a blend per lane, where
    # np.maximum's NaN handling costs about twice the time on cache-resident arrays.
    wide_vectors()
    for i in range(a.shape[0]):
        v = a[i]
        out[i] = zero if v < zero else v
