"""numba kernels for ops.conv's direct 2-D convolution of few channels (imported only where
numba is installed; see ops._accel and the direct section of ops.conv).

No column matrix: each sample's input channels are copied, zero-padded, into one work row
of "wide" planes (padded height x padded width ``wp``, flattened), in which a kernel offset
(a, b) is the shift a * wp + b. An output plane is then computed over rows of the padded
width (OH * wp values; the wp - OW extra columns of each row are dropped), so every loop
over it is one long contiguous run that LLVM vectorises, reading its taps straight from
the cached planes. A forward (or an input gradient: the same correlation of the output
gradient, re-padded, with the flipped, transposed kernel) sums a whole 3x3 or 5x5 kernel's
taps in one expression per output channel, two output channels per read of a tap. A 5x5
weight gradient lays a block of samples' planes one after another, so that each kernel
offset's sum over the block is one long dot product of the output gradient's wide rows
(zero in the extra columns and rows) with the shifted planes, four output channels per
read of a tap.

corr_exact and corr_w_exact serve operands with an inf or NaN: sums over the taps that fall
inside the input only (the padding meets nothing).
"""
import numba

from ._accel_kernels import wide_vectors

__all__ = ["corr", "corr_w", "corr_exact", "corr_w_exact"]

_jit = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
# Multiply-adds fused (one rounding, not two: within the NumPy path's rounding, and twice
# the arithmetic per cycle); the weight gradient's dot products are reductions, which LLVM
# vectorises (several partial sums) only when allowed to reassociate them. No other
# fast-math flag: inf and NaN keep their IEEE meaning.
_jit_fma = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, fastmath={"contract"})
_jit_sum = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, fastmath={"reassoc", "contract"})
# (flat offsets unsigned, as in ops._accel_conv: a signed index that may be negative keeps
# LLVM from vectorising)
_u = numba.uint64


@_jit
def _planes(x, n, buf, P, plh, plw, wp):
    # x[n] into the interiors of the zero-bordered wide planes of buf (one of P per channel)
    wide_vectors()
    C, H, W = x.shape[1], x.shape[2], x.shape[3]
    wu = _u(W)
    for c in range(C):
        xc = x[n, c]
        for i in range(H):
            d = _u(c * P + (i + plh) * wp + plw)
            row = xc[i]
            for j in range(wu):
                buf[d + j] = row[j]


@_jit_fma
def _taps5(a0, a1, src, off, L, wp, v, q):
    # a0[t] += sum over the 5x5 taps (a, b) of v[a, b] * src[off + a*wp + b + t], a1 likewise
    # with q: two output channels from one read of each tap, a kernel row's sum apart
    # from the others' (independent chains of multiply-adds)
    wide_vectors()
    v00, v01, v02, v03, v04 = v[0, 0], v[0, 1], v[0, 2], v[0, 3], v[0, 4]
    q00, q01, q02, q03, q04 = q[0, 0], q[0, 1], q[0, 2], q[0, 3], q[0, 4]
    v10, v11, v12, v13, v14 = v[1, 0], v[1, 1], v[1, 2], v[1, 3], v[1, 4]
    q10, q11, q12, q13, q14 = q[1, 0], q[1, 1], q[1, 2], q[1, 3], q[1, 4]
    v20, v21, v22, v23, v24 = v[2, 0], v[2, 1], v[2, 2], v[2, 3], v[2, 4]
    q20, q21, q22, q23, q24 = q[2, 0], q[2, 1], q[2, 2], q[2, 3], q[2, 4]
    v30, v31, v32, v33, v34 = v[3, 0], v[3, 1], v[3, 2], v[3, 3], v[3, 4]
    q30, q31, q32, q33, q34 = q[3, 0], q[3, 1], q[3, 2], q[3, 3], q[3, 4]
    v40, v41, v42, v43, v44 = v[4, 0], v[4, 1], v[4, 2], v[4, 3], v[4, 4]
    q40, q41, q42, q43, q44 = q[4, 0], q[4, 1], q[4, 2], q[4, 3], q[4, 4]
    r0, r1, r2, r3, r4 = off, off + _u(1 * wp), off + _u(2 * wp), off + _u(3 * wp), off + _u(4 * wp)
    e1, e2, e3, e4 = _u(1), _u(2), _u(3), _u(4)
    for t in range(_u(L)):
        j = r0 + t
        s = src[j]
        x0 = v00 * s
        y0 = q00 * s
        s = src[j + e1]
        x0 += v01 * s
        y0 += q01 * s
        s = src[j + e2]
        x0 += v02 * s
        y0 += q02 * s
        s = src[j + e3]
        x0 += v03 * s
        y0 += q03 * s
        s = src[j + e4]
        x0 += v04 * s
        y0 += q04 * s
        j = r1 + t
        s = src[j]
        x1 = v10 * s
        y1 = q10 * s
        s = src[j + e1]
        x1 += v11 * s
        y1 += q11 * s
        s = src[j + e2]
        x1 += v12 * s
        y1 += q12 * s
        s = src[j + e3]
        x1 += v13 * s
        y1 += q13 * s
        s = src[j + e4]
        x1 += v14 * s
        y1 += q14 * s
        j = r2 + t
        s = src[j]
        x2 = v20 * s
        y2 = q20 * s
        s = src[j + e1]
        x2 += v21 * s
        y2 += q21 * s
        s = src[j + e2]
        x2 += v22 * s
        y2 += q22 * s
        s = src[j + e3]
        x2 += v23 * s
        y2 += q23 * s
        s = src[j + e4]
        x2 += v24 * s
        y2 += q24 * s
        j = r3 + t
        s = src[j]
        x3 = v30 * s
        y3 = q30 * s
        s = src[j + e1]
        x3 += v31 * s
        y3 += q31 * s
        s = src[j + e2]
        x3 += v32 * s
        y3 += q32 * s
        s = src[j + e3]
        x3 += v33 * s
        y3 += q33 * s
        s = src[j + e4]
        x3 += v34 * s
        y3 += q34 * s
        j = r4 + t
        s = src[j]
        x4 = v40 * s
        y4 = q40 * s
        s = src[j + e1]
        x4 += v41 * s
        y4 += q41 * s
        s = src[j + e2]
        x4 += v42 * s
        y4 += q42 * s
        s = src[j + e3]
        x4 += v43 * s
        y4 += q43 * s
        s = src[j + e4]
        x4 += v44 * s
        y4 += q44 * s
        a0[t] += x0 + x1 + x2 + x3 + x4
        a1[t] += y0 + y1 + y2 + y3 + y4


@_jit_fma
def _taps3(a0, a1, src, off, L, wp, v, q):
    # a0[t] += sum over the 3x3 taps (a, b) of v[a, b] * src[off + a*wp + b + t], a1 likewise
    # with q: two output channels from one read of each tap, a kernel row's sum apart
    # from the others' (independent chains of multiply-adds)
    wide_vectors()
    v00, v01, v02 = v[0, 0], v[0, 1], v[0, 2]
    q00, q01, q02 = q[0, 0], q[0, 1], q[0, 2]
    v10, v11, v12 = v[1, 0], v[1, 1], v[1, 2]
    q10, q11, q12 = q[1, 0], q[1, 1], q[1, 2]
    v20, v21, v22 = v[2, 0], v[2, 1], v[2, 2]
    q20, q21, q22 = q[2, 0], q[2, 1], q[2, 2]
    r0, r1, r2 = off, off + _u(1 * wp), off + _u(2 * wp)
    e1, e2 = _u(1), _u(2)
    for t in range(_u(L)):
        j = r0 + t
        s = src[j]
        x0 = v00 * s
        y0 = q00 * s
        s = src[j + e1]
        x0 += v01 * s
        y0 += q01 * s
        s = src[j + e2]
        x0 += v02 * s
        y0 += q02 * s
        j = r1 + t
        s = src[j]
        x1 = v10 * s
        y1 = q10 * s
        s = src[j + e1]
        x1 += v11 * s
        y1 += q11 * s
        s = src[j + e2]
        x1 += v12 * s
        y1 += q12 * s
        j = r2 + t
        s = src[j]
        x2 = v20 * s
        y2 = q20 * s
        s = src[j + e1]
        x2 += v21 * s
        y2 += q21 * s
        s = src[j + e2]
        x2 += v22 * s
        y2 += q22 * s
        a0[t] += x0 + x1 + x2
        a1[t] += y0 + y1 + y2



@_jit_fma
def _tap5(a0, src, off, L, wp, v):
    # _taps5 for one output channel
    wide_vectors()
    v00, v01, v02, v03, v04 = v[0, 0], v[0, 1], v[0, 2], v[0, 3], v[0, 4]
    v10, v11, v12, v13, v14 = v[1, 0], v[1, 1], v[1, 2], v[1, 3], v[1, 4]
    v20, v21, v22, v23, v24 = v[2, 0], v[2, 1], v[2, 2], v[2, 3], v[2, 4]
    v30, v31, v32, v33, v34 = v[3, 0], v[3, 1], v[3, 2], v[3, 3], v[3, 4]
    v40, v41, v42, v43, v44 = v[4, 0], v[4, 1], v[4, 2], v[4, 3], v[4, 4]
    r0, r1, r2, r3, r4 = off, off + _u(1 * wp), off + _u(2 * wp), off + _u(3 * wp), off + _u(4 * wp)
    e1, e2, e3, e4 = _u(1), _u(2), _u(3), _u(4)
    for t in range(_u(L)):
        j = r0 + t
        x0 = v00 * src[j]
        x0 += v01 * src[j + e1]
        x0 += v02 * src[j + e2]
        x0 += v03 * src[j + e3]
        x0 += v04 * src[j + e4]
        j = r1 + t
        x1 = v10 * src[j]
        x1 += v11 * src[j + e1]
        x1 += v12 * src[j + e2]
        x1 += v13 * src[j + e3]
        x1 += v14 * src[j + e4]
        j = r2 + t
        x2 = v20 * src[j]
        x2 += v21 * src[j + e1]
        x2 += v22 * src[j + e2]
        x2 += v23 * src[j + e3]
        x2 += v24 * src[j + e4]
        j = r3 + t
        x3 = v30 * src[j]
        x3 += v31 * src[j + e1]
        x3 += v32 * src[j + e2]
        x3 += v33 * src[j + e3]
        x3 += v34 * src[j + e4]
        j = r4 + t
        x4 = v40 * src[j]
        x4 += v41 * src[j + e1]
        x4 += v42 * src[j + e2]
        x4 += v43 * src[j + e3]
        x4 += v44 * src[j + e4]
        a0[t] += x0 + x1 + x2 + x3 + x4


@_jit_fma
def _tap3(a0, src, off, L, wp, v):
    # _taps3 for one output channel
    wide_vectors()
    v00, v01, v02 = v[0, 0], v[0, 1], v[0, 2]
    v10, v11, v12 = v[1, 0], v[1, 1], v[1, 2]
    v20, v21, v22 = v[2, 0], v[2, 1], v[2, 2]
    r0, r1, r2 = off, off + _u(1 * wp), off + _u(2 * wp)
    e1, e2 = _u(1), _u(2)
    for t in range(_u(L)):
        j = r0 + t
        x0 = v00 * src[j]
        x0 += v01 * src[j + e1]
        x0 += v02 * src[j + e2]
        j = r1 + t
        x1 = v10 * src[j]
        x1 += v11 * src[j + e1]
        x1 += v12 * src[j + e2]
        j = r2 + t
        x2 = v20 * src[j]
        x2 += v21 * src[j + e1]
        x2 += v22 * src[j + e2]
        a0[t] += x0 + x1 + x2



@_jit
def corr(x, w, y, buf, acc, plh, plw, wp, bias):
    """For a 3x3 or 5x5 ``w``: y[n, o, i, j] = sum over (c, a, b) of w[o, c, a, b] *
    xp[n, c, i + a, j + b] (+ bias[o] when ``bias`` is not empty, added to the rounded sum),
    xp the input zero-padded by (plh, plw) at the top and left to row length ``wp`` (and
    below to OH + KH - 1 rows). ``acc``: (2, Lr), Lr = OH * wp rounded up to whole vectors
    (the kernels run over it all); ``buf``: a zeroed work row of C * (OH + KH - 1) * wp +
    Lr - OH * wp + KW - 1."""
    N, C = x.shape[0], x.shape[1]
    O, KH, KW = w.shape[0], w.shape[2], w.shape[3]
    OH, OW = y.shape[2], y.shape[3]
    P = (OH + KH - 1) * wp
    Lr = acc.shape[1]
    with_bias = bias.shape[0] > 0
    owu = _u(OW)
    a0, a1 = acc[0], acc[1]
    for n in range(N):
        _planes(x, n, buf, P, plh, plw, wp)
        for o in range(0, O, 2):
            two = o + 1 < O
            o1 = o + 1 if two else o
            for t in range(Lr):
                a0[t] = 0
                a1[t] = 0
            for c in range(C):
                off = _u(c * P)
                if KH == 5:
                    if two:
                        _taps5(a0, a1, buf, off, Lr, wp, w[o, c], w[o1, c])
                    else:
                        _tap5(a0, buf, off, Lr, wp, w[o, c])
                elif two:
                    _taps3(a0, a1, buf, off, Lr, wp, w[o, c], w[o1, c])
                else:
                    _tap3(a0, buf, off, Lr, wp, w[o, c])
            for k in range(2 if two else 1):
                ak = acc[k]
                yo = y[n, o + k]
                for i in range(OH):
                    row = yo[i]
                    s = _u(i * wp)
                    if with_bias:
                        bk = bias[o + k]
                        for j in range(owu):
                            row[j] = ak[s + j] + bk
                    else:
                        for j in range(owu):
                            row[j] = ak[s + j]


@_jit_sum
def _dots5(g0, g1, src, off, L, out0, out1):
    # out0[b] = g0 . src[off + b:], out1[b] = g1 . src[off + b:] for b < 5 (sums in the arrays'
    # dtype: a literal 0 would make them float64)
    wide_vectors()
    s0 = s1 = s2 = s3 = s4 = src.dtype.type(0)
    p0 = p1 = p2 = p3 = p4 = src.dtype.type(0)
    e1, e2, e3, e4 = _u(1), _u(2), _u(3), _u(4)
    for t in range(_u(L)):
        j = off + t
        u, v = g0[t], g1[t]
        x0, x1, x2, x3, x4 = src[j], src[j + e1], src[j + e2], src[j + e3], src[j + e4]
        s0 += u * x0
        s1 += u * x1
        s2 += u * x2
        s3 += u * x3
        s4 += u * x4
        p0 += v * x0
        p1 += v * x1
        p2 += v * x2
        p3 += v * x3
        p4 += v * x4
    out0[0], out0[1], out0[2], out0[3], out0[4] = s0, s1, s2, s3, s4
    out1[0], out1[1], out1[2], out1[3], out1[4] = p0, p1, p2, p3, p4


@_jit_sum
def _dots5x4(g0, g1, g2, g3, src, off, L, out):
    # out[r, b] = g_r . src[off + b:] for r < 4, b < 5: four output channels from one read of
    # each tap (1.3x _dots5's rate measured here)
    wide_vectors()
    z = src.dtype.type(0)
    s00 = s01 = s02 = s03 = s04 = z
    s10 = s11 = s12 = s13 = s14 = z
    s20 = s21 = s22 = s23 = s24 = z
    s30 = s31 = s32 = s33 = s34 = z
    e1, e2, e3, e4 = _u(1), _u(2), _u(3), _u(4)
    for t in range(_u(L)):
        j = off + t
        x0, x1, x2, x3, x4 = src[j], src[j + e1], src[j + e2], src[j + e3], src[j + e4]
        u = g0[t]
        s00 += u * x0
        s01 += u * x1
        s02 += u * x2
        s03 += u * x3
        s04 += u * x4
        u = g1[t]
        s10 += u * x0
        s11 += u * x1
        s12 += u * x2
        s13 += u * x3
        s14 += u * x4
        u = g2[t]
        s20 += u * x0
        s21 += u * x1
        s22 += u * x2
        s23 += u * x3
        s24 += u * x4
        u = g3[t]
        s30 += u * x0
        s31 += u * x1
        s32 += u * x2
        s33 += u * x3
        s34 += u * x4
    out[0, 0], out[0, 1], out[0, 2], out[0, 3], out[0, 4] = s00, s01, s02, s03, s04
    out[1, 0], out[1, 1], out[1, 2], out[1, 3], out[1, 4] = s10, s11, s12, s13, s14
    out[2, 0], out[2, 1], out[2, 2], out[2, 3], out[2, 4] = s20, s21, s22, s23, s24
    out[3, 0], out[3, 1], out[3, 2], out[3, 3], out[3, 4] = s30, s31, s32, s33, s34


@_jit
def corr_w(x, g, parts, buf, gw, plh, plw, wp, B):
    """For a 5x5 kernel: parts[k, o, c, a, b] = sum over the samples n of the k-th block of B and (i, j) of
    g[n, o, i, j] * xp[n, c, i + a, j + b] (xp as in corr), for finite x and g. A block's
    padded planes lie one after another per channel (``buf``: C rows of (B + 1) * P, P the
    padded plane, zeroed), its output gradient's wide rows likewise per output channel
    (``gw``: (O, B * P), zeroed: only the real columns are written here), so that each
    kernel offset's sum over the block is one long dot product, the zeros of the extra
    columns and rows meeting finite values."""
    N, C = x.shape[0], x.shape[1]
    O, OH, OW = g.shape[1], g.shape[2], g.shape[3]
    KH, KW = parts.shape[3], parts.shape[4]
    P = (OH + KH - 1) * wp
    S = (B + 1) * P
    owu = _u(OW)
    for k in range(parts.shape[0]):
        n0 = k * B
        nb = min(B, N - n0)
        for m in range(nb):
            _planes(x, n0 + m, buf, S, plh + m * (OH + KH - 1), plw, wp)
            for o in range(O):
                go, row = g[n0 + m, o], gw[o]
                for i in range(OH):
                    s = _u(m * P + i * wp)
                    gi = go[i]
                    for j in range(owu):
                        row[s + j] = gi[j]
        L = nb * P
        o4 = O - O % 4
        for o in range(0, o4, 4):
            for c in range(C):
                for a in range(KH):
                    off = _u(c * S + a * wp)
                    _dots5x4(gw[o], gw[o + 1], gw[o + 2], gw[o + 3], buf, off, L, parts[k, o:o + 4, c, a])
        for o in range(o4, O, 2):
            o1 = o + 1 if o + 1 < O else o     # (an odd last channel computed twice)
            for c in range(C):
                for a in range(KH):
                    off = _u(c * S + a * wp)
                    _dots5(gw[o], gw[o1], buf, off, L, parts[k, o, c, a], parts[k, o1, c, a])


# Operands with an inf or NaN where PyTorch's oneDNN kernels run (see ops.conv._skips_padding):
# those add the products of real positions only; the padding meets nothing.

@_jit
def corr_exact(x, w, y, acc, plh, plw, bias):
    """corr's sums over the taps that fall inside the input only (``acc``: a work row of OW)."""
    N, C, H, W = x.shape
    O, KH, KW = w.shape[0], w.shape[2], w.shape[3]
    OH, OW = y.shape[2], y.shape[3]
    with_bias = bias.shape[0] > 0
    for n in range(N):
        for o in range(O):
            for i in range(OH):
                for j in range(OW):
                    acc[j] = 0
                for c in range(C):
                    for a in range(KH):
                        r = i + a - plh
                        if r < 0 or r >= H:
                            continue
                        xr = x[n, c, r]
                        for b in range(KW):
                            wv = w[o, c, a, b]
                            for j in range(max(0, plw - b), min(OW, W + plw - b)):
                                acc[j] += wv * xr[j + b - plw]
                row = y[n, o, i]
                for j in range(OW):
                    row[j] = acc[j] + bias[o] if with_bias else acc[j]


@_jit
def corr_w_exact(x, g, out, plh, plw):
    """out[o, c, a, b] = sum over n and the output positions (i, j) whose tap (a, b) falls
    inside the input of g[n, o, i, j] * x[n, c, i + a - plh, j + b - plw]."""
    N, C, H, W = x.shape
    O, OH, OW = g.shape[1], g.shape[2], g.shape[3]
    KH, KW = out.shape[2], out.shape[3]
    for o in range(O):
        for c in range(C):
            for a in range(KH):
                for b in range(KW):
                    s = out.dtype.type(0)
                    for n in range(N):
                        for i in range(max(0, plh - a), min(OH, H + plh - a)):
                            gi, xr = g[n, o, i], x[n, c, i + a - plh]
                            for j in range(max(0, plw - b), min(OW, W + plw - b)):
                                s += gi[j] * xr[j + b - plw]
                    out[o, c, a, b] = s
