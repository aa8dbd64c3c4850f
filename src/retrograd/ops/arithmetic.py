"""Arithmetic: + - * / ** and friends, with broadcasting, PyTorch's promotion, reflected
and in-place forms. Broadcast gradients are summed down centrally by the engine."""
import operator as _op

import numpy as np

from ._complex_reject import no_complex_kernel
from ._base import xp_for, on_device
from ._base import (OpNode, node_for, node_for1, save, finish, arr, binary_operands, cast,
                    apply_inplace, write_out, Tensor, _SCALARS, _state, _float, zeros_grad, out_meta)
from ..autograd.graph import Node as _Node, _seq

__all__ = ["add", "sub", "subtract", "rsub", "mul", "multiply", "div", "divide", "true_divide",
           "floor_divide", "remainder", "fmod", "neg", "negative", "positive", "pow", "float_power"]


_ndarray = np.ndarray
_new = object.__new__
_next_seq = next
_asarray = np.asarray
_empty = np.empty
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_F32_OF = {}


def _f32(v):
    """``v`` rounded to float32, as PyTorch casts a Python scalar for a float32 op (cached:
    loops reuse the same few constants)."""
    if v == 0:
        return v  # 0.0 and -0.0 are one dict key: never cached, so the sign survives
    r = _F32_OF.get(v)
    if r is None:
        if len(_F32_OF) > 512:
            _F32_OF.clear()
        r = _F32_OF[v] = float(np.float32(v))
    return r


_NONES2 = (None, None)
_SAVED_OF = {}


def _saved_number(v):
    """``(v, None)``, what a node of ``tensor * v`` saves: one shared tuple per number (a
    loop multiplies by the same few), so a node allocates nothing more for the GC to count.
    Zeros are never shared (0.0 and -0.0 are one dict key)."""
    if not v:
        return (v, None)
    if len(_SAVED_OF) > 512:
        _SAVED_OF.clear()
    sv = _SAVED_OF[v] = (v, None)
    return sv
_META0 = {_F32: out_meta(np.empty((), _F32)), _F64: out_meta(np.empty((), _F64))}


def _scalar_op(input, other, pyop, cls, keep):
    """``input <op> other`` for a 0-d float tensor and a Python float, recorded on a
    ``cls`` node with two edges (the number's leads nowhere) that saves ``(other, None)``
    when ``keep``; None when this path does not apply.

    A NumPy ufunc on a 0-d array costs about 1 µs, most of the time of a small graph's op;
    Python float arithmetic is exact here: +, - and * of two float32 values computed in
    double and rounded once to float32 give the correctly rounded float32 result. The
    node is made here too (no helper calls): this is a small graph's whole op.
    """
    x = input._data
    if x.__class__ is not _ndarray or x.ndim:
        return None
    dt = x.dtype
    if dt is _F32 or (dt is not _F64 and dt == _F32):
        o = _F32_OF.get(other)
        v = pyop(x.item(), o if o is not None else _f32(other))
        dt = _F32
    elif dt is _F64 or dt == _F64:
        v = pyop(x.item(), other)
        dt = _F64
    else:
        return None
    r = _empty((), dt)
    r[()] = v
    t = _new(Tensor)
    t._data = r
    if _state.grad and input._requires_grad and input._base is None:
        n = _new(cls)
        fn = input._grad_fn
        if fn is not None:
            n._nf = fn
            n._nr = input._output_nr
        else:
            n._nf = input._grad_accumulator()
            n._nr = 0
        n._ne = 2
        n._seq = _next_seq(_seq)
        if _Node._anomaly_stack is not None:
            n._trace = _Node._anomaly_stack()
        if keep:
            sv = _SAVED_OF.get(other) if other else None
            n._saved = sv if sv is not None else _saved_number(other)
            n._saved_versions = _NONES2
        n._out_meta = _META0[dt]
        t._grad_fn = n
        t._requires_grad = True
        return t
    if _state.grad and (input._requires_grad or input._base is not None):
        # a view (its history may need rebuilding first): the general path
        n = node_for1(cls, input, 2)
        if n is not None:
            if keep:
                n._saved = (other, None)
                n._saved_versions = _NONES2
            n._out_meta = _META0[dt]
            t._grad_fn = n
            t._requires_grad = True
            return t
    if _state.inference:
        t._inference = True
    return t


def _pair(input, other, pyop):
    """``input <op> other`` for two 0-d tensors of one float dtype, in Python floats (exact,
    as in ``_scalar_op``); None when this path does not apply."""
    if input.__class__ is not Tensor or other.__class__ is not Tensor:
        return None
    x = input._data
    y = other._data
    if x.__class__ is not _ndarray or y.__class__ is not _ndarray or x.ndim or y.ndim:
        return None
    dt = x.dtype
    if dt is not y.dtype or (dt is not _F32 and dt is not _F64):
        return None
    r = _empty((), dt)
    r[()] = pyop(x.item(), y.item())
    return r


_F16 = np.dtype(np.float16)


def _half_alpha(op, cls, a, b, x, y, dt, alpha, out, sign):
    """``x + sign * alpha * y`` for float16/bfloat16 as PyTorch computes it: alpha rounded to
    the dtype, then the product and sum in float32, rounded once."""
    xp = xp_for(a, b, x, y, dt)
    al = np.float32(np.asarray(alpha, dt)) * sign
    r = _finish_binary(xp.asarray(x, dt).astype(np.float32) + al * xp.asarray(y, dt).astype(np.float32), dt)
    node = node_for(cls, (a, b))
    if node is not None:
        node.alpha = alpha
    res = finish(node, r)
    return res if out is None else write_out(out, res, op.__name__)


def _opmath_scalar(v):
    return np.float32(v) if v.__class__ is float else v


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
    xs = x.shape if x.__class__ is _ndarray else getattr(x, "shape", ())
    ys = y.shape if y.__class__ is _ndarray else getattr(y, "shape", ())
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
    if dt.kind not in "fcV" and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")


def _check_int_divisor(y, dt, x=1):
    """Integer division by zero raises, as in PyTorch (when there is anything to divide)."""
    if dt.kind not in "iub" or xp_for(x, y) is not np:   # (a device divides as CUDA does: no host question)
        return
    if np.any(np.asarray(y) == 0) and np.size(x):
        raise RuntimeError("ZeroDivisionError")


def _scalar_arg(v, name, op):
    if isinstance(v, Tensor):
        if v._data.size != 1:
            raise RuntimeError(f"{op}(): argument '{name}' must be Number, not Tensor")
        return v.item()
    return v


def _is_bool(v):
    return v._data.dtype.kind == "b" if isinstance(v, Tensor) else v.__class__ is bool


def _sub_check(input, other):
    """PyTorch refuses to subtract bools (tensors or Python bools)."""
    bi, bo = _is_bool(input), _is_bool(other)
    if bi and bo:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if bi or bo:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                           "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _not_for_bool(dt, kernel):
    if dt.kind == "b":
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def _not_for_bool_or_complex(dt, kernel):
    _not_for_bool(dt, kernel)
    no_complex_kernel(dt, kernel)


def _floor_div_np(x, y):
    """Float floor division as PyTorch (and Python) compute it: from ``fmod``, so that the
    quotient is exact where ``floor(x / y)`` rounds up (``0.7 // 0.02`` is 34 in float64)."""
    xp = xp_for(x, y)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mod = xp.fmod(x, y)
        div = (x - mod) / y
        div = xp.where((mod != 0) & ((xp.less(y, 0)) != (mod < 0)), div - 1, div)
        fl = xp.floor(div)
        fl = xp.where(div - fl > 0.5, fl + 1, fl)
        q = xp.true_divide(x, y)
        r = xp.where(div != 0, fl, xp.copysign(xp.zeros((), q.dtype), q))
        return xp.where(xp.equal(y, 0), q, r)


def _remainder_np(x, y):
    """Float remainder with the divisor's sign, from ``fmod`` as in PyTorch (a zero keeps
    the dividend's sign)."""
    xp = xp_for(x, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        mod = xp.fmod(x, y)
        return xp.where((mod != 0) & (xp.less(y, 0) != (mod < 0)), mod + y, mod)


# *** add / sub ***

def _needs2(node):
    """Whether each of a binary node's two inputs gets a gradient."""
    nf = node._nf
    if nf.__class__ is tuple:
        return nf[0] is not None, nf[1] is not None
    if nf is None:
        return False, False
    return node._ni == 0, node._ni == 1


class AddBackward0(OpNode):
    alpha = 1

    def backward(self, g):
        nf = self._nf
        if nf.__class__ is not tuple and self._ni == 0:   # tensor + number (or one input needs it)
            return (g, None)
        na, nb = _needs2(self)
        gb = None
        if nb:
            gb = g if self.alpha == 1 else g * self.alpha
        return (g if na else None, gb)


class SubBackward0(OpNode):
    alpha = 1

    def backward(self, g):
        nf = self._nf
        if nf.__class__ is not tuple and self._ni == 0:
            return (g, None)
        na, nb = _needs2(self)
        gb = None
        if nb:
            gb = -g if self.alpha == 1 else g * -self.alpha
        return (g if na else None, gb)


class RsubBackward0(OpNode):
    alpha = 1

    def backward(self, g):
        na, nb = _needs2(self)
        ga = (-g if self.alpha == 1 else g * -self.alpha) if na else None
        return (ga, g if nb else None)


class RsubBackward1(OpNode):
    alpha = 1

    def backward(self, g):
        return -g if self.alpha == 1 else g * -self.alpha


def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other`` with broadcasting."""
    if other.__class__ is _float and alpha == 1 and out is None and isinstance(input, Tensor):
        r = _scalar_op(input, other, _op.add, AddBackward0, False)
        if r is not None:
            return r
    r = _pair(input, other, _op.add) if alpha == 1 else None
    if r is not None:
        a, b = input, other
    else:
        alpha = _scalar_arg(alpha, "alpha", "add")
        a, b, x, y, dt = _prep(input, other)
        _check_alpha(alpha, dt)
        if alpha != 1:
            if dt.kind == "V" or dt == _F16:
                return _half_alpha(add, AddBackward0, a, b, x, y, dt, alpha, out, 1)
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
        r = _scalar_op(input, other, _op.sub, SubBackward0, False)
        if r is not None:
            return r
    r = _pair(input, other, _op.sub) if alpha == 1 else None
    if r is not None:
        a, b = input, other
    else:
        alpha = _scalar_arg(alpha, "alpha", "sub")
        _sub_check(input, other)
        a, b, x, y, dt = _prep(input, other)
        _check_alpha(alpha, dt)
        if alpha != 1:
            if dt.kind == "V" or dt == _F16:
                return _half_alpha(sub, SubBackward0, a, b, x, y, dt, alpha, out, -1)
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
    _sub_check(input, other)
    if not isinstance(other, Tensor):
        a, _, x, y, dt = _prep(input, other)
        _check_alpha(alpha, dt)
        r = _finish_binary(y - (x * alpha if alpha != 1 else x), dt)
        node = node_for(RsubBackward1, (a,))
        if node is not None and alpha != 1:
            node.alpha = alpha
        return finish(node, r)
    a, b, x, y, dt = _prep(input, other)
    _check_alpha(alpha, dt)
    r = _finish_binary(y - (x * alpha if alpha != 1 else x), dt)
    node = node_for(RsubBackward0, (a, b))
    if node is not None and alpha != 1:
        node.alpha = alpha
    return finish(node, r)


# *** mul / div ***

class MulBackward0(OpNode):
    def backward(self, g):
        s = self._saved
        if s.__class__ is tuple and s[0].__class__ is _float and self._nf.__class__ is not tuple:
            return (g * s[0], None)   # tensor * number
        if g._data.dtype.kind == "c" and not getattr(self, "_conj_pass", False):
            return _wirtinger(self, g)
        other, self_ = self.saved_tensors
        na, nb = _needs2(self)
        return (g * other if na else None, g * self_ if nb else None)


def mul(input, other, *, out=None):
    """Elementwise product with broadcasting."""
    if other.__class__ is _float and out is None and isinstance(input, Tensor):
        r = _scalar_op(input, other, _op.mul, MulBackward0, True)
        if r is not None:
            return r
    r = _pair(input, other, _op.mul)
    if r is not None:
        a, b, x, y = input, other, None, None
    else:
        a, b, x, y, dt = _prep(input, other)
        if dt.kind == "V":  # bfloat16 times a Python float: the float joins in float32 (PyTorch's mul kernel)
            x, y = _opmath_scalar(x), _opmath_scalar(y)
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
        if g._data.dtype.kind == "c" and not getattr(self, "_conj_pass", False):
            return _wirtinger(self, g)
        self_, other = self.saved_tensors
        nf = self.next_functions
        ga = g / other if nf[0][0] is not None else None
        gb = None
        if nf[1][0] is not None:
            gb = -g * ((self_ / other) / other)
        return ga, gb


class DivBackward2(OpNode):
    """Division with a rounding mode: the gradient is zero (it saves what PyTorch saves,
    so in-place writes to the operands are caught alike)."""

    def backward(self, g):
        self.saved_tensors
        nf = self.next_functions
        return (zeros_grad(g) if nf[0][0] is not None else None,
                zeros_grad(g) if nf[1][0] is not None else None)


def _rounded_div(x, y, dt, mode):
    """``x / y`` rounded by ``mode`` ('trunc' or 'floor') in dtype ``dt``."""
    xp = xp_for(x, y, dt)
    (_not_for_bool if mode == "true" else _not_for_bool_or_complex)(dt, f"div_{mode}_cpu")
    if dt.kind in "iu":
        _check_int_divisor(y, dt, x)
        q = xp.floor_divide(x, y)
        if mode == "floor":
            return q
        return q + ((xp.remainder(x, y) != 0) & (xp.less(x, 0) != xp.less(y, 0)))
    if mode == "floor":
        return _floor_div_np(x, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return xp.trunc(xp.true_divide(x, y))


def div(input, other, *, rounding_mode=None, out=None):
    """True division, or rounded with ``rounding_mode`` 'trunc' or 'floor'."""
    xp = xp_for(input, other)
    a, b, x, y, dt = binary_operands(input, other)
    _check_broadcast(x, y)
    if rounding_mode is None:
        if dt.kind not in "fcV":
            from .._dtype import _default
            dt = _default[0].np
        x = cast(x, dt) if not isinstance(x, _SCALARS) else x
        y = cast(y, dt) if not isinstance(y, _SCALARS) else y
        if dt.kind == "V":  # bfloat16, as PyTorch: a float divisor joins in float32; a float
            # dividend multiplies the reciprocal (Tensor.__rtruediv__), rounded in between
            if a is None and x.__class__ is _float:
                x, y = _opmath_scalar(x), xp.true_divide(1, y, dtype=np.float32).astype(dt)
            else:
                y = _opmath_scalar(y)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = _finish_binary(xp.true_divide(x, y), dt)
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
        r = _finish_binary(_rounded_div(x, y, dt, rounding_mode), dt)
        node = node_for(DivBackward2, (a, b))
        if node is not None:
            save(node, a if b is not None and b._requires_grad else None, b)
    res = finish(node, r)
    return res if out is None else write_out(out, res, "div")


divide = true_divide = div


def floor_divide(input, other, *, out=None):
    """Division rounded toward negative infinity (no derivative, as in PyTorch)."""
    from .index_ops import _NotImplementedNode
    from ..autograd import grad_mode
    with grad_mode.no_grad():
        r = div(input, other, rounding_mode="floor")
    ins = tuple(t if isinstance(t, Tensor) else None for t in (input, other))
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
        nf = self.next_functions
        gb = None
        if nf[1][0] is not None:
            self_, other = self.saved_tensors
            gb = -g * div(self_, other, rounding_mode=self.mode)
        return (g if nf[0][0] is not None else None, gb)


FmodBackward1 = type("FmodBackward1", (RemainderBackward1,), {"__module__": __name__, "mode": "trunc"})


def _mod_node(cls0, cls1, a, b, x, y):
    if b is None:
        return node_for(cls0, (a,))
    node = node_for(cls1, (a, b))
    if node is not None and b._requires_grad:
        # only the divisor's gradient needs the operands (PyTorch saves nothing otherwise)
        save(node, a if a is not None else x, b)
    return node


def _modulus(input, other, kernel, float_fn, int_fn):
    a, b, x, y, dt = _prep(input, other)
    _not_for_bool_or_complex(dt, kernel)
    _check_int_divisor(y, dt, x)
    with np.errstate(divide="ignore", invalid="ignore"):
        return a, b, x, y, _finish_binary(on_device(float_fn if dt.kind in "fcV" else int_fn, x, y)(x, y), dt)


def remainder(input, other, *, out=None):
    """Python-style modulus (sign of the divisor)."""
    a, b, x, y, r = _modulus(input, other, "remainder_cpu", _remainder_np, np.remainder)
    if a is None:
        # a number divided by a tensor: PyTorch has no derivative for it
        from .index_ops import _NotImplementedNode
        node = node_for(_NotImplementedNode, (b,))
        if node is not None:
            node.op = "remainder"
    else:
        node = _mod_node(RemainderBackward0, RemainderBackward1, a, b, x, y)
    res = finish(node, r)
    return res if out is None else write_out(out, res, "remainder")


def fmod(input, other, *, out=None):
    """C-style modulus (sign of the dividend)."""
    a, b, x, y, r = _modulus(input, other, "fmod_cpu", np.fmod, np.fmod)
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


def positive(input):
    """``+input``: the tensor itself (refused for bool, as in PyTorch)."""
    if input._data.dtype.kind == "b":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


class PowBackward0(OpNode):
    """d(x ** c)/dx = c * x ** (c - 1); exactly zero (outside the graph) for c == 0."""

    def backward(self, g):
        if g._data.dtype.kind == "c" and not getattr(self, "_conj_pass", False):
            return _wirtinger(self, g)
        (x,) = self.saved_tensors
        c = self.exponent
        if c == 0:
            return zeros_grad(x)
        if c == 2:
            return g * (x * 2)
        return g * (pow(x, c - 1) * c)


class PowBackward1(OpNode):
    """PyTorch's pow_backward_self / pow_backward_exponent: the base's gradient is 0 where
    the exponent is 0; the exponent's is 0 where the base is 0 and the exponent >= 0 (the
    limit from positive bases), -inf-scaled where the exponent is negative."""

    def backward(self, g):
        if g._data.dtype.kind == "c" and not getattr(self, "_conj_pass", False):
            return _wirtinger(self, g)
        saved = self.saved_tensors
        x, e = saved[0], saved[1]
        nf = self.next_functions
        gx = ge = None
        from .index import where
        if nf[0][0] is not None:
            gx = where(_const(e._data == 0), 0.0, g * (e * pow(x, e - 1)))
        if nf[1][0] is not None:
            from .unary import log
            result = saved[2]
            xd = x if x._data.dtype == result._data.dtype else x.to(result.dtype)
            with np.errstate(invalid="ignore"):
                cond = (x._data == 0) & (e._data >= 0)
            ge = g * where(_const(cond), 0.0, result * log(xd))
        return gx, ge


def _log_scalar(c):
    """log of a real Python number: -inf at 0, nan below (as PyTorch's Scalar::log)."""
    import math
    return math.log(c) if c > 0 else (float("-inf") if c == 0 else float("nan"))


class PowBackward2(OpNode):
    """d(c ** x)/dx = c ** x * log(c); at c == 0, 0 where x >= 0."""

    def backward(self, g):
        if g._data.dtype.kind == "c" and not getattr(self, "_conj_pass", False):
            return _wirtinger(self, g)
        e, result = self.saved_tensors
        c = self.base
        lc = _log_scalar(c)
        if c == 0:
            from .index import where
            with np.errstate(invalid="ignore"):
                cond = e._data >= 0
            return g * where(_const(cond), 0.0, result * lc)
        return g * (result * lc)


def _const(a):
    return finish(None, arr(a))


def _wirtinger(node, g):
    from .complex_ops import wirtinger
    return wirtinger(node, g)


def _power(x, y):
    """``np.power`` through NumPy's array loop even for 0-d operands: its 0-d loop gives
    (-inf) ** 0.5 = nan where C's pow (and PyTorch) give inf."""
    xp = xp_for(x, y)
    if getattr(x, "ndim", 0) == 0 and getattr(y, "ndim", 0) == 0:
        x1 = x.reshape(1) if x.__class__ is _ndarray else x
        y1 = y.reshape(1) if y.__class__ is _ndarray else y
        if x1 is not x or y1 is not y:
            return xp.power(x1, y1).reshape(())
    if x.__class__ is _ndarray and x.ndim and getattr(y, "dtype", None) is not None and y.dtype.kind == "f":
        y = np.asarray(y)
        shape = np.broadcast_shapes(x.shape, y.shape)
        if (y.shape != shape or 0 in y.strides) and (y == 0.5).any():
            # NumPy's loop takes an exponent of 0.5 repeated along a stride-0 axis as sqrt:
            # (-inf) ** 0.5 = nan and (-0.) ** 0.5 = -0., where C's pow and PyTorch's tensor
            # exponents give inf and 0.; spread out, the exponent goes through pow
            y = np.ascontiguousarray(np.broadcast_to(y, shape))
    return xp.power(x, y)


def _int_pow(x, y):
    """Integer power with PyTorch's rule for negative exponents: 1 ** n is 1, (-1) ** n is
    +-1, anything else truncates to 0."""
    xp = xp_for(x, y)
    ya = xp.asarray(y)
    if xp is np and not (ya < 0).any():
        return xp.power(x, y)
    xa = xp.asarray(x)
    pos = xp.power(xa, xp.where(ya < 0, 0, ya).astype(ya.dtype))
    odd = (ya % 2) != 0
    neg = xp.where(xa == 1, 1, xp.where(xa == -1, xp.where(odd, -1, 1), 0))
    return xp.where(ya < 0, neg, pos)


def pow(input, exponent, *, out=None):
    """``input ** exponent`` (either may be a Python number)."""
    xp = xp_for(input, exponent)
    from ._base import save_output
    if not isinstance(input, Tensor):
        a, b, x, y, dt = _prep(input, exponent)
        _not_for_bool(dt, "pow")
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = _finish_binary(_power(x, y) if dt.kind in "fcV" else _int_pow(x, y), dt)
        node = node_for(PowBackward2, (b,))
        res = finish(node, r)
        if node is not None:
            node.base = input
            save(node, b)
            save_output(node, res)
        return res if out is None else write_out(out, res, "pow")
    if isinstance(exponent, Tensor):
        a, b, x, y, dt = _prep(input, exponent)
        _not_for_bool(dt, "pow")
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = _finish_binary(_power(x, y) if dt.kind in "fcV" else _int_pow(x, y), dt)
        node = node_for(PowBackward1, (a, b))
        res = finish(node, r)
        if node is not None:
            save(node, a, b)
            save_output(node, res)  # PyTorch keeps a saved output whatever needs it
        return res if out is None else write_out(out, res, "pow")
    a, _, x, y, dt = _prep(input, exponent)
    if dt.kind in "iu" and isinstance(exponent, int) and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # PyTorch's kernels for these exponents (their roundings and signed zeros differ
        # from pow's: (-0.) ** -0.5 is -inf there)
        if y == 2:
            r = x * x
        elif dt.kind not in "fV":
            r = xp.power(x, y)  # integral: NumPy's loops are exact
        elif y == 0.5:
            r = xp.sqrt(x)
        elif y == 3:
            r = x * x * x
        elif y == -0.5:
            r = 1 / xp.sqrt(x)
        elif y == -1:
            r = 1 / x
        elif y == -2:
            r = 1 / (x * x)
        else:
            r = _power(x, y)
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
    "__pos__": positive, "positive": positive,
}

INPLACE = {"add_": add, "sub_": sub, "subtract_": sub, "mul_": mul, "multiply_": mul, "div_": div,
           "divide_": div, "true_divide_": div, "floor_divide_": floor_divide,
           "remainder_": remainder, "fmod_": fmod, "neg_": neg, "negative_": neg, "pow_": pow,
           "__iadd__": add, "__isub__": sub, "__imul__": mul, "__itruediv__": div,
           "__ifloordiv__": floor_divide, "__imod__": remainder, "__ipow__": pow}
