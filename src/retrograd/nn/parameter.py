"""Parameter: a leaf tensor that a Module registers as one of its learnable weights."""
from .._tensor import Tensor
from .. import _creation

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]

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


class UninitializedTensorMixin:
    """A placeholder without data (lazy modules): ``materialize(shape)`` gives it storage and turns
    it into its ``cls_to_become``."""
    _allowed_methods = ()

    def materialize(self, shape, device=None, dtype=None):
        """Allocate (uninitialized) storage of ``shape`` and become a ``cls_to_become``."""
        if dtype is None:
            dtype = self.dtype
        if isinstance(shape, int):
            shape = (shape,)
        data = _creation.empty(tuple(shape), dtype=dtype, device=device)
        self._data = data._data
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def detach(self):
        return type(self)(False, None, self.dtype)

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                           "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (lazy modules materialize it on the first forward)."""
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return Parameter.__new__(cls, _creation.empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self.device, self.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (lazy modules materialize it on the first forward)."""
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        data = _creation.empty(0, device=device, dtype=dtype)
        t = _new(cls)
        t._data = data._data
        if requires_grad:
            t._requires_grad = True
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None):
        pass


def is_lazy(param):
    """Whether ``param`` is an uninitialized (lazy) parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)
