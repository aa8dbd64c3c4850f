"""Optimizer: parameter groups, per-parameter state, hooks and state_dict in PyTorch's layout.

Every optimizer updates its parameters' arrays in place (``p._data``), under no_grad,
with vectorized array arithmetic, and bumps each parameter's version counter. Its
per-parameter state lives in ``optimizer.state[p]`` as retrograd tensors under PyTorch's
keys ('momentum_buffer', 'exp_avg', 'exp_avg_sq', 'step' as a 0-d float tensor, ...),
so a state_dict saved here loads in PyTorch and the other way round.

PyTorch's CPU kernels compute ``add(alpha=)``, ``addcmul`` and ``lerp`` with a fused
multiply-add (one rounding); the helpers below do the same for float32 arrays by
computing in float64 and rounding once, so that updates match PyTorch's to the bit.
"""
import functools
import warnings
from collections import OrderedDict, defaultdict
from itertools import chain

import numpy as np

from ..ops._base import xp_for

from .. import _dtype as D
from .. import _threads
from .._rng import _to_odd, _two_prod, _two_sum
from .._tensor import Tensor
from ..ops._base import typename
from ..autograd import grad_mode
from ..autograd.graph import RemovableHandle

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

_global_optimizer_pre_hooks = OrderedDict()
_global_optimizer_post_hooks = OrderedDict()

_F32 = np.dtype(np.float32)
_F64 = np.float64
_CHUNK = 1 << 15


class _RequiredParameter:
    """Marks an option a parameter group has to give (no default)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()

_typename = typename


def register_optimizer_step_pre_hook(hook):
    """Run ``hook(optimizer, args, kwargs)`` before every optimizer's step."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook):
    """Run ``hook(optimizer, args, kwargs)`` after every optimizer's step."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def _hooked_step(func):
    """Wrap a step: pre-hooks, the step under no_grad, post-hooks."""
    @functools.wraps(func)
    def step(self, *args, **kwargs):
        _threads.tick()     # the BLAS thread count follows the machine's load (see _threads)
        for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{func} must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {result}.")
        with grad_mode.no_grad():
            out = func(self, *args, **kwargs)
        for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
            post_hook(self, args, kwargs)
        return out
    step.hooked = True
    return step


# --- array helpers used by every optimizer ------------------------------------------
def _scalar(x):
    """A hyperparameter as a Python number (a 1-element tensor gives its value)."""
    return x.item() if isinstance(x, Tensor) else x


def _as_dtype(v, dt):
    """A Python scalar rounded to the array dtype, as PyTorch casts a Scalar to scalar_t."""
    return dt.type(v)


def _arr(x):
    """NumPy turns 0-d results into scalars; state and outputs must stay arrays."""
    xp = xp_for(x)
    return xp.asarray(x) if isinstance(x, np.generic) else x


def _find_blas():
    """BLAS's ``y += a * x`` and ``x *= a`` for float32 and float64, as
    ``{dtype: (axpy(n, a, x_ptr, y_ptr), scal(n, a, x_ptr))}``.

    OpenBLAS's axpy kernels round once (a fused multiply-add), as PyTorch's ``add(alpha=)``
    does, and run at memory speed; emulating the fused step in NumPy (float64 temporaries
    and two casts) costs ten times as much. NumPy's own OpenBLAS is used through ctypes
    (already loaded, nothing to import); without it (another BLAS, another platform) the
    emulation below is used.
    """
    import ctypes
    import glob
    import os
    here = os.path.dirname(np.__file__)
    for lib_path in sorted(glob.glob(os.path.join(here, os.pardir, "numpy.libs", "*openblas*"))
                           + glob.glob(os.path.join(here, ".dylibs", "*openblas*"))):
        try:
            lib = ctypes.CDLL(lib_path)
        except OSError:
            continue
        found = {}
        for dt, letter, ctype in ((_F32, "s", ctypes.c_float), (np.dtype(_F64), "d", ctypes.c_double)):
            for prefix, suffix, int_t in (("scipy_cblas_", "64_", ctypes.c_int64), ("cblas_", "64_", ctypes.c_int64),
                                          ("scipy_cblas_", "", ctypes.c_int), ("cblas_", "", ctypes.c_int)):
                axpy = getattr(lib, f"{prefix}{letter}axpy{suffix}", None)
                scal = getattr(lib, f"{prefix}{letter}scal{suffix}", None)
                if axpy is not None and scal is not None:
                    axpy.restype = scal.restype = None
                    axpy.argtypes = [int_t, ctype, ctypes.c_void_p, int_t, ctypes.c_void_p, int_t]
                    scal.argtypes = [int_t, ctype, ctypes.c_void_p, int_t]
                    found[dt] = ((lambda f: lambda n, a, x, y: f(n, a, x, 1, y, 1))(axpy),
                                 (lambda f: lambda n, a, x: f(n, a, x, 1))(scal))
                    break
        found = {dt: fns for dt, fns in found.items() if _rounds_once(dt, fns[0])}
        if found:
            return found
    return {}


def _rounds_once(dt, axpy):
    """Whether this BLAS's axpy is a fused multiply-add (OpenBLAS picks its kernel by CPU:
    one without FMA rounds twice, and PyTorch's numbers would be missed by an ulp)."""
    e = 12 if dt == _F32 else 27
    a = 1 + 2.0 ** -e                    # a * a = 1 + 2^(1-e) + 2^(-2e): its last term survives
    n = 67                               # vector body and scalar tail of the kernel
    x = np.full(n, a, dt)
    y = np.full(n, -1.0, dt)
    axpy(n, float(x[0]), x.ctypes.data, y.ctypes.data)
    return bool(np.all(y == dt.type(2.0 ** (1 - e) + 2.0 ** (-2 * e))))


_BLAS = []


def blas_for(dtype):
    """(axpy, scal) on raw pointers for float32/float64 arrays, or None."""
    if not _BLAS:
        _BLAS.append(_find_blas())
    return _BLAS[0].get(dtype)


def _axpy(x, s, y):
    """``y += s * x`` in place, rounded once; False where no BLAS call fits (y unchanged)."""
    xp = xp_for(x, s, y)
    fns = blas_for(y.dtype)
    if isinstance(x, np.generic):      # e.g. a difference of two 0-d arrays
        x = xp.asarray(x)
    if (fns is None or type(x) is not np.ndarray or type(y) is not np.ndarray or x.dtype != y.dtype
            or x.shape != y.shape or not y.flags.writeable):
        return False
    n = y.size
    if n == 0:
        return True
    xc = x if x.flags.c_contiguous else xp.ascontiguousarray(x)
    yc = y if y.flags.c_contiguous else xp.ascontiguousarray(y)
    fns[0](n, s, xc.ctypes.data, yc.ctypes.data)
    if yc is not y:
        y[...] = yc
    return True


_F16 = np.dtype(np.float16)


def fma_scalar(x, s, y, out=None):
    """``y + s * x`` with one rounding (PyTorch's ``y.add(x, alpha=s)``); s is a Python number."""
    xp = xp_for(x, s, y)
    dt = y.dtype
    if s == 1 or s == -1:          # exact without a fused step
        ufunc = xp.add if s == 1 else xp.subtract
        if out is None:
            return _arr(ufunc(y, x))
        ufunc(y, x, out=out)
        return out
    if dt == _F32 or dt == _F64:
        s = float(dt.type(s))      # PyTorch casts alpha to the tensor's dtype
        if out is y:
            if _axpy(x, s, y):
                return y
        else:
            r = xp.array(y, copy=True, order="C")
            if _axpy(x, s, r):
                if out is None:
                    return r
                out[...] = r
                return out
    if dt == _F32:
        t = x.astype(_F64)
        t *= _F64(np.float32(s))
        t += y
        if out is None:
            return t.astype(dt)
        out[...] = t
        return out
    if half(dt):
        r = _half_add_alpha(x, s, y, dt)
    elif dt == _F64 and isinstance(x, (np.ndarray, np.generic)) and isinstance(y, (np.ndarray, np.generic)):
        r = fma64(x, s, y)
    else:
        r = y + _as_dtype(s, dt) * x
    if out is None:
        return _arr(r)
    out[...] = r
    return out


def fma64(x, s, y):
    """``y + s * x`` for float64 arrays rounded once, from NumPy's correctly rounded + and *
    alone, for where no fused BLAS axpy is found (OpenBLAS's kernel for the CPU rounds twice,
    as its Haswell kernels do on AMD's CPUs): Boldo and Melquiond's emulation (IEEE Trans.
    Computers 57(4), 2008), RN(uh + RO(ul + pl)) with (ph, pl) Dekker's exact product, (uh, ul)
    the exact sum y + ph and RO rounding to odd (a round-to-nearest sum moved one ulp toward
    its error where inexact and even). Exact where no step overflows or underflows; elsewhere
    (and for non-finite operands) the plain two roundings stand."""
    shape = np.broadcast_shapes(np.shape(x), np.shape(y))
    # (at least 1-d: 0-d operands would give NumPy scalars, which _to_odd cannot index)
    x = np.atleast_1d(np.asarray(x, np.float64))
    y = np.atleast_1d(np.asarray(y, np.float64))
    s = float(s)
    with np.errstate(all="ignore"):
        p, pl = _two_prod(x, np.float64(s))
        plain = y + p
        uh, ul = _two_sum(y, p)
        v, e = _two_sum(ul, pl)
        r = uh + _to_odd(v, e)
        # (the exact product needs |s|, |x| below 2^996 and |s x| above 2^-969; the sum no
        # overflow. A zero product is exact: the plain sum then has IEEE's sign of zero, -0 + -0)
        ok = np.isfinite(r) & np.isfinite(plain) & (np.abs(p) > 2.0 ** -969) & \
            (np.abs(x) < 2.0 ** 996) & (abs(s) < 2.0 ** 996) & ((np.abs(y) > 2.0 ** -969) | (y == 0))
    return np.where(ok, r, plain).reshape(shape)[()]


# --- float16/bfloat16: PyTorch's CPU "opmath" ------------------------------------------
# PyTorch computes an elementwise kernel on 16-bit floats in float32 and rounds the result
# to the 16-bit type once, at the end of each kernel call. How the Python scalar enters
# differs by kernel (checked bit for bit against PyTorch 2.13's CPU kernels):
#   mul/div by a number: the number as float32;      add/sub of a number: rounded to the dtype;
#   add(alpha=): alpha rounded to the dtype (see _half_add_alpha for its scalar tail);
#   lerp: float32 weight, both branches a fused multiply-add;
#   addcmul: fma(value * t1, t2, self), value as float32;  addcdiv: self + (value * t1) / t2.
# Tensor-tensor arithmetic, sqrt, abs, maximum, clamp and the add of a number are what
# NumPy's (and ml_dtypes') own 16-bit loops already compute (float32, one rounding).

_HALF_BLOCK = 32


def half(dt):
    """Whether arrays of this dtype are 16-bit floats computed in float32 (float16, bfloat16)."""
    return dt == _F16 or (dt.kind == "V" and dt.itemsize == 2)


def half_blocks(n):
    """How many of n contiguous 16-bit elements PyTorch's CPU loop computes in its vectorized
    blocks of 32 (the rest go through its scalar loop, which some kernels round differently)."""
    return n - n % _HALF_BLOCK


def _f32(a):
    return np.asarray(a).astype(np.float32)


def _fma32(a, b, c):
    """``a * b + c`` of float32 values with one float32 rounding (exact product in float64)."""
    t = np.multiply(a, b, dtype=_F64)
    t += c
    return t.astype(np.float32)


def _half_add_alpha(x, s, y, dt):
    """``y.add(x, alpha=s)`` on 16-bit arrays as PyTorch's CPU kernel computes it.

    Its vectorized loop (blocks of 32 elements of a contiguous tensor) adds the exact float32
    product ``alpha * x`` and rounds once; the elements after the last full block go through
    its scalar loop, where the product is rounded to the 16-bit type before the add.
    (A tensor PyTorch splits among threads, over 32768 elements, has such a tail per chunk;
    with one thread, or below that size, the numbers here are PyTorch's to the bit.)
    """
    a = np.float32(_as_dtype(s, dt))
    t = _f32(x) * a
    y32 = _f32(y)
    t, y32 = np.broadcast_arrays(t, y32)
    r = np.asarray(t + y32).astype(dt)
    n = r.size
    k = half_blocks(n)
    if k < n:
        rf = r.reshape(-1)
        tail = np.ascontiguousarray(t).reshape(-1)[k:].astype(dt).astype(np.float32)
        tail += np.ascontiguousarray(y32).reshape(-1)[k:]
        rf[k:] = tail.astype(dt)
    return r


def scale_(y, s):
    """``y *= s`` in place as PyTorch's ``mul_(s)``: float16/bfloat16 multiply in float32 by
    the scalar as float32 and round once (NumPy would round the scalar to the 16-bit type).
    Returns y (a NumPy scalar, which cannot change in place, gives the new value)."""
    dt = y.dtype
    if half(dt):
        r = (_f32(y) * np.float32(s)).astype(dt)
        if isinstance(y, np.generic):
            return dt.type(r)
        y[...] = r
    elif isinstance(y, np.generic):
        return y * s
    else:
        y *= s
    return y


def div_scalar(a, s, out=None):
    """``a / s`` for a Python number ``s`` (16-bit: float32 division by s as float32)."""
    dt = a.dtype
    if half(dt):
        r = (_f32(a) / np.float32(s)).astype(dt)
        if out is None:
            return r
        out[...] = r
        return out
    return _arr(xp_for(a).divide(a, s, out=out))


def addcmul(y, a, b, value, out=None):
    """``y + value * a * b`` as PyTorch computes it: ``fma(value * a, b, y)``."""
    dt = y.dtype
    n = y.size
    if (dt == _F32 and n > _CHUNK and out is not None and a.shape == b.shape == y.shape == out.shape
            and y.flags.c_contiguous and a.flags.c_contiguous and b.flags.c_contiguous and out.flags.c_contiguous):
        # a flat buffer: the float64 temporaries a chunk at a time, so they stay in cache
        yf, af, bf, of = y.reshape(-1), a.reshape(-1), b.reshape(-1), out.reshape(-1)
        for i in range(0, n, _CHUNK):
            j = i + _CHUNK
            addcmul(yf[i:j], af[i:j], bf[i:j], value, out=of[i:j])
        return out
    if half(dt):
        r = _fma32(_f32(a) * np.float32(value), _f32(b), _f32(y)).astype(dt)
        if out is None:
            return r
        out[...] = r
        return out
    va = a if value == 1 else _as_dtype(value, dt) * a
    if dt == _F32:
        t = va.astype(_F64)
        t *= b
        t += y
        if out is None:
            return t.astype(dt)
        out[...] = t
        return out
    r = y + va * b
    if out is None:
        return _arr(r)
    out[...] = r
    return out


def addcdiv(y, a, b, value, out=None):
    """``y + (value * a) / b`` (PyTorch's addcdiv, no fused step; 16-bit: in float32, rounded once)."""
    if half(y.dtype):
        t = _f32(a) * np.float32(value)
        t /= _f32(b)
        t += _f32(y)
        if out is None:
            return t.astype(y.dtype)
        out[...] = t
        return out
    xp = xp_for(y, a, b, value)
    t = a if value == 1 else _as_dtype(value, y.dtype) * a
    t = t / b
    if out is None:
        return y + t
    xp.add(y, t, out=out)
    return out


def addcdiv_term(a, b, value, out=None):
    """The term ``(value * a) / b`` that :func:`addcdiv` adds (a flat step adds it per parameter)."""
    xp = xp_for(a, b, value)
    t = a if value == 1 else xp.multiply(a, _as_dtype(value, a.dtype), out=out)
    return xp.divide(t, b, out=out)


def lerp_scalar(x, end, w, out):
    """``x.lerp_(end, w)`` with PyTorch's two-sided formula and fused multiply-add."""
    dt = x.dtype
    if half(dt):
        # float32 weight and difference, a fused multiply-add on either side, one rounding
        w32 = np.float32(w)
        x32, e32 = _f32(x), _f32(end)
        diff = e32 - x32
        if abs(w32) < 0.5:
            r = _fma32(diff, w32, x32)
        else:
            r = _fma32(diff, -(np.float32(1) - w32), e32)
        out[...] = r
        return out
    w = _as_dtype(w, dt)
    diff = end - x
    if abs(w) < 0.5:
        return fma_scalar(diff, w, x, out=out)
    # end - diff * (1 - w), the factor rounded to the dtype first
    return fma_scalar(diff, -(dt.type(1) - w), end, out=out)


def _real(a):
    """A complex array seen as (real, imag) float pairs (PyTorch's view_as_real); others as they are."""
    if a.dtype.kind != "c":
        return a
    return a[..., None].view(a.real.dtype)


def _sqrt(a):
    """Elementwise square root: one name for every optimizer, so a test can swap in PyTorch's
    own (MKL's, which is not correctly rounded) and check the rest of the arithmetic bit for bit."""
    xp = xp_for(a)
    return xp.sqrt(a)


def _zeros_like(p):
    xp = xp_for(p)
    return Tensor._make(xp.zeros_like(p._data))


def _step_tensor(value=0.0):
    """The 'step' entry of a parameter's state: a 0-d tensor of the default float dtype."""
    dt = np.float64 if D.get_default_dtype() is D.float64 else np.float32
    return Tensor._make(np.array(value, dtype=dt))


def _restore_steps(optimizer):
    """After load_state_dict: a 'step' saved as a number becomes a 0-d tensor again."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            s = optimizer.state.get(p, None)
            if s and "step" in s and not isinstance(s["step"], Tensor):
                s["step"] = _step_tensor(float(s["step"]))


def _check_lr(lr):
    """PyTorch's check of a learning rate: a number >= 0 or a 1-element tensor."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_nonnegative(**options):
    """PyTorch's 'Invalid <name> value: <v>' for the first of the options (in order) below 0."""
    for name, value in options.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {name} value: {value}")


def _cast_like(param, value):
    """A loaded state tensor on the parameter's device and (for float params) dtype."""
    data = value._data
    pdata = param._data
    if param.is_floating_point() and data.dtype != pdata.dtype:
        data = data.astype(pdata.dtype)
    if type(data) is not type(pdata):
        data = data.get() if type(pdata) is np.ndarray else _to_device_like(data, pdata)
    if type(data) is np.ndarray and not data.flags.writeable:
        data = data.copy()       # e.g. a checkpoint's buffer: the optimizer updates state in place
    if data is value._data:
        return value
    return Tensor._make(data)


def _check_fused(fused, foreach, differentiable):
    """PyTorch's checks of ``fused=True`` (a flat-buffer step here, as ``foreach`` is)."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _to_device_like(data, like):
    import importlib
    xp = importlib.import_module(type(like).__module__.split(".")[0])
    return xp.asarray(data)


class Optimizer:
    """Base class of all optimizers.

    Args:
        params: an iterable of tensors, of (name, tensor) pairs, or of dicts defining
            parameter groups.
        defaults: the options used when a parameter group does not give them.
    """

    # The options a parameter group saved by an older version may lack, with the defaults
    # __setstate__ gives them (in this order), and whether the state keeps 'step' as a 0-d
    # tensor, which __setstate__ restores where a state was saved with a number.
    _group_option_defaults = {}
    _tensor_steps = False

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        self._patch_step_function()

        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or "
                            "dicts, but got " + _typename(params))

        self.state = defaultdict(dict)
        self.param_groups = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for name, value in self._group_option_defaults.items():
                group.setdefault(name, value)
        if self._tensor_steps:
            _restore_steps(self)

    def _patch_step_function(self):
        # As PyTorch does: the class's step gets the hooks (and no_grad) the first time an
        # instance is made, so a subclass's own step is wrapped too.
        cls = self.__class__
        if not getattr(cls.step, "hooked", False):
            cls.step = _hooked_step(cls.step)

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        s += ")"
        return s

    # --- hooks ----------------------------------------------------------------------
    def register_step_pre_hook(self, hook):
        """Run ``hook(optimizer, args, kwargs)`` before each step; it may return new (args, kwargs)."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook):
        """Run ``hook(optimizer, args, kwargs)`` after each step."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def _register(self, store, hook, prepend):
        handle = RemovableHandle(store)
        store[handle.id] = hook
        if prepend:
            store.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook, prepend=False):
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # --- state_dict -----------------------------------------------------------------
    def state_dict(self):
        """{'state': {param index: {key: value}}, 'param_groups': [{options..., 'params': [indices]}]}.

        The state's tensors are the optimizer's own (not copies), as in PyTorch.
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict):
        """Load a state from :meth:`state_dict`; the groups must match in number and size.

        Validates first and changes nothing when the state does not fit.
        """
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        from copy import deepcopy
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group "
                             "that doesn't match the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, key=None):
            if isinstance(value, Tensor):
                if key == "step":
                    d = value._data
                    writable = type(d) is not np.ndarray or d.flags.writeable
                    return value if writable else Tensor._make(d.copy())
                return _cast_like(param, value)
            if isinstance(value, dict):
                return {k: cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # --- gradients and groups -------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        """Clear every parameter's gradient: ``None`` (the default) or zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is not None:
                    if set_to_none:
                        p._grad = None
                    else:
                        if g._grad_fn is not None:
                            g.detach_()
                        else:
                            g.requires_grad_(False)
                        if g._sparse:   # a sparse .grad (embedding(sparse=True)) empties, as PyTorch's zero_()
                            g.zero_()
                        else:
                            g._data[...] = 0
                            g._bump_version()

    def step(self, closure=None):
        """Perform a single optimization step (subclasses implement it)."""
        raise NotImplementedError

    def add_param_group(self, param_group):
        """Add a group of parameters (with its own options) to ``param_groups``."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the "
                            "ordering of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; "
                          "see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)

        param_set = set()
        for group in self.param_groups:
            param_set.update(set(group["params"]))
            if ("param_names" in param_group) != ("param_names" in group):
                txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {txt} to the optimizer")
        if not param_set.isdisjoint(set(param_group["params"])):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # --- used by the subclasses ---------------------------------------------------------
    @staticmethod
    def _grad_array(p, maximize, real=True):
        xp = xp_for(p)
        g = p._grad._data
        if real:
            g = _real(g)
        return xp.negative(g, out=xp.empty_like(g)) if maximize else g

    def _params_with_grad(self, group, buffers=(), init=None):
        """Each parameter of ``group`` that has a gradient, with its state. A new state gets
        'step' (a 0-d zero), then what ``init(p, state)`` adds, then a zero-filled tensor
        per name in ``buffers`` (the keys in this order, as PyTorch's state has them)."""
        for p in group["params"]:
            if p._grad is None:
                continue
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _step_tensor()
                if init is not None:
                    init(p, state)
                for name in buffers:
                    state[name] = _zeros_like(p)
            yield p, state

    @staticmethod
    def _closure_loss(closure):
        if closure is None:
            return None
        with grad_mode.enable_grad():
            return closure()
