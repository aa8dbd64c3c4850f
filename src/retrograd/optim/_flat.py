"""Optimizer steps over flat buffers (PyTorch's foreach idea, for NumPy).

A step written per parameter costs a few NumPy calls per parameter, and for models with
many small tensors those calls, not the arithmetic, take the time. Here the parameters of
a group that share a dtype (and a step count) form a *bundle*: their optimizer state
lives in one flat array per key (the per-parameter state tensors are views into it, so
``optimizer.state`` and ``state_dict()`` keep PyTorch's layout), their gradients are
gathered into one flat buffer, and the update is computed by a handful of calls on those
buffers; only the final write into each parameter is a call per parameter. The
parameters' own arrays are never moved, so every alias of a parameter keeps seeing it.

A step's kernel is written once, against a :class:`Batch`: a bundle is a batch of many
parameters; the per-parameter path (``foreach=False``, complex parameters, a gradient of
another dtype or kind) runs the same kernel on a batch of one. Elementwise arithmetic does
not care how an array is cut, so both give the same bits.

A bundle is checked at each step: the same parameters with gradients, gradients that are
plain arrays of the parameter's dtype and shape, and state tensors that still are the
bundle's views (a ``load_state_dict``, or a state entry replaced by hand, makes a new
bundle from the state as it is then). Nothing is computed on a stale buffer.
"""
import numpy as np

from .._tensor import Tensor
from ..ops._base import xp_for
from .optimizer import _real, addcdiv, addcdiv_term, blas_for, fma_scalar, half, scale_

__all__ = ["Batch", "batches", "flat_ok"]

_NO_STATE = {}

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class Batch:
    """The parameters one kernel call updates, with flat (or, for one parameter, their own) arrays.

    ``state[key]`` and ``steps`` are the state arrays; :meth:`grad` the gradients; the
    per-parameter write is :meth:`update`.
    """

    __slots__ = ("params", "data", "state", "steps", "shapes", "offsets", "numel", "dtype", "_grad", "_param",
                 "_scratch", "_checks", "_real", "single", "_ptrs", "_static", "xp", "_views")

    def __init__(self, params, states, keys, step, real=False):
        self.params = params
        self.data = [_real(p._data) if real else p._data for p in params]
        self.dtype = self.data[0].dtype
        self.xp = xp = xp_for(self.data[0])   # (a device's bundle: its flat arrays on the device)
        self.single = len(params) == 1 and not step
        self._real = False
        self._static = None
        self._grad = None
        self._param = None
        self._scratch = {}
        self._checks = []
        self._views = {}
        if self.single:
            # a batch of one: the parameter's own state arrays, nothing copied
            st = states[0]
            self.state = {k: _real(st[k]._data) if real else st[k]._data for k in keys}
            self._real = real
            self.steps = None
            self.shapes = None
            return
        self.shapes = [d.shape for d in self.data]
        # the parameters' own arrays, for BLAS writes (None: written through NumPy)
        self._ptrs = [d.ctypes.data if xp is np and d.flags.c_contiguous and d.flags.writeable else None
                      for d in self.data]
        sizes = [d.size for d in self.data]
        self.offsets = np.cumsum([0] + sizes).tolist()
        self.numel = self.offsets[-1]
        self.state = {}
        for k in keys:
            flat = xp.empty(self.numel, self.dtype)
            xp.concatenate([st[k]._data.reshape(-1) for st in states], out=flat)
            self.state[k] = flat
            views = self._views[k] = self.split(flat)
            for st, view in zip(states, views):
                t = st[k]
                t._data = view
                self._checks.append((st, k, t, view))
        self.steps = None
        if step:
            sdt = states[0]["step"]._data.dtype
            steps = np.array([float(st["step"]._data) for st in states], dtype=sdt)
            self.steps = steps
            for i, st in enumerate(states):
                t = st["step"]
                view = steps[i:i + 1].reshape(())
                t._data = view
                self._checks.append((st, "step", t, view))

    # --- the arrays a kernel reads --------------------------------------------------------
    def split(self, flat):
        """Per-parameter views of a flat array (a batch of one: the array itself)."""
        if self.single or self.shapes is None:
            return [flat]
        o = self.offsets
        return [flat[o[i]:o[i + 1]].reshape(s) for i, s in enumerate(self.shapes)]

    def views(self, key):
        """The per-parameter views of the state array ``key`` (the state tensors' own arrays)."""
        if self.single:
            return [self.state[key]]
        return self._views[key]

    def grad(self, maximize=False, read_only=False):
        """The gradients as one writable array (a copy: the kernel may change it in place);
        ``read_only``: a kernel that only reads it may get a single parameter's own gradient."""
        if self.single:
            g = self.params[0]._grad._data
            if self._real:
                g = _real(g)
            if maximize:
                return self.xp.negative(g, out=self.xp.empty_like(g))
            return g if read_only else g.copy()
        buf = self._grad
        if buf is None:
            buf = self._grad = self.xp.empty(self.numel, self.dtype)
        self.xp.concatenate([p._grad._data.reshape(-1) for p in self.params], out=buf)
        if maximize:
            self.xp.negative(buf, out=buf)
        return buf

    def param(self):
        """The parameters' values as one array (read only: writes go through :meth:`update`)."""
        if self.single:
            return self.data[0]
        buf = self._param
        if buf is None:
            buf = self._param = self.xp.empty(self.numel, self.dtype)
        self.xp.concatenate([d.reshape(-1) for d in self.data], out=buf)
        return buf

    def scratch(self, i):
        """A reusable flat work array (a fresh one for a batch of one)."""
        if self.single:
            return self.xp.empty_like(self.data[0])
        buf = self._scratch.get(i)
        if buf is None:
            buf = self._scratch[i] = self.xp.empty(self.numel, self.dtype)
        return buf

    def step_value(self):
        """The (common) step count after this step's increment, as a float."""
        s = self.steps
        return float(s if s.ndim == 0 else s[0])

    def update(self, fn, *flats):
        """``fn(param_array, *views)`` for each parameter, then bump its version."""
        if self.single:
            fn(self.data[0], *flats)
            self.params[0]._bump_version()
            return
        views = [self.split(f) for f in flats]
        for i, (p, d) in enumerate(zip(self.params, self.data)):
            fn(d, *(v[i] for v in views))
            p._bump_version()

    def axpy(self, flat, s):
        """``param += s * view`` for each parameter, rounded once (``fma_scalar(view, s, param)``)."""
        fns = None if self.single or s == 1 or s == -1 or self.xp is not np else blas_for(self.dtype)
        if fns is None:
            self.update(lambda d, u: fma_scalar(u, s, d, out=d), flat)
            return
        self._blas_update(fns[0], flat, float(self.dtype.type(s)))

    def add(self, flat):
        """``param += view`` for each parameter."""
        fns = None if self.single or self.xp is not np else blas_for(self.dtype)
        if fns is None:
            self.update(_iadd, flat)
            return
        # a multiply-add by exactly 1 rounds once, as the sum does
        self._blas_update(fns[0], flat, 1.0)

    def _blas_update(self, axpy, flat, s):
        if not flat.flags.c_contiguous:
            flat = np.ascontiguousarray(flat)
        base = flat.ctypes.data
        isz = flat.itemsize
        o = self.offsets
        for i, (p, ptr) in enumerate(zip(self.params, self._ptrs)):
            n = o[i + 1] - o[i]
            if ptr is None:
                fma_scalar(flat[o[i]:o[i + 1]].reshape(self.shapes[i]), s, self.data[i], out=self.data[i])
            elif n:
                axpy(n, s, base + o[i] * isz, ptr)
            p._bump_version()

    def scale(self, c):
        """``param *= c`` for each parameter (c rounded to the dtype, as NumPy does)."""
        # (BLAS's scal by 0 writes zeros where NumPy keeps a NaN)
        fns = None if self.single or c == 0 or self.xp is not np else blas_for(self.dtype)
        if fns is None:
            for p, d in zip(self.params, self.data):
                scale_(d, c)
                p._bump_version()
            return
        c = float(self.dtype.type(c))
        scal = fns[1]
        o = self.offsets
        for i, (p, ptr) in enumerate(zip(self.params, self._ptrs)):
            n = o[i + 1] - o[i]
            if ptr is None:
                self.data[i] *= c
            elif n:
                scal(n, c, ptr)
            p._bump_version()

    def addcdiv(self, a, b, value, out=None):
        """``param.addcdiv_(a, b, value=value)`` for each parameter; ``out``: where the term
        ``(value * a) / b`` may be made (float16/bfloat16 parameters are rounded once instead)."""
        if half(self.dtype):
            self.update(lambda d, u, v: addcdiv(d, u, v, value, out=d), a, b)
            return
        self.add(addcdiv_term(a, b, value, out=out))

    def flat_params(self):
        """[(parameter, its array as 1-D, its gradient as 1-D, its slice of the flat arrays)], or
        None where a parameter's array is not one contiguous block (compiled kernels write it)."""
        if self.single or None in self._ptrs:
            return None
        static = self._static
        if static is None:
            o = self.offsets
            static = self._static = [(p, d.reshape(-1), slice(o[i], o[i + 1]))
                                     for i, (p, d) in enumerate(zip(self.params, self.data))]
        return [(p, d, p._grad._data.reshape(-1), sl) for p, d, sl in static]

    # --- validity -------------------------------------------------------------------------
    def valid(self):
        for p, d in zip(self.params, self.data):
            if p._data is not d:
                return False
            g = p._grad
            if g is None:
                return False
            gd = g._data
            if type(gd) is not type(d) or gd.dtype != d.dtype or gd.shape != d.shape:
                return False
        for st, k, t, view in self._checks:
            if st.get(k) is not t or t._data is not view:
                return False
        if self.steps is not None and len(self.steps) > 1 and not (self.steps == self.steps[0]).all():
            return False
        return True


def _iadd(d, u):
    d += u


def flat_ok(group):
    """Whether a group's steps may run over flat buffers: with ``fused=True``, else unless
    ``foreach=False`` (PyTorch's per-parameter loop, kept as the reference) or ``differentiable``."""
    return bool(group.get("fused")) or (group.get("foreach") is not False and not group.get("differentiable"))


def _eligible(p, st, keys, step):
    d = p._data
    if (type(d) is not np.ndarray and xp_for(d) is np) or d.dtype not in _FLOATS:   # (host or a device)
        return False
    gd = p._grad._data
    if type(gd) is not type(d) or gd.dtype != d.dtype or gd.shape != d.shape:
        return False
    for k in keys:
        t = st.get(k)
        if not isinstance(t, Tensor) or type(t._data) is not type(d) or t._data.dtype != d.dtype \
                or t._data.shape != d.shape:
            return False
    if step:
        t = st.get("step")
        if not isinstance(t, Tensor) or type(t._data) is not np.ndarray or t._data.shape != ():
            return False
    return True


def _single(p, st, keys, step, real):
    b = Batch([p], [st], keys, None, real)
    if step:
        b.steps = st["step"]._data
    return b


def batches(optimizer, index, group, params, keys, step=True, flat=True, real=True):
    """The batches that update ``params`` (the group's parameters with a gradient, state made).

    ``keys``: the state entries the kernel uses (each an array like the parameter);
    ``step``: whether the state has a 'step' the kernel advances; ``real``: whether a batch of
    one complex parameter works on it as (real, imag) pairs. With ``flat`` false (the
    group's ``foreach=False``, or a ``differentiable`` group) every parameter is its own batch.
    """
    if group.get("fused"):
        for p in params:
            if p._data.dtype.kind not in "fV":
                raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of "
                                   "supported devices: ['mps', 'cuda', 'xpu', 'hpu', 'cpu', 'mtia', 'privateuseone'] "
                                   f"but {p.dtype} and {p.device}")
    state = optimizer.state
    if not (keys or step):
        state = {p: _NO_STATE for p in params}   # no state entries made for a stateless step
    if not flat:
        return [_single(p, state[p], keys, step, real) for p in params]
    cache = optimizer.__dict__.setdefault("_flat_cache", {})
    ids = tuple(map(id, params))
    hit = cache.get(index)
    if hit is not None and hit[0] is group and hit[1] == ids and hit[2] == keys:
        bundles, singles = hit[3], hit[4]
        if all(b.valid() for b in bundles):
            return bundles + [_single(p, state[p], keys, step, real) for p in singles]
    groups = {}
    singles = []
    for p in params:
        st = state[p]
        if _eligible(p, st, keys, step):
            k = (type(p._data), p._data.dtype, float(st["step"]._data) if step else None,
                 st["step"]._data.dtype if step else None)
            groups.setdefault(k, []).append(p)
        else:
            singles.append(p)
    bundles = []
    for ps in groups.values():
        if len(ps) == 1:
            singles.append(ps[0])
            continue
        bundles.append(Batch(ps, [state[p] for p in ps], keys, step))
    cache[index] = (group, ids, keys, bundles, singles)
    return bundles + [_single(p, state[p], keys, step, real) for p in singles]
