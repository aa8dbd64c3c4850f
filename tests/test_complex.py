"""Complex tensors against torch 2.13: creation, printing, promotion, real/imag views, conj,
angle/abs/polar/complex/view_as_real/view_as_complex, and gradients of complex leaves by
PyTorch's convention (z.grad = dL/d(re) + i dL/d(im)); finite-difference gradchecks of
complex functions run without torch."""
import warnings

import numpy as np
import pytest

import retrograd
from retrograd.autograd import gradcheck, gradgradcheck
from helpers import torch, needs_torch

_RNG = np.random.default_rng(7)
A = _RNG.standard_normal((3, 3)) + 1j * _RNG.standard_normal((3, 3))
B = _RNG.standard_normal((3, 3)) + 1j * _RNG.standard_normal((3, 3))
R = _RNG.standard_normal((3, 3))


def _np(t):
    if torch is not None and isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().resolve_neg().numpy()
    return np.asarray(t.detach()._data)


# name -> f(lib, z, w, r) on complex leaves z, w and a real leaf r
OPS = {
    "mul": lambda L, z, w, r: z * w, "mul_real": lambda L, z, w, r: z * r, "div": lambda L, z, w, r: z / w,
    "rdiv_real": lambda L, z, w, r: r / z, "add_sub": lambda L, z, w, r: z + w * r - z * 1j,
    "pow_int": lambda L, z, w, r: z ** 2, "pow_float": lambda L, z, w, r: z ** 3.5, "pow_tensor": lambda L, z, w, r: z ** w,
    "rpow": lambda L, z, w, r: 2 ** z, "neg": lambda L, z, w, r: -z, "exp": lambda L, z, w, r: z.exp(),
    "log": lambda L, z, w, r: z.log(), "sqrt": lambda L, z, w, r: z.sqrt(), "sin": lambda L, z, w, r: z.sin(),
    "cos": lambda L, z, w, r: z.cos(), "tanh": lambda L, z, w, r: z.tanh(), "sigmoid": lambda L, z, w, r: z.sigmoid(),
    "reciprocal": lambda L, z, w, r: z.reciprocal(), "abs": lambda L, z, w, r: z.abs(),
    "angle": lambda L, z, w, r: z.angle(), "real": lambda L, z, w, r: z.real * r, "imag": lambda L, z, w, r: z.imag * r,
    "conj": lambda L, z, w, r: z.conj() * w, "sgn": lambda L, z, w, r: z.sgn() * w,
    "sum": lambda L, z, w, r: (z * w).sum(0), "mean": lambda L, z, w, r: (z * w).mean(), "prod": lambda L, z, w, r: z.prod(1),
    "matmul": lambda L, z, w, r: z @ w, "mm": lambda L, z, w, r: L.mm(z, w), "bmm": lambda L, z, w, r: L.bmm(z[None], w[None]),
    "mm_real": lambda L, z, w, r: z @ r.to(z.dtype), "einsum": lambda L, z, w, r: L.einsum("ij,jk->ik", z, w),
    "addmm": lambda L, z, w, r: L.addmm(z, z, w), "mv": lambda L, z, w, r: L.mv(z, w[0]),
    "dot": lambda L, z, w, r: L.dot(z[0], w[0]), "vdot": lambda L, z, w, r: L.vdot(z[0], w[0]),
    "linear": lambda L, z, w, r: L.nn.functional.linear(z, w), "outer": lambda L, z, w, r: L.outer(z[0], w[1]),
    "reshape": lambda L, z, w, r: (z * w).reshape(9), "t": lambda L, z, w, r: z.t() * w,
    "index": lambda L, z, w, r: z[1:, [0, 2]] * w[0, 0], "cat": lambda L, z, w, r: L.cat([z, w]) * L.cat([w, z]),
    "stack": lambda L, z, w, r: L.stack([z, w]) ** 2, "expand": lambda L, z, w, r: z[0].expand(3, 3) * w,
    "where": lambda L, z, w, r: L.where(r > 0, z, w), "cumsum": lambda L, z, w, r: z.cumsum(0),
    "complex": lambda L, z, w, r: L.complex(r, r * r) * z, "polar": lambda L, z, w, r: L.polar(r.abs(), r * 2) * z,
    "view_as_real": lambda L, z, w, r: L.view_as_real(z) * r[..., :2],
    "view_as_complex": lambda L, z, w, r: L.view_as_complex(L.stack([r, r * r], -1)) * z,
    "to_complex": lambda L, z, w, r: r.to(L.complex128) * z, "mH": lambda L, z, w, r: z.mH @ w,
    "adjoint": lambda L, z, w, r: z.adjoint() @ w, "square": lambda L, z, w, r: z.square(),
}


def _run(lib, f):
    z = lib.tensor(A, requires_grad=True)
    w = lib.tensor(B, requires_grad=True)
    r = lib.tensor(R, requires_grad=True)
    out = f(lib, z, w, r)
    # a real loss of a complex output: |out|^2 weighted, so every component matters
    wt = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)) + 0.5)
    loss = ((out.abs() ** 2) * wt).sum() if out.is_complex() else (out * out * wt).sum()
    loss.backward()
    return out, [t.grad for t in (z, w, r)]


@needs_torch
@pytest.mark.parametrize("name", sorted(OPS))
def test_complex_op_matches_torch(name):
    out, grads = _run(retrograd, OPS[name])
    tout, tgrads = _run(torch, OPS[name])
    assert str(out.dtype) == str(tout.dtype)
    assert type(out.grad_fn).__name__ == type(tout.grad_fn).__name__
    np.testing.assert_allclose(_np(out), _np(tout), rtol=1e-10, atol=1e-12)
    for g, tg in zip(grads, tgrads):
        assert (g is None) == (tg is None)
        if g is not None:
            assert str(g.dtype) == str(tg.dtype)
            np.testing.assert_allclose(_np(g), _np(tg), rtol=1e-9, atol=1e-10)


GRADCHECK = {
    "mul": lambda z, w: z * w, "div": lambda z, w: z / w, "exp": lambda z, w: z.exp() * w, "abs": lambda z, w: z.abs(),
    "angle": lambda z, w: z.angle(), "real_imag": lambda z, w: z.real * w.imag, "conj": lambda z, w: z.conj() * w,
    "mm": lambda z, w: z @ w, "prod": lambda z, w: z.prod(0), "sqrt": lambda z, w: z.sqrt(), "sgn": lambda z, w: z.sgn(),
    "pow": lambda z, w: z ** w, "vdot": lambda z, w: retrograd.vdot(z[0], w[0]), "tanh": lambda z, w: z.tanh(),
    "sigmoid": lambda z, w: z.sigmoid(), "einsum": lambda z, w: retrograd.einsum("ij,kj->ik", z, w),
    "view_as_real": lambda z, w: retrograd.view_as_real(z) * 2, "log": lambda z, w: z.log(),
    "reciprocal": lambda z, w: z.reciprocal(), "sum_mean": lambda z, w: (z * w).sum(1) + z.mean(),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK))
def test_complex_gradcheck(name):
    z = retrograd.tensor(A, requires_grad=True)
    w = retrograd.tensor(B + 2, requires_grad=True)
    assert gradcheck(GRADCHECK[name], (z, w))
    assert gradgradcheck(GRADCHECK[name], (z, w))


def test_gradcheck_real_to_complex_and_back():
    a = retrograd.tensor(np.abs(R) + 0.5, requires_grad=True)
    b = retrograd.tensor(R, requires_grad=True)
    assert gradcheck(lambda a, b: retrograd.polar(a, b), (a, b))
    assert gradgradcheck(lambda a, b: retrograd.polar(a, b), (a, b))
    assert gradcheck(lambda a, b: retrograd.complex(a, b).exp().abs(), (a, b))
    assert gradcheck(lambda a: retrograd.view_as_complex(a), (retrograd.tensor(R[:, :2].copy(), requires_grad=True),))


def test_gradcheck_catches_a_wrong_complex_gradient():
    class Square(retrograd.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):  # g * 2z misses PyTorch's conjugate (g * conj(2z)): wrong off the real axis
            (z,) = ctx.saved_tensors
            return g * 2 * z
    z = retrograd.tensor(A, requires_grad=True)
    assert not gradcheck(Square.apply, (z,), raise_exception=False)
    r = retrograd.tensor(R, requires_grad=True)
    assert gradcheck(Square.apply, (r,))


@needs_torch
def test_printing_matches_torch():
    cases = [lambda L: L.polar(L.tensor([1., 2.]), L.tensor([3., 4.])),
             lambda L: L.tensor([1e-5 + 1j, 100 + 2j]),
             lambda L: L.tensor([1.5 + 2j, 3 - 1j], dtype=L.complex128),
             lambda L: L.tensor([1 + 1j, float("nan") + 0j, float("inf") * 1j]),
             lambda L: L.tensor([[1e10 + 1j, 1 + 2j]]), lambda L: L.tensor(1 - 2j),
             lambda L: L.tensor([[1 + 2j, 3 - 4.5j], [-1j, 0.]]),
             lambda L: L.arange(2000.).reshape(2, 1000) * (1 + 1j),
             lambda L: L.arange(30.) * (1.123 + 1j),
             lambda L: L.tensor([1 + 2j], requires_grad=True) * 2]
    for c in cases:
        assert repr(c(retrograd)) == repr(c(torch))


@needs_torch
def test_promotion_matches_torch():
    dts = ["int64", "float32", "float64", "complex64", "complex128"]
    for a in dts:
        for b in dts:
            x = retrograd.ones(2, dtype=getattr(retrograd, a)) + retrograd.ones(2, dtype=getattr(retrograd, b))
            tx = torch.ones(2, dtype=getattr(torch, a)) + torch.ones(2, dtype=getattr(torch, b))
            assert str(x.dtype) == str(tx.dtype), (a, b)
    for scalar in (1, 2.5, 1 + 1j):
        for a in dts:
            assert str((retrograd.ones(2, dtype=getattr(retrograd, a)) * scalar).dtype) == \
                str((torch.ones(2, dtype=getattr(torch, a)) * scalar).dtype)
    assert retrograd.tensor(1 + 2j).dtype is retrograd.complex64
    assert retrograd.tensor([1 + 2j], dtype=retrograd.complex128).dtype is retrograd.complex128


def test_real_imag_are_write_through_views():
    z = retrograd.zeros(2, dtype=retrograd.complex64)
    z.real = retrograd.tensor([1., 2.])
    z.imag.fill_(3)
    assert z.tolist() == [1 + 3j, 2 + 3j]
    re = z.real
    re.mul_(2)
    assert z.tolist() == [2 + 3j, 4 + 3j]
    assert re._base is z and z.imag._base is z
    assert retrograd.view_as_real(z)._base is z
    c = retrograd.view_as_complex(retrograd.view_as_real(z))
    c.add_(1j)
    assert z.tolist() == [2 + 4j, 4 + 4j]
    x = retrograd.tensor([1., 2.])
    assert x.real is x
    assert x.conj() is x and x.resolve_conj() is x


@needs_torch
def test_errors_match_torch():
    cases = ["z < w", "z >= w", "z.max()", "z.min()", "torch.maximum(z, w)", "z.clamp(0, 1)", "z.floor()",
             "z.ceil()", "z.trunc()", "z.round()", "z.sign()", "torch.relu(z)", "z.clamp_min(0)",
             "torch.tensor([1., 2.]).imag", "torch.view_as_real(torch.tensor([1., 2.]))",
             "torch.view_as_complex(torch.zeros(3, 3))",
             "torch.complex(torch.zeros(3), torch.zeros(3, dtype=torch.float64))",
             "torch.complex(torch.zeros(3, dtype=torch.int64), torch.zeros(3, dtype=torch.int64))"]
    for s in cases:
        got = []
        for lib in (retrograd, torch):
            z = lib.tensor([1 + 2j, 3 - 1j])
            w = lib.tensor([2 + 2j, 3 - 1j])
            try:
                eval(s, {"torch": lib, "z": z, "w": w})
                got.append(None)
            except Exception as e:
                got.append((type(e).__name__, str(e)))
        assert got[0] == got[1] and got[0] is not None, s


def test_conj_is_an_eager_copy():
    z = retrograd.tensor([1 + 2j])
    c = z.conj()
    # the copy still reports PyTorch's conjugate bit; resolving it gives a copy without it
    assert c.is_conj() and not z.is_conj() and not c.resolve_conj().is_conj()
    assert c.tolist() == [1 - 2j] and c._base is None
    p = z.conj_physical()
    assert p.tolist() == [1 - 2j]
    z.conj_physical_()
    assert z.tolist() == [1 - 2j]


def test_complex_random():
    g = retrograd.Generator().manual_seed(0) if hasattr(retrograd, "Generator") else None
    x = retrograd.randn(20000, dtype=retrograd.complex64, generator=g)
    assert x.dtype is retrograd.complex64
    d = x.numpy()
    # PyTorch: real and imaginary parts each of variance 1/2 (E|z|^2 = 1)
    assert abs(d.real.var() - 0.5) < 0.03 and abs(d.imag.var() - 0.5) < 0.03
    u = retrograd.rand(1000, dtype=retrograd.complex128).numpy()
    assert u.dtype == np.complex128 and 0 <= u.real.min() and u.real.max() < 1 and 0 <= u.imag.min()


def test_real_input_gets_real_part_of_complex_gradient():
    r = retrograd.tensor([1., 2.], requires_grad=True)
    (r * (1 + 2j)).abs().sum().backward()
    assert r.grad.dtype is retrograd.float32
    np.testing.assert_allclose(r.grad.numpy(), [5 ** 0.5] * 2, rtol=1e-6)  # d|r(1+2i)|/dr
    r.grad = None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning from the cast back
        (r.to(retrograd.complex64) * 1j).imag.sum().backward()
    np.testing.assert_allclose(r.grad.numpy(), [1., 1.])


_Z = [[1 + 2j, 3 - 1j, -2 + 0.5j], [0.5j, 2, -1 - 1j]]


@needs_torch
@pytest.mark.parametrize("expr", ["x.var()", "x.std(1)", "x.var(0, correction=0)", "torch.var_mean(x, 1)[0]",
                                  "x.norm()", "x.norm(dim=1)", "torch.linalg.vector_norm(x, 3)",
                                  "torch.linalg.vector_norm(x, float('inf'), dim=0)"])
def test_variance_and_norms_of_complex_tensors_are_real(expr):
    # mean |x - mean|^2 and |x|-based norms: real results (dtype float64 for complex128), as torch
    outs = []
    for lib in (retrograd, torch):
        x = lib.tensor(_Z, dtype=lib.complex128, requires_grad=True)
        r = eval(expr, {"torch": lib, "x": x})
        r.sum().backward()
        outs.append((str(r.dtype).split(".")[-1], r.detach().numpy(), x.grad.numpy()))
    (dr, vr, gr), (dt, vt, gt) = outs
    assert dr == dt == "float64"
    np.testing.assert_allclose(vr, vt, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gr, gt, rtol=1e-12, atol=1e-12)


def test_complex_variance_gradcheck():
    x = retrograd.tensor(_Z, dtype=retrograd.complex128, requires_grad=True)
    assert gradcheck(lambda t: t.var(1), (x,))
    assert gradcheck(lambda t: t.std(), (x,))
    assert gradcheck(lambda t: t.norm(dim=0), (x,))


@needs_torch
@pytest.mark.parametrize("view", ["real", "imag", "view_as_real"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_in_place_on_real_view_of_complex_non_leaf(view, create_graph):
    """An in-place op on the real / imaginary view of a complex non-leaf writes through it and
    the base's gradient (CopySlices over the base's (re, im) pairs) is PyTorch's, also for a
    view made again afterwards and under create_graph."""
    a = np.array([[1 + 2j, 3 - 1j, 0.25j], [0.5 - 0.2j, -2 + 1j, 1.5]])
    res = []
    for lib in (torch, retrograd):
        x = lib.tensor(a, requires_grad=True)
        y = x * x
        v = y.real if view == "real" else y.imag if view == "imag" else lib.view_as_real(y)
        v.mul_(3)
        loss = (y * y.conj()).real.sum() + y.imag.sum() + lib.view_as_real(y)[..., 0].sum()
        if create_graph:
            g, = lib.autograd.grad(loss, x, create_graph=True)
            (g.abs() ** 2).sum().backward()
        else:
            loss.backward()
        res.append((y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-10)
    assert res[1][2] == res[0][2]
