"""Elementwise ops over several inputs: clamp/clip, maximum/minimum, fmax/fmin, lerp,
addcmul/addcdiv, atan2, hypot, xlogy. Inputs broadcast together and promote as in PyTorch;
the engine sums broadcast gradients back down to each input's shape."""
import numpy as np

from ._complex_reject import no_complex_kernel
from ._base import check_devices
from ._base import xp_for, on_device
from ._base import (OpNode, node_for, save, save_output, finish, arr, result_np_dtype, binary_operands,
                    write_out, Tensor, _SCALARS, masked_grad, zeros_grad)
from .. import _dtype as D

__all__ = ["clamp", "clip", "clamp_min", "clamp_max", "maximum", "minimum", "fmax", "fmin", "lerp",
           "addcmul", "addcdiv", "atan2", "arctan2", "hypot", "xlogy", "logaddexp", "logaddexp2", "copysign"]


def _const(a):
    return finish(None, arr(a))


def _mask(g, m, name="WhereBackward0"):
    """``g`` where ``m`` holds, else 0 (an infinite or NaN ``g`` gives 0 too, as in PyTorch)."""
    xp = xp_for(g, m)
    m = xp.asarray(m)
    if m.shape != g._data.shape:
        m = xp.broadcast_to(m, np.broadcast_shapes(m.shape, g._data.shape))
    return masked_grad(g, m, None, name)


def _data(v):
    return v._data if isinstance(v, Tensor) else v


def _bshape(*ts):
    """The broadcast shape of the tensors' shapes, with PyTorch's error (and its device rule)."""
    check_devices(*ts)
    shape = ()
    for t in ts:
        if not isinstance(t, Tensor):
            continue
        s = t._data.shape
        n = max(len(shape), len(s))
        a = (1,) * (n - len(shape)) + shape
        b = (1,) * (n - len(s)) + s
        out = []
        for i, (p, q) in enumerate(zip(a, b)):
            if p != q and p != 1 and q != 1:
                raise RuntimeError(f"The size of tensor a ({p}) must match the size of tensor b ({q}) at "
                                   f"non-singleton dimension {i}")
            out.append(q if p == 1 else p)
        shape = tuple(out)
    return shape


def _as(v, dt):
    """Operand ``v`` (tensor or Python number) as an array/number of dtype ``dt``."""
    if isinstance(v, Tensor):
        d = v._data
        return d if d.dtype == dt else d.astype(dt)
    if dt.kind in "iub" and v is not None:
        # wraps around like PyTorch's cast of a bound; a NumPy scalar meets arrays of any device
        return np.array(v).astype(dt)[()]
    return v


def _float_dt(dt):
    return dt if dt.kind in "fcV" else D._default[0].np


def _out(node, r, dt, out, name):
    res = finish(node, arr(r.astype(dt, copy=False) if hasattr(r, "astype") else np.asarray(r, dt)))
    return res if out is None else write_out(out, res, name)


# *** clamp ***

def _in_dtype(dt, *ts):
    """The saved operands' arrays in the forward's promoted dtype: the backward's masks compare
    what the forward compared (a float64 bound equal to a float32 input after rounding is a tie)."""
    return tuple(None if t is None else t._data.astype(dt, copy=False) for t in ts)


class ClampBackward1(OpNode):
    """Scalar bounds: the gradient passes where min <= x <= max."""

    def backward(self, g):
        xp = xp_for(g)
        (x,) = self.saved_tensors
        a = x._data
        with np.errstate(invalid="ignore"):
            m = xp.ones(a.shape, bool)
            if self.min is not None:
                m &= a >= self.min
            if self.max is not None:
                m &= a <= self.max
        return _mask(g, m)


class ClampMinBackward0(ClampBackward1):
    pass


class ClampMaxBackward0(ClampBackward1):
    pass


class ClampBackward0(OpNode):
    """Tensor bounds: x gets the gradient inside the bounds, a bound where it is active."""

    def backward(self, g):
        xp = xp_for(g)
        x, mn, mx = self.saved_tensors
        a, lo, hi = _in_dtype(self.dt, x, mn, mx)
        nf = self.next_functions
        with np.errstate(invalid="ignore"):
            inside = xp.ones(a.shape, bool)
            if lo is not None:
                inside = inside & (a >= lo)
            if hi is not None:
                inside = inside & (a <= hi)
            gx = _mask(g, inside) if nf[0][0] is not None else None
            gmin = gmax = None
            if lo is not None and hi is not None:
                if nf[1][0] is not None:
                    gmin = _mask(g, (a < lo) & (lo < hi))
                if nf[2][0] is not None:
                    gmax = _mask(g, (a > hi) | (hi < lo))
            elif lo is not None and nf[1][0] is not None:
                gmin = _mask(g, a < lo)
            elif hi is not None and nf[2][0] is not None:
                gmax = _mask(g, a > hi)
        return gx, gmin, gmax


class ClampMinBackward1(ClampBackward0):
    def backward(self, g):
        gx, gmin, _ = ClampBackward0.backward(self, g)
        return gx, gmin


class ClampMaxBackward1(OpNode):
    def backward(self, g):
        x, mx = self.saved_tensors
        a, hi = _in_dtype(self.dt, x, mx)
        nf = self.next_functions
        with np.errstate(invalid="ignore"):
            gx = _mask(g, a <= hi) if nf[0][0] is not None else None
            gmax = _mask(g, a > hi) if nf[1][0] is not None else None
        return gx, gmax


_PLAIN = (int, float, type(None))


def _scalar_bound(v):
    if isinstance(v, Tensor):
        return v
    if v is None or isinstance(v, _SCALARS) or isinstance(v, np.generic):
        return v
    raise TypeError(f"clamp(): argument 'min' must be Number, not {type(v).__name__}")


def _clamp(input, min, max, out, name, scalar_cls):
    check_devices(input, min, max)
    xp = xp_for(input, min, max)
    if input._data.dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    min, max = _scalar_bound(min), _scalar_bound(max)
    tensor_form = isinstance(min, Tensor) or isinstance(max, Tensor)
    if tensor_form:
        from .._creation import tensor as _tensor
        if min is not None and not isinstance(min, Tensor):
            min = _tensor(min)
        if max is not None and not isinstance(max, Tensor):
            max = _tensor(max)
        _bshape(input, min, max)
        if name == "clamp" and min is not None and max is not None and \
                result_np_dtype(input, min, max).kind == "b":
            raise NotImplementedError("\"clamp_cpu\" not implemented for 'Bool'")
    if not tensor_form and input._data.dtype.kind in "fV" and type(min) in _PLAIN and type(max) in _PLAIN:
        dt = input._data.dtype  # a float tensor with Python-number bounds keeps its dtype
    else:
        dt = result_np_dtype(input, min, max)
    if dt.kind == "b" and not tensor_form:
        kernel = "clamp_scalar_cpu" if min is not None and max is not None else (
            "clamp_min_scalar_cpu" if min is not None else "clamp_max_scalar_cpu")
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    a = _as(input, dt)
    r = a
    if min is not None:
        r = xp.maximum(_as(min, dt), r)  # ties keep the input (its signed zero), as in PyTorch
    if max is not None:
        r = xp.minimum(_as(max, dt), r)
    if r is a:
        r = a.copy()
    if not tensor_form:
        node = node_for(scalar_cls, (input,))
        if node is not None:
            node.min, node.max = min, max
            save(node, input)
        return _out(node, r, dt, out, name)
    if name == "clamp_min":
        node = node_for(ClampMinBackward1, (input, min))
        if node is not None:
            save(node, input, min, None)
    elif name == "clamp_max":
        node = node_for(ClampMaxBackward1, (input, max))
        if node is not None:
            save(node, input, max)
    else:
        node = node_for(ClampBackward0, (input, min, max))
        if node is not None:
            save(node, input, min, max)
    if node is not None:
        node.dt = dt
    return _out(node, r, dt, out, name)


def clamp(input, min=None, max=None, *, out=None):
    """Limit elements to [min, max] (numbers or tensors; min > max gives max)."""
    return _clamp(input, min, max, out, "clamp", ClampBackward1)


clip = clamp


def clamp_min(input, min, *, out=None):
    """Limit elements from below."""
    return _clamp(input, min, None, out, "clamp_min", ClampMinBackward0)


def clamp_max(input, max, *, out=None):
    """Limit elements from above."""
    return _clamp(input, None, max, out, "clamp_max", ClampMaxBackward0)


# *** maximum / minimum / fmax / fmin ***

def _need_tensor(name, other):
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")


class MaximumBackward0(OpNode):
    """Ties share the gradient equally; NaN comparisons pass it to both sides."""

    def backward(self, g):
        xp = xp_for(g)
        x, y = self.saved_tensors
        a, b = _in_dtype(self.dt, x, y)
        nf = self.next_functions
        dt = g._data.dtype
        big = self.sign > 0
        with np.errstate(invalid="ignore"):
            share = xp.where(a == b, dt.type(0.5), dt.type(1))
            lo_a = (a < b) if big else (a > b)
            lo_b = (a > b) if big else (a < b)
            ga = masked_grad(g, xp.where(lo_a, dt.type(0), share), None, "MaskedFillBackward0") \
                if nf[0][0] is not None else None
            gb = masked_grad(g, xp.where(lo_b, dt.type(0), share), None, "MaskedFillBackward0") \
                if nf[1][0] is not None else None
        return ga, gb


class MinimumBackward0(MaximumBackward0):
    pass


class FmaxBackward0(OpNode):
    def backward(self, g):
        xp = xp_for(g)
        x, y = self.saved_tensors
        a, b = _in_dtype(self.dt, x, y)
        nf = self.next_functions
        with np.errstate(invalid="ignore"):
            m = ((a >= b) if self.sign > 0 else (a <= b)) | xp.isnan(b)
        return (_mask(g, m, "MaskedFillBackward0") if nf[0][0] is not None else None,
                _mask(g, ~m, "MaskedFillBackward0") if nf[1][0] is not None else None)


class FminBackward0(FmaxBackward0):
    pass


def _extremum(name, np_fn, cls, sign, swap=False):
    def op(input, other, *, out=None):
        _need_tensor(name, other)
        a, b, x, y, dt = binary_operands(input, other)
        _bshape(input, other)
        if dt.kind == "c":
            raise RuntimeError(f"{name} not implemented for complex tensors.")
        with np.errstate(invalid="ignore"):
            # NumPy returns the second operand on ties, PyTorch's scalar kernel the first (its
            # vectorized one, used on long tensors, the second): -0. against 0. shows it
            f = on_device(np_fn, input, other)
            r = f(_as(other, dt), _as(input, dt)) if swap else f(_as(input, dt), _as(other, dt))
        node = node_for(cls, (input, other))
        if node is not None:
            node.sign, node.dt = sign, dt
            save(node, input, other)
        return _out(node, r, dt, out, name)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"Elementwise {name} of two tensors"
                  + (" (NaN propagates)." if name in ("maximum", "minimum") else " (NaN is ignored)."))
    return op


maximum = _extremum("maximum", np.maximum, MaximumBackward0, 1, swap=True)
minimum = _extremum("minimum", np.minimum, MinimumBackward0, -1, swap=True)
fmax = _extremum("fmax", np.fmax, FmaxBackward0, 1)
fmin = _extremum("fmin", np.fmin, FminBackward0, -1)


# *** lerp ***

_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
            "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


class LerpBackward0(OpNode):
    def backward(self, g):
        w = self.weight
        nf = self.next_functions
        return (g * (1 - w) if nf[0][0] is not None else None,
                g * w if nf[1][0] is not None else None)


class LerpBackward1(OpNode):
    def backward(self, g):
        s, e, w = self.saved_tensors
        nf = self.next_functions
        gw = None
        if nf[2][0] is not None:
            gw = g * (e - s)
            if gw._data.dtype != w._data.dtype:
                gw = gw.to(w.dtype)
        return (g * (1 - w) if nf[0][0] is not None else None,
                g * w if nf[1][0] is not None else None, gw)


def _lerp_np(s, e, w):
    xp = xp_for(s, e, w)
    with np.errstate(invalid="ignore", over="ignore"):
        d = e - s
        return xp.where(xp.abs(w) < 0.5, s + w * d, e - d * (1 - w))


def lerp(input, end, weight, *, out=None):
    """``input + weight * (end - input)`` (weight a number or a tensor)."""
    check_devices(input, end, weight)
    xp = xp_for(input, end, weight)
    x = input._data
    if not isinstance(end, Tensor):
        raise TypeError(f"lerp(): argument 'end' (position 2) must be Tensor, not {type(end).__name__}")
    if end._data.dtype != x.dtype:
        raise RuntimeError(f"expected dtype {_C_NAMES[x.dtype.name]} for `end` but got dtype "
                           f"{_C_NAMES[end._data.dtype.name]}")
    if x.dtype.kind not in "fcV":
        raise NotImplementedError(f"\"lerp_kernel_scalar\" not implemented for '{_dtype_word(x.dtype)}'")
    if isinstance(weight, Tensor):
        wd = weight._data
        if wd.dtype != x.dtype:
            if wd.ndim:  # a 0-d weight is a number to PyTorch's type checks
                raise RuntimeError(f"expected dtype {_C_NAMES[x.dtype.name]} for `weight` but got dtype "
                                   f"{_C_NAMES[wd.dtype.name]}")
            wd = wd.astype(x.dtype)
        _bshape(input, end, weight)
        r = _lerp_np(x, end._data, wd)
        node = node_for(LerpBackward1, (input, end, weight))
        if node is not None:
            # the ends are needed only for the weight's gradient (PyTorch saves them only then)
            wg = weight._requires_grad
            save(node, input if wg else None, end if wg else None, weight)
        return _out(node, r, x.dtype, out, "lerp")
    _bshape(input, end)
    w = weight.item() if isinstance(weight, np.generic) else weight
    r = _lerp_np(x, end._data, xp.asarray(w, x.dtype))
    node = node_for(LerpBackward0, (input, end))
    if node is not None:
        node.weight = w
    return _out(node, r, x.dtype, out, "lerp")


def _dtype_word(npdt):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}.get(npdt.name, npdt.name)


# *** addcmul / addcdiv ***

class AddcmulBackward0(OpNode):
    def backward(self, g):
        t1, t2 = self.saved_tensors
        v = self.value
        nf = self.next_functions
        return (g if nf[0][0] is not None else None,
                g * (t2 * v) if nf[1][0] is not None else None,
                g * (t1 * v) if nf[2][0] is not None else None)


class AddcdivBackward0(OpNode):
    def backward(self, g):
        t1, t2 = self.saved_tensors
        v = self.value
        nf = self.next_functions
        return (g if nf[0][0] is not None else None,
                g * (v / t2) if nf[1][0] is not None else None,
                -g * (v * t1 / (t2 * t2)) if nf[2][0] is not None else None)


def _addc(name, cls, combine):
    def op(input, tensor1, tensor2, *, value=1, out=None):
        for n, t in (("input", input), ("tensor1", tensor1), ("tensor2", tensor2)):
            if not isinstance(t, Tensor):
                raise TypeError(f"{name}(): argument '{n}' must be Tensor, not {type(t).__name__}")
        if isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument 'value' must be Number, not Tensor")
        dt = result_np_dtype(input, tensor1, tensor2)
        if name == "addcdiv" and tensor1._data.dtype.kind in "biu" and tensor2._data.dtype.kind in "biu":
            raise RuntimeError(
                "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will "
                "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
                "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer "
                "inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior "
                "is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")
        if dt.kind == "b":
            raise NotImplementedError(f"\"{name}_cpu_out\" not implemented for 'Bool'")
        if dt.kind not in "fcV" and isinstance(value, float):
            value = int(value)  # PyTorch casts the value to the integral result type
        _bshape(input, tensor1, tensor2)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = _as(input, dt) + value * combine(_as(tensor1, dt), _as(tensor2, dt))
        node = node_for(cls, (input, tensor1, tensor2))
        if node is not None:
            node.value = value
            # what each gradient needs, as PyTorch saves it: tensor1's gradient uses tensor2;
            # tensor2's uses tensor1 (and, for addcdiv, tensor2 too)
            g1, g2 = tensor1._requires_grad, tensor2._requires_grad
            save(node, tensor1 if g2 else None, tensor2 if g1 or (g2 and name == "addcdiv") else None)
        return _out(node, r, dt, out, name)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``input + value * tensor1 {'*' if name == 'addcmul' else '/'} tensor2``."
    return op


addcmul = _addc("addcmul", AddcmulBackward0, lambda a, b: a * b)
addcdiv = _addc("addcdiv", AddcdivBackward0, lambda a, b: a / b)


# *** atan2 / hypot / xlogy ***

class Atan2Backward0(OpNode):
    """PyTorch's atan2_backward: 1 / (x^2 + y^2), taken as 0 where that is 0 (the origin)."""

    def backward(self, g):
        from .index import where
        x, y = self.saved_tensors
        nf = self.next_functions
        d = x * x + y * y
        recip = where(_const(d._data == 0), 0.0, d.reciprocal())
        return (g * y * recip if nf[0][0] is not None else None,
                g * -x * recip if nf[1][0] is not None else None)


class HypotBackward0(OpNode):
    def backward(self, g):
        x, y, r = self.saved_tensors  # x, y saved only for their own gradient
        nf = self.next_functions
        return (g * x / r if nf[0][0] is not None else None,
                g * y / r if nf[1][0] is not None else None)


def _float_binary(name, np_fn, cls, save_result):
    def op(input, other, *, out=None):
        xp = xp_for(input, other)
        _need_tensor(name, other)
        dt = result_np_dtype(input, other)
        no_complex_kernel(dt, name + "_cpu")
        if name == "hypot" and dt.kind not in "fcV":
            raise NotImplementedError(f"\"hypot_cpu\" not implemented for '{_dtype_word(dt)}'")
        dt = _float_dt(dt)
        _bshape(input, other)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = on_device(np_fn, input, other)(_as(input, dt), _as(other, dt))
        node = node_for(cls, (input, other))
        res = finish(node, arr(xp.asarray(r, dt)))
        if node is not None:
            if save_result:  # hypot: each operand is used by its own gradient only
                save(node, input if input._requires_grad else None, other if other._requires_grad else None)
                save_output(node, res)
            else:
                save(node, input, other)
        return res if out is None else write_out(out, res, name)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise ``{name}(input, other)``."
    return op


atan2 = _float_binary("atan2", np.arctan2, Atan2Backward0, False)
arctan2 = atan2
hypot = _float_binary("hypot", np.hypot, HypotBackward0, True)


class LogaddexpBackward0(OpNode):
    def backward(self, g):
        x, y = self.saved_tensors
        nf = self.next_functions
        if self.base2:
            return (g / (1 + 2 ** (y - x)) if nf[0][0] is not None else None,
                    g / (1 + 2 ** (x - y)) if nf[1][0] is not None else None)
        return (g / (1 + (y - x).exp()) if nf[0][0] is not None else None,
                g / (1 + (x - y).exp()) if nf[1][0] is not None else None)


Logaddexp2Backward0 = type("Logaddexp2Backward0", (LogaddexpBackward0,), {})


def _logaddexp(name, np_fn, cls):
    def op(input, other, *, out=None):
        _need_tensor(name, other)
        dt = result_np_dtype(input, other)
        if dt.kind not in "fcV":
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtype_word(dt)}'")
        if name == "logaddexp2":
            no_complex_kernel(dt, "logaddexp2_cpu")
        _bshape(input, other)
        with np.errstate(over="ignore", invalid="ignore"):
            r = on_device(np_fn, input, other)(_as(input, dt), _as(other, dt))
        node = node_for(cls, (input, other))
        if node is not None:
            node.base2 = name == "logaddexp2"
            save(node, input, other)
        return _out(node, r, dt, out, name)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``log{'2' if name.endswith('2') else ''}({'2**' if name.endswith('2') else 'exp('}input) + ...)`` " \
                 "computed stably."
    return op


logaddexp = _logaddexp("logaddexp", np.logaddexp, LogaddexpBackward0)
logaddexp2 = _logaddexp("logaddexp2", np.logaddexp2, Logaddexp2Backward0)


class CopysignBackward0(OpNode):
    """d/dx copysign(x, y) = result / x (0 where x is 0); ``other`` gets a zero gradient."""

    def backward(self, g):
        from .index import where
        saved = self.saved_tensors  # all unpacked (and version-checked) first, as in PyTorch
        nf = self.next_functions
        gx = None
        if nf[0][0] is not None:
            x, r = saved
            gx = g * where(_const(x._data == 0), 0.0, r / x)
        if len(nf) == 1:
            return gx
        return gx, (zeros_grad(g, self.other_shape) if nf[1][0] is not None else None)


CopysignBackward1 = type("CopysignBackward1", (CopysignBackward0,), {})


def copysign(input, other, *, out=None):
    """``input``'s magnitude with ``other``'s sign (elementwise)."""
    xp = xp_for(input, other)
    a, b, x, y, dt = binary_operands(input, other)
    no_complex_kernel(dt, "copysign_cpu")
    dt = _float_dt(dt)
    _bshape(a, b)
    r = xp.copysign(xp.asarray(x, dt), xp.asarray(y, dt))
    if b is not None:
        node = node_for(CopysignBackward0, (a, b))
        if node is not None:
            node.other_shape = b._data.shape
    else:
        node = node_for(CopysignBackward1, (a,))
    res = finish(node, arr(xp.asarray(r, dt)))
    if node is not None:
        save(node, a if a is not None and a._requires_grad else None)
        save_output(node, res)
    return res if out is None else write_out(out, res, "copysign")


def _xlogy_grad_x(g, x, y):
    """PyTorch's xlogy gradient for ``x``: 0 where x == 0 and y <= 0 (with a number ``y``,
    wherever x == 0 unless y > 0, so a NaN ``y`` masks too)."""
    xp = xp_for(g, x, y)
    gx = xlogy(g, y)
    with np.errstate(invalid="ignore"):
        if isinstance(y, Tensor):
            kill = (xp.asarray(_data(x)) == 0) & (xp.asarray(_data(y)) <= 0)
        elif y > 0:
            return gx
        else:
            kill = xp.asarray(_data(x)) == 0
    return _mask(gx, ~kill, "MaskedFillBackward0")


class XlogyBackward0(OpNode):
    def backward(self, g):
        x, y = self.saved_tensors
        nf = self.next_functions
        return (_xlogy_grad_x(g, x, y) if nf[0][0] is not None else None,
                g * x / y if nf[1][0] is not None else None)


class XlogyBackward1(OpNode):
    """``input`` is a number: only ``other`` gets a gradient."""

    def backward(self, g):
        x, y = self.saved_tensors
        return g * x / y


class XlogyBackward2(OpNode):
    """``other`` is a number: only ``input`` gets a gradient."""

    def backward(self, g):
        x, y = self.saved_tensors
        return _xlogy_grad_x(g, x, y)


def xlogy(input, other, *, out=None):
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    xp = xp_for(input, other)
    a, b, x, y, dt = binary_operands(input, other)
    no_complex_kernel(dt, "xlogy_cpu")
    dt = _float_dt(dt)
    _bshape(a, b)
    xa, ya = xp.asarray(x, dt), xp.asarray(y, dt)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = xp.where((xa == 0) & ~xp.isnan(ya), xp.zeros((), dt), xa * xp.log(ya))
    if a is not None and b is not None:
        node = node_for(XlogyBackward0, (a, b))
        if node is not None:
            save(node, a, b)
    elif b is not None:
        node = node_for(XlogyBackward1, (b,))
        if node is not None:
            save(node, x, b)
    else:
        node = node_for(XlogyBackward2, (a,))
        if node is not None:
            save(node, a, y)
    return _out(node, r, dt, out, "xlogy")


def _addc_inplace(name, fn):
    def method(self, tensor1, tensor2, *, value=1):
        # PyTorch checks the output's shape before the dtype
        shape = _bshape(self, tensor1, tensor2)
        if shape != tuple(self._data.shape):
            raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast "
                               f"shape {list(shape)}")
        from ._base import apply_inplace
        return apply_inplace(self, fn, tensor1, tensor2, value=value)
    method.__name__ = name
    method.__doc__ = f"In-place ``{fn.__name__}``."
    return method


INPLACE_IMPL = {"addcmul_": _addc_inplace("addcmul_", addcmul), "addcdiv_": _addc_inplace("addcdiv_", addcdiv)}
TENSOR_METHODS = {n: globals()[n] for n in __all__}
INPLACE = {"clamp_": clamp, "clip_": clip, "clamp_min_": clamp_min, "clamp_max_": clamp_max, "lerp_": lerp,
           "addcmul_": addcmul, "addcdiv_": addcdiv, "atan2_": atan2, "arctan2_": atan2, "hypot_": hypot,
           "xlogy_": xlogy, "copysign_": copysign}
