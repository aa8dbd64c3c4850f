"""Layer ops of nn.functional outside the big families: channel shuffle, max unpooling,
local response normalization (and the legacy cross-map form), Gumbel-softmax."""
import math

import numpy as np

from ._base import OpNode, node_for, save, finish, xp_for

__all__ = []
TENSOR_METHODS = {}
INPLACE = {}


# *** channel shuffle ***

def _shuffle_array(x, groups):
    n, c = x.shape[:2]
    rest = x.shape[2:]
    # always a fresh array (for groups == 1 or == C the permutation is the identity)
    return x.reshape((n, groups, c // groups) + rest).swapaxes(1, 2).copy(order="C").reshape(x.shape)


class ChannelShuffleBackward0(OpNode):
    def backward(self, g):
        c = g.shape[1]
        # the inverse permutation is the shuffle with the complementary group count
        return _channel_shuffle(g, c // self.groups, ChannelShuffleBackward0)


def _check_shuffle(input, groups):
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")


def _channel_shuffle(input, groups, cls):
    node = node_for(cls, (input,))
    if node is not None:
        node.groups = groups
    return finish(node, _shuffle_array(input._data, groups))


def channel_shuffle(input, groups):
    """Interleave the channels of ``groups`` groups (ShuffleNet's channel shuffle)."""
    _check_shuffle(input, groups)
    return _channel_shuffle(input, groups, ChannelShuffleBackward0)


class _NoDerivative(OpNode):
    def backward(self, g):
        raise RuntimeError(f"derivative for aten::{self.op_name} is not implemented")


NotImplemented_ = type("NotImplemented", (_NoDerivative,), {"__module__": __name__})


def native_channel_shuffle(input, groups):
    """channel_shuffle without a derivative (PyTorch's native kernel records none)."""
    _check_shuffle(input, groups)
    node = node_for(NotImplemented_, (input,))
    if node is not None:
        node.op_name = "native_channel_shuffle"
    return finish(node, _shuffle_array(input._data, groups))


# *** max unpooling ***

def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _unpool_output_size(input, kernel_size, stride, padding, output_size, n):
    in_size = tuple(input.shape)
    default = [(in_size[-n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return tuple(default)
    output_size = list(output_size)
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a length "
                         f"of '{len(output_size)}'")
    for d in range(n):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be between {lo} and {hi})')
    return tuple(output_size)


class _UnpoolBackward(OpNode):
    def backward(self, g):
        (idx,) = self.saved_tensors
        lead = tuple(g.shape[:-self.nd])
        flat = g.reshape(lead + (-1,))
        ix = idx.reshape(lead + (-1,))
        return flat.gather(-1, ix).reshape(self.in_shape), None


MaxUnpool2DBackward0 = type("MaxUnpool2DBackward0", (_UnpoolBackward,), {"__module__": __name__})
MaxUnpool3DBackward0 = type("MaxUnpool3DBackward0", (_UnpoolBackward,), {"__module__": __name__})


def _max_unpool(input, indices, out_spatial, nd, cls):
    from .._tensor import Tensor
    if not isinstance(indices, Tensor) or indices._data.dtype != np.int64:
        dt = indices._data.dtype if isinstance(indices, Tensor) else None
        from .loss import _TN
        raise RuntimeError(f"elements in indices should be type int64 but got: {_TN.get(dt.name, dt.name)}")
    x, ix = input._data, indices._data
    if x.shape != ix.shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(x.shape)}) but "
                           f"got indices tensor with shape: {list(ix.shape)}")
    lead = x.shape[:-nd]
    plane = math.prod(out_spatial)
    xf = x.reshape((-1, math.prod(x.shape[-nd:])))
    if_ = ix.reshape(xf.shape)
    xp = xp_for(x, ix)
    # (checked on the host only: CUDA's kernel asserts on the device, it asks the host nothing)
    if xp is np and if_.size and (if_.min() < 0 or if_.max() >= plane):
        bad = if_[(if_ < 0) | (if_ >= plane)].flat[0]
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(str(s) for s in out_spatial)})")
    out = xp.zeros((xf.shape[0], plane), x.dtype)
    rows = xp.arange(xf.shape[0])[:, None]
    out[rows, if_] = xf
    node = node_for(cls, (input, None))
    if node is not None:
        node.nd, node.in_shape = nd, tuple(x.shape)
        save(node, indices)
    return finish(node, out.reshape(lead + tuple(out_spatial)))


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool1d: each value back at its index, zeros elsewhere."""
    k = _tuple(kernel_size, 1)
    s = _tuple(stride if stride is not None else kernel_size, 1)
    p = _tuple(padding, 1)
    size = _unpool_output_size(input, k, s, p, output_size, 1)
    out = _max_unpool(input.unsqueeze(-1), indices.unsqueeze(-1), size + (1,), 2, MaxUnpool2DBackward0)
    return out.squeeze(-1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool2d: each value back at its index, zeros elsewhere."""
    k = _tuple(kernel_size, 2)
    s = _tuple(stride if stride is not None else kernel_size, 2)
    p = _tuple(padding, 2)
    size = _unpool_output_size(input, k, s, p, output_size, 2)
    return _max_unpool(input, indices, size, 2, MaxUnpool2DBackward0)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool3d: each value back at its index, zeros elsewhere."""
    k = _tuple(kernel_size, 3)
    s = _tuple(stride if stride is not None else kernel_size, 3)
    p = _tuple(padding, 3)
    size = _unpool_output_size(input, k, s, p, output_size, 3)
    return _max_unpool(input, indices, size, 3, MaxUnpool3DBackward0)


# *** local response normalization ***

def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Normalize each element by the mean square of its ``size`` neighbouring channels."""
    from ..nn import functional as F
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = div.unsqueeze(1)
        div = F.pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = F.avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.shape
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = F.pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = F.avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.view(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


def _cross_map_scale(x, size, alpha, k):
    """The legacy kernel's running channel-window sum of squares. Its update never removes channel 0
    (it subtracts channel ``c - pre_pad`` only for ``c > pre_pad``), which is kept: values match."""
    c_n = x.shape[1]
    sq = x * x
    pre_pad = int((size - 1) / 2 + 1)
    scale = np.empty_like(x)
    scale[:, 0] = sq[:, :min(pre_pad, c_n)].sum(1)
    for c in range(1, c_n):
        cur = scale[:, c - 1].copy()
        if c < c_n - pre_pad + 1:
            cur += sq[:, c + pre_pad - 1]
        if c > pre_pad:
            cur -= sq[:, c - pre_pad]
        scale[:, c] = cur
    return scale * (alpha / size) + k


class CrossMapLRN2dBackward(OpNode):
    """The legacy layer's own backward formula (its window of ratios is offset by
    ``size - (size - 1) // 2`` channels), computed once, without a graph of its own."""

    def backward(self, g):
        (x,) = self.saved_tensors
        xd, gd = x._data, g._data
        size, beta = self.size, self.beta
        scale = _cross_map_scale(xd, size, self.alpha, self.k)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            out = xd * scale ** -beta
            gi = scale ** -beta * gd
            ratio = gd * out / scale
        c_n = xd.shape[1]
        pre = int(size - (size - 1) / 2)
        padded = np.zeros((xd.shape[0], c_n + size - 1) + xd.shape[2:], xd.dtype)
        padded[:, pre:pre + c_n] = ratio[:, :max(0, min(c_n, c_n + size - 1 - pre))]
        acc = padded[:, :size - 1].sum(1)
        coef = 2 * self.alpha * beta / size
        for c in range(c_n):
            acc = acc + padded[:, c + size - 1]
            gi[:, c] -= coef * xd[:, c] * acc
            acc = acc - padded[:, c]
        return finish(None, gi.astype(xd.dtype, copy=False))


def cross_map_lrn2d(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """The legacy cross-channel LRN of CrossMapLRN2d: ``x * (k + alpha/size * window sum x^2)^-beta``."""
    if input.dim() != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
    x = input._data
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        out = x * _cross_map_scale(x, size, alpha, k) ** -beta
    node = node_for(CrossMapLRN2dBackward, (input,))
    if node is not None:
        node.size, node.alpha, node.beta, node.k = size, alpha, beta, k
        save(node, input)
    return finish(node, out.astype(x.dtype, copy=False))


# *** Gumbel-softmax ***

def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """A sample of the Gumbel-softmax (concrete) distribution; ``hard``: one-hot forward values with
    the soft sample's gradient (straight-through)."""
    import warnings
    from .. import _creation
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -_creation.empty_like(logits).exponential_().log()
    gumbels = (logits + gumbels) / tau
    y_soft = gumbels.softmax(dim)
    if hard:
        index = y_soft.max(dim, keepdim=True)[1]
        y_hard = _creation.zeros_like(logits).scatter_(dim, index, 1.0)
        return y_hard - y_soft.detach() + y_soft
    return y_soft


# *** weight normalization ***

def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim but ``dim`` (kept, size 1); over all of ``v`` for dim -1."""
    if dim == -1:
        return v.norm(pow)
    dims = [d for d in range(v.dim()) if d != dim]
    return v.norm(pow, dim=dims, keepdim=True) if dims else v.abs() if pow != 0 else v.ne(0).to(v.dtype)


class WeightNormInterfaceBackward0(OpNode):
    """``w = v * g / ||v||``; gradients written with tensor ops (so they differentiate again)."""

    def backward(self, gw):
        v, g = self.saved_tensors
        nf = self.next_functions
        norm = norm_except_dim(v, 2, self.dim)
        dims = list(range(v.dim())) if self.dim == -1 else [d for d in range(v.dim()) if d != self.dim]
        s = (gw * v).sum(dim=dims, keepdim=self.dim != -1) if dims else gw * v
        gv = gg = None
        if nf[0][0] is not None:
            gv = (g / norm) * (gw - v * (s / (norm * norm)))
        if nf[1][0] is not None:
            gg = (s / norm).reshape(g.shape)
        return gv, gg


def weight_norm(v, g, dim=0):
    """``v * (g / norm_except_dim(v, 2, dim))`` (torch._weight_norm)."""
    from ..autograd import grad_mode
    if dim != 0 and dim != v.dim() - 1:
        # PyTorch's fused kernel covers the first and last dim only; others are this composite
        return v * (g / norm_except_dim(v, 2, dim))
    with grad_mode.no_grad():
        w = v * (g / norm_except_dim(v, 2, dim))
    node = node_for(WeightNormInterfaceBackward0, (v, g))
    if node is not None:
        node.dim = dim
        save(node, v, g)
    return finish(node, w._data)


# *** 3-D transposed convolution ***

def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-D transposed convolution: input (N, Cin, D, H, W), weight (Cin, Cout/groups, kd, kh, kw).

    Each kernel offset's GEMM (weight slice x input) is added into the output window it reaches,
    so only real products are ever summed (see _ct3d_composite)."""
    if input.dim() not in (4, 5):
        raise RuntimeError("Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d, but got input of "
                           f"size: [{', '.join(map(str, input.shape))}]")
    if input.dim() == 4:
        return conv_transpose3d(input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups,
                                dilation).squeeze(0)
    st, pad = _tuple(stride, 3), _tuple(padding, 3)
    op, dil = _tuple(output_padding, 3), _tuple(dilation, 3)
    wshape = list(weight.shape)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(s <= 0 for s in st):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in pad):
        raise RuntimeError("negative padding is not supported")
    if input.shape[1] != wshape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {wshape}, expected input{list(input.shape)} to have "
                           f"{wshape[0]} channels, but got {input.shape[1]} channels instead")
    if any(o >= s and o >= d for o, s, d in zip(op, st, dil)):
        raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                           + " ".join(f"output_padding_{n}: {o}" for n, o in zip(("depth", "height", "width"), op))
                           + " " + " ".join(f"stride_{n}: {s}" for n, s in zip(("depth", "height", "width"), st))
                           + " " + " ".join(f"dilation_{n}: {d}" for n, d in zip(("depth", "height", "width"), dil)))
    sp, ks = tuple(input.shape[2:]), tuple(wshape[2:])
    outs = [(sp[i] - 1) * st[i] - 2 * pad[i] + dil[i] * (ks[i] - 1) + op[i] + 1 for i in range(3)]
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, sp))}). Calculated output size per "
                           f"channel: ({' x '.join(map(str, outs))}). Output size is too small")
    args = (st, pad, op, dil, groups)
    inputs = (input, weight) if bias is None else (input, weight, bias)
    from ..autograd import grad_mode
    with grad_mode.no_grad():
        r = _ct3d_composite(args, *inputs)
    node = node_for(ConvTranspose3dBackward, inputs)
    if node is not None:
        node.args = args
        # (the bias only adds: PyTorch's node does not keep it, so changing it in place after
        # the forward is no error; held here, unversioned, for the composite's replay)
        node.bias = bias
        save(node, input, weight)
    return finish(node, r._data)


def _ct3d_composite(args, x, w, b=None):
    """Every kernel offset's GEMM slice-added into its strided output window (only real products
    are summed: no zero-filled input meets an inf weight), then the padding cropped."""
    from .linalg import matmul
    st, pad, op, dil, groups = args
    n, cin = x.shape[:2]
    sp = tuple(x.shape[2:])
    ks = tuple(w.shape[2:])
    cg, og = cin // groups, w.shape[1]
    cout = og * groups
    full = tuple((sp[i] - 1) * st[i] + dil[i] * (ks[i] - 1) + 1 + op[i] for i in range(3))
    out = x.new_zeros((n, cout) + full)
    xg = x.reshape(n, groups, cg, -1)
    wg = w.reshape(groups, cg, og, -1).permute(3, 0, 2, 1)          # (k, G, og, cg)
    k = 0
    for a in range(ks[0]):
        for b_ in range(ks[1]):
            for c in range(ks[2]):
                contrib = matmul(wg[k], xg).reshape((n, cout) + sp)
                o0, o1, o2 = a * dil[0], b_ * dil[1], c * dil[2]
                out[:, :, o0:o0 + (sp[0] - 1) * st[0] + 1:st[0], o1:o1 + (sp[1] - 1) * st[1] + 1:st[1],
                    o2:o2 + (sp[2] - 1) * st[2] + 1:st[2]] += contrib
                k += 1
    out = out[:, :, pad[0]:full[0] - pad[0], pad[1]:full[1] - pad[1], pad[2]:full[2] - pad[2]]
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1, 1)
    return out


class ConvTranspose3dBackward(OpNode):
    """Gradients of the slice-add composite (recorded, so they differentiate again)."""
    bias = None

    def backward(self, g):
        from ._seqkit import graph_grads
        from ._base import _state
        from ..autograd import grad_mode
        saved = list(self.saved_tensors) + ([] if self.bias is None else [self.bias])
        recording = _state.grad
        with grad_mode.enable_grad():
            res = graph_grads(lambda *t: _ct3d_composite(self.args, *t), list(saved), [g])
        if not recording:
            res = [None if r is None else r.detach() for r in res]
        return tuple(res)


ConvTranspose3dBackward.__name__ = ConvTranspose3dBackward.__qualname__ = "ConvolutionBackward0"


# *** the torch.<name> forms of nn ops (ATen's signatures: reductions as ints, weight first...) ***

_RED = {0: "none", 1: "mean", 2: "sum"}


def _red(reduction):
    if isinstance(reduction, str):
        return reduction
    return _RED[int(reduction)]


def _F():
    from ..nn import functional
    return functional


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """torch.embedding: rows of ``weight`` picked by ``indices`` (weight first; -1: no padding row)."""
    return _F().embedding(indices, weight, None if padding_idx is None or padding_idx < 0 else padding_idx,
                          None, 2.0, scale_grad_by_freq, sparse)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False):
    """torch.ctc_loss (reduction as an int: 0 none, 1 mean, 2 sum)."""
    from .loss_extra import ctc_loss as _ctc
    return _ctc(log_probs, targets, input_lengths, target_lengths, blank, _red(reduction), zero_infinity)


def kl_div(input, target, reduction=0, log_target=False):
    """torch.kl_div (reduction as an int)."""
    from .loss import kl_div as _kl
    return _kl(input, target, reduction=_red(reduction), log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """torch.margin_ranking_loss (reduction as an int)."""
    from .loss import margin_ranking_loss as _mr
    return _mr(input1, input2, target, margin, _red(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction=0):
    """torch.triplet_margin_loss (reduction as an int)."""
    from .loss import triplet_margin_loss as _tm
    return _tm(anchor, positive, negative, margin, p, eps, swap, _red(reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """torch.cosine_embedding_loss (reduction as an int)."""
    from .loss import cosine_embedding_loss as _ce
    return _ce(input1, input2, target, margin, _red(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """torch.hinge_embedding_loss (reduction as an int)."""
    from .loss_extra import hinge_embedding_loss as _he
    return _he(input, target, margin, _red(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """torch.poisson_nll_loss (every argument required, reduction as an int)."""
    from .loss_extra import poisson_nll_loss as _pn
    return _pn(input, target, log_input, full, eps, _red(reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    """torch.binary_cross_entropy_with_logits (reduction as an int)."""
    from .loss import binary_cross_entropy_with_logits as _bce
    return _bce(input, target, weight, _red(reduction), pos_weight)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """torch.convolution: the N-d (transposed) convolution named by ``weight``'s dims."""
    F = _F()
    nd = weight.dim() - 2
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, conv_transpose3d)[nd - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


def _conv_tbc_composite(pad, x, w, b):
    """The bias, then each kernel offset's GEMM added into the output rows it reaches (no padded
    zero ever meets a weight)."""
    from .linalg import matmul
    t_in, batch = x.shape[0], x.shape[1]
    k_n, cout = w.shape[0], w.shape[2]
    t_out = t_in + 2 * pad - k_n + 1
    out = b.reshape(1, 1, cout).expand(t_out, batch, cout).clone()
    for k in range(k_n):
        t0, t1 = max(0, pad - k), min(t_out, t_in + pad - k)
        if t1 > t0:
            out[t0:t1] += matmul(x[t0 + k - pad:t1 + k - pad], w[k])
    return out


class ConvTbcBackward0(OpNode):
    """Gradients of the conv1d composite (recorded, so they differentiate again)."""

    def backward(self, g):
        from ._seqkit import graph_grads
        from ._base import _state
        from ..autograd import grad_mode
        recording = _state.grad
        with grad_mode.enable_grad():
            res = graph_grads(lambda *t: _conv_tbc_composite(self.pad, *t), list(self.saved_tensors), [g])
        return tuple(r if recording or r is None else r.detach() for r in res)


def conv_tbc(input, weight, bias, pad=0):
    """Time-batch-channel 1-D convolution: input (T, B, Cin), weight (k, Cin, Cout), bias (Cout,)."""
    from ..autograd import grad_mode
    st = input._data.strides
    t_n, b_n = input.shape[0], input.shape[1]
    if t_n > 1 and b_n > 1 and min(st) >= 0 and st[0] != st[1] * b_n:
        # PyTorch's kernel views the input as (T * B, Cin) (a negative-stride array stands for the
        # copy PyTorch would hold)
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one dimension "
                           "spans across two contiguous subspaces). Use .reshape(...) instead.")
    with grad_mode.no_grad():
        r = _conv_tbc_composite(pad, input, weight, bias)
    node = node_for(ConvTbcBackward0, (input, weight, bias))
    if node is not None:
        node.pad = pad
        save(node, input, weight, bias)
    return finish(node, xp_for(r).ascontiguousarray(r._data))


def _cell_gates(input, hx, w_ih, w_hh, b_ih, b_hh):
    F = _F()
    return F.linear(input, w_ih, b_ih) + F.linear(hx, w_hh, b_hh)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: (h', c') from input and (h, c)."""
    h, c = hx
    i, f, g, o = _cell_gates(input, h, w_ih, w_hh, b_ih, b_hh).chunk(4, 1)
    cy = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * cy.tanh(), cy


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step: h' from input and h."""
    F = _F()
    ir, iz, in_ = F.linear(input, w_ih, b_ih).chunk(3, 1)
    hr, hz, hn = F.linear(hx, w_hh, b_hh).chunk(3, 1)
    r = (ir + hr).sigmoid()
    z = (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return (hx - n) * z + n


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step with tanh."""
    return _cell_gates(input, hx, w_ih, w_hh, b_ih, b_hh).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step with ReLU."""
    return _cell_gates(input, hx, w_ih, w_hh, b_ih, b_hh).relu()


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool1d_with_indices: (values, indices)."""
    if isinstance(stride, (tuple, list)) and len(stride) == 0:
        stride = None
    return _F().max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(layer_norm(input), mean, 1/std) with the statistics kept (size 1) over the normalized dims."""
    from ..autograd import grad_mode
    out = _F().layer_norm(input, normalized_shape, weight, bias, eps)
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    with grad_mode.no_grad():
        mean = input.mean(dims, keepdim=True)
        rstd = (input.var(dims, keepdim=True, unbiased=False) + eps).rsqrt()
    return out, mean, rstd


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """(batch_norm(input), batch mean, 1/std) in training; empty statistics otherwise."""
    from ..autograd import grad_mode
    out = _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        return out, input.new_empty((0,)), input.new_empty((0,))
    dims = (0,) + tuple(range(2, input.dim()))
    with grad_mode.no_grad():
        mean = input.mean(dims)
        invstd = (input.var(dims, unbiased=False) + eps).rsqrt()
    return out, mean, invstd


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """(group_norm(input), mean, 1/std), the statistics (N, group)."""
    from ..autograd import grad_mode
    out = _F().group_norm(input, group, weight, bias, eps)
    with grad_mode.no_grad():
        g = input.reshape(N, group, -1)
        mean = g.mean(-1)
        rstd = (g.var(-1, unbiased=False) + eps).rsqrt()
    return out, mean, rstd


def native_dropout(input, p, train):
    """(dropout(input), keep mask): in training each element is kept with probability 1 - p and scaled
    by 1 / (1 - p); otherwise the input (copied) and an all-True mask."""
    from .. import _creation
    if train is None or train:
        keep = _creation.empty_like(input).bernoulli_(1 - p).bool()
        return input * keep * (1.0 / (1 - p) if p < 1 else 0.0), keep
    return input.clone(), input.new_ones(input.shape).bool()


def alpha_dropout_(input, p, train):
    """In-place alpha dropout."""
    return _F().alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout_(input, p, train):
    """In-place feature alpha dropout."""
    return _F().feature_alpha_dropout(input, p, train, inplace=True)


__all__ += ["embedding", "ctc_loss", "kl_div", "margin_ranking_loss", "triplet_margin_loss",
            "cosine_embedding_loss", "hinge_embedding_loss", "poisson_nll_loss", "binary_cross_entropy_with_logits",
            "channel_shuffle", "native_channel_shuffle", "conv_transpose3d", "convolution", "conv_tbc", "lstm_cell",
            "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "max_pool1d_with_indices", "native_layer_norm",
            "native_batch_norm", "native_group_norm", "native_dropout", "alpha_dropout_", "feature_alpha_dropout_"]


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """torch.embedding_bag: (output, offset2bag, bag_size, max_indices) for 1-D ``indices`` split by
    ``offsets``; mode 0 sum, 1 mean, 2 max. The three bookkeeping tensors are PyTorch's CPU kernel's:
    for sum bag_size and max_indices stay zero, for mean max_indices repeats bag_size."""
    from .. import _creation
    modes = {0: "sum", 1: "mean", 2: "max"}
    out = _F().embedding_bag(indices, weight, offsets, None, 2.0, scale_grad_by_freq, modes[int(mode)], sparse,
                             per_sample_weights, include_last_offset,
                             None if padding_idx is None or padding_idx < 0 else padding_idx)
    idx = np.asarray(indices._data).reshape(-1).astype(np.int64)
    offs = np.asarray(offsets._data).reshape(-1).astype(np.int64)
    nb = offs.shape[0] - 1 if include_last_offset else offs.shape[0]
    ends = np.append(offs[1:], idx.shape[0])[:nb] if not include_last_offset else offs[1:nb + 1]
    # each position's bag (positions past the last offset belong to the last bag)
    bag_of = np.minimum(np.searchsorted(offs, np.arange(idx.shape[0]), side="right") - 1, nb - 1).astype(np.int64)
    keep = idx != padding_idx if padding_idx is not None and padding_idx >= 0 else np.ones(idx.shape, bool)
    sizes = np.array([int(keep[offs[b]:ends[b]].sum()) for b in range(nb)], np.int64)
    if int(mode) == 0:
        # (PyTorch's float32 sum kernel without padding_idx leaves offset2bag empty)
        fast = weight._data.dtype == np.float32 and (padding_idx is None or padding_idx < 0)
        zeros = np.zeros(nb, np.int64)
        return (out, _creation.tensor(np.zeros(0, np.int64) if fast else bag_of), _creation.tensor(zeros),
                _creation.tensor(zeros.copy()))
    if int(mode) == 1:
        return out, _creation.tensor(bag_of), _creation.tensor(sizes), _creation.tensor(sizes.copy())
    w = np.asarray(weight._data)
    maxi = np.zeros((nb, w.shape[1]), np.int64)
    for b in range(nb):
        rows = idx[offs[b]:ends[b]][keep[offs[b]:ends[b]]]
        if rows.size:
            maxi[b] = rows[np.argmax(w[rows], axis=0)]
    return out, _creation.tensor(bag_of), _creation.tensor(sizes), _creation.tensor(maxi)


__all__ += ["embedding_bag"]
