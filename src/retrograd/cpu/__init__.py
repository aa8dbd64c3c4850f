"""``torch.cpu``: the CPU device module (``torch.cpu.amp`` and a few device queries)."""
from . import amp  # noqa: F401

__all__ = ["amp", "is_available", "device_count", "current_device", "synchronize"]


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    """Nothing to wait for: CPU work is synchronous."""
