"""Optional compiled kernels (numba) for layer norm's forward and backward, attention's row
softmax, and exact GELU keeping its cumulative distribution for the backward.

The NumPy path makes about seven passes over the input forward and a dozen backward (each a
reduction over short rows or a broadcast product); these kernels do a row at a time while it
is in cache: forward reads the input twice and writes once, backward reads input and
gradient twice and writes once. Row sums are split into vector lanes (the NumPy path sums
pairwise), so results agree with the NumPy path within rounding.

Attention's softmax runs over many short rows (a score row per query), where each NumPy
reduction along a row (max, then sum) pays a loop per row: the kernels take a row's maximum
and subtract it, and its sum and divide by it, around NumPy's exp of the whole array (its
SIMD exp, which numba cannot vectorise); the sums accumulate in float64.

Exact GELU's backward is ``g * (cdf + x * pdf)``, cdf = 0.5 * (1 + erf(x / sqrt 2)) the
forward's costliest part: when a backward will follow, the forward's kernel computes the
factor ``cdf + x * pdf`` beside the value (float32: in the same pass, the pdf's exp shared
with erf; float64: NumPy's exp over cache-sized chunks) and the backward is one product ``g *
factor`` (the same operations in the same order: the same bits as the kernels of
:mod:`._accel` and the NumPy path), where it would compute erf and exp again.

They run only when numba is installed and the input has at least :data:`MIN_SIZE` elements;
``RETROGRAD_NO_NUMBA=1`` turns them off (the NumPy path stays the reference).
"""

import numpy as np

# Below this many elements the NumPy path is as fast, and a program of small tensors never
# pays numba's import and first call.
MIN_SIZE = 4096

_KERNELS = []
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def kernels():
    """The kernel module, compiled (or loaded from numba's cache) on first use, or None."""
    return _KERNELS[0] if _KERNELS else load(_KERNELS, "_accel_nn_kernels")


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
    n = 1
    for s in x.shape[x.ndim - nd:]:
        n *= s
    m = x.size // n
    x2 = _rows(x, n)
    y = np.empty((m, n), x.dtype)
    stats = np.empty((2, m), x.dtype)      # (mean, rstd): one allocation
    dummy = x2[0]
    k.layer_norm(x2, dummy if w is None else _rows(w, n)[0], dummy if b is None else _rows(b, n)[0],
                 w is not None, b is not None, t(eps), t(0.0), t(1.0), t(n), y, stats[0], stats[1])
    kshape = lead + (1,) * nd
    return y.reshape(x.shape), stats[0].reshape(kshape), stats[1].reshape(kshape)


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


from ._accel import _SQRT1_2, _INV_SQRT_2PI, _CHUNK, pdf_chunks, load  # (GELU constants, pdf; the loader)


def gelu_keep_grad(k, x):
    """(exact GELU of x, its derivative cdf + x * pdf) as two arrays of x's shape and dtype."""
    t = x.dtype.type
    xf = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(x.shape, x.dtype)
    d = np.empty(x.shape, x.dtype)
    of, df = out.reshape(-1), d.reshape(-1)
    if t is np.float32:     # (its exp in the kernel: one pass)
        k.gelu_keep_grad_f32(xf, of, df, t(0.5), t(1.0), t(_SQRT1_2), t(_INV_SQRT_2PI), t(-0.5))
        return out, d
    for i, xs, e in pdf_chunks(xf):
        n = xs.size
        k.gelu_keep_grad(xs, e, of[i:i + n], df[i:i + n], t(0.5), t(1.0), t(_SQRT1_2), t(_INV_SQRT_2PI))
    return out, d


_NO_BITS = np.empty((0, 0), np.int32)


def softmax_rows(k, s, scale=None, causal=0, hidden=-np.inf, add=False):
    """Softmax over the last axis of the C-contiguous array ``s``, in place (as
    attention._softmax_rows: rows of only -inf give zeros, a NaN or +inf makes its row NaN).
    ``scale`` (of s's dtype): the scores are first multiplied by it; ``causal`` > 0: s is
    (..., causal, S) and each query row's entries past its position are set to ``hidden``
    first (``add``: ``hidden`` is added to them; attention._attend's steps before its
    softmax, in the same pass)."""
    s2 = s.reshape(-1, s.shape[-1])
    dead = np.empty(s2.shape[0], np.bool_)
    t = s.dtype.type
    u = s2.view(np.int32) if s2.dtype == np.float32 else _NO_BITS
    k.softmax_rows_prepare(s2, u, dead, scale is not None, t(0 if scale is None else scale), causal, t(hidden), add)
    with np.errstate(over="ignore", invalid="ignore"):
        np.exp(s2, out=s2)
    k.softmax_rows_normalize(s2, dead, np.empty(1, s.dtype))
    return s


def _row_chunks(m, n):
    step = max(1, _CHUNK // max(n, 1))
    return [(i, min(i + step, m)) for i in range(0, m, step)]


def softmax_last(k, x, log):
    """softmax (or log_softmax) of the C-contiguous array ``x`` over its last axis, as the
    NumPy path (rows of only -inf give NaN), a cache-sized group of rows at a time."""
    n = x.shape[-1]
    x2 = x.reshape(-1, n)
    out = np.empty(x.shape, x.dtype)
    o2 = out.reshape(-1, n)
    if x.dtype == np.float32:   # (a row at a time, its exp compiled in: no buffer, no NumPy pass)
        (k.log_softmax_rows_f32 if log else k.softmax_rows_f32)(x2, o2)
        return out
    dead = np.empty(x2.shape[0], np.bool_)
    sc = np.empty(1, x.dtype)
    e = np.empty((max(1, _CHUNK // max(n, 1)), n), x.dtype) if log else None
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for a, b in _row_chunks(x2.shape[0], n):
            ob = o2[a:b]
            k.softmax_rows_shift(x2[a:b], ob, dead[a:b], False)
            if log:
                eb = e[:b - a]
                np.exp(ob, out=eb)
                k.log_softmax_rows_finish(ob, eb, sc)
            else:
                np.exp(ob, out=ob)
                k.softmax_rows_normalize(ob, dead[a:b], sc)
    return out


def softmax_last_backward(k, g, y, log):
    """The input gradient of softmax (log_softmax) over the last axis from its output ``y``:
    ``y * (g - sum(g * y))`` (``g - exp(y) * sum(g)``), rows as :func:`softmax_last`."""
    n = y.shape[-1]
    g2 = np.ascontiguousarray(g).reshape(-1, n)
    y2 = np.ascontiguousarray(y).reshape(-1, n)
    out = np.empty(y.shape, y.dtype)
    o2 = out.reshape(-1, n)
    sc = np.empty(1, y.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if log and y.dtype == np.float32:
            k.log_softmax_rows_backward_f32(g2, y2, o2)
        elif log:
            for a, b in _row_chunks(y2.shape[0], n):
                np.exp(y2[a:b], out=o2[a:b])
                k.log_softmax_rows_backward(g2[a:b], o2[a:b], sc)
        else:
            k.softmax_rows_backward(g2, y2, o2, sc)
    return out
