"""CIFAR-10/100 in torchvision's layout (read safely), ImageFolder/DatasetFolder and FakeData,
compared with torchvision.datasets where it is importable; and ``torchvision`` under
``retrograd run``."""
import hashlib
import io
import os
import pickle
import struct
import tarfile

import numpy as np
import pytest

import retrograd
from retrograd import datasets
from retrograd.datasets.mnist import DatasetFileError
from vision_oracle import needs_torchvision, torchvision

Image = pytest.importorskip("PIL.Image")


def _py2(obj):
    """``obj`` (dicts, lists, str, small ints, uint8 arrays) pickled as Python 2's cPickle
    wrote the original CIFAR batches: byte strings as BINSTRING, NumPy 1's global names."""
    if isinstance(obj, dict):
        return b"}(" + b"".join(_py2(k) + _py2(v) for k, v in obj.items()) + b"u"
    if isinstance(obj, list):
        return b"](" + b"".join(_py2(v) for v in obj) + b"e"
    if isinstance(obj, str):
        return b"T" + struct.pack("<i", len(obj)) + obj.encode("latin1")
    if isinstance(obj, int):
        return b"J" + struct.pack("<i", obj)
    assert isinstance(obj, np.ndarray) and obj.dtype == np.uint8
    a = np.ascontiguousarray(obj)
    return (b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85" + _py2("b") + b"\x87R(K\x01("
            + b"".join(_py2(int(d)) for d in a.shape) + b"tcnumpy\ndtype\n" + _py2("u1") + b"K\x00K\x01\x87R(K\x03"
            + _py2("|") + b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb\x89" + _py2(a.tobytes().decode("latin1"))
            + b"tb")


def _write(path, obj, protocol=2):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if protocol == "python2":
        with open(path, "wb") as f:
            f.write(b"\x80\x02" + _py2(obj) + b".")
        return
    old_names = protocol == "numpy1"
    data = pickle.dumps(obj, protocol=2 if old_names else protocol)
    if old_names:   # as NumPy 1 (and the original files) name the array rebuilder
        data = data.replace(b"cnumpy._core.multiarray\n", b"cnumpy.core.multiarray\n")
    with open(path, "wb") as f:
        f.write(data)


def _fake_cifar(root, hundred=False, n=4, protocol=2, bytes_keys=True):
    """A small copy of the official folder: the same file names, dict keys and array layout.
    The originals are Python 2 pickles whose keys read as str; bytes keys are accepted too."""
    rng = np.random.default_rng(7)
    k = (lambda s: s.encode()) if bytes_keys else (lambda s: s)
    if hundred:
        folder, files, label_key = os.path.join(root, "cifar-100-python"), ["train", "test"], "fine_labels"
        _write(os.path.join(folder, "meta"), {k("fine_label_names"): [f"c{i}" for i in range(100)],
                                              k("coarse_label_names"): [f"s{i}" for i in range(20)]}, protocol)
        nclass = 100
    else:
        folder, label_key = os.path.join(root, "cifar-10-batches-py"), "labels"
        files = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
        _write(os.path.join(folder, "batches.meta"), {k("label_names"): [f"class{i}" for i in range(10)],
                                                      k("num_vis"): 3072}, protocol)
        nclass = 10
    for name in files:
        _write(os.path.join(folder, name), {k("data"): rng.integers(0, 256, (n, 3072), dtype=np.uint8),
                                            k(label_key): [int(v) for v in rng.integers(0, nclass, n)],
                                            k("batch_label"): name, k("filenames"): [f"{i}.png" for i in range(n)]},
               protocol)
    return folder


@pytest.mark.parametrize("protocol,bytes_keys", [(2, True), (2, False), (5, False), ("numpy1", False),
                                                 ("python2", False)])
@pytest.mark.parametrize("hundred", [False, True])
def test_cifar_reads_torchvisions_layout(tmp_path, protocol, bytes_keys, hundred):
    _fake_cifar(str(tmp_path), hundred, protocol=protocol, bytes_keys=bytes_keys)
    cls = datasets.CIFAR100 if hundred else datasets.CIFAR10
    train, test = cls(tmp_path), cls(tmp_path, train=False)
    assert len(train) == (4 if hundred else 20) and len(test) == 4
    assert train.data.shape == (len(train), 32, 32, 3) and train.data.dtype == np.uint8
    assert train.classes[:2] == (["c0", "c1"] if hundred else ["class0", "class1"])
    img, label = train[3]
    assert img.size == (32, 32) and img.mode == "RGB" and label == train.targets[3]
    np.testing.assert_array_equal(np.asarray(img), train.data[3])
    from retrograd.vision import transforms as T
    x, y = cls(tmp_path, transform=T.ToTensor(), target_transform=lambda t: t + 100)[0]
    assert tuple(x.shape) == (3, 32, 32) and y == train.targets[0] + 100


@needs_torchvision
@pytest.mark.parametrize("hundred", [False, True])
def test_cifar_matches_torchvision(tmp_path, monkeypatch, hundred):
    _fake_cifar(str(tmp_path), hundred, protocol="python2", bytes_keys=False)
    tv_cls = torchvision.datasets.CIFAR100 if hundred else torchvision.datasets.CIFAR10
    # the small copy is not the published files: skip torchvision's MD5 checks of them
    monkeypatch.setattr(tv_cls, "_check_integrity", lambda self: True)
    monkeypatch.setattr(torchvision.datasets.cifar, "check_integrity", lambda path, md5=None: True)
    rg_cls = datasets.CIFAR100 if hundred else datasets.CIFAR10
    for train in (True, False):
        want, got = tv_cls(str(tmp_path), train=train), rg_cls(str(tmp_path), train=train)
        np.testing.assert_array_equal(got.data, want.data)
        assert got.targets == want.targets and got.classes == want.classes
        assert got.class_to_idx == want.class_to_idx
        np.testing.assert_array_equal(np.asarray(got[1][0]), np.asarray(want[1][0]))


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_cifar_refuses_hostile_and_broken_pickles(tmp_path):
    folder = _fake_cifar(str(tmp_path))
    marker = tmp_path / "pwned"
    _write(os.path.join(folder, "data_batch_2"), {"data": _Evil(marker), "labels": []})
    with pytest.raises(DatasetFileError, match=r"refusing to load the global (posix|os|nt)\.system"):
        datasets.CIFAR10(tmp_path)
    assert not marker.exists()
    # other callables a pickle could name, and codecs other than latin-1
    for payload in (b"\x80\x02cbuiltins\neval\nX\x04\x00\x00\x001+1\x85R.",
                    b"\x80\x02c_codecs\nencode\nX\x01\x00\x00\x00aX\x04\x00\x00\x00zlib\x86R.",
                    b"\x80\x02cnumpy\nload\nX\x01\x00\x00\x00a\x85R."):
        with open(os.path.join(folder, "data_batch_2"), "wb") as f:
            f.write(payload)
        with pytest.raises(DatasetFileError, match="refusing"):
            datasets.CIFAR10(tmp_path)
    # a forged array header asking for a huge array: refused before anything is allocated
    forged = (b"\x80\x02cnumpy._core.multiarray\n_reconstruct\ncnumpy\nndarray\nJ\x00\x00\x00\x40J\x00\x00\x00\x40"
              b"\x86X\x01\x00\x00\x00b\x87R.")
    with open(os.path.join(folder, "data_batch_2"), "wb") as f:
        f.write(forged)
    with pytest.raises(DatasetFileError, match="refusing an array of 1152921504606846976 bytes"):
        datasets.CIFAR10(tmp_path)
    good = open(os.path.join(folder, "data_batch_1"), "rb").read()
    for broken in (good[:len(good) // 2], b"", b"not a pickle at all"):
        with open(os.path.join(folder, "data_batch_2"), "wb") as f:
            f.write(broken)
        with pytest.raises(DatasetFileError, match="data_batch_2"):
            datasets.CIFAR10(tmp_path)
    _write(os.path.join(folder, "data_batch_2"), {"data": np.zeros((2, 10), np.uint8), "labels": [0, 1]})
    with pytest.raises(DatasetFileError, match=r"expected uint8 data of shape \(N, 3072\)"):
        datasets.CIFAR10(tmp_path)
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted. You can use download=True"):
        datasets.CIFAR10(tmp_path / "elsewhere")


def test_cifar_download_checks_md5_and_unpacks_only_its_files(tmp_path, monkeypatch):
    src = tmp_path / "src"
    folder = _fake_cifar(str(src))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(folder, arcname="cifar-10-batches-py")
        info = tarfile.TarInfo("../outside.txt")       # a hostile member: never written
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    archive = buf.getvalue()
    md5 = hashlib.md5
    sums = {n: md5(open(os.path.join(folder, n), "rb").read()).hexdigest() for n in os.listdir(folder)}

    class Local(datasets.CIFAR10):
        tgz_md5 = md5(archive).hexdigest()
        train_list = [[f"data_batch_{i}", sums[f"data_batch_{i}"]] for i in range(1, 6)]
        test_list = [["test_batch", sums["test_batch"]]]
        meta = dict(datasets.CIFAR10.meta, md5=sums["batches.meta"])

    calls = []

    class Response(io.BytesIO):
        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    def urlopen(req, timeout=None):
        calls.append(req.full_url)
        return Response(archive)

    import urllib.request
    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    root = tmp_path / "root"
    with pytest.raises(RuntimeError, match="Dataset not found"):
        Local(root)                      # no download unless asked
    assert calls == []
    ds = Local(root, download=True)
    assert calls == [datasets.CIFAR10.url] and len(ds) == 20
    assert not (tmp_path / "outside.txt").exists()
    Local(root, download=True)           # already there: nothing fetched
    assert len(calls) == 1

    class BadSum(Local):
        tgz_md5 = "0" * 32
    with pytest.raises(RuntimeError, match="MD5 mismatch"):
        BadSum(tmp_path / "root2", download=True)
    assert not (tmp_path / "root2" / "cifar-10-batches-py").exists()


def _image_tree(root):
    rng = np.random.default_rng(3)
    files = {"cat": ["b.png", "a.jpg", "sub/c.bmp", "notes.txt"], "dog": ["z.PNG", "y.ppm"], "emu": []}
    for cls, names in files.items():
        os.makedirs(os.path.join(root, cls), exist_ok=True)
        for name in names:
            path = os.path.join(root, cls, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if name.endswith(".txt"):
                open(path, "w").write("x")
                continue
            fmt = {"png": "PNG", "jpg": "JPEG", "bmp": "BMP", "ppm": "PPM"}[name.rsplit(".", 1)[1].lower()]
            mode = "L" if name.startswith("y") else "RGB"
            Image.fromarray(rng.integers(0, 256, (5, 6, 3), dtype=np.uint8)).convert(mode).save(path, format=fmt)


def test_image_folder(tmp_path):
    _image_tree(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes emu"):
        datasets.ImageFolder(tmp_path)
    ds = datasets.ImageFolder(tmp_path, allow_empty=True)
    assert ds.classes == ["cat", "dog", "emu"] and ds.class_to_idx == {"cat": 0, "dog": 1, "emu": 2}
    assert [os.path.relpath(p, tmp_path) for p, _ in ds.samples] == \
        ["cat/a.jpg", "cat/b.png", os.path.join("cat", "sub", "c.bmp"), "dog/y.ppm", "dog/z.PNG"]
    assert ds.targets == [0, 0, 0, 1, 1] and ds.imgs is ds.samples
    img, label = ds[3]
    assert img.mode == "RGB" and img.size == (6, 5) and label == 1
    only_png = datasets.DatasetFolder(tmp_path, loader=lambda p: p, extensions=(".png",), allow_empty=True)
    assert [os.path.basename(p) for p, _ in only_png.samples] == ["b.png", "z.PNG"]
    with pytest.raises(ValueError, match="Both extensions and is_valid_file"):
        datasets.DatasetFolder(tmp_path, loader=lambda p: p)


@needs_torchvision
def test_image_folder_matches_torchvision(tmp_path):
    _image_tree(str(tmp_path))
    want = torchvision.datasets.ImageFolder(str(tmp_path), allow_empty=True)
    got = datasets.ImageFolder(str(tmp_path), allow_empty=True)
    assert got.samples == want.samples and got.classes == want.classes
    for i in range(len(want)):
        np.testing.assert_array_equal(np.asarray(got[i][0]), np.asarray(want[i][0]))


def test_fake_data():
    retrograd.manual_seed(11)
    before = retrograd.rand(3)
    retrograd.manual_seed(11)
    ds = datasets.FakeData(size=5, image_size=(3, 8, 10), num_classes=4)
    a, la = ds[2]
    b, lb = ds[2]
    assert len(ds) == 5 and a.size == (10, 8) and a.mode == "RGB" and 0 <= la < 4
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert la == lb
    assert retrograd.equal(retrograd.rand(3), before)       # the global generator is left alone
    with pytest.raises(IndexError, match="FakeData index out of range"):
        ds[5]
    g, _ = datasets.FakeData(size=2, image_size=(1, 4, 4))[0]
    assert g.mode == "L"


def test_torchvision_under_retrograd_run(tmp_path):
    from retrograd.cli.run import torch_aliases
    import retrograd.vision
    with torch_aliases():
        import torchvision as tv
        import torchvision.transforms.functional as TVF
        from torchvision import datasets as tvd, models as tvm, transforms as tvt
        from torchvision.utils import save_image
        assert tv is retrograd.vision and tvm.resnet18 is retrograd.vision.models.resnet18
        assert tvd.MNIST is retrograd.datasets.MNIST and tvd.CIFAR10 is retrograd.datasets.CIFAR10
        assert tvt.ToTensor is retrograd.vision.transforms.ToTensor and TVF.hflip is retrograd.vision.transforms.functional.hflip
        save_image(retrograd.rand(2, 3, 4, 4), str(tmp_path / "x.png"))
        with pytest.raises(NotImplementedError, match="torchvision.no_such_thing is not implemented in retrograd"):
            tv.no_such_thing
    assert (tmp_path / "x.png").is_file()


GAN_SCRIPT = '''
# A small DCGAN-style training script, written the way PyTorch users write them.
import os, sys
import torch
import torch.nn as nn
import torch.optim as optim
import torchvision.datasets as dset
import torchvision.transforms as transforms
import torchvision.utils as vutils
from torchvision import models

out = sys.argv[1]
torch.manual_seed(0)
size = 16
dataset = dset.FakeData(size=16, image_size=(3, 20, 20),
                        transform=transforms.Compose([transforms.Resize(size), transforms.CenterCrop(size),
                                                      transforms.RandomHorizontalFlip(), transforms.ToTensor(),
                                                      transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))]))
loader = torch.utils.data.DataLoader(dataset, batch_size=8, shuffle=True)
netG = nn.Sequential(nn.ConvTranspose2d(8, 16, 4, 1, 0, bias=False), nn.BatchNorm2d(16), nn.ReLU(True),
                     nn.ConvTranspose2d(16, 3, 4, 4, 0, bias=False), nn.Tanh())
netD = models.squeezenet1_1(num_classes=1)
opt_d = optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_g = optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
crit = nn.BCEWithLogitsLoss()
fixed = torch.randn(8, 8, 1, 1)
for i, (real, _) in enumerate(loader):
    netD.zero_grad()
    b = real.size(0)
    err_real = crit(netD(nn.functional.interpolate(real, size=32)).view(-1), torch.ones(b))
    fake = netG(torch.randn(b, 8, 1, 1))
    err_fake = crit(netD(nn.functional.interpolate(fake.detach(), size=32)).view(-1), torch.zeros(b))
    (err_real + err_fake).backward()
    opt_d.step()
    netG.zero_grad()
    err_g = crit(netD(nn.functional.interpolate(fake, size=32)).view(-1), torch.ones(b))
    err_g.backward()
    opt_g.step()
    print(f"[{i}] Loss_D: {(err_real + err_fake).item():.4f} Loss_G: {err_g.item():.4f}")
vutils.save_image(real, os.path.join(out, "real_samples.png"), normalize=True)
vutils.save_image(netG(fixed).detach(), os.path.join(out, "fake_samples.png"), normalize=True, nrow=4)
torch.save(netD.state_dict(), os.path.join(out, "netD.pth"))
'''


def test_a_gan_script_runs_under_retrograd_run(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "gan.py"
    script.write_text(GAN_SCRIPT)
    src = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "src"))
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "retrograd", "run", str(script), str(tmp_path)], capture_output=True,
                       text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert "[1] Loss_D:" in r.stdout
    real = Image.open(tmp_path / "real_samples.png")
    assert real.size == (2 + 8 * 18, 2 + 18) and real.mode == "RGB"
    assert Image.open(tmp_path / "fake_samples.png").size == (2 + 4 * 18, 2 + 2 * 18)
    sd = retrograd.load(str(tmp_path / "netD.pth"))
    assert sd["classifier.1.weight"].shape == (1, 512, 1, 1)


def test_mnist_numpy_images_go_through_pil_transforms():
    from retrograd.vision import transforms as T
    img = np.random.default_rng(0).integers(0, 256, (28, 28), dtype=np.uint8)   # what MNIST gives
    out = T.Compose([T.Resize(32), T.RandomRotation(10), T.ToTensor()])(img)
    assert tuple(out.shape) == (1, 32, 32) and out.dtype == retrograd.float32
    np.testing.assert_array_equal(T.ToTensor()(T.functional.hflip(img)).numpy()[0], img[:, ::-1] / np.float32(255))


@pytest.mark.parametrize("target", ["data_batch_1", "batches.meta"])
def test_cifar_mutated_files_fail_cleanly(tmp_path, target):
    folder = _fake_cifar(str(tmp_path), n=2, protocol="python2", bytes_keys=False)
    path = os.path.join(folder, target)
    good = open(path, "rb").read()
    rng = np.random.default_rng(0)
    outcomes = set()
    for _ in range(80):
        b = bytearray(good)
        for _ in range(int(rng.integers(1, 4))):
            kind = rng.integers(0, 3)
            pos = int(rng.integers(0, len(b)))
            if kind == 0:
                b[pos] = int(rng.integers(0, 256))
            elif kind == 1:
                del b[pos:pos + int(rng.integers(1, 9))]
            else:
                b[pos:pos] = bytes(rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8))
        with open(path, "wb") as f:
            f.write(bytes(b))
        try:
            ds = datasets.CIFAR10(tmp_path)
            assert ds.data.dtype == np.uint8 and len(ds.targets) == len(ds.data)
            outcomes.add("loaded")
        except DatasetFileError as e:
            assert target in str(e)
            outcomes.add("refused")
    assert "refused" in outcomes
