"""Adadelta: unit-corrected steps from running averages of squared gradients and updates."""
from .optimizer import Optimizer, _check_lr, _check_nonnegative, _real, _scalar, _sqrt, addcmul, fma_scalar, scale_

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta, as PyTorch computes it."""

    _group_option_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _tensor_steps = True

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative(epsilon=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            rho = group["rho"]
            eps = group["eps"]
            wd = group["weight_decay"]
            for p, state in self._params_with_grad(group, ("square_avg", "acc_delta")):
                state["step"]._data += 1
                d = _real(p._data)
                g = self._grad_array(p, group["maximize"])
                if wd != 0:
                    g = fma_scalar(d, wd, g)
                sq = _real(state["square_avg"]._data)
                acc = _real(state["acc_delta"]._data)
                scale_(sq, rho)
                addcmul(sq, g, g, 1 - rho, out=sq)
                std = _sqrt(sq + eps)
                delta = _sqrt(acc + eps)
                delta /= std
                delta *= g
                scale_(acc, rho)
                addcmul(acc, delta, delta, 1 - rho, out=acc)
                fma_scalar(delta, -lr, d, out=d)
                p._bump_version()
        return loss
