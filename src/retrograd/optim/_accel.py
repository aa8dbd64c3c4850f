"""Optional compiled kernels (numba) for the flat optimizer steps.

A NumPy step makes one pass over memory per operation (a dozen for Adam, and a float32
fused multiply-add costs several more); these kernels do a parameter's whole update in one
pass. They are used only when numba is installed (``pip install numba``), for the
parameters of a flat bundle, and give the NumPy kernels' bits: every operation is the
same IEEE operation in the same precision (hyperparameters are cast to the array's dtype
first, as NumPy casts a Python number), the multiply-adds that the NumPy path sends to
BLAS ``axpy`` are true fused multiply-adds (``llvm.fma``), and ``addcmul``'s float32
emulation (exact product, one float64 rounding, then float32) is done the same way.
The NumPy path stays the reference: ``RETROGRAD_NO_NUMBA=1`` turns these off.
"""
import os

_KERNELS = []


def kernels():
    """{'sgd': ..., 'adam': ...} compiled on first use, or None without numba."""
    if not _KERNELS:
        k = None
        if not os.environ.get("RETROGRAD_NO_NUMBA"):
            try:
                k = _build()
            except ImportError:
                k = None
        _KERNELS.append(k)
    return _KERNELS[0]


def _build():
    import numba
    import numpy as np
    from numba.extending import intrinsic

    @intrinsic
    def fma(typingctx, a, b, c):
        def codegen(context, builder, signature, args):
            return builder.fma(*args)
        return a(a, b, c), codegen

    jit = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)

    @jit
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

    @jit
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

    return {"sgd": sgd, "adam": adam}
