"""torch.utils.checkpoint: trade compute for memory by recomputing a function's forward in backward.

``use_reentrant=True`` (PyTorch's default, with a warning when not passed) runs the function
without recording and records one CheckpointFunctionBackward node that reruns it with grad
enabled and backpropagates through the rerun. ``use_reentrant=False`` records the function's
own graph but keeps none of its saved tensors: the first backward access of one reruns the
function (under saved-tensor hooks) and hands back the recomputed values. Either way the RNG
state is restored for the rerun (``preserve_rng_state``) so dropout masks repeat.
"""
import contextlib
import warnings

from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "noop_context_fn", "set_checkpoint_early_stop",
           "set_checkpoint_debug_enabled"]


class CheckpointError(RuntimeError):
    """The recomputation did not reproduce what the forward saved."""


def noop_context_fn():
    """The default ``context_fn``: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


_early_stop = [True]
_debug = [None]


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Whether a non-reentrant recomputation may stop once every needed tensor is back (it always
    reruns the whole function here; the flag is accepted for compatibility)."""
    prev = _early_stop[0]
    _early_stop[0] = enable
    try:
        yield
    finally:
        _early_stop[0] = prev


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    prev = _debug[0]
    _debug[0] = enabled
    try:
        yield
    finally:
        _debug[0] = prev


def detach_variable(inputs):
    """Detached copies of the tensors of ``inputs`` keeping their requires_grad."""
    if isinstance(inputs, tuple):
        out = []
        for inp in inputs:
            if not isinstance(inp, Tensor):
                out.append(inp)
                continue
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            out.append(x)
        return tuple(out)
    raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=3)


def _get_rng():
    from .. import _creation
    return _creation.get_rng_state()


def _set_rng(state):
    from .. import _creation
    _creation.set_rng_state(state)


@contextlib.contextmanager
def _forked_rng(state, enabled):
    """Run the block from RNG ``state`` and leave the generator as it was before."""
    if not enabled:
        yield
        return
    before = _get_rng()
    _set_rng(state)
    try:
        yield
    finally:
        _set_rng(before)


class CheckpointFunction(Function):
    """The reentrant checkpoint: forward without a graph, backward reruns it with one."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_rng_state = _get_rng()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with grad_mode.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        from .. import autograd
        from ..autograd.engine import _is_checkpoint_valid
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an "
                "`inputs` parameter to .backward(). To resolve this error, you can either set "
                "use_reentrant=False, or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        for i, idx in enumerate(ctx.tensor_indices):
            inputs[idx] = ctx.saved_tensors[i]
        detached = detach_variable(tuple(inputs))
        with _forked_rng(getattr(ctx, "fwd_rng_state", None), ctx.preserve_rng_state):
            with grad_mode.enable_grad():
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outs, grads = [], []
        for o, g in zip(outputs, args):
            if isinstance(o, Tensor) and o.requires_grad:
                outs.append(o)
                grads.append(g)
        if not outs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        autograd.backward(outs, grads)
        return (None, None) + tuple(inp.grad if isinstance(inp, Tensor) else None for inp in detached)


class _Frame:
    """The saved tensors of one non-reentrant checkpointed call, recomputed on first use."""

    def __init__(self, fn, args, kwargs, rng_state, preserve, context_fn):
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.rng_state, self.preserve, self.context_fn = rng_state, preserve, context_fn
        self.metas = []
        self.recomputed = None

    def pack(self, t):
        self.metas.append((tuple(t.shape), t.dtype))
        return len(self.metas) - 1

    def recompute(self):
        got = []

        def pack(t):
            got.append(t.detach() if t.requires_grad else t)
            return len(got) - 1

        args = tuple(a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a for a in self.args)
        _, recompute_ctx = self.context_fn()
        with _forked_rng(self.rng_state, self.preserve), grad_mode.enable_grad(), recompute_ctx, \
                saved_tensors_hooks(pack, lambda i: got[i]):
            self.fn(*args, **self.kwargs)
        if len(got) != len(self.metas):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the original forward and "
                f"recomputation.\nNumber of tensors saved during forward: {len(self.metas)}\n"
                f"Number of tensors saved during recomputation: {len(got)}.")
        bad = [i for i, (t, m) in enumerate(zip(got, self.metas)) if (tuple(t.shape), t.dtype) != m]
        if bad:
            lines = "\n".join(f"tensor at position {i}:\nsaved metadata: {{'shape': {list(self.metas[i][0])}, "
                              f"'dtype': {self.metas[i][1]}}}\nrecomputed metadata: {{'shape': "
                              f"{list(got[i].shape)}, 'dtype': {got[i].dtype}}}" for i in bad)
            raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have "
                                  f"different metadata than during the forward pass.\n{lines}\n")
        self.recomputed = got

    def unpack(self, i):
        if self.recomputed is None:
            self.recompute()
        return self.recomputed[i]


_REENTRANT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch 2.9, "
    "calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is recommended, but if "
    "you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more "
    "details on the differences between the two variants.")


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """``function(*args, **kwargs)`` whose intermediate values are recomputed during backward instead
    of being kept."""
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    rng_state = _get_rng() if preserve else None
    frame = _Frame(function, args, kwargs, rng_state, preserve, context_fn)
    forward_ctx, _ = context_fn()
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_ctx:
        return function(*args, **kwargs)


_SEQ_WARNING = (
    "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed explicitly. In "
    "version 2.9 we will raise an exception if use_reentrant is not passed. use_reentrant=False is recommended, "
    "but if you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for "
    "more details on the differences between the two variants.")


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a Sequential (or list of modules) in ``segments`` chunks, checkpointing all but the last."""
    if use_reentrant is None:
        warnings.warn(_SEQ_WARNING, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    from ..nn.modules.container import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
