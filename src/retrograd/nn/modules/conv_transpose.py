"""ConvTranspose1d and ConvTranspose2d."""
from .. import functional as F
from .conv import _ConvNd, _ntuple

__all__ = ["ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


class _ConvTransposeNd(_ConvNd):
    """The transposed convolutions: _ConvNd's options and parameters, weight (in, out // groups, *k)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        t = _ntuple(self._nd)
        super().__init__(in_channels, out_channels, t(kernel_size), t(stride), t(padding), t(dilation), True,
                         t(output_padding), groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size):
        n = self._nd
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
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._nd - 1]
        return fn(input, self.weight, self.bias, self.stride, self.padding, op, self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution ("deconvolution") over (N, C, L) input."""
    _nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution ("deconvolution") over (N, C, H, W) input."""
    _nd = 2


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over (N, C, D, H, W) input."""
    _nd = 3
