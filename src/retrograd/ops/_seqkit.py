"""Small differentiable joins used by the sequence layers: cat and stack along an axis
(their backward is slicing, itself differentiable)."""
import numpy as np

from ._base import OpNode, node_for, save, finish, finish_multi, _state


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


def graph_grads(fn, inputs, grads):
    """Gradients of the composite ``fn(*inputs)`` for the upstream ``grads``, themselves
    differentiable. Fused nodes whose backward runs on arrays call this when the backward
    records a graph (``create_graph=True``), so that double backward works through them."""
    from ..autograd import engine  # the engine sits above the ops (as in view_inplace)
    # fresh aliases, so each gradient is the partial one (inputs may depend on each other)
    inputs = [t.view_as(t) if t is not None and t._requires_grad else t for t in inputs]
    outs = fn(*inputs)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    pairs = [(o, g) for o, g in zip(outs, grads) if o is not None and g is not None and o._requires_grad]
    diff = [i for i, t in enumerate(inputs) if t is not None and t._requires_grad]
    res = [None] * len(inputs)
    if not pairs or not diff:
        return res
    got = engine.grad([o for o, _ in pairs], [inputs[i] for i in diff], [g for _, g in pairs], create_graph=True,
                      allow_unused=True)
    for i, r in zip(diff, got):
        res[i] = r
    return res


# *** fused recurrent cell pointwise steps (the layers' per-step work after the GEMMs) ***

def _sig(a):
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype, copy=False)


class ThnnFusedLstmCellBackward0(OpNode):
    def _apply(self, grads):
        if _state.grad:
            res = graph_grads(_lstm_composite, list(self.saved_tensors), list(grads))
            return tuple(res)
        dh, dc2 = grads[0]._data, grads[1]._data
        i, f, g, o, c, tc = self.vals
        dct = dc2 + dh * o * (1 - tc * tc)
        da = np.concatenate([dct * g * i * (1 - i), dct * c * f * (1 - f), dct * i * (1 - g * g),
                             dh * tc * o * (1 - o)], axis=-1)
        nf = self.next_functions
        return (finish(None, da) if nf[0][0] is not None else None,
                finish(None, da) if nf[1][0] is not None else None,
                finish(None, dct * f) if nf[2][0] is not None else None)


def _lstm_composite(gx, gh, c):
    from .unary import sigmoid, tanh
    H = c.shape[-1]
    i, f, g, o = split_sizes(gx + gh, [H, H, H, H], -1)
    c2 = sigmoid(f) * c + sigmoid(i) * tanh(g)
    return sigmoid(o) * tanh(c2), c2


def lstm_pointwise(gx, gh, c):
    """(h', c') of an LSTM step from the input and hidden projections (N, 4H) and c (N, H)."""
    a, cd = gx._data + gh._data, c._data
    H = cd.shape[-1]
    i, f, o = _sig(a[..., :H]), _sig(a[..., H:2 * H]), _sig(a[..., 3 * H:])
    g = np.tanh(a[..., 2 * H:3 * H])
    c2 = f * cd + i * g
    tc = np.tanh(c2)
    node = node_for(ThnnFusedLstmCellBackward0, (gx, gh, c))
    h2, c2 = finish_multi(node, [o * tc, c2])
    if node is not None:
        node.vals = (i, f, g, o, cd, tc)
        save(node, gx, gh, c)
    return h2, c2


class ThnnFusedGruCellBackward0(OpNode):
    def backward(self, g):
        if _state.grad:
            return tuple(graph_grads(_gru_composite, list(self.saved_tensors), [g]))
        dh2 = g._data
        r, z, n, hn, h = self.vals
        dan = dh2 * (1 - z) * (1 - n * n)
        dar = dan * hn * r * (1 - r)
        daz = dh2 * (h - n) * z * (1 - z)
        nf = self.next_functions
        out = (np.concatenate([dar, daz, dan], -1), np.concatenate([dar, daz, dan * r], -1), dh2 * z)
        return tuple(finish(None, a) if nf[k][0] is not None else None for k, a in enumerate(out))


def _gru_composite(gx, gh, h):
    from .unary import sigmoid, tanh
    H = h.shape[-1]
    xr, xz, xn = split_sizes(gx, [H, H, H], -1)
    hr, hz, hn = split_sizes(gh, [H, H, H], -1)
    r = sigmoid(xr + hr)
    z = sigmoid(xz + hz)
    n = tanh(xn + r * hn)
    return (1 - z) * n + z * h


def gru_pointwise(gx, gh, h):
    """h' of a GRU step from the input and hidden projections (N, 3H) and h (N, H)."""
    a, b, hd = gx._data, gh._data, h._data
    H = hd.shape[-1]
    r = _sig(a[..., :H] + b[..., :H])
    z = _sig(a[..., H:2 * H] + b[..., H:2 * H])
    hn = b[..., 2 * H:]
    n = np.tanh(a[..., 2 * H:] + r * hn)
    node = node_for(ThnnFusedGruCellBackward0, (gx, gh, h))
    res = finish(node, (1 - z) * n + z * hd)
    if node is not None:
        node.vals = (r, z, n, hn, hd)
        save(node, gx, gh, h)
    return res
