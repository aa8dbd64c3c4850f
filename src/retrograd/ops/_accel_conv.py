"""numba kernels for ops.conv's sample-blocked 2-D convolution and for the scatter-add of
an index's backward (imported only where numba is installed; see ops._accel).

im2col/col2im work one (sample, channel) plane at a time, zero-padded in a small work row
that stays in cache and held as its stride phases (for stride s, the s x s sub-planes of
rows and columns congruent mod s), so that every row of columns is one contiguous run, a
loop LLVM vectorises, whatever the stride. col2im adds the kernel offsets row by row from
a zero plane, in the order ops.conv's NumPy path adds its slices (the same sums).
"""
import numba
import numpy as np

__all__ = ["im2col", "col2im", "wino_in", "wino_out", "wino_gin", "wino_fwd_blocks", "wino_w_blocks", "index_add_rows", "index_add_flat", "bn_affine", "bn_stats", "bn_grad_sums", "bn_backward_x", "gather3", "gather3_add"]

_jit = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
# Row copies and adds index flat arrays at unsigned offsets: numba wraps a signed index that
# may be negative, and that branch keeps LLVM from vectorising a short row's loop (a row
# sliced out first costs a view per row instead: rows of 16 or 32 elements paid more for
# their views than for their copies).
_u = numba.uint64


@_jit
def _to_phases(x, n, c, ph, plh, plw, s0, s1, pr, pc):
    # x[n, c] into the interior of the zero-bordered padded plane held as s0 * s1 phase
    # planes (pr x pc each): padded (r, q) lives in phase (r % s0, q % s1) at (r // s0, q // s1)
    H, W = x.shape[2], x.shape[3]
    xc = x[n, c]
    for i in range(H):
        r = i + plh
        rb = (r % s0) * s1
        ro = (r // s0) * pc
        row = xc[i]
        for q in range(s1):
            j0 = (q - plw) % s1          # the first column j with (j + plw) % s1 == q
            if j0 >= W:
                continue
            dst = ph[(rb + q) * pr * pc + ro + (j0 + plw) // s1:]
            if s1 == 1:
                for j in range(W):
                    dst[j] = row[j]
            else:
                cnt = (W - j0 + s1 - 1) // s1
                for t in range(cnt):
                    dst[t] = row[j0 + t * s1]


# Column stride 2 on float32 rows of even length: a row's two column phases are the low and
# high halves of its elements read as uint64 pairs (little-endian), which LLVM splits and
# joins a vector at a time where the element-by-element stride-2 copy runs scalar. The
# callers pass these views (x64/gx64 (N, C, H, W/2), ph32 the work row as uint32), or empty
# ones for the general path. A pure copy: the same bits.

@_jit
def _pairs_to_phases(x64, n, c, ph32, plh, plw, s0, pr, pc):
    # padded column q = j + plw goes to phase q % 2 at q // 2: a pair's even column to the
    # even phase at (plw + 1) // 2 + t, its odd one to the odd phase at plw // 2 + t (the
    # two swap places for an odd plw)
    H, W2 = x64.shape[2], x64.shape[3]
    P = pr * pc
    xc = x64[n, c]
    e0 = (plw + 1) // 2
    o0 = plw // 2
    for i in range(H):
        r = i + plh
        rb = (r % s0) * 2
        ro = (r // s0) * pc
        row = xc[i]
        ev = ph32[rb * P + ro + e0:rb * P + ro + e0 + W2]
        od = ph32[(rb + 1) * P + ro + o0:(rb + 1) * P + ro + o0 + W2]
        if plw % 2 == 0:
            for t in range(W2):
                v = row[t]
                ev[t] = numba.uint32(v & 0xFFFFFFFF)
                od[t] = numba.uint32(v >> 32)
        else:
            for t in range(W2):
                v = row[t]
                od[t] = numba.uint32(v & 0xFFFFFFFF)
                ev[t] = numba.uint32(v >> 32)


@_jit
def _phases_to_pairs(gx64, n, c, ph32, plh, plw, s0, pr, pc):
    # the inverse of _pairs_to_phases
    H, W2 = gx64.shape[2], gx64.shape[3]
    P = pr * pc
    o = gx64[n, c]
    e0 = (plw + 1) // 2
    o0 = plw // 2
    sh = numba.uint64(32)
    for i in range(H):
        r = i + plh
        rb = (r % s0) * 2
        ro = (r // s0) * pc
        row = o[i]
        ev = ph32[rb * P + ro + e0:rb * P + ro + e0 + W2]
        od = ph32[(rb + 1) * P + ro + o0:(rb + 1) * P + ro + o0 + W2]
        if plw % 2 == 0:
            for t in range(W2):
                row[t] = numba.uint64(ev[t]) | (numba.uint64(od[t]) << sh)
        else:
            for t in range(W2):
                row[t] = numba.uint64(od[t]) | (numba.uint64(ev[t]) << sh)


@_jit
def im2col(x, cols, ph, s0, s1, d0, d1, plh, plw, pr, pc, x64, ph32):
    """The columns (N, C, KH, KW, OH, OW) of a 2-D convolution of ``x`` (N, C, H, W) (any
    stride and dilation). The zero-padded plane is held as its s0 * s1 stride phases
    (``ph``: a zeroed work row of s0 * s1 * pr * pc, pr x pc each; only the interior is
    written, so the border stays zero across calls), in which every column row is one
    contiguous run. ``x64``, ``ph32``: uint64/uint32 views for column stride 2, or empty."""
    N, C, KH, KW, OH, OW = cols.shape
    P = pr * pc
    pairs = x64.shape[3] > 0
    flat = cols.reshape(-1)
    owu, pcu = _u(OW), _u(pc)
    for n in range(N):
        for c in range(C):
            if pairs:
                _pairs_to_phases(x64, n, c, ph32, plh, plw, s0, pr, pc)
            else:
                _to_phases(x, n, c, ph, plh, plw, s0, s1, pr, pc)
            dst = _u(((n * C + c) * KH * KW) * OH * OW)
            for a in range(KH):
                ra = a * d0
                for b in range(KW):
                    cb = b * d1
                    src = _u(((ra % s0) * s1 + cb % s1) * P + (ra // s0) * pc + cb // s1)
                    for i in range(OH):
                        for j in range(owu):
                            flat[dst + j] = ph[src + j]
                        src += pcu
                        dst += owu


@_jit
def col2im(d, gx, ph, s0, s1, d0, d1, plh, plw, pr, pc, gx64, ph32):
    """The adjoint of im2col: columns ``d`` (N, C, KH, KW, OH, OW) summed into their padded
    plane (``ph``: a work row of its stride phases, as in im2col), offsets in order from
    zero, then cropped into ``gx`` (N, C, H, W) (through ``gx64``, ``ph32`` when not empty,
    as in im2col)."""
    N, C, KH, KW, OH, OW = d.shape
    H, W = gx.shape[2], gx.shape[3]
    P = pr * pc
    T = ph.shape[0]
    pairs = gx64.shape[3] > 0
    flat = d.reshape(-1)
    owu, pcu = _u(OW), _u(pc)
    for n in range(N):
        for c in range(C):
            for j in range(T):
                ph[j] = 0
            src = _u(((n * C + c) * KH * KW) * OH * OW)
            for a in range(KH):
                ra = a * d0
                for b in range(KW):
                    cb = b * d1
                    dst = _u(((ra % s0) * s1 + cb % s1) * P + (ra // s0) * pc + cb // s1)
                    for i in range(OH):
                        for j in range(owu):
                            ph[dst + j] += flat[src + j]
                        dst += pcu
                        src += owu
            if pairs:
                _phases_to_pairs(gx64, n, c, ph32, plh, plw, s0, pr, pc)
                continue
            o = gx[n, c]
            for i in range(H):
                r = i + plh
                rb = (r % s0) * s1
                ro = (r // s0) * pc
                row = o[i]
                for q in range(s1):
                    j0 = (q - plw) % s1
                    if j0 >= W:
                        continue
                    src = ph[(rb + q) * P + ro + (j0 + plw) // s1:]
                    if s1 == 1:
                        for j in range(W):
                            row[j] = src[j]
                    else:
                        cnt = (W - j0 + s1 - 1) // s1
                        for t in range(cnt):
                            row[j0 + t * s1] = src[t]


# Winograd F(2x2, 3x3) transforms (see ops.conv._wino): a sample's (channel) plane goes in
# zero-padded and held as its four (row, column) parity phases, each (th + 1) x pc, so that
# every 4x4 input tile (rows 2ti..2ti+3, columns 2tj..2tj+3) is read at the same flat offset
# k = ti * pc + tj of each phase, and each of the 16 transformed values of all the tiles is
# one loop over k with a single output stream (which LLVM vectorises). Tiles run "wide":
# pc = tw + 1 tile columns a row, the last one a garbage tile no output takes.

@_jit
def _wino_planes(x, b, c, ph, plh, plw, hr, pc):
    # x[b, c] into the interior of the zero-bordered parity phases ph (4 * hr * pc), a row's
    # even and odd padded columns by one stride-2 read each; returns whether a value was inf
    # or NaN (v * 0 is not 0: an integer or-reduction, which vectorises where a float sum
    # would not)
    H, W = x.shape[2], x.shape[3]
    xc = x[b, c]
    P = hr * pc
    j0 = plw & 1                        # the first column that lands in the even phase
    ne, no = (W - j0 + 1) // 2, (W - (1 - j0) + 1) // 2
    de, do = (j0 + plw) >> 1, (1 - j0 + plw) >> 1
    je, jo = _u(j0), _u(1 - j0)
    bad = False
    for i in range(H):
        r = i + plh
        base = (r & 1) * 2 * P + (r >> 1) * pc
        row = xc[i]
        ev = ph[base + de:base + de + ne]
        od = ph[base + P + do:base + P + do + no]
        for t in range(_u(ne)):
            v = row[je + t + t]
            bad |= (v * 0) != 0
            ev[t] = v
        for t in range(_u(no)):
            v = row[jo + t + t]
            bad |= (v * 0) != 0
            od[t] = v
    return bad


# Even widths: a float32 row read as uint64 pairs (the im2col kernels' trick above), each
# pair's low half one parity phase's value and its high half the other's, which LLVM
# vectorises where the stride-2 float copy of _wino_planes runs scalar (0.55-0.6x its time).
# inf/NaN are told by their exponent bits (all ones) in integer arithmetic.
_EXP32 = _u(0x7F800000)
_LO32 = _u(0xFFFFFFFF)


@_jit
def _wino_pair_planes(x64, b, c, ph32, plh, plw, hr, pc):
    # _wino_planes through x64 (N, C, H, W/2) and the work row as uint32: padded column
    # 2t + plw takes a pair's low half, 2t + 1 + plw its high half
    H, W2 = x64.shape[2], x64.shape[3]
    xc = x64[b, c]
    P = hr * pc
    e0, o0 = (plw + 1) >> 1, plw >> 1        # where a row's first even / odd padded column lands
    bad = False
    sh = _u(32)
    for i in range(H):
        r = i + plh
        base = (r & 1) * 2 * P + (r >> 1) * pc
        row = xc[i]
        ev = ph32[base + e0:base + e0 + W2]
        od = ph32[base + P + o0:base + P + o0 + W2]
        lo_to, hi_to = (ev, od) if plw & 1 == 0 else (od, ev)
        for t in range(_u(W2)):
            v = row[t]
            lo, hi = v & _LO32, v >> sh
            bad |= ((lo & _EXP32) == _EXP32) | ((hi & _EXP32) == _EXP32)
            lo_to[t] = numba.uint32(lo)
            hi_to[t] = numba.uint32(hi)
    return bad


@_jit
def _wino_combine(V, ph, dst, o1, o2, o3, o4, L, rplus, cplus):
    # V[dst + k] = (p1 +- p2) +- (p3 +- p4): a row combination of B^T over two phase
    # offsets, at two column offsets, combined (one loop per sign pattern: no multiplies)
    if rplus and cplus:
        for k in range(L):
            V[dst + k] = (ph[o1 + k] + ph[o2 + k]) + (ph[o3 + k] + ph[o4 + k])
    elif rplus:
        for k in range(L):
            V[dst + k] = (ph[o1 + k] + ph[o2 + k]) - (ph[o3 + k] + ph[o4 + k])
    elif cplus:
        for k in range(L):
            V[dst + k] = (ph[o1 + k] - ph[o2 + k]) + (ph[o3 + k] - ph[o4 + k])
    else:
        for k in range(L):
            V[dst + k] = (ph[o1 + k] - ph[o2 + k]) - (ph[o3 + k] - ph[o4 + k])


@_jit
def wino_in(x, V, ph, plh, plw, hr, pc, th, xs, T, tab, sgn, x64, ph32):
    """V[xi * xs + c * T + b * th * pc + k] = (B^T d B)[xi] of the tile k = ti * pc + tj of
    x[b, c] zero-padded by (plh, plw) at the top and left: ``tab`` (16, 4) the four phase
    offsets and ``sgn`` (16, 2) the signs (+-1) of the row and column combinations, as
    (p1 + sr * p2) + sc * (p3 + sr * p4). ``x64``, ``ph32``: x as uint64 pairs and the work
    row as uint32 (float32 of even width, little-endian), or empty. Returns whether every
    value of x was finite (where not, V is not the transform the convolution needs and the
    caller takes another path)."""
    B, C = x.shape[0], x.shape[1]
    L = _u(th * pc)
    pairs = x64.shape[3] > 0
    bad = False
    for b in range(B):
        for c in range(C):
            if pairs:
                bad |= _wino_pair_planes(x64, b, c, ph32, plh, plw, hr, pc)
            else:
                bad |= _wino_planes(x, b, c, ph, plh, plw, hr, pc)
            for xi in range(16):
                _wino_combine(V, ph, _u(xi * xs + c * T + b * th * pc), _u(tab[xi, 0]), _u(tab[xi, 1]),
                              _u(tab[xi, 2]), _u(tab[xi, 3]), L, sgn[xi, 0] > 0, sgn[xi, 1] > 0)
    return not bad


@_jit
def _wino_rows(M, tq, m0, m1, m2, m3, n0, n1, n2, n3, L, p):
    # output row 2ti + p of each tile k = ti * pc + tj over L tiles: A^T's row p over the
    # tile's rows (offsets m0..m3 of its rows xi // 4 = 0..3: p = 0 takes m0 + m1 + m2, p = 1
    # m1 - m2 - m3) at each of its columns (offsets n0..n3), then both rows of A^T over those
    # four sums: the even column's value to tq[2k], the odd one's to tq[2k + 1] (so that the
    # tiles' row lies in tq as the output row, one stride-2 store pair LLVM vectorises)
    if p == 0:
        a0, a1, a2 = m0, m1, m2
    else:
        a0, a1, a2 = m1, m2, m3
    one = _u(1)
    if p == 0:
        for k in range(L):
            s0 = (M[a0 + n0 + k] + M[a1 + n0 + k]) + M[a2 + n0 + k]
            s1 = (M[a0 + n1 + k] + M[a1 + n1 + k]) + M[a2 + n1 + k]
            s2 = (M[a0 + n2 + k] + M[a1 + n2 + k]) + M[a2 + n2 + k]
            s3 = (M[a0 + n3 + k] + M[a1 + n3 + k]) + M[a2 + n3 + k]
            tq[k + k] = (s0 + s1) + s2
            tq[k + k + one] = (s1 - s2) - s3
    else:
        for k in range(L):
            s0 = (M[a0 + n0 + k] - M[a1 + n0 + k]) - M[a2 + n0 + k]
            s1 = (M[a0 + n1 + k] - M[a1 + n1 + k]) - M[a2 + n1 + k]
            s2 = (M[a0 + n2 + k] - M[a1 + n2 + k]) - M[a2 + n2 + k]
            s3 = (M[a0 + n3 + k] - M[a1 + n3 + k]) - M[a2 + n3 + k]
            tq[k + k] = (s0 + s1) + s2
            tq[k + k + one] = (s1 - s2) - s3


@_jit
def wino_out(M, y, tq, th, tw, pc, xs, T, bias):
    """y[b, o] from M[xi * xs + o * T + b * th * pc + k]: A^T m A of each tile, one output
    row parity at a time into the work row ``tq`` (2 * th * pc, the tiles' rows laid out as
    output rows of 2 * pc), then copied row by row into y; plus bias[o] (after) when ``bias``
    is not empty. Returns whether every output is finite (from finite operands a transform's
    sum can still overflow where the convolution's does not: the caller then takes the
    column path)."""
    B, O = y.shape[0], y.shape[1]
    oh, ow = y.shape[2], y.shape[3]
    L = _u(th * pc)
    with_bias = bias.shape[0] > 0
    bad = False
    yf = y.reshape(-1)
    x0, x1, x2, x3 = _u(0), _u(xs), _u(2 * xs), _u(3 * xs)
    x4, x8, x12 = _u(4 * xs), _u(8 * xs), _u(12 * xs)
    owu = _u(ow)
    pc2 = _u(2 * pc)
    for b in range(B):
        for o in range(O):
            m = _u(o * T + b * th * pc)
            yb = _u((b * O + o) * oh * ow)
            for p in range(2):
                _wino_rows(M, tq, m, m + x4, m + x8, m + x12, x0, x1, x2, x3, L, p)
                for ti in range(th):
                    src = _u(ti) * pc2
                    dst = yb + _u((2 * ti + p) * ow)
                    if with_bias:
                        bo = bias[o]
                        for j in range(owu):
                            u = tq[src + j] + bo
                            bad |= (u * 0) != 0
                            yf[dst + j] = u
                    else:
                        for j in range(owu):
                            u = tq[src + j]
                            bad |= (u * 0) != 0
                            yf[dst + j] = u
    return not bad


@_jit
def _wino_gcombine(Z, gp, dst, o1, o2, o3, o4, n, r, s):
    # Z[dst + k] = (A dy A^T)[4r + s] of the tiles k < n from their four parity phases at
    # o1 = (0, 0), o2 = (1, 0), o3 = (0, 1), o4 = (1, 1) (row, column parity): A's rows are
    # y0, y0 + y1, y0 - y1, -y1 (sr: 0 the row y0 alone, 1 y0 + y1, -1 y0 - y1, 2 -y1), then
    # the same over the columns
    if r == 0:
        a, b, c, d, sr = o1, o1, o3, o3, 0
    elif r == 1:
        a, b, c, d, sr = o1, o2, o3, o4, 1
    elif r == 2:
        a, b, c, d, sr = o1, o2, o3, o4, -1
    else:
        a, b, c, d, sr = o2, o2, o4, o4, 2
    for k in range(n):
        if sr == 0:
            u = gp[a + k]
            v = gp[c + k]
        elif sr == 1:
            u = gp[a + k] + gp[b + k]
            v = gp[c + k] + gp[d + k]
        elif sr == -1:
            u = gp[a + k] - gp[b + k]
            v = gp[c + k] - gp[d + k]
        else:
            u = -gp[a + k]
            v = -gp[c + k]
        if s == 0:
            Z[dst + k] = u
        elif s == 1:
            Z[dst + k] = u + v
        elif s == 2:
            Z[dst + k] = u - v
        else:
            Z[dst + k] = -v


@_jit
def wino_gin(g, Z, gp, th, tw, pc, xs, T):
    """Z[xi * xs + o * T + b * th * pc + k] = (A dy A^T)[xi] of the 2x2 output-gradient tile k
    of g[b, o]: the weight gradient's tiles. ``gp``: a work row of 4 * T, zeroed once by the
    caller, where a channel's four parity phases go for all the block's samples in Z's own
    layout (phase q at q * T + b * th * pc + ti * pc + tj; the garbage tile column tj = tw is
    never written, so zero): each transformed value is one loop over the channel's tiles of
    every sample (short planes: 0.8x the time of a loop per plane), in cache. Returns whether
    every value of g was finite (as wino_in)."""
    B, O = g.shape[0], g.shape[1]
    gf = g.reshape(-1)
    Tu = _u(T)
    n = _u(B * th * pc)
    twu, pcu, one = _u(tw), _u(pc), _u(1)
    plane = _u(4 * th * tw)
    bad = False
    for o in range(O):
        for b in range(B):
            src = _u(b * O + o) * plane
            dst = _u(b * th * pc)
            for i in range(2 * th):
                ev = dst + _u(i & 1) * (Tu + Tu) + _u(i >> 1) * pcu
                od = ev + Tu
                for t in range(twu):
                    u = gf[src + t + t]
                    v = gf[src + t + t + one]
                    bad |= ((u * 0) != 0) | ((v * 0) != 0)
                    gp[ev + t] = u
                    gp[od + t] = v
                src += twu + twu
        for xi in range(16):
            _wino_gcombine(Z, gp, _u(xi * xs + o * T), _u(0), Tu + Tu, Tu, Tu + Tu + Tu, n, xi >> 2, xi & 3)
    return not bad


# A run of sample blocks of a Winograd pass in one call: the transforms and, between them,
# the 16 products of a block as one MKL cblas_sgemm_batch_strided call through ``gemm`` (a
# ctypes function taking addresses as int64, see ops._team), so a run holds the GIL only to
# start: two runs on two threads then overlap fully (with a call per step, each handing the
# GIL over between the threads, two runs took 0.8x the time of one). The same values as
# ops.conv's per-step path, which takes over where MKL is absent.

@_jit
def _wino_in_block(x, i, j, V, ph, plh, plw, hr, pc, th, xs, T, tab, sgn, x64, ph32):
    # wino_in of samples [i, j) (through their uint64 pairs where x64 holds them): their tile
    # count, or -1 where an input was inf or NaN
    if wino_in(x[i:j], V, ph, plh, plw, hr, pc, th, xs, T, tab, sgn, x64[i:j] if x64.shape[3] > 0 else x64, ph32):
        return (j - i) * th * pc
    return -1


@_jit
def wino_fwd_blocks(x, V, ph, plh, plw, hr, pc, th, xs, T, tab, sgn, x64, ph32, U, M, y, tq, tw, xm, bias,
                    i0, i1, b, gemm):
    """ops.conv._wino's run over samples [i0, i1) in blocks of b: wino_in, U (16, O, C) @ the
    block's transformed tiles, wino_out. False where a transform met inf or NaN (the caller
    then takes the column path), as wino_in and wino_out."""
    o, c = U.shape[1], U.shape[2]
    for i in range(i0, i1, b):
        j = min(i1, i + b)
        t = _wino_in_block(x, i, j, V, ph, plh, plw, hr, pc, th, xs, T, tab, sgn, x64, ph32)
        if t < 0:
            return False
        gemm(101, 111, 111, o, t, c, np.float32(1.0), U.ctypes.data, c, o * c, V.ctypes.data, T, xs,
             np.float32(0.0), M.ctypes.data, T, xm, 16)
        if not wino_out(M, y[i:j], tq, th, tw, pc, xm, T, bias):
            return False
    return True


@_jit
def wino_w_blocks(x, g, V, Z, ph, gp, plh, plw, hr, pc, th, tw, xs, xm, T, tab, sgn, x64, ph32, parts, i0, i1, b,
                  gemm):
    """ops.conv._wino_w's run over samples [i0, i1): per block of b, wino_in of x and wino_gin
    of g, then parts[block] (16, O, C) = Z (16, O, t) @ V (16, C, t)^T. False where a
    transform met inf or NaN."""
    for i in range(i0, i1, b):
        j = min(i1, i + b)
        t = _wino_in_block(x, i, j, V, ph, plh, plw, hr, pc, th, xs, T, tab, sgn, x64, ph32)
        if t < 0 or not wino_gin(g[i:j], Z, gp, th, tw, pc, xm, T):
            return False
        o, c = parts.shape[2], parts.shape[3]
        gemm(101, 111, 112, o, c, t, np.float32(1.0), Z.ctypes.data, T, xm, V.ctypes.data, T, xs,
             np.float32(0.0), parts[i // b].ctypes.data, c, o * c, 16)
    return True


@_jit
def index_add_rows(out, idx, src):
    """out[idx[i]] += src[i] for each row i in order (rows of one length, in range)."""
    D = out.shape[1]
    for i in range(idx.shape[0]):
        dst = out[idx[i]]
        s = src[i]
        for j in range(D):
            dst[j] += s[j]


@_jit
def index_add_flat(out, idx, src):
    """out[idx[i]] += src[i] for each i in order (1-D, indices in range)."""
    for i in range(idx.shape[0]):
        out[idx[i]] += src[i]


# Batch norm's elementwise passes, fused (one read of each operand, one write), with the
# NumPy path's operations in its order, each rounded as there: the same bits.

@_jit
def bn_affine(x, scale, shift, out):
    """out[n, c, :] = x[n, c, :] * scale[c] + shift[c] over (N, C, M) arrays."""
    N, C, M = x.shape
    for n in range(N):
        for c in range(C):
            a = scale[c]
            b = shift[c]
            xr = x[n, c]
            orow = out[n, c]
            for j in range(M):
                orow[j] = xr[j] * a + b


# Batch norm's per-channel reductions, in float64 whatever the data's dtype (PyTorch's CPU
# kernels accumulate float in double too) and with reassociation allowed so that LLVM
# vectorises the sums (no other fast-math flag: infs and NaNs propagate as written). A
# channel's rows are read once per pass while they are still in cache.

_jit_sum = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, fastmath={"reassoc"})


@_jit_sum
def bn_stats(x, mean, var):
    """mean[c] and biased var[c] of x[:, c, :] over (N, C, M) x, in two passes."""
    N, C, M = x.shape
    inv = 1.0 / (N * M) if N * M else np.nan
    for c in range(C):
        s = 0.0
        for n in range(N):
            xr = x[n, c]
            for j in range(M):
                s += xr[j]
        m = s * inv
        q = 0.0
        for n in range(N):
            xr = x[n, c]
            for j in range(M):
                d = xr[j] - m
                q += d * d
        mean[c] = m
        var[c] = q * inv


@_jit_sum
def bn_grad_sums(g, x, mean, s, dotp):
    """s[c] = sum of g[:, c, :] and dotp[c] = sum of (x - mean[c]) * g over (N, C, M) arrays."""
    N, C, M = g.shape
    for c in range(C):
        a = 0.0
        b = 0.0
        mc = np.float64(mean[c])
        for n in range(N):
            gr = g[n, c]
            xr = x[n, c]
            for j in range(M):
                gj = np.float64(gr[j])
                a += gj
                b += (xr[j] - mc) * gj
        s[c] = a
        dotp[c] = b


@_jit
def bn_backward_x(g, x, mean, sinv, k, scale, out):
    """out[n, c, :] = ((g - sinv[c]) - (x - mean[c]) * k[c]) * scale[c] over (N, C, M) arrays."""
    N, C, M = g.shape
    for n in range(N):
        for c in range(C):
            mc = mean[c]
            si = sinv[c]
            kc = k[c]
            sc = scale[c]
            gr = g[n, c]
            xr = x[n, c]
            orow = out[n, c]
            for j in range(M):
                orow[j] = ((gr[j] - si) - (xr[j] - mc) * kc) * sc


# gather along a dim and its adjoint, over (A, N, B) views of the input (N the gathered
# dim) and (A, M, B) views of an index of the input's extent off that dim

@_jit
def gather3(x, idx, out):
    """out[a, i, b] = x[a, idx[a, i, b], b] (indices in range)."""
    A, M, B = idx.shape
    for a in range(A):
        xa = x[a]
        for i in range(M):
            ir = idx[a, i]
            orow = out[a, i]
            for b in range(B):
                orow[b] = xa[ir[b], b]


@_jit
def gather3_add(z, idx, g):
    """z[a, idx[a, i, b], b] += g[a, i, b], in the C order of (a, i, b) (as NumPy's add.at
    over the flat positions adds them)."""
    A, M, B = idx.shape
    for a in range(A):
        za = z[a]
        for i in range(M):
            ir = idx[a, i]
            gr = g[a, i]
            for b in range(B):
                za[ir[b], b] += gr[b]
