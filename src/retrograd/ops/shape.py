"""Shape ops: views (view/reshape, expand, squeeze, transpose, permute, narrow, split...)
and copies (cat, stack, repeat, flip, roll, triu/tril). Views share their base's version
counter; each view records how to rebuild itself from its base (``view_fn``)."""
import builtins
import warnings

import numpy as np

from ._base import check_devices
from ._base import xp_for, strided, on_device
from ._base import (OpNode, node_for, finish, finish_multi, view_of, arr, wrap_dim, norm_dims,
                    result_np_dtype, xp_of, type_name, Tensor, Size)
from .. import _dtype as D

__all__ = ["reshape", "expand", "broadcast_to", "flatten", "unflatten", "ravel", "squeeze", "unsqueeze",
           "transpose", "swapaxes", "swapdims", "permute", "t", "movedim", "moveaxis",
           "tile", "repeat_interleave", "flip", "fliplr", "flipud", "roll", "cat", "concat", "concatenate", "stack", "hstack",
           "vstack", "row_stack", "dstack", "column_stack", "split", "chunk", "unbind", "narrow", "select",
           "tensor_split", "hsplit", "vsplit", "dsplit", "diagonal", "diag", "diag_embed", "triu", "tril",
           "atleast_1d", "atleast_2d", "atleast_3d", "adjoint", "broadcast_shapes", "broadcast_tensors",
           "meshgrid", "rot90", "diff"]

_int = builtins.int


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = shape[0]
    return tuple(map(_int, shape))


def _infer(shape, numel, input_shape):
    if -1 not in shape:      # the common case: every size given and valid
        known = 1
        for s in shape:
            if s < 0:
                break
            known *= s
        else:
            if known == numel:
                return tuple(shape)
    shape = list(shape)
    neg = []
    known = 1
    for i, s in enumerate(shape):     # in order: the first offending size names the error
        if s == -1:
            if neg:
                raise RuntimeError("only one dimension can be inferred")
            neg.append(i)
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {_shp(shape)}")
        else:
            known *= s
    if neg:
        if known == 0 and numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape [{', '.join(map(str, shape))}] because "
                               "the unspecified dimension size -1 can be any value and is ambiguous")
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel}")
    return tuple(shape)


def _shp(shape):
    return "[" + ", ".join(map(str, shape)) + "]"


# *** view / reshape / expand ***

class ViewBackward0(OpNode):
    def backward(self, g):
        return g.reshape(self.shape)


class UnsafeViewBackward0(ViewBackward0):
    pass


def view(input, *shape):
    """A view with a new shape (the data must be laid out compatibly)."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, Size, int)) and not isinstance(shape[0], np.integer):
        return _view_dtype(input, shape[0])
    shape = _infer(_shape_arg(shape), input._data.size, input._data.shape)
    x = input._data
    try:
        r = x.view()
        r.shape = shape
    except AttributeError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    node = node_for(ViewBackward0, (input,))
    if node is not None:
        node.shape = x.shape
    return view_of(input, finish(node, r), lambda b: b.view(shape))


def _view_dtype(input, dtype):
    # Not a differentiable view in PyTorch (no ``_base``): it shares memory and version only.
    d = D.to_dtype(dtype)
    t = finish(None, input._data.view(d.np))
    t._vc = input._shared_version()
    return t


class ReshapeAliasBackward0(ViewBackward0):
    pass


def _reshape(input, shape):
    x = input._data
    if x.flags.c_contiguous:
        return view(input, shape)
    # PyTorch: a non-contiguous input is viewed (a reshape alias) when its strides allow it
    try:
        r = x.view()
        r.shape = shape
    except AttributeError:
        # the layout does not allow a view: PyTorch's _unsafe_view of a contiguous clone, two
        # nodes (CloneBackward0, then UnsafeViewBackward0: not a view of the input)
        c = input.clone(memory_format="contiguous_format")
        r = c._data.reshape(shape)
        node = node_for(UnsafeViewBackward0, (c,))
        if node is not None:
            node.shape = x.shape
        return finish(node, r)
    node = node_for(ReshapeAliasBackward0, (input,))
    if node is not None:
        node.shape = x.shape
    return view_of(input, finish(node, r), lambda b: b.reshape(shape))


def reshape(input, *shape):
    """The same data with a new shape: a view when possible, else a copy."""
    return _reshape(input, _infer(_shape_arg(shape), input._data.size, input._data.shape))


class ExpandBackward0(OpNode):
    def backward(self, g):
        return g.sum_to_size(self.shape)


def expand(input, *sizes):
    """A broadcast view (``-1`` keeps a dimension)."""
    xp = xp_for(input, *sizes)
    if not sizes:
        raise TypeError('expand() missing 1 required positional arguments: "size"')
    sizes = _shape_arg(sizes)
    x = input._data
    if len(sizes) < x.ndim:
        raise RuntimeError(f"expand({type_name(input)}{{[{', '.join(map(str, x.shape))}]}}, size=[{', '.join(map(str, sizes))}]): "
                           "the number of sizes provided ("
                           f"{len(sizes)}) must be greater or equal to the number of dimensions in the tensor ({x.ndim})")
    lead = len(sizes) - x.ndim
    target = [0] * len(sizes)
    for i in range(len(sizes) - 1, -1, -1):  # from the last dimension, as PyTorch checks
        s = sizes[i]
        if i < lead:
            if s == -1:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}")
            target[i] = s
        else:
            cur = x.shape[i - lead]
            if s == -1:
                target[i] = cur
            elif cur != s and cur != 1:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                                   f"non-singleton dimension {i}.  Target sizes: [{', '.join(map(str, sizes))}].  "
                                   f"Tensor sizes: [{', '.join(map(str, x.shape))}]")
            else:
                target[i] = s
    target = tuple(target)
    if target == x.shape:
        r = x.view()
    elif type(x) is np.ndarray:
        # Writable like PyTorch's expanded tensors (np.broadcast_to is read-only); writes that
        # would land several elements on one location are refused by check_inplace.
        lead = len(target) - x.ndim
        strides = (0,) * lead + tuple(0 if s != t else st for s, t, st in zip(x.shape, target[lead:], x.strides))
        r = strided(x, target, strides)
    elif type(x).__name__ == "MetaArray":
        r = x.__array_namespace__().broadcast_to(x, target)
    else:   # (a device's broadcast views are writeable)
        r = xp.broadcast_to(x, target)
    node = node_for(ExpandBackward0, (input,))
    if node is not None:
        node.shape = x.shape
    return view_of(input, finish(node, r), lambda b: b.expand(target))


def broadcast_to(input, size):
    """``expand`` to ``size``."""
    return expand(input, size)


# *** flatten / squeeze / unsqueeze ***

def flatten(input, start_dim=0, end_dim=-1):
    """Merge dimensions ``start_dim`` .. ``end_dim`` into one."""
    x = input._data
    if x.ndim == 0:
        return _reshape(input, (1,))
    s, e = wrap_dim(_int(start_dim), x.ndim), wrap_dim(_int(end_dim), x.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    n = 1
    for d in x.shape[s:e + 1]:
        n *= d
    return _reshape(input, x.shape[:s] + (n,) + x.shape[e + 1:])


def unflatten(input, dim, sizes):
    """Split dimension ``dim`` into ``sizes`` (one entry may be -1)."""
    x = input._data
    d = wrap_dim(_int(dim), x.ndim)
    sizes = tuple(_int(s) for s in sizes)
    if len(sizes) == 0:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = x.shape[d]
    known = 1
    for s in sizes:
        if s != -1:
            known *= s
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if -1 in sizes:
        if known == 0 or n % known:
            raise RuntimeError(f"unflatten: Provided sizes {_shp(sizes)} don't multiply up to the size of dim {dim} "
                               f"({n}) in the input tensor")
        sizes = tuple(n // known if s == -1 else s for s in sizes)
    elif known != n:
        raise RuntimeError(f"unflatten: Provided sizes {_shp(sizes)} don't multiply up to the size of dim {dim} "
                           f"({n}) in the input tensor")
    return view(input, x.shape[:d] + sizes + x.shape[d + 1:])   # (splitting one dimension is always a view)


def ravel(input):
    """A 1-D view (or contiguous copy) of all elements."""
    return view(input.contiguous(), (input._data.size,))


class SqueezeBackward0(OpNode):
    def backward(self, g):
        return g.reshape(self.shape)


SqueezeBackward1 = type("SqueezeBackward1", (SqueezeBackward0,), {})
SqueezeBackward2 = type("SqueezeBackward2", (SqueezeBackward0,), {})
UnsqueezeBackward0 = type("UnsqueezeBackward0", (SqueezeBackward0,), {})


def squeeze(input, dim=None):
    """Drop dimensions of size 1 (all, or those in ``dim``)."""
    x = input._data
    if dim is None:
        cls, dims = SqueezeBackward0, tuple(i for i, s in enumerate(x.shape) if s == 1)
    elif isinstance(dim, (tuple, list)):
        cls, dims = SqueezeBackward2, tuple(d for d in norm_dims(dim, x.ndim) if x.ndim and x.shape[d] == 1)
    else:
        d = wrap_dim(_int(dim), x.ndim)
        cls, dims = SqueezeBackward1, ((d,) if x.ndim and x.shape[d] == 1 else ())
    shape = tuple(s for i, s in enumerate(x.shape) if i not in dims)
    r = x.reshape(shape)
    node = node_for(cls, (input,))
    if node is not None:
        node.shape = x.shape
    return view_of(input, finish(node, r), lambda b: b.squeeze(dim))


def unsqueeze(input, dim):
    """Insert a dimension of size 1 at ``dim``."""
    x = input._data
    d = wrap_dim(_int(dim), x.ndim + 1)
    r = x.reshape(x.shape[:d] + (1,) + x.shape[d:])
    node = node_for(UnsqueezeBackward0, (input,))
    if node is not None:
        node.shape = x.shape
    return view_of(input, finish(node, r), lambda b: b.unsqueeze(d))


def atleast_1d(*tensors):
    """Each tensor with at least one dimension."""
    return _atleast(tensors, 1)


def atleast_2d(*tensors):
    """Each tensor with at least two dimensions."""
    return _atleast(tensors, 2)


def atleast_3d(*tensors):
    """Each tensor with at least three dimensions."""
    return _atleast(tensors, 3)


def _atleast(tensors, n):
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tensors[0]
    out = []
    for t in tensors:
        nd = t._data.ndim
        if nd >= n:
            out.append(t)
        elif n == 3 and nd == 2:
            out.append(unsqueeze(t, -1))
        elif n == 3 and nd == 1:
            out.append(unsqueeze(unsqueeze(t, 0), -1))
        elif nd == 1:
            out.append(unsqueeze(t, 0))
        else:
            out.append(_reshape(t, (1,) * (n - nd) + t._data.shape))
    return out[0] if single else tuple(out)


# *** transpose / permute ***

class TransposeBackward0(OpNode):
    def backward(self, g):
        return g.transpose(self.d0, self.d1)


class TBackward0(OpNode):
    def backward(self, g):
        return g.t()


class PermuteBackward0(OpNode):
    def backward(self, g):
        inv = [0] * len(self.dims)
        for i, d in enumerate(self.dims):
            inv[d] = i
        return g.permute(inv)


def transpose(input, dim0, dim1):
    """A view with dimensions ``dim0`` and ``dim1`` swapped."""
    x = input._data
    d0, d1 = wrap_dim(_int(dim0), x.ndim), wrap_dim(_int(dim1), x.ndim)
    r = x.swapaxes(d0, d1) if x.ndim else x.view()
    node = node_for(TransposeBackward0, (input,))
    if node is not None:
        node.d0, node.d1 = d0, d1
    return view_of(input, finish(node, r), lambda b: b.transpose(d0, d1))


swapaxes = swapdims = transpose


def t(input):
    """Transpose of a matrix (0-d and 1-d tensors come back as they are)."""
    x = input._data
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    r = x.T if x.ndim == 2 else x.view()
    return view_of(input, finish(node_for(TBackward0, (input,)), r), lambda b: b.t())


def permute(input, *dims):
    """A view with the dimensions reordered as ``dims``."""
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    dims = _shape_arg(dims)
    x = input._data
    if len(dims) != x.ndim:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           "length of the desired ordering of dimensions i.e. input.dim() = "
                           f"{x.ndim} is not equal to len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(d, x.ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    r = x.transpose(dims)
    node = node_for(PermuteBackward0, (input,))
    if node is not None:
        node.dims = dims
    return view_of(input, finish(node, r), lambda b: b.permute(dims))


def _T(self):
    nd = self._data.ndim
    if nd > 2:
        warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated "
                      "and it will throw an error in a future release. Consider `x.mT` to transpose batches of "
                      "matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a "
                      "tensor.", UserWarning, stacklevel=2)
    return permute(self, tuple(range(nd - 1, -1, -1)))


def _mT(self):
    nd = self._data.ndim
    if nd == 0:
        warnings.warn("Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases.",
                      UserWarning, stacklevel=2)
        return self
    if nd == 1:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {nd}-D tensor.")
    return transpose(self, -2, -1)


def adjoint(input):
    """Conjugate transpose of the last two dimensions (real tensors: ``mT``)."""
    nd = input._data.ndim
    if nd < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got {nd}-D tensor.")
    return transpose(input, -2, -1)


def movedim(input, source, destination):
    """Move dimensions ``source`` to positions ``destination`` (a permute view)."""
    x = input._data
    nd = x.ndim
    if nd == 0:
        wrap_dim(_int(source) if isinstance(source, _int) else 0, 0)
        return _alias(input)   # (PyTorch: an alias of a 0-d tensor)
    src = (source,) if isinstance(source, _int) else tuple(source)
    dst = (destination,) if isinstance(destination, _int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({_shp(src)} dims) should "
                           f"contain the same number of dims as destination ({_shp(dst)} dims)")
    src = tuple(wrap_dim(_int(d), nd) for d in src)
    dst = tuple(wrap_dim(_int(d), nd) for d in dst)
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({_shp(src)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({_shp(dst)})")
    order = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(nd) if d not in src)
    order = tuple(o if o is not None else next(rest) for o in order)
    return permute(input, order)


moveaxis = movedim


# *** repeat / tile / flip / roll ***

class RepeatBackward0(OpNode):
    def backward(self, g):
        reps, shape = self.repeats, self.shape
        if not g._data.size:   # (nothing repeated: plain zeros, outside the graph, as PyTorch's)
            return finish(None, xp_of(g).zeros(shape, g._data.dtype))
        lead = len(reps) - len(shape)
        full = (1,) * lead + tuple(shape)
        split = []
        for r, s in zip(reps, full):
            split += [r, s]
        g = g.reshape(split).sum(tuple(range(0, 2 * len(reps), 2)))
        return g.reshape(shape)


def repeat(input, *sizes):
    """Tile the tensor ``sizes[i]`` times along each dimension (a copy)."""
    reps = _shape_arg(sizes)
    x = input._data
    if len(reps) < x.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    full = (1,) * (len(reps) - x.ndim) + x.shape
    out_shape = [r * s for r, s in zip(reps, full)]
    if builtins.any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(out_shape)}: {_shp(out_shape)}")
    xp = xp_of(input)
    r = xp.tile(x.reshape(full), reps) if reps else x.copy()
    node = node_for(RepeatBackward0, (input,))
    if node is not None:
        node.repeats, node.shape = reps, x.shape
    return finish(node, arr(r))


def tile(input, dims):
    """``repeat`` with ``dims`` padded with leading ones to the tensor's rank."""
    dims = tuple(_int(d) for d in dims)
    nd = input._data.ndim
    if len(dims) < nd:
        dims = (1,) * (nd - len(dims)) + dims
    return repeat(input, dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element ``repeats`` times along ``dim`` (flattened when ``dim`` is None)."""
    xp = xp_for(input, repeats, output_size)
    if repeats is None:  # repeat_interleave(repeats): indices repeated by the counts
        r = input._data
        if r.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        return finish(None, xp.repeat(xp.arange(r.size, dtype=np.int64), r))
    if dim is None:
        input, d = flatten(input), 0
    else:
        d = wrap_dim(_int(dim), input._data.ndim)
    x = input._data
    if x.ndim == 0:
        input, x = _reshape(input, (1,)), x.reshape(1)
    n = x.shape[d]
    if isinstance(repeats, Tensor):
        reps = repeats._data.reshape(-1)
        if reps.size == 1:
            reps = xp.broadcast_to(reps, (n,))
        if reps.size != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{reps.size} and input.size({d}) = {n}")
        if xp.any(reps < 0):
            raise RuntimeError("repeats can not be negative")
        from .index_ops import index_select
        return index_select(input, d, finish(None, xp.repeat(xp.arange(n, dtype=np.int64), reps)))
    k = _int(repeats)
    if k < 0:
        raise RuntimeError("Repeats must be non-negative")
    u = unsqueeze(input, d + 1)
    shape = list(u._data.shape)
    shape[d + 1] = k
    from .copy import clone   # always a copy, even when k == 1 (as PyTorch)
    return view(clone(expand(u, shape)), x.shape[:d] + (n * k,) + x.shape[d + 1:])


class FlipBackward0(OpNode):
    def backward(self, g):
        return g.flip(self.dims)


def flip(input, *dims):
    """Reverse the order of elements along ``dims`` (a copy)."""
    if not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    x = input._data
    dims = norm_dims(tuple(dims), x.ndim)
    r = x[tuple(slice(None, None, -1) if i in dims else slice(None) for i in range(x.ndim))].copy() \
        if dims and x.ndim else x.copy()
    node = node_for(FlipBackward0, (input,))
    if node is not None:
        node.dims = dims
    return finish(node, r)


def fliplr(input):
    """Flip left-right (dimension 1)."""
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input):
    """Flip up-down (dimension 0)."""
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


class RollBackward0(OpNode):
    def backward(self, g):
        return g.roll(tuple(-s for s in self.shifts), self.dims)


def roll(input, shifts, dims=None):
    """Rotate elements along ``dims`` by ``shifts`` (flattened when ``dims`` is None)."""
    xp = xp_for(input, shifts)
    x = input._data
    sh = (shifts,) if isinstance(shifts, _int) else tuple(shifts)
    if dims is None:
        if len(sh) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:0")
        r = xp.roll(x.reshape(-1), sh[0]).reshape(x.shape) if x.size else x.copy()
        node = node_for(RollBackward0, (input,))
        res = finish(node, arr(r))
        if node is not None:
            node.shifts, node.dims = sh, None
        return res
    ds = (dims,) if isinstance(dims, _int) else tuple(dims)
    if x.ndim == 0 and ds:
        raise IndexError(f"Dimension specified as {ds[0]} but tensor has no dimensions")
    if len(sh) != len(ds):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:{len(ds)}")
    ds = tuple(wrap_dim(_int(d), x.ndim) for d in ds)
    xp = xp_of(input)
    r = xp.roll(x, sh, ds) if x.ndim else x.copy()
    node = node_for(RollBackward0, (input,))
    if node is not None:
        node.shifts, node.dims = sh, ds
    return finish(node, arr(r))


# *** cat / stack ***

class CatBackward0(OpNode):
    def backward(self, g):
        out = []
        off = 0
        for n, need in zip(self.sizes, self.next_functions):
            if n is None:  # a skipped legacy empty tensor: an empty gradient
                out.append(g.reshape(-1).narrow(0, 0, 0) if need[0] is not None else None)
                continue
            out.append(g.narrow(self.dim, off, n) if need[0] is not None else None)
            off += n
        return tuple(out)


def _tensor_list(tensors, name, nonempty=False):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    if nonempty and not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def cat(tensors, dim=0, *, out=None):
    """Concatenate along ``dim`` (dtypes promote; legacy 1-D empty tensors are skipped)."""
    check_devices(tensors)
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
        if t._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    used = [t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)]
    ref = used[0] if used else tensors[0]
    nd = ref._data.ndim
    d = wrap_dim(_int(dim), nd) if used else 0   # (only legacy empty tensors: any dim goes)
    for i, t in enumerate(tensors):
        s = t._data
        if s.ndim == 1 and s.shape[0] == 0:
            continue
        if s.ndim != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and {s.ndim}")
        for k in range(nd):
            if k != d and s.shape[k] != ref._data.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref._data.shape[k]} but got size {s.shape[k]} for tensor number {i} in the list.")
    dt = ref._data.dtype
    if builtins.any(t._data.dtype != dt for t in tensors):
        dt = result_np_dtype(*tensors)
    xp = np if type(ref._data) is np.ndarray else xp_of(ref)
    if used:
        r = xp.concatenate([t._data.astype(dt, copy=False) for t in used], axis=d)
    else:
        r = xp.zeros((0,), dt)
    node = node_for(CatBackward0, tuple(tensors))
    if node is not None:
        node.dim = d
        node.sizes = [None if (t._data.ndim == 1 and t._data.shape[0] == 0 and nd != 1) else t._data.shape[d]
                      for t in tensors]
    res = finish(node, r)
    if out is not None:
        from ._base import write_out
        return write_out(out, res, "cat")
    return res


concat = concatenate = cat


class StackBackward0(OpNode):
    def backward(self, g):
        return tuple(g.select(self.dim, i) if nf[0] is not None else None
                     for i, nf in enumerate(self.next_functions))


def stack(tensors, dim=0, *, out=None):
    """Join equal-shaped tensors along a new dimension ``dim``."""
    check_devices(tensors)
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    s0 = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {_shp(s0)} at entry 0 and "
                               f"{_shp(t._data.shape)} at entry {i}")
    d = wrap_dim(_int(dim), len(s0) + 1)
    dt = tensors[0]._data.dtype
    if builtins.any(t._data.dtype != dt for t in tensors):
        dt = result_np_dtype(*tensors)
    xp = np if type(tensors[0]._data) is np.ndarray else xp_of(tensors[0])
    r = xp.stack([t._data.astype(dt, copy=False) for t in tensors], axis=d)
    node = node_for(StackBackward0, tuple(tensors))
    if node is not None:
        node.dim = d
    res = finish(node, r)
    if out is not None:
        from ._base import write_out
        return write_out(out, res, "stack")
    return res


def hstack(tensors, *, out=None):
    """Concatenate along dimension 1 (0 for 1-D tensors)."""
    ts = atleast_1d(_tensor_list(tensors, "hstack", True))
    return cat(ts, 0 if ts[0]._data.ndim == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    """Concatenate along dimension 0, after making every tensor at least 2-D."""
    return cat(atleast_2d(_tensor_list(tensors, "vstack", True)), 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    """Concatenate along dimension 2, after making every tensor at least 3-D."""
    return cat(atleast_3d(_tensor_list(tensors, "dstack", True)), 2, out=out)


def column_stack(tensors, *, out=None):
    """Stack 1-D tensors as columns (others are concatenated along dimension 1)."""
    ts = []
    for t in _tensor_list(tensors, "column_stack", True):
        nd = t._data.ndim
        ts.append(_reshape(t, (t._data.size, 1)) if nd <= 1 else t)
    return cat(ts, 1, out=out)


# *** split / chunk / unbind (one node, several view outputs) ***

class SplitBackward0(OpNode):
    def _apply(self, grads):
        return cat(list(grads), self.dim)


SplitWithSizesBackward0 = type("SplitWithSizesBackward0", (SplitBackward0,), {})


class UnbindBackward0(OpNode):
    def _apply(self, grads):
        return stack(list(grads), self.dim)


def _split_views(input, sizes, d, cls):
    x = input._data
    datas, offs = [], []
    off = 0
    for n in sizes:
        idx = (slice(None),) * d + (slice(off, off + n),)
        datas.append(x[idx])
        offs.append(off)
        off += n
    node = node_for(cls, (input,))
    if node is not None:
        node.dim = d
    outs = finish_multi(node, datas)
    return tuple(view_of(input, o, lambda b, a=a, n=n: _slice(b, d, a, a + n), True)
                 for o, a, n in zip(outs, offs, sizes))


def split(tensor, split_size_or_sections, dim=0):
    """Split into chunks of ``split_size`` (the last may be smaller) or of the listed sizes."""
    x = tensor._data
    d = wrap_dim(_int(dim), x.ndim)
    if x.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    n = x.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [_int(s) for s in split_size_or_sections]
        if builtins.any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                               f"split_sizes={_shp(sizes)}")
        if builtins.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={_shp(sizes)}")
        return _split_views(tensor, sizes, d, SplitWithSizesBackward0)
    s = _int(split_size_or_sections)
    if s < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={s}")
    if s == 0:
        if n != 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        sizes = [0]
    else:
        k = builtins.max((n + s - 1) // s, 1)
        sizes = [s] * (k - 1) + [n - s * (k - 1)]
    return _split_views(tensor, sizes, d, SplitBackward0)


def split_with_sizes(input, split_sizes, dim=0):
    return split(input, list(split_sizes), dim)


def chunk(input, chunks, dim=0):
    """Split into ``chunks`` pieces of equal size (the last may be smaller, or fewer pieces)."""
    chunks = _int(chunks)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    d = wrap_dim(_int(dim), x.ndim)
    n = x.shape[d]
    s = (n + chunks - 1) // chunks
    if s == 0:
        return split(input, [0] * chunks if n == 0 else [n], d)
    return split(input, s, d)


def unbind(input, dim=0):
    """The slices along ``dim``, as a tuple of views."""
    x = input._data
    if x.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(_int(dim), x.ndim)
    node = node_for(UnbindBackward0, (input,))
    if node is not None:
        node.dim = d
    datas = [x[(slice(None),) * d + (i, Ellipsis)] for i in range(x.shape[d])]
    return tuple(view_of(input, o, lambda b, i=i: select(b, d, i), True)
                 for i, o in enumerate(finish_multi(node, datas)))


# *** narrow / select / tensor_split ***

class SelectBackward0(OpNode):
    def backward(self, g):
        return _basic_scatter(g, self.shape, self.index)


class SliceBackward0(SelectBackward0):
    pass


class _BasicScatterBackward(OpNode):
    def backward(self, g):
        return _basic_gather(g, self.index)


class _BasicGatherBackward(OpNode):
    def backward(self, g):
        return _basic_scatter(g, self.shape, self.index)


_BasicScatterBackward.__name__ = _BasicScatterBackward.__qualname__ = "SliceBackwardBackward0"
_BasicGatherBackward.__name__ = _BasicGatherBackward.__qualname__ = "SliceBackward0"


def _basic_scatter(g, shape, index):
    """zeros(shape) with ``g`` written at the basic ``index``; differentiable in ``g``."""
    z = xp_of(g).zeros(shape, g._data.dtype)
    z[index] = g._data
    node = node_for(_BasicScatterBackward, (g,))
    if node is not None:
        node.index = index
    return finish(node, z)


def _basic_gather(t, index):
    x = t._data
    node = node_for(_BasicGatherBackward, (t,))
    if node is not None:
        node.index, node.shape = index, x.shape
    return finish(node, x[index].copy())


def _basic_view(input, index, cls, view_fn):
    """``input[index]`` (ints and slices only) as a view recorded as ``cls``."""
    x = input._data
    node = node_for(cls, (input,))
    if node is not None:
        node.shape, node.index = x.shape, index
    return view_of(input, finish(node, x[index]), view_fn)


def narrow(input, dim, start, length):
    """A view of ``length`` elements from ``start`` along ``dim``."""
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(_int(dim), x.ndim)
    n = x.shape[d]
    start, length = _int(start), _int(length)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return _slice(input, d, start, start + length)


def _slice(input, d, a, b):
    index = (slice(None),) * d + (slice(a, b), Ellipsis)
    return _basic_view(input, index, SliceBackward0, lambda base: _slice(base, d, a, b))


def select(input, dim, index):
    """The slice at ``index`` along ``dim`` (a view, one dimension fewer)."""
    x = input._data
    if x.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(_int(dim), x.ndim)
    n = x.shape[d]
    i = _int(index)
    if not -n <= i < n:
        raise IndexError(f"select(): index {i} out of range for tensor of size {_shp(x.shape)} at dimension {d}")
    i %= n
    idx = (slice(None),) * d + (i, Ellipsis)
    return _basic_view(input, idx, SelectBackward0, lambda base: select(base, d, i))


def tensor_split(input, indices_or_sections, dim=0):
    """Split at the given indices, or into ``sections`` nearly equal parts (views)."""
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = wrap_dim(_int(dim), x.ndim)
    n = x.shape[d]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        ios = ios.tolist()
    if isinstance(ios, (list, tuple)):
        bounds = [0] + [builtins.min(builtins.max(_int(i) if _int(i) >= 0 else _int(i) + n, 0), n) for i in ios] + [n]
    else:
        k = _int(ios)
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        q, r = divmod(n, k)
        bounds = [0]
        for i in range(k):
            bounds.append(bounds[-1] + q + (1 if i < r else 0))
    return tuple(_slice(input, d, a, builtins.max(a, b)) for a, b in zip(bounds[:-1], bounds[1:]))


def _nsplit(name, d, need):
    def op(input, indices_or_sections):
        nd = input._data.ndim
        if nd < need:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {need} dimension, but got a tensor "
                               f"with {nd} dimensions!")
        dd = 0 if (name == "hsplit" and nd == 1) else d
        if isinstance(indices_or_sections, _int) and input._data.shape[dd] % indices_or_sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dd}, but the size of the dimension "
                               f"{input._data.shape[dd]} is not divisible by the split_size {indices_or_sections}!")
        return tensor_split(input, indices_or_sections, dd)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``tensor_split`` along dimension {d}."
    return op


hsplit = _nsplit("hsplit", 1, 1)
vsplit = _nsplit("vsplit", 0, 2)
dsplit = _nsplit("dsplit", 2, 3)


# *** diagonal / diag / triu / tril ***

def _diag_view(x, offset, d1, d2):
    """A writable view of the diagonal of ``x`` (NumPy's own is read-only)."""
    xp = xp_for(x, offset, d1, d2)
    v = xp.diagonal(x, offset, d1, d2)
    if v.size == 0 or type(x) is not np.ndarray:
        return v if type(x) is not np.ndarray else xp.zeros(v.shape, x.dtype)
    idx = [slice(None)] * x.ndim
    if offset >= 0:
        idx[d2] = slice(offset, None)
    else:
        idx[d1] = slice(-offset, None)
    start = x[tuple(idx)]
    return strided(start, v.shape, v.strides)


class DiagonalBackward0(OpNode):
    def backward(self, g):
        return _diag_scatter(g, self.shape, self.offset, self.d1, self.d2)


class DiagonalBackwardBackward0(OpNode):
    def backward(self, g):
        return diagonal(g, self.offset, self.d1, self.d2)


def _diag_scatter(g, shape, offset, d1, d2):
    """zeros(shape) with ``g`` on its (offset, d1, d2) diagonal; differentiable in ``g``."""
    xp = xp_for(g, shape, offset, d1, d2)
    z = xp.zeros(shape, g._data.dtype)
    if g._data.size:
        _diag_view(z, offset, d1, d2)[...] = g._data
    node = node_for(DiagonalBackwardBackward0, (g,))
    if node is not None:
        node.offset, node.d1, node.d2 = offset, d1, d2
    return finish(node, z)


def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of the diagonal over ``dim1``/``dim2`` (moved to the last dimension)."""
    x = input._data
    d1, d2 = wrap_dim(_int(dim1), x.ndim), wrap_dim(_int(dim2), x.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = _int(offset)
    r = _diag_view(x, offset, d1, d2)
    node = node_for(DiagonalBackward0, (input,))
    if node is not None:
        node.shape, node.offset, node.d1, node.d2 = x.shape, offset, d1, d2
    return view_of(input, finish(node, r), lambda b: b.diagonal(offset, d1, d2))


class DiagEmbedBackward0(OpNode):
    def backward(self, g):
        return diagonal(g, self.offset, self.d1, self.d2)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Tensors whose (dim1, dim2) diagonals are the last dimension of ``input``."""
    xp = xp_for(input, offset, dim1, dim2)
    x = input._data
    nd = x.ndim + 1
    d1, d2 = wrap_dim(_int(dim1), nd), wrap_dim(_int(dim2), nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = _int(offset)
    n = x.shape[-1] + builtins.abs(offset) if x.ndim else builtins.abs(offset) + 1
    rest = iter(x.shape[:-1])
    shape = tuple(n if i in (d1, d2) else next(rest) for i in range(nd))
    z = xp.zeros(shape, x.dtype)
    if z.size:
        _diag_view(z, offset, d1, d2)[...] = x
    node = node_for(DiagEmbedBackward0, (input,))
    if node is not None:
        node.offset, node.d1, node.d2 = offset, d1, d2
    return finish(node, z)


DiagonalBackward0_copy = type("DiagonalBackward0_copy", (DiagonalBackward0,), {})


def diag(input, diagonal=0, *, out=None):
    """1-D input: a matrix with it on a diagonal; 2-D input: its diagonal (a copy)."""
    x = input._data
    if x.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if x.ndim != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {x.ndim}D")
    offset = _int(diagonal)
    r = _diag_view(x, offset, 0, 1).copy()
    node = node_for(DiagonalBackward0_copy, (input,))
    if node is not None:
        node.shape, node.offset, node.d1, node.d2 = x.shape, offset, 0, 1
    return finish(node, r)


class TriuBackward0(OpNode):
    def backward(self, g):
        return triu(g, self.k)


class TrilBackward0(OpNode):
    def backward(self, g):
        return tril(g, self.k)


def _tri(name, np_fn, cls):
    def op(input, diagonal=0, *, out=None):
        x = input._data
        if x.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        k = _int(diagonal)
        r = on_device(np_fn, x)(x, k)
        node = node_for(cls, (input,))
        if node is not None:
            node.k = k
        res = finish(node, arr(r))
        if out is not None:
            from ._base import write_out
            return write_out(out, res, name)
        return res
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"The {'upper' if name == 'triu' else 'lower'} triangle (others zeroed) from ``diagonal``."
    return op


triu = _tri("triu", np.triu, TriuBackward0)
tril = _tri("tril", np.tril, TrilBackward0)
triu._overlap_ok = tril._overlap_ok = True   # (PyTorch's triu_/tril_ write expanded tensors too)


# *** broadcasting helpers, meshgrid, unfold, rot90 ***

def broadcast_shapes(*shapes):
    """The shape all ``shapes`` broadcast to."""
    shapes = [(s,) if isinstance(s, _int) else tuple(s) for s in shapes]
    n = builtins.max([len(s) for s in shapes], default=0)
    out = [1] * n
    for k, s in enumerate(shapes):
        for i, d in enumerate(s):
            j = n - len(s) + i
            if d < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {d}: {_shp(s)}")
            if d != 1 and out[j] != 1 and d != out[j]:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {d} at {i - len(s)}! Mismatching "
                                   f"argument at index {k} had {s}; but expected shape should be broadcastable to "
                                   f"{_shp(out)}")
            if d != 1:
                out[j] = d
    return Size(out)


def broadcast_tensors(*tensors):
    """Views of ``tensors`` expanded to their common shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    shape = ()
    for t in tensors:
        s = t._data.shape
        n = builtins.max(len(shape), len(s))
        a, b = (1,) * (n - len(shape)) + tuple(shape), (1,) * (n - len(s)) + s
        for i, (p, q) in enumerate(zip(a, b)):
            if p != q and p != 1 and q != 1:
                raise RuntimeError(f"The size of tensor a ({p}) must match the size of tensor b ({q}) at "
                                   f"non-singleton dimension {i}")
        shape = tuple(q if p == 1 else p for p, q in zip(a, b))
    return tuple(t if t._data.shape == shape else expand(t, shape) for t in tensors)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-D tensors ('ij' indexing by default, or 'xy')."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t._data.dtype != tensors[0]._data.dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t._data.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t._data.size for t in ts)
    n = len(ts)
    outs = [expand(_reshape(t, tuple(-1 if i == k else 1 for i in range(n))), shape) for k, t in enumerate(ts)]
    if swap:
        outs[0], outs[1] = outs[1], outs[0]
    return tuple(outs)


class UnfoldBackward0(OpNode):
    def backward(self, g):
        return _unfold_backward(g, self.shape, self.dim, self.size, self.step)


class UnfoldBackwardBackward0(OpNode):
    def backward(self, g):
        return unfold(g, self.dim, self.size, self.step)


def _unfold_backward(g, shape, d, size, step):
    """Windows of ``g`` summed back into a tensor of ``shape`` (differentiable in ``g``)."""
    xp = xp_for(g, shape, d, size, step)
    x = g._data
    z = xp_of(g).zeros(shape, x.dtype)
    n = x.shape[d] if len(shape) else 1
    gm = x.reshape(1, size) if not len(shape) else xp.moveaxis(x, -1, d + 1)  # window index right after d
    for j in range(size):
        if not len(shape):
            z[...] += gm[0, j]
            continue
        sl = (slice(None),) * d + (slice(j, j + step * (n - 1) + 1, step),)
        z[sl] += gm[(slice(None),) * (d + 1) + (j,)]
    node = node_for(UnfoldBackwardBackward0, (g,))
    if node is not None:
        node.dim, node.size, node.step = d, size, step
    return finish(node, z)


def unfold(input, dimension, size, step):
    """A view of all windows of ``size`` along ``dimension``, ``step`` apart (windows last)."""
    xp = xp_for(input, dimension, size, step)
    x = input._data
    d = wrap_dim(_int(dimension), x.ndim)
    size, step = _int(size), _int(step)
    length = x.shape[d] if x.ndim else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if x.ndim == 0:
        r = x.reshape(1)
    else:
        n = (length - size) // step + 1
        st = x.strides[d]
        shape = x.shape[:d] + (n,) + x.shape[d + 1:] + (size,)
        strides = x.strides[:d] + (st * step,) + x.strides[d + 1:] + (st,)
        r = strided(x, shape, strides)
    node = node_for(UnfoldBackward0, (input,))
    if node is not None:
        node.shape, node.dim, node.size, node.step = x.shape, d, size, step
    return view_of(input, finish(node, r), lambda b: unfold(b, d, size, step))


class Rot90Backward0(OpNode):
    def backward(self, g):
        return rot90(g, -self.k, self.dims)


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from the first toward the second)."""
    xp = xp_for(input, k)
    x = input._data
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {x.ndim}")
    d0, d1 = wrap_dim(_int(dims[0]), x.ndim), wrap_dim(_int(dims[1]), x.ndim)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k = _int(k)
    r = xp.array(xp.rot90(x, k, (d0, d1)), order="C")   # a copy for every k, as PyTorch
    node = node_for(Rot90Backward0, (input,))
    if node is not None:
        node.k, node.dims = k, (d0, d1)
    return finish(node, r)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim`` (after joining ``prepend``/``append``)."""
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    d = wrap_dim(_int(dim), x.ndim)
    n = _int(n)
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    parts = [t for t in (prepend, input, append) if t is not None]
    t = cat(parts, d) if len(parts) > 1 else input
    if n == 0:   # (PyTorch copies into a new tensor: CopyBackwards)
        from .copy import copy_
        from .. import _creation
        return copy_(_creation.empty_like(t), t)
    from .arithmetic import sub
    for _ in range(n):
        m = t._data.shape[d]
        if m == 0:
            break
        a, b = narrow(t, d, 1, m - 1), narrow(t, d, 0, m - 1)
        t = a.logical_xor(b) if t._data.dtype.kind == "b" else sub(a, b)
    return t


# *** in-place shape changes (squeeze_, unsqueeze_, t_, transpose_): the tensor becomes the view ***

SqueezeBackward3 = type("SqueezeBackward3", (SqueezeBackward0,), {})
SqueezeBackward4 = type("SqueezeBackward4", (SqueezeBackward0,), {})
SqueezeBackward5 = type("SqueezeBackward5", (SqueezeBackward0,), {})
UnsqueezeBackward1 = type("UnsqueezeBackward1", (SqueezeBackward0,), {})
TBackward1 = type("TBackward1", (TBackward0,), {})
TransposeBackward1 = type("TransposeBackward1", (TransposeBackward0,), {})
_INPLACE_NODES = {SqueezeBackward0: SqueezeBackward3, SqueezeBackward1: SqueezeBackward4,
                  SqueezeBackward2: SqueezeBackward5, UnsqueezeBackward0: UnsqueezeBackward1,
                  TBackward0: TBackward1, TransposeBackward0: TransposeBackward1}


def _metadata_inplace(fn, name):
    def method(self, *args, **kwargs):
        from ._base import check_inplace
        check_inplace(self, overlap=False)
        r = fn(self, *args, **kwargs)
        node = r._grad_fn
        if node is not None:
            node.__class__ = _INPLACE_NODES[type(node)]
            self._grad_fn, self._output_nr = node, 0
        self._data = r._data
        if self._base is not None and getattr(r, "_view_fn", None) is not None:
            self._view_fn = r._view_fn
        self._bump_version()
        if self._base is not None and node is not None:
            self._view_ver = self._vc[0]   # its grad_fn was just set: current, not stale
        return self
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place ``{fn.__name__}``: this tensor takes the new shape."
    return method


INPLACE_IMPL = {n: _metadata_inplace(f, n) for n, f in (
    ("squeeze_", squeeze), ("unsqueeze_", unsqueeze), ("t_", t), ("transpose_", transpose),
    ("swapaxes_", transpose), ("swapdims_", transpose))}


def _repeat_method(self, *sizes):
    return repeat(self, *sizes)


def _flip_method(self, *dims):
    return flip(self, *dims)


TENSOR_METHODS = {n: globals()[n] for n in __all__ if n not in ("cat", "concat", "concatenate", "stack",
                                                                "hstack", "vstack", "row_stack", "dstack",
                                                                "column_stack", "atleast_1d", "atleast_2d",
                                                                "atleast_3d", "broadcast_shapes",
                                                                "broadcast_tensors", "meshgrid")}
TENSOR_METHODS.update({
    "view": view, "repeat": repeat, "split_with_sizes": split_with_sizes, "unfold": unfold,
    "expand_as": lambda self, other: expand(self, other.shape),
    "view_as": lambda self, other: view(self, other.shape),
    "reshape_as": lambda self, other: reshape(self, other.shape),
    "T": property(_T), "mT": property(_mT), "mH": property(_mT)})
INPLACE = {"triu_": triu, "tril_": tril, "squeeze_": squeeze, "unsqueeze_": unsqueeze, "t_": t,
           "transpose_": transpose, "swapaxes_": transpose, "swapdims_": transpose}


# *** as_strided, copies of views, scatters into views, unsafe splits ***

def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s storage with the given sizes, strides and offset (in elements)."""
    xp = xp_for(input, size, stride, storage_offset)
    x = input._data
    size, stride = tuple(_int(s) for s in size), tuple(_int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    if builtins.any(st < 0 for st in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {_shp(stride)}")
    off = input.storage_offset() if storage_offset is None else _int(storage_offset)
    root = x
    while root.base is not None and type(root.base) is type(root):
        root = root.base
    k = x.itemsize
    n_storage = root.nbytes // k
    need = (1 + builtins.sum((s - 1) * st for s, st in zip(size, stride)) + off) if all(size) else 0
    if need > n_storage:
        raise RuntimeError(f"setStorage: sizes {_shp(size)}, strides {_shp(stride)}, storage offset {off}, and itemsize "
                           f"{k} requiring a storage size of {need * k} are out of bounds for storage of size "
                           f"{n_storage * k}")
    if type(x) is not np.ndarray and input.is_meta:    # no storage: the view's metadata only
        from .._meta import MetaArray
        r = MetaArray(size, x.dtype, tuple(st * k for st in stride))
    elif type(x) is np.ndarray:
        r = np.ndarray(size, x.dtype, buffer=root, offset=off * k if all(size) else 0,
                       strides=tuple(st * k for st in stride))
    else:   # a device array: a strided view of its storage from the offset on
        r = strided(root.reshape(-1)[off:], size, tuple(st * k for st in stride)) if all(size) \
            else xp.empty(size, x.dtype)
    node = node_for(AsStridedBackward0, (input,))
    res = finish(node, r)
    if node is not None:
        from .view_inplace import _positions
        node.base_shape, node.numel = x.shape, x.size
        node.pos = pos = _positions(res, input, outside=True)
        if pos is not None and pos.size and pos.min() < 0:   # (storage outside the input: no gradient)
            node.keep = np.flatnonzero(pos >= 0) if type(pos) is np.ndarray else xp.flatnonzero(pos >= 0)
            node.pos = pos[node.keep]
    return view_of(input, res, lambda b: as_strided(b, size, stride, off))


def _copy_variant(fn, name):
    """PyTorch's ``<view op>_copy``: the view op's result as a copy; its node is named
    ``<node>_copy``."""
    def op(input, *args, **kwargs):
        r = fn(input, *args, **kwargs)
        outs = r if isinstance(r, tuple) else (r,)
        node = outs[0]._grad_fn if outs and outs[0]._grad_fn is not None else None
        if node is not None:
            node.__class__ = _copy_class(type(node))
        copies = []
        for o in outs:
            c = finish(None, o._data.copy())
            if node is not None:
                c._grad_fn, c._output_nr, c._requires_grad = node, o._output_nr, True
            copies.append(c)
        return tuple(copies) if isinstance(r, tuple) else copies[0]
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``{fn.__name__}`` as a copy."
    return op


_COPY_CLASSES = {}


def _copy_class(cls):
    c = _COPY_CLASSES.get(cls)
    if c is None:
        c = _COPY_CLASSES[cls] = type(cls.__name__ + "_copy", (cls,), {"__module__": __name__})
    return c


def _alias(input):
    from .index import AliasBackward0
    node = node_for(AliasBackward0, (input,))
    return view_of(input, finish(node, input._data.view()), lambda b: _alias(b))


view_copy = _copy_variant(lambda x, *s: view(x, *s), "view_copy")
expand_copy = _copy_variant(lambda x, *s: expand(x, *s), "expand_copy")
permute_copy = _copy_variant(lambda x, *d: permute(x, *d), "permute_copy")
t_copy = _copy_variant(t, "t_copy")
transpose_copy = _copy_variant(transpose, "transpose_copy")
unsqueeze_copy = _copy_variant(unsqueeze, "unsqueeze_copy")
squeeze_copy = _copy_variant(squeeze, "squeeze_copy")
diagonal_copy = _copy_variant(diagonal, "diagonal_copy")
select_copy = _copy_variant(select, "select_copy")
slice_copy = _copy_variant(lambda x, dim=0, start=None, end=None, step=1:
                           x[(slice(None),) * wrap_dim(_int(dim), x._data.ndim) + (slice(start, end, step),)],
                           "slice_copy")
alias_copy = _copy_variant(_alias, "alias_copy")
unbind_copy = _copy_variant(lambda x, dim=0: unbind(x, dim), "unbind_copy")
split_copy = _copy_variant(lambda x, s, dim=0: split(x, s, dim), "split_copy")
unfold_copy = _copy_variant(unfold, "unfold_copy")


class NarrowCopyBackward0(SliceBackward0):
    pass


def narrow_copy(input, dim, start, length):
    """``narrow`` as a copy."""
    r = narrow(input, dim, start, length)
    node = r._grad_fn
    if node is not None:
        node.__class__ = NarrowCopyBackward0
    c = finish(None, r._data.copy())
    if node is not None:
        c._grad_fn, c._requires_grad = node, True
    return c


class _ScatterIntoBackward(OpNode):
    """``input`` with ``src`` written into a view of it: the view's part of the gradient
    goes to ``src``, the rest to ``input``."""

    def backward(self, g):
        from .index import zero_region
        nf = self.next_functions
        gi = zero_region(g, self.region) if nf[0][0] is not None else None
        gs = self.take(g) if nf[1][0] is not None else None
        return gi, gs


SelectScatterBackward0 = type("SelectScatterBackward0", (_ScatterIntoBackward,), {})
SliceScatterBackward0 = type("SliceScatterBackward0", (_ScatterIntoBackward,), {})
DiagonalScatterBackward0 = type("DiagonalScatterBackward0", (_ScatterIntoBackward,), {})


def _scatter_into(input, src, view_fn, region, cls):
    xp = xp_for(input, src, view_fn, region)
    x = input._data
    target = view_fn(Tensor._make(xp.empty(x.shape, x.dtype)))
    if tuple(src._data.shape) != tuple(target._data.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{_shp(src._data.shape)}, slice size = {_shp(target._data.shape)}")
    r = x.copy()
    if region is None:
        view_fn(Tensor._make(r))._data[...] = src._data
    else:
        r[region] = src._data
    node = node_for(cls, (input, src))
    if node is not None:
        if region is None:   # (a diagonal: its elements as a mask)
            m = xp.zeros(x.shape, np.bool_)
            view_fn(Tensor._make(m))._data[...] = True
            region = (m,)
        node.region, node.take = region, view_fn
    return finish(node, r)


def select_scatter(input, src, dim, index):
    """``input`` with ``src`` in place of ``input.select(dim, index)``."""
    d = wrap_dim(_int(dim), input._data.ndim)
    n = input._data.shape[d]
    i = _int(index)
    if not -n <= i < n:
        raise IndexError(f"select(): index {i} out of range for tensor of size {_shp(input._data.shape)} at dimension {d}")
    i %= n
    return _scatter_into(input, src, lambda t: select(t, d, i), (slice(None),) * d + (i,), SelectScatterBackward0)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """``input`` with ``src`` in place of ``input[..., start:end:step, ...]`` along ``dim``."""
    d = wrap_dim(_int(dim), input._data.ndim)
    idx = (slice(None),) * d + (slice(start, end, step),)
    return _scatter_into(input, src, lambda t: t[idx], idx, SliceScatterBackward0)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """``input`` with ``src`` in place of ``input.diagonal(offset, dim1, dim2)``."""
    return _scatter_into(input, src, lambda t: diagonal(t, offset, dim1, dim2), None, DiagonalScatterBackward0)


class UnsafeSplitBackward0(SplitBackward0):
    pass


UnsafeSplitWithSizesBackward0 = type("UnsafeSplitWithSizesBackward0", (SplitBackward0,), {})


def _unsafe(fn, name):
    def op(input, *args, **kwargs):
        if name == "unsafe_split" and args and isinstance(args[0], (list, tuple)):
            raise TypeError(f"unsafe_split(): argument 'split_size' (position 1) must be int, not "
                            f"{type(args[0]).__name__}")
        outs = fn(input, *args, **kwargs)
        node = outs[0]._grad_fn if outs else None
        if node is not None:
            node.__class__ = (UnsafeSplitWithSizesBackward0 if isinstance(node, SplitWithSizesBackward0)
                              else UnsafeSplitBackward0)
        res = []
        for o in outs:
            # same memory, but not views: each output has its own version counter (as in
            # torch), so in-place writes to it are allowed and invisible to the input's users
            c = finish(None, o._data)
            if node is not None:
                c._grad_fn, c._output_nr, c._requires_grad = node, o._output_nr, True
            res.append(c)
        return tuple(res)
    return op


unsafe_split = _unsafe(split, "unsafe_split")
unsafe_chunk = _unsafe(chunk, "unsafe_chunk")
unsafe_split_with_sizes = _unsafe(split_with_sizes, "unsafe_split_with_sizes")
for _f, _n in ((unsafe_split, "unsafe_split"), (unsafe_chunk, "unsafe_chunk"),
               (unsafe_split_with_sizes, "unsafe_split_with_sizes")):
    _f.__name__ = _f.__qualname__ = _n
    _f.__doc__ = f"``{_n[7:]}`` whose outputs are not views (in-place writes to them are allowed)."


def diagflat(input, offset=0):
    """A matrix with the flattened ``input`` on its ``offset`` diagonal."""
    return diag_embed(input.contiguous().view(-1), offset, 0, 1)     # (PyTorch's: a view of the contiguous input)


from .view_inplace import AsStridedBackward0  # noqa: E402  (the node of lazily rebuilt views too)

__all__ += ["as_strided", "narrow_copy", "select_scatter", "slice_scatter", "diagonal_scatter", "unsafe_split",
            "unsafe_chunk", "unsafe_split_with_sizes", "split_with_sizes", "diagflat", "view_copy", "expand_copy",
            "permute_copy", "t_copy", "transpose_copy", "unsqueeze_copy", "squeeze_copy", "diagonal_copy",
            "select_copy", "slice_copy", "alias_copy", "unbind_copy", "split_copy", "unfold_copy"]
TENSOR_METHODS.update({"as_strided": as_strided, "narrow_copy": narrow_copy, "select_scatter": select_scatter,
                       "slice_scatter": slice_scatter, "diagonal_scatter": diagonal_scatter,
                       "unsafe_split": unsafe_split, "unsafe_chunk": unsafe_chunk,
                       "unsafe_split_with_sizes": unsafe_split_with_sizes, "diagflat": diagflat,
                       "H": property(lambda self: _H(self))})


def _H(self):
    nd = self._data.ndim
    if nd == 0:
        warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=3)
        return self
    if nd != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {nd}-D tensor.")
    return transpose(self, 0, 1)
