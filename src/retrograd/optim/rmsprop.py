"""RMSprop (centered, momentum, weight decay, maximize)."""
import numpy as np

from ..ops._base import xp_for

from ._flat import batches, flat_ok
from .optimizer import (Optimizer, _check_lr, _check_nonnegative, _scalar, _sqrt, addcdiv, addcmul, fma_scalar,
                        lerp_scalar, scale_)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop: steps scaled by a running average of squared gradients."""

    _group_option_defaults = {"momentum": 0, "centered": False, "foreach": None, "maximize": False,
                             "differentiable": False, "capturable": False}
    _tensor_steps = True

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        _check_nonnegative(epsilon=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._closure_loss(closure)
        for index, group in enumerate(self.param_groups):
            buffers = (("square_avg",) + (("momentum_buffer",) if group["momentum"] > 0 else ())
                       + (("grad_avg",) if group["centered"] else ()))
            params = [p for p, _ in self._params_with_grad(group, buffers)]
            for b in batches(self, index, group, params, buffers, flat=flat_ok(group)):
                _rmsprop(b, group)
        return loss


def _rmsprop(b, group):
    """One RMSprop step of a batch."""
    xp = b.xp
    lr = _scalar(group["lr"])
    alpha = group["alpha"]
    wd = group["weight_decay"]
    momentum = group["momentum"]
    b.steps += 1
    g = b.grad(group["maximize"])
    if wd != 0:
        g = fma_scalar(b.param(), wd, g, out=g)
    sq = b.state["square_avg"]
    scale_(sq, alpha)
    addcmul(sq, g, g, 1 - alpha, out=sq)
    if group["centered"]:
        ga = b.state["grad_avg"]
        lerp_scalar(ga, g, 1 - alpha, out=ga)
        avg = _sqrt(addcmul(sq, ga, ga, -1))
    else:
        avg = _sqrt(sq)
    avg += group["eps"]
    if momentum > 0:
        buf = b.state["momentum_buffer"]
        scale_(buf, momentum)
        addcdiv(buf, g, avg, 1, out=buf)
        b.axpy(buf, -lr)
    else:
        b.addcdiv(g, avg, -lr, out=g)
