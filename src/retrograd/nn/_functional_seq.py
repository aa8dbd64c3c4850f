"""Functional forms built from the sequence/resampling ops: the deprecated upsample
helpers and multi-head attention (PyTorch's F.multi_head_attention_forward)."""
import warnings

import numpy as np

from ..ops._base import finish
from ..ops._linear import linear
from ..ops.shape import cat
from ..ops.resample import interpolate
from ..ops.attention import multi_head_attention_core


def _linear(x, w, b=None):
    """``linear`` over the last dimension; a constant input of rank > 2 is flattened first
    (its weight gradient then needs the 2-D input)."""
    if x.dim() > 2 and not x.requires_grad:
        lead = tuple(x.shape[:-1])
        return linear(x.reshape(-1, x.shape[-1]), w, b).reshape(lead + (w.shape[0],))
    return linear(x, w, b)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of ``interpolate``."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _additive(mask, dtype, what):
    """A bool (True = masked) or float mask as an additive float array."""
    m = mask._data
    if m.dtype == np.bool_:
        return np.where(m, dtype.type(-np.inf), dtype.type(0)).astype(dtype)
    if m.dtype.kind not in "fV":
        raise AssertionError(f"only bool and floating types of {what} are supported")
    return m.astype(dtype, copy=False)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False, batch_first=False):
    """Multi-head attention of (L, N, E) inputs (or (N, L, E) with ``batch_first``, or
    unbatched (L, E)); returns (output, weights or None)."""
    same = query is key and key is value
    unbatched = query.dim() == 2
    if unbatched:
        query, key, value = (t.reshape((t.shape[0], 1, t.shape[1])) for t in (query, key, value))
        batch_first = False
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.reshape((1,) + tuple(key_padding_mask.shape))
    elif query.dim() != 3:
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D "
                             "query tensor")
    sa = 1 if batch_first else 0  # sequence axis
    ba = 1 - sa
    E = query.shape[2]
    N = query.shape[ba]
    L, S = query.shape[sa], key.shape[sa]
    if E != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {E}")
    head_dim = E // num_heads
    if head_dim * num_heads != E:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads {num_heads}")
    if key.shape[sa] != value.shape[sa] or key.shape[ba] != value.shape[ba]:
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")
    # input projections; self-attention without extras: one GEMM projects q, k and v
    # together (as PyTorch's packed in-projection), and the attention core takes the packed result
    packed = (same and not use_separate_proj_weight and static_k is None and static_v is None
              and bias_k is None and bias_v is None and not add_zero_attn)
    if packed:
        qkv = _linear(query, in_proj_weight, in_proj_bias)
        q = k = v = None
    else:
        if not use_separate_proj_weight:
            wq, wk, wv = in_proj_weight[0:E], in_proj_weight[E:2 * E], in_proj_weight[2 * E:]
        else:
            wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
        if in_proj_bias is not None:
            bq, bk, bv = in_proj_bias[0:E], in_proj_bias[E:2 * E], in_proj_bias[2 * E:]
        else:
            bq = bk = bv = None
        q = _linear(query, wq, bq)
        k = _linear(key, wk, bk) if static_k is None else static_k
        v = _linear(value, wv, bv) if static_v is None else static_v
    dt = (qkv if packed else q)._data.dtype
    # masks as one additive array broadcastable to (N, H, L, S')
    if key_padding_mask is not None and attn_mask is not None and \
            (key_padding_mask._data.dtype == np.bool_) != (attn_mask._data.dtype == np.bool_):
        warnings.warn("Support for mismatched key_padding_mask and attn_mask is deprecated. Use same type for both "
                      "instead.", stacklevel=3)
    m = None
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if attn_mask is not None:
        am = _additive(attn_mask, dt, "attn_mask")
        if am.ndim == 2:
            if am.shape != (L, S):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(am.shape)}, but should be {(L, S)}.")
            m = am[None, None]
        elif am.ndim == 3:
            if am.shape != (N * num_heads, L, S):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(am.shape)}, but should be "
                                   f"{(N * num_heads, L, S)}.")
            m = am.reshape(N, num_heads, L, S)
        else:
            raise RuntimeError(f"attn_mask's dimension {am.ndim} is not supported")
    kpm = None
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (N, S):
            raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        kpm = _additive(key_padding_mask, dt, "key_padding_mask")[:, None, None, :]
    if bias_k is not None and bias_v is not None:
        shape = (1, N, E) if sa == 0 else (N, 1, E)
        k = cat([k, bias_k.reshape((1, 1, E)).expand(shape)], sa)
        v = cat([v, bias_v.reshape((1, 1, E)).expand(shape)], sa)
        m = None if m is None else np.concatenate([m, np.zeros(m.shape[:-1] + (1,), dt)], -1)
        kpm = None if kpm is None else np.concatenate([kpm, np.zeros(kpm.shape[:-1] + (1,), dt)], -1)
    if add_zero_attn:
        shape = [1, 1, E]
        shape[ba] = N
        z = finish(None, np.zeros(shape, dt))
        k, v = cat([k, z], sa), cat([v, z], sa)
        m = None if m is None else np.concatenate([m, np.zeros(m.shape[:-1] + (1,), dt)], -1)
        kpm = None if kpm is None else np.concatenate([kpm, np.zeros(kpm.shape[:-1] + (1,), dt)], -1)
    if attn_mask is not None and attn_mask._requires_grad and attn_mask._data.dtype == dt:
        # a float mask that requires grad stays in the graph: the same steps as tensor ops
        mt = attn_mask.reshape(m.shape[:-1] + (S,))
        if m.shape[-1] > S:
            mt = cat([mt, finish(None, np.zeros(m.shape[:-1] + (m.shape[-1] - S,), dt))], -1)
        mask = mt if kpm is None else mt + finish(None, kpm)
    else:
        if kpm is not None:
            m = kpm if m is None else m + kpm
        mask = None if m is None else finish(None, np.ascontiguousarray(m))
    out, w = multi_head_attention_core(qkv if packed else q, k, v, num_heads, mask, dropout_p if training else 0.0,
                                       need_weights, average_attn_weights, batch_first)
    # on (rows, E) and viewed back, as PyTorch's: one addmm whatever the bias's layout
    shape = tuple(out.shape)
    out = _linear(out.reshape((-1, shape[-1])), out_proj_weight, out_proj_bias)
    out = out.view(shape[:-1] + (out.shape[-1],))
    if unbatched:
        out = out.squeeze(1)
        if w is not None:
            w = w.squeeze(0)
    return out, w
