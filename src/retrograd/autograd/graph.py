"""The graph's nodes: Node (what ``grad_fn`` is), AccumulateGrad, saved tensors, node hooks.

A Node knows nothing of Tensor: it holds edges to the nodes that made its inputs
(``next_functions``), what it saved for backward, and its hooks. The engine calls
``_apply`` with the gradients of the node's outputs and gets one gradient per edge.

Hooks live on the node, in PyTorch's order of execution:
tensor pre-hooks (``Tensor.register_hook`` on a non-leaf), retain_grad, node pre-hooks
(``register_prehook``), the node, node post-hooks (``register_hook``). A leaf's tensor
hooks and post-accumulate hooks live on the leaf and are run by its AccumulateGrad.
One flag, ``_hooked``, tells the engine a node has any hook at all (the common case
costs one attribute test).
"""
import itertools
import threading
import weakref

__all__ = ["Node", "AccumulateGrad", "RemovableHandle", "saved_tensors_hooks",
           "disable_saved_tensors_hooks", "save_on_cpu", "register_multi_grad_hook", "GradientEdge",
           "get_gradient_edge", "increment_version"]

_seq = itertools.count()
_RELEASED = object()
# AccumulateGrad runs as soon as it is ready (PyTorch gives it the largest sequence number):
# the engine's heap key for it is shifted by this much (its _seq stays in creation order).
_ACC_SEQ = 1 << 62

SECOND_BACKWARD_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


# Output numbers of multi-edge nodes, shared (most are all zeros).
_NRS = {(0,) * n: (0,) * n for n in range(2, 9)}
_NO_EDGE = (None, 0)


def set_edges(node, fns, nrs):
    """Store the edges (next nodes ``fns``, None where no gradient flows, and the output
    numbers ``nrs`` they feed) on ``node`` in its compact form."""
    n = len(fns)
    live = [i for i, f in enumerate(fns) if f is not None]
    if n == 0 or len(live) > 1:
        node._nf = tuple(fns)
        nr = tuple(nrs)
        node._nr = _NRS.get(nr, nr)
        return
    i = live[0] if live else 0
    node._nf = fns[i]
    node._nr = nrs[i] if live else 0
    node._ne = n
    node._ni = i


class RemovableHandle:
    """Returned by every ``register_*hook``; ``remove()`` unregisters the hook."""
    _next_id = itertools.count()
    __slots__ = ("_store", "id")

    def __init__(self, store):
        self._store = store
        self.id = next(RemovableHandle._next_id)

    def remove(self):
        self._store.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _add_hook(store, fn):
    h = RemovableHandle(store)
    store[h.id] = fn
    return h


class Node:
    """A function of the backward graph: ``grad_fn`` of a tensor made by an op.

    Subclasses implement ``backward(self, grad)`` (one output) or ``_apply(self, grads)``
    (several), returning one gradient per edge in ``next_functions`` (None where no
    gradient flows).
    """
    # The edges, stored flat so that a node is one object for the cyclic GC to scan (a
    # million-node graph is rescanned as it grows): ``_nf`` is the next node (or None) of
    # a node with one edge, else a tuple of them; ``_nr`` the output number(s) it feeds.
    # ``next_functions`` is PyTorch's view of them: ((node, output_nr), ...).
    # A node with several edges of which at most one leads anywhere (``x * 2.0``: the
    # number has no edge) stores that one alone, at position ``_ni`` of ``_ne`` edges.
    _nf = ()
    _nr = ()
    _ni = 0
    _ne = 1
    _saved = None
    _saved_versions = ()
    _out_meta = None
    _hooked = False
    _pre_hooks = None
    _post_hooks = None
    _tensor_pre_hooks = None
    _retain_grad_hooks = None
    _trace = None

    # Set by the anomaly module when detect_anomaly is on: a callable giving a stack.
    _anomaly_stack = None

    def __init__(self, next_functions=(), out_meta=None):
        self.next_functions = next_functions
        self._seq = next(_seq)
        self._out_meta = out_meta
        if Node._anomaly_stack is not None:
            self._trace = Node._anomaly_stack()

    @property
    def next_functions(self):
        nf = self._nf
        if nf.__class__ is tuple:
            return tuple(zip(nf, self._nr))
        ne = self._ne
        if ne == 1:
            return ((nf, self._nr),)
        edges = [_NO_EDGE] * ne
        edges[self._ni] = (nf, self._nr)
        return tuple(edges)

    @next_functions.setter
    def next_functions(self, edges):
        set_edges(self, [e[0] for e in edges], [e[1] for e in edges])

    def _needs(self, i):
        """Whether input ``i`` gets a gradient (its edge leads to a node)."""
        nf = self._nf
        if nf.__class__ is tuple:
            return nf[i] is not None
        return nf is not None and i == self._ni

    # --- identity -------------------------------------------------------------------
    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    @property
    def metadata(self):
        d = self.__dict__.get("metadata_")
        if d is None:
            d = self.metadata_ = {}
            if self._trace is not None:
                d["traceback_"] = self._trace
        return d

    def _sequence_nr(self):
        return self._seq if self.__class__.__name__ != "NotImplemented" else 2 ** 64 - 1   # (engine._key)

    def _set_sequence_nr(self, nr):
        self._seq = nr

    @property
    def requires_grad(self):
        return any(nf is not None for nf, _ in self.next_functions)

    def _input_needs_grad(self, i):
        return self.next_functions[i][0] is not None

    # --- saved tensors --------------------------------------------------------------
    def _save(self, saved, versions):
        self._saved = saved
        self._saved_versions = versions

    def _release(self):
        if self._saved is not None:
            self._saved = _RELEASED

    # --- hooks ----------------------------------------------------------------------
    def register_hook(self, fn):
        """Run ``fn(grad_inputs, grad_outputs)`` after this node; it may return new grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = {}
        self._hooked = True
        return _add_hook(self._post_hooks, fn)

    def register_prehook(self, fn):
        """Run ``fn(grad_outputs)`` before this node; it may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        self._hooked = True
        return _add_hook(self._pre_hooks, fn)

    def _register_tensor_pre_hook(self, output_nr, fn):
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        store = self._tensor_pre_hooks.get(output_nr)
        if store is None:
            store = self._tensor_pre_hooks[output_nr] = {}
        self._hooked = True
        return _add_hook(store, fn)

    def _register_retain_grad(self, output_nr, tensor):
        if self._retain_grad_hooks is None:
            self._retain_grad_hooks = {}
        self._retain_grad_hooks[output_nr] = weakref.ref(tensor)
        self._hooked = True

    def _move_retain_grad(self, output_nr, new_fn, new_nr):
        """In-place ops move a tensor's retain_grad to its new grad_fn (as PyTorch does)."""
        hooks = self._retain_grad_hooks
        if hooks and output_nr in hooks:
            ref = hooks.pop(output_nr)
            t = ref()
            if t is not None:
                new_fn._register_retain_grad(new_nr, t)

    # --- running --------------------------------------------------------------------
    def _apply(self, grads):
        return self.backward(grads[0])

    def backward(self, grad):
        raise NotImplementedError(f"{type(self).__name__} has no backward")

    def __call__(self, *grads):
        from . import grad_mode
        with grad_mode.no_grad():
            out = self._apply(list(grads))
        return out if isinstance(out, tuple) else (out,)


class AccumulateGrad(Node):
    """The node for a leaf tensor: adds the gradient that reaches it into ``.grad``.

    Like PyTorch's, it keeps its leaf alive (``.variable``) while the graph lives. But
    once ``create_graph=True`` gives the leaf a ``.grad`` with a history, that history
    leads back here and a strong reference would close the cycle param -> grad ->
    grad_fn -> ... -> AccumulateGrad -> param (PyTorch issue 4661); from then on the
    node holds its leaf weakly (the user holds the leaf anyway, to read its ``.grad``).
    """
    def __init__(self, variable):
        self._var = weakref.ref(variable)
        self._strong = variable
        self._seq = next(_seq)
        self._out_meta = ((variable._data.shape, variable._data.dtype),)
        if Node._anomaly_stack is not None:
            self._trace = Node._anomaly_stack()

    @property
    def variable(self):
        return self._var()

    def _sequence_nr(self):
        return 2 ** 64 - 1

    def _apply(self, grads):
        # The engine accumulates (it owns accumulation, hooks and create_graph); the
        # node has nothing to send further back.
        return ()


class _HooksTLS(threading.local):
    def __init__(self):
        self.stack = []


_hooks_tls = _HooksTLS()
# How many saved_tensors_hooks contexts are open in all threads: ops test this one number
# before looking at their own thread's stack, so saving costs nothing extra without hooks.
_hooks_open = [0]


def current_pack_hooks():
    """This thread's innermost (pack, unpack) pair, or None."""
    if _hooks_open[0]:
        st = _hooks_tls.stack
        if st:
            return st[-1]
    return None


class GradientEdge(tuple):
    """(node, output_nr): where a tensor's gradient enters the graph. ``autograd.grad``
    accepts it in place of a tensor (as outputs or inputs)."""
    __slots__ = ()

    def __new__(cls, node, output_nr, ownership_token=None):
        return tuple.__new__(cls, (node, output_nr, ownership_token))

    node = property(lambda self: self[0])
    output_nr = property(lambda self: self[1])
    ownership_token = property(lambda self: self[2])

    def __repr__(self):
        return f"GradientEdge(node={self[0]!r}, output_nr={self[1]}, ownership_token={self[2]!r})"


def get_gradient_edge(tensor):
    """The GradientEdge of ``tensor`` (its grad_fn, or a leaf's AccumulateGrad)."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require "
                           "gradients")
    node, nr = tensor._edge()
    return GradientEdge(node, nr)


def increment_version(tensor):
    """Bump the version counter of ``tensor`` (or of each tensor in an iterable), as an
    in-place write the autograd engine could not see would."""
    for t in (tensor if isinstance(tensor, (list, tuple)) else (tensor,)):
        t._bump_version()


class saved_tensors_hooks:
    """Pack/unpack hooks for tensors saved for backward (e.g. to offload or compress them).

    ``pack_hook(tensor)`` runs when an op saves a tensor and may return anything;
    ``unpack_hook(packed)`` runs when backward needs it and must return a tensor with the
    original's content. Innermost context wins; the hooks are thread-local.
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _disabled[0] is not None:
            raise RuntimeError(_disabled[0])
        _hooks_tls.stack.append((self.pack_hook, self.unpack_hook))
        _hooks_open[0] += 1
        return self

    def __exit__(self, *exc):
        _hooks_tls.stack.pop()
        _hooks_open[0] -= 1
        return False


_disabled = [None]


class disable_saved_tensors_hooks:
    """Make ``saved_tensors_hooks`` raise ``error_message`` inside the block."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self.prev = _disabled[0]
        _disabled[0] = self.error_message
        return self

    def __exit__(self, *exc):
        _disabled[0] = self.prev
        return False

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapper(*a, **k):
            with disable_saved_tensors_hooks(self.error_message):
                return func(*a, **k)
        return wrapper


class save_on_cpu(saved_tensors_hooks):
    """Keep saved tensors on the CPU (copies device tensors back when backward needs them)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            return (t.device, t.cpu())

        def unpack(packed):
            device, t = packed
            return t.to(device)
        super().__init__(pack, unpack)


class _MultiHandle:
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


# The backward pass now running (set by the engine): its nodes, for register_multi_grad_hook.
_current_task = [None]


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Call ``fn`` once per backward pass: with the gradients of all ``tensors`` (mode
    'all'; None for those the pass does not reach) once the last of them is computed,
    or with the first gradient computed (mode 'any')."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    n = len(tensors)
    state = {"task": None, "grads": None, "left": 0}

    def begin():
        task = _current_task[0]
        if state["task"] is not task:
            state["task"] = task
            state["grads"] = [None] * n
            if mode == "all":
                reached = task if task is not None else {}
                state["left"] = sum(1 for t in tensors if t.requires_grad and t._edge()[0] in reached)
            else:
                state["left"] = 1
        return state

    def make(i):
        def hook(g):
            st = begin()
            if st["left"] <= 0:
                return None
            st["grads"][i] = g
            st["left"] -= 1
            if mode == "any":
                fn(g)
            elif st["left"] == 0:
                fn(tuple(st["grads"]))
            return None
        return hook

    return _MultiHandle([t.register_hook(make(i)) for i, t in enumerate(tensors) if t.requires_grad])
