"""Op table entries: tensor plumbing with gradients (index_reduce, as_strided_scatter,
fill_diagonal_, torch.fill and the ``*_copy`` variants of view ops)."""
from .core import OpInfo, Sample, method, function, _known

OPS = []


def _add(name, op, samples, **kw):
    OPS.append(OpInfo(name, op, samples, **kw))


def _index_reduce_entry(reduce, include_self):
    def samples(mk):
        yield Sample(mk.rand(3, 4), 0, mk.index([0, 2, 0, 1, 2]), mk.rand(5, 4), reduce, include_self=include_self)
        yield Sample(mk.rand(3, 4), 1, mk.index([3, 3, 0]), mk.rand(3, 3), reduce, include_self=include_self)
        yield Sample(mk.rand(2, 3), -1, mk.index([2, 0]), mk.rand(2, 2), reduce, include_self=include_self)
        if reduce == "prod":   # zeros: the product of the other factors
            yield Sample(mk.arr([[1.0, 0.0], [3.0, 2.0]]), 0, mk.index([0, 0, 1]),
                         mk.arr([[0.0, 2.0], [4.0, 0.0], [5.0, 6.0]]), reduce, include_self=include_self,
                         kind="degenerate")
    skip = {}
    if reduce in ("amax", "amin"):
        # (as scatter_reduce's entries: torch's tie rule for an overwritten self differs, see test_edges_reduce)
        skip["ties"] = skip["nonfinite"] = "ties between scattered values: gradient split differs (see scatter_reduce)"
    name = f"index_reduce({reduce}{'' if include_self else ', include_self=False'})"
    _add(name, method("index_reduce"), samples, skip=skip, inplace="index_reduce_", covers=("index_reduce",),
         gradcheck_kinds=("basic",) if reduce in ("mean", "prod") else ("0d",), int_dtypes=False)


for _r in ("prod", "mean", "amax", "amin"):
    for _inc in (True, False):
        _index_reduce_entry(_r, _inc)


_add("as_strided_scatter", method("as_strided_scatter"),
     lambda mk: [Sample(mk.rand(3, 3), mk.rand(2), (2,), (4,)),
                 Sample(mk.rand(4, 3), mk.rand(2, 2), (2, 2), (3, 1), 1),
                 Sample(mk.rand(6), mk.rand(3), (3,), (1,), 3)],
     skip={"noncontig": "torch scatters into its clone's strides; retrograd into the contiguous copy",
           "negstride": "as noncontig"})


_known("as_strided_scatter", "grad gradgrad", "*",
       "torch 2.13 bug, retrograd is right: torch's gradient for input keeps only the scattered positions "
       "(torch.autograd.gradcheck fails on torch's own as_strided_scatter); retrograd gives the upstream gradient "
       "with those positions zeroed, as finite differences do (tests/test_plumbing.py gradchecks it)")


def _fill_diagonal(lib, x, value, wrap=False):
    return x.clone().fill_diagonal_(value, wrap=wrap)


_fill_diagonal.__name__ = "fill_diagonal_"
_add("fill_diagonal_", _fill_diagonal,
     lambda mk: [Sample(mk.rand(3, 3), 2.5), Sample(mk.rand(2, 4), -1.0), Sample(mk.rand(7, 3), 0.5, wrap=True),
                 Sample(mk.rand(7, 3), 0.5), Sample(mk.rand(2, 2, 2), 3.0)])
_add("torch.fill", function("fill"), lambda mk: [Sample(mk.rand(2, 3), 1.5), Sample(mk.rand(4), -2.0)],
     int_dtypes=False)
_add("torch.as_strided_copy", function("as_strided_copy"),
     lambda mk: [Sample(mk.rand(3, 3), (2, 2), (1, 3)), Sample(mk.rand(6), (2,), (2,), 1)],
     skip={"noncontig": "as_strided reads the storage, which differs with the layout",
           "negstride": "as noncontig"})
_add("torch.split_with_sizes_copy", function("split_with_sizes_copy"),
     lambda mk: [Sample(mk.rand(5, 2), [2, 3]), Sample(mk.rand(2, 4), [1, 1, 2], 1)])
_add("torch.detach_copy", function("detach_copy"), lambda mk: [Sample(mk.rand(2, 3))], grad=False, gradgrad=False)
_add("as_subclass", lambda lib, x: x.as_subclass(lib.Tensor), lambda mk: [Sample(mk.rand(2, 3))], view=True)
