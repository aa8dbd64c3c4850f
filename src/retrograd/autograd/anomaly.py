"""Anomaly detection: where each node was created, and NaNs caught in backward."""
import os
import threading
import warnings

import numpy as np

from .graph import Node
from . import engine

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]

_state = {"enabled": False, "check_nan": True}
_lock = threading.Lock()


def is_anomaly_enabled():
    return _state["enabled"]


def is_anomaly_check_nan_enabled():
    return _state["check_nan"]


_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


_seen = {}


def _internal(filename):
    r = _seen.get(filename)
    if r is None:
        r = _seen[filename] = os.path.abspath(filename).startswith(_PKG)
    return r


def _stack():
    """The forward call's stack as the user sees it (retrograd's own frames left out)."""
    import traceback
    frames = [f for f in traceback.extract_stack()[:-1] if not _internal(f.filename)]
    return traceback.format_list(frames)


def _check(fn, grads):
    """A NaN in what a node returns is an error (the engine then shows where it was made)."""
    for i, g in enumerate(grads):
        if g is not None and g._data.dtype.kind in "fcV" and bool(np.isnan(g._data).any()):
            raise RuntimeError(f"Function '{fn.name()}' returned nan values in its {i}th output.")


def _apply(enabled, check_nan):
    _state["enabled"] = enabled
    _state["check_nan"] = check_nan
    Node._anomaly_stack = _stack if enabled else None
    engine.anomaly_check[0] = _check if (enabled and check_nan) else None


class set_detect_anomaly:
    """Turn anomaly detection on or off (takes effect at once; restores on exit)."""

    def __init__(self, mode, check_nan=True):
        self.prev = (_state["enabled"], _state["check_nan"])
        _apply(bool(mode), check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _apply(*self.prev)
        return False


class detect_anomaly:
    """Context manager: record where nodes are created and fail on NaN gradients."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self):
        self.prev = (_state["enabled"], _state["check_nan"])
        _apply(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _apply(*self.prev)
        return False

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapper(*a, **k):
            with self.__class__(self.check_nan):
                return func(*a, **k)
        return wrapper
