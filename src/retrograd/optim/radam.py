"""RAdam: Adam with a rectified adaptive learning rate."""
import numpy as np

from ..ops._base import xp_for

from .adam import _adam_moments, _check_adam_args, _weight_decay
from .optimizer import Optimizer, _real, _scalar, _sqrt, div_scalar, scale_

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam, as PyTorch computes it (plain momentum steps while the variance is untractable)."""

    _group_option_defaults = {"foreach": None, "maximize": False, "differentiable": False,
                             "decoupled_weight_decay": False, "capturable": False}
    _tensor_steps = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr = _scalar(group["lr"])
            eps = group["eps"]
            wd = group["weight_decay"]
            for p, state in self._params_with_grad(group, ("exp_avg", "exp_avg_sq")):
                d = _real(p._data)
                xp = xp_for(d)
                g = self._grad_array(p, group["maximize"])
                g = _weight_decay(d, g, lr, wd, group["decoupled_weight_decay"])
                step = _adam_moments(state, d, g, beta1, beta2)
                exp_avg = _real(state["exp_avg"]._data)
                exp_avg_sq = _real(state["exp_avg_sq"]._data)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                update = div_scalar(exp_avg, bias_correction1)
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                update = scale_(update, lr)
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    root = _sqrt(exp_avg_sq)
                    root += eps
                    # PyTorch divides a number by a tensor as reciprocal() * number.
                    adaptive_lr = xp.reciprocal(root)
                    adaptive_lr = scale_(adaptive_lr, bias_correction2 ** 0.5)
                    update *= adaptive_lr
                    update = scale_(update, rect)
                d -= update
                p._bump_version()
        return loss
