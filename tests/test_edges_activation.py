"""Activations and normalizations at the edges of their input space, against PyTorch:
0-d and empty inputs, the conventions at kinks (first and second derivatives), non-finite
upstream gradients, create_graph gradients of piecewise-linear functions, degenerate
statistics (zero variance, one value per group) and the errors of bad inputs.

Each parity test runs the same program on retrograd and on torch; every gradient claim
also has a float64 finite-difference check that needs no torch.
"""
import math

import numpy as np
import pytest

import retrograd
import retrograd.nn.functional as F
from retrograd.autograd import gradcheck, gradgradcheck

from helpers import torch, needs_torch

if torch is not None:
    import torch.nn.functional as TF


def _lib(lib):
    return (retrograd, F) if lib == "rt" else (torch, TF)


def _t(lib, a, dtype="float64", requires_grad=False):
    L = retrograd if lib == "rt" else torch
    return L.tensor(np.asarray(a), dtype=getattr(L, dtype), requires_grad=requires_grad)


def _np(t):
    return None if t is None else np.asarray(t.detach().numpy())


# name -> f(F, x); every activation of nn.functional (elementwise, or along a dim)
ACTS = {
    "elu": lambda Fm, x: Fm.elu(x), "elu_a": lambda Fm, x: Fm.elu(x, alpha=0.5),
    "selu": lambda Fm, x: Fm.selu(x), "celu": lambda Fm, x: Fm.celu(x, alpha=1.5),
    "gelu": lambda Fm, x: Fm.gelu(x), "gelu_tanh": lambda Fm, x: Fm.gelu(x, approximate="tanh"),
    "silu": lambda Fm, x: Fm.silu(x), "mish": lambda Fm, x: Fm.mish(x),
    "hardswish": lambda Fm, x: Fm.hardswish(x), "hardsigmoid": lambda Fm, x: Fm.hardsigmoid(x),
    "hardtanh": lambda Fm, x: Fm.hardtanh(x), "hardtanh_ab": lambda Fm, x: Fm.hardtanh(x, -2.0, 0.5),
    "relu6": lambda Fm, x: Fm.relu6(x), "logsigmoid": lambda Fm, x: Fm.logsigmoid(x),
    "softplus": lambda Fm, x: Fm.softplus(x), "softplus_bt": lambda Fm, x: Fm.softplus(x, beta=2, threshold=1),
    "leaky_relu": lambda Fm, x: Fm.leaky_relu(x), "leaky_relu_neg": lambda Fm, x: Fm.leaky_relu(x, -0.5),
    "threshold": lambda Fm, x: Fm.threshold(x, 0.5, -1.0), "hardshrink": lambda Fm, x: Fm.hardshrink(x),
    "softshrink": lambda Fm, x: Fm.softshrink(x), "tanhshrink": lambda Fm, x: Fm.tanhshrink(x),
    "softsign": lambda Fm, x: Fm.softsign(x), "rrelu": lambda Fm, x: Fm.rrelu(x),
    "softmax": lambda Fm, x: Fm.softmax(x, -1), "log_softmax": lambda Fm, x: Fm.log_softmax(x, -1),
    "softmin": lambda Fm, x: Fm.softmin(x, -1),
    "prelu": lambda Fm, x: Fm.prelu(x, (retrograd if Fm is F else torch).tensor([0.25], dtype=x.dtype)),
    "elu_": lambda Fm, x: Fm.elu(x * 1, inplace=True), "celu_": lambda Fm, x: Fm.celu(x * 1, 0.7, inplace=True),
    "selu_": lambda Fm, x: Fm.selu(x * 1, inplace=True),
    "leaky_relu_": lambda Fm, x: Fm.leaky_relu(x * 1, 0.2, inplace=True),
    "threshold_": lambda Fm, x: Fm.threshold(x * 1, 0.5, 2.0, inplace=True),
    "hardtanh_": lambda Fm, x: Fm.hardtanh(x * 1, inplace=True),
    "hardswish_": lambda Fm, x: Fm.hardswish(x * 1, inplace=True),
}

# The points where each piecewise function changes formula (and some on either side).
KINKS = np.array([-3.5, -3.0, -2.9, -2.0, -1.0, -0.5, -0.1, 0.0, 0.1, 0.5, 1.0, 2.9, 3.0, 3.5, 6.0, 7.0])


def _derivs(lib, name, a, dtype="float64", g=None, create_graph=True):
    """(y, dy/dx . g, d/dx of <dy/dx . g, v>, d/dg of the same, grad_fn names)."""
    L, Fm = _lib(lib)
    x = _t(lib, a, dtype, True)
    y = ACTS[name](Fm, x)
    rng = np.random.default_rng(1)
    g = rng.standard_normal(y.shape) if g is None else g
    gt = _t(lib, g, dtype, True)
    (gx,) = L.autograd.grad(y, x, gt, create_graph=create_graph)
    out = {"y": _np(y), "gx": _np(gx), "fn": type(y.grad_fn).__name__,
           "gxfn": type(gx.grad_fn).__name__ if gx.grad_fn is not None else None}
    if create_graph:
        v = _t(lib, rng.standard_normal(gx.shape), dtype)
        try:
            ggx, ggg = L.autograd.grad(gx, (x, gt), v, allow_unused=True)
            out["ggx"], out["ggg"] = _np(ggx), _np(ggg)
        except RuntimeError as e:  # hardsigmoid: no second derivative in torch either
            out["ggerr"] = str(e)
    return out


def _assert_same(r, t, tol=1e-10):
    assert r.keys() == t.keys()
    for k in r:
        if isinstance(t[k], np.ndarray) or isinstance(r[k], np.ndarray):
            assert r[k] is not None and t[k] is not None, f"{k}: {r[k]} vs torch {t[k]}"
            assert r[k].shape == t[k].shape, f"{k}: shape {r[k].shape} vs torch {t[k].shape}"
            np.testing.assert_allclose(r[k], t[k], rtol=tol, atol=tol, equal_nan=True, err_msg=k)
        else:
            assert r[k] == t[k], f"{k}: {r[k]} vs torch {t[k]}"


# --- 0-d inputs are 0-d tensors ---------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ACTS))
def test_zero_dim_inputs_give_zero_dim_tensors(name):
    for v in (1.5, -0.7):
        x = retrograd.tensor(v, requires_grad=True)
        y = ACTS[name](F, x)
        assert isinstance(y._data, np.ndarray) and y.shape == ()
        assert isinstance(y.item(), float)
        (g,) = retrograd.autograd.grad(y, x, create_graph=True)
        assert isinstance(g._data, np.ndarray) and g.shape == ()
        float(g.item())


@needs_torch
@pytest.mark.parametrize("name", sorted(ACTS))
@pytest.mark.parametrize("v", [1.5, -0.7, 0.0])
def test_zero_dim_values_and_derivatives_match_torch(name, v):
    _assert_same(_derivs("rt", name, v), _derivs("torch", name, v))


def test_silu_of_zero_dim_item():
    assert abs(F.silu(retrograd.tensor(1.5)).item() - 1.5 / (1 + np.exp(-1.5))) < 1e-6


# --- conventions at the kinks: first and second derivatives -----------------------------

@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(ACTS))
def test_kinks_match_torch(name, dtype):
    tol = 1e-10 if dtype == "float64" else 1e-5
    _assert_same(_derivs("rt", name, KINKS, dtype), _derivs("torch", name, KINKS, dtype), tol)


@needs_torch
@pytest.mark.parametrize("name,points", [
    ("elu", [0.0]), ("selu", [0.0]), ("celu", [0.0]), ("elu_", [0.0]), ("celu_", [0.0]),
    ("softplus_bt", [0.5]), ("hardswish", [-3.0, 3.0]), ("hardsigmoid", [-3.0, 3.0]),
    ("hardtanh", [-1.0, 1.0]), ("relu6", [0.0, 6.0]), ("leaky_relu", [0.0]), ("threshold", [0.5]),
    ("hardshrink", [-0.5, 0.5]), ("softshrink", [-0.5, 0.5]), ("prelu", [0.0])])
def test_named_kinks(name, points):
    """The boundary conventions of torch's kernels and derivatives.yaml: elu's derivative
    at 0 is the negative side's (x <= 0) but its second derivative is 0 there (x < 0);
    softplus is linear only where beta*x > threshold; hardswish' is 0 at -3 and 1 at 3."""
    _assert_same(_derivs("rt", name, points), _derivs("torch", name, points))


def test_kink_values_without_torch():
    x = retrograd.tensor([0.0], dtype=retrograd.float64, requires_grad=True)
    (g,) = retrograd.autograd.grad(F.elu(x, 0.5), x, create_graph=True)
    assert g.item() == 0.5
    assert retrograd.autograd.grad(g, x)[0].item() == 0.0
    x = retrograd.tensor([-3.0, 3.0], dtype=retrograd.float64, requires_grad=True)
    (g,) = retrograd.autograd.grad(F.hardswish(x).sum(), x)
    assert g.tolist() == [0.0, 1.0]
    x = retrograd.tensor([0.5], dtype=retrograd.float64, requires_grad=True)
    (g,) = retrograd.autograd.grad(F.softplus(x, beta=2, threshold=1), x, create_graph=True)
    assert abs(g.item() - 1 / (1 + np.exp(-1.0))) < 1e-12   # not the linear branch
    assert retrograd.autograd.grad(g, x)[0].item() == 0.0    # but no curvature (x*beta < threshold)


SMOOTH = {  # away from the kinks every activation is smooth: finite differences apply
    name: f for name, f in ACTS.items() if not name.endswith("_") and name != "rrelu"}


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_gradcheck_and_gradgradcheck_float64(name):
    x = retrograd.tensor(np.array([-2.7, -1.3, -0.4, 0.3, 0.8, 1.7, 2.6, 4.2]), dtype=retrograd.float64,
                         requires_grad=True)
    assert gradcheck(lambda t: SMOOTH[name](F, t), (x,))
    if name == "hardsigmoid":   # no second derivative, as in torch
        with pytest.raises(RuntimeError, match="hardsigmoid_backward is not implemented"):
            gradgradcheck(lambda t: SMOOTH[name](F, t), (x,))
    else:
        assert gradgradcheck(lambda t: SMOOTH[name](F, t), (x,))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_second_derivative_is_the_derivative_of_the_first(approximate):
    x = retrograd.tensor(np.linspace(-4, 4, 9), dtype=retrograd.float64, requires_grad=True)
    assert gradgradcheck(lambda t: F.gelu(t, approximate=approximate), (x,))


@needs_torch
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_second_derivative_matches_torch(approximate):
    a = np.linspace(-6, 6, 13)
    name = "gelu" if approximate == "none" else "gelu_tanh"
    _assert_same(_derivs("rt", name, a), _derivs("torch", name, a))


# --- NaN inputs take the branch torch's kernel takes ------------------------------------

@needs_torch
@pytest.mark.parametrize("name", sorted(n for n in ACTS if n not in ("gelu", "gelu_tanh")))
def test_non_finite_inputs_match_torch(name):
    # gelu(+inf) is excluded: torch 2.13 gives NaN for float32 inputs of more than one
    # element (its vectorized erf) and +inf otherwise; retrograd gives +inf throughout.
    a = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0, -1.0])
    _assert_same(_derivs("rt", name, a), _derivs("torch", name, a))


# --- non-finite upstream gradients: masked positions select, never multiply -------------

@needs_torch
@pytest.mark.parametrize("fill", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("name", sorted(ACTS))
def test_non_finite_upstream_gradients_match_torch(name, fill):
    g = np.where(np.arange(KINKS.size) % 2 == 0, fill, 1.0)
    _assert_same(_derivs("rt", name, KINKS, g=g, create_graph=False),
                 _derivs("torch", name, KINKS, g=g, create_graph=False))


@pytest.mark.parametrize("name,x", [
    ("hardtanh", [-2.0, 2.0]), ("relu6", [-1.0, 7.0]), ("threshold", [0.2, 0.5]), ("hardsigmoid", [-4.0, 4.0]),
    ("hardswish", [-4.0, -3.0]), ("hardshrink", [0.1, -0.5]), ("softshrink", [0.1, 0.5])])
def test_masked_positions_are_zero_under_inf_and_nan(name, x):
    xt = retrograd.tensor(x, dtype=retrograd.float64, requires_grad=True)
    y = ACTS[name](F, xt)
    (g,) = retrograd.autograd.grad(y, xt, retrograd.tensor([np.inf, np.nan], dtype=retrograd.float64))
    assert g.tolist() == [0.0, 0.0]


# --- create_graph gradients of piecewise-linear functions stay in the graph ---------------

PIECEWISE = ["hardtanh", "hardtanh_ab", "relu6", "leaky_relu", "leaky_relu_neg", "threshold", "hardshrink",
             "softshrink", "prelu", "rrelu", "hardtanh_", "leaky_relu_", "threshold_"]


@pytest.mark.parametrize("name", PIECEWISE)
def test_second_grad_of_piecewise_linear_is_zero_not_an_error(name):
    x = retrograd.tensor(KINKS, dtype=retrograd.float64, requires_grad=True)
    (g,) = retrograd.autograd.grad(ACTS[name](F, x).sum(), x, create_graph=True)
    assert g.requires_grad
    (gg,) = retrograd.autograd.grad(g.sum(), x, allow_unused=False)
    assert gg.shape == x.shape and not np.any(gg.numpy())


@needs_torch
@pytest.mark.parametrize("name", PIECEWISE)
def test_piecewise_linear_double_backward_nodes_match_torch(name):
    outs = {}
    for lib in ("rt", "torch"):
        L, Fm = _lib(lib)
        x = _t(lib, KINKS, requires_grad=True)
        (g,) = L.autograd.grad(ACTS[name](Fm, x).sum(), x, create_graph=True)
        (gg,) = L.autograd.grad((g * g).sum(), x, create_graph=True)
        outs[lib] = (type(g.grad_fn).__name__, _np(gg), gg.requires_grad)
    r, t = outs["rt"], outs["torch"]
    assert r[0] == t[0] and r[2] == t[2]
    np.testing.assert_array_equal(r[1], t[1])


@needs_torch
@pytest.mark.parametrize("name", sorted(ACTS))
def test_double_backward_node_names_match_torch(name):
    if name in ("silu", "mish", "tanhshrink", "softsign", "softmin"):
        pytest.skip("composite first derivative in both libraries")
    names = []
    for lib in ("rt", "torch"):
        L, Fm = _lib(lib)
        x = _t(lib, [-1.5, 0.3, 2.0], requires_grad=True)
        (g,) = L.autograd.grad(ACTS[name](Fm, x).sum(), x, create_graph=True)
        names.append(type(g.grad_fn).__name__)
    assert names[0] == names[1]


def test_hardsigmoid_has_no_second_derivative_as_in_torch():
    x = retrograd.tensor([0.5], dtype=retrograd.float64, requires_grad=True)
    (g,) = retrograd.autograd.grad(F.hardsigmoid(x).sum(), x, create_graph=True)
    assert type(g.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::hardsigmoid_backward is not implemented"):
        retrograd.autograd.grad(g.sum(), x)


# --- in-place forms: PyTorch's nodes, and its refusals --------------------------------------

@needs_torch
@pytest.mark.parametrize("name,expect", [("elu_", "EluBackward1"), ("celu_", "CeluBackward1"),
                                         ("selu_", "EluBackward1"), ("leaky_relu_", "LeakyReluBackward1"),
                                         ("threshold_", "ThresholdBackward1"), ("hardtanh_", "HardtanhBackward0")])
def test_inplace_nodes(name, expect):
    r, t = _derivs("rt", name, KINKS), _derivs("torch", name, KINKS)
    assert r["fn"] == expect
    _assert_same(r, t)


@needs_torch
@pytest.mark.parametrize("call", [lambda Fm, x: Fm.elu(x * 1, -0.5, inplace=True),
                                  lambda Fm, x: Fm.celu(x * 1, -0.5, inplace=True),
                                  lambda Fm, x: Fm.leaky_relu(x * 1, -0.5, inplace=True),
                                  lambda Fm, x: Fm.rrelu(x * 1, -0.5, 0.2, inplace=True),
                                  lambda Fm, x: Fm.rrelu_(x * 1, -0.5, -0.1)])
def test_inplace_negative_slope_backward_errors_match_torch(call):
    msgs = []
    for lib in ("rt", "torch"):
        L, Fm = _lib(lib)
        x = _t(lib, [-1.0, 2.0], requires_grad=True)
        with pytest.raises(RuntimeError) as e:
            call(Fm, x).sum().backward()
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


@needs_torch
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("call", [lambda Fm, y, tr: Fm.rrelu(y, 0.1, 0.3, training=tr, inplace=True),
                                  lambda Fm, y, tr: Fm.rrelu_(y, 0.1, 0.3, training=tr)])
def test_inplace_rrelu_saves_its_result(call, training):
    """rrelu_ saves its result (rrelu_with_noise_backward with is_result): writing the result
    in place afterwards makes backward raise torch's version error; left alone, the
    gradient is the slope (sampled in training) and its second derivative is zero."""
    msgs, grads = [], []
    for lib in ("rt", "torch"):
        L, Fm = _lib(lib)
        x = _t(lib, [1.0, -2.0, 3.0, -4.0], requires_grad=True)
        z = call(Fm, x * 1, training)
        assert type(z.grad_fn).__name__ == "RreluWithNoiseBackward1"
        z.mul_(2)
        with pytest.raises(RuntimeError) as e:
            z.sum().backward()
        msgs.append(str(e.value))
        x = _t(lib, [1.0, -2.0, 3.0, -4.0], requires_grad=True)
        z = call(Fm, x * 1, training)
        (g,) = L.autograd.grad(z.sum(), x, create_graph=True)
        (gg,) = L.autograd.grad(g.sum(), x, allow_unused=True)
        grads.append((_np(g), _np(gg), _np(z)))
    assert msgs[0] == msgs[1] and "output 0 of RreluWithNoise1, is at version 2" in msgs[0]
    (g, gg, z), (tg, tgg, tz) = grads
    np.testing.assert_allclose(gg if gg is not None else 0, tgg if tgg is not None else 0)
    np.testing.assert_allclose(g[[0, 2]], [1.0, 1.0])
    np.testing.assert_allclose(g[[1, 3]], z[[1, 3]] / np.array([-2.0, -4.0]))   # the slope used
    if not training:
        np.testing.assert_allclose(g, tg)


def test_inplace_rrelu_gradcheck():
    x = retrograd.tensor([1.0, -2.0, 3.0, -4.0], dtype=retrograd.float64, requires_grad=True)
    assert gradcheck(lambda x: F.rrelu(x * 1, 0.1, 0.3, inplace=True), (x,))
    assert gradgradcheck(lambda x: F.rrelu(x * 1, 0.1, 0.3, inplace=True), (x,))


def test_rrelu_training_gradient_is_the_sampled_slope():
    x = retrograd.tensor([-1.0, -2.0, 0.0, 3.0], dtype=retrograd.float64, requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    assert type(y.grad_fn).__name__ == "RreluWithNoiseBackward0"
    (g,) = retrograd.autograd.grad(y.sum(), x)
    slope = y.detach().numpy()[:3] / np.array([-1.0, -2.0, 1.0])
    assert np.all((g.numpy()[:2] >= 0.1) & (g.numpy()[:2] <= 0.3))
    np.testing.assert_allclose(g.numpy()[:2], slope[:2])
    assert 0.1 <= g.numpy()[2] <= 0.3 and g.numpy()[3] == 1.0   # x == 0 takes a random slope, as in torch


# --- bad inputs: torch's exception types and wording ---------------------------------------

ERR_CALLS = dict(ACTS, **{
    "glu": lambda Fm, x: Fm.glu(x.reshape(2, -1) if x.dim() else x, 0),
    "relu6_": lambda Fm, x: Fm.relu6(x * 1, inplace=True),
    "layer_norm": lambda Fm, x: Fm.layer_norm(x.reshape(1, -1), (x.numel(),)),
    "group_norm": lambda Fm, x: Fm.group_norm(x.reshape(2, -1), 1),
    "batch_norm": lambda Fm, x: Fm.batch_norm(x.reshape(2, -1), None, None, training=True),
    "batch_norm_eval": lambda Fm, x: Fm.batch_norm(x.reshape(2, -1), (retrograd if Fm is F else torch).zeros(2),
                                                   (retrograd if Fm is F else torch).ones(2)),
    "instance_norm": lambda Fm, x: Fm.instance_norm(x.reshape(1, 1, -1)),
})


def _outcome(lib, name, a):
    L, Fm = _lib(lib)
    x = L.tensor(a)
    try:
        r = ERR_CALLS[name](Fm, x)
        return ("ok", str(r.dtype), _np(r).tolist())
    except Exception as e:  # noqa: BLE001 - the type and the message are what is compared
        return (type(e).__name__, str(e).split("\n")[0])


@needs_torch
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("name", sorted(ERR_CALLS))
def test_integer_and_bool_inputs_match_torch(name, dtype):
    a = np.array([1, 0, 2, 3]).astype(dtype)
    assert _outcome("rt", name, a) == _outcome("torch", name, a)


def test_elu_on_long_raises_not_implemented():
    with pytest.raises(NotImplementedError, match="\"elu_cpu\" not implemented for 'Long'"):
        F.elu(retrograd.tensor([1, 2]))


def _err(lib, f):
    L, Fm = _lib(lib)
    try:
        r = f(L, Fm)
        vals = _np(r)
        vals = np.round(vals.astype(np.float64), 5).tolist() if vals.dtype.kind == "f" else vals.tolist()
        return ("ok", tuple(r.shape), str(r.dtype), vals if r.numel() < 10 else None)
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__, str(e).split("\n")[0])


def _det(L, *shape):
    """A deterministic non-constant input (the same in both libraries)."""
    n = int(np.prod(shape))
    return L.tensor(np.sin(np.arange(n) * 1.7).reshape(shape), dtype=L.float32)


def _ints(L, *shape):
    """A deterministic int64 input (the same in both libraries)."""
    return L.tensor(np.arange(int(np.prod(shape))).reshape(shape) % 7)


NORM_ERRORS = {
    "gn_groups_not_dividing": lambda L, Fm: Fm.group_norm(_det(L, 2, 4, 3), 3),
    "gn_groups_zero": lambda L, Fm: Fm.group_norm(_det(L, 2, 4, 3), 0),
    "gn_groups_negative": lambda L, Fm: Fm.group_norm(_det(L, 2, 4, 3), -1),
    "gn_weight_size": lambda L, Fm: Fm.group_norm(_det(L, 2, 4, 3), 2, L.ones(3)),
    "gn_bias_size": lambda L, Fm: Fm.group_norm(_det(L, 2, 4, 3), 2, None, L.ones(5)),
    "gn_weight_2d": lambda L, Fm: Fm.group_norm(_det(L, 2, 4, 3), 2, L.ones(2, 2)),
    "gn_1d": lambda L, Fm: Fm.group_norm(_det(L, 4), 2),
    "gn_0d": lambda L, Fm: Fm.group_norm(L.tensor(1.0), 1),
    "gn_one_value_per_group_batch_1": lambda L, Fm: Fm.group_norm(_det(L, 1, 4), 4),
    "gn_one_value_per_group_batch_1_spatial": lambda L, Fm: Fm.group_norm(_det(L, 1, 4, 1), 4),
    "gn_one_value_per_group": lambda L, Fm: Fm.group_norm(_det(L, 2, 4), 4),
    "gn_mixed_dtype": lambda L, Fm: Fm.group_norm(_det(L, 2, 4, 3), 2, L.ones(4, dtype=L.float64)),
    "gn_long_weight": lambda L, Fm: Fm.group_norm(_det(L, 2, 4, 3), 2, L.ones(4, dtype=L.long)),
    "ln_empty_shape": lambda L, Fm: Fm.layer_norm(_det(L, 2, 3), ()),
    "ln_wrong_shape": lambda L, Fm: Fm.layer_norm(_det(L, 2, 3), (2,)),
    "ln_weight_shape": lambda L, Fm: Fm.layer_norm(_det(L, 2, 3), (3,), L.ones(4)),
    "ln_mixed_dtype": lambda L, Fm: Fm.layer_norm(_det(L, 2, 3, dtype=L.float64), (3,), L.ones(3)),
    "bn_one_value": lambda L, Fm: Fm.batch_norm(L.ones(1, 4), L.zeros(4), L.ones(4), training=True),
    "bn_eps_train": lambda L, Fm: Fm.batch_norm(L.ones(2, 4), None, None, training=True, eps=0),
    "bn_eps_eval": lambda L, Fm: Fm.batch_norm(L.ones(2, 4), L.zeros(4), L.ones(4), eps=-1),
    "bn_no_running_mean": lambda L, Fm: Fm.batch_norm(L.ones(2, 4), None, L.ones(4)),
    "bn_no_running_var": lambda L, Fm: Fm.batch_norm(L.ones(2, 4), L.zeros(4), None),
    "bn_weight_size": lambda L, Fm: Fm.batch_norm(L.ones(2, 4), None, None, L.ones(3), training=True),
    "bn_stats_size": lambda L, Fm: Fm.batch_norm(L.ones(2, 4), L.zeros(3), L.ones(4)),
    "bn_mixed_stats": lambda L, Fm: Fm.batch_norm(L.ones(2, 4, dtype=L.float64), L.zeros(4), L.ones(4)),
    "bn_mixed_weight": lambda L, Fm: Fm.batch_norm(L.ones(2, 4), L.zeros(4), L.ones(4), L.ones(4, dtype=L.float64)),
    "bn_1d_weight": lambda L, Fm: Fm.batch_norm(L.ones(4), None, None, L.ones(4), training=True),
    "in_one_spatial": lambda L, Fm: Fm.instance_norm(_det(L, 2, 4, 1)),
    "in_no_stats": lambda L, Fm: Fm.instance_norm(_det(L, 2, 4, 3), use_input_stats=False),
    "in_stats_size": lambda L, Fm: Fm.instance_norm(_det(L, 2, 4, 3), L.zeros(3), L.ones(3)),
    "prelu_mixed": lambda L, Fm: Fm.prelu(L.ones(3, dtype=L.int32), L.tensor([1])),
    "prelu_channels": lambda L, Fm: Fm.prelu(L.ones(2, 3), L.ones(2)),
    "softshrink_negative": lambda L, Fm: Fm.softshrink(L.ones(2), -1.0),
    "softshrink_negative_double": lambda L, Fm: Fm.softshrink(L.ones(2, dtype=L.float64), -0.5),
    "softshrink_huge": lambda L, Fm: Fm.softshrink(L.ones(2), 1e39),
    "celu_zero_alpha": lambda L, Fm: Fm.celu(L.ones(2), 0.0),
    "threshold_int_value_overflow": lambda L, Fm: Fm.threshold(L.tensor([1, 2], dtype=L.int8), 0.5, 1000),
    "threshold_int_truncates": lambda L, Fm: Fm.threshold(L.tensor([-1, 0, 1]), -0.5, 7),
    "threshold_int32_overflow": lambda L, Fm: Fm.threshold(L.tensor([1, 2], dtype=L.int32), 0.5, 1e20),
    "threshold_int64_threshold_overflow": lambda L, Fm: Fm.threshold(L.tensor([1, 2]), 1e30, 1),
    "glu_odd": lambda L, Fm: Fm.glu(L.ones(3), 0),
    "glu_0d": lambda L, Fm: Fm.glu(L.tensor(1.0)),
    "hardtanh_uint8": lambda L, Fm: Fm.hardtanh(L.ones(3, dtype=L.uint8)),
    "gelu_approximate": lambda L, Fm: Fm.gelu(L.ones(3), approximate="fast"),
    "prelu_weight_2d": lambda L, Fm: Fm.prelu(_det(L, 2, 4), L.ones(2, 2)),
    "prelu_zero_dim_input": lambda L, Fm: Fm.prelu(L.tensor(1.0), L.ones(4)),
    "rrelu_bounds": lambda L, Fm: Fm.rrelu(_det(L, 2, 4), 0.5, 0.1, training=True),
    "rrelu_bounds_eval": lambda L, Fm: Fm.rrelu(_det(L, 2, 4), 0.5, 0.1),
    "dropout2d_1d": lambda L, Fm: Fm.dropout2d(L.ones(3), 0.5),
    "dropout2d_1d_p1": lambda L, Fm: Fm.dropout2d(L.ones(3), 1.0),
    "feature_alpha_dropout_1d_p1": lambda L, Fm: Fm.feature_alpha_dropout(L.ones(3), 1.0, True),
    "layer_norm_int_shape": lambda L, Fm: Fm.layer_norm(_det(L, 2, 4), 4),
    "layer_norm_float_shape": lambda L, Fm: Fm.layer_norm(_det(L, 2, 4), (4.0,)),
    "layer_norm_size_shape": lambda L, Fm: Fm.layer_norm(_det(L, 2, 4), _det(L, 2, 4).shape[1:]),
    "rms_norm_int_shape": lambda L, Fm: Fm.rms_norm(_det(L, 2, 4), 4),
    "group_norm_float_groups": lambda L, Fm: Fm.group_norm(_det(L, 2, 4), 2.0),
    "group_norm_bool_groups": lambda L, Fm: Fm.group_norm(_det(L, 2, 4), True),
    "softplus_beta_zero": lambda L, Fm: Fm.softplus(_det(L, 2, 4), 0.0),
    # integer inputs: torch's batch norm computes a strided (neither contiguous nor channels-last)
    # input's training statistics with at::mean, which refuses integers, unless the first given
    # parameter makes the call "mixed"; layer and group norm check mixing before their kernel
    "bn_int_strided": lambda L, Fm: Fm.batch_norm(_ints(L, 4, 3, 2).permute(2, 1, 0), None, None, training=True),
    "bn_int_strided_2d": lambda L, Fm: Fm.batch_norm(_ints(L, 3, 4).t(), None, None, training=True),
    "bn_bool_strided": lambda L, Fm: Fm.batch_norm(_ints(L, 3, 4).t() > 2, None, None, training=True),
    "bn_int32_strided": lambda L, Fm: Fm.batch_norm(_ints(L, 4, 3, 2).permute(2, 1, 0).int(), None, None,
                                                    training=True),
    "bn_int_channels_last": lambda L, Fm: Fm.batch_norm(_ints(L, 2, 2, 4, 3).permute(0, 3, 1, 2), None, None,
                                                        training=True),
    "bn_int_contiguous": lambda L, Fm: Fm.batch_norm(_ints(L, 2, 3, 4), None, None, training=True),
    "bn_int_strided_eval": lambda L, Fm: Fm.batch_norm(_ints(L, 3, 4).t(), L.zeros(3, dtype=L.long),
                                                       L.ones(3, dtype=L.long)),
    "bn_int_strided_int_weight": lambda L, Fm: Fm.batch_norm(_ints(L, 3, 4).t(), None, None, L.ones(3, dtype=L.long),
                                                             L.ones(3), training=True),
    "bn_int_strided_float_weight": lambda L, Fm: Fm.batch_norm(_ints(L, 3, 4).t(), None, None, L.ones(3),
                                                               L.ones(3, dtype=L.long), training=True),
    "bn_int_strided_int_stats": lambda L, Fm: Fm.batch_norm(_ints(L, 3, 4).t(), L.zeros(3, dtype=L.long),
                                                            L.ones(3, dtype=L.long), training=True),
    "bn_int_strided_float_stats": lambda L, Fm: Fm.batch_norm(_ints(L, 3, 4).t(), L.zeros(3), L.ones(3),
                                                              training=True),
    "bn_one_stat_training": lambda L, Fm: Fm.batch_norm(_det(L, 2, 4), L.zeros(4), None, training=True),
    "bn_one_stat_training_int": lambda L, Fm: Fm.batch_norm(_ints(L, 2, 4), None, L.ones(4), training=True),
    "in_one_stat": lambda L, Fm: Fm.instance_norm(_det(L, 2, 4, 3), L.zeros(4), None),
    "in_one_stat_other_dtype": lambda L, Fm: Fm.instance_norm(_det(L, 2, 4, 3), L.zeros(4, dtype=L.float64), None),
    "in_one_stat_other_dtype_weight": lambda L, Fm: Fm.instance_norm(_det(L, 2, 4, 3), L.zeros(4), None,
                                                                     L.ones(4, dtype=L.float64)),
    "in_one_var_other_dtype": lambda L, Fm: Fm.instance_norm(_det(L, 2, 4, 3), None, L.zeros(4, dtype=L.float64)),
    "in_int_strided": lambda L, Fm: Fm.instance_norm(_ints(L, 3, 4, 2).permute(2, 1, 0)),
    "ln_int_float_weight": lambda L, Fm: Fm.layer_norm(_ints(L, 2, 4), (4,), L.ones(4)),
    "ln_int_int_weight": lambda L, Fm: Fm.layer_norm(_ints(L, 2, 4), (4,), L.ones(4, dtype=L.long)),
    "ln_int_strided": lambda L, Fm: Fm.layer_norm(_ints(L, 4, 2).t(), (4,)),
    "gn_int_float_weight": lambda L, Fm: Fm.group_norm(_ints(L, 2, 4, 3), 2, L.ones(4)),
    "gn_int_int_weight": lambda L, Fm: Fm.group_norm(_ints(L, 2, 4, 3), 2, L.ones(4, dtype=L.long)),
    "gn_bool_float_bias": lambda L, Fm: Fm.group_norm(_ints(L, 2, 4, 3) > 3, 2, None, L.ones(4)),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(NORM_ERRORS))
def test_argument_errors_match_torch(case):
    assert _err("rt", NORM_ERRORS[case]) == _err("torch", NORM_ERRORS[case])


# --- degenerate statistics: zero variance, one value per group ------------------------------

def _norm_derivs(lib, f, a, wn, dtype="float64"):
    L, Fm = _lib(lib)
    rng = np.random.default_rng(3)
    x = _t(lib, a, dtype, True)
    ins = [x]
    if wn:
        ins += [_t(lib, np.linspace(0.5, 1.5, wn), dtype, True), _t(lib, np.linspace(-0.2, 0.3, wn), dtype, True)]
    y = f(L, Fm, *ins)
    g = _t(lib, rng.standard_normal(y.shape), dtype, True)
    grads = L.autograd.grad(y, ins, g, create_graph=True)
    s = sum((gi * _t(lib, rng.standard_normal(gi.shape), dtype)).sum() for gi in grads)
    second = L.autograd.grad(s, ins + [g], allow_unused=True)
    return [_np(y)] + [_np(t) for t in grads] + [_np(t) for t in second]


NORMS = {
    "layer_norm": (lambda L, Fm, x, w=None, b=None: Fm.layer_norm(x, x.shape[-1:], w, b), "last"),
    "layer_norm_2": (lambda L, Fm, x: Fm.layer_norm(x, x.shape[-2:]), None),
    "group_norm_1": (lambda L, Fm, x, w=None, b=None: Fm.group_norm(x, 1, w, b), "ch"),
    "group_norm_2": (lambda L, Fm, x, w=None, b=None: Fm.group_norm(x, 2, w, b), "ch"),
    "group_norm_C": (lambda L, Fm, x, w=None, b=None: Fm.group_norm(x, x.shape[1], w, b), "ch"),
    "batch_norm": (lambda L, Fm, x, w=None, b=None: Fm.batch_norm(x, None, None, w, b, training=True), "ch"),
    "batch_norm_eval": (lambda L, Fm, x, w=None, b=None: Fm.batch_norm(
        x, L.zeros(x.shape[1], dtype=x.dtype), L.ones(x.shape[1], dtype=x.dtype) * 2, w, b), "ch"),
    "instance_norm": (lambda L, Fm, x, w=None, b=None: Fm.instance_norm(x, weight=w, bias=b), "ch"),
}

_rs = np.random.default_rng(0)
DEGENERATE = {
    "constant": np.full((2, 4, 3), 1.5),
    "constant_group": np.concatenate([np.full((2, 2, 3), 0.7), _rs.standard_normal((2, 2, 3))], 1),
    "one_value_per_group": _rs.standard_normal((2, 4, 1)),
    "random": _rs.standard_normal((2, 4, 3)),
}


def _n_params(kind, a):
    return {"last": a.shape[-1], "ch": a.shape[1], None: 0}[kind]


@needs_torch
@pytest.mark.parametrize("sample", sorted(DEGENERATE))
@pytest.mark.parametrize("name", sorted(NORMS))
def test_degenerate_statistics_match_torch(name, sample):
    """Zero variance gives rstd = 1/sqrt(eps) in torch: finite values, first and second
    derivatives (float64; in float32 torch's own group_norm second derivative there is
    rounding noise around the exact 0)."""
    f, kind = NORMS[name]
    a = DEGENERATE[sample]
    if name == "instance_norm" and sample == "one_value_per_group":
        pytest.skip("instance_norm refuses one spatial element (tested with the errors)")
    r = _norm_derivs("rt", f, a, _n_params(kind, a))
    t = _norm_derivs("torch", f, a, _n_params(kind, a))
    assert len(r) == len(t)
    for k, (u, v) in enumerate(zip(r, t)):
        assert (u is None) == (v is None), k
        if u is not None:
            np.testing.assert_allclose(u, v, rtol=1e-7, atol=1e-7, err_msg=f"output {k}")


@pytest.mark.parametrize("sample", ["constant", "constant_group", "random"])
@pytest.mark.parametrize("name", sorted(NORMS))
def test_norm_gradcheck_float64(name, sample):
    f, kind = NORMS[name]
    a = DEGENERATE[sample]
    n = _n_params(kind, a)
    ins = [retrograd.tensor(a, dtype=retrograd.float64, requires_grad=True)]
    if n:
        ins += [retrograd.tensor(np.linspace(0.5, 1.5, n), dtype=retrograd.float64, requires_grad=True),
                retrograd.tensor(np.linspace(-0.2, 0.3, n), dtype=retrograd.float64, requires_grad=True)]
    fn = (lambda *t: f(retrograd, F, *t))
    # zero variance: the curvature is of order rstd^3 = eps^-1.5, so scale the tolerance
    atol = 1e-5 if sample == "random" else 1e-1
    assert gradcheck(fn, tuple(ins), atol=atol, rtol=1e-3)
    assert gradgradcheck(fn, tuple(ins), atol=atol, rtol=1e-3)


def _nonfinite_norm_case(seed):
    """(x, weight, upstream) of shape (2, 4, 3) with inf/nan/0 planted in one of them."""
    rng = np.random.default_rng(seed)
    x, w, g = rng.standard_normal((2, 4, 3)), rng.standard_normal(4), rng.standard_normal((2, 4, 3))
    target = (x, w, g)[seed % 3]
    flat = target.reshape(-1)
    for v in rng.choice([np.inf, -np.inf, np.nan, 0.0], size=1 + seed % 2):
        flat[rng.integers(flat.size)] = v
    return x, w, g


NONFINITE_NORMS = {
    "layer_norm": lambda Fm, x, w: Fm.layer_norm(x.transpose(1, 2), (4,), w),
    "layer_norm_noweight": lambda Fm, x, w: Fm.layer_norm(x, (4, 3)),
    "group_norm": lambda Fm, x, w: Fm.group_norm(x, 2, w),
    "group_norm_noweight": lambda Fm, x, w: Fm.group_norm(x, 1),
}


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("name", sorted(NONFINITE_NORMS))
def test_norm_gradient_with_non_finite_values_follows_torch(name, seed, dtype):
    """PyTorch's layer/group norm backward is dx = rstd*w*g + b*x + c (b, c from the row's
    sums of w*g and w*g*x): one inf/nan among x, weight or upstream spreads through the row
    (group) as nan exactly where that formula puts it."""
    x, w, g = _nonfinite_norm_case(seed)
    out = {}
    for lib in ("rt", "torch"):
        L, Fm = _lib(lib)
        xt, wt = _t(lib, x, dtype, True), _t(lib, w, dtype, True)
        y = NONFINITE_NORMS[name](Fm, xt, wt)
        out[lib] = [_np(t) for t in L.autograd.grad(y, (xt, wt), _t(lib, g, dtype).reshape(y.shape),
                                                    allow_unused=True)]
    for u, v in zip(out["rt"], out["torch"]):
        if v is None:
            assert u is None or not np.any(u)
            continue
        tol = 1e-9 if dtype == "float64" else 1e-4
        np.testing.assert_allclose(u, v, rtol=tol, atol=tol)


def test_layer_norm_gradcheck_float64_wide_rows():
    x = retrograd.tensor(np.random.default_rng(5).standard_normal((3, 5)) * 3 + 2, requires_grad=True)
    w = retrograd.tensor(np.linspace(0.5, 1.5, 5), requires_grad=True)
    assert gradcheck(lambda x, w: F.layer_norm(x, (5,), w), (x, w))
    assert gradgradcheck(lambda x, w: F.layer_norm(x, (5,), w), (x, w))


def test_group_norm_constant_group_is_finite_and_zero():
    x = retrograd.tensor(np.full((1, 2, 3), 4.0), dtype=retrograd.float64, requires_grad=True)
    w = retrograd.tensor([2.0, 3.0], dtype=retrograd.float64, requires_grad=True)
    b = retrograd.tensor([0.5, -0.5], dtype=retrograd.float64, requires_grad=True)
    y = F.group_norm(x, 1, w, b)
    np.testing.assert_array_equal(y.detach().numpy(), np.broadcast_to([[[0.5], [-0.5]]], (1, 2, 3)))
    gx, gw, gb = retrograd.autograd.grad(y.sum() + (y * y).sum(), (x, w, b), create_graph=True)
    assert np.all(np.isfinite(gx.detach().numpy())) and gx.requires_grad
    np.testing.assert_array_equal(gw.detach().numpy(), [0.0, 0.0])   # xhat is 0
    (ggx,) = retrograd.autograd.grad((gx * gx).sum(), x)
    assert np.all(np.isfinite(ggx.numpy()))


def _third_by_finite_differences(f, a, wn):
    rng = np.random.default_rng(0)
    W, B = rng.random(wn), rng.standard_normal(wn)
    G, V, U = rng.standard_normal(a.shape), rng.standard_normal(a.shape), rng.standard_normal(a.shape)
    T = (lambda v, rg=False: retrograd.tensor(v, dtype=retrograd.float64, requires_grad=rg))

    def second(xa, create):
        x, w, b = T(xa, True), T(W, True), T(B, True)
        (gx,) = retrograd.autograd.grad(f(retrograd, F, x, w, b), x, T(G), create_graph=True)
        (r,) = retrograd.autograd.grad((gx * T(V)).sum(), x, create_graph=create)
        return x, r

    x, r = second(a, True)
    (third,) = retrograd.autograd.grad((r * T(U)).sum(), x)
    h, fd = 1e-6, np.zeros_like(a)
    for i in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[i] = h
        fd[i] = ((second(a + e, False)[1].numpy() - second(a - e, False)[1].numpy()) * U).sum() / (2 * h)
    return third.numpy(), fd


@pytest.mark.parametrize("name", ["layer_norm", "batch_norm", "group_norm_1"])
def test_third_derivative_is_exact(name):
    """The second derivatives are differentiable again, exactly (torch 2.13's third
    derivatives of layer_norm and batch_norm are not: they treat the saved statistics as
    constants, so they are excluded from comparison)."""
    f, kind = NORMS[name]
    a = np.random.default_rng(1).standard_normal((3, 2))
    third, fd = _third_by_finite_differences(f, a, a.shape[1])
    np.testing.assert_allclose(third, fd, rtol=1e-5, atol=1e-7)


# --- zero-size inputs ------------------------------------------------------------------

EMPTY = {
    "layer_norm_rows": ("layer_norm", np.zeros((0, 4, 3))), "layer_norm_cols": ("layer_norm", np.zeros((2, 4, 0))),
    "layer_norm_2": ("layer_norm_2", np.zeros((2, 0, 3))),
    "group_norm_batch": ("group_norm_2", np.zeros((0, 4, 3))), "group_norm_spatial": ("group_norm_2", np.zeros((2, 4, 0))),
    "batch_norm_batch": ("batch_norm", np.zeros((0, 4, 3))), "batch_norm_spatial": ("batch_norm", np.zeros((2, 4, 0))),
    "batch_norm_eval": ("batch_norm_eval", np.zeros((0, 4, 3))),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(EMPTY))
def test_empty_norms_match_torch(case):
    name, a = EMPTY[case]
    f, kind = NORMS[name]
    n = _n_params(kind, a)
    r, t = _norm_derivs("rt", f, a, n), _norm_derivs("torch", f, a, n)
    for k, (u, v) in enumerate(zip(r, t)):
        if case == "group_norm_spatial" and k == 5:
            continue  # torch's second derivative w.r.t. the weight of an empty group: NaN from its formula
        assert (u is None) == (v is None), k
        if u is not None:
            np.testing.assert_allclose(u, v, err_msg=f"output {k}")


@needs_torch
def test_empty_batch_norm_is_torch_clone_path():
    for lib in ("rt", "torch"):
        L, Fm = _lib(lib)
        x = L.zeros(0, 3, requires_grad=True)
        w = L.ones(3, requires_grad=True)
        rm = L.zeros(3)
        y = Fm.batch_norm(x, rm, L.ones(3), w, None, training=True)
        assert type(y.grad_fn).__name__ == "MulBackward0"
        assert rm.tolist() == [0.0, 0.0, 0.0]    # no running-average update


@needs_torch
@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("shape,dim", [((0, 3), 0), ((0, 3), 1), ((2, 0), 1), ((2, 0), 0)])
def test_empty_softmax_backward_matches_torch(fn, shape, dim):
    res = []
    for lib in ("rt", "torch"):
        L, Fm = _lib(lib)
        x = L.zeros(shape, dtype=L.float64, requires_grad=True)
        y = getattr(Fm, fn)(x, dim)
        (g,) = L.autograd.grad(y, x, L.ones(shape, dtype=L.float64, requires_grad=True), create_graph=True)
        (gg,) = L.autograd.grad(g.sum(), x, allow_unused=True)
        res.append((tuple(y.shape), tuple(g.shape), None if gg is None else tuple(gg.shape)))
    assert res[0] == res[1]


# --- the rest of the input space, against torch --------------------------------------------

@needs_torch
@pytest.mark.parametrize("name", sorted(ACTS))
def test_non_contiguous_and_float32(name):
    a = np.random.default_rng(2).standard_normal((4, 3)) * 3
    for dtype in ("float64", "float32"):
        outs = []
        for lib in ("rt", "torch"):
            L, Fm = _lib(lib)
            base = _t(lib, a, dtype, True)
            y = ACTS[name](Fm, base.t()[:, ::2])
            (g,) = L.autograd.grad(y, base, _t(lib, np.ones(y.shape), dtype))
            outs.append((str(y.dtype), _np(y), _np(g)))
        assert outs[0][0] == outs[1][0]
        tol = 1e-10 if dtype == "float64" else 1e-5
        np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=tol, atol=tol)
        np.testing.assert_allclose(outs[0][2], outs[1][2], rtol=tol, atol=tol)


@needs_torch
@pytest.mark.parametrize("shape,wshape", [((2, 3, 4), (3,)), ((2, 3), (3,)), ((2, 3), (1,)), ((), (1,))])
def test_prelu_second_order_with_weight_matches_torch(shape, wshape):
    rng = np.random.default_rng(4)
    a = rng.standard_normal(shape)
    a.reshape(-1)[:1] = 0.0                        # the kink: x > 0 first order, x >= 0 second
    wa = rng.standard_normal(wshape)
    res = []
    for lib in ("rt", "torch"):
        L, Fm = _lib(lib)
        x, w = _t(lib, a, requires_grad=True), _t(lib, wa, requires_grad=True)
        y = Fm.prelu(x, w)
        g = _t(lib, np.random.default_rng(5).standard_normal(y.shape), requires_grad=True)
        gx, gw = L.autograd.grad(y, (x, w), g, create_graph=True)
        s = (gx * _t(lib, np.cos(a))).sum() + (gw * 0.7).sum()
        second = L.autograd.grad(s, (x, w, g), allow_unused=True)
        res.append([_np(gx), _np(gw)] + [_np(t) for t in second])
    for u, v in zip(*res):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_glu_second_order_matches_torch(dim):
    a = np.random.default_rng(6).standard_normal((4, 2, 6))
    res = []
    for lib in ("rt", "torch"):
        L, Fm = _lib(lib)
        x = _t(lib, a, requires_grad=True)
        y = Fm.glu(x, dim)
        g = _t(lib, np.random.default_rng(7).standard_normal(y.shape), requires_grad=True)
        (gx,) = L.autograd.grad(y, x, g, create_graph=True)
        second = L.autograd.grad((gx * _t(lib, np.sin(a))).sum(), (x, g))
        res.append([type(gx.grad_fn).__name__, _np(gx)] + [_np(t) for t in second])
    assert res[0][0] == res[1][0]
    for u, v in zip(res[0][1:], res[1][1:]):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)


def test_glu_gradgradcheck():
    x = retrograd.tensor(np.random.default_rng(8).standard_normal((2, 4)), dtype=retrograd.float64,
                         requires_grad=True)
    assert gradcheck(lambda t: F.glu(t, 1), (x,))
    assert gradgradcheck(lambda t: F.glu(t, 1), (x,))


# --- rms_norm and alpha dropout ------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("shape,ns", [((2, 3), (3,)), ((2, 3, 4), (3, 4)), ((4,), (4,)), ((0, 3), (3,))])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("zero", [False, True])
def test_rms_norm_matches_torch(shape, ns, affine, zero):
    a = np.zeros(shape) if zero else np.random.default_rng(9).standard_normal(shape)
    res = []
    for lib in ("rt", "torch"):
        L, Fm = _lib(lib)
        x = _t(lib, a, requires_grad=True)
        ins = [x] + ([_t(lib, np.linspace(0.5, 1.5, int(np.prod(ns))).reshape(ns), requires_grad=True)]
                     if affine else [])
        y = Fm.rms_norm(x, ns, ins[1] if affine else None)
        g = _t(lib, np.random.default_rng(10).standard_normal(y.shape), requires_grad=True)
        grads = L.autograd.grad(y, ins, g, create_graph=True)
        second = L.autograd.grad(sum((gi * gi).sum() for gi in grads), ins + [g], allow_unused=True)
        res.append([type(y.grad_fn).__name__, _np(y)] + [_np(t) for t in grads] + [_np(t) for t in second])
    assert res[0][0] == res[1][0]
    for u, v in zip(res[0][1:], res[1][1:]):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)


def test_rms_norm_gradcheck():
    x = retrograd.tensor(np.random.default_rng(11).standard_normal((3, 4)), dtype=retrograd.float64,
                         requires_grad=True)
    w = retrograd.tensor(np.linspace(0.5, 1.5, 4), dtype=retrograd.float64, requires_grad=True)
    assert gradcheck(lambda a, b: F.rms_norm(a, (4,), b), (x, w))
    assert gradgradcheck(lambda a, b: F.rms_norm(a, (4,), b), (x, w))


@needs_torch
@pytest.mark.parametrize("case", [
    lambda L, Fm: Fm.rms_norm(L.ones(2, 3), (2,)), lambda L, Fm: Fm.rms_norm(L.ones(2, 3), ()),
    lambda L, Fm: Fm.rms_norm(L.ones(2, 3), (3,), L.ones(2)), lambda L, Fm: Fm.rms_norm(L.ones(2, 3), (3, 1)),
    lambda L, Fm: Fm.rms_norm(L.ones(2, 3, dtype=L.long), (3,)), lambda L, Fm: Fm.rms_norm(L.ones(2, 3), (3,), eps=0.5),
    lambda L, Fm: Fm.feature_alpha_dropout(L.ones(3), 0.5, True), lambda L, Fm: Fm.alpha_dropout(L.ones(3), 1.5, True),
    lambda L, Fm: Fm.alpha_dropout(L.ones(3), 1.0, True), lambda L, Fm: Fm.alpha_dropout(L.ones(3), 0.5, False)])
def test_rms_norm_and_alpha_dropout_arguments_match_torch(case):
    assert _err("rt", case) == _err("torch", case)


@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_keeps_mean_and_variance(feature):
    retrograd.manual_seed(0)
    x = retrograd.randn(4, 3000, 2, dtype=retrograd.float64, requires_grad=True)
    y = (F.feature_alpha_dropout if feature else F.alpha_dropout)(x, 0.3, True)
    assert abs(y.mean().item()) < 0.05 and abs(y.std().item() - 1) < 0.05
    yd = y.detach().numpy()
    kept = np.isclose(yd, x.detach().numpy() * (1.0 / np.sqrt((1.7580993408473766 ** 2 * 0.3 + 1) * 0.7)) +
                      1.7580993408473766 * 0.3 / np.sqrt((1.7580993408473766 ** 2 * 0.3 + 1) * 0.7))
    assert 0.6 < kept.mean() < 0.8
    if feature:   # whole channels share the decision
        assert np.all(kept[..., 0] == kept[..., 1])
    (g,) = retrograd.autograd.grad(y.sum(), x)
    assert set(np.unique(np.round(g.numpy(), 12))) <= {0.0, round(1.0 / np.sqrt((1.7580993408473766 ** 2 * 0.3 + 1)
                                                                                 * 0.7), 12)}


@needs_torch
@pytest.mark.parametrize("v", [np.nan, np.inf, -np.inf, 0.3])
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_zero_dim_softmax_of_non_finite_matches_torch(name, v):
    """A 0-d input is one element along its dim: exp(x - max) is NaN for +-inf and NaN."""
    _assert_same(_derivs("rt", name, v), _derivs("torch", name, v))


@needs_torch
def test_running_statistics_and_partial_affine_match_torch():
    """Running-average updates (batch_norm, instance_norm with and without input statistics:
    values, and no version bump, as torch's kernel) and weight-only / bias-only affines."""
    rs = np.random.default_rng(12)
    X, W, B = rs.standard_normal((2, 3, 4)), rs.random(3) + 0.5, rs.standard_normal(3)
    RM, RV = rs.standard_normal(3), rs.random(3) + 0.5
    res = []
    for lib in ("rt", "torch"):
        L, Fm = _lib(lib)
        out = []
        x, w, b = _t(lib, X, requires_grad=True), _t(lib, W, requires_grad=True), _t(lib, B, requires_grad=True)
        for y, ins in ((Fm.layer_norm(x, (4,), None, _t(lib, B[:1].repeat(4), requires_grad=False)), (x,)),
                       (Fm.group_norm(x, 3, w), (x, w)),
                       (Fm.batch_norm(x, None, None, w, training=True), (x, w)),
                       (Fm.batch_norm(x, _t(lib, np.zeros(3)), _t(lib, np.full(3, 3.0)), None, b), (x, b))):
            gs = L.autograd.grad(y, ins, _t(lib, np.cos(np.arange(y.numel())).reshape(tuple(y.shape))))
            out += [_np(y)] + [_np(g) for g in gs]
        for uis in (True, False):
            rm, rv = _t(lib, RM), _t(lib, RV)
            y = Fm.instance_norm(x, rm, rv, w, b, use_input_stats=uis, momentum=0.2)
            out += [_np(y), _np(rm), _np(rv), np.array([rm._version, rv._version])]
        rm, rv = _t(lib, np.zeros(3)), _t(lib, np.ones(3))
        for shape in ((2, 3, 4), (2, 3)):
            Fm.batch_norm(_t(lib, np.sin(np.arange(np.prod(shape))).reshape(shape)), rm, rv, training=True,
                          momentum=0.3)
        out += [_np(rm), _np(rv), np.array([rm._version, rv._version])]
        res.append(out)
    for k, (u, v) in enumerate(zip(*res)):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12, err_msg=f"item {k}")


@needs_torch
@pytest.mark.parametrize("call", [lambda Fm, x: Fm.dropout(x, 0.5), lambda Fm, x: Fm.dropout2d(x, 0.5),
                                  lambda Fm, x: Fm.alpha_dropout(x, 0.5, True)])
def test_dropout_of_empty_input_is_the_input(call):
    for lib in ("rt", "torch"):
        L, Fm = _lib(lib)
        x = L.zeros(0, 3, 2)
        assert call(Fm, x) is x


@needs_torch
@pytest.mark.parametrize("layout", ["contig", "noncontig"])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_non_finite_weights_follow_torch_per_layout(layout, training):
    """torch's kernel is x * (invstd*w) + (b - mean*invstd*w) for contiguous input and
    ((x - mean) * invstd) * w + b for strided input: inf weights give NaN or inf accordingly."""
    a = np.sin(np.arange(24.0)).reshape(4, 3, 2)
    outs = []
    for lib in ("rt", "torch"):
        L, Fm = _lib(lib)
        x = _t(lib, np.ascontiguousarray(a.transpose(2, 1, 0))).permute(2, 1, 0) if layout == "noncontig" \
            else _t(lib, a)
        w, b = _t(lib, [1.1, np.inf, -np.inf]), _t(lib, [1.9, 0.7, 0.6])
        stats = (None, None) if training else (_t(lib, np.zeros(3)), _t(lib, np.ones(3)))
        outs.append(_np(Fm.batch_norm(x, *stats, w, b, training=training)))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12, equal_nan=True)


# --- softshrink / hardshrink / hardtanh at NaN: torch's answer depends on SIMD lanes -------------

def _shrink_derivs(lib, name, x, up, d):
    L, Fm = _lib(lib)
    X, U = _t(lib, x, requires_grad=True), _t(lib, up, requires_grad=True)
    y = getattr(Fm, name)(X)
    (g,) = L.autograd.grad(y, X, U, create_graph=True)
    gx, gu = L.autograd.grad((g * _t(lib, d)).sum(), (X, U), allow_unused=True)
    return _np(g), _np(gx), _np(gu)


@needs_torch
@pytest.mark.parametrize("name", ["softshrink", "hardshrink", "hardtanh"])
def test_shrink_derivatives_at_nan_follow_torch_scalar_path(name):
    """torch 2.13's backward of these at a NaN input passes the upstream gradient in its scalar
    loop (inputs shorter than one SIMD vector, as here) and gives 0 in its vectorized body (the
    KNOWN_MISMATCHES 'nonfinite' entries of the fuzzer); retrograd follows the scalar rule
    everywhere, first and second order."""
    x = [math.nan, math.inf, -math.inf]
    up, d = [0.7, -1.1, 0.4], [1.3, 0.2, -0.9]
    r, t = _shrink_derivs("rt", name, x, up, d), _shrink_derivs("torch", name, x, up, d)
    for u, v in zip(r, t):
        np.testing.assert_array_equal(u if u is not None else 0, v if v is not None else 0)
    # the vectorized body (a longer input) gives 0 at the same NaN: torch disagrees with itself
    long_x = np.concatenate([x, np.linspace(-2, 2, 29)])
    long_up, long_d = np.linspace(0.5, 1.5, 32), np.ones(32)
    tl = _shrink_derivs("torch", name, long_x, long_up, long_d)
    rl = _shrink_derivs("rt", name, long_x, long_up, long_d)
    assert tl[0][0] == 0 and rl[0][0] == long_up[0]
    np.testing.assert_array_equal(rl[0][3:], tl[0][3:])


@pytest.mark.parametrize("name", ["softshrink", "hardshrink"])
def test_shrink_gradgradcheck(name):
    x = retrograd.tensor([1.3, -0.2, -2.1, 0.9], dtype=retrograd.float64, requires_grad=True)
    fn = getattr(F, name)
    assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))


@needs_torch
@pytest.mark.parametrize("call", [lambda Fm, x: Fm.elu(x), lambda Fm, x: Fm.elu(x, -1.0), lambda Fm, x: Fm.celu(x, 0.5),
                                  lambda Fm, x: Fm.selu(x), lambda Fm, x: Fm.elu(x * 1, inplace=True)])
def test_elu_family_keeps_the_sign_of_zero(call):
    """elu(-0.0) is -0.0 in torch for any alpha (zeros take the linear branch): 1/elu(x) and
    log(elu(x)) depend on it; the gradient of log(elu(x)) at -0.0 is -inf."""
    vals = [-0.0, 0.0, -1e-300, -2.0, 3.0]
    out = {}
    for lib in ("rt", "torch"):
        L, Fm = _lib(lib)
        x = _t(lib, vals, requires_grad=True)
        y = call(Fm, x)
        (g,) = L.autograd.grad(y.log().sum(), x)
        out[lib] = (_np(y), _np(g))
    for a, b in zip(out["rt"], out["torch"]):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(np.signbit(a), np.signbit(b))


@needs_torch
@pytest.mark.parametrize("c", [1.5, 0.7, 2.0])
def test_layer_norm_weight_gradient_at_a_constant_row(c):
    """At a constant row whose mean is exact the normalized value is exactly 0 here; torch's
    kernel leaves a rounding residual of its fma (|x_hat| < 1e-15), so under a finite upstream gradient the
    weight gradients agree to 1e-14, and under an inf one torch gives +-inf (the residual's
    sign) where retrograd gives inf * 0 = nan (KNOWN_MISMATCHES 'F.layer_norm' infgrad)."""
    grads = {}
    for lib in ("rt", "torch"):
        L, Fm = _lib(lib)
        x, w = _t(lib, np.full((1, 3), c), requires_grad=True), _t(lib, np.ones(3), requires_grad=True)
        y = Fm.layer_norm(x, (3,), w, eps=0.1)
        (gw,) = L.autograd.grad(y, w, _t(lib, [[0.5, -2.0, 1.0]]))
        grads[lib] = _np(gw)
    np.testing.assert_allclose(grads["rt"], 0.0, atol=1e-14)
    np.testing.assert_allclose(grads["torch"], 0.0, atol=1e-14)
    if c * 3 / 3 != c:
        return   # the mean itself is rounded: x - mean is a residual here too
    x = retrograd.tensor(np.full((1, 3), c), requires_grad=True)
    w = retrograd.ones(3, dtype=retrograd.float64, requires_grad=True)
    (gw,) = retrograd.autograd.grad(F.layer_norm(x, (3,), w, eps=0.1), w, retrograd.tensor([[math.inf, 1.0, 1.0]]))
    assert np.isnan(gw.numpy()[0]) and gw.numpy()[1] == 0.0
