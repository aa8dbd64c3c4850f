"""The numba kernels of the LSTM layer's time loops (imported only where numba is installed;
:func:`retrograd.ops._seqkit.rnn_kernels` loads them).

At a recurrent layer's sizes (a few thousand gate values a step) a step's work is one small
GEMM (a few microseconds) and a few passes over its gates, and a loop of NumPy calls spends
more time in the calls than in the work. Here the whole time loop, forward or backward
through time, is one compiled call: the GEMM of each step is a call of the BLAS's cblas
gemm through its C function pointer (the same library, function and arguments as the NumPy
path's product: ``_seqkit._rec_gemm``; on MKL its compute on the weights packed once per
loop, ``_seqkit._rhs``; on oneDNN its ``dnnl_sgemm``), and the exp/tanh of the gates are calls of NumPy's
own ufunc inner loops through their C function pointers (``_seqkit._ufunc_loop``: NumPy's
SIMD loops, which a compiled scalar loop would not match bit for bit), on contiguous runs as
the NumPy path's calls run them. The arithmetic between them does the NumPy path's IEEE
operations in the same order in the arrays' precision (constants come in cast to it; numba
does not contract a * b + c into a fused multiply-add), so the results have the same bits.

The layout is ``_seqkit.lstm_layer``'s: per step the gates (N, 4H) in the order (o, i, f, g)
with the sigmoid gates' pre-activations negated (as the step's product and the projections,
in PyTorch's order, are summed into them), ``gc`` the (g, c) pairs, c that of the step before; the backward writes the
gates' gradients in PyTorch's order (i, f, g, o).

Module-level functions, so that numba's on-disk cache finds them in the next process.
"""
import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["lstm_forward", "lstm_backward", "call_loop"]

_jit = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
# (the step loops' small helpers are inlined into them: a call per row and helper costs)
_inl = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")

_ROW, _NT, _PACKED = 101, 111, 151     # CblasRowMajor, CblasNoTrans, CblasPacked


# The C functions come in as addresses (integers): a ctypes function object as an argument
# costs ~10 us in numba's dispatch per call, and one frozen into the code as a global
# would keep numba from caching it.

@intrinsic
def _call4(typingctx, fn, a, b, c, d):
    """Call the C function at address ``fn`` with four pointers (addresses), returning nothing."""
    sig = types.void(fn, a, b, c, d)

    def codegen(context, builder, signature, args):
        p8 = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [p8] * 4)
        f = builder.inttoptr(args[0], fnty.as_pointer())
        builder.call(f, [builder.inttoptr(x, p8) for x in args[1:]])
        return context.get_dummy_value()
    return sig, codegen


def _cblas_codegen(ptrs, scalars):
    """The codegen of a call to the cblas function at address args[0] whose other arguments
    (from args[2] on) are integers of args[1]'s type, except the addresses at the indices
    ``ptrs`` and the floating-point scalars at ``scalars`` (of the first scalar's type)."""
    def codegen(context, builder, signature, args):
        p8 = ir.IntType(8).as_pointer()
        ity, fty = signature.args[1], signature.args[scalars[0]]
        li, lf = context.get_value_type(ity), context.get_value_type(fty)
        kinds = [p8 if i in ptrs else lf if i in scalars else li for i in range(2, len(args))]
        f = builder.inttoptr(args[0], ir.FunctionType(ir.VoidType(), kinds).as_pointer())
        vals = []
        for i in range(2, len(args)):
            v, t = args[i], signature.args[i]
            if i in ptrs:
                vals.append(builder.inttoptr(v, p8))
            else:
                vals.append(context.cast(builder, v, t, fty if i in scalars else ity))
        builder.call(f, vals)
        return context.get_dummy_value()
    return codegen


@intrinsic
def _call_gemm(typingctx, fn, iw, lay, ta, tb, m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc):
    """Call the cblas gemm at address ``fn``: its integers of ``iw``'s type (int32: LP64,
    int64: ILP64), its scalars of ``alpha``'s, the matrices given as addresses."""
    sig = types.void(fn, iw, lay, ta, tb, m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc)
    return sig, _cblas_codegen((9, 11, 14), (8, 13))


@intrinsic
def _call_compute(typingctx, fn, iw, lay, ta, tb, m, n, k, pa, lda, pb, ldb, beta, pc, ldc):
    """Call MKL's cblas ?gemm_compute at address ``fn`` (a gemm on a packed operand: no
    alpha, which the packing applied): integers of ``iw``'s type, the scalar of ``beta``'s."""
    sig = types.void(fn, iw, lay, ta, tb, m, n, k, pa, lda, pb, ldb, beta, pc, ldc)
    return sig, _cblas_codegen((8, 10, 13), (12,))


@intrinsic
def _call_dnnl(typingctx, fn, m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc):
    """Call oneDNN's ``dnnl_sgemm`` at address ``fn`` (row-major, neither operand transposed:
    'N', 'N'), its dimensions as int64, its scalars as float32, the matrices as addresses."""
    sig = types.void(fn, m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc)

    def codegen(context, builder, signature, args):
        p8 = ir.IntType(8).as_pointer()
        i32, i64, f32 = ir.IntType(32), ir.IntType(64), ir.FloatType()
        # (the 'N' chars as 32-bit values: what a caller's extension of a char leaves in a register)
        fnty = ir.FunctionType(i32, [i32, i32, i64, i64, i64, f32, p8, i64, p8, i64, f32, p8, i64])
        f = builder.inttoptr(args[0], fnty.as_pointer())
        a = signature.args
        ints = lambda i: context.cast(builder, args[i], a[i], types.int64)      # noqa: E731
        flt = lambda i: context.cast(builder, args[i], a[i], types.float32)     # noqa: E731
        ptr = lambda i: builder.inttoptr(args[i], p8)                          # noqa: E731
        nc = ir.Constant(i32, ord("N"))
        builder.call(f, [nc, nc, ints(1), ints(2), ints(3), flt(4), ptr(5), ints(6), ptr(7), ints(8), flt(9),
                         ptr(10), ints(11)])
        return context.get_dummy_value()
    return sig, codegen


@_inl
def _product(fn, iw, mode, a, m, k, b, ldb, n, c, one, zero):
    """c (m, n) = a (m, k) @ op(b) through ``_seqkit._Rhs``'s function at ``fn``, by its
    ``mode``: 0 the cblas gemm on b (k, n) with leading dimension ``ldb``, 1 MKL's compute on
    the packed b, 2 oneDNN's sgemm on b as for 0 (float32)."""
    if mode == 1:
        _call_compute(fn, iw, _ROW, _NT, _PACKED, m, n, k, a, k, b, ldb, zero, c, n)
    elif mode == 2:
        _call_dnnl(fn, m, n, k, one, a, k, b, ldb, zero, c, n)
    else:
        _call_gemm(fn, iw, _ROW, _NT, _NT, m, n, k, one, a, k, b, ldb, zero, c, n)


@_jit
def call_loop(fn, data, x, out, n, size, buf):
    """NumPy's 1-D ufunc loop at address ``fn`` (one input, one output, both contiguous,
    elements of ``size`` bytes) over ``n`` elements from the address ``x`` to ``out``;
    ``buf`` int64[5] holds its arguments (pointers, count, strides)."""
    buf[0] = x
    buf[1] = out
    buf[2] = n
    buf[3] = size
    buf[4] = size
    p = buf.ctypes.data
    _call4(fn, p, p + 16, p + 24, data)


# Small loops over 1-D runs, each with few arrays, in place where in place: LLVM vectorises
# these (a loop that writes one array while reading another that may overlap it runs scalar
# after its run-time overlap check).

@_inl
def _sum3(out, a, b, c, neg):
    """out = (a + b) + c, negated with ``neg`` (exactly the sum of the negated terms)."""
    if neg:
        for k in range(out.size):
            out[k] = -(a[k] + b[k] + c[k])
    else:
        for k in range(out.size):
            out[k] = a[k] + b[k] + c[k]


@_inl
def _isigmoid(x, one):
    """x = 1 / (x + 1): the sigmoid from exp of the negated pre-activation."""
    for k in range(x.size):
        x[k] = one / (x[k] + one)


@_inl
def _mul(out, a, b):
    for k in range(out.size):
        out[k] = a[k] * b[k]


@_inl
def _addmul(out, a, b):
    for k in range(out.size):
        out[k] = out[k] + a[k] * b[k]


@_inl
def _copy(out, a):
    for k in range(out.size):
        out[k] = a[k]


@_jit
def lstm_forward(fn, iw, mode, wtn, ldw, fexp, exp_data, ftanh, tanh_data, gp, bp, sc, h0, acts, gc, tcs, out,
                 hn, m, nm, hprev, masked, keep_prev, reverse, one, zero, hb):
    """``_seqkit.lstm_layer``'s time loop: h0 (N, H) the first state, gc's c at the first step
    the first cell state; writes acts (L, N, 4H), gc (L + 1, N, 2H), tcs (L, N, H), the outputs
    out (L, N, H) and the last state hn (N, H). wtn: the hidden weights transposed (H, 4H) as
    ``_seqkit._Rhs`` holds them (fn, mode, ldw: its function, how it is called (``_product``),
    its leading dimension); gp (L, N, 4H): the input projections; bp (4H,) the biases' sum; all three in
    PyTorch's gate order; sc (N, 4H) receives a step's product. With ``masked``, m and nm (L, N) keep the state of finished sequences. With
    ``masked`` or ``keep_prev``, hprev (L, N, H) receives the state before each step (the backward's operand of the
    hidden weights' gradient). hb (2, N, H) is scratch."""
    L, N, H4 = acts.shape
    H = H4 // 4
    H2 = 2 * H
    H3 = 3 * H
    buf = np.empty(5, np.int64)
    esz = acts.itemsize
    h = h0
    for s in range(L):
        t = L - 1 - s if reverse else s
        j = t + 1 if reverse else t
        jn = t if reverse else t + 1
        a = acts[t]
        _product(fn, iw, mode, h.ctypes.data, N, H, wtn.ctypes.data, ldw, H4, sc.ctypes.data, one, zero)
        af = a.reshape(N * H4)
        sf = sc.reshape(N * H4)
        g_ = gp[t].reshape(N * H4)
        for n in range(N):      # (i, f, g, o) into (o, i, f, g), the sigmoid gates negated
            r = n * H4
            _sum3(af[r:r + H], sf[r + H3:r + H4], g_[r + H3:r + H4], bp[H3:], True)
            _sum3(af[r + H:r + H3], sf[r:r + H2], g_[r:r + H2], bp[:H2], True)
            _sum3(af[r + H3:r + H4], sf[r + H2:r + H3], g_[r + H2:r + H3], bp[H2:H3], False)
        cur = gc[j].reshape(N * H2)
        nxt = gc[jn].reshape(N * H2)
        tcf = tcs[t].reshape(N * H)
        # NumPy's loops on each row's runs, as NumPy's calls on the (N, 3H) and (N, H) blocks run them
        for n in range(N):
            r = af[n * H4:].ctypes.data
            call_loop(fexp, exp_data, r, r, H3, esz, buf)
            call_loop(ftanh, tanh_data, r + H3 * esz, cur[n * H2:].ctypes.data, H, esz, buf)
        for n in range(N):
            r = n * H4
            q = n * H2
            _isigmoid(af[r:r + H3], one)
            y = tcf[n * H:(n + 1) * H]
            _mul(y, af[r + H:r + H2], cur[q:q + H])                # i g
            _addmul(y, af[r + H2:r + H3], cur[q + H:q + H2])       # + f c
            _copy(nxt[q + H:q + H2], y)
        call_loop(ftanh, tanh_data, tcf.ctypes.data, tcf.ctypes.data, N * H, esz, buf)
        of = out[t].reshape(N * H)
        if masked:
            hpf = hprev[t].reshape(N * H)
            hf = h.reshape(N * H)
            hnew = hb[s % 2]
            hnf = hnew.reshape(N * H)
            for n in range(N):
                mv = m[t, n]
                nmv = nm[t, n]
                for k in range(n * H, (n + 1) * H):
                    hpf[k] = hf[k]
                    hm = af[n * H4 + k - n * H] * tcf[k] * mv
                    of[k] = hm
                    hnf[k] = hm + hf[k] * nmv
                    q = n * H2 + H + k - n * H
                    nxt[q] = nxt[q] * mv + cur[q] * nmv
            h = hnew
        else:
            if keep_prev:
                _copy(hprev[t].reshape(N * H), h.reshape(N * H))
            for n in range(N):
                _mul(of[n * H:(n + 1) * H], af[n * H4:n * H4 + H], tcf[n * H:(n + 1) * H])
            h = out[t]
    hn[:, :] = h


@_jit
def lstm_backward(fn, iw, mode, w, ldw, acts, gc, tcs, dout, dh, dc, da, m, nm, masked, reverse, one, zero,
                  keep, db, sum_db, srow):
    """The backward through time of ``lstm_forward``: from the gradients dout (L, N, H) of the
    outputs and dh, dc (N, H) of the last states (both overwritten with the gradients of the
    first ones), writes da (L, N, 4H), the gates' pre-activation gradients in PyTorch's order
    (i, f, g, o). w: the hidden weights as they are (4H, H), as ``_seqkit._Rhs`` holds them
    (fn, mode, ldw as in ``lstm_forward``); keep (N, H) scratch. With ``sum_db``, db (4H,)
    (zeros) receives the sum of da over steps and rows, the biases' gradient, summed as the
    NumPy loop sums it (each step's rows in order, into srow (4H,), then added to db), while
    the step's rows are in cache."""
    L, N, H4 = acts.shape
    H = H4 // 4
    for s in range(L):
        t = s if reverse else L - 1 - s
        j = t + 1 if reverse else t
        a = acts[t]
        gcj = gc[j]
        tc_ = tcs[t]
        do_ = dout[t]
        d = da[t]
        for n in range(N):
            mv = m[t, n] if masked else one
            nmv = nm[t, n] if masked else zero
            for k in range(H):
                o = a[n, k]
                i = a[n, H + k]
                f = a[n, 2 * H + k]
                g = gcj[n, k]
                cp = gcj[n, H + k]
                tc = tc_[n, k]
                dh2 = do_[n, k] + dh[n, k]
                kc = (one - tc * tc) * o
                if masked:
                    dh2 = dh2 * mv
                    dct = dc[n, k] * mv + dh2 * kc
                    keep[n, k] = dh[n, k] * nmv
                    dc[n, k] = dct * f + dc[n, k] * nmv
                else:
                    dct = dh2 * kc + dc[n, k]
                    dc[n, k] = dct * f
                d[n, k] = ((one - i) * i * g) * dct
                d[n, H + k] = ((one - f) * f * cp) * dct
                d[n, 2 * H + k] = ((one - g * g) * i) * dct
                d[n, 3 * H + k] = ((one - o) * o * tc) * dh2
        if sum_db:
            for k in range(H4):
                srow[k] = d[0, k]
            for n in range(1, N):
                for k in range(H4):
                    srow[k] = srow[k] + d[n, k]
            for k in range(H4):
                db[k] = db[k] + srow[k]
        _product(fn, iw, mode, d.ctypes.data, N, H4, w.ctypes.data, ldw, H, dh.ctypes.data, one, zero)
        if masked:
            for n in range(N):
                for k in range(H):
                    dh[n, k] = dh[n, k] + keep[n, k]
