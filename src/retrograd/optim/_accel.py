"""Optional compiled kernels (numba) for the flat optimizer steps.

A NumPy step makes one pass over memory per operation (a dozen for Adam, and a float32
fused multiply-add costs several more); these kernels do a parameter's whole update in one
pass. They are used only when numba is installed (``pip install numba``), for the
parameters of a flat bundle, and give the NumPy kernels' bits: every operation is the
same IEEE operation in the same precision (hyperparameters are cast to the array's dtype
first, as NumPy casts a Python number), the multiply-adds that the NumPy path sends to
BLAS ``axpy`` are true fused multiply-adds (``llvm.fma``), and ``addcmul``'s float32
emulation (exact product, one float64 rounding, then float32) is done the same way.
The NumPy path stays the reference: ``RETROGRAD_NO_NUMBA=1`` turns these off.
"""
import os

_KERNELS = []


def kernels():
    """{'sgd': ..., 'adam': ...} compiled on first use, or None without numba."""
    if not _KERNELS:
        k = None
        if not os.environ.get("RETROGRAD_NO_NUMBA"):
            try:
                k = _build()
            except ImportError:
                k = None
        _KERNELS.append(k)
    return _KERNELS[0]


def _build():
    from . import _accel_kernels as k
    return {"sgd": k.sgd, "adam": k.adam}
