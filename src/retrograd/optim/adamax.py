"""Adamax: Adam with the infinity norm in place of the second moment."""
import numpy as np

from ..ops._base import xp_for

from .adam import _check_adam_args
from .optimizer import Optimizer, _real, _scalar, addcdiv, fma_scalar, lerp_scalar, scale_

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax, as PyTorch computes it."""

    _group_option_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _tensor_steps = True

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr = _scalar(group["lr"])
            eps = group["eps"]
            wd = group["weight_decay"]
            for p, state in self._params_with_grad(group, ("exp_avg", "exp_inf")):
                step_t = state["step"]
                step_t._data += 1
                d = _real(p._data)
                xp = xp_for(d)
                g = self._grad_array(p, group["maximize"])
                if wd != 0:
                    g = fma_scalar(d, wd, g)
                exp_avg = _real(state["exp_avg"]._data)
                exp_inf = _real(state["exp_inf"]._data)
                lerp_scalar(exp_avg, g, 1 - beta1, out=exp_avg)
                scale_(exp_inf, beta2)
                norm = xp.abs(g)
                norm += eps
                xp.maximum(exp_inf, norm, out=exp_inf)
                clr = lr / (1 - beta1 ** float(step_t._data))
                addcdiv(d, exp_avg, exp_inf, -clr, out=d)
                p._bump_version()
        return loss
