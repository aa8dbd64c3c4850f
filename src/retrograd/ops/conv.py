"""Convolution (1-D, 2-D, 3-D; stride, padding, dilation, groups) and the non-zero padding
modes it uses (reflect, replicate, circular).

Forward is im2col: a strided view of the padded input holds every receptive field
(``as_strided``, no copy), one reshape makes the column matrix and one batched GEMM per
group gives the output. Backward is the same GEMM transposed for the weight, and for the
input a GEMM followed by col2im: the columns are added back into the padded input with
one strided slice-add per kernel offset (no loop over pixels, no ``np.add.at``). Host 2-D
float32/float64 convolutions do this a cache-sized block of samples at a time (see
_fwd_blocked), split into one run of samples per intra-op thread where there are two or
more (see _runs; the same bits for every count); the whole-batch and "wide" paths below
serve the other dtypes and devices.

The three products (output, input gradient, weight gradient) are bilinear and each is
the derivative of the others, so the backward is itself differentiable.
"""
import itertools
import sys

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ._base import xp_for, strided
from . import _blas
from . import _dnnl_conv
from .._threads import executor as _executor
from ._base import OpNode, node_for, save, finish, view_of, joint_grads
from . import _accel

__all__ = ["conv1d", "conv2d", "conv3d"]
TENSOR_METHODS = {}
INPLACE = {}

_KERNEL_TYPES = {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int", "int16": "Short",
                 "int8": "Char", "uint8": "Byte", "bool": "Bool",
                 "float16": "Half", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def check_kernel_dtype(kernel, x, allowed=()):
    """PyTorch's error for a CPU kernel that has no version for ``x``'s dtype: floating
    point always passes, the dtype names in ``allowed`` ("int64", "bool", ...) too."""
    if x.dtype.kind in "fV":
        return
    name = x.dtype.name
    if name not in allowed:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_KERNEL_TYPES.get(name, name)}\'')


_INTS = ("int64", "int32", "int16", "int8", "uint8")


def _cpu_fp16():
    """Whether the CPU has AVX512-FP16 or AMX-FP16, which PyTorch's CPU build asks of it before
    it sends a float16 convolution to oneDNN (else its own kernel, with another error)."""
    from .._threads import cpu_info
    return bool(cpu_info()[1] & {"avx512_fp16", "amx_fp16"})


def check_weight_type(input, other, what="weight"):
    """PyTorch's error for a convolution whose input and weight (or bias) dtypes differ:
    worded for its MKLDNN path where the input could take it (float; half on CPUs with
    float16 arithmetic)."""
    x, w = input._data, other._data
    if type(x) is not type(w) and input.device != other.device:
        from ._base import type_name
        tail = (" or input should be a MKLDNN tensor and weight is a dense tensor"
                if input.device.type == "cpu" else "")
        raise RuntimeError(f"Input type ({type_name(input)}) and {what} type ({type_name(other)}) should be the "
                           f"same{tail}")
    if x.dtype != w.dtype:
        if x.dtype.name == "float32" or (x.dtype.name == "float16" and _cpu_fp16()):
            from ._base import type_name
            raise RuntimeError(f"Input type ({type_name(input)}) and {what} type ({type_name(other)}) should be the "
                               f"same or input should be a MKLDNN tensor and {what} is a dense tensor")
        raise RuntimeError(f"expected scalar type {_KERNEL_TYPES.get(x.dtype.name, x.dtype.name.capitalize())} but "
                           f"found {_KERNEL_TYPES.get(w.dtype.name, w.dtype.name.capitalize())}")


# *** array kernels ***

class _P:
    """Convolution geometry: per spatial dim stride, (lo, hi) padding, dilation; and groups."""
    __slots__ = ("stride", "pad", "dilation", "groups")

    def __init__(self, stride, pad, dilation, groups):
        self.stride, self.pad, self.dilation, self.groups = stride, pad, dilation, groups


def _pad_zeros(x, pad):
    if not any(lo or hi for lo, hi in pad):
        return x
    nd = len(pad)
    shape = x.shape[:-nd] + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[-nd:], pad))
    xpad = xp_for(x).zeros(shape, x.dtype)
    xpad[(Ellipsis,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[-nd:], pad))] = x
    return xpad


def _out_size(sp, k, p):
    return tuple((s - p.dilation[i] * (k[i] - 1) - 1) // p.stride[i] + 1 for i, s in enumerate(sp))


def _cols(xp, k, out, p):
    """Strided view (N, G, Cg, *K, *out) of the padded input: every receptive field."""
    n, c = xp.shape[:2]
    g = p.groups
    st = xp.strides
    nd = len(k)
    shape = (n, g, c // g) + tuple(k) + tuple(out)
    strides = (st[0], st[1] * (c // g), st[1]) + tuple(st[2 + i] * p.dilation[i] for i in range(nd)) \
        + tuple(st[2 + i] * p.stride[i] for i in range(nd))
    return strided(xp, shape, strides, writeable=False)


def _im2col(x, k, out, p, shape):
    """The column matrix (N, G, Cg*prod(K), L) of the unpadded ``x`` in a pooled buffer, copied
    from the strided view of the padded input (host 2-D float32/float64: _Cols, blockwise)."""
    xp = xp_for(x).ascontiguousarray(_pad_zeros(x, p.pad))
    v = _cols(xp, k, out, p)
    if type(xp) is not np.ndarray:   # a device array: the device's own copy (no host pool)
        return xp_for(xp).ascontiguousarray(v).reshape(shape)
    cols = _take(shape, xp.dtype)
    np.copyto(cols.reshape(v.shape), v)
    return cols


# Host 2-D convolutions of float32/float64 run sample-blocked: a block of samples at a
# time, its columns (B, G, Cg*KH*KW, OH*OW) sized to stay in the core's cache, are built
# by im2col and consumed at once by one batched GEMM per direction, whose results go
# straight into NCHW. Against whole-batch columns this saves the memory traffic of a
# column matrix many times the cache (its writing and the GEMM's reading), and a backward
# rebuilds a block's columns in cache rather than keeping the forward's. im2col/col2im
# are numba kernels where numba is present (ops._accel_conv), strided NumPy copies and
# slice-adds otherwise: the same values into the same GEMMs, so the same bits.

_BLOCK_BYTES = 1 << 20
# The forward keeps its whole column matrix for the weight gradient up to this size:
# measured (single thread) a reread of a few MiB beats rebuilding it (strided
# convolutions: 0.8-0.9x the step), a larger one, which no cache holds, loses to the
# rebuild in cache (a stride-1 3x3 convolution's is 9x its input: 1.05-1.2x).
_KEEP_BYTES = 6 << 20
# ... and only where the columns are at most this many times the input: a rebuild reads
# the input and writes the columns in cache, so where the input is small beside them (a
# 5x5 kernel over few channels: 25x) rebuilding beats a reread from memory (the seeds'
# CNN, single thread, same process: 0.89-1.0x the step with it kept), where it is not (a
# strided 3x3: 2.25x) the reread wins (1.03-1.06x).
_KEEP_EXPANSION = 4
_CONV_KERNELS = []
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _blocked(a, b):
    return type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 4 and b.ndim == 4 \
        and a.dtype in _FLOATS and b.dtype == a.dtype


def _conv_kernels(*arrays):
    """ops._accel_conv when its kernels should run on these arrays (see _accel.for_arrays;
    numba present, RETROGRAD_NO_NUMBA unset), else None."""
    if _accel.for_arrays(*arrays) is None:
        return None
    return _accel.load(_CONV_KERNELS, "_accel_conv")


def _block(n, ckk, L, itemsize):
    return max(1, min(n, _BLOCK_BYTES // max(1, ckk * L * itemsize)))


def _geom2(xshape, k, p):
    (plh, phh), (plw, phw) = p.pad
    hp, wp = xshape[2] + plh + phh, xshape[3] + plw + phw
    return hp, wp, _out_size((hp, wp), k, p)


_NO_PAIRS = (np.empty((0, 0, 0, 0), np.uint64), np.empty(0, np.uint32))


class _Cols:
    """im2col / col2im of sample blocks of one geometry, with their work buffers."""

    def __init__(self, xshape, k, p, dtype, kern):
        self.k, self.p, self.kern = tuple(k), p, kern
        self.hp, self.wp, self.out = _geom2(xshape, k, p)
        self.c = xshape[1]
        s0, s1 = p.stride
        self.pr, self.pc = -(-self.hp // s0), -(-self.wp // s1)      # a stride phase's rows, columns
        self.plane = np.zeros(s0 * s1 * self.pr * self.pc, dtype) if kern is not None else None
        # column stride 2 over float32 rows of even length: the kernels' uint64-pair copies
        self.pairs = kern is not None and s1 == 2 and dtype == np.float32 and xshape[3] % 2 == 0 \
            and sys.byteorder == "little"

    def fork(self, r):
        """This builder for the r-th thread's run: from the second on, a copy with its own work plane."""
        if r == 0:
            return self
        c = object.__new__(_Cols)
        c.__dict__.update(self.__dict__)
        if self.plane is not None:
            c.plane = np.zeros_like(self.plane)
        return c

    def im2col(self, x, cols):
        """x (B, C, H, W) -> cols (B, G, Cg*KH*KW, OH*OW)."""
        k, p, out = self.k, self.p, self.out
        if self.kern is not None:
            x64, ph32 = (x.view(np.uint64), self.plane.view(np.uint32)) if self.pairs else _NO_PAIRS
            self.kern.im2col(x, cols.reshape((x.shape[0], self.c) + k + out), self.plane, p.stride[0], p.stride[1],
                             p.dilation[0], p.dilation[1], p.pad[0][0], p.pad[1][0], self.pr, self.pc, x64, ph32)
            return
        v = _cols(_pad_zeros(x, p.pad), k, out, p)
        np.copyto(cols.reshape(v.shape), v)

    def col2im(self, d, gx):
        """The adjoint: columns d (B, G, Cg*KH*KW, OH*OW) summed into gx (B, C, H, W)."""
        k, p, out = self.k, self.p, self.out
        d = d.reshape((d.shape[0], self.c) + k + out)
        if self.kern is not None:
            gx64, ph32 = (gx.view(np.uint64), self.plane.view(np.uint32)) if self.pairs else _NO_PAIRS
            self.kern.col2im(d, gx, self.plane, p.stride[0], p.stride[1], p.dilation[0], p.dilation[1],
                             p.pad[0][0], p.pad[1][0], self.pr, self.pc, gx64, ph32)
            return
        # offsets in order from a zero plane, as the kernel adds them (the same sums)
        full = np.zeros(gx.shape[:2] + (self.hp, self.wp), d.dtype)
        for a in range(k[0]):
            for b in range(k[1]):
                r0, c0 = a * p.dilation[0], b * p.dilation[1]
                full[:, :, r0:r0 + p.stride[0] * (out[0] - 1) + 1:p.stride[0],
                     c0:c0 + p.stride[1] * (out[1] - 1) + 1:p.stride[1]] += d[:, :, a, b]
        (plh, _), (plw, _) = p.pad
        gx[...] = full[:, :, plh:plh + gx.shape[2], plw:plw + gx.shape[3]]


def _fwd_setup(x, w, p):
    """The blocked forward's pieces: contiguous x, its columns' builder, the output's plane
    size L, the weight as (G, O/G, Cg*KH*KW) and the output with its (N, G, O/G, L) view."""
    x = np.ascontiguousarray(x)
    n, o, G = x.shape[0], w.shape[0], p.groups
    k = w.shape[2:]
    cc = _Cols(x.shape, k, p, x.dtype, _conv_kernels(x, w))
    L = cc.out[0] * cc.out[1]
    wm = w.reshape(G, o // G, w.shape[1] * k[0] * k[1])
    y = np.empty((n, o) + cc.out, x.dtype)
    return x, cc, L, wm, y, y.reshape(n, G, o // G, L)


# With two or more intra-op threads (retrograd.set_num_threads, else the count chosen for
# the machine's load: _threads.kernel_threads) a large blocked convolution splits its
# blocks into one contiguous run of samples per thread, each with its own work buffers and
# a single-threaded BLAS (im2col/col2im kernels and GEMMs release the GIL). Each sample's
# products are the same calls on the same operands as on one thread (GEMMs one sample at
# a time; weight gradients kept per sample and summed in sample order at the end), so the
# results do not depend on the thread count.
# A run handed to a pool thread costs its wake-up (15-70 us, see ops._blas) and takes work
# that leaves the caches of this core, so only convolutions with enough work split: measured
# on two cores at default threads, the seeds' CNN (5M and 10M multiply-adds a pass) and a
# depthwise 3x3 over 16x32x32x32 (4.7M) ran 0.9-0.95x the time unsplit, while the ResNet
# block's (35M-38M), a strided 32 -> 64 (75M) and a ConvTranspose2d 64 -> 32 (134M) ran
# 1.1-1.3x the time unsplit.
_PAR_MACS = 16 << 20      # least multiply-adds (the whole batch's, one pass) worth a second thread


def _runs(n, b, macs):
    """Contiguous runs of whole b-sample blocks covering range(n), one per thread to use."""
    blocks = -(-n // b)
    t = 1
    if blocks > 1 and macs >= _PAR_MACS:
        from .. import _threads
        t = min(blocks, _threads.kernel_threads())
    if t <= 1:
        return [(0, n)]
    return [(r * blocks // t * b, min(n, (r + 1) * blocks // t * b)) for r in range(t)]


def _each_run(runs, fn):
    """fn(r, i, j) for each run r = (i, j): the first in this thread, the others in the pool,
    the BLAS single-threaded meanwhile."""
    if len(runs) == 1:
        fn(0, *runs[0])
        return
    from .. import _threads
    with _threads.single_blas():
        futs = [_executor().submit(fn, r, i, j) for r, (i, j) in enumerate(runs) if r]
        try:
            fn(0, *runs[0])
        finally:
            for f in futs:
                f.result()


def _fwd_bwd_w_blocked(x, w, g, p):
    """conv(x, w) and the weight gradient of conv(x, .) against ``g`` from one im2col of
    each block (a transposed convolution's backward: both read the output gradient's
    columns). The same products, so the same bits, as _fwd_blocked and _bwd_w_blocked."""
    x, cc, L, wm, y, y4 = _fwd_setup(x, w, p)
    n, o, G = x.shape[0], w.shape[0], p.groups
    cgkk = wm.shape[2]
    g4 = np.ascontiguousarray(g).reshape(n, G, o // G, L)
    b = _block(n, G * cgkk, L, x.itemsize)
    flip = x.dtype == np.float32
    parts = np.empty((n, G, cgkk, o // G) if flip else (n, G, o // G, cgkk), x.dtype)
    runs = _runs(n, b, n * G * cgkk * L * (o // G))
    bufs = [(_take((b, G, cgkk, L), x.dtype), cc.fork(r)) for r in range(len(runs))]

    def run(r, i0, i1):
        cols, cr = bufs[r]
        for i in range(i0, i1, b):
            j = min(i1, i + b)
            cb = cols[:j - i]
            cr.im2col(x[i:j], cb)
            _blas.matmul(wm, cb, out=y4[i:j])
            if flip:
                _blas.matmul(cb, g4[i:j].transpose(0, 1, 3, 2), out=parts[i:j])
            else:
                _blas.matmul(g4[i:j], cb.transpose(0, 1, 3, 2), out=parts[i:j])
    _each_run(runs, run)
    for cols, _ in bufs:
        _give(cols)
    gw = parts.sum(0)
    if flip:
        gw = gw.transpose(0, 2, 1)
    return y, np.ascontiguousarray(gw).reshape(w.shape)


def _fwd_blocked(x, w, p, keep=False, bias=None):
    """y (+ bias, added block by block while in cache), and with ``keep`` the whole column
    matrix (for the weight gradient) where it is at most _KEEP_BYTES, else None."""
    x, cc, L, wm, y, y4 = _fwd_setup(x, w, p)
    n, G, cgkk = x.shape[0], p.groups, wm.shape[2]
    b4 = None if bias is None else bias.reshape(1, G, -1, 1)
    b = _block(n, G * cgkk, L, x.itemsize)
    nbytes = n * G * cgkk * L * x.itemsize
    whole = keep and nbytes <= _KEEP_BYTES and nbytes <= _KEEP_EXPANSION * x.nbytes
    runs = _runs(n, b, n * cgkk * L * w.shape[0])
    if whole:
        cols = _take((n, G, cgkk, L), x.dtype)
        bufs = [(cols, cc.fork(r)) for r in range(len(runs))]
    else:
        bufs = [(_take((b, G, cgkk, L), x.dtype), cc.fork(r)) for r in range(len(runs))]

    def run(r, i0, i1):
        buf, cr = bufs[r]
        for i in range(i0, i1, b):
            j = min(i1, i + b)
            cb = buf[i:j] if whole else buf[:j - i]
            cr.im2col(x[i:j], cb)
            _blas.matmul(wm, cb, out=y4[i:j])
            if b4 is not None:
                y4[i:j] += b4
    _each_run(runs, run)
    if whole:
        return y, cols
    for buf, _ in bufs:
        _give(buf)
    return (y, None) if keep else y


def _bwd_w_blocked(x, g, wshape, p, cols=None):
    """The weight gradient; ``cols``: the forward's whole column matrix, or None (rebuilt
    block by block)."""
    x = np.ascontiguousarray(x)
    n = x.shape[0]
    o, G = wshape[0], p.groups
    k = wshape[2:]
    cc = _Cols(x.shape, k, p, x.dtype, _conv_kernels(x, g))
    L = cc.out[0] * cc.out[1]
    cgkk = wshape[1] * k[0] * k[1]
    g4 = np.ascontiguousarray(g).reshape(n, G, o // G, L)
    b = _block(n, G * cgkk, L, x.itemsize)
    own = cols is None
    # per-sample products summed over the batch at the end, float32 with the columns on
    # the left (see _bwd_w)
    flip = x.dtype == np.float32
    parts = np.empty((n, G, cgkk, o // G) if flip else (n, G, o // G, cgkk), x.dtype)
    runs = _runs(n, b, n * G * cgkk * L * (o // G))
    bufs = [(_take((b, G, cgkk, L), x.dtype) if own else None, cc.fork(r)) for r in range(len(runs))]

    def run(r, i0, i1):
        buf, cr = bufs[r]
        for i in range(i0, i1, b):
            j = min(i1, i + b)
            if own:
                cb = buf[:j - i]
                cr.im2col(x[i:j], cb)
            else:
                cb = cols[i:j]
            if flip:
                _blas.matmul(cb, g4[i:j].transpose(0, 1, 3, 2), out=parts[i:j])
            else:
                _blas.matmul(g4[i:j], cb.transpose(0, 1, 3, 2), out=parts[i:j])
    _each_run(runs, run)
    if own:
        for buf, _ in bufs:
            _give(buf)
    gw = parts.sum(0)
    if flip:
        gw = gw.transpose(0, 2, 1)
    return np.ascontiguousarray(gw).reshape(wshape)


def _bwd_in_blocked(g, w, xshape, p):
    n = xshape[0]
    o, G = w.shape[0], p.groups
    k = w.shape[2:]
    cc = _Cols(xshape, k, p, g.dtype, _conv_kernels(g, w))
    L = cc.out[0] * cc.out[1]
    cgkk = w.shape[1] * k[0] * k[1]
    g4 = np.ascontiguousarray(g).reshape(n, G, o // G, L)
    wT = w.reshape(G, o // G, cgkk).transpose(0, 2, 1)
    b = _block(n, G * cgkk, L, g.itemsize)
    gx = np.empty(tuple(xshape), g.dtype)
    runs = _runs(n, b, n * G * cgkk * L * (o // G))
    bufs = [(np.empty((b, G, cgkk, L), g.dtype), cc.fork(r)) for r in range(len(runs))]

    def run(r, i0, i1):
        d, cr = bufs[r]
        for i in range(i0, i1, b):
            j = min(i1, i + b)
            db = d[:j - i]
            _blas.matmul(wT, g4[i:j], out=db)
            cr.col2im(db, gx[i:j])
    _each_run(runs, run)
    return gx


# Stride-1 3x3 convolutions (groups 1, dilation 1) of float32 run as Winograd F(2x2, 3x3)
# where numba is present: each 4x4 input tile (stride 2) is transformed (B^T d B), multiplied
# by the transformed weights (G w G^T, 16 (O, C) matrices: 16 GEMMs over all the tiles of a
# block of samples) and transformed back (A^T m A) into its 2x2 outputs: 2.25x fewer
# multiplications than the columns' GEMM and no 9x column matrix, where small channel
# counts (16, 32) leave the GEMMs short and the im2col copy costs as much as they do.
# Accuracy, measured on normal data: the largest error against the float64 result,
# relative to the same sum of |x| * |w|, 1.4-1.6e-7 at 16 and 32 channels against im2col's
# 2.4-3.5e-7 (the transforms' sums are shorter than a 9C-term dot product), 1.1-1.6e-7 at
# 64-256 channels (the columns' 0.6-2e-7). The transforms mix a tile's inputs, so an inf or
# NaN would spread to outputs it does not reach: operands with one take the column path
# (the transforms check the planes they copy; a sum checks the weight and bias), and so do
# results with one (a transform's sums of values near the largest float can overflow where
# the convolution's do not). The input gradient is the same correlation of the output
# gradient with the flipped, transposed kernel. float64 and the NumPy path keep the column
# path (the accelerator's transforms are numba kernels). Each block's products are the same
# calls whatever the thread count (the weight gradient's summed in block order): the same bits.
# Measured here (single thread, batch 32 unless said, against the column path, each pass
# alone; forward, input gradient, weight gradient): 16 -> 16 channels over 32x32 0.65-0.7x,
# 0.5-0.65x, 0.7-0.75x; 32 -> 32 over 16x16 0.65-0.7x, 0.6-0.75x, 0.6-0.85x; 64 -> 64 over
# 16x16 (batch 16) 0.65x, 0.6x, 0.95-1.05x, over 32x32 0.7x, 0.75x, 0.9x; 128 and 256 over
# 16x16 (batch 16, 8) 0.8x, 0.8-0.9x, 1.05x; but 8 input channels 1.1x forward and weight
# gradient (8 -> 8 over 32x32; the columns of few channels are cheap), outputs of 8x8 1.4-1.5x
# at 16 and 32 channels (tiles of 4x4 positions: short rows, a fifth of them garbage),
# 3 -> 16 2x (its short GEMMs lose more than the columns cost): hence the bounds below.
# (F(4x4, 3x3) with the points 0, +-1, +-2, 2.25x fewer multiplications still, measured
# 3e-6 on the same data, 20x F(2x2)'s error: not taken.)
_WINO_DTYPES = (np.dtype(np.float32),)
_WINO_CH = (8, 256)     # least and most channels (in and out) of a pass
_WINO_W_CH = 32         # most channels (in and out) of the weight gradient (64: 0.9-1.05x)
_WINO_MIN_IN = 12       # least input channels of the convolution (for all three passes)
_WINO_MIN_PLANE = 144   # least output positions (a pass's: 12x12) a plane
_WINO_BLOCK_BYTES = 5 << 18    # most bytes of a block's two transformed streams (see _wino_block)
_WINO_TAB = {}
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])
# G (.) G^T of a 3x3 kernel as one (16, 9) matrix, _GG[4r + s, 3a + b] = G[r, a] G[s, b]: the
# kernels' transforms (and the weight gradient's way back) as one float64 product each (its
# entries are powers of two, so float32 terms add exactly as einsum's three-operand sums
# did: the same values, ~8x faster at 32 channels)
_GG = np.kron(_G, _G)


def _wino_flip_pad(xshape, gshape, p):
    """The padding that makes the input gradient a stride-1 correlation of the output
    gradient for Winograd (3x3, stride 1, dilation 1, groups 1), or None."""
    if p.stride != (1, 1) or p.dilation != (1, 1) or p.groups != 1 or len(p.pad) != 2:
        return None
    pad = tuple((2 - lo, 2 - hi) for lo, hi in p.pad)
    if any(a < 0 or b < 0 for a, b in pad):
        return None
    return pad


def _wino_tables(hr, pc, dt):
    """wino_in's tables for phases of hr x pc: per transformed value xi = 4r + s, the four
    phase offsets of (row combination r of B^T) at (column offsets of combination s), and
    the two signs."""
    key = (hr, pc, dt)
    t = _WINO_TAB.get(key)
    if t is None:
        P = hr * pc
        rows = ((0, 0, 0, pc, -1), (1, 0, 0, pc, 1), (0, pc, 1, 0, -1), (1, 0, 1, pc, -1))
        cols = ((0, 0, 0, 1, -1), (1, 0, 0, 1, 1), (0, 1, 1, 0, -1), (1, 0, 1, 1, -1))
        tab = np.empty((16, 4), np.int64)
        sgn = np.empty((16, 2), dt)
        for r, (ra, ro, rb, rbo, sr) in enumerate(rows):
            for c, (ca, co, cb, cbo, sc) in enumerate(cols):
                tab[4 * r + c] = ((ra * 2 + ca) * P + ro + co, (rb * 2 + ca) * P + rbo + co,
                                  (ra * 2 + cb) * P + ro + cbo, (rb * 2 + cb) * P + rbo + cbo)
                sgn[4 * r + c] = (sr, sc)
        t = _WINO_TAB[key] = (tab, sgn)
    return t


def _wino_geom(x, w, pad, p, wdt, cin, most=None):
    """(n, c, o, oh, ow, th, tw, hr, pc, L, kern) of a Winograd convolution of x by a
    (o, c, 3, 3) kernel of dtype ``wdt`` (a pass of a convolution of ``cin`` input channels),
    or None where it does not apply (see above)."""
    lo, hi = _WINO_CH[0], _WINO_CH[1] if most is None else most
    if x.dtype not in _WINO_DTYPES or tuple(w[2:]) != (3, 3) or p.stride != (1, 1) or p.dilation != (1, 1) \
            or p.groups != 1 or wdt != x.dtype or x.ndim != 4 or cin < _WINO_MIN_IN \
            or not (lo <= w[0] <= hi and lo <= w[1] <= hi):
        return None
    n, c, h, wd = x.shape
    (plh, phh), (plw, phw) = pad
    oh, ow = h + plh + phh - 2, wd + plw + phw - 2
    if oh <= 0 or ow <= 0 or oh % 2 or ow % 2 or oh * ow < _WINO_MIN_PLANE or n == 0 or c == 0 or w[0] == 0:
        return None
    kern = _conv_kernels(x)
    if kern is None:
        return None
    th, tw = oh // 2, ow // 2
    return n, c, w[0], oh, ow, th, tw, th + 1, tw + 1, th * (tw + 1), kern


_NATIVE = []


def _native_batch():
    """The BLAS's cblas_sgemm_batch_strided (MKL's or OpenBLAS's, as ops._blas runs products)
    as a ctypes function taking addresses as int64, for the compiled Winograd runs
    (_accel_conv.wino_fwd_blocks / wino_w_blocks), or None (products kept on NumPy, or no
    batched product)."""
    lib = _blas._state[0]
    if lib is None:
        lib = _blas._load()
    if not lib:
        return None
    if not _NATIVE or _NATIVE[0][0] is not lib:
        try:
            f = lib.native_batch()
        except (AttributeError, OSError, TypeError):
            f = None
        _NATIVE[:] = [(lib, f)]
    return _NATIVE[0][1]


def _wino_pairs(a, ph):
    """(a, the work row ``ph``) as uint64 pairs and uint32 for the transforms' pair copies
    (float32 of even width, little-endian; see _accel_conv._wino_pair_planes), else empty."""
    if a.dtype == np.float32 and a.shape[3] % 2 == 0 and sys.byteorder == "little":
        return a.view(np.uint64), ph.view(np.uint32)
    return _NO_PAIRS


def _wino_block(n, c, o, L, it):
    """Samples a block: as many as keep its transformed input and products (16 (c + o) values
    a tile) within _WINO_BLOCK_BYTES, so that both stay in the core's L2 cache between the
    transforms and the GEMMs. Measured (single thread, batch 32): 32 -> 32 channels over 16x16
    in blocks of 4 samples (1.2 MB) 0.8x the time of blocks of 8 for the forward, 0.75-0.8x
    for the weight gradient; 16 -> 16 over 32x32 best at 2 (1.1 MB), as before."""
    return max(1, min(n, _WINO_BLOCK_BYTES // (16 * (c + o) * L * it)))


def _wino_plan(n, c, o, L, hr, pc, dt):
    """The block and buffers both Winograd passes share: (b samples a block, T = b * L tiles,
    the 16 input and 16 product streams' strides xs, xm, the runs over the samples, and per run
    the buffers (V, M, work plane, scratch row) with V, M viewed as (16, c, T), (16, o, T)).
    The scratch row (4T, zeroed) is the forward's output rows (wino_out) or the weight
    gradient's phases of the output gradient (wino_gin, which needs it zeroed once)."""
    it = dt.itemsize
    b = _wino_block(n, c, o, L, it)
    T = b * L
    xs, xm = c * T + 16, o * T + 16       # (16 streams 64 bytes apart: not the same cache sets)
    runs = _runs(n, b, n * 16 * c * o * L)
    bufs = []
    for _ in runs:
        V, M = np.empty(16 * xs, dt), np.empty(16 * xm, dt)
        bufs.append((V, M, np.zeros(4 * hr * pc + pc + 2, dt), np.zeros(4 * T, dt),
                     as_strided(V, (16, c, T), (xs * it, T * it, it)),
                     as_strided(M, (16, o, T), (xm * it, T * it, it))))
    return b, T, xs, xm, runs, bufs


def _wino_w(x, g, wshape, p):
    """The weight gradient of a Winograd-able convolution (see _wino): G^T [sum over the
    tiles of (A dy A^T) * (B^T d B)] G, the exact derivative of the Winograd forward (the
    convolution's in exact arithmetic): 16 GEMMs over a block's tiles, whose sums over the
    blocks are added in block order (the same bits for every thread count). None where it
    does not apply."""
    geo = _wino_geom(x, wshape, p.pad, p, g.dtype, wshape[1], _WINO_W_CH)
    if geo is None or g.shape[2:] != geo[3:5]:
        return None
    n, c, o, oh, ow, th, tw, hr, pc, L, kern = geo
    (plh, _), (plw, _) = p.pad
    dt = x.dtype
    tab, sgn = _wino_tables(hr, pc, dt)
    x, g = np.ascontiguousarray(x), np.ascontiguousarray(g)
    b, T, xs, xm, runs, bufs = _wino_plan(n, c, o, L, hr, pc, dt)
    nblk = -(-n // b)
    parts = np.empty((nblk, 16, o, c), dt)

    finite = [True] * len(runs)
    gemm = _native_batch() if dt == np.float32 else None

    def run(r, i0, i1):
        V, Z, ph, gp, Vv, Zv = bufs[r]
        if gemm is not None:
            if not kern.wino_w_blocks(x, g, V, Z, ph, gp, plh, plw, hr, pc, th, tw, xs, xm, T, tab, sgn,
                                      *_wino_pairs(x, ph), parts, i0, i1, b, gemm):
                finite[r] = False
            return
        for i in range(i0, i1, b):
            j = min(i1, i + b)
            t = (j - i) * L
            # (an inf or NaN met on the way: the column path instead)
            xb = x[i:j]
            if not (kern.wino_in(xb, V, ph, plh, plw, hr, pc, th, xs, T, tab, sgn, *_wino_pairs(xb, ph))
                    & kern.wino_gin(g[i:j], Z, gp, th, tw, pc, xm, T)):
                finite[r] = False
                return
            _blas.matmul(Zv[:, :, :t], Vv[:, :, :t].transpose(0, 2, 1), out=parts[i // b])
    _each_run(runs, run)
    if not all(finite):
        return None
    du = parts[0].copy()
    for k in range(1, nblk):
        du += parts[k]
    gw = du.reshape(16, o * c).T.astype(np.float64) @ _GG
    with np.errstate(over="ignore"):
        gw = gw.astype(dt).reshape(wshape)
    # (a transform's overflow, or an inf gradient: the column path decides)
    return gw if np.isfinite(gw).all() else None


def _wino(x, w, pad, p, bias=None, cin=None):
    """conv(x, w) (+ bias) by Winograd F(2x2, 3x3) with zero padding ``pad``, or None where
    it does not apply (see above): not 3x3 / stride 1 / dilation 1 / groups 1, not float32,
    an odd or small output size, channels out of bounds (``cin``: the convolution's input
    channels, w's by default), no numba, or an inf or NaN among the operands."""
    geo = _wino_geom(x, w.shape, pad, p, w.dtype, w.shape[1] if cin is None else cin)
    if geo is None or (bias is not None and bias.dtype != x.dtype) or not _finite(w) \
            or (bias is not None and not _finite(bias)):
        return None
    n, c, o, oh, ow, th, tw, hr, pc, L, kern = geo
    (plh, _), (plw, _) = pad
    dt = x.dtype
    tab, sgn = _wino_tables(hr, pc, dt)
    U = (_GG @ w.astype(np.float64).reshape(o * c, 9).T).astype(dt).reshape(16, o, c)
    x = np.ascontiguousarray(x)
    b, T, xs, xm, runs, bufs = _wino_plan(n, c, o, L, hr, pc, dt)
    y = np.empty((n, o, oh, ow), dt)
    bz = np.empty(0, dt) if bias is None else np.ascontiguousarray(bias)

    finite = [True] * len(runs)
    gemm = _native_batch() if dt == np.float32 else None

    def run(r, i0, i1):
        V, M, ph, tq, Vv, Mv = bufs[r]
        if gemm is not None:
            if not kern.wino_fwd_blocks(x, V, ph, plh, plw, hr, pc, th, xs, T, tab, sgn, *_wino_pairs(x, ph), U, M, y,
                                        tq, tw, xm, bz, i0, i1, b, gemm):
                finite[r] = False
            return
        for i in range(i0, i1, b):
            j = min(i1, i + b)
            t = (j - i) * L
            xb = x[i:j]
            if not kern.wino_in(xb, V, ph, plh, plw, hr, pc, th, xs, T, tab, sgn, *_wino_pairs(xb, ph)):
                finite[r] = False       # (an inf or NaN in x: the column path instead)
                return
            _blas.matmul(U, Vv[:, :, :t], out=Mv[:, :, :t])
            if not kern.wino_out(M, y[i:j], tq, th, tw, pc, xm, T, bz):
                finite[r] = False       # (an output overflowed, or is inf: the column path decides)
                return
    _each_run(runs, run)
    return y if all(finite) else None


def _fwd(x, w, p, want_cols=False, bias=None):
    """y = conv(x, w) (+ bias per channel): (N, O, *out)."""
    host = type(x) is np.ndarray     # (a device runs im2col + one batched GEMM: cuBLAS)
    if host:
        y = _dnnl_conv.fwd(x, w, p, bias)
        if y is not None:
            return (y, None) if want_cols else y
    if host and _depthwise(w, p):
        y = _fwd_dw(x, w, p, bias)
        return (y, None) if want_cols else y
    if host and _blocked(x, w) and (bias is None or bias.dtype == x.dtype):
        y = _direct_fwd(x, w, p, bias)
        if y is not None:
            return (y, None) if want_cols else y
        y = _wino(x, w, p.pad, p, bias)
        if y is not None:
            return (y, None) if want_cols else y
        return _fwd_blocked(x, w, p, want_cols, bias)
    if bias is not None:
        r = _fwd(x, w, p, want_cols)
        y = r[0] if want_cols else r
        y += bias.reshape((1, -1) + (1,) * (y.ndim - 2))
        return r
    if host and _wide(p, w.ndim - 2):
        y, cols = _fwd_wide(x, w, p, want_cols)
        return (y, cols) if want_cols else y
    mod = xp_for(x)
    k = w.shape[2:]
    sp = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], p.pad))
    out = _out_size(sp, k, p)
    n = x.shape[0]
    g = p.groups
    o = w.shape[0]
    ckk = w.shape[1]
    for s in k:
        ckk *= s
    L = 1
    for s in out:
        L *= s
    cols = _im2col(x, k, out, p, (n, g, ckk, L))        # the im2col copy
    wm = w.reshape(g, o // g, ckk)
    if g == 1:
        y = mod.matmul(wm[0], cols[:, 0])                # (N, O, L)
    else:
        y = mod.matmul(wm, cols)                         # (N, G, O/G, L)
    y = y.reshape((n, o) + out)
    if not want_cols:
        _give(cols)
        return y
    return y, cols


def _bwd_w(x, g, wshape, p, cols=None):
    """Weight gradient: sum over batch and positions of g (x) columns."""
    host = type(x) is np.ndarray
    if host:
        gw = _dnnl_conv.bwd_w(x, g, wshape, p)
        if gw is not None:
            return gw
    if host and wshape[1] == 1 and p.groups == wshape[0] and p.groups > 1:
        return _bwd_w_dw(x, g, wshape, p)
    if host and _blocked(x, g):
        gw = _direct_bwd_w(x, g, wshape, p) if cols is None else None
        if gw is not None:
            return gw
        gw = _wino_w(x, g, wshape, p) if cols is None else None
        if gw is not None:
            return gw
        return _bwd_w_blocked(x, g, wshape, p, cols)
    if host and _wide(p, len(wshape) - 2):
        if _finite(x):
            return _bwd_w_wide(x, g, wshape, p, cols)
        cols = None   # see _finite
    n = x.shape[0]
    G = p.groups
    o = wshape[0]
    k = wshape[2:]
    ckk = 1
    for s in wshape[1:]:
        ckk *= s
    out = g.shape[2:]
    L = 1
    for s in out:
        L *= s
    own = cols is None
    mod = xp_for(x)
    if own:
        cols = _im2col(x, k, out, p, (n, G, ckk, L))
    gm = g.reshape(n, G, o // G, L)
    # float32: columns times the transposed gradient, then transposed back: OpenBLAS runs
    # this orientation ~1.5x faster than g @ cols^T (its float64 kernels ~10% slower)
    flip = cols.dtype == np.float32
    if G == 1:
        gw = (mod.matmul(cols[:, 0], gm[:, 0].transpose(0, 2, 1)).sum(0).T if flip       # (O, CKK)
              else mod.matmul(gm[:, 0], cols[:, 0].transpose(0, 2, 1)).sum(0))
    else:
        gw = (mod.matmul(cols, gm.transpose(0, 1, 3, 2)).sum(0).transpose(0, 2, 1) if flip   # (G, O/G, CgKK)
              else mod.matmul(gm, cols.transpose(0, 1, 3, 2)).sum(0))
    if own:
        _give(cols)
    return mod.ascontiguousarray(gw).reshape(wshape)


def _bwd_in(g, w, xshape, p):
    """Input gradient: columns = w^T g, then col2im by strided slice-adds per kernel offset."""
    xp = xp_for(g, w, xshape, p)
    host = xp is np      # (a device: no question to the host about w's values)
    if host:
        gx = _dnnl_conv.bwd_in(g, w, xshape, p)
        if gx is not None:
            return gx
    if host and _depthwise(w, p):
        return _bwd_in_dw(g, w, xshape, p)
    if host and _blocked(g, w):
        gx = _direct_bwd_in(g, w, xshape, p)
        if gx is not None:
            return gx
        pad = _wino_flip_pad(xshape, g.shape, p)
        if pad is not None:
            gx = _wino(g, w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3), pad, p, cin=w.shape[1])
            if gx is not None:
                return gx
        return _bwd_in_blocked(g, w, xshape, p)
    if host and _wide(p, w.ndim - 2) and _finite(w):
        return _bwd_in_wide(g, w, xshape, p)
    n = g.shape[0]
    G = p.groups
    o = w.shape[0]
    cg = w.shape[1]
    k = w.shape[2:]
    nd = len(k)
    ckk = cg
    for s in k:
        ckk *= s
    out = g.shape[2:]
    L = 1
    for s in out:
        L *= s
    gm = g.reshape(n, G, o // G, L)
    wm = w.reshape(G, o // G, ckk)
    if G == 1:
        dcols = _blas.matmul(wm[0].T, gm[:, 0])                # (N, CKK, L)
    else:
        dcols = _blas.matmul(wm.transpose(0, 2, 1), gm)         # (N, G, CKK, L)
    sp = tuple(s + lo + hi for s, (lo, hi) in zip(xshape[2:], p.pad))
    dcols = dcols.reshape((n, G, cg) + tuple(k) + tuple(out))
    gxp = xp.zeros((n, G, cg) + sp, dcols.dtype)
    for off in itertools.product(*[range(s) for s in k]):
        sl = tuple(slice(off[i] * p.dilation[i], off[i] * p.dilation[i] + p.stride[i] * (out[i] - 1) + 1,
                         p.stride[i]) for i in range(nd))
        gxp[(slice(None), slice(None), slice(None)) + sl] += dcols[(slice(None), slice(None), slice(None)) + off]
    gxp = gxp.reshape((n, G * cg) + sp)
    if any(lo or hi for lo, hi in p.pad):
        gxp = gxp[(slice(None), slice(None)) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(xshape[2:], p.pad))]
    return gxp


# Stride-1 2-D convolutions of other dtypes use a "wide" layout: the padded input is flattened per
# channel, so every kernel offset is one contiguous shift of length OH * Wp (Wp the padded
# width). Each output row then carries Wp - OW extra columns, which are dropped (forward)
# or are zero (backward). Copies and slice-adds run over long contiguous runs.

# Workspace: the column buffers are large and live for one call (or until the backward
# that uses them). Handing them back to a small pool and reusing them avoids touching
# fresh pages on every call, which otherwise costs more than the GEMM itself.
_POOL = {}
_POOL_KEYS = 16
_POOL_BYTES = [0, 256 << 20]      # held now, most held


def _take(shape, dtype):
    xp = xp_for(shape)
    free = _POOL.get((shape, dtype))
    if free:
        a = free.pop()
        _POOL_BYTES[0] -= a.nbytes
        return a
    return xp.empty(shape, dtype)


def _give(a):
    if type(a) is not np.ndarray or not a.flags.owndata or _POOL_BYTES[0] + a.nbytes > _POOL_BYTES[1]:
        return
    key = (a.shape, a.dtype)
    free = _POOL.get(key)
    if free is None:
        if len(_POOL) >= _POOL_KEYS:
            for old in _POOL.pop(next(iter(_POOL))):
                _POOL_BYTES[0] -= old.nbytes
        free = _POOL[key] = []
    if len(free) < 2:
        free.append(a)
        _POOL_BYTES[0] += a.nbytes


def _wide(p, nd):
    return nd == 2 and p.stride == (1, 1)


def _finite(a):
    """Whether the wide layout may be used in a backward: its extra columns hold zeros of
    the gradient, which meet the other operand there; an inf or NaN would make them NaN
    and spill into real positions (a sum is one pass and allocates nothing)."""
    xp = xp_for(a)
    return bool(xp.isfinite(a.sum()))


def _wide_geom(xshape, k, p):
    (plh, phh), (plw, phw) = p.pad
    hp, wp = xshape[2] + plh + phh, xshape[3] + plw + phw
    oh = hp - p.dilation[0] * (k[0] - 1)
    ow = wp - p.dilation[1] * (k[1] - 1)
    slack = p.dilation[1] * (k[1] - 1)
    return hp, wp, oh, ow, slack


def _wide_cols(x, k, p):
    """Columns in the wide layout, (G, Cg*KH*KW, N*OH*Wp): one row per (channel, kernel
    offset), one contiguous run of OH*Wp per sample."""
    xp = xp_for(x, k, p)
    n, c, h, w = x.shape
    hp, wp, oh, ow, slack = _wide_geom(x.shape, k, p)
    (plh, _), (plw, _) = p.pad
    G = p.groups
    flat = _take((n, c, hp * wp + slack), x.dtype)
    flat.fill(0)
    flat[:, :, :hp * wp].reshape(n, c, hp, wp)[:, :, plh:plh + h, plw:plw + w] = x
    st = flat.strides
    sz = flat.itemsize
    shape = (G, c // G, k[0], k[1], n, oh * wp)
    v = as_strided(flat, shape,
                   (st[1] * (c // G), st[1], p.dilation[0] * wp * sz, p.dilation[1] * sz, st[0], sz),
                   writeable=False)
    cols = _take((G, (c // G) * k[0] * k[1], n * oh * wp), x.dtype)
    xp.copyto(cols.reshape(shape), v)
    _give(flat)
    return cols, (hp, wp, oh, ow, slack)


def _fwd_wide(x, w, p, keep_cols=False):
    xp = xp_for(x, w, p, keep_cols)
    n = x.shape[0]
    o = w.shape[0]
    G = p.groups
    cols, (hp, wp, oh, ow, _) = _wide_cols(x, w.shape[2:], p)
    wm = w.reshape(G, o // G, w.shape[1] * w.shape[2] * w.shape[3])
    dt = np.result_type(w.dtype, cols.dtype)
    yw = _blas.matmul(wm, cols, out=_take((G, o // G, n * oh * wp), dt))      # one GEMM per group
    y = xp.ascontiguousarray(yw.reshape(o, n, oh, wp)[:, :, :, :ow].transpose(1, 0, 2, 3))
    _give(yw)
    if not keep_cols:
        _give(cols)
        cols = None
    return y, cols


def _g_wide(g, wp, G):
    """The output gradient as (G, O/G, N*OH*Wp), zero in the extra columns."""
    n, o, oh, ow = g.shape
    gw = _take((o, n, oh, wp), g.dtype)
    if ow != wp:
        gw[:, :, :, ow:] = 0
    gw[:, :, :, :ow] = g.transpose(1, 0, 2, 3)
    return gw.reshape(G, o // G, n * oh * wp)


def _bwd_w_wide(x, g, wshape, p, cols=None):
    xp = xp_for(x, g, wshape, p, cols)
    own = cols is None
    if own:
        cols, _ = _wide_cols(x, wshape[2:], p)
    G = p.groups
    gwide = _g_wide(g, _wide_geom(x.shape, wshape[2:], p)[1], G)
    # (see _bwd_w: float32 with the columns on the left, the long gradient rows transposed)
    if cols.dtype == np.float32:
        gw = _blas.matmul(cols, gwide.transpose(0, 2, 1)).transpose(0, 2, 1)     # (G, O/G, CgKK)
    else:
        gw = _blas.matmul(gwide, cols.transpose(0, 2, 1))
    _give(gwide)
    if own:
        _give(cols)
    return np.ascontiguousarray(gw).reshape(wshape)


def _bwd_in_wide(g, w, xshape, p):
    xp = xp_for(g, w, xshape, p)
    n, c, h, wd = xshape
    o = w.shape[0]
    k = w.shape[2:]
    G = p.groups
    hp, wp, oh, ow, slack = _wide_geom(xshape, k, p)
    gwide = _g_wide(g, wp, G)
    wm = w.reshape(G, o // G, w.shape[1] * w.shape[2] * w.shape[3])
    L = oh * wp
    dt = np.result_type(w.dtype, gwide.dtype)
    dbuf = _blas.matmul(wm.transpose(0, 2, 1), gwide, out=_take((G, wm.shape[2], n * L), dt))   # (G, CgKK, N*L)
    _give(gwide)
    d = dbuf.reshape(c, k[0], k[1], n, L)
    flat = xp.zeros((c, n, hp * wp + slack), dt)
    for kh in range(k[0]):
        for kw in range(k[1]):
            s0 = kh * p.dilation[0] * wp + kw * p.dilation[1]
            flat[:, :, s0:s0 + L] += d[:, kh, kw]
    _give(dbuf)
    (plh, _), (plw, _) = p.pad
    gx = flat[:, :, :hp * wp].reshape(c, n, hp, wp)[:, :, plh:plh + h, plw:plw + wd]
    return xp.ascontiguousarray(gx.transpose(1, 0, 2, 3))


# Depthwise convolutions (one input and one output channel per group) have nothing for a
# GEMM to share across channels. Stride-1 2-D ones run sample by sample in the wide
# layout: the sample's columns (C, KH*KW, OH*Wp) are copied from a strided view of its
# flattened padded input (small enough to stay in cache), and one batched matrix-vector
# product per sample (one per channel inside BLAS) gives its output or its weight
# gradient. The input gradient of a stride-1 depthwise convolution is the same
# correlation of the (re-padded) output gradient with the flipped kernel. Other
# geometries take a few whole-array multiply-adds, one per kernel offset.

def _depthwise(w, p):
    return w.shape[1] == 1 and p.groups == w.shape[0] and p.groups > 1


def _dw_sample_cols(flat, i, k, dil, wp, L, cols):
    """Copy sample ``i``'s columns (C, KH*KW, L) of the wide ``flat`` into ``cols``."""
    xp = xp_for(flat, i, k, dil, wp, L, cols)
    st = flat.strides
    sz = flat.itemsize
    v = as_strided(flat[i], (flat.shape[1], k[0], k[1], L), (st[1], dil[0] * wp * sz, dil[1] * sz, sz),
                   writeable=False)
    xp.copyto(cols.reshape(v.shape), v)
    return cols


def _dw_corr(x, wk, pad, dil, bias=None):
    """Stride-1 2-D depthwise correlation of ``x`` (N, C, H, W) with ``wk`` (C, KH, KW),
    zero padding ``pad`` ((lo, hi), (lo, hi)), plus ``bias`` (C,) if given; returns (N, C, OH, OW)."""
    xp = xp_for(x, wk, pad, dil)
    n, c, h, wd = x.shape
    k = wk.shape[1:]
    (plh, phh), (plw, phw) = pad
    hp, wp = h + plh + phh, wd + plw + phw
    oh, ow = hp - dil[0] * (k[0] - 1), wp - dil[1] * (k[1] - 1)
    L = oh * wp
    dt = np.result_type(x.dtype, wk.dtype)
    kern = _accel.for_arrays(x, wk)
    if kern is not None and (bias is None or bias.dtype == dt):     # (one padded plane at a time, in cache)
        y = np.empty((n, c, oh, ow), dt)
        x, wk = np.ascontiguousarray(x), np.ascontiguousarray(wk)
        b = np.empty(0, dt) if bias is None else np.ascontiguousarray(bias)
        # samples split across the intra-op threads (see _runs), each with its own work rows
        runs = _runs(n, 1, x.size * k[0] * k[1])
        bufs = [(np.zeros(hp * wp + dil[1] * (k[1] - 1), dt), np.empty(L, dt)) for _ in runs]

        if k == (3, 3):      # (no accumulator row: see _accel_kernels.dw_corr3)
            zero = dt.type(0)

            def run(r, i, j):
                kern.dw_corr3(x[i:j], wk, y[i:j], bufs[r][0], plh, plw, wp, dil[0], dil[1], b, zero)
        else:
            def run(r, i, j):
                kern.dw_corr(x[i:j], wk, y[i:j], bufs[r][0], bufs[r][1], plh, plw, wp, dil[0], dil[1], b)
        _each_run(runs, run)
        return y
    flat = _take((n, c, hp * wp + dil[1] * (k[1] - 1)), x.dtype)
    flat.fill(0)
    flat[:, :, :hp * wp].reshape(n, c, hp, wp)[:, :, plh:plh + h, plw:plw + wd] = x
    cols = _take((c, k[0] * k[1], L), x.dtype)
    w9 = xp.ascontiguousarray(wk, dt).reshape(c, 1, k[0] * k[1])     # (BLAS needs positive strides)
    y = xp.empty((n, c, 1, L), dt)
    with np.errstate(invalid="ignore"):      # (inf * 0 in the padding gives NaN, as in PyTorch)
        for i in range(n):
            _blas.matmul(w9, _dw_sample_cols(flat, i, k, dil, wp, L, cols), out=y[i])
    _give(cols)
    _give(flat)
    y = xp.ascontiguousarray(y.reshape(n, c, oh, wp)[:, :, :, :ow])
    if bias is not None:
        y += bias.reshape(1, c, 1, 1)
    return y


def _dw_flip_pad(k, p):
    """The padding that turns the input gradient of a stride-1 depthwise convolution into a
    correlation with the flipped kernel, or None where it would be negative."""
    pad = tuple((p.dilation[i] * (k[i] - 1) - lo, p.dilation[i] * (k[i] - 1) - hi) for i, (lo, hi) in enumerate(p.pad))
    return None if any(a < 0 or b < 0 for a, b in pad) else pad


def _dw_window(xp, off, p, out):
    nd = len(out)
    return xp[(slice(None), slice(None)) + tuple(
        slice(off[i] * p.dilation[i], off[i] * p.dilation[i] + p.stride[i] * (out[i] - 1) + 1, p.stride[i])
        for i in range(nd))]


def _dw_flat(x, k, p):
    """Stride-1 2-D: the padded input flattened per channel, so each offset is one shift."""
    xp = xp_for(x, k, p)
    n, c, h, wd = x.shape
    hp, wp, oh, ow, slack = _wide_geom(x.shape, k, p)
    (plh, _), (plw, _) = p.pad
    flat = xp.zeros((n, c, hp * wp + slack), x.dtype)
    flat[:, :, :hp * wp].reshape(n, c, hp, wp)[:, :, plh:plh + h, plw:plw + wd] = x
    return flat, (hp, wp, oh, ow)


def _fwd_dw(x, w, p, bias=None):
    k = w.shape[2:]
    if _wide(p, len(k)):
        return _dw_corr(x, w[:, 0], p.pad, p.dilation, bias)
    xp = _pad_zeros(x, p.pad)
    k = w.shape[2:]
    out = _out_size(xp.shape[2:], k, p)
    bshape = (1, w.shape[0]) + (1,) * len(k)
    y = None
    for off in itertools.product(*[range(v) for v in k]):
        term = _dw_window(xp, off, p, out) * w[(slice(None), 0) + off].reshape(bshape)
        if y is None:
            y = term
        else:
            y += term
    if bias is not None:
        y += bias.reshape(bshape)
    return y


def _bwd_in_dw(g, w, xshape, p):
    xp = xp_for(g, w, xshape, p)
    k = w.shape[2:]
    if _wide(p, len(k)) and _finite(w):
        pad = _dw_flip_pad(k, p)
        if pad is not None:
            return _dw_corr(g, w[:, 0, ::-1, ::-1], pad, p.dilation)
    out = g.shape[2:]
    sp = tuple(s + lo + hi for s, (lo, hi) in zip(xshape[2:], p.pad))
    gxp = xp.zeros(tuple(xshape[:2]) + sp, np.result_type(g.dtype, w.dtype))
    bshape = (1, w.shape[0]) + (1,) * len(k)
    for off in itertools.product(*[range(v) for v in k]):
        _dw_window(gxp, off, p, out).__iadd__(g * w[(slice(None), 0) + off].reshape(bshape))
    if any(lo or hi for lo, hi in p.pad):
        gxp = gxp[(slice(None), slice(None)) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(xshape[2:], p.pad))]
    return gxp


def _bwd_w_dw(x, g, wshape, p):
    k = wshape[2:]
    kern = _accel.for_arrays(x, g) if _wide(p, len(k)) else None
    if kern is not None:
        # only the real output positions meet the input: no finiteness condition
        n, c, h, wd = x.shape
        hp, wp, oh, ow, slack = _wide_geom(x.shape, k, p)
        (plh, _), (plw, _) = p.pad
        gw = np.empty((c, k[0], k[1]), x.dtype)
        x, g = np.ascontiguousarray(x), np.ascontiguousarray(g)
        # channels split across the intra-op threads (see _runs), each with its own work rows
        runs = _runs(c, 1, x.size * k[0] * k[1])
        bufs = [(np.zeros(hp * wp + slack, x.dtype), np.empty((k[0], k[1], ow), x.dtype)) for _ in runs]

        f = kern.dw_weight_grad3 if tuple(k) == (3, 3) and x.dtype == np.float32 else kern.dw_weight_grad

        def run(r, i, j):
            f(x, g, gw, bufs[r][0], bufs[r][1], plh, plw, wp, p.dilation[0], p.dilation[1], i, j)
        _each_run(runs, run)
        return gw.reshape(wshape)
    if _wide(p, len(k)) and _finite(x):
        n, c, h, wd = x.shape
        hp, wp, oh, ow, slack = _wide_geom(x.shape, k, p)
        (plh, _), (plw, _) = p.pad
        L = oh * wp
        dt = np.result_type(g.dtype, x.dtype)
        flat = _take((n, c, hp * wp + slack), x.dtype)
        flat.fill(0)
        flat[:, :, :hp * wp].reshape(n, c, hp, wp)[:, :, plh:plh + h, plw:plw + wd] = x
        gwide = np.zeros((n, c, oh, wp, 1), dt)     # zero in the extra columns
        gwide[:, :, :, :ow, 0] = g
        gwide = gwide.reshape(n, c, L, 1)
        cols = _take((c, k[0] * k[1], L), x.dtype)
        acc = np.zeros((c, k[0] * k[1], 1), dt)
        part = np.empty_like(acc)
        for i in range(n):
            acc += _blas.matmul(_dw_sample_cols(flat, i, k, p.dilation, wp, L, cols), gwide[i], out=part)
        _give(cols)
        _give(flat)
        return acc.reshape(wshape)
    xp = _pad_zeros(x, p.pad)
    out = g.shape[2:]
    gw = np.empty(wshape, np.result_type(g.dtype, x.dtype))
    axes = (0,) + tuple(range(2, g.ndim))
    for off in itertools.product(*[range(v) for v in k]):
        gw[(slice(None), 0) + off] = (_dw_window(xp, off, p, out) * g).sum(axis=axes)
    return gw


# Few-channel stride-1 2-D convolutions (3x3 and 5x5 kernels, groups 1, dilation 1) of
# float32/float64 run as direct sums where numba is present (ops._accel_direct): no column
# matrix. With few output channels the column path's GEMMs are short, and its columns, KH*KW
# times the input (25x for 5x5), cost more to write and read than the products; the direct
# kernels read each sample's padded planes from cache instead.
# Measured here (single thread, float32, CPU-time medians, direct time / column path's, with
# Winograd where it serves; batch 64 over 14x14 and 28x28, 32 over 32x32 for 3x3):
#   5x5, 1 -> 4 (the seeds' conv1): forward 0.62-0.69, input gradient 0.48-0.62, weight 0.63-0.69;
#   5x5, 4 -> 8 (conv2): 0.61-0.78, 0.51-0.62, 0.65-0.88; 8 -> 8: 0.53-0.62, 0.49-0.55, 0.53-0.63;
#   5x5, 16 -> 4..8: 0.38-0.52, 0.33-0.46, 0.29-0.52; 32 -> 4..8: 0.33-0.46, 0.35-0.47, 0.40-0.69;
#   5x5, 4..16 -> 16: 0.70-0.99, 0.68-0.92, 0.82-1.12; but 1..2 -> 16: 1.0-1.2, 1.0-1.45, 1.0-1.5;
#   5x5, 1..4 -> 32: 1.4-2.0 (hence at most 16 outputs, and 16 only from 4 inputs);
#   5x5 without padding (10x10 to 32x32): 1..16 -> 6..8 0.57-0.60, 0.71-0.87, 0.50-0.79, but
#   the input gradient of 4..6 -> 16 1.16 (its correlation over the input plane, 2x the
#   output plane here: at most 8 outputs where the input plane is much the larger);
#   3x3, 1..16 -> 4..8: forward 0.63-0.80, input gradient 0.48-0.78, weight 0.92-1.19 (the
#   weight gradient keeps the column path for 3x3); 3x3, 1..16 -> 16: 0.81-1.18. 3x3 with 8
#   or more channels each way stays with Winograd (against which 8..16 -> 8 measured
#   0.63-0.77 forward and input gradient: a bound to revisit together).
# Against PyTorch's oneDNN in the same runs (forward + both gradients): 1 -> 4 5x5 0.21-0.35x,
# 4 -> 8 5x5 0.55-0.84x, 8 -> 8 5x5 0.79-1.4x (torch's kernels outrun these from ~8 channels).
# Padding meets the other operand in the wide rows (0 * w; 0 * g, and g's zero extra columns
# * x in the weight gradient): with an inf or NaN there it gives NaN where a sum over the
# real positions does not. Such operands take the column path, whose NaN are those of
# PyTorch's own im2col kernels (float64, and the float32 convolutions PyTorch keeps off
# oneDNN); where PyTorch's oneDNN kernels run (_skips_padding), an inf or NaN weight
# (forward) or output gradient (weight gradient) takes the exact kernels instead (their NumPy
# path without numba), which skip the padding as those do. (Its input gradient, a col2im,
# drops the padding's terms on every path.)
_DIRECT_KERNELS = []
_DIRECT_MOST_CH = 32               # most input channels (measured)
_DIRECT_W_BYTES = 128 << 10        # a weight gradient's block of samples: its planes and gradient rows


def _direct_kernels(*arrays):
    """ops._accel_direct when its kernels should run on these arrays, else None."""
    if _accel.for_arrays(*arrays) is None:
        return None
    return _accel.load(_DIRECT_KERNELS, "_accel_direct")


def _direct_use(kind, c, o, k, spread=1.0):
    """Whether the direct kernels serve product ``kind`` ("fwd", "in" or "w") of a
    convolution of c input into o output channels, kernel k (see the figures above);
    ``spread``: the input plane's size over the output plane's (an input gradient's
    correlation runs over the input plane, its taps on the output gradient's re-padding)."""
    if k not in ((3, 3), (5, 5)) or c > _DIRECT_MOST_CH or (kind == "w" and k != (5, 5)):
        return False
    if k == (3, 3) and min(c, o) >= _WINO_CH[0]:
        return False      # (Winograd's; see the figures above)
    if o <= 8:
        return True
    return k == (5, 5) and o <= 16 and c >= 4 and (kind != "w" or c <= 8) and (kind != "in" or spread <= 1.25)


def _direct_geom(kind, xshape, wshape, p):
    """The output size where the direct kernels serve this product, else None."""
    if p.stride != (1, 1) or p.dilation != (1, 1) or p.groups != 1 or len(wshape) != 4:
        return None
    out = _geom2(xshape, wshape[2:], p)[2]
    if out[0] < 1 or out[1] < 1:
        return None
    spread = xshape[2] * xshape[3] / (out[0] * out[1])
    return out if _direct_use(kind, wshape[1], wshape[0], tuple(wshape[2:]), spread) else None


def _skips_padding(x, k):
    """Whether PyTorch's CPU convolution of this float32 input takes its oneDNN kernels,
    which add the products of real positions only (its own im2col kernels, which it takes
    otherwise and for float64, multiply the padding's zeros: 0 * inf is NaN)."""
    n, c, h, w = x.shape
    return x.dtype == np.float32 and (n > 1 or (k[0] > 3 and k[1] > 3) or n * c * h * w > 20480)


def _all_finite(a):
    return bool(np.isfinite(a).all()) if a.size <= 4096 else _finite(a)


def _direct_corr(kern, x, w, out, pad, bias):
    """The kernels' correlation of x (N, C, H, W) with w (O, C, KH, KW), zero padding
    ``pad`` at the top/left and the padded width that gives ``out`` (OH, OW) columns."""
    n, c = x.shape[:2]
    o, _, kh, kw = w.shape
    (plh, plw) = pad
    wp = out[1] + kw - 1
    L = out[0] * wp
    v = 64 // x.itemsize
    Lr = -(-L // v) * v          # (whole 512-bit vectors: no remainder loop)
    P = (out[0] + kh - 1) * wp
    x, w = np.ascontiguousarray(x), np.ascontiguousarray(w)
    y = np.empty((n, o) + tuple(out), x.dtype)
    b = np.empty(0, x.dtype) if bias is None else np.ascontiguousarray(bias)
    runs = _runs(n, 1, n * c * kh * kw * L * o)
    bufs = [(np.zeros(c * P + Lr - L + kw - 1, x.dtype), np.empty((2, Lr), x.dtype)) for _ in runs]

    def run(r, i, j):
        kern.corr(x[i:j], w, y[i:j], bufs[r][0], bufs[r][1], plh, plw, wp, b)
    _each_run(runs, run)
    return y


def _tap_ranges(a, lo, size, out):
    """The output positions i whose tap a falls inside the input (0 <= i + a - lo < size)."""
    return max(0, lo - a), min(out, size + lo - a)


def _exact_fwd(x, w, pad, out, bias):
    """The NumPy path of the exact forward kernel: each tap's product over the output
    positions where it falls inside the input only."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    y = np.zeros((n, o) + tuple(out), x.dtype)
    with np.errstate(invalid="ignore", over="ignore"):       # (inf and NaN as the kernels give them)
        for a in range(kh):
            i0, i1 = _tap_ranges(a, pad[0], h, out[0])
            for b in range(kw):
                j0, j1 = _tap_ranges(b, pad[1], wd, out[1])
                if i0 < i1 and j0 < j1:
                    xs = x[:, :, i0 + a - pad[0]:i1 + a - pad[0], j0 + b - pad[1]:j1 + b - pad[1]]
                    y[:, :, i0:i1, j0:j1] += np.einsum("oc,nchw->nohw", w[:, :, a, b], xs)
        if bias is not None:
            y += bias.reshape(1, o, 1, 1)
    return y


def _exact_w(x, g, wshape, pad):
    """The NumPy path of the exact weight-gradient kernel."""
    n, c, h, wd = x.shape
    out = g.shape[2:]
    gw = np.zeros(wshape, x.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        for a in range(wshape[2]):
            i0, i1 = _tap_ranges(a, pad[0], h, out[0])
            for b in range(wshape[3]):
                j0, j1 = _tap_ranges(b, pad[1], wd, out[1])
                if i0 < i1 and j0 < j1:
                    xs = x[:, :, i0 + a - pad[0]:i1 + a - pad[0], j0 + b - pad[1]:j1 + b - pad[1]]
                    gw[:, :, a, b] = np.einsum("nohw,nchw->oc", g[:, :, i0:i1, j0:j1], xs)
    return gw


def _direct_fwd(x, w, p, bias=None):
    """conv(x, w) (+ bias) by the direct kernels, or None where they do not serve it."""
    out = _direct_geom("fwd", x.shape, w.shape, p)
    if out is None:
        return None
    kern = _direct_kernels(x, w)
    pad = (p.pad[0][0], p.pad[1][0])
    if not _all_finite(w):
        if not _skips_padding(x, w.shape[2:]):
            return None
        if kern is None:
            return _exact_fwd(x, w, pad, out, bias)
        y = np.empty((x.shape[0], w.shape[0]) + out, x.dtype)
        b = np.empty(0, x.dtype) if bias is None else np.ascontiguousarray(bias)
        kern.corr_exact(np.ascontiguousarray(x), np.ascontiguousarray(w), y, np.empty(out[1], x.dtype), *pad, b)
        return y
    if kern is None:
        return None
    return _direct_corr(kern, x, w, out, pad, bias)


def _direct_bwd_in(g, w, xshape, p):
    """The input gradient as the correlation of g, re-padded, with the flipped, transposed
    kernel, or None (an inf or NaN in w: the column path, whose col2im drops the padding's
    terms as PyTorch's kernels do)."""
    if _direct_geom("in", xshape, w.shape, p) is None:
        return None
    k = w.shape[2:]
    pad = tuple((k[i] - 1 - lo, k[i] - 1 - hi) for i, (lo, hi) in enumerate(p.pad))
    if any(v < 0 for lohi in pad for v in lohi):
        return None
    kern = _direct_kernels(g, w)
    if kern is None or not _all_finite(w):
        return None
    wt = w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3)
    return _direct_corr(kern, g, wt, tuple(xshape[2:]), (pad[0][0], pad[1][0]), None)


def _direct_bwd_w(x, g, wshape, p):
    """The weight gradient by the direct kernels (sums over fixed blocks of samples, added in
    block order: the same bits for every thread count), or None."""
    out = _direct_geom("fwd", x.shape, wshape, p)     # (the exact kernel: whatever the forward takes)
    if out is None:
        return None
    kern = _direct_kernels(x, g)
    n, c = x.shape[:2]
    o, _, kh, kw = wshape
    if not _finite(g):      # (the padding's zeros would meet its inf or NaN)
        if not (_skips_padding(x, wshape[2:]) and _finite(x)):
            return None
        if kern is None:
            return _exact_w(x, g, wshape, (p.pad[0][0], p.pad[1][0]))
        gw = np.empty(wshape, x.dtype)
        kern.corr_w_exact(np.ascontiguousarray(x), np.ascontiguousarray(g), gw, p.pad[0][0], p.pad[1][0])
        return gw
    if kern is None or not _direct_use("w", c, o, (kh, kw)) or not _finite(x):
        return None       # (an inf or NaN in x would meet g's zero extra columns: the column path's sums are exact)
    x, g = np.ascontiguousarray(x), np.ascontiguousarray(g)
    wp = out[1] + kw - 1
    P = (out[0] + kh - 1) * wp
    B = max(1, min(n, _DIRECT_W_BYTES // ((c + o) * P * x.itemsize)))
    parts = np.empty((-(-n // B), o, c, kh, kw), x.dtype)
    runs = _runs(n, B, n * c * kh * kw * out[0] * out[1] * o)
    bufs = [(np.zeros(c * (B + 1) * P, x.dtype), np.zeros((o, B * P), x.dtype)) for _ in runs]

    def run(r, i, j):
        kern.corr_w(x[i:j], g[i:j], parts[i // B:-(-j // B)], bufs[r][0], bufs[r][1], p.pad[0][0], p.pad[1][0],
                    wp, B)
    _each_run(runs, run)
    return parts.sum(0)


# *** differentiable ops ***

class ConvolutionBackward0(OpNode):
    def backward(self, g):
        x, w = self.saved_tensors
        nf = self.next_functions
        p = self.p
        gb = None
        if len(nf) > 2 and nf[2][0] is not None:
            gb = g.sum([0] + list(range(2, g.ndim)))
        gd = g._data
        if nf[0][0] is not None and nf[1][0] is not None and type(gd) is np.ndarray \
                and not gd.flags.c_contiguous and not g._requires_grad:
            # (a sum's broadcast gradient, say) one copy for both products, not one each
            g = finish(None, np.ascontiguousarray(gd))
        cols = self.__dict__.pop("cols", None)
        both = None
        if nf[0][0] is not None and nf[1][0] is not None and cols is None and type(g._data) is np.ndarray:
            # (oneDNN's two passes in one plan: the output gradient reordered once)
            both = _dnnl_conv.bwd(_f32(x._data), _f32(g._data), _f32(w._data), p)
        gx = gw = None
        if nf[0][0] is not None:
            gx = _conv_input_grad(g, w, x.shape, p, None if both is None else both[0])
        if nf[1][0] is not None:
            gw = _conv_weight_grad(x, g, w.shape, p, cols, None if both is None else both[1])
        _give(cols)
        if len(nf) > 2:
            return joint_grads("ConvolutionBackwardBackward0", (gx, gw, gb), (g, x, w))
        return gx, gw

    def __del__(self):
        # a graph dropped before its backward hands its column buffer back
        cols = self.__dict__.get("cols")
        if cols is not None:
            _give(cols)


class ConvolutionBackwardBackward0(OpNode):
    """Node of the input/weight-gradient products (for double backward)."""

    def backward(self, gg):
        a, b = self.saved_tensors
        nf = self.next_functions
        p = self.p
        ga = gb = None
        if self.kind == "input":      # out = Tin(g=a, w=b)
            if nf[0][0] is not None:
                ga = _conv(gg, b, p)
            if nf[1][0] is not None:
                gb = _conv_weight_grad(gg, a, b.shape, p)
        else:                         # out = Tw(x=a, g=b)
            if nf[0][0] is not None:
                ga = _conv_input_grad(b, gg, a.shape, p)
            if nf[1][0] is not None:
                gb = _conv(a, gg, p)
        return ga, gb


def _f32(a):
    """bfloat16 as float32: PyTorch's CPU convolution accumulates it in float32 and rounds once."""
    return a.astype(np.float32) if a.dtype.kind == "V" else a


def _round_like(r, a):
    return r.astype(a.dtype) if r.dtype != a.dtype and a.dtype.kind == "V" else r


def _conv(x, w, p, bias=None):
    xd, wd = _f32(x._data), _f32(w._data)
    inputs = (x, w) if bias is None else (x, w, bias)
    node = node_for(ConvolutionBackward0, inputs)
    bd = None if bias is None else _f32(bias._data)
    if node is not None and w._requires_grad:
        y, cols = _fwd(xd, wd, p, want_cols=True, bias=bd)
        node.cols = cols
    else:
        y = _fwd(xd, wd, p, bias=bd)
    y = _round_like(y, x._data)
    if node is not None:
        node.p = p
        save(node, x, w)
    return finish(node, y)


def _conv_input_grad(g, w, xshape, p, r=None):
    if r is None:
        r = _bwd_in(_f32(g._data), _f32(w._data), tuple(xshape), p)
    r = _round_like(r, g._data)
    node = node_for(ConvolutionBackwardBackward0, (g, w))
    if node is not None:
        node.p, node.kind = p, "input"
        save(node, g, w)
    return finish(node, r)


def _conv_weight_grad(x, g, wshape, p, cols=None, r=None):
    if r is None:
        r = _bwd_w(_f32(x._data), _f32(g._data), tuple(wshape), p, cols)
    r = _round_like(r, g._data)
    node = node_for(ConvolutionBackwardBackward0, (x, g))
    if node is not None:
        node.p, node.kind = p, "weight"
        save(node, x, g)
    return finish(node, r)


# *** padding modes (reflect, replicate, circular) ***

def _pad_index(n, lo, hi, mode):
    """Source index along one dim for each padded position."""
    xp = xp_for(n, lo, hi)
    i = xp.arange(-lo, n + hi)
    if mode == "reflect":
        if n == 1:
            return xp.zeros_like(i)
        period = 2 * (n - 1)
        i = xp.abs(i) % period
        return xp.where(i >= n, period - i, i)
    if mode == "replicate":
        return xp.clip(i, 0, n - 1)
    return i % n   # circular


class _PadBackward(OpNode):
    def backward(self, g):
        return _unpad(g, self.index, self.in_shape)


ReflectionPad1DBackward0 = type("ReflectionPad1DBackward0", (_PadBackward,), {})
ReflectionPad2DBackward0 = type("ReflectionPad2DBackward0", (_PadBackward,), {})
ReflectionPad3DBackward0 = type("ReflectionPad3DBackward0", (_PadBackward,), {})
ReplicationPad1DBackward0 = type("ReplicationPad1DBackward0", (_PadBackward,), {})
ReplicationPad2DBackward0 = type("ReplicationPad2DBackward0", (_PadBackward,), {})
ReplicationPad3DBackward0 = type("ReplicationPad3DBackward0", (_PadBackward,), {})
_PadCircular = type("CatBackward0", (_PadBackward,), {})
_PAD_NODES = {("reflect", 1): ReflectionPad1DBackward0, ("reflect", 2): ReflectionPad2DBackward0,
              ("reflect", 3): ReflectionPad3DBackward0, ("replicate", 1): ReplicationPad1DBackward0,
              ("replicate", 2): ReplicationPad2DBackward0, ("replicate", 3): ReplicationPad3DBackward0}


class _UnpadBackward(OpNode):
    def backward(self, g):
        return _pad_gather(g, self.index)


def _pad_gather(x, index):
    """x gathered along its last len(index) dims by the index arrays."""
    xp = xp_for(x, index)
    r = x._data
    nd = len(index)
    for j, idx in enumerate(index):
        r = xp.take(r, idx, axis=r.ndim - nd + j)
    return r


def _unpad(g, index, in_shape):
    """Adjoint of the gather: sum padded positions back onto their sources (one small
    0/1 matrix product per padded dim)."""
    xp = xp_for(g, index, in_shape)
    r = g._data
    nd = len(index)
    for j, idx in enumerate(index):
        n = in_shape[len(in_shape) - nd + j]
        m = xp.zeros((idx.shape[0], n), r.dtype)
        m[xp.arange(idx.shape[0]), idx] = 1
        ax = r.ndim - nd + j
        r = xp.moveaxis(xp.tensordot(r, m, axes=([ax], [0])), -1, ax)
    node = node_for(_UnpadBackward, (g,))
    if node is not None:
        node.index = index
    return finish(node, xp.ascontiguousarray(r))


def pad_mode(input, pad, mode):
    """Pad the last dims of ``input`` by ``pad`` ((lo, hi) per dim, first spatial dim first)
    with mode reflect, replicate or circular."""
    xp = xp_for(input, pad)
    x = input._data
    nd = len(pad)
    index = []
    for j, (lo, hi) in enumerate(pad):
        n = x.shape[x.ndim - nd + j]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({lo}, {hi}) at dimension {x.ndim - nd + j} of input "
                               f"{list(x.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        index.append(_pad_index(n, lo, hi, mode))
    r = xp.ascontiguousarray(_pad_gather(input, index))
    cls = _PAD_NODES.get((mode, nd), _PadCircular)
    node = node_for(cls, (input,))
    if node is not None:
        node.index, node.in_shape = index, x.shape
    return finish(node, r)


# *** the public functional entry ***

def _tup(v, n, name="value"):
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return tuple(int(v[0]) for _ in range(n))
        if len(v) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match "
                               f"the convolution dimensions, but got {name}={list(v)}")
        return tuple(int(a) for a in v)
    return (int(v),) * n


def _fmt(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


class SqueezeBackward1(OpNode):
    def backward(self, g):
        return g.reshape(self.shape)


def _squeeze0(t):
    return t.squeeze(0)   # a view, as PyTorch's (SqueezeBackward1)


def convolution(input, weight, bias, stride, padding, dilation, groups, nd):
    """N-d convolution (``nd`` spatial dims) with PyTorch's checks and messages."""
    x, w = input._data, weight._data
    name = f"conv{nd}d"
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input "
                           f"of size: {_fmt(x.shape)}")
    if w.ndim != nd + 2:
        raise RuntimeError("weight should have at least three dimensions" if w.ndim < 3 else
                           f"Expected {nd + 2}-dimensional weight for {nd + 2}-dimensional input, but got weight "
                           f"of size {_fmt(w.shape)} instead")
    unbatched = x.ndim == nd + 1
    if unbatched:
        input = finish(None, x[None]) if not input._requires_grad else _unsqueeze0(input)
        x = input._data
    stride = _tup(stride, nd, "stride")
    dilation = _tup(dilation, nd, "dilation")
    k = w.shape[2:]
    if isinstance(padding, str):
        if padding == "valid":
            pad = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pad = []
            for i in range(nd):
                tot = dilation[i] * (k[i] - 1)
                pad.append((tot // 2, tot - tot // 2))
            pad = tuple(pad)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pad = tuple((p, p) for p in _tup(padding, nd, "padding"))
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(p < 0 for lo_hi in pad for p in lo_hi):
        raise RuntimeError("negative padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        if any(d < 0 for d in dilation):
            raise RuntimeError("dilation should be greater than zero")
        if x.dtype.name in ("float32", "float16"):    # PyTorch's MKLDNN path words it differently
            raise RuntimeError("non-positive dilation is not supported")
        raise RuntimeError(f"dilation should be greater than zero, but got {list((1,) * (nd == 1) + dilation)}")
    if w.shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {_fmt(w.shape)} instead")
    if w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{_fmt(w.shape)}] instead")
    if x.shape[1] != w.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {_fmt(w.shape)}, expected input{_fmt(x.shape)} to "
                           f"have {w.shape[1] * groups} channels, but got {x.shape[1]} channels instead")
    if bias is not None and (bias._data.ndim != 1 or bias._data.shape[0] != w.shape[0]):
        raise RuntimeError(f"Given weight of size {_fmt(w.shape)}, expected bias to be 1-dimensional with "
                           f"{w.shape[0]} elements, but got bias of size {_fmt(bias._data.shape)} instead")
    padded = tuple(x.shape[2 + i] + pad[i][0] + pad[i][1] for i in range(nd))
    eff = tuple(dilation[i] * (k[i] - 1) + 1 for i in range(nd))
    if any(padded[i] < eff[i] for i in range(nd)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                           f"size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than actual input size")
    if x.size == 0 and x.shape[0] and x.shape[1]:
        raise RuntimeError(f"Only zero batch or zero channel inputs are supported, but got input shape: {_fmt(x.shape)}")
    if bias is not None and bias._data.dtype != x.dtype:
        from ._linear import _CN
        raise RuntimeError(f"Input type ({_CN.get(x.dtype.name, x.dtype.name)}) and bias type "
                           f"({_CN.get(bias._data.dtype.name, bias._data.dtype.name)}) should be the same")
    check_weight_type(input, weight)
    if x.dtype.kind == "b":
        check_kernel_dtype("compute_columns3d" if nd == 3 else "slow_conv2d_cpu", x)
    out = _conv(input, weight, _P(stride, pad, dilation, groups), bias)
    return _squeeze0(out) if unbatched else out


class UnsqueezeBackward0(OpNode):
    def backward(self, g):
        return g.reshape(self.shape)


def _unsqueeze0(t):
    """``t.unsqueeze(0)``: a view (its version counter shared: a saved unbatched input notices
    an in-place change)."""
    node = node_for(UnsqueezeBackward0, (t,))
    if node is not None:
        node.shape = t._data.shape
    return view_of(t, finish(node, t._data[None]), lambda b: b.unsqueeze(0))


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over (N, C, L) or (C, L) input."""
    return convolution(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution over (N, C, H, W) or (C, H, W) input."""
    return convolution(input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over (N, C, D, H, W) or (C, D, H, W) input."""
    return convolution(input, weight, bias, stride, padding, dilation, groups, 3)
