"""Forward-mode AD: dual tensors (a primal with a tangent) inside a ``dual_level``.

While a dual level is active (and only then) the public ops are swapped for thin
dispatchers (the same mechanism vmap uses): a call with a dual argument computes its
primal normally and its output's tangent by the op's JVP rule. Linear ops (sums, views,
reshapes, indexing, concatenation) apply themselves to the tangents; the common
elementwise ops, matmul and the reductions have written rules; any other op gets its
JVP from its VJP by the double-vjp trick (``u -> J^T u`` is linear in ``u``, so its
derivative along the tangent is ``J t``): exact, at the cost of one extra backward.
Outside a dual level nothing is swapped, so ops pay nothing.
"""
import collections

from .._tensor import Tensor
from . import grad_mode

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor"]

UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__module__ = "torch.autograd.forward_ad"

_level = [-1]
_tangents = {}       # id(tensor) -> (tensor, tangent) for the active level
_busy = [False]      # inside a JVP computation: ops run plainly
_saved = []          # what the dispatchers replaced, restored on exit


def enter_dual_level():
    """Enter a new forward AD level (only one may be active); returns its index."""
    if _level[0] >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    from ..func import _vmap
    if _vmap._active:
        raise NotImplementedError("forward AD (dual_level) inside vmap is not supported; use torch.func.jvp "
                                  "inside vmap instead")
    _level[0] = 0
    _install()
    return 0


def exit_dual_level(*, level=None):
    """Exit the forward AD level: every dual tensor of it loses its tangent."""
    if level is None:
        level = _level[0]
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if level != _level[0]:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    _uninstall()
    _tangents.clear()
    _level[0] = -1


class dual_level:  # noqa: N801  (PyTorch's spelling)
    """Context manager for a forward AD level: ``with dual_level(): ...``."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()


def _is_dual(x):
    return type(x) is Tensor and id(x) in _tangents and _tangents[id(x)][0] is x


def _tangent(x):
    e = _tangents.get(id(x))
    return e[1] if e is not None and e[0] is x else None


def _set_tangent(t, tangent):
    _tangents[id(t)] = (t, tangent)


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` carrying ``tangent`` as its forward gradient."""
    if _level[0] < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    _busy[0] = True
    try:
        out = tensor.view_as(tensor)
    finally:
        _busy[0] = False
    _set_tangent(out, tangent)
    return out


def unpack_dual(tensor, *, level=None):
    """(primal, tangent): a view of ``tensor`` without tangent, and its tangent (None
    when it has none)."""
    t = _tangent(tensor) if _level[0] >= 0 else None
    if t is None:
        return UnpackedDualTensor(tensor, None)
    _busy[0] = True
    try:
        primal = tensor.view_as(tensor)
    finally:
        _busy[0] = False
    return UnpackedDualTensor(primal, t)


# --- dispatch -------------------------------------------------------------------------------

def _has_dual(args, kwargs):
    for a in args:
        if type(a) is Tensor:
            if id(a) in _tangents:
                return True
        elif isinstance(a, (list, tuple)):
            for b in a:
                if type(b) is Tensor and id(b) in _tangents:
                    return True
    for a in kwargs.values():
        if type(a) is Tensor and id(a) in _tangents:
            return True
    return False


def _make_fn(name, orig):
    def f(*args, **kwargs):
        if _busy[0] or not _tangents or not _has_dual(args, kwargs):
            return orig(*args, **kwargs)
        return _call(name, orig, args, kwargs)
    f.__name__ = getattr(orig, "__name__", name)
    f.__doc__ = getattr(orig, "__doc__", None)
    f.__wrapped__ = orig
    return f


def _make_method(name, orig):
    def m(self, *args, **kwargs):
        if _busy[0] or not _tangents or not (id(self) in _tangents or _has_dual(args, kwargs)):
            return orig(self, *args, **kwargs)
        return _call(name, orig, (self,) + args, kwargs)
    m.__name__ = name
    return m


_targets = []


def _install():
    from ..func import _vmap
    if not _targets:
        _targets.extend(_vmap.scan_targets(_make_fn, _make_method))
    _saved[:] = [(owner, name, owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name))
                 for owner, name, _, _ in _targets]
    for owner, name, orig, disp in _targets:
        setattr(owner, name, disp)


def _uninstall():
    for owner, name, prev in _saved:
        setattr(owner, name, prev)
    _saved.clear()


def _call(name, orig, args, kwargs):
    _busy[0] = True
    try:
        rule = JVP_RULES.get(name)
        if rule is not None:
            out = orig(*args, **kwargs)
            t = rule(out, args, kwargs, orig)
            if t is not NotImplemented:
                _attach(out, t)
                return out
        return _double_vjp(orig, args, kwargs, name)
    finally:
        _busy[0] = False


def _attach(out, t):
    if isinstance(out, Tensor):
        if t is not None and (out.is_floating_point() or out.is_complex()):
            _set_tangent(out, t)
    elif isinstance(out, (tuple, list)):
        for o, ti in zip(out, t):
            _attach(o, ti)


def _double_vjp(orig, args, kwargs, name):
    from ..func._pytree import tree_flatten, tree_unflatten
    from . import engine
    from .. import _creation
    inplace = name.endswith("_") and not name.startswith("__") or name.startswith("__i")
    flat, spec = tree_flatten((args, kwargs))
    pos = [i for i, x in enumerate(flat) if type(x) is Tensor and _tangent(x) is not None]
    with grad_mode.enable_grad():
        leaves = [flat[i].detach().requires_grad_() for i in pos]
        subs = list(flat)
        for i, leaf in zip(pos, leaves):
            subs[i] = leaf.clone() if inplace else leaf
        a, k = tree_unflatten(subs, spec)
        dout = orig(*a, **k)
        oflat, ospec = tree_flatten(dout)
        live = [(j, o) for j, o in enumerate(oflat) if isinstance(o, Tensor) and o.requires_grad]
        tans = [None] * len(oflat)
        if live:
            us = [_creation.zeros_like(o).requires_grad_() for _, o in live]
            gs = engine.grad([o for _, o in live], leaves, us, create_graph=True, allow_unused=True)
            pairs = [(g, _tangent(flat[i])) for g, i in zip(gs, pos) if g is not None and g.requires_grad]
            if pairs:
                jv = engine.grad([g for g, _ in pairs], us, [t for _, t in pairs], allow_unused=True)
                for (j, o), v in zip(live, jv):
                    tans[j] = (v if v is not None else _creation.zeros_like(o)).detach()
    out = orig(*args, **kwargs)
    _attach(out if not isinstance(out, (tuple, list)) else list(tree_flatten(out)[0]),
            tans[0] if isinstance(out, Tensor) else tans)
    return out


# --- JVP rules --------------------------------------------------------------------------

def _T(x, like=None):
    """x's tangent, or None (a zero tangent)."""
    return _tangent(x) if type(x) is Tensor else None


def _linear(out, args, kwargs, orig):
    """An op linear in its tensor arguments: the op applied to the tangents."""
    from .. import _creation
    tens = [a for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor)]
    lists = [a for a in args if isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor)]
    if len(tens) + len(lists) != 1 and not (len(tens) == 0 and len(lists) == 1):
        return NotImplemented

    def sub(a):
        if isinstance(a, Tensor):
            t = _T(a)
            return t if t is not None else _creation.zeros_like(a)
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
            return type(a)(sub(x) for x in a)
        return a
    return orig(*[sub(a) for a in args], **{k: sub(v) for k, v in kwargs.items()})


_LINEAR = """sum mean nansum reshape view view_as reshape_as transpose swapaxes swapdims t permute movedim
moveaxis unsqueeze squeeze flatten unflatten expand expand_as __getitem__ narrow select flip roll repeat cumsum
contiguous clone chunk split unbind cat concat concatenate stack hstack vstack diagonal diag tril triu neg negative
__neg__ real imag trace diff index_select gather""".split()

JVP_RULES = {n: _linear for n in _LINEAR}


def _fit(t, out):
    if t is None:
        return None
    if tuple(t.shape) != tuple(out.shape):
        t = t.expand(out.shape)
    if t.dtype != out.dtype:
        t = t.to(out.dtype)
    return t


def _sum_t(out, *ts):
    acc = None
    for t in ts:
        if t is None:
            continue
        t = _fit(t, out)
        acc = t if acc is None else acc + t
    return acc


def _unary(df):
    def r(out, args, kwargs, orig):
        x = args[0]
        t = _T(x)
        if t is None or len(args) > 1 and any(isinstance(a, Tensor) for a in args[1:]):
            return NotImplemented if len(args) > 1 and any(isinstance(a, Tensor) for a in args[1:]) else None
        return df(x, out, t)
    return r


for _n, _df in {
    "exp": lambda x, y, t: y * t, "log": lambda x, y, t: t / x, "sin": lambda x, y, t: x.cos() * t,
    "cos": lambda x, y, t: -x.sin() * t, "tanh": lambda x, y, t: (1 - y * y) * t,
    "sigmoid": lambda x, y, t: y * (1 - y) * t, "sqrt": lambda x, y, t: t / (2 * y),
    "relu": lambda x, y, t: t * (x > 0), "abs": lambda x, y, t: t * x.sgn(),
    "square": lambda x, y, t: 2 * x * t, "reciprocal": lambda x, y, t: -y * y * t,
    "rsqrt": lambda x, y, t: -0.5 * y * y * y * t, "expm1": lambda x, y, t: (y + 1) * t,
    "log1p": lambda x, y, t: t / (1 + x),
}.items():
    JVP_RULES[_n] = _unary(_df)


def _binary(kind):
    def r(out, args, kwargs, orig):
        if len(args) < 2 or set(kwargs) - {"alpha"}:
            return NotImplemented
        a, b = args[0], args[1]
        if kind.startswith("r"):
            a, b = b, a
        k = kind.lstrip("r")
        ta, tb = _T(a) if isinstance(a, Tensor) else None, _T(b) if isinstance(b, Tensor) else None
        alpha = kwargs.get("alpha", 1)
        if k == "add":
            return _sum_t(out, ta, None if tb is None else tb * alpha)
        if k == "sub":
            return _sum_t(out, ta, None if tb is None else -tb * alpha)
        if k == "mul":
            return _sum_t(out, None if ta is None else ta * b, None if tb is None else a * tb)
        if k == "div":
            if not isinstance(b, Tensor):
                return _sum_t(out, ta / b)
            return _sum_t(out, None if ta is None else ta / b, None if tb is None else -out * tb / b)
        if k == "pow":
            if isinstance(b, Tensor) or ta is None:
                return NotImplemented
            return _fit(b * a ** (b - 1) * ta, out) if b != 0 else _fit(ta * 0, out)
        if k == "matmul":
            return _sum_t(out, None if ta is None else ta @ b, None if tb is None else a @ tb)
        return NotImplemented
    return r


for _n, _k in {"add": "add", "__add__": "add", "__radd__": "radd", "sub": "sub", "__sub__": "sub",
               "__rsub__": "rsub", "mul": "mul", "__mul__": "mul", "__rmul__": "rmul", "div": "div",
               "true_divide": "div", "__truediv__": "div", "__rtruediv__": "rdiv", "pow": "pow", "__pow__": "pow",
               "matmul": "matmul", "__matmul__": "matmul", "__rmatmul__": "rmatmul", "mm": "matmul",
               "bmm": "matmul", "mv": "matmul"}.items():
    JVP_RULES[_n] = _binary(_k)


def _softmax_rule(log):
    def r(out, args, kwargs, orig):
        x = args[0]
        t = _T(x)
        if t is None or len(args) < 2 and "dim" not in kwargs or kwargs.get("dtype") is not None:
            return NotImplemented
        dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
        if log:
            return t - (out.exp() * t).sum(dim, keepdim=True)
        return out * (t - (out * t).sum(dim, keepdim=True))
    return r


JVP_RULES["softmax"] = _softmax_rule(False)
JVP_RULES["log_softmax"] = _softmax_rule(True)
