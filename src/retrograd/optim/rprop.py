"""Rprop: per-coordinate step sizes that grow while the gradient keeps its sign."""
import numpy as np

from ..ops._base import xp_for

from .._tensor import Tensor
from .optimizer import Optimizer, _check_lr, _real, _scalar, _zeros_like

__all__ = ["Rprop"]


def _init_rprop_state(group):
    """A new state's 'prev' (zeros) and 'step_size' (filled with the group's lr)."""
    def init(p, state):
        xp = xp_for(p, state)
        state["prev"] = _zeros_like(p)
        lr = _scalar(group["lr"])
        value = complex(lr, lr) if p.is_complex() else lr
        state["step_size"] = Tensor._make(xp.full_like(p._grad._data, value))
    return init


class Rprop(Optimizer):
    """The resilient backpropagation algorithm, as PyTorch computes it."""

    _group_option_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _tensor_steps = True

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p, state in self._params_with_grad(group, init=_init_rprop_state(group)):
                state["step"]._data += 1
                d = _real(p._data)
                xp = xp_for(d)
                g = self._grad_array(p, group["maximize"])
                prev = _real(state["prev"]._data)
                step_size = _real(state["step_size"]._data)
                sign = xp.sign(g * prev)
                factor = xp.where(sign > 0, etaplus, xp.where(sign < 0, etaminus, 1)).astype(d.dtype)
                step_size *= factor
                xp.clip(step_size, step_size_min, step_size_max, out=step_size)
                g = g.copy()
                g[factor == d.dtype.type(etaminus)] = 0
                d -= xp.sign(g) * step_size
                prev[...] = g
                p._bump_version()
        return loss
