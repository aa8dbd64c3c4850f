"""vmap against torch.func.vmap: batching rules per op family, in_dims/out_dims, nesting,
randomness, chunking, errors, the per-sample fallback, and per-sample gradients of seed
001's CNN (matching a per-sample loop and faster than it)."""
import os
import sys
import warnings

import numpy as np
import pytest

import retrograd
from helpers import torch, needs_torch
from test_func import both, _np, _close

rng = np.random.default_rng(1)
X = rng.standard_normal((4, 3, 5))
Y = rng.standard_normal((4, 5))
W = rng.standard_normal((5, 2))
V = rng.standard_normal((3, 5))


def vm(L, f, *a, **kw):
    return L.func.vmap(f, **kw)(*a)


@needs_torch
@pytest.mark.parametrize("fn", [
    lambda L: lambda x, y: x * y + x.sin() - y.exp() / 2,
    lambda L: lambda x, y: L.where(x > 0, x, y) ** 2,
    lambda L: lambda x, y: L.clamp(x, min=-0.5, max=0.5) + L.nn.functional.leaky_relu(y, 0.1),
    lambda L: lambda x, y: x.sum(1) + y.mean() + x.amax(-1) + x.logsumexp(0).sum(),
    lambda L: lambda x, y: x.std(1) + x.var(0, keepdim=True).sum() + x.max(1).values + x.argmax(1),
    lambda L: lambda x, y: x.norm() + x.norm(dim=1).sum() + x.max() + x.sum(),
    lambda L: lambda x, y: x.softmax(1) * L.log_softmax(x, 0) + L.nn.functional.softmax(x, dim=-1).cumsum(1),
    lambda L: lambda x, y: x.view(15).reshape(5, 3).t() @ y.unsqueeze(-1),
    lambda L: lambda x, y: x.transpose(0, 1).permute(1, 0).flatten() + x.unsqueeze(0).squeeze().reshape(-1),
    lambda L: lambda x, y: L.cat([x, y.unsqueeze(0)], 0) + L.stack([y, y, y, y], 0),
    lambda L: lambda x, y: x[1] + x[:, 2:4].sum(1).unsqueeze(-1) + x[..., 0:1] + x[[0, 2]].sum(0),
    lambda L: lambda x, y: x.expand(2, 3, 5).sum(0) + y.repeat(3, 1) + x.flip(0) + x.narrow(1, 1, 4).sum(),
    lambda L: lambda x, y: x @ y + (y @ x.t()) + L.matmul(x, x.t()).sum(),
    lambda L: lambda x, y: L.mm(x.t(), x) + L.mv(x.t(), x[:, 0]).sum() + L.dot(y, y),
    lambda L: lambda x, y: L.nn.functional.mse_loss(x, y.expand(3, 5)) + L.nn.functional.l1_loss(x[0], y),
    lambda L: lambda x, y: L.nn.functional.binary_cross_entropy_with_logits(x, x.sigmoid(), reduction="sum"),
    lambda L: lambda x, y: [t.sum() for t in x.chunk(2, 1)] + list(x.split(2, 0)) + list(x.unbind(1)),
])
def test_vmap_rules_match_torch(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # a rule, not the per-sample fallback
        both(lambda L, x, y: vm(L, fn(L), x, y), X, Y)


@needs_torch
def test_vmap_in_dims_out_dims_nested():
    both(lambda L, x, y: vm(L, lambda a, b: a * b, x, y, in_dims=(2, 1)), X, V)
    both(lambda L, x, y: vm(L, lambda a, b: (a.sum(0), b), x, y, in_dims=(1, None), out_dims=(1, 0)), X, Y)
    both(lambda L, x: vm(L, lambda a: vm(L, lambda r: r.softmax(0) * r.sum(), a), x), X)
    both(lambda L, x, y: vm(L, lambda a: vm(L, lambda r, s: r @ s, a, y, in_dims=(0, None)), x), X, W)
    both(lambda L, x, y: vm(L, lambda d: d["a"] + d["b"][0], {"a": x[:, 0], "b": [y]}, in_dims=({"a": 0, "b": [0]},)),
         X, Y)
    both(lambda L, x: vm(L, lambda a: a.sum(), x, out_dims=0, chunk_size=3), X)
    both(lambda L, x: vm(L, lambda a: a * 2, x, in_dims=-1, out_dims=-1, chunk_size=2), X)


@needs_torch
def test_vmap_linear_conv_losses():
    F_ = lambda L: L.nn.functional  # noqa: E731
    xs = rng.standard_normal((3, 2, 1, 6, 6))
    ws = rng.standard_normal((3, 4, 1, 3, 3))
    b = rng.standard_normal(4)
    both(lambda L, x, w, b: vm(L, lambda xi, wi: F_(L).conv2d(xi, wi, b, padding=1), x, w), xs, ws, b)
    both(lambda L, x, w, b: vm(L, lambda xi: F_(L).conv2d(xi, w[0], b, stride=2), x), xs, ws, b)
    both(lambda L, x, w, b: vm(L, lambda wi: F_(L).conv2d(x[0, 0], wi, b), w), xs, ws, b)
    both(lambda L, x: vm(L, lambda xi: F_(L).max_pool2d(xi, 2) + F_(L).avg_pool2d(xi, 2), x), xs)
    lw = rng.standard_normal((3, 4, 5))
    lx = rng.standard_normal((3, 5))
    both(lambda L, w, x, b: vm(L, lambda wi, xi: F_(L).linear(xi, wi, b), w, x), lw, lx, b)
    both(lambda L, w, x, b: vm(L, lambda xi: F_(L).linear(xi, w[0], b), x), lw, lx, b)
    logits = rng.standard_normal((4, 3, 5))
    for red in ("mean", "sum", "none"):
        def run(L, z, red=red):
            t = L.tensor([[0, 4, 2], [1, 1, 3], [4, -100, 0], [2, 2, 2]])
            w = L.arange(1.0, 6.0, dtype=L.float64)
            return [vm(L, lambda zi, ti: F_(L).cross_entropy(zi, ti, reduction=red), z, t),
                    vm(L, lambda zi, ti: F_(L).nll_loss(zi.log_softmax(-1), ti, weight=w, reduction=red), z, t),
                    vm(L, lambda zi, ti: F_(L).cross_entropy(zi[0], ti[0], reduction=red, label_smoothing=0.1), z, t),
                    vm(L, lambda zi: F_(L).cross_entropy(zi, zi.softmax(-1), reduction=red), z)]
        both(run, logits)


@needs_torch
def test_vmap_batched_index_and_getitem():
    both(lambda L, x: vm(L, lambda r, i: r[i], x[:, 0], L.tensor([0, 3, 4, 1])), X)

    both(lambda L, x: vm(L, lambda r: r.gather(1, L.tensor([[0], [1], [2]])), x), X)
    both(lambda L, x: vm(L, lambda r: r.index_select(1, L.tensor([4, 0])), x), X)


@needs_torch
def test_vmap_fallback_loops_with_one_warning():
    from retrograd.func import _vmap
    _vmap._warned.discard("diag")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = retrograd.func.vmap(lambda a: retrograd.diag(a[0]))(retrograd.tensor(X))
        retrograd.func.vmap(lambda a: retrograd.diag(a[1]))(retrograd.tensor(X))
    msgs = [str(x.message) for x in w if "performance drop" in str(x.message)]
    assert msgs == ["There is a performance drop because we have not yet implemented the batching rule for "
                    "aten::diag. Please file us an issue on GitHub so that we can prioritize its implementation."]
    t = torch.func.vmap(lambda a: torch.diag(a[0]))(torch.tensor(X))
    _close(_np(r), _np(t))


@needs_torch
def test_vmap_randomness():
    for L in (retrograd, torch):
        x = L.ones(5, 100, dtype=L.float64)
        with pytest.raises(RuntimeError, match="randomness error mode"):
            vm(L, lambda a: L.nn.functional.dropout(a), x)
        with pytest.raises(RuntimeError, match="randomness error mode"):
            vm(L, lambda a: a + L.rand(100), x)
        d = vm(L, lambda a: L.nn.functional.dropout(a, 0.5), x, randomness="different")
        assert not bool((d[0] == d[1]).all())
        s = vm(L, lambda a: L.nn.functional.dropout(a, 0.5), x, randomness="same")
        assert bool((s == s[0]).all()) and 0 < int((s[0] == 0).sum()) < 100
        r = vm(L, lambda a: a + L.rand(100), x, randomness="different")
        assert r.shape == (5, 100) and not bool((r[0] == r[1]).all())
        r = vm(L, lambda a: a + L.rand(100), x, randomness="same")
        assert bool((r == r[0]).all())
        e = vm(L, lambda a: L.nn.functional.dropout(a, 0.5, training=False), x)
        assert bool((e == 1).all())


@needs_torch
def test_vmap_errors():
    msgs = []
    for L in (retrograd, torch):
        got = []
        for fn, exc in ((lambda: vm(L, lambda a, b: a + b, L.ones(3, 2), L.ones(4, 2)), ValueError),
                        (lambda: vm(L, lambda a: a, L.ones(3, 2), in_dims=3), ValueError),
                        (lambda: vm(L, lambda a: a.item(), L.ones(3, 2)), RuntimeError),
                        (lambda: L.func.vmap(lambda a: a, randomness="x")(L.ones(2)), RuntimeError)):
            with pytest.raises(exc) as e:
                fn()
            got.append(str(e.value).replace("<lambda>", "f"))
        msgs.append(got)
    assert msgs[0] == msgs[1]


# --- per-sample gradients of seed 001's CNN -------------------------------------------------

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "scripts"))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_per_sample_grads_match_loop(dtype):
    import bench_per_sample_grads as b
    dt = getattr(retrograd, dtype)
    net, params, x, y, loss_fn = b.setup(dt, n=16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = b.per_sample_vmap(params, x, y, loss_fn)
    r = b.per_sample_loop(net, params, x, y, loss_fn)
    tol = 1e-12 if dtype == "float64" else 2e-6
    for k in params:
        assert g[k].shape == (16,) + tuple(params[k].shape) and g[k].dtype == dt
        np.testing.assert_allclose(g[k].numpy(), r[k].numpy(), rtol=tol, atol=tol * float(r[k].abs().max()))


@needs_torch
def test_per_sample_grads_match_torch():
    import bench_per_sample_grads as b
    net, params, x, y, loss_fn = b.setup(retrograd.float64, n=8)
    tnet = torch.nn.Module()
    g = b.per_sample_vmap(params, x, y, loss_fn)
    tp = {k: torch.tensor(v.numpy()) for k, v in params.items()}
    import torch.nn.functional as TF

    def tloss(p, xi, yi):
        h = TF.max_pool2d(TF.relu(TF.conv2d(xi.unsqueeze(0), p["conv1.weight"], p["conv1.bias"], padding=2)), 2)
        h = TF.max_pool2d(TF.relu(TF.conv2d(h, p["conv2.weight"], p["conv2.bias"], padding=2)), 2)
        h = TF.relu(TF.linear(h.view(-1, 392), p["fc1.weight"], p["fc1.bias"]))
        out = TF.log_softmax(TF.linear(h, p["fc2.weight"], p["fc2.bias"]), dim=1)
        return TF.cross_entropy(out, yi.unsqueeze(0))
    del tnet
    tg = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))(tp, torch.tensor(x.numpy()),
                                                                         torch.tensor(y.numpy()))
    for k in params:
        np.testing.assert_allclose(g[k].numpy(), tg[k].numpy(), rtol=1e-10, atol=1e-12)


def test_per_sample_grads_faster_than_loop():
    import bench_per_sample_grads as b
    mv, ml = b.main(reps=3)
    assert mv < ml


@needs_torch
def test_transforms_compose_with_vmap():
    x = rng.standard_normal((4, 3))
    both(lambda L, x: L.func.vmap(L.func.jacrev(lambda r: (r.sin() * r.sum(), r.exp())))(x), x)
    both(lambda L, x: L.func.vmap(L.func.hessian(lambda r: (r.sin() * r.sum()).sum()))(x), x)
    both(lambda L, x: L.func.jacrev(L.func.vmap(lambda r: r.sin() * r.sum()))(x), x)
    both(lambda L, x: L.func.vmap(L.func.jacfwd(lambda r: r.tanh() @ r))(x), x)
    both(lambda L, x: L.func.vmap(lambda r: L.func.jvp(lambda q: q.exp() * 2, (r,), (r.cos(),)))(x), x)
    both(lambda L, x: L.func.vmap(L.func.grad(lambda r, s: (r * s).sum()), in_dims=(0, None))(x, x[0]), x)
    both(lambda L, x: L.func.vmap(L.func.vjp(lambda r: r.sin() * 3, x[0])[1])(x.exp()), x)
