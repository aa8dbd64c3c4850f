"""PyTorch 2.13's errors for inf / nan entries in the SVD- and eig-based linalg functions
(skipped without torch): 'linalg.svd: [(Batch element k): ]The algorithm failed to converge
because the input matrix contained non-finite values.' (_LinAlgError) from svd, svdvals, pinv,
matrix_rank, the 2-norm / nuclear norm and cond, and eig's RuntimeError."""
import numpy as np
import pytest

import retrograd
from helpers import needs_torch, raised, torch

NAN = np.nan
FNS = {
    "svd": lambda L, x: L.linalg.svd(x), "svdvals": lambda L, x: L.linalg.svdvals(x),
    "torch.svd": lambda L, x: L.svd(x), "pinv": lambda L, x: L.linalg.pinv(x),
    "matrix_rank": lambda L, x: L.linalg.matrix_rank(x), "norm2": lambda L, x: L.linalg.matrix_norm(x, 2),
    "nuc": lambda L, x: L.linalg.matrix_norm(x, "nuc"), "cond": lambda L, x: L.linalg.cond(x),
    "eig": lambda L, x: L.linalg.eig(x),
}


@needs_torch
@pytest.mark.parametrize("name", list(FNS))
def test_nonfinite_errors(name):
    a = np.array([[1.0, NAN], [2.0, 3.0]])
    cases = [a, np.array([[NAN, 1.0], [0.0, 1.0]])]
    if name != "eig":   # (a batched eig of a nan matrix: torch returns LAPACK's garbage for it)
        cases.append(np.stack([np.eye(2), a]))
    for arr in cases:
        want = raised(lambda: FNS[name](torch, torch.tensor(arr)))
        got = raised(lambda: FNS[name](retrograd, retrograd.tensor(arr)))
        assert want is not None and got == want


@needs_torch
@pytest.mark.parametrize("n", [1, 3])
def test_eigh_double_backward_under_an_inf_upstream(n):
    """An inf in the eigenvectors' upstream makes the projected diagonal inf - inf = NaN; the
    diagonal of the eigenvalue gaps is 1 by selection (as PyTorch's fill_), so that NaN reaches
    no second derivative through it: PyTorch's values, NaN where PyTorch has NaN."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n))
    a = a + a.T + n * np.eye(n)
    up = rng.standard_normal((n, n))
    up[0, 0] = np.inf
    out = []
    for lib in (torch, retrograd):
        x = lib.tensor(a, requires_grad=True)
        w, v = lib.linalg.eigh(x)
        g, = lib.autograd.grad((w.sum() + (v * lib.tensor(up)).sum()), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        out.append(gg.detach().numpy().copy())
    np.testing.assert_array_equal(np.isnan(out[1]), np.isnan(out[0]))
    np.testing.assert_allclose(out[1], out[0], rtol=1e-9, atol=1e-12)
