"""Attention: scaled dot-product attention (one fused node: scores, softmax, dropout and
the weighted sum, with the flash-attention style backward) and the multi-head core that
nn.MultiheadAttention builds on (head split, attention, head merge, optional weights).
"""
import math

import numpy as np

from ._base import xp_for
from . import _blas
from ._base import OpNode, node_for, save, save_output, finish, finish_multi, arr, _state
from ._seqkit import graph_grads
from . import _accel_nn
from .linalg import matmul
from .activation import softmax
from .conv import _KERNEL_TYPES
from .. import _creation

__all__ = []


def _softmax_rows(s):
    """Softmax over the last axis, in place; rows that are entirely -inf give zeros
    (PyTorch's safe softmax); a NaN or +inf in a row makes the row NaN, as in PyTorch."""
    xp = xp_for(s)
    if s.ndim and not s.shape[-1]:
        return s        # (rows of no entries: nothing to normalise)
    if s.ndim and s.flags.c_contiguous:
        k = _accel_nn.usable(s)
        if k is not None:
            return _accel_nn.softmax_rows(k, s)
    m = s.max(axis=-1, keepdims=True)
    dead = m == -np.inf
    some_dead = xp is not np or dead.any()   # (a device selects always: no host question)
    if some_dead:
        xp.copyto(m, m.dtype.type(0), where=dead)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        s -= m
        xp.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
    if some_dead:
        xp.copyto(s, s.dtype.type(0), where=dead)
    return s


def _safe_softmax(s):
    """Differentiable softmax over the last dim whose rows of only -inf give zeros (and
    zero gradients), as PyTorch's ``_safe_softmax``."""
    xp = xp_for(s)
    dead = xp.isneginf(s._data).all(axis=-1, keepdims=True)
    if xp is np and not dead.any():   # (a device takes the selecting form: no host question)
        return softmax(s, -1)
    from .index import where
    zero = finish(None, xp.zeros((), s._data.dtype))
    dead_t = finish(None, dead)
    return where(dead_t, zero, softmax(where(dead_t, zero, s), -1))


def _dropout_mask(shape, p, dtype, xp=np):
    if p >= 1:
        return xp.zeros(shape, dtype)
    if xp is np:   # (PyTorch's dropout: bernoulli_(1 - p), a 53-bit uniform each)
        keep = _creation._engine(None).unit53(math.prod(shape)).reshape(shape) < 1 - p
    else:
        keep = xp.random.random(shape) >= p
    return keep.astype(dtype) / dtype.type(1 - p)


def _attend(q, k, v, mask, scale, drop, causal=False, out=None):
    """Forward on arrays: returns (out, p, p_dropped). ``causal``: hide the positions above
    the diagonal (top-left aligned), without a float mask: ``True`` as PyTorch's fused CPU
    kernel, which sets them to -inf before the scale multiplies (so a scale <= 0 makes them
    NaN or +inf); ``"add"`` as its composite path, which adds a -inf bias to the scaled
    scores (a +inf or NaN score there makes its row NaN). ``out``: where the weighted sum
    goes (a strided view of the caller's merged layout, so that no copy merges the heads)."""
    xp = xp_for(q, k, v, mask, scale, drop)
    # (NumPy's batched matmul runs several times slower with a transposed right operand
    # than with a contiguous copy of it)
    s = _blas.matmul(q, xp.ascontiguousarray(xp.swapaxes(k, -1, -2)))
    dt = q.dtype.type
    add = causal == "add"
    hidden = dt(-np.inf)
    if causal and not add and q.shape[-1]:
        with np.errstate(invalid="ignore"):
            hidden = hidden * dt(scale)
    # (no embedding: zero scores, whatever the scale)
    kern = _accel_nn.usable(s) if (causal or mask is None) and s.shape[-1] and s.flags.c_contiguous else None
    if kern is not None:    # scale, causal mask and softmax in two compiled passes around exp
        p = _accel_nn.softmax_rows(kern, s, dt(scale) if q.shape[-1] else None,
                                   s.shape[-2] if causal else 0, hidden, add)
    else:
        if q.shape[-1]:
            s *= dt(scale)
        if causal:
            L, S = s.shape[-2:]
            if add:
                xp.add(s, hidden, out=s, where=_above_diagonal(L, S, xp))
            else:
                xp.copyto(s, hidden, where=_above_diagonal(L, S, xp))
        elif mask is not None:
            if np.broadcast_shapes(s.shape, mask.shape) == s.shape:
                s += mask
            else:
                s = s + mask
        p = _softmax_rows(s)
    pd = p if drop is None else p * drop
    return _blas.matmul(pd, v, out), p, pd


_TRIU = {}


def _above_diagonal(L, S, xp=np):
    """The (L, S) bool mask of the positions a causal mask hides (cached per array module:
    read-only)."""
    m = _TRIU.get((L, S, xp.__name__))
    if m is None:
        m = ~xp.tril(xp.ones((L, S), bool))
        if xp is np:
            m.flags.writeable = False
        if len(_TRIU) > 32:
            _TRIU.clear()
        _TRIU[(L, S, xp.__name__)] = m
    return m


def _attend_backward(g, q, k, v, p, pd, drop, scale, out=None, outs=(None, None, None)):
    """Gradients (dq, dk, dv, dscores) of ``_attend`` for the upstream gradient ``g``.
    ``out``: the forward's output, where kept; the softmax's row sums sum(dp * p) are then
    the shorter sum(g * out) (flash attention's identity, dropout included). ``outs``:
    arrays (views of the caller's layout) that dq, dk and dv are written into, or Nones."""
    xp = xp_for(g, q, k, v, p, pd, drop, scale)
    dv = _blas.matmul(xp.swapaxes(pd, -1, -2), g, outs[2])
    dp = _blas.matmul(g, xp.ascontiguousarray(xp.swapaxes(v, -1, -2)))
    if drop is not None:
        dp *= drop
    if out is not None and out.shape == g.shape:
        rs = xp.einsum("...i,...i->...", g, out)[..., None]
    else:
        rs = (dp * p).sum(axis=-1, keepdims=True)
    dp -= rs
    dp *= p
    ds = dp
    sc = q.dtype.type(scale)
    dq = _blas.matmul(ds, k, outs[0])
    dq *= sc
    dk = _blas.matmul(xp.swapaxes(ds, -1, -2), q, outs[1])
    dk *= sc
    return dq, dk, dv, ds


def _sum_to(a, shape):
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and a.shape[lead + i] != 1)
    return a.sum(axis=axes).reshape(shape) if axes else a.reshape(shape)


# *** scaled_dot_product_attention ***

def _f32(a):
    return a.astype(np.float32) if a.dtype.kind == "V" else a


class ScaledDotProductFlashAttentionForCpuBackward0(OpNode):
    def backward(self, g):
        xp = xp_for(g)
        if _state.grad:  # create_graph: differentiate the composite, so that double backward works
            inputs = list(self.saved_tensors[:3]) + ([self.mask_t] if len(self.next_functions) > 3 else [])
            grads = graph_grads(self._composite, inputs, [g])
            return tuple(grads[i] if self.next_functions[i][0] is not None else None for i in range(len(inputs)))
        q, k, v = self.saved_tensors[:3]
        kd, vd, rep = k._data, v._data, self.rep
        if rep > 1:
            kd, vd = xp.repeat(kd, rep, axis=-3), xp.repeat(vd, rep, axis=-3)
        saved = self.saved_tensors
        out = saved[3]._data if len(saved) > 3 else None
        dq, dk, dv, ds = _attend_backward(_f32(g._data), _f32(q._data), _f32(kd), _f32(vd), self.p, self.pd, self.drop,
                                          self.scale, None if out is None else _f32(out))
        if rep > 1:
            dk = dk.reshape(dk.shape[:-3] + (dk.shape[-3] // rep, rep) + dk.shape[-2:]).sum(axis=-3)
            dv = dv.reshape(dv.shape[:-3] + (dv.shape[-3] // rep, rep) + dv.shape[-2:]).sum(axis=-3)
        nf = self.next_functions
        out = [_sum_to(dq, q._data.shape), _sum_to(dk, k._data.shape), _sum_to(dv, v._data.shape)]
        if len(nf) > 3:
            out.append(_sum_to(ds, self.mask_shape) if nf[3][0] is not None else None)
        dt = g._data.dtype
        return tuple(None if (a is None or nf[i][0] is None) else finish(None, arr(a if a.dtype == dt or i == 3 else
                                                                                  a.astype(dt)))
                     for i, a in enumerate(out))


    def _composite(self, q, k, v, m=None):
        xp = xp_for(q, k, v, m)
        if self.rep > 1:
            idx = xp.repeat(xp.arange(k.shape[-3]), self.rep)
            k, v = k[..., idx, :, :], v[..., idx, :, :]
        s = matmul(q, k.transpose(-2, -1))
        if q.shape[-1]:
            s = s * self.scale
        if m is not None:
            s = s + m
        elif self.const_mask is not None:
            s = s + finish(None, self.const_mask)
        elif self.causal:
            L, S = s.shape[-2:]
            s = s + finish(None, xp.where(_above_diagonal(L, S), q._data.dtype.type(-np.inf),
                                          q._data.dtype.type(0)))
        p = _safe_softmax(s)
        if self.drop is not None:
            p = p * finish(None, self.drop)
        return matmul(p, v)


class _MathSdpaBackward(ScaledDotProductFlashAttentionForCpuBackward0):
    """The same node where PyTorch takes its composite ("math") path, named after that
    path's last op."""


_MATH_SDPA = type("UnsafeViewBackward0", (_MathSdpaBackward,), {})
_MATH_SDPA_2D = type("MmBackward0", (_MathSdpaBackward,), {})


class _EmptySdpaBackward(OpNode):
    """Attention over an empty dimension: zeros, tied to q, k and v with zero derivatives
    (PyTorch adds ``0 * (q.sum() + k.sum() + v.sum())``)."""

    def backward(self, g):
        z = g.sum() * 0.0
        return tuple(z.expand(s) if nf[0] is not None else None for s, nf in zip(self.shapes, self.next_functions))


_EMPTY_SDPA = type("AddBackward0", (_EmptySdpaBackward,), {})


def _float_mask(attn_mask, dtype):
    xp = xp_for(attn_mask)
    m = attn_mask._data
    if m.dtype == np.bool_:
        return xp.where(m, dtype.type(0), dtype.type(-np.inf)).astype(dtype)
    return m.astype(dtype, copy=False)


def _cname(dt):
    from ._linear import _CN
    return _CN.get(dt.name, dt.name)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """``softmax(Q K^T * scale + mask) V`` with optional causal mask and dropout."""
    xp = xp_for(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    q, k, v = query._data, key._data, value._data
    if q.dtype != k.dtype or q.dtype != v.dtype:
        raise RuntimeError("Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if attn_mask is not None and attn_mask._data.dtype not in (np.bool_, q.dtype):
        raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {_cname(attn_mask._data.dtype)} and  query.dtype: {_cname(q.dtype)} "
                           "instead.")
    if q.dtype.kind not in "fcV":
        raise RuntimeError(f"expected scalar type Float but found {_KERNEL_TYPES.get(q.dtype.name, q.dtype.name)}")
    if q.dtype.kind == "V":  # bfloat16: computed in float32 (PyTorch's CPU kernel), rounded once
        q, k, v = _f32(q), _f32(k), _f32(v)
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError("Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{q.ndim} key.dim: {k.ndim} and value.dim: {v.ndim} instead.")
    if q.shape[-1] != k.shape[-1]:
        raise RuntimeError(f"Expected query and key to have the same embedding dimension, got {q.shape[-1]} and "
                           f"{k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise RuntimeError(f"Expected key and value to have the same sequence length, got {k.shape[-2]} and "
                           f"{v.shape[-2]}")
    rep = 1
    if enable_gqa and q.ndim >= 3 and q.shape[-3] != k.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]
        k, v = xp.repeat(k, rep, axis=-3), xp.repeat(v, rep, axis=-3)
    from .arithmetic import broadcast_error
    L, S = q.shape[-2], k.shape[-2]
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        xs, ys = q.shape[:-2], k.shape[:-2]
        raise (broadcast_error(xs, ys) if _no_bcast(xs, ys) else broadcast_error(xs, v.shape[:-2])) from None
    mask = None
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
    elif attn_mask is not None:
        mask = _float_mask(attn_mask, q.dtype)
        if _no_bcast(batch + (L, S), mask.shape):
            raise broadcast_error(batch + (L, S), mask.shape)
    out_shape = batch + (L, v.shape[-1])
    if v.size == 0 or 0 in out_shape:
        return _empty_attention(query, key, value, out_shape)
    sc = (1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else math.inf) if scale is None else scale
    drop = _dropout_mask(batch + (L, S), dropout_p, q.dtype, xp_for(q)) if dropout_p > 0 else None
    grad_mask = attn_mask is not None and attn_mask._data.dtype != np.bool_ and attn_mask._requires_grad
    inputs = (query, key, value) + ((attn_mask,) if grad_mask else ())
    # PyTorch's fused CPU kernel: 4-D q, k, v of one head size and one batch and head count
    # (GQA aside), no dropout, no mask gradient; its composite path otherwise
    flash = (q.ndim == k.ndim == v.ndim == 4 and q.shape[-1] == v.shape[-1] and drop is None and not grad_mask
             and q.shape[0] == key.shape[0] == value.shape[0] and k.shape[1] == v.shape[1] == q.shape[1])
    out, p, pd = _attend(q, k, v, mask, sc, drop, causal=(True if flash else "add") if is_causal else False)
    node = node_for(ScaledDotProductFlashAttentionForCpuBackward0 if flash else
                    _MATH_SDPA_2D if len(out_shape) == 2 and v.ndim == 2 else _MATH_SDPA, inputs)
    if node is not None:
        save(node, query, key, value)
        node.rep = rep
        node.p, node.pd, node.drop, node.scale = p, pd, drop, sc
        node.const_mask = None if grad_mask else mask
        node.causal = is_causal
        if grad_mask:
            node.mask_shape = attn_mask._data.shape
            node.mask_t = attn_mask
    res = finish(node, arr(out if out.dtype == query._data.dtype else out.astype(query._data.dtype)))
    if node is not None and flash:
        save_output(node, res)      # (as PyTorch's fused kernel keeps its output)
    return res


def _no_bcast(xs, ys):
    try:
        np.broadcast_shapes(tuple(xs), tuple(ys))
        return False
    except ValueError:
        return True


def _empty_attention(query, key, value, shape):
    xp = xp_for(query, key, value, shape)
    node = node_for(_EMPTY_SDPA, (query, key, value))
    if node is not None:
        node.shapes = (query._data.shape, key._data.shape, value._data.shape)
    return finish(node, xp.zeros(shape, query._data.dtype))


# *** multi-head attention core ***

class MultiheadAttentionBackward0(OpNode):
    """Backward of the head-split attention: inputs q, k, v (projected), or the packed
    (..., 3E) projection of self-attention; optional float mask. An output without a
    gradient (the weights, mostly) comes as None: its share is skipped, not computed from zeros."""
    packed = False
    _materialize_grads = False

    def _apply(self, grads):
        xp = xp_for(grads)
        nin = 1 if self.packed else 3
        if _state.grad:  # create_graph: differentiate the composite, so that double backward works
            inputs = list(self.saved_tensors) + ([self.mask_t] if len(self.next_functions) > nin else [])
            res = graph_grads(self._composite, inputs, list(grads))
            return tuple(res[i] if self.next_functions[i][0] is not None else None for i in range(len(inputs)))
        g_out = grads[0]
        g_w = grads[1] if len(grads) > 1 else None
        H, bf = self.heads, self.batch_first
        if g_out is None:
            shape, dt = self._out_meta[0]
            g_out = finish(None, xp.zeros(shape, dt))
        if self.packed:
            qkv = self.saved_tensors[0]._data
            E = qkv.shape[-1] // 3
            qh, kh, vh = (_split(qkv[..., i * E:(i + 1) * E], H, bf) for i in range(3))
        else:
            qh, kh, vh = (_split(t._data, H, bf) for t in self.saved_tensors)
        go = _split(g_out._data, H, bf)
        with_w = g_w is not None and self.need_weights
        nf = self.next_functions
        packed_g = outs = None
        if self.packed and not with_w and nf[0][0] is not None and _direct(qh):
            # dq, dk, dv written straight into the packed (L, N, 3E) gradient: no merge copies
            E = qh.shape[1] * qh.shape[3]
            packed_g = np.empty(self.saved_tensors[0]._data.shape, qh.dtype)
            outs = tuple(_split(packed_g[..., i * E:(i + 1) * E], H, bf) for i in range(3))
        dq, dk, dv, ds = _attend_backward(go, qh, kh, vh, self.p, self.pd, self.drop, self.scale, self.out,
                                          outs or (None, None, None))
        if with_w:
            gw = g_w._data
            N, L, S = qh.shape[0], qh.shape[2], kh.shape[2]
            gw = gw.reshape(N, H, L, S)
            gpd = gw if self.drop is None else gw * self.drop
            p = self.p
            dsw = p * (gpd - (gpd * p).sum(axis=-1, keepdims=True))
            sc = qh.dtype.type(self.scale)
            ds = ds + dsw
            dq = dq + _blas.matmul(dsw, kh) * sc
            dk = dk + _blas.matmul(xp.swapaxes(dsw, -1, -2), qh) * sc
        if packed_g is not None:
            res = [packed_g]
        elif self.packed:
            res = [None if nf[0][0] is None else _merge_packed((dq, dk, dv), bf)]
        else:
            res = [None if nf[i][0] is None else _merge(a, bf) for i, a in enumerate((dq, dk, dv))]
        out = [None if a is None else finish(None, arr(a)) for a in res]
        if len(nf) > nin:
            out.append(None if nf[nin][0] is None else finish(None, arr(_sum_to(ds, self.mask_shape))))
        return tuple(out)


    def _composite(self, *inputs):
        H, bf = self.heads, self.batch_first
        if self.packed:
            qkv, m = inputs[0], (inputs[1] if len(inputs) > 1 else None)
            E = qkv.shape[-1] // 3
            q, k, v = qkv[..., :E], qkv[..., E:2 * E], qkv[..., 2 * E:]
        else:
            q, k, v = inputs[:3]
            m = inputs[3] if len(inputs) > 3 else None

        def split(x):
            if not bf:
                x = x.transpose(0, 1)
            N, L, E = x.shape
            return x.reshape(N, L, H, E // H).transpose(1, 2)
        qh, kh, vh = split(q), split(k), split(v)
        s = matmul(qh, kh.transpose(-2, -1)) * self.scale
        if m is not None:
            s = s + m
        elif self.const_mask is not None:
            s = s + finish(None, self.const_mask)
        p = softmax(s, -1)
        pd = p if self.drop is None else p * finish(None, self.drop)
        o = matmul(pd, vh)
        N, _, L, d = o.shape
        o = o.transpose(1, 2).reshape(N, L, H * d)
        if not bf:
            o = o.transpose(0, 1)
        if not self.need_weights:
            return (o,)
        return o, pd.reshape(N * H, L, pd.shape[-1])


def _direct(x):
    """Whether products may write straight into strided views of host arrays of x's dtype."""
    return type(x) is np.ndarray and (x.dtype == np.float32 or x.dtype == np.float64)


def _split(x, H, batch_first):
    """(L, N, E) or (N, L, E) -> (N, H, L, E/H)."""
    xp = xp_for(x, H, batch_first)
    if not batch_first:
        x = xp.swapaxes(x, 0, 1)
    N, L, E = x.shape
    return x.reshape(N, L, H, E // H).transpose(0, 2, 1, 3)


def _merge(x, batch_first):
    """(N, H, L, d) -> (L, N, H*d) or (N, L, H*d)."""
    xp = xp_for(x, batch_first)
    N, H, L, d = x.shape
    # (one copy straight into the target order)
    r = xp.ascontiguousarray(x.transpose(0, 2, 1, 3) if batch_first else x.transpose(2, 0, 1, 3))
    return r.reshape(r.shape[:2] + (H * d,))


def _merge_packed(xs, batch_first):
    """(dq, dk, dv), each (N, H, L, d), merged side by side into one (L, N, 3E) (or
    (N, L, 3E)) array."""
    xp = xp_for(xs, batch_first)
    N, H, L, d = xs[0].shape
    E = H * d
    r = xp.empty((N, L, 3 * E) if batch_first else (L, N, 3 * E), xs[0].dtype)
    for i, x in enumerate(xs):
        dst = r[..., i * E:(i + 1) * E].reshape(r.shape[:2] + (H, d))
        dst[...] = x.transpose(0, 2, 1, 3) if batch_first else x.transpose(2, 0, 1, 3)
    return r


def multi_head_attention_core(q, k, v, num_heads, mask=None, dropout_p=0.0, need_weights=True,
                              average_attn_weights=True, batch_first=False):
    """Attention of projected ``q, k, v`` (L, N, E) split over ``num_heads`` heads; with
    ``k`` and ``v`` None, ``q`` is the packed (L, N, 3E) projection of self-attention (one
    GEMM made it, and the backward hands back one gradient).

    ``mask`` is an additive float tensor broadcastable to (N, H, L, S). Returns the merged
    output (before the output projection) and the attention weights (or None)."""
    xp = xp_for(q, k, v, num_heads, mask, dropout_p, need_weights, average_attn_weights, batch_first)
    H = num_heads
    packed = k is None
    if packed:
        E = q.shape[-1] // 3
        qd = q._data
        qh, kh, vh = (_split(qd[..., i * E:(i + 1) * E], H, batch_first) for i in range(3))
    else:
        qh, kh, vh = (_split(t._data, H, batch_first) for t in (q, k, v))
    m = None if mask is None else mask._data
    sc = 1.0 / math.sqrt(qh.shape[-1])
    drop = _dropout_mask(qh.shape[:-1] + (kh.shape[2],), dropout_p, qh.dtype, xp_for(qh)) if dropout_p > 0 else None
    merged = None
    if _direct(qh):     # the weighted sum written in the merged (L, N, E) layout: no merge copy
        N, _, L, d = qh.shape
        merged = np.empty((N, L, H, vh.shape[-1]) if batch_first else (L, N, H, vh.shape[-1]), qh.dtype)
        out = merged.transpose(0, 2, 1, 3) if batch_first else merged.transpose(1, 2, 0, 3)
    else:
        out = None
    out, p, pd = _attend(qh, kh, vh, m, sc, drop, out=out)
    outs = [_merge(out, batch_first) if merged is None else merged.reshape(merged.shape[:2] + (H * vh.shape[-1],))]
    if need_weights:    # per head, (N*H, L, S): viewed and averaged below by tensor ops, as PyTorch's are
        outs.append(xp.ascontiguousarray(pd).reshape((pd.shape[0] * pd.shape[1],) + pd.shape[2:]))
    grad_mask = mask is not None and mask._requires_grad
    ins = (q,) if packed else (q, k, v)
    node = node_for(MultiheadAttentionBackward0, ins + ((mask,) if grad_mask else ()))
    res = finish_multi(node, outs)
    if node is not None:
        save(node, *ins)
        node.packed = packed
        node.heads, node.batch_first, node.p, node.pd, node.drop, node.scale = H, batch_first, p, pd, drop, sc
        node.need_weights = need_weights
        node.out = out      # (a view of the merged output: its one consumer, the out-projection,
        #                    never writes to it)
        node.const_mask = None if grad_mask else m
        if grad_mask:
            node.mask_shape = m.shape
            node.mask_t = mask
    if not need_weights:
        return res[0], None
    w = res[1].view(pd.shape)
    return res[0], (w.mean(1) if average_attn_weights else w)


TENSOR_METHODS = {}
INPLACE = {}
