"""The numba kernels of :mod:`retrograd.optim._accel` (imported only where numba is installed).

Module-level functions, so that numba's on-disk cache (``cache=True``) finds them again in
the next process instead of compiling anew.
"""
import numba
import numpy as np
from numba.extending import intrinsic

__all__ = ["sgd", "adam"]


@intrinsic
def fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (llvm.fma), as BLAS's axpy computes it."""
    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return a(a, b, c), codegen


_jit = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)


@_jit
def sgd(d, g, buf, neg, wd, momentum, omd, nesterov, neg_lr, has_wd, has_momentum):
    # d, g, buf: 1-D arrays of one dtype; the scalars already of that dtype
    for i in range(d.shape[0]):
        gi = g[i]
        if neg:
            gi = -gi
        if has_wd:
            gi = fma(wd, d[i], gi)
        if has_momentum:
            b = fma(omd, gi, buf[i] * momentum)
            buf[i] = b
            gi = fma(momentum, b, gi) if nesterov else b
        d[i] = fma(neg_lr, gi, d[i])


@_jit
def adam(d, g, ea, eas, mx, neg, wd, l2, w, lerp_lo, one_minus_w, beta2, value, amsgrad, bc2s, eps,
         neg_step, shrink, decoupled, f32):
    wide = np.float64
    for i in range(d.shape[0]):
        gi = g[i]
        if neg:
            gi = -gi
        di = d[i]
        if l2:
            gi = fma(wd, di, gi)
        e = ea[i]
        diff = gi - e
        if lerp_lo:
            e = fma(w, diff, e)
        else:
            e = fma(-one_minus_w, diff, gi)
        ea[i] = e
        v = eas[i] * beta2
        va = value * gi
        if f32:
            v = np.float32(wide(va) * wide(gi) + wide(v))
        else:
            v = v + va * gi
        eas[i] = v
        if amsgrad:
            m = mx[i]
            if not (m >= v or m != m):
                m = v
            mx[i] = m
            v = m
        denom = np.sqrt(v) / bc2s + eps
        if decoupled:
            di = di * shrink
        d[i] = di + (neg_step * e) / denom
