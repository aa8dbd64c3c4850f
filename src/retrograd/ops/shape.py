"""Shape ops: views (view/reshape, expand, ...), and (more to come) permutes, cat/stack,
split/chunk/unbind, flip, roll, repeat. Views share their base's version counter."""
import numpy as np

from ._base import OpNode, node_for, finish, view_of, arr, Tensor, Size

__all__ = ["reshape", "expand", "broadcast_to"]


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


def _infer(shape, numel, input_shape):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel}")
    return tuple(shape)


class ViewBackward0(OpNode):
    def backward(self, g):
        return g.reshape(self.shape)


class UnsafeViewBackward0(ViewBackward0):
    pass


def view(input, *shape):
    """A view with a new shape (the data must be laid out compatibly)."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, Size, int)) and not isinstance(shape[0], np.integer):
        return input.to(shape[0]) if False else _view_dtype(input, shape[0])
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
    from .._dtype import to_dtype
    d = to_dtype(dtype)
    return view_of(input, finish(None, input._data.view(d.np)))


def reshape(input, *shape):
    """The same data with a new shape: a view when possible, else a copy."""
    shape = _infer(_shape_arg(shape), input._data.size, input._data.shape)
    x = input._data
    if x.shape == shape:
        return view(input, shape)
    r = x.reshape(shape)
    shares = np.shares_memory(r, x) if r.size and type(x) is np.ndarray else True
    if shares:
        return view(input, shape)
    node = node_for(UnsafeViewBackward0 if False else ViewBackward0, (input,))
    if node is not None:
        node.shape = x.shape
    return finish(node, r)


class ExpandBackward0(OpNode):
    def backward(self, g):
        return g.sum_to_size(self.shape)


def expand(input, *sizes):
    """A broadcast view (``-1`` keeps a dimension)."""
    sizes = _shape_arg(sizes)
    x = input._data
    if len(sizes) < x.ndim:
        raise RuntimeError(f"expand(torch.FloatTensor{{[{', '.join(map(str, x.shape))}]}}, size=[{', '.join(map(str, sizes))}]): "
                           "the number of sizes provided ("
                           f"{len(sizes)}) must be greater or equal to the number of dimensions in the tensor ({x.ndim})")
    lead = len(sizes) - x.ndim
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s == -1:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}")
            target.append(s)
        else:
            cur = x.shape[i - lead]
            if s == -1:
                target.append(cur)
            elif cur != s and cur != 1:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                                   f"non-singleton dimension {i}.  Target sizes: [{', '.join(map(str, sizes))}].  "
                                   f"Tensor sizes: [{', '.join(map(str, x.shape))}]")
            else:
                target.append(s)
    target = tuple(target)
    if target == x.shape:
        r = x.view()
    else:
        r = np.broadcast_to(x, target) if type(x) is np.ndarray else x.__array_namespace__().broadcast_to(x, target)
    node = node_for(ExpandBackward0, (input,))
    if node is not None:
        node.shape = x.shape
    return view_of(input, finish(node, r), lambda b: b.expand(target))


def broadcast_to(input, size):
    """``expand`` to ``size``."""
    return expand(input, size)


TENSOR_METHODS = {"view": view, "reshape": reshape, "expand": expand, "broadcast_to": broadcast_to,
                  "expand_as": lambda self, other: expand(self, other.shape),
                  "view_as": lambda self, other: view(self, other.shape),
                  "reshape_as": lambda self, other: reshape(self, other.shape)}
INPLACE = {}
