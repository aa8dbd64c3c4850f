"""Variable-length sequences: PackedSequence, pack_padded_sequence, pad_packed_sequence,
pad_sequence, pack_sequence, unpad_sequence, unpack_sequence.

Packing and unpacking are row gathers (differentiable), so gradients flow from a
recurrent layer's packed output back to the padded input.
"""
from collections import namedtuple

import numpy as np

from ..._tensor import Tensor
from ...ops._base import finish
from ...ops.shape import cat, stack
from ...ops.resample import constant_pad_nd

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence", "pack_sequence",
           "unpad_sequence", "unpack_sequence"]

_PackedSequenceBase = namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def _long(a):
    return finish(None, np.asarray(a, dtype=np.int64))


class PackedSequence(_PackedSequenceBase):
    """Holds the time-major data of a batch of sequences sorted by length, and the number of
    sequences still running at each step (``batch_sizes``)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _long(np.argsort(sorted_indices._data, kind="stable"))
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def double(self):
        return self.to(dtype=__import__("retrograd").float64)

    def float(self):
        return self.to(dtype=__import__("retrograd").float32)

    def cpu(self, *args, **kwargs):
        return self

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _lengths_array(lengths):
    if isinstance(lengths, Tensor):
        return np.asarray(lengths._data).astype(np.int64).reshape(-1)
    return np.asarray(lengths, dtype=np.int64).reshape(-1)


def _pack_index(lengths_sorted, L, N):
    """Flat (t * N + b) indices of the packed rows, time-major, and the batch sizes."""
    t = np.arange(L)
    batch_sizes = (lengths_sorted[None, :] > t[:, None]).sum(axis=1)
    batch_sizes = batch_sizes[batch_sizes > 0]
    idx = np.concatenate([s * N + np.arange(b) for s, b in enumerate(batch_sizes)]) if batch_sizes.size \
        else np.zeros(0, np.int64)
    return idx.astype(np.int64), batch_sizes.astype(np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (L, N, *) (or (N, L, *)) whose sequences have ``lengths``."""
    lens = _lengths_array(lengths)
    if enforce_sorted:
        if lens.size > 1 and np.any(lens[:-1] < lens[1:]):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
        order = np.arange(lens.size)
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_indices = _long(order)
    if lens.size and lens.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    bd = 0 if batch_first else 1
    if input.shape[bd] != lens.size:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lens.size} (batch_size="
                           f"{input.shape[bd]})")
    td = 1 - bd
    L, N = input.shape[td], input.shape[bd]
    if lens.size and lens.max() > L:
        raise RuntimeError(f"Expected sequence length to be larger than or equal to max sequence length in "
                           f"lengths, but got {L} < {lens.max()}")
    ls = lens[order]
    idx, batch_sizes = _pack_index(ls, L, N)
    # row (t, b_sorted) of the packed data comes from padded[t, order[b]]
    t_of, b_of = idx // N, idx % N
    src = (t_of * N + order[b_of]) if td == 0 else (order[b_of] * L + t_of)
    rest = tuple(input.shape[2:])
    flat = input.reshape((L * N,) + rest)
    data = flat[_long(src)]
    return PackedSequence(data, _long(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Inverse of ``pack_padded_sequence``: returns (padded, lengths)."""
    data, batch_sizes = sequence.data, sequence.batch_sizes._data.astype(np.int64)
    L = int(batch_sizes.size)
    N = int(batch_sizes[0]) if L else 0
    if total_length is not None:
        if total_length < L:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {L}")
        L_out = total_length
    else:
        L_out = L
    rest = tuple(data.shape[1:])
    lengths_sorted = (batch_sizes[None, :] > np.arange(N)[:, None]).sum(axis=1)
    # slot (t, b) of the padded output takes packed row pos[t, b], or the extra padding row
    T = data.shape[0]
    pos = np.full((L_out, N), T, np.int64)
    start = 0
    for t, b in enumerate(batch_sizes):
        pos[t, :b] = start + np.arange(b)
        start += b
    unsorted = sequence.unsorted_indices
    order = np.arange(N) if unsorted is None else unsorted._data.astype(np.int64)
    pos = pos[:, order]
    lengths = lengths_sorted[order]
    if batch_first:
        pos = pos.T
    fill = finish(None, np.full((1,) + rest, padding_value, data._data.dtype))
    ext = cat([data, fill], 0)
    padded = ext[_long(pos.reshape(-1))].reshape(pos.shape + rest)
    return padded, _long(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of different lengths (each (L_i, *)) into (L, N, *) (or (N, L, *))."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0)) if hasattr(sequences, "unbind") else [sequences[i] for i in
                                                                                     range(sequences.shape[0])]
    sequences = list(sequences)
    L = max(s.shape[0] for s in sequences)
    out = []
    for s in sequences:
        extra = L - s.shape[0]
        pad = [0, 0] * (s.dim() - 1) + ([0, extra] if padding_side == "right" else [extra, 0])
        out.append(constant_pad_nd(s, pad, padding_value) if extra else s)
    return stack(out, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences of different lengths."""
    lengths = _long([s.shape[0] for s in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of unpadded sequences of a padded batch."""
    lens = _lengths_array(lengths)
    out = []
    for i, n in enumerate(lens):
        s = padded_sequences[i] if batch_first else padded_sequences[:, i]
        out.append(s[:int(n)])
    return out


def unpack_sequence(packed_sequences):
    """The list of sequences held by a PackedSequence."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
