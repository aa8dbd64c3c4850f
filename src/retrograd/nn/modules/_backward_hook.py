"""Full backward hooks: identity nodes around a module's inputs and outputs.

The node on the outputs sees the gradients of the outputs (grad_output); the node on
the inputs sees the gradients of the inputs (grad_input) and runs the module's hooks,
which may replace grad_input.
"""
import warnings

from ..._tensor import Tensor
from ...ops._base import OpNode, node_for, finish_multi


class BackwardHookFunctionBackward(OpNode):
    def _apply(self, grads):
        return tuple(grads)


def _identity(tensors):
    node = node_for(BackwardHookFunctionBackward, tuple(tensors))
    if node is None:
        return None, list(tensors)
    outs = finish_multi(node, [t._data for t in tensors])
    for o, t in zip(outs, tensors):
        o._version = t._shared_version()
    return node, outs


class BackwardHook:
    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = 0
        self.n_inputs = 0
        self.input_tensors_index = None

    def _pack_with_none(self, indices, values, size):
        res = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    def _unpack_none(self, indices, values):
        return tuple(values[idx] for idx in indices)

    def setup_input_hook(self, args):
        self.n_inputs = len(args)
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a._requires_grad]
        self.input_tensors_index = idx
        if not idx:
            return args
        node, outs = _identity([args[i] for i in idx])
        if node is None:
            return args

        def hook(grads_in):
            grad_input = self._pack_with_none(self.input_tensors_index, grads_in, self.n_inputs)
            grad_output = self.grad_outputs
            res = None
            for h in self.user_hooks:
                out = h(self.module, grad_input, grad_output)
                if out is None:
                    continue
                out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
                if len(out) != len(grad_input):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(out)}, "
                                       f"but expected {len(grad_input)}")
                grad_input = out
                res = out
            self.grad_outputs = None
            if res is None:
                return None
            return tuple(res[i] for i in self.input_tensors_index)

        node.register_prehook(hook)
        new = list(args)
        for i, o in zip(idx, outs):
            new[i] = o
        return tuple(new)

    def setup_output_hook(self, result):
        single = isinstance(result, Tensor)
        outs = (result,) if single else (tuple(result) if isinstance(result, (tuple, list)) else None)
        if outs is None:
            return result
        idx = [i for i, a in enumerate(outs) if isinstance(a, Tensor) and a._requires_grad]
        self.n_outputs = len(outs)
        if not idx:
            return result
        node, wrapped = _identity([outs[i] for i in idx])
        if node is None:
            return result

        def hook(grads_in):
            grad_output = self._pack_with_none(idx, grads_in, self.n_outputs)
            changed = None
            for h in self.user_pre_hooks:
                r = h(self.module, grad_output)
                if r is not None:
                    grad_output = tuple(r) if isinstance(r, (tuple, list)) else (r,)
                    changed = grad_output
            self.grad_outputs = grad_output
            if not self.input_tensors_index:
                warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                              "outputs since no inputs require gradients. See "
                              "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module."
                              "register_full_backward_hook for more details.", stacklevel=5)
                grad_input = tuple([None] * self.n_inputs)
                for h in self.user_hooks:
                    out = h(self.module, grad_input, self.grad_outputs)
                    if out is not None and not all(o is None for o in (out if isinstance(out, tuple) else (out,))):
                        raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                           "always return None or None for all gradients.")
                self.grad_outputs = None
            if changed is not None:
                return tuple(changed[i] for i in idx)
            return None

        node.register_prehook(hook)
        new = list(outs)
        for i, o in zip(idx, wrapped):
            new[i] = o
        if single:
            return new[0]
        return type(result)(new) if isinstance(result, tuple) and type(result) is tuple else \
            (type(result)(*new) if isinstance(result, tuple) else list(new))
