"""RNN, LSTM, GRU, their cells and nn.utils.rnn against PyTorch."""
import warnings

import numpy as np
import pytest

import retrograd
import retrograd.nn as rnn
from retrograd.nn.utils import rnn as RU
from helpers import needs_torch, torch
from nn_seq_helpers import module_parity

LAYERS = [
    (dict(input_size=3, hidden_size=4), (5, 2, 3), None),
    (dict(input_size=3, hidden_size=4, num_layers=2, bidirectional=True, batch_first=True), (2, 5, 3), None),
    (dict(input_size=3, hidden_size=4, num_layers=2, bidirectional=True), (5, 3, 3), [2, 5, 3]),
    (dict(input_size=3, hidden_size=4, bias=False), (5, 3), None),
    (dict(input_size=2, hidden_size=3, batch_first=True), (3, 4, 2), [4, 1, 2]),
    (dict(input_size=3, hidden_size=4), (1, 1, 3), None),
]


def _hx(cls, kw, n_batch, unbatched, rng):
    D = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
    h = kw.get("proj_size", 0) or kw["hidden_size"]
    shape = (D, h) if unbatched else (D, n_batch, h)
    hs = [rng.standard_normal(shape)]
    if cls == "LSTM":
        hs.append(rng.standard_normal(shape[:-1] + (kw["hidden_size"],)))
    return hs


def _call(cls, kw, packed, with_hx):
    def call(m, lib, x, *h):
        if packed is not None:
            x = lib.nn.utils.rnn.pack_padded_sequence(x, lib.tensor(packed), batch_first=kw.get("batch_first", False),
                                                      enforce_sorted=False)
        if not with_hx:
            return m(x)
        return m(x, tuple(h) if cls == "LSTM" else h[0])
    return call


@needs_torch
@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("kw,shape,packed", LAYERS)
@pytest.mark.parametrize("with_hx", [False, True])
def test_recurrent_parity(cls, kw, shape, packed, with_hx):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    hs = []
    if with_hx:
        n_batch = shape[0] if kw.get("batch_first") else shape[1]
        hs = _hx(cls, kw, n_batch, len(shape) == 2, rng)
    m, mt = module_parity(lambda lib: getattr(lib.nn, cls)(**kw).double(), [x] + hs, call=_call(cls, kw, packed,
                                                                                                  with_hx))
    assert repr(m) == repr(mt)


@needs_torch
def test_rnn_relu_and_lstm_proj():
    rng = np.random.default_rng(0)
    kw = dict(input_size=3, hidden_size=4, nonlinearity="relu", num_layers=2)
    module_parity(lambda lib: lib.nn.RNN(**kw).double(), [rng.standard_normal((5, 2, 3))])
    assert repr(rnn.RNN(**kw)) == repr(torch.nn.RNN(**kw))
    kw = dict(input_size=3, hidden_size=4, proj_size=2, bidirectional=True, num_layers=2)
    m, mt = module_parity(lambda lib: lib.nn.LSTM(**kw).double(), [rng.standard_normal((5, 2, 3))] +
                          _hx("LSTM", kw, 2, False, rng), call=_call("LSTM", kw, None, True))
    assert repr(m) == repr(mt)


@needs_torch
@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_parameter_names_shapes_and_init(cls):
    kw = dict(input_size=3, hidden_size=5, num_layers=2, bidirectional=True)
    m, mt = getattr(rnn, cls)(**kw), getattr(torch.nn, cls)(**kw)
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in mt.named_parameters()]
    assert list(m.state_dict().keys()) == list(mt.state_dict().keys())
    bound = 1 / np.sqrt(5)
    for p in m.parameters():
        assert np.abs(p.detach().numpy()).max() <= bound
    assert len(m.all_weights) == 4 and len(m._flat_weights) == 16


@needs_torch
def test_dropout_between_layers():
    retrograd.manual_seed(0)
    m = rnn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = retrograd.randn(6, 2, 3)
    m.eval()
    a = m(x)[0].detach().numpy()
    assert np.allclose(a, m(x)[0].detach().numpy())
    m.train()
    b = m(x)[0].detach().numpy()
    assert not np.allclose(a, b)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        rnn.GRU(3, 4, dropout=0.2)
    assert any("non-zero dropout expects num_layers greater than 1" in str(x.message) for x in w)


@needs_torch
@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("shape,bias,with_hx", [((2, 3), True, False), ((3,), False, True), ((4, 3), True, True)])
def test_cells(cls, shape, bias, with_hx):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    hs = []
    if with_hx:
        hshape = shape[:-1] + (4,)
        hs = [rng.standard_normal(hshape) for _ in range(2 if cls == "LSTMCell" else 1)]

    def call(m, lib, x, *h):
        if not h:
            return m(x)
        return m(x, tuple(h) if cls == "LSTMCell" else h[0])
    m, mt = module_parity(lambda lib: getattr(lib.nn, cls)(3, 4, bias=bias).double(), [x] + hs, call=call)
    assert repr(m) == repr(mt)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in mt.named_parameters()]


@needs_torch
def test_cell_grad_fn_names():
    x = retrograd.randn(2, 3)
    xt = torch.randn(2, 3)
    for cls in ("RNNCell", "LSTMCell", "GRUCell"):
        for a, b in ((x, xt), (x[0], xt[0])):
            o = getattr(rnn, cls)(3, 4)(a)
            ot = getattr(torch.nn, cls)(3, 4)(b)
            o, ot = (o, ot) if cls != "LSTMCell" else (o[1], ot[1])
            assert type(o.grad_fn).__name__ == type(ot.grad_fn).__name__
    for cls in ("RNN", "GRU"):
        o = getattr(rnn, cls)(3, 4)(x)
        ot = getattr(torch.nn, cls)(3, 4)(xt)
        assert [type(t.grad_fn).__name__ for t in o] == [type(t.grad_fn).__name__ for t in ot]


@needs_torch
@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_grad_fn_names(cls, dtype):
    a = np.random.default_rng(0).standard_normal((5, 2, 3)).astype(dtype)
    x = retrograd.from_numpy(a.copy()).requires_grad_(True)
    xt = torch.from_numpy(a.copy()).requires_grad_(True)
    o, h = getattr(rnn, cls)(3, 4).to(getattr(retrograd, dtype))(x)
    ot, ht = getattr(torch.nn, cls)(3, 4).to(getattr(torch, dtype))(xt)
    assert type(o.grad_fn).__name__ == type(ot.grad_fn).__name__
    h, ht = (h, ht) if cls == "GRU" else (h[1], ht[1])
    assert type(h.grad_fn).__name__ == type(ht.grad_fn).__name__


def test_recurrent_errors():
    m = rnn.LSTM(3, 4)
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D tensor instead"):
        m(retrograd.zeros(1, 2, 3, 4))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 5"):
        m(retrograd.zeros(2, 2, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 2, 4\), got \[1, 3, 4\]"):
        m(retrograd.zeros(2, 2, 3), (retrograd.zeros(1, 3, 4), retrograd.zeros(1, 2, 4)))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[1, 2, 5\]"):
        rnn.GRU(3, 4)(retrograd.zeros(2, 2, 3), retrograd.zeros(1, 2, 5))
    with pytest.raises(RuntimeError, match="For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"):
        rnn.RNN(3, 4)(retrograd.zeros(2, 3), retrograd.zeros(1, 1, 4))
    with pytest.raises(ValueError, match="dropout should be a number in range \\[0, 1\\]"):
        rnn.RNN(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'foo'. Select from 'tanh' or 'relu'."):
        rnn.RNN(3, 4, nonlinearity="foo")
    with pytest.raises(ValueError, match="LSTMCell: Expected input to be 1D or 2D, got 3D instead"):
        rnn.LSTMCell(3, 4)(retrograd.zeros(1, 2, 3))
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM, not RNN or GRU"):
        rnn.GRU(3, 4, proj_size=2)


# --- nn.utils.rnn -------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lens,enforce", [([5, 3, 2], True), ([2, 5, 3], False)])
def test_pack_pad_roundtrip(batch_first, lens, enforce):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 3, 2))
    if batch_first:
        a = a.transpose(1, 0, 2).copy()
    x, xt = retrograd.from_numpy(a.copy()).requires_grad_(True), torch.from_numpy(a.copy()).requires_grad_(True)
    p = RU.pack_padded_sequence(x, lens, batch_first=batch_first, enforce_sorted=enforce)
    pt = torch.nn.utils.rnn.pack_padded_sequence(xt, torch.tensor(lens), batch_first=batch_first,
                                                 enforce_sorted=enforce)
    np.testing.assert_array_equal(p.data.detach().numpy(), pt.data.detach().numpy())
    assert p.batch_sizes.tolist() == pt.batch_sizes.tolist()
    if not enforce:
        assert p.sorted_indices.tolist() == pt.sorted_indices.tolist()
        assert p.unsorted_indices.tolist() == pt.unsorted_indices.tolist()
    u, n = RU.pad_packed_sequence(p, batch_first=not batch_first, padding_value=-1.0, total_length=6)
    ut, nt = torch.nn.utils.rnn.pad_packed_sequence(pt, batch_first=not batch_first, padding_value=-1.0,
                                                    total_length=6)
    np.testing.assert_array_equal(u.detach().numpy(), ut.detach().numpy())
    assert n.tolist() == nt.tolist() and n.dtype == retrograd.int64
    g = rng.standard_normal(tuple(ut.shape))
    (u * retrograd.from_numpy(g)).sum().backward()
    (ut * torch.from_numpy(g)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())


@needs_torch
def test_pad_sequence_and_pack_sequence():
    rng = np.random.default_rng(0)
    seqs = [rng.standard_normal((n, 2)) for n in (2, 4, 1)]
    for kw in [dict(batch_first=True, padding_value=-1.0), dict(padding_side="left"), {}]:
        r = RU.pad_sequence([retrograd.from_numpy(s) for s in seqs], **kw)
        t = torch.nn.utils.rnn.pad_sequence([torch.from_numpy(s) for s in seqs], **kw)
        np.testing.assert_array_equal(r.numpy(), t.numpy())
    p = RU.pack_sequence([retrograd.from_numpy(s) for s in seqs], enforce_sorted=False)
    pt = torch.nn.utils.rnn.pack_sequence([torch.from_numpy(s) for s in seqs], enforce_sorted=False)
    np.testing.assert_array_equal(p.data.numpy(), pt.data.numpy())
    for a, b in zip(RU.unpack_sequence(p), torch.nn.utils.rnn.unpack_sequence(pt)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    padded = RU.pad_sequence([retrograd.from_numpy(s) for s in seqs], batch_first=True)
    for a, s in zip(RU.unpad_sequence(padded, retrograd.tensor([2, 4, 1]), batch_first=True), seqs):
        np.testing.assert_array_equal(a.numpy(), s)


def test_pack_errors():
    x = retrograd.zeros(5, 3, 2)
    with pytest.raises(RuntimeError, match="`lengths` array must be sorted in decreasing order when "
                                           "`enforce_sorted` is True"):
        RU.pack_padded_sequence(x, [2, 5, 3])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        RU.pack_padded_sequence(x, [5, 3, 0])
    p = RU.pack_padded_sequence(x, [5, 3, 2])
    assert isinstance(p, RU.PackedSequence) and isinstance(p, tuple)
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of the longest sequence"):
        RU.pad_packed_sequence(p, total_length=3)


def test_lstm_trains_on_a_toy_task():
    """A small LSTM classifier learns the sign of the sum of a sequence."""
    retrograd.manual_seed(0)
    rng = np.random.default_rng(0)
    lstm, head = rnn.LSTM(1, 8, batch_first=True), rnn.Linear(8, 2)
    params = list(lstm.parameters()) + list(head.parameters())
    xs = rng.standard_normal((64, 6, 1)).astype(np.float32)
    ys = (xs.sum(axis=(1, 2)) > 0).astype(np.int64)
    x, y = retrograd.from_numpy(xs), retrograd.from_numpy(ys)
    losses = []
    # (a step that makes the loss oscillate late in the run leaves its last value depending
    # on rounding. From PyTorch's initial weights for seed 0, 0.3 oscillates after ~55 steps,
    # in PyTorch too; 0.1 descends steadily, in both, and halves the loss after ~133 steps)
    for _ in range(150):
        out, (h, c) = lstm(x)
        logits = head(h[0])
        loss = rnn.functional.cross_entropy(logits, y)
        for p in params:
            p.grad = None
        loss.backward()
        for p in params:
            p.data._data -= 0.1 * p.grad.numpy()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


@needs_torch
@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_recurrent_double_backward(cls):
    from nn_seq_helpers import double_backward_parity, copy_params
    mt = getattr(torch.nn, cls)(3, 4, bidirectional=True).double()
    mr = getattr(rnn, cls)(3, 4, bidirectional=True).double()
    copy_params(mr, mt)
    double_backward_parity(lambda x: (mr if isinstance(x, retrograd.Tensor) else mt)(x)[0], (4, 2, 3))


@needs_torch
@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_recurrent_double_backward_packed(cls):
    from nn_seq_helpers import double_backward_parity, copy_params, lib_of
    mt = getattr(torch.nn, cls)(3, 4, bidirectional=True).double()
    mr = getattr(rnn, cls)(3, 4, bidirectional=True).double()
    copy_params(mr, mt)

    def fn(x):
        lib = lib_of(x)
        m = mr if lib is retrograd else mt
        out, _ = m(lib.nn.utils.rnn.pack_padded_sequence(x, lib.tensor([4, 2, 1])))
        return lib.nn.utils.rnn.pad_packed_sequence(out)[0]
    double_backward_parity(fn, (4, 3, 3))


@needs_torch
def test_lstm_projection_packed_unsorted_roundtrip():
    rng = np.random.default_rng(0)
    kw = dict(input_size=3, hidden_size=5, proj_size=2, num_layers=2, bidirectional=True, batch_first=True)

    def call(m, lib, x, h, c):
        p = lib.nn.utils.rnn.pack_padded_sequence(x, lib.tensor([2, 4, 1]), batch_first=True, enforce_sorted=False)
        o, (hn, cn) = m(p, (h, c))
        return lib.nn.utils.rnn.pad_packed_sequence(o, batch_first=True)[0], hn, cn
    module_parity(lambda lib: lib.nn.LSTM(**kw).double(),
                  [rng.standard_normal((3, 4, 3)), rng.standard_normal((4, 3, 2)), rng.standard_normal((4, 3, 5))],
                  call=call)


@pytest.mark.parametrize("cls,kw", [("RNN", dict(nonlinearity="tanh")), ("RNN", dict(nonlinearity="relu")),
                                    ("LSTM", {}), ("GRU", {})])
@pytest.mark.parametrize("packed", [False, True])
def test_recurrent_layer_gradcheck(cls, kw, packed):
    """The fused layers' backward through time (both directions, masks of packed
    sequences) against finite differences, in float64."""
    from retrograd.autograd import gradcheck
    retrograd.manual_seed(0)
    m = getattr(rnn, cls)(2, 3, bidirectional=True, **kw).double()
    rng = np.random.default_rng(1)
    x = retrograd.from_numpy(rng.standard_normal((4, 3, 2))).requires_grad_(True)
    h = retrograd.from_numpy(rng.standard_normal((2, 3, 3))).requires_grad_(True)
    hx = (h, retrograd.from_numpy(rng.standard_normal((2, 3, 3))).requires_grad_(True)) if cls == "LSTM" else (h,)

    def fn(x, *hx):
        inp = RU.pack_padded_sequence(x, retrograd.tensor([4, 2, 1])) if packed else x
        out, hn = m(inp, hx if cls == "LSTM" else hx[0])
        if packed:
            out = RU.pad_packed_sequence(out)[0]
        return (out, *hn) if cls == "LSTM" else (out, hn)
    assert gradcheck(fn, (x, *hx))
    assert gradcheck(lambda w, x: getattr(m, "weight_hh_l0").data.copy_(w.detach()) is None or fn(x, *hx)[0],
                     (m.weight_hh_l0.detach().clone().requires_grad_(False), x))


@needs_torch
def test_rnn_relu_layer_gradient_selects():
    """ReLU RNN: units that are off pass no gradient even where it is inf (a selection, as
    PyTorch's threshold backward), and writing to the output afterwards leaves the
    gradients alone."""
    res = []
    for lib in (retrograd, torch):
        m = lib.nn.RNN(2, 3, nonlinearity="relu").double()
        with lib.no_grad():
            for p in m.parameters():
                p.copy_(lib.from_numpy(np.arange(p.numel(), dtype=np.float64).reshape(tuple(p.shape)) * 0.1 - 0.3))
        x = lib.tensor(np.array([[[1.0, 0.0]], [[-1.0, 2.0]]]), requires_grad=True)
        out, _ = m(x)
        assert (out.detach() <= 0).any()
        g = lib.where(out.detach() > 0, lib.ones_like(out), lib.full_like(out, float("inf")))
        out2 = out * 1
        out.data.mul_(0)
        out2.backward(g)
        res.append((x.grad.numpy().copy(), m.weight_hh_l0.grad.numpy().copy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
