"""The layers of retrograd.nn, one family per file."""
from .module import Module  # noqa: F401
from .container import Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict  # noqa: F401
from .linear import Identity, Linear  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
