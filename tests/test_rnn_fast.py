"""The LSTM layer's compiled time loops call C functions through their pointers: the BLAS's
cblas gemm for each step's product and NumPy's own exp/tanh ufunc loops. These tests check
the pieces (the functions found, against NumPy), that the compiled loops give the NumPy
loop's bits on NumPy's own BLAS as on MKL, and the layer's cases the loops cover (packed
sequences, both directions, stacked layers, batch_first, one sequence, non-contiguous
inputs, a missing bias) against the NumPy loop, PyTorch and finite differences."""
import numpy as np
import pytest

import retrograd
from retrograd.ops import _blas, _seqkit
from helpers import kernel_path, needs_torch, torch
from nn_seq_helpers import copy_params, lstm_against_torch

FLOATS = [np.dtype(np.float32), np.dtype(np.float64)]


def _numpy_blas_is_openblas():
    try:
        return "openblas" in str(np.__config__.CONFIG["Build Dependencies"]["blas"]).lower()
    except Exception:
        return False


openblas_only = pytest.mark.skipif(not _numpy_blas_is_openblas(), reason="NumPy is not linked with OpenBLAS")


def _kernels(path, monkeypatch):
    kernel_path(path, monkeypatch, _seqkit, "_RNN_KERNELS", _seqkit.rnn_kernels)


# *** the C functions ***

@openblas_only
@pytest.mark.parametrize("dt", FLOATS)
def test_numpy_blas_gemm_is_numpys_product(dt):
    """The OpenBLAS gemm found through the loaded libraries gives np.matmul's bits on the
    layer's products (h (N, H) @ W (H, 4H), gates (N, 4H) @ W (4H, H))."""
    fn = _seqkit._numpy_blas_gemm(dt)
    assert fn is not None
    rng = np.random.default_rng(0)
    for m, k, n in [(16, 64, 256), (16, 256, 64), (20, 128, 512), (3, 5, 7), (2, 1, 4)]:
        a, b = rng.standard_normal((m, k)).astype(dt), rng.standard_normal((k, n)).astype(dt)
        out = np.full((m, n), np.nan, dt)
        _seqkit._gemm(fn, a, b, out)
        np.testing.assert_array_equal(out, np.matmul(a, b))


@pytest.mark.parametrize("dt", FLOATS)
def test_rec_gemm_follows_the_blas_choice(dt, monkeypatch):
    """MKL's gemm where ops._blas runs products on MKL; NumPy's OpenBLAS with
    RETROGRAD_BLAS=numpy (or without MKL)."""
    monkeypatch.setattr(_blas, "_state", [False])
    assert _blas.mkl_gemm(dt) is None
    assert _seqkit._rec_gemm(dt) is _seqkit._numpy_blas_gemm(dt)
    monkeypatch.undo()
    if _blas.backend() == "mkl":
        assert _seqkit._rec_gemm(dt) is _blas.mkl_gemm(dt) is not None


def test_mkl_gemm_accessor(monkeypatch):
    monkeypatch.setattr(_blas, "_state", [False])
    assert _blas.mkl_gemm(np.float32) is None
    monkeypatch.undo()
    if _blas.backend() != "mkl":
        pytest.skip("products do not run on MKL here")
    f = _blas.mkl_gemm(np.float32)
    assert f is not None and _blas.mkl_gemm(np.float64) is not None and _blas.mkl_gemm(np.int32) is None
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal((6, 5)).astype(np.float32)
    out = np.empty((4, 5), np.float32)
    _seqkit._gemm(f, a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-6)


mkl_only = pytest.mark.skipif(_blas.backend() != "mkl", reason="products do not run on MKL here")


@mkl_only
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("trans", [False, True])
def test_packed_operand_products(dt, trans):
    """The loops' fixed operand packed by MKL (cblas_?gemm_pack, the forward's transposed
    weights packed from the untransposed ones): each product a @ op(b) is np.matmul's
    within rounding, and the plain gemm's bits."""
    gemm = _seqkit._rec_gemm(dt)
    assert _blas.mkl_gemm_packed(dt) is not None and _blas.mkl_gemm_packed(np.int32) is None
    rng = np.random.default_rng(2)
    for m, k, n in [(20, 128, 512), (20, 512, 128), (16, 64, 256), (1, 7, 5), (3, 5, 12)]:
        b = rng.standard_normal((n, k) if trans else (k, n)).astype(dt)
        rhs = _seqkit._rhs(gemm, b, trans, m)
        assert rhs.packed
        opb = b.T if trans else b
        for _ in range(2):          # (the packed operand serves any number of products)
            a = rng.standard_normal((m, k)).astype(dt)
            out = np.full((m, n), np.nan, dt)
            rhs.mul(a, out)
            tol = dict(rtol=1e-5, atol=1e-5) if dt == np.float32 else dict(rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(out, a @ opb, **tol)
            np.testing.assert_array_equal(out, _seqkit._gemm(gemm, a, np.ascontiguousarray(opb), np.empty_like(out)))


@pytest.mark.parametrize("blas", ["numpy", "default"])
def test_layer_packs_its_weights_only_on_mkl(blas, monkeypatch):
    """Forward and backward each take their loop's weights as one _Rhs: packed on MKL, the
    dense (H, 4H) / (4H, H) arrays on NumPy's BLAS."""
    if blas == "numpy":
        monkeypatch.setattr(_blas, "_state", [False])
    _kernels("compiled", monkeypatch)
    made = []
    orig = _seqkit._rhs

    def spy(*a, **k):
        r = orig(*a, **k)
        made.append(r)
        return r
    monkeypatch.setattr(_seqkit, "_rhs", spy)
    _run("float32", *LAYERS[0])
    assert len(made) == 2
    want = blas == "default" and _blas.backend() == "mkl"
    assert all(r.packed is want for r in made)
    if not want:
        H = LAYERS[0][1]
        assert [r.mat.shape for r in made] == [(H, 4 * H), (4 * H, H)]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("name", ["exp", "tanh"])
def test_ufunc_loops_are_numpys(name, dt, monkeypatch):
    """The loop read from the ufunc object gives the ufunc's bits on values across the range
    (overflow, underflow, infinities, nan), in place or not, whole or in runs."""
    _kernels("compiled", monkeypatch)
    uf = getattr(np, name)
    found = _seqkit._ufunc_loop(uf, dt)
    assert found is not None
    fn, data = found
    k = _seqkit.rnn_kernels()
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.standard_normal(3001) * 40, [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40, -1e-310]])
    x = x.astype(dt)
    with np.errstate(all="ignore"):
        ref = uf(x)
    buf = np.empty(5, np.int64)
    y = np.empty_like(x)
    for i in range(0, x.size, 97):          # runs, as the layer calls it per row
        n = min(97, x.size - i)
        k.call_loop(fn, data, x[i:].ctypes.data, y[i:].ctypes.data, n, dt.itemsize, buf)
    np.testing.assert_array_equal(y, ref)
    z = x.copy()
    k.call_loop(fn, data, z.ctypes.data, z.ctypes.data, z.size, dt.itemsize, buf)
    np.testing.assert_array_equal(z, ref)


def test_ufunc_loop_refuses_what_it_cannot_call(monkeypatch):
    _kernels("compiled", monkeypatch)
    assert _seqkit._ufunc_loop(np.add, np.dtype(np.float32)) is None           # binary
    assert _seqkit._ufunc_loop(np.exp, np.dtype(np.int64)) is None             # no int64 -> int64 loop
    assert _seqkit._ufunc_loop(np.isnan, np.dtype(np.float32)) is None         # float32 -> bool


# *** the layer: compiled loops against the NumPy loop ***

def _run(dtype, I, H, layers, bidir, batch_first, LN, *, seed=0, packed=False, bias=True, noncontig=False):
    retrograd.manual_seed(seed)
    m = retrograd.nn.LSTM(I, H, layers, bias=bias, bidirectional=bidir, batch_first=batch_first)
    m = m.to(getattr(retrograd, dtype))
    rng = np.random.default_rng(seed)
    L, N = LN
    shape = (N, L, I) if batch_first else (L, N, I)
    D = layers * (2 if bidir else 1)
    if noncontig:   # every input a strided view: a transposed input, states of a wider array
        x = retrograd.tensor(rng.standard_normal(shape[::-1]).astype(dtype), requires_grad=True)
        xin = x.permute(2, 1, 0)
        hx = [retrograd.tensor(rng.standard_normal((D, N, 2 * H)).astype(dtype), requires_grad=True)
              for _ in range(2)]
        hin = tuple(t[:, :, ::2] for t in hx)
    else:
        x = retrograd.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
        xin = x
        hx = [retrograd.tensor(rng.standard_normal((D, N, H)).astype(dtype), requires_grad=True) for _ in range(2)]
        hin = tuple(hx)
    inp = xin
    if packed:
        lens = retrograd.tensor([L - k % L for k in range(N)])
        inp = retrograd.nn.utils.rnn.pack_padded_sequence(xin, lens, batch_first=batch_first, enforce_sorted=False)
    out, (h, c) = m(inp, hin)
    if packed:
        out = retrograd.nn.utils.rnn.pad_packed_sequence(out, batch_first=batch_first)[0]
    (out.sin().sum() + (h * h).sum() + c.cos().sum()).backward()
    return [out, h, c, x.grad] + [t.grad for t in hx] + [p.grad for p in m.parameters()]


# (input size, hidden size, layers, bidirectional, batch_first, (L, N)), all at or above the
# kernels' size bound; N = 1 is an unbatched-size product
LAYERS = [(5, 16, 1, False, False, (4, 16)), (3, 8, 2, True, True, (9, 16)), (6, 64, 1, False, False, (16, 1)),
          (7, 32, 1, True, False, (3, 11))]


def _same(fast, ref, dtype):
    assert len(fast) == len(ref)
    for a, r in zip(fast, ref):
        a, r = a.detach().numpy(), r.detach().numpy()
        assert a.dtype == r.dtype == np.dtype(dtype) and a.shape == r.shape
        np.testing.assert_array_equal(a, r)


@pytest.mark.parametrize("blas", ["numpy", "default"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cfg", LAYERS)
@pytest.mark.parametrize("packed,bias,noncontig", [(False, True, False), (True, True, False), (False, False, True),
                                                   (True, True, True)])
def test_compiled_loops_give_the_numpy_loops_bits(cfg, dtype, packed, bias, noncontig, blas, monkeypatch):
    """The same BLAS gemm, NumPy's exp/tanh loops and the same IEEE operations in the same
    order: the same bits, on NumPy's OpenBLAS (RETROGRAD_BLAS=numpy) as on MKL."""
    if blas == "numpy":
        monkeypatch.setattr(_blas, "_state", [False])
    _kernels("compiled", monkeypatch)
    assert _seqkit._compiled(np.dtype(dtype)) is not None
    fast = _run(dtype, *cfg, packed=packed, bias=bias, noncontig=noncontig)
    _kernels("numpy", monkeypatch)
    ref = _run(dtype, *cfg, packed=packed, bias=bias, noncontig=noncontig)
    _same(fast, ref, dtype)


@pytest.fixture
def on_onednn():
    from helpers import on_blas
    yield from on_blas("onednn")


def test_rec_gemm_on_onednn(on_onednn):
    """Where products run on oneDNN, float32's recurrent products do too (its sgemm through
    _OneDnn.sgemm for the NumPy loop, its dnnl_sgemm's address for the compiled loops) and
    float64's stay on NumPy's OpenBLAS."""
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    gemm = _seqkit._rec_gemm(f32)
    assert gemm == on_onednn.sgemm and _seqkit._rec_gemm(f64) is _seqkit._numpy_blas_gemm(f64)
    rng = np.random.default_rng(3)
    for m, k, n in [(16, 64, 256), (16, 256, 64), (3, 5, 7)]:
        b = rng.standard_normal((k, n)).astype(f32)
        rhs = _seqkit._rhs(gemm, b, False, m)
        assert rhs.mode == _seqkit._DNNL and not rhs.packed
        import ctypes
        assert rhs.addr[0] == ctypes.cast(on_onednn._sgemm, ctypes.c_void_p).value
        a = rng.standard_normal((m, k)).astype(f32)
        out = np.full((m, n), np.nan, f32)
        np.testing.assert_allclose(rhs.mul(a, out), a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cfg", LAYERS)
@pytest.mark.parametrize("packed,bias,noncontig", [(False, True, False), (True, True, True)])
def test_compiled_loops_on_onednn_give_the_numpy_loops_bits(on_onednn, cfg, packed, bias, noncontig, monkeypatch):
    """float32 on oneDNN: the compiled loops call dnnl_sgemm as the NumPy loop's products
    do, with the thread's asynchronous signals blocked for the whole loop (ops._blas.
    _SignalGuard: its kernels move the stack pointer into the heap), the same bits."""
    import signal
    _kernels("compiled", monkeypatch)
    seen = []
    real = _seqkit._compiled

    class Spy:
        def __init__(self, k):
            self.k = k

        def __getattr__(self, name):
            f = getattr(self.k, name)
            if not name.startswith("lstm_"):
                return f

            def run(*args):
                seen.append((name, args[2], signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])))
                return f(*args)
            return run

    monkeypatch.setattr(_seqkit, "_compiled", lambda dt: (Spy(real(dt)[0]),) + real(dt)[1:] if real(dt) else None)
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    fast = _run("float32", *cfg, packed=packed, bias=bias, noncontig=noncontig)
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
    assert {n for n, _, _ in seen} == {"lstm_forward", "lstm_backward"}
    assert all(mode == _seqkit._DNNL and blocked for _, mode, blocked in seen)
    _kernels("numpy", monkeypatch)
    ref = _run("float32", *cfg, packed=packed, bias=bias, noncontig=noncontig)
    _same(fast, ref, "float32")


def test_backward_after_the_blas_changed_keeps_the_forwards_gemm(on_onednn, monkeypatch):
    """A layer whose forward ran on oneDNN's sgemm keeps it for its backward when products
    have moved elsewhere since (the BLAS switched in-process): the NumPy loop with the
    forward's function, the compiled loop's bits."""
    _kernels("compiled", monkeypatch)
    ref = _run("float32", *LAYERS[0])
    orig = _seqkit._LstmLayerNode._bptt

    def bptt(self, saved, grads):
        monkeypatch.setattr(_blas, "_state", [False])        # products on NumPy from here on
        return orig(self, saved, grads)
    monkeypatch.setattr(_seqkit._LstmLayerNode, "_bptt", bptt)
    _same(_run("float32", *LAYERS[0]), ref, "float32")


def test_layer_without_c_functions_runs_the_numpy_loop(monkeypatch):
    """Where a C function cannot be found (another BLAS, a NumPy whose ufunc struct differs),
    the layer runs the NumPy loop: the same values."""
    _kernels("compiled", monkeypatch)
    ref = _run("float32", *LAYERS[0])
    monkeypatch.setattr(_seqkit, "_CFN", {("tanh", np.dtype(np.float32)): None})
    calls = []
    k = _seqkit.rnn_kernels()

    class Spy:
        def __getattr__(self, name):
            calls.append(name)
            return getattr(k, name)
    monkeypatch.setattr(_seqkit, "_RNN_KERNELS", [Spy()])
    got = _run("float32", *LAYERS[0])
    assert "lstm_forward" not in calls and "lstm_backward" not in calls
    _same(got, ref, "float32")


# *** the layer against PyTorch and finite differences ***

@needs_torch
@pytest.mark.parametrize("path", ["numpy", "compiled"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cfg,packed", [(LAYERS[1], True), (LAYERS[2], False), (LAYERS[3], True)])
def test_layer_against_torch(cfg, packed, dtype, path, monkeypatch):
    _kernels(path, monkeypatch)
    lstm_against_torch(cfg, dtype, packed)


@pytest.mark.parametrize("path", ["numpy", "compiled"])
@pytest.mark.parametrize("reverse,masked", [(False, False), (True, False), (False, True), (True, True)])
def test_layer_gradcheck_every_input(reverse, masked, path, monkeypatch):
    """Finite differences in float64 for all seven inputs of the layer's node (the input,
    the states, both weights, both biases), either direction, with and without masks; the
    bound lowered so that the compiled loops run at a size finite differences afford."""
    from retrograd.autograd import gradcheck
    _kernels(path, monkeypatch)
    monkeypatch.setattr(_seqkit, "_MIN_ACCEL", 0)
    rng = np.random.default_rng(7)
    L, N, F, H = 4, 3, 2, 3
    ins = [retrograd.from_numpy(rng.standard_normal(s) * 0.7).requires_grad_(True)
           for s in ((L, N, F), (N, H), (N, H), (4 * H, F), (4 * H, H), (4 * H,), (4 * H,))]
    masks = None
    if masked:
        lens = np.array([4, 2, 3])
        masks = []
        for t in range(L):
            mk = (t < lens).astype(np.float64).reshape(N, 1)
            masks.append((retrograd.from_numpy(mk), retrograd.from_numpy(1 - mk)))

    def fn(*a):
        return _seqkit.lstm_layer(*a, reverse=reverse, masks=masks)
    assert gradcheck(fn, tuple(ins))


def test_layer_with_one_bias_and_separate_bias_gradients(monkeypatch):
    """A layer with only b_hh (the node takes either bias alone) matches its tensor-op
    composite; the two biases' gradients are equal but never one shared array."""
    monkeypatch.setattr(_seqkit, "_MIN_ACCEL", 0)
    rng = np.random.default_rng(8)
    L, N, F, H = 5, 4, 3, 4
    arrays = [rng.standard_normal(s) for s in ((L, N, F), (N, H), (N, H), (4 * H, F), (4 * H, H), (4 * H,))]
    res = []
    for fn in (_seqkit.lstm_layer, _seqkit.lstm_layer_composite):
        x, h0, c0, wi, wh, bh = (retrograd.from_numpy(a.copy()).requires_grad_(True) for a in arrays)
        out, h, c = fn(x, h0, c0, wi, wh, None, bh)
        (out.sum() + h.sum() + c.sum()).backward()
        res.append([out, h, c] + [t.grad for t in (x, h0, c0, wi, wh, bh)])
    for a, b in zip(*res):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-13)
    retrograd.manual_seed(0)
    m = retrograd.nn.LSTM(3, 8)
    m(retrograd.randn(4, 2, 3))[0].sum().backward()
    assert np.array_equal(m.bias_ih_l0.grad.numpy(), m.bias_hh_l0.grad.numpy())
    assert not np.shares_memory(m.bias_ih_l0.grad.numpy(), m.bias_hh_l0.grad.numpy())


def _lm_model(lib, V, E, H):
    """A word language model's modules: Embedding, a 2-layer LSTM, a Linear decoder."""
    nn = lib.nn
    lib.manual_seed(0)
    return nn.ModuleList([nn.Embedding(V, E), nn.LSTM(E, H, 2), nn.Linear(H, V)])


@needs_torch
@pytest.mark.parametrize("path", ["numpy", "compiled"])
def test_language_model_steps_against_torch(path, monkeypatch):
    """The language-model training step the benchmarks time (cross-entropy over a decoder of
    the LSTM's outputs, the state detached and carried over, gradient clipping, SGD), at a
    size the compiled loops take: the losses, gradient norms, gradients, updated parameters
    and final states of three steps."""
    _kernels(path, monkeypatch)
    V, E, H, L, N = 50, 8, 32, 8, 4
    assert L * N * 4 * H >= _seqkit._MIN_ACCEL
    mods = [_lm_model(lib, V, E, H) for lib in (retrograd, torch)]
    copy_params(*mods)
    rng = np.random.default_rng(4)
    batches = [(rng.integers(0, V, (L, N)), rng.integers(0, V, (L * N,))) for _ in range(3)]
    res = []
    for lib, m in zip((retrograd, torch), mods):
        emb, rnn, dec = m
        opt = lib.optim.SGD(m.parameters(), lr=2.0)
        crit = lib.nn.CrossEntropyLoss()
        hid = (lib.zeros(2, N, H), lib.zeros(2, N, H))
        got = []
        for x, y in batches:
            opt.zero_grad()
            hid = tuple(t.detach() for t in hid)
            out, hid = rnn(emb(lib.from_numpy(x)), hid)
            loss = crit(dec(out).view(-1, V), lib.from_numpy(y))
            loss.backward()
            got.append(float(lib.nn.utils.clip_grad_norm_(m.parameters(), 0.25)))
            got.append(loss.item())
            opt.step()
        got += [p.grad.numpy().copy() for p in m.parameters()] + [p.detach().numpy().copy() for p in m.parameters()]
        got += [t.detach().numpy() for t in hid]
        res.append(got)
    for a, t in zip(*res):
        np.testing.assert_allclose(a, t, rtol=2e-4, atol=2e-5)
