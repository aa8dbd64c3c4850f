"""Activation layers (each wraps its nn.functional form)."""
from ... import _creation
from ..parameter import Parameter
from .. import functional as F
from .module import Module

__all__ = ["Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh", "SiLU", "Mish",
           "Hardswish", "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink", "LeakyReLU", "LogSigmoid", "Softplus",
           "Softshrink", "PReLU", "Softsign", "Tanhshrink", "Softmin", "Softmax", "LogSoftmax"]


def _inplace_str(inplace, first=False):
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class _InplaceActivation(Module):
    """An activation whose one option is ``inplace``; ``_function(input, inplace)`` computes it."""
    __constants__ = ["inplace"]
    _repr_inplace = True        # whether extra_repr shows 'inplace=True' (PyTorch's do not all)

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return self._function(input, self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, True) if self._repr_inplace else ""


class _AlphaActivation(Module):
    """ELU and CELU: ``_function(input, alpha, inplace)``."""
    __constants__ = ["alpha", "inplace"]

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return self._function(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class _Shrink(Module):
    """Hardshrink and Softshrink: ``_function(input, lambd)``."""
    __constants__ = ["lambd"]

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return self._function(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class _SoftmaxFamily(Module):
    """Softmin, Softmax and LogSoftmax: ``_function(input, dim)`` over an optional ``dim``."""
    __constants__ = ["dim"]

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input):
        return self._function(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Threshold(Module):
    """``x`` if ``x > threshold`` else ``value``."""
    __constants__ = ["threshold", "value", "inplace"]

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class ReLU(_InplaceActivation):
    """``max(0, x)``."""
    _function = staticmethod(F.relu)


class RReLU(Module):
    __constants__ = ["lower", "upper", "inplace"]

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class Hardtanh(Module):
    """Clamp to [min_val, max_val]."""
    __constants__ = ["min_val", "max_val", "inplace"]

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val ({min_val})")

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """``min(max(0, x), 6)``."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, True)


class Sigmoid(Module):
    def forward(self, input):
        return F.sigmoid(input)


class Hardsigmoid(_InplaceActivation):
    _function = staticmethod(F.hardsigmoid)
    _repr_inplace = False


class Tanh(Module):
    def forward(self, input):
        return F.tanh(input)


class SiLU(_InplaceActivation):
    """``x * sigmoid(x)``."""
    _function = staticmethod(F.silu)


class Mish(_InplaceActivation):
    """``x * tanh(softplus(x))``."""
    _function = staticmethod(F.mish)


class Hardswish(_InplaceActivation):
    _function = staticmethod(F.hardswish)
    _repr_inplace = False


class ELU(_AlphaActivation):
    _function = staticmethod(F.elu)


class CELU(_AlphaActivation):
    _function = staticmethod(F.celu)


class SELU(_InplaceActivation):
    _function = staticmethod(F.selu)


class GLU(Module):
    __constants__ = ["dim"]

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class GELU(Module):
    __constants__ = ["approximate"]

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={repr(self.approximate)}"


class Hardshrink(_Shrink):
    _function = staticmethod(F.hardshrink)


class LeakyReLU(Module):
    __constants__ = ["inplace", "negative_slope"]

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class LogSigmoid(Module):
    def forward(self, input):
        return F.logsigmoid(input)


class Softplus(Module):
    __constants__ = ["beta", "threshold"]

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Softshrink(_Shrink):
    _function = staticmethod(F.softshrink)


class PReLU(Module):
    """Leaky ReLU with a learnable slope (one, or one per channel), initialised to ``init``."""
    __constants__ = ["num_parameters"]

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(_creation.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        from .. import init as _init
        _init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Softsign(Module):
    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    def forward(self, input):
        return F.tanhshrink(input)


class Softmin(_SoftmaxFamily):
    _function = staticmethod(F.softmin)


class Softmax(_SoftmaxFamily):
    _function = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxFamily):
    _function = staticmethod(F.log_softmax)


# PyTorch defines MultiheadAttention in this module: pickles and allowlists name it here.
from .activation_attention import MultiheadAttention  # noqa: E402,F401
