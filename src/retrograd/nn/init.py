"""Weight initialisation, with PyTorch's distributions, bounds and gains.

Every function fills its tensor in place without recording history and returns it.
"""
import math
import warnings

import numpy as np

from ..autograd import grad_mode

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
           "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_", "sparse_", "uniform", "normal", "constant", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal"]


def _fill(tensor, values):
    with grad_mode.no_grad():
        d = tensor._data
        if d.ndim == 0:
            d[()] = values
        else:
            d[...] = values
        tensor._bump_version()
    return tensor


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (PyTorch's table)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    elif nonlinearity == "tanh":
        return 5.0 / 3
    elif nonlinearity == "relu":
        return math.sqrt(2.0)
    elif nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    elif nonlinearity == "selu":
        return 3.0 / 4
    else:
        raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b)."""
    with grad_mode.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std**2)."""
    with grad_mode.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std**2) truncated to [a, b], by rejection as PyTorch: when the
    interval holds more than 30% of the mass, normal draws of the whole tensor redrawn where
    out of bounds; otherwise uniform proposals on [a, b] accepted with probability
    pdf / pdf(mode), whole-tensor rounds until every element is accepted."""
    if tensor.is_meta:          # no values to draw
        return tensor

    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    with grad_mode.no_grad():
        d = tensor._data
        if norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std) > 0.3:
            lo, hi = (d.dtype.type(v) for v in (a, b))     # (bounds in the tensor's dtype)
            tensor.normal_(mean, std, generator=generator)
            r = d.copy()
            while True:
                out = (r < lo) | (r > hi)
                if not out.any():
                    break
                fresh = tensor.new_empty(tensor.shape).normal_(mean, std, generator=generator)._data
                r = np.where(out, fresh, r)
            _fill(tensor, r)
            return tensor
        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2
        buf = tensor.new_empty(tensor.shape)

        def log_ratio(x):   # log(pdf(x) / pdf(mode)), in the tensor's dtype
            z = (x - d.dtype.type(mean)) / d.dtype.type(std)
            return z * z * d.dtype.type(-0.5) - d.dtype.type(log_peak)

        def rejected(cand):
            with np.errstate(divide="ignore"):
                return np.log(buf.uniform_(generator=generator)._data) > log_ratio(cand)

        tensor.uniform_(a, b, generator=generator)
        r = d.copy()
        pending = rejected(r)
        while pending.any():
            cand = buf.uniform_(a, b, generator=generator)._data.copy()
            r = np.where(pending, cand, r)
            pending = np.where(pending, rejected(cand), pending)
        _fill(tensor, r)
    return tensor


def constant_(tensor, val):
    """Fill with ``val``."""
    return _fill(tensor, val)


def ones_(tensor):
    return _fill(tensor, 1)


def zeros_(tensor):
    return _fill(tensor, 0)


def eye_(tensor):
    """Fill a 2-D tensor with the identity."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tensor._data.shape))


def dirac_(tensor, groups=1):
    """Fill a {3,4,5}-D tensor with the Dirac delta (identity convolution)."""
    dimensions = tensor.ndim
    if dimensions not in [3, 4, 5]:
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor._data.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    z = np.zeros(sizes)
    for g in range(groups):
        for d in range(min_dim):
            z[(g * out_chans_per_grp + d, d) + tuple(s // 2 for s in sizes[2:])] = 1
    return _fill(tensor, z)


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    if tensor.dim() > 2:
        for s in tensor.shape[2:]:
            receptive_field_size *= s
    fan_in = num_input_fmaps * receptive_field_size
    fan_out = num_output_fmaps * receptive_field_size
    return fan_in, fan_out


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-bound, bound) with bound = gain * sqrt(3 / fan)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std**2) with std = gain / sqrt(fan)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal sample."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0 or tensor.is_meta:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with grad_mode.no_grad():
        # (as PyTorch: normal draws of the tensor's dtype, QR of the taller orientation, signs
        # of R's diagonal)
        flattened = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)._data
        if rows < cols:
            flattened = flattened.T
        q, r = np.linalg.qr(flattened)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        _fill(tensor, q.reshape(tensor._data.shape))
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Normal N(0, std**2) entries with a fraction ``sparsity`` of each column set to zero."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with grad_mode.no_grad():
        tensor.normal_(0, std, generator=generator)
        if tensor.is_meta:
            return tensor
        from .._creation import randperm
        for col_idx in range(cols):
            # (as PyTorch: the rows to zero come from the default generator)
            zero = randperm(rows)._data[:num_zeros]
            tensor._data[zero, col_idx] = 0
        tensor._bump_version()
    return tensor


def _deprecated(fn):
    def f(*args, **kwargs):
        warnings.warn(f"`nn.init.{fn.__name__[:-1]}` is now deprecated in favor of `nn.init.{fn.__name__}`.",
                      FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)
    f.__name__ = fn.__name__[:-1]
    return f


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
sparse = _deprecated(sparse_)
