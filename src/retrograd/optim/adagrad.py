"""Adagrad (lr_decay, initial_accumulator_value, weight decay, maximize)."""
import numpy as np

from .._tensor import Tensor
from .optimizer import Optimizer, _real, _restore_steps, _scalar, _sqrt, _step_tensor, addcdiv, addcmul, fma_scalar

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad: each coordinate's step shrinks with its accumulated squared gradients."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # PyTorch creates the state eagerly, with the accumulator filled in.
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _step_tensor()
                init = group["initial_accumulator_value"]
                if p.is_complex():
                    init = complex(init, init)
                state["sum"] = Tensor._make(np.full_like(p._data, init))

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)
        _restore_steps(self)

    def share_memory(self):
        """A no-op: arrays are already in this process's memory."""

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            wd = group["weight_decay"]
            lr_decay = group["lr_decay"]
            eps = group["eps"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                step_t = state["step"]
                step_t._data += 1
                step = float(step_t._data)
                d = _real(p._data)
                g = self._grad_array(p, group["maximize"])
                if wd != 0:
                    g = fma_scalar(d, wd, g)
                clr = lr / (1 + (step - 1) * lr_decay)
                s = _real(state["sum"]._data)
                addcmul(s, g, g, 1, out=s)
                std = _sqrt(s)
                std += eps
                addcdiv(d, g, std, -clr, out=d)
                p._bump_version()
        return loss
