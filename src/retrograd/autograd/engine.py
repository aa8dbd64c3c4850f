"""The backward walk.

Like PyTorch's engine: count each node's dependencies with an explicit stack, sum the
gradients reaching a node in its buffer, and run it once its count hits zero, newest
node first (a heap on sequence numbers). Nothing recurses, so graphs a million nodes
deep go backward. Every gradient a node returns passes one check (``_validate``).

Per node, in PyTorch's order: tensor pre-hooks, retain_grad, node pre-hooks, the node,
node post-hooks. A node without hooks costs one attribute test for all of them.
``autograd.grad`` and ``backward(inputs=...)`` restrict the walk to the nodes that lead
to the requested tensors (PyTorch's exec_info) and capture the gradients reaching them.
"""
import heapq
import sys

import numpy as np

from . import grad_mode
from .graph import (AccumulateGrad, Node, GradientEdge, SECOND_BACKWARD_MSG, _RELEASED, _ACC_SEQ,  # noqa: F401
                    _current_task)
from .._tensor import Tensor, Size

__all__ = ["run_backward", "backward", "grad"]

_NODE_APPLY = Node._apply   # nodes that keep it have one output and a plain ``backward``
_heappush = heapq.heappush
_heappop = heapq.heappop
_state = grad_mode._state

# Set by autograd.anomaly: called with (node, grads) after each node when enabled.
anomaly_check = [None]
# Set by autograd.trace: called with (node, grads_in, grads_out) after each node runs
# (AccumulateGrad included, with no grads_out) while a trace is recording.
tracers = []


def _shape_str(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _sum_to(g, shape):
    """Sum a broadcast gradient down to ``shape`` (differentiable, for create_graph)."""
    return g.sum_to_size(shape) if shape else g.sum()


def _validate(fn, i, g, meta):
    """Check gradient ``i`` of ``fn`` against the input it is for; fix what PyTorch fixes."""
    if not isinstance(g, Tensor):
        raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
    shape, npdt = meta
    gs = g._data.shape
    if gs != shape:
        if not _broadcastable_to(gs, shape):
            raise RuntimeError(
                f"Function {fn.name()} returned an invalid gradient at index {i} - got "
                f"{_shape_str(gs)} but expected shape compatible with {_shape_str(shape)}")
        g = _sum_to(g, shape)
        if g._data.shape != shape:
            g = g.reshape(shape)
    if g._data.dtype != npdt:
        if g._data.dtype.kind == "c" and npdt.kind != "c":
            g = g.real  # a real input's share of a complex gradient (PyTorch's handle_r_to_c)
        g = g.to(npdt.type)
    return g


def _broadcastable_to(src, dst):
    """True when a gradient of shape ``src`` can be summed down to ``dst``."""
    if len(src) < len(dst):
        # PyTorch accepts a gradient missing leading 1-dims (same number of elements).
        return int(np.prod(src)) == int(np.prod(dst))
    lead = len(src) - len(dst)
    for s, d in zip(src[lead:], dst):
        if d != 1 and s != d:
            return False
    return True


# --- hooks ------------------------------------------------------------------------------

def _hook_name(h):
    return getattr(h, "__name__", type(h).__name__)


def _check_hook_result(h, old, new, what):
    """A hook's replacement gradient must keep the size and type of the value it replaces."""
    if not isinstance(new, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    if old is None:
        return new
    if new._data.shape != old._data.shape:
        raise RuntimeError(
            f"hook '{_hook_name(h)}' has changed the size of value (the gradient of {what} had shape "
            f"{_shape_str(old._data.shape)}, the hook returned shape {_shape_str(new._data.shape)})")
    if new._data.dtype != old._data.dtype:
        from ..ops._base import type_name
        raise RuntimeError(
            f"hook '{_hook_name(h)}' has changed the type of value (was {type_name(old)} got "
            f"{type_name(new)}) for the gradient of {what}")
    return new


def _run_tensor_hooks(hooks, g, what):
    for h in list(hooks.values()):
        r = h(g)
        if r is not None:
            g = _check_hook_result(h, g, r, what)
    return g


def _call_tensor_pre_hooks(fn, grads_in):
    """Tensor hooks of ``fn``'s outputs, then retain_grad (PyTorch's call_tensor_pre_hooks)."""
    if fn.__class__ is AccumulateGrad:
        var = fn._var()
        hooks = var._backward_hooks if var is not None else None
        if hooks and grads_in[0] is not None:
            grads_in[0] = _run_tensor_hooks(hooks, grads_in[0], "a leaf tensor")
        return grads_in
    thooks = fn._tensor_pre_hooks
    if thooks:
        for nr, hooks in thooks.items():
            if hooks and grads_in[nr] is not None:
                grads_in[nr] = _run_tensor_hooks(hooks, grads_in[nr], f"output {nr} of {fn.name()}")
    rhooks = fn._retain_grad_hooks
    if rhooks:
        for nr, tref in list(rhooks.items()):
            if grads_in[nr] is not None:
                _retain(tref, grads_in[nr])
    return grads_in


def _call_pre_hooks(fn, grads_in):
    grads_in = _call_tensor_pre_hooks(fn, grads_in)
    if fn._pre_hooks:
        for h in list(fn._pre_hooks.values()):
            r = h(tuple(grads_in))
            if r is not None:
                grads_in = _check_hook_results(h, grads_in, r, fn)
    return grads_in


def _check_hook_results(h, old, new, fn):
    new = list(new) if isinstance(new, (tuple, list)) else [new]
    if len(new) != len(old):
        raise RuntimeError(f"hook '{_hook_name(h)}' has returned an incorrect number of values "
                           f"(got {len(new)}, but expected {len(old)})")
    for i, (o, n) in enumerate(zip(old, new)):
        if n is not None:
            new[i] = _check_hook_result(h, o, n, f"{fn.name()} at index {i}")
    return new


def _call_post_hooks(fn, out, grads_in):
    for h in list(fn._post_hooks.values()):
        r = h(tuple(out), tuple(grads_in))
        if r is not None:
            out = _check_hook_results(h, list(out), r, fn)
    return out


# --- leaves and retained gradients --------------------------------------------------------

class CopyBackwards(Node):
    """The grad_fn of a leaf's first ``.grad`` under create_graph (a differentiable copy)."""

    def backward(self, g):
        return g


def _copy_differentiable(g, like):
    t = Tensor._make(_clone_like(g._data, like))
    if not g._requires_grad:
        return t
    node = CopyBackwards((g._edge(),), ((g._data.shape, g._data.dtype),))
    t._grad_fn = node
    t._requires_grad = True
    return t


def _run_accumulate(fn, grads_in, create_graph):
    """AccumulateGrad: leaf hooks, node pre-hooks, add into ``.grad``, post-accumulate
    hooks, node post-hooks."""
    var = fn._var()
    if var is None:
        return
    g = grads_in[0]
    hooks = var._backward_hooks
    if hooks and g is not None:
        g = grads_in[0] = _run_tensor_hooks(hooks, g, "a leaf tensor")
    if fn._hooked and fn._pre_hooks:
        for h in list(fn._pre_hooks.values()):
            r = h(tuple(grads_in))
            if r is not None:
                grads_in = _check_hook_results(h, grads_in, r, fn)
        g = grads_in[0]
    if g is not None:
        if g._data.__class__ is not var._data.__class__:
            g = _on_device_of(g, var)
            _accumulate(var, g, create_graph)
        elif var._grad is None and not create_graph and g is grads_in[0] and g.__class__ is Tensor \
                and not g._sparse and not tracers:   # (a trace keeps the gradients it is shown)
            g = None   # (this frame's reference must not count against adopting it)
            var._grad = _first_grad(grads_in, var._data)
        else:
            _accumulate(var, g, create_graph)
        if create_graph and var._grad._grad_fn is not None:
            fn._strong = None
        post = var._post_acc_hooks
        if post:
            for h in list(post.values()):
                h(var)
    if fn._hooked and fn._post_hooks:
        _call_post_hooks(fn, [], grads_in)


def _on_device_of(g, t):
    """``g`` moved to ``t``'s device: a 0-d CPU tensor joins device ops as a scalar, so its
    gradient is computed on the device, and PyTorch's engine moves it back."""
    dev = t.device
    return g if g.device == dev else g.to(dev)


def _accumulate(var, g, create_graph):
    """Add ``g`` into the leaf's ``.grad`` as PyTorch's AccumulateGrad does."""
    old = var._grad
    if g._sparse or old is not None and old._sparse:
        from ..sparse._tensor import accumulate
        return accumulate(var, g, create_graph)
    if old is None:
        if create_graph:
            var._grad = _copy_differentiable(g, var._data)
        else:
            # A fresh buffer: the incoming gradient may be shared with other leaves
            # (an add passes one gradient to both inputs), and .grad is mutated in place.
            var._grad = Tensor._make(_clone_like(g._data, var._data))
    elif create_graph:
        var._grad = old + g
    else:
        d = old._data
        if d.shape == g._data.shape and d.dtype == g._data.dtype:
            d += g._data
            old._bump_version()
        else:
            var._grad = Tensor._make(d + g._data)


# --- a leaf's first gradient: adopted when nothing else can see it, else copied ------------
#
# Like PyTorch's AccumulateGrad, a first gradient that no one else holds becomes ``.grad``
# itself instead of being copied (for an embedding's or a gather's weight, the copy was
# most of the backward). "No one else" is decided by reference counts, against what an
# object held in exactly one place counts (measured here, so the rule follows the
# interpreter's counting): the Tensor must be held only by the engine's buffer, and its
# array only by that Tensor, owning its memory (not a view: a view's base, or any other
# view of the same base, would share it). Any other holder (another leaf's buffer, as when
# an add passes one gradient to both inputs; the user's ``gradient=``; a hook that kept
# it; a saved tensor; a view of it) counts once more and forces the copy.

_getrefcount = sys.getrefcount


def _item_refs(lst):
    return _getrefcount(lst[0])


def _data_refs(t):
    return _getrefcount(t._data)


def _base_refs(a):
    return _getrefcount(a.base)


def _view_base_refs(t):
    return _getrefcount(t._base)


def _probe_view():
    t = Tensor._make(np.empty(1))
    t._base = Tensor._make(np.empty(1))
    return t


_SOLE_ITEM = _item_refs([object()])
_SOLE_DATA = _data_refs(Tensor._make(np.empty(1)))
_SOLE_BASE = _base_refs(np.empty(2).reshape(1, 2))
_SOLE_VIEW_BASE = _view_base_refs(_probe_view())


def _first_grad(grads_in, vd):
    """The leaf's first ``.grad`` from ``grads_in[0]`` (held by nothing else in the engine):
    its own array where that is unshared and laid out as PyTorch's contract asks, else a copy."""
    # (the counts are taken before this frame binds the tensor or its array to a name)
    if _item_refs(grads_in) <= _SOLE_ITEM and _data_refs(grads_in[0]) <= _SOLE_DATA:
        gd = grads_in[0]._data
        if (gd.__class__ is np.ndarray and gd.flags.writeable and gd.shape == vd.shape
                and gd.dtype == vd.dtype and _owned(grads_in[0], gd) and _obeys_layout(gd, vd)):
            return Tensor._make(gd)
    return Tensor._make(_clone_like(grads_in[0]._data, vd))


def _owned(g, gd):
    """Whether no array but ``gd`` (``g``'s) can reach its memory: ``gd`` owns it, or is a
    whole-buffer view of an array that nothing else holds. NumPy points every view at the
    array that owns the memory, so any other view of that memory counts on the owner; the
    one other holder allowed is the tensor ``g`` is a view of (a transposed weight gradient
    is ``t()`` of a product), when only ``g`` holds that tensor and its array is the owner."""
    if gd.base is None:
        return g._base is None
    sole = _SOLE_BASE
    if g._base is not None:
        if _view_base_refs(g) > _SOLE_VIEW_BASE or g._base._base is not None or g._base._data is not gd.base:
            return False
        sole += 1
    if _base_refs(gd) > sole:
        return False
    base = gd.base
    return base.__class__ is np.ndarray and base.base is None and base.nbytes == gd.nbytes


def _dense(a):
    """Whether ``a``'s elements fill its memory exactly once (PyTorch's non-overlapping and dense)."""
    if a.flags.c_contiguous or a.flags.f_contiguous:
        return True
    expected = a.itemsize
    for st, n in sorted((st, n) for n, st in zip(a.shape, a.strides) if n != 1):
        if st != expected:
            return False
        expected *= n
    return True


def _obeys_layout(gd, vd):
    """Whether ``gd`` may be the ``.grad`` of a leaf laid out as ``vd`` without a copy: the
    leaf's strides where the leaf is dense (size-1 dims aside), else C order."""
    if gd.strides == vd.strides:
        return vd.flags.c_contiguous or _dense(vd)
    if not _dense(vd):
        return gd.flags.c_contiguous
    for n, a, b in zip(gd.shape, gd.strides, vd.strides):
        if (a != b) if n != 1 else a == 0:
            return False
    return True


def _clone_like(gd, vd):
    """A copy of the gradient ``gd`` laid out as PyTorch lays out a leaf's ``.grad``: with the
    strides of the leaf ``vd`` where the leaf is dense, else in C order."""
    if gd.__class__ is not np.ndarray or vd.__class__ is not np.ndarray or vd.flags.c_contiguous \
            or gd.shape != vd.shape or not _dense(vd):
        return gd.copy()
    r = np.empty_like(vd, dtype=gd.dtype, order="K")
    np.copyto(r, gd)
    return r


def _retain(tref, g):
    t = tref()
    if t is None:
        return
    if t._grad is None:
        t._grad = g.clone() if _state.grad else Tensor._make(g._data.copy())
    else:
        t._grad = t._grad + g if _state.grad else Tensor._make(t._grad._data + g._data)


# --- restricting the walk (autograd.grad, backward(inputs=...)) ----------------------------

def _exec_info(roots, targets):
    """Nodes worth running: {node: needed} for every node from which a target is reachable.

    A target node itself is ``needed`` only when ``targets[node]`` is True (backward's
    inputs run their node; grad's captures do not), PyTorch's ``init_to_execute``.
    """
    info = {}
    seen = set()
    for r in roots:
        if r in seen:
            continue
        seen.add(r)
        stack = [(r, iter(_next_nodes(r)))]
        while stack:
            node, it = stack[-1]
            for nf in it:
                if nf is not None and nf not in seen:
                    seen.add(nf)
                    stack.append((nf, iter(_next_nodes(nf))))
                    break
            else:
                stack.pop()
                tgt = targets.get(node)
                mine = tgt is not None
                if mine and tgt:
                    info[node] = True
                elif any(nf in info for nf in _next_nodes(node)):
                    info[node] = True
                elif mine:
                    info[node] = False
    return info


def _next_nodes(fn):
    """The nodes ``fn``'s edges lead to (None where no gradient flows), without building
    ``next_functions``."""
    nf = fn._nf
    return nf if nf.__class__ is tuple else (nf,)


# --- the walk -----------------------------------------------------------------------------

def _key(fn):
    """Heap order: newest node first; leaves' AccumulateGrad before anything else (among
    themselves in creation order, as PyTorch's ties come out), then the NotImplemented nodes
    of ops without a derivative (PyTorch gives both the largest sequence number, so such a
    node raises as soon as it is ready, before the formula nodes ready with it)."""
    c = fn.__class__
    if c is AccumulateGrad:
        return fn._seq - 2 * _ACC_SEQ
    return -fn._seq if c.__name__ != "NotImplemented" else -fn._seq - _ACC_SEQ


def run_backward(roots, grads, keep_graph, create_graph, targets=None, captures=None):
    """Walk the graph from ``roots`` (list of (node, output_nr)) with ``grads``.

    ``targets`` ({node: needed}) restricts the walk to nodes leading to them;
    ``captures`` ({node: [(input_nr, slot), ...]}) returns the gradients reaching them.
    """
    deps = {}
    stack = []
    for fn, _ in roots:
        if fn not in deps:
            deps[fn] = 0
            stack.append(fn)
    while stack:
        fn = stack.pop()
        nfs = fn._nf
        if nfs.__class__ is not tuple:   # (one edge: the common case, no loop)
            if nfs is not None:
                c = deps.get(nfs)
                if c is None:
                    deps[nfs] = 1
                    stack.append(nfs)
                else:
                    deps[nfs] = c + 1
            continue
        for nf in nfs:
            if nf is not None:
                c = deps.get(nf)
                if c is None:
                    deps[nf] = 1
                    stack.append(nf)
                else:
                    deps[nf] = c + 1

    info = None
    captured = None
    if targets is not None:
        info = _exec_info(list(deps), targets) if deps else {}
        if captures:
            captured = [None] * (1 + max(s for cs in captures.values() for _, s in cs))

    buffers = {}
    for (fn, nr), g in zip(roots, grads):
        buf = buffers.get(fn)
        if buf is None:
            buf = buffers[fn] = [None] * len(fn._out_meta)
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    heap = []
    for fn in buffers:
        if deps[fn] == 0 and (info is None or fn in info):
            _heappush(heap, (_key(fn), fn))

    prev_mode = _state.grad
    _state.grad = bool(create_graph)
    prev_task = _current_task[0]
    _current_task[0] = deps if info is None else info
    check = anomaly_check[0]
    fn = None
    nxt = None
    nxt_in = None
    try:
        while True:
            # A chain's next node skips the heap: when it is the only ready node, it is
            # the newest ready node (and its gradient, when nothing else adds to it, skips
            # the buffers).
            if nxt is not None:
                fn = nxt
                nxt = None
                if nxt_in is not None:
                    grads_in = nxt_in
                    nxt_in = None
                else:
                    grads_in = buffers.pop(fn)
            elif heap:
                fn = _heappop(heap)[1]
                grads_in = buffers.pop(fn)
            else:
                break
            if info is not None:
                needed = info[fn]
                caps = captures.get(fn) if captures else None
                if caps is not None:
                    got = grads_in if needed else _call_tensor_pre_hooks(fn, list(grads_in))
                    for nr, slot in caps:
                        captured[slot] = got[nr]
                if not needed:
                    continue
            if fn.__class__ is AccumulateGrad:
                # (the last node's outputs still held here would make its gradients look shared)
                out = g = gd = old = got = None
                _run_accumulate(fn, grads_in, create_graph)
                if tracers:
                    for tr in tracers:
                        tr(fn, grads_in, ())
                continue
            if fn._hooked:
                grads_in = _call_pre_hooks(fn, grads_in)
            if len(grads_in) == 1:
                if grads_in[0] is None:
                    continue
            else:
                for g in grads_in:
                    if g is None:
                        grads_in = _materialize(fn, grads_in)
                        break
            if fn._saved is _RELEASED:
                raise RuntimeError(SECOND_BACKWARD_MSG)
            out = fn.backward(grads_in[0]) if fn.__class__._apply is _NODE_APPLY else fn._apply(grads_in)
            if out.__class__ is not tuple:
                out = tuple(out) if isinstance(out, list) else (out,)
            nfs = fn._nf
            single = nfs.__class__ is not tuple
            n_edges = fn._ne if single else len(nfs)
            if len(out) != n_edges:
                out = _fix_count(fn, out, n_edges)
            if fn._hooked and fn._post_hooks:
                out = _call_post_hooks(fn, _validated(fn, out), grads_in)
            if tracers:
                for tr in tracers:
                    tr(fn, grads_in, out)
            if check is not None:
                check(fn, out)
            if not keep_graph and fn._saved is not None:
                fn._release()
            if single:
                # One edge (a chain's link): no loop, and its node is the next to run
                # when nothing else is ready.
                if nfs is None:
                    continue
                i = fn._ni
                g = out[i]
                c = deps[nfs] - 1
                deps[nfs] = c
                if info is not None and nfs not in info:
                    continue
                if g is not None:
                    nr = fn._nr
                    meta = nfs._out_meta[nr]
                    if g.__class__ is not Tensor:
                        g = _validate(fn, i, g, meta)
                    else:
                        gd = g._data
                        if gd.shape != meta[0] or (gd.dtype is not meta[1] and gd.dtype != meta[1]):
                            g = _validate(fn, i, g, meta)
                    buf = buffers.get(nfs)
                    if buf is None:
                        n_out = len(nfs._out_meta)
                        if n_out == 1:
                            if c == 0 and not heap:
                                nxt = nfs
                                nxt_in = [g]
                                continue
                            buffers[nfs] = [g]
                        else:
                            buf = buffers[nfs] = [None] * n_out
                            buf[nr] = g
                    else:
                        old = buf[nr]
                        buf[nr] = g if old is None else old + g
                if c == 0 and nfs in buffers:
                    if heap:
                        _heappush(heap, (_key(nfs), nfs))
                    else:
                        nxt = nfs
                continue
            ready = None
            i = -1
            nrs = fn._nr
            for nf in nfs:
                i += 1
                if nf is None:
                    continue
                g = out[i]
                c = deps[nf] - 1
                deps[nf] = c
                if info is not None and nf not in info:
                    continue
                if g is not None:
                    nr = nrs[i]
                    meta = nf._out_meta[nr]
                    if g.__class__ is not Tensor:
                        g = _validate(fn, i, g, meta)
                    else:
                        gd = g._data
                        if gd.shape != meta[0] or (gd.dtype is not meta[1] and gd.dtype != meta[1]):
                            g = _validate(fn, i, g, meta)
                    buf = buffers.get(nf)
                    if buf is None:
                        n_out = len(nf._out_meta)
                        if n_out == 1:
                            buffers[nf] = [g]
                        else:
                            buf = buffers[nf] = [None] * n_out
                            buf[nr] = g
                    else:
                        old = buf[nr]
                        buf[nr] = g if old is None else old + g
                if c == 0 and nf in buffers:
                    if ready is None:
                        ready = nf
                    else:
                        _heappush(heap, (_key(nf), nf))
            if ready is not None:
                if heap:
                    _heappush(heap, (_key(ready), ready))
                else:
                    nxt = ready
    except BaseException:
        if fn is not None and fn._trace is not None and Node._anomaly_stack is not None:
            _anomaly_report(fn)
        raise
    finally:
        _state.grad = prev_mode
        _current_task[0] = prev_task
    return captured


def _anomaly_report(fn):
    import warnings
    warnings.warn(f"Error detected in {fn.name()}. Traceback of forward call that caused the error:\n"
                  + "".join(fn._trace), UserWarning, stacklevel=4)


def _fix_count(fn, out, n):
    """Extra trailing Nones are allowed (PyTorch trims them); any other count is an error."""
    if len(out) > n and all(g is None for g in out[n:]):
        return out[:n]
    raise RuntimeError(f"function {fn.name()} returned an incorrect number of gradients (expected "
                       f"{n}, got {len(out)})")


def _validated(fn, out):
    out = list(out)
    for i, (nf, nr) in enumerate(fn.next_functions):
        if nf is not None and out[i] is not None:
            out[i] = _validate(fn, i, out[i], nf._out_meta[nr])
    return out


def _materialize(fn, grads_in):
    if not getattr(fn, "_materialize_grads", True):
        return grads_in
    from .. import _creation
    out = []
    like = None   # (the zeros go on the device of the gradients that did arrive)
    for g in grads_in:
        if g is not None:
            like = g._data
            break
    for g, meta in zip(grads_in, fn._out_meta):
        if g is None and meta is not None:
            if like is None or type(like) is np.ndarray:
                g = _creation._zeros_np(*meta)
            else:
                from ..ops._base import xp_of
                g = Tensor._make(xp_of(like).zeros(*meta))
        out.append(g)
    return out


# --- the public entry points --------------------------------------------------------------

def _as_tuple(x, what="tensors"):
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_roots(tensors, grad_tensors, create_graph, what="tensors"):
    from .. import _creation
    roots, grads = [], []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if isinstance(t, GradientEdge):
            shape, npdt = t[0]._out_meta[t[1]]
            if g is None:
                if int(np.prod(shape)) != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                g = _creation._zeros_np(shape, npdt)
                g._data[...] = 1
            roots.append(tuple(t[:2]))
            grads.append(g if create_graph else g.detach())
            continue
        if not isinstance(t, Tensor):
            raise TypeError(f"{what} must be Tensors, but element {i} is {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if t._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if t._data.dtype.kind not in "fcV":
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {t.dtype}")
            g = _creation._ones_like_data(t._data)
        else:
            if not isinstance(g, Tensor):
                g = _creation.tensor(g, dtype=t.dtype)
            if g._data.shape != t._data.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {Size(g._data.shape)} and "
                    f"output[{i}] has a shape of {Size(t._data.shape)}.")
            if g._data.dtype.kind != t._data.dtype.kind and "c" in (g._data.dtype.kind + t._data.dtype.kind):
                raise TypeError(f"For complex Tensors, both grad_output and output are required to have "
                                f"the same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of "
                                f"{g.dtype} and output[{i}] has a dtype of {t.dtype}.")
            if g._data.dtype != t._data.dtype:
                g = g.to(t.dtype)
            if not create_graph and g._requires_grad:
                g = g.detach()
        roots.append(t._edge())
        grads.append(g)
    return roots, grads


def _grad_list(grad_tensors, n):
    if grad_tensors is None:
        return (None,) * n
    if isinstance(grad_tensors, Tensor):
        grad_tensors = (grad_tensors,)
    else:
        grad_tensors = tuple(grad_tensors)
    if len(grad_tensors) != n:
        raise RuntimeError(f"got {n} tensors and {len(grad_tensors)} gradients")
    return grad_tensors


# One entry per running backward()/grad() call: whether it only walks toward given inputs
# (reentrant checkpointing cannot recompute inside such a walk; see _is_checkpoint_valid).
_restricted_walks = []


def _is_checkpoint_valid():
    """False inside a grad() or backward(inputs=...) walk (the innermost running call)."""
    return not (_restricted_walks and _restricted_walks[-1])


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Compute the gradients of ``tensors`` and accumulate them into the leaves' ``.grad``
    (or, with ``inputs``, only into those tensors' ``.grad``)."""
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError("You cannot specify both grad_tensors and grad_variables. The grad_variables "
                               "argument is deprecated, use grad_tensors instead.")
        grad_tensors = grad_variables
    tensors = _as_tuple(tensors)
    grad_tensors = _grad_list(grad_tensors, len(tensors))
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    roots, grads = _make_roots(tensors, grad_tensors, create_graph)
    _restricted_walks.append(inputs is not None)
    try:
        if inputs is None:
            run_backward(roots, grads, retain_graph, create_graph)
            return
        targets = {}
        for t in inputs:
            t.retain_grad()
            fn, _ = t._edge()
            if fn is not None:
                targets[fn] = True
        run_backward(roots, grads, retain_graph, create_graph, targets=targets)
    finally:
        _restricted_walks.pop()


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Return the gradients of ``outputs`` with respect to ``inputs`` (nothing accumulates)."""
    outputs = (outputs,) if isinstance(outputs, (Tensor, GradientEdge)) else tuple(outputs)
    inputs = (inputs,) if isinstance(inputs, (Tensor, GradientEdge)) else tuple(inputs)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if is_grads_batched:
        return _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    grad_outputs = _grad_list(grad_outputs, len(outputs))
    if retain_graph is None:
        retain_graph = create_graph
    for t in inputs:
        if isinstance(t, GradientEdge):
            continue
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): inputs must be Tensors, but got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    roots, grads = _make_roots(outputs, grad_outputs, create_graph, "outputs")
    captures = {}
    targets = {}
    for slot, t in enumerate(inputs):
        fn, nr = t[:2] if isinstance(t, GradientEdge) else t._edge()
        captures.setdefault(fn, []).append((nr, slot))
        targets[fn] = False
    _restricted_walks.append(True)
    try:
        captured = run_backward(roots, grads, retain_graph, create_graph, targets=targets, captures=captures)
    finally:
        _restricted_walks.pop()
    result = []
    for i, (t, g) in enumerate(zip(inputs, captured)):
        if g is None:
            if materialize_grads:
                from .. import _creation
                if isinstance(t, GradientEdge):
                    shape, npdt = t[0]._out_meta[t[1]]
                    g = _creation._zeros_np(shape, npdt)
                else:
                    g = _creation.zeros_like(t)
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in "
                                   "the graph. Set allow_unused=True if this is the desired behavior.")
        elif isinstance(t, Tensor) and g._data.__class__ is not t._data.__class__:
            g = _on_device_of(g, t)
        result.append(g)
    return tuple(result)


def _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize):
    """is_grads_batched: the first dimension of each grad_output indexes independent vjps."""
    from .. import _creation
    from ..ops import stack
    grad_outputs = _grad_list(grad_outputs, len(outputs))
    n = grad_outputs[0].shape[0]
    per = []
    for b in range(n):
        per.append(grad(outputs, inputs, [g[b] for g in grad_outputs], retain_graph=True,
                        create_graph=create_graph, allow_unused=allow_unused, materialize_grads=materialize))
    res = []
    for i, t in enumerate(inputs):
        col = [p[i] for p in per]
        if all(c is None for c in col):
            res.append(None)
        else:
            res.append(stack([c if c is not None else _creation.zeros_like(t) for c in col]))
    return tuple(res)
