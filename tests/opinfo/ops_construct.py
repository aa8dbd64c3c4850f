"""Op table entries: construction and statistics functions (tril/triu_indices, block_diag,
cartesian_prod, combinations, trapezoid rules, cov, corrcoef, cdist, pdist, the signal windows,
unravel_index)."""
import numpy as np

from .core import OpInfo, Sample, method, function

OPS = []
INF, NAN = np.inf, np.nan


def _add(name, op, samples, **kw):
    OPS.append(OpInfo(name, op, samples, **kw))


def _no_args(fn):
    """op whose arguments are plain numbers (no tensors in)."""
    def op(lib, *args, **kwargs):
        if "dtype" in kwargs and isinstance(kwargs["dtype"], str):
            kwargs["dtype"] = getattr(lib, kwargs["dtype"])
        return fn(lib, *args, **kwargs)
    op.__name__ = getattr(fn, "__name__", "op")
    return op


# samples of functions of plain numbers are of kind "numbers", not "basic": there is no input
# tensor to derive layouts / dtypes from (nor to put on the meta device, tests/test_meta.py)
def _idx_samples(mk):
    yield Sample(3, 4, kind="numbers")
    yield Sample(4, 3, 1, kind="numbers")
    yield Sample(4, 3, -2, kind="numbers")
    yield Sample(3, 3, 5, kind="numbers")
    yield Sample(0, 3, kind="empty")
    yield Sample(3, 3, dtype="int32", kind="numbers")
    yield Sample(3, 3, dtype="float32", kind="error")


for _n in ("tril_indices", "triu_indices"):
    _add(_n, _no_args(function(_n)), _idx_samples, grad=False)


_add("block_diag", lambda t, *xs: t.block_diag(*xs),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 2)), Sample(mk.rand(2, 3), mk.rand(3), mk.arr(1.5)),
                 Sample(mk.rand(0, 2), mk.rand(2, 0), mk.rand(1, 1), kind="empty"),
                 Sample(mk.rand(2, 2), mk.index([[1, 2]]), kind="mixed"),
                 Sample(mk.rand(2, 2, 2), kind="error")])
_add("cartesian_prod", lambda t, *xs: t.cartesian_prod(*xs),
     lambda mk: [Sample(mk.rand(3), mk.rand(2)), Sample(mk.rand(2), mk.rand(2), mk.rand(3)),
                 Sample(mk.rand(0), mk.rand(2), kind="empty"), Sample(mk.rand(2, 2), mk.rand(2), kind="error")])
_add("cartesian_prod(one)", lambda t, x: t.cartesian_prod(x), lambda mk: [Sample(mk.rand(3))], view=True,
     skip={"views": "the input itself is returned (is-the-input is compared by the views test of other entries)"})
_add("combinations", function("combinations"),
     lambda mk: [Sample(mk.rand(4)), Sample(mk.rand(4), 3), Sample(mk.rand(4), 1), Sample(mk.rand(3), 2, True),
                 Sample(mk.rand(3), r=3, with_replacement=True), Sample(mk.rand(3), 5), Sample(mk.rand(3), 0),
                 Sample(mk.rand(0), kind="empty"), Sample(mk.rand(2, 2), kind="error"),
                 Sample(mk.rand(3), -1, kind="error")])


def _trap_samples(mk):
    yield Sample(mk.rand(3, 4))
    yield Sample(mk.rand(3, 4), dx=0.5)
    yield Sample(mk.rand(3, 4), dim=0)
    yield Sample(mk.rand(3, 4), mk.rand(4))
    yield Sample(mk.rand(3, 4), mk.rand(3, 4))
    yield Sample(mk.rand(3, 4), mk.rand(3), dim=0)
    yield Sample(mk.rand(3, 1), kind="size1")
    yield Sample(mk.rand(3, 0), kind="empty")
    yield Sample(mk.rand(3), mk.rand(4), kind="error")


_add("trapezoid", function("trapezoid"), _trap_samples)
_add("trapz", function("trapz"), lambda mk: [Sample(mk.rand(3, 4)), Sample(mk.rand(3, 4), mk.rand(4)),
                                               Sample(mk.rand(3, 4), dx=2.0)])
_add("cumulative_trapezoid", function("cumulative_trapezoid"),
     lambda mk: [Sample(mk.rand(3, 4)), Sample(mk.rand(3, 4), dx=0.5), Sample(mk.rand(3, 4), dim=0),
                 Sample(mk.rand(3, 4), mk.rand(4)), Sample(mk.rand(3, 4), mk.rand(3, 4)),
                 Sample(mk.rand(3, 1), kind="size1"), Sample(mk.rand(3), mk.rand(4), kind="error")])


def _cov_samples(mk):
    yield Sample(mk.rand(3, 5))
    yield Sample(mk.rand(5))
    yield Sample(mk.rand(3, 5), correction=0)
    yield Sample(mk.rand(3, 5), correction=2)
    yield Sample(mk.rand(3, 5), fweights=mk.index([1, 2, 1, 3, 1]))
    yield Sample(mk.rand(3, 5), aweights=mk.pos(5), grad=[0])
    yield Sample(mk.rand(3, 5), fweights=mk.index([1, 2, 1, 3, 1]), aweights=mk.pos(5), grad=[0])
    yield Sample(mk.rand(3, 5), correction=0, aweights=mk.pos(5), grad=[0])
    yield Sample(mk.rand(2, 2, 2), kind="error")
    yield Sample(mk.rand(3, 5), fweights=mk.index([1, -2, 1, 3, 1]), kind="error")
    yield Sample(mk.rand(3, 5), fweights=mk.index([1, 2, 1]), kind="error")


_add("cov", method("cov"), _cov_samples, covers=("torch.cov",), view=True)
_add("corrcoef", method("corrcoef"),
     lambda mk: [Sample(mk.rand(3, 5)), Sample(mk.rand(5)), Sample(mk.rand(2, 4)), Sample(mk.rand(2, 2, 2),
                                                                                         kind="error")],
     covers=("torch.corrcoef",), skip={"ties": "a constant row: 0 / 0"})


def _cdist_samples(mk):
    yield Sample(mk.rand(3, 2), mk.rand(4, 2))
    for p in (0.0, 1.0, 3.0, 1.5, INF):
        yield Sample(mk.rand(3, 2), mk.rand(4, 2), p)
    yield Sample(mk.rand(2, 3, 2), mk.rand(4, 2), kind="broadcast")
    yield Sample(mk.rand(3, 2), mk.rand(4, 2), compute_mode="use_mm_for_euclid_dist")
    yield Sample(mk.rand(30, 2), mk.rand(4, 2), kind="large")
    yield Sample(mk.rand(3, 2), mk.rand(4, 2), compute_mode="donot_use_mm_for_euclid_dist")
    yield Sample(mk.rand(0, 2), mk.rand(4, 2), kind="empty")
    yield Sample(mk.rand(3), mk.rand(3), kind="error")
    yield Sample(mk.rand(3, 2), mk.rand(3, 4), kind="error")
    yield Sample(mk.rand(3, 2), mk.rand(3, 2), -1.0, kind="error")


_PAIR_GG = ("PyTorch has no double backward for cdist / pdist ('the derivative for _cdist_backward is not "
            "implemented'); retrograd's is gradgradchecked in tests/test_construct.py")
_add("cdist", function("cdist"), _cdist_samples,
     skip={"ties": "coincident points: a kink of the norm", "nonfinite": "inf - inf", "gradgrad": _PAIR_GG},
     gradcheck_kinds=("basic", "broadcast", "large"))
_add("pdist", function("pdist"),
     lambda mk: [Sample(mk.rand(4, 3)), Sample(mk.rand(4, 3), 1.0), Sample(mk.rand(4, 3), 3.0),
                 Sample(mk.rand(4, 3), INF), Sample(mk.rand(4, 3), 0.0), Sample(mk.rand(1, 3), kind="size1"),
                 Sample(mk.rand(3), kind="error"), Sample(mk.rand(3, 2), -1.0, kind="error")],
     skip={"ties": "coincident points: a kink of the norm", "nonfinite": "inf - inf", "gradgrad": _PAIR_GG})


def _win_samples(mk):
    for n in (5, 6, 1, 0):
        yield Sample(n, kind="numbers")
        yield Sample(n, False, kind="numbers")
    yield Sample(7, dtype="float64", kind="numbers")
    yield Sample(5, dtype="int64", kind="error")
    yield Sample(-1, kind="error")


for _n in ("bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"):
    _add(_n, _no_args(function(_n)), _win_samples, grad=False)
_add("hamming_window(alpha)", _no_args(function("hamming_window")),
     lambda mk: [Sample(5, True, 0.5, 0.4, kind="numbers"), Sample(6, False, alpha=0.6, beta=0.3, kind="numbers")],
     grad=False)
_add("kaiser_window(beta)", _no_args(function("kaiser_window")),
     lambda mk: [Sample(6, False, beta=3.0, kind="numbers"), Sample(5, True, 0.5, kind="numbers")], grad=False)


_add("unravel_index", function("unravel_index"),
     lambda mk: [Sample(mk.index([4, 7, 0]), (3, 4)), Sample(mk.index(5), (3, 4)), Sample(mk.index([[1, 2], [3, 23]]),
                                                                                          (2, 3, 4)),
                 Sample(mk.index([12, -1]), (3, 4), kind="wrap"), Sample(mk.index([3]), 5),
                 Sample(mk.index([1.5], np.float64), (3, 4), kind="error")], grad=False, view=True)
