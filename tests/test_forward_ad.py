"""torch.autograd.forward_ad: dual tensors, JVP rules (written, linear, double-vjp
fallback) against torch and finite differences; jacobian(strategy="forward-mode")."""
import numpy as np
import pytest

import retrograd
import retrograd.autograd.forward_ad as fwAD
from helpers import torch, needs_torch

rng = np.random.default_rng(2)
X = rng.uniform(0.2, 1.5, (3, 4))
T = rng.standard_normal((3, 4))
W = rng.standard_normal((4, 2))

FUNCS = [
    lambda L: lambda x: x.exp() * x.sin() - x.cos() / (1 + x.tanh()) + x.sigmoid().sqrt() + x.log(),
    lambda L: lambda x: (x ** 3 + 2 ** x.relu() + x.abs().rsqrt() + x.square().reciprocal()).log1p().expm1(),
    lambda L: lambda x: x @ L.tensor(W) + L.mm(x.t(), x).sum() + L.matmul(x[0], x.t()).sum(),
    lambda L: lambda x: x.sum(1) + x.mean(0).sum() + x.amax(1) + x.std(0).sum() + x.logsumexp(1),
    lambda L: lambda x: x.view(4, 3).t().reshape(-1)[2:7].unsqueeze(0).flip(1).squeeze() + x.flatten()[:5],
    lambda L: lambda x: L.cat([x, x.exp()], 0).permute(1, 0).cumsum(0)[:, 1] + L.stack([x, x], 0).sum((0, 1)),
    lambda L: lambda x: x.softmax(1) * x.log_softmax(0) + L.nn.functional.gelu(x) + L.nn.functional.silu(x),
    lambda L: lambda x: L.nn.functional.cross_entropy(x, L.tensor([0, 3, 1])) + L.nn.functional.mse_loss(x, x.cos()),
    lambda L: lambda x: L.nn.functional.conv2d(x.reshape(1, 1, 3, 4), x[:2, :2].reshape(1, 1, 2, 2), padding=1),
    lambda L: lambda x: L.where(x > 0.7, x * 2, x.sin()).clamp(0.3, 1.2) + x.max(1).values.unsqueeze(1),
    lambda L: lambda x: L.linalg.norm(x, dim=1) + x.norm() + L.nn.functional.layer_norm(x, (4,)).sum(1),
]


def _tangent(L, fn, x, t):
    ad = L.autograd.forward_ad
    with ad.dual_level():
        d = ad.make_dual(L.tensor(x), L.tensor(t))
        out = fn(L)(d)
        p, tan = ad.unpack_dual(out)
    return p, tan


@pytest.mark.parametrize("i", range(len(FUNCS)))
def test_jvp_matches_finite_differences(i):
    fn = FUNCS[i]
    p, tan = _tangent(retrograd, fn, X, T)
    f = fn(retrograd)
    eps = 1e-6
    fd = (f(retrograd.tensor(X + eps * T)) - f(retrograd.tensor(X - eps * T))) / (2 * eps)
    np.testing.assert_allclose(tan.numpy(), fd.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(p.numpy(), f(retrograd.tensor(X)).numpy(), rtol=0, atol=0)


@needs_torch
@pytest.mark.parametrize("i", range(len(FUNCS)))
def test_jvp_matches_torch(i):
    p, tan = _tangent(retrograd, FUNCS[i], X, T)
    tp, ttan = _tangent(torch, FUNCS[i], X, T)
    np.testing.assert_allclose(p.numpy(), tp.numpy(), rtol=1e-12, atol=1e-12)
    assert tan.dtype == retrograd.float64 and tuple(tan.shape) == tuple(ttan.shape)
    np.testing.assert_allclose(tan.numpy(), ttan.numpy(), rtol=1e-10, atol=1e-10)


@needs_torch
def test_api_and_errors():
    got = []
    for L in (retrograd, torch):
        ad = L.autograd.forward_ad
        g = []
        with pytest.raises(RuntimeError) as e:
            ad.make_dual(L.ones(2), L.ones(2))
        g.append(str(e.value))
        with ad.dual_level() as lvl:
            g.append(lvl)
            with pytest.raises(RuntimeError) as e:
                ad.make_dual(L.ones(2), L.ones(3))
            g.append(str(e.value))
            with pytest.raises(ValueError) as e:
                ad.make_dual(L.ones(2, dtype=L.long), L.ones(2))
            g.append(str(e.value))
            with pytest.raises(RuntimeError) as e:
                ad.enter_dual_level()
            g.append(str(e.value))
            d = ad.make_dual(L.ones(2), L.arange(2.0))
            u = ad.unpack_dual(d)
            g += [type(u).__name__, u._fields, u.tangent.tolist(), ad.unpack_dual(L.ones(1)).tangent]
            y = d * 3
            y.mul_(d)                         # in place: the tangent follows
            g.append(ad.unpack_dual(y).tangent.tolist())
            k = d.long()                      # integer outputs carry no tangent
            g.append(ad.unpack_dual(k).tangent)
        g.append(ad.unpack_dual(y).tangent)
        got.append(g)
    assert got[0] == got[1]


def test_dispatch_swapped_only_inside_a_level():
    add = retrograd.Tensor.__add__
    sin = retrograd.sin
    with fwAD.dual_level():
        assert retrograd.Tensor.__add__ is not add
        with pytest.raises(RuntimeError):
            with fwAD.dual_level():
                pass
    assert retrograd.Tensor.__add__ is add and retrograd.sin is sin
    retrograd.func.vmap(lambda r: r + 1)(retrograd.ones(2, 2))
    # the two dispatch layers do not stack: refused rather than silently dropping tangents
    with fwAD.dual_level():
        with pytest.raises(NotImplementedError):
            retrograd.func.vmap(lambda r: r + 1)(retrograd.ones(2, 2))
    with pytest.raises(NotImplementedError):
        retrograd.func.vmap(lambda r: fwAD.enter_dual_level())(retrograd.ones(2, 2))
    assert retrograd.Tensor.__add__ is add and retrograd.sin is sin


@needs_torch
def test_jacobian_forward_mode():
    a, b = rng.random(3), rng.random(2)

    def f(L):
        return lambda x, y: (x.sin() * y.sum(), (x[:2] * y).exp())
    r = retrograd.autograd.functional.jacobian(f(retrograd), (retrograd.tensor(a), retrograd.tensor(b)),
                                               vectorize=True, strategy="forward-mode")
    q = torch.autograd.functional.jacobian(f(torch), (torch.tensor(a), torch.tensor(b)), vectorize=True,
                                           strategy="forward-mode")
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(r[i][j].numpy(), q[i][j].numpy(), rtol=1e-12, atol=1e-14)
    msgs = []
    for L in (retrograd, torch):
        m = []
        for kw in ({}, {"vectorize": True, "create_graph": True}):
            with pytest.raises(NotImplementedError) as e:
                L.autograd.functional.jacobian(lambda x: x, L.ones(2), strategy="forward-mode", **kw)
            m.append(str(e.value))
        msgs.append(m)
    assert msgs[0] == msgs[1]
