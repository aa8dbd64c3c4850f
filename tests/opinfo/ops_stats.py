"""Op table entries: searchsorted/bucketize, histc/histogram/histogramdd, bincount,
unique/unique_consecutive, isin and quantile/nanquantile."""
import numpy as np

from .core import OpInfo, Sample, method, function, _known

OPS = []
INF, NAN = np.inf, np.nan


def _add(name, op, samples, **kw):
    OPS.append(OpInfo(name, op, samples, **kw))


def _sorted(mk, *shape):
    return np.sort(mk.rand(*shape), axis=-1)


_NOGRAD = {"grad": False}
_add("searchsorted", function("searchsorted"),
     lambda mk: [Sample(_sorted(mk, 6), mk.rand(2, 3)),
                 Sample(_sorted(mk, 6), mk.rand(4), right=True),
                 Sample(_sorted(mk, 2, 5), mk.rand(2, 3), side="right"),
                 Sample(mk.arr([1.0, 2.0, 2.0, 2.0, 3.0]), mk.arr([2.0, 0.0, 5.0, NAN, 3.0]), kind="degenerate"),
                 Sample(mk.arr([1.0, 2.0, 2.0, 3.0]), mk.arr([2.0, 2.5]), out_int32=True, right=True,
                        kind="degenerate"),
                 Sample(mk.arr([1.0, 2.0, NAN]), mk.arr([2.0, NAN, 9.0]), kind="degenerate"),
                 Sample(mk.arr([3.0, 1.0, 2.0]), mk.arr([2.0, 0.5, 3.5]), sorter=mk.index([1, 2, 0]),
                        kind="degenerate"),
                 Sample(mk.arr([1.0, 2.0]), 1.5, kind="degenerate"),
                 Sample(mk.rand(2, 3), mk.rand(3, 1), kind="error"),
                 Sample(mk.arr([1.0, 2.0]), mk.arr([1.0]), right=True, side="left", kind="error"),
                 Sample(mk.arr([1.0, 2.0]), mk.arr([1.0]), side="middle", kind="error")], **_NOGRAD)
_add("bucketize", function("bucketize"),
     lambda mk: [Sample(mk.rand(2, 3), _sorted(mk, 6)), Sample(mk.rand(4), _sorted(mk, 6), right=True),
                 Sample(mk.arr([2.0, 0.0, 5.0, NAN, 3.0]), mk.arr([1.0, 2.0, 2.0, 3.0]), kind="degenerate"),
                 Sample(mk.rand(3), mk.rand(2, 2), kind="error")], **_NOGRAD)
_add("histc", method("histc"),
     lambda mk: [Sample(mk.rand(2, 3)), Sample(mk.rand(50), bins=7), Sample(mk.rand(50), bins=4, min=-1, max=1),
                 Sample(mk.arr([0.0, 0.1, 0.2, 0.3, 0.7, 1.0, 1.5, -0.5, NAN]), bins=10, min=0, max=1,
                        kind="degenerate"),
                 Sample(mk.arr([2.0, 2.0]), bins=4, kind="degenerate"),
                 Sample(mk.arr([1.0, 2.0]), bins=0, kind="error"),
                 Sample(mk.arr([1.0, 2.0]), bins=3, min=3, max=1, kind="error")], **_NOGRAD)
# torch records a node that refuses backward (tests/test_special_stats.py): no gradient to compare
_add("histogram", method("histogram"),
     lambda mk: [Sample(mk.rand(2, 3), 4), Sample(mk.rand(50), 7, range=(-1.0, 1.0)),
                 Sample(mk.rand(20), mk.arr([-2.0, -0.5, 0.0, 2.0]), weight=mk.rand(20), density=True),
                 Sample(mk.rand(20), 5, weight=mk.pos(20)),
                 Sample(mk.arr([2.0, 2.0]), 2, kind="degenerate"),
                 Sample(mk.arr([1.0, 3.0, 1.0, 4.0]), 4, density=True, kind="degenerate"),
                 Sample(mk.arr([1.0, NAN]), 3, kind="error"),
                 Sample(mk.arr([1.0]), 3, range=(2.0, 1.0), kind="error")], **_NOGRAD)
_add("histogramdd", function("histogramdd"),
     lambda mk: [Sample(mk.rand(10, 2), [3, 4]), Sample(mk.rand(10, 3), 2),
                 Sample(mk.rand(10, 2), [2, 2], range=[-1.0, 1.0, 0.0, 2.0], weight=mk.pos(10), density=True),
                 Sample(mk.rand(10, 2), [mk.arr([-2.0, 0.0, 2.0]), mk.arr([-2.0, -1.0, 1.0, 2.0])])],
     int_dtypes=False, nonfinite=False, **_NOGRAD)


def _ints(mk, n, hi=6):
    return mk.index(mk.rng.integers(0, hi, n))


_add("bincount", method("bincount"),
     lambda mk: [Sample(_ints(mk, 10)), Sample(_ints(mk, 10), mk.rand(10)), Sample(_ints(mk, 8), minlength=9),
                 Sample(mk.index([0, -1]), kind="error"), Sample(mk.index([[0, 1]]), kind="error"),
                 Sample(_ints(mk, 3), mk.rand(2), kind="error")], **_NOGRAD)


def _dups(mk, *shape):
    return np.round(mk.rand(*shape))


# torch records a node that refuses backward (tests/test_special_stats.py)
_add("unique", method("unique"),
     lambda mk: [Sample(_dups(mk, 3, 4)), Sample(_dups(mk, 10), return_inverse=True, return_counts=True),
                 Sample(_dups(mk, 4, 3), sorted=True, return_counts=True, dim=0),
                 Sample(_dups(mk, 3, 4), return_inverse=True, dim=1),
                 Sample(mk.arr([NAN, 1.0, NAN, -0.0, 0.0]), return_counts=True, kind="degenerate"),
                 Sample(mk.rand(0, 3), return_inverse=True, return_counts=True, dim=0, kind="degenerate"),
                 Sample(mk.rand(2, 0, 3), return_inverse=True, return_counts=True, dim=1, kind="degenerate"),
                 Sample(mk.rand(3, 0), dim=0, kind="error")], **_NOGRAD)
_add("unique_consecutive", method("unique_consecutive"),
     lambda mk: [Sample(_dups(mk, 3, 4)), Sample(_dups(mk, 10), return_inverse=True, return_counts=True),
                 Sample(_dups(mk, 4, 3), return_counts=True, dim=0),
                 Sample(mk.arr([[1.0, 1.0, 2.0], [1.0, 1.0, 2.0]]), return_inverse=True, dim=1, kind="degenerate"),
                 Sample(mk.arr([NAN, NAN, 1.0, 1.0]), return_counts=True, kind="degenerate"),
                 Sample(mk.rand(0, 3), return_inverse=True, return_counts=True, dim=0, kind="degenerate"),
                 Sample(mk.rand(0, 3), dim=1, kind="error")], **_NOGRAD)
_add("isin", function("isin"),
     lambda mk: [Sample(_dups(mk, 3, 4), _dups(mk, 3)), Sample(_dups(mk, 6), _dups(mk, 2, 2), invert=True),
                 Sample(_dups(mk, 6), 1.0), Sample(1.0, _dups(mk, 4)),
                 Sample(_dups(mk, 6), _dups(mk, 3), assume_unique=True),
                 Sample(mk.arr([1.0, NAN, 1.5]), mk.arr([NAN, 1.0]), kind="degenerate")], **_NOGRAD)
_known("isin", "errors", "noncontig",
       "torch 2.13 bug, retrograd is right: isin with a non-contiguous 2-d test_elements raises 'view size is not "
       "compatible with input tensor's size and stride' (it flattens with view); retrograd answers as for the "
       "contiguous copy")



def _quantile_samples(mk):
    # q values whose ranks q * (n - 1) are not integers: there the quantile has a kink in q
    yield Sample(mk.rand(3, 5), mk.arr([0.1, 0.55, 0.9]), dim=1)
    yield Sample(mk.rand(4, 3), 0.3, dim=0, keepdim=True)
    yield Sample(mk.rand(2, 3, 4), mk.arr(0.75), dim=-2)
    yield Sample(mk.rand(2, 3), mk.arr([0.3, 0.65]), keepdim=True)
    yield Sample(mk.rand(7), 0.4, grad=[0])
    for interp in ("lower", "higher", "midpoint", "nearest"):
        yield Sample(mk.rand(3, 5), mk.arr([0.0, 0.3, 0.5, 1.0]), dim=1, interpolation=interp, grad=[0])
        yield Sample(mk.rand(6), 0.5, interpolation=interp, grad=[0])
    yield Sample(mk.arr([[1.0, NAN, 3.0], [NAN, NAN, NAN], [2.0, 2.0, 1.0]]), mk.arr([0.0, 0.5, 1.0]), dim=1,
                 kind="degenerate")
    yield Sample(mk.arr([1.0, INF, -INF, 2.0]), mk.arr([0.0, 0.5, 0.9]), kind="degenerate")
    yield Sample(mk.rand(3), 1.5, kind="error")
    yield Sample(mk.rand(3), mk.arr([[0.5]]), kind="error")
    yield Sample(mk.rand(3), 0.5, interpolation="cubic", kind="error")


for _n in ("quantile", "nanquantile"):
    _add(_n, method(_n), _quantile_samples, gradcheck_kinds=("basic", "noncontig", "negstride"))
