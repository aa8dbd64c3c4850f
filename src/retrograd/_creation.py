"""Creating tensors: from data, filled, ranges, random; the random generators."""
import builtins
import math
import os
import sys
import warnings

import numpy as np

from . import _dtype as D
from . import _rng
from ._device import CPU, to_device, array_module, DEFAULT as _DEFAULT_DEVICE
from ._device import device as _device_cls
from ._tensor import Tensor, Size
from .autograd import grad_mode

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "zeros", "ones", "full", "empty",
           "zeros_like", "ones_like", "full_like", "empty_like", "arange", "range", "linspace",
           "logspace", "eye", "rand", "randn", "randint", "randperm", "rand_like", "randn_like",
           "randint_like", "normal", "bernoulli", "multinomial", "manual_seed", "seed",
           "initial_seed", "Generator", "default_generator", "get_rng_state", "set_rng_state",
           "scalar_tensor", "empty_strided"]

_make = Tensor._make
_bint, _bfloat, _bbool, _brange = builtins.int, builtins.float, builtins.bool, builtins.range


# --- generators ----------------------------------------------------------------------------

class Generator:
    """A random number generator: PyTorch's CPU generator (a 32-bit Mersenne Twister), so a
    seed gives PyTorch's numbers."""

    def __init__(self, device="cpu"):
        self.device = to_device(device)
        self._seed = _rng.DEFAULT_SEED
        self._eng = None            # made on first draw (numpy.random loads then)

    @property
    def _engine(self):
        e = self._eng
        if e is None:
            if self._seed is None:   # (the default generator: a seed from the OS, as PyTorch's)
                self._seed = _bint.from_bytes(os.urandom(8), "little")
            e = self._eng = _rng.Engine(self._seed)
        return e

    @property
    def _np(self):
        """NumPy's sampling API over this generator's stream (for the draws whose PyTorch
        algorithm is not reproduced: they still advance, and are restored with, this state)."""
        return np.random.Generator(self._engine.bg)

    def manual_seed(self, seed):
        """Reseed; returns the generator."""
        if not isinstance(seed, (_bint, np.integer)) or isinstance(seed, (_bbool, np.bool_)):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        seed = _bint(seed)
        if not -2 ** 63 <= seed < 2 ** 64:
            raise ValueError("Overflow when unpacking long long")
        self._seed = seed & 0xFFFFFFFFFFFFFFFF
        if self._eng is None:
            self._eng = _rng.Engine(self._seed)
        else:
            self._eng.reseed(self._seed)
        return self

    def seed(self):
        """Reseed from the OS's entropy; returns the new seed."""
        s = _bint.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def initial_seed(self):
        if self._seed is None:
            self._engine
        return self._seed

    def get_state(self):
        """The generator's state as a uint8 tensor of PyTorch's layout (5056 bytes: seed,
        Mersenne Twister words and position, the cached normal sample), so states move between
        retrograd and PyTorch."""
        e = self._engine
        key, pos = e.key_pos()
        raw = bytearray(_STATE_BYTES)
        head = np.zeros(3, np.uint64)
        head[0] = self._seed
        # (PyTorch keeps "words left" and "next index"; its freshly seeded state is left=1, next=0)
        head[1] = (625 - pos) | (1 << 32)     # left, seeded
        head[2] = 0 if e.is_fresh(key, pos) else pos
        raw[0:24] = head.tobytes()
        raw[24:24 + 8 * _rng.N] = key.astype("<u8").tobytes()
        if e.cached is not None:
            raw[5024:5032] = np.float64(e.cached).tobytes()
            raw[5040] = 1
        return _make(np.frombuffer(bytes(raw), dtype=np.uint8).copy())

    def set_state(self, new_state):
        """Restore a state from ``get_state`` (or from PyTorch's ``get_rng_state``)."""
        if not isinstance(new_state, Tensor) or new_state._data.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        raw = np.ascontiguousarray(new_state._data).tobytes()
        if len(raw) != _STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but found the input RNG "
                               f"state size to be {len(raw)}")
        seed, left_seeded, nxt = np.frombuffer(raw[:24], "<u8").tolist()
        left, seeded = left_seeded & 0xFFFFFFFF, left_seeded >> 32
        if seeded != 1 or not 1 <= left <= _rng.N or nxt > _rng.N:
            raise RuntimeError("Invalid mt19937 state")
        key = np.frombuffer(raw[24:24 + 8 * _rng.N], "<u8").astype(np.uint32)
        e = self._eng if self._eng is not None else _rng.Engine(0)
        e.set_key(key, _rng.N if left == 1 else nxt, fresh=left == 1 and nxt == 0)
        e.cached = np.frombuffer(raw[5024:5032], "<f8")[0].item() if raw[5040] else None
        self._seed, self._eng = seed, e
        return self


_STATE_BYTES = 5056

default_generator = Generator()
default_generator._seed = None    # (PyTorch seeds its default generator from the OS at start)


def _gen(generator):
    """NumPy's sampling API over ``generator``'s (or the default) stream (for the samplers
    whose PyTorch algorithm is not reproduced: gamma, Poisson, binomial)."""
    return (generator or default_generator)._np


def _engine(generator):
    """The PyTorch-exact draws of ``generator`` (or of the default generator)."""
    return (generator or default_generator)._engine


def _engine_for(t, generator):
    """``_engine``, or nothing to draw from for a meta tensor (PyTorch's meta kernels draw
    nothing and leave the generator's state as it was)."""
    if type(t._data) is not np.ndarray and t.is_meta:
        return None
    return _engine(generator)


def manual_seed(seed):
    """Seed the default generator (and CuPy's, when in use)."""
    seed = _bint(seed)
    default_generator.manual_seed(seed)
    from . import _device
    if _device._CUDA_XP[0] is not None or "cupy" in sys.modules:   # (never imports CuPy itself)
        from . import cuda
        cuda.manual_seed_all(seed)
    return default_generator


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


# --- helpers ------------------------------------------------------------------------------

def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = size[0]
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (_bint, np.integer)):
            raise TypeError(f"empty(): argument 'size' must be tuple of ints, but found element of type "
                            f"{type(s).__name__} at pos {len(out)}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(_bint(s))
    return tuple(out)


_PY_DTYPES = (builtins.float, builtins.int, builtins.bool, builtins.complex)


_OPTS = ("torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, "
         "bool pin_memory = False, bool requires_grad = False")
_OUT = "Tensor out = None, " + _OPTS
_LIN = [f"({a} start, {b} end, int steps{{base}}, *, {_OUT})"
        for a, b in (("Tensor", "Tensor"), ("Number", "Tensor"), ("Tensor", "Number"), ("Number", "Number"))]
# Functions PyTorch declares with several signatures: a wrongly typed argument gets the
# parser's "invalid combination" message listing them, not the one-signature message.
_OVERLOADS = {
    "arange": [f"(Number end, *, {_OUT})", f"(Number start, Number end, *, {_OPTS})",
               f"(Number start, Number end, Number step = 1, *, {_OUT})"],
    "eye": [f"(int n, *, {_OUT})", f"(int n, int m, *, {_OUT})"],
    "rand": [f"(tuple of ints size, *, torch.Generator generator, {_OUT})", f"(tuple of ints size, *, {_OUT})"],
    "randn": [f"(tuple of ints size, *, torch.Generator generator, {_OUT})", f"(tuple of ints size, *, {_OUT})"],
    "randint": [f"(int high, tuple of ints size, *, torch.Generator generator, {_OUT})",
                f"(int high, tuple of ints size, *, {_OUT})",
                f"(int low, int high, tuple of ints size, *, torch.Generator generator, {_OUT})",
                f"(int low, int high, tuple of ints size, *, {_OUT})"],
    "linspace": [s.format(base="") for s in _LIN],
    "logspace": [s.format(base=", float base = 10.0") for s in _LIN],
}


def _check_args(fname, dtype=None, device=None, requires_grad=None, args=()):
    """Reject wrongly typed keyword arguments as PyTorch's argument parser does (``args``:
    the positional arguments, named in the message of a function with several signatures)."""
    bad = None
    if dtype is not None and not isinstance(dtype, D.dtype) and dtype not in _PY_DTYPES:
        bad = ("dtype", "torch.dtype", dtype)
    elif device is not None and not isinstance(device, (str, _bint, _device_cls)) or isinstance(device, _bbool):
        bad = ("device", "torch.device", device)
    elif requires_grad is not None and not isinstance(requires_grad, _bbool):
        bad = ("requires_grad", "bool", requires_grad)
    if bad is None:
        return
    if fname in _OVERLOADS:
        got = [type(a).__name__ for a in args if a is not None]
        for k, v in (("dtype", dtype), ("device", device), ("requires_grad", requires_grad)):
            if v is not None and v is not False:
                got.append(f"{k}={type(v).__name__}")
        raise TypeError(f"{fname}() received an invalid combination of arguments - got ({', '.join(got)}), but "
                        "expected one of:\n" + "".join(f" * {sig}\n" for sig in _OVERLOADS[fname]))
    raise TypeError(f"{fname}(): argument '{bad[0]}' must be {bad[1]}, not {type(bad[2]).__name__}")


def _is_meta(device):
    if device is None:
        device = _DEFAULT_DEVICE[0]
    return device is not None and device is not CPU and getattr(to_device(device), "type", None) == "meta"


def _alloc(make, shape, npdt, *args, device=None):
    """``make(shape, *args, npdt)`` with PyTorch's errors for sizes that overflow or do not fit
    in memory (NumPy's ValueError/MemoryError otherwise); only the metadata for ``device='meta'``."""
    nbytes = math.prod(shape) * npdt.itemsize
    if nbytes > 2**63 - 1:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    if (device is not None or _DEFAULT_DEVICE[0] is not None) and _is_meta(device):
        from ._meta import MetaArray
        return MetaArray(shape, npdt)
    try:
        return make(shape, *args, npdt)
    except MemoryError:
        raise RuntimeError(f"[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
                           f"memory: you tried to allocate {nbytes} bytes. Error code 12 (Cannot allocate memory)") \
            from None
    except ValueError as e:
        if "too big" not in str(e):
            raise
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}") from None


def _full_np(shape, fill, npdt):
    with np.errstate(all="ignore"):     # float16 overflow gives inf, silently as in PyTorch
        return np.full(shape, fill, npdt)


def _finish(data, requires_grad=False, device=None):
    if device is None:
        device = _DEFAULT_DEVICE[0]
    if device is not None:
        dev = to_device(device)
        if dev.type == "meta":
            from ._meta import MetaArray
            if type(data) is not MetaArray:
                data = MetaArray(data.shape, data.dtype)
        elif dev is not CPU and dev.type != "cpu":
            xp = array_module(dev)
            with xp.cuda.Device(dev.index or 0):
                data = xp.asarray(data)
    t = _make(data)
    if requires_grad:
        if data.dtype.kind not in "fcV":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t.requires_grad_(True)
    if grad_mode._state.inference:
        t._inference = True
    return t


def _float_dt(dtype):
    return D.get_default_dtype() if dtype is None else D.to_dtype(dtype)


def _zeros_np(shape, npdt):
    return _make(np.zeros(shape, npdt))


def _ones_like_data(a):
    if type(a) is np.ndarray:
        return _make(np.ones(a.shape, a.dtype))
    return _make(a.__class__(a.shape, a.dtype) * 0 + 1)


def _infer_dtype(a):
    k = a.dtype.kind
    if k == "f":
        return D.get_default_dtype().np
    if k in "iu":
        return np.dtype(np.int64)
    if k == "b":
        return np.dtype(np.bool_)
    if k == "c":
        return D.get_default_dtype().to_complex().np
    raise TypeError(f"Could not infer dtype of {type(a.flat[0]).__name__ if a.size else 'object'}")


def _check_ragged(data, depth=0):
    if isinstance(data, (list, tuple)) and data:
        lens = None
        for item in data:
            if isinstance(item, (list, tuple)):
                if lens is None:
                    lens = len(item)
                elif len(item) != lens:
                    raise ValueError(f"expected sequence of length {lens} at dim {depth + 1} (got {len(item)})")
                _check_ragged(item, depth + 1)


def _unwrap_tensors(data):
    if isinstance(data, Tensor):
        return data._data if type(data._data) is np.ndarray else data._data.get()
    if isinstance(data, (list, tuple)):
        return [_unwrap_tensors(d) for d in data]
    return data


def _to_array(data, dtype):
    """Data (nested lists, numbers, arrays, tensors) to a new ndarray of the right dtype."""
    if isinstance(data, np.ndarray):
        if data.dtype.kind not in "biufcV":
            raise TypeError(f"can't convert np.ndarray of type numpy.{data.dtype.name}. The only supported "
                            "types are: float64, float32, float16, complex64, complex128, int64, int32, "
                            "int16, int8, uint8, and bool.")
        a = np.array(data, dtype=dtype.np if dtype is not None else D.from_numpy_dtype(data.dtype).np)
        return a
    if isinstance(data, np.generic):
        a = np.array(data)
        return a.astype(dtype.np if dtype is not None else D.from_numpy_dtype(a.dtype).np)
    if isinstance(data, (list, tuple)):
        _check_ragged(data)
        data = _unwrap_tensors(data)
    elif not isinstance(data, (_bint, _bfloat, _bbool, builtins.complex)):
        if hasattr(data, "__array__") or hasattr(data, "__cuda_array_interface__"):
            return _to_array(np.asarray(data), dtype)
        if isinstance(data, str):
            raise TypeError(f"new(): invalid data type 'str'")
        try:
            data = list(data)
        except TypeError:
            raise TypeError(f"Could not infer dtype of {type(data).__name__}")
        return _to_array(data, dtype)
    a = np.array(data)
    if a.dtype == object:
        if any(isinstance(v, _bint) for v in a.flat):   # Python ints beyond 64 bits
            raise ValueError("Overflow when unpacking long long")
        raise TypeError("Could not infer dtype of object")
    if a.dtype == np.uint64 and (dtype is None or dtype._kind < 2):   # ints >= 2**63 (NumPy's uint64)
        raise ValueError("Overflow when unpacking long long")
    if dtype is not None and dtype._kind == 1 and a.dtype.kind in "iufV" and a.size:
        lo, hi = a.min(), a.max()
        if a.dtype.kind in "fV" and not np.isfinite(a).all() or D._overflows(lo, dtype) or D._overflows(hi, dtype):
            raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")
    with np.errstate(all="ignore"):      # float32 overflow gives inf, as in PyTorch
        if dtype is not None and dtype in D.FLOAT8:
            return D.cast_to_float8(a, dtype.np)
        return a.astype(dtype.np if dtype is not None else _infer_dtype(a), copy=False)


# --- from data ----------------------------------------------------------------------------

def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (numbers, nested lists, arrays, tensors)."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
                      "or sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "torch.tensor(sourceTensor).", UserWarning, stacklevel=2)
        r = data.detach().clone()
        if dtype is not None:
            r = r.to(D.to_dtype(dtype))
        if device is not None:
            r = r.to(device)
        return r.requires_grad_(requires_grad) if requires_grad else r
    _check_args("tensor", dtype, device, requires_grad)
    dt = D.to_dtype(dtype) if dtype is not None else None
    a = _to_array(data, dt)
    return _finish(a, requires_grad, device)


def as_tensor(data, dtype=None, device=None):
    """A tensor sharing memory with ``data`` where it can (arrays of a matching dtype)."""
    if isinstance(data, Tensor):
        r = data
        if dtype is not None:
            r = r.to(D.to_dtype(dtype))
        if device is not None:
            r = r.to(device)
        return r
    if isinstance(data, np.ndarray) and (dtype is None or D.to_dtype(dtype).np == data.dtype) and device in (None, "cpu", CPU):
        D.from_numpy_dtype(data.dtype)
        return _make(data)
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """Like ``as_tensor``; ``copy=True`` forces a copy."""
    t = tensor(obj, dtype=dtype, device=device) if copy else as_tensor(obj, dtype=dtype, device=device)
    return t.requires_grad_(requires_grad) if requires_grad else t


def from_numpy(ndarray):
    """A tensor sharing memory with ``ndarray``."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    D.from_numpy_dtype(ndarray.dtype)
    return _make(ndarray)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    return _finish(np.array(s, dtype=_float_dt(dtype).np), requires_grad, device)


# --- filled -------------------------------------------------------------------------------

def _filled(fill, size, dtype, device, requires_grad, default_float=True, fname="empty"):
    _check_args(fname, dtype, device, requires_grad)
    shape = _size(size)
    dt = _float_dt(dtype) if default_float or dtype is not None else None
    if fill is None:
        a = _alloc(np.empty, shape, dt.np, device=device)
    elif fill == 0:
        a = _alloc(np.zeros, shape, dt.np, device=device)
    else:
        a = _alloc(_full_np, shape, dt.np, fill, device=device)
    return _finish(a, requires_grad, device)


def _size_kw(fname, sizes, size):
    """The shape given positionally (``zeros(2, 3)``, ``zeros((2, 3))``) or as ``size=``."""
    if size is None:
        return sizes
    if sizes:
        if fname in _OVERLOADS:
            got = ", ".join([type(a).__name__ for a in sizes] + [f"size={type(size).__name__}"])
            raise TypeError(f"{fname}() received an invalid combination of arguments - got ({got}), but expected "
                            "one of:\n" + "".join(f" * {sig}\n" for sig in _OVERLOADS[fname]))
        raise TypeError(f"{fname}() got multiple values for argument 'size'")
    if not isinstance(size, (tuple, list, Size)):
        raise TypeError(f"{fname}(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    return (tuple(size),)


def zeros(*sizes, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A tensor of zeros (default dtype unless ``dtype``)."""
    size = _size_kw("zeros", sizes, size)
    dims = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list, Size)) else size
    if any(isinstance(s, (_bint, np.integer)) and s < 0 for s in dims):
        raise RuntimeError("zeros: Dimension size must be non-negative.")
    return _filled(0, size, dtype, device, requires_grad, fname="zeros")


def ones(*sizes, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A tensor of ones."""
    size = _size_kw("ones", sizes, size)
    return _filled(1, size, dtype, device, requires_grad, fname="ones")


def empty(*sizes, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None):
    """An uninitialised tensor (retrograd zero-fills it: reading garbage helps no one)."""
    size = _size_kw("empty", sizes, size)
    return _filled(0, size, dtype, device, requires_grad, fname="empty")


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False, **kw):
    return _filled(0, (tuple(size),), dtype, device, requires_grad, fname="empty_strided")


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """A tensor filled with ``fill_value`` (dtype inferred from it like PyTorch)."""
    _check_args("full", dtype, device, requires_grad)
    if dtype is None:
        if isinstance(fill_value, _bbool):
            dtype = D.bool_
        elif isinstance(fill_value, _bint):
            dtype = D.int64
        elif isinstance(fill_value, builtins.complex):
            dtype = D.get_default_dtype().to_complex()
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    shape = _size((size,) if not isinstance(size, (tuple, list, Size)) else (tuple(size),))
    dt = _float_dt(dtype)
    D.check_scalar_fits(fill_value, dt, half=True)
    return _finish(_alloc(_full_np, shape, dt.np, fill_value, device=device), requires_grad, device)


def _like(input, dtype, device, fname="empty_like", requires_grad=None):
    _check_args(fname, dtype, device, requires_grad)
    dt = input.dtype if dtype is None else D.to_dtype(dtype)
    dev = input.device if device is None else device
    return input._data.shape, dt, dev


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    shape, dt, dev = _like(input, dtype, device, "zeros_like", requires_grad)
    return _finish(_alloc(np.zeros, shape, dt.np, device=dev), requires_grad, dev)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    shape, dt, dev = _like(input, dtype, device, "ones_like", requires_grad)
    return _finish(_alloc(np.ones, shape, dt.np, device=dev), requires_grad, dev)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    return zeros_like(input, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    shape, dt, dev = _like(input, dtype, device, "full_like", requires_grad)
    D.check_scalar_fits(fill_value.item() if isinstance(fill_value, Tensor) else fill_value, dt, half=True)
    return _finish(_alloc(_full_np, shape, dt.np, fill_value, device=dev), requires_grad, dev)


# --- ranges -------------------------------------------------------------------------------

def _num(v):
    return v.item() if isinstance(v, Tensor) else v


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Values from ``start`` to ``end`` (exclusive) by ``step``."""
    _check_args("arange", dtype, device, requires_grad,
                (start,) if end is None else (start, end) if step == 1 else (start, end, step))
    start, end, step = _num(start), _num(end), _num(step)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        isfloat = any(isinstance(v, (_bfloat, np.floating)) for v in (start, end, step))
        dt = D.get_default_dtype() if isfloat else D.int64
    else:
        dt = D.to_dtype(dtype)
    n = max(0, math.ceil((end - start) / step))
    with np.errstate(all="ignore"):
        a = (start + np.arange(n, dtype=np.float64 if dt.is_floating_point else np.int64) * step).astype(dt.np)
    return _finish(a, requires_grad, device)


def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Deprecated inclusive range (kept for old scripts)."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior "
                  "is inconsistent with Python's range builtin. Instead, use torch.arange, which produces "
                  "values in [start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    n = _bint((end - start) // step) + 1
    dt = _float_dt(dtype)
    return _finish((start + np.arange(n) * step).astype(dt.np), requires_grad, device)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    _check_args("linspace", dtype, device, requires_grad, (start, end, steps))
    dt = _float_dt(dtype)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    start, end = _num(start), _num(end)
    cdt = dt.np if dt.np.kind in "fV" else np.dtype(np.float64)
    with np.errstate(all="ignore"):     # inf/nan ends give inf/nan values, silently as in PyTorch
        return _finish(_linspace(start, end, steps, cdt).astype(dt.np), requires_grad, device)


def _linspace(start, end, steps, cdt):
    if steps <= 1:
        r = np.full(steps, start, cdt)
    else:
        # PyTorch's formula: the first half counts up from start, the second down from end.
        step = (cdt.type(end) - cdt.type(start)) / cdt.type(steps - 1)
        i = np.arange(steps, dtype=cdt)
        r = np.where(np.arange(steps) < steps // 2, cdt.type(start) + i * step,
                     cdt.type(end) - (cdt.type(steps - 1) - i) * step)
    return r


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    _check_args("logspace", dtype, device, requires_grad, (start, end, steps) + ((base,) if base != 10.0 else ()))
    dt = _float_dt(dtype)
    with np.errstate(all="ignore"):
        return _finish(np.logspace(_num(start), _num(end), steps, base=base).astype(dt.np), requires_grad, device)


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The identity matrix (``n`` x ``m``)."""
    _check_args("eye", dtype, device, requires_grad, (n, m))
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    m = n if m is None else m
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    dt = _float_dt(dtype)
    return _finish(_alloc(lambda shape, npdt: np.eye(*shape, dtype=npdt), (n, m), dt.np), requires_grad, device)


# --- random -------------------------------------------------------------------------------

_KERNEL_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _rand_dt(dtype, kernel="check_uniform_bounds"):
    dt = _float_dt(dtype)
    if not (dt.is_floating_point or dt.is_complex):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_KERNEL_NAMES.get(dt.name, dt.name)}\'')
    return dt


def _sample(fn, dt, shape, generator, device=None):
    """``fn(engine, n, numpy dtype)`` reshaped to ``shape`` (complex: the real view, twice as
    long, as PyTorch fills it)."""
    if (device is not None or _DEFAULT_DEVICE[0] is not None) and _is_meta(device):   # no values: no draws
        from ._meta import MetaArray
        return MetaArray(shape, dt.np)
    n = math.prod(shape)
    if dt.is_complex:
        r = fn(_engine(generator), 2 * n, dt.to_real().np, 0.7071067811865475)
        return np.ascontiguousarray(r).view(dt.np).reshape(shape)
    return fn(_engine(generator), n, dt.np, 1.0).reshape(shape)


def rand(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    """Uniform samples on [0, 1)."""
    size = _size_kw("rand", sizes, size)
    _check_args("rand", dtype, device, requires_grad, size)
    dt = _rand_dt(dtype)
    return _finish(_sample(lambda e, n, d, _: e.uniform(n, d), dt, _size(size), generator, device),
                   requires_grad, device)


def randn(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False):
    """Standard normal samples."""
    size = _size_kw("randn", sizes, size)
    _check_args("randn", dtype, device, requires_grad, size)
    dt = _rand_dt(dtype, "normal_kernel_cpu")
    return _finish(_sample(lambda e, n, d, std: e.normal(n, d, 0.0, std), dt, _size(size), generator, device),
                   requires_grad, device)


_RANDINT_C_NAMES = {"int8": "signed char", "uint8": "unsigned char", "int16": "short", "int32": "int"}


def randint(low=0, high=None, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
            requires_grad=False):
    """Random integers in [low, high)."""
    _check_args("randint", dtype, device, requires_grad, (low, high, size))
    if size is None:
        if isinstance(high, (tuple, list, Size)):
            low, high, size = 0, low, high
        else:
            raise TypeError("randint() missing required argument 'size'")
    if high is None:
        low, high = 0, low
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    for v in (low, high):
        if isinstance(v, _bint) and not -2**63 <= v < 2**63:
            raise ValueError("Overflow when unpacking long long")
    dt = D.int64 if dtype is None else D.to_dtype(dtype)
    if dt._kind == 1 and dt.name != "int64":
        info = np.iinfo(dt.np)
        cname = _RANDINT_C_NAMES[dt.name]
        if low < info.min:
            raise RuntimeError(f"from is out of bounds for {cname}")
        if high - 1 > info.max:
            raise RuntimeError(f"to - 1 is out of bounds for {cname}")
    shape = _size((tuple(size),))
    if _is_meta(device):
        return _finish(_alloc(None, shape, dt.np, device=device), requires_grad, device)
    a = _engine(generator).integers(math.prod(shape), low, high - low).reshape(shape).astype(dt.np)
    return _finish(a, requires_grad, device)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A random permutation of 0..n-1."""
    dt = D.int64 if dtype is None else D.to_dtype(dtype)
    return _finish(_engine(generator).permutation(n).astype(dt.np), requires_grad, device)


def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    return rand(input.shape, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    return randn(input.shape, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    if high is None:
        low, high = 0, low
    return randint(low, high, input.shape, dtype=dtype or input.dtype, device=device or input.device)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           requires_grad=False):
    """Normal samples; ``mean``/``std`` may be tensors (broadcast) or numbers with ``size``."""
    e = _engine(generator)
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        m = mean._data if isinstance(mean, Tensor) else mean
        s = std._data if isinstance(std, Tensor) else std
        ref = (mean if isinstance(mean, Tensor) else std)._data.dtype
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        n = math.prod(shape)
        # (as PyTorch: a number std scales the draws themselves; a tensor std multiplies
        # standard draws; the mean is added last, in the tensors' dtype)
        if isinstance(std, Tensor):
            a = e.normal(n, ref).reshape(shape) * s + (m if isinstance(mean, Tensor) else ref.type(m))
        else:
            a = e.normal(n, ref, 0.0, s).reshape(shape) + m
        return _finish(np.asarray(a, dtype=ref), False, None)
    dt = _rand_dt(dtype)
    shape = _size((tuple(size),))
    a = e.normal(math.prod(shape), dt.np, mean, std).reshape(shape)
    return _finish(a, requires_grad, device)


def _bernoulli_draws(e, shape, p):
    """0/1 (bool) draws: ``u < p`` per element, ``u`` a 53-bit uniform for a number ``p`` and a
    uniform of ``p``'s own dtype for an array ``p`` (broadcast to ``shape``), as PyTorch."""
    n = math.prod(shape)
    if isinstance(p, np.ndarray):
        pd = p.dtype if p.dtype == np.float64 else np.float32
        u = e.uniform(n, pd).reshape(shape)
        return u < np.broadcast_to(p, shape).astype(pd, copy=False)
    return (e.unit53(n) < p).reshape(shape)


def bernoulli(input, p=None, *, generator=None, out=None):
    """Draw 0/1 with probabilities ``input`` (or ``p``)."""
    probs = input._data if p is None else p
    a = _bernoulli_draws(_engine(generator), input._data.shape, probs).astype(input._data.dtype)
    return _make(a)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Sample category indices with weights ``input`` (rows of a 2-D input independently)."""
    w = np.asarray(input._data, dtype=np.float64)
    if w.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if (w < 0).any() or not np.isfinite(w).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    rows = w.reshape(-1, w.shape[-1])
    for r in rows:
        if r.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not replacement and num_samples > (r > 0).sum():
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    e = _engine(generator)
    if not replacement or num_samples == 1:
        # (as PyTorch: the largest weight / Exp(1) draws, one draw per category, in the input's dtype)
        dt = input._data.dtype
        q = (-1.0 * e.unit53_map(rows.size, lambda u: math.log1p(-u), ("log1p_neg",))).astype(dt).reshape(rows.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = np.asarray(input._data, dtype=dt).reshape(rows.shape) / q
        if num_samples == 1:
            # the first largest key (a NaN key, from 0/0, is never the largest), without a sort
            a = np.argmax(np.where(np.isnan(keys), -np.inf, keys), axis=-1)[:, None]
        else:
            a = np.argsort(-keys, axis=-1, kind="stable")[:, :num_samples]
    else:
        # (as PyTorch: per row, a 53-bit uniform per sample located in the normalised cumulative sums)
        out_rows = []
        for r in rows:
            cum = np.cumsum(r)
            cum /= cum[-1]
            idx = np.searchsorted(cum, e.unit53(num_samples), side="left")
            out_rows.append(np.minimum(idx, r.size - 1))
        a = np.stack(out_rows)
    a = a.astype(np.int64)
    return _make(a if w.ndim == 2 else a[0])


# --- the legacy constructor and unpickling --------------------------------------------------

def _legacy_new(cls, *args, **kwargs):
    device = kwargs.pop("device", None)
    if len(args) == 1 and isinstance(args[0], Tensor) and cls is not Tensor:
        t = args[0]
    elif not args:
        t = _make(np.zeros((0,), D.get_default_dtype().np))
    elif all(isinstance(a, (_bint, np.integer)) and not isinstance(a, _bbool) for a in args):
        for a in args:
            if a < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {a}: [{', '.join(map(str, args))}]")
        t = _make(np.zeros(tuple(args), D.get_default_dtype().np))
    elif len(args) == 1 and isinstance(args[0], (_bbool, _bfloat, builtins.complex)):
        raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
    elif len(args) == 1 and isinstance(args[0], (tuple, Size)) and cls is Tensor and all(isinstance(a, _bint) for a in args[0]) and isinstance(args[0], Size):
        t = _make(np.zeros(tuple(args[0]), D.get_default_dtype().np))
    else:
        t = _make(_to_array(args[0], D.get_default_dtype()))
    if device is not None:
        t = t.to(device)
    if cls is Tensor:
        return t
    obj = object.__new__(cls)
    obj._data = t._data
    return obj


def _rebuild(cls, data, requires_grad):
    t = object.__new__(cls)
    t._data = data
    if requires_grad:
        t._requires_grad = True
    return t


# --- Tensor.new_* : new tensors with this tensor's dtype and device by default -------------

def _new_factory(fn):
    def method(self, *size, dtype=None, device=None, requires_grad=False, **kw):
        return fn(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
    method.__name__ = "new_" + fn.__name__
    method.__doc__ = f"``{fn.__name__}`` with this tensor's dtype and device by default."
    return method


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, **kw):
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, **kw):
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


Tensor.new_zeros = _new_factory(zeros)
Tensor.new_ones = _new_factory(ones)
Tensor.new_empty = _new_factory(empty)
Tensor.new_full = _new_full
Tensor.new_tensor = _new_tensor
