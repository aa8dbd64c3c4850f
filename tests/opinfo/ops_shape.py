"""Op table entries: shape and view ops (view/reshape, squeeze, expand, transposes, split and
friends, diagonals, flips, repeats), indexing (``t[idx]``, ``t[idx] = v``, index_put, nonzero) and
pixel (un)shuffle. ``view=True`` where torch's first sample is a view
of the input (its ``_base`` is set)."""
import numpy as np

from .core import OpInfo, Sample, method

OPS = []


def _add(name, op, samples, **kw):
    OPS.append(OpInfo(name, op, samples, **kw))


def prop(name):
    """op reading the property Tensor.<name> of the first argument."""
    def op(lib, x):
        return getattr(x, name)
    op.__name__ = name
    return op


_NEG = {"negstride": "a negative-stride input (retrograd only) is not viewable where torch's contiguous copy is"}


# ---------------------------------------------------------------------- view / reshape family

def _view_samples(mk):
    yield Sample(mk.rand(2, 3), 3, 2)
    yield Sample(mk.rand(2, 3), -1)
    yield Sample(mk.rand(2, 3, 2), (4, -1))
    yield Sample(mk.rand(), 1, kind="0d")
    yield Sample(mk.rand(1), (), kind="size1")
    yield Sample(mk.rand(0, 3), 3, 0, kind="empty")
    yield Sample(mk.rand(0, 3), -1, 0, kind="empty")      # (-1 is ambiguous: an error)
    yield Sample(mk.rand(2, 3), 4, kind="bad")


_add("view", method("view"), _view_samples, view=True, skip=_NEG)
_add("reshape", method("reshape"), _view_samples, view=True)
_add("view_as", lambda lib, x, y: x.view_as(y),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(3, 2), grad=[0]), Sample(mk.rand(), mk.rand(1, 1), grad=[0], kind="0d")],
     view=True, skip=_NEG)
_add("reshape_as", lambda lib, x, y: x.reshape_as(y),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(3, 2), grad=[0]), Sample(mk.rand(0, 2), mk.rand(2, 0), grad=[0], kind="empty")],
     view=True)
_add("flatten", method("flatten"),
     lambda mk: [Sample(mk.rand(2, 3, 2)), Sample(mk.rand(2, 3, 2), 1), Sample(mk.rand(2, 3, 2), 0, -2),
                 Sample(mk.rand(2, 3, 2), -1, -1), Sample(mk.rand(), kind="0d"), Sample(mk.rand(0, 2), kind="empty"),
                 Sample(mk.rand(2, 3), 1, 0, kind="bad")], view=True)
_add("ravel", method("ravel"), lambda mk: [Sample(mk.rand(2, 3)), Sample(mk.rand(), kind="0d")], view=True)
_add("unflatten", method("unflatten"),
     lambda mk: [Sample(mk.rand(2, 6), 1, (2, 3)), Sample(mk.rand(2, 6), -1, (-1, 3)), Sample(mk.rand(6), 0, (1, 6, 1)),
                 Sample(mk.rand(0, 4), 1, (2, 2), kind="empty"), Sample(mk.rand(2, 6), 1, (4, 2), kind="bad")],
     view=True)


def _squeeze_samples(mk):
    yield Sample(mk.rand(2, 1, 3))
    yield Sample(mk.rand(2, 1, 3), 1)
    yield Sample(mk.rand(2, 1, 3), 0)
    yield Sample(mk.rand(1, 1, 3), (0, 1))
    yield Sample(mk.rand(2, 1, 1), -1)
    yield Sample(mk.rand(), kind="0d")
    yield Sample(mk.rand(), 0, kind="0d")
    yield Sample(mk.rand(1), kind="size1")
    yield Sample(mk.rand(0, 1), kind="empty")


_add("squeeze", method("squeeze"), _squeeze_samples, view=True, inplace="squeeze_")
_add("unsqueeze", method("unsqueeze"),
     lambda mk: [Sample(mk.rand(2, 3), 1), Sample(mk.rand(2, 3), -1), Sample(mk.rand(2, 3), 0),
                 Sample(mk.rand(), 0, kind="0d"), Sample(mk.rand(), -1, kind="0d"), Sample(mk.rand(0), 1, kind="empty"),
                 Sample(mk.rand(2, 3), 4, kind="bad")], view=True, inplace="unsqueeze_")


def _expand_samples(mk):
    yield Sample(mk.rand(3, 1), 2, 3, 4)
    yield Sample(mk.rand(3, 1), -1, 4)
    yield Sample(mk.rand(3, 1), (3, 1))
    yield Sample(mk.rand(), 2, kind="0d")
    yield Sample(mk.rand(1), 0, kind="empty")
    yield Sample(mk.rand(3, 1), 2, 4, kind="bad")


_add("expand", method("expand"), _expand_samples, view=True)
_add("broadcast_to", lambda lib, x, *s: x.broadcast_to(s),
     lambda mk: [Sample(mk.rand(3, 1), 2, 3, 4), Sample(mk.rand(), 2, kind="0d")], view=True)
_add("expand_as", lambda lib, x, y: x.expand_as(y),
     lambda mk: [Sample(mk.rand(3, 1), mk.rand(2, 3, 4), grad=[0]), Sample(mk.rand(), mk.rand(0, 2), grad=[0], kind="empty")],
     view=True)


# ------------------------------------------------------------------------------- transposes

def _transpose_samples(mk):
    yield Sample(mk.rand(2, 3, 4), 0, 2)
    yield Sample(mk.rand(2, 3), -1, 0)
    yield Sample(mk.rand(2, 3), 1, 1)
    yield Sample(mk.rand(), 0, -1, kind="0d")
    yield Sample(mk.rand(0, 2), 0, 1, kind="empty")
    yield Sample(mk.rand(2, 3), 0, 2, kind="bad")


for _n in ("transpose", "swapaxes", "swapdims"):
    _add(_n, method(_n), _transpose_samples, view=True, inplace=_n + "_")
_add("t", method("t"),
     lambda mk: [Sample(mk.rand(2, 3)), Sample(mk.rand(3)), Sample(mk.rand(), kind="0d"),
                 Sample(mk.rand(0, 2), kind="empty"), Sample(mk.rand(2, 2, 2), kind="bad")], view=True, inplace="t_")
for _n in ("T", "mT", "mH", "H", "adjoint"):
    def _mat_samples(mk, n=_n):
        yield Sample(mk.rand(2, 3))
        if n in ("mT", "mH", "adjoint"):
            yield Sample(mk.rand(2, 3, 4))
        yield Sample(mk.rand(0, 2), kind="empty")
        yield Sample(mk.rand(3), kind="bad" if n != "T" else "1d")
    _add(_n, method(_n) if _n == "adjoint" else prop(_n), _mat_samples, view=True)
_add("permute", method("permute"),
     lambda mk: [Sample(mk.rand(2, 3, 4), 2, 0, 1), Sample(mk.rand(2, 3, 4), (-1, 1, 0)), Sample(mk.rand(), (), kind="0d"), Sample(mk.rand(), kind="bad"),
                 Sample(mk.rand(2, 3), 0, 0, kind="bad")], view=True)
for _n in ("movedim", "moveaxis"):
    _add(_n, method(_n),
         lambda mk: [Sample(mk.rand(2, 3, 4), 0, -1), Sample(mk.rand(2, 3, 4), (0, 1), (2, 0)),
                     Sample(mk.rand(), 0, 0, kind="0d"), Sample(mk.rand(2, 3), (0, 0), (1, 0), kind="bad")], view=True)


# ----------------------------------------------------------------------- narrowing, selecting

_add("narrow", method("narrow"),
     lambda mk: [Sample(mk.rand(3, 4), 1, 1, 2), Sample(mk.rand(3, 4), -2, -2, 1), Sample(mk.rand(3, 4), 0, 3, 0),
                 Sample(mk.rand(3, 4), 0, 2, 2, kind="bad")], view=True)
_add("select", method("select"),
     lambda mk: [Sample(mk.rand(3, 4), 1, 2), Sample(mk.rand(3, 4), -1, -1), Sample(mk.rand(3), 0, 0),
                 Sample(mk.rand(3, 4), 0, 3, kind="bad"), Sample(mk.rand(), 0, 0, kind="bad")], view=True)
_add("diagonal", method("diagonal"),
     lambda mk: [Sample(mk.rand(3, 4)), Sample(mk.rand(3, 4), 1), Sample(mk.rand(3, 4), -2), Sample(mk.rand(2, 3, 4), 0, 0, 2),
                 Sample(mk.rand(3, 4), 5, kind="empty"), Sample(mk.rand(3, 4), 0, 1, 1, kind="bad")], view=True)
_add("unfold", method("unfold"),
     lambda mk: [Sample(mk.rand(3, 5), 1, 2, 1), Sample(mk.rand(3, 5), 1, 2, 2), Sample(mk.rand(), 0, 1, 1, kind="0d"),
                 Sample(mk.rand(3, 5), 1, 6, 1, kind="bad")], view=True)
_add("as_strided", method("as_strided"),
     lambda mk: [Sample(mk.rand(3, 4), (2, 2), (1, 2), 1), Sample(mk.rand(3, 4), (3, 3), (1, 1)),
                 Sample(mk.rand(3, 4), (13,), (1,), kind="bad")], view=True, skip=_NEG)
_add("narrow_copy", method("narrow_copy"),
     lambda mk: [Sample(mk.rand(3, 4), 1, 1, 2), Sample(mk.rand(3, 4), 0, 3, 0, kind="empty")])


def _multi_samples(name, unsafe=False):
    def samples(mk):
        if name == "split":
            yield Sample(mk.rand(5, 2), 2)
            yield Sample(mk.rand(5, 2), [1, 4], kind="bad" if unsafe else "basic")   # (unsafe_split: ints only)
            yield Sample(mk.rand(5, 2), 1, 1)
            yield Sample(mk.rand(0, 2), 1, kind="empty")
            yield Sample(mk.rand(5, 2), [1, 1], kind="bad")
        elif name == "split_with_sizes":
            yield Sample(mk.rand(5, 2), [2, 3])
            yield Sample(mk.rand(5, 2), [0, 2], 1, kind="empty")
        elif name == "chunk":
            yield Sample(mk.rand(5, 2), 2)
            yield Sample(mk.rand(5, 2), 3, -1)
            yield Sample(mk.rand(0, 2), 2, kind="empty")
        elif name == "unbind":
            yield Sample(mk.rand(3, 2))
            yield Sample(mk.rand(3, 2), -1)
            yield Sample(mk.rand(0, 2), kind="empty")
        elif name == "tensor_split":
            yield Sample(mk.rand(5, 2), 3)
            yield Sample(mk.rand(5, 2), [1, 3], 0)
            yield Sample(mk.rand(5, 2), [4, 1])
        elif name in ("hsplit", "vsplit", "dsplit"):
            yield Sample(mk.rand(2, 4, 2), 2)
            yield Sample(mk.rand(2, 4, 2), [1])
            if name == "hsplit":
                yield Sample(mk.rand(4), 2, kind="1d")
            yield Sample(mk.rand(3, 3, 3), 2, kind="bad")
    return samples


for _n in ("split", "split_with_sizes", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit"):
    _add(_n, method(_n), _multi_samples(_n), view=True)
for _n, _base in (("unsafe_split", "split"), ("unsafe_chunk", "chunk"), ("unsafe_split_with_sizes", "split_with_sizes")):
    # the outputs share the input's memory but are not views (in-place writes allowed)
    _add(_n, method(_n), _multi_samples(_base, unsafe=True))


# ------------------------------------------------------------------------- diagonals, triangles

_add("diagflat", method("diagflat"), lambda mk: [Sample(mk.rand(2, 2)), Sample(mk.rand(3), -1)])
_add("select_scatter", lambda lib, x, s, *a: lib.select_scatter(x, s, *a),
     lambda mk: [Sample(mk.rand(3, 4), mk.rand(4), 0, 1), Sample(mk.rand(3, 4), mk.rand(3), -1, -1),
                 Sample(mk.rand(3, 4), mk.rand(3), 0, 1, kind="bad")])
_add("slice_scatter", lambda lib, x, s, *a: lib.slice_scatter(x, s, *a),
     lambda mk: [Sample(mk.rand(3, 4), mk.rand(3, 2), 1, 1, 3), Sample(mk.rand(3, 4), mk.rand(2, 4), 0, None, None, 2)])
_add("diagonal_scatter", lambda lib, x, s, *a: lib.diagonal_scatter(x, s, *a),
     lambda mk: [Sample(mk.rand(3, 4), mk.rand(3)), Sample(mk.rand(3, 4), mk.rand(3), 1),
                 Sample(mk.rand(3, 4), mk.rand(2), kind="bad")])


# --------------------------------------------------------------------------------- copies

_add("flip", method("flip"),
     lambda mk: [Sample(mk.rand(2, 3), 0), Sample(mk.rand(2, 3), (0, 1)), Sample(mk.rand(2, 3), -1),
                 Sample(mk.rand(), (), kind="0d"), Sample(mk.rand(0, 2), 1, kind="empty"), Sample(mk.rand(2, 3), 0, 0, kind="bad"),
                 Sample(mk.rand(), kind="bad")])
_add("fliplr", method("fliplr"), lambda mk: [Sample(mk.rand(2, 3)), Sample(mk.rand(3), kind="bad")])
_add("flipud", method("flipud"), lambda mk: [Sample(mk.rand(2, 3)), Sample(mk.rand(), kind="bad")])
_add("roll", method("roll"),
     lambda mk: [Sample(mk.rand(2, 3), 1), Sample(mk.rand(2, 3), -1, 1), Sample(mk.rand(2, 3), (1, 2), (0, 1)),
                 Sample(mk.rand(0, 2), 1, kind="empty"), Sample(mk.rand(2, 3), (1, 2), 0, kind="bad")])
_add("rot90", method("rot90"),
     lambda mk: [Sample(mk.rand(2, 3)), Sample(mk.rand(2, 3), 0), Sample(mk.rand(2, 3), 2, (1, 0)),
                 Sample(mk.rand(2, 3, 2), -1, (0, 2)), Sample(mk.rand(2, 3), 4), Sample(mk.rand(3), kind="bad")])
_add("repeat", method("repeat"),
     lambda mk: [Sample(mk.rand(2, 3), 2, 1), Sample(mk.rand(2, 3), 1, 1), Sample(mk.rand(3), 2, 2), Sample(mk.rand(), 3, kind="0d"),
                 Sample(mk.rand(2, 3), 0, 1, kind="empty"), Sample(mk.rand(2, 3), 2, kind="bad")])
_add("tile", method("tile"),
     lambda mk: [Sample(mk.rand(2, 3), (2,)), Sample(mk.rand(2, 3), (1, 1)), Sample(mk.rand(), (2, 2), kind="0d")])
# (torch's result is a view of its own internal copy: _base set, no write-through)
_add("repeat_interleave", method("repeat_interleave"),
     lambda mk: [Sample(mk.rand(2, 3), 2), Sample(mk.rand(2, 3), 1), Sample(mk.rand(2, 3), 2, 0), Sample(mk.rand(2, 3), 1, -1),
                 Sample(mk.rand(), 3, kind="0d"), Sample(mk.rand(0, 2), 2, 1, kind="empty")], view=True)
_add("diff", method("diff"),
     lambda mk: [Sample(mk.rand(2, 4)), Sample(mk.rand(2, 4), 2, 0), Sample(mk.rand(4), 3), Sample(mk.rand(2, 4), 0),
                 Sample(mk.rand(), kind="bad")])


# -------------------------------------------------------------------------------- indexing

def _getitem(lib, x, *idx):
    return x[idx[0] if len(idx) == 1 else idx]


def _getitem_samples(mk):
    yield Sample(mk.rand(3, 4), 1)
    yield Sample(mk.rand(3, 4), slice(1, 3))
    yield Sample(mk.rand(3, 4), slice(None, None, 2))
    yield Sample(mk.rand(3, 4), Ellipsis, None)
    yield Sample(mk.rand(3, 4), -1, slice(None, -1))
    yield Sample(mk.rand(3, 4), slice(None))
    yield Sample(mk.rand(3, 4), slice(-5, None))
    yield Sample(mk.rand(3, 4), mk.index([0, 2, 2]))
    yield Sample(mk.rand(3, 4), slice(None), mk.index([[1], [3]]))
    yield Sample(mk.rand(3, 4), mk.mask(3, 4))
    yield Sample(mk.rand(3, 4), mk.index([1, 0]), mk.index([3, 3]))
    yield Sample(mk.rand(3, 4), True)
    yield Sample(mk.rand(3, 4), mk.index(1))
    yield Sample(mk.rand(), None, kind="0d")
    yield Sample(mk.rand(), Ellipsis, kind="0d")
    yield Sample(mk.rand(), mk.index(True, np.bool_), kind="0d")
    yield Sample(mk.rand(), mk.index(False, np.bool_), kind="0d")
    yield Sample(mk.rand(0, 3), mk.index([], np.int64), kind="empty")
    yield Sample(mk.rand(0, 3), slice(1, None), kind="empty")
    yield Sample(mk.rand(3, 4), 3, kind="bad")
    yield Sample(mk.rand(3, 4), mk.index([4]), kind="bad")
    yield Sample(mk.rand(3, 4), slice(None, None, -1), kind="bad")
    yield Sample(mk.rand(), 0, kind="bad")


_add("__getitem__", _getitem, _getitem_samples, view=True)


def _setitem(lib, x, v, *idx):
    y = x * 1
    y[idx[0] if len(idx) == 1 else idx] = v
    return y


def _setitem_samples(mk):
    yield Sample(mk.rand(3, 4), mk.rand(4), 1)
    yield Sample(mk.rand(3, 4), mk.rand(), slice(1, 3))
    yield Sample(mk.rand(3, 4), 2.5, Ellipsis)
    yield Sample(mk.rand(3, 4), mk.rand(1, 4), slice(None))
    yield Sample(mk.rand(3, 4), mk.rand(2), mk.index([0, 2]), 1)
    yield Sample(mk.rand(3, 4), mk.rand(), mk.mask(3, 4))
    yield Sample(mk.rand(3, 4), mk.rand(3, 2), slice(None), mk.index([3, 0]))
    yield Sample(mk.rand(3, 4), mk.rand(4), mk.index([1, 1]), kind="ties")   # (last write wins)
    yield Sample(mk.rand(3, 4), mk.rand(), False)
    yield Sample(mk.rand(), 0.0, mk.index(False, np.bool_), kind="0d")
    yield Sample(mk.rand(), mk.rand(), mk.index(True, np.bool_), kind="0d")
    yield Sample(mk.rand(), mk.rand(1), Ellipsis, kind="0d")
    yield Sample(mk.rand(0, 3), mk.rand(3), mk.index([], np.int64), kind="empty")
    yield Sample(mk.rand(3, 4), mk.rand(3), 1, kind="bad")
    yield Sample(mk.rand(3, 4), mk.rand(2, 2), mk.index([0, 2]), kind="bad")
    yield Sample(mk.rand(), 1.0, 0, kind="bad")


_add("__setitem__", _setitem, _setitem_samples)


def _index_put(lib, x, v, *idx, accumulate=False):
    return x.index_put(idx, v, accumulate=accumulate)


def _index_put_(lib, x, v, *idx, accumulate=False):
    y = x * 1
    return y.index_put_(idx, v, accumulate=accumulate)


def _index_put_samples(mk):
    yield Sample(mk.rand(3, 4), mk.rand(2, 4), mk.index([2, 0]))
    yield Sample(mk.rand(3, 4), mk.rand(4), mk.index([2, 0, 2]), accumulate=True)
    yield Sample(mk.rand(3, 4), mk.rand(3), mk.index([2, 0, 2]), accumulate=True, kind="bad")
    yield Sample(mk.rand(3, 4), mk.rand(), mk.index([1, 2]), mk.index([0, 3]))
    yield Sample(mk.rand(3, 4), mk.rand(), mk.mask(3, 4), accumulate=True)
    yield Sample(mk.rand(0, 2), mk.rand(2), mk.index([], np.int64), kind="empty")
    yield Sample(mk.rand(3, 4), mk.rand(3), mk.index([0, 1]), kind="bad")


_add("index_put", _index_put, _index_put_samples)
_add("index_put_", _index_put_, _index_put_samples)
_add("nonzero", method("nonzero"),
     lambda mk: [Sample(mk.arr([[0., 1.5], [-2., 0.]])), Sample(mk.arr([[0., 1.5], [-2., 0.]]), as_tuple=True),
                 Sample(mk.arr(0.), kind="0d"), Sample(mk.arr(3.), as_tuple=True, kind="0d"), Sample(mk.rand(0, 2), kind="empty")],
     grad=False)
_add("argwhere", method("argwhere"), lambda mk: [Sample(mk.arr([[0., 1.5], [-2., 0.]])), Sample(mk.arr(2.), kind="0d")],
     grad=False)


# --------------------------------------------------------------------------- pixel shuffle
# (einsum, diag, diag_embed, triu and tril have their entries in ops_linalg)

_add("F.pixel_shuffle", lambda lib, x, r: lib.nn.functional.pixel_shuffle(x, r),
     lambda mk: [Sample(mk.rand(1, 8, 2, 3), 2), Sample(mk.rand(2, 4, 2, 3), 1), Sample(mk.rand(3, 4, 1, 2), 2),
                 Sample(mk.rand(1, 3, 2, 2), 2, kind="bad")])
_add("F.pixel_unshuffle", lambda lib, x, r: lib.nn.functional.pixel_unshuffle(x, r),
     lambda mk: [Sample(mk.rand(1, 2, 4, 6), 2), Sample(mk.rand(2, 4, 2, 3), 1), Sample(mk.rand(2, 2, 3), 1),
                 Sample(mk.rand(1, 2, 3, 4), 2, kind="bad")])
