"""Op table entries: elementwise unary, binary arithmetic, pointwise, comparison and dtype/copy
methods of Tensor."""
import numpy as np

from .core import OpInfo, Sample, method

OPS = []
INF, NAN = np.inf, np.nan


def _add(name, op, samples, **kw):
    OPS.append(OpInfo(name, op, samples, **kw))


# ------------------------------------------------------------------------------------ unary

def unary(name, low=-2.0, high=2.0, degenerate=(), inplace=True, aliases=(), **kw):
    """Tensor.<name> and each alias, on values in [low, high) plus degenerate points."""
    def samples(mk):
        yield Sample(mk.rand(2, 3, low=low, high=high))
        yield Sample(mk.rand(4, low=low, high=high))
        if degenerate:
            yield Sample(mk.arr(degenerate), kind="degenerate")
    for n in (name,) + tuple(aliases):
        _add(n, method(n), samples, elementwise=True,
             inplace=(n + "_") if inplace and not n.startswith("__") else None, **kw)


_ROUND = (-2.5, -1.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 1.5, 2.5, 1e300)
unary("exp", degenerate=(-1000.0, 0.0, 710.0))
unary("exp2", degenerate=(-2000.0, 0.0, 1100.0))
unary("expm1", degenerate=(-1000.0, -0.0, 710.0))
unary("log", 0.2, 3.0, degenerate=(0.0, -0.0, 1.0, -1.0))
unary("log2", 0.2, 3.0, degenerate=(0.0, 1.0, -1.0))
unary("log10", 0.2, 3.0, degenerate=(0.0, 1.0, -1.0))
unary("log1p", -0.8, 2.0, degenerate=(-1.0, 0.0, -2.0))
unary("sqrt", 0.2, 3.0, degenerate=(0.0, -0.0, -1.0, 4.0))
unary("rsqrt", 0.2, 3.0, degenerate=(0.0, -0.0, -1.0, 4.0))
unary("sin")
unary("cos")
unary("tan", -1.2, 1.2)
unary("asin", -0.9, 0.9, degenerate=(-1.0, 1.0, 0.0, 1.5), aliases=("arcsin",))
unary("acos", -0.9, 0.9, degenerate=(-1.0, 1.0, 0.0, 1.5), aliases=("arccos",))
unary("atan", aliases=("arctan",))
unary("sinh")
unary("cosh")
unary("tanh", degenerate=(-30.0, 0.0, 30.0))
unary("asinh", aliases=("arcsinh",))
unary("acosh", 1.1, 3.0, degenerate=(1.0, 0.5, 2.0), aliases=("arccosh",))
unary("atanh", -0.9, 0.9, degenerate=(-1.0, 1.0, 0.0, 2.0), aliases=("arctanh",))
unary("sigmoid", degenerate=(-800.0, 0.0, 800.0))
unary("erf", degenerate=(-30.0, 0.0, 30.0))
unary("erfc", degenerate=(-30.0, 0.0, 30.0))
unary("erfinv", -0.9, 0.9, degenerate=(-1.0, 1.0, 0.0, 1.5))
unary("reciprocal", 0.3, 2.0, degenerate=(0.0, -0.0, 1.0, -2.0))
unary("abs", degenerate=(0.0, -0.0, 1.0, -1.0), aliases=("absolute", "__abs__"))
unary("neg", aliases=("negative", "__neg__"))
unary("square", degenerate=(0.0, -1.0, 1e200))
unary("sign", degenerate=(0.0, -0.0, 1.0, -1.0))
unary("sgn", degenerate=(0.0, -0.0, 1.0, -1.0))
unary("relu", degenerate=(0.0, -0.0, 1.0, -1.0))
unary("floor", degenerate=_ROUND)
unary("ceil", degenerate=_ROUND)
unary("round", degenerate=_ROUND)
unary("trunc", degenerate=_ROUND, aliases=("fix",))
unary("frac", degenerate=_ROUND)
for n in ("__pos__", "positive"):  # the tensor itself (bool refused)
    _add(n, method(n), lambda mk: [Sample(mk.rand(2, 3))], elementwise=True, view=True)
_add("round(decimals)", lambda t, x, **k: x.round(**k),
     lambda mk: [Sample(mk.rand(2, 3, low=-20, high=20), decimals=1),
                 Sample(mk.arr([0.25, 0.35, -1.45, 12.5]), decimals=1, kind="degenerate"),
                 Sample(mk.arr([125.0, 135.0, -1450.0]), decimals=-1, kind="degenerate")])


# ------------------------------------------------------------------------ binary arithmetic

def binary(name, other="any", degenerate=(), scalars=(1.5, -2), grad=True, inplace=True, kwargs=(),
           low=-2.0, high=2.0, op=None, extra=None, scalar_grad=True, **kw):
    """Tensor.<name>(other): tensor-tensor (broadcast), tensor-scalar and degenerate pairs.
    ``other``: "any" or "nonzero" (divisors kept away from 0) or "pos". ``extra(mk)`` yields
    more samples; ``scalar_grad=False``: torch has no derivative with a number operand."""
    def other_arr(mk, *shape):
        if other == "nonzero":
            return mk.rand(*shape, low=0.4, high=2.0) * np.where(mk.rand(*shape) > 0, 1, -1)
        if other == "pos":
            return mk.pos(*shape)
        return mk.rand(*shape)

    def samples(mk):
        yield Sample(mk.rand(2, 3, low=low, high=high), other_arr(mk, 2, 3))
        for sc in scalars:
            yield Sample(mk.rand(2, 3, low=low, high=high), sc, grad=None if scalar_grad else [])
        for k in kwargs:
            yield Sample(mk.rand(2, 3, low=low, high=high), other_arr(mk, 2, 3), **k)
        if degenerate:
            a, b = zip(*degenerate)
            yield Sample(mk.arr(a), mk.arr(b), kind="degenerate")
        if extra is not None:
            yield from extra(mk)
    if inplace is True:
        inplace = None if name.startswith("__") else name + "_"
    _add(name, op or method(name), samples, elementwise=True, grad=grad, inplace=inplace or None, **kw)


_DIV0 = ((1.0, 0.0), (-1.0, 0.0), (0.0, 0.0), (0.0, -0.0), (1.0, -0.0), (2.0, INF))
# fmod-based floor division: 0.7 // 0.02 is 34 and -5 // inf is -1 in float64, as in Python and torch
_FLOORDIV = ((0.7, 0.02), (2.0, 0.01), (-0.7, 0.02), (1.0, 0.1), (5.0, -2.5), (-3.0, 1.5), (1.0, 0.0), (0.0, 0.0),
             (-5.0, INF), (5.0, -INF), (-0.0, 1.0), (INF, 1.5))
for n in ("add", "sub", "subtract"):
    binary(n, kwargs=({"alpha": 2.0},))
for n in ("mul", "multiply"):
    binary(n, degenerate=((0.0, INF), (INF, 0.0), (-0.0, 1.0)))
for n in ("div", "divide", "true_divide"):
    binary(n, other="nonzero", degenerate=_DIV0)
# not differentiable in torch (derivative for aten::floor_divide is not implemented)
binary("div(rounding_mode)", other="nonzero", scalars=(), kwargs=({"rounding_mode": "floor"}, {"rounding_mode": "trunc"}),
       degenerate=_FLOORDIV, grad=False, inplace=None, op=lambda t, x, y, **k: x.div(y, **k))
binary("floor_divide", other="nonzero", degenerate=_FLOORDIV, grad=False)
binary("remainder", other="nonzero", degenerate=_FLOORDIV)
binary("fmod", other="nonzero", degenerate=_FLOORDIV)
# torch computes x**2, x**3, x**-2, x**0.5, x**-0.5 and x**-1 by their own kernels (signed zeros:
# (-0.)**-0.5 is -inf)
_POW_EXTRA = lambda mk: [Sample(mk.arr([-0.0, 0.0, 4.0, -1.0, INF]), e, kind="degenerate")  # noqa: E731
                         for e in (-0.5, 0.5, -2.0, 3.0, -1, 0, 1)]
binary("pow", low=0.3, high=2.0, scalars=(2, 0.5, -1, 0, 3.0, -0.5, -2.0),
       degenerate=((0.0, 0.0), (0.0, -1.0), (0.0, 2.0), (0.0, 0.5), (-2.0, 2.0), (-2.0, 0.5), (1.0, INF)),
       extra=_POW_EXTRA)
binary("float_power", low=0.3, high=2.0, scalars=(2, 0.5), inplace="float_power_",
       degenerate=((0.0, 0.0), (0.0, -1.0), (0.0, 2.0), (0.0, 0.5)))
for n in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__"):
    binary(n, inplace=None)
for n in ("__truediv__", "__rtruediv__"):
    binary(n, other="nonzero", inplace=None, degenerate=_DIV0)
for n in ("__floordiv__", "__rfloordiv__"):
    binary(n, other="nonzero", inplace=None, degenerate=_FLOORDIV, grad=False)
binary("__mod__", other="nonzero", inplace=None, degenerate=_FLOORDIV)
# a number % tensor (remainder.Scalar_Tensor) has no derivative in torch
binary("__rmod__", other="nonzero", inplace=None, degenerate=_FLOORDIV, scalar_grad=False)
binary("__pow__", low=0.3, high=2.0, scalars=(2, 0.5, -1), inplace=None,
       degenerate=((0.0, 0.0), (0.0, -1.0), (0.0, 2.0)))
_add("__rpow__", method("__rpow__"),
     lambda mk: [Sample(mk.rand(2, 3), 2.0), Sample(mk.rand(4), 0.5),
                 Sample(mk.arr([-1.0, 0.0, 0.5, 2.0]), 0.0, kind="degenerate"),
                 Sample(mk.arr([-1.0, 0.0, 2.0]), -2.0, kind="degenerate")], elementwise=True)
for n in ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__"):
    _add(n, lambda t, x, y, _n=n: x.clone().__getattribute__(_n)(y),
         lambda mk: [Sample(mk.pos(2, 3), mk.pos(2, 3)), Sample(mk.pos(2, 3), mk.pos(3)),
                     Sample(mk.pos(2, 3), 1.5)],
         grad=n not in ("__ifloordiv__",))


# --------------------------------------------------------------------------------- pointwise

def _tern(mk, *shape):
    return mk.rand(*shape), mk.rand(*shape), mk.rand(*shape)


_add("addcmul", method("addcmul"),
     lambda mk: [Sample(*_tern(mk, 2, 3)), Sample(*_tern(mk, 2, 3), value=0.5),
                 Sample(mk.rand(3), mk.rand(2, 1), mk.rand(1, 3), value=-2),
                 Sample(mk.arr([1.0, 2.0]), mk.arr([0.0, INF]), mk.arr([INF, 0.0]), kind="degenerate")],
     elementwise=True, inplace="addcmul_")
_add("addcdiv", method("addcdiv"),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 3), mk.pos(2, 3)), Sample(mk.rand(2, 3), mk.rand(2, 3), mk.pos(2, 3), value=0.5),
                 Sample(mk.arr([1.0, 2.0, 0.0]), mk.arr([1.0, 0.0, 0.0]), mk.arr([0.0, 0.0, 0.0]), kind="degenerate")],
     elementwise=True, inplace="addcdiv_")
_add("lerp", method("lerp"),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 3), mk.rand(2, 3, low=0, high=1)),
                 Sample(mk.rand(2, 3), mk.rand(2, 3), 0.3), Sample(mk.rand(2, 3), mk.rand(3), 0.7),
                 Sample(mk.arr([1.0, 2.0, 3.0]), mk.arr([1.0, -2.0, 5.0]), mk.arr([0.5, 0.0, 1.0]), kind="degenerate")],
     elementwise=True, inplace="lerp_")


def _clamp_samples(mk):
    yield Sample(mk.rand(2, 3), -0.5, 0.5)
    yield Sample(mk.rand(2, 3), min=-0.5)
    yield Sample(mk.rand(2, 3), max=0.5)
    yield Sample(mk.rand(2, 3), mk.rand(2, 3, low=-2, high=0), mk.rand(3, low=0, high=2))
    yield Sample(mk.rand(2, 3), 0.5, -0.5, kind="degenerate")          # min > max
    yield Sample(mk.arr([-0.5, 0.0, 0.5, 1.0]), -0.5, 0.5, kind="degenerate")   # on the bounds
    yield Sample(mk.arr([-0.5, 0.0, 0.5, 1.0]), mk.arr([-0.5, 0.0, 1.0, 1.0]), mk.arr([0.5, 0.0, 0.5, 1.0]),
                 kind="degenerate")
    yield Sample(mk.arr([-0.5, 0.0, 0.5]), NAN, 1.0, kind="degenerate")


for n in ("clamp", "clip"):
    _add(n, method(n), _clamp_samples, inplace=n + "_")


def _clamp1(mk):
    yield Sample(mk.rand(2, 3), 0.3)
    yield Sample(mk.rand(2, 3), mk.rand(2, 3))
    yield Sample(mk.rand(2, 3), mk.rand(3))
    yield Sample(mk.arr([-0.5, 0.0, 0.5]), mk.arr([-0.5, 0.0, 0.5]), kind="degenerate")


for n in ("clamp_min", "clamp_max"):
    _add(n, method(n), _clamp1, inplace=n + "_")

_ZERO_PAIRS = ((0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (1.0, 0.0), (0.0, -1.0), (INF, INF), (-INF, 1.0))
for n in ("atan2", "arctan2"):
    binary(n, degenerate=_ZERO_PAIRS, scalars=())
binary("hypot", degenerate=_ZERO_PAIRS, scalars=())
binary("xlogy", other="pos", degenerate=((0.0, 0.0), (0.0, NAN), (0.0, -1.0), (1.0, 0.0), (0.0, INF), (2.0, -1.0)),
       scalars=(2.0,), extra=lambda mk: [Sample(mk.arr([0.0, -0.0, 1.5]), o, kind="degenerate") for o in (NAN, 0.0, -1.0)])
binary("copysign", degenerate=((1.0, 0.0), (1.0, -0.0), (-2.0, 0.0), (0.0, -1.0), (2.0, NAN)), scalars=(-1.0,))
_TIES = ((1.0, 1.0), (0.0, -0.0), (-0.0, 0.0), (NAN, 1.0), (1.0, NAN), (-INF, -INF), (INF, INF))
for n in ("maximum", "minimum", "fmax", "fmin"):
    binary(n, degenerate=_TIES, scalars=(), inplace=None)
for n in ("logaddexp", "logaddexp2"):
    binary(n, degenerate=((-INF, -INF), (INF, INF), (0.0, 0.0), (-INF, 1.0), (800.0, 800.0)), scalars=(), inplace=None)
_add("where", lambda t, x, c, y: x.where(c, y),
     lambda mk: [Sample(mk.rand(2, 3), mk.mask(2, 3), mk.rand(2, 3)),
                 Sample(mk.rand(2, 3), mk.mask(3), mk.rand(1, 3)),
                 Sample(mk.rand(3), mk.mask(2, 3), 0.5),
                 Sample(mk.arr([INF, 1.0, NAN]), mk.index([False, True, True], bool), mk.arr([1.0, -INF, 2.0]),
                        kind="degenerate")])


# -------------------------------------------------------------------------------- comparison

_NG = dict(grad=False, gradgrad=False)
_CMP_DEG = ((1.0, 1.0), (0.0, -0.0), (NAN, NAN), (NAN, 1.0), (INF, INF), (-INF, INF))
for n in ("eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal",
          "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    binary(n, degenerate=_CMP_DEG, scalars=(0.5,), inplace=None if n.startswith("__") else n + "_",
           **_NG)
for n in ("logical_and", "logical_or", "logical_xor"):  # a number operand: TypeError in torch
    binary(n, degenerate=_CMP_DEG, scalars=(0.5,), **_NG)
for n in ("bitwise_and", "bitwise_or", "bitwise_xor", "__and__", "__or__", "__xor__", "__rand__", "__ror__", "__rxor__"):
    binary(n, scalars=(), inplace=(n + "_") if not n.startswith("__") else None, **_NG)
for n in ("__iand__", "__ior__", "__ixor__"):
    _add(n, lambda t, x, y, _n=n: x.clone().__getattribute__(_n)(y),
         lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 3))], **_NG)
for n in ("logical_not", "bitwise_not", "__invert__", "isfinite", "isinf", "isnan", "isneginf", "isposinf",
          "isreal", "signbit"):
    unary(n, degenerate=(0.0, -0.0, NAN, INF, -INF, 1.0), inplace=n in ("logical_not", "bitwise_not"), **_NG)
_add("equal", method("equal"),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 3)), Sample(mk.arr([1.0, 2.0]), mk.arr([1.0, 2.0])),
                 Sample(mk.arr([1.0, 2.0]), mk.arr([[1.0, 2.0]])),
                 Sample(mk.arr([NAN]), mk.arr([NAN]), kind="degenerate")], **_NG)
for n in ("allclose", "isclose"):
    _add(n, method(n),
         lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 3)), Sample(mk.arr([1.0, 2.0]), mk.arr([1.0, 2.0 + 1e-9])),
                     Sample(mk.arr([1.0, 2.0]), mk.arr([1.1, 2.0]), rtol=0.2, atol=0.0),
                     Sample(mk.arr([NAN, INF, 1.0]), mk.arr([NAN, INF, 1.0]), equal_nan=True, kind="degenerate"),
                     Sample(mk.arr([NAN, INF, -INF]), mk.arr([NAN, INF, INF]), kind="degenerate")],
         nonfinite=False, **_NG)


# ------------------------------------------------------------------------- dtype conversions

def _basic(mk):
    yield Sample(mk.rand(2, 3))
    yield Sample(mk.rand(4))


_add("clone", method("clone"), _basic, elementwise=True)
_add("contiguous", method("contiguous"), _basic, elementwise=True, view=True)
for n in ("float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte", "bool", "cfloat", "cdouble"):
    diff = n in ("float", "double", "half", "bfloat16")
    _add(n, method(n), _basic, elementwise=True, grad=diff, gradgrad=diff,
         view=n == "double", dtypes=("float64", "float32"),
         skip={"gradcheck": "lower precision than float64 by design"} if n in ("float", "half", "bfloat16") else {})
_add("to(dtype)", lambda t, x, dt: x.to(getattr(t, dt)),
     lambda mk: [Sample(mk.rand(2, 3), "float64"), Sample(mk.rand(2, 3), "float32"),
                 Sample(mk.rand(2, 3), "int64")], covers=("to",), view=True,
     skip={"gradcheck": "float32 targets lose precision by design"})
_add("to(other)", lambda t, x, y: x.to(y), lambda mk: [Sample(mk.rand(2, 3), mk.rand(3), grad=[0])], view=True)
_add("type_as", method("type_as"), lambda mk: [Sample(mk.rand(2, 3), mk.rand(3), grad=[0])], view=True)
_add("type", lambda t, x, *a: x.type(*a) if not a else x.type(getattr(t, a[0])),
     lambda mk: [Sample(mk.rand(2, 3)), Sample(mk.rand(2, 3), "float64"), Sample(mk.rand(2, 3), "int32")],
     view=True, int_dtypes=True)
_add("cpu", method("cpu"), _basic, view=True)
_add("copy_", lambda t, x, y: (x * 1).copy_(y),
     lambda mk: [Sample(mk.rand(2, 3), mk.rand(2, 3)), Sample(mk.rand(2, 3), mk.rand(3)),
                 Sample(mk.rand(2, 3), mk.rand(2, 3).astype(np.float32), grad=[1], kind="mixed_dtype")])
