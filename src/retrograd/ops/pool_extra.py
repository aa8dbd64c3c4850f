"""Fractional max pooling (Graham): pooling windows of a fixed size at pseudo-random, increasing
offsets, one sample per plane and dim (``_random_samples``) choosing the offsets."""
import numpy as np

from ._base import OpNode, node_for, save, finish

__all__ = []
TENSOR_METHODS = {}
INPLACE = {}


def _intervals(u, in_size, out_size, pool):
    """Window starts: ``floor((i + u) * alpha) - floor(u * alpha)``, alpha = (in - pool) / (out - 1),
    the last window flush with the end (computed in double, as PyTorch's CPU kernel)."""
    seq = np.empty(out_size, np.int64)
    if out_size > 1:
        alpha = (in_size - pool) / (out_size - 1)
        u = float(u)
        base = int(u * alpha)
        for i in range(out_size - 1):
            seq[i] = int((i + u) * alpha) - base
    seq[out_size - 1] = in_size - pool
    return seq


def _pick(win):
    """Per window (last axis) the position PyTorch's kernel keeps: the first strict maximum, or
    the last NaN when there is one."""
    nan = np.isnan(win) if win.dtype.kind == "f" else np.zeros(win.shape, bool)
    first_max = np.argmax(np.where(nan, -np.inf, win), axis=-1)
    if not nan.any():
        return first_max
    k = win.shape[-1]
    last_nan = k - 1 - np.argmax(nan[..., ::-1], axis=-1)
    return np.where(nan.any(-1), last_nan, first_max)


class _FractionalBackward(OpNode):
    def backward(self, g):
        (idx,) = self.saved_tensors
        return _fractional_grad(g, idx, self.in_shape, self.nd), None


FractionalMaxPool2DBackward0 = type("FractionalMaxPool2DBackward0", (_FractionalBackward,), {"__module__": __name__})
FractionalMaxPool3DBackward0 = type("FractionalMaxPool3DBackward0", (_FractionalBackward,), {"__module__": __name__})


def _fractional_grad(g, idx, in_shape, nd):
    """Each output gradient added at its input position (tensor ops: its own derivative is a gather)."""
    lead = in_shape[:-nd]
    plane = int(np.prod(in_shape[-nd:]))
    rows = int(np.prod(lead)) if lead else 1
    gi = g.new_zeros((rows, plane))
    return gi.scatter_add(1, idx.reshape(rows, -1), g.reshape(rows, -1)).reshape(in_shape)


_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _fractional(input, kernel_size, output_size, output_ratio, random_samples, nd):
    from .. import _creation
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    x = input._data
    if x.ndim not in (nd + 1, nd + 2):
        where = f"{name}()" if nd == 2 else f"{name}_out():"
        raise RuntimeError(f"{where}: Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(x.shape)}"
                           if nd == 2 else f"{where} Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(x.shape)}")
    ks = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size,) * nd
    if output_size is None:
        if nd == 2 and len(output_ratio) > nd:     # (2-D: a bare float fails here with TypeError, as in PyTorch)
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * nd
        output_size = [int(x.shape[-nd + d] * ratio[d]) for d in range(nd)]
    osz = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * nd
    batched = x.ndim == nd + 2
    n = x.shape[0] if batched else 1
    c = x.shape[-nd - 1]
    if random_samples is None:
        random_samples = _creation.rand(n, c, nd, dtype=input.dtype)
    rs = random_samples._data
    if rs.dtype != x.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if rs.shape[1] != c if rs.ndim > 1 else True:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    insz = x.shape[-nd:]
    for d in range(nd):
        ok = osz[d] + ks[d] - 1 <= insz[d] if nd == 2 else osz[d] + ks[d] - 1 < insz[d]
        if not ok:
            nm = _NAMES[nd][d]
            where = f"{name}()" if nd == 2 else f"{name}_out()"
            raise RuntimeError(f"{where}: pool {nm} {ks[d]} too large relative to input {nm} {insz[d]}")
    xs = x.reshape((n, c) + tuple(insz))
    out = np.empty((n, c) + osz, x.dtype)
    ind = np.empty((n, c) + osz, np.int64)
    strides = np.cumprod((1,) + tuple(insz[::-1]))[:-1][::-1]     # row-major plane strides
    offs = [np.arange(k) for k in ks]
    for b in range(n):
        for ch in range(c):
            # which sample drives which dim follows the kernels: 2-D takes [0] for the width and [1] for
            # the height; 3-D takes [0], [1], [2] for time, height, width
            u = rs[b, ch]
            seqs = [_intervals(u[nd - 1 - d] if nd == 2 else u[d], insz[d], osz[d], ks[d]) for d in range(nd)]
            pos = [seqs[d][:, None] + offs[d][None, :] for d in range(nd)]      # (o_d, k_d)
            grids = np.meshgrid(*[p.reshape(-1) for p in pos], indexing="ij")
            flat = sum(gr * s for gr, s in zip(grids, strides))
            # (o0, k0, o1, k1, ...) -> (o0, o1, ..., k0, k1, ...)
            shape = sum(((osz[d], ks[d]) for d in range(nd)), ())
            flat = flat.reshape(shape).transpose(tuple(range(0, 2 * nd, 2)) + tuple(range(1, 2 * nd, 2)))
            flat = flat.reshape(osz + (-1,))
            win = xs[b, ch].reshape(-1)[flat]
            k = _pick(win)
            ind[b, ch] = np.take_along_axis(flat, k[..., None], -1)[..., 0]
            out[b, ch] = np.take_along_axis(win, k[..., None], -1)[..., 0]
    if not batched:
        out, ind = out[0], ind[0]
    cls = FractionalMaxPool2DBackward0 if nd == 2 else FractionalMaxPool3DBackward0
    node = node_for(cls, (input,))
    indices = finish(None, ind)
    if node is not None:
        node.in_shape, node.nd = tuple(x.shape), nd
        save(node, indices)
    return finish(node, out), indices


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """Fractional max pooling over (N, C, H, W) / (C, H, W): (output, indices)."""
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional max pooling over (N, C, H, W) / (C, H, W) (with indices if ``return_indices``)."""
    out, idx = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return (out, idx) if return_indices else out


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """Fractional max pooling over (N, C, T, H, W) / (C, T, H, W): (output, indices)."""
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional max pooling over (N, C, T, H, W) / (C, T, H, W) (with indices if ``return_indices``)."""
    out, idx = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return (out, idx) if return_indices else out
