"""Adafactor: Adam-like steps with a factored (row x column) second moment for matrices."""
import numpy as np

from ..ops._base import xp_for

from .._tensor import Tensor
from .optimizer import Optimizer, _scalar, _sqrt, _step_tensor, fma_scalar, half, half_blocks, lerp_scalar, scale_

__all__ = ["Adafactor"]


def _norm(a, axis=None, keepdims=False):
    """The 2-norm in the array's own precision (float16/bfloat16: accumulated in float32 and
    rounded once, as PyTorch's reduction does)."""
    if half(a.dtype):
        w = a.astype(np.float32)
        return np.sqrt(np.sum(w * w, axis=axis, keepdims=keepdims)).astype(a.dtype)
    xp = xp_for(a)
    sq = a * a
    return xp.sqrt(xp.sum(sq, axis=axis, keepdims=keepdims, dtype=a.dtype))


def _mean(a, axis):
    if half(a.dtype):
        return a.astype(np.float32).mean(axis=axis, keepdims=True).astype(a.dtype)
    return a.mean(axis=axis, keepdims=True, dtype=a.dtype)


def _outer(r, c):
    """``row_var @ col_var`` (an inner dimension of 1: each entry one product, rounded once)."""
    if half(r.dtype):
        return np.matmul(r.astype(np.float32), c.astype(np.float32)).astype(r.dtype)
    return xp_for(r).matmul(r, c)


def _rsqrt(a):
    if half(a.dtype):
        # PyTorch's rsqrt: 1 / sqrt(x) in float32, rounded once, in its vectorized blocks;
        # its scalar loop (the elements after the last full block) rounds sqrt(x) first
        root = np.sqrt(np.ascontiguousarray(a).reshape(-1).astype(np.float32))
        r = (1 / root).astype(a.dtype)
        k = half_blocks(r.size)
        r[k:] = (1 / root[k:].astype(a.dtype).astype(np.float32)).astype(a.dtype)
        return r.reshape(a.shape)
    return xp_for(a).reciprocal(_sqrt(a))


class Adafactor(Optimizer):
    """Adafactor as PyTorch implements it (relative step sizes, update clipping by ``d``)."""

    _group_option_defaults = {"foreach": None}
    _tensor_steps = True

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            eps1, eps2 = group["eps"]
            beta2_decay = group["beta2_decay"]
            wd = group["weight_decay"]
            clip = group["d"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                state = self.state[p]
                xp = xp_for(p._data)
                g = self._grad_array(p, group["maximize"])
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    if g.ndim > 1:
                        state["row_var"] = Tensor._make(xp.zeros(g.shape[:-1] + (1,), dtype=g.dtype))
                        state["col_var"] = Tensor._make(xp.zeros(g.shape[:-2] + (1,) + g.shape[-1:], dtype=g.dtype))
                    else:
                        state["variance"] = Tensor._make(xp.zeros_like(g))
                d = p._data
                e1 = float(np.finfo(d.dtype).eps) if eps1 is None else eps1
                step_t = state["step"]
                step_t._data += 1
                step = float(step_t._data)
                one_minus_beta2_t = step ** beta2_decay
                rho_t = min(lr, 1 / (step ** 0.5))
                alpha = max(eps2, float(_norm(d)) / (d.size ** 0.5)) * rho_t
                if wd != 0:
                    scale_(d, 1 - lr * wd)
                if g.ndim > 1:
                    row_var = state["row_var"]._data
                    col_var = state["col_var"]._data
                    row_mean = xp.square(_norm(g, axis=-1, keepdims=True))
                    row_mean /= g.shape[-1]
                    lerp_scalar(row_var, row_mean, one_minus_beta2_t, out=row_var)
                    col_mean = xp.square(_norm(g, axis=-2, keepdims=True))
                    col_mean /= g.shape[-2]
                    lerp_scalar(col_var, col_mean, one_minus_beta2_t, out=col_var)
                    var_estimate = _outer(row_var, col_var)
                    var_estimate /= xp.maximum(_mean(row_var, -2), e1)
                else:
                    variance = state["variance"]._data
                    lerp_scalar(variance, g * g, one_minus_beta2_t, out=variance)
                    var_estimate = variance.copy()
                update = _rsqrt(xp.maximum(var_estimate, e1 * e1))
                update *= g
                denom = max(1.0, float(_norm(update)) / ((update.size ** 0.5) * clip))
                fma_scalar(update, -alpha / denom, d, out=d)
                p._bump_version()
        return loss
