"""Special functions against mpmath at 30 digits where PyTorch's own kernel is not accurate
enough to serve as the oracle (mpmath comes with PyTorch, through sympy; skipped without)."""
import numpy as np
import pytest

import retrograd

mpmath = pytest.importorskip("mpmath")


def test_airy_ai_where_torch_loses_accuracy():
    # torch 2.13's airy_ai is off by up to 1.8e-5 (relative) on [-4.11, -2.09]
    x = np.linspace(-4.2, -2.0, 89)
    got = retrograd.special.airy_ai(retrograd.from_numpy(x)).numpy()
    with mpmath.workdps(30):
        want = np.array([float(mpmath.airyai(v)) for v in x])
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-300)
