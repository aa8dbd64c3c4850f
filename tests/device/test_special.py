"""Special functions on the emulated CUDA device: the emulated cupyx.scipy.special has only
CuPy 13's names, every sample of the special-function table (edge cases, half and integer
inputs included, not only test_ops.py's subset) agrees with the CPU, and the functions ask
the host nothing except where documented (Airy's Ai; a tensor of polynomial degrees)."""
import numpy as np
import pytest

import retrograd
from retrograd.cuda import _emulator as E
from opinfo.core import expand_samples
from opinfo.ops_special import OPS

from parity import CUDA, check_sample

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")


def test_emulated_cupyx_special_has_only_cupy_13s_names():
    sp = E.xp._scipy_special
    x = E.xp.asarray(np.array([0.5, 2.0]))
    assert type(sp.gammaln(x)) is E.ndarray and type(sp.k0e(x)) is E.ndarray
    assert type(sp.zeta(2.0, x)) is E.ndarray and type(sp.gammainc(x, x)) is E.ndarray
    for name in ("airy", "spherical_jn", "eval_chebyt", "kve", "wofz", "iv", "jv"):
        with pytest.raises(AttributeError, match=f"no attribute '{name}'"):
            getattr(sp, name)


@pytest.mark.parametrize("info", OPS, ids=[i.name for i in OPS])
def test_every_sample_agrees_with_the_cpu(info):
    failures = []
    for s in expand_samples(info):
        if s.dtype == "bfloat16":      # (CuPy has no bfloat16)
            continue
        msg = check_sample(info, s)
        if msg:
            failures.append(f"{s.describe()}: {msg}")
    assert not failures, "\n".join(failures[:3])


def _on_device(values):
    return retrograd.tensor(values, dtype=retrograd.float64).to(CUDA)


UNARY = ["lgamma", "digamma", "i0", "sinc", "logit", "special.erfcx", "special.ndtr", "special.ndtri",
         "special.log_ndtr", "special.entr", "special.i0e", "special.i1", "special.i1e", "special.psi",
         "special.bessel_j0", "special.bessel_y1", "special.modified_bessel_k1",
         "special.scaled_modified_bessel_k0", "special.spherical_bessel_j0"]


def _fn(name):
    mod = retrograd.special if name.startswith("special.") else retrograd
    return getattr(mod, name.split(".")[-1])


@pytest.mark.parametrize("name", UNARY)
def test_unary_forward_and_backward_ask_the_host_nothing(name):
    x = _on_device([0.2, 0.45, 0.9]).requires_grad_()
    with E.forbid_host_sync():
        y = _fn(name)(x)
        if y.requires_grad:
            (g,) = retrograd.autograd.grad(y.sum(), x, create_graph=True)
            retrograd.autograd.grad(g.sum(), x)
    assert y.device == CUDA


def test_other_functions_ask_the_host_nothing():
    x = _on_device([0.4, 1.5, 2.5]).requires_grad_()
    a = _on_device([0.5, 1.0, 3.0])
    with E.forbid_host_sync():
        outs = [retrograd.polygamma(3, x), retrograd.mvlgamma(x + 2, 3), retrograd.logit(x, 0.1),
                retrograd.special.xlog1py(x, a), retrograd.special.xlog1py(2.0, x),
                retrograd.special.xlog1py(x * 0, _on_device([-1.0, -2.0, 0.0])),
                retrograd.special.zeta(3.0, x), retrograd.igamma(a, x), retrograd.igammac(a, x)]
        for y in outs:
            y.sum().backward(retrograd.ones((), dtype=y.dtype, device=CUDA))
        # a number as the degree: the recurrence's length is known on the host
        p = retrograd.special.legendre_polynomial_p(x, 7)
        q = retrograd.special.hermite_polynomial_he(x, 3.0)
    assert p.device == CUDA and q.device == CUDA and x.grad.device == CUDA


def test_documented_host_round_trips_are_one_sync_each():
    x = _on_device([-1.0, 0.5, 2.0])
    with E.count_host_syncs() as log:
        retrograd.special.airy_ai(x)
    assert len(log) == 1                  # cupyx.scipy.special has no Airy function
    with E.count_host_syncs() as log:
        y = retrograd.special.chebyshev_polynomial_t(x, _on_device([0.0, 3.0, 12.0]))
    assert len(log) == 1                  # the largest degree a tensor holds
    assert y.cpu().tolist() == retrograd.special.chebyshev_polynomial_t(x.cpu(), retrograd.tensor(
        [0.0, 3.0, 12.0], dtype=retrograd.float64)).tolist()
