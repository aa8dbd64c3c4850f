"""Attention's row softmax: the compiled row kernels (numba, optional) against the NumPy path
(the reference, as with RETROGRAD_NO_NUMBA=1) with non-finite rows, and scaled dot-product
attention at sizes that take them against PyTorch and finite differences."""
import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck
from retrograd.ops import _accel_nn, attention
from helpers import needs_torch, torch

F = retrograd.nn.functional


def _scores(shape, dtype, seed=0):
    s = (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)
    s[0, 0, :] = -np.inf                 # a dead row: zeros
    s[0, 1, 3] = np.nan                  # NaN rows
    s[0, 4, 0] = np.nan
    s[0, 2, 5] = np.inf                  # +inf: NaN row
    s[0, 3, 1:] = -np.inf                # one finite entry: exactly one
    s[0, 5, :4] = -np.inf
    s[0, 6, 2] = -np.inf
    s[0, 6, 3] = np.nan                  # -inf and NaN: NaN (NumPy's max is NaN)
    s[1, :, 7:] = -np.inf
    return s


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(64, 32, 32), (16, 9, 64), (4, 40, 300)])
def test_compiled_rows_match_the_numpy_path(monkeypatch, shape, dtype):
    if _accel_nn.kernels() is None:
        pytest.skip("numba is not installed (or RETROGRAD_NO_NUMBA is set)")
    s = _scores(shape, dtype)
    got = attention._softmax_rows(s.copy())
    monkeypatch.setattr(_accel_nn, "_KERNELS", [None])
    want = attention._softmax_rows(s.copy())
    assert got.dtype == want.dtype == dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[0, 0], 0)
    np.testing.assert_array_equal(got[0, 3], want[0, 3])
    assert np.isnan(got[0, 6]).all() and np.isnan(got[0, 2]).all()
    tol = dict(rtol=4e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(got, want, **tol)
    fin = np.isfinite(got).all(-1)
    np.testing.assert_allclose(got[fin].sum(-1)[np.any(got[fin] != 0, -1)], 1, rtol=1e-5 if dtype == np.float32 else 1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(64, 32, 32), (16, 9, 64), (4, 40, 300), (2, 48, 20), (8, 12, 7)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scale", [None, 0.37])
def test_compiled_scale_and_causal_mask_match_the_numpy_path(monkeypatch, shape, dtype, causal, scale):
    """The compiled pass that scales the scores and hides the positions after each query's
    (attention's steps before its softmax) against the NumPy path's multiply, copyto and
    softmax, non-finite scores included (row lengths around the kernel's 8-lane split)."""
    k = _accel_nn.kernels()
    if k is None:
        pytest.skip("numba is not installed (or RETROGRAD_NO_NUMBA is set)")
    s = _scores(shape, dtype)
    L, S = shape[-2:]
    got = _accel_nn.softmax_rows(k, s.copy(), None if scale is None else dtype(scale), L if causal else 0)
    ref = s.copy()
    if scale is not None:
        ref *= dtype(scale)
    if causal:
        np.copyto(ref, dtype(-np.inf), where=attention._above_diagonal(L, S))
    monkeypatch.setattr(_accel_nn, "_KERNELS", [None])
    want = attention._softmax_rows(ref)
    assert got.dtype == want.dtype == dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got == 0, want == 0)
    tol = dict(rtol=4e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(got, want, **tol)
    if causal:      # hidden positions: zeros (NaN only in a row made NaN by its visible part)
        hidden = got[..., attention._above_diagonal(L, S)]
        assert ((hidden == 0) | np.isnan(hidden)).all() and (hidden == 0).any()


@pytest.mark.parametrize("kw,fused", [(dict(is_causal=True), True), (dict(), True), (dict(mask=True), False)])
def test_attention_takes_the_fused_pass_where_it_can(monkeypatch, kw, fused):
    """Scaled dot-product attention at kernel sizes scales, masks (causal) and normalises its
    scores in the compiled pass; with an explicit mask it scales and adds the mask first
    (NumPy), then the pass only normalises. Either way: the NumPy path's result within rounding."""
    k = _accel_nn.kernels()
    if k is None:
        pytest.skip("numba is not installed (or RETROGRAD_NO_NUMBA is set)")
    calls = []

    class Spy:
        def __getattr__(self, name):
            fn = getattr(k, name)

            def wrapped(*a):
                calls.append((name, a[3:] if name == "softmax_rows_prepare" else None))
                return fn(*a)
            return wrapped
    rng = np.random.default_rng(7)
    q, kk, v = (rng.standard_normal((2, 3, 40, 16)).astype(np.float32) for _ in range(3))
    extra = {}
    if kw.get("mask"):
        extra["attn_mask"] = retrograd.tensor(np.tril(np.ones((40, 40), bool)))
    else:
        extra.update(kw)
    args = [retrograd.tensor(a) for a in (q, kk, v)]
    monkeypatch.setattr(_accel_nn, "_KERNELS", [Spy()])
    got = F.scaled_dot_product_attention(*args, **extra).numpy()
    (_, (scaled, scale, causal, _, _)), = [c for c in calls if c[0] == "softmax_rows_prepare"]
    if fused:
        assert scaled and scale == np.float32(1 / 4) and causal == (40 if kw.get("is_causal") else 0)
    else:           # (scaled and masked by NumPy first)
        assert not scaled and causal == 0
    monkeypatch.setattr(_accel_nn, "_KERNELS", [None])
    want = F.scaled_dot_product_attention(*args, **extra).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_row_maximum_ignores_no_entry(monkeypatch):
    """The 8-lane row maximum: the largest entry wherever it sits (each lane, the tail), for
    row lengths on both sides of the lane split; a -inf maximum over a NaN makes a NaN row."""
    k = _accel_nn.kernels()
    if k is None:
        pytest.skip("numba is not installed (or RETROGRAD_NO_NUMBA is set)")
    for n in (1, 7, 15, 16, 17, 23, 64, 71):
        s = np.zeros((n, n), np.float32) - 5
        s[np.arange(n), np.arange(n)] = 3       # the maximum at every position in turn
        out = np.empty_like(s)
        dead = np.empty(n, np.bool_)
        k.softmax_rows_shift(s, out, dead, True)
        np.testing.assert_array_equal(out, s - 3)
        assert not dead.any()
    s = np.full((2, 40), -np.inf, np.float32)
    s[1, 33] = np.nan
    out = np.empty_like(s)
    dead = np.empty(2, np.bool_)
    k.softmax_rows_shift(s, out, dead, True)
    assert dead.tolist() == [True, False] and np.isnan(out[1]).all()


def _sdpa(lib, q, k, v, g, **kw):
    qt, kt, vt = (lib.tensor(a, requires_grad=True) for a in (q, k, v))
    y = lib.nn.functional.scaled_dot_product_attention(qt, kt, vt, **kw)
    y.backward(lib.tensor(g))
    return [y.detach().numpy()] + [t.grad.numpy() for t in (qt, kt, vt)]


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [dict(is_causal=True), dict(), dict(mask=True)])
def test_sdpa_matches_torch(nn_kernels_path, dtype, kw):
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((4, 4, 48, 16)).astype(dtype) for _ in range(3))
    g = rng.standard_normal(q.shape).astype(dtype)
    res = []
    for lib in (retrograd, torch):
        kk = dict(kw)
        if kk.pop("mask", False):
            m = np.tril(np.ones((48, 48), bool))
            m[5] = False                 # a fully masked row: zeros (PyTorch's safe softmax)
            kk["attn_mask"] = lib.tensor(m)
        res.append(_sdpa(lib, q, k, v, g, **kk))
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, **tol)


@needs_torch
def test_multihead_attention_matches_torch(nn_kernels_path):
    res = []
    x = np.random.default_rng(2).standard_normal((32, 8, 32)).astype(np.float32)
    sd = None
    for lib in (torch, retrograd):
        lib.manual_seed(0)
        m = lib.nn.MultiheadAttention(32, 4)
        if sd is None:     # torch's parameters, given to retrograd's layer
            sd = {k: v.detach().numpy() for k, v in m.state_dict().items()}
        else:
            m.load_state_dict({k: retrograd.tensor(v) for k, v in sd.items()})
        xt = lib.tensor(x, requires_grad=True)
        out, w = m(xt, xt, xt)
        (out.sum() + (w * w).sum()).backward()
        res.append((out.detach().numpy(), w.detach().numpy(), xt.grad.numpy()))
    for a, b in zip(res[1], res[0]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_sdpa_gradcheck_float64_at_kernel_size(nn_kernels_path):
    rng = np.random.default_rng(3)
    L = 48
    assert 2 * L * L >= _accel_nn.MIN_SIZE
    q, k, v = (retrograd.tensor(rng.standard_normal((2, L, 3)), requires_grad=True) for _ in range(3))
    f = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert gradcheck(f, (q, k, v))
