"""``retrograd.amp``: automatic mixed precision (autocast, GradScaler), PyTorch's ``torch.amp``."""
from .autocast_mode import (autocast, is_autocast_available, custom_fwd, custom_bwd,  # noqa: F401
                            is_autocast_enabled, get_autocast_dtype, set_autocast_dtype)
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "GradScaler", "is_autocast_available", "custom_fwd", "custom_bwd"]
