"""Special functions: log-gamma and its derivatives, Bessel functions, the error-function
family, incomplete gamma and zeta functions, and the classical orthogonal polynomials
(``torch.special`` and the top-level/Tensor forms PyTorch has for some of them).

Values come from ``scipy.special`` (imported inside the functions, so ``import retrograd``
does not load SciPy), with PyTorch's values where its kernels differ at poles and non-finite
points; on a CUDA device from its counterpart ``cupyx.scipy.special`` (``special_module``),
and what that lacks from formulas in the device's array module (``xp_for``). Integer and
bool inputs compute in the default float dtype; float16/bfloat16 ones in float32, rounded
once (ops whose PyTorch kernel has no half types refuse them, as PyTorch).
Backward formulas are tensor ops, so second derivatives work; the Bessel functions, Airy's
function and the polynomials have no derivative in PyTorch (their outputs never require grad).
"""
import math

import numpy as np

from ._base import OpNode, node_for, node_for1, save, save_output, finish, arr, write_out, Tensor, quiet
from ._base import binary_operands, xp_for
from .._device import special_module
from .. import _dtype as D
from .._meta import MetaArray

__all__ = []
TENSOR_METHODS = {}
INPLACE = {}
# name -> function of ``retrograd.special`` (special-only names are not exported at top level)
SPECIAL = {}

_HALF = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
          "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
          "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _sp(*arrays):
    """scipy.special for host arrays, cupyx.scipy.special when one of ``arrays`` is on a device."""
    if len(arrays) > 1:
        return special_module(next((a for a in arrays if xp_for(a) is not np), arrays[0]))
    return special_module(arrays[0])


def _word(npdt):
    return _NAMES.get(str(npdt), str(npdt))


def _refuse(kernel, npdt):
    raise NotImplementedError(f'"{kernel}" not implemented for \'{_word(npdt)}\'')


def _is_half(npdt):
    return npdt == _HALF or npdt.kind == "V"


def _float_input(x, kernel, half=True, ints=True, cplx=False):
    """(array to compute on, result dtype) for an input array: ints/bool in the default float
    dtype, half types computed in float32; dtypes PyTorch's ``kernel`` lacks are refused."""
    dt = x.dtype
    if (dt.kind == "c" and not cplx) or (not half and _is_half(dt)) or (not ints and dt.kind in "iub"):
        _refuse(kernel, dt)
    if dt.kind in "iub":
        dt = D._default[0].np
        return x.astype(dt), dt
    return (x.astype(_F32) if _is_half(dt) else x), dt


def _arr(a, dtype=None):
    """``np.asarray`` that lets a meta array and a device array through (cast to ``dtype``)."""
    if type(a) is MetaArray or xp_for(a) is not np:
        return a if dtype is None else a.astype(dtype, copy=False)
    return np.asarray(a, dtype)


def _need_tensor(name, input, pos=1, arg="input"):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(input).__name__}")


def _const(a):
    return finish(None, a if xp_for(a) is not np else arr(np.asarray(a)))


def _where(mask, a, b):
    from .index import where
    return where(_const(mask), a, b)


def _register(name, fn, top=False, method=False, inplace=False, special=True, special_name=None):
    fn.__name__ = fn.__qualname__ = name
    if special:
        SPECIAL[special_name or name] = fn
    if top:
        __all__.append(name)
        globals()[name] = fn
    if method:
        TENSOR_METHODS[name] = fn
    if inplace:
        INPLACE[name + "_"] = fn
    return fn


def _unary(name, fwd, node_name=None, saves="input", bwd=None, kernel=None, half=True, top=False,
           method=False, inplace=False, special=True, doc=None, cplx=False):
    """Define elementwise ``name``: forward ``fwd(array)``; with ``node_name``, a node of that
    name whose backward is ``bwd(g, x, y)`` (x the saved input, y the saved output, per
    ``saves``: "input", "output" or "both"); without it, the output never requires grad."""
    kernel = kernel or name + "_cpu"
    cls = None
    if node_name is not None:
        def backward(self, g):
            saved = self.saved_tensors
            x = saved[0] if saves in ("input", "both") else None
            y = saved[-1] if saves in ("output", "both") else None
            return bwd(g, x, y)
        cls = type(node_name, (OpNode,), {"backward": backward, "__module__": __name__})
        globals()[node_name] = cls

    def op(input, *, out=None):
        _need_tensor(name, input)
        x, dt = _float_input(input._data, kernel, half, cplx=cplx)
        r = arr(_arr(quiet(fwd, x)).astype(dt, copy=False))
        node = node_for1(cls, input) if cls is not None else None
        res = finish(node, r)
        if node is not None:
            if saves in ("input", "both"):
                save(node, input)
            if saves in ("output", "both"):
                save_output(node, res)
        return res if out is None else write_out(out, res, name)

    op.__doc__ = doc or f"Elementwise ``{name}``."
    return _register(name, op, top, method, inplace, special)


# ----------------------------------------------------------------------- gamma family

def _lgamma_np(x):
    r = _sp(x).gammaln(x)
    return xp_for(x).where(x == -np.inf, np.inf, r).astype(r.dtype, copy=False)  # PyTorch: lgamma(-inf) is inf


def _digamma_np(x):
    xp = xp_for(x)
    r = _sp(x).psi(x)
    # PyTorch: digamma(+0.) is -inf and digamma(-0.) is +inf
    return xp.where(x == 0, xp.where(xp.signbit(x), np.inf, -np.inf), r).astype(r.dtype, copy=False)


def _trigamma_np(x):
    """polygamma(1, x): for x < 1/2 by reflection, pi^2 / sin^2(pi x) - psi1(1 - x), with the sine
    taken in x's own precision as PyTorch does (so its poles are large finite numbers, not inf)."""
    xp = xp_for(x)
    lo = x < 0.5
    x64 = x.astype(np.float64)
    # psi1 = zeta(2, .): what scipy's polygamma(1, .) computes (times (-1)^2 * 1!), as a ufunc
    # cupyx.scipy.special has too (its polygamma takes only an array of orders: with a number,
    # its cupy.where(n == 0, ...) fails)
    r = _sp(x).zeta(2.0, xp.where(lo, 1.0 - x64, x64))
    s = xp.sin(x * x.dtype.type(math.pi)).astype(np.float64)
    refl = (math.pi * math.pi) / (s * s) - r
    return xp.where(lo, refl, r)


def _zeta_np(x, q):
    """Hurwitz zeta; NaN at q = +inf as in PyTorch (SciPy gives 0), except at the pole x = 1,
    which PyTorch's kernel answers with inf before it looks at q."""
    r = _sp(x, q).zeta(x, q)
    return xp_for(x, q).where((q == np.inf) & (x != 1), np.nan, r)


def _polygamma_np(n, x):
    if n == 0:
        return _digamma_np(x)
    if n == 1:
        return _trigamma_np(x)
    x64 = x.astype(np.float64)
    return (1.0 if n % 2 else -1.0) * math.exp(math.lgamma(n + 1.0)) * _zeta_np(float(n + 1), x64)


lgamma = _unary("lgamma", _lgamma_np, "LgammaBackward0", "input", lambda g, x, y: g * digamma(x),
                kernel="lgamma_vml_cpu", top=True, method=True, inplace=True, special=False,
                doc="Elementwise ``log|Gamma(input)|``.")
SPECIAL["gammaln"] = lgamma
digamma = _unary("digamma", _digamma_np, "DigammaBackward0", "input", lambda g, x, y: g * polygamma(1, x),
                 kernel="digamma", top=True, method=True, inplace=True,
                 doc="Elementwise digamma: the derivative of ``lgamma``.")
SPECIAL["psi"] = digamma


class PolygammaBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return g * polygamma(self.n + 1, x)


class PolygammaBackward1(PolygammaBackward0):
    """``polygamma_``'s node (PyTorch names the in-place form's node apart)."""


def polygamma(n, input, *, out=None):
    """``polygamma(n, x)``: the n-th derivative of digamma (differentiable in ``x`` only)."""
    return _polygamma(n, input, out, PolygammaBackward0)


def _polygamma(n, input, out, node_cls):
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    _need_tensor("polygamma", input, 2)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x, dt = _float_input(input._data, "polygamma")
    r = arr(_arr(quiet(lambda a: _polygamma_np(int(n), a), x)).astype(dt, copy=False))
    node = node_for1(node_cls, input)
    res = finish(node, r)
    if node is not None:
        node.n = int(n)
        save(node, input)
    return res if out is None else write_out(out, res, "polygamma")


def _polygamma_method(self, n):
    return polygamma(n, self)


_register("polygamma", polygamma, top=True)
TENSOR_METHODS["polygamma"] = _polygamma_method


def _polygamma_inplace(self, n):
    """``self.polygamma_(n)``."""
    return _polygamma(n, self, None, PolygammaBackward1)


INPLACE["polygamma_"] = _polygamma_inplace


class MvlgammaBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        off = xp_for(x).asarray(self.offsets.astype(x._data.dtype))
        return g * digamma(x.unsqueeze(-1) + _const(off)).sum(-1)


def mvlgamma(input, p, *, out=None):
    """Multivariate log-gamma of dimension ``p``: sum_j lgamma(x - j/2) + p(p-1)/4 log(pi)."""
    _need_tensor("mvlgamma", input)
    if input._data.dtype.kind == "b":
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x, dt = _float_input(input._data, "mvlgamma")
    offsets = np.arange(-p / 2 + 0.5, 0.5, 0.5)
    with np.errstate(all="ignore"):
        lg = _lgamma_np((x[..., None] + xp_for(x).asarray(offsets.astype(x.dtype))))
        r = (lg.sum(-1) + x.dtype.type(p * (p - 1) / 4 * math.log(math.pi))).astype(dt)
    node = node_for1(MvlgammaBackward0, input)
    res = finish(node, arr(r))
    if node is not None:
        node.offsets = offsets
        save(node, input)
    return res if out is None else write_out(out, res, "mvlgamma")


_register("mvlgamma", mvlgamma, top=True, method=True, inplace=True, special_name="multigammaln")


# ----------------------------------------------------------------- error-function family

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)


def _erfcx_np(x):
    return _sp(x).erfcx(x)


erfcx = _unary("erfcx", _erfcx_np, "SpecialErfcxBackward0", "both",
               lambda g, x, y: (x * y * 2 - 2 / _SQRT_PI) * g, half=False,
               doc="Scaled complementary error function ``exp(x^2) * erfc(x)``.")


def ndtr(input, *, out=None):
    """The standard normal CDF, ``(1 + erf(x / sqrt(2))) / 2`` (a composite, as PyTorch's)."""
    _need_tensor("special_ndtr", input)
    if out is not None:  # PyTorch's composite out= variant records nothing, even for inputs requiring grad
        from ..autograd import no_grad
        with no_grad():
            return write_out(out, ndtr(input), "special_ndtr")
    from .unary import erf
    if input._data.dtype.kind in "iub":
        input = input.to(D._default[0])
    return scaled(shifted(erf(scaled(input, math.sqrt(0.5))), 1), 0.5)


_register("ndtr", ndtr)
ndtri = _unary("ndtri", lambda x: _sp(x).ndtri(x), "SpecialNdtriBackward0", "output",
               lambda g, x, y: g * _SQRT_2PI * (y * y / 2).exp(), half=False,
               doc="The inverse of the standard normal CDF.")
log_ndtr = _unary("log_ndtr", lambda x: _sp(x).log_ndtr(x), "SpecialLogNdtrBackward0", "both",
                  lambda g, x, y: g / _SQRT_2PI * (-(y + x * x / 2)).exp(), half=False,
                  doc="The log of the standard normal CDF, accurate in the lower tail.")


def _entr_np(x):
    xp = xp_for(x)
    with np.errstate(all="ignore"):
        r = xp.where(x > 0, -x * xp.log(xp.where(x > 0, x, 1)), xp.where(x == 0, 0, -np.inf))
    return xp.where(xp.isnan(x), x, r).astype(x.dtype, copy=False)


entr = _unary("entr", _entr_np, "SpecialEntrBackward0", "input", lambda g, x, y: g * -(x.log() + 1),
              doc="Elementwise entropy term ``-x log x`` (0 at 0, -inf for x < 0).")


def _sinc_np(x):
    pi = x.real.dtype.type(math.pi)
    px = x * pi  # in x's own precision, as PyTorch's kernel
    xp = xp_for(x)
    return xp.where(x == 0, x.dtype.type(1), xp.sin(px) / xp.where(x == 0, 1, px)).astype(x.dtype, copy=False)


def _sinc_grad(g, x, y):
    # PyTorch's sinc_backward: x pi cos(x pi) - sin(x pi) over (x x) pi, zero where that is 0
    # (x = 0, or x x underflowing). (x pi taken once per use: one shared node changes the
    # order its gradient's three parts are summed in, and the double backward at x = 1e-20
    # then gave -pi^2 where torch gives 0)
    sq = x * x * math.pi
    d = (x * math.pi * (x * math.pi).cos() - (x * math.pi).sin()) / sq
    if d._data.dtype.kind == "c":  # PyTorch's convention for complex inputs: conj(d/dz) * grad
        d = d.conj()
    return _where(sq._data == 0, 0.0, g * d)


sinc = _unary("sinc", _sinc_np, "SincBackward0", "input", _sinc_grad, top=True, method=True, inplace=True, cplx=True,
              doc="Normalized sinc ``sin(pi x) / (pi x)``, 1 at 0.")


class LogitBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        xd = x._data
        from ._base import _state
        if _state.grad:  # create_graph: PyTorch's composite formula (x = -0. gives -inf)
            d = g / (x * (1 - x))
        else:  # PyTorch's fused kernel: a zero denominator is +0 whatever the sign of x
            with np.errstate(all="ignore"):
                den = xd * (1 - xd)
                xp = xp_for(den)
                d = _const(g._data / xp.where(den == 0, xp.zeros((), den.dtype), den))
        with np.errstate(invalid="ignore"):
            if self.eps is None:  # outside [0, 1] the derivative is NaN, not the formula's value
                return _where((xd < 0) | (xd > 1), math.nan, d)
            return _where((xd < self.eps) | (xd > 1 - self.eps), 0.0, d)


def logit(input, eps=None, *, out=None):
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    _need_tensor("logit", input)
    x, dt = _float_input(input._data, "logit_cpu")
    with np.errstate(all="ignore"):
        xp = xp_for(x)
        z = x if eps is None else xp.clip(x, x.dtype.type(eps), x.dtype.type(1 - eps))
        r = xp.log(z / (1 - z)).astype(dt, copy=False)
    node = node_for1(LogitBackward0, input)
    res = finish(node, arr(r))
    if node is not None:
        node.eps = None if eps is None else float(eps)
        save(node, input)
    return res if out is None else write_out(out, res, "logit")


_register("logit", logit, top=True, method=True, inplace=True)


def expit(input, *, out=None):
    """The logistic sigmoid (``retrograd.sigmoid``)."""
    from .unary import sigmoid
    return sigmoid(input, out=out)


_register("expit", expit)


# ------------------------------------------------------------------------ Bessel family

def _i1_grad(g, x, y):
    # at |x| <= eps the quotient y / x is 0/0: the limit 1/2 instead
    if _is_half(x._data.dtype):     # (PyTorch's i1/i1e backward kernels have no half version)
        _refuse("i1_backward", x._data.dtype)
    eps = float(np.finfo(x._data.dtype).eps)
    with np.errstate(invalid="ignore"):
        tiny = ~(xp_for(x).abs(x._data) > eps)  # NaN too, as PyTorch's test
    safe = _where(tiny, eps, x)
    return g * _where(tiny, 0.5, i0(safe) - y / safe)


def _i1e_grad(g, x, y):
    if _is_half(x._data.dtype):
        _refuse("i1e_backward", x._data.dtype)
    eps = float(np.finfo(x._data.dtype).eps)
    with np.errstate(invalid="ignore"):
        tiny = ~(xp_for(x).abs(x._data) > eps)  # NaN too, as PyTorch's test
    safe = _where(tiny, eps, x)
    return g * _where(tiny, 0.5, i0e(safe) - y * (safe.sgn() + safe.reciprocal()))


i0 = _unary("i0", lambda x: _sp(x).i0(x), "I0Backward0", "input", lambda g, x, y: g * i1(x), kernel="i0_vml_cpu",
            top=True, method=True, inplace=True, doc="Modified Bessel function of the first kind, order 0.")
i0e = _unary("i0e", lambda x: _sp(x).i0e(x), "SpecialI0EBackward0", "both",
             lambda g, x, y: g * (i1e(x) - x.sgn() * y), doc="Exponentially scaled ``i0``: exp(-|x|) i0(x).")
i1 = _unary("i1", lambda x: _sp(x).i1(x), "SpecialI1Backward0", "both", _i1_grad,
            doc="Modified Bessel function of the first kind, order 1.")
i1e = _unary("i1e", lambda x: _sp(x).i1e(x), "SpecialI1EBackward0", "both", _i1e_grad,
             doc="Exponentially scaled ``i1``: exp(-|x|) i1(x).")


def _spherical_j0_np(x):
    xp = xp_for(x)
    with np.errstate(all="ignore"):
        r = xp.where(x == 0, 1, xp.sin(x) / xp.where(x == 0, 1, x))
    return xp.where(xp.isinf(x), 0, r).astype(x.dtype, copy=False)


def _airy_ai_np(x):
    xp = xp_for(x)
    if xp is np:
        return _sp(x).airy(x)[0]
    # A device has no Airy function: cupyx.scipy.special lacks it and the Bessel functions of
    # order 1/3 it is made of, and a device formula would need SciPy's piecewise rational
    # approximations to be as accurate. So Ai is computed on the host, in one round trip
    # (one host synchronisation per call; Ai has no derivative, so never in a backward).
    import scipy.special
    return xp.asarray(scipy.special.airy(xp.asnumpy(x))[0])


for _n, _f, _doc in (
        ("bessel_j0", lambda x: _sp(x).j0(x), "Bessel function of the first kind, order 0"),
        ("bessel_j1", lambda x: _sp(x).j1(x), "Bessel function of the first kind, order 1"),
        ("bessel_y0", lambda x: _sp(x).y0(x), "Bessel function of the second kind, order 0"),
        ("bessel_y1", lambda x: _sp(x).y1(x), "Bessel function of the second kind, order 1"),
        ("modified_bessel_i0", lambda x: _sp(x).i0(x), "Modified Bessel function of the first kind, order 0"),
        ("modified_bessel_i1", lambda x: _sp(x).i1(x), "Modified Bessel function of the first kind, order 1"),
        ("modified_bessel_k0", lambda x: _sp(x).k0(x), "Modified Bessel function of the second kind, order 0"),
        ("modified_bessel_k1", lambda x: _sp(x).k1(x), "Modified Bessel function of the second kind, order 1"),
        ("scaled_modified_bessel_k0", lambda x: _sp(x).k0e(x), "exp(x) k0(x)"),
        ("scaled_modified_bessel_k1", lambda x: _sp(x).k1e(x), "exp(x) k1(x)"),
        ("spherical_bessel_j0", _spherical_j0_np, "Spherical Bessel function of the first kind, order 0"),
        ("airy_ai", _airy_ai_np, "Airy function Ai")):
    globals()[_n] = _unary(_n, _f, half=False, doc=f"{_doc} (no derivative, as in PyTorch).")


# ------------------------------------------------------------------- binary functions

def _binary_args(name, input, other, kernel, half=True, ints=True, tensors_only=False):
    """(a, b, x, y, result dtype, compute dtype) of a binary special function: one of the two
    may be a Python number (unless ``tensors_only``)."""
    if tensors_only:
        _need_tensor(name, input)
        _need_tensor(name, other, 2, "other")
    elif not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(other).__name__}), but expected one of:\n"
                        " * (Tensor input, Tensor other, *, Tensor out = None)\n"
                        " * (Number self, Tensor other, *, Tensor out = None)\n"
                        " * (Tensor input, Number other, *, Tensor out = None)\n")
    a, b, x, y, dt = binary_operands(input, other)
    if dt.kind == "c" or (not half and _is_half(dt)) or (not ints and dt.kind in "iub"):
        _refuse(kernel, dt)
    if dt.kind in "iub":
        dt = D._default[0].np
    cdt = _F32 if _is_half(dt) else dt
    from .pointwise import _bshape
    _bshape(a, b)
    if xp_for(x, y) is not np:    # beside device data a number stays a scalar (of the compute dtype)
        x, y = (_arr(v, cdt) if xp_for(v) is not np else cdt.type(v) for v in (x, y))
        return a, b, x, y, dt, cdt
    return a, b, _arr(x, cdt), _arr(y, cdt), dt, cdt


def _binary(name, fwd, nodes, bwd_x, bwd_y, kernel, half=True, ints=True, tensors_only=False, doc=None):
    """Define ``name(input, other)``: forward ``fwd(x, y)``; ``nodes`` = (both, input a number,
    other a number) node names (None: not differentiable); ``bwd_x(g, x, y)``/``bwd_y(g, x, y)``
    give each operand's gradient (``x``/``y`` a tensor, or the number)."""
    classes = None
    if nodes is not None:
        def backward(self, g):
            x, y = self.saved_tensors if self.both else (
                (self.number, self.saved_tensors[0]) if self.which == 1 else (self.saved_tensors[0], self.number))
            nf = self.next_functions
            if self.which == 0:
                return (bwd_x(g, x, y) if nf[0][0] is not None else None,
                        bwd_y(g, x, y) if nf[1][0] is not None else None)
            return bwd_y(g, x, y) if self.which == 1 else bwd_x(g, x, y)
        classes = [type(n, (OpNode,), {"backward": backward, "__module__": __name__}) for n in nodes]
        for c in classes:
            globals()[c.__name__] = c

    def op(input, other, *, out=None):
        a, b, x, y, dt, cdt = _binary_args(name, input, other, kernel, half, ints, tensors_only)
        r = arr(_arr(quiet(lambda _: fwd(x, y), None)).astype(dt, copy=False))
        node = None
        if classes is not None:
            which = 0 if (a is not None and b is not None) else (1 if a is None else 2)
            node = node_for(classes[which], (a, b) if which == 0 else ((b,) if which == 1 else (a,)))
            if node is not None:
                node.which = which
                node.both = which == 0
                if which == 0:
                    save(node, a, b)
                elif which == 1:
                    node.number = input
                    save(node, b)
                else:
                    node.number = other
                    save(node, a)
        res = finish(node, r)
        return res if out is None else write_out(out, res, name)

    op.__doc__ = doc or f"Elementwise ``{name}(input, other)``."
    return op


def _xlog1py_np(x, y):
    xp = xp_for(x, y)
    with np.errstate(all="ignore"):
        r = x * xp.log1p(y)
    return xp.where((x == 0) & ~xp.isnan(y), xp.zeros((), r.dtype), r)


def _xlog1py_gx(g, x, y):
    gx = xlog1py(g, y)
    yd = y._data if isinstance(y, Tensor) else np.asarray(y)
    xd = x._data if isinstance(x, Tensor) else np.asarray(x)
    xp = xp_for(xd, yd)
    if xp is not np:     # (a number stays a scalar beside device data)
        yd, xd = (v if xp_for(v) is xp else v.dtype.type(v) for v in (yd, xd))
    with np.errstate(invalid="ignore"):
        kill = (xd == 0) & (yd <= -1)
    if xp is np and not kill.any():     # (on a device that question would wait for the data)
        return gx
    from ._base import masked_grad
    return masked_grad(gx, ~xp.broadcast_to(kill, gx._data.shape), None, "MaskedFillBackward0")


xlog1py = _register("xlog1py", _binary(
    "special_xlog1py", _xlog1py_np, ("SpecialXlog1PyBackward0", "SpecialXlog1PyBackward1", "SpecialXlog1PyBackward2"),
    _xlog1py_gx, lambda g, x, y: g * x / (y + 1), "xlog1py_cpu",
    doc="``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN)."))


def _zeta_gx(g, x, q):
    raise NotImplementedError("the derivative for 'zeta' is not implemented.")


zeta = _register("zeta", _binary(
    "special_zeta", _zeta_np, ("SpecialZetaBackward0", "SpecialZetaBackward1", "SpecialZetaBackward2"),
    _zeta_gx, lambda g, x, q: g * -x * zeta(x + 1.0, q), "zeta_cpu", half=False,
    doc="Hurwitz zeta function ``sum_k (k + other)^-input`` (differentiable in ``other``)."))


def _igamma_fix(a, x, r, lower):
    # PyTorch's edge cases: x == 0 gives P = 0 and x == inf gives P = 1 whatever a (NaN too);
    # a == inf with a NaN x gives P = 0
    p0, p1 = (0.0, 1.0) if lower else (1.0, 0.0)
    xp = xp_for(a, x)
    r = xp.where(xp.isnan(a) & (x == 0), p0, r)
    r = xp.where(xp.isnan(a) & (x == np.inf), p1, r)
    return xp.where((a == np.inf) & xp.isnan(x), p0, r)


def _igamma_dx(g, a, x):
    return g * ((a - 1) * x.log() - x - lgamma(a)).exp()


def _no_igamma_input(name):
    def bwd(g, a, x):
        raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
    return bwd


_igamma = _binary("igamma", lambda a, x: _igamma_fix(a, x, _sp(a, x).gammainc(a, x), True),
                  ("IgammaBackward0", "IgammaBackward0", "IgammaBackward0"), _no_igamma_input("igamma"),
                  _igamma_dx, "igamma_cpu", ints=False, tensors_only=True)
_igammac = _binary("igammac", lambda a, x: _igamma_fix(a, x, _sp(a, x).gammaincc(a, x), False),
                   ("IgammacBackward0", "IgammacBackward0", "IgammacBackward0"), _no_igamma_input("igammac"),
                   lambda g, a, x: -_igamma_dx(g, a, x), "igammac_cpu", ints=False, tensors_only=True)


def igamma(input, other, *, out=None):
    """Regularized lower incomplete gamma function P(input, other) (differentiable in ``other``)."""
    return _igamma(input, other, out=out)


def igammac(input, other, *, out=None):
    """Regularized upper incomplete gamma function Q(input, other) (differentiable in ``other``)."""
    return _igammac(input, other, out=out)


_register("igamma", igamma, top=True, method=True, inplace=True, special_name="gammainc")
_register("igammac", igammac, top=True, method=True, inplace=True, special_name="gammaincc")


# ------------------------------------------------------------------ orthogonal polynomials
# Each is evaluated by its three-term recurrence, vectorized over the elements: the degree n is
# truncated to an integer (n < 0 gives 0), and the endpoints and large degrees take PyTorch's
# closed forms, so that values agree with its kernels.

def _recur(x, n, top, p0, p1, step):
    """p_n(x) from p_0, p_1 and ``step(k, x, p_{k-1}, p_k) = p_{k+1}``, per element, for
    integer degrees ``n`` up to ``top``."""
    xp = xp_for(x)
    out = xp.where(n <= 0, p0, p1).astype(x.dtype)
    p, q = p0, p1
    for k in range(1, top):
        p, q = q, step(k, x, p, q)
        out = xp.where(n >= k + 1, q, out) if k + 1 <= top else out
    return out.astype(x.dtype, copy=False)


def _ones(x):
    return xp_for(x).ones_like(x)


def _cheb_t(x, n, top):
    xp = xp_for(x)
    with np.errstate(all="ignore"):
        r = _recur(x, n, top, _ones(x), x, lambda k, x, p, q: 2 * x * q - p)
        big = (n > 6) & (xp.abs(x) < 1)
        r = xp.where(big, xp.cos(n * xp.arccos(x)), r)
        edge = xp.abs(x) == 1
        r = xp.where(edge, xp.where((x > 0) | (xp.fmod(xp.trunc(n), 2) == 0), 1.0, -1.0), r)
    return _neg_zero(r, n, x)


def _neg_zero(r, n, x):
    return xp_for(x).where(n < 0, 0, r).astype(x.dtype, copy=False)


def _cheb_u(x, n, top):
    xp = xp_for(x)
    with np.errstate(all="ignore"):
        r = _recur(x, n, top, _ones(x), 2 * x, lambda k, x, p, q: 2 * x * q - p)
        t = xp.arccos(x)
        s = xp.sin(t)
        big = (n > 8) & (xp.abs(x) < 1)
        closed = xp.where(s != 0, xp.sin((n + 1) * t) / s, (n + 1) * xp.cos((n + 1) * t) / x)
        r = xp.where(big, closed, r)
        nt = xp.trunc(n)
        edge = xp.abs(x) == 1
        r = xp.where(edge, xp.where((x > 0) | (xp.fmod(nt, 2) == 0), nt + 1, -(nt + 1)), r)
    return _neg_zero(r, n, x)


def _cheb_v(x, n, top):
    xp = xp_for(x)
    with np.errstate(all="ignore"):
        r = _recur(x, n, top, _ones(x), 2 * x - 1, lambda k, x, p, q: 2 * x * q - p)
        t = xp.arccos(x)
        big = (n > 8) & (xp.abs(x) < 1)
        nt = xp.trunc(n)
        closed = xp.where(xp.sin(t / 2) != 1, xp.cos((n + 0.5) * t) / xp.cos(t / 2),
                          xp.where(xp.fmod(nt, 2) == 0, nt + 1, -(nt + 1)))
        r = xp.where(big, closed, r)
        edge = xp.abs(x) == 1
        r = xp.where(edge, xp.where(x > 0, 1.0, xp.where(xp.fmod(nt, 2) == 0, nt + nt + 1, -(nt + nt + 1))), r)
    return _neg_zero(r, n, x)


def _cheb_w(x, n, top):
    xp = xp_for(x)
    with np.errstate(all="ignore"):
        r = _recur(x, n, top, _ones(x), 2 * x + 1, lambda k, x, p, q: 2 * x * q - p)
        t = xp.arccos(x)
        big = (n > 8) & (xp.abs(x) < 1)
        nt = xp.trunc(n)
        closed = xp.where(xp.cos(t / 2) != 1, xp.sin((n + 0.5) * t) / xp.sin(t / 2),
                          xp.where(x > 0, nt + nt + 1, xp.where(xp.fmod(nt, 2) == 0, 1.0, -1.0)))
        r = xp.where(big, closed, r)
        edge = xp.abs(x) == 1
        r = xp.where(edge, xp.where(x > 0, nt + nt + 1, xp.where(xp.fmod(nt, 2) == 0, 1.0, -1.0)), r)
    return _neg_zero(r, n, x)


def _hermite_h(x, n, top):
    with np.errstate(all="ignore"):
        r = _recur(x, n, top, _ones(x), 2 * x, lambda k, x, p, q: 2 * x * q - 2 * k * p)
    return _neg_zero(r, n, x)


def _hermite_he(x, n, top):
    with np.errstate(all="ignore"):
        r = _recur(x, n, top, _ones(x), x, lambda k, x, p, q: x * q - k * p)
    return _neg_zero(r, n, x)


def _laguerre_l(x, n, top):
    xp = xp_for(x)
    with np.errstate(all="ignore"):
        r = _recur(x, n, top, _ones(x), 1 - x, lambda k, x, p, q: ((2 * k + 1 - x) * q - k * p) / (k + 1))
        r = xp.where(x == 0, 1.0, r)
    return _neg_zero(r, n, x)


def _legendre_p(x, n, top):
    xp = xp_for(x)
    with np.errstate(all="ignore"):
        r = _recur(x, n, top, _ones(x), x, lambda k, x, p, q: ((2 * k + 1) * x * q - k * p) / (k + 1))
        nt = xp.trunc(n)
        edge = xp.abs(x) == 1
        r = xp.where(edge, xp.where((x > 0) | (nt == 0) | (xp.fmod(nt, 2) == 0), 1.0, -1.0), r)
    return _neg_zero(r, n, x)


def _shifted(fn):
    return lambda x, n, top: fn(x + x - 1, n, top)


def _integer_degree(fn):
    """``fn`` on the degree as PyTorch's kernels take it: truncated to an integer, with NaN,
    infinite and out-of-range degrees becoming negative (the polynomial is then 0)."""
    def run(x, n):
        xp = xp_for(x, n)
        if xp is not np:
            return fn(*_device_degree(xp, x, n))
        x, n = np.broadcast_arrays(x, n)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(n) & (np.abs(n) < 2.0 ** 63)
        n = np.where(ok, np.trunc(np.where(ok, n, 0)), -1.0)
        # (a meta tensor has no degrees to loop to: its result has only a shape and a dtype)
        return fn(x, n, int(n.max()) if n.size and type(n) is np.ndarray else 0)
    return run


def _device_degree(xp, x, n):
    """(x, n, top) on a device: the degrees as ``_integer_degree`` makes them and the largest."""
    if xp_for(n) is np:     # a number: the recurrence's length is known without the device
        v = float(n)
        v = float(math.trunc(v)) if math.isfinite(v) and abs(v) < 2.0 ** 63 else -1.0
        return x, xp.full(x.shape, v, x.dtype), int(v) if x.size else 0
    if xp_for(x) is np:
        x = xp.asarray(x)
    ok = xp.isfinite(n) & (abs(n) < 2.0 ** 63)
    n = xp.where(ok, xp.trunc(xp.where(ok, n, 0)), -1.0)
    # the recurrence runs up to the largest degree, which only the device knows: its one
    # host synchronisation (a CUDA kernel of its own would loop per element instead)
    return x, n, int(n.max()) if n.size else 0


for _n, _f in (("chebyshev_polynomial_t", _cheb_t), ("chebyshev_polynomial_u", _cheb_u),
               ("chebyshev_polynomial_v", _cheb_v), ("chebyshev_polynomial_w", _cheb_w),
               ("shifted_chebyshev_polynomial_t", _shifted(_cheb_t)),
               ("shifted_chebyshev_polynomial_u", _shifted(_cheb_u)),
               ("shifted_chebyshev_polynomial_v", _shifted(_cheb_v)),
               ("shifted_chebyshev_polynomial_w", _shifted(_cheb_w)),
               ("hermite_polynomial_h", _hermite_h), ("hermite_polynomial_he", _hermite_he),
               ("laguerre_polynomial_l", _laguerre_l), ("legendre_polynomial_p", _legendre_p)):
    _fn = _binary("special_" + _n, _integer_degree(_f), None, None, None, _n + "_cpu", half=False)

    def _poly(input, n, *, out=None, _fn=_fn):
        return _fn(input, n, out=out)
    _poly.__doc__ = f"``{_n}(input, n)``: the degree-n polynomial at ``input`` (no derivative, as in PyTorch)."
    globals()[_n] = _register(_n, _poly)


TENSOR_METHODS.update({n: globals()[n] for n in ("lgamma", "digamma", "i0", "sinc")})


# *** products with a number, as PyTorch's C++ composites record them ***

class MulBackward1(OpNode):
    """``tensor * number`` (PyTorch's mul.Scalar node, as its C++ composites record it)."""

    def backward(self, g):
        return g * self.c


class DivBackward1(OpNode):
    """``tensor / number`` (PyTorch's div.Scalar node)."""

    def backward(self, g):
        return g / self.c


class AddBackward1(OpNode):
    """``tensor + number`` (PyTorch's add.Scalar node, as its C++ composites record it)."""

    def backward(self, g):
        return g


class SubBackward1(OpNode):
    """``tensor - number`` (PyTorch's sub.Scalar node)."""

    def backward(self, g):
        return g


def shifted(t, c, subtract=False):
    """``t + c`` (or ``t - c``) for a Python number ``c``, recorded as AddBackward1/SubBackward1;
    the value is the tensor op's (its promotion and half-precision rounding)."""
    from ..autograd import grad_mode
    with grad_mode.no_grad():
        r = (t - c if subtract else t + c)._data
    return finish(node_for(SubBackward1 if subtract else AddBackward1, (t,)), r)


def number_minus(c, t):
    """``c - t`` for a Python number ``c`` as PyTorch's C++ operator computes and records it: a
    tensor like ``t`` filled with ``c``, then ``sub_(t)`` (SubBackward0)."""
    from .arithmetic import sub
    return sub(t.new_full(tuple(t.shape), c), t)


def scaled(t, c, divide=False):
    """``t * c`` (or ``t / c``) for a Python number ``c``, recorded as MulBackward1/DivBackward1."""
    x = t._data
    if x.dtype.kind in "biu":    # (promoted as the tensor op does: an int64 tensor times 2 pi is float)
        from ..autograd import grad_mode
        with grad_mode.no_grad():
            return t / c if divide else t * c
    with np.errstate(all="ignore"):
        if x.dtype.kind == "V" or x.dtype == np.float16:    # (PyTorch: in float32, the number too, rounded once)
            f = x.astype(np.float32)
            r = (f / np.float32(c) if divide else f * np.float32(c)).astype(x.dtype)
        else:
            r = x / x.dtype.type(c) if divide else x * x.dtype.type(c)
    node = node_for(DivBackward1 if divide else MulBackward1, (t,))
    if node is not None:
        node.c = c
    return finish(node, arr(np.asarray(r, x.dtype)) if type(x) is np.ndarray else r)  # (device, meta: r is)
