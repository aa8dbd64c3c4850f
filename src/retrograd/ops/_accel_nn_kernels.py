"""The numba kernels of :mod:`retrograd.ops._accel_nn` (imported only where numba is
installed): layer norm's rows, attention's row softmax around NumPy's exp, float32 softmax
and log_softmax rows (forward, and log_softmax's backward) with their exp compiled in, and
exact GELU with its derivative kept for the backward.

Module-level functions, so that numba's on-disk cache (``cache=True``) finds them again in
the next process. They take C-contiguous arrays of one dtype (float32 or float64): the
input seen as (rows, row length), the statistics one value per row; scalar constants come
already cast to that dtype. Every operation is done in the arrays' dtype in the order of
the NumPy path. Layer norm's sums along a row are reassociated (``fastmath={"reassoc"}``:
LLVM splits them into vector lanes, where NumPy sums pairwise), so its results agree with
the NumPy path within rounding; the GELU kernels, compiled without it, give its bits.
"""
import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ._accel_kernels import _erf, _erf_f32_e, _exp_neg_f32, wide_vectors

__all__ = ["layer_norm", "layer_norm_backward", "gelu_keep_grad", "gelu_keep_grad_f32", "softmax_rows_shift",
           "softmax_rows_prepare", "softmax_rows_normalize", "log_softmax_rows_finish", "log_softmax_rows_backward",
           "softmax_rows_backward", "softmax_rows_f32", "log_softmax_rows_f32", "log_softmax_rows_backward_f32"]

# nogil as NumPy's loops; no parallel=True (the BLAS thread policy owns the cores); no
# finite-math or contraction flags: non-finite values and roundings as in the NumPy path
_jit = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, fastmath={"reassoc"})


@_jit
def layer_norm(x, w, b, has_w, has_b, eps, zero, one, nt, y, mean, rstd):
    # per row: mean, biased variance of the centred row, rstd = 1 / sqrt(var + eps), then
    # ((x - mean) * rstd) * w + b, as the NumPy path; 512-bit vectors: ~0.9x the time at
    # rows of 128 (no change at 64). Rows indexed as x[i, j], not through row views x[i]
    # (which cost ~50 ns each and kept LLVM from vectorising the stores: 0.7x the time at
    # rows of 64-768 here).
    wide_vectors()
    m, n = x.shape
    for i in range(m):
        s = zero
        for j in range(n):
            s += x[i, j]
        mu = s / nt
        v = zero
        for j in range(n):
            d = x[i, j] - mu
            v += d * d
        r = one / np.sqrt(v / nt + eps)
        mean[i] = mu
        rstd[i] = r
        if has_w and has_b:
            for j in range(n):
                y[i, j] = (x[i, j] - mu) * r * w[j] + b[j]
        elif has_w:
            for j in range(n):
                y[i, j] = (x[i, j] - mu) * r * w[j]
        elif has_b:
            for j in range(n):
                y[i, j] = (x[i, j] - mu) * r + b[j]
        else:
            for j in range(n):
                y[i, j] = (x[i, j] - mu) * r


@_jit
def layer_norm_backward(x, g, w, has_w, mean, rstd, zero, inv_n, gx, gw, gb, want_x, want_wb):
    # PyTorch's kernel's form, as the NumPy path: with gh = g * w, ds = sum(gh * x) and
    # db = sum(gh) per row, dx = rstd * gh + b * x + c, b = (db * mean - ds) * rstd^3 / n,
    # c = -b * mean - db * rstd / n; the weight and bias gradients sum g * xhat and g over
    # rows, row after row (the order of NumPy's and PyTorch's sums over leading dims).
    # Indexed as x[i, j] (see layer_norm: row views made the input gradient 4x slower)
    wide_vectors()
    m, n = x.shape
    for i in range(m):
        mu = mean[i]
        r = rstd[i]
        if want_x:
            ds = zero
            db = zero
            if has_w:
                for j in range(n):
                    gh = g[i, j] * w[j]
                    ds += gh * x[i, j]
                    db += gh
            else:
                for j in range(n):
                    ds += g[i, j] * x[i, j]
                    db += g[i, j]
            bb = (db * mu - ds) * (r * r * r) * inv_n
            cc = -bb * mu - db * r * inv_n
            if has_w:
                for j in range(n):
                    gx[i, j] = r * (g[i, j] * w[j]) + bb * x[i, j] + cc
            else:
                for j in range(n):
                    gx[i, j] = r * g[i, j] + bb * x[i, j] + cc
        if want_wb:
            for j in range(n):
                gw[j] += g[i, j] * ((x[i, j] - mu) * r)
                gb[j] += g[i, j]


_exact = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)


@_exact
def gelu_keep_grad(x, e, out, d, half, one, rsqrt2, inv_sqrt_2pi):
    # _accel_kernels.gelu's value, x * 0.5 * (1 + erf(x / sqrt 2)), and the backward's factor
    # d = cdf + x * pdf (cdf = 0.5 * (1 + erf(x / sqrt 2)), pdf = e / sqrt(2 pi), e =
    # exp(-x*x/2) from NumPy), each associated as its NumPy path: the backward is then g * d
    for i in range(x.shape[0]):
        xi = x[i]
        s = one + _erf(xi * rsqrt2)
        out[i] = xi * half * s
        d[i] = half * s + xi * (inv_sqrt_2pi * e[i])


@_exact
def gelu_keep_grad_f32(x, out, d, half, one, rsqrt2, inv_sqrt_2pi, m_half):
    # gelu_keep_grad in float32, its exp computed here and shared by erf and the pdf (as
    # _accel_kernels.gelu_f32 and the NumPy path)
    wide_vectors()
    for i in range(x.shape[0]):
        xi = x[i]
        e = _exp_neg_f32(xi * xi * m_half)
        s = one + _erf_f32_e(xi * rsqrt2, e)
        out[i] = xi * half * s
        d[i] = half * s + xi * (inv_sqrt_2pi * e)


@_jit
def _row_max(r, n):
    # the maximum of r[:n] (n >= 1) over its non-NaN entries (a NaN is kept only as a first
    # entry): the callers' sums carry a NaN into its whole row, and they look for one only
    # where the maximum is -inf. Long rows keep eight independent maxima: one chain of
    # dependent compare-and-selects is not vectorised and costs its latency per entry.
    if n < 16:
        mx = r[0]
        for j in range(1, n):
            v = r[j]
            mx = v if v > mx else mx
        return mx
    n8 = n - n % 8
    m0, m1, m2, m3, m4, m5, m6, m7 = r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]
    for j in range(8, n8, 8):
        v = r[j]
        m0 = v if v > m0 else m0
        v = r[j + 1]
        m1 = v if v > m1 else m1
        v = r[j + 2]
        m2 = v if v > m2 else m2
        v = r[j + 3]
        m3 = v if v > m3 else m3
        v = r[j + 4]
        m4 = v if v > m4 else m4
        v = r[j + 5]
        m5 = v if v > m5 else m5
        v = r[j + 6]
        m6 = v if v > m6 else m6
        v = r[j + 7]
        m7 = v if v > m7 else m7
    for j in range(n8, n):
        v = r[j]
        m0 = v if v > m0 else m0
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    m4 = m5 if m5 > m4 else m4
    m6 = m7 if m7 > m6 else m6
    m0 = m2 if m2 > m0 else m0
    m4 = m6 if m6 > m4 else m4
    return m4 if m4 > m0 else m0


@_jit
def _shift_of(r, n):
    # the row's shift: its maximum, or NaN where a -inf maximum hides a NaN (such a row is NaN,
    # not dead: NumPy's max is NaN)
    mx = _row_max(r, n)
    if mx == -np.inf:
        for j in range(n):
            if r[j] != r[j]:
                return np.nan
    return mx


@_jit
def softmax_rows_shift(s, out, dead, safe):
    # each row minus its maximum, into ``out`` (a different array: see softmax_rows_prepare
    # for in place). With ``safe``, a row whose maximum is -inf is marked dead and not shifted
    # (attention's safe softmax gives it zeros); else it is shifted, giving NaN as the NumPy
    # path. A NaN or +inf makes the whole row NaN (through the row sums that follow).
    m, n = s.shape
    for i in range(m):
        mx = _shift_of(s[i], n)
        dead[i] = safe and mx == -np.inf
        if not dead[i]:
            for j in range(n):
                out[i, j] = s[i, j] - mx


@_jit
def softmax_rows_prepare(s, u, dead, scaled, scale, causal, hidden, add):
    # attention's scores before NumPy's exp, in place (one array: a second, aliased one would
    # keep LLVM from vectorising): each row times ``scale`` (if ``scaled``: the NumPy path's
    # ``s *= scale``), with ``causal`` > 0 the entries past the row's query position
    # (row index mod ``causal``) set to ``hidden`` (``add``: plus ``hidden``, as a float mask
    # is added: +inf or NaN there then makes the row NaN), then minus its maximum; rows whose
    # maximum is -inf are dead (zeros), as softmax_rows_shift with ``safe``. Indexed as
    # s[i, j], with the maximum of a short row found inline: attention's rows are short (32,
    # 64), and a row view plus calls cost ~50 ns a row, twice the row's own work at 32.
    # ``u``: float32 s's bits as int32 (else empty), whose maximum is found as _shift_f32's,
    # vectorised (a float compare-and-select chain is not: 16 x 4 x 64 x 64 causal scores,
    # 0.35 -> 0.24 ms).
    m, n = s.shape
    ninf = -np.inf
    bits = u.shape[0] > 0
    for i in range(m):
        if scaled:
            for j in range(n):
                s[i, j] = s[i, j] * scale
        k = n
        if causal > 0:
            v = i % causal + 1
            if v > n:
                v = n
            if add:
                for j in range(v, n):
                    s[i, j] = s[i, j] + hidden
            else:
                for j in range(v, n):
                    s[i, j] = hidden
                if hidden == ninf:
                    k = v       # (the hidden entries stay -inf: only the visible part is shifted)
        if bits and k > 0:
            mx = _shift_f32(s, u, i, k)
        elif k < 64:      # (the maximum over the non-NaN entries, as _row_max)
            mx = s[i, 0]
            for j in range(1, k):
                x = s[i, j]
                mx = x if x > mx else mx
            if mx == ninf:
                for j in range(k):
                    if s[i, j] != s[i, j]:
                        mx = np.nan
                        break
        else:
            mx = _shift_of(s[i], k)
        d = mx == ninf
        dead[i] = d
        if not d:
            for j in range(k):
                s[i, j] = s[i, j] - mx


@_jit
def log_softmax_rows_finish(z, e, scratch):
    # z (rows minus their maximum) minus log(sum(e)), e = exp(z); the sum accumulated in float64
    # and rounded once to the dtype, its log in the dtype, in place
    m, n = z.shape
    for i in range(m):
        t = 0.0
        for j in range(n):
            t += e[i, j]
        scratch[0] = t
        lse = np.log(scratch[0])
        for j in range(n):
            z[i, j] = z[i, j] - lse


@_jit
def log_softmax_rows_backward(g, ey, scratch):
    # g - exp(y) * sum(g) per row, with ey = exp(y), written into ey
    m, n = g.shape
    for i in range(m):
        t = 0.0
        for j in range(n):
            t += g[i, j]
        scratch[0] = t
        s = scratch[0]
        for j in range(n):
            ey[i, j] = g[i, j] - ey[i, j] * s


@_jit
def softmax_rows_backward(g, y, out, scratch):
    # y * (g - sum(g * y)) per row
    m, n = g.shape
    for i in range(m):
        t = 0.0
        for j in range(n):
            t += g[i, j] * y[i, j]
        scratch[0] = t
        s = scratch[0]
        for j in range(n):
            out[i, j] = y[i, j] * (g[i, j] - s)


@_jit
def softmax_rows_normalize(e, dead, scratch):
    # each row of exponentials divided by its sum (accumulated in float64, rounded once to the
    # dtype through ``scratch``), in place; dead rows become zeros
    m, n = e.shape
    for i in range(m):
        if dead[i]:
            for j in range(n):
                e[i, j] = 0
            continue
        t = 0.0
        for j in range(n):
            t += e[i, j]
        scratch[0] = t
        tv = scratch[0]
        for j in range(n):
            e[i, j] = e[i, j] / tv


# float32 rows in one pass each: the exponentials by _exp_neg_f32 (its argument, a row minus its
# maximum, is <= 0 or NaN), which LLVM vectorises with the rest of the loop, where NumPy's exp
# needs a pass of its own and a buffer; wide_vectors: sixteen lanes. The row sums are float32,
# split into vector lanes (as PyTorch's kernels: a float64 accumulator halves the lanes and
# costs a third of the time); measured against float64 references, their errors are PyTorch's
# or smaller up to rows of 500,000 entries.

_I32 = np.int32


@intrinsic
def _f32_of_bits(typingctx, b):
    """The float32 whose bits are the int32 b."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


@_jit
def _shift_f32(x, u, i, n):
    # _shift_of for row i of the float32 array x (u: x's bits, as int32), its maximum taken
    # over the bits: each mapped to an int32 ordered as the floats (negative ones' magnitude
    # bits flipped), whose maximum LLVM vectorises (a float compare-and-select chain it does
    # not reorder). A NaN of either sign may be the maximum (then the row, NaN in any case, is
    # all NaN) or not (then the row sums make it NaN), as with _shift_of; a -inf maximum
    # hiding a NaN is NaN, as there. (Rows indexed as x[i, j]: a row view costs ~50 ns, as
    # much as a 65-entry row's work.)
    m = _I32(-2147483648)
    for j in range(n):
        b = u[i, j]
        k = b ^ ((b >> _I32(31)) & _I32(0x7fffffff))
        m = k if k > m else m
    mx = _f32_of_bits(m ^ ((m >> _I32(31)) & _I32(0x7fffffff)))
    if mx == -np.inf:
        for j in range(n):
            if x[i, j] != x[i, j]:
                return np.float32(np.nan)
    return mx


@_jit
def softmax_rows_f32(x, out):
    # exp(x - max) / sum per row, as softmax_rows_shift, NumPy's exp and softmax_rows_normalize
    wide_vectors()
    m, n = x.shape
    u = x.view(np.int32)
    for i in range(m):
        mx = _shift_f32(x, u, i, n)
        t = np.float32(0.0)
        for j in range(n):
            e = _exp_neg_f32(x[i, j] - mx)
            out[i, j] = e
            t += e
        for j in range(n):
            out[i, j] = out[i, j] / t


@_jit
def log_softmax_rows_f32(x, out):
    # (x - max) - log(sum(exp(x - max))) per row, as softmax_rows_shift, NumPy's exp and
    # log_softmax_rows_finish
    wide_vectors()
    m, n = x.shape
    u = x.view(np.int32)
    for i in range(m):
        mx = _shift_f32(x, u, i, n)
        t = np.float32(0.0)
        for j in range(n):
            t += _exp_neg_f32(x[i, j] - mx)
        lse = np.log(t)
        for j in range(n):      # (the row is in cache: x - max again rather than a store and a load)
            out[i, j] = (x[i, j] - mx) - lse


@_jit
def log_softmax_rows_backward_f32(g, y, out):
    # g - exp(y) * sum(g) per row, as log_softmax_rows_backward after NumPy's exp; y is
    # log_softmax's output: <= 0 (or a rounding above, where _exp_neg_f32 is as accurate), or NaN
    wide_vectors()
    m, n = g.shape
    for i in range(m):
        s = np.float32(0.0)
        for j in range(n):
            s += g[i, j]
        for j in range(n):
            out[i, j] = g[i, j] - _exp_neg_f32(y[i, j]) * s
