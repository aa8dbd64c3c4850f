"""nn layers answer to the torch.nn.modules submodule PyTorch keeps them in, so scripts that name
them by that path and whole models pickled by PyTorch load."""
import importlib
import inspect
import io

import numpy as np
import pytest

import retrograd
from helpers import torch, needs_torch


@needs_torch
def test_every_layer_is_where_torch_keeps_it():
    checked = 0
    for name in dir(torch.nn):
        cls = getattr(torch.nn, name)
        if not inspect.isclass(cls) or not cls.__module__.startswith("torch.nn.modules."):
            continue
        ours = getattr(retrograd.nn, name, None)
        if ours is None:
            continue
        sub = cls.__module__[len("torch.nn.modules."):]
        mod = importlib.import_module(f"retrograd.nn.modules.{sub}")
        assert getattr(mod, name, None) is ours, f"retrograd.nn.modules.{sub}.{name}"
        checked += 1
    assert checked > 100


class _Net(torch.nn.Module if torch is not None else object):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.norm = torch.nn.InstanceNorm2d(4, affine=True)
        self.shuffle = torch.nn.PixelShuffle(2)

    def forward(self, x):
        return self.shuffle(self.norm(self.conv(x)))


class _RNet(retrograd.nn.Module):
    # the class a whole-model pickle names (the script's own class, under either library)
    def __init__(self):
        super().__init__()
        self.conv = retrograd.nn.Conv2d(1, 4, 3, padding=1)
        self.norm = retrograd.nn.InstanceNorm2d(4, affine=True)
        self.shuffle = retrograd.nn.PixelShuffle(2)

    def forward(self, x):
        return self.shuffle(self.norm(self.conv(x)))


@needs_torch
def test_whole_model_pickled_by_torch_loads_with_torch_names():
    torch.manual_seed(0)
    net = _Net()
    with torch.no_grad():
        net.norm.weight.uniform_(0.5, 1.5)
    buf = io.BytesIO()
    torch.save(net, buf)
    nn = retrograd.nn
    # the file names the script's class by its path (mapped to retrograd's twin) and the layers by
    # PyTorch's module paths, which retrograd's allowlisted classes answer to
    allowed = [(_RNet, f"{__name__}._Net"), nn.modules.conv.Conv2d, nn.modules.instancenorm.InstanceNorm2d,
               nn.modules.pixelshuffle.PixelShuffle]
    buf.seek(0)
    with retrograd.serialization.safe_globals(allowed):
        model = retrograd.load(buf)
    assert type(model) is _RNet and type(model.shuffle) is nn.PixelShuffle
    x = np.random.default_rng(0).standard_normal((2, 1, 5, 5)).astype(np.float32)
    got = model(retrograd.tensor(x)).detach().numpy()
    want = net(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
