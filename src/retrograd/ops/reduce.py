"""Reductions: sum, mean, prod, max/min, amax/amin, var/std, logsumexp, norm, cumsum,
cumprod, median; all/any/argmax/argmin/count_nonzero without gradients.

Backward formulas are written with tensor ops, so they are differentiable themselves.
"""
import builtins
import math
import warnings

import numpy as np

from ._complex_reject import no_complex, no_complex_kernel
from ._base import xp_for, on_device
from ._base import (OpNode, node_for, save, save_output, finish, finish_multi, arr, norm_dims,
                    wrap_dim, write_out, Tensor, Size)
from .. import _dtype as D

__all__ = ["sum", "mean", "sum_to_size", "prod", "max", "min", "amax", "amin", "argmax", "argmin",
           "all", "any", "count_nonzero", "var", "std", "var_mean", "std_mean", "logsumexp", "norm",
           "cumsum", "cumprod", "median", "nansum", "nanmean", "aminmax",
           "logcumsumexp", "cummax", "cummin", "dist", "sort", "argsort", "msort", "topk", "kthvalue",
           "mode", "nanmedian"]

_int, _float, _bool = builtins.int, builtins.float, builtins.bool
_I64 = np.dtype(np.int64)


# *** helpers ***

def _const(a):
    """A tensor that needs no gradient, around array ``a``."""
    return finish(None, arr(a))


def _sum_dtype(npdt, dtype):
    if dtype is not None:
        return D.to_dtype(dtype).np
    if npdt.kind in "biu":
        return _I64
    return npdt


def _dims_arg(dim, ndim):
    """``dim`` for sum-like reductions: None, () and [] all mean every dimension."""
    if dim is None or (isinstance(dim, (tuple, list, Size)) and len(dim) == 0):
        return tuple(range(ndim))
    dims = norm_dims(dim, ndim)
    return dims if ndim else ()


def _restore_dims(g, shape, dims, keepdim):
    """Reshape a reduced gradient so it broadcasts against the input's ``shape``."""
    if not keepdim and dims:
        full = list(shape)
        for d in dims:
            full[d] = 1
        g = g.reshape(full)
    return g


def _keep_shape(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def _dtype_word(npdt):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
            "complex64": "ComplexFloat", "complex128": "ComplexDouble"}[npdt.name]


def _float_input(x):
    """Integer and bool arrays promote to the default float dtype."""
    if x.dtype.kind in "biu":
        return x.astype(D._default[0].np)
    return x


def _check_nonempty(x, dims, name):
    """PyTorch refuses reductions without an identity over empty dimensions (it names the
    first empty one as the caller wrote it)."""
    for d in dims:
        if x.shape[wrap_dim(d, x.ndim)] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _dims_as_given(dim):
    if dim is None:
        return ()
    return tuple(dim) if isinstance(dim, (tuple, list, Size)) else (dim,)


def _no_dim_empty(x, name, exc=RuntimeError):
    if x.size == 0:
        raise exc(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                  "Specify the reduction dim with the 'dim' argument.")


class _ReturnType(tuple):
    """A named pair such as ``torch.return_types.max(values=..., indices=...)``."""
    __slots__ = ()
    _name = "max"
    _fields = ("values", "indices")

    def __new__(cls, values, indices=None):
        if indices is None and isinstance(values, (tuple, list)):
            values, indices = values
        return tuple.__new__(cls, (values, indices))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]

    def __repr__(self):
        return f"torch.return_types.{self._name}(\nvalues={self[0]!r},\nindices={self[1]!r})"

    def __reduce__(self):
        return (type(self), (self[0], self[1]))


class return_types:  # noqa: N801  (PyTorch's spelling: torch.return_types.max)
    """The named tuples returned by reductions that give values and indices."""


for _n in ("max", "min", "median", "mode", "sort", "topk", "kthvalue", "cummax", "cummin", "nanmedian"):
    setattr(return_types, _n, type(_n, (_ReturnType,), {"__slots__": (), "_name": _n,
                                                         "__module__": "torch.return_types"}))


class _MinMaxType(tuple):
    __slots__ = ()

    @property
    def min(self):
        return self[0]

    @property
    def max(self):
        return self[1]

    def __repr__(self):
        return f"torch.return_types.aminmax(\nmin={self[0]!r},\nmax={self[1]!r})"


return_types.aminmax = type("aminmax", (_MinMaxType,), {"__slots__": ()})


# *** index-selecting gradients: scatter/gather along a dimension (differentiable pair) ***

class _ScatterAlongBackward(OpNode):
    def backward(self, g):
        return _gather_along(g, self.index, self.dim)


class _GatherAlongBackward(OpNode):
    def backward(self, g):
        return _scatter_along(g, self.index, self.dim, self.shape)


_ScatterAlongBackward.__name__ = _ScatterAlongBackward.__qualname__ = "ValueSelectingReductionBackward0"
_GatherAlongBackward.__name__ = _GatherAlongBackward.__qualname__ = "GatherBackward0"


def _scatter_along(g, index, dim, shape):
    """zeros(shape) with ``g`` (shaped like ``index``) added at ``index`` along ``dim``."""
    xp = xp_for(g, index, shape)
    gd = g._data
    z = xp.zeros(shape, gd.dtype)
    if z.size and index.size:
        n = shape[dim]
        zi = xp.moveaxis(z, dim, -1)
        idx = xp.moveaxis(xp.broadcast_to(index, gd.shape), dim, -1)
        rows = xp.arange(idx.size // idx.shape[-1]).reshape(idx.shape[:-1] + (1,)) * n
        flat = (rows + idx).reshape(-1)
        summed = xp.bincount(flat, weights=xp.moveaxis(gd, dim, -1).reshape(-1), minlength=zi.size)
        zi[...] = summed.reshape(zi.shape).astype(gd.dtype, copy=False)
    node = node_for(_ScatterAlongBackward, (g,))
    if node is not None:
        node.index, node.dim = index, dim
    return finish(node, z)


def _gather_along(t, index, dim):
    xp = xp_for(t, index)
    r = xp.take_along_axis(t._data, index, axis=dim) if t._data.size else xp.zeros(index.shape, t._data.dtype)
    node = node_for(_GatherAlongBackward, (t,))
    if node is not None:
        node.index, node.dim, node.shape = index, dim, t._data.shape
    return finish(node, arr(r))


class _SelectEvenlyBackward(OpNode):
    """Backward of ``_select_evenly``: the incoming gradient summed over the selected
    positions, divided by their count (PyTorch's IndexPutBackward0 then the division)."""

    def backward(self, gg):
        xp = xp_for(gg)
        from .index import where
        picked = where(_const(self.mask), gg, _const(xp.zeros((), gg._data.dtype))).sum()
        return picked / self.count


_SelectEvenlyBackward.__name__ = _SelectEvenlyBackward.__qualname__ = "IndexPutBackward0"


def _select_evenly(g, x, value):
    """PyTorch's evenly_distribute_backward (max(), min(), median()): ``g / count`` at the
    elements equal to the picked value (at the NaNs when it is NaN), exactly 0 elsewhere
    whatever ``g`` is (inf, nan)."""
    xp = xp_for(g, x, value)
    with np.errstate(invalid="ignore"):
        mask = xp.isnan(x) if x.dtype.kind in "fcV" and xp.isnan(value).any() else (x == value)
    count = _int(mask.sum())
    gd = g._data
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        share = gd / xp.asarray(count, gd.dtype)
    r = arr(xp.where(mask, share, xp.zeros((), gd.dtype)).astype(gd.dtype, copy=False))
    node = node_for(_SelectEvenlyBackward, (g,))
    if node is not None:
        node.mask, node.count = mask, count
    return finish(node, r)


def _scaled_by_count(g, x_arr, out_keep_arr, dims):
    """PyTorch's scale_grad_by_count (amax/amin): ``(g / count) * mask``, mask = x == result.
    A multiplication, as there: inf or nan in ``g`` reaches the other elements as nan."""
    xp = xp_for(g, x_arr, out_keep_arr)
    with np.errstate(invalid="ignore"):
        mask = x_arr == out_keep_arr
    count = mask.sum(axis=dims, keepdims=True) if dims is not None else mask.sum()
    dt = g._data.dtype
    return (g / _const(xp.asarray(count, dt))) * _const(mask.astype(dt))


# *** sum / mean ***

class SumBackward0(OpNode):
    def backward(self, g):
        return g.expand(self.shape)


class SumBackward1(OpNode):
    def backward(self, g):
        return _restore_dims(g, self.shape, self.dims, self.keepdim).expand(self.shape)


def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum of all elements, or over ``dim`` (an int or a tuple of ints)."""
    x = input._data
    rdt = _sum_dtype(x.dtype, dtype)
    acc = rdt if rdt.kind != "V" else np.dtype(np.float32)  # bfloat16 sums accumulate in float32
    if dim is None and not keepdim:
        r = arr(x.sum(dtype=acc))
        node = node_for(SumBackward0, (input,))
        if node is not None:
            node.shape = x.shape
    else:
        dims = _dims_arg(dim, x.ndim)
        r = arr(x.sum(axis=dims, dtype=acc, keepdims=keepdim))
        node = node_for(SumBackward1, (input,))
        if node is not None:
            node.shape, node.dims, node.keepdim = x.shape, dims, keepdim
    if acc is not rdt:
        r = r.astype(rdt)
    res = finish(node, r)
    return res if out is None else write_out(out, res, "sum")


class NansumBackward0(OpNode):
    def backward(self, g):
        xp = xp_for(g)
        (x,) = self.saved_tensors
        g = _restore_dims(g, self.shape, self.dims, self.keepdim)
        return g * _const(~xp.isnan(x._data))


def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum treating NaN as zero."""
    xp = xp_for(input)
    x = input._data
    rdt = _sum_dtype(x.dtype, dtype)
    dims = _dims_arg(dim, x.ndim)
    r = arr(xp.nansum(x, axis=dims, dtype=rdt, keepdims=keepdim))
    node = node_for(NansumBackward0, (input,))
    if node is not None:
        node.shape, node.dims, node.keepdim = x.shape, dims, keepdim
        save(node, input)
    res = finish(node, r)
    return res if out is None else write_out(out, res, "nansum")


class MeanBackward0(OpNode):
    def backward(self, g):
        return (g / self.n).expand(self.shape)


class MeanBackward1(OpNode):
    def backward(self, g):
        g = _restore_dims(g, self.shape, self.dims, self.keepdim)
        if self.n == 0:  # PyTorch divides after expanding: nothing is divided by 0 then
            return g.expand(self.shape) / self.n
        return (g / self.n).expand(self.shape)


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean of all elements, or over ``dim``."""
    xp = xp_for(input)
    x = input._data
    if dtype is not None:
        x = x.astype(D.to_dtype(dtype).np)
    if x.dtype.kind not in "fcV":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
            f"dtype. Got: {_dtype_word(x.dtype)}")
    if dim is None and not keepdim:
        dims, n = None, x.size
        node = node_for(MeanBackward0, (input,))
        if node is not None:
            node.shape, node.n = x.shape, builtins.max(n, 1)
    else:
        dims = _dims_arg(dim, x.ndim)
        n = 1
        for d in dims:
            n *= x.shape[d]
        node = node_for(MeanBackward1, (input,))
        if node is not None:
            node.shape, node.dims, node.keepdim, node.n = x.shape, dims, keepdim, n
    if x.size == 0:
        if dims is None:
            shape = ()
        else:
            shape = _keep_shape(x.shape, dims) if keepdim else tuple(s for i, s in enumerate(x.shape) if i not in dims)
        r = xp.full(shape, np.nan, x.dtype)
    elif x.dtype == np.float16:
        r = x.mean(axis=dims, keepdims=keepdim and dims is not None)
    elif x.dtype.kind == "V":  # bfloat16: accumulated in float32
        r = x.mean(axis=dims, dtype=np.float32, keepdims=keepdim and dims is not None)
    elif dims is None:
        r = xp.add.reduce(x, axis=None) / n
    elif dims:
        r = xp.add.reduce(x, axis=dims, keepdims=keepdim) / n
    else:
        r = x.copy()
    r = arr(r)
    r = r.astype(x.dtype, copy=False)
    res = finish(node, r)
    return res if out is None else write_out(out, res, "mean")


def sum_to_size(input, *size):
    """Sum broadcast dimensions so the result has shape ``size``."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(size)
    x = input._data
    if x.shape == size:
        return input
    lead = x.ndim - len(size)
    if lead < 0:
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, x.shape))}}}.")
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size) if s == 1 and x.shape[lead + i] != 1)
    for i, s in enumerate(size):
        if s != 1 and x.shape[lead + i] != s:
            raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                               f"{{{', '.join(map(str, x.shape))}}}.")
    r = sum(input, axes, keepdim=True)
    return r.view(size) if lead else r  # as PyTorch's sum_to: a view when leading dims go


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean over the elements that are not NaN."""
    xp = xp_for(input)
    x = input._data
    if x.dtype.kind not in "fcV":
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{_dtype_word(x.dtype)}")
    dims = _dims_arg(dim, x.ndim)
    count = xp.sum(~xp.isnan(x), axis=dims, keepdims=keepdim).astype(x.dtype)
    res = nansum(input, dim, keepdim, dtype=dtype) / _const(count)
    return res if out is None else write_out(out, res, "nanmean")


# *** prod ***

def _prod_others(x, out_keep, d):
    """d prod / d x_i along ``d`` (out_keep: the product, keepdim), as PyTorch's
    prod_backward: ``out / x`` without zeros, else the products of the elements before and
    after each one (prod_safe_zeros_backward), each built from the other elements only."""
    xp = xp_for(x, out_keep, d)
    if not xp.any(x._data == 0):
        return out_keep / x
    n = x.shape[d]
    shape = list(x.shape)
    shape[d] = 1
    one = _const(xp.ones(shape, x._data.dtype))
    if n == 1:
        return one
    from .shape import cat
    before = cat([one, x.narrow(d, 0, n - 1)], d).cumprod(d)
    after = cat([one, x.narrow(d, 1, n - 1).flip(d)], d).cumprod(d).flip(d)
    return before * after


class ProdBackward0(OpNode):
    def backward(self, g):
        xp = xp_for(g)
        x, out = self.saved_tensors
        if x.ndim == 0:
            return g
        if not _grad_enabled() and xp.count_nonzero(x._data == 0) > 1:
            return finish(None, xp.zeros(x.shape, g._data.dtype))  # PyTorch's shortcut (first order only)
        flat = x.reshape(-1)
        return (g * _prod_others(flat, out.reshape(1), 0)).reshape(x.shape)


class ProdBackward1(OpNode):
    def backward(self, g):
        x, out = self.saved_tensors
        d = self.dim
        if x.ndim == 0:
            return g
        if not self.keepdim:
            g, out = g.unsqueeze(d), out.unsqueeze(d)
        return g * _prod_others(x, out, d)


def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Product of all elements, or along ``dim``."""
    x = input._data
    rdt = _sum_dtype(x.dtype, dtype)
    if dim is None:
        r = arr(xp_for(x).prod(x, dtype=rdt, keepdims=keepdim))
        node = node_for(ProdBackward0, (input,))
    else:
        if isinstance(dim, (tuple, list)):
            raise TypeError("prod() received an invalid combination of arguments - got (tuple), but expected "
                            "one of:\n * (*, torch.dtype dtype = None)\n * (int dim, bool keepdim = False, "
                            "*, torch.dtype dtype = None)\n")
        d = wrap_dim(_int(dim), x.ndim)
        r = arr(xp_for(x).prod(x, axis=d if x.ndim else None, dtype=rdt, keepdims=keepdim and x.ndim > 0))
        node = node_for(ProdBackward1, (input,))
        if node is not None:
            node.dim, node.keepdim = d, keepdim
    res = finish(node, r)
    if node is not None:
        save(node, input)
        save_output(node, res)
    return res if out is None else write_out(out, res, "prod")


# *** max / min / amax / amin ***

class MaxBackward1(OpNode):
    def backward(self, g):
        x, out = self.saved_tensors
        return _select_evenly(g, x._data, out._data)


MinBackward1 = type("MinBackward1", (MaxBackward1,), {})


class MaxBackward0(OpNode):
    """Gradient of values picked along ``dim`` at ``index`` (keepdim-shaped)."""

    def backward(self, g):
        if not len(self.shape):
            return g
        if not self.keepdim:
            g = g.unsqueeze(self.dim)
        return _scatter_along(g, self.index, self.dim, self.shape)


MinBackward0 = type("MinBackward0", (MaxBackward0,), {})
MedianBackward1 = type("MedianBackward1", (MaxBackward0,), {})


def _extreme(name, np_fn, arg_fn, all_cls, dim_cls):
    def op(input, dim=None, keepdim=False, *, out=None):
        xp = xp_for(input)
        if isinstance(dim, Tensor):
            from . import pointwise
            return (pointwise.maximum if name == "max" else pointwise.minimum)(input, dim, out=out)
        x = input._data
        if x.dtype.kind == "c":
            if dim is not None:
                no_complex(x, name + ".dim")
            no_complex_kernel(x, name + "_all")
        if dim is None:
            if keepdim:
                raise TypeError(f"{name}() received an invalid combination of arguments - got (keepdim=bool, ), "
                                "but expected one of:\n * ()\n * (Tensor other)\n * (int dim, bool keepdim = False)\n")
            _no_dim_empty(x, name)
            r = arr(on_device(np_fn, x)(x))
            node = node_for(all_cls, (input,))
            res = finish(node, r)
            if node is not None:
                save(node, input)
                save_output(node, res)
            return res if out is None else write_out(out, res, name)
        d = wrap_dim(_int(dim), x.ndim)
        if x.ndim:
            _check_nonempty(x, (d,), name)
        xd = x if x.ndim else x.reshape(1)
        if x.size:
            idx = on_device(arg_fn, xd)(xd, axis=d, keepdims=True)
            # the values at the indices, as PyTorch's: +0 and -0 tie, the value keeps its element's sign
            vals = xp.take_along_axis(xd, idx, axis=d)
        else:
            shape = _keep_shape(xd.shape, (d,))
            idx, vals = xp.zeros(shape, np.int64), xp.zeros(shape, x.dtype)
        idx = idx.astype(np.int64, copy=False)
        if not x.ndim:
            idx_out, vals_out = idx.reshape(()), vals.reshape(())
        elif keepdim:
            idx_out, vals_out = idx, vals
        else:
            idx_out, vals_out = xp.squeeze(idx, d), xp.squeeze(vals, d)
        node = node_for(dim_cls, (input,))
        if node is not None:
            node.dim, node.keepdim, node.shape, node.index = d, keepdim, x.shape, (idx if x.ndim else idx.reshape(()))
            if not x.ndim:
                node.index = xp.zeros((), np.int64)
        res = finish(node, vals_out.copy())
        ind = finish(None, idx_out.copy())
        rt = getattr(return_types, name)(res, ind)
        if out is not None:
            write_out(out[0], res, name)
            write_out(out[1], ind, name)
            return getattr(return_types, name)(out[0], out[1])
        return rt

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"``{name}`` of all elements; with ``dim``, the (values, indices) along it; "
                  f"with a tensor, the elementwise {name}imum.")
    return op


# NumPy's argmax/argmin already return the first NaN, as PyTorch does.
_argmax_np = np.argmax
_argmin_np = np.argmin

max = _extreme("max", np.max, _argmax_np, MaxBackward1, MaxBackward0)
min = _extreme("min", np.min, _argmin_np, MinBackward1, MinBackward0)


class AmaxBackward0(OpNode):
    def backward(self, g):
        x, out = self.saved_tensors
        g = _restore_dims(g, self.shape, self.dims, self.keepdim)
        o = out._data if self.keepdim or not self.dims else out._data.reshape(_keep_shape(self.shape, self.dims))
        return _scaled_by_count(g, x._data, o, self.dims)


AminBackward0 = type("AminBackward0", (AmaxBackward0,), {})


def _amaxmin(name, np_fn, cls):
    def op(input, dim=(), keepdim=False, *, out=None):
        x = input._data
        no_complex_kernel(x, name[1:] + "_values_cpu")
        dims = _dims_arg(dim, x.ndim)
        if x.size == 0:
            if dims == tuple(range(x.ndim)) and (dim is None or not isinstance(dim, _int) and len(dim) == 0):
                _no_dim_empty(x, name)
            _check_nonempty(x, _dims_as_given(dim), name)
        r = arr(on_device(np_fn, x)(x, axis=dims, keepdims=keepdim)) if x.ndim else x.copy()
        node = node_for(cls, (input,))
        res = finish(node, r)
        if node is not None:
            node.shape, node.dims, node.keepdim = x.shape, dims, keepdim
            save(node, input)
            save_output(node, res)
        return res if out is None else write_out(out, res, name)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``{name}`` over ``dim`` (all dimensions by default); ties share the gradient evenly."
    return op


amax = _amaxmin("amax", np.max, AmaxBackward0)
amin = _amaxmin("amin", np.min, AminBackward0)


def aminmax(input, *, dim=None, keepdim=False):
    """(amin, amax) over ``dim`` (all dimensions by default)."""
    d = () if dim is None else dim
    x = input._data
    no_complex_kernel(x, "aminmax_cpu")
    if x.size == 0:
        if dim is None:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has "
                               "no identity.")
        dd = wrap_dim(_int(dim), x.ndim)
        if x.ndim and x.shape[dd] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {dd} to have non-zero size.")
    from ..autograd import grad_mode
    with grad_mode.no_grad():
        lo, hi = amin(input, d, keepdim), amax(input, d, keepdim)
    node = node_for(AminmaxBackward0, (input,))
    outs = finish_multi(node, [lo._data, hi._data])
    if node is not None:
        node.shape, node.dims, node.keepdim = x.shape, _dims_arg(d, x.ndim), keepdim
        save(node, input)
        save_output(node, outs[0])
        save_output(node, outs[1])
    return return_types.aminmax(tuple(outs))


class AminmaxBackward0(OpNode):
    """amin's and amax's gradients (scaled by their tie counts), for the outputs that got one."""
    _materialize_grads = False

    def _apply(self, grads):
        x, lo, hi = self.saved_tensors
        r = None
        for g, out in zip(grads, (lo, hi)):
            if g is None:
                continue
            g = _restore_dims(g, self.shape, self.dims, self.keepdim)
            o = out._data if self.keepdim or not self.dims else out._data.reshape(_keep_shape(self.shape, self.dims))
            part = _scaled_by_count(g, x._data, o, self.dims)
            r = part if r is None else r + part
        return r


# *** index and truth reductions (no gradient) ***

def _arg(name, fn):
    def op(input, dim=None, keepdim=False, *, out=None):
        xp = xp_for(input)
        x = input._data
        if x.dtype.kind == "b":
            raise RuntimeError(f"{name}(): does not support bool input")
        no_complex(x, name)
        if dim is None:
            if x.size == 0:
                raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
            r = on_device(fn, x)(x.reshape(-1), axis=0)
            r = xp.asarray(r, np.int64).reshape((1,) * x.ndim if keepdim else ())
        else:
            d = wrap_dim(_int(dim), x.ndim)
            if x.ndim == 0:
                r = xp.zeros((), np.int64)
            else:
                _check_nonempty(x, (d,), name)
                r = on_device(fn, x)(x, axis=d, keepdims=keepdim).astype(np.int64, copy=False) if x.size else \
                    xp.zeros(_keep_shape(x.shape, (d,)) if keepdim else x.shape[:d] + x.shape[d + 1:], np.int64)
        res = finish(None, arr(r))
        return res if out is None else write_out(out, res, name)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Indices of the {name[3:]}imum (first one on ties); no gradient."
    return op


argmax = _arg("argmax", _argmax_np)
argmin = _arg("argmin", _argmin_np)


def _truth(name, fn):
    def op(input, dim=None, keepdim=False, *, out=None):
        x = input._data
        dims = _dims_arg(dim, x.ndim)
        f = on_device(fn, x)
        r = arr(f(x, axis=dims, keepdims=keepdim) if x.ndim else f(x))
        if x.dtype == np.uint8:
            r = r.astype(np.uint8)
        res = finish(None, r)
        return res if out is None else write_out(out, res, name)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Whether {'every' if name == 'all' else 'any'} element is nonzero; no gradient."
    return op


all = _truth("all", np.all)
any = _truth("any", np.any)


def count_nonzero(input, dim=None):
    """Number of nonzero elements, over ``dim`` (an int or tuple) or all."""
    xp = xp_for(input)
    x = input._data
    dims = _dims_arg(dim, x.ndim)
    r = xp.count_nonzero(x, axis=dims) if x.ndim else xp.count_nonzero(x)
    return finish(None, arr(xp.asarray(r, np.int64)))


# *** var / std ***

def _var_args(name, dim, unbiased, keepdim, correction):
    if isinstance(dim, _bool):  # var(input, unbiased)
        if unbiased is not None and not isinstance(unbiased, _bool):
            raise TypeError(f"{name}() received an invalid combination of arguments")
        dim, unbiased = None, dim
    if correction is not None and unbiased is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got both 'unbiased' and "
                        "'correction'; pass only one of them")
    if correction is None:
        correction = 0 if unbiased is False else 1
    return dim, keepdim, correction


def _var_forward(name, x, dims, correction, keepdim, opname=None):
    xp = xp_for(x, opname)
    if x.dtype.kind not in "fcV":
        raise RuntimeError(f"{opname or 'std and var'} only support floating point and complex dtypes")
    if x.dtype.kind == "V":  # bfloat16: computed in float32, rounded once
        v, m, n, dof = _var_forward(name, x.astype(np.float32), dims, correction, keepdim, opname)
        return v.astype(x.dtype), m.astype(x.dtype), n, dof
    n = 1
    for d in dims:
        n *= x.shape[d]
    dof = builtins.max(0, n - correction)
    if dof <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                      "reduction factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = (xp.add.reduce(x, axis=dims, keepdims=True) / n if x.dtype != np.float16 else
             x.mean(axis=dims, keepdims=True)) if x.size else xp.full(_keep_shape(x.shape, dims), np.nan, x.dtype)
        dev = x - m
        sq = dev.real * dev.real + dev.imag * dev.imag if x.dtype.kind == "c" else dev * dev   # |x - mean|^2
        v = sq.sum(axis=dims, keepdims=keepdim) / dof if dims else sq / dof
        if opname is not None and x.dtype.kind in "fV" and x.size:
            m = _welford_mean_inf(x, dims, m)
    m = m if keepdim else m.reshape([s for i, s in enumerate(x.shape) if i not in dims])
    vdt = x.real.dtype if x.dtype.kind == "c" else x.dtype     # a complex input's variance is real
    return arr(xp.asarray(v, vdt)), arr(xp.asarray(m, x.dtype)), n, dof


def _welford_mean_inf(x, dims, m):
    """var_mean/std_mean's mean as PyTorch's Welford pass leaves it: an infinity that is not
    the last element visited (in order) turns the running mean into inf - inf = nan."""
    xp = xp_for(x, m)
    inf = xp.isinf(x)
    if xp is np and not inf.any():
        return m
    rest = [i for i in range(x.ndim) if i not in dims]
    flat = xp.transpose(inf, rest + list(dims)).reshape([x.shape[i] for i in rest] + [-1])
    count = flat.sum(-1)
    bad = (count > 1) | ((count == 1) & ~flat[..., -1])
    return xp.where(bad.reshape(m.shape), np.nan, m)


def _var_grad(g, x, dims, keepdim, full, correction):
    """PyTorch's var_backward. A full reduction with no degrees of freedom left gives
    ``g * (nan where x == mean else inf)``, a constant factor; a reduction over ``dims``
    divides by ``n - correction`` as it is (0 gives inf, a negative count a negative factor)."""
    xp = xp_for(g, x)
    xd = x._data
    if full:
        dof = xd.size - correction
        if dof <= 0:
            with np.errstate(invalid="ignore", divide="ignore"):
                m = xd.mean() if xd.size else np.nan
                f = xp.where(xd == m, np.nan, np.inf).astype(g._data.dtype)
            return g * _const(f)
        return (2.0 / dof) * g * (x - x.mean())
    if not keepdim and xd.ndim > 1:
        g = _restore_dims(g, xd.shape, dims, keepdim)
    n = 1
    for d in dims:
        n *= xd.shape[d]
    dof = n - correction
    return (2.0 / dof if dof else math.inf) * g * (x - x.mean(dims, keepdim=True))


def _std_grad(g, x, std, dims, keepdim, full, correction):
    """PyTorch's std_backward: var's gradient of ``g / (2 std)``, which is 0 where std is 0."""
    gv = _zero_where(g / (std * 2), std._data == 0)
    return _var_grad(gv, x, dims, keepdim, full, correction)


def _zero_where(t, mask):
    """PyTorch's ``t.masked_fill_(mask, 0)`` in its backward formulas (skipped when the mask
    is empty: then it is the identity, its derivative too; a device never asks)."""
    if type(mask) is np.ndarray and not mask.any():
        return t
    from .index_ops import masked_fill
    return masked_fill(t, _const(mask), 0)


def _full_reduction(dim, ndim):
    return ndim == 0 or dim is None or (isinstance(dim, (tuple, list, Size)) and len(dim) == 0)


class VarBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        return _var_grad(g, x, self.dims, self.keepdim, self.full, self.correction)


class StdBackward0(OpNode):
    def backward(self, g):
        x, out = self.saved_tensors
        return _std_grad(g, x, out, self.dims, self.keepdim, self.full, self.correction)


def _var_like(name, cls):
    def op(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
        xp = xp_for(input)
        dim, keepdim, c = _var_args(name, dim, unbiased, keepdim, correction)
        x = input._data
        dims = _dims_arg(dim, x.ndim)
        half = name == "std" and x.dtype.kind == "V"  # bfloat16 std: the float32 variance's root, rounded once
        v, _, n, dof = _var_forward(name, x.astype(np.float32) if half else x, dims, c, keepdim)
        if name == "std":
            v = arr(xp.sqrt(v) if not half else xp.sqrt(v).astype(x.dtype))
        node = node_for(cls, (input,))
        res = finish(node, v)
        if node is not None:
            node.dims, node.keepdim, node.correction = dims, keepdim, c
            node.full = _full_reduction(dim, x.ndim)
            save(node, input)
            if name == "std":
                save_output(node, res)
        return res if out is None else write_out(out, res, name)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"{'Variance' if name == 'var' else 'Standard deviation'} over ``dim`` with "
                  "``correction`` (1 by default: Bessel's correction).")
    return op


var = _var_like("var", VarBackward0)
std = _var_like("std", StdBackward0)


class VarMeanBackward0(OpNode):
    """Gradient of (var or std, mean); an output that received no gradient adds nothing."""
    _materialize_grads = False

    def _apply(self, grads):
        gv, gm = grads
        r = None
        if gv is not None:
            if self.std:
                x, out = self.saved_tensors
                r = _std_grad(gv, x, out, self.dims, self.keepdim, self.full, self.correction)
            else:
                (x,) = self.saved_tensors
                r = _var_grad(gv, x, self.dims, self.keepdim, self.full, self.correction)
        if gm is not None:
            shape = self.shape
            gm = _restore_dims(gm, shape, self.dims, self.keepdim).expand(shape)
            gm = gm / builtins.max(self.n, 1)  # n == 0 only for an empty input
            r = gm if r is None else r + gm
        return r


StdMeanBackward0 = type("StdMeanBackward0", (VarMeanBackward0,), {})


def _var_mean_like(name, cls):
    def op(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
        xp = xp_for(input)
        dim, keepdim, c = _var_args(name, dim, unbiased, keepdim, correction)
        x = input._data
        dims = _dims_arg(dim, x.ndim)
        v, m, n, dof = _var_forward(name.split("_")[0], x, dims, c, keepdim, name)
        is_std = name == "std_mean"
        if is_std:
            v = arr(xp.sqrt(v))
        node = node_for(cls, (input,))
        outs = finish_multi(node, [v, m])
        if node is not None:
            node.dims, node.keepdim, node.correction, node.n, node.std = dims, keepdim, c, n, is_std
            node.full, node.shape = _full_reduction(dim, x.ndim), x.shape
            save(node, input)
            if is_std:
                save_output(node, outs[0])
        return tuple(outs)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"({name.split('_')[0]}, mean) over ``dim`` in one pass."
    return op


var_mean = _var_mean_like("var_mean", VarMeanBackward0)
std_mean = _var_mean_like("std_mean", StdMeanBackward0)


# *** logsumexp ***

class LogsumexpBackward0(OpNode):
    def backward(self, g):
        x, out = self.saved_tensors
        g = _restore_dims(g, x.shape, self.dims, self.keepdim)
        out = _restore_dims(out, x.shape, self.dims, self.keepdim)
        return g * (x - out).exp()


def logsumexp(input, dim, keepdim=False, *, out=None):
    """``log(sum(exp(input)))`` over ``dim``, computed stably."""
    xp = xp_for(input)
    x = _float_input(input._data)
    dims = _dims_arg(dim, x.ndim)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if x.size == 0:
            r = xp.full(_keep_shape(x.shape, dims) if keepdim else
                        [s for i, s in enumerate(x.shape) if i not in dims], -np.inf, x.dtype)
        elif not dims:
            r = x.copy()
        else:
            m = xp.max(x, axis=dims, keepdims=True)
            m = xp.where(xp.isfinite(m), m, 0)
            r = xp.log(xp.sum(xp.exp(x - m), axis=dims, keepdims=True)) + m
            if not keepdim:
                r = r.reshape([s for i, s in enumerate(x.shape) if i not in dims])
    node = node_for(LogsumexpBackward0, (input,))
    res = finish(node, arr(xp.asarray(r, x.dtype)))
    if node is not None:
        node.dims, node.keepdim = dims, keepdim
        save(node, input)
        save_output(node, res)
    return res if out is None else write_out(out, res, "logsumexp")


# *** norm ***

class LinalgVectorNormBackward0(OpNode):
    def backward(self, g):
        x, norm = self.saved_tensors
        if self.ord == 0:
            return None  # the 0-"norm" counts nonzeros: PyTorch gives it no gradient at all
        return _vector_norm_grad(x, norm, g, self.ord, self.dims, self.keepdim)


def _vector_norm_grad(x, norm, g, p, dims, keepdim):
    """PyTorch's norm_backward, op for op (its masks decide the second derivative at 0)."""
    xp = xp_for(x, norm, g, p)
    if not keepdim and x.ndim:
        g = _restore_dims(g, x.shape, dims, keepdim)
        norm = _restore_dims(norm, x.shape, dims, keepdim)
    if p == 1:
        return x.sgn() * g
    if p == 2:
        return g * _zero_where(x / norm, norm._data == 0)
    if math.isinf(p):
        ax = x.abs()
        with np.errstate(invalid="ignore"):
            mask = _const((ax._data == norm._data) | xp.isnan(ax._data))
        count = mask.sum(dims, keepdim=True) if dims else mask.sum()
        return x.sgn() * ((g / count) * mask)
    if p < 1:
        scaled = x.sgn() * _zero_where(x.abs() ** (p - 1), x._data == 0)
        return scaled * g * norm ** (1 - p)
    scale = _zero_where(g / norm ** (p - 1), norm._data == 0)
    if p < 2:
        return x.sgn() * x.abs() ** (p - 1) * scale
    return x * x.abs() ** (p - 2) * scale


def _vector_norm_np(x, p, dims, keepdim):
    xp = xp_for(x, p)
    ax = xp.abs(x if x.dtype.kind != "V" else x.astype(np.float32))  # bfloat16: float32 sums, rounded once
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if p == 2:
            r = xp.sqrt(xp.sum(ax * ax, axis=dims, keepdims=keepdim))
        elif p == 1:
            r = xp.sum(ax, axis=dims, keepdims=keepdim)
        elif p == math.inf:
            r = xp.max(ax, axis=dims, keepdims=keepdim)
        elif p == -math.inf:
            r = xp.min(ax, axis=dims, keepdims=keepdim)
        elif p == 0:
            r = xp.sum(ax != 0, axis=dims, keepdims=keepdim)
        else:
            r = xp.sum(ax ** p, axis=dims, keepdims=keepdim) ** (1.0 / p)
    return xp.asarray(r, x.real.dtype if x.dtype.kind == "c" else x.dtype)   # a complex input's norm is real


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The vector ``ord``-norm of ``x`` over ``dim`` (all elements by default)."""
    a = x._data
    if dtype is not None:
        a = a.astype(D.to_dtype(dtype).np)
    if a.dtype.kind not in "fcV":
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {_dtype_word(a.dtype)}")
    dims = _dims_arg(dim, a.ndim)
    p = _float(ord)
    if a.size == 0 and (p < 0 or math.isinf(p)):
        given = _dims_as_given(dim)
        word = _fmt_scalar(p)
        if not given:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {word} norm on an empty tensor because "
                               "the operation does not have an identity")
        for d in given:
            if a.shape[wrap_dim(d, a.ndim)] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {word} norm on the dimension {d}because "
                                   "this dimension is empty and the operation does not have an identity")
    r = _vector_norm_np(a, p, dims, keepdim) if a.ndim else _vector_norm_np(a, p, None, False)
    node = node_for(LinalgVectorNormBackward0, (x,))
    res = finish(node, arr(r))
    if node is not None:
        node.ord, node.dims, node.keepdim = p, dims, keepdim
        save(node, x)
        save_output(node, res)
    return res if out is None else write_out(out, res, "linalg_vector_norm")


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """The ``p``-norm over ``dim`` ('fro' and numbers: a vector norm over the given dims)."""
    if isinstance(p, str):
        if p != "fro":
            raise NotImplementedError(f"norm(p={p!r}) is not supported; use p='fro' or a number")
        p = 2
    if isinstance(dim, _int):
        dim = (dim,)
    return vector_norm(input, p if p is not None else 2, dim, keepdim, dtype=dtype, out=out)


# *** cumulative ***

def _rev_cumsum(t, d):
    return t.flip(d).cumsum(d).flip(d)


def _fmt_scalar(v):
    """A number as PyTorch's messages print a Scalar: 2, 0.5, inf."""
    if math.isfinite(v) and v == _int(v):
        return str(_int(v))
    return str(v)


class CumsumBackward0(OpNode):
    def backward(self, g):
        if g.ndim == 0:
            return g
        return _rev_cumsum(g, self.dim)


def cumsum(input, dim, *, dtype=None, out=None):
    """Running sum along ``dim``."""
    xp = xp_for(input)
    x = input._data
    d = wrap_dim(_int(dim), x.ndim)
    rdt = _sum_dtype(x.dtype, dtype)
    if rdt.kind == "V":  # bfloat16: accumulated in float32
        r = (xp.cumsum(x, axis=d, dtype=np.float32) if x.ndim else x).astype(rdt)
    else:
        r = xp.cumsum(x, axis=d, dtype=rdt) if x.ndim else x.astype(rdt)
    node = node_for(CumsumBackward0, (input,))
    if node is not None:
        node.dim = d
    res = finish(node, arr(r))
    return res if out is None else write_out(out, res, "cumsum")


class CumprodBackward0(OpNode):
    def backward(self, g):
        xp = xp_for(g)
        x, out = self.saved_tensors
        d = self.dim
        if x._data.size <= 1 or x.shape[d] == 1:
            return g
        if not xp.any(x._data == 0):
            return _rev_cumsum(g * out, d) / x
        if not _grad_enabled():
            return finish(None, _cumprod_grad_zeros_np(g._data, x._data, out._data, d))
        # Differentiable (create_graph), op for op as PyTorch: for each k, the products of
        # the elements up to every j >= k with x_k left out.
        from .shape import cat, stack
        n = x.shape[d]
        shape = list(x.shape)
        shape[d] = 1
        ones = _const(xp.ones(shape, x._data.dtype))
        cols = []
        for k in range(n):
            if k == 0:
                omitted = cat([ones, x.narrow(d, 1, n - 1).cumprod(d)], d)
            else:
                until = x.narrow(d, 0, k).prod(d, keepdim=True)
                if k == n - 1:
                    omitted = until
                else:
                    after = x.narrow(d, k + 1, n - k - 1).cumprod(d)
                    omitted = cat([until, until.expand_as(after) * after], d)
            cols.append((g.narrow(d, k, n - k) * omitted).sum(d))
        return stack(cols, d)


def _grad_enabled():
    from ..autograd import grad_mode
    return grad_mode._state.grad


def _cumprod_grad_zeros_np(g, x, out, d):
    """PyTorch's O(n) cumprod gradient for inputs with zeros (first order only): up to the
    first zero ``rev_cumsum(g * out) / x``; at the first zero the products after it."""
    xp = xp_for(g, x, d)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        cs = xp.cumsum(x == 0, axis=d)
        gi = xp.zeros(x.shape, g.dtype)
        mask = cs == 0
        w = xp.where(mask, out * g, 0)
        before = xp.flip(xp.cumsum(xp.flip(w, d), axis=d), d) / x
        gi[mask] = before[mask]
        mask = cs == 1
        first = xp.argmax(mask, axis=d, keepdims=True)
        first_mask = xp.zeros(x.shape, bool)
        xp.put_along_axis(first_mask, first, True, axis=d)
        first_mask &= mask
        mask &= ~first_mask
        t = (xp.cumprod(xp.where(mask, x, 1), axis=d) * xp.where(cs != 1, 0, g)).sum(axis=d, keepdims=True)
        t = t * xp.where(first == 0, 1, xp.take_along_axis(out, xp.maximum(first - 1, 0), axis=d))
        gi[first_mask] = xp.broadcast_to(t, x.shape)[first_mask]
    return gi


def cumprod(input, dim, *, dtype=None, out=None):
    """Running product along ``dim`` (gradients exact with zeros)."""
    xp = xp_for(input)
    x = input._data
    d = wrap_dim(_int(dim), x.ndim)
    rdt = _sum_dtype(x.dtype, dtype)
    r = xp.cumprod(x, axis=d, dtype=rdt) if x.ndim else x.astype(rdt)
    node = node_for(CumprodBackward0, (input,))
    res = finish(node, arr(r))
    if node is not None:
        node.dim = d
        save(node, input)
        save_output(node, res)
    return res if out is None else write_out(out, res, "cumprod")


class LogcumsumexpBackward0(OpNode):
    def backward(self, g):
        x, out = self.saved_tensors
        d = self.dim
        if x.ndim == 0 or x._data.size == 0:
            return g
        # Stable in log space, the positive and negative parts of g apart (as PyTorch does).
        from .index import where
        lowest = np.finfo(g._data.dtype).min
        absg = g.abs()
        pos, neg = g._data > 0, g._data < 0
        with np.errstate(divide="ignore"):
            logabs = absg.log()
        lp = where(_const(pos), logabs, lowest)
        ln = where(_const(neg), logabs, lowest)
        rev = lambda t: logcumsumexp(t.flip(d), d).flip(d)  # noqa: E731
        return (rev(lp - out) + x).exp() - (rev(ln - out) + x).exp()


def logcumsumexp(input, dim, *, out=None):
    """``log(cumsum(exp(input)))`` along ``dim``, computed stably."""
    xp = xp_for(input)
    if input._data.dtype.kind not in "fcV":
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{_dtype_word(input._data.dtype)}'")
    x = input._data
    d = wrap_dim(_int(dim), x.ndim)
    with np.errstate(invalid="ignore", over="ignore"):
        r = xp.logaddexp.accumulate(x, axis=d) if x.ndim and x.size else x.copy()
    node = node_for(LogcumsumexpBackward0, (input,))
    res = finish(node, arr(xp.asarray(r, x.dtype)))
    if node is not None:
        node.dim = d
        save(node, input)
        save_output(node, res)
    return res if out is None else write_out(out, res, "logcumsumexp")


class CummaxBackward0(OpNode):
    def backward(self, g):
        (x,) = self.saved_tensors
        if x._data.size == 0:
            return x  # PyTorch's cummaxmin_backward hands back the (empty) input itself
        if g.ndim == 0:
            return g
        return _scatter_along(g, self.index, self.dim, self.shape)


CumminBackward0 = type("CumminBackward0", (CummaxBackward0,), {})


def _cum_extreme(name, ufunc, cls):
    def op(input, dim, *, out=None):
        xp = xp_for(input)
        x = input._data
        no_complex_kernel(x, name + "_cpu")
        d = wrap_dim(_int(dim), x.ndim)
        if x.ndim == 0 or x.size == 0:
            vals, idx = x.copy(), xp.zeros(x.shape, np.int64)
        else:
            # PyTorch's rule: position i takes over when x_i is NaN or x_i >= (<=) the running
            # value, so ties and NaNs point at their last occurrence, and once a NaN is seen
            # only a later NaN moves the index.
            with np.errstate(invalid="ignore"):
                vals = on_device(ufunc, x).accumulate(x, axis=d)
                hit = x == vals
                if x.dtype.kind in "fcV":
                    hit |= xp.isnan(x)
            pos = xp.arange(x.shape[d]).reshape((-1,) + (1,) * (x.ndim - d - 1))
            idx = xp.maximum.accumulate(xp.where(hit, pos, 0), axis=d).astype(np.int64)
        node = node_for(cls, (input,))
        if node is not None:
            node.dim, node.index, node.shape = d, idx, x.shape
            save(node, input)
        res = getattr(return_types, name)(finish(node, arr(vals)), finish(None, arr(idx)))
        if out is not None:
            write_out(out[0], res[0], name)
            write_out(out[1], res[1], name)
            return getattr(return_types, name)(out[0], out[1])
        return res

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Running {name[3:]}imum along ``dim``: (values, indices)."
    return op


cummax = _cum_extreme("cummax", np.maximum, CummaxBackward0)
cummin = _cum_extreme("cummin", np.minimum, CumminBackward0)


class DistBackward0(OpNode):
    def backward(self, g):
        a, b, norm = self.saved_tensors
        gx = _vector_norm_grad(a - b, norm, g, self.p, (), False)
        nf = self.next_functions
        return (gx if nf[0][0] is not None else None, -gx if nf[1][0] is not None else None)


def dist(input, other, p=2):
    """The ``p``-norm of ``input - other``."""
    from .arithmetic import sub
    with_grad = node_for(DistBackward0, (input, other))
    from ..autograd import grad_mode
    with grad_mode.no_grad():
        diff = sub(input, other)
    pf = _float(p)
    a = diff._data
    if a.dtype.kind not in "fcV":
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{_dtype_word(a.dtype)} instead.")
    res = finish(with_grad, arr(_vector_norm_np(a, pf, None, False)))
    if with_grad is not None:
        with_grad.p = pf
        save(with_grad, input, other)
        save_output(with_grad, res)
    return res


# *** sort / topk / kthvalue ***

def _sort_idx(x, d, descending, stable=True):
    """Sorting indices along ``d``; NaN sorts as the largest value, as in PyTorch. Unless
    ``stable``, rows longer than 16 with ties come out in the order of PyTorch's CPU kernel
    (std::sort, which is stable only up to 16 elements)."""
    xp = xp_for(x, d)
    if not descending:
        idx = xp.argsort(x, axis=d, kind="stable")
    else:
        n = x.shape[d]
        idx = (n - 1) - xp.flip(xp.argsort(xp.flip(x, d), axis=d, kind="stable"), d)
    if stable or x.ndim == 0 or x.shape[d] <= 16 or x.size == 0:
        return idx
    rows, mshape = _as_rows(x, d)
    out, _ = _as_rows(idx, d)
    replay = xp.nonzero(_rows_needing_replay(rows, out))[0]
    if not len(replay):
        return idx
    out = out.copy()
    less = _gt_or_nan if descending else _lt_nan_last
    for r in replay:
        algo = _StdAlgo([(v, i) for i, v in enumerate(rows[r].tolist())], _StdAlgo.by_value(less))
        algo.sort(0, rows.shape[1])
        out[r] = [p[1] for p in algo.a]
    return xp.moveaxis(out.reshape(mshape), -1, d)


class SortBackward0(OpNode):
    def backward(self, g):
        if g.ndim == 0:
            return g
        return _scatter_along(g, self.index, self.dim, self.shape)


SortBackward1 = type("SortBackward1", (SortBackward0,), {})
TopkBackward0 = type("TopkBackward0", (SortBackward0,), {})


def _selected(name, cls, input, idx, d, extra=None):
    xp = xp_for(input, idx, d, extra)
    x = input._data
    vals = xp.take_along_axis(x, idx, axis=d) if x.ndim else x.copy()
    node = node_for(cls, (input,))
    if node is not None:
        node.index, node.dim, node.shape = idx, d, x.shape
        if extra:
            node.__dict__.update(extra)
    return getattr(return_types, name)(finish(node, arr(vals)), finish(None, arr(idx.astype(np.int64, copy=False))))


def sort(input, dim=-1, descending=False, stable=None, *, out=None):
    """(values, indices) sorted along ``dim``; equal values keep their order."""
    xp = xp_for(input)
    x = input._data
    no_complex(x, "sort")
    d = wrap_dim(_int(dim), x.ndim)
    idx = _sort_idx(x, d, descending, _bool(stable)) if x.ndim else xp.zeros((), np.int64)
    res = _selected("sort", SortBackward0 if stable is None else SortBackward1, input, idx, d)
    if out is not None:
        write_out(out[0], res[0], "sort")
        write_out(out[1], res[1], "sort")
        return return_types.sort(out[0], out[1])
    return res


def argsort(input, dim=-1, descending=False, stable=False):
    """Indices that sort ``input`` along ``dim``; no gradient."""
    xp = xp_for(input)
    x = input._data
    no_complex(x, "sort")
    d = wrap_dim(_int(dim), x.ndim)
    idx = _sort_idx(x, d, descending, _bool(stable)) if x.ndim else xp.zeros((), np.int64)
    return finish(None, arr(idx.astype(np.int64, copy=False)))


def msort(input):
    """``sort`` along dimension 0, values only."""
    return sort(input, 0)[0]


# *** PyTorch's CPU selection order ***
# Which of several equal elements topk, kthvalue and mode report (and so which one gets
# the gradient) is decided by the algorithms PyTorch's CPU kernels run: a Sedgewick
# quickselect for kthvalue, the C++ standard library's nth_element / partial_sort / sort
# (libstdc++'s introselect, heap select and introsort) for topk and mode. These are
# replayed on the rows where the choice matters (ties, NaNs, unsorted topk); every other
# row takes the vectorized NumPy path, which gives the same answer there.

def _gt_or_nan(x, y):
    return (x != x and y == y) or x > y


def _lt_nan_last(x, y):
    return (x == x and y != y) or x < y


def _torch_quickselect(vals, k):
    """PyTorch's quick_select_template (kthvalue): the index that ends up at ``k``."""
    arr, idx = list(vals), list(range(len(vals)))
    gt = _gt_or_nan

    def swap(i, j):
        arr[i], arr[j] = arr[j], arr[i]
        idx[i], idx[j] = idx[j], idx[i]

    lo, hi = 0, len(arr) - 1
    while hi > lo:
        if hi == lo + 1:
            if gt(arr[lo], arr[hi]):
                swap(lo, hi)
            break
        swap((lo + hi) >> 1, lo + 1)
        if gt(arr[lo + 1], arr[hi]):
            swap(lo + 1, hi)
        if gt(arr[lo], arr[hi]):
            swap(lo, hi)
        if gt(arr[lo + 1], arr[lo]):
            swap(lo + 1, lo)
        i, j, piv = lo + 1, hi, arr[lo]
        while True:
            i += 1
            while gt(piv, arr[i]):
                i += 1
            j -= 1
            while gt(arr[j], piv):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
    return idx[k]


class _StdAlgo:
    """libstdc++'s sorting algorithms over a list of items, step for step; ``less`` compares
    two items (``by_value`` wraps a comparison of the first fields of (value, index) pairs)."""

    def __init__(self, items, less):
        self.a = items
        self.less = less

    @staticmethod
    def by_value(less):
        return lambda p, q: less(p[0], q[0])

    def _c(self, i, j):
        return self.less(self.a[i], self.a[j])

    def _swap(self, i, j):
        a = self.a
        a[i], a[j] = a[j], a[i]

    def _median_to_first(self, result, x, y, z):
        c = self._c
        if c(x, y):
            if c(y, z):
                self._swap(result, y)
            elif c(x, z):
                self._swap(result, z)
            else:
                self._swap(result, x)
        elif c(x, z):
            self._swap(result, x)
        elif c(y, z):
            self._swap(result, z)
        else:
            self._swap(result, y)

    def _partition_pivot(self, first, last):
        mid = first + (last - first) // 2
        self._median_to_first(first, first + 1, mid, last - 1)
        lo, hi, c = first + 1, last, self._c
        while True:
            while c(lo, first):
                lo += 1
            hi -= 1
            while c(first, hi):
                hi -= 1
            if not lo < hi:
                return lo
            self._swap(lo, hi)
            lo += 1

    def _linear_insert(self, i):
        a, less = self.a, self.less
        val = a[i]
        j = i - 1
        while less(val, a[j]):
            a[i] = a[j]
            i, j = j, j - 1
        a[i] = val

    def _insertion_sort(self, first, last):
        a, less = self.a, self.less
        for i in range(first + 1, last):
            if less(a[i], a[first]):
                val = a[i]
                a[first + 1:i + 1] = a[first:i]
                a[first] = val
            else:
                self._linear_insert(i)

    def _adjust_heap(self, first, hole, n, value):
        a, less = self.a, self.less
        top = second = hole
        while second < (n - 1) // 2:
            second = 2 * (second + 1)
            if less(a[first + second], a[first + second - 1]):
                second -= 1
            a[first + hole] = a[first + second]
            hole = second
        if n & 1 == 0 and second == (n - 2) // 2:
            second = 2 * (second + 1)
            a[first + hole] = a[first + second - 1]
            hole = second - 1
        parent = (hole - 1) // 2
        while hole > top and less(a[first + parent], value):
            a[first + hole] = a[first + parent]
            hole = parent
            parent = (hole - 1) // 2
        a[first + hole] = value

    def _heap_select(self, first, middle, last):
        a = self.a
        n = middle - first
        if n >= 2:
            parent = (n - 2) // 2
            while True:
                self._adjust_heap(first, parent, n, a[first + parent])
                if parent == 0:
                    break
                parent -= 1
        for i in range(middle, last):
            if self._c(i, first):
                value = a[i]
                a[i] = a[first]
                self._adjust_heap(first, 0, n, value)

    def _sort_heap(self, first, last):
        a = self.a
        while last - first > 1:
            last -= 1
            value = a[last]
            a[last] = a[first]
            self._adjust_heap(first, 0, last - first, value)

    def partial_sort(self, first, middle, last):
        self._heap_select(first, middle, last)
        self._sort_heap(first, middle)

    def nth_element(self, first, nth, last):
        if first == last or nth == last:
            return
        depth = 2 * ((last - first).bit_length() - 1)
        while last - first > 3:
            if depth == 0:
                self._heap_select(first, nth + 1, last)
                self._swap(first, nth)
                return
            depth -= 1
            cut = self._partition_pivot(first, last)
            if cut <= nth:
                first = cut
            else:
                last = cut
        self._insertion_sort(first, last)

    def _introsort(self, first, last, depth):
        while last - first > 16:
            if depth == 0:
                self.partial_sort(first, last, last)
                return
            depth -= 1
            cut = self._partition_pivot(first, last)
            self._introsort(cut, last, depth)
            last = cut

    def sort(self, first, last):
        if last - first < 2:
            return
        self._introsort(first, last, 2 * ((last - first).bit_length() - 1))
        if last - first > 16:
            self._insertion_sort(first, first + 16)
            for i in range(first + 16, last):
                self._linear_insert(i)
        else:
            self._insertion_sort(first, last)


# Past this many elements in the rows to replay, rows keep NumPy's stable order (a tie may
# then be reported at another of its equal positions than PyTorch's), to bound the cost.
_REPLAY_BUDGET = 1 << 16


def _rows_needing_replay(x2, order, any_order=False):
    """Rows of a 2-D array (one row per reduced slice) with ties or NaNs; ``order`` (same
    layout) sorts each row."""
    xp = xp_for(x2, order, any_order)
    if any_order and x2.size <= _REPLAY_BUDGET:
        return xp.ones(x2.shape[0], bool)
    s = xp.take_along_axis(x2, order, axis=1)
    with np.errstate(invalid="ignore"):
        tie = (s[:, 1:] == s[:, :-1]).any(axis=1) if s.shape[1] > 1 else xp.zeros(s.shape[0], bool)
    if x2.dtype.kind in "fcV":
        tie |= xp.isnan(x2).any(axis=1)
    if tie.sum() * x2.shape[1] > _REPLAY_BUDGET:
        tie[:] = False
    return tie


def _as_rows(x, d):
    """``x`` with ``d`` moved last, as (rows, n)."""
    xp = xp_for(x, d)
    m = xp.moveaxis(x, d, -1)
    return m.reshape(-1, m.shape[-1]), m.shape


def _topk_idx(x, k, d, largest, sorted_):
    """Indices (along ``d``, in output order) that PyTorch's CPU topk returns."""
    xp = xp_for(x, k, d, sorted_)
    full = _sort_idx(x, d, largest)
    base = xp.take(full, xp.arange(k), axis=d)
    if k == 0 or x.size == 0:
        return base
    rows, mshape = _as_rows(x, d)
    n = rows.shape[1]
    out, _ = _as_rows(base, d)
    out = out.copy()
    less = _gt_or_nan if largest else _lt_nan_last
    for r in xp.nonzero(_rows_needing_replay(rows, _as_rows(full, d)[0], not sorted_))[0]:
        algo = _StdAlgo([(v, i) for i, v in enumerate(rows[r].tolist())], _StdAlgo.by_value(less))
        if k * 64 <= n:
            algo.partial_sort(0, k, n)
        else:
            algo.nth_element(0, k - 1, n)
            if sorted_:
                algo.sort(0, k - 1)
        out[r] = [p[1] for p in algo.a[:k]]
    return xp.moveaxis(out.reshape(mshape[:-1] + (k,)), -1, d)


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The ``k`` largest (or smallest) elements along ``dim``, with their indices."""
    xp = xp_for(input, k)
    x = input._data
    if x.dtype.kind == "b":
        raise RuntimeError("topk does not support bool dtypes on CPU")
    no_complex(x, "topk")
    d = wrap_dim(_int(dim), x.ndim)
    n = x.shape[d] if x.ndim else 1
    k = _int(k)
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if x.ndim == 0:
        idx = xp.zeros((), np.int64)
    else:
        idx = _topk_idx(x, k, d, largest, sorted)
    res = _selected("topk", TopkBackward0, input, idx, d)
    if out is not None:
        write_out(out[0], res[0], "topk")
        write_out(out[1], res[1], "topk")
        return return_types.topk(out[0], out[1])
    return res


KthvalueBackward0 = type("KthvalueBackward0", (MaxBackward0,), {})


def _kth_idx(x, k, d):
    """Index (keepdim) of the ``k``-th smallest along ``d`` as PyTorch's CPU kernel picks it."""
    xp = xp_for(x, k, d)
    full = _sort_idx(x, d, False)
    idx = xp.take(full, [k - 1], axis=d)
    rows, mshape = _as_rows(x, d)
    out = xp.moveaxis(idx, d, -1).reshape(-1).copy()
    for r in xp.nonzero(_rows_needing_replay(rows, _as_rows(full, d)[0]))[0]:
        out[r] = _torch_quickselect(rows[r].tolist(), k - 1)
    return xp.moveaxis(out.reshape(mshape[:-1] + (1,)), -1, d)


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The ``k``-th smallest element along ``dim`` (1-based), with its index."""
    xp = xp_for(input, k)
    x = input._data
    if x.dtype.kind == "b":
        raise NotImplementedError("\"kthvalue_cpu\" not implemented for 'Bool'")
    no_complex_kernel(x, "kthvalue_cpu")
    d = wrap_dim(_int(dim), x.ndim)
    if x.ndim:
        _check_nonempty(x, (d,), "kthvalue")
    n = x.shape[d] if x.ndim else 1
    k = _int(k)
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if x.ndim == 0:
        idx = xp.zeros((), np.int64)
        vals = x.copy()
    else:
        idx = _kth_idx(x, k, d)
        vals = xp.take_along_axis(x, idx, axis=d)
    node = node_for(KthvalueBackward0, (input,))
    if node is not None:
        node.dim, node.keepdim, node.shape, node.index = d, keepdim, x.shape, idx
    if x.ndim and not keepdim:
        vals, idx = xp.squeeze(vals, d), xp.squeeze(idx, d)
    res = return_types.kthvalue(finish(node, arr(vals)), finish(None, arr(idx.astype(np.int64))))
    if out is not None:
        write_out(out[0], res[0], "kthvalue")
        write_out(out[1], res[1], "kthvalue")
        return return_types.kthvalue(out[0], out[1])
    return res


ModeBackward0 = type("ModeBackward0", (MaxBackward0,), {})


def _mode_row(vals):
    """PyTorch's CPU mode of one row: sort (value, index) pairs by value with std::sort,
    then the first value whose run is strictly the longest, at the last index of its run."""
    algo = _StdAlgo([(v, i) for i, v in enumerate(vals)], lambda p, q: p[0] < q[0])
    algo.sort(0, len(vals))
    a = algo.a
    best_v, best_i, best_n, run = 0, 0, 0, 0
    for i in range(len(a)):
        run += 1
        if i == len(a) - 1 or a[i][0] != a[i + 1][0]:
            if run > best_n:
                best_v, best_i, best_n = a[i][0], a[i][1], run
            run = 0
    return best_v, best_i


def mode(input, dim=-1, keepdim=False, *, out=None):
    """The most frequent value along ``dim`` (the smallest of equally frequent ones), with an index of it."""
    xp = xp_for(input)
    x = input._data
    d = wrap_dim(_int(dim), x.ndim)
    if x.ndim:
        _check_nonempty(x, (d,), "mode")
    if x.ndim == 0:
        idx = xp.zeros((), np.int64)
    else:
        rows, mshape = _as_rows(x, d)
        order = xp.argsort(rows, axis=1, kind="stable")
        flat = order[:, 0].copy()  # all values distinct: the smallest one
        for r in xp.nonzero(_rows_needing_replay(rows, order))[0]:
            flat[r] = _mode_row(rows[r].tolist())[1]
        idx = xp.moveaxis(flat.reshape(mshape[:-1] + (1,)), -1, d)
    vals = xp.take_along_axis(x, idx, axis=d) if x.ndim else x.copy()
    node = node_for(ModeBackward0, (input,))
    if node is not None:
        node.dim, node.keepdim, node.shape, node.index = d, keepdim, x.shape, idx
    if x.ndim and not keepdim:
        vals, idx = xp.squeeze(vals, d), xp.squeeze(idx, d)
    res = return_types.mode(finish(node, arr(xp.array(vals))), finish(None, arr(xp.array(idx, np.int64))))
    if out is not None:
        write_out(out[0], res[0], "mode")
        write_out(out[1], res[1], "mode")
        return return_types.mode(out[0], out[1])
    return res


# *** median ***

class MedianBackward0(OpNode):
    def backward(self, g):
        x, out = self.saved_tensors
        return _select_evenly(g, x._data, out._data)


def _lower_median_idx(x, d, ignore_nan=False):
    """Index (keepdim) of the lower median along ``d``. A NaN wins for median (the first
    one); nanmedian takes the lower median of the other values (the first NaN when all are)."""
    xp = xp_for(x, d, ignore_nan)
    n = x.shape[d]
    order = xp.argsort(x, axis=d, kind="stable")  # NaNs last, ties in index order
    if x.dtype.kind in "fcV":
        nan = xp.isnan(x)
        if nan.any():
            if ignore_nan:
                m = n - nan.sum(axis=d, keepdims=True)
                idx = xp.take_along_axis(order, xp.maximum(m - 1, 0) // 2, axis=d).astype(np.int64)
                # A row of NaNs only: PyTorch's nth_element sees them all as equal and
                # leaves at the front whichever its partitioning put there.
                return xp.where(m == 0, _all_equal_nth(n), idx)
            idx = xp.take(order, [(n - 1) // 2], axis=d)
            has = nan.any(axis=d, keepdims=True)
            first = xp.argmax(nan, axis=d, keepdims=True)
            return xp.where(has, first, idx).astype(np.int64)
    return xp.take(order, [(n - 1) // 2], axis=d).astype(np.int64)


def _all_equal_nth(n):
    """The index std::nth_element leaves first among ``n`` elements that compare equal."""
    algo = _StdAlgo(list(range(n)), lambda p, q: False)
    algo.nth_element(0, 0, n)
    return algo.a[0]


NanmedianBackward0 = type("NanmedianBackward0", (MedianBackward0,), {})
NanmedianBackward1 = type("NanmedianBackward1", (MaxBackward0,), {})


def _median(name, input, dim, keepdim, ignore_nan, classes):
    xp = xp_for(input, ignore_nan, classes)
    x = input._data
    if x.dtype.kind == "b":
        raise NotImplementedError(f"\"{'median_cpu' if dim is None else 'median_out'}\" not implemented for 'Bool'")
    no_complex_kernel(x, "median_cpu" if dim is None else "median_out")
    if dim is None:
        if x.size == 0:
            r = xp.array(np.nan, x.dtype)
        else:
            flat = x.reshape(-1)
            r = flat[_lower_median_idx(flat, 0, ignore_nan)[0]]
        node = node_for(classes[0], (input,))
        res = finish(node, arr(xp.asarray(r, x.dtype)))
        if node is not None:
            save(node, input)
            save_output(node, res)
        return res
    d = wrap_dim(_int(dim), x.ndim)
    if x.ndim == 0:
        xd, dd = x.reshape(1), 0
    else:
        xd, dd = x, d
        _check_nonempty(x, (d,), "median")
    idx = _lower_median_idx(xd, dd, ignore_nan) if xd.size else xp.zeros(_keep_shape(xd.shape, (dd,)), np.int64)
    vals = xp.take_along_axis(xd, idx, axis=dd) if xd.size else xp.zeros(idx.shape, x.dtype)
    if x.ndim == 0:
        vi, ii = vals.reshape(()), idx.reshape(())
    elif keepdim:
        vi, ii = vals, idx
    else:
        vi, ii = xp.squeeze(vals, dd), xp.squeeze(idx, dd)
    node = node_for(classes[1], (input,))
    if node is not None:
        node.dim, node.keepdim, node.shape = d, keepdim, x.shape
        node.index = idx if x.ndim else xp.zeros((), np.int64)
    return getattr(return_types, name)(finish(node, vi.copy()), finish(None, ii.copy()))


def median(input, dim=None, keepdim=False, *, out=None):
    """The lower median of all elements (NaN if there is one); with ``dim``, (values, indices) along it."""
    res = _median("median", input, dim, keepdim, False, (MedianBackward0, MedianBackward1))
    return _write_pair(res, out, "median") if out is not None else res


def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """``median`` of the values that are not NaN; with ``dim``, (values, indices) along it."""
    res = _median("nanmedian", input, dim, keepdim, True, (NanmedianBackward0, NanmedianBackward1))
    return _write_pair(res, out, "nanmedian") if out is not None else res


def _write_pair(res, out, name):
    if isinstance(res, Tensor):
        return write_out(out, res, name)
    write_out(out[0], res[0], name)
    write_out(out[1], res[1], name)
    return getattr(return_types, name)(out[0], out[1])


TENSOR_METHODS = {n: globals()[n] for n in __all__}
TENSOR_METHODS.update(norm=norm, logsumexp=logsumexp)


def _scan_into_self(fn):
    def op(input, dim, *, dtype=None):
        if input._data.dtype.kind == "b":  # the result (Long) cannot go back into a Bool tensor
            raise NotImplementedError(f"\"{fn.__name__}_out_cpu\" not implemented for 'Bool'")
        return fn(input, dim, dtype=dtype)
    op.__name__ = fn.__name__
    return op


INPLACE = {"cumsum_": _scan_into_self(cumsum), "cumprod_": _scan_into_self(cumprod)}
__all__ += ["return_types"]
