"""Op table entries: cartesian_prod, combinations, block_diag, vander, tril_indices/triu_indices,
trapezoid/trapz/cumulative_trapezoid and cdist."""
import numpy as np

from .core import OpInfo, Sample, function

OPS = []
INF, NAN = np.inf, np.nan


def _add(name, op, samples, **kw):
    OPS.append(OpInfo(name, op, samples, **kw))


_add("cartesian_prod", function("cartesian_prod"),
     lambda mk: [Sample(mk.rand(3), mk.rand(2)), Sample(mk.rand(2), mk.rand(2), mk.rand(3)),
                 Sample(mk.rand(4)), Sample(mk.rand(2, 2), mk.rand(2), kind="error")])
_add("combinations", function("combinations"),
     lambda mk: [Sample(mk.rand(4)), Sample(mk.rand(4), 3), Sample(mk.rand(3), 2, True),
                 Sample(mk.rand(3), r=3, with_replacement=True), Sample(mk.rand(3), 4, kind="degenerate"),
                 Sample(mk.rand(3), 0, kind="degenerate"), Sample(mk.rand(2, 2), kind="error"),
                 Sample(mk.rand(3), -1, kind="error")])
_add("block_diag", function("block_diag"),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(1, 2)), Sample(mk.rand(3), mk.rand(2, 2), mk.arr(1.5)),
                 Sample(mk.rand(2, 2), mk.index([[1, 2]]), kind="mixed"),
                 Sample(mk.rand(0, 2), mk.rand(2, 0), kind="degenerate"),
                 Sample(mk.rand(1, 1, 1), kind="error")])
# torch 2.13 bug, retrograd is right: torch's vander writes a cumprod into a slice of its result in
# place and then flips it, and its backward fails ("one of the variables needed for gradient
# computation has been modified by an inplace operation"): no torch gradient to compare with
# (tests/test_special_stats.py gradchecks retrograd's)
_add("vander", function("vander"),
     lambda mk: [Sample(mk.rand(3)), Sample(mk.rand(4), N=2), Sample(mk.rand(3), N=5, increasing=True),
                 Sample(mk.rand(3), N=1, kind="degenerate"), Sample(mk.rand(3), N=0, kind="degenerate"),
                 Sample(mk.rand(2, 2), kind="error"), Sample(mk.rand(3), N=-1, kind="error")], grad=False)
_add("trapezoid", function("trapezoid"),
     lambda mk: [Sample(mk.rand(2, 5)), Sample(mk.rand(2, 5), dx=0.5), Sample(mk.rand(4, 3), dim=0),
                 Sample(mk.rand(2, 5), np.sort(mk.rand(5))), Sample(mk.rand(3, 4), mk.rand(3, 4), dim=1),
                 Sample(mk.rand(1)), Sample(mk.rand(2, 0), kind="degenerate"),
                 Sample(mk.rand(2, 5), mk.rand(4), kind="error")])
_add("trapz", function("trapz"),
     lambda mk: [Sample(mk.rand(2, 5), np.sort(mk.rand(5))), Sample(mk.rand(2, 5), dx=2.0),
                 Sample(mk.rand(4, 3), dim=0)])
_add("cumulative_trapezoid", function("cumulative_trapezoid"),
     lambda mk: [Sample(mk.rand(2, 5)), Sample(mk.rand(2, 5), dx=0.5), Sample(mk.rand(4, 3), dim=0),
                 Sample(mk.rand(2, 5), np.sort(mk.rand(5))), Sample(mk.rand(1)),
                 Sample(mk.rand(2, 0), kind="degenerate")])


def _cdist_samples(mk):
    a = mk.rand(3, 4)
    b = mk.rand(5, 4)
    b[0] = a[1]  # a zero distance
    yield Sample(mk.rand(2, 3, 4), mk.rand(2, 5, 4))
    for p in (1.0, 0.0, 3.0, 0.5, 1.5, INF):
        yield Sample(mk.rand(3, 4), mk.rand(5, 4), p)
    yield Sample(mk.rand(1, 3, 4), mk.rand(2, 5, 4))
    yield Sample(a, b, kind="degenerate")
    yield Sample(a, b, 1.0, kind="degenerate")
    yield Sample(a, b, 0.5, kind="degenerate")
    yield Sample(mk.rand(30, 3), mk.rand(4, 3), kind="mm")
    yield Sample(mk.rand(4, 3), mk.rand(3, 3), compute_mode="use_mm_for_euclid_dist", kind="mm")
    yield Sample(mk.rand(3), mk.rand(3, 3), kind="error")
    yield Sample(mk.rand(2, 3), mk.rand(2, 4), kind="error")
    yield Sample(mk.rand(2, 3), mk.rand(2, 3), -1.0, kind="error")


# no second derivative in torch (the derivative for '_cdist_backward' is not implemented; tests/
# test_special_stats.py checks that retrograd refuses it the same way)
_add("cdist", function("cdist"), _cdist_samples, gradgrad=False, int_dtypes=True,
     gradcheck_kinds=("basic", "noncontig", "mm"))


def _cov_samples(mk):
    yield Sample(mk.rand(3, 5))
    yield Sample(mk.rand(6))
    yield Sample(mk.rand(3, 5), correction=0)
    yield Sample(mk.rand(2, 5), fweights=mk.index([1, 2, 0, 3, 1]))
    yield Sample(mk.rand(2, 5), aweights=mk.pos(5), grad=[0])
    yield Sample(mk.rand(2, 5), correction=2, fweights=mk.index([1, 2, 1, 3, 1]), aweights=mk.pos(5), grad=[0])
    yield Sample(mk.rand(3, 4), fweights=mk.index([0, 0, 0, 0]), kind="error")
    yield Sample(mk.rand(3, 4), fweights=mk.index([0, 1, -1, 0]), kind="error")
    yield Sample(mk.rand(1, 3, 4), kind="error")


# (the result is squeeze() of an intermediate: a view of it, as in PyTorch)
_add("cov", lambda t, x, **k: x.cov(**k), _cov_samples, view=True)
_add("corrcoef", lambda t, x: x.corrcoef(),
     lambda mk: [Sample(mk.rand(3, 5)), Sample(mk.rand(6)), Sample(mk.rand(2, 4)),
                 Sample(mk.arr([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]]), kind="degenerate")])
# predicates (Python bools, no gradient)
_add("is_nonzero", lambda t, x: x.is_nonzero(),
     lambda mk: [Sample(mk.rand(1)), Sample(mk.arr([0.0])), Sample(mk.arr(-0.0)), Sample(mk.rand(2), kind="error"),
                 Sample(mk.rand(0), kind="error")], grad=False)
_add("is_same_size", lambda t, x, y: x.is_same_size(y),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 3)), Sample(mk.rand(2, 3), mk.rand(3, 2))], grad=False)
_add("is_signed", lambda t, x: x.is_signed(), lambda mk: [Sample(mk.rand(2)), Sample(mk.index([1, 2], np.uint8))],
     grad=False)
