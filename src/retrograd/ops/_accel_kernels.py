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
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from . import unary as _unary

__all__ = ["erf", "erfc", "gelu", "gelu_backward", "gelu_f32", "gelu_backward_f32", "dw_corr", "dw_corr3", "max_pool_2x2",
           "dw_weight_grad", "dw_weight_grad3", "col2im", "add_row", "sum_rows"]


@intrinsic
def wide_vectors(typingctx):
    """Called first in a kernel: LLVM may vectorise that function's loops over 512-bit
    registers where the CPU has them. (LLVM's tuning for Intel's AVX-512 server cores
    prefers 256-bit vectors, which halves the lanes of a compute-bound float32 loop; the
    attribute is this function's own: numba's other compiled code, the user's included,
    keeps the default.)"""
    def codegen(context, builder, sig, args):
        set.add(builder.function.attributes, '"prefer-vector-width"="512"')
        return context.get_dummy_value()
    return types.none(), codegen


@intrinsic
def _pow2(typingctx, m):
    """2**(n + 64) (float32) for the integer n held in the low bits of m = (anything) + 1.5 *
    2**23, from m's bits in 32-bit integer arithmetic (the NumPy path: unary._exp_neg_f32)."""
    def codegen(context, builder, sig, args):
        i32 = ir.IntType(32)
        bits = builder.add(builder.bitcast(args[0], i32), ir.Constant(i32, _unary._EXP_BIAS))
        return builder.bitcast(builder.shl(bits, ir.Constant(i32, 23)), args[0].type)
    return types.float32(types.float32), codegen


def _erf(t):
    """erf in t's precision (float32: the NumPy path's float32 formula; see _erf_f32)."""


def _erfc(t):
    """erfc in t's precision: libm's double erfc, rounded once for float32."""


_f = np.float32
E0, E1, E2, E3, E4, E5, E6 = (_f(c) for c in _unary._EXP_POLY)
LOG2E, SHIFTER, LN2_HI, LN2_LO = _f(_unary._EXP_LOG2E), _f(_unary._EXP_SHIFTER), _f(_unary._EXP_LN2_HI), _f(_unary._EXP_LN2_LO)
S0, S1, S2, S3, S4, S5, S6 = (_f(c) for c in _unary._ERF_SMALL)
B0, B1, B2, B3, B4, B5, B6, B7, B8 = (_f(c) for c in _unary._ERF_BIG)
EXP_FLOOR, UNSCALE, FOUR, ONE, CENTRE = _f(-104.0), _f(_unary._EXP_UNSCALE), _f(4.0), _f(1.0), _f(2.5)

# float32 exp (t <= 0) and erf: unary._exp_neg_f32 and unary._erf_f32 operation for operation,
# in float32 with no contraction into fused multiply-adds (the same bits); branch-free, so
# LLVM vectorises them inside the kernels' loops, into which it inlines them. (numba's cache
# entries are keyed on the source file of the kernel and its bytecode, not on the constants
# it reads from unary.py nor on the functions it inlines from here into _accel_nn_kernels:
# after changing those, delete the __pycache__/*.nbi and *.nbc files.)
_inline = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)


@_inline
def _exp_neg_f32(t):
    t = EXP_FLOOR if t < EXP_FLOOR else t        # NaN passes, as np.maximum lets it through
    m = t * LOG2E + SHIFTER
    n = m - SHIFTER
    r = t - n * LN2_HI
    r = r - n * LN2_LO
    p = r * E0 + E1
    p = p * r + E2
    p = p * r + E3
    p = p * r + E4
    p = p * r + E5
    p = p * r + E6
    return p * _pow2(m) * UNSCALE


@_inline
def _erf_f32(x):
    z = abs(x)
    z = FOUR if z > FOUR else z
    return _erf_f32_e(x, _exp_neg_f32(-(z * z)))


@_inline
def _erf_f32_e(x, e):
    # e: exp(-x*x) (unary._erf_f32's argument e)
    z = abs(x)
    z = FOUR if z > FOUR else z
    w = z * z
    s = w * S0 + S1
    s = s * w + S2
    s = s * w + S3
    s = s * w + S4
    s = s * w + S5
    s = s * w + S6
    small = s * z + z
    u = z - CENTRE
    b = u * B0 + B1
    b = b * u + B2
    b = b * u + B3
    b = b * u + B4
    b = b * u + B5
    b = b * u + B6
    b = b * u + B7
    b = b * u + B8
    big = ONE - e * b
    return math.copysign(small if z < ONE else big, x)


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
    wide_vectors()
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
    # e = exp(-x*x/2) from NumPy (float64: its SIMD exp, where libm's scalar one would cost
    # more than the rest)
    for i in range(x.shape[0]):
        xi = x[i]
        cdf = half * (one + _erf(xi * rsqrt2))
        out[i] = g[i] * (cdf + xi * (inv_sqrt_2pi * e[i]))


# float32 GELU: e = exp(-x*x/2), the pdf's, also serves as erf's exp(-z*z) (z = x / sqrt 2),
# one exp per element where erf and the pdf would take one each (activation._gelu_erf_exp,
# the NumPy path, does the same).

@_jit
def gelu_f32(x, out, half, one, rsqrt2, m_half):
    wide_vectors()
    for i in range(x.shape[0]):
        xi = x[i]
        out[i] = xi * half * (one + _erf_f32_e(xi * rsqrt2, _exp_neg_f32(xi * xi * m_half)))


@_jit
def gelu_backward_f32(g, x, out, half, one, rsqrt2, inv_sqrt_2pi, m_half):
    wide_vectors()
    for i in range(x.shape[0]):
        xi = x[i]
        e = _exp_neg_f32(xi * xi * m_half)
        cdf = half * (one + _erf_f32_e(xi * rsqrt2, e))
        out[i] = g[i] * (cdf + xi * (inv_sqrt_2pi * e))


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
def _column_sums(acc, out, c):
    """out[c, a, b] = the sum of acc[a, b] (KH, KW, OW) over its columns, in order."""
    KH, KW, OW = acc.shape
    for a in range(KH):
        for b in range(KW):
            ac = acc[a, b]
            t = ac[0]       # (OW >= 1; not ac[0] * 0, which is NaN for an inf)
            for j in range(1, OW):
                t += ac[j]
            out[c, a, b] = t


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
        _column_sums(acc, out, c)


# A 3x3 kernel in float32: the nine taps of each column updated in one pass over each row of
# the gradient (one load of it for nine products), each accumulator still summed in the
# order (sample, row) of dw_weight_grad, so the same bits. Measured on a 16 x 32 x 32 x 32
# input (one thread): 0.34-0.42 ms against 0.60-0.74. In float64 LLVM does not vectorise the
# nine streams (1.6-2.2 ms against 1.2-1.4), so float64 keeps dw_weight_grad.
@_jit
def dw_weight_grad3(x, g, out, buf, acc, plh, plw, wp, d0, d1, c0, c1):
    """dw_weight_grad for a 3x3 kernel (``acc`` (3, 3, OW)): the same sums."""
    N, C, OH, OW = g.shape
    owu = _u(OW)
    gf = g.reshape(-1)
    af = acc.reshape(-1)
    e1, e2 = _u(d1), _u(2 * d1)
    for c in range(c0, c1):
        for j in range(af.shape[0]):
            af[j] = 0
        for n in range(N):
            _dw_plane(x, n, c, buf, plh, plw, wp)
            g0 = _u((n * C + c) * OH * OW)
            for i in range(OH):
                gi = g0 + _u(i * OW)
                p0 = _u(i * wp)
                p1 = _u((i + d0) * wp)
                p2 = _u((i + 2 * d0) * wp)
                for j in range(owu):
                    gv = gf[gi + j]
                    af[j] += gv * buf[p0 + j]
                    af[owu + j] += gv * buf[p0 + e1 + j]
                    af[2 * owu + j] += gv * buf[p0 + e2 + j]
                    af[3 * owu + j] += gv * buf[p1 + j]
                    af[4 * owu + j] += gv * buf[p1 + e1 + j]
                    af[5 * owu + j] += gv * buf[p1 + e2 + j]
                    af[6 * owu + j] += gv * buf[p2 + j]
                    af[7 * owu + j] += gv * buf[p2 + e1 + j]
                    af[8 * owu + j] += gv * buf[p2 + e2 + j]
        _column_sums(acc, out, c)


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


@_jit
def max_pool_2x2(x, best, arg):
    """2x2, stride-2 max pooling of the planes ``x`` (B, H, W) in one pass: ``best`` (B, OH,
    OW) gets each window's maximum as PyTorch's kernel picks it (row by row, the first
    maximum; a NaN replaces whatever came before), the element itself (a +0/-0 tie keeps the
    first's sign), and ``arg`` (int8) its offset 0-3 in the window."""
    B, OH, OW = best.shape
    for b in range(B):
        for i in range(OH):
            r0 = x[b, 2 * i]
            r1 = x[b, 2 * i + 1]
            for j in range(OW):
                m = r0[2 * j]
                k = 0
                v = r0[2 * j + 1]
                if v > m or v != v:
                    m = v
                    k = 1
                v = r1[2 * j]
                if v > m or v != v:
                    m = v
                    k = 2
                v = r1[2 * j + 1]
                if v > m or v != v:
                    m = v
                    k = 3
                best[b, i, j] = m
                arg[b, i, j] = k


@_jit
def add_row(r, b):
    """r[i, j] += b[j] over every row of the C-contiguous 2-D ``r`` (a linear layer's bias):
    one pass, where NumPy's broadcast add runs ~2x the time (512 x 128 float32: 11 us
    against 4.4)."""
    wide_vectors()
    m, n = r.shape
    for i in range(m):
        for j in range(n):
            r[i, j] += b[j]


@_jit
def sum_rows(g, out, zero):
    """out[j] = ((0 + g[0, j]) + g[1, j]) + ... in row order: NumPy's sum over axis 0 of a
    C-contiguous 2-D array, the same bits (a bias's gradient), in ~0.5x its time."""
    wide_vectors()
    m, n = g.shape
    for j in range(n):
        out[j] = zero
    for i in range(m):
        for j in range(n):
            out[j] += g[i, j]
