"""Transformer layers against PyTorch (copied weights, eval mode and dropout-free training
mode), and a tiny transformer that learns."""
import numpy as np
import pytest

import retrograd
import retrograd.nn as rnn
from helpers import needs_torch
from nn_seq_helpers import module_parity


def _enc(lib, **kw):
    return lib.nn.TransformerEncoderLayer(**kw).double()


ENC = [dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0),
       dict(d_model=8, nhead=4, dim_feedforward=12, dropout=0.0, norm_first=True, activation="gelu"),
       dict(d_model=6, nhead=3, dim_feedforward=10, dropout=0.0, batch_first=True, bias=False)]


@needs_torch
@pytest.mark.parametrize("kw", ENC)
def test_encoder_layer_parity(kw):
    rng = np.random.default_rng(0)
    shape = (2, 5, kw["d_model"]) if kw.get("batch_first") else (5, 2, kw["d_model"])
    m, mt = module_parity(lambda lib: _enc(lib, **kw), [rng.standard_normal(shape)])
    assert repr(m) == repr(mt)
    assert list(m.state_dict()) == list(mt.state_dict())


@needs_torch
def test_encoder_layer_masks_and_eval():
    rng = np.random.default_rng(0)
    kw = dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.3)
    mask = np.triu(np.ones((5, 5), bool), 1)
    kpm = np.array([[0, 0, 0, 0, 1], [0, 0, 0, 0, 0]], bool)

    def call(m, lib, x):
        m.eval()
        return m(x, src_mask=lib.tensor(mask), src_key_padding_mask=lib.tensor(kpm))
    module_parity(lambda lib: _enc(lib, **kw), [rng.standard_normal((5, 2, 8))], call=call)


@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_parity(norm_first):
    rng = np.random.default_rng(0)
    kw = dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, norm_first=norm_first)
    tgt_mask = np.triu(np.full((4, 4), -np.inf), 1)
    mkpm = np.array([[0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0]], bool)

    def call(m, lib, tgt, mem):
        return m(tgt, mem, tgt_mask=lib.tensor(tgt_mask), memory_key_padding_mask=lib.tensor(mkpm),
                 tgt_is_causal=True)
    m, mt = module_parity(lambda lib: lib.nn.TransformerDecoderLayer(**kw).double(),
                          [rng.standard_normal((4, 2, 8)), rng.standard_normal((6, 2, 8))], call=call)
    assert repr(m) == repr(mt)


@needs_torch
def test_encoder_stack_and_full_transformer_eval():
    rng = np.random.default_rng(0)

    def make_enc(lib):
        layer = lib.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True)
        return lib.nn.TransformerEncoder(layer, 2, norm=lib.nn.LayerNorm(8), enable_nested_tensor=False).double()

    def eval_call(m, lib, *args):
        m.eval()
        return m(*args)
    m, mt = module_parity(make_enc, [rng.standard_normal((2, 5, 8))], call=eval_call)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in mt.named_parameters()]

    def make_tr(lib):
        return lib.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
                                  dim_feedforward=16, dropout=0.1).double()

    def tr_call(m, lib, src, tgt):
        m.eval()
        return m(src, tgt, tgt_mask=m.generate_square_subsequent_mask(4).double())
    m, mt = module_parity(make_tr, [rng.standard_normal((6, 2, 8)), rng.standard_normal((4, 2, 8))], call=tr_call)
    assert list(m.state_dict()) == list(mt.state_dict())
    assert repr(m) == repr(mt)


def test_generate_square_subsequent_mask():
    m = rnn.Transformer.generate_square_subsequent_mask(3)
    assert m.dtype == retrograd.float32
    np.testing.assert_array_equal(m.numpy(), [[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]])


def test_transformer_errors():
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        rnn.TransformerEncoderLayer(4, 2, 8, activation="tanh")
    m = rnn.Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        m(retrograd.zeros(3, 2, 4), retrograd.zeros(3, 3, 4))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        m(retrograd.zeros(3, 2, 5), retrograd.zeros(3, 2, 5))


def test_tiny_transformer_learns():
    """A one-layer causal transformer encoder learns to output, at each position, the token
    one step back (it must attend to the previous position); the loss falls sharply."""
    retrograd.manual_seed(0)
    V, D, L = 8, 16, 6

    class Tiny(rnn.Module):
        def __init__(self):
            super().__init__()
            self.emb = rnn.Embedding(V, D)
            self.pos = rnn.Parameter(retrograd.randn(L, D) * 0.1)
            layer = rnn.TransformerEncoderLayer(D, 2, 32, dropout=0.0, batch_first=True)
            self.enc = rnn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
            self.out = rnn.Linear(D, V)

        def forward(self, x):
            h = self.emb(x) + self.pos
            mask = rnn.Transformer.generate_square_subsequent_mask(L)
            return self.out(self.enc(h, mask=mask, is_causal=True))

    rng = np.random.default_rng(0)
    seq = rng.integers(0, V, (32, L))
    prev = np.concatenate([seq[:, :1], seq[:, :-1]], axis=1)
    x, y = retrograd.tensor(seq), retrograd.tensor(prev)
    model = Tiny()
    opt = retrograd.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        logits = model(x)
        loss = rnn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.25 * losses[0], losses
    acc = (model(x).argmax(-1) == y).float().mean().item()
    assert acc > 0.9


def test_encoder_nested_tensor_warning_as_pytorch():
    layer = rnn.TransformerEncoderLayer(8, 2, 16)
    with pytest.warns(UserWarning, match="enable_nested_tensor is True, but self.use_nested_tensor is False because "
                                         "encoder_layer.self_attn.batch_first was not True"):
        enc = rnn.TransformerEncoder(layer, 2)
    assert enc.use_nested_tensor is False
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rnn.TransformerEncoder(rnn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1)


@needs_torch
def test_state_dict_from_pytorch_loads_and_matches():
    import torch
    rng = np.random.default_rng(0)
    for make, shape in [(lambda lib: lib.nn.LSTM(3, 4, 2, bidirectional=True, proj_size=2), (5, 2, 3)),
                        (lambda lib: lib.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), (2, 5, 8)),
                        (lambda lib: lib.nn.MultiheadAttention(8, 2, kdim=3, vdim=5), None)]:
        mt = make(torch).double().eval()
        m = make(retrograd).double().eval()
        sd = {k: retrograd.from_numpy(v.detach().numpy().copy()) for k, v in mt.state_dict().items()}
        res = m.load_state_dict(sd)
        assert not res.missing_keys and not res.unexpected_keys
        if shape is None:
            q, k, v = rng.standard_normal((4, 2, 8)), rng.standard_normal((6, 2, 3)), rng.standard_normal((6, 2, 5))
            o = m(retrograd.from_numpy(q), retrograd.from_numpy(k), retrograd.from_numpy(v))[0]
            ot = mt(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v))[0]
        else:
            x = rng.standard_normal(shape)
            o, ot = m(retrograd.from_numpy(x)), mt(torch.from_numpy(x))
            o, ot = (o[0], ot[0]) if isinstance(o, tuple) else (o, ot)
        np.testing.assert_allclose(o.detach().numpy(), ot.detach().numpy(), atol=1e-12)
