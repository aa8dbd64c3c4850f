"""Gradient clipping: by total norm (returned) and by value; both act on ``.grad`` in place."""
import math
import warnings

import numpy as np

from ..._tensor import Tensor
from ...ops._base import finish

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _as_list(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _vector_norm(a, p):
    if p == 2 and a.dtype.kind == "f":      # (a real vector's dot with itself: no |a| copy)
        r = a.ravel()
        return np.sqrt(np.vdot(r, r))
    a = np.abs(a.astype(np.float64) if a.dtype.kind not in "fV" else a)
    if p == math.inf:
        return a.max() if a.size else 0.0
    if p == -math.inf:
        return a.min() if a.size else math.inf
    if p == 0:
        return float((a != 0).sum())
    if p == 2:
        return np.sqrt(np.vdot(a.ravel(), a.ravel()))
    return (a ** p).sum() ** (1.0 / p)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type``-norm of all ``tensors`` viewed as one vector (a 0-d tensor)."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return finish(None, np.array(0.0, np.float32))
    dt = tensors[0]._data.dtype
    norms = np.array([_vector_norm(t._data, norm_type) for t in tensors], dtype=dt)
    total = np.asarray(_vector_norm(norms, norm_type), dtype=dt)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from "
            "`parameters` is non-finite, so it cannot be clipped. To disable "
            "this error and scale the gradients by the non-finite norm anyway, "
            "set `error_if_nonfinite=False`")
    return finish(None, total)


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale every ``.grad`` by ``min(1, max_norm / (total_norm + 1e-6))``."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    max_norm = float(max_norm)
    if not grads:
        return
    tn = total_norm._data if isinstance(total_norm, Tensor) else np.asarray(total_norm)
    coef = np.minimum(max_norm / (tn + 1e-6), 1.0).astype(tn.dtype)
    scale = bool(coef != 1)      # (a factor of exactly 1 leaves every value's bits as they are)
    for g in grads:
        if scale:
            g._data *= coef.astype(g._data.dtype)
        g._bump_version()


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Clip the gradients' total norm to ``max_norm`` in place; returns the total norm before clipping."""
    if not isinstance(parameters, Tensor):
        parameters = list(parameters)
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    for p in _as_list(parameters):
        if p.grad is not None:
            d = p.grad._data
            np.clip(d, -clip_value, clip_value, out=d)
            p.grad._bump_version()
