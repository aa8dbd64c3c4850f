"""Spatial transformer ops: grid_sample (bilinear / nearest, zeros / border / reflection
padding, align_corners) and affine_grid, for 4-D inputs."""
import numpy as np

from ._base import xp_for
from ._base import OpNode, node_for, save, finish, arr, _state
from ._seqkit import graph_grads
from .conv import check_kernel_dtype

__all__ = ["grid_sampler", "affine_grid_generator"]


def _unnormalize(c, size, align_corners):
    if align_corners:
        return (c + 1) / 2 * (size - 1), (size - 1) / 2
    return ((c + 1) * size - 1) / 2, size / 2


def _reflect(c, lo, hi):
    """Reflect coordinates into [lo, hi] (twice the bounds, as PyTorch does); returns
    (coordinate, d coordinate / d input)."""
    xp = xp_for(c, lo, hi)
    if lo == hi:
        return xp.zeros_like(c), xp.zeros_like(c)
    mn = lo / 2
    span = (hi - lo) / 2
    d = c - mn
    sign = xp.where(d < 0, -1.0, 1.0)
    d = xp.abs(d)
    extra = xp.fmod(d, span)
    flips = xp.floor(d / span)
    even = (flips % 2) == 0
    out = xp.where(even, extra + mn, span - extra + mn)
    grad = xp.where(even, sign, -sign)
    return out, grad


def _source_coords(c, size, padding_mode, align_corners):
    xp = xp_for(c, size, padding_mode)
    x, scale = _unnormalize(c, size, align_corners)
    g = xp.full_like(x, scale)
    if padding_mode == "border":
        inside = (x > 0) & (x < size - 1)
        x = _clip(x, size)
        g = g * inside
    elif padding_mode == "reflection":
        if align_corners:
            x, gr = _reflect(x, 0, 2 * (size - 1))
        else:
            x, gr = _reflect(x, -1, 2 * size - 1)
        g = g * gr
        inside = (x > 0) & (x < size - 1)
        x = _clip(x, size)
        g = g * inside
    return x, g


def _clip(x, size):
    """PyTorch's vectorised ``min(max(x, 0), size - 1)``: a NaN coordinate lands on 0."""
    xp = xp_for(x, size)
    return xp.where(xp.isnan(x), x.dtype.type(0), xp.clip(x, 0, size - 1))


def _corners(x_t, ix, iy, H, W):
    """Values at integer corners (N, Ho, Wo, C), zero outside; plus flat indices and masks."""
    xp = xp_for(x_t, ix, iy, H, W)
    N = x_t.shape[0]
    ok = (ix >= 0) & (ix < W) & (iy >= 0) & (iy < H)
    xc, yc = xp.clip(ix, 0, W - 1), xp.clip(iy, 0, H - 1)
    n = xp.arange(N).reshape(N, 1, 1)
    v = x_t[n, yc, xc] * ok[..., None]
    return v, (n * H + yc) * W + xc, ok


class _ZeroTied(OpNode):
    """A gradient that is zero by construction yet belongs to the graph (PyTorch's backward
    kernels take these inputs): its own derivatives are zeros."""

    def backward(self, gg):
        xp = xp_for(gg)
        return tuple(finish(None, xp.zeros(s, gg._data.dtype)) if nf[0] is not None else None
                     for s, nf in zip(self.shapes, self.next_functions))


_ZERO_TIED = type("GridSampler2DBackwardBackward0", (_ZeroTied,), {})


def _zero_tied(shape, like, deps):
    xp = xp_for(shape, like, deps)
    node = node_for(_ZERO_TIED, deps)
    if node is not None:
        node.shapes = tuple(d._data.shape for d in deps)
    return finish(node, xp.zeros(shape, like._data.dtype))


class GridSampler2DBackward0(OpNode):
    def backward(self, g):
        xp = xp_for(g)
        if _state.grad:  # create_graph: differentiate the composite, so that double backward works
            x, grid = self.saved_tensors
            res = list(graph_grads(self._composite, [x, grid], [g]))
            if self.mode == "nearest" and self.next_functions[1][0] is not None:
                res[1] = _zero_tied(grid._data.shape, g, (g, x, grid))
            return tuple(res[i] if self.next_functions[i][0] is not None else None for i in range(2))
        x, grid = self.saved_tensors
        xd, gd = x._data, g._data
        N, C, H, W = xd.shape
        nf = self.next_functions
        gt = gd.transpose(0, 2, 3, 1)  # N, Ho, Wo, C
        parts = []
        ggrid = None
        if self.mode == "nearest":
            parts.append((self.corners[0][1], xp.ones(gt.shape[:-1], xd.dtype), self.corners[0][2], gt))
        else:
            (v00, i00, k00), (v01, i01, k01), (v10, i10, k10), (v11, i11, k11) = self.corners
            wx1, wy1 = self.w
            wx0, wy0 = 1 - wx1, 1 - wy1
            for (v, i, k), w in (((v00, i00, k00), wx0 * wy0), ((v01, i01, k01), wx1 * wy0),
                                 ((v10, i10, k10), wx0 * wy1), ((v11, i11, k11), wx1 * wy1)):
                parts.append((i, w.astype(xd.dtype, copy=False), k, gt))
            if nf[1][0] is not None:
                dx = (wy0[..., None] * (v01 - v00) + wy1[..., None] * (v11 - v10)) * gt
                dy = (wx0[..., None] * (v10 - v00) + wx1[..., None] * (v11 - v01)) * gt
                gx, gy = self.dcoord
                ggrid = xp.stack([dx.sum(-1) * gx, dy.sum(-1) * gy], axis=-1).astype(xd.dtype)
        gin = None
        if nf[0][0] is not None:
            # corners outside the input are skipped (selected), as in PyTorch's kernel
            flat = xp.concatenate([(i[..., None] * C + xp.arange(C)).ravel() for i, _, _, _ in parts])
            wts = xp.concatenate([xp.where(k[..., None], w[..., None] * gg, 0).ravel() for _, w, k, gg in parts])
            gin = xp.bincount(flat, weights=wts, minlength=N * H * W * C).reshape(N, H, W, C)
            gin = xp.ascontiguousarray(gin.transpose(0, 3, 1, 2)).astype(xd.dtype)
        if ggrid is None and nf[1][0] is not None:
            ggrid = xp.zeros(grid._data.shape, xd.dtype)
        return (None if gin is None else finish(None, gin), None if ggrid is None else finish(None, ggrid))


    def _composite(self, x, grid):
        """Bilinear / nearest sampling as gathers and weights in tensor ops."""
        xp = xp_for(x, grid)
        N, C, H, W = x.shape
        flat = x.permute(0, 2, 3, 1).reshape(N * H * W, C)

        from .index import where
        zero = finish(None, xp.zeros((), x._data.dtype))

        def corner(k, w=None):
            # a corner outside the input contributes nothing (selected, as PyTorch's kernel)
            _, idx, ok = self.corners[k]
            v = flat[finish(None, idx)]
            return where(finish(None, ok[..., None]), v if w is None else v * w, zero)
        if self.mode == "nearest":
            return corner(0).permute(0, 3, 1, 2)
        # the source coordinate is piecewise linear in the grid, with the slope PyTorch's
        # kernel uses (unnormalising scale, reflection sign, zero where clipped)
        gd = grid._data

        def coord(k):
            slope = self.dcoord[k]
            return grid[..., k] * finish(None, slope) + finish(None, self.coords[k] - gd[..., k] * slope)
        ix, iy = coord(0), coord(1)
        wx1 = (ix - finish(None, xp.floor(ix._data))).unsqueeze(-1)
        wy1 = (iy - finish(None, xp.floor(iy._data))).unsqueeze(-1)
        wx0, wy0 = 1 - wx1, 1 - wy1
        out = corner(0, wx0 * wy0) + corner(1, wx1 * wy0) + corner(2, wx0 * wy1) + corner(3, wx1 * wy1)
        return out.permute(0, 3, 1, 2)


def grid_sampler(input, grid, interpolation_mode=0, padding_mode=0, align_corners=False):
    """``torch.grid_sampler`` for 4-D input (modes as integers, as PyTorch's ATen op)."""
    mode = ("bilinear", "nearest", "bicubic")[interpolation_mode]
    pmode = ("zeros", "border", "reflection")[padding_mode]
    return _grid_sample(input, grid, mode, pmode, align_corners)


def _grid_sample(input, grid, mode, padding_mode, align_corners):
    xd, gd = input._data, grid._data
    if xd.ndim != 4:
        raise NotImplementedError("grid_sample: only 4-D input (N, C, H, W) is supported")
    if gd.ndim != 4 or gd.shape[-1] != 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size 2 in last dimension, but got grid with sizes "
                           f"[{', '.join(map(str, gd.shape))}]")
    if gd.shape[0] != xd.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes [{', '.join(map(str, xd.shape))}] and grid with sizes "
                           f"[{', '.join(map(str, gd.shape))}]")
    if mode == "bicubic":
        raise NotImplementedError("grid_sample: mode='bicubic' is not supported")
    check_kernel_dtype("grid_sampler_2d_cpu_kernel_impl", xd)
    with np.errstate(invalid="ignore", over="ignore"):   # NaN / inf coordinates behave as in PyTorch
        return _grid_sample_arrays(input, grid, xd, gd, mode, padding_mode, align_corners)


def _grid_sample_arrays(input, grid, xd, gd, mode, padding_mode, align_corners):
    xp = xp_for(input, grid, xd, gd, padding_mode)
    N, C, H, W = xd.shape
    x_t = xd.transpose(0, 2, 3, 1)
    ix, gx = _source_coords(gd[..., 0], W, padding_mode, align_corners)
    iy, gy = _source_coords(gd[..., 1], H, padding_mode, align_corners)
    if mode == "nearest":
        cx, cy = xp.rint(ix).astype(np.int64), xp.rint(iy).astype(np.int64)
        corners = [_corners(x_t, cx, cy, H, W)]
        out = corners[0][0]
        w = None
    else:
        x0, y0 = xp.floor(ix), xp.floor(iy)
        wx1, wy1 = ix - x0, iy - y0
        x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
        corners = [_corners(x_t, x0 + a, y0 + b, H, W) for b in (0, 1) for a in (0, 1)]
        wx0, wy0 = 1 - wx1, 1 - wy1
        out = (corners[0][0] * (wx0 * wy0)[..., None] + corners[1][0] * (wx1 * wy0)[..., None]
               + corners[2][0] * (wx0 * wy1)[..., None] + corners[3][0] * (wx1 * wy1)[..., None])
        w = (wx1, wy1)
    r = xp.ascontiguousarray(out.transpose(0, 3, 1, 2)).astype(xd.dtype)
    node = node_for(GridSampler2DBackward0, (input, grid))
    if node is not None:
        save(node, input, grid)
        node.mode, node.corners, node.w, node.dcoord = mode, corners, w, (gx, gy)
        node.coords = (ix, iy)
        node.padding_mode, node.align_corners = padding_mode, align_corners
    return finish(node, r)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """``torch.nn.functional.grid_sample`` (4-D): sample ``input`` at the (x, y) of ``grid`` in [-1, 1]."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    return _grid_sample(input, grid, mode, padding_mode, bool(align_corners))


class AffineGridGeneratorBackward0(OpNode):
    def backward(self, g):
        # base^T (3, H*W) @ g (N, H*W, 2), transposed: linear in g, so differentiable
        xp = xp_for(g)
        from .linalg import matmul
        base = self.base
        gt = finish(None, xp.ascontiguousarray(base.T).astype(g._data.dtype, copy=False))
        return matmul(gt, g.reshape(g.shape[0], base.shape[0], 2)).transpose(1, 2)


def _linspace(n, align_corners, dtype):
    xp = xp_for(n)
    if n <= 1:
        return xp.zeros(max(n, 0), dtype)
    r = xp.linspace(-1, 1, n, dtype=dtype)
    return r if align_corners else r * (n - 1) / n


def affine_grid_generator(theta, size, align_corners):
    xp = xp_for(theta, size)
    td = theta._data
    N, C, H, W = size
    xs, ys = _linspace(W, align_corners, td.dtype), _linspace(H, align_corners, td.dtype)
    xs, ys = xp.asarray(xs), xp.asarray(ys)
    base = xp.stack([xp.broadcast_to(xs[None, :], (H, W)), xp.broadcast_to(ys[:, None], (H, W)),
                     xp.ones((H, W), td.dtype)], axis=-1).reshape(H * W, 3)
    r = xp.matmul(base[None], xp.swapaxes(td, 1, 2)).reshape(N, H, W, 2)
    node = node_for(AffineGridGeneratorBackward0, (theta,))
    if node is not None:
        node.base = base
    return finish(node, arr(r))


def affine_grid(theta, size, align_corners=None):
    """``torch.nn.functional.affine_grid`` for 2-D transforms: theta (N, 2, 3) -> grid (N, H, W, 2)."""
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) != 4:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {list(size)}.")
    if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {list(size)}. "
                         f"Got {list(theta.shape)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {list(size)}")
    return affine_grid_generator(theta, [int(s) for s in size], bool(align_corners))


TENSOR_METHODS = {}
INPLACE = {}
