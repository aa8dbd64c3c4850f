"""numba kernels for ops.conv's sample-blocked 2-D convolution and for the scatter-add of
an index's backward (imported only where numba is installed; see ops._accel).

im2col/col2im work one (sample, channel) plane at a time, zero-padded in a small work row
that stays in cache and held as its stride phases (for stride s, the s x s sub-planes of
rows and columns congruent mod s), so that every row of columns is one contiguous run, a
loop LLVM vectorises, whatever the stride. col2im adds the kernel offsets row by row from
a zero plane, in the order ops.conv's NumPy path adds its slices (the same sums).
"""
import numba

__all__ = ["im2col", "col2im", "index_add_rows", "index_add_flat", "bn_affine", "bn_backward", "gather3", "gather3_add"]

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


@_jit
def bn_backward(g, xc, sinv, k, scale, out):
    """out[n, c, :] = ((g - sinv[c]) - xc * k[c]) * scale[c] over (N, C, M) arrays."""
    N, C, M = g.shape
    for n in range(N):
        for c in range(C):
            si = sinv[c]
            kc = k[c]
            sc = scale[c]
            gr = g[n, c]
            xr = xc[n, c]
            orow = out[n, c]
            for j in range(M):
                orow[j] = ((gr[j] - si) - xr[j] * kc) * sc


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
