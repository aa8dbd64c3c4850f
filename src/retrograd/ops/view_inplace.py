"""In-place ops on views: CopySlices.

When an in-place op writes into a view of a tensor that takes part in autograd, the
base's history changes too. As PyTorch does, the base's grad_fn becomes a CopySlices
node wrapping the in-place op's node ``fn``: in backward, CopySlices takes the base's
gradient, hands the view's slice of it to ``fn``, writes what ``fn`` returns for the
view's old value back into that slice, and passes the rest of ``fn``'s gradients on.
``y = x * 2; y[0] = 0`` thus gives ``x.grad = [0, 2, 2]`` after ``y.sum().backward()``.
"""
import numpy as np

from ._base import Tensor, OpNode, _state, view_rebase_error
from ..autograd.graph import Node, _seq, _RELEASED, SECOND_BACKWARD_MSG

__all__ = []

_next = next


class CopySlices(Node):
    """grad_fn of a base after an in-place op on one of its views."""

    def __init__(self, base_edge, base_meta, view_fn, fn):
        self.next_functions = (base_edge,) + tuple(fn.next_functions[1:])
        self._seq = _next(_seq)
        self._out_meta = (base_meta,)
        self.view_fn = view_fn
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
        g = grads[0]
        view_fn = self.view_fn
        if not _state.grad:
            # Plain arrays: copy the gradient, run fn on the view's slice, write its
            # gradient for the view's old value back into that slice.
            result = Tensor._make(g._data.copy())
            sl = view_fn(result)._data
            res = self._call_fn(Tensor._make(sl.copy()))
            r0 = res[0] if res else None
            if r0 is None:
                sl[...] = 0
            else:
                sl[...] = r0._data
            return (result,) + tuple(res[1:])
        # create_graph: the same, written with differentiable ops:
        # grad_base = g + S(r0 - view_fn(g)), S scattering a slice back into the base's shape.
        gv = view_fn(g)
        res = self._call_fn(gv)
        r0 = res[0] if res else None
        delta = -gv if r0 is None else r0 - gv
        return (g + _scatter(view_fn, self._out_meta[0], delta),) + tuple(res[1:])


def _scatter(view_fn, meta, t):
    """Zeros of the base's shape with ``t`` in the view's place (differentiable in ``t``):
    the vector-Jacobian product of ``view_fn``."""
    from .. import _creation
    from ..autograd import engine
    shape, npdt = meta
    p = _creation._zeros_np(shape, npdt)
    p._requires_grad = True
    (r,) = engine.grad(view_fn(p), p, t, create_graph=True)
    return r


def copy_slices(view, node, output_nr):
    """Rewire ``view``'s base after the in-place op ``node`` wrote into ``view``."""
    base = view._base
    base_meta = (base._data.shape, base._data.dtype)
    cs = CopySlices(base._edge(), base_meta, view._view_fn, node)
    old, old_nr = base._grad_fn, base._output_nr
    base._grad_fn = cs
    base._output_nr = 0
    base._requires_grad = True
    if old is not None and old._retain_grad_hooks:
        old._move_retain_grad(old_nr, cs, 0)
    node._out_meta = ((view._data.shape, view._data.dtype),)
    regenerate_view(view)
    return view


class AsStridedBackward0(OpNode):
    """grad_fn of a view whose base's history changed after the view was made: the
    gradient goes back to the base's elements the view covers (summed where several
    view elements share one, as after ``expand``)."""

    def backward(self, g):
        if self.pos is None:   # the view covers its base once, in order
            return g.reshape(self.base_shape)
        from .index import put_np
        return put_np(g.reshape(-1), (self.numel,), (self.pos,)).reshape(self.base_shape)


def _positions(view, base):
    """For each element of ``view``, the flat (row-major) position in ``base`` of the
    element it shares memory with; None when that is simply ``arange(base.numel())``."""
    vd, bd = view._data, base._data
    n = bd.size
    if type(vd) is np.ndarray and type(bd) is np.ndarray and bd.flags.c_contiguous and vd.dtype == bd.dtype:
        k = bd.itemsize
        off = (vd.__array_interface__["data"][0] - bd.__array_interface__["data"][0]) // k
        pos = np.full(vd.shape, off, np.int64)
        for d, (m, st) in enumerate(zip(vd.shape, vd.strides)):
            if m > 1:
                shape = [1] * vd.ndim
                shape[d] = m
                pos = pos + (np.arange(m, dtype=np.int64) * (st // k)).reshape(shape)
    else:
        prev = _state.grad
        _state.grad = False
        try:
            lin = Tensor._make(np.arange(n, dtype=np.int64).reshape(bd.shape))
            pos = np.asarray(view._view_fn(lin)._data, dtype=np.int64)
        finally:
            _state.grad = prev
    if pos.size == n and (n == 0 or (pos.ravel() == np.arange(n)).all()):
        return None
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
    node.pos = _positions(view, base)
    node._out_meta = ((view._data.shape, view._data.dtype),)
    old, old_nr = view._grad_fn, view._output_nr
    view._grad_fn = node
    view._output_nr = 0
    view._requires_grad = True
    if old is not None and old._retain_grad_hooks:
        old._move_retain_grad(old_nr, node, 0)
