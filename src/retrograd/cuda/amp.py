"""``torch.cuda.amp``: the deprecated spellings of ``torch.amp`` with device "cuda"."""
import warnings

from .. import amp as _amp

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


def autocast(enabled=True, dtype=None, cache_enabled=True):
    """Deprecated: ``torch.amp.autocast("cuda", ...)``."""
    from .. import _dtype
    warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                  "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
    return _amp.autocast("cuda", dtype=dtype or _dtype.float16, enabled=enabled, cache_enabled=cache_enabled)


def GradScaler(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
    """Deprecated: ``torch.amp.GradScaler("cuda", ...)``."""
    warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                  "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
    return _amp.GradScaler("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    return _amp.custom_bwd(bwd, device_type="cuda")
