"""ConvTranspose1d and ConvTranspose2d."""
import math

from ... import _creation
from ..parameter import Parameter
from .. import functional as F, init
from .module import Module

__all__ = ["ConvTranspose1d", "ConvTranspose2d"]


def _ntuple(v, n):
    if isinstance(v, (tuple, list)):
        return tuple(v)
    return (v,) * n


class _ConvTransposeNd(Module):
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        n = self._n
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride, n)
        self.padding = _ntuple(padding, n)
        self.dilation = _ntuple(dilation, n)
        self.transposed = True
        self.output_padding = _ntuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        self.weight = Parameter(_creation.empty((in_channels, out_channels // groups) + self.kernel_size,
                                                device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(_creation.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        n = self._n
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * n:
            s += ", padding={padding}"
        if self.dilation != (1,) * n:
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * n:
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def _output_padding(self, input, output_size):
        n = self._n
        if output_size is None:
            return self.output_padding
        has_batch = input.dim() == n + 2
        nn_ = 2 if has_batch else 1
        output_size = list(output_size)
        if len(output_size) == nn_ + n:
            output_size = output_size[nn_:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or "
                             f"{nn_ + n} elements (got {len(output_size)})")
        mins, maxs = [], []
        for d in range(n):
            size = ((input.shape[d + nn_] - 1) * self.stride[d] - 2 * self.padding[d]
                    + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            mins.append(size)
            maxs.append(size + self.stride[d] - 1)
        for i, size in enumerate(output_size):
            if size < mins[i] or size > maxs[i]:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {mins} to "
                                 f"{maxs} (for an input of {input.shape[nn_:]})")
        return tuple(output_size[d] - mins[d] for d in range(n))

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        fn = F.conv_transpose1d if self._n == 1 else F.conv_transpose2d
        return fn(input, self.weight, self.bias, self.stride, self.padding, op, self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution ("deconvolution") over (N, C, L) input."""
    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution ("deconvolution") over (N, C, H, W) input."""
    _n = 2
