"""Fractional max pooling (Graham): pooling windows of a fixed size at pseudo-random, increasing
offsets, one sample per plane and dim (``_random_samples``) choosing the offsets."""
import math

import numpy as np

from ._base import OpNode, node_for, save, finish, xp_for, check_devices

__all__ = []
TENSOR_METHODS = {}
INPLACE = {}


def _intervals(u, in_size, out_size, pool):
    """Window starts of every plane (``u``: its sample, any shape; result: u's shape + (out,)):
    ``trunc((i + u) * alpha) - trunc(u * alpha)``, alpha = (in - pool) / (out - 1), the last
    window flush with the end (computed in double, as PyTorch's CPU kernel)."""
    xp = xp_for(u)
    seq = xp.full(u.shape + (out_size,), in_size - pool, np.int64)
    if out_size > 1:
        alpha = (in_size - pool) / (out_size - 1)
        u = u.astype(np.float64)[..., None]
        i = xp.arange(out_size - 1, dtype=np.float64)
        seq[..., :-1] = (xp.trunc((i + u) * alpha) - xp.trunc(u * alpha)).astype(np.int64)
    return seq


def _pick(win):
    """Per window (last axis) the position PyTorch's kernel keeps: the first strict maximum, or
    the last NaN when there is one."""
    xp = xp_for(win)
    nan = xp.isnan(win) if win.dtype.kind == "f" else xp.zeros(win.shape, bool)
    first_max = xp.argmax(xp.where(nan, -np.inf, win), axis=-1)
    k = win.shape[-1]
    last_nan = k - 1 - xp.argmax(nan[..., ::-1], axis=-1)
    return xp.where(nan.any(-1), last_nan, first_max)


class _FractionalBackward(OpNode):
    def backward(self, g):
        idx, _ = self.saved_tensors     # (the input: for its version check, as PyTorch saves it)
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
        random_samples = _creation.rand(n, c, nd, dtype=input.dtype, device=input.device)
    else:
        from .loss import _no_grad_weight
        _no_grad_weight(name, random_samples=random_samples)
    check_devices(input, random_samples)
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
    xp = xp_for(x, rs)
    plane = math.prod(insz)
    xs = x.reshape(n, c, plane)
    rs = rs.reshape(n, c, nd)
    # every plane's windows at once, as flat positions in its plane: (n, c, o0, o1, ..., k0, k1, ...)
    # (which sample drives which dim follows the kernels: 2-D takes [0] for the width and [1] for
    # the height; 3-D takes [0], [1], [2] for time, height, width)
    flat = 0
    stride = 1
    for d in reversed(range(nd)):
        seq = _intervals(rs[:, :, nd - 1 - d] if nd == 2 else rs[:, :, d], insz[d], osz[d], ks[d])
        pos = seq[..., :, None] + xp.arange(ks[d])                             # (n, c, o_d, k_d)
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + d], shape[2 + nd + d] = osz[d], ks[d]
        flat = flat + pos.reshape(shape) * stride
        stride *= insz[d]
    flat = flat.reshape((n, c) + osz + (-1,))
    win = xp.take_along_axis(xs, flat.reshape(n, c, -1), 2).reshape(flat.shape)
    k = _pick(win)[..., None]
    ind = xp.take_along_axis(flat, k, -1)[..., 0]
    out = xp.take_along_axis(win, k, -1)[..., 0]
    if not batched:
        out, ind = out[0], ind[0]
    cls = FractionalMaxPool2DBackward0 if nd == 2 else FractionalMaxPool3DBackward0
    node = node_for(cls, (input,))
    indices = finish(None, ind)
    if node is not None:
        node.in_shape, node.nd = tuple(x.shape), nd
        save(node, indices, input)
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
