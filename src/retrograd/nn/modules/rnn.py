"""Recurrent layers: RNN, LSTM, GRU and their cells.

The input projection of all steps is one GEMM up front. LSTM (without projection), GRU and
RNN layers then run each direction as one node whose time loop works on arrays (backward
through time included; the LSTM's node takes its input projection in too; under
create_graph it differentiates the tensor-op composite);
projected LSTM runs one tensor-op cell per time step. Packed sequences run on
their padded form with a per-step mask: finished sequences keep their last state.
"""
import math
import numbers
import warnings

import numpy as np

from ... import _creation
from ...ops._base import finish
from ...ops._seqkit import (gru_composite, gru_layer, gru_pointwise, lstm_composite, lstm_layer, lstm_pointwise,
                             rnn_layer)
from ...ops.shape import cat, stack, unbind
from ...ops.unary import tanh, relu
from ..parameter import Parameter
from .. import functional as F, init
from .._functional_seq import _linear
from ..utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _dropout(x, p, training):
    fn = getattr(F, "dropout", None)
    if fn is not None:
        return fn(x, p, training)
    if not training or p == 0:
        return x
    keep = _creation._engine(None).unit53(x.numel()).reshape(tuple(x.shape)) < 1 - p
    return x * finish(None, (keep / (1 - p)).astype(x._data.dtype))


# *** cells as tensor ops ***

def _rnn_step(gx, h, w_hh, b_hh, nonlinearity):
    a = gx + F.linear(h, w_hh, b_hh)
    return tanh(a) if nonlinearity == "tanh" else relu(a)


class RNNBase(Module):
    """Parameters and the time loop shared by RNN, LSTM and GRU."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode == "LSTM":
            gate_size = 4 * hidden_size
        elif mode == "GRU":
            gate_size = 3 * hidden_size
        elif mode in ("RNN_TANH", "RNN_RELU"):
            gate_size = hidden_size
        else:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self._flat_weights_names = []
        self._all_weights = []
        real_hidden = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih_l{}{}", (gate_size, layer_input_size)),
                          ("weight_hh_l{}{}", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr_l{}{}", (proj_size, hidden_size)))
                names = []
                for fmt, shape in shapes:
                    name = fmt.format(layer, suffix)
                    setattr(self, name, Parameter(_creation.empty(shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, w) for w in weights] for weights in self._all_weights]

    def flatten_parameters(self):
        pass

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # --- the loop -------------------------------------------------------------------
    def _params(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""
        g = lambda n: getattr(self, f"{n}_l{layer}{suffix}")  # noqa: E731
        b_ih = g("bias_ih") if self.bias else None
        b_hh = g("bias_hh") if self.bias else None
        w_hr = g("weight_hr") if self.proj_size > 0 else None
        return g("weight_ih"), g("weight_hh"), b_ih, b_hh, w_hr

    def _direction(self, x, h, c, params, reverse, masks):
        """Run one direction over time-major ``x`` (L, N, F); returns (outputs (L, N, H), h, c)."""
        w_ih, w_hh, b_ih, b_hh, w_hr = params
        if self.mode == "LSTM" and w_hr is None and x.shape[0] > 0:
            return lstm_layer(x, h, c, w_ih, w_hh, b_ih, b_hh, reverse, masks)
        gx = _linear(x, w_ih, b_ih)
        if self.mode == "GRU" and gx.shape[0] > 0:
            return (*gru_layer(gx, h, w_hh, b_hh, reverse, masks), None)
        if self.mode in ("RNN_TANH", "RNN_RELU") and gx.shape[0] > 0:
            return (*rnn_layer(gx, h, w_hh, b_hh, self.mode == "RNN_RELU", reverse, masks), None)
        steps = unbind(gx, 0)
        L = len(steps)
        outs = [None] * L
        order = range(L - 1, -1, -1) if reverse else range(L)
        for t in order:
            gx = steps[t]
            if self.mode == "LSTM":
                h2, c2 = lstm_pointwise(gx, F.linear(h, w_hh, b_hh), c)
                if w_hr is not None:
                    h2 = F.linear(h2, w_hr)
            elif self.mode == "GRU":
                h2, c2 = gru_pointwise(gx, F.linear(h, w_hh, b_hh), h), None
            else:
                h2, c2 = _rnn_step(gx, h, w_hh, b_hh, "tanh" if self.mode == "RNN_TANH" else "relu"), None
            if masks is not None:
                m, nm = masks[t]
                outs[t] = h2 * m
                h = h2 * m + h * nm
                if c2 is not None:
                    c = c2 * m + c * nm
            else:
                outs[t] = h2
                h, c = h2, c2
        return stack(outs, 0), h, c

    def forward(self, input, hx=None):
        is_lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        D = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        sorted_indices = unsorted_indices = None
        masks = None
        if packed:
            sorted_indices, unsorted_indices = input.sorted_indices, input.unsorted_indices
            sorted_pack = PackedSequence(input.data, input.batch_sizes, None, None)
            x, lengths = pad_packed_sequence(sorted_pack)
            bs = input.batch_sizes._data
            N = int(bs[0])
            dt = x._data.dtype
            lens = lengths._data
            masks = []
            for t in range(x.shape[0]):
                m = (t < lens).astype(dt).reshape(N, 1)
                masks.append((finish(None, m), finish(None, 1 - m)))
            unbatched = False
        else:
            nd = input.dim()
            if nd not in (2, 3):
                raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {nd}D tensor instead")
            unbatched = nd == 2
            x = input
            if unbatched:
                x = x.reshape((x.shape[0], 1, x.shape[1]))
            elif self.batch_first:
                x = _swap01(x)
            N = x.shape[1]
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{x.shape[-1]}")
        hshape = (self.num_layers * D, N, real_hidden)
        cshape = (self.num_layers * D, N, self.hidden_size)
        if hx is None:
            # one zero state per shape, shared by every layer and direction (the layers only
            # read their first states)
            z = _creation.zeros(hshape[1:], dtype=x.dtype, device=x.device)
            zc = (z if cshape == hshape else _creation.zeros(cshape[1:], dtype=x.dtype, device=x.device)) \
                if is_lstm else None
            h_init = [z] * hshape[0]
            c_init = [zc] * cshape[0] if is_lstm else None
        else:
            if is_lstm:
                h0, c0 = hx
            else:
                h0, c0 = hx, None
            if unbatched:
                if h0.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {h0.dim()}-D tensor")
                h0 = h0.reshape((h0.shape[0], 1, h0.shape[1]))
                if c0 is not None:
                    c0 = c0.reshape((c0.shape[0], 1, c0.shape[1]))
            elif not packed and h0.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {h0.dim()}-D tensor")
            if sorted_indices is not None:
                h0 = h0[:, sorted_indices]
                c0 = c0[:, sorted_indices] if c0 is not None else None
            if tuple(h0.shape) != hshape:
                what = "hidden" if not is_lstm else "hidden[0]"
                raise RuntimeError(f"Expected {what} size {hshape}, got [{', '.join(map(str, h0.shape))}]")
            if c0 is not None and tuple(c0.shape) != cshape:
                raise RuntimeError(f"Expected hidden[1] size {cshape}, got [{', '.join(map(str, c0.shape))}]")
            h_init = unbind(h0, 0)
            c_init = unbind(c0, 0) if c0 is not None else None
        layer_in = x
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(D):
                k = layer * D + d
                o, h, c = self._direction(layer_in, h_init[k], c_init[k] if c_init is not None else None,
                                          self._params(layer, d), d == 1, masks)
                outs.append(o)
                h_n.append(h)
                c_n.append(c)
            layer_in = outs[0] if D == 1 else cat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = _dropout(layer_in, self.dropout, True)
        output = layer_in
        h_n = stack(h_n, 0)
        c_n = stack(c_n, 0) if is_lstm else None
        if packed:
            lengths_t = finish(None, np.asarray(lens, np.int64))
            out_packed = pack_padded_sequence(output, lengths_t)
            output = PackedSequence(out_packed.data, input.batch_sizes, sorted_indices, unsorted_indices)
            if unsorted_indices is not None:
                h_n = h_n[:, unsorted_indices]
                c_n = c_n[:, unsorted_indices] if c_n is not None else None
        elif unbatched:
            output = output.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        elif self.batch_first:
            output = _swap01(output)
        return (output, (h_n, c_n)) if is_lstm else (output, h_n)


def _swap01(x):
    """(A, B, *) -> (B, A, *) through unbind/stack (differentiable)."""
    return stack(unbind(x, 0), 1)


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ReLU)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self_nl = args[3]
            args = args[:3] + args[4:]
        else:
            self_nl = kwargs.pop("nonlinearity", "tanh")
        if self_nl == "tanh":
            mode = "RNN_TANH"
        elif self_nl == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self_nl}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)
        self.nonlinearity = self_nl


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o; optional projection ``proj_size``)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# *** cells ***

class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(_creation.empty((num_chunks * hidden_size, input_size), device=device,
                                                   dtype=dtype))
        self.weight_hh = Parameter(_creation.empty((num_chunks * hidden_size, hidden_size), device=device,
                                                   dtype=dtype))
        if bias:
            self.bias_ih = Parameter(_creation.empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(_creation.empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prep(self, input, hx, n_states):
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for h in (hx if isinstance(hx, tuple) else (hx,)):
                if h.dim() not in (1, 2):
                    raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {h.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.reshape((1, input.shape[0]))
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {self.input_size}")
        N = input.shape[0]
        if hx is None:
            states = tuple(_creation.zeros((N, self.hidden_size), dtype=input.dtype, device=input.device)
                           for _ in range(n_states))
        else:
            states = hx if isinstance(hx, tuple) else (hx,)
            if not batched:
                states = tuple(h.reshape((1, h.shape[0])) for h in states)
            for h in states:
                if h.shape[0] != N:
                    raise RuntimeError(f"Input batch size {N} doesn't match hidden0 batch size {h.shape[0]}")
                if h.shape[1] != self.hidden_size:
                    raise RuntimeError(f"hidden0 has inconsistent hidden_size: got {h.shape[1]}, expected "
                                       f"{self.hidden_size}")
        return input, states, batched


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        x, (h,), batched = self._prep(input, hx, 1)
        r = _rnn_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh,
                      self.nonlinearity)
        return r if batched else r.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; returns (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        x, (h, c), batched = self._prep(input, hx, 2)
        h2, c2 = lstm_composite(F.linear(x, self.weight_ih, self.bias_ih), F.linear(h, self.weight_hh, self.bias_hh),
                                c)
        if not batched:
            h2, c2 = h2.squeeze(0), c2.squeeze(0)
        return h2, c2


class GRUCell(RNNCellBase):
    """One GRU step."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prep(input, hx, 1)
        r = gru_composite(F.linear(x, self.weight_ih, self.bias_ih), F.linear(h, self.weight_hh, self.bias_hh), h)
        return r if batched else r.squeeze(0)
