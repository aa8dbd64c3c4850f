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


@pytest.mark.parametrize("name,ref", [("bessel_j0", lambda v: mpmath.besselj(0, v)),
                                      ("bessel_j1", lambda v: mpmath.besselj(1, v)),
                                      ("bessel_y0", lambda v: mpmath.bessely(0, v)),
                                      ("bessel_y1", lambda v: mpmath.bessely(1, v))])
def test_bessel_where_torch_loses_accuracy(name, ref):
    # torch 2.13's are off by up to 2e-7-9e-7 (absolute) for |x| in about [4.2, 9.1], worst near 5
    x = np.linspace(4.0, 9.5, 111)
    got = getattr(retrograd.special, name)(retrograd.from_numpy(x)).numpy()
    with mpmath.workdps(30):
        want = np.array([float(ref(v)) for v in x])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)


@pytest.mark.parametrize("name", ["i0", "special.i0", "special.i1", "special.modified_bessel_i0",
                                  "special.modified_bessel_i1"])
def test_float32_i0_i1_finite_up_to_float32s_overflow(name):
    """I0 and I1 stay finite in float32 up to x = 91.9 (the value reaches 3.4e38 there); torch
    2.13's float32 kernels overflow from about 88.7 (exp(x) taken before dividing by sqrt(x))."""
    f = retrograd
    for part in name.split("."):
        f = getattr(f, part)
    x = np.array([80.0, 88.0, 88.8, 90.0, 91.5, -90.0, 92.5], np.float32)
    r = f(retrograd.tensor(x)).numpy()
    e = f(retrograd.tensor(x.astype(np.float64))).numpy()
    assert r.dtype == np.float32
    np.testing.assert_allclose(r[:6], e[:6].astype(np.float32), rtol=2e-6)
    assert np.all(np.isfinite(r[:6])) and np.isinf(r[6])

