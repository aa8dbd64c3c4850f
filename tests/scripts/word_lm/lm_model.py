"""The language models: an embedding, a recurrent core (Elman RNN with tanh or ReLU, LSTM or
GRU) or a Transformer encoder with sinusoidal positions, and a decoder to the vocabulary."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RecurrentLM(nn.Module):
    def __init__(self, kind, ntoken, ninp, nhid, nlayers, dropout=0.2, tie=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.embed = nn.Embedding(ntoken, ninp)
        if kind in ("LSTM", "GRU"):
            self.rnn = getattr(nn, kind)(ninp, nhid, nlayers, dropout=dropout)
        else:
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity={"RNN_TANH": "tanh", "RNN_RELU": "relu"}[kind],
                              dropout=dropout)
        self.head = nn.Linear(nhid, ntoken)
        if tie:
            if nhid != ninp:
                raise ValueError("tied weights need nhid == emsize")
            self.head.weight = self.embed.weight
        self.kind, self.nhid, self.nlayers = kind, nhid, nlayers
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)
        nn.init.zeros_(self.head.bias)
        nn.init.uniform_(self.head.weight, -0.1, 0.1)

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.drop(self.embed(x)), hidden)
        return F.log_softmax(self.head(self.drop(out)).view(-1, self.ntoken), dim=1), hidden

    def init_hidden(self, bsz):
        w = next(self.parameters())
        if self.kind == "LSTM":
            return (w.new_zeros(self.nlayers, bsz, self.nhid), w.new_zeros(self.nlayers, bsz, self.nhid))
        return w.new_zeros(self.nlayers, bsz, self.nhid)


class Positions(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=1000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pos = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        freq = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * freq)
        pe[:, 1::2] = torch.cos(pos * freq)
        self.register_buffer("pe", pe.unsqueeze(1))

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(0)])


class TransformerLM(nn.Module):
    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.2):
        super().__init__()
        self.kind, self.ntoken, self.ninp = "Transformer", ntoken, ninp
        self.pos = Positions(ninp, dropout)
        layer = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.encoder = nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.embed = nn.Embedding(ntoken, ninp)
        self.head = nn.Linear(ninp, ntoken)

    def forward(self, x, hidden=None):
        n = x.size(0)
        mask = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
        h = self.encoder(self.pos(self.embed(x) * math.sqrt(self.ninp)), mask)
        return F.log_softmax(self.head(h), dim=-1).view(-1, self.ntoken), None

    def init_hidden(self, bsz):
        return None
