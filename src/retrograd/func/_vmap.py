"""vmap: a batched wrapper tensor and a batching rule per op family.

A ``BatchedTensor`` holds a physical tensor whose leading dims are the batch dims of the
vmap levels it is batched at (ascending level order), followed by its logical shape.
While a vmap level is active (and only then) the public functions of ``retrograd``,
``retrograd.nn.functional`` and the Tensor methods are swapped for thin dispatchers: a
call with a batched argument runs its family's batching rule on the physical tensors
(one op over the whole batch); an op without a rule runs once per sample with a
one-time performance warning. Outside vmap nothing is swapped, so dense ops pay nothing.

The rules are written with ordinary retrograd ops on the physical tensors, so autograd
records an ordinary graph: gradients through batched computations (grad inside vmap,
per-sample gradients) come from the existing engine.
"""
import itertools
import math
import types
import warnings

from .._tensor import Tensor

_active = []          # [(level, batch size, randomness)], outermost first
_next_level = [0]
_installed = []       # [(owner, name, original)] while patched
_warned = set()


def active_levels():
    return tuple(lv for lv, _, _ in _active)


def _size_of(level):
    for lv, n, _ in _active:
        if lv == level:
            return n
    raise RuntimeError("vmap: a batched tensor escaped its vmap level")


class BatchedTensor:
    """A tensor inside vmap: ``_value`` is physical (batch dims first), ``_levels`` the
    vmap levels of those batch dims."""
    __slots__ = ("_value", "_levels", "__weakref__")

    def __init__(self, value, levels):
        self._value = value
        self._levels = tuple(levels)

    # --- logical metadata -----------------------------------------------------------
    @property
    def _nb(self):
        return len(self._levels)

    @property
    def shape(self):
        return self._value.shape[len(self._levels):]

    def size(self, dim=None):
        s = self.shape
        if dim is None:
            return s
        return s[_norm(dim, len(s))]

    def dim(self):
        return self._value.dim() - len(self._levels)

    ndim = property(dim)

    def numel(self):
        return math.prod(self.shape)

    def __len__(self):
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    dtype = property(lambda self: self._value.dtype)
    device = property(lambda self: self._value.device)
    is_cuda = property(lambda self: self._value.is_cuda)
    layout = property(lambda self: self._value.layout)
    requires_grad = property(lambda self: self._value.requires_grad)
    grad_fn = property(lambda self: self._value.grad_fn)

    def is_floating_point(self):
        return self._value.is_floating_point()

    def is_complex(self):
        return self._value.is_complex()

    def __repr__(self):
        return f"BatchedTensor(lvl={self._levels[-1]}, bdim=0, value=\n{self._value!r}\n)"

    def _wrap_dim(self, dim, ndim=None):
        return _norm(dim, self.dim() if ndim is None else ndim)

    def item(self):
        raise RuntimeError("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
                           "calling .item() on a Tensor, please try to rewrite what you're doing with other "
                           "operations. If error is occurring somewhere inside PyTorch internals, please file a "
                           "bug report.")

    def __bool__(self):
        raise RuntimeError("vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
                           "flow. We don't support that yet, please shout over at "
                           "https://github.com/pytorch/functorch/issues/257 .")

    tolist = item

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        orig = getattr(Tensor, name, None)
        if orig is None or not callable(orig):
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        orig = _ORIG_METHODS.get(name, orig)

        def method(*args, **kwargs):
            return dispatch(name, orig, (self,) + args, kwargs)
        return method

    @property
    def T(self):
        return dispatch("permute", _orig_method("permute"), (self, tuple(range(self.dim() - 1, -1, -1))), {})

    @property
    def mT(self):
        return dispatch("transpose", _orig_method("transpose"), (self, -2, -1), {})

    @property
    def data(self):
        return BatchedTensor(self._value.detach(), self._levels)

    def detach(self):
        return BatchedTensor(self._value.detach(), self._levels)

    def __getitem__(self, idx):
        return dispatch("__getitem__", _orig_method("__getitem__"), (self, idx), {})

    def __setitem__(self, idx, value):
        return dispatch("__setitem__", _orig_method("__setitem__"), (self, idx, value), {})


def _orig_method(name):
    return _ORIG_METHODS.get(name) or getattr(Tensor, name)


_ORIG_METHODS = {}

_BINARY = ["add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv", "rfloordiv", "mod",
           "rmod", "pow", "rpow", "matmul", "rmatmul", "eq", "ne", "lt", "le", "gt", "ge", "and", "rand", "or",
           "ror", "xor", "rxor", "iadd", "isub", "imul", "itruediv"]
_UNARY_DUNDER = ["neg", "pos", "abs", "invert"]


def _make_dunder(dname):
    def m(self, *args):
        return dispatch(dname, _orig_method(dname), (self,) + args, {})
    m.__name__ = dname
    return m


for _n in _BINARY + _UNARY_DUNDER:
    setattr(BatchedTensor, f"__{_n}__", _make_dunder(f"__{_n}__"))
BatchedTensor.__hash__ = object.__hash__


def _norm(d, n):
    if not -max(n, 1) <= d < max(n, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(n, 1)}, {max(n, 1) - 1}], "
                         f"but got {d})")
    return d % max(n, 1)


# --- alignment ------------------------------------------------------------------------

def _levels_of(x):
    return x._levels if isinstance(x, BatchedTensor) else ()


def _to_levels(x, levels, expand=False, pad_to=None):
    """x's physical tensor with one (size-1, or full when ``expand``) dim per level in
    ``levels``, then its logical dims left-padded with 1s to ``pad_to`` dims."""
    if isinstance(x, BatchedTensor):
        p, have = x._value, x._levels
    else:
        p, have = x, ()
    logical = tuple(p.shape[len(have):])
    bshape = []
    j = 0
    for lv in levels:
        if j < len(have) and have[j] == lv:
            bshape.append(p.shape[j])
            j += 1
        else:
            bshape.append(1)
    if j != len(have):
        raise RuntimeError("vmap: internal error: levels out of order")
    if pad_to is not None and pad_to > len(logical):
        logical = (1,) * (pad_to - len(logical)) + logical
    target = tuple(bshape) + logical
    if tuple(p.shape) != target:
        p = p.reshape(target)
    if expand:
        full = tuple(_size_of(lv) for lv in levels) + logical
        if tuple(p.shape) != full:
            p = p.expand(full)
    return p


def broadcast_to_levels(x, levels):
    """x batched (expanded) at every level in ``levels`` as well as its own."""
    u = tuple(sorted(set(levels) | set(_levels_of(x))))
    return BatchedTensor(_to_levels(x, u, expand=True), u)


def align_like(c, o):
    """A cotangent/tangent ``c`` for a (maybe batched) ``o``, as a physical tensor laid out
    like ``o``'s."""
    if isinstance(o, BatchedTensor):
        return _to_levels(c, o._levels, expand=True)
    return c._value if isinstance(c, BatchedTensor) else c


def _is_b(x):
    return isinstance(x, BatchedTensor)


def _has_batched(args, kwargs):
    for a in args:
        if type(a) is BatchedTensor:
            return True
        if isinstance(a, (list, tuple)):
            for b in a:
                if type(b) is BatchedTensor:
                    return True
    for a in kwargs.values():
        if type(a) is BatchedTensor:
            return True
        if isinstance(a, (list, tuple)):
            for b in a:
                if type(b) is BatchedTensor:
                    return True
    return False


def _union(xs):
    s = set()
    for x in xs:
        if isinstance(x, BatchedTensor):
            s.update(x._levels)
    return tuple(sorted(s))


def _wrap(p, levels):
    if isinstance(p, Tensor):
        return BatchedTensor(p, levels) if levels else p
    if isinstance(p, (tuple, list)) and p and all(isinstance(q, Tensor) for q in p):
        r = [BatchedTensor(q, levels) for q in p]
        return type(p)(r) if not hasattr(p, "_fields") else type(p)(*r)
    return p


# --- dispatch ---------------------------------------------------------------------------

RULES = {}


def rule(*names):
    def deco(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return deco


def dispatch(name, orig, args, kwargs):
    r = RULES.get(name)
    if r is not None:
        out = r(orig, args, kwargs)
        if out is not NotImplemented:
            return out
    return _fallback(name, orig, args, kwargs)


def _fallback(name, orig, args, kwargs):
    """Run ``orig`` once per sample and stack the results."""
    if name not in _warned:
        _warned.add(name)
        op = name.strip("_")
        warnings.warn(f"There is a performance drop because we have not yet implemented the batching rule for "
                      f"aten::{op}. Please file us an issue on GitHub so that we can prioritize its "
                      f"implementation.", UserWarning, stacklevel=3)
    from ._pytree import tree_flatten, tree_unflatten
    from .. import ops
    flat, spec = tree_flatten((args, kwargs))
    levels = _union(flat)
    sizes = tuple(_size_of(lv) for lv in levels)
    phys = [_to_levels(x, levels, expand=True) if _is_b(x) else x for x in flat]
    results = []
    for idx in itertools.product(*[range(n) for n in sizes]):
        leaves = [p[idx] if _is_b(x) else x for p, x in zip(phys, flat)]
        a, k = tree_unflatten(leaves, spec)
        results.append(orig(*a, **k))
    rflat0, rspec = tree_flatten(results[0])
    rflats = [tree_flatten(r)[0] for r in results]
    outs = []
    for i, leaf in enumerate(rflat0):
        if isinstance(leaf, Tensor):
            st = ops.stack([rf[i] for rf in rflats])
            outs.append(BatchedTensor(st.reshape(sizes + tuple(leaf.shape)), levels))
        else:
            outs.append(leaf)
    return tree_unflatten(outs, rspec)


# --- installing the dispatchers --------------------------------------------------------

_SKIP = {"is_tensor", "is_storage", "typename", "set_grad_enabled", "no_grad", "enable_grad",
         "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "set_printoptions",
         "get_default_dtype", "set_default_dtype", "is_grad_enabled", "inference_mode", "save", "load",
         "set_num_threads", "get_num_threads", "compile", "autocast", "vmap"}
_RANDOM_CREATE = {"rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like", "randint_like",
                  "bernoulli", "multinomial", "poisson", "dropout", "dropout1d", "dropout2d", "dropout3d",
                  "alpha_dropout", "feature_alpha_dropout", "rrelu"}
_TENSOR_SKIP = {"__init__", "__new__", "__repr__", "__str__", "__format__", "__hash__", "__len__",
                "__getattr__", "__setattr__", "__getattribute__", "__delattr__", "__reduce__",
                "__reduce_ex__", "__sizeof__", "__dir__", "__init_subclass__", "__subclasshook__",
                "__class_getitem__", "__array__", "__array_wrap__", "__deepcopy__", "__copy__",
                "__setstate__", "__getstate__", "__bool__", "__iter__", "__index__", "__int__", "__float__",
                "__del__", "__contains__", "__reversed__", "__complex__", "__array_priority__",
                "size", "dim", "numel", "data_ptr", "element_size", "is_floating_point", "item", "tolist",
                "register_hook", "backward", "retain_grad"}
_targets = []
_DISPATCHERS = {}   # original function -> its dispatcher (vmap(torch.sin) names the original)


def _make_fn_dispatcher(name, orig):
    def f(*args, **kwargs):
        if _has_batched(args, kwargs):
            return dispatch(name, orig, args, kwargs)
        if name in _RANDOM_CREATE and _active:
            return _random_unbatched(name, orig, args, kwargs)
        return orig(*args, **kwargs)
    f.__name__ = getattr(orig, "__name__", name)
    f.__doc__ = getattr(orig, "__doc__", None)
    f.__wrapped__ = orig
    return f


def _make_method_dispatcher(name, orig):
    if name.startswith("__") and name[2:-2] in _BINARY:
        def m(self, *args, **kwargs):
            if _has_batched(args, kwargs):
                return NotImplemented
            return orig(self, *args, **kwargs)
    else:
        def m(self, *args, **kwargs):
            if _has_batched(args, kwargs):
                return dispatch(name, orig, (self,) + args, kwargs)
            if name in _RANDOM_CREATE and _active:
                return _random_unbatched(name, orig, (self,) + args, kwargs)
            return orig(self, *args, **kwargs)
    m.__name__ = name
    return m


def scan_targets(make_fn, make_method, methods=None):
    """Every place an op is reached from user code: (owner, name, original, replacement)."""
    out = []
    import retrograd
    from ..nn import functional as F
    from ..ops import conv as _conv
    from .. import linalg
    seen = set()
    for mod in (retrograd, F, linalg):
        for name, obj in list(vars(mod).items()):
            if name.startswith("_") or name in _SKIP or not isinstance(obj, types.FunctionType):
                continue
            out.append((mod, name, obj, make_fn(name, obj)))
    out.append((_conv, "convolution", _conv.convolution,
                     make_fn("convolution", _conv.convolution)))
    # nn layers keep references to the functions (``_function = staticmethod(F.relu)``,
    # ``from ..functional import x``): those get the dispatcher too
    import sys
    origs = {id(o): (o, d) for _, _, o, d in out}
    origs_names = {n for m, n, _, _ in out if m is F}
    for mname, mod in list(sys.modules.items()):
        if not mname.startswith("retrograd.nn") or mod is None:
            continue
        for name, obj in list(vars(mod).items()):
            if isinstance(obj, types.FunctionType) and id(obj) in origs and getattr(mod, name) is obj \
                    and not (mod is F and name in origs_names):
                out.append((mod, name, obj, origs[id(obj)][1]))
            elif isinstance(obj, type):
                for an, av in list(vars(obj).items()):
                    if isinstance(av, staticmethod) and id(av.__func__) in origs:
                        out.append((obj, an, av, staticmethod(origs[id(av.__func__)][1])))
    for klass in Tensor.__mro__[:-1]:
        for name, obj in list(vars(klass).items()):
            if name in seen or name in _TENSOR_SKIP or not isinstance(obj, types.FunctionType):
                continue
            if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                continue
            seen.add(name)
            if methods is not None:
                methods[name] = obj
            out.append((Tensor, name, obj, make_method(name, obj)))
    return out


_saved = []


def _install():
    if not _targets:
        _targets.extend(scan_targets(_make_fn_dispatcher, _make_method_dispatcher, _ORIG_METHODS))
    # what is there now (the originals, or forward AD's dispatchers) comes back on exit
    _saved[:] = [(owner, name, owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name))
                 for owner, name, _, _ in _targets]
    for owner, name, orig, disp in _targets:
        setattr(owner, name, disp)
        if isinstance(orig, types.FunctionType):
            _DISPATCHERS.setdefault(orig, disp)


def _uninstall():
    for owner, name, prev in _saved:
        setattr(owner, name, prev)
    _saved.clear()


# --- randomness ---------------------------------------------------------------------------

_RANDOM_ERR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
               "'different' randomness flags on vmap or perform the randomness operation out of vmap")


def _is_random_call(name, args, kwargs):
    if name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"):
        training = kwargs.get("training", args[2] if len(args) > 2 else True)
        p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
        return bool(training) and p != 0
    return name in _RANDOM_CREATE


def _random_mode():
    return _active[-1][2]


def _random_unbatched(name, orig, args, kwargs):
    """A random op inside vmap with no batched argument: ``torch.rand(3)`` and friends."""
    if not _is_random_call(name, args, kwargs):
        return orig(*args, **kwargs)
    mode = _random_mode()
    if mode == "error":
        raise RuntimeError(_RANDOM_ERR)
    if mode == "same":
        return orig(*args, **kwargs)
    levels = active_levels()
    sizes = tuple(_size_of(lv) for lv in levels)
    if name in ("rand", "randn"):
        shape = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
        shape = kwargs.pop("size", shape)
        return BatchedTensor(orig(*(sizes + tuple(shape)), **kwargs), levels)
    if name.endswith("_like") or name in ("bernoulli",) or "dropout" in name:
        x = args[0]
        p = x.expand(sizes + tuple(x.shape))
        return BatchedTensor(orig(p, *args[1:], **kwargs), levels)
    return _fallback(name, orig, args, kwargs)


def _random_rule(orig, args, kwargs, name):
    if not _is_random_call(name, args, kwargs):
        if "dropout" in name and _is_b(args[0]) and not any(_is_b(a) for a in args[1:]):
            return _wrap(orig(args[0]._value, *args[1:], **kwargs), args[0]._levels)
        return NotImplemented
    mode = _random_mode()
    if mode == "error":
        raise RuntimeError(_RANDOM_ERR)
    x = args[0]
    if mode == "different":
        levels = active_levels()
        p = _to_levels(x, levels, expand=True)
        if name.startswith("dropout") and name != "dropout" and x.dim() == tuple(p.shape).__len__() - len(levels):
            pass
        return BatchedTensor(orig(p, *args[1:], **kwargs), levels)
    # same: one random draw on the logical shape, shared by every sample
    from .. import _creation
    if "dropout" in name:
        ones = _creation.ones(tuple(x.shape), dtype=x.dtype)
        mask = orig(ones, *args[1:], **{k: v for k, v in kwargs.items() if k != "inplace"})
        return x * mask
    return orig(_creation.zeros(tuple(x.shape), dtype=x.dtype), *args[1:], **kwargs)


for _n in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
           "rand_like", "randn_like", "bernoulli"):
    RULES[_n] = (lambda n: lambda orig, args, kwargs: _random_rule(orig, args, kwargs, n))(_n)


# --- the transform ------------------------------------------------------------------------

def _fname(func):
    return getattr(func, "__name__", repr(func))


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Vectorise ``func`` over the ``in_dims`` dimension of its inputs (``torch.func.vmap``)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. "
                           f"Got {randomness}")
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    def wrapped(*args, **kwargs):
        from ._pytree import tree_flatten, tree_unflatten, spec_str
        name = _fname(func)
        if not isinstance(in_dims, (int, tuple)) and in_dims is not None:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                             f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
        if not args:
            raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                             "trying to vmap over a function with no inputs. The latter is unsupported.")
        flat, spec = tree_flatten(args)
        if isinstance(in_dims, tuple):
            if len(in_dims) != len(args):
                _, dspec = tree_flatten(in_dims)
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with "
                                 f"the structure of `inputs`. in_dims has structure {spec_str(dspec)} but inputs "
                                 f"has structure {spec_str(spec)}.")
            dims = []
            for a, d in zip(args, in_dims):
                af, aspec = tree_flatten(a)
                if d is None or isinstance(d, int):
                    dims.extend([d] * len(af))
                else:
                    df, _ = tree_flatten(d)
                    if len(df) != len(af):
                        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                                         "compatible with the structure of `inputs`.")
                    dims.extend(df)
        else:
            dims = [in_dims] * len(flat)
        size = None
        sizes = []
        for x, d in zip(flat, dims):
            if d is None:
                continue
            if not isinstance(d, int):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input "
                                 "but in_dim must be either an integer dimension or None.")
            if not isinstance(x, (Tensor, BatchedTensor)):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input "
                                 f"but the input is of type {type(x)}. We cannot vmap over non-Tensor arguments, "
                                 "please use None as the respective in_dim")
            n = x.dim()
            if not -n <= d < n:
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, "
                                 f"but that input is a Tensor of dimensionality {n} so expected in_dim to satisfy "
                                 f"-{n} <= in_dim < {n}.")
            sizes.append(x.shape[d])
        if not sizes:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dims={in_dims}, but that "
                             "means no tensors were mapped over. vmap needs at least one mapped input.")
        if len(set(sizes)) != 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sizes} for the mapped dimension")
        size = sizes[0]
        if chunk_size is not None and chunk_size < size:
            from .. import ops
            outs = []
            for s in range(0, size, chunk_size):
                n = min(chunk_size, size - s)
                part = [x.narrow(d, s, n) if d is not None else x for x, d in zip(flat, dims)]
                outs.append(_run(func, tree_unflatten(part, spec), part, dims, n, kwargs, randomness, out_dims,
                                 name))
            first, ospec = tree_flatten(outs[0])
            allo = [tree_flatten(o)[0] for o in outs]
            odims = _out_dims_flat(out_dims, outs[0], name)
            res = [ops.cat([o[i] for o in allo], dim=od) if isinstance(first[i], (Tensor, BatchedTensor))
                   else first[i] for i, od in enumerate(odims)]
            return tree_unflatten(res, ospec)
        return _run(func, args, flat, dims, size, kwargs, randomness, out_dims, name)
    wrapped.__name__ = _fname(func)
    wrapped.__wrapped__ = func
    return wrapped


def _out_dims_flat(out_dims, out, name):
    from ._pytree import tree_flatten
    oflat, _ = tree_flatten(out)
    if isinstance(out_dims, int) or out_dims is None:
        return [out_dims] * len(oflat)
    if isinstance(out, tuple) and isinstance(out_dims, tuple) and len(out_dims) == len(out):
        res = []
        for o, d in zip(out, out_dims):
            n = len(tree_flatten(o)[0])
            res.extend([d] * n if not isinstance(d, tuple) else list(d))
        return res
    raise ValueError(f"vmap({name}, ...): out_dims is not compatible with the structure of `outputs`. out_dims has "
                     f"structure {out_dims} but outputs has structure {type(out)}.")


def _run(func, args, flat, dims, size, kwargs, randomness, out_dims, name):
    from ._pytree import tree_flatten, tree_unflatten
    from ..autograd import forward_ad
    if forward_ad._level[0] >= 0:
        raise NotImplementedError("vmap inside a forward AD dual_level is not supported; use torch.func.jvp "
                                  "inside vmap instead")
    level = _next_level[0]
    _next_level[0] += 1
    if not _active:
        _install()
    _active.append((level, size, randomness))
    try:
        new = []
        for x, d in zip(flat, dims):
            if d is None:
                new.append(x)
                continue
            if isinstance(x, BatchedTensor):
                p, lv = x._value, x._levels
            else:
                p, lv = x, ()
            nb = len(lv)
            p = p.movedim(nb + (d % x.dim()), nb)
            new.append(BatchedTensor(p, lv + (level,)))
        func = _DISPATCHERS.get(func, func) if isinstance(func, types.FunctionType) else func
        out = func(*tree_unflatten(new, tree_flatten(args)[1]), **kwargs)
        oflat, ospec = tree_flatten(out)
        odims = _out_dims_flat(out_dims, out, name)
        res = []
        for o, od in zip(oflat, odims):
            if not isinstance(o, (Tensor, BatchedTensor)):
                if o is None:
                    res.append(o)
                    continue
                raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(o)}. Did "
                                 "you mean to set out_dims= to None for output?")
            res.append(_unwrap(o, level, size, od))
        return tree_unflatten(res, ospec)
    finally:
        _active.pop()
        if not _active:
            _uninstall()


def _unwrap(o, level, size, od):
    p, lv = (o._value, o._levels) if isinstance(o, BatchedTensor) else (o, ())
    nb = len(lv)
    nd = p.dim() - nb
    if od is None:
        if level in lv:
            raise ValueError("vmap: returned a batched output with out_dims=None")
        return o
    od = _norm(od, nd + 1) if nd + 1 > 0 else 0
    if level in lv:
        k = lv.index(level)
        p = p.movedim(k, nb - 1 + od)
        lv = lv[:k] + lv[k + 1:]
    else:
        p = p.unsqueeze(nb + od)
        shape = list(p.shape)
        shape[nb + od] = size
        p = p.expand(shape)
    return BatchedTensor(p, lv) if lv else p


from . import _rules  # noqa: E402,F401  (registers the batching rules)
