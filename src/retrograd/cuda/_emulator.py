"""A strict emulated CUDA device for tests: CuPy's rules, NumPy's arithmetic, no GPU.

``enable()`` makes retrograd's ``cuda`` device run on this module instead of CuPy (until
``disable()``); nothing enables it by default, and ``import retrograd`` never imports it.

Its arrays (``ndarray``) hold a NumPy array but behave as CuPy's where a GPU program can
go wrong without a GPU in sight:

* they refuse to become NumPy arrays implicitly (``__array__`` raises CuPy's TypeError),
  NumPy's ufuncs refuse them (``__array_ufunc__ = None``) and every other NumPy function
  raises ``DeviceArrayError`` (``__array_function__``): device data is reached only through
  this module (``xp.exp``, ``xp.concatenate``...) or the array's own methods;
* mixing them with NumPy arrays in an operator or in one of this module's functions raises
  CuPy's ``TypeError: Unsupported type <class 'numpy.ndarray'>``;
* reductions give 0-d arrays, not scalars (as CuPy's: a Python ``if`` on one synchronises);
* every synchronisation with the host is counted (``SYNCS``): ``get()``, ``item()``,
  ``tolist()``, ``bool()``, ``float()``, ``int()``, ``repr()``, ``asnumpy()``, boolean-mask
  indexing and ``nonzero`` (their result's size is data); ``forbid_host_sync()`` turns each
  into a ``HostSyncError`` raised where it happens.

It is a test device: it lives in the library (not under tests/) so that
``benchmarks/gpu_check.py --emulate`` and users' own test suites can run their CUDA code
paths in CI without a GPU.
"""
import contextlib
import functools
import operator
import os
import sys
import threading
import types
import weakref

import numpy as np

__all__ = ["enable", "disable", "enabled", "ndarray", "xp", "SYNCS", "HostSyncError", "DeviceArrayError",
           "forbid_host_sync", "count_host_syncs"]

IMPLICIT_MSG = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy "
                "array explicitly.")
_np_ndarray = np.ndarray


class DeviceArrayError(TypeError):
    """A NumPy function was called on an emulated device array."""


class HostSyncError(RuntimeError):
    """A host synchronisation happened where ``forbid_host_sync()`` forbids it."""


class _Syncs(threading.local):
    def __init__(self):
        self.count = 0       # synchronisations with the host since the start
        self.h2d = 0         # copies from the host onto the device
        self.forbid = 0      # > 0: each synchronisation raises HostSyncError
        self.log = None      # a list collecting (what, where) while count_host_syncs() runs


SYNCS = _Syncs()


_TENSOR_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_tensor.py")


def _caller():
    """file:line of the code that asked (past this module and Tensor's own item/tolist/...)."""
    f = sys._getframe(2)
    here = __file__
    while f is not None and (f.f_code.co_filename == here or os.path.abspath(f.f_code.co_filename) == _TENSOR_FILE):
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "?"


def _sync(what):
    s = SYNCS
    s.count += 1
    if s.log is not None:
        s.log.append((what, _caller()))
    if s.forbid:
        raise HostSyncError(f"host synchronisation ({what}) at {_caller()} inside a region that forbids it")


@contextlib.contextmanager
def forbid_host_sync():
    """Every host synchronisation inside the block raises ``HostSyncError``."""
    SYNCS.forbid += 1
    try:
        yield
    finally:
        SYNCS.forbid -= 1


@contextlib.contextmanager
def count_host_syncs():
    """Collect the block's synchronisations: yields a list of (what, file:line)."""
    prev = SYNCS.log
    SYNCS.log = log = []
    try:
        yield log
    finally:
        SYNCS.log = prev
        if prev is not None:
            prev.extend(log)


# --- memory accounting (CuPy's pool figures) --------------------------------------------------

class _Pool:
    def __init__(self):
        self.used = 0
        self.peak = 0

    def _alloc(self, a):
        n = a.nbytes
        if n:
            self.used += n
            if self.used > self.peak:
                self.peak = self.used
            weakref.finalize(a, self._free, n)

    def _free(self, n):
        self.used -= n

    def used_bytes(self):
        return self.used

    def total_bytes(self):
        return self.peak

    def free_all_blocks(self):
        pass


_POOL = _Pool()
_PINNED = _Pool()


# --- wrapping ---------------------------------------------------------------------------------

def _check_dtype(a):
    k = a.dtype.kind
    if k in "VOUSM":
        raise TypeError(f"Unsupported dtype {a.dtype}")


def _wrap(r):
    t = type(r)
    if t is _np_ndarray:
        _check_dtype(r)
        if not r.flags.writeable:   # CuPy's views (diagonal, broadcast_to...) are writeable
            r.flags.writeable = True
        e = object.__new__(ndarray)
        e._a = r
        if r.base is None:
            _POOL._alloc(r)
        return e
    if isinstance(r, np.generic):
        a = np.asarray(r)
        _check_dtype(a)
        e = object.__new__(ndarray)
        e._a = a
        return e
    if t is tuple or t is list:
        return t(_wrap(v) for v in r)
    if isinstance(r, tuple):      # NumPy's named results (slogdet, eigh, svd...)
        return t(*(_wrap(v) for v in r))
    return r


def _unwrap(x, host_ok=False):
    t = type(x)
    if t is ndarray:
        return x._a
    if t is _np_ndarray:
        if not host_ok:
            raise TypeError(f"Unsupported type {_np_ndarray}")
        return x
    if t is tuple or t is list:
        return t(_unwrap(v, host_ok) for v in x)
    return x


def _unwrap_index(i):
    """An index for ``__getitem__``/``__setitem__`` (NumPy integer arrays in it are copied to
    the device, as CuPy does); True when it holds a boolean array (a data-sized result)."""
    t = type(i)
    if t is ndarray:
        return i._a, i._a.dtype == np.bool_
    if t is _np_ndarray:
        SYNCS.h2d += 1
        return i, i.dtype == np.bool_
    if t is tuple or t is list:
        parts = [_unwrap_index(v) for v in i]
        return t(p for p, _ in parts), any(b for _, b in parts)
    return i, False


class _Device:
    """``ndarray.device`` / ``cupy.cuda.Device``: the one emulated GPU (id 0)."""

    def __init__(self, id=0):
        self.id = int(id) if id is not None else 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        pass

    def use(self):
        pass

    def __eq__(self, other):
        return isinstance(other, _Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


class _Pointer:
    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr


_DEVICE0 = _Device(0)


class ndarray:
    """An emulated ``cupy.ndarray``: a NumPy array that only this module's functions read."""
    __slots__ = ("_a", "__weakref__")
    __array_ufunc__ = None          # NumPy's ufuncs refuse it; operators defer to its own
    _retrograd_cuda = True          # (how retrograd's device lookup tells it from other arrays)

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        a = np.empty(shape, dtype, order=order)
        _check_dtype(a)
        self._a = a
        _POOL._alloc(a)

    def __array__(self, dtype=None, copy=None):
        raise TypeError(IMPLICIT_MSG)

    def __array_function__(self, func, types, args, kwargs):
        raise DeviceArrayError(f"numpy.{func.__name__} was called on a CUDA array: use the device's "
                               "array module (retrograd.ops._base.xp_of)")

    # attributes
    @property
    def shape(self):
        return self._a.shape

    @shape.setter
    def shape(self, v):      # CuPy's in-place reshape of a view: AttributeError when it needs a copy
        self._a.shape = v
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: _wrap(self._a.T))
    mT = property(lambda self: _wrap(np.swapaxes(self._a, -1, -2)))
    device = property(lambda self: _DEVICE0)
    data = property(lambda self: _Pointer(self._a.__array_interface__["data"][0]))

    @property
    def base(self):
        b = self._a.base
        return _wrap(b) if type(b) is _np_ndarray else None

    @property
    def real(self):
        return _wrap(self._a.real)

    @real.setter
    def real(self, v):
        self._a.real = _unwrap(v)

    @property
    def imag(self):
        return _wrap(self._a.imag)

    @imag.setter
    def imag(self, v):
        self._a.imag = _unwrap(v)

    # host transfers: each one synchronises
    def get(self, stream=None, order="C", out=None, blocking=True):
        _sync("get")
        r = np.array(self._a, order=order, copy=True)
        if out is not None:
            out[...] = r
            return out
        return r

    def set(self, arr, stream=None):
        SYNCS.h2d += 1
        self._a[...] = arr

    def item(self, *args):
        _sync("item")
        return self._a.item(*args)

    def tolist(self):
        _sync("tolist")
        return self._a.tolist()

    def tobytes(self, order="C"):
        _sync("tobytes")
        return self._a.tobytes(order)

    def __bool__(self):
        _sync("bool")
        return bool(self._a)

    def __float__(self):
        _sync("float")
        return float(self._a)

    def __int__(self):
        _sync("int")
        return int(self._a)

    def __complex__(self):
        _sync("complex")
        return complex(self._a)

    def __index__(self):
        _sync("index")
        return operator.index(self._a)

    def __repr__(self):
        _sync("repr")
        return repr(self._a)

    def __str__(self):
        _sync("str")
        return str(self._a)

    def __format__(self, spec):
        _sync("format")
        return format(self._a, spec)

    def __reduce__(self):
        _sync("pickle")
        return (_from_host, (np.array(self._a),))

    def __copy__(self):
        return _wrap(self._a.copy())

    def __deepcopy__(self, memo):
        return _wrap(self._a.copy())

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (_wrap(self._a[i:i + 1].reshape(self._a.shape[1:])) for i in range(self._a.shape[0]))

    def __contains__(self, v):
        _sync("contains")
        return _unwrap(v) in self._a

    def __getitem__(self, i):
        i, boolean = _unwrap_index(i)
        if boolean:
            _sync("boolean-mask indexing")
        r = self._a[i]
        if isinstance(r, np.generic):   # CuPy gives a 0-d view, NumPy a scalar
            return _wrap(np.asarray(r))
        return _wrap(r)

    def __setitem__(self, i, v):
        i, _ = _unwrap_index(i)
        if type(v) is _np_ndarray:
            SYNCS.h2d += 1
        else:
            v = _unwrap(v)
        self._a[i] = v

    def nonzero(self):
        _sync("nonzero")
        return _wrap(self._a.nonzero())

    def __getattr__(self, name):
        raise AttributeError(f"'cupy.ndarray' (emulated) object has no attribute '{name}'")


def _from_host(a):
    return _wrap(np.array(a))


def _method(name):
    def m(self, *args, **kwargs):
        r = getattr(self._a, name)(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()})
        if r is self._a:
            return self
        return _wrap(r)
    m.__name__ = name
    return m


for _n in ("all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "choose", "clip", "compress",
           "conj", "conjugate", "copy", "cumprod", "cumsum", "diagonal", "dot", "fill", "flatten", "max", "mean",
           "min", "partition", "prod", "ptp", "put", "ravel", "repeat", "reshape", "round", "sort", "squeeze",
           "std", "sum", "swapaxes", "take", "trace", "transpose", "var", "view"):
    setattr(ndarray, _n, _method(_n))


def _binop(op, name):
    def f(self, other):
        if type(other) is _np_ndarray:
            raise TypeError(f"Unsupported type {_np_ndarray}")
        o = other._a if type(other) is ndarray else other
        if type(o) is not _np_ndarray and not isinstance(o, (int, float, complex, bool, np.generic)):
            return NotImplemented
        return _wrap(op(self._a, o))
    f.__name__ = name
    return f


def _rbinop(op, name):
    def f(self, other):
        if type(other) is _np_ndarray:
            raise TypeError(f"Unsupported type {_np_ndarray}")
        if not isinstance(other, (int, float, complex, bool, np.generic)):
            return NotImplemented
        return _wrap(op(other, self._a))
    f.__name__ = name
    return f


def _ibinop(op, name):
    def f(self, other):
        if type(other) is _np_ndarray:
            raise TypeError(f"Unsupported type {_np_ndarray}")
        op(self._a, _unwrap(other))
        return self
    f.__name__ = name
    return f


for _n, _op, _iop in (("add", operator.add, operator.iadd), ("sub", operator.sub, operator.isub),
                      ("mul", operator.mul, operator.imul), ("truediv", operator.truediv, operator.itruediv),
                      ("floordiv", operator.floordiv, operator.ifloordiv), ("mod", operator.mod, operator.imod),
                      ("pow", operator.pow, operator.ipow), ("matmul", operator.matmul, operator.imatmul),
                      ("and", operator.and_, operator.iand), ("or", operator.or_, operator.ior),
                      ("xor", operator.xor, operator.ixor), ("lshift", operator.lshift, operator.ilshift),
                      ("rshift", operator.rshift, operator.irshift)):
    setattr(ndarray, f"__{_n}__", _binop(_op, f"__{_n}__"))
    setattr(ndarray, f"__r{_n}__", _rbinop(_op, f"__r{_n}__"))
    setattr(ndarray, f"__i{_n}__", _ibinop(_iop, f"__i{_n}__"))
for _n, _op in (("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt), ("le", operator.le),
                ("gt", operator.gt), ("ge", operator.ge), ("divmod", divmod)):
    setattr(ndarray, f"__{_n}__", _binop(_op, f"__{_n}__"))
ndarray.__hash__ = None
ndarray.__neg__ = lambda self: _wrap(-self._a)
ndarray.__pos__ = lambda self: _wrap(+self._a)
ndarray.__abs__ = lambda self: _wrap(abs(self._a))
ndarray.__invert__ = lambda self: _wrap(~self._a)


# --- the array module -------------------------------------------------------------------------

# CuPy's functions that take host data (and copy it onto the device)
_FROM_HOST = {"array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray"}
# functions whose result's size is data: CuPy synchronises to size it
_SIZED_BY_DATA = {"nonzero", "argwhere", "flatnonzero", "unique", "extract", "compress", "trim_zeros"}


def _function(fn, name):
    host_ok = name in _FROM_HOST
    syncs = name in _SIZED_BY_DATA

    @functools.wraps(fn)
    def f(*args, **kwargs):
        if host_ok and args and type(args[0]) is _np_ndarray:
            SYNCS.h2d += 1        # a copy onto the device: never the host's memory
            args = (np.array(args[0], copy=True),) + args[1:]
        a = _unwrap(args, host_ok)
        k = {n: _unwrap(v, host_ok) for n, v in kwargs.items()} if kwargs else kwargs
        if syncs:
            _sync(name)
        r = fn(*a, **k)
        if args and r is a[0] and type(args[0]) is ndarray:
            return args[0]
        return _wrap(r)
    return f


class _Ufunc:
    """A NumPy ufunc taking and giving emulated arrays (``xp.add``, ``xp.add.at``...)."""

    def __init__(self, uf):
        self._uf = uf
        self.__name__ = uf.__name__
        self.nin, self.nout, self.nargs = uf.nin, uf.nout, uf.nargs
        for m in ("reduce", "accumulate", "outer", "reduceat"):
            setattr(self, m, _function(getattr(uf, m), m))

    def __call__(self, *args, **kwargs):
        a = _unwrap(args)
        k = {n: _unwrap(v) for n, v in kwargs.items()} if kwargs else kwargs
        return _wrap(self._uf(*a, **k))

    def at(self, a, indices, b=None):
        i, _ = _unwrap_index(indices)
        if b is None:
            self._uf.at(_unwrap(a), i)
        else:
            self._uf.at(_unwrap(a), i, _unwrap(b))

    def __repr__(self):
        return f"<emulated ufunc '{self.__name__}'>"


class _Module(types.ModuleType):
    """A CuPy-like namespace over a NumPy one: its functions take and give emulated arrays."""

    def __init__(self, name, base, extra=None):
        super().__init__(name)
        self._base = base
        self._cache = {}
        if extra:
            self.__dict__.update(extra)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        c = self.__dict__["_cache"]
        if name in c:
            return c[name]
        try:
            v = getattr(self.__dict__["_base"], name)
        except AttributeError:
            raise AttributeError(f"module '{self.__name__}' (emulated CuPy) has no attribute '{name}'") from None
        if isinstance(v, np.ufunc):
            r = _Ufunc(v)
        elif isinstance(v, type) or not callable(v):
            r = v               # dtypes, scalar types, constants
        else:
            r = _function(v, name)
        c[name] = r
        return r


def _asnumpy(a, stream=None, order="C", out=None, blocking=True):
    if type(a) is ndarray:
        return a.get(order=order, out=out)
    return np.asarray(a, order=order)


def _get_array_module(*args):
    return xp if any(type(a) is ndarray for a in args) else np


def _count():
    return 1


def _props(i=0):
    return {"name": b"Emulated CUDA device (NumPy)", "major": 8, "minor": 0, "totalGlobalMem": 16 << 30,
            "multiProcessorCount": 1}


_runtime = types.SimpleNamespace(getDeviceCount=_count, getDevice=lambda: 0, setDevice=lambda i: None,
                                 getDeviceProperties=_props, deviceSynchronize=lambda: None)


class _Stream:
    null = None

    def __init__(self, non_blocking=False):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        pass


_Stream.null = _Stream()


def _pinned_empty(shape, dtype=float):
    a = np.empty(shape, dtype)
    _PINNED._alloc(a)
    return a


_cuda = types.SimpleNamespace(Device=_Device, runtime=_runtime, Stream=_Stream, get_current_stream=lambda: _Stream.null,
                              is_available=lambda: True, emulated=True)
_random_state = np.random.RandomState(0)


def _seed(s=None):
    _random_state.seed(None if s is None else int(s) & 0xFFFFFFFF)


_random = _Module("cupy.random", _random_state, {"seed": _seed, "RandomState": np.random.RandomState})


class _Only(_Module):
    """A CuPy namespace with only the names CuPy 13 has (NumPy's / SciPy's have more): code that
    passes here cannot reach for a routine a real GPU build lacks. ``base`` is imported on first use."""

    def __init__(self, name, base, names, extra=None):
        super().__init__(name, None, extra)
        self.__dict__["_import"], self.__dict__["_names"] = base, frozenset(names)

    def __getattr__(self, name):
        if name not in self.__dict__["_names"]:
            raise AttributeError(f"module '{self.__name__}' (emulated CuPy) has no attribute '{name}'")
        if self.__dict__["_base"] is None:
            import importlib
            self.__dict__["_base"] = importlib.import_module(self.__dict__["_import"])
        return super().__getattr__(name)


def _solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=False):
    """cupyx.scipy.linalg.solve_triangular (cuBLAS trsm): a zero pivot gives inf/nan, never an error."""
    import scipy.linalg
    a, b = _unwrap(a), _unwrap(b)
    with np.errstate(all="ignore"):
        try:
            return _wrap(scipy.linalg.solve_triangular(a, b, trans, lower, unit_diagonal, check_finite=False))
        except np.linalg.LinAlgError:
            pass
        m = a.T if trans in (1, "T") else a.conj().T if trans in (2, "C") else a
        m = np.array(m, dtype=np.result_type(a, b))
        up = lower == (trans not in (0, "N"))
        if unit_diagonal:
            m[np.diag_indices(len(m))] = 1
        x = np.zeros(b.shape, m.dtype)
        for i in (range(len(m) - 1, -1, -1) if up else range(len(m))):
            x[i] = (b[i] - m[i] @ x) / m[i, i]
        return _wrap(x)


def _reads_info(name):
    """cupyx.scipy.linalg's ``name``, which reads cuSOLVER's info on the host after each call."""
    def f(*args, **kwargs):
        import scipy.linalg
        r = _function(getattr(scipy.linalg, name), name)(*args, **kwargs)
        _sync(f"{name} info")
        return r
    f.__name__ = name
    return f


# cupy.linalg and cupyx.scipy.linalg of CuPy 13 (eig, eigvals, cond, multi_dot, ldl, qr's LAPACK
# pieces, expm... are missing there)
_LINALG = _Only("cupy.linalg", "numpy.linalg", (
    "cholesky", "qr", "svd", "eigh", "eigvalsh", "norm", "det", "matrix_rank", "slogdet", "solve", "tensorsolve",
    "lstsq", "inv", "pinv", "tensorinv", "matrix_power", "LinAlgError"))
_SCIPY_LINALG = _Only("cupyx.scipy.linalg", "scipy.linalg", (
    "solve_triangular", "lu", "lu_factor", "lu_solve", "block_diag", "circulant", "companion",
    "convolution_matrix", "dft", "fiedler", "fiedler_companion", "hadamard", "hankel", "helmert", "hilbert", "kron",
    "leslie", "toeplitz"), {"solve_triangular": _solve_triangular, "lu_factor": _reads_info("lu_factor"),
                            "lu_solve": _reads_info("lu_solve")})


def _as_strided(x, shape=None, strides=None):
    """CuPy's ``as_strided`` (no ``writeable``: device views are always writeable)."""
    return _wrap(np.lib.stride_tricks.as_strided(_unwrap(x), shape, strides))


class _LazySpecial(_Module):
    """cupyx.scipy.special: scipy.special imported on first use, limited to the names
    cupyx.scipy.special has (code that passes here must find its functions on a real GPU)."""

    # cupyx.scipy.special's names in CuPy 13 (its __init__.py exports these same ones from
    # v13.0.0 to v13.6.0); the rest of scipy.special is missing there, so here too
    NAMES = frozenset("""
        bdtr bdtrc bdtri beta betainc betaincinv betaln binom boxcox boxcox1p btdtr btdtri cbrt
        chdtr chdtrc chdtri cosdg cosm1 cotdg digamma ellipj ellipk ellipkm1 entr erf erfc erfcinv
        erfcx erfinv exp1 exp10 exp2 expi expit expm1 expn exprel fdtr fdtrc fdtri gamma gammainc
        gammaincc gammainccinv gammaincinv gammaln gammasgn gdtr gdtrc huber i0 i0e i1 i1e
        inv_boxcox inv_boxcox1p j0 j1 k0 k0e k1 k1e kl_div log1p log_expit log_ndtr log_softmax
        loggamma logit logsumexp lpmv multigammaln nbdtr nbdtrc nbdtri ndtr ndtri pdtr pdtrc pdtri
        poch polygamma pseudo_huber psi radian rel_entr rgamma round sinc sindg softmax sph_harm
        spherical_yn tandg xlog1py xlogy y0 y1 yn zeta zetac""".split())

    def __getattr__(self, name):
        if name not in _LazySpecial.NAMES:
            raise AttributeError(f"module 'cupyx.scipy.special' (emulated CuPy) has no attribute '{name}'")
        if self.__dict__["_base"] is None:
            import scipy.special
            self.__dict__["_base"] = scipy.special
        return super().__getattr__(name)


_lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(as_strided=_as_strided))

xp = _Module("cupy", np, {
    "lib": _lib,
    "ndarray": ndarray, "asnumpy": _asnumpy, "get_array_module": _get_array_module, "cuda": _cuda,
    "get_default_memory_pool": lambda: _POOL, "get_default_pinned_memory_pool": lambda: _PINNED,
    "linalg": _LINALG, "_scipy_linalg": _SCIPY_LINALG, "fft": _Module("cupy.fft", np.fft), "random": _random,
    "emulated": True, "__version__": "emulated (NumPy " + np.__version__ + ")",
    "_pinned_empty": _pinned_empty, "_scipy_special": _LazySpecial("cupyx.scipy.special", None),
})


# --- switching retrograd's cuda device onto it -----------------------------------------------

def enable():
    """Run retrograd's ``cuda`` tensors on this emulated device (``torch.cuda.is_available()``
    becomes True, with one device, ``cuda:0``)."""
    from .. import _device
    _device._CUDA_XP[0] = xp


def disable():
    """Back to CuPy (or to no CUDA at all)."""
    from .. import _device
    if _device._CUDA_XP[0] is xp:
        _device._CUDA_XP[0] = None


def enabled():
    from .. import _device
    return _device._CUDA_XP[0] is xp


@contextlib.contextmanager
def emulated():
    """``with emulated():`` runs the block with the emulated device enabled."""
    was = enabled()
    enable()
    try:
        yield xp
    finally:
        if not was:
            disable()
