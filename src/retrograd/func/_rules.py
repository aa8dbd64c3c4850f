"""Batching rules, one per op family. Each takes (orig, args, kwargs) with at least one
BatchedTensor among the arguments, runs ``orig`` (or other ops) on physical tensors and
returns the batched result, or NotImplemented to fall back to the per-sample loop."""
import math

from .._tensor import Tensor
from ._vmap import (BatchedTensor, RULES, rule, _to_levels, _union, _wrap, _norm, _size_of, _is_b)


def _T(x):
    return isinstance(x, (Tensor, BatchedTensor))


def _nd(x):
    return x.dim()


def _sizes(levels):
    return tuple(_size_of(lv) for lv in levels)


def _phys_args(args, kwargs, levels, pad_to):
    def conv(a):
        if isinstance(a, BatchedTensor):
            return _to_levels(a, levels, pad_to=pad_to)
        if isinstance(a, Tensor) and a.dim() > 0:
            return _to_levels(a, levels, pad_to=pad_to)
        return a
    return [conv(a) for a in args], {k: conv(v) for k, v in kwargs.items()}


# --- elementwise (broadcast-aligned) ------------------------------------------------------

_ELEMENTWISE = """add sub subtract mul multiply div divide true_divide floor_divide remainder fmod pow float_power
atan2 arctan2 hypot maximum minimum fmax fmin where clamp clip clamp_min clamp_max lerp addcmul addcdiv copysign
eq ne lt le gt ge greater less greater_equal less_equal not_equal equal_ logical_and logical_or logical_xor
logical_not bitwise_and bitwise_or bitwise_xor bitwise_not masked_fill xlogy isclose nextafter ldexp
abs absolute neg negative sign sgn signbit exp exp2 expm1 log log2 log10 log1p sqrt rsqrt square reciprocal sin cos
tan asin acos atan arcsin arccos arctan sinh cosh tanh asinh acosh atanh arcsinh arccosh arctanh sigmoid
logit erf erfc erfinv lgamma digamma floor ceil round trunc frac fix nan_to_num isnan isinf isfinite isposinf
isneginf positive deg2rad rad2deg heaviside i0 sinc relu relu6 gelu silu mish elu selu celu leaky_relu hardtanh
hardsigmoid hardswish softplus softsign softshrink hardshrink tanhshrink logsigmoid threshold prelu glu_
float double half bfloat16 int long short bool byte char to type type_as clone contiguous cpu cuda
zeros_like ones_like full_like empty_like detach_ requires_grad_ real imag conj
__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __floordiv__ __rfloordiv__
__mod__ __rmod__ __pow__ __rpow__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __and__ __rand__ __or__ __ror__
__xor__ __rxor__ __neg__ __pos__ __abs__ __invert__ __iadd__ __isub__ __imul__ __itruediv__""".split()

_INPLACE_MSG = ("vmap: {op}(self, *extra_args) is not possible because there exists a Tensor `other` in "
                "extra_args that has more elements than `self`. This happened due to `other` being vmapped over "
                "but `self` not being vmapped over in a vmap. Please try to use out-of-place operators instead of "
                "{op}. If said operator is being called inside the PyTorch framework, please file a bug report "
                "instead.")


def elementwise(orig, args, kwargs):
    tens = [a for a in list(args) + list(kwargs.values()) if _T(a)]
    levels = _union(tens)
    nd = max(_nd(a) for a in tens)
    name = getattr(orig, "__name__", "")
    inplace = name.startswith("__i") or (name.endswith("_") and not name.startswith("__"))
    if name in ("requires_grad_", "detach_"):
        inplace = True
    if inplace:
        self = args[0]
        if not (_is_b(self) and set(levels) <= set(self._levels)):
            raise RuntimeError(_INPLACE_MSG.format(op=name))
        if not _is_b(self) or self._levels != levels or _nd(self) < nd:
            raise RuntimeError(_INPLACE_MSG.format(op=name))
        a, k = _phys_args(args[1:], kwargs, levels, nd)
        orig(self._value, *a, **k)
        return self
    a, k = _phys_args(args, kwargs, levels, nd)
    return _wrap(orig(*a, **k), levels)


for _n in _ELEMENTWISE:
    RULES[_n] = elementwise
    if not _n.startswith("_") and not _n.endswith("_"):
        RULES[_n + "_"] = elementwise


@rule("max", "min")
def maxmin(orig, args, kwargs):
    if len(args) > 1 and _T(args[1]) or _T(kwargs.get("other")):
        return elementwise(orig, args, kwargs)
    return reduction(orig, args, kwargs)


# --- reductions (dim shifted) -------------------------------------------------------------

_FULL_OK = {"sum", "mean", "nansum", "nanmean", "amax", "amin", "prod", "all", "any", "logsumexp", "std", "var",
            "max", "min", "argmax", "argmin", "count_nonzero", "median", "nanmedian", "norm", "std_mean",
            "var_mean", "aminmax"}


def reduction(orig, args, kwargs):
    x = args[0]
    name = getattr(orig, "__name__", "")
    if not _is_b(x) or any(_T(a) for a in list(args[1:]) + list(kwargs.values())):
        return NotImplemented
    pos = 2 if name == "norm" else 1
    args = list(args)
    if "dim" in kwargs:
        dim = kwargs.pop("dim")
    elif len(args) > pos and not isinstance(args[pos], bool) and (args[pos] is None or
                                                                   isinstance(args[pos], (int, tuple, list))):
        dim = args.pop(pos)
    elif len(args) > pos:
        return NotImplemented
    else:
        dim = None
    if "axis" in kwargs:
        dim = kwargs.pop("axis")
    nb, nd = x._nb, _nd(x)
    p = x._value
    if dim is None or nd == 0 or (isinstance(dim, (tuple, list)) and len(dim) == 0 and name != "sum"):
        if kwargs.get("keepdim") or name not in _FULL_OK:
            return NotImplemented
        p = p.reshape(tuple(p.shape[:nb]) + (-1,))
        d = nb
    elif isinstance(dim, (tuple, list)):
        if len(dim) == 0:
            return NotImplemented
        d = tuple(nb + _norm(i, nd) for i in dim)
    else:
        d = nb + _norm(dim, nd)
    if len(args) >= pos:
        args.insert(pos, d)
    else:
        kwargs["dim"] = d
    out = orig(p, *args[1:], **kwargs)
    if dim is None and name in ("max", "min", "median", "nanmedian"):
        out = out[0]      # the full reduction returns only the value
    return _wrap(out, x._levels)


for _n in ("sum nansum mean nanmean amax amin prod all any logsumexp std var argmax argmin count_nonzero median "
           "nanmedian norm std_mean var_mean aminmax mode").split():
    RULES[_n] = reduction


# --- ops with one dim argument (shifted) --------------------------------------------------

def _dim_rule(pos, default, implicit_softmax=False, ndplus=0):
    def r(orig, args, kwargs):
        x = args[0]
        if not _is_b(x) or any(_T(a) for a in list(args[1:]) + list(kwargs.values())):
            return NotImplemented
        args = list(args)
        if "dim" in kwargs:
            dim = kwargs.pop("dim")
        elif len(args) > pos:
            dim = args.pop(pos)
        else:
            dim = default
        nd = _nd(x)
        if dim is None:
            if not implicit_softmax:
                return NotImplemented
            dim = 0 if nd in (0, 1, 3) else 1
        if nd + ndplus == 0:
            return NotImplemented
        if isinstance(dim, (tuple, list)):
            dim = type(dim)(x._nb + _norm(i, nd + ndplus) for i in dim)
        else:
            dim = x._nb + _norm(dim, nd + ndplus)
        while len(args) < pos:
            args.append(None if "split" not in orig.__name__ else None)
        args.insert(pos, dim)
        return _wrap(orig(x._value, *args[1:], **kwargs), x._levels)
    return r


for _n in "softmax log_softmax softmin".split():
    RULES[_n] = _dim_rule(1, None, implicit_softmax=True)
for _n in "cumsum cumprod logcumsumexp cummax cummin narrow select sort argsort unbind flip".split():
    RULES[_n] = _dim_rule(1, 0 if _n == "unbind" else (-1 if _n in ("sort", "argsort") else None))
for _n in "split chunk topk kthvalue".split():
    RULES[_n] = _dim_rule(2, -1 if _n in ("topk", "kthvalue") else 0)
RULES["unsqueeze"] = _dim_rule(1, None, ndplus=1)


@rule("index_select")
def index_select(orig, args, kwargs):
    x, dim, index = (list(args) + [kwargs.get("dim"), kwargs.get("index")])[:3]
    if not _is_b(x) or _is_b(index):
        return NotImplemented
    return _wrap(orig(x._value, x._nb + _norm(dim, _nd(x)), index), x._levels)


@rule("gather", "take_along_dim")
def gather(orig, args, kwargs):
    if len(args) < 3 or kwargs:
        return NotImplemented
    x, dim, index = args[:3]
    levels = _union([x, index])
    nd = _nd(x)
    xp = _to_levels(x, levels, expand=True)
    ip = _to_levels(index, levels, expand=True)
    return _wrap(orig(xp, len(levels) + _norm(dim, nd), ip), levels)


# --- shape and view ops -------------------------------------------------------------------

def _shape_arg(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


@rule("view", "reshape")
def reshape(orig, args, kwargs):
    x = args[0]
    shape = kwargs.get("shape", kwargs.get("size")) or _shape_arg(args[1:])
    if not _is_b(x) or any(not isinstance(s, int) for s in shape):
        return NotImplemented
    p = x._value
    return BatchedTensor(p.reshape(tuple(p.shape[:x._nb]) + tuple(shape)), x._levels)


@rule("view_as", "reshape_as")
def reshape_as(orig, args, kwargs):
    x, other = args
    if not _is_b(x) or _is_b(other):
        return NotImplemented
    return reshape(orig, (x, tuple(other.shape)), {})


@rule("flatten")
def flatten(orig, args, kwargs):
    x = args[0]
    if not _is_b(x) or len(args) > 3:
        return NotImplemented
    s = kwargs.get("start_dim", args[1] if len(args) > 1 else 0)
    e = kwargs.get("end_dim", args[2] if len(args) > 2 else -1)
    nd, nb, p = _nd(x), x._nb, x._value
    if nd == 0:
        return BatchedTensor(p.reshape(tuple(p.shape) + (1,)), x._levels)
    return BatchedTensor(p.flatten(nb + _norm(s, nd), nb + _norm(e, nd)), x._levels)


@rule("unflatten")
def unflatten(orig, args, kwargs):
    x, dim, sizes = args
    return BatchedTensor(x._value.unflatten(x._nb + _norm(dim, _nd(x)), sizes), x._levels)


@rule("transpose", "swapaxes", "swapdims")
def transpose(orig, args, kwargs):
    x, d0, d1 = args
    nd = _nd(x)
    if nd == 0:
        return x
    return BatchedTensor(x._value.transpose(x._nb + _norm(d0, nd), x._nb + _norm(d1, nd)), x._levels)


@rule("t")
def t_(orig, args, kwargs):
    x = args[0]
    if _nd(x) < 2:
        return x
    return transpose(orig, (x, 0, 1), {})


@rule("permute")
def permute(orig, args, kwargs):
    x = args[0]
    dims = kwargs.get("dims") or _shape_arg(args[1:])
    nb, nd = x._nb, _nd(x)
    return BatchedTensor(x._value.permute(tuple(range(nb)) + tuple(nb + _norm(d, nd) for d in dims)), x._levels)


@rule("movedim", "moveaxis")
def movedim(orig, args, kwargs):
    x, src, dst = args
    nb, nd = x._nb, _nd(x)
    f = (lambda d: tuple(nb + _norm(i, nd) for i in d)) if isinstance(src, (tuple, list)) else \
        (lambda d: nb + _norm(d, nd))
    return BatchedTensor(x._value.movedim(f(src), f(dst)), x._levels)


@rule("squeeze")
def squeeze(orig, args, kwargs):
    x = args[0]
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    nb, nd, p = x._nb, _nd(x), x._value
    shape = tuple(x.shape)
    if dim is None:
        dims = [i for i, s in enumerate(shape) if s == 1]
    elif isinstance(dim, (tuple, list)):
        dims = [_norm(d, nd) for d in dim if nd and shape[_norm(d, nd)] == 1]
    else:
        dims = [_norm(dim, nd)] if nd and shape[_norm(dim, nd)] == 1 else []
    for d in sorted(dims, reverse=True):
        p = p.squeeze(nb + d)
    return BatchedTensor(p, x._levels)


@rule("expand")
def expand(orig, args, kwargs):
    x = args[0]
    sizes = _shape_arg(args[1:])
    if not _is_b(x):
        return NotImplemented
    p = _to_levels(x, x._levels, pad_to=len(sizes))
    nb = x._nb
    full = tuple(p.shape[:nb]) + tuple(p.shape[nb + i] if s == -1 else s for i, s in enumerate(sizes))
    return BatchedTensor(p.expand(full), x._levels)


@rule("expand_as")
def expand_as(orig, args, kwargs):
    x, other = args
    if not _is_b(x) or _is_b(other):
        return NotImplemented
    return expand(orig, (x, tuple(other.shape)), {})


@rule("repeat")
def repeat(orig, args, kwargs):
    x = args[0]
    sizes = _shape_arg(args[1:])
    p = _to_levels(x, x._levels, pad_to=len(sizes))
    return BatchedTensor(p.repeat((1,) * x._nb + tuple(sizes)), x._levels)


@rule("cat", "concat", "concatenate", "stack")
def cat(orig, args, kwargs):
    tensors = args[0] if args else kwargs.get("tensors")
    dim = kwargs.get("dim", kwargs.get("axis", args[1] if len(args) > 1 else 0))
    if len(args) > 2 or set(kwargs) - {"dim", "axis", "tensors"}:
        return NotImplemented
    levels = _union(tensors)
    nd = _nd(tensors[0])
    ps = [_to_levels(t, levels, expand=True) for t in tensors]
    d = len(levels) + _norm(dim, nd + (1 if orig.__name__ == "stack" else 0))
    return BatchedTensor(orig(ps, d), levels)


def _has_adv(i):
    return _T(i) or isinstance(i, (list, bool))


@rule("__getitem__")
def getitem(orig, args, kwargs):
    x, idx = args
    if not isinstance(idx, tuple):
        idx = (idx,)
    if _is_b(x) and not any(_is_b(i) for i in idx):
        adv = [k for k, i in enumerate(idx) if _has_adv(i)]
        if adv and adv[-1] - adv[0] + 1 != len(adv):
            return NotImplemented
        if any(isinstance(i, bool) for i in idx):
            return NotImplemented
        return _wrap(orig(x._value, (slice(None),) * x._nb + idx), x._levels)
    # a batched integer index tensor alone: every sample picks from its own row
    if len(idx) == 1 and _is_b(idx[0]) and not idx[0].dtype.is_floating_point and str(idx[0].dtype) != "torch.bool":
        from .. import _creation
        levels = _union([x, idx[0]])
        sizes = _sizes(levels)
        bt = math.prod(sizes)
        xp = _to_levels(x, levels, expand=True)
        ip = _to_levels(idx[0], levels, expand=True)
        xp = xp.reshape((bt,) + tuple(xp.shape[len(levels):]))
        inner = tuple(ip.shape[len(levels):])
        ip = ip.reshape((bt,) + inner)
        ar = _creation.arange(bt).reshape((bt,) + (1,) * len(inner))
        out = orig(xp, (ar, ip))
        return BatchedTensor(out.reshape(sizes + tuple(out.shape[1:])), levels)
    return NotImplemented


# --- matmul family -------------------------------------------------------------------------

def bmatmul(a, b):
    """Logical matmul of (maybe batched) a and b."""
    from .. import ops
    levels = _union([a, b])
    na, nbd = _nd(a), _nd(b)
    if na == 0 or nbd == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{na}D and {nbd}D")
    pa = _to_levels(a, levels)
    pb = _to_levels(b, levels)
    L = len(levels)
    if na == 1:
        pa = pa.unsqueeze(L)
    if nbd == 1:
        pb = pb.unsqueeze(-1)
    m = max(pa.dim(), pb.dim()) - L
    pa = _pad_logical(pa, L, m)
    pb = _pad_logical(pb, L, m)
    out = ops.matmul(pa, pb)
    if nbd == 1:
        out = out.squeeze(-1)
    if na == 1:
        out = out.squeeze(-2 if nbd != 1 else -1)
    if na == 1 and nbd == 1:
        pass
    # drop the logical batch dims added by padding when neither operand had them
    keep = max(na, nbd)
    want = max(na, nbd) if min(na, nbd) >= 2 else (keep - 1 if min(na, nbd) == 1 and max(na, nbd) >= 2 else 0)
    while out.dim() - L > want and out.shape[L] == 1:
        out = out.squeeze(L)
    return _wrap(out, levels)


def _pad_logical(p, L, m):
    n = p.dim() - L
    if n < m:
        p = p.reshape(tuple(p.shape[:L]) + (1,) * (m - n) + tuple(p.shape[L:]))
    return p


@rule("matmul", "__matmul__", "mm", "bmm", "mv", "dot", "inner_")
def matmul(orig, args, kwargs):
    a, b = args[:2]
    if orig.__name__ in ("mm", "bmm", "mv", "dot"):
        need = {"mm": (2, 2), "bmm": (3, 3), "mv": (2, 1), "dot": (1, 1)}[orig.__name__]
        if (_nd(a), _nd(b)) != need:
            return NotImplemented
    return bmatmul(a, b)


@rule("__rmatmul__")
def rmatmul(orig, args, kwargs):
    return bmatmul(args[1], args[0])


def _mT(w):
    if _is_b(w):
        return BatchedTensor(w._value.transpose(-1, -2), w._levels)
    return w.t()


@rule("linear")
def linear(orig, args, kwargs):
    x, w = args[:2]
    b = kwargs.get("bias", args[2] if len(args) > 2 else None)
    if not _is_b(w) and not _is_b(b):
        return BatchedTensor(orig(x._value, w, b), x._levels)
    y = bmatmul(x, _mT(w))
    if b is not None:
        y = elementwise(_add, (y, b), {})
    return y


def _add(a, b):
    return a + b


_add.__name__ = "add"


# --- convolution and pooling (batch folded into N, or into groups) ----------------------

def _conv(call, x, w, b, groups, nd):
    if not _is_b(w) and not _is_b(b):
        p = x._value
        L = x._nb
        has_n = _nd(x) == nd + 2
        tail = tuple(p.shape[L + (1 if has_n else 0):])
        lead = tuple(p.shape[:L + (1 if has_n else 0)])
        out = call(p.reshape((-1,) + tail), w, b, groups)
        return BatchedTensor(out.reshape(lead + tuple(out.shape[1:])), x._levels)
    levels = _union([x, w, b])
    sizes = _sizes(levels)
    bt = math.prod(sizes)
    L = len(levels)
    has_n = _nd(x) == nd + 2
    xp = _to_levels(x, levels, expand=True)
    if not has_n:
        xp = xp.unsqueeze(L)
    xp = xp.reshape((bt,) + tuple(xp.shape[L:]))             # (Bt, N, C, *sp)
    n, c = xp.shape[1], xp.shape[2]
    xp = xp.transpose(0, 1).reshape((n, bt * c) + tuple(xp.shape[3:]))
    wp = _to_levels(w, levels, expand=True)
    o = wp.shape[L]
    wp = wp.reshape((bt * o,) + tuple(wp.shape[L + 1:]))
    bp = None if b is None else _to_levels(b, levels, expand=True).reshape(bt * o)
    out = call(xp, wp, bp, groups * bt)                     # (N, Bt*O, *sp')
    out = out.reshape((n, bt, o) + tuple(out.shape[2:])).transpose(0, 1)
    if not has_n:
        out = out.squeeze(1)
    return BatchedTensor(out.reshape(sizes + tuple(out.shape[1:])), levels)


@rule("convolution")
def convolution(orig, args, kwargs):
    if kwargs:
        return NotImplemented
    x, w, b, stride, padding, dilation, groups, nd = args
    if isinstance(padding, str) and _is_b(w):
        return NotImplemented
    return _conv(lambda xx, ww, bb, g: orig(xx, ww, bb, stride, padding, dilation, g, nd), x, w, b, groups, nd)


def _convnd(nd):
    def r(orig, args, kwargs):
        names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
        vals = dict(zip(names, args))
        vals.update(kwargs)
        x, w = vals["input"], vals["weight"]
        b = vals.get("bias")
        st, pd, dl, g = vals.get("stride", 1), vals.get("padding", 0), vals.get("dilation", 1), vals.get("groups", 1)
        if not _is_b(x) and not _is_b(w):
            return NotImplemented
        if not _is_b(x):
            x = BatchedTensor(x, ())
        if isinstance(pd, str) and _is_b(w):
            return NotImplemented
        return _conv(lambda xx, ww, bb, gg: orig(xx, ww, bb, st, pd, dl, gg), x, w, b, g, nd)
    return r


RULES["conv1d"], RULES["conv2d"], RULES["conv3d"] = _convnd(1), _convnd(2), _convnd(3)


def _fold(keep):
    """Ops on (N, C, *spatial) / (C, *spatial) with no batched parameter: the batch dims
    and N fold into one N."""
    def r(orig, args, kwargs):
        x = args[0]
        if not _is_b(x) or any(_is_b(a) for a in list(args[1:]) + list(kwargs.values())):
            return NotImplemented
        p, L = x._value, x._nb
        nd = _nd(x)
        k = min(keep, nd)
        lead = tuple(p.shape[:L + nd - k])
        out = orig(p.reshape((-1,) + tuple(p.shape[L + nd - k:])), *args[1:], **kwargs)

        def back(o):
            return BatchedTensor(o.reshape(lead + tuple(o.shape[1:])), x._levels)
        if isinstance(out, tuple):
            return type(out)(back(o) for o in out)
        return back(out)
    return r


for _n, _k in (("max_pool1d", 2), ("max_pool2d", 3), ("max_pool3d", 4), ("avg_pool1d", 2), ("avg_pool2d", 3),
               ("avg_pool3d", 4), ("adaptive_avg_pool1d", 2), ("adaptive_avg_pool2d", 3), ("adaptive_avg_pool3d", 4),
               ("adaptive_max_pool1d", 2), ("adaptive_max_pool2d", 3), ("adaptive_max_pool3d", 4),
               ("max_pool2d_with_indices", 3), ("lp_pool2d", 3), ("pixel_shuffle", 3), ("pixel_unshuffle", 3)):
    RULES[_n] = _fold(_k)


# --- losses ---------------------------------------------------------------------------------

def _class_loss(orig, args, kwargs, ce):
    names = ["input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction"]
    if ce:
        names.append("label_smoothing")
    vals = dict(zip(names, args))
    vals.update(kwargs)
    x, t = vals["input"], vals["target"]
    weight = vals.get("weight")
    ii = vals.get("ignore_index", -100)
    red = vals.get("reduction", "mean")
    ls = vals.get("label_smoothing", 0.0)
    if vals.get("size_average") is not None or vals.get("reduce") is not None or _is_b(weight):
        return NotImplemented
    if red == "mean" and ls and weight is not None:
        return NotImplemented
    levels = _union([x, t])
    sizes = _sizes(levels)
    bt = math.prod(sizes)
    L = len(levels)
    xp = _to_levels(x, levels, expand=True)
    tp = _to_levels(t, levels, expand=True)
    logical_x = tuple(xp.shape[L:])
    prob = t.dtype.is_floating_point
    extra = {"label_smoothing": ls} if ce else {}
    if len(logical_x) == 1:
        xf, tf = xp.reshape(bt, logical_x[0]), tp.reshape((bt,) + tuple(tp.shape[L:]))
    else:
        xf = xp.reshape((-1,) + logical_x[1:])
        tf = tp.reshape((-1,) + tuple(tp.shape[L + 1:]))
    loss = orig(xf, tf, weight, ignore_index=ii, reduction="none", **extra)
    loss = loss.reshape((bt, -1))
    if red == "none":
        out = loss.reshape(sizes + tuple(t.shape) if not prob else sizes + tuple(loss.shape[1:]))
        if prob:
            out = loss.reshape(sizes + ((logical_x[0],) if len(logical_x) > 1 else ()) + logical_x[2:])
        return BatchedTensor(out, levels)
    s = loss.sum(-1)
    if red == "sum":
        return BatchedTensor(s.reshape(sizes), levels)
    if prob:
        n = loss.shape[1]
        return BatchedTensor((s / n).reshape(sizes), levels)
    tt = tp.reshape(bt, -1)
    valid = tt != ii
    if weight is None:
        wt = valid.to(loss.dtype)
    else:
        wt = weight[tt.masked_fill(~valid, 0)] * valid.to(loss.dtype)
    return BatchedTensor((s / wt.sum(-1)).reshape(sizes), levels)


RULES["cross_entropy"] = lambda orig, args, kwargs: _class_loss(orig, args, kwargs, True)
RULES["nll_loss"] = lambda orig, args, kwargs: _class_loss(orig, args, kwargs, False)


def _pointwise_loss(orig, args, kwargs):
    legacy = ("size_average", "reduce")
    if any(kwargs.get(k) is not None for k in legacy) or len(args) > 2:
        return NotImplemented
    red = kwargs.pop("reduction", "mean")
    if red not in ("mean", "sum", "none"):
        return NotImplemented
    out = elementwise(orig, args, dict(kwargs, reduction="none"))
    if red == "none":
        return out
    if not _is_b(out):
        return out.mean() if red == "mean" else out.sum()
    p, L = out._value, out._nb
    p = p.reshape(tuple(p.shape[:L]) + (-1,))
    return BatchedTensor(p.mean(-1) if red == "mean" else p.sum(-1), out._levels)


for _n in ("mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy binary_cross_entropy_with_logits "
           "soft_margin_loss poisson_nll_loss").split():
    RULES[_n] = _pointwise_loss
