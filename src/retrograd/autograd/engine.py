"""The backward walk.

Like PyTorch's engine: count each node's dependencies with an explicit stack, sum the
gradients reaching a node in its buffer, and run it once its count hits zero, newest
node first (a heap on sequence numbers). Nothing recurses, so graphs a million nodes
deep go backward. Every gradient a node returns passes one check (``_validate``).
"""
import heapq

import numpy as np

from . import grad_mode
from .graph import AccumulateGrad, SECOND_BACKWARD_MSG  # noqa: F401  (re-exported)
from .._tensor import Tensor, Size

__all__ = ["run_backward"]

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


def _run_tensor_hooks(hooks, g):
    for h in list(hooks.values()):
        r = h(g)
        if r is not None:
            if not isinstance(r, Tensor):
                raise TypeError(f"hook should return None or a Tensor, but got {type(r).__name__}")
            if r._data.shape != g._data.shape:
                raise RuntimeError(
                    f"hook '{getattr(h, '__name__', 'hook')}' has changed the size of value: the gradient "
                    f"of shape {Size(g._data.shape)} became {Size(r._data.shape)}")
            g = r
    return g


def _accumulate(var, g, create_graph):
    """AccumulateGrad: add ``g`` into the leaf's ``.grad``."""
    hooks = var._backward_hooks
    if hooks:
        g = _run_tensor_hooks(hooks, g)
    old = var._grad
    if old is None:
        if create_graph:
            var._grad = g
        else:
            # A fresh buffer: the incoming gradient may be shared with other leaves
            # (an add passes one gradient to both inputs), and .grad is mutated in place.
            var._grad = Tensor._make(g._data.copy())
    elif create_graph or old._requires_grad:
        var._grad = old + g
    else:
        d = old._data
        if d.shape == g._data.shape:
            d += g._data
            old._bump_version()
        else:
            var._grad = Tensor._make(d + g._data)
    post = var._post_acc_hooks
    if post:
        for h in list(post.values()):
            h(var)


def _retain(tref, g):
    t = tref()
    if t is None:
        return
    if t._grad is None:
        t._grad = Tensor._make(g._data.copy()) if not g._requires_grad else g
    else:
        t._grad = Tensor._make(t._grad._data + g._data)


def _compute_needed(roots, targets):
    """Nodes from which some target node can be reached (PyTorch's exec_info)."""
    needed = {}
    for r in roots:
        if r in needed:
            continue
        stack = [(r, iter(r.next_functions))]
        needed[r] = r in targets
        while stack:
            node, it = stack[-1]
            advanced = False
            for nf, _ in it:
                if nf is None:
                    continue
                if nf not in needed:
                    needed[nf] = nf in targets
                    stack.append((nf, iter(nf.next_functions)))
                    advanced = True
                    break
                if needed[nf]:
                    needed[node] = True
            if not advanced:
                stack.pop()
                if stack and needed[node]:
                    needed[stack[-1][0]] = True
    return needed


def run_backward(roots, grads, retain_graph, create_graph, captures=None, accumulate=True):
    """Walk the graph from ``roots`` (list of (node, output_nr)) with ``grads``.

    ``captures`` maps (node, input_nr) -> slot index; when given, gradients arriving
    there are returned instead of (or, with ``accumulate``, besides) accumulated.
    """
    deps = {}
    stack = []
    for fn, _ in roots:
        if fn not in deps:
            deps[fn] = 0
            stack.append(fn)
    while stack:
        fn = stack.pop()
        for nf, _ in fn.next_functions:
            if nf is not None:
                c = deps.get(nf)
                if c is None:
                    deps[nf] = 1
                    stack.append(nf)
                else:
                    deps[nf] = c + 1

    needed = None
    captured = None
    if captures is not None:
        captured = [None] * (max(captures.values()) + 1 if captures else 0)
        targets = {n for n, _ in captures}
        needed = _compute_needed([fn for fn, _ in roots], targets)

    buffers = {}
    for (fn, nr), g in zip(roots, grads):
        buf = buffers.get(fn)
        if buf is None:
            buf = buffers[fn] = [None] * len(fn._out_meta)
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    heap = []
    for fn in buffers:
        if deps[fn] == 0:
            _heappush(heap, (-fn._seq, fn))

    prev_mode = _state.grad
    _state.grad = bool(create_graph)
    check = anomaly_check[0]
    try:
        while heap:
            fn = _heappop(heap)[1]
            grads_in = buffers.pop(fn)
            if needed is not None and not needed.get(fn, False):
                continue
            thooks = fn._tensor_pre_hooks
            if thooks:
                for nr, hooks in thooks.items():
                    if hooks and grads_in[nr] is not None:
                        grads_in[nr] = _run_tensor_hooks(hooks, grads_in[nr])
            rhooks = fn._retain_grad_hooks
            if rhooks:
                for nr, tref in rhooks.items():
                    if grads_in[nr] is not None:
                        _retain(tref, grads_in[nr])
            if fn._pre_hooks:
                for h in list(fn._pre_hooks.values()):
                    r = h(tuple(grads_in))
                    if r is not None:
                        grads_in = list(r)
            if captures is not None:
                for i, g in enumerate(grads_in):
                    slot = captures.get((fn, i))
                    if slot is not None and g is not None:
                        captured[slot] = g if captured[slot] is None else captured[slot] + g
                        if accumulate and type(fn) is not AccumulateGrad:
                            t = _capture_target(fn, i)
                            if t is not None:
                                _retain_into(t, g, create_graph)
                if type(fn) is AccumulateGrad and not accumulate:
                    continue
            if type(fn) is AccumulateGrad:
                g = grads_in[0]
                if g is not None:
                    _accumulate(fn.variable, g, create_graph)
                if fn._post_hooks:
                    for h in list(fn._post_hooks.values()):
                        h((), tuple(grads_in))
                if tracers:
                    for tr in tracers:
                        tr(fn, grads_in, ())
                continue
            if len(grads_in) > 1 and None in grads_in:
                grads_in = _materialize(fn, grads_in)
            elif grads_in[0] is None:
                grads_in = _materialize(fn, grads_in)
            fn._raise_if_released()
            out = fn._apply(grads_in)
            if type(out) is not tuple:
                out = (out,) if not isinstance(out, list) else tuple(out)
            if fn._post_hooks:
                for h in list(fn._post_hooks.values()):
                    r = h(out, tuple(grads_in))
                    if r is not None:
                        out = tuple(r)
            if tracers:
                for tr in tracers:
                    tr(fn, grads_in, out)
            if check is not None:
                check(fn, out)
            if not retain_graph:
                fn._release()
            nfs = fn.next_functions
            if len(out) != len(nfs):
                raise RuntimeError(
                    f"function {fn.name()} returned an incorrect number of gradients (expected "
                    f"{len(nfs)}, got {len(out)})")
            for i, (nf, nr) in enumerate(nfs):
                if nf is None:
                    continue
                g = out[i]
                if g is None:
                    c = deps[nf] - 1
                    deps[nf] = c
                    if c == 0 and nf in buffers:
                        _heappush(heap, (-nf._seq, nf))
                    continue
                meta = nf._out_meta[nr]
                if g._data.shape != meta[0] or g._data.dtype != meta[1]:
                    g = _validate(fn, i, g, meta)
                buf = buffers.get(nf)
                if buf is None:
                    buf = buffers[nf] = [None] * len(nf._out_meta)
                old = buf[nr]
                buf[nr] = g if old is None else old + g
                c = deps[nf] - 1
                deps[nf] = c
                if c == 0:
                    _heappush(heap, (-nf._seq, nf))
    finally:
        _state.grad = prev_mode
    return captured


def _materialize(fn, grads_in):
    from .. import _creation
    out = []
    for g, (shape, npdt) in zip(grads_in, fn._out_meta):
        out.append(g if g is not None else _creation._zeros_np(shape, npdt))
    return out


# Non-leaf tensors named in backward(inputs=...): node -> {output_nr: tensor}
_capture_tensors = {}


def _capture_target(fn, nr):
    d = _capture_tensors.get(fn)
    return None if d is None else d.get(nr)


def _retain_into(t, g, create_graph):
    if t._grad is None:
        t._grad = g if create_graph else Tensor._make(g._data.copy())
    else:
        t._grad = t._grad + g


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Compute the gradients of ``tensors`` and accumulate them into the leaves' ``.grad``."""
    if isinstance(tensors, Tensor):
        tensors = (tensors,)
    else:
        tensors = tuple(tensors)
    if grad_tensors is None or isinstance(grad_tensors, Tensor):
        grad_tensors = (grad_tensors,) * len(tensors) if grad_tensors is None else (grad_tensors,)
    else:
        grad_tensors = tuple(grad_tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"grad_tensors has {len(grad_tensors)} elements but tensors has {len(tensors)}")
    if retain_graph is None:
        retain_graph = create_graph
    roots, grads = _make_roots(tensors, grad_tensors, create_graph)
    if inputs is not None:
        if isinstance(inputs, Tensor):
            inputs = (inputs,)
        inputs = tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        captures = {}
        for i, t in enumerate(inputs):
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            key = t._edge()
            captures[key] = i
            if t._grad_fn is not None:
                _capture_tensors.setdefault(key[0], {})[key[1]] = t
        try:
            run_backward(roots, grads, retain_graph, create_graph, captures=captures, accumulate=True)
        finally:
            for t in inputs:
                if t._grad_fn is not None:
                    _capture_tensors.pop(t._grad_fn, None)
    else:
        run_backward(roots, grads, retain_graph, create_graph)


def _make_roots(tensors, grad_tensors, create_graph):
    from .. import _creation
    roots, grads = [], []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if t._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if t._data.dtype.kind not in "fc":
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {t.dtype}")
            g = _creation._ones_like_data(t._data)
        else:
            if not isinstance(g, Tensor):
                g = _creation.tensor(g, dtype=t.dtype)
            if g._data.shape != t._data.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {Size(g._data.shape)} and "
                    f"output[{i}] has a shape of {Size(t._data.shape)}.")
            if g._data.dtype.kind != t._data.dtype.kind:
                raise TypeError(f"For complex Tensors, both grad_output and output are required to have "
                                f"the same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of "
                                f"{g.dtype} and output[{i}] has a dtype of {t.dtype}.")
            if not create_graph:
                g = g.detach()
        roots.append(t._edge())
        grads.append(g)
    return roots, grads


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Return the gradients of ``outputs`` with respect to ``inputs`` (nothing accumulates)."""
    if isinstance(outputs, Tensor):
        outputs = (outputs,)
    outputs = tuple(outputs)
    single = isinstance(inputs, Tensor)
    inputs = (inputs,) if single else tuple(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,) * len(outputs) if grad_outputs is None else (grad_outputs,)
    grad_outputs = tuple(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(grad_outputs)} for {len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    for t in inputs:
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): inputs must be Tensors, but got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    roots, grads = _make_roots(outputs, grad_outputs, create_graph)
    captures = {}
    slot_of = []
    for t in inputs:
        key = t._edge()
        if key not in captures:
            captures[key] = len(captures)
        slot_of.append(captures[key])
    captured = run_backward(roots, grads, retain_graph, create_graph, captures=captures, accumulate=False)
    result = []
    for t, s in zip(inputs, slot_of):
        g = captured[s]
        if g is None:
            if materialize_grads:
                from .. import _creation
                g = _creation.zeros_like(t)
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
        elif g._data.shape != t._data.shape:
            g = _validate(t._grad_fn or t._grad_accumulator(), 0, g, (t._data.shape, t._data.dtype))
        result.append(g)
    return tuple(result)


