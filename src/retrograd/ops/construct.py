"""Tensors assembled from others, and integrals and distances over them: cartesian_prod,
combinations, block_diag, vander, tril_indices/triu_indices, trapezoid/trapz/
cumulative_trapezoid and cdist. Most are PyTorch composites, written with retrograd's ops so
that their gradients (and grad_fn names) come out as PyTorch's."""
import itertools
import math

import numpy as np

from ._base import OpNode, node_for, save, save_output, finish, arr, Tensor, wrap_dim
from .. import _dtype as D

__all__ = ["cartesian_prod", "combinations", "block_diag", "vander", "tril_indices", "triu_indices",
           "trapezoid", "trapz", "cumulative_trapezoid", "cdist", "cov", "corrcoef", "hann_window", "hamming_window",
           "blackman_window", "bartlett_window", "kaiser_window", "unravel_index", "fill", "detach", "is_nonzero",
           "is_same_size", "is_signed"]

_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
          "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _const(a):
    return finish(None, arr(np.asarray(a)))


def _vector(t):
    if t._data.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t._data.shape)}")


def cartesian_prod(*tensors):
    """All tuples of one element from each 1-D tensor, as rows (a single tensor: itself)."""
    for t in tensors:
        _vector(t)
    if len(tensors) == 1:
        return tensors[0]
    from .shape import meshgrid, stack
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the 1-D ``input``'s elements, as rows."""
    _vector(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return finish(None, arr(np.empty(0, input._data.dtype)))
    from .shape import stack
    gen = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(gen(range(input._data.shape[0]), r)), np.int64).reshape(-1, r)
    return stack([input[_const(idx[:, j])] for j in range(r)], 1)


class BlockDiagBackward0(OpNode):
    def backward(self, g):
        nf = self.next_functions if isinstance(self.next_functions, tuple) else (self.next_functions,)
        grads = []
        for k, (r0, c0, shape, dt) in enumerate(self.blocks):
            if nf[k][0] is None:
                grads.append(None)
                continue
            rows = shape[0] if len(shape) == 2 else 1
            cols = shape[-1] if len(shape) >= 1 else 1
            piece = g[r0:r0 + rows, c0:c0 + cols].reshape(shape)
            grads.append(piece if str(piece.dtype) == str(dt) else piece.to(dt))
        return tuple(grads) if len(grads) > 1 else grads[0]


def block_diag(*tensors):
    """The tensors (0-d, 1-d as a row, or 2-d) placed along the diagonal of a 2-d tensor."""
    from ._base import result_np_dtype
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
        if t._data.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t._data.ndim} dimensions")
    dt = result_np_dtype(*tensors) if tensors else D._default[0].np
    mats = [t._data.reshape(1, -1) if t._data.ndim < 2 else t._data for t in tensors]
    if not mats:  # PyTorch's block_diag() is a 1 x 0 tensor
        return finish(None, arr(np.empty((1, 0), dt)))
    rows, cols = sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)
    out = np.zeros((rows, cols), dt)
    blocks = []
    r0 = c0 = 0
    for t, m in zip(tensors, mats):
        out[r0:r0 + m.shape[0], c0:c0 + m.shape[1]] = m
        blocks.append((r0, c0, t._data.shape, t.dtype))
        r0, c0 = r0 + m.shape[0], c0 + m.shape[1]
    node = node_for(BlockDiagBackward0, tensors) if dt.kind in "fcV" else None
    if node is not None:
        node.blocks = blocks
    return finish(node, arr(out))


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of the 1-D ``x``: columns x**(N-1), ..., x, 1 (``increasing``:
    the other way round)."""
    if x._data.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x._data.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    from .._creation import ones
    from .shape import flip
    from .reduce import cumprod
    res = ones((x._data.shape[0], n), dtype=D.int64 if x._data.dtype.kind in "iub" else x.dtype)
    if n > 1:
        xs = x.to(res.dtype) if str(x.dtype) != str(res.dtype) else x
        res[:, 1:] = cumprod(xs.unsqueeze(1).repeat(1, n - 1), 1)
    return res if increasing else flip(res, (1,))


def _tri_indices(name, row, col, offset, dtype, fn, device=None):
    from .._dtype import int64, int32
    dtype = int64 if dtype is None else dtype
    if dtype not in (int64, int32):
        raise NotImplementedError(f"\"{name}\" not implemented for '{_NAMES.get(dtype.name, dtype.name)}'")
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    r, c = fn(row, offset, col) if row and col else (np.empty(0, np.int64), np.empty(0, np.int64))
    res = finish(None, arr(np.stack([r, c]).astype(dtype.np)))
    return res if device is None else res.to(device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) row and column indices of the lower triangle of a row x col matrix."""
    return _tri_indices("tril_indices", row, col, offset, dtype, np.tril_indices, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) row and column indices of the upper triangle of a row x col matrix."""
    return _tri_indices("triu_indices", row, col, offset, dtype, np.triu_indices, device)


# *** products with a number, as PyTorch's C++ composites record them ***

class MulBackward1(OpNode):
    """``tensor * number`` (PyTorch's mul.Scalar node, as its C++ composites record it)."""

    def backward(self, g):
        return g * self.c


class DivBackward1(OpNode):
    """``tensor / number`` (PyTorch's div.Scalar node)."""

    def backward(self, g):
        return g / self.c


def scaled(t, c, divide=False):
    """``t * c`` (or ``t / c``) for a Python number ``c``, recorded as MulBackward1/DivBackward1."""
    x = t._data
    with np.errstate(all="ignore"):
        r = x / x.dtype.type(c) if divide else x * x.dtype.type(c)
    node = node_for(DivBackward1 if divide else MulBackward1, (t,))
    if node is not None:
        node.c = c
    return finish(node, arr(np.asarray(r, x.dtype)))


# *** trapezoid rule ***

def _float_y(y, x, name):
    if y._data.dtype.kind == "b" or (isinstance(x, Tensor) and x._data.dtype.kind == "b"):
        which = "`x` or `y`" if isinstance(x, Tensor) else "`y`"
        raise RuntimeError(f"{name}: received a bool input for {which}, but bool is not supported")
    return y.to(D._default[0]) if y._data.dtype.kind in "iu" else y


def _spacing(x, y, d):
    """The spacings of ``x`` along ``d``, shaped to broadcast against ``y``'s intervals."""
    xd = x.diff(dim=-1) if x._data.ndim == 1 else x.diff(dim=d)
    if x._data.ndim == 1:
        shape = [1] * y._data.ndim
        shape[d] = xd._data.shape[0]
        xd = xd.reshape(shape)
    return xd


def _pairs(y, d):
    n = y._data.shape[d]
    if n == 0:
        return y, y
    return y.narrow(d, 1, n - 1), y.narrow(d, 0, n - 1)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid-rule integral of ``y`` along ``dim``: over the points ``x``, or with
    uniform spacing ``dx`` (default 1)."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: both x and dx given")
    d = wrap_dim(dim, y._data.ndim)
    y = _float_y(y, x, "trapezoid")
    n = y._data.shape[d]
    if n == 0:  # a fresh zero tensor, as PyTorch's (not part of the graph)
        return finish(None, arr(np.zeros(y._data.shape[:d] + y._data.shape[d + 1:], y._data.dtype)))
    if isinstance(x, Tensor):
        if x._data.ndim == 1 and x._data.shape[0] != n:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        right, left = _pairs(y, d)
        return scaled((_spacing(x, y, d) * (right + left)).sum(d), 2.0, divide=True)
    step = 1.0 if dx is None else dx
    return scaled(y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5, step)


def trapz(y, x=None, *, dx=None, dim=-1):
    """``trapezoid`` (PyTorch's older name)."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid-rule integral of ``y`` along ``dim`` (one fewer element)."""
    from .reduce import cumsum
    d = wrap_dim(dim, y._data.ndim)
    y = _float_y(y, x, "cumulative_trapezoid")
    right, left = _pairs(y, d)
    if isinstance(x, Tensor):
        return scaled(cumsum(_spacing(x, y, d) * (right + left), d), 2.0, divide=True)
    step = 1.0 if dx is None else dx
    return cumsum((right + left) * (step / 2.0), d)


# *** cdist ***

class CdistBackwardBackward0(OpNode):
    def backward(self, gg):
        raise NotImplementedError("the derivative for '_cdist_backward' is not implemented.")


class CdistBackward0(OpNode):
    def backward(self, g):
        x1, x2, dist = self.saved_tensors
        nf = self.next_functions
        a, b, r, p = x1._data, x2._data, dist._data, self.p
        with np.errstate(all="ignore"):
            diff = a[..., :, None, :] - b[..., None, :, :]
            dd = r[..., None]
            if p == 0:
                w = np.zeros_like(diff)
            elif p == 1:
                w = np.sign(diff)
            elif p == 2:
                w = np.where(dd == 0, 0, diff / dd)
            elif math.isinf(p):
                # the indicator |d| == dist as 1 - min(1, ceil(||d| - dist|)): NaN when both are infinite
                w = np.sign(diff) * (1 - np.minimum(1, np.ceil(np.abs(np.abs(diff) - dd))))
            elif p < 2:
                w = np.where((dd == 0) | ((diff == 0) & (p < 1)), 0,
                             np.sign(diff) * np.abs(diff) ** (p - 1) / dd ** (p - 1))
            else:
                w = np.where(dd == 0, 0, diff * np.abs(diff) ** (p - 2) / dd ** (p - 1))
            contrib = g._data[..., None] * w
        outs = []
        for k, (arr_, axis, sign) in enumerate(((a, -2, 1), (b, -3, -1))):
            if nf[k][0] is None:
                outs.append(None)
                continue
            v = sign * contrib.sum(axis)
            # summed back over broadcast batch dimensions
            while v.ndim > arr_.ndim:
                v = v.sum(0)
            for i, s in enumerate(arr_.shape[:-2]):
                if s == 1 and v.shape[i] != 1:
                    v = v.sum(i, keepdims=True)
            node = node_for(CdistBackwardBackward0, (g, x1, x2, dist))
            outs.append(finish(node, arr(v.astype(arr_.dtype))))
        return tuple(outs)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distances between the rows of ``x1`` (..., P, M) and ``x2`` (..., R, M)."""
    a, b = x1._data, x2._data
    if a.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {a.ndim}D")
    if b.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {b.ndim}D")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {a.shape[-1]} X2: {b.shape[-1]}")
    for t, nm in ((a, "X1"), (b, "X2")):
        if t.dtype.kind not in "f":
            raise RuntimeError(f"cdist only supports floating-point dtypes, {nm} got: {_NAMES.get(t.dtype.name)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    modes = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    P, R = a.shape[-2], b.shape[-2]
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode == modes[0] and (P > 25 or R > 25)))
    if use_mm:  # PyTorch's matrix-product form: |a|^2 + |b|^2 - 2 a.b, clamped at 0, square-rooted
        from .linalg import matmul
        from .pointwise import clamp_min
        n1 = (x1 * x1).sum(-1, keepdim=True)
        n2 = (x2 * x2).sum(-1, keepdim=True)
        sq = n1 - matmul(x1, x2.mT) * 2 + n2.mT
        res = clamp_min(sq, 0).sqrt()
        return res.view(res.shape)
    with np.errstate(all="ignore"):
        diff = np.abs(a[..., :, None, :] - b[..., None, :, :])
        if p == 0:  # min(ceil(|d|), 1) summed: a NaN difference gives NaN
            r = np.minimum(np.ceil(diff), 1).sum(-1)
        elif math.isinf(p):  # a running max from 0 that a NaN never replaces
            r = np.fmax.reduce(diff, axis=-1, initial=0.0) if diff.shape[-1] else np.zeros(diff.shape[:-1])
        elif p == 1:
            r = diff.sum(-1)
        elif p == 2:
            r = np.sqrt((diff * diff).sum(-1))
        else:
            r = (diff ** p).sum(-1) ** (1.0 / p)
    r = np.asarray(r, a.dtype)
    node = node_for(CdistBackward0, (x1, x2))
    res = finish(node, arr(r))
    if node is not None:
        node.p = float(p)
        save(node, x1, x2)
        save_output(node, res)
    return res


# *** covariance and correlation ***

def _weights(w, n, name, integral):
    x = w._data
    if x.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                           f"{x.ndim} dimensions")
    if x.size != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                           f"but got {x.size} != {n}")
    if integral and x.dtype.kind not in "iu":
        raise RuntimeError(f"cov(): expected {name} to have integral dtype but got {name} with "
                           f"{_NAMES.get(x.dtype.name, x.dtype.name)} dtype")
    if not integral and x.dtype.kind not in "fV":
        raise RuntimeError(f"cov(): expected {name} to have floating point dtype but got {name} with "
                           f"{_NAMES.get(x.dtype.name, x.dtype.name)} dtype")
    if x.size and x.min() < 0:
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in ``input``'s rows (observations in columns),
    optionally with frequency and importance weights; a 1-D input is one variable."""
    import warnings
    from .linalg import mm
    x = input._data
    if x.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{x.ndim} dimensions")
    if x.dtype.kind == "b":
        raise RuntimeError("cov(): bool dtype is not supported for input")
    m = input.reshape(1, -1) if x.ndim < 2 else input
    n = m._data.shape[1]
    w = None
    if fweights is not None:
        _weights(fweights, n, "fweights", True)
        w = fweights
    if aweights is not None:
        _weights(aweights, n, "aweights", False)
        w = aweights if w is None else w * aweights
    if x.dtype.kind in "iub":
        m = m.to(D._default[0])
    w_sum = w.sum() if w is not None else n
    if w is not None and float(w_sum._data) == 0:
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (m * w if w is not None else m).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if float(norm._data if isinstance(norm, Tensor) else norm) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm * 0
    centered = m - avg.unsqueeze(1)
    c = mm(centered, (centered * w if w is not None else centered).t())
    return (c / norm).squeeze()


def corrcoef(input):
    """The Pearson correlation coefficients of the variables in ``input``'s rows, in [-1, 1]."""
    from .pointwise import clip
    c = cov(input)
    if c._data.ndim == 0:
        return c / c
    sd = c.diagonal().sqrt()
    c = c / sd.reshape(-1, 1)
    c = c / sd.reshape(1, -1)
    return clip(c, -1, 1)


# *** window functions ***

def _window(name, length, periodic, dtype, values):
    from .._creation import tensor
    dt = D._default[0] if dtype is None else dtype
    if dt.np.kind not in "fV":
        from ._linear import _CN
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype="
                           f"{_CN.get(dt.np.name, dt.np.name)}, device=cpu, layout=Strided (default), requires_grad="
                           "false (default), pinned_memory=false, memory_format=(nullopt))")
    if length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={length}")
    if length <= 1:
        return tensor(np.ones(length), dtype=dt)
    m = length + 1 if periodic else length  # a periodic window is the symmetric one of length + 1, cut
    n = np.arange(length, dtype=np.float64)
    return tensor(values(n, m - 1), dtype=dt)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window: 1/2 - 1/2 cos(2 pi n / (N - 1))."""
    t = _window("hann_window", window_length, periodic, dtype, lambda n, d: 0.5 - 0.5 * np.cos(2 * np.pi * n / d))
    return t.requires_grad_(requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """The Hamming window: alpha - beta cos(2 pi n / (N - 1))."""
    t = _window("hamming_window", window_length, periodic, dtype,
                lambda n, d: alpha - beta * np.cos(2 * np.pi * n / d))
    return t.requires_grad_(requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window: 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    t = _window("blackman_window", window_length, periodic, dtype,
                lambda n, d: 0.42 - 0.5 * np.cos(2 * np.pi * n / d) + 0.08 * np.cos(4 * np.pi * n / d))
    return t.requires_grad_(requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Bartlett (triangular) window: 1 - |2n / (N - 1) - 1|."""
    t = _window("bartlett_window", window_length, periodic, dtype, lambda n, d: 1 - np.abs(2 * n / d - 1))
    return t.requires_grad_(requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    """The Kaiser window: i0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / i0(beta)."""
    t = _window("kaiser_window", window_length, periodic, dtype,
                lambda n, d: np.i0(beta * np.sqrt(np.maximum(1 - (2 * n / d - 1) ** 2, 0))) / np.i0(beta))
    return t.requires_grad_(requires_grad)


# *** small utilities of the torch namespace ***

def unravel_index(indices, shape):
    """The coordinates, in an array of ``shape``, of each flat index (taken modulo its size)."""
    if not isinstance(indices, Tensor):
        from .._creation import tensor
        indices = tensor(indices)
    if indices._data.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    total = int(np.prod(shape)) if shape else 1
    flat = indices._data.astype(np.int64) % max(total, 1)
    coords = np.unravel_index(flat, shape) if shape else ()
    return tuple(finish(None, arr(np.asarray(c, np.int64))) for c in coords)


class FillBackward0(OpNode):
    def backward(self, g):
        from ._base import zeros_grad
        return zeros_grad(g)


def fill(input, value):
    """A tensor like ``input`` filled with the number ``value`` (out of place; zero gradient)."""
    v = value.item() if isinstance(value, Tensor) else value
    x = input._data
    r = np.full(x.shape, v).astype(x.dtype) if x.dtype.kind != "b" else np.full(x.shape, bool(v))
    return finish(node_for(FillBackward0, (input,)), arr(r))


def detach(input):
    """``input.detach()``."""
    return input.detach()


def is_nonzero(input):
    """The truth value of a one-element tensor."""
    if input._data.size == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input._data.size > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input._data.reshape(-1)[0] != 0)


def is_same_size(input, other):
    """Whether the two tensors have the same shape."""
    return tuple(input._data.shape) == tuple(other._data.shape)


def is_signed(input):
    """Whether the dtype is signed (every dtype but bool and uint8)."""
    return input._data.dtype.kind not in "bu"


TENSOR_METHODS = {"cov": cov, "corrcoef": corrcoef, "is_nonzero": is_nonzero, "is_same_size": is_same_size,
                  "is_signed": is_signed}
INPLACE = {}
