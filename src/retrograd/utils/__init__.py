"""Utilities: ``retrograd.utils.data`` (datasets, samplers, the DataLoader)."""
from . import data  # noqa: F401
from . import checkpoint  # noqa: F401,E402
