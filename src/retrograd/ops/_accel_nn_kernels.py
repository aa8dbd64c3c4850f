"""The numba kernels of :mod:`retrograd.ops._accel_nn` (imported only where numba is
installed): layer norm's rows, attention's row softmax around NumPy's exp, and exact GELU
with its cumulative distribution kept for the backward.

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

from ._accel_kernels import _erf

__all__ = ["layer_norm", "layer_norm_backward", "gelu_keep_cdf", "gelu_backward_from_cdf",
           "gelu_backward_from_cdf_scalar_g", "softmax_rows_shift",
           "softmax_rows_normalize", "log_softmax_rows_finish", "log_softmax_rows_backward",
           "softmax_rows_backward"]

# nogil as NumPy's loops; no parallel=True (the BLAS thread policy owns the cores); no
# finite-math or contraction flags: non-finite values and roundings as in the NumPy path
_jit = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, fastmath={"reassoc"})


@_jit
def layer_norm(x, w, b, has_w, has_b, eps, zero, one, nt, y, mean, rstd):
    # per row: mean, biased variance of the centred row, rstd = 1 / sqrt(var + eps), then
    # ((x - mean) * rstd) * w + b, as the NumPy path
    m, n = x.shape
    for i in range(m):
        xi = x[i]
        s = zero
        for j in range(n):
            s += xi[j]
        mu = s / nt
        v = zero
        for j in range(n):
            d = xi[j] - mu
            v += d * d
        r = one / np.sqrt(v / nt + eps)
        mean[i] = mu
        rstd[i] = r
        yi = y[i]
        if has_w and has_b:
            for j in range(n):
                yi[j] = (xi[j] - mu) * r * w[j] + b[j]
        elif has_w:
            for j in range(n):
                yi[j] = (xi[j] - mu) * r * w[j]
        elif has_b:
            for j in range(n):
                yi[j] = (xi[j] - mu) * r + b[j]
        else:
            for j in range(n):
                yi[j] = (xi[j] - mu) * r


@_jit
def layer_norm_backward(x, g, w, has_w, mean, rstd, zero, inv_n, gx, gw, gb, want_x, want_wb):
    # PyTorch's kernel's form, as the NumPy path: with gh = g * w, ds = sum(gh * x) and
    # db = sum(gh) per row, dx = rstd * gh + b * x + c, b = (db * mean - ds) * rstd^3 / n,
    # c = -b * mean - db * rstd / n; the weight and bias gradients sum g * xhat and g over
    # rows, row after row (the order of NumPy's and PyTorch's sums over leading dims)
    m, n = x.shape
    for i in range(m):
        xi = x[i]
        gi = g[i]
        mu = mean[i]
        r = rstd[i]
        if want_x:
            ds = zero
            db = zero
            gxi = gx[i]
            if has_w:
                for j in range(n):
                    gh = gi[j] * w[j]
                    ds += gh * xi[j]
                    db += gh
            else:
                for j in range(n):
                    ds += gi[j] * xi[j]
                    db += gi[j]
            bb = (db * mu - ds) * (r * r * r) * inv_n
            cc = -bb * mu - db * r * inv_n
            if has_w:
                for j in range(n):
                    gxi[j] = r * (gi[j] * w[j]) + bb * xi[j] + cc
            else:
                for j in range(n):
                    gxi[j] = r * gi[j] + bb * xi[j] + cc
        if want_wb:
            for j in range(n):
                gw[j] += gi[j] * ((xi[j] - mu) * r)
                gb[j] += gi[j]


_exact = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)


@_exact
def gelu_keep_cdf(x, out, cdf, half, one, rsqrt2):
    # _accel_kernels.gelu's value, x * 0.5 * (1 + erf(x / sqrt 2)), and the backward's
    # cdf = 0.5 * (1 + erf(x / sqrt 2)), each associated as its NumPy path
    for i in range(x.shape[0]):
        xi = x[i]
        s = one + _erf(xi * rsqrt2)
        out[i] = xi * half * s
        cdf[i] = half * s


@_exact
def gelu_backward_from_cdf(g, x, e, cdf, out, inv_sqrt_2pi):
    # _accel_kernels.gelu_backward with the forward's cdf: g * (cdf + x * (e / sqrt(2 pi)))
    for i in range(x.shape[0]):
        out[i] = g[i] * (cdf[i] + x[i] * (inv_sqrt_2pi * e[i]))


@_exact
def gelu_backward_from_cdf_scalar_g(g, x, e, cdf, out, inv_sqrt_2pi):
    # the same with one gradient value for every element (the expanded gradient of a sum)
    for i in range(x.shape[0]):
        out[i] = g * (cdf[i] + x[i] * (inv_sqrt_2pi * e[i]))


@_jit
def softmax_rows_shift(s, out, dead, safe):
    # each row minus its maximum, into ``out`` (which may be ``s``). With ``safe``, a row whose
    # maximum is -inf is marked dead and not shifted (attention's safe softmax gives it zeros);
    # else it is shifted, giving NaN as the NumPy path. A NaN makes the maximum NaN (as NumPy's
    # max), so the whole row NaN.
    m, n = s.shape
    for i in range(m):
        r = s[i]
        o = out[i]
        mx = r[0]
        nan = mx != mx
        for j in range(1, n):
            v = r[j]
            nan |= v != v
            mx = v if v > mx else mx
        if nan:
            mx = np.nan
        dead[i] = safe and mx == -np.inf
        if not dead[i]:
            for j in range(n):
                o[j] = r[j] - mx


@_jit
def log_softmax_rows_finish(z, e, scratch):
    # z (rows minus their maximum) minus log(sum(e)), e = exp(z); the sum accumulated in float64
    # and rounded once to the dtype, its log in the dtype, in place
    m, n = z.shape
    for i in range(m):
        t = 0.0
        r = e[i]
        for j in range(n):
            t += r[j]
        scratch[0] = t
        lse = np.log(scratch[0])
        o = z[i]
        for j in range(n):
            o[j] = o[j] - lse


@_jit
def log_softmax_rows_backward(g, ey, scratch):
    # g - exp(y) * sum(g) per row, with ey = exp(y), written into ey
    m, n = g.shape
    for i in range(m):
        t = 0.0
        gi = g[i]
        for j in range(n):
            t += gi[j]
        scratch[0] = t
        s = scratch[0]
        o = ey[i]
        for j in range(n):
            o[j] = gi[j] - o[j] * s


@_jit
def softmax_rows_backward(g, y, out, scratch):
    # y * (g - sum(g * y)) per row
    m, n = g.shape
    for i in range(m):
        t = 0.0
        gi = g[i]
        yi = y[i]
        for j in range(n):
            t += gi[j] * yi[j]
        scratch[0] = t
        s = scratch[0]
        o = out[i]
        for j in range(n):
            o[j] = yi[j] * (gi[j] - s)


@_jit
def softmax_rows_normalize(e, dead, scratch):
    # each row of exponentials divided by its sum (accumulated in float64, rounded once to the
    # dtype through ``scratch``), in place; dead rows become zeros
    m, n = e.shape
    for i in range(m):
        r = e[i]
        if dead[i]:
            for j in range(n):
                r[j] = 0
            continue
        t = 0.0
        for j in range(n):
            t += r[j]
        scratch[0] = t
        tv = scratch[0]
        for j in range(n):
            r[j] = r[j] / tv
