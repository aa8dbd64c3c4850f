"""The numba kernel of ``ops._base.masked_grad`` (imported only where numba is installed):
the mask-shaped selection of a gradient in one pass.

A module-level function, so that numba's on-disk cache (``cache=True``) finds it again in
the next process. It works on the gradient's bits (an unsigned integer view of the same
width), so every element is kept exactly, NaN payloads and signed zeros included, or is +0.
"""
import numba

__all__ = ["select"]


@numba.njit(cache=True, nogil=True, boundscheck=False)
def select(a, mask, out, zero):
    # a, out: contiguous 1-D unsigned views of one width; mask: contiguous 1-D bool; zero: 0 of
    # a's type (a literal 0 would unify uint64 with int64 as float64 and round the bits)
    for i in range(a.shape[0]):
        out[i] = a[i] if mask[i] else zero
