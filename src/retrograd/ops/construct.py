"""Construction and statistics functions: triangle indices, block_diag, cartesian_prod,
combinations, trapezoid rules, cov / corrcoef, pairwise distances (cdist, pdist), the signal
windows (bartlett, blackman, hamming, hann, kaiser) and unravel_index.

Most are compositions of differentiable ops (their nodes are the ones PyTorch's compositions
show); block_diag, cdist and pdist record one node of their own.
"""
import contextlib
import math

import numpy as np

from ._base import refuse_meta
from ._base import OpNode, node_for, save, save_output, finish, arr, Tensor, _dtype_name, wrap_dim, xp_for
from .. import _dtype as D
from .special import scaled     # (a Python number's product as PyTorch's C++ composites record it)

__all__ = ["tril_indices", "triu_indices", "block_diag", "cartesian_prod", "combinations", "trapezoid", "trapz",
           "cumulative_trapezoid", "cov", "corrcoef", "cdist", "pdist", "bartlett_window", "blackman_window",
           "hamming_window", "hann_window", "kaiser_window", "unravel_index"]


def _const(a):
    return finish(None, arr(np.asarray(a)))


def _const_on(a):
    """A constant tensor of the array ``a`` (host or device)."""
    return finish(None, arr(a))


def _factory_module(device):
    """(array module, context) that build a factory function's result where it lives: on
    ``device`` (the default device when None); NumPy for the CPU and the meta device."""
    from .. import _creation as C
    dev = C._DEFAULT_DEVICE[0] if device is None else device
    if dev is None:
        return np, contextlib.nullcontext()
    dev = C.to_device(dev)
    if dev.type != "cuda":
        return np, contextlib.nullcontext()
    xp = C.array_module(dev)
    return xp, xp.cuda.Device(dev.index or 0)


def _factory_result(data, device, requires_grad=False):
    from .._creation import _finish
    return _finish(data, requires_grad, device)


def _int_dtype(dtype, name):
    dt = D.int64 if dtype is None else D.to_dtype(dtype)
    if dt.np.kind not in "iu":
        raise NotImplementedError(f"\"{name}\" not implemented for '{_dtype_name(dt.np)}'")
    return dt


def _check_tri(row, col):
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) indices of the lower triangle of a row x col matrix, row by row."""
    dt = _int_dtype(dtype, "tril_indices")
    _check_tri(row, col)
    return _tri_indices("tril_indices", row, col, offset, dt, device)


def _tri_indices(name, row, col, offset, dt, device):
    xp, ctx = _factory_module(device)
    with ctx:
        if row > 0 and col > 0:
            r, c = getattr(xp, name)(row, offset, col)
            data = xp.stack([r, c]).astype(dt.np)
        else:
            data = xp.zeros((2, 0), dt.np)
    return _factory_result(data, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) indices of the upper triangle of a row x col matrix, row by row."""
    dt = _int_dtype(dtype, "triu_indices")
    _check_tri(row, col)
    return _tri_indices("triu_indices", row, col, offset, dt, device)


# --- block_diag ----------------------------------------------------------------------------

class BlockDiagBackward0(OpNode):
    def _apply(self, grads):
        g = grads[0]
        out = []
        for (r0, c0, shape, nd), live in zip(self.blocks, self.next_functions):
            if live[0] is None:
                out.append(None)
                continue
            piece = g[r0:r0 + shape[0], c0:c0 + shape[1]]
            out.append(piece.reshape(nd) if len(nd) != 2 else piece)
        return tuple(out)


def block_diag(*tensors):
    """The block-diagonal matrix of the given tensors (0-d: 1x1, 1-d: one row)."""
    mats = []
    for k, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            tn = type(t)
            qual = tn.__name__ if tn.__module__ == "builtins" else f"{tn.__module__}.{tn.__name__}"
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got {qual}")
        d = t._data
        if d.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {k} has "
                               f"{d.ndim} dimensions")
        mats.append(d.reshape(1, 1) if d.ndim == 0 else d.reshape(1, -1) if d.ndim == 1 else d)
    from ._base import result_np_dtype
    dt = result_np_dtype(*tensors) if mats else np.dtype(D._default[0].np)
    rows = sum(m.shape[0] for m in mats)
    cols = sum(m.shape[1] for m in mats)
    out = xp_for(tensors).zeros((rows, cols), dt)
    blocks = []
    r = c = 0
    for t, m in zip(tensors, mats):
        out[r:r + m.shape[0], c:c + m.shape[1]] = m
        blocks.append((r, c, m.shape, t._data.shape))
        r += m.shape[0]
        c += m.shape[1]
    node = node_for(BlockDiagBackward0, tensors) if dt.kind in "fcV" else None
    if node is not None:
        node.blocks = blocks
    return finish(node, out)


# --- cartesian products --------------------------------------------------------------------

def _check_1d(t):
    if t._data.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t._data.shape)}")


def cartesian_prod(*tensors):
    """All tuples of one element from each 1-D tensor, as rows (the input itself for one tensor)."""
    from .shape import stack, meshgrid
    for t in tensors:
        _check_1d(t)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.flatten() for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of a 1-D tensor's elements, as rows (itertools' order)."""
    from .shape import stack, meshgrid
    _check_1d(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _const_on(xp_for(input).zeros((0,), input._data.dtype))
    n = input._data.shape[0]
    # PyTorch's composite: the r-fold grid of views, each masked to its increasing (with
    # replacement, non-decreasing) index tuples, whose row-major order is itertools'
    grid = np.indices((n,) * r, sparse=True)
    mask = np.ones((n,) * r, bool)
    for a, b in zip(grid, grid[1:]):
        mask &= (a <= b) if with_replacement else (a < b)
    mask = _const_on(xp_for(input._data).asarray(mask))
    return stack([g.masked_select(mask) for g in meshgrid(*([input] * r), indexing="ij")], 1)


# --- trapezoid rules ---------------------------------------------------------------------

def _no_bool(name, y, x=None):
    if y._data.dtype == np.bool_ or (isinstance(x, Tensor) and x._data.dtype == np.bool_):
        which = "`x` or `y`" if isinstance(x, Tensor) else "`y`"
        raise RuntimeError(f"{name}: received a bool input for {which}, but bool is not supported")


def _float_y(y):
    if y._data.dtype.kind in "biu":
        return y.to(D._default[0])
    return y


def _dx_along(x, y, dim):
    """The spacing tensor from sample points ``x`` (1-D: along ``dim``; else broadcast with y)."""
    if x._data.ndim == 1:
        if x._data.shape[0] != y._data.shape[dim]:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        dx = x.diff()
        shape = [1] * y._data.ndim
        shape[dim] = dx._data.shape[0]
        return dx.view(*shape)
    return x.diff(dim=dim)


def _real_dx(name, dx):
    if isinstance(dx, complex):
        raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule along ``dim`` (sample points ``x``, or a constant spacing ``dx``)."""
    _real_dx("trapezoid", dx)
    yd = y._data
    dim = wrap_dim(dim, yd.ndim)
    if x is not None and dx is not None:
        raise RuntimeError("trapezoid: received both x and dx as arguments, but only one may be provided.")
    _no_bool("trapezoid", y, x)
    y = _float_y(y)
    n = yd.shape[dim]
    if x is not None and isinstance(x, Tensor):
        if n == 0:
            shape = yd.shape[:dim] + yd.shape[dim + 1:]
            return _const_on(xp_for(yd).zeros(shape, y._data.dtype))
        d = _dx_along(x, y, dim)
        return scaled((d * (y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1))).sum(dim), 2., divide=True)
    step = 1 if dx is None else dx
    if x is not None:   # a number given as x is the spacing
        step = x
    if n == 0:
        shape = yd.shape[:dim] + yd.shape[dim + 1:]
        return _const_on(xp_for(yd).zeros(shape, y._data.dtype))
    return scaled(y.sum(dim) - scaled(y.select(dim, 0) + y.select(dim, -1), 0.5), step)


def trapz(y, x=None, *, dx=None, dim=-1):
    """Alias of trapezoid."""
    if isinstance(dx, complex):     # (PyTorch's trapz takes a float dx: its argument parser refuses)
        raise TypeError("trapz() received an invalid combination of arguments - got (Tensor, dx=complex), but "
                        "expected one of:\n * (Tensor y, *, float dx = 1, int dim = -1)\n * (Tensor y, Tensor x, *, "
                        "int dim = -1)\n")
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid rule along ``dim`` (one element shorter than ``y`` there)."""
    _real_dx("cumulative_trapezoid", dx)
    yd = y._data
    dim = wrap_dim(dim, yd.ndim)
    if x is not None and dx is not None:
        raise RuntimeError("cumulative_trapezoid: received both x and dx as arguments, but only one may be "
                           "provided.")
    _no_bool("cumulative_trapezoid", y, x)
    y = _float_y(y)
    n = yd.shape[dim]
    m = max(n - 1, 0)
    left, right = y.narrow(dim, 0, m), y.narrow(dim, min(1, n), m)
    if x is not None and isinstance(x, Tensor):
        if x._data.ndim == 1 and x._data.shape[0] != n:
            raise RuntimeError("cumulative_trapezoid: There must be one `x` value for each sample point")
        d = _dx_along(x, y, dim)
        return scaled((d * (left + right)).cumsum(dim), 2., divide=True)
    step = 1 if dx is None else dx
    if x is not None:
        step = x
    return scaled(left + right, step / 2.).cumsum(dim)


# --- covariance ------------------------------------------------------------------------------

def _check_cov_weights(name, t, kinds, kind_word, n_obs):
    """PyTorch's checks of cov()'s ``fweights`` / ``aweights``: one or fewer dimensions, the
    dtype kind, one weight per observation, none negative."""
    a = t._data
    if a.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                           f"{a.ndim} dimensions")
    if a.dtype.kind not in kinds:
        raise RuntimeError(f"cov(): expected {name} to have {kind_word} dtype but got {name} with "
                           f"{_dtype_name(a.dtype)} dtype")
    if a.size != n_obs:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                           f"input but got {a.size} != {n_obs}")
    if a.size and not bool(a.min() >= 0):   # (a nan weight fails the check too, as PyTorch's min() >= 0)
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (observations in columns)."""
    import warnings
    d = input._data
    if d.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with {d.ndim} "
                           "dimensions")
    if d.dtype == np.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input if d.ndim == 2 else input.view(1, -1)
    if d.dtype.kind in "biu":
        x = x.to(D._default[0])
    n_obs = x._data.shape[1]
    w = None
    if fweights is not None:
        _check_cov_weights("fweights", fweights, "iu", "integral", n_obs)
        w = fweights
    if aweights is not None:
        _check_cov_weights("aweights", aweights, "fV", "floating point", n_obs)
        w = aweights if w is None else w * aweights
    if w is not None:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    else:
        w_sum = n_obs
        avg = x.sum(1) / n_obs          # (PyTorch's: a sum divided by the count, DivBackward0)
    if w is None:
        norm = w_sum - correction
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    else:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    nv = float(norm._data) if isinstance(norm, Tensor) else float(norm)
    if nv <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm.clamp_min(0) if isinstance(norm, Tensor) else 0
    xm = x - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    c = xm.mm(xw.t().conj() if xw.is_complex() else xw.t())
    return (c / norm).squeeze()


def corrcoef(input):
    """Pearson correlation coefficients of the rows of ``input`` (clipped to [-1, 1])."""
    c = cov(input)
    if c._data.ndim == 0:
        return c / c
    dg = c.diagonal()
    std = (dg.real if dg.is_complex() else dg).sqrt()
    c = c / std.view(-1, 1)
    c = c / std.view(1, -1)
    if c.is_complex():
        return c
    return c.clamp(-1, 1)


# --- pairwise distances --------------------------------------------------------------------

def _dist_grad(g, diff, dist, p):
    """d dist / d (x_a - x_b) times g, for dist = ||x_a - x_b||_p (zero where dist is 0, as PyTorch)."""
    from .index import where
    gd = g.unsqueeze(-1)
    dd = dist.unsqueeze(-1)
    xp = xp_for(diff)
    zero = _const_on(xp.zeros((), diff._data.dtype))
    if p == 0:
        return diff * 0
    if p == 1:
        return gd * diff.sign()
    if p == 2:
        safe = where(_const_on(dd._data == 0), _const_on(xp.ones((), dd._data.dtype)), dd)
        return where(_const_on(dd._data == 0), zero, gd * diff / safe)
    if math.isinf(p):
        mask = _const_on((abs(diff._data) == dd._data).astype(diff._data.dtype))
        return gd * diff.sign() * mask
    safe = where(_const_on(dd._data == 0), _const_on(xp.ones((), dd._data.dtype)), dd)
    r = gd * diff.sign() * diff.abs() ** (p - 1) / safe ** (p - 1)
    return where(_const_on(dd._data == 0), zero, r)


def _minkowski_np(diff, p):
    a = abs(diff)
    with np.errstate(all="ignore"):
        if p == 0:
            return (a != 0).sum(-1).astype(diff.dtype)
        if p == 1:
            return a.sum(-1)
        if p == 2:
            return xp_for(a).sqrt((a * a).sum(-1))
        if math.isinf(p):
            # (no reduction's initial= in CuPy: an empty row's maximum is 0 by hand)
            return a.max(-1) if a.shape[-1] else xp_for(a).zeros(a.shape[:-1], a.dtype)
        return (a ** p).sum(-1) ** (1 / p)


class CdistBackward0(OpNode):
    def backward(self, g):
        x1, x2, res = self.saved_tensors
        nf = self.next_functions
        diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
        gdiff = _dist_grad(g, diff, res, self.p)
        g1 = gdiff.sum(-2) if nf[0][0] is not None else None
        g2 = -gdiff.sum(-3) if nf[1][0] is not None else None
        if g1 is not None and g1._data.shape != x1._data.shape:
            g1 = g1.sum_to_size(x1._data.shape)
        if g2 is not None and g2._data.shape != x2._data.shape:
            g2 = g2.sum_to_size(x2._data.shape)
        return g1, g2


def _euclid_mm(x1, x2):
    """||a - b|| through one matrix product (PyTorch's 'use_mm_for_euclid_dist' route):
    [-2a, |a|^2, 1] . [b, 1, |b|^2], clamped at 1e-30 before the square root."""
    from .shape import cat
    n1 = (x1 * x1).sum(-1, keepdim=True)
    n2 = (x2 * x2).sum(-1, keepdim=True)
    xp = xp_for(n1)
    one1 = _const_on(xp.ones(n1._data.shape, n1._data.dtype))
    one2 = _const_on(xp.ones(n2._data.shape, n2._data.dtype))
    a = cat([x1 * -2, n1, one1], -1)
    b = cat([x2, one2, n2], -1)
    return (a @ b.mT).clamp_min(1e-30).sqrt()


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Pairwise p-norm distances between the rows of ``x1`` and ``x2`` (batched, broadcasting)."""
    a, b = x1._data, x2._data
    if a.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {a.ndim}D")
    if b.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {b.ndim}D")
    if a.dtype.kind not in "f":
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {_dtype_name(a.dtype)}")
    if b.dtype.kind not in "f":
        raise RuntimeError(f"cdist only supports floating-point dtypes, X2 got: {_dtype_name(b.dtype)}")
    if a.dtype == np.float16 or b.dtype == np.float16:
        raise NotImplementedError("\"cdist\" not implemented for 'Half'")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {a.shape[-1]} X2: {b.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    modes = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")
    if compute_mode not in modes:
        raise RuntimeError(f"{compute_mode} is not a valid value for compute_mode")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    r1, r2 = a.shape[-2], b.shape[-2]
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or
                         (compute_mode == modes[0] and (r1 > 25 or r2 > 25)))
    if use_mm and r1 and r2 and a.shape[-1]:
        e1 = x1.expand(*batch, r1, a.shape[-1]) if a.shape[:-2] != batch else x1
        e2 = x2.expand(*batch, r2, b.shape[-1]) if b.shape[:-2] != batch else x2
        flat1 = e1.reshape(-1, r1, a.shape[-1])
        flat2 = e2.reshape(-1, r2, b.shape[-1])
        return _euclid_mm(flat1, flat2).view(*batch, r1, r2)
    diff = a[..., :, None, :] - b[..., None, :, :]
    xp = xp_for(a, b)
    res = _minkowski_np(diff, p).astype(np.result_type(a.dtype, b.dtype), copy=False)
    if res.shape != batch + (r1, r2):   # (broadcast_to of the full shape is a read-only view: kept as is)
        res = xp.ascontiguousarray(xp.broadcast_to(res, batch + (r1, r2)))
    node = node_for(CdistBackward0, (x1, x2))
    out = finish(node, res)
    if node is not None:
        node.p = float(p)
        save(node, x1, x2)
        save_output(node, out)
    return out


class PdistBackward0(OpNode):
    def backward(self, g):
        x, res = self.saved_tensors
        from .index import put_np
        n = x._data.shape[0]
        r, c = xp_for(x).triu_indices(n, 1)
        G = put_np(g, (n, n), (r, c), accumulate=False)
        D_ = put_np(res, (n, n), (r, c), accumulate=False)
        diff = x.unsqueeze(1) - x.unsqueeze(0)
        gdiff = _dist_grad(G, diff, D_, self.p)
        return gdiff.sum(1) - gdiff.sum(0)


def pdist(input, p=2):
    """The p-norm distances between all pairs of rows (i < j) of a 2-D tensor, row by row."""
    x = input._data
    if x.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    if x.dtype.kind not in "f":
        raise RuntimeError(f"pdist only supports floating-point dtypes, got: {_dtype_name(x.dtype)}")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if x.dtype == np.float16:
        raise NotImplementedError("\"pdist\" not implemented for 'Half'")
    n = x.shape[0]
    xp = xp_for(x)
    r, c = xp.triu_indices(n, 1)
    res = _minkowski_np(x[r] - x[c], p).astype(x.dtype, copy=False) if r.size else xp.zeros(0, x.dtype)
    node = node_for(PdistBackward0, (input,))
    out = finish(node, xp.ascontiguousarray(res))
    if node is not None:
        node.p = float(p)
        save(node, input)
        save_output(node, out)
    return out


# --- windows -------------------------------------------------------------------------------

def _window(name, window_length, periodic, dtype, requires_grad, fn, device=None, steps=False):
    """``fn(xp, k, n)`` over the sample points k = 0..n-1 (n one longer where periodic, the last
    dropped). With ``steps``, ``fn(xp, k, n, R)`` follows PyTorch's sequence of tensor operations
    in the dtype: k is ``arange(n)`` in the dtype's compute type and ``R`` rounds each step's
    result to the dtype (PyTorch's windows are such sequences, so a difference of nearly equal
    terms cancels as it does there: blackman_window(5)[0] is 0.08 - 0.5 + 0.42 in float32,
    -2.98e-08, not 0); else k is float64 and the values are rounded once, at the end."""
    dt = D._default[0] if dtype is None else D.to_dtype(dtype)
    if dt.np.kind not in "fV":
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype={_c10_name(dt.np)}, "
                           "device=cpu, layout=Strided (default), requires_grad=false (default), pinned_memory=false, "
                           "memory_format=(nullopt))")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    xp, ctx = _factory_module(device)
    with ctx:
        if window_length == 0:
            w = xp.zeros(0)
        elif window_length == 1:
            w = xp.ones(1)
        else:
            n = window_length + 1 if periodic else window_length
            if steps:
                # (float16/bfloat16 steps are computed in float32 and rounded, as PyTorch's CPU ops do)
                ct = np.dtype(np.float64) if dt.np == np.float64 else np.dtype(np.float32)

                def R(a):
                    return a.astype(dt.np).astype(ct) if dt.np != ct else a
                w = fn(xp, R(xp.arange(n, dtype=ct)), n, R)
            else:
                w = fn(xp, xp.arange(n, dtype=np.float64), n)
            if periodic:
                w = w[:-1]
        data = w.astype(dt.np)
    return _factory_result(data, device, requires_grad)


def _cos(xp, a, R):
    """cos in a's dtype, from float64's cosine rounded once (an error under an ulp, the same on
    every CPU, where float32 SIMD cosines differ from each other by an ulp)."""
    return R(xp.cos(a.astype(np.float64)).astype(a.dtype))


def _hamming(alpha, beta):
    # PyTorch: arange(n).mul_(2 pi / (n - 1)).cos_().mul_(-beta).add_(alpha)
    def fn(xp, k, n, R):
        ct = k.dtype.type
        w = _cos(xp, R(k * ct(np.pi * 2.0 / (n - 1))), R)
        return R(R(w * ct(-beta)) + ct(alpha))
    return fn


def _c10_name(npdt):
    return {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool", "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}.get(npdt.name,
                                                                                                         npdt.name)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window 0.5 - 0.5 cos(2 pi n / (N - 1)) (periodic: one longer, last dropped)."""
    return _window("hann_window", window_length, periodic, dtype, requires_grad, _hamming(0.5, 0.5), device,
                   steps=True)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """The Hamming window alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming_window", window_length, periodic, dtype, requires_grad, _hamming(alpha, beta), device,
                   steps=True)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    def fn(xp, k, n, R):
        # PyTorch: w = arange(n).mul_(pi / (n - 1)); w.mul(4).cos_().mul_(0.08) - w.mul(2).cos_().mul_(0.5) + 0.42
        ct = k.dtype.type
        w = R(k * ct(np.pi / (n - 1)))
        a = R(_cos(xp, R(w * ct(4)), R) * ct(0.08))
        b = R(_cos(xp, R(w * ct(2)), R) * ct(0.5))
        return R(R(a - b) + ct(0.42))
    return _window("blackman_window", window_length, periodic, dtype, requires_grad, fn, device, steps=True)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangular Bartlett window 1 - |2n / (N - 1) - 1|."""
    def fn(xp, k, n, R):
        # PyTorch: w = arange(n).mul_(2 / (n - 1)); its second half (from (n - 1) // 2 + 1) .mul_(-1).add_(2)
        ct = k.dtype.type
        w = R(k * ct(2.0 / (n - 1)))
        h = (n - 1) // 2 + 1
        w[h:] = R(R(-w[h:]) + ct(2))
        return w
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad, fn, device, steps=True)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    """The Kaiser window I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), a = (N - 1) / 2."""
    def fn(xp, k, n):
        a = (n - 1) / 2
        # (I0(beta) a host number: NumPy's i0 of a Python float)
        return xp.i0(beta * xp.sqrt(xp.clip(1 - ((k - a) / a) ** 2, 0, None))) / float(np.i0(beta))
    return _window("kaiser_window", window_length, periodic, dtype, requires_grad, fn, device)


# --- unravel_index -----------------------------------------------------------------------

def unravel_index(indices, shape):
    """The coordinates (a tuple of int64 tensors) of flat ``indices`` in an array of ``shape``."""
    if not isinstance(indices, Tensor):
        raise AttributeError(f"'{type(indices).__name__}' object has no attribute 'is_complex'")
    d = indices._data
    if d.dtype.kind not in "iu" or d.dtype == np.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {_torch_dtype(d.dtype)}")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    for s in shape:
        if s < 0:
            raise ValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    xp = xp_for(d)
    idx = d.astype(np.int64)
    stride = 1
    coords = []
    for s in reversed(shape):
        coords.append(idx // stride % s if s else xp.zeros_like(idx))
        stride *= s
    # as PyTorch: one (..., len(shape)) tensor of coordinates, unbound along its last dim (views)
    stacked = _const_on(xp.stack(coords[::-1], -1).astype(np.int64) if coords
                        else xp.zeros(idx.shape + (0,), np.int64))
    return tuple(stacked.unbind(-1))


def _torch_dtype(npdt):
    return "torch." + {"float64": "float64", "float32": "float32", "float16": "float16", "bool": "bool",
                       "complex64": "complex64", "complex128": "complex128"}.get(npdt.name, npdt.name)


def _cov_method(self, *, correction=1, fweights=None, aweights=None):
    return cov(self, correction=correction, fweights=fweights, aweights=aweights)


combinations, unravel_index, pdist = refuse_meta(combinations), refuse_meta(unravel_index), refuse_meta(pdist)
cdist, block_diag = refuse_meta(cdist), refuse_meta(block_diag)

TENSOR_METHODS = {"cov": _cov_method, "corrcoef": corrcoef}
INPLACE = {}
