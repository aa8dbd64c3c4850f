"""RMSprop (centered, momentum, weight decay, maximize)."""
from .optimizer import (Optimizer, _check_lr, _check_nonnegative, _real, _scalar, _sqrt, addcdiv, addcmul, fma_scalar,
                        lerp_scalar)

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
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            alpha = group["alpha"]
            eps = group["eps"]
            wd = group["weight_decay"]
            momentum = group["momentum"]
            centered = group["centered"]
            buffers = (("square_avg",) + (("momentum_buffer",) if momentum > 0 else ())
                       + (("grad_avg",) if centered else ()))
            for p, state in self._params_with_grad(group, buffers):
                state["step"]._data += 1
                d = _real(p._data)
                g = self._grad_array(p, group["maximize"])
                if wd != 0:
                    g = fma_scalar(d, wd, g)
                sq = _real(state["square_avg"]._data)
                sq *= alpha
                addcmul(sq, g, g, 1 - alpha, out=sq)
                if centered:
                    ga = _real(state["grad_avg"]._data)
                    lerp_scalar(ga, g, 1 - alpha, out=ga)
                    avg = _sqrt(addcmul(sq, ga, ga, -1))
                else:
                    avg = _sqrt(sq)
                avg += eps
                if momentum > 0:
                    buf = _real(state["momentum_buffer"]._data)
                    buf *= momentum
                    addcdiv(buf, g, avg, 1, out=buf)
                    fma_scalar(buf, -lr, d, out=d)
                else:
                    addcdiv(d, g, avg, -lr, out=d)
                p._bump_version()
        return loss
