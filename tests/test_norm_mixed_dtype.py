"""Normalization layers on float16/bfloat16 inputs: with float32 weight/bias (PyTorch's
mixed-dtype CPU kernels) and with 16-bit ones, computed in float32 and rounded once to the
input's dtype, bit for bit with PyTorch; gradients of each input's own dtype."""
import warnings

import numpy as np
import pytest

import retrograd
from helpers import needs_torch, torch

pytest.importorskip("ml_dtypes")

NORMS = ["layer_norm", "group_norm", "batch_norm_train", "batch_norm_eval", "instance_norm", "rms_norm"]


def _run(lib, name, dtn, wdt, grad=True):
    F = lib.nn.functional
    dt = getattr(lib, dtn)
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((4, 6, 5)).astype(np.float32)
    g0 = rng.standard_normal((4, 6, 5)).astype(np.float32)
    n = 5 if name in ("layer_norm", "rms_norm") else 6
    pdt = getattr(lib, wdt) if wdt else dt
    x = lib.tensor(x0).to(dt).requires_grad_(grad)
    w = lib.tensor(np.linspace(0.5, 1.5, n).astype(np.float32)).to(pdt).requires_grad_(grad)
    b = lib.tensor(np.linspace(-1, 1, n).astype(np.float32)).to(pdt).requires_grad_(grad)
    rm, rv = lib.zeros(6, dtype=pdt), lib.ones(6, dtype=pdt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # torch's rms_norm warns that it cannot fuse mixed dtypes
        y = {"layer_norm": lambda: F.layer_norm(x, (5,), w, b),
             "group_norm": lambda: F.group_norm(x, 3, w, b),
             "batch_norm_train": lambda: F.batch_norm(x, rm, rv, w, b, training=True),
             "batch_norm_eval": lambda: F.batch_norm(x, rm + 0.25, rv * 2, w, b, training=False),
             "instance_norm": lambda: F.instance_norm(x, rm, rv, w, b, use_input_stats=True),
             "rms_norm": lambda: F.rms_norm(x, (5,), w)}[name]()
    out = {"y": y.detach().float().numpy(), "dtype": str(y.dtype), "rm": rm.float().numpy(), "rm_dtype": str(rm.dtype)}
    if grad:
        y.backward(lib.tensor(g0).to(dt))
        out.update(gx=x.grad.float().numpy(), gx_dtype=str(x.grad.dtype), gw=w.grad.float().numpy(),
                   gw_dtype=str(w.grad.dtype))
        if name != "rms_norm":
            out.update(gb=b.grad.float().numpy())
    return out


@needs_torch
@pytest.mark.parametrize("wdt", ["float32", None], ids=["mixed", "same"])
@pytest.mark.parametrize("dtn", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", NORMS)
def test_16_bit_norms_match_torch(name, dtn, wdt):
    if dtn == "bfloat16" and wdt is None and name in ("batch_norm_train", "instance_norm"):
        pytest.xfail("bfloat16 batch norm with bfloat16 parameters: PyTorch's saved invstd differs from "
                     "round(1/sqrt(var + eps)) by 1 ulp on a few channels (its variance algorithm is not reproduced), "
                     "which moves those channels' outputs by a few ulps")
    ours, theirs = _run(retrograd, name, dtn, wdt), _run(torch, name, dtn, wdt)
    for k in ("dtype", "rm_dtype", "gx_dtype", "gw_dtype"):
        assert ours[k] == theirs[k], k
    np.testing.assert_array_equal(ours["y"], theirs["y"])       # forward: bit for bit
    np.testing.assert_array_equal(ours["rm"], theirs["rm"])
    # backward: float32 arithmetic, PyTorch's own summation order not reproduced
    # (its layer-norm weight/bias sums round partial sums to the 16-bit type)
    tol = 2e-2 if dtn == "bfloat16" else 2e-3
    for k in ("gx", "gw", "gb"):
        if k in theirs:
            np.testing.assert_allclose(ours[k], theirs[k], rtol=tol, atol=tol * np.abs(theirs[k]).max())


def test_mixed_dtype_norm_result_dtypes_without_torch():
    for name in NORMS:
        r = _run(retrograd, name, "bfloat16", "float32")
        assert r["dtype"] == "torch.bfloat16" and r["gx_dtype"] == "torch.bfloat16" and r["gw_dtype"] == "torch.float32"
        assert r["rm_dtype"] == "torch.float32"


@needs_torch
@pytest.mark.parametrize("xdt,wdt", [("float16", "float64"), ("float32", "float16"), ("float64", "float32"),
                                     ("bfloat16", "float16")])
def test_other_mixed_dtypes_raise_torchs_error(xdt, wdt):
    msgs = []
    for lib in (retrograd, torch):
        x = lib.ones(2, 3, 4, dtype=getattr(lib, xdt))
        w = lib.ones(4, dtype=getattr(lib, wdt))
        with pytest.raises(RuntimeError) as info:
            lib.nn.functional.layer_norm(x, (4,), w, w)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_half_layer_norm_gradcheck_in_float64():
    # the float32 path the 16-bit inputs take is the same formula: check it differentiates
    x = retrograd.randn(3, 4, dtype=retrograd.float64, requires_grad=True)
    w = retrograd.randn(4, dtype=retrograd.float64, requires_grad=True)
    b = retrograd.randn(4, dtype=retrograd.float64, requires_grad=True)
    assert retrograd.autograd.gradcheck(lambda x, w, b: retrograd.nn.functional.layer_norm(x, (4,), w, b), (x, w, b))
    assert retrograd.autograd.gradcheck(lambda x, w: retrograd.nn.functional.rms_norm(x, (4,), w), (x, w))
