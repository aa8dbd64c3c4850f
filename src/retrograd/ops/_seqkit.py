"""Small differentiable joins used by the sequence layers: cat and stack along an axis
(their backward is slicing, itself differentiable)."""
import numpy as np

from ._base import OpNode, node_for, finish


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
