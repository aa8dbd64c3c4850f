"""The optimizers' steps for sparse gradients (``nn.Embedding(sparse=True)``), kept apart
from the dense update paths: each works on the coalesced gradient's rows only."""
import numpy as np

__all__ = ["coalesced_rows", "add_rows", "sgd_sparse_step", "adagrad_sparse_step"]


def coalesced_rows(grad, maximize=False):
    """(index tuple, values) of the coalesced sparse gradient, negated for ``maximize``."""
    g = grad.coalesce()
    v = g._vals
    return tuple(g._idx), (-v if maximize else v)


def add_rows(d, key, vals):
    """``d[key] += vals`` for unique ``key`` (a coalesced gradient's positions)."""
    d[key] += vals.astype(d.dtype, copy=False)


def sgd_sparse_step(p, state, lr, wd, momentum, dampening, nesterov, maximize):
    """SGD on a sparse gradient as PyTorch's single-tensor SGD runs it: the momentum buffer
    is sparse; weight decay (sparse + dense) is refused with PyTorch's error."""
    g = p._grad
    if maximize:
        g = -g
    if wd != 0:
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if momentum != 0:
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = g.detach().clone()
        else:
            buf = buf * momentum + (g * (1 - dampening) if dampening else g)
        state["momentum_buffer"] = buf
        g = g + buf * momentum if nesterov else buf
    key, v = coalesced_rows(g)
    add_rows(p._data, key, v * -lr)
    p._bump_version()


def adagrad_sparse_step(p, state, clr, eps, maximize):
    """Adagrad on a sparse gradient: the accumulator and the parameter change at the
    gradient's (coalesced) positions only."""
    key, v = coalesced_rows(p._grad, maximize)
    s = state["sum"]._data
    s[key] += v * v
    std = np.sqrt(s[key])
    std += eps
    add_rows(p._data, key, (v / std) * -clr)
    p._bump_version()
