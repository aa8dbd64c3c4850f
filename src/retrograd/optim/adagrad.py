"""Adagrad (lr_decay, initial_accumulator_value, weight decay, maximize)."""
import numpy as np

from ..ops._base import xp_for

from .._tensor import Tensor
from ._flat import batches, flat_ok
from ._sparse import adagrad_sparse_step
from .optimizer import (Optimizer, _check_fused, _check_lr, _check_nonnegative, _scalar, _sqrt, _step_tensor,
                        addcmul, fma_scalar)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad: each coordinate's step shrinks with its accumulated squared gradients."""

    _group_option_defaults = {"foreach": None, "maximize": False, "differentiable": False, "fused": None}
    _tensor_steps = True

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        _check_nonnegative(lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, epsilon=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        _check_fused(fused, foreach, differentiable)
        super().__init__(params, defaults)
        # PyTorch creates the state eagerly, with the accumulator filled in.
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _step_tensor()
                init = group["initial_accumulator_value"]
                if p.is_complex():
                    init = complex(init, init)
                state["sum"] = Tensor._make(xp_for(p._data).full_like(p._data, init))


    def share_memory(self):
        """A no-op: arrays are already in this process's memory."""

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._closure_loss(closure)
        for index, group in enumerate(self.param_groups):
            params = []
            for p in group["params"]:
                if p._grad is None:
                    continue
                if p._grad._sparse:     # sparse gradients: their own step, outside the batches
                    if group["weight_decay"] != 0:
                        raise RuntimeError("weight_decay option is not compatible with sparse gradients")
                    state = self.state[p]
                    state["step"]._data += 1
                    step = float(state["step"]._data)
                    clr = _scalar(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
                    adagrad_sparse_step(p, state, clr, group["eps"], group["maximize"])
                    continue
                params.append(p)
            for b in batches(self, index, group, params, ("sum",), flat=flat_ok(group)):
                _adagrad(b, group)
        return loss


def _adagrad(b, group):
    """One Adagrad step of a batch."""
    lr = _scalar(group["lr"])
    wd = group["weight_decay"]
    b.steps += 1
    step = b.step_value()
    g = b.grad(group["maximize"])
    if wd != 0:
        g = fma_scalar(b.param(), wd, g, out=g)
    clr = lr / (1 + (step - 1) * group["lr_decay"])
    s = b.state["sum"]
    addcmul(s, g, g, 1, out=s)
    std = _sqrt(s)
    std += group["eps"]
    b.addcdiv(g, std, -clr, out=g)
