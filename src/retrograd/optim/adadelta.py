"""Adadelta: unit-corrected steps from running averages of squared gradients and updates."""
from .._tensor import Tensor
from .optimizer import Optimizer, _real, _restore_steps, _scalar, _sqrt, _step_tensor, _zeros_like, addcmul, fma_scalar

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta, as PyTorch computes it."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
        _restore_steps(self)

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            rho = group["rho"]
            eps = group["eps"]
            wd = group["weight_decay"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = _zeros_like(p)
                    state["acc_delta"] = _zeros_like(p)
                state["step"]._data += 1
                d = _real(p._data)
                g = self._grad_array(p, group["maximize"])
                if wd != 0:
                    g = fma_scalar(d, wd, g)
                sq = _real(state["square_avg"]._data)
                acc = _real(state["acc_delta"]._data)
                sq *= rho
                addcmul(sq, g, g, 1 - rho, out=sq)
                std = _sqrt(sq + eps)
                delta = _sqrt(acc + eps)
                delta /= std
                delta *= g
                acc *= rho
                addcmul(acc, delta, delta, 1 - rho, out=acc)
                fma_scalar(delta, -lr, d, out=d)
                p._bump_version()
        return loss
