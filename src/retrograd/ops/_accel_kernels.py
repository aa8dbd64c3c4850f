"""The numba kernels of :mod:`retrograd.ops._accel` (imported only where numba is installed).

Module-level functions, so that numba's on-disk cache (``cache=True``) finds them again in
the next process instead of compiling anew. The elementwise ones take contiguous 1-D arrays
of one dtype (float32 or float64) and an output array of that dtype, the convolution ones
contiguous N-d arrays and work buffers of one dtype; constants come in already cast to
that dtype, so every operation is the IEEE operation the NumPy path does, in its precision.
"""
import math

import numba
import numpy as np
from numba import types
from numba.extending import overload

from .unary import _ERF_P, _ERF_Q

__all__ = ["erf", "erfc", "gelu", "gelu_backward", "dw_corr", "dw_corr3", "dw_weight_grad", "col2im"]


P0, P1, P2, P3, P4, P5, P6 = _ERF_P
Q0, Q1, Q2, Q3, Q4 = _ERF_Q


def _erf(t):
    """erf in t's precision (float32: the NumPy path's rational function; see _erf_f32)."""


def _erfc(t):
    """erfc in t's precision: libm's double erfc, rounded once for float32."""


# float32 erf: unary._erf_f32's float64 polynomials, operation for operation, with each
# multiply-add contracted into one fused operation (``fastmath={"contract"}``, for this
# function's operations only: the GELU arithmetic around it stays uncontracted, as in the
# NumPy path). Fused float64 steps change the float64 value by a few units of 1e-16; rounded
# to float32 it gave the NumPy path's bits on every one of 542M float32 inputs in [0, 4.5]
# checked (in principle it could differ by one float32 ulp where the float64 value lies
# within ~1e-16 of a float32 rounding boundary), and it takes ~0.65x the time per element.
# Branch-free, so that LLVM vectorises it, where libm's scalar erf cannot be; a function of
# its own that LLVM inlines into the kernels' loops (its flags stay on its instructions).
@numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, fastmath={"contract"})
def _erf_f32(t):
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
        return lambda t: _erf_f32(t)
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


# Depthwise 2-D convolution, stride 1, one (sample, channel) plane at a time (it stays in
# cache). The forward runs in the "wide" layout of ops.conv: with the plane flattened (row
# length wp), each kernel offset is one multiply-add of a shifted contiguous run into a
# plane-sized accumulator, whose extra columns are dropped at the end. Every (offset,
# position) pair is multiplied, padding included, as the column path does (an inf weight
# meets the padding's zeros: NaN there, as in PyTorch). Inner loops index pre-sliced runs
# with the loop variable, so that no negative-index wraparound blocks LLVM's vectoriser.

@_jit
def _dw_plane(x, n, c, buf, plh, plw, wp):
    # x[n, c] into the interior of the zero-padded flat plane ``buf`` (its border stays zero)
    H, W = x.shape[2], x.shape[3]
    xc = x[n, c]
    for i in range(H):
        s0 = (i + plh) * wp + plw
        dst = buf[s0:s0 + W]
        row = xc[i]
        for j in range(W):
            dst[j] = row[j]


@_jit
def dw_corr(x, wk, out, buf, acc, plh, plw, wp, d0, d1, bias):
    """out[n, c, i, j] = sum over (a, b) of wk[c, a, b] * xp[n, c, i + a*d0, j + b*d1], xp the
    input zero-padded by (plh, plw) at the top and left to row length ``wp``, plus bias[c]
    when ``bias`` is not empty (added to the rounded sum, as a separate add would). ``buf``:
    a zeroed work plane (padded height * wp + slack); ``acc``: a work row of OH * wp."""
    N, C, OH, OW = out.shape
    KH, KW = wk.shape[1], wk.shape[2]
    L = OH * wp
    with_bias = bias.shape[0] > 0
    for n in range(N):
        for c in range(C):
            _dw_plane(x, n, c, buf, plh, plw, wp)
            for j in range(L):
                acc[j] = 0
            for a in range(KH):
                for b in range(KW):
                    wv = wk[c, a, b]
                    s0 = a * d0 * wp + b * d1
                    seg = buf[s0:s0 + L]
                    for j in range(L):
                        acc[j] += wv * seg[j]
            o = out[n, c]
            if with_bias:
                bc = bias[c]
                for i in range(OH):
                    row = o[i]
                    t = acc[i * wp:i * wp + OW]
                    for j in range(OW):
                        row[j] = t[j] + bc
            else:
                for i in range(OH):
                    row = o[i]
                    t = acc[i * wp:i * wp + OW]
                    for j in range(OW):
                        row[j] = t[j]


# A 3x3 kernel (the common case) one output row at a time: the nine taps of each output in
# one expression, in dw_corr's offset order from zero (the same bits), so that each output is
# written once instead of read and written nine times in a work row. The taps are read from
# the one work plane at unsigned offsets (numba wraps a signed index that may be negative,
# which keeps LLVM from vectorising; one source array also needs a single aliasing check).
_u = numba.uint64


@_jit
def dw_corr3(x, wk, out, buf, plh, plw, wp, d0, d1, bias, zero):
    """dw_corr for a 3x3 ``wk`` (C, 3, 3): the same sums (``zero``: 0 of the dtype), with no
    accumulator row."""
    N, C, OH, OW = out.shape
    with_bias = bias.shape[0] > 0
    e1, e2 = _u(d1), _u(2 * d1)
    owu = _u(OW)
    for n in range(N):
        for c in range(C):
            _dw_plane(x, n, c, buf, plh, plw, wp)
            w00, w01, w02 = wk[c, 0, 0], wk[c, 0, 1], wk[c, 0, 2]
            w10, w11, w12 = wk[c, 1, 0], wk[c, 1, 1], wk[c, 1, 2]
            w20, w21, w22 = wk[c, 2, 0], wk[c, 2, 1], wk[c, 2, 2]
            bc = bias[c] if with_bias else zero
            oc = out[n, c]
            for i in range(OH):
                p0 = _u(i * wp)
                p1 = _u((i + d0) * wp)
                p2 = _u((i + 2 * d0) * wp)
                row = oc[i]
                for j in range(owu):
                    s = zero + w00 * buf[p0 + j]
                    s += w01 * buf[p0 + e1 + j]
                    s += w02 * buf[p0 + e2 + j]
                    s += w10 * buf[p1 + j]
                    s += w11 * buf[p1 + e1 + j]
                    s += w12 * buf[p1 + e2 + j]
                    s += w20 * buf[p2 + j]
                    s += w21 * buf[p2 + e1 + j]
                    s += w22 * buf[p2 + e2 + j]
                    row[j] = s + bc if with_bias else s


@_jit
def dw_weight_grad(x, g, out, buf, acc, plh, plw, wp, d0, d1, c0, c1):
    """out[c, a, b] = sum over (n, i, j) of g[n, c, i, j] * xp[n, c, i + a*d0, j + b*d1] (xp,
    ``buf`` as in dw_corr) over the real output positions only, summed per output column in
    ``acc`` (KH, KW, OW) while the sample's plane is in cache, then across it; for the
    channels c0 <= c < c1. (Rows at unsigned flat offsets, as dw_corr3.)"""
    N, C, OH, OW = g.shape
    KH, KW = out.shape[1], out.shape[2]
    owu = _u(OW)
    gf = g.reshape(-1)
    af = acc.reshape(-1)
    for c in range(c0, c1):
        for j in range(af.shape[0]):
            af[j] = 0
        for n in range(N):
            _dw_plane(x, n, c, buf, plh, plw, wp)
            g0 = _u((n * C + c) * OH * OW)
            for a in range(KH):
                for b in range(KW):
                    ao = _u((a * KW + b) * OW)
                    for i in range(OH):
                        s0 = _u((i + a * d0) * wp + b * d1)
                        gi = g0 + _u(i * OW)
                        for j in range(owu):
                            af[ao + j] += gf[gi + j] * buf[s0 + j]
        for a in range(KH):
            for b in range(KW):
                ac = acc[a, b]
                t = ac[0]       # (OW >= 1; not ac[0] * 0, which is NaN for an inf)
                for j in range(1, OW):
                    t += ac[j]
                out[c, a, b] = t


@_jit
def col2im(d, gx, plane, s0, s1, d0, d1, plh, plw, wp):
    """The input gradient of a 2-D convolution (any stride and dilation) from its columns
    ``d`` (N, C, KH, KW, OH, OW): each (sample, channel) padded plane (``plane``, a work row
    of padded height * ``wp``) summed in cache, offsets row by row from zero as ops.conv adds
    them (the same sums), then cropped into ``gx`` (N, C, H, W)."""
    N, C, KH, KW, OH, OW = d.shape
    H, W = gx.shape[2], gx.shape[3]
    P = plane.shape[0]
    for n in range(N):
        for c in range(C):
            for j in range(P):
                plane[j] = 0
            for a in range(KH):
                for b in range(KW):
                    dab = d[n, c, a, b]
                    for i in range(OH):
                        base = (i * s0 + a * d0) * wp + b * d1
                        src = dab[i]
                        for j in range(OW):
                            plane[base + j * s1] += src[j]
            o = gx[n, c]
            for i in range(H):
                t = plane[(i + plh) * wp + plw:(i + plh) * wp + plw + W]
                row = o[i]
                for j in range(W):
                    row[j] = t[j]
