"""Elementwise numeric utilities: nan_to_num, frexp/ldexp, gcd/lcm, heaviside, nextafter,
deg2rad/rad2deg, Tensor.float_power_, and the top-level in-place functions PyTorch exposes
(``torch.sin_(x)``, ``torch.clamp_(x, ...)``, ...: each the Tensor method of that name)."""
import math

import numpy as np

from ._base import (OpNode, node_for, node_for1, save, save_output, finish, arr, write_out, Tensor, binary_operands,
                    masked_grad, zeros_grad, apply_inplace, xp_for)
from .. import _dtype as D

__all__ = ["nan_to_num", "frexp", "ldexp", "gcd", "lcm", "heaviside", "nextafter", "deg2rad", "rad2deg"]
_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
          "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
          "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _word(npdt):
    return _NAMES.get(str(npdt), str(npdt))


def _need_tensor(name, v, pos, arg):
    if not isinstance(v, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(v).__name__}")


def _const(a):
    """A constant tensor of the array ``a`` (host or device)."""
    return finish(None, arr(a))


# *** nan_to_num ***

class NanToNumBackward0(OpNode):
    def backward(self, g):
        self.saved_tensors     # (the input: for its version check, as PyTorch saves it)
        # a product, as PyTorch's formula: an infinite gradient at an inf/nan input gives nan
        return g * _const(self.finite.astype(g._data.dtype))


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """``input`` with NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by default
    the dtype's largest and lowest finite values); integer and bool tensors are copied."""
    _need_tensor("nan_to_num", input, 1, "input")
    x = input._data
    xp = xp_for(x)
    if x.dtype.kind in "iub":
        r = x.copy()
        finite = None
    else:
        def fix(a):
            fi = np.finfo(a.dtype) if a.dtype.kind != "V" else None
            big = fi.max if fi is not None else D.finfo(D.bfloat16).max
            lo = fi.min if fi is not None else D.finfo(D.bfloat16).min
            hi_v = big if posinf is None else posinf
            lo_v = lo if neginf is None else neginf
            with np.errstate(over="ignore"):
                vals = np.array([nan if nan is not None else 0.0, hi_v, lo_v]).astype(a.dtype)
            b = xp.where(xp.isnan(a), vals[0], a)
            b = xp.where(b == np.inf, vals[1], b)
            return xp.where(b == -np.inf, vals[2], b).astype(a.dtype, copy=False)
        if x.dtype.kind == "c":
            r = (fix(x.real) + 1j * fix(x.imag)).astype(x.dtype)
        else:
            r = fix(x)
        finite = xp.isfinite(x)
    node = node_for1(NanToNumBackward0, input) if finite is not None else None
    if node is not None:
        node.finite = finite
        save(node, input)
    res = finish(node, arr(r))
    return res if out is None else write_out(out, res, "nan_to_num")


# *** frexp / ldexp ***

class _Frexp(tuple):
    """``torch.return_types.frexp(mantissa=..., exponent=...)``."""
    __slots__ = ()
    __module__ = "torch.return_types"

    def __new__(cls, mantissa, exponent):
        return tuple.__new__(cls, (mantissa, exponent))

    mantissa = property(lambda self: self[0])
    exponent = property(lambda self: self[1])

    def __repr__(self):
        return f"torch.return_types.frexp(\nmantissa={self[0]!r},\nexponent={self[1]!r})"

    def __reduce__(self):
        return (type(self), (self[0], self[1]))


_Frexp.__name__ = _Frexp.__qualname__ = "frexp"


class FrexpBackward0(OpNode):
    def backward(self, g):
        e = self.exponent.astype(g._data.dtype)
        return g / _const(xp_for(e).exp2(e))


def frexp(input, *, out=None):
    """(mantissa, exponent) with ``input = mantissa * 2**exponent``, |mantissa| in [0.5, 1)."""
    _need_tensor("frexp", input, 1, "input")
    x = input._data
    if x.dtype.kind not in "fV":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    xc = x.astype(np.float32) if x.dtype.kind == "V" else x
    m, e = xp_for(xc).frexp(xc)
    m = m.astype(x.dtype)
    e = e.astype(np.int32)
    node = node_for1(FrexpBackward0, input)
    if node is not None:
        node.exponent = e
    res = _Frexp(finish(node, arr(m)), finish(None, arr(e)))
    if out is not None:
        write_out(out[0], res[0], "frexp")
        write_out(out[1], res[1], "frexp")
        return _Frexp(out[0], out[1])
    return res


class LdexpBackward0(OpNode):
    def backward(self, g):
        # other and the result are saved (as PyTorch: writing either in place afterwards is an error)
        e, result = self.saved_tensors
        nf = self.next_functions
        from .unary import exp2
        return (g * exp2(e) if nf[0][0] is not None else None,
                g * result * math.log(2.0) if nf[1][0] is not None else None)


def ldexp(input, other, *, out=None):
    """``input * 2**other``."""
    _need_tensor("ldexp", input, 1, "input")
    _need_tensor("ldexp", other, 2, "other")
    a, b, x, y, dt = binary_operands(input, other)
    if dt.kind in "iub":
        dt = D._default[0].np
    from .pointwise import _bshape
    _bshape(a, b)
    xp = xp_for(x, y)
    with np.errstate(all="ignore"):
        r = (xp.asarray(x, dt) * xp.exp2(xp.asarray(y, dt))).astype(dt, copy=False)
    node = node_for(LdexpBackward0, (a, b))
    res = finish(node, arr(r))
    if node is not None:
        save(node, b)
        save_output(node, res)
    return res if out is None else write_out(out, res, "ldexp")


# *** integer and step functions (no derivative) ***

def _int_binary(name, np_fn):
    def op(input, other, *, out=None):
        _need_tensor(name, input, 1, "input")
        _need_tensor(name, other, 2, "other")
        a, b, x, y, dt = binary_operands(input, other)
        if dt.kind not in "iu":
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_word(dt)}\'')
        from .pointwise import _bshape
        _bshape(a, b)
        xp = xp_for(x, y)
        fn = getattr(xp, np_fn.__name__)
        res = finish(None, arr(fn(xp.asarray(x, dt), xp.asarray(y, dt)).astype(dt, copy=False)))
        return res if out is None else write_out(out, res, name)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise ``{name}`` of integer tensors (non-negative results)."
    return op


gcd = _int_binary("gcd", np.gcd)
lcm = _int_binary("lcm", np.lcm)


_HeavisideNode = type("NotImplemented", (OpNode,), {
    "backward": lambda self, g: (_ for _ in ()).throw(
        RuntimeError("derivative for aten::heaviside is not implemented"))})


def heaviside(input, values, *, out=None):
    """0 where ``input < 0``, ``values`` where ``input == 0``, 1 where ``input > 0`` (NaN: 0)."""
    _need_tensor("heaviside", input, 1, "input")
    _need_tensor("heaviside", values, 2, "values")
    x, v = input._data, values._data
    if x.dtype != v.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    if x.dtype.kind == "c":
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    from .pointwise import _bshape
    _bshape(input, values)
    with np.errstate(invalid="ignore"):
        r = xp_for(x, v).where(x == 0, v, x > 0).astype(x.dtype)
    node = node_for(_HeavisideNode, (input, values))
    res = finish(node, arr(r))
    return res if out is None else write_out(out, res, "heaviside")


class NextafterBackward0(OpNode):
    def backward(self, g):
        # (both inputs saved, as PyTorch saves them: an in-place change to either is caught)
        a, b = self.saved_tensors
        nf = self.next_functions
        ga = None
        if nf[0][0] is not None:
            xp = xp_for(a._data, b._data)
            with np.errstate(invalid="ignore"):
                moved = xp.broadcast_to(xp.asarray(a._data, self.dt) != xp.asarray(b._data, self.dt), self.shape)
            ga = masked_grad(g, moved, None, "WhereBackward0")
        return ga, (zeros_grad(g, tuple(b.shape)) if nf[1][0] is not None else None)


def nextafter(input, other, *, out=None):
    """The next floating-point value after ``input`` towards ``other``."""
    _need_tensor("nextafter", input, 1, "input")
    _need_tensor("nextafter", other, 2, "other")
    a, b, x, y, dt = binary_operands(input, other)
    if dt.kind not in "fV":
        raise NotImplementedError(f'"nextafter_cpu" not implemented for \'{_word(dt)}\'')
    from .pointwise import _bshape
    _bshape(a, b)
    xp = xp_for(x, y)
    xa, ya = xp.asarray(x, dt), xp.asarray(y, dt)
    r = xp.nextafter(xa, ya)
    node = node_for(NextafterBackward0, (a, b))
    if node is not None:
        node.dt, node.shape = dt, r.shape
        save(node, a, b)
    res = finish(node, arr(r))
    return res if out is None else write_out(out, res, "nextafter")


# *** angle conversions ***

def _angle(name, node_name, factor):
    def backward(self, g):
        return g * factor
    cls = type(node_name, (OpNode,), {"backward": backward, "__module__": __name__})
    globals()[node_name] = cls

    def op(input, *, out=None):
        _need_tensor(name, input, 1, "input")
        x = input._data
        if x.dtype.kind == "c":
            raise RuntimeError(f"{name} is not supported for complex tensors.")
        if x.dtype.kind in "iub":
            x = x.astype(D._default[0].np)
        r = (x.astype(np.float32) * np.float32(factor)).astype(x.dtype) if x.dtype.kind == "V" or \
            x.dtype == np.float16 else x * x.dtype.type(factor)
        res = finish(node_for1(cls, input), arr(r))
        return res if out is None else write_out(out, res, name)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise ``{name}``."
    return op


deg2rad = _angle("deg2rad", "Deg2RadBackward0", math.pi / 180.0)
rad2deg = _angle("rad2deg", "Rad2DegBackward0", 180.0 / math.pi)


def _float_power_(self, exponent):
    from .arithmetic import float_power
    want = np.dtype(np.complex128) if (self._data.dtype.kind == "c" or (
        isinstance(exponent, Tensor) and exponent._data.dtype.kind == "c") or isinstance(exponent, complex)) \
        else np.dtype(np.float64)
    if self._data.dtype != want:
        raise RuntimeError(f"the base given to float_power_ has dtype {_word(self._data.dtype)} but the operation's "
                           f"result requires dtype {_word(want)}")
    return apply_inplace(self, float_power, exponent)


_float_power_.__name__ = "float_power_"

TENSOR_METHODS = {n: globals()[n] for n in __all__}
INPLACE = {"nan_to_num_": nan_to_num, "ldexp_": ldexp, "gcd_": gcd, "lcm_": lcm, "heaviside_": heaviside,
           "nextafter_": nextafter, "deg2rad_": deg2rad, "rad2deg_": rad2deg, "float_power_": None}
INPLACE_IMPL = {"float_power_": _float_power_}


def _comparison_aliases():
    # greater_, less_, ...: PyTorch's other names of gt_, lt_, ... (the same in-place comparison)
    from . import compare
    for alias, name in (("greater_", "gt_"), ("greater_equal_", "ge_"), ("less_", "lt_"), ("less_equal_", "le_"),
                        ("not_equal_", "ne_")):
        INPLACE[alias] = compare.INPLACE[name]


_comparison_aliases()


# *** top-level in-place functions: torch.<name>_(input, ...) is input.<name>_(...) ***

_TOP_INPLACE = ("abs_ acos_ acosh_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ atan_ atanh_ "
                "ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ erf_ erfc_ exp2_ exp_ expm1_ fill_ "
                "fix_ floor_ frac_ gcd_ i0_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ "
                "rad2deg_ reciprocal_ relu_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ "
                "trunc_ xlogy_ zero_ addmv_ conj_physical_ detach_ index_put_").split()


def _top_inplace(name):
    def fn(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``input.{name}(...)``: in place, returns ``input``."
    return fn


for _n in _TOP_INPLACE:
    globals()[_n] = _top_inplace(_n)
__all__ += _TOP_INPLACE


def alpha_dropout_(input, p=0.5, train=True):
    """In-place ``alpha_dropout``."""
    from .activation import alpha_dropout
    return alpha_dropout(input, p, train, True)


def feature_alpha_dropout_(input, p=0.5, train=True):
    """In-place ``feature_alpha_dropout``."""
    from .activation import feature_alpha_dropout
    return feature_alpha_dropout(input, p, train, True)


__all__ += ["alpha_dropout_", "feature_alpha_dropout_"]
