"""The process-wide switches and small predicates of PyTorch's top-level namespace:
autocast's per-device settings, deterministic algorithms, anomaly detection, warn-always,
flush-denormal, the build flags (``has_lapack``...), and ``is_nonzero`` / ``is_same_size`` /
``is_signed`` / ``get_device`` / ``is_inference`` / ``is_storage`` / ``set_default_tensor_type``.

What they change in retrograd: autocast's switches drive the same state as ``torch.autocast``;
anomaly detection is the autograd engine's; the others keep PyTorch's values and checks but
have nothing to act on (every retrograd op is deterministic, NumPy has no flush-to-zero mode,
retrograd's warnings are Python's and cast caches do not exist), which is said where so.
"""
import threading
import warnings

from . import _dtype as D

__all__ = ["get_autocast_cpu_dtype", "set_autocast_cpu_dtype", "get_autocast_gpu_dtype", "set_autocast_gpu_dtype",
           "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "set_autocast_enabled",
           "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
           "autocast_increment_nesting", "autocast_decrement_nesting",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "get_deterministic_debug_mode",
           "set_deterministic_debug_mode", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_anomaly_enabled", "set_warn_always", "is_warn_always_enabled", "set_flush_denormal",
           "set_default_tensor_type", "has_lapack", "has_mkl", "has_openmp", "has_spectral"]

# NumPy links LAPACK (OpenBLAS) and has its FFT; it is built neither with MKL nor with OpenMP
has_lapack = True
has_spectral = True
has_mkl = False
has_openmp = False


def _deprecated(old, new):
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


# --- autocast ------------------------------------------------------------------------------

def _amp():
    from .amp import autocast_mode
    return autocast_mode


def get_autocast_cpu_dtype():
    """The CPU autocast dtype (deprecated alias of ``get_autocast_dtype('cpu')``)."""
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return _amp().get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    """The CUDA autocast dtype (deprecated alias of ``get_autocast_dtype('cuda')``)."""
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return _amp().get_autocast_dtype("cuda")


def set_autocast_cpu_dtype(dtype):
    """Set the CPU autocast dtype (deprecated alias of ``set_autocast_dtype('cpu', dtype)``)."""
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    _amp().set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype):
    """Set the CUDA autocast dtype (deprecated alias of ``set_autocast_dtype('cuda', dtype)``)."""
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    _amp().set_autocast_dtype("cuda", dtype)


def is_autocast_cpu_enabled():
    """Whether autocast is on for the CPU (deprecated alias of ``is_autocast_enabled('cpu')``)."""
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return _amp().is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    """Turn CPU autocast on or off outside a ``with`` block (deprecated alias)."""
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def set_autocast_enabled(device_type, enabled=None):
    """``set_autocast_enabled(device_type, enabled)`` (or ``(enabled)`` for CUDA): turn autocast
    on or off for a device type until changed, as entering/leaving ``torch.autocast`` does
    (the ops then run in ``get_autocast_dtype(device_type)`` as of this call)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    from ._device import device
    device(device_type)    # PyTorch's error for an unknown device type
    amp = _amp()
    active = dict(amp._state.active or {})
    if enabled:
        amp._install()
        active[device_type] = amp.get_autocast_dtype(device_type)
    else:
        active.pop(device_type, None)
    amp._state.active = active or None


class _Flags(threading.local):
    cache_enabled = True
    nesting = 0


_flags = _Flags()


def is_autocast_cache_enabled():
    """Whether autocast may cache its casts (a flag only: retrograd casts anew each time)."""
    return _flags.cache_enabled


def set_autocast_cache_enabled(enabled):
    """Set the autocast cast-cache flag (retrograd has no cache to switch)."""
    _flags.cache_enabled = bool(enabled)


def clear_autocast_cache():
    """Drop autocast's cached casts (there are none in retrograd)."""


def autocast_increment_nesting():
    """One more level of autocast nesting; returns the new depth."""
    _flags.nesting += 1
    return _flags.nesting


def autocast_decrement_nesting():
    """One level of autocast nesting less; returns the new depth (PyTorch lets it go below 0)."""
    _flags.nesting -= 1
    return _flags.nesting


# --- deterministic algorithms --------------------------------------------------------------

_det = {"enabled": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Ask for deterministic algorithms (``warn_only``: warn instead of raising). Every retrograd
    op already is (NumPy on one thread gives the same bits each run), so nothing ever raises."""
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    _det["enabled"], _det["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled():
    """Whether ``use_deterministic_algorithms(True)`` is in effect."""
    return _det["enabled"]


def is_deterministic_algorithms_warn_only_enabled():
    """Whether deterministic algorithms were asked for with ``warn_only=True``."""
    return _det["warn_only"]


def get_deterministic_debug_mode():
    """0 (default), 1 (warn) or 2 (error), from the deterministic-algorithms setting."""
    if not _det["enabled"]:
        return 0
    return 1 if _det["warn_only"] else 2


def set_deterministic_debug_mode(debug_mode):
    """``"default"``/0, ``"warn"``/1 or ``"error"``/2: the same setting as ``use_deterministic_algorithms``."""
    if isinstance(debug_mode, str):
        names = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in names:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                               f"but got {debug_mode}")
        debug_mode = names[debug_mode]
    elif isinstance(debug_mode, int) and not isinstance(debug_mode, bool):
        if debug_mode not in (0, 1, 2):
            raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    else:
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


# --- anomaly detection, warnings, denormals ------------------------------------------------

def is_anomaly_enabled():
    """Whether autograd's anomaly detection is on."""
    from .autograd import anomaly
    return anomaly.is_anomaly_enabled()


def is_anomaly_check_nan_enabled():
    """Whether anomaly detection also checks backward results for NaN."""
    from .autograd import anomaly
    return anomaly.is_anomaly_check_nan_enabled()


def set_anomaly_enabled(enabled, check_nan=True):
    """Turn anomaly detection on or off until changed (``torch.autograd.set_detect_anomaly`` without a block)."""
    from .autograd import anomaly
    anomaly._apply(bool(enabled), bool(check_nan))


_warn_always = [False]


def set_warn_always(b):
    """PyTorch's switch to repeat its warn-once warnings; kept as a flag (retrograd's warnings
    follow Python's ``warnings`` filters)."""
    _warn_always[0] = bool(b)


def is_warn_always_enabled():
    """The flag of :func:`set_warn_always`."""
    return _warn_always[0]


def set_flush_denormal(mode):
    """Flush denormal floats to zero: NumPy offers no such mode, so this returns False
    (PyTorch's answer where the CPU does not support it) and changes nothing."""
    return False


def set_default_tensor_type(t):
    """Deprecated: the default floating dtype (and device) from a legacy type or its name."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    from . import _legacy
    if isinstance(t, str):
        try:
            legacy = _legacy.legacy_type(t)
        except ValueError:
            legacy = None
        if legacy is None:
            raise AttributeError(f"module 'torch' has no attribute '{t.split('.')[-1]}'")
        dt, cuda = legacy
    else:
        legacy = _legacy.legacy_type(t)
        if legacy is None:
            raise TypeError(f"invalid type object: {t!r}")
        dt, cuda = legacy
    if not dt.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    D.set_default_dtype(dt)
    if cuda:
        from ._device import set_default_device
        set_default_device("cuda")
