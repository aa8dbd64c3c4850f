"""Utilities: ``retrograd.utils.data`` (datasets, samplers, the DataLoader)."""
from . import data  # noqa: F401
