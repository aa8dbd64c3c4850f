"""Self-attention's and mm's array-level fast paths against PyTorch: the merged output and
packed gradient written in place by the products, expanded
(zero-stride) gradients in products, and mm's backward on arrays."""
import numpy as np
import pytest

import retrograd
from helpers import needs_torch, torch
from nn_seq_helpers import copy_params


def _pair(lib, kw, dtype):
    lib.manual_seed(0)
    m = lib.nn.MultiheadAttention(**kw)
    return m.double() if dtype == np.float64 else m


def _run_mha(lib, m, x, fkw, masks, use_w, gseed=3):
    t = (torch.from_numpy if lib is torch else retrograd.from_numpy)(x.copy()).requires_grad_(True)
    kw = {k: (torch.from_numpy if lib is torch else retrograd.from_numpy)(v) for k, v in masks.items()}
    o, w = m(t, t, t, **kw, **fkw)
    rng = np.random.default_rng(gseed)
    go = (torch.from_numpy if lib is torch else retrograd.from_numpy)(rng.standard_normal(o.shape).astype(x.dtype))
    loss = (o * go).sum()
    if use_w and w is not None:
        gw = (torch.from_numpy if lib is torch else retrograd.from_numpy)(rng.standard_normal(w.shape).astype(x.dtype))
        loss = loss + (w * gw).sum()
    loss.backward()
    grads = [t.grad] + [p.grad for p in m.parameters()]
    return o, w, grads


def _np(t):
    return t.detach().numpy() if t is not None else None


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("heads,fkw,use_w", [
    (4, {}, False),                                   # weights returned, not used: packed gradient in place
    (4, {}, True),                                    # weights used: their share added
    (3, {}, True),                                    # mean over 3 heads
    (2, dict(need_weights=False), False),
    (3, dict(average_attn_weights=False), True),
])
@pytest.mark.parametrize("kpm", [False, True])
def test_self_attention_fast_paths(dtype, batch_first, heads, fkw, use_w, kpm):
    E = 2 * heads * 2
    N, L = 3, 5
    kw = dict(embed_dim=E, num_heads=heads, batch_first=batch_first)
    m, mt = _pair(retrograd, kw, dtype), _pair(torch, kw, dtype)
    copy_params(m, mt)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((N, L, E) if batch_first else (L, N, E)).astype(dtype)
    masks = {}
    if kpm:
        masks["key_padding_mask"] = np.array([[0, 0, 0, 1, 1], [0, 0, 0, 0, 0], [0, 1, 0, 0, 1]], bool)
    o, w, g = _run_mha(retrograd, m, x, fkw, masks, use_w)
    ot, wt, gt = _run_mha(torch, mt, x, fkw, masks, use_w)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
    assert str(o.dtype) == str(ot.dtype) and tuple(o.shape) == tuple(ot.shape)
    np.testing.assert_allclose(_np(o), _np(ot), **tol)
    assert (w is None) == (wt is None)
    if w is not None:
        assert tuple(w.shape) == tuple(wt.shape)
        np.testing.assert_allclose(_np(w), _np(wt), **tol)
    assert len(g) == len(gt)
    for a, b in zip(g, gt):
        np.testing.assert_allclose(_np(a), _np(b), **tol)
    assert o.grad_fn.name() == ot.grad_fn.name()   # (batch_first: a transposed view, TransposeBackward0)
    assert o.is_contiguous() == ot.is_contiguous() and tuple(o.stride()) == tuple(ot.stride())


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("average", [True, False])
def test_weights_are_a_view_and_head_mean_as_torch(batch_first, average):
    # the weights: the per-head weights viewed (N, H, L, S) (ViewBackward0), averaged over the
    # heads by mean (MeanBackward1), with torch's values, strides and gradients
    kw = dict(embed_dim=8, num_heads=2, batch_first=batch_first)
    x = np.random.default_rng(1).standard_normal((3, 4, 8)).astype(np.float32)
    ours, theirs = _pair(retrograd, kw, np.float32), _pair(torch, kw, np.float32)
    copy_params(ours, theirs)
    fkw = dict(need_weights=True, average_attn_weights=average)
    o, w, grads = _run_mha(retrograd, ours, x, fkw, {}, True)
    ot, wt, grads_t = _run_mha(torch, theirs, x, fkw, {}, True)
    assert w.grad_fn.name() == wt.grad_fn.name() == ("MeanBackward1" if average else "ViewBackward0")
    assert tuple(w.shape) == tuple(wt.shape) and tuple(w.stride()) == tuple(wt.stride())
    np.testing.assert_allclose(_np(w), _np(wt), rtol=1e-5, atol=1e-6)
    for a, b in zip(grads, grads_t):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-4, atol=1e-5)


def test_weights_gradcheck():
    # float64 gradients through the weights output (per head and averaged), without torch
    retrograd.manual_seed(0)
    m = retrograd.nn.MultiheadAttention(6, 3).double()
    x = retrograd.randn(4, 2, 6, dtype=retrograd.float64, requires_grad=True)
    for avg in (True, False):
        assert retrograd.autograd.gradcheck(lambda t: m(t, t, t, average_attn_weights=avg)[1], (x,))
        assert retrograd.autograd.gradgradcheck(lambda t: m(t, t, t, average_attn_weights=avg)[1], (x,))


def test_self_attention_gradcheck_packed_in_place():
    # float64 gradients of the packed path (weights returned but unused), without torch
    retrograd.manual_seed(0)
    m = retrograd.nn.MultiheadAttention(6, 3).double()
    x = retrograd.randn(4, 2, 6, dtype=retrograd.float64, requires_grad=True)
    assert retrograd.autograd.gradcheck(lambda t: m(t, t, t)[0], (x,))
    assert retrograd.autograd.gradcheck(lambda t: m(t, t, t, need_weights=False)[0], (x,))


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
def test_self_attention_dropout_seeded(batch_first):
    # dropout on the weights draws as PyTorch's does: same numbers under one seed
    kw = dict(embed_dim=8, num_heads=2, dropout=0.3, batch_first=batch_first)
    m, mt = _pair(retrograd, kw, np.float64), _pair(torch, kw, np.float64)
    copy_params(m, mt)
    x = np.random.default_rng(2).standard_normal((3, 4, 8))
    res = []
    for lib, mod in ((retrograd, m), (torch, mt)):
        lib.manual_seed(7)
        res.append(_run_mha(lib, mod, x, {}, {}, False))
    (o, w, g), (ot, wt, gt) = res
    np.testing.assert_allclose(_np(o), _np(ot), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(_np(w), _np(wt), rtol=1e-9, atol=1e-11)
    for a, b in zip(g, gt):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-9, atol=1e-11)


@needs_torch
@pytest.mark.parametrize("n", [3, 64, 256])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mm_expanded_gradient(n, dtype):
    # sum()'s gradient reaches mm expanded (zero strides); the products copy it out
    a = np.random.default_rng(0).standard_normal((n, n + 1)).astype(dtype)
    b = np.random.default_rng(1).standard_normal((n + 1, n)).astype(dtype)
    res = []
    for lib in (retrograd, torch):
        x, y = lib.from_numpy(a.copy()).requires_grad_(True), lib.from_numpy(b.copy()).requires_grad_(True)
        r = x @ y
        r.sum().backward()
        res.append((r, x.grad, y.grad))
    tol = dict(rtol=2e-5, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    for u, v in zip(*res):
        np.testing.assert_allclose(_np(u), _np(v), **tol)
    assert res[0][0].grad_fn.name() == res[1][0].grad_fn.name() == "MmBackward0"


def test_mm_backward_double_backward():
    # create_graph keeps the tensor-op formulas: gradgradcheck of mm in float64
    rng = np.random.default_rng(0)
    a = retrograd.from_numpy(rng.standard_normal((3, 4))).requires_grad_(True)
    b = retrograd.from_numpy(rng.standard_normal((4, 2))).requires_grad_(True)
    assert retrograd.autograd.gradcheck(retrograd.mm, (a, b))
    assert retrograd.autograd.gradgradcheck(retrograd.mm, (a, b))


def test_blas_dense_copy_keeps_values():
    from retrograd.ops import _blas
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 16)).astype(np.float32)
    for g in (np.broadcast_to(np.float32(1.5), (32, 64)), np.broadcast_to(rng.random(64, np.float32), (32, 64)),
              np.broadcast_to(rng.random((32, 1), np.float32), (32, 64))):
        np.testing.assert_allclose(_blas.matmul(g, w), np.ascontiguousarray(g) @ w, rtol=1e-6, atol=1e-5)
        np.testing.assert_allclose(_blas.matmul(w.T, g.T), w.T @ np.ascontiguousarray(g.T), rtol=1e-6, atol=1e-5)


def _sdpa_run(lib, arrays, **kw):
    ts = [lib.from_numpy(a.copy()).requires_grad_(True) for a in arrays]
    o = lib.nn.functional.scaled_dot_product_attention(*ts, **kw)
    g = np.random.default_rng(5).standard_normal(tuple(o.shape)).astype(arrays[0].dtype)
    (o * lib.from_numpy(g)).sum().backward()
    return [o.detach().numpy()] + [t.grad.numpy() for t in ts]


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("L,S", [(3, 5), (5, 3), (4, 4), (1, 3)])
@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("where,value", [("q", np.inf), ("q", -np.inf), ("k", np.inf), ("k", -np.inf)])
def test_sdpa_causal_composite_adds_the_mask(dtype, L, S, nd, where, value):
    # PyTorch's composite path adds a -inf bias above the diagonal: an infinite score there
    # (from an infinite q or k) gives NaN in its row (+inf - inf), not a hidden zero
    rng = np.random.default_rng(0)
    bs = (2,)[: nd - 2]
    q, k = rng.standard_normal(bs + (L, 4)).astype(dtype), rng.standard_normal(bs + (S, 4)).astype(dtype)
    v = rng.standard_normal(bs + (S, 3)).astype(dtype)
    (q if where == "q" else k).reshape(-1)[0] = value
    got, want = _sdpa_run(retrograd, (q, k, v), is_causal=True), _sdpa_run(torch, (q, k, v), is_causal=True)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
    assert np.isnan(want[0]).any() or where == "k" or L == 1    # the case at hand is exercised
    for a, b in zip(got, want):
        assert a.shape == b.shape
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_allclose(a, b, equal_nan=True, **tol)


@needs_torch
@pytest.mark.parametrize("scale", [0.0, -1.0, -0.0, 0.5])
@pytest.mark.parametrize("L,S", [(4, 4), (3, 5), (5, 3)])
def test_sdpa_fused_causal_hides_before_scaling(scale, L, S):
    # PyTorch's fused CPU kernel sets the hidden scores to -inf before the scale multiplies
    # them: a scale <= 0 turns them into NaN or +inf (its output, reproduced here)
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((2, 2, n, 4)).astype(np.float32) for n in (L, S, S))
    outs = []
    for lib in (retrograd, torch):
        o = lib.nn.functional.scaled_dot_product_attention(*(lib.from_numpy(a) for a in (q, k, v)), is_causal=True,
                                                           scale=scale)
        outs.append(o.numpy())
    np.testing.assert_array_equal(np.isnan(outs[0]), np.isnan(outs[1]))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6, equal_nan=True)


def test_attend_causal_modes_numpy_and_compiled_agree(monkeypatch):
    # the compiled pass and the NumPy steps give the same rows for both causal modes
    from retrograd.ops import attention, _accel_nn
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 3, n, 4)).astype(np.float32) for n in (6, 6, 6))
    q[0, 0, 1, 2] = np.inf
    k[1, 2, 4, 0] = -np.inf
    res = {}
    for name, kern in (("compiled", _accel_nn.kernels()), ("numpy", None)):
        monkeypatch.setattr(_accel_nn, "_KERNELS", [kern])
        for mode in (True, "add"):
            for sc in (0.5, 0.0, -2.0):
                res[name, mode, sc] = attention._attend(q, k, v, None, sc, None, causal=mode)[0]
    for key, r in res.items():
        if key[0] == "compiled":
            w = res[("numpy",) + key[1:]]
            np.testing.assert_array_equal(np.isnan(r), np.isnan(w))
            np.testing.assert_allclose(r, w, rtol=1e-5, atol=1e-6, equal_nan=True)


@needs_torch
@pytest.mark.parametrize("same", ["qkv", "kv", "none"])
def test_batch_first_attention_output_is_a_transposed_view(same):
    # nn.MultiheadAttention(batch_first=True) works on (L, N, E) views of its inputs and hands
    # back a transposed view of its output, as PyTorch's
    kw = dict(embed_dim=8, num_heads=2, batch_first=True)
    m, mt = _pair(retrograd, kw, np.float64), _pair(torch, kw, np.float64)
    copy_params(m, mt)
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((3, n, 8)) for n in (4, 5, 5)]
    res = []
    for lib, mod in ((retrograd, m), (torch, mt)):
        ts = [lib.from_numpy(a.copy()).requires_grad_(True) for a in arrays]
        q, k, v = ts
        if same == "qkv":
            k = v = q
        elif same == "kv":
            v = k
        o, w = mod(q, k, v)
        (o * lib.from_numpy(np.linspace(-1, 1, o.numel()).reshape(tuple(o.shape)))).sum().backward()
        res.append((o, w, [t.grad for t in ts]))
    (o, w, g), (ot, wt, gt) = res
    assert o.grad_fn.name() == ot.grad_fn.name() == "TransposeBackward0"
    assert tuple(o.stride()) == tuple(ot.stride()) and tuple(o.shape) == tuple(ot.shape)
    np.testing.assert_allclose(_np(o), _np(ot), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(_np(w), _np(wt), rtol=1e-9, atol=1e-11)
    for a, b in zip(g, gt):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-9, atol=1e-11)


@needs_torch
@pytest.mark.parametrize("L,S,N", [(0, 0, 2), (3, 0, 2), (0, 4, 2), (3, 3, 0)])
def test_attention_with_empty_sequences(L, S, N):
    # no queries or no keys: empty weights, zero outputs and gradients, as PyTorch's
    kw = dict(embed_dim=8, num_heads=2)
    m, mt = _pair(retrograd, kw, np.float64), _pair(torch, kw, np.float64)
    copy_params(m, mt)
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((L, N, 8)), rng.standard_normal((S, N, 8))
    res = []
    for lib, mod in ((retrograd, m), (torch, mt)):
        tq, tk = (lib.from_numpy(a.copy()).requires_grad_(True) for a in (q, k))
        o, w = mod(tq, tk, tk)
        (o.sum() + w.sum()).backward()
        res.append((o, w, tq.grad, tk.grad, mod.in_proj_weight.grad))
    for a, b in zip(*res):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-9, atol=1e-11)


@needs_torch
def test_output_nodes_as_torch_unbatched_and_any_bias_layout():
    # the out projection runs on (rows, E) and is viewed back (ViewBackward0) whatever the
    # bias's layout; unbatched inputs give squeezed results (SqueezeBackward1), as torch's
    names = {}
    for lib in (retrograd, torch):
        lib.manual_seed(0)
        m = lib.nn.MultiheadAttention(8, 2)
        x = lib.randn(3, 8)
        o, w = m(x, x, x)
        names[lib] = [o.grad_fn.name(), w.grad_fn.name(), tuple(o.stride()), tuple(w.stride())]
        b = lib.randn(16)[::2]       # a non-contiguous out-projection bias
        xb = lib.randn(3, 4, 8)
        ob, _ = lib.nn.functional.multi_head_attention_forward(
            xb, xb, xb, 8, 2, m.in_proj_weight, m.in_proj_bias, None, None, False, 0.0,
            m.out_proj.weight, b, need_weights=False)
        names[lib] += [ob.grad_fn.name(), tuple(ob.stride())]
        names[lib].append(ob.detach().numpy())
    ours, theirs = names[retrograd], names[torch]
    assert ours[:6] == theirs[:6]
    assert ours[1] == "SqueezeBackward1" and ours[4] == "ViewBackward0"
    np.testing.assert_allclose(ours[6], theirs[6], rtol=1e-5, atol=1e-6)
