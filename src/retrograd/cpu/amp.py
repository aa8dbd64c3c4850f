"""``torch.cpu.amp``: the deprecated spellings of ``torch.amp`` with device "cpu"."""
import warnings

from .. import amp as _amp

__all__ = ["autocast", "GradScaler"]


def autocast(enabled=True, dtype=None, cache_enabled=True):
    """Deprecated: ``torch.amp.autocast("cpu", ...)`` (bfloat16 by default)."""
    from .. import _dtype
    warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                  "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
    return _amp.autocast("cpu", dtype=dtype or _dtype.bfloat16, enabled=enabled, cache_enabled=cache_enabled)


def GradScaler(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
    """Deprecated: ``torch.amp.GradScaler("cpu", ...)``."""
    warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                  "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning, stacklevel=2)
    return _amp.GradScaler("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
