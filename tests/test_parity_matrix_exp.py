"""linalg.matrix_exp against PyTorch 2.13 (skipped without torch) and by float64 gradcheck: the
Taylor-type approximants PyTorch uses (degree by the 1-norm for one matrix, the highest degree
for a batch, scaling by 2^-s and s squarings past the last bound), so that the values agree
also where scaling and squaring loses accuracy and where SciPy's expm overflowed (huge norms
reached by the backward's block matrix [[A^H, G], [0, A^H]])."""
import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from helpers import torch, needs_torch


def _close(r, t, rtol):
    r, t = np.asarray(r), np.asarray(t)
    assert np.array_equal(np.isfinite(r), np.isfinite(t)), (r, t)
    fin = np.isfinite(t)
    if fin.any():
        assert np.abs(r[fin] - t[fin]).max() <= rtol * np.abs(t[fin]).max(), (r, t)


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
def test_matrix_exp_values_across_norms(dtype):
    rng = np.random.default_rng(7)
    for i in range(120):
        batch = [(), (1,), (2,), (3,), (2, 2)][i % 5]
        n = int(rng.integers(2, 6))
        a = rng.standard_normal(batch + (n, n)) * 10 ** rng.uniform(-18, 3, size=batch + (1, 1))
        if dtype == "complex128":
            a = a + 1j * rng.standard_normal(a.shape) * np.abs(a).max()
        a = a.astype(dtype)
        want = torch.linalg.matrix_exp(torch.tensor(a)).numpy()
        got = retrograd.linalg.matrix_exp(retrograd.tensor(a)).numpy()
        # (rounding of the squarings grows with the 1-norm: the libraries' matmuls round differently)
        norm = np.abs(a).sum(-2).max()
        _close(got, want, (1e-6 if dtype == "float32" else 1e-14) * (100 + norm))


@needs_torch
def test_matrix_exp_huge_norm_and_nonfinite():
    # [[3, g], [0, 3]]: exact top-right g e^3, but PyTorch's 2^-s scaling rounds the diagonal
    # away once g ~ 1e18 (the result is [[1, g], [0, 1]]); SciPy's expm overflowed near 1e30
    for g in (1e3, 1e15, 1e18, 1e30, 1e200):
        a = np.array([[3.0, g], [0.0, 3.0]])
        _close(retrograd.linalg.matrix_exp(retrograd.tensor(a)).numpy(),
               torch.linalg.matrix_exp(torch.tensor(a)).numpy(), 1e-12)
    for a in (np.array([[np.nan, 1.0], [0.0, 1.0]]), np.array([[np.inf, 1.0], [0.0, 1.0]]),
              np.array([[[np.nan, 1.0], [0.0, 1.0]], [[1.0, 2.0], [3.0, 4.0]]])):
        _close(retrograd.linalg.matrix_exp(retrograd.tensor(a)).numpy(),
               torch.linalg.matrix_exp(torch.tensor(a)).numpy(), 1e-12)


@needs_torch
def test_matrix_exp_of_matrix_exp_gradient():
    # the fuzzer's program: exp(exp(A)) of an upper triangular A; the first backward's block
    # matrix has a 1-norm of ~8e30 (retrograd gave nan, torch 1.77e29 at [0, 0])
    a = np.array([[3.5478467492858172, -0.9208531449445188, -1.8361059042552212],
                  [0.0, 4.25308095680109, 1.6510223091108869], [0.0, 0.0, 3.1744999658616915]])
    up = np.random.default_rng(0).standard_normal((3, 3))
    got = []
    for lib in (torch, retrograd):
        x = lib.tensor(a, requires_grad=True)
        y = lib.linalg.matrix_exp(lib.linalg.matrix_exp(x))
        got.append(lib.autograd.grad(y, x, lib.tensor(up))[0].numpy())
    _close(got[1], got[0], 1e-11)


def test_matrix_exp_gradcheck():
    rng = np.random.default_rng(1)
    for shape, scale in (((3, 3), 0.01), ((3, 3), 0.2), ((2, 3, 3), 1.5), ((4, 4), 4.0)):
        x = retrograd.tensor(rng.standard_normal(shape) * scale, requires_grad=True)
        assert gradcheck(retrograd.linalg.matrix_exp, (x,))
    x = retrograd.tensor(rng.standard_normal((3, 3)) * 0.7, requires_grad=True)
    assert gradgradcheck(retrograd.linalg.matrix_exp, (x,))


def test_matrix_exp_without_torch():
    # exp of a nilpotent and of a diagonal matrix, whatever the degree chosen
    for s in (1e-10, 1e-3, 0.1, 0.4, 1.0, 40.0):
        n = np.array([[0.0, s], [0.0, 0.0]])
        np.testing.assert_allclose(retrograd.linalg.matrix_exp(retrograd.tensor(n)).numpy(), [[1, s], [0, 1]],
                                   rtol=1e-14)
        d = np.diag([s, -s])
        np.testing.assert_allclose(retrograd.linalg.matrix_exp(retrograd.tensor(d)).numpy(),
                                   np.diag(np.exp([s, -s])), rtol=1e-13)
