"""Sequence-layer kernels: graph_grads (differentiable gradients of a composite, for fused
nodes under create_graph) and the fused LSTM/GRU cell pointwise steps."""

import numpy as np

from ._base import xp_for
from . import _blas
from ._base import OpNode, node_for, save, finish, finish_multi, _state


def graph_grads(fn, inputs, grads):
    """Gradients of the composite ``fn(*inputs)`` for the upstream ``grads``, themselves
    differentiable. Fused nodes whose backward runs on arrays call this when the backward
    records a graph (``create_graph=True``), so that double backward works through them."""
    from ..autograd import engine  # the engine sits above the ops (as in view_inplace)
    # fresh aliases, so each gradient is the partial one (inputs may depend on each other)
    inputs = [t.view_as(t) if t is not None and t._requires_grad else t for t in inputs]
    outs = fn(*inputs)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    pairs = [(o, g) for o, g in zip(outs, grads) if o is not None and g is not None and o._requires_grad]
    diff = [i for i, t in enumerate(inputs) if t is not None and t._requires_grad]
    res = [None] * len(inputs)
    if not pairs or not diff:
        return res
    got = engine.grad([o for o, _ in pairs], [inputs[i] for i in diff], [g for _, g in pairs], create_graph=True,
                      allow_unused=True)
    for i, r in zip(diff, got):
        res[i] = r
    return res


# *** the compiled time loops (numba, optional; the NumPy loops stay the reference) ***

_RNN_KERNELS = []
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
# the kernels run on layers of at least this many gate values (all steps): a program of
# small layers never pays numba's import and first call (seconds, once per process)
_MIN_ACCEL = 4096


def rnn_kernels():
    """The recurrent layers' kernel module (``_accel_rnn``), compiled or loaded from numba's
    cache on first use; None without numba or with ``RETROGRAD_NO_NUMBA=1``."""
    from ._accel import load
    return load(_RNN_KERNELS, "_accel_rnn")


# *** fused recurrent cell pointwise steps (the layers' per-step work after the GEMMs) ***

def _sig(a):
    xp = xp_for(a)
    e = xp.exp(-xp.abs(a))
    return xp.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype, copy=False)


class ThnnFusedLstmCellBackward0(OpNode):
    def _apply(self, grads):
        xp = xp_for(grads)
        if _state.grad:
            res = graph_grads(lstm_composite, list(self.saved_tensors), list(grads))
            return tuple(res)
        dh, dc2 = grads[0]._data, grads[1]._data
        i, f, g, o, c, tc = self.vals
        dct = dc2 + dh * o * (1 - tc * tc)
        da = xp.concatenate([dct * g * i * (1 - i), dct * c * f * (1 - f), dct * i * (1 - g * g),
                             dh * tc * o * (1 - o)], axis=-1)
        nf = self.next_functions
        return (finish(None, da) if nf[0][0] is not None else None,
                finish(None, da) if nf[1][0] is not None else None,
                finish(None, dct * f) if nf[2][0] is not None else None)


def lstm_composite(gx, gh, c):
    """(h', c') of an LSTM step as tensor ops (differentiable to any order; LSTMCell uses it)."""
    from .shape import split
    from .unary import sigmoid, tanh
    H = c.shape[-1]
    i, f, g, o = split(gx + gh, [H, H, H, H], -1)
    c2 = sigmoid(f) * c + sigmoid(i) * tanh(g)
    return sigmoid(o) * tanh(c2), c2


def lstm_pointwise(gx, gh, c):
    """(h', c') of an LSTM step from the input and hidden projections (N, 4H) and c (N, H)."""
    xp = xp_for(gx, gh, c)
    a, cd = gx._data + gh._data, c._data
    H = cd.shape[-1]
    i, f, o = _sig(a[..., :H]), _sig(a[..., H:2 * H]), _sig(a[..., 3 * H:])
    g = xp.tanh(a[..., 2 * H:3 * H])
    c2 = f * cd + i * g
    tc = xp.tanh(c2)
    node = node_for(ThnnFusedLstmCellBackward0, (gx, gh, c))
    h2, c2 = finish_multi(node, [o * tc, c2])
    if node is not None:
        node.vals = (i, f, g, o, cd, tc)
        save(node, gx, gh, c)
    return h2, c2


class ThnnFusedGruCellBackward0(OpNode):
    def backward(self, g):
        xp = xp_for(g)
        if _state.grad:
            return tuple(graph_grads(gru_composite, list(self.saved_tensors), [g]))
        dh2 = g._data
        r, z, n, hn, h = self.vals
        dan = dh2 * (1 - z) * (1 - n * n)
        dar = dan * hn * r * (1 - r)
        daz = dh2 * (h - n) * z * (1 - z)
        nf = self.next_functions
        out = (xp.concatenate([dar, daz, dan], -1), xp.concatenate([dar, daz, dan * r], -1), dh2 * z)
        return tuple(finish(None, a) if nf[k][0] is not None else None for k, a in enumerate(out))


def gru_composite(gx, gh, h):
    """h' of a GRU step as tensor ops (differentiable to any order; GRUCell uses it)."""
    from .shape import split
    from .unary import sigmoid, tanh
    H = h.shape[-1]
    xr, xz, xn = split(gx, [H, H, H], -1)
    hr, hz, hn = split(gh, [H, H, H], -1)
    r = sigmoid(xr + hr)
    z = sigmoid(xz + hz)
    n = tanh(xn + r * hn)
    return (1 - z) * n + z * h


def gru_pointwise(gx, gh, h):
    """h' of a GRU step from the input and hidden projections (N, 3H) and h (N, H)."""
    xp = xp_for(gx, gh, h)
    a, b, hd = gx._data, gh._data, h._data
    H = hd.shape[-1]
    r = _sig(a[..., :H] + b[..., :H])
    z = _sig(a[..., H:2 * H] + b[..., H:2 * H])
    hn = b[..., 2 * H:]
    n = xp.tanh(a[..., 2 * H:] + r * hn)
    node = node_for(ThnnFusedGruCellBackward0, (gx, gh, h))
    res = finish(node, (1 - z) * n + z * hd)
    if node is not None:
        node.vals = (r, z, n, hn, hd)
        save(node, gx, gh, h)
    return res


# *** a whole LSTM layer (one direction) as one node ***
#
# The time loop works on the gates (N, 4H) of a step in the gate order (o, i, f, g) rather
# than PyTorch's (i, f, g, o): the three sigmoid gates are then one block and the three gates
# driven by the cell state (i, f, g) another, so that a step is a handful of whole-array
# calls. The sigmoid gates' pre-activations are kept negated (the sign taken as a step's
# product and projections, both in PyTorch's order, are summed into the loop's order: exact)
# so that sigmoid is 1 / (1 + exp(-a)) in three in-place calls. ``gc[j]`` holds (g, c) of a
# step side by side, so that f * c + i * g is one product of the (i, f) block with it and one
# sum. The step's product is h (N, H) @ W' (H, 4H) (measured here: 0.7x the time of the
# transposed W' h on MKL at 20 x 128 @ 128 x 512, about even on OpenBLAS), and the backward
# writes the gates' gradients in PyTorch's order: they are the input projections' gradients
# as they are, and one GEMM with them gives each weight's gradient (the input projection is
# part of the node). The weights themselves are never permuted or negated (no copies).

# --- the step's GEMM and NumPy's exp/tanh loops as C functions ---------------------------
#
# At the kernels' sizes (see _MIN_ACCEL) both paths run the recurrent products through one
# gemm called with the same arguments (_rec_gemm: MKL's where ops._blas uses MKL, oneDNN's
# sgemm for float32 where it uses oneDNN, else the OpenBLAS NumPy itself calls), so that the
# compiled loop, which calls it through its function pointer, gives the NumPy loop's bits;
# the compiled loop's exp and tanh are NumPy's own ufunc loops, called through theirs
# (_ufunc_loop). MKL runs with its sequential layer (ops._blas), OpenBLAS's gemm decides its
# threads for a product as it does under np.matmul (products this small run on the calling
# thread), and oneDNN's runs on retrograd's count, set (with the calling thread's signals
# blocked: ops._blas._SignalGuard) around the whole compiled loop. oneDNN's sgemm ran these
# products in 0.5-0.6x OpenBLAS's time on an AMD EPYC (16 x 64 @ 64 x 256: 5.0 us against
# 8.5; 20 x 128 @ 128 x 512: 17 against 34).

_ROW, _NT = 101, 111
_CFN = {}


def _numpy_blas_gemm(dt):
    """The cblas gemm of the OpenBLAS NumPy is linked with, for float32/float64 ``dt``, as a
    ctypes function (row-major), checked on one product against ``np.matmul``; None where it
    cannot be found (not Linux, another BLAS) or disagrees."""
    key = ("openblas", dt)
    if key in _CFN:
        return _CFN[key]
    fn = None
    try:
        fn = _find_numpy_gemm(dt)
    except Exception:
        fn = None
    _CFN[key] = fn
    return fn


def _find_numpy_gemm(dt):
    ob = _blas._numpy_openblas()
    return ob.gemm.get(np.dtype(dt)) if ob else None


def _rec_gemm(dt):
    """The gemm (cblas-style callable, row-major) of the LSTM layer's recurrent products for
    ``dt``: MKL's where ops._blas runs products on MKL, oneDNN's where it runs them on oneDNN
    (float32), else NumPy's OpenBLAS's; None."""
    return _blas.mkl_gemm(dt) or _blas.onednn_gemm(dt) or _numpy_blas_gemm(dt)


def _gemm(fn, a, b, out):
    """out (m, n) = a (m, k) @ b (k, n), all C-contiguous, through the cblas gemm ``fn``."""
    m, k = a.shape
    n = b.shape[1]
    p = _blas._ptr
    fn(_ROW, _NT, _NT, m, n, k, 1.0, p(a), k, p(b), n, 0.0, p(out), n)
    return out


# --- the fixed operand of a time loop's products, packed once -----------------------------
#
# Every step of a loop multiplies by the same weights; with MKL's gemm the weights are laid
# out in MKL's packed format once per loop (cblas_?gemm_pack) and each step's product reads
# them as they are (cblas_?gemm_compute), which gives the plain gemm's bits here and saves
# the repacking each call of the plain gemm does: 20 x 128 @ 128 x 512 (a step of
# LSTM(., 128) on a batch of 20) ~20 us instead of ~21-30, and the forward's transposed
# weights come from the packing itself (no strided transposing copy, ~100 us at 128 x 512).
# With another BLAS the plain gemm stays.

_PACKED, _BMAT, _TR = 151, 162, 112


_CBLAS, _MKL_PACKED, _DNNL = 0, 1, 2       # how the compiled loops call a _Rhs's function


class _Rhs:
    """The right operand of a loop's products ``a (m, k) @ op(b) (k, n)``: ``fn`` the
    function (cblas-style), ``mat`` the array it reads, ``ld`` its leading dimension,
    ``mode`` how the compiled loops call it (_CBLAS, _MKL_PACKED: MKL's compute on a packed
    ``mat``, _DNNL: oneDNN's sgemm), ``addr`` (the C function's address, an integer of its int
    type) for them."""
    __slots__ = ("fn", "mat", "ld", "mode", "n", "addr")

    def __init__(self, fn, mat, ld, mode, n):
        self.fn, self.mat, self.ld, self.mode, self.n = fn, mat, ld, mode, n
        self.addr = _addr(fn.__self__._sgemm if mode == _DNNL else fn)

    @property
    def packed(self):
        return self.mode == _MKL_PACKED

    def loop(self, kernel, *args):
        """``kernel(*args)``, a compiled loop calling this operand's function: on oneDNN with
        the OpenMP count set and the thread's asynchronous signals blocked (see
        ops._blas._SignalGuard), for the whole loop."""
        if self.mode != _DNNL:
            return kernel(*args)
        lib = self.fn.__self__
        lib._sync_threads()
        guard = lib.guard
        old = guard.block()
        try:
            return kernel(*args)
        finally:
            guard.restore(old)

    def mul(self, a, out):
        """out (m, n) = a (m, k) @ op(b), a and out C-contiguous."""
        m, k = a.shape
        p = _blas._ptr
        if self.packed:
            self.fn(_ROW, _NT, _PACKED, m, self.n, k, p(a), k, p(self.mat), self.ld, 0.0, p(out), self.n)
        else:
            self.fn(_ROW, _NT, _NT, m, self.n, k, 1.0, p(a), k, p(self.mat), self.ld, 0.0, p(out), self.n)
        return out


def _rhs(gemm, b, trans, m, dense=None):
    """The fixed right operand ``op(b)`` (``b.T`` with ``trans``) of products with m-row left
    operands through ``gemm`` (``_rec_gemm``'s): packed by MKL where ``gemm`` is MKL's and
    MKL packs, else ``dense()`` (or ``b``) as a C-contiguous (k, n) array for the plain gemm.
    ``b`` C-contiguous."""
    dt = b.dtype
    k, n = b.shape[::-1] if trans else b.shape
    pk = _blas.mkl_gemm_packed(dt) if gemm is _blas.mkl_gemm(dt) else None
    if pk is None:
        mat = dense() if dense is not None else b
        return _Rhs(gemm, mat, n, _DNNL if isinstance(getattr(gemm, "__self__", None), _blas._OneDnn) else _CBLAS, n)
    size, pack, comp = pk
    it = dt.itemsize
    cnt = -(-size(_BMAT, m, n, k) // it)
    raw = np.empty(cnt + 64 // it, dt)
    off = (-_blas._ptr(raw)) % 64 // it      # (64-byte aligned, as MKL prefers)
    buf = raw[off:off + cnt]
    pack(_ROW, _BMAT, _TR if trans else _NT, m, n, k, 1.0, _blas._ptr(b), b.shape[1], _blas._ptr(buf))
    return _Rhs(comp, buf, n, _MKL_PACKED, n)


def _addr(fn):
    """(the C address of the ctypes function ``fn``, an integer of its int type)."""
    key = ("addr", id(fn))
    addr = _CFN.get(key)
    if addr is None or addr[0] is not fn:
        import ctypes
        iw = np.int64(0) if fn.argtypes[0] is ctypes.c_int64 else np.int32(0)
        addr = _CFN[key] = (fn, ctypes.cast(fn, ctypes.c_void_p).value, iw)
    return addr[1:]


def _ufunc_loop(uf, dt):
    """(address, data pointer) of NumPy's inner loop of the unary ufunc ``uf`` for
    ``dt`` -> ``dt``, read from the ufunc object (``PyUFuncObject``'s ``functions`` and
    ``data`` tables, NumPy's public C struct), checked against the ufunc on values across
    its range, in place and not; None where anything disagrees."""
    key = (uf.__name__, dt)
    if key not in _CFN:
        try:
            _CFN[key] = _find_ufunc_loop(uf, dt)
        except Exception:
            _CFN[key] = None
    return _CFN[key]


def _find_ufunc_loop(uf, dt):
    import ctypes
    P = ctypes.c_void_p

    class _UFunc(ctypes.Structure):
        _fields_ = [("ob_refcnt", ctypes.c_ssize_t), ("ob_type", P), ("nin", ctypes.c_int),
                    ("nout", ctypes.c_int), ("nargs", ctypes.c_int), ("identity", ctypes.c_int),
                    ("functions", ctypes.POINTER(P)), ("data", ctypes.POINTER(P)), ("ntypes", ctypes.c_int),
                    ("reserved1", ctypes.c_int), ("name", ctypes.c_char_p), ("types", ctypes.POINTER(ctypes.c_char))]
    if type(uf) is not np.ufunc or uf.nin != 1 or uf.nout != 1:
        return None
    s = _UFunc.from_address(id(uf))
    if (s.nin, s.nout, s.nargs, s.ntypes) != (1, 1, 2, uf.ntypes) or s.name != uf.__name__.encode():
        return None
    sig = dt.char + "->" + dt.char
    if sig not in uf.types:
        return None
    i = uf.types.index(sig)
    if s.types[2 * i:2 * i + 2] != bytes([dt.num, dt.num]) or not s.functions[i]:
        return None
    fn = s.functions[i]
    data = s.data[i] or 0
    k = rnn_kernels()
    # values across the ufunc's range and beyond (overflow, underflow, inf, nan), odd lengths
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(4099) * s_ for s_ in (0.01, 1, 5, 30, 300)]).astype(dt)
    x = np.concatenate([x, np.array([0, -0.0, np.inf, -np.inf, np.nan, 88.7, -88.7, 709.8, -709.8], dt)])
    with np.errstate(all="ignore"):
        ref = uf(x)
    buf = np.empty(5, np.int64)
    for n in (x.size, 3, 17, 1000):
        y = np.empty_like(x)
        k.call_loop(fn, data, x.ctypes.data, y.ctypes.data, n, dt.itemsize, buf)
        z = x.copy()
        k.call_loop(fn, data, z.ctypes.data, z.ctypes.data, n, dt.itemsize, buf)
        if not (np.array_equal(y[:n], ref[:n], equal_nan=True) and np.array_equal(z[:n], ref[:n], equal_nan=True)):
            return None
    return fn, data


def _compiled(dt):
    """(kernels, gemm, exp loop, tanh loop) for the compiled LSTM loops in ``dt``, or None.
    (The loops take the address of a ``_Rhs``'s function: ``_Rhs.addr``.)"""
    k = rnn_kernels()
    if k is None:
        return None
    gemm = _rec_gemm(dt)
    fe = _ufunc_loop(np.exp, dt)
    ft = _ufunc_loop(np.tanh, dt)
    if gemm is None or fe is None or ft is None:
        return None
    return k, gemm, fe, ft


class _LayerNode(OpNode):
    """Backward through time of a whole recurrent layer: on arrays (``_bptt``), or through the
    layer's tensor-op composite when the backward itself is recorded (create_graph)."""

    def _release(self):     # (the arrays kept for the backward go with the saved tensors)
        super()._release()
        self.vals = None

    def _apply(self, grads):
        saved = self.saved_tensors
        if _state.grad:
            return tuple(graph_grads(self._composite, list(saved), list(grads)))
        return self._bptt(saved, grads)


def _host_float(a, dt):
    return type(a) is np.ndarray and dt in _FLOATS


class _LstmLayerNode(_LayerNode):
    """Backward through time of ``lstm_layer``."""

    def _composite(self, *ins):
        return lstm_layer_composite(*ins, self.reverse, self.masks)

    def _bptt(self, saved, grads):
        xp = xp_for(saved, grads)
        acts, gc, tcs, hprev, msk, gemm = self.vals
        w = xp.ascontiguousarray(saved[4]._data, acts.dtype)       # (4H, H), PyTorch's order
        L, N, H = tcs.shape
        H4 = 4 * H
        rev = self.reverse
        dt = acts.dtype
        nf = self.next_functions
        # (the loops overwrite the states' gradients: their own copies, never the incoming ones)
        dh = xp.array(grads[1]._data, dt, order="C", copy=True)
        dc = xp.array(grads[2]._data, dt, order="C", copy=True)
        da = xp.empty((L, N, H4), dt)
        # the biases' gradient, summed by the loops step by step while a step's gates are in cache
        db = xp.zeros(H4, dt) if nf[5][0] is not None or nf[6][0] is not None else None
        c = _compiled(dt) if gemm is not None and _host_float(acts, dt) and acts.size >= _MIN_ACCEL else None
        rhs = _rhs(gemm, w, False, N) if gemm is not None else None       # da[t] (N, 4H) @ w (4H, H)
        if c is not None and c[1] == gemm:      # the whole loop in one compiled call
            k = c[0]
            faddr, iw = rhs.addr
            dout = np.ascontiguousarray(grads[0]._data, dt)
            m, nm = msk if msk is not None else (_NOMASK[dt], _NOMASK[dt])
            rhs.loop(k.lstm_backward, faddr, iw, rhs.mode, rhs.mat, rhs.ld, acts, gc, tcs, dout, dh, dc, da, m, nm,
                     msk is not None, rev, dt.type(1), dt.type(0), np.empty((N, H), dt),
                     db if db is not None else _NOMASK[dt].reshape(0), db is not None, np.empty(H4, dt))
            return self._finish_bptt(saved, da, dh, dc, hprev, nf, L, N, H, db)
        dout = grads[0]._data
        # the factors that do not depend on the incoming gradient, for all steps at once:
        # K = d(pre-activation)/d(c') of the gates i, f, g and d(pre-activation)/d(h') of o;
        # kc = dh'/dc'
        a4 = acts.reshape(L, N, 4, H)
        g = gc[1:, :, :H] if rev else gc[:L, :, :H]
        cp = gc[1:, :, H:] if rev else gc[:L, :, H:]
        o, i, f = a4[:, :, 0], a4[:, :, 1], a4[:, :, 2]
        K = xp.empty_like(a4)
        xp.subtract(1, a4[:, :, :3], out=K[:, :, :3])     # 1 - sigmoid
        K[:, :, :3] *= a4[:, :, :3]                       # s (1 - s)
        K[:, :, 0] *= tcs                                 # o: tc o (1 - o)
        K[:, :, 1] *= g                                   # i: g i (1 - i)
        K[:, :, 2] *= cp                                  # f: c f (1 - f)
        xp.multiply(g, g, out=K[:, :, 3])
        xp.subtract(1, K[:, :, 3], out=K[:, :, 3])
        K[:, :, 3] *= i                                   # g: i (1 - g^2)
        kc = xp.multiply(tcs, tcs)
        xp.subtract(1, kc, out=kc)
        kc *= o
        d4 = da.reshape(L, N, 4, H)                       # PyTorch's order (i, f, g, o)
        for t in (range(L) if rev else range(L - 1, -1, -1)):
            dh2 = dout[t] + dh
            if msk is not None:
                m, nm = msk[0][t][:, None], msk[1][t][:, None]
                dh2 *= m
                dct = dc * m
                dct += dh2 * kc[t]
            else:
                dct = dh2 * kc[t]
                dct += dc
            xp.multiply(K[t, :, 0], dh2, out=d4[t, :, 3])
            xp.multiply(K[t, :, 1:], dct[:, None], out=d4[t, :, :3])
            if db is not None:
                db += da[t].sum(0)
            y = rhs.mul(da[t], xp.empty((N, H), dt)) if rhs is not None else _blas.matmul(da[t], w)
            if msk is not None:
                dh = y + dh * nm
                dc = dct * f[t] + dc * nm
            else:
                dh = y
                dc = xp.multiply(dct, f[t], out=dct)
        return self._finish_bptt(saved, da, dh, dc, hprev, nf, L, N, H, db)

    @staticmethod
    def _finish_bptt(saved, da, dh, dc, hprev, nf, L, N, H, db):
        # da (L, N, 4H) in PyTorch's gate order: the input projections' gradient; the weights'
        # gradients are one GEMM each over all steps; db: the biases' (or None)
        xp = xp_for(da)
        H4 = 4 * H
        dt = da.dtype
        d2 = da.reshape(L * N, H4)
        dx = dwi = dwh = dbi = dbh = None
        if nf[0][0] is not None:
            x = saved[0]._data
            dx = _blas.matmul(d2, xp.ascontiguousarray(saved[3]._data, dt)).reshape(x.shape[:2] + (-1,))
        if nf[3][0] is not None:
            x = saved[0]._data
            dwi = _blas.matmul(d2.T, x.reshape(L * N, x.shape[-1]).astype(dt, copy=False))
        if nf[4][0] is not None:
            dwh = _blas.matmul(d2.T, hprev.reshape(L * N, H))
        if db is not None:
            dbi = db if nf[5][0] is not None else None
            # (a copy: two gradients never share an array, which accumulation may write to)
            dbh = (db.copy() if dbi is not None else db) if nf[6][0] is not None else None
        out = [dx, dh, dc, dwi, dwh, dbi, dbh]
        return tuple(finish(None, a) if a is not None and nf[k][0] is not None else None
                     for k, a in enumerate(out))


class _NoMask(dict):
    """Empty (0, 0) mask arrays per dtype (the compiled loops' arguments when unmasked)."""

    def __missing__(self, dt):
        a = np.empty((0, 0), dt)
        self[dt] = a
        return a


_NOMASK = _NoMask()

# named as PyTorch's CPU LSTM output shows it: the oneDNN layer for float32, the stack of
# the per-step outputs otherwise
MkldnnRnnLayerBackward0 = type("MkldnnRnnLayerBackward0", (_LstmLayerNode,), {})
_LstmLayerStack = type("StackBackward0", (_LstmLayerNode,), {})


def lstm_layer_composite(x, h, c, w_ih, w_hh, b_ih, b_hh, reverse=False, masks=None):
    """(outputs (L, N, H), h_L, c_L) of an LSTM layer over the inputs ``x`` (L, N, F) as
    tensor ops; ``masks`` (per step (m, 1 - m), each (N, 1)) keep the state of finished
    sequences."""
    from ._linear import linear
    from .shape import stack, unbind
    steps = unbind(linear(x, w_ih, b_ih), 0)
    L = len(steps)
    outs = [None] * L
    for t in (range(L - 1, -1, -1) if reverse else range(L)):
        h2, c2 = lstm_composite(steps[t], linear(h, w_hh, b_hh), c)
        if masks is not None:
            m, nm = masks[t]
            outs[t] = h2 * m
            h = h2 * m + h * nm
            c = c2 * m + c * nm
        else:
            outs[t] = h2
            h, c = h2, c2
    return stack(outs, 0), h, c


def lstm_layer(x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse=False, masks=None):
    """An LSTM layer (one direction) over the inputs ``x`` (L, N, F), its input projection
    included, as one node: returns (outputs (L, N, H), h_L, c_L). ``masks`` as in
    ``lstm_layer_composite``."""
    xp = xp_for(x, h0, c0, w_ih, w_hh, b_ih, b_hh, masks)
    xd, w = x._data, w_hh._data
    L, N, F = xd.shape
    H = c0._data.shape[-1]
    H3 = 3 * H
    H4 = 4 * H
    dt = np.result_type(xd.dtype, h0._data.dtype, c0._data.dtype, w_ih._data.dtype, w.dtype)
    big = L * H4 * N >= _MIN_ACCEL and _host_float(xd, dt)
    gemm = _rec_gemm(dt) if big else None
    # the input projections of all steps, one GEMM (BLAS reads the weights transposed), and the
    # biases' sum, both in PyTorch's gate order: each step adds them to its product with the
    # hidden weights, (h W_hh' + x W_ih') + (b_ih + b_hh), into the loop's order, the sigmoid
    # gates negated
    gp = _blas.matmul(xd.reshape(L * N, F).astype(dt, copy=False), w_ih._data.astype(dt, copy=False).T)
    gp = gp.reshape(L, N, H4)
    if b_ih is not None or b_hh is not None:
        bs = [b._data.astype(dt, copy=False) for b in (b_ih, b_hh) if b is not None]
        bp = bs[0] + bs[1] if len(bs) == 2 else xp.array(bs[0], copy=True)
    else:
        bp = xp.zeros(H4, dt)
    # the operand of the steps' products h (N, H) @ W_hh' (H, 4H): for the C loops packed from
    # the weights as they are where MKL packs, else their transposed copy
    wd = w.astype(dt, copy=False)
    rhs = _rhs(gemm, xp.ascontiguousarray(wd), True, N, lambda: np.ascontiguousarray(wd.T)) \
        if gemm is not None else None
    sc = xp.empty((N, H4), dt)                          # a step's product
    h = xp.ascontiguousarray(h0._data, dt)
    acts = xp.empty((L, N, H4), dt)
    tcs = xp.empty((L, N, H), dt)
    out = xp.empty((L, N, H), dt)
    gc = xp.empty((L + 1, N, 2 * H), dt)                # (g, c) per step; c of the step before
    j0 = L if reverse else 0
    gc[j0, :, H:] = c0._data
    node = node_for(MkldnnRnnLayerBackward0 if dt == np.float32 else _LstmLayerStack,
                    (x, h0, c0, w_ih, w_hh, b_ih, b_hh))
    msk = None
    # the state before each step (the hidden weights' gradient's operand), kept by the loops
    hprev = xp.empty((L, N, H), dt) if masks is not None or node is not None else None
    if masks is not None:
        msk = (xp.ascontiguousarray(xp.stack([m._data.reshape(N) for m, _ in masks]), dt),
               xp.ascontiguousarray(xp.stack([nm._data.reshape(N) for _, nm in masks]), dt))
    c = _compiled(dt) if gemm is not None else None
    if c is not None:           # the whole loop in one compiled call
        k, (fe, de), (ft, tdat) = c[0], c[2], c[3]
        faddr, iw = rhs.addr
        hn = np.empty((N, H), dt)
        m, nm = msk if msk is not None else (_NOMASK[dt], _NOMASK[dt])
        rhs.loop(k.lstm_forward, faddr, iw, rhs.mode, rhs.mat, rhs.ld, fe, de, ft, tdat, gp, bp, sc, h, acts, gc, tcs,
                 out, hn, m, nm, hprev if hprev is not None else out, msk is not None, hprev is not None, reverse,
                 dt.type(1), dt.type(0), np.empty((2, N, H), dt))
        h = hn
    else:
        with np.errstate(over="ignore"):
            for t in (range(L - 1, -1, -1) if reverse else range(L)):
                a = acts[t]
                if rhs is not None:
                    rhs.mul(h, sc)
                else:
                    _blas.matmul(h, wd.T, out=sc)
                sc += gp[t]
                sc += bp
                xp.negative(sc[:, H3:], out=a[:, :H])           # o, i, f negated; g
                xp.negative(sc[:, :2 * H], out=a[:, H:H3])
                a[:, H3:] = sc[:, 2 * H:H3]
                s = a[:, :H3]
                xp.exp(s, out=s)
                s += 1
                xp.reciprocal(s, out=s)
                j, jn = (t + 1, t) if reverse else (t, t + 1)
                cur, nxt = gc[j], gc[jn]
                xp.tanh(a[:, H3:], out=cur[:, :H])
                p = a[:, H:H3] * cur                    # (i g, f c)
                c2 = xp.add(p[:, :H], p[:, H:], out=nxt[:, H:])
                tc = xp.tanh(c2, out=tcs[t])
                if msk is not None:
                    hprev[t] = h
                    m, nm = msk[0][t][:, None], msk[1][t][:, None]
                    h2 = xp.multiply(a[:, :H], tc, out=out[t])
                    h2 *= m
                    h = h2 + h * nm
                    c2 *= m
                    c2 += cur[:, H:] * nm
                else:
                    if hprev is not None:
                        hprev[t] = h
                    h = xp.multiply(a[:, :H], tc, out=out[t])
    # (the last states as arrays of their own: h may be a view of the outputs)
    res = finish_multi(node, [out, h if c is not None else xp.array(h, copy=True),
                              xp.array(gc[L - j0, :, H:], copy=True)])
    if node is not None:
        node.vals = (acts, gc, tcs, hprev, msk, gemm)
        node.reverse = reverse
        node.masks = masks
        save(node, x, h0, c0, w_ih, w_hh, b_ih, b_hh)
    return res


# *** a whole GRU layer (one direction) as one node ***

class _GruLayerNode(_LayerNode):
    """Backward through time of ``gru_layer``."""

    def _composite(self, *ins):
        return gru_layer_composite(*ins, self.reverse, self.masks)

    def _bptt(self, saved, grads):
        xp = xp_for(saved, grads)
        w = saved[2]._data
        rzs, ns, hns, hps = self.vals
        L, N, H = ns.shape
        H2 = 2 * H
        dout = grads[0]._data
        dh = grads[1]._data
        om = 1 - rzs                                    # 1 - r, 1 - z
        omn = 1 - ns * ns
        dgx = xp.empty((L, N, 3 * H), ns.dtype)
        dgh = xp.empty((L, N, 3 * H), ns.dtype)
        ms = self.masks
        nf = self.next_functions
        dz = yw = None
        for t in (range(L) if self.reverse else range(L - 1, -1, -1)):
            rz, omt = rzs[t], om[t]
            r, z = rz[:, :H], rz[:, H:]
            n, hn, h = ns[t], hns[t], hps[t]
            # the gradient reaching h_t, its parts summed in the order the per-step graph sums them
            if ms is not None:
                m, nm = ms[t][0]._data, ms[t][1]._data
                dh2 = (dout[t] + dh) * m
            elif dz is None:
                dh2 = dout[t] + dh
            else:
                dh2 = dout[t] + dz
                dh2 += yw
            x, y = dgx[t], dgh[t]
            dan = x[:, H2:]                             # dh2 * (1 - z) * (1 - n^2)
            xp.multiply(dh2, omt[:, H:], out=dan)
            dan *= omn[t]
            dar = x[:, :H]                              # dan * hn * r * (1 - r)
            xp.multiply(dan, hn, out=dar)
            dar *= r
            dar *= omt[:, :H]
            daz = x[:, H:H2]                            # dh2 * (h - n) * z * (1 - z)
            xp.subtract(h, n, out=daz)
            daz *= dh2
            daz *= z
            daz *= omt[:, H:]
            y[:, :H2] = x[:, :H2]
            xp.multiply(dan, r, out=y[:, H2:])
            dz = dh2 * z
            yw = _blas.matmul(y, w)
            if ms is not None:
                dh = dz + yw + dh * nm
        if ms is None:
            dh = dz + yw
        dw = _blas.matmul(dgh.reshape(L * N, 3 * H).T, xp.stack(hps).reshape(L * N, H)) if nf[2][0] is not None else None
        db = dgh.reshape(L * N, 3 * H).sum(0) if nf[3][0] is not None else None
        out = [dgx, dh, dw, db]
        return tuple(finish(None, a) if a is not None and nf[k][0] is not None else None
                     for k, a in enumerate(out))


# named as PyTorch's GRU output shows it (the stack of the per-step outputs)
_GruLayerStack = type("StackBackward0", (_GruLayerNode,), {})


def gru_layer_composite(gx, h, w_hh, b_hh, reverse=False, masks=None):
    """(outputs (L, N, H), h_L) of a GRU layer over the input projections ``gx`` (L, N, 3H)
    as tensor ops; ``masks`` as in ``lstm_layer_composite``."""
    from ._linear import linear
    from .shape import stack, unbind
    steps = unbind(gx, 0)
    L = len(steps)
    outs = [None] * L
    for t in (range(L - 1, -1, -1) if reverse else range(L)):
        h2 = gru_composite(steps[t], linear(h, w_hh, b_hh), h)
        if masks is not None:
            m, nm = masks[t]
            outs[t] = h2 * m
            h = h2 * m + h * nm
        else:
            outs[t] = h2
            h = h2
    return stack(outs, 0), h


def gru_layer(gx, h0, w_hh, b_hh, reverse=False, masks=None):
    """A GRU layer (one direction) over the input projections ``gx`` (L, N, 3H), as one
    node: returns (outputs (L, N, H), h_L). ``masks`` as in ``lstm_layer_composite``."""
    xp = xp_for(gx, h0, w_hh, b_hh, masks)
    ga, w = gx._data, w_hh._data
    b = b_hh._data if b_hh is not None else None
    h = h0._data
    L, N = ga.shape[:2]
    H = h.shape[-1]
    H2 = 2 * H
    dt = np.result_type(ga.dtype, h.dtype, w.dtype)
    out = xp.empty((L, N, H), dt)
    rzs = xp.empty((L, N, H2), dt)
    ns = xp.empty((L, N, H), dt)
    hns = [None] * L
    hps = [None] * L
    wt = xp.ascontiguousarray(w.T)      # (BLAS runs h @ w.T slower than h @ contiguous)
    for t in (range(L - 1, -1, -1) if reverse else range(L)):
        hps[t] = h
        gh = _blas.matmul(h, wt)
        if b is not None:
            gh += b
        a = ga[t]
        s = a[:, :H2] + gh[:, :H2]
        # sigmoid as _sig computes it
        e = xp.abs(s)
        xp.negative(e, out=e)
        xp.exp(e, out=e)
        num = xp.where(s >= 0, 1, e)
        e += 1
        rz = rzs[t]
        xp.divide(num, e, out=rz)
        r, z = rz[:, :H], rz[:, H:]
        hn = hns[t] = gh[:, H2:]
        n = r * hn
        xp.add(a[:, H2:], n, out=n)
        n = xp.tanh(n, out=ns[t])
        u = 1 - z
        u *= n
        v = z * h
        if masks is not None:
            h2 = u + v
            m, nm = masks[t][0]._data, masks[t][1]._data
            xp.multiply(h2, m, out=out[t])
            h = h2 * m + h * nm
        else:
            h = xp.add(u, v, out=out[t])
    node = node_for(_GruLayerStack, (gx, h0, w_hh, b_hh))
    res = finish_multi(node, [out, xp.array(h, dt, copy=True)])
    if node is not None:
        node.vals = (rzs, ns, hns, hps)
        node.reverse = reverse
        node.masks = masks
        save(node, gx, h0, w_hh, b_hh)
    return res



# *** a whole Elman RNN layer (one direction) as one node ***

class _RnnLayerNode(_LayerNode):
    """Backward through time of ``rnn_layer``."""

    def _composite(self, *ins):
        return rnn_layer_composite(*ins, self.relu, self.reverse, self.masks)

    def _bptt(self, saved, grads):
        xp = xp_for(saved, grads)
        w = saved[2]._data
        acts, hprev = self.vals
        L, N, H = acts.shape
        dout = grads[0]._data
        dh = grads[1]._data
        # the derivative of the nonlinearity, for all steps at once
        if self.relu:
            k = acts > 0
        else:
            k = xp.multiply(acts, acts)
            xp.subtract(1, k, out=k)
        da = xp.empty((L, N, H), acts.dtype)
        ms = self.masks
        nf = self.next_functions
        for t in (range(L) if self.reverse else range(L - 1, -1, -1)):
            dh2 = dout[t] + dh
            if ms is not None:
                dh2 *= ms[t][0]._data
            d = da[t]
            if self.relu:       # a selection: 0 where the unit is off, whatever the gradient
                d[...] = 0
                xp.copyto(d, dh2, where=k[t])
            else:
                xp.multiply(dh2, k[t], out=d)
            if ms is not None:
                dh = _blas.matmul(d, w) + dh * ms[t][1]._data
            else:
                dh = _blas.matmul(d, w)
        dw = db = None
        if nf[2][0] is not None:
            dw = _blas.matmul(da.reshape(L * N, H).T, hprev.reshape(L * N, H))
        if nf[3][0] is not None:
            db = da.reshape(L * N, H).sum(0)
        out = [da, dh, dw, db]
        return tuple(finish(None, a) if a is not None and nf[k][0] is not None else None
                     for k, a in enumerate(out))


# named as PyTorch's RNN output shows it (the stack of the per-step outputs)
_RnnLayerStack = type("StackBackward0", (_RnnLayerNode,), {})


def rnn_layer_composite(gx, h, w_hh, b_hh, relu=False, reverse=False, masks=None):
    """(outputs (L, N, H), h_L) of an Elman RNN layer (tanh, or relu) over the input
    projections ``gx`` (L, N, H) as tensor ops; ``masks`` as in ``lstm_layer_composite``."""
    from ._linear import linear
    from .shape import stack, unbind
    from .unary import tanh, relu as relu_
    steps = unbind(gx, 0)
    L = len(steps)
    outs = [None] * L
    for t in (range(L - 1, -1, -1) if reverse else range(L)):
        a = steps[t] + linear(h, w_hh, b_hh)
        h2 = relu_(a) if relu else tanh(a)
        if masks is not None:
            m, nm = masks[t]
            outs[t] = h2 * m
            h = h2 * m + h * nm
        else:
            outs[t] = h2
            h = h2
    return stack(outs, 0), h


def rnn_layer(gx, h0, w_hh, b_hh, relu=False, reverse=False, masks=None):
    """An Elman RNN layer (one direction; tanh, or relu) over the input projections ``gx``
    (L, N, H), as one node: returns (outputs (L, N, H), h_L). ``masks`` as in
    ``lstm_layer_composite``."""
    xp = xp_for(gx, h0, w_hh, b_hh, relu, masks)
    ga, w = gx._data, w_hh._data
    h = h0._data
    L, N = ga.shape[:2]
    H = h.shape[-1]
    dt = np.result_type(ga.dtype, h.dtype, w.dtype)
    gb = ga + b_hh._data if b_hh is not None else ga
    gb = gb.astype(dt, copy=False)
    wt = xp.ascontiguousarray(w.T, dt)  # (BLAS runs h @ w.T slower than h @ contiguous)
    acts = xp.empty((L, N, H), dt)      # the activations (the outputs, unless masked)
    if masks is not None:
        hprev = xp.empty((L, N, H), dt)
        out = xp.empty((L, N, H), dt)
    for t in (range(L - 1, -1, -1) if reverse else range(L)):
        if masks is not None:
            hprev[t] = h
        a = _blas.matmul(h, wt, out=acts[t])
        a += gb[t]
        if relu:
            xp.maximum(a, 0, out=a)
        else:
            xp.tanh(a, out=a)
        if masks is not None:
            m, nm = masks[t][0]._data, masks[t][1]._data
            xp.multiply(a, m, out=out[t])
            h = out[t] + h * nm
        else:
            h = a
    node = node_for(_RnnLayerStack, (gx, h0, w_hh, b_hh))
    # (the output is a copy: the backward keeps the activations, whatever is written to it)
    res = finish_multi(node, [acts.copy() if masks is None else out, xp.array(h, dt, copy=True)])
    if node is not None:
        if masks is None:
            h0d = h0._data.astype(dt, copy=False)[None]
            hprev = xp.concatenate([acts[1:], h0d] if reverse else [h0d, acts[:-1]])
        node.vals = (acts, hprev)
        node.relu, node.reverse, node.masks = relu, reverse, masks
        save(node, gx, h0, w_hh, b_hh)
    return res
