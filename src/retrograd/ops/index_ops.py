"""The differentiable scatter behind indexing's backward."""
import numpy as np

from ._base import OpNode, node_for, finish, arr


def _np_index_add(z, index, v):
    try:
        np.add.at(z, index, v)
    except (TypeError, IndexError, ValueError):
        z[index] += v


def index_put_grad(g, shape, npdt, index):
    """zeros(shape) with g added at numpy ``index``; differentiable in ``g``."""
    z = np.zeros(shape, npdt)
    gd = g._data
    if all(isinstance(i, (int, slice, type(None), type(Ellipsis))) for i in index):
        z[index] = gd
    else:
        _np_index_add(z, index, gd)
    node = node_for(IndexBackward0Grad, (g,))
    if node is not None:
        node.np_index = index
    return finish(node, z)


class IndexBackward0Grad(OpNode):
    def backward(self, gg):
        return _reindex(gg, self.np_index)


def _reindex(t, idx):
    r = arr(t._data[idx])
    node = node_for(IndexBackward0Grad2, (t,))
    if node is not None:
        node.shape, node.dtype, node.index = t._data.shape, t._data.dtype, idx
    return finish(node, np.array(r))


class IndexBackward0Grad2(OpNode):
    def backward(self, g):
        return index_put_grad(g, self.shape, self.dtype, self.index)
