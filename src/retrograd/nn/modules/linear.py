"""Identity and Linear."""
import math

from ... import _creation
from ..parameter import Parameter
from .. import functional as F, init
from .module import Module

__all__ = ["Identity", "Linear"]


class Identity(Module):
    """Returns its input; ignores any constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


def _weight_and_bias(module, weight_shape, bias, bias_size, device, dtype):
    """Register an uninitialised ``weight`` and, if ``bias``, a ``bias`` of ``bias_size`` (else None)."""
    module.weight = Parameter(_creation.empty(weight_shape, device=device, dtype=dtype))
    if bias:
        module.bias = Parameter(_creation.empty(bias_size, device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)


class Linear(Module):
    """``y = x @ weight.T + bias``; weight and bias drawn from U(-1/sqrt(in), 1/sqrt(in))."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in_features), bias, out_features, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def __getattr__(name):
    # torch.nn.modules.linear.NonDynamicallyQuantizableLinear: the class MultiheadAttention's
    # out_proj uses (defined next to it, imported lazily to avoid a cycle)
    if name == "NonDynamicallyQuantizableLinear":
        from .activation_attention import NonDynamicallyQuantizableLinear
        return NonDynamicallyQuantizableLinear
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
