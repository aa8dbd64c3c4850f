"""numba kernels for ops.conv's sample-blocked 2-D convolution and for the scatter-add of
an index's backward (imported only where numba is installed; see ops._accel).

im2col/col2im work one (sample, channel) plane at a time, zero-padded in a small work row
that stays in cache; a stride-1 row is one contiguous run (a loop LLVM vectorises), any
other stride a strided one. col2im adds the kernel offsets row by row from a zero plane,
in the order ops.conv's NumPy path adds its slices (the same sums).
"""
import numba

__all__ = ["im2col", "col2im", "index_add_rows"]

_jit = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)


@_jit
def _pad_plane(x, n, c, plane, plh, plw, wp):
    # x[n, c] into the interior of the zero-bordered padded plane (row length wp)
    H, W = x.shape[2], x.shape[3]
    xc = x[n, c]
    for i in range(H):
        s0 = (i + plh) * wp + plw
        dst = plane[s0:s0 + W]
        row = xc[i]
        for j in range(W):
            dst[j] = row[j]


@_jit
def im2col(x, cols, plane, s0, s1, d0, d1, plh, plw, wp):
    """The columns (N, C, KH, KW, OH, OW) of a 2-D convolution of ``x`` (N, C, H, W) (any
    stride and dilation); ``plane``: a zeroed work row of padded height * ``wp`` (only its
    interior is written, so the border stays zero across calls)."""
    N, C, KH, KW, OH, OW = cols.shape
    for n in range(N):
        for c in range(C):
            _pad_plane(x, n, c, plane, plh, plw, wp)
            for a in range(KH):
                for b in range(KW):
                    dab = cols[n, c, a, b]
                    for i in range(OH):
                        base = (i * s0 + a * d0) * wp + b * d1
                        dst = dab[i]
                        if s1 == 1:
                            src = plane[base:base + OW]
                            for j in range(OW):
                                dst[j] = src[j]
                        else:
                            for j in range(OW):
                                dst[j] = plane[base + j * s1]


@_jit
def col2im(d, gx, plane, s0, s1, d0, d1, plh, plw, wp):
    """The adjoint of im2col: columns ``d`` (N, C, KH, KW, OH, OW) summed into their padded
    planes (``plane``: a work row of padded height * ``wp``), cropped into ``gx`` (N, C, H, W)."""
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
                        if s1 == 1:
                            dst = plane[base:base + OW]
                            for j in range(OW):
                                dst[j] += src[j]
                        else:
                            for j in range(OW):
                                plane[base + j * s1] += src[j]
            o = gx[n, c]
            for i in range(H):
                s0_ = (i + plh) * wp + plw
                t = plane[s0_:s0_ + W]
                row = o[i]
                for j in range(W):
                    row[j] = t[j]


@_jit
def index_add_rows(out, idx, src):
    """out[idx[i]] += src[i] for each row i in order (rows of one length, in range)."""
    D = out.shape[1]
    for i in range(idx.shape[0]):
        dst = out[idx[i]]
        s = src[i]
        for j in range(D):
            dst[j] += s[j]
