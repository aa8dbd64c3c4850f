"""autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp against PyTorch and closed forms."""
import numpy as np
import pytest

import retrograd
from helpers import torch

A = np.array([[0.5, 1.2], [0.3, -0.7]])
B = np.array([0.2, -1.5])


def _vals(r):
    if isinstance(r, tuple):
        return tuple(_vals(e) for e in r)
    return (np.round(np.asarray(r.detach().numpy(), dtype=float), 8).tolist(), r.requires_grad)


def f(x):
    return x.exp() * x


def g(x, y):
    return (x * y).sin(), (x * x * y).sum()


def s(x):
    return (x ** 3).sum() + (x.sin() * x).sum()


def s2(x, y):
    return (x * x * y).sum() + (y ** 3).sum()


def run(lib):
    F = lib.autograd.functional
    a, b = lib.tensor(A), lib.tensor(B)
    out = {
        "jacobian": F.jacobian(f, a),
        "jacobian2": F.jacobian(g, (a, b)),
        "hessian": F.hessian(s, a),
        "hessian2": F.hessian(s2, (a, b)),
        "vjp": F.vjp(f, a, lib.ones(2, 2)),
        "vjp_scalar": F.vjp(s, a),
        "jvp": F.jvp(g, (a, b), (lib.ones(2, 2), lib.ones(2))),
        "hvp": F.hvp(s, a, lib.ones(2, 2)),
        "vhp": F.vhp(s2, (a, b), (lib.ones(2, 2), lib.ones(2))),
        "jacobian_cg": F.jacobian(f, a.clone().requires_grad_(), create_graph=True),
        "hvp_cg": F.hvp(s, a.clone().requires_grad_(), lib.ones(2, 2), create_graph=True),
    }
    return {k: _vals(v) for k, v in out.items()}


def test_functional_values():
    r = run(retrograd)
    x = A
    # closed forms for two of them
    jac = np.array(r["jacobian"][0]).reshape(4, 4)
    np.testing.assert_allclose(jac, np.diag((np.exp(x) * (1 + x)).ravel()), rtol=1e-7)
    hess = np.array(r["hessian"][0]).reshape(4, 4)
    np.testing.assert_allclose(hess, np.diag((6 * x + 2 * np.cos(x) - x * np.sin(x)).ravel()), rtol=1e-7)
    assert r["jacobian_cg"][1] is True and r["hvp_cg"][1][1] is True
    if torch is not None:
        assert r == run(torch)


def errors(lib):
    F = lib.autograd.functional
    a, b = lib.tensor(A), lib.tensor(B)
    out = []
    for fn in (lambda: F.vjp(f, a), lambda: F.jvp(f, a, lib.ones(3)), lambda: F.hessian(lambda x: x * 2, a),
               lambda: F.jacobian(lambda x: b * 2, a, strict=True), lambda: F.jacobian(f, [a]),
               lambda: F.vjp(g, (a, b), (lib.ones(2, 2),)), lambda: F.hvp(lambda x: x * 2, a, lib.ones(2, 2)),
               lambda: F.vhp(s, a), lambda: F.jacobian(lambda x: (x * 0).sum() + b.sum(), a, strict=True)):
        try:
            fn()
            out.append("ok")
        except Exception as e:  # noqa: BLE001
            out.append((type(e).__name__, str(e).replace("torch.Tensor", "Tensor").replace(
                "retrograd._tensor.Tensor", "Tensor")))
    return out


def test_functional_errors():
    r = errors(retrograd)
    assert r[0] == ("RuntimeError", "The vector v can only be None if the user-provided function returns a "
                    "single Tensor with a single element.")
    if torch is not None:
        assert r == errors(torch)


def test_linear_function_has_zero_hessian():
    h = retrograd.autograd.functional.hessian(lambda x: (x * 3).sum(), retrograd.tensor(B))
    np.testing.assert_array_equal(h.numpy(), np.zeros((2, 2)))
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0 is "
                       "independent of the input"):
        retrograd.autograd.functional.hessian(lambda x: (x * 3).sum(), retrograd.tensor(B), strict=True)
