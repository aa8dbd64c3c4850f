"""Embeddings: row lookup (embedding), its renormalisation (embedding_renorm_) and bags of
rows reduced by sum, mean or max (embedding_bag).

The lookup's gradient is a sum of the upstream rows into the weight's rows (in lookup
order, as PyTorch's kernel adds them); that sum's own gradient is the lookup again.
"""
import numpy as np

from ._base import check_devices
from ._base import xp_for
from ._base import OpNode, node_for, save, finish, arr, Tensor, _state
from ._seqkit import graph_grads
from .linalg import matmul
from .resample import _scatter_axis
from .index import add_rows

__all__ = ["embedding_renorm_"]  # torch.embedding/embedding_bag take (weight, indices): F has the user forms

_INDEX_KINDS = ("int64", "int32")


def _check_indices(indices, fn):
    if not isinstance(indices, Tensor):
        raise TypeError(f"{fn}(): argument 'indices' (position 2) must be Tensor, not {type(indices).__name__}")
    if indices._data.dtype.name not in _INDEX_KINDS:
        from ._base import type_name
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {type_name(indices)} instead (while checking arguments for {fn})")


# *** lookup ***

def _lookup_scale(idx, num, padding_idx, scale_grad_by_freq, dtype):
    """Per-lookup factor of the gradient: 0 at padding_idx, 1/count with scale_grad_by_freq."""
    xp = xp_for(idx, num, scale_grad_by_freq)
    s = None
    if scale_grad_by_freq:
        s = (1.0 / xp.bincount(idx, minlength=num)[idx]).astype(dtype)
    if padding_idx is not None and padding_idx >= 0:
        m = (idx != padding_idx).astype(dtype)
        s = m if s is None else s * m
    return s


class EmbeddingBackward0(OpNode):
    sparse = False

    def backward(self, g):
        if self.sparse:
            from ..sparse._tensor import embedding_sparse_backward
            return embedding_sparse_backward(g, self.idx, self.num, self.padding_idx, self.freq)
        return _dense_backward(g, self.idx, self.num, self.padding_idx, self.freq)


class EmbeddingDenseBackward0(OpNode):
    def backward(self, gg):
        return _gather_rows(gg, self.idx, self.shape, self.padding_idx, self.freq, EmbeddingDenseBackwardBackward0)


class EmbeddingDenseBackwardBackward0(EmbeddingBackward0):
    pass


def _gather_rows(weight, idx, out_shape, padding_idx, freq, cls):
    """The lookup with the gradient's per-lookup factors (the adjoint of ``_dense_backward``)."""
    xp = xp_for(weight, idx, out_shape, freq)
    w = weight._data
    r = w[idx]
    s = _lookup_scale(idx, w.shape[0], padding_idx, freq, w.dtype)
    if s is not None:   # padding lookups are selected out, never multiplied (inf/nan stay out)
        r = xp.where(s[:, None] != 0, r * s[:, None], 0).astype(r.dtype, copy=False)
    r = r.reshape(tuple(out_shape) + w.shape[1:])
    node = node_for(cls, (weight,))
    if node is not None:
        node.idx, node.num, node.padding_idx, node.freq = idx, w.shape[0], padding_idx, freq
    return finish(node, r)


def _dense_backward(g, idx, num, padding_idx, freq):
    """The weight gradient of a lookup: upstream rows summed into their weight rows."""
    xp = xp_for(g, idx, num, freq)
    d = g._data
    rows = d.reshape(idx.shape[0], d.shape[-1])
    s = _lookup_scale(idx, num, padding_idx, freq, d.dtype)
    if s is not None:   # as PyTorch's kernel, padding lookups are skipped: inf/nan there never arrive
        rows = xp.where(s[:, None] != 0, rows * s[:, None], 0).astype(rows.dtype, copy=False)
    if type(rows) is np.ndarray and rows.dtype in (np.float32, np.float64):
        # summed in lookup order, as PyTorch's kernel: its bits
        r = add_rows(np.zeros((num, rows.shape[1]), rows.dtype), idx, rows)
    else:
        r = _scatter_axis(rows, idx, num, 0)
    node = node_for(EmbeddingDenseBackward0, (g,))
    if node is not None:
        node.idx, node.shape, node.padding_idx, node.freq = idx, d.shape[:-1], padding_idx, freq
    return finish(node, r)


def _flat_indices(indices, num):
    idx = indices._data.reshape(-1).astype(np.int64, copy=False)
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        raise IndexError("index out of range in self")
    return idx


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """``torch.nn.functional.embedding``: rows of ``weight`` picked by the integer ``input``."""
    check_devices(input, weight)
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    _check_indices(input, "embedding")
    num = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < num, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -num, "Padding_idx must be within num_embeddings"
            padding_idx = num + padding_idx
    idx = _flat_indices(input, num)
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
    pi = -1 if padding_idx is None else padding_idx
    w = weight._data
    r = w[idx].reshape(tuple(input._data.shape) + (w.shape[1],))
    node = node_for(EmbeddingBackward0, (weight,))
    if node is not None:
        node.idx, node.num, node.padding_idx, node.freq = idx, num, pi, scale_grad_by_freq
        if sparse:
            node.sparse = True
    return finish(node, r)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Rescale (in place) the rows of ``input`` named by ``indices`` whose norm exceeds ``max_norm``."""
    xp = xp_for(input, indices, max_norm)
    w = input._data
    u = xp.unique(_flat_indices(indices, w.shape[0]))
    rows = w[u]
    if norm_type == float("inf"):
        norms = xp.abs(rows).max(axis=1)
    else:
        norms = (xp.abs(rows) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    big = norms > max_norm
    if big.any():
        scale = (max_norm / (norms[big] + 1e-7)).astype(w.dtype)
        w[u[big]] = rows[big] * scale[:, None]
    input._bump_version()
    return input


# *** bags ***

class EmbeddingBagBackward0(OpNode):
    sparse = False

    def backward(self, g):
        # create_graph: differentiate the composite, so that double backward works (dense gradients only)
        if _state.grad and not self.sparse:
            nf = self.next_functions
            inputs = [self.weight_t] + ([self.saved_tensors[0]] if len(nf) > 1 else [])
            res = graph_grads(self._composite, inputs, [g])
            return tuple(res[i] if nf[i][0] is not None else None for i in range(len(inputs)))
        return self._backward_arrays(g)

    def _composite(self, weight, psw=None):
        """The bag reduction as a gather and a (bags x lookups) matrix product."""
        xp = xp_for(weight, psw)
        D = self.dim
        if self.mode == "max":
            mi = self.max_idx
            ok = mi >= 0
            rows = finish(None, self.idx[xp.where(ok, mi, 0)])
            cols = finish(None, xp.broadcast_to(xp.arange(D), mi.shape).copy())
            return weight[rows, cols] * finish(None, ok.astype(weight._data.dtype))
        rows = weight[finish(None, self.idx)]
        if psw is not None:
            rows = rows * psw.reshape(-1)[finish(None, xp.flatnonzero(self.keep))].unsqueeze(1)
        B = self.counts.shape[0]
        S = xp.zeros((B, self.idx.size), weight._data.dtype)
        S[self.bag, xp.arange(self.idx.size)] = 1.0 / self.counts[self.bag] if self.mode == "mean" else 1.0
        return matmul(finish(None, S), rows)

    def _backward_arrays(self, g):
        xp = xp_for(g)
        psw = self.saved_tensors[0] if len(self.next_functions) > 1 else None
        gd = g._data
        nf = self.next_functions
        gw = gp = None
        idx, bag, num, D = self.idx, self.bag, self.num, self.dim
        if self.mode == "max":
            if nf[0][0] is not None:
                mi = self.max_idx  # (B, D) positions into idx; -1 for empty bags
                ok = mi >= 0
                flat = (idx[xp.where(ok, mi, 0)] * D + xp.arange(D)[None, :])[ok]
                gw = xp.bincount(flat, weights=gd[ok], minlength=num * D).reshape(num, D).astype(gd.dtype)
        else:
            per = gd[bag]
            if self.mode == "mean":
                per = per / self.counts[bag][:, None]
            if nf[0][0] is not None:
                rows = per if psw is None else per * psw._data[self.keep][:, None]
                if self.freq:
                    rows = rows / xp.bincount(idx, minlength=num)[idx][:, None]
                if self.sparse:   # one row per kept lookup, as a sparse COO gradient
                    from ..sparse._tensor import _coo
                    gw = _coo(idx.reshape(1, -1), xp.ascontiguousarray(rows, dtype=gd.dtype), (num, D))
                else:
                    gw = _scatter_axis(rows.astype(gd.dtype, copy=False), idx, num, 0)
            if len(nf) > 1 and nf[1][0] is not None:
                full = xp.zeros(self.n_all, gd.dtype)
                full[self.keep] = (self.wrows * per).sum(axis=1)
                gp = full
        if gw is not None and not isinstance(gw, Tensor):
            gw = finish(None, arr(gw))
        return (gw,) + (
            (None if gp is None else finish(None, gp),) if len(nf) > 1 else ())


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """``torch.nn.functional.embedding_bag``: sums, means or maxima of bags of embeddings."""
    xp = xp_for(input, weight, offsets, max_norm, scale_grad_by_freq, sparse, per_sample_weights, include_last_offset)
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not None, "
                         f"then it must have the same shape as the input ({tuple(input.shape)})")
    _check_indices(input, "embedding_bag")
    if weight._data.dtype.kind not in "fV":
        from ._base import _error_type_name
        raise RuntimeError("Expected tensor for argument #1 'weight' to have one of the following scalar types: Half, "
                           f"BFloat16, Float, Double; but got {_error_type_name(weight)} instead (while checking arguments "
                           "for embedding_bag)")
    num, D = weight.shape
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             "fixed length sequences. However, found offsets of type " + str(type(offsets)))
        B, L = input.shape
        off = xp.arange(0, B * L, L, dtype=np.int64) if L else xp.zeros(B, np.int64)
        include_last_offset = False
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        off = offsets._data.astype(np.int64)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and per_sample_weights._data.dtype != weight._data.dtype:
        from ._base import type_name
        raise RuntimeError("Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1 "
                           f"'per_sample_weights'; but type {type_name(weight)} does not equal "
                           f"{type_name(per_sample_weights)} (while checking arguments for embedding_bag)")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                  "on GitHub.")
    idx_all = input._data.reshape(-1).astype(np.int64)
    n = idx_all.shape[0]
    if off.size and off[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {off[0]}")
    if off.size and off[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of {off[-1]}")
    bad = xp.flatnonzero((idx_all < 0) | (idx_all >= num))
    if bad.size:
        raise RuntimeError(f"Index {bad[0]} of input takes value {idx_all[bad[0]]} which is not in the valid "
                           f"range [0, {num})")
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += num
    B = off.shape[0] - 1 if include_last_offset else off.shape[0]
    bag_all = xp.searchsorted(off[:B] if B else off[:0], xp.arange(n), side="right") - 1
    keep = bag_all >= 0
    if include_last_offset and off.size:
        keep &= xp.arange(n) < off[-1]
    if padding_idx is not None:
        keep &= idx_all != padding_idx
    idx, bag = idx_all[keep], bag_all[keep]
    w = weight._data
    rows = w[idx]
    psw = per_sample_weights
    counts = xp.bincount(bag, minlength=B)[:B] if B else xp.zeros(0, np.int64)
    max_idx = None
    if mode == "max":
        out = xp.zeros((B, D), w.dtype)
        max_idx = xp.full((B, D), -1, np.int64)
        if idx.size:
            starts = xp.flatnonzero(xp.concatenate(([True], bag[1:] != bag[:-1])))
            bags = bag[starts]
            # torch scans each bag keeping its first row and replacing it only by a strictly
            # greater value: a NaN wins only as the bag's first row, a later NaN is skipped
            # (never greater), and ties keep the earliest row.
            real = xp.where(xp.isnan(rows), -np.inf, rows)
            best = xp.maximum.reduceat(real, starts, axis=0)
            seg = xp.zeros(idx.size, np.int64)
            seg[starts[1:]] = 1
            pos = xp.where(real == best[xp.cumsum(seg)], xp.arange(idx.size)[:, None], idx.size)
            first_nan = xp.isnan(rows[starts])
            max_idx[bags] = xp.where(first_nan, starts[:, None], xp.minimum.reduceat(pos, starts, axis=0))
            out[bags] = xp.where(first_nan, rows[starts], best)
    else:
        src = rows if psw is None else rows * psw._data.reshape(-1)[keep][:, None].astype(w.dtype)
        out = _scatter_axis(src, bag, B, 0)
        if mode == "mean":
            out = out / xp.maximum(counts, 1)[:, None].astype(w.dtype)
    inputs = (weight,) if psw is None else (weight, psw)
    node = node_for(EmbeddingBagBackward0, inputs)
    if node is not None:
        node.idx, node.bag, node.num, node.dim, node.mode = idx, bag, num, D, mode
        node.freq, node.max_idx, node.keep, node.n_all = scale_grad_by_freq, max_idx, keep, n
        node.counts = xp.maximum(counts, 1).astype(w.dtype)
        node.wrows = rows
        node.weight_t = weight
        if sparse:
            node.sparse = True
        if psw is not None:
            save(node, psw)
    return finish(node, arr(out.astype(w.dtype, copy=False)))


TENSOR_METHODS = {}
INPLACE = {}
