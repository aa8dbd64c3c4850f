"""Automatic differentiation: the engine, grad modes, custom Functions, checks.

grad_mode and graph sit below Tensor, the engine above it; so the names that need the
engine resolve on first use (PEP 562), keeping ``import retrograd`` free of cycles.
"""
import importlib

from .grad_mode import (no_grad, enable_grad, set_grad_enabled, is_grad_enabled,  # noqa: F401
                        inference_mode, is_inference_mode_enabled)
from . import graph  # noqa: F401

_LAZY = {
    "backward": ("engine", "backward"), "grad": ("engine", "grad"),
    "detect_anomaly": ("anomaly", "detect_anomaly"), "set_detect_anomaly": ("anomaly", "set_detect_anomaly"),
    "is_anomaly_enabled": ("anomaly", "is_anomaly_enabled"),
    "Function": ("function", "Function"), "once_differentiable": ("function", "once_differentiable"),
    "gradcheck": ("gradcheck", "gradcheck"), "gradgradcheck": ("gradcheck", "gradgradcheck"),
    "trace": ("tracing", "trace"), "Variable": ("variable", "Variable"),
}
_SUBMODULES = {"engine", "anomaly", "function", "functional", "gradcheck", "variable", "tracing", "forward_ad"}

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
           "inference_mode", "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "graph", "Function", "once_differentiable", "gradcheck", "gradgradcheck",
           "functional", "Variable", "forward_ad"]


def __getattr__(name):
    if name in _LAZY:
        mod, attr = _LAZY[name]
        value = getattr(importlib.import_module(f"{__name__}.{mod}"), attr)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
