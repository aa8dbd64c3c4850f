"""Comparisons and logical ops: bool results, never a grad_fn."""
import numpy as np

from ._complex_reject import no_complex
from ._base import (finish, arr, binary_operands, write_out, Tensor, _dtype_name, OpNode, node_for, _state,
                    on_device, xp_for, check_same_device)
from .arithmetic import _check_broadcast

__all__ = ["eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
           "not_equal", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal",
           "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
           "bitwise_xor", "bitwise_not", "signbit", "isclose", "allclose", "equal", "result_type"]


_ORDERED = ("lt", "le", "gt", "ge")


def _cmp(ufunc, name):
    def op(input, other, *, out=None):
        a, b, x, y, dt = binary_operands(input, other)
        _check_broadcast(x, y)
        if dt.kind == "c" and name in _ORDERED:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtype_name(dt)}\'')
        if type(x) is np.ndarray and x.dtype != dt:
            x = x.astype(dt)
        if type(y) is np.ndarray and y.dtype != dt:
            y = y.astype(dt)
        f = ufunc if type(x) is np.ndarray else on_device(ufunc, x, y)
        with np.errstate(invalid="ignore"):
            res = finish(None, arr(f(x, y)))
        return res if out is None else write_out(out, res, name)
    op.__name__ = name
    op.__doc__ = f"Elementwise ``{name}`` (a bool tensor, no gradient)."
    return op


eq, ne = _cmp(np.equal, "eq"), _cmp(np.not_equal, "ne")
lt, le = _cmp(np.less, "lt"), _cmp(np.less_equal, "le")
gt, ge = _cmp(np.greater, "gt"), _cmp(np.greater_equal, "ge")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


class _CmpBackward(OpNode):
    """An in-place comparison's node: its values no longer depend on the operands, so their
    gradients are zeros (outside the graph), as PyTorch's ``zeros_like(self)``."""

    def backward(self, g):
        xp = xp_for(g)
        nf = self.next_functions
        return tuple(finish(None, xp.zeros(shape, dt)) if nf[i][0] is not None else None
                     for i, (shape, dt) in enumerate(self.in_meta))


def _cmp_inplace(op, title):
    """The out-of-place half of ``<op>_`` on a tensor taking part in autograd: PyTorch records
    ``<Title>Backward0`` (number ``other``) or ``<Title>Backward1`` (tensor ``other``), which
    cuts the tensor's old history; without it the gradient would still flow through it."""
    scalar_node = type(f"{title}Backward0", (_CmpBackward,), {"__module__": __name__})
    tensor_node = type(f"{title}Backward1", (_CmpBackward,), {"__module__": __name__})

    def fn(input, other):
        res = op(input, other)
        inputs = (input, other) if isinstance(other, Tensor) else (input,)
        node = node_for(tensor_node if len(inputs) == 2 else scalar_node, inputs)
        if node is None:
            return res
        node.in_meta = tuple((t._data.shape, t._data.dtype) for t in inputs)
        return finish(node, res._data)
    fn.__name__ = op.__name__
    return fn
def _need_tensor(name, other, position):
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position {position}) must be Tensor, not "
                        f"{type(other).__name__}")


def _logical(ufunc, name):
    """A logical op: unlike comparisons, PyTorch takes no Python number as ``other``."""
    base = _cmp(ufunc, name)

    def op(input, other, *, out=None):
        _need_tensor(name, other, 2)
        return base(input, other, out=out)

    def method(self, other, *, out=None):
        _need_tensor(name, other, 1)
        return base(self, other, out=out)

    def inplace(self, other):
        _need_tensor(name + "_", other, 1)
        return _nondiff_inplace(self, base, other)

    op.__name__ = method.__name__ = name
    inplace.__name__ = name + "_"
    op.__doc__ = method.__doc__ = base.__doc__
    inplace.__doc__ = f"In-place ``{name}``."
    _LOGICAL_METHODS[name] = method
    _LOGICAL_METHODS[name + "_"] = inplace
    return op


def _nondiff_inplace(self, fn, *args):
    """An in-place op PyTorch does not differentiate: no leaf check, the history is kept."""
    from ._base import apply_inplace
    prev = _state.grad
    _state.grad = False
    try:
        return apply_inplace(self, fn, *args)
    finally:
        _state.grad = prev


_LOGICAL_METHODS = {}
logical_and = _logical(np.logical_and, "logical_and")
logical_or = _logical(np.logical_or, "logical_or")
logical_xor = _logical(np.logical_xor, "logical_xor")


def _bitwise(ufunc, name):
    def op(input, other, *, out=None):
        a, b, x, y, dt = binary_operands(input, other)
        _check_broadcast(x, y)
        if dt.kind not in "biu":
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtype_name(dt)}\'')
        xp = xp_for(x, y)
        res = finish(None, arr(getattr(xp, ufunc.__name__)(xp.asarray(x).astype(dt), xp.asarray(y).astype(dt))).astype(dt))
        return res if out is None else write_out(out, res, name)
    op.__name__ = name
    return op


def _bitwise_inplace(op):
    """``op`` for ``self.<op>_(other)``: as in PyTorch, the output's shape and dtype are
    checked (when the iterator is built) before the kernel refuses a float dtype."""
    def fn(input, other):
        from ._base import _FROM_NP
        from .. import _dtype as D
        a, b, x, y, dt = binary_operands(input, other)
        _check_broadcast(x, y)
        shape = np.broadcast_shapes(getattr(x, "shape", ()), getattr(y, "shape", ()))
        sd = input._data
        if shape != sd.shape:
            raise RuntimeError(f"output with shape {list(sd.shape)} doesn't match the broadcast shape {list(shape)}")
        if dt != sd.dtype and not D.can_cast(_FROM_NP[dt], _FROM_NP[sd.dtype]):
            raise RuntimeError(f"result type {_dtype_name(dt)} can't be cast to the desired output "
                               f"type {_dtype_name(sd.dtype)}")
        return op(input, other)
    fn.__name__ = op.__name__
    return fn


bitwise_and = _bitwise(np.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(np.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(np.bitwise_xor, "bitwise_xor")


def _un(fn, name, complex_error=None):
    def op(input, *, out=None):
        if complex_error is not None:
            no_complex(input, complex_error)
        x = input._data
        res = finish(None, arr((fn if type(x) is np.ndarray else on_device(fn, x))(x)))
        return res if out is None else write_out(out, res, name)
    op.__name__ = name
    op.__doc__ = f"Elementwise ``{name}`` (no gradient)."
    return op


isnan = _un(np.isnan, "isnan")
isinf = _un(np.isinf, "isinf")
isfinite = _un(np.isfinite, "isfinite")
isposinf = _un(np.isposinf, "isposinf", "isposinf")
isneginf = _un(np.isneginf, "isneginf", "isneginf")
isreal = _un(np.isreal, "isreal")
signbit = _un(np.signbit, "signbit", "signbit")
logical_not = _un(np.logical_not, "logical_not")


def bitwise_not(input, *, out=None):
    x = input._data
    if x.dtype.kind not in "biu":
        raise NotImplementedError(f'"bitwise_not_cpu" not implemented for \'{_dtype_name(x.dtype)}\'')
    xp = xp_for(x)
    res = finish(None, arr(xp.logical_not(x) if x.dtype.kind == "b" else xp.invert(x)))
    return res if out is None else write_out(out, res, "bitwise_not")


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (infinities equal themselves)."""
    x, y = input._data, other._data
    check_same_device(input, other)
    if x.dtype != y.dtype:
        raise RuntimeError(f"{_dtype_name(x.dtype)} did not match {_dtype_name(y.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    _check_broadcast(x, y)
    xp = xp_for(x)
    if x.dtype.kind == "b":
        return finish(None, arr(xp.equal(x, y)))
    xf = x if x.dtype.kind in "fcV" else x.astype(np.float64)
    yf = y if y.dtype.kind in "fcV" else y.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        r = xp.isclose(xf, yf, rtol=rtol, atol=atol, equal_nan=equal_nan)
    return finish(None, arr(r))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every pair of elements is close (see ``isclose``)."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def equal(input, other):
    """True when both tensors have the same size and the same elements."""
    x, y = input._data, other._data
    check_same_device(input, other)
    return x.shape == y.shape and bool(xp_for(x).array_equal(x, y))


def result_type(tensor1, tensor2):
    """The dtype an arithmetic op on these operands gives (PyTorch's promotion)."""
    from ._base import result_np_dtype
    from .. import _dtype as D
    return D._FROM_NP[np.dtype(result_np_dtype(tensor1, tensor2))]


def _eq_dunder(self, other):
    if other is None or not isinstance(other, (Tensor, int, float, bool, complex, np.ndarray, np.generic, list, tuple)):
        return False if other is None else NotImplemented
    return eq(self, other)


def _ne_dunder(self, other):
    if other is None or not isinstance(other, (Tensor, int, float, bool, complex, np.ndarray, np.generic, list, tuple)):
        return True if other is None else NotImplemented
    return ne(self, other)


def _invert(self):
    if self._data.dtype.kind not in "biu":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return bitwise_not(self)


TENSOR_METHODS = {n: globals()[n] for n in __all__ if n != "result_type"}
TENSOR_METHODS.update({k: v for k, v in _LOGICAL_METHODS.items() if not k.endswith("_")})
TENSOR_METHODS.update({
    "__eq__": _eq_dunder, "__ne__": _ne_dunder, "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
    "__and__": bitwise_and, "__or__": bitwise_or, "__xor__": bitwise_xor, "__invert__": _invert,
    "__rand__": bitwise_and, "__ror__": bitwise_or, "__rxor__": bitwise_xor,
})
INPLACE = {"eq_": _cmp_inplace(eq, "Eq"), "ne_": _cmp_inplace(ne, "Ne"), "lt_": _cmp_inplace(lt, "Lt"),
           "le_": _cmp_inplace(le, "Le"), "gt_": _cmp_inplace(gt, "Gt"), "ge_": _cmp_inplace(ge, "Ge"),
           "logical_and_": logical_and, "logical_or_": logical_or, "logical_xor_": logical_xor,
           "logical_not_": logical_not, "bitwise_and_": _bitwise_inplace(bitwise_and),
           "bitwise_or_": _bitwise_inplace(bitwise_or), "bitwise_xor_": _bitwise_inplace(bitwise_xor),
           "bitwise_not_": bitwise_not, "__iand__": _bitwise_inplace(bitwise_and),
           "__ior__": _bitwise_inplace(bitwise_or), "__ixor__": _bitwise_inplace(bitwise_xor)}
INPLACE_IMPL = {k: v for k, v in _LOGICAL_METHODS.items() if k.endswith("_")}


def _logical_not_(self):
    return _nondiff_inplace(self, logical_not)


_logical_not_.__name__ = "logical_not_"
_logical_not_.__doc__ = "In-place ``logical_not``."
INPLACE_IMPL["logical_not_"] = _logical_not_
