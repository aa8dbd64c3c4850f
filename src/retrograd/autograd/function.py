"""Custom differentiable operations: ``Function`` with static ``forward``/``backward``.

As in PyTorch, each subclass ``F`` gets a node class ``FBackward``; the ``ctx`` handed to
``forward`` (or ``setup_context``) *is* that node, so what ``ctx`` saves lives on the
graph and is freed with it. ::

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y
"""
import functools

from .._tensor import Tensor
from ..ops._base import OpNode, save, view_of, SavedOutput, _Packed, check_inplace
from .graph import current_pack_hooks
from . import grad_mode
from .graph import Node, _seq

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable", "InplaceFunction",
           "NestedIOFunction"]

_state = grad_mode._state
_new = object.__new__


class FunctionCtx:
    """What ``forward`` uses to talk to ``backward``: saved tensors and output marks."""
    to_save = None
    dirty_tensors = ()
    non_differentiable = ()
    materialize_grads = True

    def save_for_backward(self, *tensors):
        """Save tensors (or None) for backward; read them back with ``ctx.saved_tensors``."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                f"{type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    def mark_dirty(self, *args):
        """Declare tensors that ``forward`` modified in place (they must be returned)."""
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        """Declare outputs that need no gradient (backward still gets a zero for them)."""
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        """With False, backward gets None (not zeros) for outputs that received no gradient."""
        self.materialize_grads = bool(value)

    def mark_shared_storage(self, *pairs):
        raise RuntimeError("mark_shared_storage is deprecated. Tensors with shared storages are automatically "
                           "tracked. Note that calls to `set_()` are not tracked")


class BackwardCFunction(OpNode, FunctionCtx):
    """The node (and ctx) of one call of a custom Function."""
    _forward_cls = None
    _is_tensor_input = ()

    def name(self):
        return type(self).__name__

    @property
    def _materialize_grads(self):
        return self.materialize_grads

    def _apply(self, grads):
        cls = self._forward_cls
        bw = cls.backward
        if bw is _SingleLevelFunction.backward and cls.vjp is _SingleLevelFunction.vjp:
            raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                      "autograd.Function to use it with backward mode AD.")
        user_fn = bw if bw is not _SingleLevelFunction.backward else cls.vjp
        res = user_fn(self, *grads)
        if type(res) is not tuple:
            res = (res,)
        is_tensor = self._is_tensor_input
        n = len(is_tensor)
        if len(res) > n:
            if all(r is None for r in res[n:]):
                res = res[:n]
        for i, r in enumerate(res[:n]):
            if r is not None and not is_tensor[i]:
                raise RuntimeError(f"function {self.name()} returned a gradient different than None at "
                                   f"position {i + 1}, but the corresponding forward input was not a Variable")
        return res

    def apply(self, *grads):
        """Run this node's backward by hand (as ``ctx.apply`` / ``grad_fn.apply`` in PyTorch)."""
        return self._apply(list(grads))

    @property
    def saved_variables(self):
        return self.saved_tensors


class FunctionMeta(type):
    """Gives every Function subclass its node class, ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls,
                                                                          "__module__": cls.__module__})
        super().__init__(name, bases, attrs)


class _SingleLevelFunction(FunctionCtx, metaclass=FunctionMeta):
    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use "
                                  "it with forward mode AD.")


class Function(_SingleLevelFunction):
    """Base class of custom differentiable operations (``F.apply(*args)`` runs one)."""

    def __init__(self, *args, **kwargs):
        import warnings
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd functions are all "
                      "static, so you should invoke them on the class itself. Instantiating an autograd "
                      "function will raise an error in a future version of PyTorch.", DeprecationWarning,
                      stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either override the vmap "
                                  "staticmethod or set generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` without recording, then wire its outputs to a ``<Name>Backward`` node."""
        setup = cls.setup_context is not _SingleLevelFunction.setup_context
        if setup and kwargs:
            import inspect
            sig = inspect.signature(cls.forward)
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = tuple(bound.args), {}
        ctx = _new(cls._backward_cls)
        is_tensor = tuple(isinstance(a, Tensor) for a in args)
        needs = tuple(t and a._requires_grad for t, a in zip(is_tensor, args))
        ctx.needs_input_grad = needs
        ctx._is_tensor_input = is_tensor
        recording = _state.grad and any(needs)
        prev = _state.grad
        _state.grad = False
        try:
            if setup:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        finally:
            _state.grad = prev
        if not recording:
            ctx.to_save = None
            return out
        ctx.next_functions = tuple(a._edge() if t else (None, 0) for t, a in zip(is_tensor, args))
        ctx._seq = next(_seq)
        if Node._anomaly_stack is not None:
            ctx._trace = Node._anomaly_stack()
        return _wrap_outputs(ctx, args, out)


def _wrap_outputs(ctx, args, out):
    single = not isinstance(out, tuple)
    outs = (out,) if single else out
    inputs = {id(a): a for a in args if isinstance(a, Tensor)}
    dirty = {id(t) for t in ctx.dirty_tensors}
    non_diff = {id(t) for t in ctx.non_differentiable}
    for t in ctx.dirty_tensors:
        if id(t) not in inputs:
            raise RuntimeError("Some elements marked as dirty during the forward method were not passed as "
                               "inputs to the forward method.")
    originals = list(outs)
    meta = []
    result = []
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            meta.append(None)
            result.append(o)
            continue
        meta.append((o._data.shape, o._data.dtype))
        differentiable = id(o) not in non_diff and o._data.dtype.kind in "fcV"
        if id(o) in dirty:
            if o._requires_grad and o._grad_fn is None:
                raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
            check_inplace(o)
            o._bump_version()
            if differentiable:
                from ..ops._base import rebase_history
                rebase_history(o, ctx, i)
            result.append(o)
            continue
        if id(o) in inputs:
            # An input returned as it is: the output is a new tensor viewing it.
            t = _new(Tensor)
            t._data = o._data
            view_of(o, t, lambda b: b)
            o = t
        if differentiable:
            o._grad_fn = ctx
            o._output_nr = i
            o._requires_grad = True
        result.append(o)
    ctx._out_meta = tuple(meta)
    _save_ctx(ctx, originals, result)
    return result[0] if single else tuple(result)


def _save_ctx(ctx, originals, result):
    to_save = ctx.to_save
    ctx.to_save = None
    if to_save is None:
        return
    ids = {id(o): i for i, o in enumerate(originals) if isinstance(o, Tensor)}
    plain = []
    for t in to_save:
        i = ids.get(id(t)) if t is not None else None
        plain.append(t if i is None or result[i]._grad_fn is not ctx else None)
    save(ctx, *plain)
    saved, vs = list(ctx._saved), list(ctx._saved_versions)
    for k, t in enumerate(to_save):
        if t is None or plain[k] is not None:
            continue
        out = result[ids[id(t)]]
        hooks = current_pack_hooks()
        if hooks is not None:
            saved[k] = _Packed(out, hooks[0], hooks[1], True)
            vs[k] = None
        else:
            saved[k] = so = SavedOutput(out)
            vs[k] = so.version[0]
    ctx._saved = tuple(saved)
    ctx._saved_versions = tuple(vs)


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class NestedIOFunction(Function):
    pass


# --- once_differentiable -----------------------------------------------------------------

class Error(Node):
    """Stands in for a backward that cannot itself be differentiated (PyTorch's DelayedError)."""

    def __init__(self, msg, n):
        self.msg = msg
        self.next_functions = ((None, 0),) * n
        self._seq = next(_seq)

    def _apply(self, grads):
        raise RuntimeError(self.msg)


def once_differentiable(fn):
    """Mark a custom backward as not differentiable: it runs without recording, and
    differentiating its result raises."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = _state.grad
        _state.grad = False
        try:
            outputs = fn(ctx, *args)
        finally:
            _state.grad = prev
        if not _state.grad:
            return outputs
        if not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        tup = outputs if isinstance(outputs, tuple) else (outputs,)
        err = Error("trying to differentiate twice a function that was marked with @once_differentiable",
                           len(tup))
        meta, wrapped = [], []
        for i, o in enumerate(tup):
            if isinstance(o, Tensor):
                t = Tensor._make(o._data)
                t._requires_grad = True
                t._grad_fn = err
                t._output_nr = i
                meta.append((o._data.shape, o._data.dtype))
                wrapped.append(t)
            else:
                meta.append(None)
                wrapped.append(o)
        err._out_meta = tuple(meta)
        return tuple(wrapped) if isinstance(outputs, tuple) else wrapped[0]
    return wrapper



