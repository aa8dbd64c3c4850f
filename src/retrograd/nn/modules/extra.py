"""Smaller layers: instance norm, RMSNorm, local response norms, channel shuffle, distances,
Softmax2d, alpha dropouts, power-average and unpooling layers, SyncBatchNorm, Container."""
import numbers
import warnings

from ... import _creation
from ...ops import nn_extra as _nx
from ..parameter import Parameter
from .. import functional as F, init
from .module import Module
from .batchnorm import _NormBase, _BatchNorm
from .dropout import _DropoutNd
from .conv import _single
from .pooling import _AdaptiveMaxPoolNd

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm", "LocalResponseNorm", "CrossMapLRN2d",
           "ChannelShuffle", "PairwiseDistance", "CosineSimilarity", "Softmax2d", "AlphaDropout",
           "FeatureAlphaDropout", "LPPool1d", "LPPool2d", "LPPool3d", "AdaptiveMaxPool3d", "MaxUnpool1d",
           "MaxUnpool2d", "MaxUnpool3d", "SyncBatchNorm", "Container", "FractionalMaxPool2d", "FractionalMaxPool3d"]


# *** instance norm ***

class _InstanceNorm(_NormBase):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def _get_no_batch_dim(self):
        raise NotImplementedError

    def _apply_instance_norm(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._get_no_batch_dim()
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        if input.dim() == self._get_no_batch_dim():
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


def _instance_norm_class(name, nd, doc):
    lo, hi = nd + 1, nd + 2

    def _check_input_dim(self, input):
        if input.dim() not in (lo, hi):
            raise ValueError(f"expected {lo}D or {hi}D input (got {input.dim()}D input)")

    return type(name, (_InstanceNorm,), {"__doc__": doc, "__module__": __name__, "_check_input_dim": _check_input_dim,
                                         "_get_no_batch_dim": lambda self: lo})


InstanceNorm1d = _instance_norm_class("InstanceNorm1d", 1, "Instance norm over (N, C, L) or (C, L) input.")
InstanceNorm2d = _instance_norm_class("InstanceNorm2d", 2, "Instance norm over (N, C, H, W) or (C, H, W) input.")
InstanceNorm3d = _instance_norm_class("InstanceNorm3d", 3, "Instance norm over (N, C, D, H, W) or (C, D, H, W) "
                                                           "input.")


# *** RMSNorm and local response norms ***

class RMSNorm(Module):
    """Root-mean-square normalization over the trailing ``normalized_shape`` dims, then a scale."""
    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if self.elementwise_affine:
            self.weight = Parameter(_creation.empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


class LocalResponseNorm(Module):
    """Normalize each element by the mean square of its neighbouring channels."""
    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class CrossMapLRN2d(Module):
    """The legacy cross-channel LRN of (N, C, H, W) input."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return _nx.cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


# *** shuffles, distances, Softmax2d ***

class ChannelShuffle(Module):
    """Interleave the channels of ``groups`` groups."""
    __constants__ = ["groups"]

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


class PairwiseDistance(Module):
    """p-norm distance of corresponding rows."""
    __constants__ = ["norm", "eps", "keepdim"]

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """Cosine similarity along ``dim``."""
    __constants__ = ["dim", "eps"]

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)


# *** alpha dropouts ***

class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's self-normalizing mean and variance."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels."""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)


# *** power-average, adaptive max and unpooling layers ***

class _LPPoolNd(Module):
    __constants__ = ["norm_type", "kernel_size", "stride", "ceil_mode"]

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return "norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, ceil_mode={ceil_mode}".format(
            **self.__dict__)


class LPPool1d(_LPPoolNd):
    """Power-average pooling over (N, C, L) input."""

    def forward(self, input):
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """Power-average pooling over (N, C, H, W) input."""

    def forward(self, input):
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """Power-average pooling over (N, C, D, H, W) input."""

    def forward(self, input):
        return F.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed (D, H, W) output size."""

    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _MaxUnpoolNd(Module):
    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _unpool_class(name, n, fn, doc):
    def __init__(self, kernel_size, stride=None, padding=0):
        _MaxUnpoolNd.__init__(self)
        tup = _single if n == 1 else (lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,) * n)
        self.kernel_size = tup(kernel_size)
        self.stride = tup(stride if stride is not None else kernel_size)
        self.padding = tup(padding)

    def forward(self, input, indices, output_size=None):
        return getattr(F, fn)(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    return type(name, (_MaxUnpoolNd,), {"__init__": __init__, "forward": forward, "__doc__": doc,
                                         "__module__": __name__})


MaxUnpool1d = _unpool_class("MaxUnpool1d", 1, "max_unpool1d", "Partial inverse of MaxPool1d.")
MaxUnpool2d = _unpool_class("MaxUnpool2d", 2, "max_unpool2d", "Partial inverse of MaxPool2d.")
MaxUnpool3d = _unpool_class("MaxUnpool3d", 3, "max_unpool3d", "Partial inverse of MaxPool3d.")


# *** SyncBatchNorm (one process: batch norm over the local batch) ***

class SyncBatchNorm(_BatchNorm):
    """Batch norm whose statistics would be reduced across a process group; in one process (retrograd
    runs no distributed batch norm) it is BatchNorm over the local batch."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm*d replaced by a SyncBatchNorm holding the same parameters
        and running statistics."""
        from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
        from ...autograd import grad_mode
        out = module
        if isinstance(module, (BatchNorm1d, BatchNorm2d, BatchNorm3d)):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group)
            if module.affine:
                with grad_mode.no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return out


class Container(Module):
    """The deprecated module holder: keyword arguments become submodules."""

    def __init__(self, **kwargs):
        super().__init__()
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
                      "Subclass that instead.", FutureWarning, stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)


# *** fractional max pooling ***

def _fractional_class(name, nd):
    def ntuple(v):
        return tuple(v) if isinstance(v, (tuple, list)) else (v,) * nd

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        Module.__init__(self)
        self.kernel_size = ntuple(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = ntuple(output_size) if output_size is not None else None
        self.output_ratio = ntuple(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        fn = F.fractional_max_pool2d if nd == 2 else F.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                  _random_samples=self._random_samples)

    return type(name, (Module,), {"__init__": __init__, "forward": forward, "__module__": __name__,
                                  "__constants__": ["kernel_size", "return_indices", "output_size", "output_ratio"],
                                  "__doc__": f"Fractional max pooling over {nd}-D planes (random window offsets)."})


FractionalMaxPool2d = _fractional_class("FractionalMaxPool2d", 2)
FractionalMaxPool3d = _fractional_class("FractionalMaxPool3d", 3)
