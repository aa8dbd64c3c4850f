"""Adam (with AMSGrad, maximize, L2 or decoupled weight decay)."""
import numpy as np

from ..ops._base import xp_for

from .._tensor import Tensor
from ._accel import kernels
from ._flat import batches, flat_ok
from .optimizer import (Optimizer, _check_fused, _check_lr, _check_nonnegative, _real, _scalar, _sqrt, addcmul,
                        div_scalar, fma_scalar, lerp_scalar, scale_)
from .optimizer import _sqrt as _numpy_sqrt

__all__ = ["Adam"]


def _check_adam_args(lr, betas, eps, weight_decay):
    _check_lr(lr)
    _check_nonnegative(epsilon=eps)
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    _check_nonnegative(weight_decay=weight_decay)


def _adam_moments(state, d, g, beta1, beta2):
    """Advance the step count and the two moving averages; returns the step as a float."""
    step_t = state["step"]
    step_t._data += 1
    exp_avg = _real(state["exp_avg"]._data)
    exp_avg_sq = _real(state["exp_avg_sq"]._data)
    lerp_scalar(exp_avg, g, 1 - beta1, out=exp_avg)
    scale_(exp_avg_sq, beta2)
    addcmul(exp_avg_sq, g, g, 1 - beta2, out=exp_avg_sq)
    return float(step_t._data)


def _weight_decay(d, g, lr, weight_decay, decoupled):
    """L2 penalty folded into the gradient, or decoupled decay of the parameter itself."""
    if weight_decay != 0:
        if decoupled:
            scale_(d, 1 - lr * weight_decay)
        else:
            g = fma_scalar(d, weight_decay, g)
    return g


class Adam(Optimizer):
    """Adam, as PyTorch computes it (``decoupled_weight_decay=True`` is AdamW)."""

    _group_option_defaults = {"amsgrad": False, "maximize": False, "foreach": None, "capturable": False,
                             "differentiable": False, "decoupled_weight_decay": False, "fused": None}
    _tensor_steps = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        betas = tuple(b.reshape(()) if isinstance(b, Tensor) and b.dim() != 0 else b for b in betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        _check_fused(fused, foreach, differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._closure_loss(closure)
        for index, group in enumerate(self.param_groups):
            buffers = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if group["amsgrad"] else ("exp_avg", "exp_avg_sq")
            params = [p for p, _ in self._params_with_grad(group, buffers)]
            for b in batches(self, index, group, params, buffers, flat=flat_ok(group)):
                _adam(b, group)
        return loss


def _adam(b, group):
    """One Adam step of a batch."""
    xp = b.xp
    beta1, beta2 = (_scalar(x) for x in group["betas"])
    lr = _scalar(group["lr"])
    wd = group["weight_decay"]
    decoupled = group["decoupled_weight_decay"] and wd != 0
    if _compiled(b, group, beta1, beta2, lr, wd, decoupled):
        return
    g = b.grad(group["maximize"])
    if wd != 0 and not decoupled:
        g = fma_scalar(b.param(), wd, g, out=g)
    b.steps += 1
    exp_avg, exp_avg_sq = b.state["exp_avg"], b.state["exp_avg_sq"]
    lerp_scalar(exp_avg, g, 1 - beta1, out=exp_avg)
    scale_(exp_avg_sq, beta2)
    addcmul(exp_avg_sq, g, g, 1 - beta2, out=exp_avg_sq)
    step = b.step_value()
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr / bias_correction1
    bias_correction2_sqrt = bias_correction2 ** 0.5
    v = exp_avg_sq
    if group["amsgrad"]:
        v = b.state["max_exp_avg_sq"]
        xp.maximum(v, exp_avg_sq, out=v)
    denom = div_scalar(_sqrt(v), bias_correction2_sqrt, out=b.scratch(0))
    denom += group["eps"]
    if decoupled:
        b.scale(1 - lr * wd)
    # addcdiv(param, exp_avg, denom, -step_size): (value * exp_avg) / denom, then added
    b.addcdiv(exp_avg, denom, -step_size, out=b.scratch(1))


def _compiled(b, group, beta1, beta2, lr, wd, decoupled):
    """The step by the compiled kernel, one pass per parameter (False: not available here)."""
    if b.flat_params() is None:   # (a batch of one, or a device's: no compiling for it)
        return False
    k = kernels()
    if k is None or _sqrt is not _numpy_sqrt:
        return False
    parts = b.flat_params()
    if parts is None:
        return False
    T = b.dtype.type
    b.steps += 1
    step = b.step_value()
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr / bias_correction1
    w = T(1 - beta1)
    amsgrad = bool(group["amsgrad"])
    ea, eas = b.state["exp_avg"], b.state["exp_avg_sq"]
    mx = b.state["max_exp_avg_sq"] if amsgrad else ea
    args = (bool(group["maximize"]), T(wd), wd != 0 and not decoupled, w, bool(abs(w) < 0.5), T(1) - w, T(beta2),
            T(1 - beta2), amsgrad, T(bias_correction2 ** 0.5), T(group["eps"]), T(-step_size),
            T(1 - lr * wd), bool(decoupled), b.dtype.itemsize == 4)
    for p, d, g, sl in parts:
        k["adam"](d, g, ea[sl], eas[sl], mx[sl], *args)
        p._bump_version()
    return True
