"""Optional compiled kernels (numba) for layer norm's forward and backward.

The NumPy path makes about seven passes over the input forward and a dozen backward (each a
reduction over short rows or a broadcast product); these kernels do a row at a time while it
is in cache: forward reads the input twice and writes once, backward reads input and
gradient twice and writes once. Row sums are split into vector lanes (the NumPy path sums
pairwise), so results agree with the NumPy path within rounding.

They run only when numba is installed and the input has at least :data:`MIN_SIZE` elements;
``RETROGRAD_NO_NUMBA=1`` turns them off (the NumPy path stays the reference).
"""
import os

import numpy as np

# Below this many elements the NumPy path is as fast, and a program of small tensors never
# pays numba's import and first call.
MIN_SIZE = 4096

_KERNELS = []
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def kernels():
    """The kernel module, compiled (or loaded from numba's cache) on first use, or None."""
    if not _KERNELS:
        k = None
        if not os.environ.get("RETROGRAD_NO_NUMBA"):
            try:
                from . import _accel_norm_kernels as k
            except ImportError:
                k = None
        _KERNELS.append(k)
    return _KERNELS[0]


def usable(x, *others):
    """The kernel module for host arrays of one float32/float64 dtype with at least
    MIN_SIZE elements in ``x`` (None entries of ``others`` are skipped), else None."""
    if type(x) is not np.ndarray or x.size < MIN_SIZE or x.dtype not in _FLOATS:
        return None
    for b in others:
        if b is not None and (type(b) is not np.ndarray or b.dtype != x.dtype):
            return None
    return kernels()


def _rows(a, n):
    return np.ascontiguousarray(a).reshape(-1, n)


def layer_norm(k, x, nd, w, b, eps):
    """(y, mean, rstd) of layer norm over the ``nd`` trailing dims; mean and rstd shaped as
    the NumPy path's (keepdims over the normalized dims)."""
    t = x.dtype.type
    lead = x.shape[:x.ndim - nd]
    n = x.size // int(np.prod(lead, dtype=np.int64)) if lead else x.size
    x2 = _rows(x, n)
    m = x2.shape[0]
    y = np.empty(x.shape, x.dtype)
    mean = np.empty(m, x.dtype)
    rstd = np.empty(m, x.dtype)
    dummy = x2[0]
    k.layer_norm(x2, dummy if w is None else _rows(w, n)[0], dummy if b is None else _rows(b, n)[0],
                 w is not None, b is not None, t(eps), t(0.0), t(1.0), t(n), y.reshape(m, n), mean, rstd)
    kshape = lead + (1,) * nd
    return y, mean.reshape(kshape), rstd.reshape(kshape)


def layer_norm_backward(k, x, g, w, mean, rstd, n, want_x, want_wb):
    """(gx, gw, gb) of layer norm (gw, gb flat, summed over rows in x's dtype in row order,
    as NumPy's and PyTorch's sums over the leading dims)."""
    t = x.dtype.type
    x2, g2 = _rows(x, n), _rows(g, n)
    m = x2.shape[0]
    gx = np.empty(x.shape, x.dtype) if want_x else np.empty((1, n), x.dtype)
    gw = np.zeros(n, x.dtype)
    gb = np.zeros(n, x.dtype)
    k.layer_norm_backward(x2, g2, x2[0] if w is None else _rows(w, n)[0], w is not None,
                          np.ascontiguousarray(mean).reshape(m), np.ascontiguousarray(rstd).reshape(m),
                          t(0.0), t(1.0 / n), gx.reshape(-1, n), gw, gb, want_x, want_wb)
    return (gx if want_x else None), gw, gb
