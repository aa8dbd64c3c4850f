"""``torch.fft``: discrete Fourier transforms with gradients (on scipy.fft, which keeps float32
as complex64).

Three differentiable primitives carry every transform, as in PyTorch: complex-to-complex,
real-to-complex (one-sided) and complex-to-real. Each backward is the adjoint transform with
the dual normalisation (PyTorch's fft_*_backward), written with these ops so that double
backward works.
"""
import numpy as np

from ._tensor import Tensor
from . import _dtype as D
from .ops._base import xp_for
from .ops._base import OpNode, node_for, finish, wrap_dim, write_out, save

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn",
           "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _sp(a=None):
    """scipy.fft on the CPU; the device's own FFTs (cuFFT through CuPy) for device arrays."""
    if a is not None and type(a) is not np.ndarray:
        return xp_for(a).fft
    import scipy.fft
    return scipy.fft


def _norm(norm):
    if norm is None:
        return "backward"
    if norm not in _DUAL:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _as_float(x, name):
    a = x._data
    if a.dtype.kind in "biu":
        a = a.astype(D.get_default_dtype().np)
    elif a.dtype == np.float16:
        raise RuntimeError("Unsupported dtype Half")
    return a


def _resize(t, dims, sizes):
    """Crop or zero-pad ``t`` along ``dims`` to ``sizes`` (differentiable: slicing and pad)."""
    from .nn import functional as F
    shape = t.shape
    idx = [slice(None)] * t.ndim
    cropped = False
    pad = [0] * (2 * t.ndim)
    for d, n in zip(dims, sizes):
        if n < shape[d]:
            idx[d] = slice(0, n)
            cropped = True
        elif n > shape[d]:
            pad[2 * (t.ndim - 1 - d) + 1] = n - shape[d]
    if cropped:
        t = t[tuple(idx)]
    if any(pad):
        t = F.pad(t, pad)
    return t


# *** the three primitives ***

class FftC2CBackward0(OpNode):
    def backward(self, g):
        return _c2c(g, self.dims, _DUAL[self.norm], not self.forward)


class FftR2CBackward0(OpNode):
    def backward(self, g):
        self.saved_tensors     # (the input: for its version check, as PyTorch saves it)
        # the adjoint of keeping the first n//2+1 bins: zero-fill to the full length, then the
        # inverse transform; the engine keeps its real part for the real input
        g = _resize(g, [self.dims[-1]], [self.last])
        return _c2c(g, self.dims, _DUAL[self.norm], False)


class FftC2RBackward0(OpNode):
    def backward(self, g):
        # PyTorch's fft_c2r_backward: the one-sided transform of g, its mirrored bins doubled
        xp = xp_for(g)
        r = _r2c(g, self.dims, _DUAL[self.norm])
        d = self.dims[-1]
        double = g.shape[d] - r.shape[d]
        if double > 0:
            scale = xp.ones(r.shape[d], np.float64)
            scale[1:1 + double] = 2
            shape = [1] * r.ndim
            shape[d] = r.shape[d]
            r = r * Tensor._make(scale.reshape(shape).astype(r._data.real.dtype))
        return r


def _c2c(x, dims, norm, forward):
    xp = xp_for(x, norm, forward)
    a = x._data
    if a.dtype.kind != "c":
        a = _as_float(x, "fft")
        a = a.astype(np.complex64 if a.dtype == np.float32 else np.complex128)
    fn = _sp(a).fftn if forward else _sp(a).ifftn
    r = fn(a, axes=dims, norm=norm) if dims else a.copy()
    node = node_for(FftC2CBackward0, (x,))
    if node is not None:
        node.dims, node.norm, node.forward = list(dims), norm, forward
    return finish(node, xp.asarray(r))


def _r2c(x, dims, norm, onesided=True):
    xp = xp_for(x, norm, onesided)
    a = _as_float(x, "rfft")
    r = _sp(a).rfftn(a, axes=dims, norm=norm)
    if not onesided:  # the other half by Hermitian symmetry, as PyTorch's r2c fills it
        n = a.shape[dims[-1]]
        part = xp.take(r, n - xp.arange(n // 2 + 1, n), axis=dims[-1])
        for d in dims[:-1]:
            part = xp.roll(xp.flip(part, d), 1, d)
        r = xp.concatenate([r, xp.conj(part)], axis=dims[-1])
    node = node_for(FftR2CBackward0, (x,))
    if node is not None:
        node.dims, node.norm, node.last = list(dims), norm, a.shape[dims[-1]]
        save(node, x)
    return finish(node, xp.asarray(r))


def _c2r(x, dims, norm, last):
    xp = xp_for(x, norm, last)
    a = x._data
    if a.dtype.kind != "c":
        a = _as_float(x, "irfft")
        a = a.astype(np.complex64 if a.dtype == np.float32 else np.complex128)
    shape = [a.shape[d] for d in dims[:-1]] + [last]
    r = _sp(a).irfftn(a, s=shape, axes=dims, norm=norm)
    node = node_for(FftC2RBackward0, (x,))
    if node is not None:
        node.dims, node.norm = list(dims), norm
    return finish(node, xp.asarray(r))


# *** argument handling ***

def _dims_sizes(x, s, dim, name, default_all=True):
    """PyTorch's canonical (dims, sizes) for an n-d transform."""
    nd = x.ndim
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [wrap_dim(d, nd) for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None:
            s = list(s)
            if len(s) != len(dims):
                raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        s = list(s)
        if len(s) > nd:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} dimensions.")
        dims = list(range(nd - len(s), nd))
    else:
        dims = list(range(nd)) if default_all else []
    if s is None:
        s = [x.shape[d] for d in dims]
    s = [x.shape[d] if n == -1 else n for d, n in zip(dims, s)]
    for n in s:
        if n <= 0:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return dims, s


def _out(res, out, name):
    return res if out is None else write_out(out, res, name)


def _one(x, n, dim):
    d = wrap_dim(dim, x.ndim)
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return [d], [x.shape[d] if n is None else n]


def _cfwd(x, dims, s, norm, forward):
    x = _resize(x, dims, s)
    return _c2c(x, dims, _norm(norm), forward)


def _rfwd(x, dims, s, norm):
    if x._data.dtype.kind == "c":
        raise RuntimeError(f"rfft expects a real input tensor, but got {D._SCALAR_TYPE_NAMES[x.dtype.name]}")
    x = _resize(x, dims, s)
    return _r2c(x, dims, _norm(norm))


def _crev(x, dims, s, norm):
    last = s[-1]
    x = _resize(x, dims, list(s[:-1]) + [last // 2 + 1])
    return _c2r(x, dims, _norm(norm), last)


# *** public transforms ***

def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """One-dimensional discrete Fourier transform."""
    dims, s = _one(input, n, dim)
    if input._data.dtype.kind != "c":  # a real signal: PyTorch's two-sided r2c transform
        return _out(_r2c(_resize(input, dims, s), dims, _norm(norm), onesided=False), out, "fft_fft")
    return _out(_cfwd(input, dims, s, norm, True), out, "fft_fft")


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """One-dimensional inverse discrete Fourier transform."""
    dims, s = _one(input, n, dim)
    if input._data.dtype.kind != "c":  # ifft of a real signal: conj of its forward r2c, scaled
        from .ops.complex_ops import conj
        return _out(conj(_r2c(_resize(input, dims, s), dims, _DUAL[_norm(norm)], onesided=False)), out, "fft_ifft")
    return _out(_cfwd(input, dims, s, norm, False), out, "fft_ifft")


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The one-sided (n // 2 + 1 bins) Fourier transform of a real input."""
    dims, s = _one(input, n, dim)
    return _out(_rfwd(input, dims, s, norm), out, "fft_rfft")


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of ``rfft``: a real signal of length ``n`` (default 2 * (bins - 1))."""
    d = wrap_dim(dim, input.ndim)
    last = 2 * (input.shape[d] - 1) if n is None else n
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    return _out(_crev(input, [d], [last], norm), out, "fft_irfft")


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-dimensional discrete Fourier transform (all dimensions by default)."""
    dims, s = _dims_sizes(input, s, dim, "fftn")
    return _out(_cfwd(input, dims, s, norm, True), out, "fft_fftn")


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-dimensional inverse discrete Fourier transform."""
    dims, s = _dims_sizes(input, s, dim, "ifftn")
    return _out(_cfwd(input, dims, s, norm, False), out, "fft_ifftn")


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-dimensional Fourier transform of a real input, one-sided in the last dimension."""
    dims, s = _dims_sizes(input, s, dim, "rfftn")
    if not dims:
        raise RuntimeError("rfftn must transform at least one axis")
    return _out(_rfwd(input, dims, s, norm), out, "fft_rfftn")


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of ``rfftn``."""
    given = s is not None
    dims, s = _dims_sizes(input, s, dim, "irfftn")
    if not dims:
        raise RuntimeError("irfftn must transform at least one axis")
    if not given:
        s[-1] = 2 * (input.shape[dims[-1]] - 1)
    if s[-1] < 1:
        raise RuntimeError(f"Invalid number of data points ({s[-1]}) specified")
    return _out(_crev(input, dims, s, norm), out, "fft_irfftn")


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Two-dimensional discrete Fourier transform."""
    return _out(fftn(input, s, dim, norm), out, "fft_fft2")


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Two-dimensional inverse discrete Fourier transform."""
    return _out(ifftn(input, s, dim, norm), out, "fft_ifft2")


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Two-dimensional Fourier transform of a real input."""
    return _out(rfftn(input, s, dim, norm), out, "fft_rfft2")


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of ``rfft2``."""
    return _out(irfftn(input, s, dim, norm), out, "fft_irfft2")


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The Fourier transform of a Hermitian-symmetric signal given by its first half: a real output."""
    from .ops.complex_ops import conj
    d = wrap_dim(dim, input.ndim)
    last = 2 * (input.shape[d] - 1) if n is None else n
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    x = input if input._data.dtype.kind == "c" else input.to(D.get_default_dtype().to_complex()
                                                            if input._data.dtype.kind != "f"
                                                            else D.from_numpy_dtype(input._data.dtype).to_complex())
    return _out(_crev(conj(x), [d], [last], _DUAL[_norm(norm)]), out, "fft_hfft")


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of ``hfft``: the one-sided spectrum of a real signal, conjugated."""
    from .ops.complex_ops import conj
    dims, s = _one(input, n, dim)
    if input._data.dtype.kind == "c":
        raise RuntimeError("ihfft expects a real input tensor, but got " + D._SCALAR_TYPE_NAMES[input.dtype.name])
    return _out(conj(_rfwd(input, dims, s, _DUAL[_norm(norm)])), out, "fft_ihfft")


def _freq(values, dtype, device, requires_grad):
    xp = xp_for(values)
    from ._creation import tensor
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    r = tensor(xp.asarray(values, np.float64), dtype=dt, device=device)
    return r.requires_grad_(requires_grad) if requires_grad else r


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``."""
    xp = xp_for(n, d)
    return _freq(xp.fft.fftfreq(n, d), dtype, device, requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an ``n``-point ``rfft``."""
    xp = xp_for(n, d)
    return _freq(xp.fft.rfftfreq(n, d), dtype, device, requires_grad)


def _shift(input, dim, sign):
    if dim is None:
        dims = list(range(input.ndim))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [wrap_dim(d, input.ndim) for d in dims]
    if not dims:
        return input
    shifts = [(input.shape[d] // 2) if sign > 0 else -(input.shape[d] // 2) for d in dims]
    return input.roll(shifts, dims)


def fftshift(input, dim=None):
    """Move the zero frequency to the centre (a roll by n // 2 along ``dim``, all by default)."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """The inverse of ``fftshift``."""
    return _shift(input, dim, -1)
