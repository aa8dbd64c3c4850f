"""What every op is built from: operand preparation, type promotion, node recording and
saved tensors with version checks.

An op computes its result on the arrays, then asks ``node_for`` for a node (None when
grad mode is off or no input requires grad), saves what its backward needs, and wraps
the result with ``finish``. Backward formulas are written with tensor ops, so they are
themselves differentiable (create_graph=True).
"""
import builtins
import weakref

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, Size
from ..autograd import grad_mode
from ..autograd.graph import Node, AccumulateGrad, _seq, _RELEASED, SECOND_BACKWARD_MSG, _NRS

_new = object.__new__
_next = next
_ndarray = np.ndarray
_state = grad_mode._state
_float, _int, _bool, _complex = builtins.float, builtins.int, builtins.bool, builtins.complex
_SCALARS = (_float, _int, _bool, _complex)
_FROM_NP = D._FROM_NP
_I64 = np.dtype(np.int64)

_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
               "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor",
               "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor", "bfloat16": "BFloat16Tensor"}


def type_name(t):
    """PyTorch's legacy type string, e.g. ``torch.FloatTensor``."""
    kind = t.device.type
    prefix = "torch." if kind == "cpu" else f"torch.{kind}."
    return prefix + _TYPE_NAMES[t._data.dtype.name]


def typename(obj):
    """``torch.typename``: a tensor's legacy type ('torch.FloatTensor'), else the class's
    qualified name (builtins unqualified: 'int')."""
    if isinstance(obj, Tensor):
        return type_name(obj)
    module, name = type(obj).__module__, type(obj).__qualname__
    return name if module in (None, "builtins") else module + "." + name


def zeros_grad(like, shape=None):
    """A gradient of zeros shaped like ``like`` (or ``shape``) and of its dtype, outside the
    graph: PyTorch's ``zeros_like(grad)`` for ops whose derivative is zero."""
    d = like._data
    return finish(None, xp_of(like).zeros(d.shape if shape is None else shape, d.dtype))


class SavedOutput:
    """An op's output saved by its own node: kept as data, rebuilt on unpack, so that
    output -> grad_fn -> output is no reference cycle."""
    __slots__ = ("data", "version", "output_nr", "requires_grad", "view_fn")

    def __init__(self, t):
        self.data = t._data
        self.version = t._shared_version()
        self.output_nr = t._output_nr
        self.requires_grad = t._requires_grad
        self.view_fn = None   # an in-place op's output on a view: a weak reference to the
                              # view's grad_fn then, named in errors while it lives (PyTorch's)


class _Packed:
    """A tensor saved under ``saved_tensors_hooks``: what pack returned, plus the autograd
    identity to give back to the tensor that unpack returns."""
    __slots__ = ("unpack", "packed", "requires_grad", "grad_fn", "output_nr", "is_output", "grad_acc")

    def __init__(self, t, pack, unpack, is_output):
        self.unpack = unpack
        self.requires_grad = t._requires_grad
        self.output_nr = t._output_nr
        self.is_output = is_output
        self.grad_fn = None if is_output else t._grad_fn
        self.grad_acc = t._grad_acc if t._requires_grad and t._grad_fn is None else None
        if self.grad_acc is None and t._requires_grad and t._grad_fn is None:
            t._grad_accumulator()
            self.grad_acc = t._grad_acc
        self.packed = pack(t)

    def unpack_for(self, node):
        r = self.unpack(self.packed)
        if not isinstance(r, Tensor):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result "
                            f"of type {type(r).__name__}")
        t = _new(Tensor)
        t._data = r._data
        t._vc = r._shared_version()
        if self.requires_grad:
            t._requires_grad = True
            fn = node if self.is_output else self.grad_fn
            if fn is not None:
                t._grad_fn = fn
                t._output_nr = self.output_nr
            else:
                t._grad_acc = self.grad_acc
        return t


class OpNode(Node):
    """Base of every op's backward node: holds saved tensors and checks their versions."""

    @property
    def saved_tensors(self):
        s = self._saved
        if s is _RELEASED:
            raise RuntimeError(SECOND_BACKWARD_MSG)
        if s is None:
            return ()
        out = []
        for item, v in zip(s, self._saved_versions):
            tp = type(item)
            if tp is SavedOutput:
                if item.version[0] != v:
                    t = self._rebuild(item)
                    vf = item.view_fn() if item.view_fn is not None else None
                    if vf is not None:
                        t._grad_fn, t._output_nr = vf, 0
                    _version_error(t, item.version[0], v)
                item = self._rebuild(item)
            elif tp is _Packed:
                item = item.unpack_for(self)
            elif v is not None:
                cur = item._vc
                cur = 0 if cur is None else cur[0]
                if cur != v:
                    _version_error(item, cur, v)
            out.append(item)
        return tuple(out)

    def _rebuild(self, item):
        t = _new(Tensor)
        t._data = item.data
        t._vc = item.version
        if item.requires_grad:
            t._requires_grad = True
            t._grad_fn = self
            t._output_nr = item.output_nr
        return t

    def _release(self):
        if self._saved is not None:
            self._saved = _RELEASED

    @property
    def _saved_names(self):
        return ()


def _short_name(fn):
    """How PyTorch names a node in the in-place error: ``ExpBackward0`` -> ``Exp``,
    ``ClampBackward1`` -> ``Clamp1``, its own C++ nodes by their C++ names."""
    n = fn.__name__ if isinstance(fn, type) else fn.name()
    if n in ("CopySlices", "AccumulateGrad", "CopyBackwards"):
        return "torch::autograd::" + n
    i = n.rfind("Backward")
    if i > 0:
        digits = n[i + 8:]
        if digits == "" or digits.isdigit():
            return n[:i] + ("" if digits in ("", "0") else digits)
    return n


_NO_LEGACY = {"bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble", "bfloat16": "BFloat16"}


def _error_type_name(t):
    """The type name PyTorch's errors show: the legacy ``torch.DoubleTensor`` names, except for
    the dtypes that have none there (bool, complex, bfloat16): ``CPUComplexDoubleType``."""
    s = _NO_LEGACY.get(t._data.dtype.name)
    if s is not None:
        return ("CUDA" if t.device.type == "cuda" else "CPU") + s + "Type"
    return type_name(t)


def _version_error(t, cur, expected):
    fn = t.grad_fn if t._base is not None else t._grad_fn   # (a view's as rebuilt now, as PyTorch shows)
    shape = "[" + ", ".join(str(s) for s in t._data.shape) + "]"
    where = f", which is output {t._output_nr} of {_short_name(fn)}," if fn is not None else ""
    from ..autograd import anomaly
    hint = ("Hint: the backtrace further above shows the operation that failed to compute its "
            "gradient. The variable in question was changed in there or anywhere later. Good luck!"
            if anomaly.is_anomaly_enabled() else
            "Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
            "with torch.autograd.set_detect_anomaly(True, check_nan=False).")
    raise RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{_error_type_name(t)} {shape}]{where} is at version {cur}; expected version "
        f"{expected} instead. {hint}")


def node_for(cls, inputs):
    """A fresh ``cls`` node wired to ``inputs`` (Tensors or None), or None when no
    gradient is recorded (grad mode off, or no input requires grad)."""
    if not _state.grad:
        return None
    fns = []
    nrs = []
    wanted = False
    live = 0
    for t in inputs:
        if t is None or not t._requires_grad:
            if t is not None and t._base is not None and t._base._requires_grad:
                # A view made before its base required grad, or under no_grad: it
                # requires grad; its edge is the rebuilt grad_fn's, or none.
                wanted = True
                fn, nr = t._edge()
                fns.append(fn)
                nrs.append(nr)
                if fn is not None:
                    live += 1
                continue
            fns.append(None)
            nrs.append(0)
            continue
        wanted = True
        live += 1
        if t._base is not None:
            t._refresh_view()
        fn = t._grad_fn
        if fn is not None:
            fns.append(fn)
            nrs.append(t._output_nr)
        else:
            fns.append(t._grad_accumulator())
            nrs.append(0)
    if not wanted:
        return None
    n = _new(cls)
    k = len(fns)
    if k == 1:
        n._nf = fns[0]
        n._nr = nrs[0]
    elif live > 1 or k == 0:
        n._nf = tuple(fns)
        nr = tuple(nrs)
        n._nr = _NRS.get(nr, nr)
    else:   # one edge of several leads somewhere (Node's compact form)
        n._ne = k
        i = 0
        for f in fns:
            if f is not None:
                break
            i += 1
        if i == k:
            i = 0
        elif i:
            n._ni = i
        n._nf = fns[i]
        n._nr = nrs[i]
    n._seq = _next(_seq)
    if Node._anomaly_stack is not None:
        n._trace = Node._anomaly_stack()
    return n


def node_for1(cls, t, ne=1):
    """``node_for(cls, (t, None, ...))`` (``ne`` edges, only ``t``'s can lead anywhere):
    the hot path of unary ops and of a tensor with a Python number."""
    if not _state.grad or not t._requires_grad or t._base is not None:
        return node_for(cls, (t,) + (None,) * (ne - 1))
    n = _new(cls)
    fn = t._grad_fn
    if fn is not None:
        n._nf = fn
        n._nr = t._output_nr
    else:
        n._nf = t._grad_accumulator()
        n._nr = 0
    if ne != 1:
        n._ne = ne
    n._seq = _next(_seq)
    if Node._anomaly_stack is not None:
        n._trace = Node._anomaly_stack()
    return n


_NO_EDGE = (None, 0)


def save(node, *items):
    """Save tensors (or plain values) on ``node`` for its backward, with their versions."""
    if _hooks_open[0]:
        hooks = current_pack_hooks()
        if hooks is not None:
            return _save_with_hooks(node, items, hooks)
    vs = []
    proxied = False
    for t in items:
        if isinstance(t, Tensor):
            if t._inference:
                _inference_error()
            v = t._vc
            vs.append(0 if v is None else v[0])
            if t._requires_grad and t._grad_fn is None:
                proxied = True
        else:
            vs.append(None)
    if proxied:
        items = tuple(t._saved_proxy() if isinstance(t, Tensor) and t._requires_grad and t._grad_fn is None
                      else t for t in items)
    node._saved = items
    node._saved_versions = tuple(vs)


def save_output(node, out):
    """Save ``out`` (a result of ``node`` itself) without making a reference cycle."""
    hooks = current_pack_hooks() if _hooks_open[0] else None
    if hooks is not None:
        so = _Packed(out, hooks[0], hooks[1], True)
        v = None
    else:
        so = SavedOutput(out)
        v = so.version[0]
    saved = node._saved
    if saved is None or saved is _RELEASED:
        node._saved = (so,)
        node._saved_versions = (v,)
    else:
        node._saved = saved + (so,)
        node._saved_versions = node._saved_versions + (v,)


INFERENCE_SAVE_MSG = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode "
    "in computation tracked by autograd. To work around this, you can make a clone to get a normal tensor "
    "and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.")


def _inference_error():
    raise RuntimeError(INFERENCE_SAVE_MSG)


# saved_tensors_hooks: this thread's innermost (pack, unpack) pair.
from ..autograd.graph import current_pack_hooks, _hooks_open  # noqa: E402


def _save_with_hooks(node, items, hooks):
    """Tensors go through the innermost pack hook; nothing else keeps them (no version
    check either, as in PyTorch: the hooks own the data)."""
    pack, unpack = hooks
    saved = []
    for t in items:
        if isinstance(t, Tensor):
            if t._inference:
                _inference_error()
            saved.append(_Packed(t, pack, unpack, False))
        else:
            saved.append(t)
    node._saved = tuple(saved)
    node._saved_versions = (None,) * len(saved)


def out_meta(data):
    """``((shape, dtype),)`` of ``data``: one shared tuple per shape and dtype (a node's own
    would be two more objects for the cyclic GC to scan, for as long as the graph lives:
    tuples holding dtypes are never untracked)."""
    key = (data.shape, data.dtype)
    m = _METAS.get(key)
    if m is None:
        if len(_METAS) > 4096:
            _METAS.clear()
        m = _METAS[key] = (key,)
    return m


_METAS = {}


def finish(node, data):
    """Wrap ``data`` as the op's output tensor, attached to ``node`` if there is one."""
    t = _new(Tensor)
    t._data = data
    if node is not None:
        node._out_meta = out_meta(data)
        t._grad_fn = node
        t._requires_grad = True
    elif _state.inference:
        t._inference = True
    return t


class _JointGrad(OpNode):
    """The identity, wired to the inputs of the backward function that computed its value
    (see joint_grads); they get no gradient through it."""

    def backward(self, g):
        return (g,) + (None,) * (len(self.next_functions) - 1)


_JOINT = {}


def joint_grads(name, grads, inputs):
    """PyTorch's rule for gradients that one backward function computes together (torch's
    native_layer_norm_backward, native_batch_norm_backward, convolution_backward): recorded
    (create_graph), that function is one node, so each of its results requires grad when any
    of its inputs does. A result computed here without them (a bias's gradient: the upstream
    summed, which needs neither input nor weight) is passed through an identity node named
    ``name`` (torch's node) and wired to them too, its values untouched; elsewhere ``grads``
    as they are."""
    if not _state.grad:
        return grads
    need = tuple(t for t in inputs if t is not None and t._requires_grad)
    if not need or all(g is None or g._requires_grad for g in grads):
        return grads
    cls = _JOINT.get(name)
    if cls is None:
        cls = _JOINT[name] = type(name, (_JointGrad,), {"__module__": __name__})
    out = []
    for g in grads:
        if g is not None and not g._requires_grad:
            node = node_for(cls, (g,) + need)
            if node is not None:
                g = finish(node, g._data)
        out.append(g)
    return type(grads)(out) if isinstance(grads, tuple) else out


def finish_multi(node, datas):
    """Wrap several outputs of one node (split, unbind, max with indices, ...)."""
    outs = []
    if node is not None:
        node._out_meta = tuple((d.shape, d.dtype) for d in datas)
    for i, d in enumerate(datas):
        t = _new(Tensor)
        t._data = d
        if node is not None:
            t._grad_fn = node
            t._requires_grad = True
            t._output_nr = i
        outs.append(t)
    return outs


def view_of(base, t, view_fn=None, multi=False):
    """Mark ``t`` as a view of ``base``: they share a version counter, and ``view_fn``
    rebuilds the view from the root base (for in-place ops on views: CopySlices).

    ``multi``: ``t`` is one of several views made by one op (split, unbind, chunk). As
    in PyTorch, a view made under no_grad or by such an op (or a view of one) can never
    have its history rebased by an in-place op (``check_inplace``, ``_refresh_view``)."""
    v = t._vc = base._shared_version()
    t._view_ver = v[0]
    if t._inference and not base._inference:
        t._inference = False   # (a view of a normal tensor made in inference mode is a normal tensor)
    if base._nograd_view == "inference":
        t._nograd_view = "inference"
    elif not _state.grad:
        t._nograd_view = "inference" if _state.inference else True
    elif multi:
        t._multi_view = True
    elif base._nograd_view:
        t._nograd_view = True
    elif base._multi_view:
        t._multi_view = True
    root = base._base
    if root is None:
        t._base = base
        if view_fn is not None:
            t._view_fn = view_fn
    else:
        t._base = root
        outer = base._view_fn
        if view_fn is not None and outer is not None:
            t._view_fn = lambda b: view_fn(outer(b))
    return t


try:   # NumPy >= 2.0: the error state is a context variable holding an "extobj"
    from numpy._core.umath import _extobj_contextvar as _FP_STATE, _make_extobj
except ImportError:   # pragma: no cover
    _FP_STATE = None
_QUIET = {}


def quiet(f, x):
    """``f(x)`` under ``np.errstate(all="ignore")``, without errstate's cost per use (it
    builds its state anew each time: several times a 0-d ufunc's own cost). The quiet
    state is made once per surrounding state, so bufsize and errcall stay the user's."""
    if _FP_STATE is None:
        with np.errstate(all="ignore"):
            return f(x)
    if type(x) is not _ndarray and isinstance(f, np.ufunc):
        f = on_device(f, x)
    cur = _FP_STATE.get()
    q = _QUIET.get(cur)
    if q is None:
        if len(_QUIET) > 16:
            _QUIET.clear()
        q = _QUIET[cur] = _make_extobj(all="ignore")
    token = _FP_STATE.set(q)
    try:
        return f(x)
    finally:
        _FP_STATE.reset(token)


def arr(x):
    """Make sure an op's result is an array (NumPy turns 0-d results into scalars)."""
    if type(x) is _ndarray:
        return x
    if isinstance(x, np.generic):
        return np.asarray(x)
    return x


# --- operands and type promotion ----------------------------------------------------------

def to_tensor(x, like=None):
    """Tensor operands pass through; Python numbers and arrays become tensors."""
    if isinstance(x, Tensor):
        return x
    from .._creation import tensor
    return tensor(x)


def scalar_np_dtype(v, other_np):
    """Result dtype of ``array(other_np) op python_scalar(v)`` under PyTorch's rules."""
    k = other_np.kind
    t = type(v)
    if t is _float:
        return other_np if k in "fc" else D._default[0].np
    if t is _int:
        return other_np if k != "b" else _I64
    if t is _bool:
        return other_np
    if t is _complex:
        return other_np if k == "c" else (np.dtype(np.complex128) if other_np == np.float64 else np.dtype(np.complex64))
    if isinstance(v, np.generic):
        return scalar_np_dtype(v.item(), other_np)
    raise TypeError(f"unsupported operand type {t.__name__}")


def result_np_dtype(*operands):
    """Result dtype of an op over tensors and Python scalars (PyTorch's promotion)."""
    dim = zero = sc = None
    for o in operands:
        if isinstance(o, Tensor):
            dt = _FROM_NP[o._data.dtype]
            if o._data.ndim:
                dim = dt if dim is None else D.promote_types(dim, dt)
            else:
                zero = dt if zero is None else D.promote_types(zero, dt)
        elif o is not None:
            dt = D._scalar_dtype(o)
            sc = dt if sc is None else D.promote_types(sc, dt)
    return D.result_type_of(dim, zero, sc).np


def check_same_device(a, b):
    """PyTorch's device rule for two operands: one device, except that a 0-d CPU tensor joins
    any device (as a scalar)."""
    if type(a._data) is not type(b._data):
        da, db = a.device, b.device
        if da != db and not (da.type == "cpu" and not a._data.ndim) and not (db.type == "cpu" and not b._data.ndim):
            if "meta" in (da.type, db.type):
                if a._data.ndim and b._data.ndim:
                    raise RuntimeError(f"Tensor on device {db} is not on the expected device {da}!")
                return
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, {da} and {db}!")


def check_devices(*tensors):
    """``check_same_device`` over an op's tensor operands (None and non-tensors skipped; the
    first tensor's device is the expected one)."""
    first = kind = None
    for t in tensors:
        c = t.__class__
        if c is Tensor or _KINDS.get(c, None) == 1 or (c not in _KINDS and _kind(c) == 1):
            k = t._data.__class__
            if kind is None:
                first, kind = t, k
            elif k is not kind:
                check_same_device(first, t)
        elif c is list or c is tuple:
            for u in t:
                if isinstance(u, Tensor):
                    k = u._data.__class__
                    if kind is None:
                        first, kind = u, k
                    elif k is not kind:
                        check_same_device(first, u)


def _as_scalar_on(x, y):
    """(x, y) with a 0-d host array among them, met by a device array, as a NumPy scalar
    (PyTorch passes a CPU scalar tensor to a device kernel by value)."""
    if type(x) is _ndarray and not x.ndim and type(y) is not _ndarray and hasattr(y, "dtype"):
        return x[()], y
    if type(y) is _ndarray and not y.ndim and type(x) is not _ndarray and hasattr(x, "dtype"):
        return x, y[()]
    return x, y


def binary_operands(input, other):
    """(a, b, x, y, dtype): tensors-or-None, raw operands and the promoted result dtype."""
    if isinstance(input, Tensor):
        x = input._data
        t = other.__class__
        if t is _float:  # the commonest case first: tensor <op> python float
            dt = x.dtype
            return input, None, x, other, (dt if dt.kind in "fcV" else D._default[0].np)
        if isinstance(other, Tensor):
            y = other._data
            if x.dtype == y.dtype:
                if type(x) is not type(y):  # numpy and cupy arrays: different devices
                    check_same_device(input, other)
                    x, y = _as_scalar_on(x, y)
                return input, other, x, y, x.dtype
            if type(x) is not type(y):
                check_same_device(input, other)
                x, y = _as_scalar_on(x, y)
            return input, other, x, y, result_np_dtype(input, other)
        if t is _int or t is _bool or t is _complex or isinstance(other, np.generic):
            return input, None, x, other, scalar_np_dtype(other, x.dtype)
        other = to_tensor(other)
        return binary_operands(input, other)
    if isinstance(other, Tensor):
        a, b, x, y, dt = binary_operands(other, input)
        return b, a, y, x, dt
    return binary_operands(to_tensor(input), other)


def cast(x, npdt):
    """``x`` as ``npdt`` (no copy when it already is)."""
    if type(x) is _ndarray or hasattr(x, "astype"):
        return x if x.dtype == npdt else x.astype(npdt)
    return x


def norm_dims(dim, ndim):
    """``dim`` (int, tuple, list or None) as a sorted tuple of non-negative axes."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        dims = dim
    else:
        dims = (dim,)
    out = []
    for d in dims:
        d = _int(d)
        lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
        if not lo <= d <= hi:
            raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {d})")
        d = d % ndim if ndim else 0
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return tuple(sorted(out))


def wrap_dim(dim, ndim):
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim % ndim if ndim else 0


def xp_of(t):
    """The array module (numpy or cupy) of a tensor's data."""
    d = t._data if isinstance(t, Tensor) else t
    if type(d) is _ndarray:
        return np
    from .._device import array_module, device_of_array
    return array_module(device_of_array(d))


def xp_for(*arrays):
    """NumPy, or the device array module (CuPy) of the first device array among ``arrays``
    (tensors, arrays, lists of them, or anything else, which is skipped); NumPy's own
    dispatch serves the meta device. Cheap on host data: a type lookup per argument."""
    for a in arrays:
        t = a.__class__
        if t is _ndarray:
            continue
        k = _KINDS.get(t)
        if k is None:
            k = _kind(t)
        if k == 1:
            a = a._data
            t = a.__class__
            if t is _ndarray:
                continue
            k = _KINDS.get(t)
            if k is None:
                k = _kind(t)
        if k == 2:
            return xp_of(a)
        if k == 3:
            xp = xp_for(*a)
            if xp is not np:
                return xp
    return np


_KINDS = {}   # type -> 0: other, 1: a Tensor, 2: a device array, 3: a list or tuple


def _kind(t):
    # (type tests, not isinstance: Tensor's metaclass makes isinstance slow on other objects)
    if Tensor in getattr(t, "__mro__", ()):
        k = 1
    elif t is tuple or t is list:
        k = 3
    elif getattr(t, "_retrograd_cuda", False) or getattr(t, "__module__", "").startswith("cupy"):
        k = 2
    else:
        k = 0
    _KINDS[t] = k
    return k


def strided(x, shape, strides, writeable=True):
    """A view of ``x`` with these byte strides (NumPy's ``as_strided``; on a device, CuPy's,
    whose views are always writeable)."""
    if type(x) is _ndarray:
        return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=writeable and x.flags.writeable)
    if type(x).__name__ == "MetaArray":
        return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=writeable)
    return xp_of(x).lib.stride_tricks.as_strided(x, shape, strides)


def address(x):
    """The address of an array's first element (host or device memory)."""
    if type(x) is _ndarray or type(x).__name__ == "MetaArray":
        return x.__array_interface__["data"][0]
    return x.data.ptr


def on_device(fn, *arrays):
    """NumPy's function ``fn``, or its namesake in the device module of ``arrays``."""
    if len(arrays) == 1 and arrays[0].__class__ is _ndarray:
        return fn
    xp = xp_for(*arrays)
    if xp is np or not (type(fn) is np.ufunc or getattr(fn, "__module__", "").startswith("numpy")):
        return fn   # (retrograd's own functions take device arrays themselves)
    return getattr(xp, fn.__name__)


__all__ = ["typename", "zeros_grad", "OpNode", "node_for", "save", "save_output", "finish", "finish_multi", "view_of",
           "arr", "binary_operands", "result_np_dtype", "cast", "norm_dims", "wrap_dim",
           "to_tensor", "Tensor", "Size", "xp_of", "xp_for", "on_device", "strided", "address", "type_name",
           "check_devices"]


# --- out= and in-place ------------------------------------------------------------------

def write_out(out, result, opname):
    """Write ``result`` (a Tensor) into ``out`` as PyTorch's ``out=`` does."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{opname}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if _state.grad and (out._requires_grad or result._requires_grad):
        raise RuntimeError(f"{opname}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    r = result._data
    if r.dtype != out._data.dtype and not D.can_cast(_FROM_NP[r.dtype], _FROM_NP[out._data.dtype]):
        raise RuntimeError(f"result type {_dtype_name(r.dtype)} can't be cast to the desired output type "
                           f"{_dtype_name(out._data.dtype)}")
    check_internal_overlap(out._data)
    if out._data.shape != r.shape:
        if out._data.size != 0:
            import warnings
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(out._data.shape)}, which does not match the required output shape "
                          f"{list(r.shape)}. This behavior is deprecated, and in a future PyTorch release "
                          "outputs will not be resized unless they have zero elements. You can explicitly "
                          "reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).",
                          UserWarning, stacklevel=3)
        out._data = r.astype(out._data.dtype, copy=True)
    else:
        out._data[...] = r
    out._bump_version()
    return out


LEAF_INPLACE_MSG = "a leaf Variable that requires grad is being used in an in-place operation."


_MULTI_VIEW_MSG = (" This view is the output of a function that returns multiple views. Such functions do not "
                   "allow the output views to be modified inplace. You should replace the inplace operation by "
                   "an out-of-place one.")
_NOGRAD_VIEW_MSG = (" Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
                    "code by moving both the view and the inplace either both inside the no_grad block (if you "
                    "don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).")


_OWN = object()


def view_rebase_error(t, indirect, through=_OWN):
    """PyTorch's error for rebasing the history of a view that cannot be rebased (made
    under no_grad or in inference mode, or by an op with several view outputs): written
    in place itself, or (``indirect``) through its base or a sibling view. ``through``:
    the write goes through a further view of ``t`` made by that node class (``t[i] = v``),
    or None when that view would have no grad_fn."""
    if through is _OWN:
        fn = t._grad_fn
        nr, name = t._output_nr, (_short_name(fn) if fn is not None else None)
    else:
        nr, name = 0, (_short_name(through) if through is not None else None)
    what = "its base or another view of its base has been" if indirect else "is being"
    meta = t._nograd_view
    if meta or name is None:
        prefix = (f"Output {nr} of {name} is a view of a view which was created in" if name is not None
                  else "A view was created in")
        if meta == "inference":
            msg = f"{prefix} inference mode and {what} modified inplace in normal mode."
        else:
            msg = f"{prefix} no_grad mode and {what} modified inplace with grad mode enabled."
    else:
        msg = f"Output {nr} of {name} is a view and {what} modified inplace."
    if t._multi_view:
        return RuntimeError(msg + _MULTI_VIEW_MSG)
    tail = _NOGRAD_VIEW_MSG.replace("no_grad block", "inference_mode block") if meta == "inference" else _NOGRAD_VIEW_MSG
    return RuntimeError(msg + tail)


INTERNAL_OVERLAP_MSG = ("unsupported operation: more than one element of the written-to tensor refers to a "
                        "single memory location. Please clone() the tensor before performing the operation.")
PARTIAL_OVERLAP_MSG = ("unsupported operation: some elements of the input tensor and the written-to tensor refer "
                       "to a single memory location. Please clone() the tensor before performing the operation.")


def check_internal_overlap(d):
    """PyTorch refuses to write into an array where several elements share one location
    (a stride-0 dimension of size > 1, as made by ``expand``)."""
    st = d.strides
    if 0 in st and d.size:
        for n, s in zip(d.shape, st):
            if s == 0 and n > 1:
                raise RuntimeError(INTERNAL_OVERLAP_MSG)


def _dense_span(a):
    """(first, last + 1) byte address of an array whose elements tile a block of memory
    exactly once (PyTorch's non-overlapping-and-dense), else None (too hard to tell)."""
    if type(a) is not _ndarray:
        return None
    k = a.itemsize
    expect = k
    for s, n in sorted((s, n) for n, s in zip(a.shape, a.strides) if n != 1):
        if s != expect:
            return None
        expect *= n
    p = a.__array_interface__["data"][0]
    return p, p + a.size * k


def check_partial_overlap(out, inp):
    """PyTorch's refusal to write ``out`` from ``inp`` when they share some memory but are
    not the very same elements in the same layout."""
    if out.size == 0 or inp.size == 0 or out is inp or type(out) is not _ndarray or type(inp) is not _ndarray \
            or not np.may_share_memory(out, inp):
        return
    a = _dense_span(out)
    if a is None:
        return
    b = _dense_span(inp)
    if b is None:
        return
    if a == b:
        if out.strides != inp.strides:
            raise RuntimeError(PARTIAL_OVERLAP_MSG)
    elif a[0] < b[1] and b[0] < a[1]:
        raise RuntimeError(PARTIAL_OVERLAP_MSG)


def check_inplace(t, *others, overlap=True):
    """Refuse, before anything is touched, the in-place ops PyTorch refuses when the op is
    recorded (grad mode on and ``t`` or one of ``others`` requires grad): on leaves that
    require grad, on views of leaves, and on views whose history cannot be rebased.
    ``overlap``: also refuse writes into memory that several elements share, or that
    overlaps a tensor in ``others`` only partly (as PyTorch's elementwise writes do)."""
    if _state.grad:
        rg = t._requires_grad
        base = t._base
        if base is not None and not rg:
            rg = base._requires_grad
        recorded = rg
        if not rg:
            for o in others:
                if isinstance(o, Tensor) and o._requires_grad:
                    recorded = True
                    break
        if recorded:
            if base is not None:
                if t._nograd_view or t._multi_view:
                    raise view_rebase_error(t, False)
                if rg and base._grad_fn is None:
                    raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                                       "in-place operation.")
            # (PyTorch tests the grad_fn as it stands: a view made before its base required
            # grad and not used since counts as a leaf here)
            if rg and t._grad_fn is None:
                raise RuntimeError(LEAF_INPLACE_MSG)
    if t._inference and not _state.inference:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed."
                           "You can make a clone to get a normal tensor before doing inplace update."
                           "See https://github.com/pytorch/rfcs/pull/17 for more details.")
    if overlap:
        d = t._data
        if 0 in d.strides:
            check_internal_overlap(d)
        for o in others:
            if isinstance(o, Tensor) and o._data.size:
                check_partial_overlap(d, o._data)


def _dtype_name(npdt):
    n = _FROM_NP[npdt].name
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
            "complex64": "ComplexFloat", "complex128": "ComplexDouble", "bfloat16": "BFloat16", "uint16": "UInt16",
            "uint32": "UInt32", "uint64": "UInt64"}[n]


def apply_inplace(self, fn, *args, **kwargs):
    """Run the out-of-place ``fn(self, *args)`` and write its result into ``self``.

    The node (if any) takes over ``self``'s history, so gradients stay right; a
    snapshot of the old value stands in for ``self`` so a node that saved it is not
    invalidated by this very write.
    """
    check_inplace(self, *args, *kwargs.values(), overlap=not getattr(fn, "_overlap_ok", False))
    recording = _state.grad and (self._requires_grad or any(
        isinstance(a, Tensor) and a._requires_grad for a in args))
    if recording and not getattr(fn, "_saves_input", True) and not args and not kwargs:
        # an op whose node keeps only its output (relu_, exp_, sigmoid_, ...): nothing saved
        # reads the old value, so the op runs on self itself, without a snapshot copy
        r = fn(self)
    elif recording:
        src = _new(Tensor)
        src._data = self._data.copy()
        if self._requires_grad:
            src._requires_grad = True
            edge = self._edge()
            src._grad_fn, src._output_nr = edge
            if type(edge[0]) is AccumulateGrad:
                src._grad_fn = None
                src._grad_acc = self._grad_acc
        r = fn(src, *args, **kwargs)
    else:
        prev = _state.grad
        _state.grad = False
        try:
            r = fn(self, *args, **kwargs)
        finally:
            _state.grad = prev
    rd = r._data
    sd = self._data
    if rd.dtype != sd.dtype and not D.can_cast(_FROM_NP[rd.dtype], _FROM_NP[sd.dtype]):
        raise RuntimeError(f"result type {_dtype_name(rd.dtype)} can't be cast to the desired output "
                           f"type {_dtype_name(sd.dtype)}")
    if rd.shape != sd.shape:
        raise RuntimeError(f"output with shape {list(sd.shape)} doesn't match the broadcast shape {list(rd.shape)}")
    if sd.ndim == 0 and type(sd) is _ndarray:
        sd[()] = rd
    elif rd is sd:
        pass        # (the op wrote its result over self's values itself)
    elif 0 in sd.strides:
        # Elements sharing memory (an expanded tensor, for the ops PyTorch lets write one):
        # only the elements the op changed are written, as PyTorch's kernels do.
        m = rd != sd
        sd[m] = rd[m]
    else:
        sd[...] = rd
    self._bump_version()
    if recording:
        node = r._grad_fn
        adopted = _adopt_saved_output(node, r, self) if node is not None else ()
        rebase_history(self, node, r._output_nr)
        if self._base is not None:
            for it in adopted:
                it.view_fn = weakref.ref(self._grad_fn)
    return self


def _adopt_saved_output(node, r, self):
    """The output ``r`` that ``node`` saved becomes ``self`` (written in place); returns the
    adopted saved items."""
    saved = node._saved
    if saved is None or saved is _RELEASED:
        return ()
    items, vs = list(saved), list(node._saved_versions)
    adopted = []
    for i, it in enumerate(items):
        if type(it) is SavedOutput and it.data is r._data:
            it.data = self._data
            it.version = self._shared_version()
            vs[i] = it.version[0]
            adopted.append(it)
    node._saved = tuple(items)
    node._saved_versions = tuple(vs)
    return adopted


def rebase_history(self, node, output_nr):
    """Make ``node`` the creator of ``self`` after an in-place op.

    On a view whose base takes part in autograd, the base's history is rewired instead
    (CopySlices, in view_inplace) so that gradients through the base stay right.
    """
    if node is None:
        return
    if self._base is not None and self._view_fn is not None:
        from .view_inplace import copy_slices
        copy_slices(self, node, output_nr)
        return
    node._out_meta = out_meta(self._data)
    set_history(self, node, output_nr)


def set_history(t, node, output_nr=0):
    """Make ``node`` (output ``output_nr``) the creator of ``t`` after an in-place write;
    a ``retain_grad()`` on ``t`` follows it to the new node."""
    old, old_nr = t._grad_fn, t._output_nr
    t._grad_fn = node
    t._output_nr = output_nr
    t._requires_grad = True
    if old is not None and old._retain_grad_hooks:
        old._move_retain_grad(old_nr, node, output_nr)


# --- gradients that are zero somewhere: select, never multiply ------------------------------

class _MaskedGradNode(OpNode):
    """Backward of a masked gradient: linear in the incoming gradient, constant in ``dep``
    (PyTorch's ``threshold_backward`` and friends: their derivative w.r.t. the tensor the
    mask came from is zero, but the result still belongs to the graph)."""

    def backward(self, gg):
        nf = self.next_functions
        saved = self.saved_tensors
        # d/dg is the same selection, again attached to dep (PyTorch's *_backward(gg, self))
        dg = masked_grad(gg, self.factor, saved[0] if saved else None, type(self).__name__) \
            if nf[0][0] is not None else None
        if nf[1][0] is None:
            return dg, None
        z = finish(None, np.zeros(self.dep_shape, dtype=gg._data.dtype))
        return dg, z


def masked_grad(g, factor, dep, name="ThresholdBackwardBackward0"):
    """``g * factor`` where ``factor`` (a bool mask or an array broadcastable to ``g``) is
    constant; positions where ``factor`` is 0 are exactly 0 even when ``g`` is inf or nan,
    as in PyTorch, where such gradients are selected rather than multiplied.

    Under ``create_graph`` the result stays in the graph whenever ``g`` or ``dep`` (the
    tensor the mask was computed from) requires grad, as PyTorch's ``*_backward`` kernels
    do; its derivative w.r.t. ``dep`` is zero.
    """
    gd = g._data
    f = factor._data if isinstance(factor, Tensor) else factor
    if getattr(f, "dtype", None) is not None and f.dtype.kind == "b":
        r = _select(f, gd)
    else:
        prod = gd * f
        r = _select(f != 0, prod)
    r = arr(r.astype(gd.dtype, copy=False))
    node = node_for(_MASKED_NODES.get(name) or _masked_node(name), (g, dep))
    if node is not None:
        node.factor = f
        node.dep_shape = dep._data.shape if dep is not None else None
        if dep is not None:
            save(node, dep)
    return finish(node, r)


_MASKED_NODES = {}
_UINT_OF = {2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}


_MASK_KERNELS = []


def _select(mask, a):
    """``a`` where ``mask`` holds, +0 elsewhere (``where(mask, a, 0)``, broadcast).

    ``np.where`` branches per element and costs ~20x a multiply on a random mask (a ReLU's);
    working on the bits selects exactly, NaN payloads and signed zeros included, without
    branches: one pass of the numba kernel where it is present (same shapes, contiguous),
    else one NumPy call, the integer view times the 0/1 mask (bits kept, or 0)."""
    u = _UINT_OF.get(a.dtype.itemsize)
    if u is None or type(a) is not _ndarray or type(mask) is not _ndarray or a.size < 256 \
            or a.dtype.kind not in "fc":
        xp = np if type(a) is _ndarray else xp_of(a)
        return xp.where(mask, a, xp.zeros((), dtype=a.dtype))
    if mask.shape == a.shape:
        r = np.empty(a.shape, a.dtype)
        if a.flags.c_contiguous and mask.flags.c_contiguous:
            from . import _accel
            k = _accel.load(_MASK_KERNELS, "_accel_mask")
            if k is not None:
                k.select(a.view(u).reshape(-1), mask.reshape(-1), r.view(u).reshape(-1), u.type(0))
                return r
    else:
        r = np.empty(np.broadcast_shapes(a.shape, mask.shape), a.dtype)
    np.multiply(a.view(u), mask, out=r.view(u))
    return r


def _masked_node(name):
    cls = _MASKED_NODES[name] = type(name, (_MaskedGradNode,), {"__module__": __name__})
    return cls


def refuse_meta(fn):
    """``fn`` raising PyTorch's no-data error for meta tensors (for ops that read values)."""
    import functools

    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        for a in args + tuple(kwargs.values()):
            if isinstance(a, Tensor) and type(a._data) is not np.ndarray and a.is_meta:
                from .._meta import NO_DATA
                raise RuntimeError(NO_DATA)
        return fn(*args, **kwargs)
    return guarded
