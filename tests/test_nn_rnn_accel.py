"""The LSTM layer's compiled passes (numba, optional: the forward's gate step, the backward
through time) against the NumPy loop that stays the reference (the same bits), PyTorch and
finite differences."""
import numpy as np
import pytest

import retrograd
from retrograd.ops import _seqkit
from helpers import needs_torch, torch
from nn_seq_helpers import copy_params, double_backward_parity, lstm_against_torch

numba_only = pytest.mark.skipif(_seqkit.rnn_kernels() is None,
                                reason="numba is not installed or RETROGRAD_NO_NUMBA is set")

# (input size, hidden size, layers, bidirectional, batch_first, (L, N)); all above the kernel's
# size bound (L * 4H * N >= 4096 gate values)
CONFIGS = [(5, 16, 1, False, False, (4, 16)), (3, 8, 2, True, False, (9, 16)), (4, 16, 1, True, True, (5, 13))]


def _run(dtype, I, H, layers, bidir, batch_first, LN, with_hx=True, seed=0, packed=False, bias=True):
    retrograd.manual_seed(seed)
    m = retrograd.nn.LSTM(I, H, layers, bias=bias, bidirectional=bidir, batch_first=batch_first)
    m = m.to(getattr(retrograd, dtype))
    rng = np.random.default_rng(seed)
    L, N = LN
    x = retrograd.tensor(rng.standard_normal((N, L, I) if batch_first else (L, N, I)).astype(dtype),
                         requires_grad=True)
    D = layers * (2 if bidir else 1)
    hx = [retrograd.tensor(rng.standard_normal((D, N, H)).astype(dtype), requires_grad=True) for _ in range(2)]
    inp = x
    if packed:      # lengths L, L - 1, ..., cycling: finished sequences keep their state
        lens = retrograd.tensor([L - k % L for k in range(N)])
        inp = retrograd.nn.utils.rnn.pack_padded_sequence(x, lens, batch_first=batch_first, enforce_sorted=False)
    out, (h, c) = m(inp, tuple(hx)) if with_hx else m(inp)
    if packed:
        out = retrograd.nn.utils.rnn.pad_packed_sequence(out, batch_first=batch_first)[0]
    # every output's gradient reaches the backward (non-uniform, so that a mixed-up index shows)
    (out.sin().sum() + (h * h).sum() + c.cos().sum()).backward()
    return [out, h, c, x.grad] + ([t.grad for t in hx] if with_hx else []) + [p.grad for p in m.parameters()]


@numba_only
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("with_hx,packed,bias", [(False, False, True), (True, False, True), (True, True, True),
                                                 (True, False, False)])
def test_lstm_kernels_match_numpy_path_bit_for_bit(cfg, dtype, with_hx, packed, bias, monkeypatch):
    fast = _run(dtype, *cfg, with_hx=with_hx, packed=packed, bias=bias)
    monkeypatch.setattr(_seqkit, "_RNN_KERNELS", [None])
    ref = _run(dtype, *cfg, with_hx=with_hx, packed=packed, bias=bias)
    assert len(fast) == len(ref)
    for a, r in zip(fast, ref):
        a, r = a.detach().numpy(), r.detach().numpy()
        assert a.dtype == r.dtype == np.dtype(dtype) and a.shape == r.shape
        np.testing.assert_array_equal(a, r)


@numba_only
def test_lstm_kernels_run(monkeypatch):
    """The compiled loops are what the layer calls at these sizes, once per layer and
    direction (forward, then the backward through time), packed sequences included, and not
    below the size bound."""
    k = _seqkit.rnn_kernels()
    calls = []

    class Spy:
        def __getattr__(self, name):
            return getattr(k, name)

        def lstm_forward(self, *a):
            calls.append(("f", a[-4]))          # (reverse)
            return k.lstm_forward(*a)

        def lstm_backward(self, *a):
            calls.append(("b", a[-7]))          # (reverse)
            return k.lstm_backward(*a)
    monkeypatch.setattr(_seqkit, "_RNN_KERNELS", [Spy()])
    _run("float32", *CONFIGS[0])
    assert calls == [("f", False), ("b", False)]
    calls.clear()
    _run("float64", *CONFIGS[1])     # 2 layers, bidirectional
    assert calls[:4] == [("f", False), ("f", True)] * 2      # layer by layer, both directions
    assert sorted(calls[4:]) == [("b", False)] * 2 + [("b", True)] * 2
    calls.clear()
    _run("float32", 2, 3, 1, False, False, (3, 2))
    assert calls == []
    _run("float32", *CONFIGS[0], packed=True)
    assert calls == [("f", False), ("b", False)]


@numba_only
def test_lstm_kernel_leaves_incoming_gradients_alone(monkeypatch):
    """The kernel writes the states' gradients in place: into its own copies, never into the
    gradients handed to the node (here a C-contiguous transposed view whose .T is contiguous)."""
    m = retrograd.nn.LSTM(5, 16)
    x = retrograd.randn(4, 16, 5)
    out, (h, c) = m(x)
    gh = retrograd.from_numpy(np.asfortranarray(np.random.default_rng(0).standard_normal((1, 16, 16)))
                              .astype(np.float32))
    gc = gh.clone()
    keep = gh.numpy().copy(), gc.numpy().copy()
    retrograd.autograd.backward([out.sum(), h, c], [None, gh, gc])
    np.testing.assert_array_equal(gh.numpy(), keep[0])
    np.testing.assert_array_equal(gc.numpy(), keep[1])


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cfg", CONFIGS)
def test_lstm_kernel_sizes_against_torch(cfg, dtype):
    lstm_against_torch(cfg, dtype)


def test_lstm_kernel_gradcheck(monkeypatch):
    """The backward at kernel sizes (the bound lowered so that finite differences stay cheap)
    against finite differences in float64, both directions; with or without numba."""
    from retrograd.autograd import gradcheck
    monkeypatch.setattr(_seqkit, "_MIN_ACCEL", 0)
    retrograd.manual_seed(0)
    m = retrograd.nn.LSTM(2, 3, bidirectional=True).double()
    rng = np.random.default_rng(1)
    x, h, c = (retrograd.from_numpy(rng.standard_normal(s)).requires_grad_(True)
               for s in ((4, 3, 2), (2, 3, 3), (2, 3, 3)))

    def fn(x, h, c):
        out, (hn, cn) = m(x, (h, c))
        return out, hn, cn
    assert gradcheck(fn, (x, h, c))
    # the recurrent weight's and bias's gradients (GEMM and sum over all steps), a layer run
    # backwards in time
    wx = retrograd.from_numpy(rng.standard_normal(tuple(m.weight_hh_l0.shape))).requires_grad_(True)
    b = retrograd.from_numpy(rng.standard_normal(tuple(m.bias_hh_l0.shape))).requires_grad_(True)
    assert gradcheck(lambda w, b: _layer_out(m, w, b, x.detach()), (wx, b))


def _layer_out(m, w, b, x):
    z = retrograd.zeros(x.shape[1], m.hidden_size, dtype=x.dtype)
    return _seqkit.lstm_layer(x, z, z, m.weight_ih_l0, w, m.bias_ih_l0, b, reverse=True)


@needs_torch
def test_lstm_kernel_double_backward(monkeypatch):
    """Under create_graph the layer differentiates its composite (the kernel's first-order
    gradients are not differentiable); double backward at kernel sizes matches PyTorch."""
    monkeypatch.setattr(_seqkit, "_MIN_ACCEL", 0)
    mt = torch.nn.LSTM(3, 4, bidirectional=True).double()
    mr = retrograd.nn.LSTM(3, 4, bidirectional=True).double()
    copy_params(mr, mt)
    double_backward_parity(lambda x: (mr if isinstance(x, retrograd.Tensor) else mt)(x)[0], (4, 2, 3))


def test_lstm_kernel_gradgradcheck(monkeypatch):
    """Second derivatives through a layer whose forward ran the kernels, in float64 against
    finite differences (no torch needed)."""
    from retrograd.autograd import gradgradcheck
    monkeypatch.setattr(_seqkit, "_MIN_ACCEL", 0)
    retrograd.manual_seed(0)
    m = retrograd.nn.LSTM(2, 2).double()
    rng = np.random.default_rng(2)
    x, h, c = (retrograd.from_numpy(rng.standard_normal(s)).requires_grad_(True) for s in ((3, 2, 2), (1, 2, 2),
                                                                                            (1, 2, 2)))
    assert gradgradcheck(lambda x, h, c: m(x, (h, c))[0], (x, h, c))


def test_no_numba_env_turns_the_kernels_off(monkeypatch):
    monkeypatch.setattr(_seqkit, "_RNN_KERNELS", [])
    monkeypatch.setenv("RETROGRAD_NO_NUMBA", "1")
    assert _seqkit.rnn_kernels() is None


@numba_only
def test_lstm_kernel_reads_a_broadcast_output_gradient(monkeypatch):
    """``out.sum().backward()`` hands the layer an expanded (0-stride) gradient, which the
    kernel reads as it is."""
    res = []
    for kernels in ([], [None]):
        monkeypatch.setattr(_seqkit, "_RNN_KERNELS", kernels)
        retrograd.manual_seed(0)
        m = retrograd.nn.LSTM(5, 16)
        x = retrograd.from_numpy(np.random.default_rng(0).standard_normal((4, 16, 5)).astype(np.float32))
        x.requires_grad_(True)
        m(x)[0].sum().backward()
        res.append([x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()])
    for a, r in zip(*res):
        np.testing.assert_array_equal(a, r)
