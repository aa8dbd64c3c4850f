"""Complex numbers: real/imag views, conj, angle, view_as_real/view_as_complex, complex, polar.

Gradients follow PyTorch's convention: a complex tensor's gradient is the conjugate Wirtinger
derivative, so for a real loss L of z, ``z.grad = dL/d(re z) + i dL/d(im z)``. Backward formulas
of holomorphic ops are written for real numbers and conjugated by ``wirtinger`` when the
incoming gradient is complex: for f holomorphic, g * conj(f'(z)) = conj(conj(g) * f'(z)).
"""
import numpy as np

from ._base import xp_for, address
from ._base import OpNode, node_for, finish, arr, view_of, Tensor, zeros_grad, save
from .. import _dtype as D

__all__ = ["real", "imag", "conj", "conj_physical", "resolve_conj", "resolve_neg", "is_conj", "is_neg",
           "angle", "view_as_real", "view_as_complex", "complex", "polar"]
TENSOR_METHODS = {}
INPLACE = {}

def wirtinger(node, g, backward=None):
    """Run a holomorphic op's real-number backward for a complex gradient ``g``:
    conj(backward(conj(g))) multiplies g by the conjugated derivatives, as PyTorch's formulas do.
    Without ``backward``, ``node.backward`` itself runs again with ``node._conj_pass`` set (its
    complex check reads the flag only for complex gradients: real ones pay one dtype test)."""
    if backward is None:
        node._conj_pass = True
        try:
            out = node.backward(conj(g))
        finally:
            node._conj_pass = False
    else:
        out = backward(node, conj(g))
    if type(out) is tuple:
        return tuple(None if o is None else _conj_if_complex(o) for o in out)
    return None if out is None else _conj_if_complex(out)


def _conj_if_complex(t):
    return conj(t) if t._data.dtype.kind == "c" else t


def _complex_only(x, name):
    if x._data.dtype.kind != "c":
        raise RuntimeError(f"{name} is only supported for complex tensors")


# *** conj ***

class ConjBackward0(OpNode):
    def backward(self, g):
        return conj(g)


class ConjPhysicalBackward0(ConjBackward0):
    pass


class ConjPhysicalBackward1(ConjBackward0):
    pass


def conj(input):
    """The complex conjugate; a real tensor comes back as it is.

    PyTorch's conj() is a lazy view with a conjugate bit; retrograd's is an eager copy that
    carries the bit only for what can be observed of it: ``is_conj()`` is True on the result
    (not on views or results made from it later), and ``resolve_conj()`` gives a copy
    without it (``CloneBackward0``), as PyTorch's does."""
    xp = xp_for(input)
    x = input._data
    if x.dtype.kind != "c":
        return input
    res = finish(node_for(ConjBackward0, (input,)), xp.conj(x))
    res._conj_bit = True
    return res


def conj_physical(input, *, out=None):
    """The complex conjugate, materialised (real tensors: themselves)."""
    xp = xp_for(input)
    x = input._data
    if x.dtype.kind != "c":
        return input
    return finish(node_for(ConjPhysicalBackward0, (input,)), xp.conj(x))


def _conj_physical_inplace(input):
    xp = xp_for(input)
    x = input._data
    if x.dtype.kind != "c":
        return input
    return finish(node_for(ConjPhysicalBackward1, (input,)), xp.conj(x))


def resolve_conj(input):
    """``input`` itself, or where its conjugate bit is set (see :func:`conj`) a copy without it."""
    if getattr(input, "_conj_bit", False):
        return input.clone()
    return input


def resolve_neg(input):
    """``input`` itself: retrograd keeps no lazy negation bit."""
    return input


def is_conj(input):
    """Whether ``input`` is the result of ``conj()`` of a complex tensor (PyTorch's conjugate bit)."""
    return bool(getattr(input, "_conj_bit", False))


def is_neg(input):
    """False: retrograd keeps no lazy negation bit."""
    return False


# *** view_as_real / view_as_complex, real / imag ***

class ViewAsRealBackward0(OpNode):
    def backward(self, g):
        d = g._data
        if d.size == 0:   # (an empty gradient may carry any strides, contiguous() keeps them)
            from ._decomp import _complex_dt
            return finish(None, xp_for(d).zeros(d.shape[:-1], _complex_dt(d.dtype)))
        return view_as_complex(g.contiguous() if d.strides[-1] != d.itemsize else g)


class ViewAsComplexBackward0(OpNode):
    def backward(self, g):
        return view_as_real(g)


def view_as_real(input):
    """A real view of a complex tensor with a trailing dimension of size 2 (re, im)."""
    xp = xp_for(input)
    x = input._data
    if x.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    r = x.reshape(x.shape + (1,)).view(x.real.dtype) if x.ndim == 0 or x.strides[-1] == x.itemsize \
        else xp.lib.stride_tricks.as_strided(x.real, x.shape + (2,), x.strides + (x.itemsize // 2,))
    return view_of(input, finish(node_for(ViewAsRealBackward0, (input,)), r), view_as_real)


def view_as_complex(input):
    """A complex view of a real tensor whose last dimension (of size 2, stride 1) holds (re, im)."""
    xp = xp_for(input)
    x = input._data
    if x.dtype not in (np.float32, np.float64, np.float16):
        raise RuntimeError("view_as_complex is only supported for float and double tensors, but got a tensor "
                           f"of scalar type: {D.from_numpy_dtype(x.dtype).name.capitalize()}")
    if x.ndim == 0 or x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if x.strides[-1] != x.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % (2 * x.itemsize) for s, n in zip(x.strides[:-1], x.shape[:-1]) if n > 1):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    cdt = np.complex64 if x.dtype == np.float32 else np.complex128
    if x.dtype == np.float16:
        raise RuntimeError("view_as_complex is only supported for float and double tensors, but got a tensor "
                           "of scalar type: Half")
    strides = tuple(s if n > 1 else x.itemsize * 2 for s, n in zip(x.strides[:-1], x.shape[:-1]))
    if xp is np or type(x).__name__ == "MetaArray":
        r = np.ndarray(x.shape[:-1], cdt, buffer=_base_buffer(x), offset=_offset(x), strides=strides)
    else:   # a device array: its own dtype view of the (stride 1) pairs
        r = x.view(cdt)[..., 0]
    return view_of(input, finish(node_for(ViewAsComplexBackward0, (input,)), r), view_as_complex)


def _base_buffer(x):
    b = x
    while b.base is not None and type(b.base) is type(b):
        b = b.base
    return b


def _offset(x):
    b = _base_buffer(x)
    return address(x) - address(b)


def real(input):
    """The real part: a view of a complex tensor (``input`` itself for a real one)."""
    if input._data.dtype.kind != "c":
        return input
    return view_as_real(input).select(-1, 0)


def imag(input):
    """The imaginary part, a view (RuntimeError for real tensors, as in PyTorch)."""
    if input._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return view_as_real(input).select(-1, 1)


def _set_real(self, value):
    xp = xp_for(value)
    real(self).copy_(value if isinstance(value, Tensor) else Tensor._make(xp.asarray(value)))


def _set_imag(self, value):
    xp = xp_for(value)
    imag(self).copy_(value if isinstance(value, Tensor) else Tensor._make(xp.asarray(value)))


# *** angle ***

class AngleBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        if x._data.dtype.kind != "c":
            return zeros_grad(x)
        from .index import where
        # d angle: i z / |z|^2 (0 at z == 0)
        return where(_const(x._data == 0), 0.0, g * x / (abs_(x) ** 2) * 1j)


def _const(a):
    return finish(None, arr(a))


def abs_(x):
    from .unary import abs
    return abs(x)


def angle(input, *, out=None):
    """The argument of each element (real tensors: 0 or pi, NaN kept)."""
    xp = xp_for(input)
    from ._base import save, write_out
    x = input._data
    if x.dtype.kind == "c":
        r = xp.angle(x)
    else:
        if x.dtype.kind in "biu":
            x = x.astype(D.get_default_dtype().np)
        r = xp.where(xp.isnan(x), x, xp.where(x < 0, x.dtype.type(np.pi), x.dtype.type(0)))
    node = node_for(AngleBackward0, (input,))
    if node is not None:
        save(node, input)
    res = finish(node, arr(r))
    return res if out is None else write_out(out, res, "angle")


# *** complex / polar ***

class ComplexBackward0(OpNode):
    def backward(self, g):
        self.saved_tensors     # (unpacked for their version check only, as PyTorch's)
        nf = self.next_functions
        return (real(g) if nf[0][0] is not None else None,
                imag(g) if nf[1][0] is not None else None)


class PolarBackward0(OpNode):
    def backward(self, g):
        (result,) = self.saved_tensors
        nf = self.next_functions
        ga = gt = None
        if nf[0][0] is not None:  # PyTorch's Re(conj(g) * sgn(result)) (sign-flipped where abs < 0)
            ga = real(conj(g) * result.sgn())
        if nf[1][0] is not None:  # Re(conj(g) * i * result)
            gt = real(conj(g) * result * 1j)
        return ga, gt


def _complex_args(real_, imag_, name="complex"):
    from .arithmetic import _check_broadcast
    a, b = real_._data, imag_._data
    if a.dtype not in (np.float16, np.float32, np.float64) or b.dtype not in (np.float16, np.float32, np.float64):
        n1, n2 = (D.from_numpy_dtype(t.dtype) for t in (a, b))
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{D._SCALAR_TYPE_NAMES[n1.name]} and {D._SCALAR_TYPE_NAMES[n2.name]}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"Expected object of scalar type {D._SCALAR_TYPE_NAMES[D.from_numpy_dtype(a.dtype).name]}"
                           f" but got scalar type {D._SCALAR_TYPE_NAMES[D.from_numpy_dtype(b.dtype).name]} "
                           "for second argument")
    _check_broadcast(a, b)
    return a, b, (np.complex64 if a.dtype != np.float64 else np.complex128)


def complex(real, imag, *, out=None):
    """A complex tensor from its real and imaginary parts (float tensors of one dtype)."""
    xp = xp_for(imag)
    from ._base import write_out
    a, b, cdt = _complex_args(real, imag)
    r = xp.empty(np.broadcast_shapes(a.shape, b.shape), cdt)
    r.real, r.imag = a, b
    node = node_for(ComplexBackward0, (real, imag))
    if node is not None:
        save(node, real, imag)      # (unread, as PyTorch's saved parts: their in-place changes refused alike)
    res = finish(node, r)
    return res if out is None else write_out(out, res, "complex")


def polar(abs, angle, *, out=None):
    """The complex tensor ``abs * (cos(angle) + i sin(angle))``."""
    xp = xp_for(abs, angle)
    from ._base import save_output, write_out
    a, t, cdt = _complex_args(abs, angle, "polar")
    r = xp.empty(np.broadcast_shapes(a.shape, t.shape), cdt)
    r.real, r.imag = a * xp.cos(t), a * xp.sin(t)
    node = node_for(PolarBackward0, (abs, angle))
    res = finish(node, r)
    if node is not None:
        save_output(node, res)      # (the backward reads the result only, as PyTorch's)
    return res if out is None else write_out(out, res, "polar")


def _conj_of(view):
    """A transposing view of the shape family, conjugated for complex tensors (PyTorch's mH,
    H and adjoint; retrograd's conj is a copy, so the complex result is not a view)."""
    def get(self):
        r = view(self)
        return conj(r) if r._data.dtype.kind == "c" else r
    get.__doc__ = view.__doc__
    return get


def _shape_views():
    from . import shape
    m = shape.TENSOR_METHODS
    return {"mH": property(_conj_of(m["mH"].fget)), "H": property(_conj_of(m["H"].fget)),
            "adjoint": _conj_of(m["adjoint"])}


TENSOR_METHODS.update(conj=conj, conj_physical=conj_physical, resolve_conj=resolve_conj,
                      resolve_neg=resolve_neg, is_conj=is_conj, is_neg=is_neg, angle=angle)
TENSOR_METHODS.update(real=property(real, _set_real), imag=property(imag, _set_imag), **_shape_views())
INPLACE.update(conj_physical_=_conj_physical_inplace)


# *** holomorphic backward formulas of other families ***

def _holomorphic(cls):
    """Give ``cls`` complex gradients: its backward, written for real numbers, runs through
    ``wirtinger`` when the incoming gradient is complex (real gradients: unchanged formula)."""
    real_backward = cls.__dict__["backward"]

    def backward(self, g):
        if g._data.dtype.kind == "c":
            return wirtinger(self, g, real_backward)
        return real_backward(self, g)
    backward.__doc__ = real_backward.__doc__
    backward._wirtinger = True
    cls.backward = backward


def _vdot_backward(real_backward):
    def backward(self, g):
        a, b = self.saved_tensors
        if g._data.dtype.kind != "c" and a._data.dtype.kind != "c" and b._data.dtype.kind != "c":
            return real_backward(self, g)
        nf = self.next_functions  # vdot(a, b) = sum(conj(a) * b): PyTorch's conj(g) * b, g * a
        return (conj(g) * b if nf[0][0] is not None else None, g * a if nf[1][0] is not None else None)
    return backward


def _install():
    from . import linalg, reduce, _linear, unary
    for cls in (unary.TanhBackwardBackward0, unary.SigmoidBackwardBackward0, _linear._MmT, _linear.AddmmBackward0, _linear._LinearMm, linalg._MatmulNode, linalg._AddProductNode, linalg.AddrBackward0, linalg._EinsumNode,
                linalg.KronBackward, linalg.TraceBackward0, reduce.ProdBackward0, reduce.ProdBackward1,
                reduce.CumprodBackward0, reduce.LogsumexpBackward0):
        owner = next(c for c in cls.__mro__ if "backward" in c.__dict__)
        if not getattr(owner.__dict__["backward"], "_wirtinger", False):
            _holomorphic(owner)
    linalg._VdotNode.backward = _vdot_backward(linalg._VdotNode.__dict__["backward"])


_install()
