"""The graph's nodes: Node (what ``grad_fn`` is), AccumulateGrad, saved tensors, node hooks.

A Node knows nothing of Tensor: it holds edges to the nodes that made its inputs
(``next_functions``), what it saved for backward, and its hooks. The engine calls
``_apply`` with the gradients of the node's outputs and gets one gradient per edge.
"""
import itertools

__all__ = ["Node", "AccumulateGrad", "RemovableHandle", "saved_tensors_hooks"]

_seq = itertools.count()
_RELEASED = object()

SECOND_BACKWARD_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


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


class Node:
    """A function of the backward graph: ``grad_fn`` of a tensor made by an op.

    Subclasses implement ``backward(self, grad)`` (one output) or
    ``backward_multi(self, grads)`` (several), returning one gradient per edge in
    ``next_functions`` (None where no gradient flows).
    """
    _saved = None
    _saved_versions = ()
    _out_meta = None
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

    # --- identity -------------------------------------------------------------------
    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    @property
    def metadata(self):
        try:
            return self.metadata_
        except AttributeError:
            self.metadata_ = {}
            return self.metadata_

    def _sequence_nr(self):
        return self._seq

    def needs_input_grad(self, i):
        return self.next_functions[i][0] is not None

    # --- saved tensors --------------------------------------------------------------
    def _save(self, saved, versions):
        self._saved = saved
        self._saved_versions = versions

    def _release(self):
        if self._saved is not None:
            self._saved = _RELEASED

    def _raise_if_released(self):
        if self._saved is _RELEASED:
            raise RuntimeError(SECOND_BACKWARD_MSG)

    # --- hooks ----------------------------------------------------------------------
    def register_hook(self, fn):
        """Run ``fn(grad_inputs, grad_outputs)`` after this node; it may return new grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = {}
        h = RemovableHandle(self._post_hooks)
        self._post_hooks[h.id] = fn
        return h

    def register_prehook(self, fn):
        """Run ``fn(grad_outputs)`` before this node; it may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        h = RemovableHandle(self._pre_hooks)
        self._pre_hooks[h.id] = fn
        return h

    def _register_tensor_pre_hook(self, output_nr, fn):
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        store = self._tensor_pre_hooks.setdefault(output_nr, {})
        h = RemovableHandle(store)
        store[h.id] = fn
        return h

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
    """The node for a leaf tensor: adds the gradient that reaches it into ``.grad``."""

    def __init__(self, variable):
        super().__init__((), ((variable._data.shape, variable._data.dtype),))
        self.variable = variable

    def _apply(self, grads):
        # The engine accumulates (it owns accumulation, hooks and create_graph); the
        # node has nothing to send further back.
        return ()


class saved_tensors_hooks:
    """Pack/unpack hooks for tensors saved for backward (e.g. to offload or compress them)."""
    _stack = []

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        saved_tensors_hooks._stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        saved_tensors_hooks._stack.pop()
        return False
