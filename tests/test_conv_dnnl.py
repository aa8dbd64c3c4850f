"""ops._dnnl_conv: 2-D float32 convolutions on oneDNN's primitives, against PyTorch (whose CPU
convolutions are the same library's kernels) and against retrograd's own kernels.

Skipped where oneDNN (onednn-cpu-gomp) is not installed or RETROGRAD_BLAS=numpy."""
import queue
import threading

import numpy as np
import pytest

import retrograd
from retrograd import _threads
from retrograd.ops import _dnnl_conv
from helpers import blas_lib, in_forked_child, needs_torch, on_blas, torch

HAVE = blas_lib("onednn") is not None


@pytest.fixture
def dnnl():
    """ops._dnnl_conv on, over oneDNN's products, whatever this CPU would pick; a fresh cache."""
    if not HAVE:
        pytest.skip("oneDNN (pip install onednn-cpu-gomp) is not installed, or RETROGRAD_BLAS=numpy")
    gen = on_blas("onednn")
    lib = next(gen)
    prev = _dnnl_conv._state[0]
    _dnnl_conv._state[0] = _dnnl_conv._Api(lib)
    try:
        yield _dnnl_conv._state[0]
    finally:
        _dnnl_conv._state[0] = prev
        gen.close()


# (x shape, w shape, stride, padding, dilation, groups, bias)
GEOMS = [
    ((4, 16, 12, 12), (16, 16, 3, 3), 1, 1, 1, 1, True),          # a ResNet block's
    ((3, 32, 11, 13), (64, 32, 3, 3), 2, 0, 1, 1, False),         # strided, odd sizes
    ((2, 32, 9, 9), (32, 16, 3, 3), 1, 2, 2, 2, True),            # dilated, two groups
    ((1, 16, 7, 5), (24, 16, 1, 1), 1, 0, 1, 1, True),            # 1x1, one sample
    ((2, 16, 10, 8), (16, 16, 3, 2), (2, 1), (1, 0), 1, 1, False),  # rectangular kernel and stride
    ((2, 16, 8, 8), (32, 16, 4, 4), 1, 'same', 1, 1, True),       # 'same' with an even kernel: uneven padding
]


def _arrays(xs, ws, bias, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) * 0.2).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32) if bias else None
    return x, w, b


def _run(lib, x, w, b, stride, pad, dil, groups, gy=None, noncontig=False):
    xt = lib.from_numpy(x).requires_grad_()
    wt = lib.from_numpy(w).requires_grad_()
    bt = lib.from_numpy(b).requires_grad_() if b is not None else None
    xin = xt
    if noncontig:      # a channels-last-strided view of the same values
        xin = xt.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    y = lib.nn.functional.conv2d(xin, wt, bt, stride=stride, padding=pad, dilation=dil, groups=groups)
    if gy is None:
        gy = np.cos(np.arange(y.numel(), dtype=np.float32)).reshape(tuple(y.shape))
    y.backward(lib.from_numpy(gy))
    out = [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()]
    if bt is not None:
        out.append(bt.grad.numpy())
    return out


@needs_torch
@pytest.mark.parametrize("geom", GEOMS, ids=range(len(GEOMS)))
@pytest.mark.parametrize("noncontig", [False, True])
def test_matches_torch(dnnl, geom, noncontig):
    """PyTorch's values and gradients: the same library's kernels, so the same bits for the
    output and the weight gradient, a few units of rounding for the input gradient of a strided
    convolution (another kernel: see the next test) and for the bias gradient (a sum)."""
    xs, ws, stride, pad, dil, groups, bias = geom
    x, w, b = _arrays(xs, ws, bias)
    retrograd.set_num_threads(1)
    torch.set_num_threads(1)
    try:
        got = _run(retrograd, x, w, b, stride, pad, dil, groups, noncontig=noncontig)
        want = _run(torch, x, w, b, stride, pad, dil, groups, noncontig=noncontig)
    finally:
        _threads._adaptive()
    assert any(k[0] == "fwd" and v for k, v in dnnl.cache.items()), "oneDNN's forward was not used"
    assert {k[0] for k, v in dnnl.cache.items() if v} >= {"fwd", "bwd"}
    for i, (r, e) in enumerate(zip(got, want)):
        assert r.shape == e.shape and r.dtype == e.dtype
        # (the bias gradient is a sum of |cos| <= 1 terms over the positions, in another order)
        scale = float(np.abs(e).max()) if i < 3 else got[0][:, 0].size
        assert float(np.abs(r - e).max()) <= 4e-6 * scale


@pytest.mark.parametrize("stride,k", [(2, 3), (2, 1), (1, 3)])
def test_gradients_take_the_forwards_layouts(dnnl, stride, k):
    """Both gradient passes read and write x and y in the layouts the forward chose (blocked),
    not in the layouts oneDNN would pick for them alone: for a strided input gradient those
    were NHWC, a slower kernel with slower reorders."""
    x, w, _ = _arrays((2, 16, 12, 12), (32, 16, k, k), False)
    xt = retrograd.from_numpy(x).requires_grad_()
    wt = retrograd.from_numpy(w).requires_grad_()
    retrograd.nn.functional.conv2d(xt, wt, stride=stride, padding=k // 2).sum().backward()
    plans = {key[0]: plan for key, plan in dnnl.cache.items() if plan}
    assert set(plans) == {"fwd", "bwd"}
    lib, query = dnnl.lib, dnnl.lib.dnnl_primitive_desc_query_md
    fpd = plans["fwd"].pds["fwd"]
    fx, fy = query(fpd, _dnnl_conv._Q_SRC, 0), query(fpd, _dnnl_conv._Q_DST, 0)
    plain = dnnl.md(x.shape, (16 * 144, 144, 12, 1))
    try:
        assert not lib.dnnl_memory_desc_equal(fx, plain)       # (the forward's are blocked)
    finally:
        lib.dnnl_memory_desc_destroy(plain)
    for kind, qx, qy in (("bwd_in", _dnnl_conv._Q_DIFF_SRC, _dnnl_conv._Q_DIFF_DST),
                         ("bwd_w", _dnnl_conv._Q_SRC, _dnnl_conv._Q_DIFF_DST)):
        pd = plans["bwd"].pds[kind]
        assert lib.dnnl_memory_desc_equal(query(pd, qx, 0), fx), kind
        assert lib.dnnl_memory_desc_equal(query(pd, qy, 0), fy), kind


@pytest.mark.parametrize("geom", GEOMS, ids=range(len(GEOMS)))
def test_matches_own_kernels(dnnl, geom):
    """retrograd's own kernels (the reference without oneDNN) give the same values."""
    xs, ws, stride, pad, dil, groups, bias = geom
    x, w, b = _arrays(xs, ws, bias, seed=1)
    got = _run(retrograd, x, w, b, stride, pad, dil, groups)
    _dnnl_conv._state[0] = False
    try:
        ref = _run(retrograd, x, w, b, stride, pad, dil, groups)
    finally:
        _dnnl_conv._state[0] = dnnl
    for r, e in zip(got, ref):
        np.testing.assert_allclose(r, e, rtol=1e-4, atol=1e-4 * float(np.abs(e).max()))


@needs_torch
def test_non_finite_values_as_torch(dnnl):
    """inf and NaN reach the outputs they reach in PyTorch (the same direct sums)."""
    x, w, b = _arrays((2, 16, 8, 8), (16, 16, 3, 3), True, seed=2)
    x[0, 3, 2, 5] = np.inf
    x[1, 0, 7, 7] = np.nan
    w[4, 2, 1, 1] = -np.inf
    got = _run(retrograd, x, w, b, 1, 1, 1, 1)
    want = _run(torch, x, w, b, 1, 1, 1, 1)
    for r, e in zip(got, want):
        np.testing.assert_array_equal(np.isnan(r), np.isnan(e))
        np.testing.assert_array_equal(np.isposinf(r), np.isposinf(e))
        np.testing.assert_array_equal(np.isneginf(r), np.isneginf(e))


def test_what_it_does_not_take(dnnl):
    """Few channels, depthwise, float64, 1-D and 3-D convolutions stay on retrograd's kernels."""
    rng = np.random.default_rng(3)
    f = retrograd.nn.functional
    cases = [
        (rng.standard_normal((2, 4, 8, 8)).astype(np.float32), rng.standard_normal((8, 4, 3, 3)).astype(np.float32), 1),
        (rng.standard_normal((2, 32, 8, 8)).astype(np.float32), rng.standard_normal((32, 1, 3, 3)).astype(np.float32),
         32),
        (rng.standard_normal((2, 16, 8, 8)), rng.standard_normal((16, 16, 3, 3)), 1),
    ]
    for x, w, g in cases:
        before = len(dnnl.cache)
        y = f.conv2d(retrograd.from_numpy(x), retrograd.from_numpy(w), groups=g)
        assert len(dnnl.cache) == before and y.dtype == retrograd.from_numpy(x).dtype
    x1 = retrograd.from_numpy(rng.standard_normal((2, 16, 9)).astype(np.float32))
    f.conv1d(x1, retrograd.from_numpy(rng.standard_normal((16, 16, 3)).astype(np.float32)))
    x3 = retrograd.from_numpy(rng.standard_normal((1, 16, 4, 4, 4)).astype(np.float32))
    f.conv3d(x3, retrograd.from_numpy(rng.standard_normal((16, 16, 3, 3, 3)).astype(np.float32)))
    assert len(dnnl.cache) == 0


@pytest.mark.parametrize("stride", [1, 2])
def test_joint_passes_reorder_the_shared_operand_once(dnnl, stride):
    """A convolution's two gradients in one plan ("bwd", sharing the output gradient), and a
    transposed convolution's ("fwd_bwd_w", sharing the adjoint's input): the bits of the
    passes run one by one, with one reorder fewer."""
    from retrograd.ops.conv import _P
    x, w, _ = _arrays((3, 16, 10, 10), (32, 16, 3, 3), False, seed=11)
    p = _P((stride, stride), ((1, 1), (1, 1)), (1, 1), 1)
    y = _dnnl_conv.fwd(x, w, p)
    g = np.cos(np.arange(y.size, dtype=np.float32)).reshape(y.shape)
    gx, gw = _dnnl_conv.bwd(x, g, w, p)
    assert np.array_equal(gx, _dnnl_conv.bwd_in(g, w, x.shape, p))
    assert np.array_equal(gw, _dnnl_conv.bwd_w(x, g, w.shape, p))
    y2, gw2 = _dnnl_conv.fwd_bwd_w(x, w, g, p)
    assert np.array_equal(y2, y) and np.array_equal(gw2, gw)
    plans = {k[0]: v for k, v in dnnl.cache.items() if v}

    def steps(name):
        return sum(len(st) for _, st in plans[name].stages)
    assert steps("bwd") == steps("bwd_in") + steps("bwd_w") - 1
    assert steps("fwd_bwd_w") == steps("fwd") + steps("bwd_w") - 1
    assert _dnnl_conv.fwd_bwd_w(x, w, g[:, :, :-1], p) is None      # (g not of the output's shape)


def test_same_bits_on_any_thread_count_and_cached(dnnl):
    """A run on another load (another thread count) gives the same bits."""
    x, w, b = _arrays((4, 32, 14, 14), (32, 32, 3, 3), True, seed=4)
    try:
        runs = []
        for t in (1, 2, 3, 1):
            retrograd.set_num_threads(t)
            runs.append(_run(retrograd, x, w, b, 1, 1, 1, 1))
    finally:
        _threads._adaptive()
    for other in runs[1:]:
        for r, e in zip(other, runs[0]):
            assert np.array_equal(r, e)
    # made once per thread count and reused; the weight gradient's pass on one thread only
    assert len([k for k in dnnl.cache if k[0] == "fwd"]) == 3
    bwd = [v for k, v in dnnl.cache.items() if k[0] == "bwd"]
    assert sorted([n for n, _ in v.stages] for v in bwd) == [[1, 1], [2, 1], [3, 1]]
    # a weight gradient alone (x needs none): its own plan, on one thread too
    wt = retrograd.from_numpy(w).requires_grad_()
    try:
        retrograd.set_num_threads(2)
        retrograd.nn.functional.conv2d(retrograd.from_numpy(x), wt, padding=1).sum().backward()
    finally:
        _threads._adaptive()
    assert np.array_equal(wt.grad.numpy(), _run(retrograd, x, w, None, 1, 1, 1, 1, gy=np.ones((4, 32, 14, 14),
                                                                                           np.float32))[2])
    assert [k[-1] for k in dnnl.cache if k[0] == "bwd_w"] == [1]


def test_cache_is_bounded(dnnl, monkeypatch):
    monkeypatch.setattr(_dnnl_conv, "_CACHE", 3)
    f = retrograd.nn.functional
    w = retrograd.from_numpy(np.ones((16, 16, 3, 3), np.float32))
    for n in range(1, 7):
        y = f.conv2d(retrograd.from_numpy(np.ones((n, 16, 6, 6), np.float32)), w, padding=1)
        assert float(y[0, 0, 2, 2].item()) == 144.0
    assert len(dnnl.cache) == 3
    # and by the bytes of blocked buffers the kept primitives hold
    monkeypatch.setattr(_dnnl_conv, "_CACHE", 48)
    monkeypatch.setattr(_dnnl_conv, "_CACHE_BYTES", 1)
    y = f.conv2d(retrograd.from_numpy(np.ones((9, 16, 6, 6), np.float32)), w, padding=1)
    assert float(y[8, 15, 0, 0].item()) == 64.0
    assert len(dnnl.cache) == 1 and dnnl.nbytes == next(iter(dnnl.cache.values())).nbytes > 0


def test_a_busy_primitive_falls_back(dnnl):
    """A second thread that finds the geometry's primitive running takes retrograd's kernels."""
    x, w, _ = _arrays((2, 16, 8, 8), (16, 16, 3, 3), False, seed=5)
    f = retrograd.nn.functional
    y0 = f.conv2d(retrograd.from_numpy(x), retrograd.from_numpy(w), padding=1).numpy()
    plan = next(v for k, v in dnnl.cache.items() if k[0] == "fwd")
    assert plan.lock.acquire()
    try:
        res = []
        t = threading.Thread(target=lambda: res.append(
            f.conv2d(retrograd.from_numpy(x), retrograd.from_numpy(w), padding=1).numpy()))
        t.start()
        t.join(60)
        assert not t.is_alive()
    finally:
        plan.lock.release()
    np.testing.assert_allclose(res[0], y0, rtol=1e-5, atol=1e-5)


def test_primitives_run_with_asynchronous_signals_blocked(dnnl, monkeypatch):
    """Every pass runs its primitives with the thread's asynchronous signals blocked (some
    run oneDNN's GEMMs, whose kernels move the stack pointer into the heap: see
    ops._blas._SignalGuard), and leaves the caller's mask as it was."""
    import signal
    masks = []
    real = dnnl.lib.dnnl_primitive_execute

    def spy(*args):
        masks.append(signal.pthread_sigmask(signal.SIG_BLOCK, []))
        return real(*args)

    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    monkeypatch.setattr(dnnl.lib, "dnnl_primitive_execute", spy)
    x, w, b = _arrays((2, 16, 8, 8), (16, 16, 3, 3), True, seed=8)
    _run(retrograd, x, w, b, 1, 1, 1, 1)
    assert {k[0] for k, v in dnnl.cache.items() if v} >= {"fwd", "bwd"}
    assert len(masks) >= 3
    assert all(signal.SIGINT in m and signal.SIGALRM in m and signal.SIGSEGV not in m for m in masks)
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before


def _child(q):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 16, 10, 10)).astype(np.float32)
    w = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    y = retrograd.nn.functional.conv2d(retrograd.from_numpy(x), retrograd.from_numpy(w), padding=1)
    q.put(float(y.sum().item()))


def test_in_a_forked_child(dnnl):
    """A forked child (a DataLoader worker) convolves after its parent did on two threads."""
    retrograd.set_num_threads(2)
    try:
        q0 = queue.Queue()
        _child(q0)
        want = q0.get(timeout=5)
        assert abs(in_forked_child(_child) - want) <= 1e-3 * abs(want)
    finally:
        _threads._adaptive()


def test_gradcheck_through_oneDNN(dnnl):
    """oneDNN's float32 gradients against central differences of the float64 convolution
    (retrograd's own kernels; exact for a linear map up to rounding): a wrong layout,
    flip or group order fails it."""
    x, w, b = _arrays((1, 16, 5, 5), (16, 16, 3, 3), True, seed=7)
    xt = retrograd.from_numpy(x).requires_grad_()
    wt = retrograd.from_numpy(w).requires_grad_()
    f = retrograd.nn.functional
    y = f.conv2d(xt, wt, retrograd.from_numpy(b), padding=1)
    gy = np.random.default_rng(8).standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(retrograd.from_numpy(gy))
    xd = x.astype(np.float64)
    wd = w.astype(np.float64)

    def loss(xa, wa):
        return float((f.conv2d(retrograd.from_numpy(xa), retrograd.from_numpy(wa), padding=1).numpy() * gy).sum())
    eps = 1e-3
    rng = np.random.default_rng(9)
    for _ in range(6):
        for which, grad in ((0, xt.grad.numpy()), (1, wt.grad.numpy())):
            args = [xd, wd]
            i = tuple(int(rng.integers(0, s)) for s in args[which].shape)
            side = []
            for step in (eps, -eps):
                moved = args[which].copy()
                moved[i] += step
                side.append(loss(*[moved if k == which else a for k, a in enumerate(args)]))
            num = (side[0] - side[1]) / (2 * eps)
            assert abs(num - float(grad[i])) <= 2e-5 * (1 + abs(num))


def _convt(lib, x, w, b, **kw):
    xt = lib.from_numpy(x).requires_grad_()
    wt = lib.from_numpy(w).requires_grad_()
    y = lib.nn.functional.conv_transpose2d(xt, wt, lib.from_numpy(b), **kw)
    y.backward(lib.from_numpy(np.cos(np.arange(y.numel(), dtype=np.float32)).reshape(tuple(y.shape))))
    return [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()]


@needs_torch
@pytest.mark.parametrize("inf", [False, True])
def test_transposed_as_torch(dnnl, inf):
    """Transposed convolutions run on the same three primitives with finite values; with an
    inf they keep the column path, whose NaN positions are PyTorch's (its transposed
    convolution is a column GEMM: an inf meets the zeros of the stride's gaps there)."""
    x, w, _ = _arrays((2, 16, 5, 6), (16, 32, 4, 4), False, seed=10)
    b = np.linspace(-1, 1, 32).astype(np.float32)
    if inf:
        x[1, 3, 2, 2] = np.inf
    kw = dict(stride=2, padding=1, output_padding=1)
    got = _convt(retrograd, x, w, b, **kw)
    want = _convt(torch, x, w, b, **kw)
    kinds = {k[0] for k, v in dnnl.cache.items() if v}
    assert kinds == (set() if inf else {"bwd_in", "fwd_bwd_w"})
    for r, e in zip(got, want):
        np.testing.assert_array_equal(np.isnan(r), np.isnan(e))
        np.testing.assert_array_equal(np.isinf(r), np.isinf(e))
        fin = np.isfinite(e)
        assert float(np.abs(r[fin] - e[fin]).max()) <= 4e-6 * float(np.abs(e[fin]).max())


@needs_torch
def test_random_geometries_as_torch(dnnl):
    """40 random geometries (sizes, kernel, stride, padding incl. 'same', dilation, groups,
    bias, transposed or not) against PyTorch: the space the fixed cases above do not pick."""
    rng = np.random.default_rng(20)
    f, tf = retrograd.nn.functional, torch.nn.functional
    for _ in range(40):
        G = int(rng.choice([1, 1, 2]))
        cin, cout = G * int(rng.choice([16, 24, 32])), G * int(rng.choice([16, 20, 32]))
        k = (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
        dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        st = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        H, W = int(rng.integers(k[0] * dil[0], 14)), int(rng.integers(k[1] * dil[1], 14))
        transposed = bool(rng.integers(0, 2))
        pad = (int(rng.integers(0, k[0])), int(rng.integers(0, k[1])))
        if not transposed and rng.integers(0, 4) == 0:
            st, pad = (1, 1), "same"
        x = rng.standard_normal((int(rng.integers(1, 4)), cin, H, W)).astype(np.float32)
        wshape = (cin, cout // G) + k if transposed else (cout, cin // G) + k
        w = (rng.standard_normal(wshape) * 0.3).astype(np.float32)
        b = rng.standard_normal(cout).astype(np.float32) if rng.integers(0, 2) else None
        res = []
        for lib, F in ((retrograd, f), (torch, tf)):
            xt, wt = lib.from_numpy(x).requires_grad_(), lib.from_numpy(w).requires_grad_()
            bt = None if b is None else lib.from_numpy(b)
            if transposed:
                op = min(st[0], dil[0]) - 1, min(st[1], dil[1]) - 1
                y = F.conv_transpose2d(xt, wt, bt, stride=st, padding=pad, output_padding=op, groups=G, dilation=dil)
            else:
                y = F.conv2d(xt, wt, bt, stride=st, padding=pad, dilation=dil, groups=G)
            y.backward(lib.from_numpy(np.sin(np.arange(y.numel(), dtype=np.float32)).reshape(tuple(y.shape))))
            res.append([y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()])
        for r, e in zip(*res):
            assert r.shape == e.shape
            assert float(np.abs(r - e).max()) <= 4e-6 * (float(np.abs(e).max()) + 1e-30), (transposed, k, st, pad, dil, G)
    used = sum(1 for v in dnnl.cache.values() if v)
    assert used >= 40, used       # (most passes ran on oneDNN's primitives; 48 are kept)
