"""autocast: matmul, linear and convolution run in a lower precision inside the region.

State is thread-local, one entry per device type ("cpu", "cuda"). The ops on PyTorch's CPU
autocast lists get a thin wrapper the first time an autocast region is entered; outside a
region it costs one attribute test. Lower precision (the region's dtype, bfloat16 by default
on the CPU): matmul, mm, bmm, addmm, baddbmm, addbmm, linear, conv1d/2d/3d,
conv_transpose1d/2d, prelu, scaled_dot_product_attention, einsum and tensordot (PyTorch's run
through its autocast bmm/mm). Their floating-point inputs (float64 excepted, as in PyTorch)
on the region's device are cast to the region's dtype, so the results come out in that dtype
and the casts are recorded in the graph (gradients reach float32 parameters in float32).
Float32: the losses PyTorch lists (mse, l1, smooth_l1, huber, cross_entropy, nll, kl_div,
binary_cross_entropy[_with_logits], margin_ranking, cosine_embedding, triplet_margin),
grid_sample, prod and inverse: float16/bfloat16 inputs are cast up. Every other op runs in
its inputs' dtype (PyTorch's CPU lists as of 2.13). ``cache_enabled`` is accepted; casts are
not cached.
"""
import functools
import threading
import warnings

from .. import _dtype as D

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "is_autocast_available", "custom_fwd", "custom_bwd"]

_DEFAULT = {"cpu": D.bfloat16, "cuda": D.float16}


class _State(threading.local):
    active = None          # {device_type: dtype} of the regions entered, None when none
    dtypes = None          # per-thread overrides of the default dtype per device type


_state = _State()


def _default_dtype(device_type):
    d = _state.dtypes
    return (d or {}).get(device_type, _DEFAULT.get(device_type, D.float16))


def is_autocast_available(device_type):
    return device_type in ("cpu", "cuda")


def is_autocast_enabled(device_type=None):
    """True inside an enabled autocast region for ``device_type`` (CUDA when omitted, like PyTorch)."""
    return (device_type or "cuda") in (_state.active or {})


def get_autocast_dtype(device_type):
    a = _state.active or {}
    return a.get(device_type) or _default_dtype(device_type)


def set_autocast_dtype(device_type, dtype):
    _state.dtypes = dict(_state.dtypes or {}, **{device_type: dtype})


class autocast:
    """``with torch.autocast("cpu"):`` / ``@torch.autocast("cuda", dtype=torch.float16)``."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            from .._device import device
            device(device_type)  # PyTorch's error for an unknown device type
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = _default_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = True if cache_enabled is None else cache_enabled
        if enabled and device_type == "cuda":
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.")
                enabled = False
        if enabled and device_type == "cpu" and self.fast_dtype not in (D.bfloat16, D.float16):
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.")
            enabled = False
        if enabled and device_type == "cuda" and self.fast_dtype not in (D.bfloat16, D.float16):
            warnings.warn("In CUDA autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CUDA Autocast only supports dtypes of torch.float16, torch.bfloat16 currently.")
            enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        self._prev = _state.active
        active = dict(self._prev or {})
        if self._enabled:
            _install()
            active[self.device] = self.fast_dtype
        else:
            active.pop(self.device, None)
        _state.active = active or None
        return self

    def __exit__(self, *exc):
        _state.active = self._prev
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)
        return wrapper


# --- the wrapped ops --------------------------------------------------------------------------

def _cast(x, active):
    from .._tensor import Tensor
    if isinstance(x, Tensor):
        dt = active.get(x.device.type)
        if dt is not None and x._data.dtype.kind in "fV" and x._data.dtype.itemsize != 8:
            return x._to(dt)
    elif isinstance(x, (list, tuple)):
        return type(x)(_cast(v, active) for v in x)
    return x


def _cast_fp32(x, active):
    from .._tensor import Tensor
    if isinstance(x, Tensor):
        if x._data.dtype.kind in "fV" and x._data.dtype.itemsize == 2 and x.device.type in active:
            return x._to(D.float32)
    elif isinstance(x, (list, tuple)):
        return type(x)(_cast_fp32(v, active) for v in x)
    return x


def _autocasting(fn, cast=_cast):
    def wrapper(*args, **kwargs):
        active = _state.active
        if active is None:
            return fn(*args, **kwargs)
        # Inside the op, nothing autocasts again (as in PyTorch: the kernels run with autocast off).
        _state.active = None
        try:
            return fn(*[cast(a, active) for a in args], **{k: cast(v, active) for k, v in kwargs.items()})
        finally:
            _state.active = active
    functools.update_wrapper(wrapper, fn)
    wrapper._autocast_wrapped = fn
    return wrapper


_LINALG = ("matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "einsum", "tensordot")
# conv1d/2d/3d and the Conv layers: convolution
_FUNCTIONAL = ("linear", "conv_transpose1d", "conv_transpose2d", "prelu", "scaled_dot_product_attention")
# Ops PyTorch's CPU autocast runs in float32 (lower-precision inputs are cast up).
_FP32 = ("mse_loss", "cross_entropy", "nll_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
         "binary_cross_entropy", "binary_cross_entropy_with_logits", "margin_ranking_loss",
         "cosine_embedding_loss", "triplet_margin_loss", "grid_sample")
_FP32_TOP = (("reduce", "prod"), ("linalg", "inverse"))  # ops module, name: torch.*, Tensor.*
_installed = []
_lock = threading.Lock()


def _install():
    """Wrap the autocasting ops where programs and layers look them up (done once)."""
    if _installed:
        return
    with _lock:
        if _installed:
            return
        import retrograd
        import importlib
        from .. import ops
        from ..ops import linalg, conv
        from ..nn import functional as F
        from .._tensor import Tensor

        def everywhere(mod, name, cast):
            w = _autocasting(getattr(mod, name), cast)
            for m in (mod, ops, retrograd):
                if getattr(m, name, None) is w._autocast_wrapped:
                    setattr(m, name, w)
            if getattr(Tensor, name, None) is w._autocast_wrapped:
                setattr(Tensor, name, w)
            return w
        for name in _LINALG:
            w = everywhere(linalg, name, _cast)
            if name == "matmul" and Tensor.__matmul__ is w._autocast_wrapped:
                Tensor.__matmul__ = w
        for modname, name in _FP32_TOP:
            everywhere(importlib.import_module("retrograd.ops." + modname), name, _cast_fp32)
        for name in _FUNCTIONAL:
            setattr(F, name, _autocasting(getattr(F, name)))
        for name in _FP32:
            if hasattr(F, name):
                setattr(F, name, _autocasting(getattr(F, name), _cast_fp32))
        conv.convolution = _autocasting(conv.convolution)
        _installed.append(True)


# --- custom autograd Functions -------------------------------------------------------------

def custom_fwd(fwd=None, *, device_type="cuda", cast_inputs=None):
    """Decorate a custom Function's forward (PyTorch's ``torch.amp.custom_fwd``)."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        if cast_inputs is None or not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        active = {device_type: cast_inputs}
        with autocast(device_type, enabled=False):
            return fwd(*[_cast(a, active) for a in args], **{k: _cast(v, active) for k, v in kwargs.items()})
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type="cuda"):
    """Decorate a custom Function's backward (runs with the forward's autocast state: a no-op here)."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd
