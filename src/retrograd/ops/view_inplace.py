"""In-place ops on views: CopySlices.

When an in-place op writes into a view of a tensor that takes part in autograd, the
base's history changes too. As PyTorch does, the base's grad_fn becomes a CopySlices
node wrapping the in-place op's node ``fn``: in backward, CopySlices takes the base's
gradient, hands the view's slice of it to ``fn``, writes what ``fn`` returns for the
view's old value back into that slice, and passes the rest of ``fn``'s gradients on.
``y = x * 2; y[0] = 0`` thus gives ``x.grad = [0, 2, 2]`` after ``y.sum().backward()``.

Every other view of that base is then stale: the next time its grad_fn is looked at, it
becomes an AsStridedBackward0 on the base's current grad_fn (``regenerate_view``). Views are
known by the flat positions of their elements in the base, read from the arrays' memory
layout, as PyTorch keeps a view's geometry rather than the ops that made it.
"""
import numpy as np

from ._base import xp_for, address
from ._base import Tensor, OpNode, _state, view_rebase_error, INTERNAL_OVERLAP_MSG, set_history
from ..autograd.graph import Node, _seq, _RELEASED, SECOND_BACKWARD_MSG

__all__ = []

_next = next


class CopySlices(Node):
    """grad_fn of a base after an in-place op on one of its views. The view is known by
    the flat positions of its elements in the base (``pos``; None: all of them, in
    order), fixed when the write happened, as PyTorch keeps the view's geometry."""

    def __init__(self, base_edge, base_meta, place, view_shape, fn):
        self.next_functions = (base_edge,) + tuple(fn.next_functions[1:])
        self._seq = _next(_seq)
        self._out_meta = (base_meta,)
        self.place = place
        self.view_shape = view_shape
        self.fn = fn
        self._saved = ()  # so the engine releases ``fn``'s saved tensors with ours
        if Node._anomaly_stack is not None:
            self._trace = Node._anomaly_stack()

    def _release(self):
        self._saved = _RELEASED
        if self.fn._saved is not None:
            self.fn._release()

    def _call_fn(self, grad_slice):
        fn = self.fn
        if fn._saved is _RELEASED:
            raise RuntimeError(SECOND_BACKWARD_MSG)
        res = fn._apply([grad_slice])
        if type(res) is not tuple:
            res = tuple(res) if isinstance(res, list) else (res,)
        return res

    def _apply(self, grads):
        xp = xp_for(grads)
        g = grads[0]
        if self.next_functions[0][0] is not None and self.place.overlapping():
            # (a view with elements sharing memory, as after expand: PyTorch's backward
            # refuses to write the base's gradient into it)
            raise RuntimeError(INTERNAL_OVERLAP_MSG)
        vshape = self.view_shape
        cplx = self.place.cplx     # (the base's gradient is then worked on as its (re, im) pairs)
        if cplx:
            from ._decomp import _real_dt
        if not _state.grad and self.place.geo is not None and type(g._data) is np.ndarray:
            # Plain arrays: copy the gradient, run fn on the view's slice (a strided view
            # of the copy), write its gradient for the view's old value back into it.
            result = xp.array(g._data, order="C")
            sl = self.place.view_into((result.view(_real_dt(result.dtype)) if cplx else result).reshape(-1))
            res = self._call_fn(Tensor._make(sl.copy()))
            r0 = res[0] if res else None
            sl[...] = 0 if r0 is None else r0._data
            return (Tensor._make(result),) + tuple(res[1:])
        pos = self.place.pos()
        if not _state.grad:
            gd = g._data
            flat = xp.array(gd, order="C")
            flat = (flat.view(_real_dt(gd.dtype)) if cplx else flat).reshape(-1)
            sl = flat if pos is None else flat[pos]
            res = self._call_fn(Tensor._make(sl.reshape(vshape).copy()))
            r0 = res[0] if res else None
            if pos is None:
                flat[...] = 0 if r0 is None else r0._data.reshape(-1)
            else:
                flat[pos] = 0 if r0 is None else r0._data.reshape(-1)
            return (Tensor._make((flat.view(gd.dtype) if cplx else flat).reshape(gd.shape)),) + tuple(res[1:])
        # create_graph: the same, written with differentiable ops that select (as PyTorch's
        # clone + copy_ into the view): g outside the view, r0 scattered into it; no arithmetic
        # between the two, so an inf in g does not meet itself there (inf - inf).
        from .index import take_np, put_np, where
        from .complex_ops import view_as_real, view_as_complex
        gr = view_as_real(g) if cplx else g
        gf = gr.reshape(-1)
        gv = (gf if pos is None else take_np(gf, (pos,))).reshape(vshape)
        res = self._call_fn(gv)
        r0 = res[0] if res else None
        n = gf._data.size
        inside = np.ones(n, bool) if pos is None else np.zeros(n, bool)
        if pos is not None:
            inside[pos] = True
        placed = 0.0 if r0 is None else r0.reshape(-1) if pos is None else put_np(r0.reshape(-1), (n,), (pos,))
        total = where(Tensor._make(inside if xp is np else xp.asarray(inside)), placed, gf).reshape(gr._data.shape)
        return (view_as_complex(total) if cplx else total,) + tuple(res[1:])


def copy_slices(view, node, output_nr):
    """Rewire ``view``'s base after the in-place op ``node`` wrote into ``view``."""
    base = view._base
    base_meta = (base._data.shape, base._data.dtype)
    cs = CopySlices(base._edge(), base_meta, Placement(view, base), view._data.shape, node)
    set_history(base, cs)
    node._out_meta = ((view._data.shape, view._data.dtype),)
    regenerate_view(view)
    return view


class AsStridedBackward0(OpNode):
    """grad_fn of a view whose base's history changed after the view was made: the
    gradient goes back to the base's elements the view covers (summed where several
    view elements share one, as after ``expand``)."""

    keep = None    # (as_strided beyond its input: the view elements that are the input's)
    place = None   # a Placement, or the positions themselves in ``pos``

    def backward(self, g):
        xp = xp_for(g)
        place = self.place
        cplx = place is not None and place.cplx      # (a real view of a complex base: see Placement)
        if cplx:
            from ._decomp import _complex_dt
        if (place is not None and place.geo is not None and not _state.grad and type(g._data) is np.ndarray
                and not place.overlapping()):
            z = xp.zeros(self.numel, _complex_dt(g._data.dtype) if cplx else g._data.dtype)
            place.view_into(z.view(g._data.dtype) if cplx else z)[...] = g._data
            return Tensor._make(z.reshape(self.base_shape))
        pos = place.pos() if place is not None else self.pos
        if pos is None and not cplx:   # the view covers its base once, in order
            return g.reshape(self.base_shape)
        from .index import put_np, take_np
        gf = g.reshape(-1)
        if self.keep is not None:
            gf = take_np(gf, (self.keep,))
        if cplx:
            from .complex_ops import view_as_complex
            r = gf if pos is None else put_np(gf, (2 * self.numel,), (pos,))
            return view_as_complex(r.reshape(tuple(self.base_shape) + (2,)))
        return put_np(gf, (self.numel,), (pos,)).reshape(self.base_shape)


_UNSET = object()


class Placement:
    """Where a view's elements lie in its base, kept as PyTorch keeps a view's geometry:
    sizes, strides and offset in the base's storage (the flat positions are worked out
    only when a backward needs them), or the positions themselves when the base's own
    layout is not plain row-major."""
    __slots__ = ("geo", "_pos", "n", "cplx")

    def __init__(self, view, base):
        vd, bd = view._data, base._data
        self.n = bd.size
        self._pos = _UNSET
        self.geo = None
        # a real view of a complex base (real, imag, view_as_real): placed in the base's storage
        # read as (re, im) pairs, 2 * numel real elements
        self.cplx = vd.dtype.kind == "f" and bd.dtype.kind == "c" and 2 * vd.itemsize == bd.itemsize
        if type(vd) is np.ndarray and type(bd) is np.ndarray and bd.flags.c_contiguous \
                and (vd.itemsize == bd.itemsize or self.cplx):
            k = vd.itemsize
            if self.cplx:
                self.n = 2 * bd.size
            off = (vd.__array_interface__["data"][0] - bd.__array_interface__["data"][0]) // k
            self.geo = (vd.shape, tuple(st // k for st in vd.strides), off)
        else:
            self._pos = _positions(view, base)

    def pos(self):
        """The flat positions (None: all of the base, in order)."""
        p = self._pos
        if p is _UNSET:
            shape, strides, off = self.geo
            p = _flat(shape, strides, off)
            if p.size == self.n and (self.n == 0 or (p == np.arange(self.n)).all()):
                p = None
            self._pos = p
        return p

    def view_into(self, flat):
        """The view's elements within ``flat`` (a contiguous 1-D array shaped like the base's
        storage), as a writable strided view."""
        xp = xp_for(flat)
        shape, strides, off = self.geo
        k = flat.itemsize
        start = flat[off:] if off < flat.size else flat[:0]
        return xp.lib.stride_tricks.as_strided(start, shape, tuple(st * k for st in strides))

    def overlapping(self):
        """Whether several view elements share one base element (PyTorch: a stride 0)."""
        if self.geo is not None:
            shape, strides = self.geo[0], self.geo[1]
            return 0 not in shape and any(st == 0 and m > 1 for m, st in zip(shape, strides))
        p = self._pos
        return p is not None and np.unique(p).size < p.size


def _positions(view, base, outside=False):
    """For each element of ``view``, the flat (row-major) position in ``base`` of the
    element it shares memory with (from the arrays' own geometry, as PyTorch's
    as_strided does); None when that is simply ``arange(base.numel())``. ``outside``:
    the view may reach memory that is not ``base``'s (``as_strided``): -1 there."""
    xp = xp_for(view, base, outside)
    vd, bd = view._data, base._data
    n = bd.size
    if type(vd) is type(bd) and type(vd).__name__ != "MetaArray" and vd.itemsize == bd.itemsize:
        xp = np   # (positions are geometry: computed on the host, for device arrays too)
        k = bd.itemsize
        v0, b0 = address(vd), address(bd)
        vaddr = _addresses(vd, (v0 - b0) // k, k)
        if bd.flags.c_contiguous:
            pos = vaddr
            if outside:
                pos = xp.where((pos >= 0) & (pos < n), pos, -1)
        else:   # the base's own layout: from memory offsets back to row-major positions
            baddr = _addresses(bd, 0, k).reshape(-1)
            order = xp.argsort(baddr, kind="stable")
            sb = baddr[order]
            at = xp.minimum(xp.searchsorted(sb, vaddr), max(n - 1, 0))
            pos = order[at] if n else xp.full(vaddr.shape, -1, np.int64)
            if outside and n:
                pos = xp.where(sb[at] == vaddr, pos, -1)
    else:
        prev = _state.grad
        _state.grad = False
        try:
            lin = Tensor._make(xp.arange(n, dtype=np.int64).reshape(bd.shape))
            pos = xp.asarray(view._view_fn(lin)._data, dtype=np.int64)
        finally:
            _state.grad = prev
    if pos.size == n and (n == 0 or (pos.ravel() == xp.arange(n)).all()):
        return None
    return pos.reshape(-1)


def _addresses(a, off, k):
    """Memory offsets (in elements) of every element of ``a``, ``off`` for its first."""
    return _flat(a.shape, tuple(st // k for st in a.strides), off).reshape(a.shape)


def _flat(shape, strides, off):
    """off + sum(index * stride) for every index of ``shape``, flattened row-major."""
    xp = xp_for(shape, strides, off)
    pos = xp.full(shape, off, np.int64)
    for d, (m, st) in enumerate(zip(shape, strides)):
        if m > 1:
            sh = [1] * len(shape)
            sh[d] = m
            pos = pos + (xp.arange(m, dtype=np.int64) * st).reshape(sh)
    return pos.reshape(-1)


def regenerate_view(view, indirect=False):
    """Give ``view`` a fresh grad_fn after its base's history changed (PyTorch's lazy
    view rule: an AsStridedBackward0 on the base's current grad_fn). ``indirect``: the
    change came through the base or a sibling view; views that cannot be rebased refuse."""
    if indirect and (view._nograd_view or view._multi_view):
        raise view_rebase_error(view, True)
    view._view_ver = view._vc[0]
    if view._view_fn is None:   # (a dtype view: nothing to rebuild it from)
        return
    base = view._base
    node = object.__new__(AsStridedBackward0)
    node.next_functions = (base._edge(),)
    node._seq = _next(_seq)
    if Node._anomaly_stack is not None:
        node._trace = Node._anomaly_stack()
    node.base_shape = base._data.shape
    node.numel = base._data.size
    node.place = Placement(view, base)
    node._out_meta = ((view._data.shape, view._data.dtype),)
    set_history(view, node)
