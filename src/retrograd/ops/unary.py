"""Elementwise unary math. Each op is one declarative line: its NumPy forward, its
PyTorch node name, what it saves (input or output) and its backward formula."""
import math

import numpy as np

from ._base import xp_for
from .._device import special_module
from ._base import OpNode, node_for, save, save_output, finish, arr, write_out, Tensor, masked_grad, _dtype_name
from ._base import zeros_grad, quiet, node_for1
from .. import _dtype as D
from . import _accel

__all__ = []
TENSOR_METHODS = {}
INPLACE = {}

_SQRT_PI_2 = 2.0 / math.sqrt(math.pi)
_HALF = np.dtype(np.float16)


# float32 erf and the Gaussian's exp in float32 arithmetic, branch-free (both pieces are
# computed and one is selected), so that a compiled loop runs them 16 lanes to a vector:
# the NumPy reference here, operation for operation the kernels of ._accel_kernels (no fused
# multiply-adds in either), so both give the same bits.
#
# erf(x) = sign(x) * (z + z * S(z*z)) for z = |x| < 1, else sign(x) * (1 - exp(-z*z) * B(z - 2.5))
# with z clamped at 4 (where erf rounds to 1); S and B are weighted least-squares fits (S: the
# relative error of erf(z)/z - 1, 1.2e-9; B: the absolute error of erfc(z) = exp(-z*z) *
# B(z - 2.5), 2.9e-9). Checked on every float32 input (tests/test_gelu_fast.py has the
# slow exhaustive check): within 1.3144 ulp of the correctly rounded erf (3,108 of the 1.08e9
# inputs in [0, 4.5) beyond 1 ulp; torch's own float32 kernel: within 2). -0., +-1 at +-inf,
# NaN and subnormal inputs as erf.
_ERF_SMALL = (7.847262168070301e-05, -0.0008008193108253181, 0.0051880995742976665, -0.026853691786527634,
              0.1128358244895935, -0.3761262595653534, 0.12837916612625122)
_ERF_BIG = (0.0001027931211865507, 0.00020201699226163328, 0.0004935512552037835, -0.0007082499796524644,
            0.0022914207074791193, -0.008119718171656132, 0.02492334134876728, -0.07434079051017761,
            0.21080754697322845)
# exp(t) for t <= 0 (NaN and -inf too): t = n ln2 + r, |r| <= ln2/2 (n found by adding
# 1.5 * 2**23, whose rounding leaves n in the low bits: no float-to-int conversion, which
# NaN would make undefined in compiled code), exp(r) = 1 + r + r*r * q(r) with q of degree 4
# (a weighted least-squares fit: relative error 3.9e-9), times 2**n as 2**(n + 64) (exact)
# then 2**-64 (one rounding, also for a subnormal result). t is clamped at -104 (exp rounds
# to 0 below ~-103.97). Within 1.2 ulp of the correctly rounded exp.
_EXP_POLY = (0.0013748852737585945, 0.008369622490726314, 0.04166964519484474, 0.16666512533339312,
             0.4999998791325371, 1.0, 1.0)
_EXP_LOG2E, _EXP_SHIFTER = 1.4426950408889634, 12582912.0
_EXP_LN2_HI, _EXP_LN2_LO = 0.693145751953125, 1.428606765330187e-06     # (n * LN2_HI exact for |n| < 256)
# m's bits, plus this, shifted into the exponent field: 2**(n + 64)
_EXP_BIAS = 127 + 64 - 0x4B400000
_EXP_UNSCALE = 2.0 ** -64


def _exp_neg_f32(t):
    """exp of a float32 array of values <= 0, as the compiled kernels compute it."""
    xp = xp_for(t)
    f = np.float32
    t = xp.maximum(t, f(-104.0))
    m = t * f(_EXP_LOG2E)
    m += f(_EXP_SHIFTER)
    n = m - f(_EXP_SHIFTER)
    r = t - n * f(_EXP_LN2_HI)
    r -= n * f(_EXP_LN2_LO)
    p = _horner_f32(_EXP_POLY, r)
    s = m.view(np.int32)
    s += np.int32(_EXP_BIAS)
    p *= (s << 23).view(np.float32)
    p *= f(_EXP_UNSCALE)
    return p


def _horner_f32(coefs, v):
    f = np.float32
    p = v * f(coefs[0])
    for c in coefs[1:-1]:
        p += f(c)
        p *= v
    p += f(coefs[-1])
    return p


def _erf_f32(x, e=None):
    """erf of a float32 (or float16) array in float32 arithmetic (result float32). ``e``: an
    exp(-x*x) to use in its place (exact GELU passes the one its derivative needs)."""
    xp = xp_for(x)
    f = np.float32
    x = x.astype(np.float32, copy=False)
    z = xp.minimum(xp.abs(x), f(4.0))
    w = z * z
    small = _horner_f32(_ERF_SMALL, w)
    small *= z
    small += z
    big = _horner_f32(_ERF_BIG, z - f(2.5))
    big *= _exp_neg_f32(-w) if e is None else e
    big = f(1.0) - big
    return xp.copysign(xp.where(z < f(1.0), small, big), x)


def _erf_raw(x):
    if x.dtype == np.float32 or x.dtype == _HALF:
        return _erf_f32(x)
    return special_module(x).erf(x)


_BLOCK = 1 << 16


def _blockwise(fn, *arrays):
    """``fn(*arrays)`` for an elementwise ``fn``, computed on blocks of 65,536 elements: the
    same values, but each of fn's many temporaries stays cache-sized and is reused by the
    allocator, instead of being mapped and page-faulted in afresh for every NumPy pass."""
    xp = xp_for(fn, *arrays)
    if arrays[0].size <= _BLOCK:
        return fn(*arrays)
    if len(arrays) > 1:
        arrays = xp.broadcast_arrays(*arrays)
    shape = arrays[0].shape
    flats = [xp.ascontiguousarray(a).reshape(-1) for a in arrays]
    first = xp.asarray(fn(*(f[:_BLOCK] for f in flats)))
    out = xp.empty(flats[0].size, first.dtype)
    out[:_BLOCK] = first
    for i in range(_BLOCK, out.size, _BLOCK):
        out[i:i + _BLOCK] = fn(*(f[i:i + _BLOCK] for f in flats))
    return out.reshape(shape)


def _erf_np(x):
    """erf of an array: float32/float16 in float32 (result float32), others via scipy.special;
    a compiled one-pass kernel for large float32/float64 arrays where numba is installed."""
    k = _accel.usable(x)
    if k is not None:
        return _accel.erf(k, x)
    return _blockwise(_erf_raw, x)


def _erfc_np(x):
    xp = xp_for(x)
    k = _accel.usable(x)
    if k is not None:
        return _accel.erfc(k, x)
    sp = special_module(x)
    r = sp.erfc(x)  # (1 - erf(x) would lose the tail: erfc(10) ~ 2e-45)
    # (on a device, without asking the host whether any element is that far out)
    if x.dtype == np.float64 and (type(x) is not np.ndarray or (x > 26.0).any()):
        # scipy flushes erfc to 0 past 26.55; torch's reaches the subnormals (erfc(27) = 5.2e-319):
        # erfcx(x) * exp(-x*x), with exp(-x*x/2) applied twice so that it rounds only once.
        e = xp.exp(x * x * -0.5)
        r = xp.where(x > 26.0, sp.erfcx(x) * e * e, r)
    return r


def _erfinv_np(x):
    xp = xp_for(x)
    return xp.where(x == 0, x, special_module(x).erfinv(x))  # erfinv(-0.) is -0.


def _not_implemented(kernel, kinds="b"):
    """A dtype check: PyTorch has no ``kernel`` for inputs of these dtype kinds."""
    def check(dt):
        if dt.kind in kinds:
            raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype_name(dt)}\'')
    return check


# sigmoid's and tanh's gradients are ops of their own, as in PyTorch (sigmoid_backward,
# tanh_backward): their second derivatives then come out as PyTorch's, infinities included.

class SigmoidBackwardBackward0(OpNode):
    def backward(self, gg):
        g, y = self.saved_tensors
        nf = self.next_functions
        return (_sigmoid_backward(gg, y) if nf[0][0] is not None else None,
                gg * g * (y * -2 + 1) if nf[1][0] is not None else None)


class TanhBackwardBackward0(OpNode):
    def backward(self, gg):
        g, y = self.saved_tensors
        nf = self.next_functions
        return (_tanh_backward(gg, y) if nf[0][0] is not None else None,
                gg * (y * -2 * g) if nf[1][0] is not None else None)


def _elementwise_backward(cls, g, y, data):
    if data.dtype != y._data.dtype:  # half types: computed in float32, rounded once
        data = data.astype(y._data.dtype)
    node = node_for(cls, (g, y))
    if node is not None:
        save(node, g, y)
    return finish(node, arr(data))


def _opmath(a):
    """bfloat16 arrays as float32 (PyTorch's opmath type); others unchanged."""
    return a.astype(np.float32) if a.dtype.kind == "V" else a


def _sigmoid_backward(g, y):
    gd, yd = _opmath(g._data), _opmath(y._data)
    return _elementwise_backward(SigmoidBackwardBackward0, g, y, gd * (1 - yd) * yd)


def _tanh_backward(g, y):
    gd, yd = _opmath(g._data), _opmath(y._data)
    return _elementwise_backward(TanhBackwardBackward0, g, y, gd * (1 - yd * yd))


def _make_unary(name, fwd, node_name, saves, bwd, float_only=True, check=None, holomorphic=True, fwd_into=None):
    """Define op ``name``: forward ``fwd(array)``, node ``node_name`` whose backward is
    ``bwd(g, x, y)`` (x the saved input, y the saved output; unused ones are None).
    ``saves`` is what PyTorch saves ("input", "output", "both" or "none"), so that in-place
    writes are caught exactly when PyTorch catches them; ``check(dtype)`` refuses dtypes.
    ``fwd_into(array)``: the forward written over its argument where it can (True), for the
    in-place variant of an op that saves only its output."""

    def backward(self, g):
        if holomorphic and g._data.dtype.kind == "c" and not getattr(self, "_conj_pass", False):
            from .complex_ops import wirtinger
            return wirtinger(self, g)
        if saves == "input":
            (x,) = self.saved_tensors
            return bwd(g, x, None)
        if saves == "output":
            (y,) = self.saved_tensors
            return bwd(g, None, y)
        if saves == "both":
            x, y = self.saved_tensors
            return bwd(g, x, y)
        return bwd(g, None, None)

    node_cls = type(node_name, (OpNode,), {"backward": backward, "__module__": __name__})

    def op(input, *, out=None, _into=False):
        x = input._data
        k = x.dtype.kind
        if check is not None:
            check(x.dtype)
        if k in "iub" and float_only:
            x = x.astype(D._default[0].np)
        half = x.dtype == _HALF or k == "V"
        if half:  # PyTorch computes half ops (float16, bfloat16) in float32 and rounds once
            x = x.astype(np.float32)
        r = x if _into and x is input._data and fwd_into(x) else quiet(fwd, x)
        if half or (k == "f" and r.dtype != x.dtype):
            r = r.astype(input._data.dtype)
        r = arr(r)
        node = node_for1(node_cls, input)
        res = finish(node, r)
        if node is not None:
            if saves == "input" or saves == "both":
                save(node, input)
            if saves == "output" or saves == "both":
                save_output(node, res)
        return res if out is None else write_out(out, res, name)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise ``{name}``."
    op._saves_input = saves in ("input", "both")     # (apply_inplace: no snapshot of the old value needed)
    globals()[name] = op
    globals()[node_name] = node_cls
    __all__.append(name)
    TENSOR_METHODS[name] = op
    INPLACE[name + "_"] = op
    if fwd_into is not None and not op._saves_input:
        def op_(input):
            return op(input, _into=True)     # (apply_inplace then has nothing to copy back)
        op_.__name__ = op_.__qualname__ = name + "_"
        op_._saves_input = False
        INPLACE[name + "_"] = op_
    return op


_LN2, _LN10 = math.log(2.0), math.log(10.0)

# name, numpy forward, node, saves, backward(g, x, y)
_make_unary("exp", np.exp, "ExpBackward0", "output", lambda g, x, y: g * y)
_make_unary("exp2", np.exp2, "Exp2Backward0", "output", lambda g, x, y: g * y * _LN2)
_make_unary("expm1", np.expm1, "Expm1Backward0", "output", lambda g, x, y: g * (y + 1))
_make_unary("log", np.log, "LogBackward0", "input", lambda g, x, y: g / x)
_make_unary("log2", np.log2, "Log2Backward0", "input", lambda g, x, y: g / (x * _LN2))
_make_unary("log10", np.log10, "Log10Backward0", "input", lambda g, x, y: g / (x * _LN10))
_make_unary("log1p", np.log1p, "Log1PBackward0", "input", lambda g, x, y: g / (x + 1))
_make_unary("sqrt", np.sqrt, "SqrtBackward0", "output", lambda g, x, y: g / (y * 2))
_make_unary("rsqrt", lambda a: 1.0 / xp_for(a).sqrt(a), "RsqrtBackward0", "output",
            lambda g, x, y: g * -0.5 * (y * y * y))
_make_unary("sin", np.sin, "SinBackward0", "input", lambda g, x, y: g * cos(x))
_make_unary("cos", np.cos, "CosBackward0", "input", lambda g, x, y: g * -sin(x))
_make_unary("tan", np.tan, "TanBackward0", "output", lambda g, x, y: g * (y * y + 1))
_make_unary("asin", np.arcsin, "AsinBackward0", "input", lambda g, x, y: g * rsqrt(1 - x * x))
_make_unary("acos", np.arccos, "AcosBackward0", "input", lambda g, x, y: g * -rsqrt(1 - x * x))
_make_unary("atan", np.arctan, "AtanBackward0", "input", lambda g, x, y: g / (x * x + 1))
_make_unary("sinh", np.sinh, "SinhBackward0", "input", lambda g, x, y: g * cosh(x))
_make_unary("cosh", np.cosh, "CoshBackward0", "input", lambda g, x, y: g * sinh(x))
_make_unary("tanh", np.tanh, "TanhBackward0", "output", lambda g, x, y: _tanh_backward(g, y))
_make_unary("asinh", np.arcsinh, "AsinhBackward0", "input", lambda g, x, y: g * rsqrt(x * x + 1))
_make_unary("acosh", np.arccosh, "AcoshBackward0", "input", lambda g, x, y: g * rsqrt(x * x - 1))
_make_unary("atanh", np.arctanh, "AtanhBackward0", "input", lambda g, x, y: g / (1 - x * x))


def _inplace_underivable(name, node_name):
    """PyTorch records ``node_name`` for ``name_`` and its backward refuses: there is no
    derivative formula for the in-place inverse hyperbolics."""
    msg = f"the derivative for 'inplace version of {name}' is not implemented."

    def backward(self, g):
        raise NotImplementedError(msg)

    cls = type(node_name, (OpNode,), {"backward": backward, "__module__": __name__})
    op = globals()[name]

    def fn(input):
        res = op(input)
        node = node_for(cls, (input,))
        return res if node is None else finish(node, res._data)
    fn.__name__ = name
    INPLACE[name + "_"] = fn
    return fn


_inplace_underivable("asinh", "AsinhBackward1")
_inplace_underivable("acosh", "AcoshBackward1")
_inplace_underivable("atanh", "AtanhBackward1")
_make_unary("sigmoid", lambda a: _sigmoid_np(a), "SigmoidBackward0", "output",
            lambda g, x, y: _sigmoid_backward(g, y))
_make_unary("erf", _erf_np, "ErfBackward0", "input", lambda g, x, y: g * (exp(-(x * x)) * _SQRT_PI_2),
            check=_not_implemented("erf_vml_cpu", "c"))
_make_unary("erfc", _erfc_np, "ErfcBackward0", "input", lambda g, x, y: g * (exp(-(x * x)) * -_SQRT_PI_2),
            check=_not_implemented("erfc_vml_cpu", "c"))
_make_unary("erfinv", _erfinv_np, "ErfinvBackward0", "input",
            lambda g, x, y: exp(erfinv(x) * erfinv(x)) * (math.sqrt(math.pi) / 2) * g,
            check=_not_implemented("erfinv_vml_cpu", "c"))
_make_unary("reciprocal", lambda a: 1.0 / a, "ReciprocalBackward0", "output", lambda g, x, y: g * -(y * y))
def _relu_check(dt):
    if dt.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    if dt.kind == "b":
        raise RuntimeError("Boolean inputs not supported for relu")


_RELU_KERNELS = []
_RELU_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _relu_kernels(a):
    """_accel_mask where its compiled pass takes ``a`` (a large contiguous float array and
    numba present), else None."""
    if type(a) is np.ndarray and a.size >= 8192 and a.dtype in _RELU_FLOATS and a.flags.c_contiguous:
        from . import _accel
        return _accel.load(_RELU_KERNELS, "_accel_mask")
    return None


def _relu_np(a):
    # np.maximum returns its second operand on ties, PyTorch its first: relu(-0.) is -0. Large
    # contiguous float arrays take the compiled pass of _accel_mask when numba is present.
    k = _relu_kernels(a)
    if k is not None:
        r = np.empty(a.shape, a.dtype)
        k.relu(a.reshape(-1), r.reshape(-1), a.dtype.type(0))
        return r
    return xp_for(a).maximum(0, a).astype(a.dtype, copy=False)


def _relu_into(a):
    """relu over ``a`` itself where the compiled pass takes it (see _relu_np): True if done."""
    k = _relu_kernels(a)
    if k is None or not a.flags.writeable:
        return False
    k.relu_inplace(a.reshape(-1), a.dtype.type(0))
    return True


_make_unary("relu", _relu_np, "ReluBackward0", "output",
            lambda g, x, y: masked_grad(g, ~(y._data <= 0), y), float_only=False, check=_relu_check,
            fwd_into=_relu_into)
_make_unary("abs", np.abs, "AbsBackward0", "input", lambda g, x, y: g * sgn(x), float_only=False,
            check=_not_implemented("abs_cpu"), holomorphic=False)
def _sign_np(a):
    """PyTorch's sign: bool stays bool, NaN gives 0, -0.0 gives 0."""
    xp = xp_for(a)
    if a.dtype.kind == "b":
        return a.copy()
    if a.dtype.kind == "c":  # sgn: z / |z| (NaN where |z| is infinite, as PyTorch), 0 at 0
        with np.errstate(invalid="ignore", divide="ignore"):
            return xp.where(a == 0, a.dtype.type(0), a / xp.abs(a))
    r = xp.sign(a)
    if a.dtype.kind in "fV":
        r = xp.where(xp.isnan(r), 0, r).astype(a.dtype, copy=False) + 0
    return r


def _sign_check(dt):
    if dt.kind == "c":
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex numbers. "
                                  "Please use torch.sgn instead.")


def _no_complex(name, check):
    def run(dt):
        if dt.kind == "c":
            raise NotImplementedError(f"{name} is not supported for complex inputs")
        check(dt)
    return run


# Zero derivatives are zeros outside the graph (PyTorch's zeros_like(grad)): an infinite or
# NaN incoming gradient still gives 0.
_zero = lambda g, x, y: zeros_grad(g)  # noqa: E731
_make_unary("sign", _sign_np, "SignBackward0", "none", _zero, float_only=False, check=_sign_check)
_make_unary("sgn", _sign_np, "SgnBackward0", "both", lambda g, x, y: _sgn_backward(g, x, y), float_only=False,
            holomorphic=False)


def _sgn_backward(g, x, s):
    """Zero for real inputs; for complex ones (g - s Re(conj(s) g)) / |z|, 0 at z == 0."""
    if x._data.dtype.kind != "c":
        return zeros_grad(g)
    from .index import where
    from .complex_ops import conj, real
    return where(finish(None, arr(x._data == 0)), 0.0, (g - s * real(conj(s) * g)) / abs(x))
_make_unary("floor", np.floor, "FloorBackward0", "none", _zero, float_only=False,
            check=_no_complex("floor", _not_implemented("floor_vml_cpu")))
_make_unary("ceil", np.ceil, "CeilBackward0", "none", _zero, float_only=False,
            check=_no_complex("ceil", _not_implemented("ceil_vml_cpu")))
_make_unary("trunc", np.trunc, "TruncBackward0", "none", _zero, float_only=False,
            check=_no_complex("trunc", _not_implemented("trunc_vml_cpu")))
_make_unary("frac", lambda a: a - xp_for(a).trunc(a), "FracBackward0", "none", lambda g, x, y: g,
            check=_not_implemented("frac_cpu", "biuc"))


def _sigmoid_np(a):
    # PyTorch's formula: exp(-a) overflows to inf for very negative a, giving exactly 0 there
    xp = xp_for(a)
    return (1 / (1 + xp.exp(-a))).astype(a.dtype, copy=False)


class RoundBackward0(OpNode):
    def backward(self, g):
        return zeros_grad(g)


RoundBackward1 = type("RoundBackward1", (RoundBackward0,), {})


def round(input, *, decimals=0, out=None):
    """Round half to even, optionally to ``decimals`` places."""
    xp = xp_for(input, decimals)
    x = input._data
    _not_implemented("round_vml_cpu" if decimals == 0 else "round_cpu", "bc" if decimals == 0 else "biuc")(x.dtype)
    if x.dtype == _HALF:  # scaled, rounded and divided in float32, as PyTorch
        r = arr(xp.round(x.astype(np.float32), decimals).astype(_HALF))
    else:
        r = arr(xp.round(x, decimals))
    res = finish(node_for(RoundBackward0 if decimals == 0 else RoundBackward1, (input,)), r)
    return res if out is None else write_out(out, res, "round")


def square(input, *, out=None):
    """``input ** 2`` (PowBackward0, as in PyTorch)."""
    from .arithmetic import pow
    if input._data.dtype.kind == "b":
        input = input.to(D.int64)
    return pow(input, 2, out=out)


fix = trunc  # noqa: F821  (defined by _make_unary)
absolute = abs  # noqa: F821
arcsin, arccos, arctan = asin, acos, atan  # noqa: F821
arcsinh, arccosh, arctanh = asinh, acosh, atanh  # noqa: F821
__all__ += ["round", "square", "fix", "absolute", "arcsin", "arccos", "arctan", "arcsinh",
            "arccosh", "arctanh"]
TENSOR_METHODS.update(round=round, square=square, fix=fix, absolute=absolute, arcsin=arcsin,
                      arccos=arccos, arctan=arctan, arcsinh=arcsinh, arccosh=arccosh,
                      arctanh=arctanh, __abs__=abs)  # noqa: F821
INPLACE.update(round_=round, square_=square, fix_=fix, absolute_=absolute, arcsin_=arcsin, arccos_=arccos,
               arctan_=arctan, arcsinh_=INPLACE["asinh_"], arccosh_=INPLACE["acosh_"], arctanh_=INPLACE["atanh_"])
