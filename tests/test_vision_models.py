"""retrograd.vision.models against torchvision's: the same state_dict (keys in the same order,
same shapes) gives the same logits, in eval mode and in train mode (batch statistics, the
running-statistics update and the parameters' gradients); torchvision's .pth files load."""
import os

import numpy as np
import pytest

import retrograd
from retrograd.vision import models
from helpers import torch
from vision_oracle import needs_torchvision, torchvision

# name, input size, builder kwargs (dropout 0 so train mode is deterministic in both)
# (64x64 where the last batch norm would otherwise see 1x1 maps: over 2 values its output is
# ill-conditioned, +-1 up to eps, and float32 rounding differences are magnified)
ARCHS = [("resnet18", 64, {}), ("resnet34", 64, {}), ("resnet50", 64, {}),
         ("vgg11", 32, {"dropout": 0.0}), ("vgg11_bn", 32, {"dropout": 0.0}),
         ("vgg16", 32, {"dropout": 0.0}), ("vgg16_bn", 32, {"dropout": 0.0}),
         ("mobilenet_v2", 64, {"dropout": 0.0}), ("alexnet", 64, {"dropout": 0.0}),
         ("squeezenet1_1", 64, {"dropout": 0.0})]


# the architectures with batch norm whose gradients are compared in float64 (one per block
# kind); VGG-11 and AlexNet, without batch norm, compare theirs in float32
F64_GRADS = ("resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1")


def _to_retro(sd):
    return {k: retrograd.tensor(v.detach().numpy().copy()) for k, v in sd.items()}


def _pair(name, kwargs, num_classes=10):
    torch.manual_seed(0)
    if name.startswith("vgg"):   # its random init of 120M weights is overwritten: skip it
        kwargs = dict(kwargs, init_weights=False)
    tv = getattr(torchvision.models, name)(weights=None, num_classes=num_classes, **kwargs)
    rg = getattr(models, name)(weights=None, num_classes=num_classes, **kwargs)
    sd = tv.state_dict()
    with torch.no_grad():   # non-trivial batch-norm statistics and affine parameters
        for k, v in sd.items():
            if k.endswith(("running_mean", "bias")):
                v.uniform_(-0.2, 0.2)
            elif k.endswith(("running_var", "bn1.weight", "bn2.weight", "bn3.weight")) or ".1.weight" in k \
                    and v.dim() == 1:
                v.uniform_(0.5, 1.5)
    rsd = rg.state_dict()
    assert list(rsd) == list(sd)
    assert [tuple(v.shape) for v in rsd.values()] == [tuple(v.shape) for v in sd.values()]
    rg.load_state_dict(_to_retro(sd))
    return tv, rg


def _close(r, t, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


@needs_torchvision
@pytest.mark.parametrize("name,size,kwargs", ARCHS, ids=[a[0] for a in ARCHS])
def test_same_state_dict_same_logits(name, size, kwargs):
    tv, rg = _pair(name, kwargs)
    x = np.random.default_rng(0).standard_normal((2, 3, size, size)).astype(np.float32)
    tv.eval(); rg.eval()
    with torch.no_grad():
        want = tv(torch.from_numpy(x))
    with retrograd.no_grad():
        got = rg(retrograd.tensor(x))
    assert got.shape == want.shape == (2, 10)
    _close(got, want)
    # train mode: batch statistics and the running statistics' update
    # (float32 rounding grows through training-mode batch norms at batch 2: the tight check of
    # the same computation is the float64 test below)
    tv.train(); rg.train()
    want = tv(torch.from_numpy(x))
    _close(rg(retrograd.tensor(x)), want, rtol=1e-3, atol=3e-4 * float(want.detach().abs().max()))
    for (kr, br), (kt, bt) in zip(rg.named_buffers(), tv.named_buffers()):
        assert kr == kt
        np.testing.assert_allclose(br.numpy(), bt.numpy(), rtol=1e-3, atol=1e-3 * float(bt.abs().max()),
                                   err_msg=kr)
    if name in ("vgg11", "alexnet"):   # (in float32: 60-130M weights would be slow in float64)
        (want * torch.arange(10.0)).sum().backward()
        got = rg(retrograd.tensor(x))
        (got * retrograd.arange(10.0)).sum().backward()
        scale = max(float(p.grad.abs().max()) for p in tv.parameters())
        for (kr, pr), (kt, pt) in zip(rg.named_parameters(), tv.named_parameters()):
            np.testing.assert_allclose(pr.grad.numpy(), pt.grad.numpy(), rtol=1e-3, atol=1e-5 * scale, err_msg=kr)


@needs_torchvision
@pytest.mark.parametrize("name,size,kwargs", [a for a in ARCHS if a[0] in F64_GRADS],
                         ids=[a[0] for a in ARCHS if a[0] in F64_GRADS])
def test_same_state_dict_same_gradients_float64(name, size, kwargs):
    # In float64: through a stack of training-mode batch norms at batch 2, float32 rounding
    # differences grow to ~1e-2 relative in the first layers' gradients (torch against itself
    # in another summation order does the same), while the formulas agree to ~1e-14.
    tv, rg = _pair(name, kwargs)
    tv.double().train(); rg.double().train()
    x = np.random.default_rng(2).standard_normal((2, 3, size, size))
    want, got = tv(torch.from_numpy(x)), rg(retrograd.tensor(x))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    (want * torch.arange(10.0, dtype=torch.float64)).sum().backward()
    (got * retrograd.arange(10.0, dtype=retrograd.float64)).sum().backward()
    scale = max(float(p.grad.abs().max()) for p in tv.parameters())
    for (kr, pr), (kt, pt) in zip(rg.named_parameters(), tv.named_parameters()):
        assert kr == kt
        np.testing.assert_allclose(pr.grad.numpy(), pt.grad.numpy(), rtol=1e-8, atol=1e-11 * scale, err_msg=kr)


def test_untrained_builders_follow_torchvisions_init():
    retrograd.manual_seed(0)
    m = models.resnet18(weights=None)
    w = m.conv1.weight.detach().numpy()
    # kaiming normal, fan_out, ReLU gain: std sqrt(2 / (64 * 7 * 7))
    assert abs(w.std() / np.sqrt(2 / (64 * 49)) - 1) < 0.05
    assert float(m.bn1.weight.sum()) == 64 and float(m.bn1.bias.abs().sum()) == 0
    v = models.mobilenet_v2(weights=None)
    assert abs(v.classifier[1].weight.detach().numpy().std() / 0.01 - 1) < 0.02
    assert float(v.classifier[1].bias.abs().sum()) == 0
    s = models.squeezenet1_1(weights=None)
    assert abs(s.classifier[1].weight.detach().numpy().std() / 0.01 - 1) < 0.05
    counts = {n: sum(p.numel() for p in getattr(models, n)().parameters())
              for n in ("resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1")}
    # torchvision's documented parameter counts
    assert counts == {"resnet18": 11689512, "resnet50": 25557032, "mobilenet_v2": 3504872,
                      "squeezenet1_1": 1235496}
    assert models.list_models() == sorted(models.list_models())
    assert models.get_model("resnet18", num_classes=3).fc.out_features == 3


def test_weights_argument(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    monkeypatch.setenv("RETROGRAD_CACHE", str(tmp_path / "cache"))
    with pytest.raises(FileNotFoundError, match="resnet18-f37072fd.pth.*download=True"):
        models.resnet18(weights=models.ResNet18_Weights.IMAGENET1K_V1)
    with pytest.raises(FileNotFoundError, match="download=True"):
        models.resnet18(weights="DEFAULT")
    with pytest.raises(ValueError, match="num_classes' expected value 1000 but got 10"):
        models.resnet18(weights="IMAGENET1K_V1", num_classes=10)
    with pytest.raises(ValueError, match="Failed to find Weights NOPE"):
        models.resnet18(weights="NOPE")
    assert models.ResNet50_Weights.DEFAULT is models.ResNet50_Weights.IMAGENET1K_V2
    assert models.get_weight("ResNet18_Weights.IMAGENET1K_V1") is models.ResNet18_Weights.IMAGENET1K_V1
    # a published file in the checkpoint folder
    retrograd.manual_seed(1)
    src = models.squeezenet1_1()
    folder = tmp_path / "torch_home" / "hub" / "checkpoints"
    folder.mkdir(parents=True)
    path = folder / models.SqueezeNet1_1_Weights.IMAGENET1K_V1.value.filename
    retrograd.save(src.state_dict(), str(path))         # PyTorch's zip format, as for any .pth
    m = models.squeezenet1_1(weights=models.SqueezeNet1_1_Weights.DEFAULT)
    assert retrograd.equal(m.features[0].weight, src.features[0].weight)
    # pretrained=True: the old spelling of the DEFAULT weights
    assert retrograd.equal(models.squeezenet1_1(pretrained=True).classifier[1].bias, src.classifier[1].bias)
    with pytest.raises(FileNotFoundError, match="weights file not found"):
        models.resnet18(weights=str(tmp_path / "missing.pth"))


@needs_torchvision
def test_resnet18_pth_written_by_torch_gives_torchvisions_logits(tmp_path):
    torch.manual_seed(0)
    tv = torchvision.models.resnet18(weights=None).eval()
    with torch.no_grad():   # used statistics, as in a trained network
        for mod in tv.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.1, 0.1)
                mod.running_var.uniform_(0.5, 2.0)
    path = os.path.join(tmp_path, "resnet18-local.pth")
    torch.save(tv.state_dict(), path)
    x = np.random.default_rng(1).random((2, 3, 64, 64), dtype=np.float32)
    with torch.no_grad():
        want = tv(torch.from_numpy(x)).numpy()
    m = models.resnet18(weights=path).eval()            # weights= the file's path
    m2 = models.resnet18()
    m2.load_state_dict(retrograd.load(path))             # or load_state_dict(torch.load(...))
    m2.eval()
    with retrograd.no_grad():
        got, got2 = m(retrograd.tensor(x)).numpy(), m2(retrograd.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(got, got2)
    assert (got.argmax(1) == want.argmax(1)).all()


@needs_torchvision
@pytest.mark.parametrize("name", ["ResNet18_Weights.IMAGENET1K_V1", "ResNet50_Weights.IMAGENET1K_V2",
                                  "MobileNet_V2_Weights.IMAGENET1K_V2", "VGG16_Weights.IMAGENET1K_V1"])
def test_weights_transforms_match_torchvisions_presets(name):
    from PIL import Image
    ours = models.get_weight(name).transforms()
    theirs = torchvision.models.get_weight(name).transforms()
    assert ours.resize_size == theirs.resize_size and ours.crop_size == theirs.crop_size
    img = Image.fromarray(np.random.default_rng(0).integers(0, 256, (250, 300, 3), dtype=np.uint8))
    np.testing.assert_allclose(ours(img).numpy(), theirs(img).numpy(), rtol=1e-6, atol=1e-6)
    t = np.random.default_rng(1).random((3, 240, 260), dtype=np.float32)
    np.testing.assert_allclose(ours(retrograd.tensor(t)).numpy(), theirs(torch.from_numpy(t)).numpy(),
                               rtol=1e-5, atol=2e-5)
