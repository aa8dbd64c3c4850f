"""Complex inputs to the ops PyTorch does not define on them raise PyTorch's exception with
its wording; the conjugate bit is observable as in PyTorch."""
import numpy as np
import pytest

import retrograd
from helpers import needs_torch, torch

CASES = {
    "max()": lambda t, z, r: z.max(), "max(0)": lambda t, z, r: z.max(0), "min(1)": lambda t, z, r: t.min(z, 1),
    "max(z, z)": lambda t, z, r: t.max(z, z), "amax(0)": lambda t, z, r: z.amax(0), "amin()": lambda t, z, r: z.amin(),
    "argmax(0)": lambda t, z, r: z.argmax(0), "argmin": lambda t, z, r: z.argmin(),
    "sort": lambda t, z, r: z.sort(0), "argsort": lambda t, z, r: z.argsort(), "msort": lambda t, z, r: t.msort(z),
    "topk": lambda t, z, r: z.topk(1), "kthvalue": lambda t, z, r: z.kthvalue(1, 0),
    "median()": lambda t, z, r: z.median(), "median(0)": lambda t, z, r: z.median(0),
    "cummax": lambda t, z, r: z.cummax(0), "cummin": lambda t, z, r: z.cummin(1),
    "aminmax": lambda t, z, r: z.aminmax(), "frac": lambda t, z, r: z.frac(),
    "remainder": lambda t, z, r: z % 2, "rremainder": lambda t, z, r: r % z, "fmod": lambda t, z, r: z.fmod(2),
    "floor_divide": lambda t, z, r: z // 2, "atan2": lambda t, z, r: z.atan2(r), "hypot": lambda t, z, r: r.hypot(z),
    "erf": lambda t, z, r: z.erf(), "erfc": lambda t, z, r: z.erfc(), "erfinv": lambda t, z, r: z.erfinv(),
    "copysign": lambda t, z, r: z.copysign(r), "signbit": lambda t, z, r: z.signbit(),
    "isposinf": lambda t, z, r: z.isposinf(), "isneginf": lambda t, z, r: z.isneginf(),
    "softmax(-1)": lambda t, z, r: z.softmax(-1), "softmax(0)": lambda t, z, r: z.softmax(0),
    "log_softmax(-1)": lambda t, z, r: z.log_softmax(-1), "log_softmax(0)": lambda t, z, r: z.log_softmax(0),
    "gelu": lambda t, z, r: t.nn.functional.gelu(z), "hardtanh": lambda t, z, r: t.nn.functional.hardtanh(z),
    "relu6": lambda t, z, r: t.nn.functional.relu6(z), "leaky_relu": lambda t, z, r: t.nn.functional.leaky_relu(z),
    "threshold": lambda t, z, r: t.nn.functional.threshold(z, 0., 0.), "elu": lambda t, z, r: t.nn.functional.elu(z),
    "softplus": lambda t, z, r: t.nn.functional.softplus(z), "hardswish": lambda t, z, r: t.nn.functional.hardswish(z),
    "mish": lambda t, z, r: t.nn.functional.mish(z), "hardsigmoid": lambda t, z, r: t.nn.functional.hardsigmoid(z),
    "hardshrink": lambda t, z, r: t.nn.functional.hardshrink(z), "softshrink": lambda t, z, r: t.nn.functional.softshrink(z),
    "logsigmoid": lambda t, z, r: t.nn.functional.logsigmoid(z), "xlogy": lambda t, z, r: z.xlogy(r),
    "logaddexp2": lambda t, z, r: z.logaddexp2(z), "mse_loss": lambda t, z, r: t.nn.functional.mse_loss(z, z),
    "smooth_l1_loss": lambda t, z, r: t.nn.functional.smooth_l1_loss(z, z),
    "lt": lambda t, z, r: z < r, "clamp": lambda t, z, r: z.clamp(0), "floor": lambda t, z, r: z.floor(),
    "sign": lambda t, z, r: z.sign(), "maximum": lambda t, z, r: t.maximum(z, r),
}


def _raised(lib, f, dtype):
    z = lib.tensor([[1 + 2j, 3 - 1j], [-2 + 0.5j, 1j]], dtype=getattr(lib, dtype))
    r = lib.ones(2, 2)
    with pytest.raises(Exception) as info:
        f(lib, z, r)
    return type(info.value), str(info.value).split("\n")[0]


@needs_torch
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", list(CASES))
def test_complex_input_raises_torchs_error(name, dtype):
    assert _raised(retrograd, CASES[name], dtype) == _raised(torch, CASES[name], dtype)


def test_complex_rejections_without_torch():
    z = retrograd.tensor([1 + 2j, 3 - 1j])
    with pytest.raises(RuntimeError, match=r"^argmax\(\): does not support complex input$"):
        z.argmax()
    with pytest.raises(RuntimeError, match="^ Sort does not support complex dtypes on CPU$"):
        z.sort()
    with pytest.raises(NotImplementedError, match="^\"kthvalue_cpu\" not implemented for 'ComplexFloat'$"):
        z.kthvalue(1)
    # the real ops are untouched
    assert retrograd.tensor([3.0, 1.0]).argmax().item() == 0


def test_conjugate_bit():
    z = retrograd.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    c = z.conj()
    assert c.is_conj() and retrograd.is_conj(c) and not z.is_conj()
    assert not retrograd.tensor([1.0]).conj().is_conj()       # real: conj is the tensor itself
    r = c.resolve_conj()
    assert not r.is_conj() and r is not c and type(r.grad_fn).__name__ == "CloneBackward0"
    np.testing.assert_array_equal(r.detach().numpy(), np.conj(z.detach().numpy()))
    assert z.resolve_conj() is z and not c.is_neg() and c.resolve_neg() is c
    p = retrograd.conj_physical(z)
    assert not p.is_conj() and type(p.grad_fn).__name__ == "ConjPhysicalBackward0"


@needs_torch
def test_conjugate_bit_matches_torch():
    for lib in (retrograd, torch):
        z = lib.tensor([1 + 2j, 3 - 1j])
        got = (z.conj().is_conj(), z.is_conj(), z.conj().resolve_conj().is_conj(), lib.conj_physical(z).is_conj(),
               z.conj().is_neg(), lib.tensor([1.0]).conj().is_conj())
        if lib is retrograd:
            ours = got
    assert ours == got


@needs_torch
@pytest.mark.parametrize("value", [1 + 0j, 1 + 2j, -3.5 + 0j])
@pytest.mark.parametrize("conv", [float, int])
def test_python_number_of_a_complex_tensor_matches_torch(conv, value):
    out = []
    for lib in (retrograd, torch):
        try:
            out.append(("value", conv(lib.tensor(value))))
        except RuntimeError as e:
            out.append(("error", str(e)))
    assert out[0] == out[1]
