"""The numba kernels of the recurrent layers' time loops (imported only where numba is
installed; :func:`retrograd.ops._seqkit.rnn_kernels` loads them).

The NumPy path of ``_seqkit``'s LSTM layer runs each time step as about ten whole-array
calls around its GEMM, and its backward through time precomputes the gates' derivative
factors for all steps (a dozen passes over arrays of the whole sequence); at a recurrent
layer's sizes (a few thousand elements a step) the calls' overhead and the passes' memory
traffic are most of the work. Here the calls between NumPy's exp/tanh calls (whose SIMD
loops a compiled scalar loop would not match) are one compiled pass, the input projections'
transposed, permuted copy is one pass that writes in order, and the backward's step is one
compiled pass over its gates. The GEMMs stay NumPy's, on NumPy's BLAS
(``np.dot`` inside numba would run on SciPy's BLAS, with its own threads). The passes do
the NumPy path's IEEE operations in the same order in the arrays' precision (constants
come in cast to it), so the results have the same bits.

Module-level functions, so that numba's on-disk cache finds them in the next process.
"""
import numba

__all__ = ["lstm_bptt_step", "lstm_gates_step", "lstm_inputs"]

_jit = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)


@_jit
def lstm_bptt_step(acts, gc, tcs, dout, dh, dc, da, t, j, one):
    """One step of the backward through time of ``_seqkit.lstm_layer`` (unmasked), in its
    transposed layout: from the gradient ``dh`` reaching the step's output h_t (besides
    ``dout[t]``) and ``dc`` reaching its cell state (overwritten with the gradient of the
    state before), writes ``da[t]``, the gates' pre-activation gradients (the caller then
    multiplies them into the gradient of h_{t-1}).

    acts (L, 4H, N): per step the gates (o, i, f) after their sigmoid; gc (L + 1, 2H, N):
    (g, c) of a step side by side, c of the step before, at ``j``; tcs (L, H, N): tanh of the
    new cell state; dout (L, H, N); dh, dc (H, N); da (L, 4H, N)."""
    H = tcs.shape[1]
    N = tcs.shape[2]
    HN = H * N
    a = acts[t].reshape(4 * HN)
    gcj = gc[j].reshape(2 * HN)
    tc_ = tcs[t].reshape(HN)
    do_ = dout[t].reshape(HN)
    dh_ = dh.reshape(HN)
    dc_ = dc.reshape(HN)
    d = da[t].reshape(4 * HN)
    for m in range(HN):
        o = a[m]
        i = a[HN + m]
        f = a[2 * HN + m]
        g = gcj[m]
        cp = gcj[HN + m]
        tc = tc_[m]
        dh2 = do_[m] + dh_[m]
        kc = (one - tc * tc) * o
        dct = dh2 * kc
        dct += dc_[m]
        d[m] = ((one - o) * o * tc) * dh2
        d[HN + m] = ((one - i) * i * g) * dct
        d[2 * HN + m] = ((one - f) * f * cp) * dct
        d[3 * HN + m] = ((one - g * g) * i) * dct
        dc_[m] = dct * f


@_jit
def lstm_gates_step(acts, gc, t, j, jn, one):
    """The part of a step of ``_seqkit.lstm_layer``'s forward between NumPy's exp and tanh
    calls, in its transposed layout: acts[t] holds (o, i, f) as exp of their negated
    pre-activations, turned into their sigmoid 1 / (e + 1); gc[j] holds (g, c) (g already
    its tanh), and gc[jn]'s c is written with the new cell state i g + f c."""
    HN = gc.shape[1] // 2 * gc.shape[2]
    a = acts[t].reshape(4 * HN)
    cur = gc[j].reshape(2 * HN)
    nxt = gc[jn].reshape(2 * HN)
    for m in range(3 * HN):
        a[m] = one / (a[m] + one)
    for m in range(HN):
        nxt[HN + m] = a[HN + m] * cur[m] + a[2 * HN + m] * cur[HN + m]


@_jit
def lstm_inputs(ga, b, nb, gp):
    """The input projections of ``_seqkit.lstm_layer`` in its layout, all steps: ga (L, N, 4H)
    in PyTorch's gate order (i, f, g, o); writes gp (L, 4H, N), transposed, in the order
    (o, i, f, g), with b_hh added (``b``) and the sigmoid gates negated (``nb`` - ga, ``nb``
    = -b: the NumPy path's operations). One pass writing gp in order, where NumPy's three
    calls each walk a strided transpose."""
    L, N, H4 = ga.shape
    H = H4 // 4
    for t in range(L):
        for k in range(H):
            for n in range(N):
                gp[t, k, n] = nb[3 * H + k] - ga[t, n, 3 * H + k]
        for k in range(2 * H):
            for n in range(N):
                gp[t, H + k, n] = nb[k] - ga[t, n, k]
        for k in range(H):
            for n in range(N):
                gp[t, 3 * H + k, n] = ga[t, n, 2 * H + k] + b[2 * H + k]
