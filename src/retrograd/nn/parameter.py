"""Parameter: a leaf tensor that a Module registers as one of its learnable weights."""
from .._tensor import Tensor
from .. import _creation

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "is_lazy"]

_new = object.__new__


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning one to a Module attribute registers it.

    It shares storage with ``data`` and requires grad by default.
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _creation.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        requires_grad = bool(requires_grad)
        if requires_grad and data._data.dtype.kind not in "fcV":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t = _new(cls)
        t._data = data._data
        t._version = data._shared_version()
        t._is_param = True
        if requires_grad:
            t._requires_grad = True
        return t

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(Tensor._make(self._data.copy()), self._requires_grad)
        if self._grad is not None:
            result._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        from .._creation import _rebuild
        import numpy as np
        return (_rebuild, (type(self), np.asarray(self._data), self._requires_grad))


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _creation.empty(0)
        t = _new(cls)
        t._data = data._data
        t._version = data._shared_version()
        if data._requires_grad:
            t._requires_grad = True
        t.persistent = persistent
        return t

    def __init__(self, data=None, *, persistent=True):
        pass


class UninitializedParameter(Parameter):
    """Placeholder type (lazy modules are not supported)."""


def is_lazy(param):
    return isinstance(param, UninitializedParameter)
