"""Training on the emulated CUDA device: nn layers, optimizers, autocast float16 with
GradScaler, DataLoader pin_memory and the seeds' CNN step give the CPU's numbers, keep
everything on cuda:0, call no NumPy function on device data, and ask the host nothing
inside a training step beyond the loss's .item() the user asks for."""
import copy
import os
import sys

import numpy as np
import pytest

import retrograd
import retrograd.nn as nn
import retrograd.nn.functional as F
import retrograd.optim as optim
from nn_models import seed_cnn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
CUDA = retrograd.device("cuda", 0)


def host(t):
    return t.detach().cpu().numpy()


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(host(a), host(b), rtol=tol, atol=tol)


def _leaves_on(model, dev):
    for name, p in model.named_parameters():
        assert p.device == dev, name
        if p.grad is not None:
            assert p.grad.device == dev, name
    for name, b in model.named_buffers():
        assert b.device == dev, name


# --------------------------------------------------------------------------------- layers

LAYERS = {
    "Linear": (lambda: nn.Linear(6, 4), (3, 6)),
    "Bilinear": (lambda: nn.Bilinear(6, 6, 3), None),
    "Conv1d": (lambda: nn.Conv1d(2, 3, 3, padding=1, stride=2), (2, 2, 9)),
    "Conv2d": (lambda: nn.Conv2d(2, 4, 3, padding=1), (2, 2, 6, 5)),
    "Conv2d-groups-dilation": (lambda: nn.Conv2d(4, 4, 3, padding=2, dilation=2, groups=2), (2, 4, 6, 6)),
    "Conv3d": (lambda: nn.Conv3d(1, 2, 2), (1, 1, 4, 4, 3)),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1), (2, 2, 4, 4)),
    "MaxPool2d": (lambda: nn.MaxPool2d(2), (2, 3, 6, 6)),
    "MaxPool2d-padded": (lambda: nn.MaxPool2d(3, 2, padding=1), (2, 3, 7, 7)),
    "AvgPool2d": (lambda: nn.AvgPool2d(3, 2, padding=1), (2, 3, 7, 7)),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d((3, 2)), (2, 3, 7, 5)),
    "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d(3), (2, 3, 7, 5)),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(5), (8, 5)),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(3), (4, 3, 5, 5)),
    "LayerNorm": (lambda: nn.LayerNorm(6), (3, 4, 6)),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), (3, 4, 5)),
    "Embedding": (lambda: nn.Embedding(10, 4), "index"),
    "EmbeddingBag": (lambda: nn.EmbeddingBag(10, 4, mode="mean"), "bag"),
    "LSTM": (lambda: nn.LSTM(5, 4, num_layers=2, batch_first=True), (3, 7, 5)),
    "GRU": (lambda: nn.GRU(5, 4, bidirectional=True), (7, 3, 5)),
    "RNN": (lambda: nn.RNN(5, 4), (7, 3, 5)),
    "MultiheadAttention": (lambda: nn.MultiheadAttention(8, 2, batch_first=True), "attn"),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
                                (2, 5, 8)),
    "PReLU": (lambda: nn.PReLU(3), (2, 3, 4)),
    "Upsample-bilinear": (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), (1, 2, 3, 4)),
    "PixelShuffle": (lambda: nn.PixelShuffle(2), (1, 8, 3, 3)),
    "Flatten-Dropout(eval)": (lambda: nn.Sequential(nn.Flatten(), nn.Dropout(0.5).eval()), (2, 3, 4)),
}


def _inputs(kind, rng):
    if kind == "index":
        return (retrograd.tensor(rng.integers(0, 10, (3, 5))),)
    if kind == "bag":
        return (retrograd.tensor(rng.integers(0, 10, (4, 3))),)
    if kind == "attn":
        q = retrograd.tensor(rng.standard_normal((2, 5, 8)), dtype=retrograd.float32)
        return (q, q.clone(), q.clone())
    if kind is None:
        a = retrograd.tensor(rng.standard_normal((3, 6)), dtype=retrograd.float32)
        return (a, a.flip(0))
    return (retrograd.tensor(rng.standard_normal(kind), dtype=retrograd.float32),)


def _first(out):
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_on_device_matches_cpu(name):
    make, kind = LAYERS[name]
    retrograd.manual_seed(0)
    cpu = make()
    dev = copy.deepcopy(cpu).to("cuda")
    _leaves_on(dev, CUDA)
    rng = np.random.default_rng(0)
    xs = _inputs(kind, rng)
    xs_c = [x.clone().requires_grad_(x.is_floating_point()) for x in xs]
    xs_d = [x.to("cuda").requires_grad_(x.is_floating_point()) for x in xs]
    yc, yd = _first(cpu(*xs_c)), _first(dev(*xs_d))
    assert yd.device == CUDA
    close(yc, yd)
    up = retrograd.tensor(rng.standard_normal(tuple(yc.shape)), dtype=yc.dtype)
    yc.backward(up)
    yd.backward(up.to("cuda"))
    for (n, pc), pd in zip(cpu.named_parameters(), dev.parameters()):
        assert pd.grad.device == CUDA, n
        close(pc.grad, pd.grad, 1e-4)
    for a, b in zip(xs_c, xs_d):
        if a.is_floating_point():
            assert b.grad.device == CUDA
            close(a.grad, b.grad, 1e-4)
    for (n, bc), bd in zip(cpu.named_buffers(), dev.buffers()):     # running statistics
        close(bc, bd)


# ----------------------------------------------------------------------------- optimizers

OPTIMIZERS = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, foreach=False)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, foreach=False)),
    ("AdamW", dict(lr=0.01)),
    ("Adagrad", dict(lr=0.1)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
    ("Adadelta", dict()),
    ("Adamax", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01)),
    ("ASGD", dict(lr=0.01)),
    ("Rprop", dict(lr=0.01)),
    ("Adafactor", dict(lr=0.01)),
]


# PyTorch's own step reads a value on the host: where retrograd does the same
STEP_SYNCS = {"Adafactor": "optim/adafactor.py"}   # the parameter's norm (PyTorch: .item())


def _opt_ids(case):
    return case[0] + "-" + ",".join(f"{k}={v}" for k, v in case[1].items())


@pytest.mark.parametrize("case", OPTIMIZERS, ids=_opt_ids)
def test_optimizer_steps_on_device(case, _emulated_cuda):
    """Three steps of a small model: parameters and state as on the CPU, all on cuda:0, and
    the steps themselves ask the host nothing."""
    name, kw = case
    if not hasattr(optim, name):
        pytest.skip(f"retrograd.optim has no {name}")
    retrograd.manual_seed(0)
    cpu = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3))
    dev = copy.deepcopy(cpu).to("cuda")
    oc, od = getattr(optim, name)(cpu.parameters(), **kw), getattr(optim, name)(dev.parameters(), **kw)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = retrograd.tensor(rng.standard_normal((4, 5)), dtype=retrograd.float32)
        for model, opt, xx in ((cpu, oc, x), (dev, od, x.to("cuda"))):
            opt.zero_grad()
            model(xx).pow(2).sum().backward()
            if model is dev and name in STEP_SYNCS:
                with _emulated_cuda.count_host_syncs() as syncs:
                    opt.step()
                assert syncs and all(STEP_SYNCS[name] + ":" in f for _, f in syncs), syncs
            elif model is dev:
                with _emulated_cuda.forbid_host_sync():
                    opt.step()
            else:
                opt.step()
    for pc, pd in zip(cpu.parameters(), dev.parameters()):
        assert pd.device == CUDA
        close(pc, pd, 1e-5)
    for pd in dev.parameters():
        for k, v in od.state[pd].items():
            # (0-d scalars such as 'step', NAdam's mu_product, ASGD's eta stay on the host, as in PyTorch)
            if isinstance(v, retrograd.Tensor) and v.dim():
                assert v.device == CUDA, k


# -------------------------------------------------------------------- the seeds' CNN step

def _cnn_batch(rng, n=8):
    x = retrograd.tensor(rng.standard_normal((n, 1, 28, 28)), dtype=retrograd.float32)
    y = retrograd.tensor(rng.integers(0, 10, n))
    return x, y


def test_seed_cnn_training_step_asks_the_host_only_for_the_loss(_emulated_cuda):
    retrograd.manual_seed(0)
    cpu = seed_cnn(retrograd).eval()    # (dropout off: the CPU and the device draw differently)
    dev = copy.deepcopy(cpu).to("cuda")
    oc = optim.SGD(cpu.parameters(), lr=0.01, momentum=0.9)
    od = optim.SGD(dev.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    for step in range(2):
        x, y = _cnn_batch(rng)
        oc.zero_grad()
        lc = F.nll_loss(cpu(x), y)
        lc.backward()
        oc.step()
        with _emulated_cuda.count_host_syncs() as syncs:
            xd, yd = x.to("cuda", non_blocking=True), y.to("cuda", non_blocking=True)
            with _emulated_cuda.forbid_host_sync():
                od.zero_grad()
                ld = F.nll_loss(dev(xd), yd)
                ld.backward()
                od.step()
            value = ld.item()
        assert syncs == [("item", syncs[0][1])], syncs
        assert abs(value - lc.item()) < 1e-5
    _leaves_on(dev, CUDA)
    for pc, pd in zip(cpu.parameters(), dev.parameters()):
        close(pc, pd, 1e-5)


def test_seed_cnn_train_mode_step_with_dropout_on_device(_emulated_cuda):
    retrograd.manual_seed(0)
    model = seed_cnn(retrograd).to("cuda").train()
    opt = optim.Adam(model.parameters(), lr=1e-3)
    x, y = _cnn_batch(np.random.default_rng(2))
    x, y = x.cuda(), y.cuda()
    with _emulated_cuda.forbid_host_sync():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    assert loss.device == CUDA and np.isfinite(loss.item())
    _leaves_on(model, CUDA)


def test_gpt_block_and_mlp_steps_ask_the_host_nothing(_emulated_cuda):
    """benchmarks/gpu_check.py's GPT block (pre-LN causal attention + MLP, AdamW) and MLP steps."""
    import gpu_check
    for name in ("GPT block", "MLP"):
        model, opt, batch, loss_fn = gpu_check._case(retrograd, name, True)
        step = gpu_check._step_fn(retrograd, model, opt, batch, loss_fn)
        with _emulated_cuda.forbid_host_sync():
            loss = step()
            loss = step()
        assert loss.device == CUDA and np.isfinite(loss.item())
        _leaves_on(model, CUDA)


# ------------------------------------------------------------------ autocast + GradScaler

def test_autocast_float16_and_grad_scaler_on_device(_emulated_cuda):
    retrograd.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).to("cuda")
    opt = optim.SGD(model.parameters(), lr=0.1)
    scaler = retrograd.amp.GradScaler("cuda", init_scale=2.0 ** 10)
    x = retrograd.randn(4, 6).cuda()
    y = retrograd.tensor([0, 2, 1, 0]).cuda()
    before = [p.detach().clone() for p in model.parameters()]
    with retrograd.autocast("cuda", dtype=retrograd.float16):
        out = model(x)
        assert out.dtype == retrograd.float16 and out.device == CUDA
        loss = F.cross_entropy(out, y)
    assert loss.dtype == retrograd.float32
    with _emulated_cuda.count_host_syncs() as syncs:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    # PyTorch's GradScaler reads its found-inf flags once per step (its one sync), as here
    assert len(syncs) == 1 and "amp/grad_scaler.py" in syncs[0][1], syncs
    assert scaler.get_scale() == 2.0 ** 10
    for b, p in zip(before, model.parameters()):
        assert p.device == CUDA and p.dtype == retrograd.float32
        assert not np.array_equal(host(b), host(p))


def test_grad_scaler_skips_a_step_with_inf_gradients_on_device():
    model = nn.Linear(3, 1).to("cuda")
    opt = optim.SGD(model.parameters(), lr=0.1)
    scaler = retrograd.amp.GradScaler("cuda", init_scale=4.0)
    before = [p.detach().clone() for p in model.parameters()]
    loss = model(retrograd.full((2, 3), float("inf"), device="cuda")).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2.0
    for b, p in zip(before, model.parameters()):
        assert np.array_equal(host(b), host(p))


# ------------------------------------------------------------------ DataLoader pin_memory

def test_dataloader_pin_memory_batches_move_to_the_device(_emulated_cuda):
    from retrograd.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(retrograd.arange(40.0).reshape(20, 2), retrograd.arange(20))
    loader = DataLoader(ds, batch_size=8, pin_memory=True)
    seen = 0
    for xb, yb in loader:
        assert xb.device.type == "cpu" and xb.is_pinned() and yb.is_pinned()
        with _emulated_cuda.forbid_host_sync():
            xd, yd = xb.to("cuda", non_blocking=True), yb.cuda(non_blocking=True)
        assert xd.device == CUDA and yd.device == CUDA
        assert np.array_equal(host(xd), host(xb))
        seen += len(yb)
    assert seen == 20
    assert not retrograd.ones(2).is_pinned()
