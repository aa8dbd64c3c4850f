"""Op table entries: nan_to_num, frexp/ldexp, gcd/lcm, heaviside, nextafter, deg2rad/rad2deg and
Tensor.float_power_."""
import numpy as np

from .core import OpInfo, Sample, method, _known

OPS = []
INF, NAN = np.inf, np.nan


def _add(name, op, samples, **kw):
    OPS.append(OpInfo(name, op, samples, **kw))


_add("nan_to_num", method("nan_to_num"),
     lambda mk: [Sample(mk.rand(2, 3)), Sample(mk.rand(4), nan=1.5, posinf=2.0, neginf=-3.0),
                 Sample(mk.arr([NAN, INF, -INF, 1.0, -0.0]), kind="degenerate"),
                 Sample(mk.arr([NAN, INF, -INF, 1.0]), 0.5, 1e300, kind="degenerate"),
                 Sample(mk.arr([NAN, INF, -INF]), neginf=-1e300, kind="degenerate")],
     elementwise=True, inplace="nan_to_num_")
_add("frexp", method("frexp"),
     lambda mk: [Sample(mk.rand(2, 3, low=-100, high=100)), Sample(mk.rand(4)),
                 Sample(mk.arr([0.0, -0.0, 1.0, 0.5, -1.0, 1e-310, 1e300, INF, -INF, NAN]), kind="degenerate")],
     elementwise=True)
_add("ldexp", method("ldexp"),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 3, low=-3, high=3)), Sample(mk.rand(2, 3), mk.rand(3)),
                 Sample(mk.rand(2, 3), mk.index([[1, 2, 3], [0, -1, 5]]), kind="intexp"),
                 Sample(mk.arr([0.0, 1.0, INF, 1.0, -2.0]), mk.arr([5.0, 2000.0, -1.0, -2000.0, 0.5]),
                        kind="degenerate")],
     elementwise=True, inplace="ldexp_")
_known("ldexp", "grad gradgrad", "intexp",
       "torch 2.13 bug, retrograd is right: with an integer exponent torch's ldexp backward multiplies by 2**other "
       "in integer arithmetic, so a negative exponent gives gradient 0 (d/dx x * 2**-1 is 0.5)")


def _ints(mk, *shape):
    return mk.arr(mk.rng.integers(-12, 13, shape), dtype=np.int64)


for _n in ("gcd", "lcm"):
    _add(_n, method(_n),
         lambda mk: [Sample(_ints(mk, 2, 3), _ints(mk, 2, 3)), Sample(_ints(mk, 2, 3), _ints(mk, 3)),
                     Sample(mk.arr([0, 0, -6, 7, 12], np.int64), mk.arr([0, 5, 4, -7, 18], np.int64),
                            kind="degenerate"),
                     Sample(mk.rand(3), mk.rand(3), kind="error")],
         inplace=_n + "_", grad=False)
# torch records a node whose backward raises "derivative for aten::heaviside is not implemented"
# (tests/test_special_stats.py): no gradient to compare
_add("heaviside", method("heaviside"),
     lambda mk: [Sample(mk.arr([[-1.5, 0.0, 2.0], [0.0, -0.0, 3.0]]), mk.rand(2, 3)),
                 Sample(mk.rand(4), mk.arr([0.5])),
                 Sample(mk.arr([NAN, INF, -INF, 0.0]), mk.arr([7.0]), kind="degenerate"),
                 Sample(mk.rand(3), mk.arr([1.0], np.float32), kind="error")],
     elementwise=True, inplace="heaviside_", grad=False)
_add("nextafter", method("nextafter"),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 3)), Sample(mk.rand(2, 3), mk.rand(3)),
                 Sample(mk.arr([1.0, 0.0, -0.0, 2.0, INF, NAN, 1.0]), mk.arr([1.0, 1.0, -1.0, INF, 0.0, 1.0, NAN]),
                        kind="degenerate")],
     elementwise=True, inplace="nextafter_", gradcheck_kinds=(),
     skip={"gradgrad": "the gradient is a constant selection (no second derivative in torch either)"})
for _n in ("deg2rad", "rad2deg"):
    _add(_n, method(_n), lambda mk: [Sample(mk.rand(2, 3, low=-400, high=400)), Sample(mk.rand(4)),
                                     Sample(mk.arr([0.0, -0.0, 180.0, INF, NAN]), kind="degenerate")],
         elementwise=True, inplace=_n + "_")
# float_power_ writes float64 into the base: a float32 base is refused (the float32 samples)
_add("float_power_", lambda t, x, e: x.clone().float_power_(e),
     lambda mk: [Sample(mk.pos(2, 3), mk.rand(2, 3)), Sample(mk.pos(2, 3), 2), Sample(mk.pos(2, 3), 0.5),
                 Sample(mk.arr([0.0, 0.0, -2.0]), mk.arr([0.0, -1.0, 0.5]), kind="degenerate")],
     elementwise=True)

# the in-place comparisons' other names (gt_ and friends have entries in ops_elementwise.py)
for _n, _m in (("greater", "gt"), ("greater_equal", "ge"), ("less", "lt"), ("less_equal", "le"),
               ("not_equal", "ne")):
    _add(_n + "(inplace)", lambda t, x, y, _n=_n: x.clone().__getattribute__(_n + "_")(y),
         lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 3)), Sample(mk.rand(2, 3), 0.5),
                     Sample(mk.arr([1.0, 0.0, NAN, INF]), mk.arr([1.0, -0.0, NAN, INF]), kind="degenerate")],
         covers=(_n + "_",), grad=False)
