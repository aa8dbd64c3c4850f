"""The ``meta`` device: tensors with a shape, a dtype and strides but no storage.

A meta tensor's ``_data`` is a ``MetaArray``. NumPy code that ops run on it goes through
NumPy's dispatch protocols (``__array_ufunc__``, ``__array_function__``) and the methods
below: elementwise ufuncs compute only the result's shape and dtype; views (transpose,
basic indexing, broadcast, reshape) compute their shapes and strides on a stand-in that is
never read; anything else runs on stand-ins whose every element is the same one value
(zero strides: O(1) memory for any shape) and keeps only the result's shape and dtype.
Ordinary tensors never reach this module: their ``_data`` is an ``np.ndarray``.
"""
import math
import operator
import warnings

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

__all__ = ["MetaArray", "xp", "is_meta", "NO_DATA"]

NO_DATA = "Cannot copy out of meta tensor; no data!"


def _contiguous(shape, itemsize):
    st, acc = [], itemsize
    for n in reversed(shape):
        st.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(st))


def like_strides(a, dtype):
    """Strides (bytes) of a copy of ``a`` as ``dtype`` that keeps ``a``'s order of dimensions
    (NumPy's order='K', PyTorch's preserve_format)."""
    dtype = np.dtype(dtype)
    order = sorted(range(a.ndim), key=lambda i: -abs(a.strides[i]))
    st, acc = [0] * a.ndim, dtype.itemsize
    for i in reversed(order):
        st[i] = acc
        acc *= max(a.shape[i], 1)
    return tuple(st)


def _standin(shape, dtype):
    return np.broadcast_to(np.zeros((), dtype), shape)


def _unwrap(x):
    if type(x) is MetaArray:
        return x._standin()
    if type(x) in (list, tuple):
        return type(x)(_unwrap(v) for v in x)
    return x


def _wrap(r):
    if isinstance(r, np.ndarray):
        return MetaArray(r.shape, r.dtype)
    if isinstance(r, np.generic):
        return MetaArray((), r.dtype)
    if type(r) in (list, tuple):
        return type(r)(_wrap(v) for v in r)
    return r


def _matmul_shape(a, b):
    if not a or not b:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 (size {b2[-2]} is "
                         f"different from {a2[-1]})")
    out = np.broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    if len(b) == 1:
        out = out[:-1]
    if len(a) == 1:
        out = out[:-2] + out[-1:] if len(b) != 1 else out[:-1]
    return out


def _reduced(a, fn, args, kwargs, axis_pos=0):
    """Shape and dtype of a reduction of ``a`` (sum, max, argmax, std...), from the reduction of
    a one-element stand-in: no pass over the elements."""
    axis = kwargs.get("axis", args[axis_pos] if len(args) > axis_pos else None)
    keep = kwargs.get("keepdims", False)
    nd = a.ndim
    if axis is None:
        axes = set(range(nd))
    else:
        axes = {int(ax) % max(nd, 1) for ax in (axis if isinstance(axis, (tuple, list)) else (axis,))}
    kw = {k: v for k, v in kwargs.items() if k not in ("out", "where", "initial")}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (ddof on one element: NumPy's own warning)
        r = fn(_standin((1,) * nd, a.dtype), *_unwrap(args), **_unwrap_kw(kw))
    dt = np.asarray(r).dtype
    if keep:
        shape = tuple(1 if i in axes else n for i, n in enumerate(a.shape))
    else:
        shape = tuple(n for i, n in enumerate(a.shape) if i not in axes)
    return MetaArray(shape, dt)


def _unwrap_kw(kw):
    return {k: _unwrap(v) for k, v in kw.items()}


_REDUCING_METHODS = {"sum", "mean", "prod", "max", "min", "argmax", "argmin", "std", "var", "any", "all", "ptp"}


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous")
    writeable = True
    aligned = True
    owndata = False

    def __init__(self, c, f):
        self.c_contiguous, self.f_contiguous = c, f

    def __getitem__(self, k):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous, "WRITEABLE": True,
                "C": self.c_contiguous, "F": self.f_contiguous}[k]


class _NoPtr:
    ptr = 0


class MetaArray(NDArrayOperatorsMixin):
    """Shape, dtype and strides (in bytes, as NumPy's) of an array that has no storage."""
    __slots__ = ("_shape", "dtype", "_st")
    base = None
    data = _NoPtr()           # Tensor.data_ptr() of a meta tensor is 0, as PyTorch's

    def __init__(self, shape, dtype, strides=None):
        self._shape = tuple(operator.index(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self._st = None if strides is None or tuple(strides) == _contiguous(self.shape, self.dtype.itemsize) \
            else tuple(strides)

    # --- what ndarray code reads --------------------------------------------------------
    @property
    def shape(self):
        return self._shape

    @shape.setter
    def shape(self, shape):
        # ndarray's in-place reshape: only where a view is possible
        r = self.reshape(shape)
        if r.size and r._st is None and self._st is not None and not self.flags.c_contiguous:
            raise AttributeError("Incompatible shape for in-place modification. Use `.reshape()` to make a "
                                 "copy with the desired shape.")
        self._shape, self._st = r._shape, r._st

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.dtype.itemsize)

    @property
    def strides(self):
        return self._st if self._st is not None else _contiguous(self.shape, self.dtype.itemsize)

    @property
    def flags(self):
        if self._st is None:
            return _Flags(True, self.ndim <= 1 or sum(n > 1 for n in self.shape) <= 1)
        c = _contiguous(self.shape, self.itemsize)
        same = all(a == b for a, b, n in zip(self._st, c, self.shape) if n > 1)
        f = _contiguous(self.shape[::-1], self.itemsize)[::-1]
        return _Flags(same, all(a == b for a, b, n in zip(self._st, f, self.shape) if n > 1))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self):
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    def __array_namespace__(self, api_version=None):
        return xp

    def _standin(self):
        return _standin(self.shape, self.dtype)

    def _proxy(self):
        """A view with this array's shape and strides over one element: only metadata
        operations (that never read) may be applied to it."""
        return np.lib.stride_tricks.as_strided(np.zeros(1, self.dtype), self.shape, self.strides, writeable=False)

    def _view(self, fn):
        r = fn(self._proxy())
        return MetaArray(r.shape, r.dtype, r.strides)

    # --- data access: there is none ------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(NO_DATA)

    def get(self):
        raise NotImplementedError(NO_DATA)

    def tolist(self):
        raise NotImplementedError(NO_DATA)

    def item(self, *args):
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    def __bool__(self):
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    def __float__(self):
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    __int__ = __index__ = __float__

    def fill(self, value):
        pass

    def __setitem__(self, index, value):
        pass

    # --- views ---------------------------------------------------------------------------
    def __getitem__(self, index):
        idx = index if type(index) is tuple else (index,)
        if all(i is None or i is Ellipsis or type(i) in (int, slice) or isinstance(i, np.integer) for i in idx):
            return self._view(lambda p: p[index])
        return _wrap(self._standin()[_unwrap(index)])

    def transpose(self, *axes):
        return self._view(lambda p: p.transpose(*axes))

    @property
    def T(self):
        return self.transpose()

    @property
    def mT(self):
        return self._view(lambda p: np.swapaxes(p, -1, -2))

    def swapaxes(self, a, b):
        return self._view(lambda p: p.swapaxes(a, b))

    def squeeze(self, axis=None):
        return self._view(lambda p: p.squeeze(axis))

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        p = self._proxy()
        n = self.size
        shape = tuple(int(s) for s in shape)
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            shape = tuple((n // known if known else 0) if s == -1 else s for s in shape)
        if math.prod(shape) != n:
            raise ValueError(f"cannot reshape array of size {n} into shape {shape}")
        if self._st is None:
            return MetaArray(shape, self.dtype)
        try:     # a view where NumPy makes one (the proxy is never read: no copy is allowed)
            r = p.view()
            r.shape = shape
            return MetaArray(shape, self.dtype, r.strides)
        except (AttributeError, ValueError):
            return MetaArray(shape, self.dtype)

    def view(self, dtype=None, type=None):
        if dtype is None or np.dtype(dtype) == self.dtype:
            return MetaArray(self.shape, self.dtype, self._st)
        return _wrap(self._standin().view(dtype))

    def ravel(self, order="C"):
        return self.reshape(-1)

    def flatten(self, order="C"):
        return MetaArray((self.size,), self.dtype)

    def copy(self, order="C"):
        if order == "K" and self._st is not None:
            return self._view(lambda p: np.empty_like(p))
        return MetaArray(self.shape, self.dtype)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        return MetaArray(self.shape, dtype, self._st if order == "K" else None)

    def conj(self):
        return MetaArray(self.shape, self.dtype)

    conjugate = conj

    @property
    def real(self):
        return MetaArray(self.shape, np.empty(0, self.dtype).real.dtype)

    @property
    def imag(self):
        return MetaArray(self.shape, np.empty(0, self.dtype).imag.dtype)

    def __getattr__(self, name):
        # Other ndarray methods (sum, max, argmax, nonzero...): on the stand-in.
        if name.startswith("__"):
            raise AttributeError(name)
        if name in _REDUCING_METHODS:
            fn = getattr(np.ndarray, name)
            return lambda *args, **kwargs: _reduced(self, fn, args, kwargs)
        attr = getattr(self._standin(), name)
        if not callable(attr):
            return _wrap(attr)

        def method(*args, **kwargs):
            kwargs.pop("out", None)
            return _wrap(attr(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))
        return method

    # --- NumPy's dispatch ------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if out is not None and any(type(o) is not MetaArray for o in out) or \
                method == "at" and type(inputs[0]) is not MetaArray:
            raise NotImplementedError(NO_DATA)    # meta "values" written into real storage
        if method == "__call__" and ufunc.signature is None:
            shape = np.broadcast_shapes(*(np.shape(i) if not isinstance(i, MetaArray) else i.shape for i in inputs))
            samples = [np.zeros((), i.dtype) if isinstance(i, (MetaArray, np.ndarray)) else i for i in inputs]
            kwargs.pop("where", None)
            with np.errstate(all="ignore"):
                r = ufunc(*samples, **kwargs)
            rs = r if ufunc.nout > 1 else (r,)
            res = tuple(MetaArray(shape, np.asarray(x).dtype) for x in rs)
        elif method == "reduce" and isinstance(inputs[0], MetaArray):
            kw = dict(kwargs)
            kw.setdefault("axis", 0)          # ufunc.reduce's default
            res = (_reduced(inputs[0], ufunc.reduce, inputs[1:], kw),)
        elif method == "__call__" and ufunc is np.matmul:
            a, b = (i.shape if isinstance(i, MetaArray) else np.shape(i) for i in inputs)
            dt = ufunc(*(np.zeros((1,) * max(len(np.shape(i)), 1), i.dtype) for i in inputs)).dtype
            res = (MetaArray(_matmul_shape(a, b), dt),)
        else:
            kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
            with np.errstate(all="ignore"):
                r = getattr(ufunc, method)(*_unwrap(inputs), **kwargs)
            if method == "at":
                return None
            res = _wrap(r) if ufunc.nout > 1 else (_wrap(r),)
        if out is not None:   # written in place: the output keeps its own metadata
            return out if ufunc.nout > 1 else out[0]
        return res if ufunc.nout > 1 else res[0]

    def __array_function__(self, func, types, args, kwargs):
        if func in _NOOPS:
            return None
        if func in _VIEWS:
            proxied = [a._proxy() if isinstance(a, MetaArray) else a for a in args]
            r = func(*proxied, **kwargs)
            return MetaArray(r.shape, r.dtype, r.strides)
        if func in _FALSE:
            return False
        if func in _REDUCTIONS and isinstance(args[0], MetaArray):
            return _reduced(args[0], func, args[1:], kwargs)
        if func in (np.concatenate, np.stack):
            arrays = [a if isinstance(a, MetaArray) else MetaArray(np.shape(a), np.asarray(a).dtype) for a in args[0]]
            axis = kwargs.get("axis", args[1] if len(args) > 1 else 0)
            small = [_standin(tuple(min(n, 1) for n in a.shape), a.dtype) for a in arrays]
            dt = func(small, axis=axis).dtype if axis is not None else np.result_type(*small)
            if func is np.stack:
                shape = list(arrays[0].shape)
                shape.insert(axis % (len(shape) + 1), len(arrays))
            elif axis is None:
                shape = [sum(a.size for a in arrays)]
            else:
                shape = list(arrays[0].shape)
                shape[axis % len(shape)] = sum(a.shape[axis % len(shape)] for a in arrays)
            return MetaArray(tuple(shape), kwargs.get("dtype") or dt)
        if func in _LIKE:
            a = args[0]
            dt = kwargs.get("dtype") or (args[2] if func is np.full_like and len(args) > 2 else
                                         args[1] if func is not np.full_like and len(args) > 1 else None)
            return MetaArray(kwargs.get("shape") or a.shape, a.dtype if dt is None else dt)
        kw = {k: _unwrap(v) for k, v in kwargs.items()}
        kw.pop("out", None)
        with np.errstate(all="ignore"):
            return _wrap(func(*_unwrap(args), **kw))


_NOOPS = {np.copyto, np.put, np.place, np.putmask, np.fill_diagonal}
_VIEWS = {np.transpose, np.swapaxes, np.moveaxis, np.broadcast_to, np.expand_dims, np.squeeze,
          np.lib.stride_tricks.as_strided, np.diagonal, np.real, np.imag}
_REDUCTIONS = {np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.argmax, np.argmin, np.std, np.var,
               np.any, np.all, np.nansum, np.nanmean, np.nanmax, np.nanmin, np.nanstd, np.nanvar, np.nanprod,
               np.median, np.nanmedian, np.count_nonzero, np.ptp}
_LIKE = {np.empty_like, np.zeros_like, np.ones_like, np.full_like}
_FALSE = {np.shares_memory, np.may_share_memory}


def is_meta(a):
    return type(a) is MetaArray


class _MetaNamespace:
    """The array module of the meta device (``xp_of`` of a meta tensor): constructors make
    MetaArrays, everything else is NumPy's (which dispatches on MetaArray arguments)."""

    @staticmethod
    def _shape(shape):
        return (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)

    def empty(self, shape, dtype=float, *args, **kwargs):
        return MetaArray(self._shape(shape), dtype)

    zeros = ones = empty

    def full(self, shape, fill_value, dtype=None, *args, **kwargs):
        return MetaArray(self._shape(shape), dtype if dtype is not None else np.asarray(fill_value).dtype)

    def empty_like(self, a, dtype=None, *args, **kwargs):
        return MetaArray(a.shape, a.dtype if dtype is None else dtype)

    zeros_like = ones_like = empty_like

    def full_like(self, a, fill_value, dtype=None, *args, **kwargs):
        return MetaArray(a.shape, a.dtype if dtype is None else dtype)

    def asarray(self, a, dtype=None, **kwargs):
        if isinstance(a, MetaArray):
            return a if dtype is None else a.astype(dtype, copy=False)
        a = np.asarray(a, dtype=dtype)
        return MetaArray(a.shape, a.dtype)

    array = ascontiguousarray = asarray

    def __getattr__(self, name):
        return getattr(np, name)


xp = _MetaNamespace()


class NoDraws:
    """Stands for the generator in a random fill of a meta tensor: "samples" of the asked
    shape, none drawn."""
    def __getattr__(self, name):
        def draw(*args, size=None, dtype=np.float64, **kwargs):
            shape = size if size is not None else args[-1] if args else ()
            return MetaArray((shape,) if isinstance(shape, (int, np.integer)) else shape, dtype)
        return draw
