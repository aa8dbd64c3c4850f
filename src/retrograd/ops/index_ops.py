"""Index ops by dimension: index_select, gather, scatter, scatter_add, index_add,
index_fill, index_copy, masked_fill, masked_select, masked_scatter, take,
take_along_dim, put. Accumulation over repeated indices is vectorized (bincount over
flat positions), never a Python loop."""
import numpy as np

from ._base import check_devices
from ._base import xp_for
from ._base import OpNode, node_for, save, save_output, finish, arr, wrap_dim, Tensor, _dtype_name, write_out
from .index import take_np, put_np, add_flat

__all__ = ["index_select", "gather", "scatter", "scatter_add", "scatter_reduce", "index_add", "index_fill", "index_copy",
           "masked_fill", "masked_select", "masked_scatter", "take", "take_along_dim", "put"]

_I64 = np.dtype(np.int64)


def _shape_str(s):
    return "[" + ", ".join(str(int(v)) for v in s) + "]"


def _size(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _accumulate_flat(n, lin, w, npdt):
    """A length-``n`` array with weights ``w`` summed at flat positions ``lin``."""
    xp = xp_for(n, lin, w, npdt)
    w = xp.broadcast_to(xp.asarray(w), lin.shape).ravel()
    lin = lin.ravel()
    if npdt.kind == "c":
        return (xp.bincount(lin, w.real, n) + 1j * xp.bincount(lin, w.imag, n)).astype(npdt)
    if npdt.kind in "fV" and npdt.itemsize < 4:
        return xp.bincount(lin, w.astype(np.float64, copy=False), n).astype(npdt, copy=False)
    # (NumPy's add.at has a fast path for matching dtypes: faster than bincount's float64
    # sums, and it adds in the element order, as PyTorch's CPU scatter-add does)
    z = xp.zeros(n, npdt)
    if xp is np and npdt in (np.float32, np.float64):
        return add_flat(z, lin, w.astype(npdt, copy=False))
    xp.add.at(z, lin, w.astype(npdt, copy=False))
    return z


# --- dim-wise coordinates ---------------------------------------------------------------

def _coords(dim, index):
    """NumPy index selecting, for each element of ``index``, position ``index`` along
    ``dim`` and the element's own coordinates along the other dims (gather/scatter)."""
    xp = xp_for(index)
    nd = index.ndim
    out = []
    for k in range(nd):
        if k == dim:
            out.append(index)
        else:
            shp = [1] * nd
            shp[k] = index.shape[k]
            out.append(xp.arange(index.shape[k]).reshape(shp))
    return tuple(out)


def _flat_positions(shape, coords, ishape):
    """Flat positions (in a C-ordered array of ``shape``) of ``coords`` broadcast to ``ishape``."""
    xp = xp_for(shape, coords, ishape)
    lin = None
    stride = 1
    for k in range(len(shape) - 1, -1, -1):
        term = coords[k] * stride if stride != 1 else coords[k]
        lin = term if lin is None else lin + term  # small broadcast terms first, one full pass each
        stride *= shape[k]
    return xp.broadcast_to(lin, ishape) if lin is not None else xp.zeros(ishape, np.int64)


def _index_arg(index, op, kinds="iu", msg=None):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    a = index._data
    if a.dtype.kind not in kinds or a.dtype == np.uint8:
        raise RuntimeError(msg or f"{op}(): Expected dtype int32/int64 for index")
    return a.astype(np.int64, copy=False)


def _check_bounds(a, n, dim, exc=RuntimeError, prefix=""):
    if a.size and type(a) is np.ndarray:   # (a device checks in its kernel, as CUDA's device assert: no host sync)
        hi, lo = int(a.max()), int(a.min())
        if hi >= n or lo < -n:
            raise exc(f"{prefix}index {hi if hi >= n else lo} is out of bounds for dimension {dim} with size {n}")


# --- index_select / index_add / index_fill / index_copy ---------------------------------

def _vector_index(index, op, x_ndim):
    a = _index_arg(index, op, msg=f"{op}(): Expected dtype int32 or int64 for index")
    if a.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    return a.reshape(-1)


class IndexSelectBackward0(OpNode):
    def backward(self, g):
        (index,) = self.saved_tensors
        if not self.shape:
            return g.reshape(())
        a = index._data.reshape(-1).astype(np.int64, copy=False)
        return put_np(g, self.shape, (slice(None),) * self.dim + (a,))


def index_select(input, dim, index, *, out=None):
    """The slices of ``input`` along ``dim`` at positions ``index`` (a vector)."""
    check_devices(input, index)
    xp = xp_for(input, index)
    x = input._data
    d = wrap_dim(dim, x.ndim)
    a = _vector_index(index, "index_select", x.ndim)
    if x.ndim == 0:
        if a.size != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {a.size} value(s)")
        if int(a[0]) not in (0, -1):
            raise IndexError("index out of range in self")
        r = x.copy()
    else:
        n = x.shape[d]
        if a.size and (a.max() >= n or a.min() < -n):
            raise IndexError("index out of range in self")
        r = xp.take(x, a, axis=d)
    node = node_for(IndexSelectBackward0, (input,))
    if node is not None:
        node.shape, node.dim = x.shape, d
        save(node, index)
    res = finish(node, arr(r))
    return res if out is None else write_out(out, res, "index_select")


class IndexAddBackward0(OpNode):
    def backward(self, g):
        index, _ = self.saved_tensors     # (source: for its version check, as PyTorch saves it)
        nf = self.next_functions
        gs = None
        if nf[1][0] is not None:
            gs = index_select(g, self.dim, index) if g._data.ndim else g
            if self.alpha != 1:
                gs = gs * self.alpha
            gs = gs.reshape(self.src_shape)
        return (g if nf[0][0] is not None else None, gs)


def index_add(input, dim, index, source, *, alpha=1, out=None):
    """``input`` with ``alpha * source`` slices added at positions ``index`` along ``dim``."""
    check_devices(input, index, source)
    x, s = input._data, source._data
    d = wrap_dim(dim, x.ndim)
    a = _index_arg(index, "index_add_", msg=f"index_add_(): Expected dtype int32/int64 for index but got: "
                   f"{_dtype_name(index._data.dtype)}")
    if a.ndim > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: {a.ndim} with type: "
                         f"{_dtype_name(index._data.dtype)} and size: {_shape_str(a.shape)}")
    a = a.reshape(-1)
    if s.dtype != x.dtype:
        raise RuntimeError(f"index_add_(): self ({_dtype_name(x.dtype)}) and source ({_dtype_name(s.dtype)}) must "
                           "have the same scalar type")
    if s.ndim and d >= s.ndim:
        raise RuntimeError(f"index_add_(): Indexing dim {d} is out of bounds of the source tensor with dim {s.ndim}")
    if s.ndim != x.ndim or any(k != d and s.shape[k] != x.shape[k] for k in range(x.ndim)):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified "
                               f"dimension. Got self.shape = {_shape_str(x.shape)} source.shape = {_shape_str(s.shape)}")
    if x.ndim == 0 and a.size != 1:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    ns = s.shape[d] if s.ndim else 1
    if a.size != ns:
        raise RuntimeError(f"index_add_(): Number of indices ({a.size}) should be equal to source.size(dim): "
                           f"({ns}), for dim: {d}")
    n = x.shape[d] if x.ndim else 1
    _check_bounds(a, n, d)
    if x.dtype.kind in "iub" and alpha != 1:
        alpha = int(alpha)  # PyTorch takes an integral alpha for integral tensors
    r = _index_add_np(x, d, a % n if n else a, s.reshape(_src_shape(x, d, a.size)) * alpha if alpha != 1
                      else s.reshape(_src_shape(x, d, a.size)))
    node = node_for(IndexAddBackward0, (input, source))
    if node is not None:
        node.dim, node.alpha, node.src_shape = d, alpha, s.shape
        save(node, index, source)
    res = finish(node, r)
    return res if out is None else write_out(out, res, "index_add")


def _src_shape(x, d, k):
    if x.ndim == 0:
        return ()
    shp = list(x.shape)
    shp[d] = k
    return tuple(shp)


def _index_add_np(x, d, a, s):
    """``x`` (copied) with slices ``s`` added at ``a`` along ``d``; repeats accumulate."""
    xp = xp_for(x, d, a, s)
    if x.ndim == 0:
        return arr(x + s.sum()) if a.size else x.copy()
    sl = (slice(None),) * d + (a,)
    # (a device accumulates always: asking whether an index repeats would ask the host)
    if a.size and (xp is not np or xp.bincount(a, minlength=x.shape[d]).max() > 1):
        from .index import _acc_into
        return x + _acc_into(x.shape, x.dtype, sl, s, xp)
    r = x.copy()
    r[sl] += s
    return r


class IndexFillBackward0(OpNode):
    def backward(self, g):
        xp = xp_for(g)
        (index,) = self.saved_tensors
        nf = self.next_functions
        gi = index_fill(g, self.dim, index, 0) if nf[0][0] is not None else None
        if len(nf) == 1:
            return gi
        gv = None
        if nf[1][0] is not None:
            # derivatives.yaml: the filled slices selected and summed (a subtraction of the
            # unfilled gradient would turn inf elsewhere into nan)
            gv = index_select(g, self.dim, finish(None, xp.unique(index._data.reshape(-1)))).sum()
        return gi, gv


class IndexFillBackward1(IndexFillBackward0):
    pass


def index_fill(input, dim, index, value):
    """``input`` with the slices at ``index`` along ``dim`` set to ``value``."""
    check_devices(input, index, value)
    x = input._data
    d = wrap_dim(dim, x.ndim)
    if index._data.dtype != _I64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    a = index._data
    if a.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    a = a.reshape(-1)
    n = x.shape[d] if x.ndim else 1
    _check_bounds(a, n, d, IndexError)
    vt = None
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
        vt, value = value, value._data
    r = x.copy()
    if x.ndim == 0:
        if a.size:
            r[()] = value
    else:
        sl = [slice(None)] * x.ndim
        sl[d] = a
        r[tuple(sl)] = value
    if vt is not None:
        node = node_for(IndexFillBackward1, (input, vt))
    else:
        node = node_for(IndexFillBackward0, (input,))
    if node is not None:
        node.dim = d
        save(node, index)
    return finish(node, r)


class IndexCopyBackward0(OpNode):
    def backward(self, g):
        index, _ = self.saved_tensors     # (source: for its version check, as PyTorch saves it)
        nf = self.next_functions
        gi = index_fill(g, self.dim, index, 0) if nf[0][0] is not None else None
        gs = None
        if nf[1][0] is not None:
            gs = (index_select(g, self.dim, index) if g._data.ndim else g).reshape(self.src_shape)
        return gi, gs


def index_copy(input, dim, index, source):
    """``input`` with its slices at ``index`` along ``dim`` replaced by ``source``'s."""
    check_devices(input, index, source)
    x, s = input._data, source._data
    d = wrap_dim(dim, x.ndim)
    a = _index_arg(index, "index_copy_", msg="index_copy_(): Expected a long tensor for index, but got "
                   + _dtype_name(index._data.dtype))
    if a.ndim > 1:
        raise IndexError("index_copy_(): Index should have dimension 1 or 0 (got " + str(a.ndim) + ")")
    a = a.reshape(-1)
    if s.ndim == 0 and a.size != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element (got {a.size})")
    ns = s.shape[d] if s.ndim else 1
    if a.size != ns and x.ndim:
        raise IndexError(f"index_copy_(): Number of indices ({a.size}) should be equal to source.size(dim) ({ns})")
    if s.dtype != x.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{_dtype_name(x.dtype)} and (source) {_dtype_name(s.dtype)}")
    n = x.shape[d] if x.ndim else 1
    _check_bounds(a, n, d, IndexError, "index_copy_(): ")
    r = x.copy()
    if x.ndim == 0:
        r[()] = s.reshape(-1)[-1]  # repeated positions: the last write wins, as in PyTorch
    else:
        sl = [slice(None)] * x.ndim
        sl[d] = a
        r[tuple(sl)] = s.reshape(_src_shape(x, d, a.size))
    node = node_for(IndexCopyBackward0, (input, source))
    if node is not None:
        node.dim, node.src_shape = d, s.shape
        save(node, index, source)
    return finish(node, r)


# --- gather / scatter -------------------------------------------------------------------

def _gather_checks(x, d, a, op, src=None):
    if a.ndim != x.ndim and not (a.ndim <= 1 and x.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    if src is None:
        for k in range(a.ndim):
            if k != d and a.shape[k] > (x.shape[k] if x.ndim else 1):
                raise RuntimeError(f"Size does not match at dimension {k} expected index {_shape_str(a.shape)} to be "
                                   f"no larger than self {_shape_str(x.shape)} apart from dimension {d}")
    else:
        for k in range(a.ndim):
            too_big = (k != d and a.shape[k] > (x.shape[k] if x.ndim else 1)) or \
                (src.ndim and a.shape[k] > src.shape[k])
            if too_big:
                raise RuntimeError(f"Expected index {_shape_str(a.shape)} to be no larger than self "
                                   f"{_shape_str(x.shape)} apart from dimension {d} and to be no larger size than "
                                   f"src {_shape_str(src.shape)}")
    n = x.shape[d] if x.ndim else 1
    if a.size and type(a) is np.ndarray:   # (a device checks in its kernel, as CUDA's device assert: no host sync)
        hi, lo = int(a.max()), int(a.min())
        if hi >= n or lo < 0:
            raise RuntimeError(f"index {hi if hi >= n else lo} is out of bounds for dimension {d} with size {n}")


def _gather3(x_shape, d, a):
    """(A, N, B) and (A, M, B) shapes for a compiled gather along ``d`` of a C-contiguous
    input by the C-contiguous int64 index ``a`` with the input's extent off ``d``, or None."""
    if len(x_shape) == 0 or a.ndim != len(x_shape) or not a.flags.c_contiguous \
            or any(a.shape[k] != x_shape[k] for k in range(len(x_shape)) if k != d):
        return None
    A = _size(x_shape[:d])
    B = _size(x_shape[d + 1:])
    return (A, x_shape[d], B), (A, a.shape[d], B)


def _gather_kernels(x, a):
    """The compiled kernels for a float32/float64 host ``x`` and an index ``a`` of at least
    _accel.MIN_SIZE elements, else None."""
    from .conv import _conv_kernels
    from . import _accel
    if a.size < _accel.MIN_SIZE or type(a) is not np.ndarray:
        return None
    return _conv_kernels(x)


class GatherBackward0(OpNode):
    def backward(self, g):
        _, index = self.saved_tensors  # the input is saved as PyTorch saves it: in-place changes are caught
        return _gather_grad(g, index, self.shape, self.dim, self.lin)


class _GatherGradBackward(OpNode):
    def backward(self, gg):
        (index,) = self.saved_tensors
        return gather(gg, self.dim, index)


def _gather_grad(g, index, shape, d, lin=None):
    """zeros(shape) with ``g`` summed at ``index`` along ``d`` (indices already checked);
    ``lin``: the flat positions, where the forward computed them."""
    xp = xp_for(g, index, shape, d, lin)
    gd, a = g._data, index._data
    if not shape:
        r = xp.asarray(gd.sum(), dtype=gd.dtype)
    elif a.size == 0:
        r = xp.zeros(shape, gd.dtype)
    else:
        s3 = _gather3(shape, d, a) if type(gd) is np.ndarray and gd.dtype in (np.float32, np.float64) else None
        kern = _gather_kernels(gd, a) if s3 is not None else None
        if kern is not None:     # (the order of _accumulate_flat's add.at: the same bits)
            r = np.zeros(shape, gd.dtype)
            kern.gather3_add(r.reshape(s3[0]), a.reshape(s3[1]), np.ascontiguousarray(gd).reshape(s3[1]))
        else:
            lin = _flat_positions(shape, _coords(d, a), a.shape) if lin is None else lin
            r = _accumulate_flat(_size(shape), lin, gd, gd.dtype).reshape(shape)
    node = node_for(_GatherGradBackward, (g,))
    if node is not None:
        node.dim = d
        save(node, index)
    return finish(node, r)


def gather(input, dim, index, *, sparse_grad=False, out=None):
    """``out[i][j] = input[index[i][j]][j]`` (for dim 0), and so on."""
    check_devices(input, index)
    xp = xp_for(input, index, sparse_grad)
    x = input._data
    d = wrap_dim(dim, x.ndim)
    a = _index_arg(index, "gather")
    _gather_checks(x, d, a, "gather")
    lin = None
    s3 = _gather3(x.shape, d, a) if x.flags.c_contiguous and type(x) is np.ndarray else None
    kern = _gather_kernels(x, a) if s3 is not None else None
    if kern is not None:     # one pass, no flat positions (the backward has its own kernel)
        r = np.empty(a.shape, x.dtype)
        kern.gather3(x.reshape(s3[0]), a.reshape(s3[1]), r.reshape(s3[1]))
    elif x.ndim == 0:
        r = xp.broadcast_to(x, a.shape).copy()
    elif x.flags.c_contiguous and a.size:
        # one flat take (the flat positions also serve the backward's scatter)
        lin = _flat_positions(x.shape, _coords(d, a), a.shape)
        r = x.reshape(-1).take(lin)
    else:
        # Index no larger than the input off ``d``: gather from the matching corner.
        xs = x[tuple(slice(None) if k == d else slice(0, a.shape[k]) for k in range(x.ndim))]
        r = xp.take_along_axis(xs, a, axis=d)
    node = node_for(GatherBackward0, (input,))
    if node is not None:
        node.shape, node.dim, node.lin = x.shape, d, lin
        save(node, input, index)
    res = finish(node, arr(xp.asarray(r)))
    return res if out is None else write_out(out, res, "gather")


class ScatterBackward0(OpNode):
    def backward(self, g):
        (index,) = self.saved_tensors
        nf = self.next_functions
        gi = scatter(g, self.dim, index, 0) if nf[0][0] is not None else None
        if len(nf) == 1:
            return gi
        gs = gather(g, self.dim, index) if nf[1][0] is not None else None
        return gi, gs


class ScatterBackward1(ScatterBackward0):
    pass


class ScatterAddBackward0(OpNode):
    def backward(self, g):
        (index,) = self.saved_tensors
        nf = self.next_functions
        gs = gather(g, self.dim, index) if nf[1][0] is not None else None
        return (g if nf[0][0] is not None else None, gs)


_NotImplementedNode = type("NotImplemented", (OpNode,), {
    "backward": lambda self, g: (_ for _ in ()).throw(
        RuntimeError(f"derivative for aten::{self.op} is not implemented"))})


def _scatter_prepare(input, dim, index, src, op):
    check_devices(input, index, src)
    xp = xp_for(input, index, src)
    x = input._data
    d = wrap_dim(dim, x.ndim)
    a = _index_arg(index, "scatter")
    s = src._data if isinstance(src, Tensor) else None
    if s is not None and s.dtype != x.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    _gather_checks(x, d, a, op, s if s is not None else xp.empty(a.shape))
    if x.ndim == 0:
        return x, d, a, s, (Ellipsis,) if a.size else None
    coords = _coords(d, a % x.shape[d] if a.size else a)
    return x, d, a, s, coords


def _src_part(s, a):
    xp = xp_for(s, a)
    return s[tuple(slice(0, k) for k in a.shape)] if s.ndim else xp.broadcast_to(s, a.shape)


def scatter(input, dim, index, src=None, *, value=None, reduce=None, out=None):
    """``input`` with ``src`` (or ``value``) written at ``index`` along ``dim``."""
    xp = xp_for(input, index, src, value)
    if src is None:
        src = value
    x, d, a, s, coords = _scatter_prepare(input, dim, index, src, "scatter")
    r = x.copy()
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if reduce is not None and isinstance(src, Tensor):
        import warnings
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a "
                      "future PyTorch release. Use torch.scatter_reduce instead for more reduction options.",
                      UserWarning, stacklevel=2)
    if coords is not None and a.size:
        vals = _src_part(s, a) if s is not None else src
        if reduce is None:
            r[coords] = vals
        elif reduce == "add":
            lin = _flat_positions(x.shape, coords, a.shape)
            r = (r.reshape(-1) + _accumulate_flat(r.size, lin, xp.asarray(vals, x.dtype), x.dtype)).reshape(x.shape)
        else:
            lin = _flat_positions(x.shape, coords, a.shape).ravel()
            flat = r.reshape(-1)
            xp.multiply.at(flat, lin, xp.broadcast_to(xp.asarray(vals, x.dtype), a.shape).ravel())
            r = flat.reshape(x.shape)
    st = src if isinstance(src, Tensor) else None
    if reduce is not None:
        node = node_for(_NotImplementedNode, (input, st))
        if node is not None:
            node.op = "scatter"
    elif st is not None:
        node = node_for(ScatterBackward0, (input, st))
    else:
        node = node_for(ScatterBackward1, (input,))
    if node is not None:
        node.dim = d
        save(node, index)
    res = finish(node, r)
    return res if out is None else write_out(out, res, "scatter")


def scatter_add(input, dim, index, src, *, out=None):
    """``input`` with ``src`` added at ``index`` along ``dim`` (repeats accumulate)."""
    x, d, a, s, coords = _scatter_prepare(input, dim, index, src, "scatter_add")
    if coords is not None and a.size:
        if x.ndim == 0:
            r = arr(x + _src_part(s, a).sum())
        else:
            lin = _flat_positions(x.shape, coords, a.shape)
            r = (x.reshape(-1) + _accumulate_flat(x.size, lin, _src_part(s, a), x.dtype)).reshape(x.shape)
    else:
        r = x.copy()
    node = node_for(ScatterAddBackward0, (input, src))
    if node is not None:
        node.dim = d
        save(node, index)
    res = finish(node, r)
    return res if out is None else write_out(out, res, "scatter_add")


class ScatterReduceBackward0(OpNode):
    """PyTorch's scatter_reduce_backward, in tensor ops (so it is differentiable itself)."""

    def backward(self, g):
        from .index import where
        inp, src, index, res = self.saved_tensors
        nf = self.next_functions
        d, red, inc = self.dim, self.reduce, self.include_self
        dt = g.dtype
        if red == "sum":
            gi, gs = g, gather(g, d, index)
        elif red == "mean":
            n = scatter_add(_full_like(g, 1.0 if inc else 0.0), d, index, _full_like(src, 1.0))
            n = masked_fill(n, n == 0, 1)
            gi, gs = g / n, gather(g, d, index) / gather(n, d, index)
        elif red == "prod":
            # Products of the other elements, exact when some of them are zero.
            masked_inp = masked_fill(inp, inp == 0, 1)
            gi = g * scatter_reduce(masked_inp, d, index, src, "prod", include_self=inc) / masked_inp
            src_zero = src == 0
            nzero = gather(scatter_add(_full_like(inp, 0.0), d, index, src_zero.to(dt)), d, index)
            single = src_zero & (nzero == 1)
            others = scatter_reduce(inp, d, index, masked_fill(src, single, 1), "prod", include_self=inc)
            gs = where(single, gather(g * others, d, index),
                       gather(g * res, d, index) / masked_fill(src, src_zero, 1))
            if gs._requires_grad and bool((nzero._data > 1).any()):
                gs = _delayed_error(gs, "scatter_reduce(): Double backward is unsupported for src when >1 zeros "
                                        "in src are scattered to the same position in self")
        else:  # amax / amin: ties share the gradient evenly
            value = gather(res, d, index)
            self_is = inp == res
            if not inc:
                # An input element that was overwritten takes no part in the reduction. (PyTorch
                # 2.13 still counts it when it happens to equal the result, halving the others.)
                self_is = scatter(self_is, d, index, False)
            src_is = src == value
            n = scatter_add(self_is.to(dt), d, index, src_is.to(dt))
            gd = g / n
            gi = self_is * gd
            gs = src_is * gather(gd, d, index)
        if not inc:
            gi = scatter(gi, d, index, 0)
        return (gi if nf[0][0] is not None else None, gs if nf[1][0] is not None else None)


def _full_like(t, v):
    xp = xp_for(t, v)
    return finish(None, xp.full(t._data.shape, v, t._data.dtype if t._data.dtype.kind in "fcV" else np.float64))


class _DelayedErrorNode(OpNode):
    def backward(self, g):
        raise RuntimeError(self.msg)


_DelayedErrorNode.__name__ = _DelayedErrorNode.__qualname__ = "DelayedError"


def _delayed_error(t, msg):
    """``t`` unchanged, but differentiating through it raises ``msg`` (PyTorch's DelayedError)."""
    node = node_for(_DelayedErrorNode, (t,))
    if node is None:
        return t
    node.msg = msg
    return finish(node, t._data)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    """``input`` with ``src`` reduced into it at ``index`` along ``dim``
    (``reduce``: 'sum', 'prod', 'mean', 'amax' or 'amin')."""
    check_devices(input, index, src)
    xp = xp_for(input, index, src, include_self)
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    x, d, a, s, coords = _scatter_prepare(input, dim, index, src, "scatter_reduce")
    if reduce == "mean" and x.dtype.kind == "b":
        raise NotImplementedError("\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'")
    r = x.copy()
    if coords is not None and a.size:
        if x.ndim:
            lin = _flat_positions(x.shape, coords, a.shape).ravel()
        else:
            lin = xp.zeros(a.size, np.int64)
        vals = xp.broadcast_to(_src_part(s, a), a.shape).ravel()
        flat = r.reshape(-1)
        hit = xp.zeros(x.size, bool)
        hit[lin] = True
        if not include_self:
            init = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
            if x.dtype.kind in "iu" and reduce in ("amax", "amin"):
                info = np.iinfo(x.dtype)
                init = info.min if reduce == "amax" else info.max
            elif x.dtype.kind == "b" and reduce in ("amax", "amin"):
                init = reduce == "amin"
            flat[hit] = init
        with np.errstate(invalid="ignore", over="ignore"):
            if reduce in ("sum", "mean"):
                xp.add.at(flat, lin, vals)
            elif reduce == "prod":
                xp.multiply.at(flat, lin, vals)
            elif reduce == "amax":
                xp.maximum.at(flat, lin, vals)
            else:
                xp.minimum.at(flat, lin, vals)
        if reduce == "mean":
            cnt = xp.bincount(lin, minlength=x.size).astype(x.dtype) + (1 if include_self else 0)
            cnt = xp.maximum(cnt, 1)
            flat[...] = flat / cnt if x.dtype.kind in "fV" else flat // cnt
        r = flat.reshape(x.shape)
    node = node_for(ScatterReduceBackward0, (input, src))
    res = finish(node, r)
    if node is not None:
        node.dim, node.reduce, node.include_self = d, reduce, include_self
        save(node, input, src, index)
        save_output(node, res)
    return res if out is None else write_out(out, res, "scatter_reduce")


# --- masked ops -------------------------------------------------------------------------

def _mask_arg(mask, op):
    m = mask._data
    if m.dtype != np.bool_:
        if m.dtype == np.uint8:
            return m.astype(bool)
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype {_dtype_name(m.dtype).lower()}")
    return m


def _broadcast_shape(a, b):
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        la, lb = len(a), len(b)
        n = max(la, lb)
        pa, pb = (1,) * (n - la) + tuple(a), (1,) * (n - lb) + tuple(b)
        for k in range(n - 1, -1, -1):
            if pa[k] != pb[k] and pa[k] != 1 and pb[k] != 1:
                raise RuntimeError(f"The size of tensor a ({pa[k]}) must match the size of tensor b ({pb[k]}) at "
                                   f"non-singleton dimension {k}")
        raise


class MaskedFillBackward0(OpNode):
    def backward(self, g):
        xp = xp_for(g)
        (mask,) = self.saved_tensors
        nf = self.next_functions
        gi = masked_fill(g, mask, 0) if nf[0][0] is not None else None
        if len(nf) == 1:
            return gi
        gv = None
        if nf[1][0] is not None:
            from .index import where
            gv = where(mask, g, finish(None, xp.zeros((), g._data.dtype))).sum()
        return gi, gv


class MaskedFillBackward1(MaskedFillBackward0):
    pass


def masked_fill(input, mask, value):
    """``input`` with ``value`` where ``mask`` is True (mask broadcasts)."""
    check_devices(input, mask, value)
    xp = xp_for(input, mask, value)
    x = input._data
    m = _mask_arg(mask, "masked_fill_")
    vt = None
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
        vt, value = value, value._data.item()
    shape = _broadcast_shape(m.shape, x.shape)
    r = xp.array(xp.broadcast_to(x, shape))
    r[xp.broadcast_to(m, shape)] = value
    if vt is not None:
        node = node_for(MaskedFillBackward1, (input, vt))
    else:
        node = node_for(MaskedFillBackward0, (input,))
    if node is not None:
        save(node, mask)
    return finish(node, r)


class MaskedSelectBackward0(OpNode):
    def backward(self, g):
        self.saved_tensors  # noqa: B018  (input and mask are saved as in PyTorch: in-place changes are caught)
        return put_np(g, self.shape, (self.mask,))


def masked_select(input, mask, *, out=None):
    """The elements of ``input`` where ``mask`` is True, as a 1-D tensor (broadcasting)."""
    check_devices(input, mask)
    xp = xp_for(input, mask)
    x = input._data
    m = _mask_arg(mask, "masked_select:")
    if mask._data.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = _broadcast_shape(m.shape, x.shape)
    mb = xp.broadcast_to(m, shape)
    r = xp.broadcast_to(x, shape)[mb]
    node = node_for(MaskedSelectBackward0, (input,))
    if node is not None:
        node.shape, node.mask = shape, mb
        save(node, input, mask)
    res = finish(node, arr(r))
    return res if out is None else write_out(out, res, "masked_select")


class MaskedScatterBackward0(OpNode):
    def backward(self, g):
        nf = self.next_functions
        m = self.mask
        gi = None
        if nf[0][0] is not None:
            from .index import zero_region
            gi = zero_region(g, (m,))
        gs = None
        if nf[1][0] is not None:
            sel = take_np(g, (m,))
            n = _size(self.src_shape)
            gs = put_np(sel, (n,), (slice(0, sel._data.shape[0]),)).reshape(self.src_shape)
        return gi, gs


def masked_scatter(input, mask, source):
    """``input`` with the elements of ``source``, in order, written where ``mask`` is True."""
    xp = xp_for(input, mask, source)
    x, s = input._data, source._data
    m = _mask_arg(mask, "masked_scatter_")
    if s.dtype != x.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{_dtype_name(x.dtype)} and {_dtype_name(s.dtype)}")
    shape = _broadcast_shape(m.shape, x.shape)
    mb = xp.broadcast_to(m, shape)
    k = int(mb.sum())
    if s.size < k:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    r = xp.array(xp.broadcast_to(x, shape))
    r[mb] = s.reshape(-1)[:k]
    node = node_for(MaskedScatterBackward0, (input, source))
    if node is not None:
        node.mask, node.src_shape = mb, s.shape
    return finish(node, r)


# --- take / take_along_dim / put --------------------------------------------------------

class TakeBackward0(OpNode):
    def backward(self, g):
        self.saved_tensors  # noqa: B018  (input and index are saved as in PyTorch: in-place changes are caught)
        return put_np(g, (self.n,), (self.lin,)).reshape(self.shape)


def _flat_index(a, n, op_name):
    if a.size and (a.max() >= n or a.min() < -n):
        bad = int(a.max()) if a.max() >= n else int(a.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return a % n if n else a


def take(input, index):
    """Elements of ``input`` treated as 1-D, at positions ``index`` (result shaped like index)."""
    check_devices(input, index)
    xp = xp_for(input, index)
    x = input._data
    if index._data.dtype != _I64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {_dtype_name(index._data.dtype)}")
    lin = _flat_index(index._data, x.size, "take")
    r = x.reshape(-1)[lin] if x.ndim else xp.broadcast_to(x, lin.shape).copy()
    node = node_for(TakeBackward0, (input,))
    if node is not None:
        node.n, node.lin, node.shape = x.size, lin, x.shape
        save(node, input, index)
    return finish(node, arr(xp.asarray(r)))


def take_along_dim(input, indices, dim=None, *, out=None):
    """``gather`` along ``dim`` with broadcasting (or on the flattened input when dim is None)."""
    check_devices(input, indices)
    if indices._data.dtype != _I64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_dtype_name(indices._data.dtype)}")
    if dim is None:
        res = gather(input.reshape(-1), 0, indices.reshape(-1))
    else:
        x, a = input._data, indices._data
        if x.ndim == 0:
            raise IndexError(f"Dimension specified as {wrap_dim(dim, 0)} but tensor has no dimensions")
        if x.ndim != a.ndim:
            raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                               f"dimensions, but got {x.ndim} dimensions for input, and {a.ndim} dimensions for indices")
        d = wrap_dim(dim, x.ndim)
        xs, ascale = list(x.shape), list(a.shape)
        xs[d] = ascale[d] = 1
        b = list(_broadcast_shape(tuple(xs), tuple(ascale)))
        bi, ba = list(b), list(b)
        bi[d], ba[d] = x.shape[d], a.shape[d]
        inp = input.expand(*bi)       # (always, as PyTorch's broadcast_to: an ExpandBackward0 node)
        idx = indices if tuple(ba) == a.shape else indices.expand(*ba)
        res = gather(inp, d, idx)
    return res if out is None else write_out(out, res, "take_along_dim")


class PutBackward0(OpNode):
    def backward(self, g):
        self.saved_tensors     # (index and source: for their version checks, as PyTorch saves them)
        nf = self.next_functions
        gi = gs = None
        if nf[0][0] is not None:
            if self.accumulate:
                gi = g
            else:
                from .index import zero_region
                gi = zero_region(g.reshape(-1), (self.lin,)).reshape(self.shape)
        if nf[1][0] is not None:
            gs = take_np(g.reshape(-1), (self.lin,)).reshape(self.src_shape)
        return gi, gs


def put(input, index, source, accumulate=False):
    """``input`` (treated as 1-D) with ``source`` written (or added) at ``index``."""
    check_devices(input, index, source)
    x, s = input._data, source._data
    if index._data.dtype != _I64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_dtype_name(index._data.dtype)}")
    if index._data.size != s.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {s.size}, index.numel() = {index._data.size}")
    if s.dtype != x.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_dtype_name(x.dtype)} and source.dtype = {_dtype_name(s.dtype)}.")
    lin = _flat_index(index._data.reshape(-1), x.size, "put")
    flat = x.reshape(-1).copy()
    if accumulate:
        flat = flat + _accumulate_flat(x.size, lin, s.reshape(-1), x.dtype)
    else:
        flat[lin] = s.reshape(-1)
    node = node_for(PutBackward0, (input, source))
    if node is not None:
        node.lin, node.shape, node.src_shape, node.accumulate = lin, x.shape, s.shape, accumulate
        save(node, index, source)
    return finish(node, flat.reshape(x.shape))


def _put_(self, index, source, accumulate=False):
    from ._base import apply_inplace
    return apply_inplace(self, put, index, source, accumulate)


TENSOR_METHODS = {"index_select": index_select, "gather": gather, "scatter": scatter, "scatter_add": scatter_add,
                  "scatter_reduce": scatter_reduce,
                  "index_add": index_add, "index_fill": index_fill, "index_copy": index_copy,
                  "masked_fill": masked_fill, "masked_select": masked_select, "masked_scatter": masked_scatter,
                  "take": take, "take_along_dim": take_along_dim, "put": put, "put_": _put_}
# PyTorch's index_fill_ and masked_fill_ write expanded tensors (masked_fill_ with a deprecation warning).
index_fill._overlap_ok = masked_fill._overlap_ok = True
INPLACE = {"scatter_": scatter, "scatter_add_": scatter_add, "scatter_reduce_": scatter_reduce, "index_add_": index_add, "index_fill_": index_fill,
           "index_copy_": index_copy, "masked_fill_": masked_fill, "masked_scatter_": masked_scatter}


def _source_apart(name, fn, src_pos):
    """``Tensor.<name>``: PyTorch refuses a source sharing any memory with ``self`` (the same
    tensor included), since the writes would read values they already changed."""
    def method(self, *args, **kwargs):
        src = args[src_pos] if len(args) > src_pos else kwargs.get("src", kwargs.get("source"))
        if isinstance(src, Tensor) and src._data.size and self._data.size and \
                np.may_share_memory(self._data, src._data):
            from ._base import PARTIAL_OVERLAP_MSG
            raise RuntimeError(PARTIAL_OVERLAP_MSG)
        from ._base import apply_inplace
        return apply_inplace(self, fn, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"In-place ``{fn.__name__}``."
    return method


INPLACE_IMPL = {n: _source_apart(n, INPLACE[n], 2)
                for n in ("scatter_", "scatter_add_", "scatter_reduce_", "index_add_", "index_copy_")}
