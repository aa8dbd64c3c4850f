"""Arithmetic: + - * / ** and friends, with broadcasting, PyTorch's promotion, reflected
and in-place forms. Broadcast gradients are summed down centrally by the engine."""
import operator as _op

import numpy as np

from ._base import (OpNode, node_for, save, finish, arr, binary_operands, cast,
                    apply_inplace, write_out, Tensor, _SCALARS, _state, _float)

__all__ = ["add", "sub", "subtract", "rsub", "mul", "multiply", "div", "divide", "true_divide",
           "floor_divide", "remainder", "fmod", "neg", "negative", "pow", "float_power"]


_ndarray = np.ndarray
_asarray = np.asarray
_empty = np.empty
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_F32_OF = {}


def _f32(v):
    """``v`` rounded to float32, as PyTorch casts a Python scalar for a float32 op (cached:
    loops reuse the same few constants)."""
    r = _F32_OF.get(v)
    if r is None:
        if len(_F32_OF) > 512:
            _F32_OF.clear()
        r = _F32_OF[v] = float(np.float32(v))
    return r


def _fast_scalar(input, other, pyop):
    """``input <op> other`` for a 0-d float tensor and a Python float, in Python floats.

    A NumPy ufunc on a 0-d array costs about 1 µs, most of the time of a small graph's op;
    Python float arithmetic is exact here: +, - and * of two float32 values computed in
    double and rounded once to float32 give the correctly rounded float32 result.
    Returns None when the fast path does not apply.
    """
    x = input._data
    if x.__class__ is not _ndarray or x.ndim:
        return None
    dt = x.dtype
    if dt == _F32:
        v = pyop(x.item(), _f32(other))
    elif dt == _F64:
        v = pyop(x.item(), other)
    else:
        return None
    r = _empty((), dt)
    r[()] = v
    return r


def _finish_binary(r, dt):
    if r.__class__ is not _ndarray:
        r = arr(r)
    if r.dtype != dt:
        r = r.astype(dt)
    return r


def broadcast_error(xs, ys):
    """PyTorch's error for shapes that do not broadcast."""
    n = max(len(xs), len(ys))
    px, py = (1,) * (n - len(xs)) + tuple(xs), (1,) * (n - len(ys)) + tuple(ys)
    for d in range(n - 1, -1, -1):
        if px[d] != py[d] and px[d] != 1 and py[d] != 1:
            return RuntimeError(f"The size of tensor a ({px[d]}) must match the size of tensor b ({py[d]}) at "
                                f"non-singleton dimension {d}")
    return RuntimeError("shapes do not broadcast")


def _check_broadcast(x, y):
    xs, ys = np.shape(x), np.shape(y)
    if xs != ys and xs and ys:
        try:
            np.broadcast_shapes(xs, ys)
        except ValueError:
            raise broadcast_error(xs, ys) from None


def _prep(input, other):
    a, b, x, y, dt = binary_operands(input, other)
    _check_broadcast(x, y)
    if x.__class__ is _ndarray and x.dtype != dt:
        x = x.astype(dt)
    if y.__class__ is _ndarray and y.dtype != dt:
        y = y.astype(dt)
    return a, b, x, y, dt


def _check_alpha(alpha, dt):
    if alpha.__class__ is bool and dt.kind != "b":
        raise RuntimeError("Boolean alpha only supported for Boolean results.")


def _check_int_divisor(y, dt):
    """Integer division by zero raises, as in PyTorch."""
    if dt.kind in "iub" and np.any(np.asarray(y) == 0):
        raise RuntimeError("ZeroDivisionError")


def _scalar_arg(v, name, op):
    if isinstance(v, Tensor):
        if v._data.size != 1:
            raise RuntimeError(f"{op}(): argument '{name}' must be Number, not Tensor")
        return v.item()
    return v


# *** add / sub ***

class AddBackward0(OpNode):
    alpha = 1

    def backward(self, g):
        nf = self.next_functions
        gb = None
        if nf[1][0] is not None:
            gb = g if self.alpha == 1 else g * self.alpha
        return (g if nf[0][0] is not None else None, gb)


class SubBackward0(OpNode):
    alpha = 1

    def backward(self, g):
        nf = self.next_functions
        gb = None
        if nf[1][0] is not None:
            gb = -g if self.alpha == 1 else g * -self.alpha
        return (g if nf[0][0] is not None else None, gb)


class RsubBackward0(OpNode):
    alpha = 1

    def backward(self, g):
        nf = self.next_functions
        ga = (-g if self.alpha == 1 else g * -self.alpha) if nf[0][0] is not None else None
        return (ga, g if nf[1][0] is not None else None)


class RsubBackward1(OpNode):
    alpha = 1

    def backward(self, g):
        return -g if self.alpha == 1 else g * -self.alpha


def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other`` with broadcasting."""
    if other.__class__ is _float and alpha == 1 and out is None and isinstance(input, Tensor):
        r = _fast_scalar(input, other, _op.add)
        if r is not None:
            return finish(node_for(AddBackward0, (input, None)), r)
    alpha = _scalar_arg(alpha, "alpha", "add")
    a, b, x, y, dt = _prep(input, other)
    _check_alpha(alpha, dt)
    if alpha != 1:
        if dt.kind not in "fc" and isinstance(alpha, float):
            raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
        y = y * alpha
    r = _finish_binary(x + y, dt)
    node = node_for(AddBackward0, (a, b))
    if node is not None and alpha != 1:
        node.alpha = alpha
    res = finish(node, r)
    return res if out is None else write_out(out, res, "add")


def sub(input, other, *, alpha=1, out=None):
    """``input - alpha * other`` with broadcasting."""
    if other.__class__ is _float and alpha == 1 and out is None and isinstance(input, Tensor):
        r = _fast_scalar(input, other, _op.sub)
        if r is not None:
            return finish(node_for(SubBackward0, (input, None)), r)
    alpha = _scalar_arg(alpha, "alpha", "sub")
    a, b, x, y, dt = _prep(input, other)
    _check_alpha(alpha, dt)
    if dt.kind == "b":
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if alpha != 1:
        y = y * alpha
    r = _finish_binary(x - y, dt)
    node = node_for(SubBackward0, (a, b))
    if node is not None and alpha != 1:
        node.alpha = alpha
    res = finish(node, r)
    return res if out is None else write_out(out, res, "sub")


subtract = sub


def rsub(input, other, *, alpha=1):
    """``other - alpha * input``."""
    if not isinstance(other, Tensor):
        a, _, x, y, dt = _prep(input, other)
        r = _finish_binary(y - (x * alpha if alpha != 1 else x), dt)
        node = node_for(RsubBackward1, (a,))
        if node is not None and alpha != 1:
            node.alpha = alpha
        return finish(node, r)
    a, b, x, y, dt = _prep(input, other)
    r = _finish_binary(y - (x * alpha if alpha != 1 else x), dt)
    node = node_for(RsubBackward0, (a, b))
    if node is not None and alpha != 1:
        node.alpha = alpha
    return finish(node, r)


# *** mul / div ***

class MulBackward0(OpNode):
    def backward(self, g):
        other, self_ = self.saved_tensors
        nf = self.next_functions
        return (g * other if nf[0][0] is not None else None,
                g * self_ if nf[1][0] is not None else None)


def mul(input, other, *, out=None):
    """Elementwise product with broadcasting."""
    if other.__class__ is _float and out is None and isinstance(input, Tensor):
        r = _fast_scalar(input, other, _op.mul)
        if r is not None:
            node = node_for(MulBackward0, (input, None))
            if node is not None:
                node._saved = (other, None)
                node._saved_versions = (None, None)
            return finish(node, r)
    a, b, x, y, dt = _prep(input, other)
    r = _finish_binary(x * y, dt)
    node = node_for(MulBackward0, (a, b))
    if node is not None:
        save(node,
             (b if b is not None else y) if a is not None and a._requires_grad else None,
             (a if a is not None else x) if b is not None and b._requires_grad else None)
    res = finish(node, r)
    return res if out is None else write_out(out, res, "mul")


multiply = mul


class DivBackward0(OpNode):
    def backward(self, g):
        self_, other = self.saved_tensors
        nf = self.next_functions
        ga = g / other if nf[0][0] is not None else None
        gb = None
        if nf[1][0] is not None:
            gb = -g * self_ / (other * other)
        return ga, gb


class DivBackward2(OpNode):
    """Division with a rounding mode: the gradient is zero almost everywhere."""

    def backward(self, g):
        nf = self.next_functions
        z = g * 0
        return (z if nf[0][0] is not None else None, z if nf[1][0] is not None else None)


def div(input, other, *, rounding_mode=None, out=None):
    """True division, or rounded with ``rounding_mode`` 'trunc' or 'floor'."""
    a, b, x, y, dt = binary_operands(input, other)
    _check_broadcast(x, y)
    if rounding_mode is None:
        if dt.kind not in "fc":
            from .._dtype import _default
            dt = _default[0].np
        x = cast(x, dt) if not isinstance(x, _SCALARS) else x
        y = cast(y, dt) if not isinstance(y, _SCALARS) else y
        with np.errstate(divide="ignore", invalid="ignore"):
            r = _finish_binary(np.true_divide(x, y), dt)
        node = node_for(DivBackward0, (a, b))
        if node is not None:
            save(node, (a if a is not None else x) if b is not None and b._requires_grad else None,
                 b if b is not None else y)
    else:
        if rounding_mode not in ("trunc", "floor"):
            raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                             f"found '{rounding_mode}'")
        x = cast(x, dt) if not isinstance(x, _SCALARS) else x
        y = cast(y, dt) if not isinstance(y, _SCALARS) else y
        if dt.kind in "iub":
            if np.any(np.asarray(y) == 0):
                raise RuntimeError("ZeroDivisionError")
            if rounding_mode == "floor":
                r = np.floor_divide(x, y)
            else:
                q = np.floor_divide(x, y)
                fix = (np.remainder(x, y) != 0) & ((np.asarray(x) < 0) != (np.asarray(y) < 0))
                r = q + fix
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                q = np.true_divide(x, y)
                r = np.floor(q) if rounding_mode == "floor" else np.trunc(q)
        r = _finish_binary(r, dt)
        node = node_for(DivBackward2, (a, b))
    res = finish(node, r)
    return res if out is None else write_out(out, res, "div")


divide = true_divide = div


def floor_divide(input, other, *, out=None):
    """Division rounded toward negative infinity (no derivative, as in PyTorch)."""
    from .index_ops import _NotImplementedNode
    from .._tensor import Tensor as _T
    from ..autograd import grad_mode
    with grad_mode.no_grad():
        r = div(input, other, rounding_mode="floor")
    ins = tuple(t if isinstance(t, _T) else None for t in (input, other))
    node = node_for(_NotImplementedNode, ins)
    if node is not None:
        node.op = "floor_divide"
    res = finish(node, r._data)
    return res if out is None else write_out(out, res, "floor_divide")


class RemainderBackward0(OpNode):
    """Divisor is a number: the gradient passes through."""
    def backward(self, g):
        return g


FmodBackward0 = type("FmodBackward0", (RemainderBackward0,), {"__module__": __name__})


class RemainderBackward1(OpNode):
    mode = "floor"

    def backward(self, g):
        self_, other = self.saved_tensors
        nf = self.next_functions
        gb = None
        if nf[1][0] is not None:
            gb = -g * div(self_, other, rounding_mode=self.mode)
        return (g if nf[0][0] is not None else None, gb)


FmodBackward1 = type("FmodBackward1", (RemainderBackward1,), {"__module__": __name__, "mode": "trunc"})


def _mod_node(cls0, cls1, a, b, x, y):
    if b is None:
        return node_for(cls0, (a,))
    node = node_for(cls1, (a, b))
    if node is not None:
        save(node, a if a is not None else x, b)
    return node


def remainder(input, other, *, out=None):
    """Python-style modulus (sign of the divisor)."""
    a, b, x, y, dt = _prep(input, other)
    _check_int_divisor(y, dt)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = _finish_binary(np.remainder(x, y), dt)
    node = _mod_node(RemainderBackward0, RemainderBackward1, a, b, x, y)
    res = finish(node, r)
    return res if out is None else write_out(out, res, "remainder")


def fmod(input, other, *, out=None):
    """C-style modulus (sign of the dividend)."""
    a, b, x, y, dt = _prep(input, other)
    _check_int_divisor(y, dt)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = _finish_binary(np.fmod(x, y), dt)
    node = _mod_node(FmodBackward0, FmodBackward1, a, b, x, y)
    res = finish(node, r)
    return res if out is None else write_out(out, res, "fmod")


# *** neg / pow ***

class NegBackward0(OpNode):
    def backward(self, g):
        return -g


def neg(input, *, out=None):
    """``-input``."""
    x = input._data
    if x.dtype.kind == "b":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                           "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    res = finish(node_for(NegBackward0, (input,)), arr(-x))
    return res if out is None else write_out(out, res, "neg")


negative = neg


class PowBackward0(OpNode):
    """d(x ** c)/dx = c * x ** (c - 1)."""

    def backward(self, g):
        (x,) = self.saved_tensors
        c = self.exponent
        if c == 0:
            return g * 0
        if c == 2:
            return g * (x * 2)
        return g * (pow(x, c - 1) * c)


class PowBackward1(OpNode):
    def backward(self, g):
        x, e, result = self.saved_tensors
        nf = self.next_functions
        gx = ge = None
        if nf[0][0] is not None:
            gx = g * (e * pow(x, e - 1))
        if nf[1][0] is not None:
            from .unary import log
            from .index import where
            gl = result * log(x)
            mask = (x == 0) & (e >= 0)
            ge = g * where(mask, gl * 0, gl)
        return gx, ge


class PowBackward2(OpNode):
    """d(c ** x)/dx = c ** x * log(c)."""

    def backward(self, g):
        (result,) = self.saved_tensors
        import math
        c = self.base
        return g * (result * math.log(c)) if c > 0 else g * (result * float("nan") if c < 0 else result * 0)


def pow(input, exponent, *, out=None):
    """``input ** exponent`` (either may be a Python number)."""
    from ._base import save_output
    if not isinstance(input, Tensor):
        a, b, x, y, dt = _prep(input, exponent)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = _finish_binary(np.power(x, y), dt)
        node = node_for(PowBackward2, (b,))
        res = finish(node, r)
        if node is not None:
            node.base = input
            save_output(node, res)
        return res if out is None else write_out(out, res, "pow")
    if isinstance(exponent, Tensor):
        if exponent._data.ndim == 0 and not exponent._requires_grad and input._data.ndim:
            exponent = exponent.item()
        else:
            a, b, x, y, dt = _prep(input, exponent)
            if dt.kind in "iu" and np.any(np.asarray(y) < 0):
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                r = _finish_binary(np.power(x, y), dt)
            node = node_for(PowBackward1, (a, b))
            res = finish(node, r)
            if node is not None:
                save(node, a, b)
                save_output(node, res)
            return res if out is None else write_out(out, res, "pow")
    a, _, x, y, dt = _prep(input, exponent)
    if dt.kind in "iu" and isinstance(exponent, int) and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if y == 2:
            r = x * x
        elif y == 0.5 and dt.kind == "f":
            r = np.sqrt(x)
        else:
            r = np.power(x, y)
    r = _finish_binary(r, dt)
    node = node_for(PowBackward0, (a,))
    if node is not None:
        node.exponent = y
        save(node, a)
    res = finish(node, r)
    return res if out is None else write_out(out, res, "pow")


def float_power(input, exponent, *, out=None):
    """``pow`` computed in float64."""
    from .._dtype import float64
    i = input.to(float64) if isinstance(input, Tensor) else float(input)
    e = exponent.to(float64) if isinstance(exponent, Tensor) else exponent
    return pow(i, e, out=out)


# The methods bound onto Tensor by ops/__init__.py.
def _rtruediv(self, other):
    from .unary import reciprocal
    return mul(reciprocal(self), other)


def _rpow(self, other):
    return pow(other, self)


def _rfloordiv(self, other):
    return floor_divide(other, self)


def _rmod(self, other):
    return remainder(other, self)


TENSOR_METHODS = {
    "add": add, "sub": sub, "subtract": sub, "mul": mul, "multiply": mul, "div": div, "divide": div,
    "true_divide": div, "floor_divide": floor_divide, "remainder": remainder, "fmod": fmod,
    "neg": neg, "negative": neg, "pow": pow, "float_power": float_power,
    "__add__": add, "__radd__": add, "__sub__": sub, "__rsub__": lambda self, other: rsub(self, other),
    "__mul__": mul, "__rmul__": mul, "__truediv__": div, "__rtruediv__": _rtruediv,
    "__floordiv__": floor_divide, "__rfloordiv__": _rfloordiv, "__mod__": remainder,
    "__rmod__": _rmod, "__neg__": neg, "__pow__": pow, "__rpow__": _rpow,
    "__pos__": lambda self: self,
}

INPLACE = {"add_": add, "sub_": sub, "subtract_": sub, "mul_": mul, "multiply_": mul, "div_": div,
           "divide_": div, "true_divide_": div, "floor_divide_": floor_divide,
           "remainder_": remainder, "fmod_": fmod, "neg_": neg, "negative_": neg, "pow_": pow,
           "__iadd__": add, "__isub__": sub, "__imul__": mul, "__itruediv__": div,
           "__ifloordiv__": floor_divide, "__imod__": remainder, "__ipow__": pow}
