"""Whole models: the seeds' MNIST CNN and PyTorch's LeNet tutorial model give PyTorch's
outputs, loss and gradients with the same weights, train the same way, and switch
between train() and eval() as PyTorch's do."""
from collections import OrderedDict

import numpy as np
import pytest

import retrograd
from helpers import needs_torch, torch
from nn_models import lenet, seed_cnn, seed_cnn_sequential


def _pair(make, dtype="double"):
    t = make(torch)
    r = make(retrograd)
    assert list(r.state_dict().keys()) == list(t.state_dict().keys())
    assert [tuple(v.shape) for v in r.state_dict().values()] == [tuple(v.shape) for v in t.state_dict().values()]
    assert repr(r) == repr(t)
    getattr(t, dtype)()
    getattr(r, dtype)()
    r.load_state_dict(OrderedDict((k, retrograd.from_numpy(v.detach().numpy().copy()))
                                  for k, v in t.state_dict().items()))
    return r, t


@needs_torch
@pytest.mark.parametrize("make,shape,dtype,tol", [
    (seed_cnn, (8, 1, 28, 28), "double", 1e-10),
    (seed_cnn_sequential, (8, 1, 28, 28), "double", 1e-10),
    (lenet, (4, 1, 32, 32), "double", 1e-10),
    (seed_cnn, (1, 1, 28, 28), "double", 1e-10),          # batch of one
    (seed_cnn, (16, 1, 28, 28), "float", 2e-5),
])
def test_model_matches_torch(make, shape, dtype, tol):
    r, t = _pair(make, dtype)
    r.eval()
    t.eval()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float64 if dtype == "double" else np.float32)
    y = rng.integers(0, 10, shape[0])
    tx = torch.from_numpy(x.copy()).requires_grad_(True)
    rx = retrograd.from_numpy(x.copy()).requires_grad_(True)
    tout, rout = t(tx), r(rx)
    np.testing.assert_allclose(rout.detach().numpy(), tout.detach().numpy(), atol=tol, rtol=tol)
    assert type(rout.grad_fn).__name__ == type(tout.grad_fn).__name__
    tl = torch.nn.CrossEntropyLoss()(tout, torch.from_numpy(y))
    rl = retrograd.nn.CrossEntropyLoss()(rout, retrograd.from_numpy(y))
    assert type(rl.grad_fn).__name__ == type(tl.grad_fn).__name__ == "NllLossBackward0"
    np.testing.assert_allclose(rl.item(), tl.item(), rtol=tol)
    tl.backward()
    rl.backward()
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), atol=tol, rtol=tol)
    for (n, tp), (_, rp) in zip(t.named_parameters(), r.named_parameters()):
        np.testing.assert_allclose(rp.grad.numpy(), tp.grad.numpy(), atol=tol, rtol=max(tol, 1e-6), err_msg=n)


@needs_torch
def test_training_steps_follow_torch():
    """Three SGD-with-momentum steps (written out, as torch.optim.SGD computes them) in eval
    mode (no dropout randomness) give PyTorch's losses and weights."""
    r, t = _pair(seed_cnn)
    r.eval()
    t.eval()
    rng = np.random.default_rng(1)
    bufs_r, bufs_t = {}, {}
    for step in range(3):
        x = rng.standard_normal((8, 1, 28, 28))
        y = rng.integers(0, 10, 8)
        losses = []
        for lib, m, bufs in ((torch, t, bufs_t), (retrograd, r, bufs_r)):
            m.zero_grad()
            loss = lib.nn.CrossEntropyLoss()(m(lib.from_numpy(x)), lib.from_numpy(y))
            loss.backward()
            with lib.no_grad():
                for n, p in m.named_parameters():
                    g = p.grad.numpy()
                    b = bufs[n] = g.copy() if n not in bufs else 0.9 * bufs[n] + g
                    p.data = lib.from_numpy(p.detach().numpy() - 0.1 * b)
            losses.append(loss.item())
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-9)
    for (n, tp), (_, rp) in zip(t.named_parameters(), r.named_parameters()):
        np.testing.assert_allclose(rp.detach().numpy(), tp.detach().numpy(), atol=1e-9, err_msg=n)


def test_train_eval_switch():
    net = seed_cnn(retrograd)
    x = retrograd.randn(4, 1, 28, 28)
    net.eval()
    a, b = net(x), net(x)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())     # eval: deterministic
    net.train()
    c, d = net(x), net(x)
    assert not np.allclose(c.detach().numpy(), d.detach().numpy())           # dropout is active
    # the seeds' loop: data that requires grad, a fresh zero_grad each step
    data = x.clone().requires_grad_(True)
    target = retrograd.tensor([1, 2, 3, 4])
    out = net(data)
    loss = retrograd.nn.CrossEntropyLoss()(out, target)
    net.zero_grad()
    loss.backward()
    assert data.grad.shape == data.shape
    assert all(p.grad is not None for p in net.parameters())


def test_state_dict_round_trip_between_models():
    a, b = seed_cnn(retrograd), seed_cnn(retrograd)
    b.load_state_dict(a.state_dict())
    a.eval()
    b.eval()
    x = retrograd.randn(2, 1, 28, 28)
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    assert list(a.state_dict()) == ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight",
                                    "fc1.bias", "fc2.weight", "fc2.bias"]
