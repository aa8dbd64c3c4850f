"""Every layer against PyTorch with the same weights copied across: forward output,
grad_fn, input gradient, every parameter's gradient, and the buffers afterwards."""
import math

import numpy as np
import pytest

import retrograd
from helpers import needs_torch, torch


def module_parity(make, shape, *, train=True, seed=0, input_grad=True, atol=1e-9, rtol=1e-7, extra=None,
                  steps=1):
    """Build ``make(lib)`` in both libraries (float64, torch's weights copied into retrograd),
    run it on the same input and compare everything."""
    rng = np.random.default_rng(seed)
    tm = make(torch).double()
    rm = make(retrograd).double()
    rm.load_state_dict({k: retrograd.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    tm.train(train)
    rm.train(train)
    for _ in range(steps):
        x = rng.standard_normal(shape)
        tx = torch.tensor(x, requires_grad=input_grad)
        rx = retrograd.tensor(x, requires_grad=input_grad)
        targs = (tx,) + (tuple(torch.tensor(e) for e in extra) if extra else ())
        rargs = (rx,) + (tuple(retrograd.tensor(e) for e in extra) if extra else ())
        tout, rout = tm(*targs), rm(*rargs)
        if isinstance(tout, tuple):
            for a, b in zip(rout[1:], tout[1:]):
                np.testing.assert_array_equal(a.numpy(), b.numpy())
            tout, rout = tout[0], rout[0]
        assert tuple(rout.shape) == tuple(tout.shape)
        np.testing.assert_allclose(rout.detach().numpy(), tout.detach().numpy(), atol=atol, rtol=rtol)
        assert type(rout.grad_fn).__name__ == type(tout.grad_fn).__name__
        g = rng.standard_normal(tuple(tout.shape))
        tm.zero_grad()
        rm.zero_grad()
        tout.backward(torch.tensor(g))
        rout.backward(retrograd.tensor(g))
        if input_grad:
            np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), atol=atol, rtol=rtol)
        for (n, tp), (n2, rp) in zip(tm.named_parameters(), rm.named_parameters()):
            assert n == n2
            if tp.grad is None:
                assert rp.grad is None
            else:
                np.testing.assert_allclose(rp.grad.numpy(), tp.grad.numpy(), atol=atol, rtol=rtol, err_msg=n)
        for (n, tb), (n2, rb) in zip(tm.named_buffers(), rm.named_buffers()):
            np.testing.assert_allclose(rb.numpy(), tb.numpy(), atol=atol, rtol=rtol, err_msg=n)
    return rm, tm


LAYERS = [
    # linear
    (lambda l: l.nn.Linear(5, 3), (4, 5)),
    (lambda l: l.nn.Linear(5, 3), (1, 5)),
    (lambda l: l.nn.Linear(5, 3), (5,)),
    (lambda l: l.nn.Linear(5, 3), (2, 4, 5)),
    (lambda l: l.nn.Linear(5, 3, bias=False), (2, 4, 5)),
    (lambda l: l.nn.Linear(5, 3, bias=False), (4, 5)),
    # convolutions
    (lambda l: l.nn.Conv2d(1, 4, 5, padding=2), (2, 1, 12, 12)),
    (lambda l: l.nn.Conv2d(3, 4, (3, 2)), (1, 3, 7, 6)),
    (lambda l: l.nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2), (2, 4, 9, 8)),
    (lambda l: l.nn.Conv2d(4, 4, 3, padding=2, dilation=2, groups=4, bias=False), (2, 4, 7, 7)),
    (lambda l: l.nn.Conv2d(2, 3, (2, 3), stride=(2, 1), padding=(0, 1)), (3, 2, 7, 5)),
    (lambda l: l.nn.Conv2d(2, 3, 4, padding="same"), (2, 2, 6, 5)),
    (lambda l: l.nn.Conv2d(2, 3, 3, padding="valid"), (2, 2, 6, 5)),
    (lambda l: l.nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), (2, 2, 6, 5)),
    (lambda l: l.nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="replicate"), (2, 2, 6, 5)),
    (lambda l: l.nn.Conv2d(2, 3, 3, padding=2, padding_mode="circular"), (2, 2, 6, 5)),
    (lambda l: l.nn.Conv2d(2, 3, 4, padding="same", padding_mode="reflect"), (2, 2, 6, 5)),
    (lambda l: l.nn.Conv2d(3, 2, 3), (3, 6, 6)),                                  # unbatched
    (lambda l: l.nn.Conv1d(3, 4, 3, stride=2, padding=1), (2, 3, 9)),
    (lambda l: l.nn.Conv1d(4, 4, 3, padding="same", dilation=2, groups=2), (2, 4, 9)),
    (lambda l: l.nn.Conv1d(2, 3, 3, padding=2, padding_mode="circular"), (2, 2, 5)),
    (lambda l: l.nn.Conv3d(2, 2, (2, 3, 2), stride=(1, 2, 1), padding=1), (1, 2, 4, 5, 4)),
    # pooling
    (lambda l: l.nn.MaxPool2d(2), (2, 3, 8, 8)),
    (lambda l: l.nn.MaxPool2d(3, 2, 1, ceil_mode=True), (2, 3, 9, 8)),
    (lambda l: l.nn.MaxPool2d((3, 2), (2, 1), (1, 0), dilation=(1, 2)), (2, 3, 9, 8)),
    (lambda l: l.nn.MaxPool2d(2, return_indices=True), (2, 3, 7, 9)),
    (lambda l: l.nn.MaxPool2d(2), (3, 8, 8)),
    (lambda l: l.nn.MaxPool1d(3, 2, 1, return_indices=True), (2, 3, 10)),
    (lambda l: l.nn.MaxPool1d(2, ceil_mode=True), (2, 3, 9)),
    (lambda l: l.nn.AvgPool2d(2), (2, 3, 8, 8)),
    (lambda l: l.nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False), (2, 3, 9, 8)),
    (lambda l: l.nn.AvgPool2d((3, 2), (2, 1), (1, 1), divisor_override=3), (2, 3, 9, 8)),
    (lambda l: l.nn.AvgPool1d(3, 2, 1), (2, 3, 10)),
    (lambda l: l.nn.AvgPool1d(3, 2, 1, ceil_mode=True, count_include_pad=False), (2, 3, 10)),
    (lambda l: l.nn.AdaptiveAvgPool2d((3, 4)), (2, 3, 7, 9)),
    (lambda l: l.nn.AdaptiveAvgPool2d(1), (2, 3, 7, 9)),
    (lambda l: l.nn.AdaptiveAvgPool2d((None, 2)), (2, 3, 7, 9)),
    (lambda l: l.nn.AdaptiveAvgPool1d(4), (2, 3, 9)),
    (lambda l: l.nn.AdaptiveMaxPool2d((3, 4), return_indices=True), (2, 3, 7, 9)),
    (lambda l: l.nn.AdaptiveMaxPool1d(4), (2, 3, 9)),
    # normalization
    (lambda l: l.nn.LayerNorm(6), (2, 3, 6)),
    (lambda l: l.nn.LayerNorm((3, 6), elementwise_affine=False), (2, 3, 6)),
    (lambda l: l.nn.LayerNorm(6, bias=False), (4, 6)),
    (lambda l: l.nn.GroupNorm(2, 4), (3, 4, 5, 2)),
    (lambda l: l.nn.GroupNorm(1, 3, affine=False), (3, 3, 4)),
    # activations with parameters or options
    (lambda l: l.nn.PReLU(), (4, 3, 5)),
    (lambda l: l.nn.PReLU(3, init=0.1), (4, 3, 5)),
    (lambda l: l.nn.Softmax(dim=1), (3, 4, 5)),
    (lambda l: l.nn.LogSoftmax(dim=-1), (3, 4, 5)),
    (lambda l: l.nn.Softmin(dim=0), (3, 4)),
    (lambda l: l.nn.ReLU(), (3, 4)),
    (lambda l: l.nn.GELU("tanh"), (3, 4)),
    (lambda l: l.nn.GLU(1), (3, 4)),
    (lambda l: l.nn.Hardtanh(-0.5, 0.7), (3, 4)),
    (lambda l: l.nn.Threshold(0.1, -2.0), (3, 4)),
    (lambda l: l.nn.Flatten(), (3, 4, 2)),
    (lambda l: l.nn.Unflatten(1, (2, 2)), (3, 4)),
    (lambda l: l.nn.Identity(5), (3, 4)),
]


@needs_torch
@pytest.mark.parametrize("make,shape", LAYERS)
def test_layer_parity(make, shape):
    module_parity(make, shape)


@needs_torch
@pytest.mark.parametrize("make,shape", [
    (lambda l: l.nn.BatchNorm1d(4), (8, 4)),
    (lambda l: l.nn.BatchNorm1d(4), (5, 4, 3)),
    (lambda l: l.nn.BatchNorm2d(3), (4, 3, 5, 5)),
    (lambda l: l.nn.BatchNorm2d(3, momentum=None), (4, 3, 5, 5)),
    (lambda l: l.nn.BatchNorm2d(3, affine=False), (4, 3, 5, 5)),
    (lambda l: l.nn.BatchNorm2d(3, track_running_stats=False), (4, 3, 5, 5)),
    (lambda l: l.nn.BatchNorm2d(3, momentum=0.3, eps=1e-3, bias=False), (4, 3, 5, 5)),
])
def test_batchnorm_train_then_eval(make, shape):
    rm, tm = module_parity(make, shape, steps=3)          # training: batch stats, running stats updated
    rm2, tm2 = module_parity(make, shape, train=False)    # evaluation: running stats
    # carry the trained running statistics into evaluation
    rm.eval()
    tm.eval()
    x = np.random.default_rng(5).standard_normal(shape)
    np.testing.assert_allclose(rm(retrograd.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(),
                               atol=1e-9)


def test_batchnorm_errors():
    bn = retrograd.nn.BatchNorm1d(3)
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size "
                                         r"torch.Size\(\[1, 3\]\)"):
        bn(retrograd.ones(1, 3))
    with pytest.raises(ValueError, match="expected 2D or 3D input \\(got 4D input\\)"):
        bn(retrograd.ones(2, 3, 4, 4))
    bn.eval()
    assert bn(retrograd.ones(1, 3)).shape == (1, 3)        # evaluation works on one sample
    assert int(bn.num_batches_tracked) == 0


def test_dropout_train_eval():
    x = retrograd.ones(200, 50)
    d = retrograd.nn.Dropout(0.3)
    y = d(x)
    vals = np.unique(y.numpy())
    np.testing.assert_allclose(vals, [0.0, 1 / 0.7], rtol=1e-6)
    assert abs((y.numpy() == 0).mean() - 0.3) < 0.02
    assert type(y.grad_fn).__name__ if y.requires_grad else True
    d.eval()
    assert d(x) is x
    d2 = retrograd.nn.Dropout2d(0.5)
    z = d2(retrograd.ones(4, 6, 3, 3)).numpy()
    per_channel = z.reshape(4, 6, -1)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))
    d1 = retrograd.nn.Dropout1d(0.5)
    z = d1(retrograd.ones(4, 6, 5)).numpy()
    assert np.all((z == 0).all(-1) | (z == 2.0).all(-1))
    w = retrograd.ones(5, 5, requires_grad=True)
    out = retrograd.nn.functional.dropout(w, 0.5)
    assert type(out.grad_fn).__name__ == "MulBackward0"
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), out.detach().numpy())
    assert not retrograd.nn.functional.dropout(w, 1.0).detach().numpy().any()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        retrograd.nn.Dropout(1.5)


@needs_torch
def test_default_init_distributions():
    """Default initialisation: PyTorch's distributions and bounds."""
    retrograd.manual_seed(0)
    lin = retrograd.nn.Linear(400, 512)
    b = 1 / math.sqrt(400)
    w = lin.weight.detach().numpy()
    assert w.dtype == np.float32 and w.min() >= -b and w.max() <= b
    assert abs(w.std() - b / math.sqrt(3)) < 0.01 * b
    assert abs(lin.bias.detach().numpy()).max() <= b
    conv = retrograd.nn.Conv2d(4, 8, 5)
    b = 1 / math.sqrt(4 * 25)
    cw = conv.weight.detach().numpy()
    assert cw.min() >= -b and cw.max() <= b and abs(cw.std() - b / math.sqrt(3)) < 0.1 * b
    assert abs(conv.bias.detach().numpy()).max() <= b
    tconv = torch.nn.Conv2d(4, 8, 5)
    assert tconv.weight.abs().max().item() <= b
    bn = retrograd.nn.BatchNorm2d(3)
    assert bn.weight.tolist() == [1.0] * 3 and bn.bias.tolist() == [0.0] * 3
    assert bn.running_var.tolist() == [1.0] * 3 and bn.num_batches_tracked.item() == 0
    assert retrograd.nn.PReLU().weight.tolist() == [0.25]


@needs_torch
def test_conv_bad_input_messages():
    for lib in (retrograd, torch):
        conv = lib.nn.Conv2d(1, 4, 5)
        with pytest.raises(RuntimeError, match=r"Given groups=1, weight of size \[4, 1, 5, 5\], expected "
                                               r"input\[64, 3, 28, 28\] to have 1 channels, but got 3 channels "
                                               r"instead"):
            conv(lib.zeros(64, 3, 28, 28))
        with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but "
                                               r"got input of size: \[28, 28\]"):
            conv(lib.zeros(28, 28))
        with pytest.raises(RuntimeError, match=r"Calculated padded input size per channel: \(4 x 4\). Kernel size: "
                                               r"\(5 x 5\). Kernel size can't be greater than actual input size"):
            conv(lib.zeros(1, 1, 4, 4))
        with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
            lib.nn.Conv2d(1, 1, 3, stride=2, padding="same")
        with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
            lib.nn.Conv2d(3, 4, 3, groups=2)
        lin = lib.nn.Linear(400, 512)
        with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(64x392 and 400x512\)"):
            lin(lib.zeros(64, 392))
        with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(1x392 and 400x512\)"):
            lin(lib.zeros(392))
        pool = lib.nn.MaxPool2d(2, padding=2)
        with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size, but got "
                                               "pad=2, kernel_size=2 and dilation=1"):
            pool(lib.zeros(1, 1, 8, 8))
        with pytest.raises(RuntimeError, match=r"Given input size: \(2x3x3\). Calculated output size: \(2x0x0\). "
                                               r"Output size is too small"):
            lib.nn.MaxPool2d(4)(lib.zeros(1, 2, 3, 3))


@needs_torch
def test_dtype_mismatch_messages():
    for lib in (retrograd, torch):
        with pytest.raises(RuntimeError, match=r"Input type \(double\) and bias type \(float\) should be the same"):
            lib.nn.Conv2d(1, 2, 3)(lib.zeros(1, 1, 5, 5, dtype=lib.float64))
        with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
            lib.nn.Conv2d(1, 2, 3, bias=False)(lib.zeros(1, 1, 5, 5, dtype=lib.float64))
        with pytest.raises(RuntimeError, match="mat1 and mat2 must have the same dtype, but got Double and Float"):
            lib.nn.Linear(3, 2)(lib.zeros(2, 3, dtype=lib.float64))
