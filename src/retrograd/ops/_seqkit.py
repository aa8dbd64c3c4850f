"""Small differentiable joins used by the sequence layers: cat and stack along an axis
(their backward is slicing, itself differentiable)."""
import numpy as np

from ._base import OpNode, node_for, finish, finish_multi


class CatBackward0(OpNode):
    def backward(self, g):
        out, start = [], 0
        nf = self.next_functions
        for i, n in enumerate(self.sizes):
            if nf[i][0] is None:
                out.append(None)
            else:
                idx = (slice(None),) * self.dim + (slice(start, start + n),)
                out.append(g[idx])
            start += n
        return tuple(out)


class StackBackward0(OpNode):
    def backward(self, g):
        nf = self.next_functions
        return tuple(None if nf[i][0] is None else g[(slice(None),) * self.dim + (i,)]
                     for i in range(len(nf)))


def cat(tensors, dim=0):
    tensors = list(tensors)
    d = dim % tensors[0]._data.ndim
    r = np.concatenate([t._data for t in tensors], axis=d)
    node = node_for(CatBackward0, tuple(tensors))
    if node is not None:
        node.sizes, node.dim = [t._data.shape[d] for t in tensors], d
    return finish(node, r)


def stack(tensors, dim=0):
    tensors = list(tensors)
    d = dim % (tensors[0]._data.ndim + 1)
    r = np.stack([t._data for t in tensors], axis=d)
    node = node_for(StackBackward0, tuple(tensors))
    if node is not None:
        node.dim = d
    return finish(node, r)


class UnbindBackward0(OpNode):
    def _apply(self, grads):
        return stack(grads, self.dim)


class SplitWithSizesBackward0(OpNode):
    def _apply(self, grads):
        return cat(grads, self.dim)


def unbind(t, dim=0):
    """The slices of ``t`` along ``dim`` (one node; its backward stacks the gradients)."""
    d = dim % t._data.ndim
    x = t._data
    parts = [np.ascontiguousarray(x[(slice(None),) * d + (i,)]) for i in range(x.shape[d])]
    node = node_for(UnbindBackward0, (t,))
    if node is not None:
        node.dim = d
    return finish_multi(node, parts)


def split_sizes(t, sizes, dim=-1):
    """``t`` cut along ``dim`` into pieces of the given sizes (one node; backward concatenates)."""
    d = dim % t._data.ndim
    x = t._data
    parts, start = [], 0
    for n in sizes:
        parts.append(np.ascontiguousarray(x[(slice(None),) * d + (slice(start, start + n),)]))
        start += n
    node = node_for(SplitWithSizesBackward0, (t,))
    if node is not None:
        node.dim = d
    return finish_multi(node, parts)
