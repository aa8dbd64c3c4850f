"""Parameters to one flat vector and back."""
import numpy as np

from ..._tensor import Tensor
from ...ops._base import OpNode, node_for, finish

__all__ = ["parameters_to_vector", "vector_to_parameters"]


class CatBackward0(OpNode):
    def backward(self, g):
        out, off = [], 0
        for shape, n in self.parts:
            out.append(g[off:off + n].reshape(shape))
            off += n
        return tuple(out)


def _check_param_device(param, old_param_device):
    if old_param_device is None:
        return param.device
    if param.device != old_param_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return old_param_device


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated into one 1-D tensor (differentiable)."""
    param_device = None
    params = []
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        params.append(param)
    if not params:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    data = np.concatenate([p._data.reshape(-1) for p in params])
    node = node_for(CatBackward0, tuple(params))
    if node is not None:
        node.parts = [(p._data.shape, p._data.size) for p in params]
    return finish(node, data)


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of ``vec`` into the parameters (replacing their data)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__module__}.{type(vec).__name__}")
    param_device = None
    pointer = 0
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        num_param = param.numel()
        param._data = vec._data[pointer:pointer + num_param].reshape(param._data.shape)
        pointer += num_param
