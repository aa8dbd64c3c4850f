"""retrograd.nn.functional: the stateless forms of the layers, activations and losses.

The ops themselves live in ``retrograd.ops`` (conv, pool, activation, loss,
normalization); this module gives them PyTorch's functional names, signatures and
argument checks. Sections are grouped by family and kept alphabetical inside each,
so additions merge cleanly.
"""
import warnings

from ..ops import activation as _act
from ..ops import conv as _conv
from ..ops import loss as _loss
from ..ops import loss_extra as _lossx
from ..ops import normalization as _norm
from ..ops import pool as _pool
from ..ops._base import apply_inplace as _apply_inplace
from ..ops._linear import linear  # noqa: F401
from ..ops.shape import reshape as _reshape
from ..ops.unary import relu as _relu, sigmoid as _sigmoid, tanh as _tanh


def _maybe_inplace(fn, input, inplace, *args):
    if inplace:
        return _apply_inplace(input, fn, *args)
    return fn(input, *args)


# --- activations ----------------------------------------------------------------------

def celu(input, alpha=1.0, inplace=False):
    return _act.celu_(input, alpha) if inplace else _act.celu(input, alpha)


def celu_(input, alpha=1.0):
    return celu(input, alpha, True)


def elu(input, alpha=1.0, inplace=False):
    return _act.elu_(input, alpha) if inplace else _act.elu(input, alpha)


def elu_(input, alpha=1.0):
    return elu(input, alpha, True)


def gelu(input, approximate="none"):
    return _act.gelu(input, approximate)


def glu(input, dim=-1):
    return _act.glu(input, dim)


def hardshrink(input, lambd=0.5):
    return _act.hardshrink(input, lambd)


def hardsigmoid(input, inplace=False):
    return _maybe_inplace(_act.hardsigmoid, input, inplace)


def hardswish(input, inplace=False):
    return _maybe_inplace(_act.hardswish, input, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return _maybe_inplace(_act.hardtanh, input, inplace, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, True)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _act.leaky_relu_(input, negative_slope) if inplace else _act.leaky_relu(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, True)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _act.log_softmax(input, dim, _stacklevel + 1, dtype)


def logsigmoid(input):
    return _act.logsigmoid(input)


def mish(input, inplace=False):
    return _maybe_inplace(_act.mish, input, inplace)


def prelu(input, weight):
    return _act.prelu(input, weight)


def relu(input, inplace=False):
    return input.relu_() if inplace else _relu(input)


def relu_(input):
    return relu(input, True)


def relu6(input, inplace=False):
    return _maybe_inplace(_act.hardtanh, input, inplace, 0.0, 6.0)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    return _act.rrelu(input, lower, upper, training, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return _act.rrelu_(input, lower, upper, training)


def selu(input, inplace=False):
    return _act.selu_(input) if inplace else _act.selu(input)


def selu_(input):
    return _act.selu_(input)


def sigmoid(input):
    return _sigmoid(input)


def silu(input, inplace=False):
    return _maybe_inplace(_act.silu, input, inplace)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _act.softmax(input, dim, _stacklevel + 1, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return _act.softmin(input, dim, _stacklevel + 1, dtype)


def softplus(input, beta=1.0, threshold=20.0):
    return _act.softplus(input, beta, threshold)


def softshrink(input, lambd=0.5):
    return _act.softshrink(input, lambd)


def softsign(input):
    return _act.softsign(input)


def tanh(input):
    return _tanh(input)


def tanhshrink(input):
    return _act.tanhshrink(input)


def threshold(input, threshold, value, inplace=False):
    return _act.threshold_(input, threshold, value) if inplace else _act.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return _act.threshold_(input, threshold, value)


# --- convolution ----------------------------------------------------------------------

def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv.convolution(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv.convolution(input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv.convolution(input, weight, bias, stride, padding, dilation, groups, 3)


# --- dropout --------------------------------------------------------------------------

def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (training only)."""
    return _act.dropout(input, p, training, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's self-normalizing mean and variance (training only)."""
    return _act.alpha_dropout(input, p, training, inplace)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels (dim 1)."""
    return _act.feature_alpha_dropout(input, p, training, inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) input."""
    _act._check_p(p)
    d = input.ndim
    if d not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {d}D input. Note that dropout1d "
                           "exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
                           "dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _unbatched_feature_dropout(input, p, training, inplace, d == 3)


def _unbatched_feature_dropout(input, p, training, inplace, batched):
    # torch.nn.functional's way: an unbatched input gets a batch dim and loses it again
    # (so the result is a view of the input, as there)
    if batched:
        return _act.feature_dropout(input, p, training, inplace)
    x = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    r = _act.feature_dropout(x, p, training, inplace)
    return r.squeeze_(0) if inplace else r.squeeze(0)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) input."""
    _act._check_p(p)
    d = input.ndim
    if d not in (3, 4):
        warnings.warn(f"dropout2d: Received a {d}-D input to dropout2d, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", stacklevel=2)
    if d == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", stacklevel=2)
    # any input is (N, C, ...) here, a 3-D one included (torch's historical behaviour)
    return _act.feature_dropout(input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input."""
    _act._check_p(p)
    d = input.ndim
    if d not in (4, 5):
        warnings.warn(f"dropout3d: Received a {d}-D input to dropout3d, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                      "inputs).", stacklevel=2)
    return _unbatched_feature_dropout(input, p, training, inplace, d == 5)


# --- distances and vectors ------------------------------------------------------------

cosine_similarity = _loss.cosine_similarity
normalize = _loss.normalize
one_hot = _loss.one_hot
pairwise_distance = _loss.pairwise_distance


# --- linear ---------------------------------------------------------------------------

def _flatten(input, start_dim=0, end_dim=-1):
    nd = input.ndim
    if nd == 0:
        return _reshape(input, (1,))
    s = input._wrap_dim(start_dim)
    e = input._wrap_dim(end_dim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shape = tuple(input.shape)
    n = 1
    for d in shape[s:e + 1]:
        n *= d
    return _reshape(input, shape[:s] + (n,) + shape[e + 1:])


# --- losses ---------------------------------------------------------------------------

_legacy = _loss.legacy_reduction


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    return _loss.binary_cross_entropy(input, target, weight, _legacy(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    return _loss.binary_cross_entropy_with_logits(input, target, weight, _legacy(size_average, reduce, reduction),
                                                  pos_weight)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist temporal classification loss."""
    return _lossx.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    return _loss.cosine_embedding_loss(input1, input2, target, margin, _legacy(size_average, reduce, reduction))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    return _loss.cross_entropy(input, target, weight, ignore_index, _legacy(size_average, reduce, reduction),
                               label_smoothing)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log likelihood."""
    return _lossx.gaussian_nll_loss(input, target, var, full, eps, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """Hinge embedding loss (targets 1 / -1)."""
    return _lossx.hinge_embedding_loss(input, target, margin, _legacy(size_average, reduce, reduction))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    return _loss.huber_loss(input, target, reduction, delta, weight)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    return _loss.kl_div(input, target, size_average, reduce, reduction, log_target)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    return _loss.l1_loss(input, target, _legacy(size_average, reduce, reduction), weight)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    return _loss.margin_ranking_loss(input1, input2, target, margin, _legacy(size_average, reduce, reduction))


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    return _loss.mse_loss(input, target, _legacy(size_average, reduce, reduction), weight)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Multi-class margin (hinge) loss."""
    return _lossx.multi_margin_loss(input, target, p, margin, weight, _legacy(size_average, reduce, reduction))


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label margin (hinge) loss; each target row ends at its first -1."""
    return _lossx.multilabel_margin_loss(input, target, _legacy(size_average, reduce, reduction))


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Multi-label one-versus-all logistic loss."""
    return _lossx.multilabel_soft_margin_loss(input, target, weight, _legacy(size_average, reduce, reduction))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    return _loss.nll_loss(input, target, weight, ignore_index, _legacy(size_average, reduce, reduction))


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Poisson negative log likelihood."""
    return _lossx.poisson_nll_loss(input, target, log_input, full, eps, _legacy(size_average, reduce, reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    return _loss.smooth_l1_loss(input, target, _legacy(size_average, reduce, reduction), beta)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Two-class logistic loss ``log(1 + exp(-y x))``."""
    return _lossx.soft_margin_loss(input, target, _legacy(size_average, reduce, reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    return _loss.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                     _legacy(size_average, reduce, reduction))


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """Triplet margin loss with a custom distance function."""
    return _lossx.triplet_margin_with_distance_loss(anchor, positive, negative, distance_function=distance_function,
                                                    margin=margin, swap=swap, reduction=reduction)


# --- normalization --------------------------------------------------------------------

def _verify_batch_size(size):
    prod = size[0]
    for s in size[2:]:
        prod *= s
    if prod == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    if training:
        _verify_batch_size(input.size())
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    return _norm._batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    shape = list(input.size())
    _verify_batch_size([shape[0] * shape[1] // num_groups, num_groups] + shape[2:])
    return _norm.group_norm(input, num_groups, weight, bias, eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalize each channel of each sample over its spatial positions."""
    if use_input_stats:
        size = input.size()
        prod = 1
        for s in size[2:]:
            prod *= s
        if prod == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")
    return _norm.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _norm.layer_norm(input, normalized_shape, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _norm.rms_norm(input, normalized_shape, weight, eps)


# --- pooling --------------------------------------------------------------------------

def adaptive_avg_pool1d(input, output_size):
    return _pool.adaptive_avg_pool(input, output_size, 1)


def adaptive_avg_pool2d(input, output_size):
    return _pool.adaptive_avg_pool(input, output_size, 2)


def adaptive_avg_pool3d(input, output_size):
    return _pool.adaptive_avg_pool(input, output_size, 3)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _pool.adaptive_max_pool(input, output_size, return_indices, 1)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _pool.adaptive_max_pool(input, output_size, return_indices, 2)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return _pool.adaptive_max_pool(input, output_size, True, 1)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return _pool.adaptive_max_pool(input, output_size, True, 2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _pool.avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _pool.avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _pool.avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _pool.max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _pool.max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _pool.max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _pool.adaptive_max_pool(input, output_size, return_indices, 3)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return _pool.adaptive_max_pool(input, output_size, True, 3)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _pool.max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 3)


from ..ops.pool import lp_pool1d, lp_pool2d, lp_pool3d  # noqa: F401,E402


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _pool.max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 1)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _pool.max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 2)


# --- sequence, resampling and attention ---------------------------------------------------

from ..ops.resample import pad, interpolate, unfold, fold, pixel_shuffle, pixel_unshuffle  # noqa: F401,E402
from ..ops.embeddings import embedding, embedding_bag  # noqa: F401,E402
from ..ops.convt import conv_transpose1d, conv_transpose2d, bilinear  # noqa: F401,E402
from ..ops.attention import scaled_dot_product_attention  # noqa: F401,E402
from ..ops.gridsample import grid_sample, affine_grid  # noqa: F401,E402
from ._functional_seq import (upsample, upsample_nearest, upsample_bilinear,  # noqa: F401,E402
                              multi_head_attention_forward)
from ..ops.nn_extra import (channel_shuffle, native_channel_shuffle, gumbel_softmax,  # noqa: F401,E402
                            local_response_norm, max_unpool1d, max_unpool2d, max_unpool3d, conv_transpose3d,
                            conv_tbc)
from ..ops.pool_extra import (fractional_max_pool2d, fractional_max_pool2d_with_indices,  # noqa: F401,E402
                              fractional_max_pool3d, fractional_max_pool3d_with_indices)
