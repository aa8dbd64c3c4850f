"""torch.fft against torch 2.13: values, dtypes, grad_fn names and gradients of every transform
under each norm mode and with cropping/padding (n, s), plus finite-difference gradchecks and
second derivatives that run without torch."""
import numpy as np
import pytest

import retrograd
from retrograd.autograd import gradcheck, gradgradcheck
from helpers import torch, needs_torch

_RNG = np.random.default_rng(3)
X = _RNG.standard_normal((4, 6))
Y = _RNG.standard_normal((4, 6))
NORMS = [None, "backward", "ortho", "forward"]

# name -> (f(lib, x, norm), complex input?)
CASES = {
    "fft": (lambda L, x, nm: L.fft.fft(x, norm=nm), True),
    "fft_real": (lambda L, x, nm: L.fft.fft(x, norm=nm), False),
    "fft_n_crop": (lambda L, x, nm: L.fft.fft(x, n=4, dim=0, norm=nm), True),
    "fft_n_pad": (lambda L, x, nm: L.fft.fft(x, n=9, norm=nm), True),
    "ifft": (lambda L, x, nm: L.fft.ifft(x, norm=nm), True),
    "ifft_real": (lambda L, x, nm: L.fft.ifft(x, norm=nm), False),
    "fft2": (lambda L, x, nm: L.fft.fft2(x, norm=nm), True),
    "fft2_real": (lambda L, x, nm: L.fft.fft2(x, norm=nm), False),
    "ifft2": (lambda L, x, nm: L.fft.ifft2(x, s=(3, 8), norm=nm), True),
    "fftn": (lambda L, x, nm: L.fft.fftn(x, s=(5, 4), norm=nm), True),
    "ifftn": (lambda L, x, nm: L.fft.ifftn(x, dim=(0,), norm=nm), True),
    "rfft": (lambda L, x, nm: L.fft.rfft(x, norm=nm), False),
    "rfft_n_odd": (lambda L, x, nm: L.fft.rfft(x, n=9, norm=nm), False),
    "rfft_dim0": (lambda L, x, nm: L.fft.rfft(x, n=3, dim=0, norm=nm), False),
    "rfft2": (lambda L, x, nm: L.fft.rfft2(x, norm=nm), False),
    "rfftn": (lambda L, x, nm: L.fft.rfftn(x, s=(3, 7), norm=nm), False),
    "irfft": (lambda L, x, nm: L.fft.irfft(x, norm=nm), True),
    "irfft_n_odd": (lambda L, x, nm: L.fft.irfft(x, n=7, norm=nm), True),
    "irfft_n_pad": (lambda L, x, nm: L.fft.irfft(x, n=13, norm=nm), True),
    "irfft_real_input": (lambda L, x, nm: L.fft.irfft(x, norm=nm), False),
    "irfft2": (lambda L, x, nm: L.fft.irfft2(x, norm=nm), True),
    "irfftn": (lambda L, x, nm: L.fft.irfftn(x, s=(5, 9), norm=nm), True),
    "hfft": (lambda L, x, nm: L.fft.hfft(x, norm=nm), True),
    "hfft_n": (lambda L, x, nm: L.fft.hfft(x, n=5, norm=nm), True),
    "ihfft": (lambda L, x, nm: L.fft.ihfft(x, norm=nm), False),
    "ihfft_n": (lambda L, x, nm: L.fft.ihfft(x, n=5, norm=nm), False),
    "fftshift": (lambda L, x, nm: L.fft.fftshift(x), True),
    "ifftshift": (lambda L, x, nm: L.fft.ifftshift(x, dim=1), True),
}


def _np(t):
    if torch is not None and isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().resolve_neg().numpy()
    return np.asarray(t.detach()._data)


def _run(lib, f, cplx, norm, dtype):
    x = lib.tensor((X + 1j * Y) if cplx else X, dtype=getattr(lib, dtype), requires_grad=True)
    out = f(lib, x, norm)
    wt = np.cos(np.arange(out.numel())).reshape(tuple(out.shape))
    w = lib.tensor(wt * (1 + 0.5j) if out.is_complex() else wt, dtype=out.dtype)
    (out * w).real.sum().backward() if out.is_complex() else (out * w).sum().backward()
    return out, x.grad


@needs_torch
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_fft_matches_torch(name, norm):
    f, cplx = CASES[name]
    for dtype, tol in ((("complex128" if cplx else "float64"), 1e-10), (("complex64" if cplx else "float32"), 2e-5)):
        out, g = _run(retrograd, f, cplx, norm, dtype)
        tout, tg = _run(torch, f, cplx, norm, dtype)
        assert str(out.dtype) == str(tout.dtype) and tuple(out.shape) == tuple(tout.shape)
        assert type(out.grad_fn).__name__ == type(tout.grad_fn).__name__
        assert str(g.dtype) == str(tg.dtype)
        np.testing.assert_allclose(_np(out), _np(tout), rtol=tol, atol=tol)
        np.testing.assert_allclose(_np(g), _np(tg), rtol=tol, atol=tol)


GRADCHECK = {
    "fft": (lambda x: retrograd.fft.fft(x, n=5), True),
    "ifft2_ortho": (lambda x: retrograd.fft.ifft2(x, s=(2, 4), norm="ortho"), True),
    "fft_real": (lambda x: retrograd.fft.fft(x), False),
    "rfft": (lambda x: retrograd.fft.rfft(x, norm="forward"), False),
    "rfftn": (lambda x: retrograd.fft.rfftn(x, s=(2, 5)), False),
    "irfft": (lambda x: retrograd.fft.irfft(x), True),
    "irfft_odd": (lambda x: retrograd.fft.irfft(x, n=5, norm="ortho"), True),
    "irfftn": (lambda x: retrograd.fft.irfftn(x, s=(4, 4)), True),
    "hfft": (lambda x: retrograd.fft.hfft(x, n=5), True),
    "ihfft": (lambda x: retrograd.fft.ihfft(x), False),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK))
def test_fft_gradcheck(name):
    f, cplx = GRADCHECK[name]
    x = retrograd.tensor((X[:3, :4] + 1j * Y[:3, :4]) if cplx else X[:3, :4], requires_grad=True)
    assert gradcheck(f, (x,))
    assert gradgradcheck(lambda x: f(x) * f(x), (x,))


@needs_torch
def test_fftfreq_and_dtypes():
    for lib_case in ["fft.fftfreq(5)", "fft.rfftfreq(6, 0.5)", "fft.fftfreq(4, dtype={L}.float64)",
                     "fft.rfftfreq(7, d=0.1)"]:
        r = eval("retrograd." + lib_case.format(L="retrograd"))
        t = eval("torch." + lib_case.format(L="torch"))
        assert str(r.dtype) == str(t.dtype)
        np.testing.assert_allclose(_np(r), _np(t), rtol=1e-6)
    for s in ["fft.fft(L.ones(4))", "fft.rfft(L.ones(4))", "fft.irfft(L.ones(4, dtype=L.complex64))",
              "fft.fft(L.arange(4))", "fft.fft(L.ones(4, dtype=L.float64))", "fft.hfft(L.ones(3))",
              "fft.ihfft(L.ones(4, dtype=L.float64))"]:
        assert str(eval("retrograd." + s, {"retrograd": retrograd, "L": retrograd}).dtype) == \
            str(eval("torch." + s, {"torch": torch, "L": torch}).dtype)


@needs_torch
def test_fft_errors_match_torch():
    for s in ["fft.rfft(L.ones(3, dtype=L.complex64))", "fft.fft(L.ones(3), n=0)", "fft.fft(L.ones(3), norm='bad')",
              "fft.ihfft(L.ones(3, dtype=L.complex64))", "fft.fftn(L.ones(3, 3), s=(2,), dim=(0, 1))"]:
        got = []
        for lib in (retrograd, torch):
            try:
                eval("lib." + s, {"lib": lib, "L": lib})
                got.append(None)
            except Exception as e:
                got.append((type(e).__name__, str(e)))
        assert got[0] is not None and got[0] == got[1], (s, got)


def test_fft_round_trips():
    x = retrograd.tensor(X)
    np.testing.assert_allclose(retrograd.fft.irfft(retrograd.fft.rfft(x), n=6).numpy(), X, atol=1e-12)
    np.testing.assert_allclose(retrograd.fft.ifftn(retrograd.fft.fftn(x)).real.numpy(), X, atol=1e-12)
    np.testing.assert_allclose(retrograd.fft.ifftshift(retrograd.fft.fftshift(x)).numpy(), X)
    np.testing.assert_allclose(retrograd.fft.hfft(retrograd.fft.ihfft(x), n=6).numpy(), X, atol=1e-12)
