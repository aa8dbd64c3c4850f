"""optim.optimizer.fma64: ``y + s * x`` in float64 rounded once from NumPy's + and * alone
(the fallback where no fused BLAS axpy is found). Checked against exact rational arithmetic,
so it runs the same on every machine, whichever axpy the optimizers take there."""
from fractions import Fraction

import numpy as np
import pytest

from retrograd.optim.optimizer import fma64


def _exact(x, s, y):
    return np.array([float(Fraction(float(b)) + Fraction(s) * Fraction(float(a))) for a, b in zip(x, y)])


@pytest.mark.parametrize("seed", range(4))
def test_rounds_once_over_many_magnitudes(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(2000) * 10.0 ** rng.integers(-8, 8, 2000)
    y = rng.standard_normal(2000) * 10.0 ** rng.integers(-8, 8, 2000)
    s = float(rng.standard_normal()) * 10.0 ** int(rng.integers(-4, 4))
    np.testing.assert_array_equal(fma64(x, s, y), _exact(x, s, y))


def test_cancellation_and_ties_where_two_roundings_differ():
    a = 1 + 2.0 ** -27          # a * a = 1 + 2^-26 + 2^-54: the last term survives only in one rounding
    x, y = np.full(67, a), np.full(67, -1.0)
    r = fma64(x, a, y)
    assert np.all(r == 2.0 ** -26 + 2.0 ** -54)
    assert not np.all(y + a * x == r)          # (the case tells the two apart)
    # halfway cases of the final rounding, both signs
    x = np.array([1.0 + 2.0 ** -52, 1.0 - 2.0 ** -53, 3.0, -3.0])
    y = np.array([2.0 ** -53, -2.0 ** -54, 2.0 ** -51, -2.0 ** -51])
    np.testing.assert_array_equal(fma64(x, 1.0 + 2.0 ** -52, y), _exact(x, 1.0 + 2.0 ** -52, y))
    # just above a halfway point, by less than the low parts' sum can hold: only rounding that
    # sum to odd carries it (1 + 2^-53 + a little rounds up; to even, it would round down)
    s, x, y = 1.0 + 2.0 ** -52, np.array([2.0 ** -53 - 2.0 ** -106]), np.array([1.0])
    assert fma64(x, s, y)[0] == 1.0 + 2.0 ** -52 == _exact(x, s, y)[0]


def test_non_finite_extreme_and_zero_dimensional():
    x = np.array([np.inf, 1.0, np.nan, 1e300, 1e-300, 0.0, -0.0])
    y = np.array([1.0, -np.inf, 0.0, 1e300, 1e-300, -0.0, -0.0])
    with np.errstate(all="ignore"):
        plain = y + 2.0 * x
    r = fma64(x, 2.0, y)
    np.testing.assert_array_equal(r, plain)     # (beyond the exact range: the plain formula)
    assert np.signbit(r[5]) == np.signbit(plain[5]) and np.signbit(r[6]) == np.signbit(plain[6])
    z = fma64(np.float64(3.0), 0.1, np.float64(1.0))
    assert z.ndim == 0 and float(z) == float(Fraction(1) + Fraction(0.1) * 3)
