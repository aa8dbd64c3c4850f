"""``Variable``: the pre-0.4 wrapper, kept as PyTorch keeps it (every Tensor is one)."""
from .._tensor import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(t, requires_grad=...)`` is ``t.detach()`` with that flag (sharing its data)."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if data is None:
            from .. import _creation
            data = _creation.tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        t = data.detach()
        if requires_grad:
            t.requires_grad_(True)
        return t
