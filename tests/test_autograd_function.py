"""Custom autograd.Function: the API surface, PyTorch's tutorial, and misuse."""
import math

import numpy as np
import pytest

import retrograd
from helpers import torch

SECOND = "Trying to backward through the graph a second time"


def _vals(x):
    if x is None:
        return None
    if isinstance(x, (tuple, list)):
        return [_vals(e) for e in x]
    return np.round(np.asarray(x.detach().numpy(), dtype=float), 5).tolist()


def _libs():
    return [retrograd] + ([torch] if torch is not None else [])


def legendre_tutorial(torch):
    """PyTorch's tutorial (polynomial_custom_function.py), unchanged but for the step count."""
    class LegendrePolynomial3(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            input, = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)

    dtype = torch.float
    device = torch.device("cpu")
    x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
    y = torch.sin(x)
    a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)
    learning_rate = 5e-6
    losses = []
    names = []
    for t in range(200):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        if t % 50 == 49:
            losses.append(loss.item())
        if t == 0:
            names.append(type(y_pred.grad_fn.next_functions[1][0].next_functions[1][0]).__name__)
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    return names, losses, [a.item(), b.item(), c.item(), d.item()]


def test_legendre_tutorial_runs_unchanged():
    names, losses, params = legendre_tutorial(retrograd)
    assert names == ["LegendrePolynomial3Backward"]
    assert losses[-1] < losses[0]
    if torch is not None:
        tn, tl, tp = legendre_tutorial(torch)
        assert tn == names
        np.testing.assert_allclose(losses, tl, rtol=1e-4)
        np.testing.assert_allclose(params, tp, rtol=1e-4, atol=1e-6)


def define(lib):
    F = lib.autograd.Function

    class MulAdd(F):
        """Non-tensor argument, needs_input_grad, two saved tensors."""
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_backward(x, y)
            ctx.k = k
            ctx.seen = ctx.needs_input_grad
            return x * y + k

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return (g * y if ctx.needs_input_grad[0] else None,
                    g * x if ctx.needs_input_grad[1] else None, None)

    class Split(F):
        """Two outputs."""
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    class NoMaterialize(F):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            ctx.got = (g1 is None, g2 is None)
            return (g2 * 3) if g1 is None else g1 * 2 + g2 * 3

    class ArgMax(F):
        @staticmethod
        def forward(ctx, x):
            i = x.sum().long()
            ctx.mark_non_differentiable(i)
            return x * 2, i

        @staticmethod
        def backward(ctx, g, gi):
            ctx.gi = _vals(gi)
            return g * 2

    class DoubleInPlace(F):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class ExpSaveOut(F):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class Setup(F):
        @staticmethod
        def forward(x, y, scale=1.0):
            return x * y * scale

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, y, scale = inputs
            ctx.save_for_backward(x, y)
            ctx.scale = scale

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y * ctx.scale, g * x * ctx.scale, None

    class Once(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    class Identity(F):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    return dict(MulAdd=MulAdd, Split=Split, NoMaterialize=NoMaterialize, ArgMax=ArgMax,
                DoubleInPlace=DoubleInPlace, ExpSaveOut=ExpSaveOut, Setup=Setup, Once=Once, Identity=Identity)


def scenarios(lib):
    fs = define(lib)
    out = {}
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = lib.tensor([0.5, -1.0, 2.0])
    y = fs["MulAdd"].apply(x, w, 4.0)
    y.sum().backward()
    out["muladd"] = (type(y.grad_fn).__name__, y.grad_fn.seen, _vals(y), _vals(x.grad))
    x.grad = None
    a, b = fs["Split"].apply(x)
    (a.sum() + b.sum() * 2).backward()
    out["split"] = (_vals(x.grad), a.grad_fn is b.grad_fn, b.output_nr)
    x.grad = None
    a, b = fs["Split"].apply(x)
    b.sum().backward()                       # a gets no gradient: zeros are materialized
    out["split_one"] = _vals(x.grad)
    x.grad = None
    a, b = fs["NoMaterialize"].apply(x)
    b.sum().backward()
    out["nomat"] = (_vals(x.grad), a.grad_fn.got)
    x.grad = None
    o, i = fs["ArgMax"].apply(x)
    o.sum().backward()
    out["nondiff"] = (o.requires_grad, i.requires_grad, i.grad_fn is None, o.grad_fn.gi, _vals(x.grad))
    x.grad = None
    h = x * 1
    r = fs["DoubleInPlace"].apply(h)
    r.sum().backward()
    out["dirty"] = (r is h, type(h.grad_fn).__name__, _vals(x.grad))
    x.grad = None
    e = fs["ExpSaveOut"].apply(x)
    e.sum().backward(retain_graph=True)
    e.add_(1)
    with pytest.raises(RuntimeError) as ei:
        e.sum().backward()
    out["saved_out"] = (_vals(x.grad), str(ei.value))
    x.grad = None
    s = fs["Setup"].apply(x, w, 2.0)
    s.sum().backward()
    out["setup"] = (type(s.grad_fn).__name__, _vals(x.grad))
    x.grad = None
    (g,) = lib.autograd.grad(fs["Once"].apply(x).sum(), x, create_graph=True)
    out["once"] = (_vals(g), g.requires_grad)
    with pytest.raises(RuntimeError) as ei:
        (g2,) = lib.autograd.grad(fs["Once"].apply(x), x, lib.ones(3, requires_grad=True), create_graph=True)
        g2.sum().backward()
    out["once_twice"] = str(ei.value)
    o = fs["Identity"].apply(x)
    o.sum().backward()
    out["identity"] = (o is x, type(o.grad_fn).__name__, _vals(x.grad))
    with lib.no_grad():
        z = fs["MulAdd"].apply(x, w, 1.0)
    out["no_grad"] = (z.requires_grad, z.grad_fn is None)
    return out


def test_function_features():
    r = scenarios(retrograd)
    assert r["muladd"][0] == "MulAddBackward"
    assert r["muladd"][1] == (True, False, False)
    assert r["split_one"] == [3.0, 3.0, 3.0]
    if torch is not None:
        t = scenarios(torch)
        assert r == t


def _fn(lib, fwd, bwd, name="F"):
    return type(name, (lib.autograd.Function,), {"forward": staticmethod(fwd), "backward": staticmethod(bwd)})


def misuse(lib):
    msgs = {}
    a = lib.ones(3, requires_grad=True)

    def catch(key, f):
        try:
            f()
            msgs[key] = "no error"
        except Exception as e:  # noqa: BLE001
            msgs[key] = (type(e).__name__, str(e))
    F = _fn(lib, lambda ctx, x, y: x * y, lambda ctx, g: g, "Two")
    catch("count", lambda: F.apply(a, a).sum().backward())
    G = _fn(lib, lambda ctx, x: (ctx.save_for_backward(3), x * 2)[1], lambda ctx, g: g, "SaveInt")
    catch("save_int", lambda: G.apply(a))

    def fwd_h(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    def bwd_h(ctx, g):
        ctx.saved_tensors
        return g
    H = _fn(lib, fwd_h, bwd_h, "H")

    def twice():
        o = H.apply(a)
        o.sum().backward()
        return o.grad_fn.saved_tensors
    catch("saved_twice", twice)
    W = _fn(lib, lambda ctx, x: x * 2, lambda ctx, g: lib.ones(2), "WrongShape")
    catch("shape", lambda: W.apply(a).sum().backward())
    E2 = _fn(lib, lambda ctx, x, n: x * n, lambda ctx, g: (g, g), "GradForInt")
    catch("nontensor_grad", lambda: E2.apply(a, 2).sum().backward())
    E3 = _fn(lib, lambda ctx, x, n: x * n, lambda ctx, g: (g, None, None), "ExtraNone")
    catch("extra_none", lambda: E3.apply(a, 2).sum().backward())

    def dirty(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x
    D = _fn(lib, dirty, lambda ctx, g: g, "Dirty")
    catch("dirty_leaf", lambda: D.apply(a))
    B = _fn(lib, lambda ctx, x: x * 2, lambda ctx, g: 3, "BadType")
    catch("bad_type", lambda: B.apply(a).sum().backward())
    N = type("NoBackward", (lib.autograd.Function,), {"forward": staticmethod(lambda ctx, x: x * 2)})
    catch("no_backward", lambda: N.apply(a).sum().backward())
    a.grad = None
    return msgs, _vals(a)


def test_function_misuse_errors_match_torch():
    r, vals = misuse(retrograd)
    assert r["count"] == ("RuntimeError", "function TwoBackward returned an incorrect number of gradients "
                          "(expected 2, got 1)")
    assert r["save_int"] == ("TypeError", "save_for_backward can only save variables, but argument 0 is of type int")
    assert r["saved_twice"][1].startswith(SECOND)
    assert r["dirty_leaf"] == ("RuntimeError", "a leaf Variable that requires grad has been used in an in-place "
                               "operation.")
    if torch is not None:
        t, tvals = misuse(torch)
        assert r == t and vals == tvals


def test_function_is_not_instantiated_or_called():
    F = _fn(retrograd, lambda ctx, x: x, lambda ctx, g: g)
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        f = F()
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method is deprecated"):
        f(retrograd.ones(1))


def test_function_double_backward():
    """A backward written with differentiable ops supports create_graph."""
    class Cube(retrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * g
    x = retrograd.tensor(2.0, requires_grad=True)
    (g,) = retrograd.autograd.grad(Cube.apply(x), x, create_graph=True)
    (g2,) = retrograd.autograd.grad(g, x)
    assert g.item() == 12.0 and g2.item() == 12.0
    x64 = retrograd.tensor([0.3, -1.2], dtype=retrograd.float64, requires_grad=True)
    assert retrograd.autograd.gradgradcheck(Cube.apply, (x64,))


def test_function_graph_freed():
    import gc
    import weakref

    class Exp(retrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y
    gc.disable()
    try:
        x = retrograd.tensor([1.0], requires_grad=True)
        y = Exp.apply(x)
        ref = weakref.ref(y.grad_fn)
        y.sum().backward()
        del y
        assert ref() is None   # the saved output does not keep its own node alive
    finally:
        gc.enable()


def test_legacy_variable():
    from retrograd.autograd import Variable
    t = retrograd.ones(2)
    v = Variable(t, requires_grad=True)
    assert v is not t and v.requires_grad and not t.requires_grad and isinstance(t, Variable)
    (v * 3).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [3.0, 3.0])
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        Variable(3)


def test_double_backward_tutorial_functions():
    """PyTorch's custom_function_double_backward tutorial: what passes gradgradcheck there
    passes here, and the bad Sinh (saving tensors on ctx) fails it here too."""
    lib = retrograd
    F = lib.autograd.Function

    class Exp(F):
        @staticmethod
        def forward(ctx, x):
            result = lib.exp(x)
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_out):
            (result,) = ctx.saved_tensors
            return grad_out * result

    class Sinh(F):
        @staticmethod
        def forward(ctx, x):
            expx, expnegx = lib.exp(x), lib.exp(-x)
            ctx.save_for_backward(expx, expnegx)
            return expx - expnegx, expx, expnegx

        @staticmethod
        def backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp):
            expx, expnegx = ctx.saved_tensors
            grad_input = grad_out * (expx + expnegx)
            grad_input += _grad_out_exp * expx
            grad_input -= _grad_out_negexp * expnegx
            return grad_input

    class SinhBad(F):
        @staticmethod
        def forward(ctx, x):
            expx, expnegx = lib.exp(x), lib.exp(-x)
            ctx.expx, ctx.expnegx = expx, expnegx
            return expx - expnegx

        @staticmethod
        def backward(ctx, grad_out):
            return grad_out * (ctx.expx + ctx.expnegx)

    class MyCube(F):
        @staticmethod
        def forward(x):
            return x ** 3, 3 * x ** 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0], output[1])

        @staticmethod
        def backward(ctx, grad_output, grad_dx):
            x, dx = ctx.saved_tensors
            return grad_output * dx + grad_dx * 6 * x

    x = lib.rand(3, 3, requires_grad=True, dtype=lib.double)
    gc_, ggc = lib.autograd.gradcheck, lib.autograd.gradgradcheck
    assert gc_(Exp.apply, x) and ggc(Exp.apply, x)
    assert gc_(lambda t: Sinh.apply(t)[0], x) and ggc(lambda t: Sinh.apply(t)[0], x)
    assert gc_(lambda t: MyCube.apply(t)[0], x) and ggc(lambda t: MyCube.apply(t)[0], x)
    assert gc_(SinhBad.apply, x)
    with pytest.raises(lib.autograd.gradcheck.GradcheckError, match="Jacobian mismatch for output 0"):
        ggc(SinhBad.apply, x)
