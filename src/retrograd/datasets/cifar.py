"""CIFAR-10 and CIFAR-100 in torchvision's on-disk layout (``root/cifar-10-batches-py`` and
``root/cifar-100-python``, the folders the official archives unpack to).

The batches are Python pickles. They are read by an unpickler that resolves only the few
NumPy names an array's pickle uses (and latin-1 byte strings), never anything else: a file
naming any other global is refused with an error naming it, so a tampered file cannot run
code. ``download=True`` fetches the archive and checks its MD5 before unpacking it.
"""
import io
import os
import pickle

import numpy as np

from .._tensor import Tensor
from .vision import VisionDataset
from .mnist import DatasetFileError, _md5

__all__ = ["CIFAR10", "CIFAR100", "safe_unpickle"]


def _latin1_encode(obj, encoding="latin1", errors="strict"):
    # what Python 3's pickle writes for a bytes object at protocol 2: str -> bytes, latin-1 only
    if encoding not in ("latin1", "latin-1") or not isinstance(obj, str):
        raise pickle.UnpicklingError(f"refusing _codecs.encode with encoding {encoding!r}")
    return obj.encode("latin1")


def _allowed(budget):
    from numpy._core import multiarray, numeric

    def reconstruct(subtype, shape, dtype):
        # the empty array an ndarray's pickle starts from (its data follows from the file):
        # never larger than the file, so a forged shape cannot allocate gigabytes
        if subtype is not np.ndarray:
            raise pickle.UnpicklingError("refusing to rebuild an array of a type other than numpy.ndarray")
        try:
            n = int(np.prod(np.asarray(shape, dtype=np.int64), dtype=np.float64)) * np.dtype(dtype).itemsize
        except (TypeError, ValueError) as e:
            raise pickle.UnpicklingError(f"malformed array header: {e}") from None
        if n > budget:
            raise pickle.UnpicklingError(f"refusing an array of {n} bytes in a file of {budget} bytes")
        return multiarray._reconstruct(subtype, shape, dtype)

    return {("numpy.core.multiarray", "_reconstruct"): reconstruct,
            ("numpy._core.multiarray", "_reconstruct"): reconstruct,
            ("numpy.core.numeric", "_frombuffer"): numeric._frombuffer,
            ("numpy._core.numeric", "_frombuffer"): numeric._frombuffer,
            ("numpy", "ndarray"): np.ndarray,
            ("numpy", "dtype"): np.dtype,
            ("_codecs", "encode"): _latin1_encode}


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, f, budget, **kw):
        super().__init__(f, **kw)
        self._names = _allowed(budget)

    def find_class(self, module, name):
        fn = self._names.get((module, name))
        if fn is None:
            raise pickle.UnpicklingError(f"refusing to load the global {module}.{name}: a dataset batch holds only "
                                         "NumPy arrays, lists, numbers and strings")
        return fn

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refusing a persistent id in a dataset batch")


def safe_unpickle(data, encoding="latin1"):
    """Unpickle ``data`` (bytes) allowing only NumPy arrays and plain Python values."""
    try:
        return _RestrictedUnpickler(io.BytesIO(data), len(data), encoding=encoding).load()
    except pickle.UnpicklingError:
        raise
    except Exception as e:   # a malformed file: any error of the unpickling machinery
        raise pickle.UnpicklingError(f"malformed pickle: {type(e).__name__}: {e}") from None


def _key(d, name):
    for k in (name, name.encode()):
        if k in d:
            return d[k]
    raise KeyError(name)


class CIFAR10(VisionDataset):
    """CIFAR-10: 50,000 training and 10,000 test 32x32 colour images in 10 classes.

    ``data`` is a uint8 NumPy array (N, 32, 32, 3), ``targets`` a list of ints, ``classes``
    the class names. A sample is ``(image, label)``: a PIL image (``transform`` applied)
    and an int (``target_transform`` applied).
    """

    base_folder = "cifar-10-batches-py"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    filename = "cifar-10-python.tar.gz"
    tgz_md5 = "c58f30108f718f92721af3b95e74349a"
    train_list = [["data_batch_1", "c99cafc152244af753f735de768cd75f"],
                  ["data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"],
                  ["data_batch_3", "54ebc095f3ab1f0389bbae665268c751"],
                  ["data_batch_4", "634d18415352ddfa80567beed471001a"],
                  ["data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"]]
    test_list = [["test_batch", "40351d587109b95175f43aff81a1287e"]]
    meta = {"filename": "batches.meta", "key": "label_names", "md5": "5ff9c542aee3614f3951f8cda6e48888"}
    label_key = "labels"

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform, target_transform)
        self.train = train
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        data, targets = [], []
        for name, _ in (self.train_list if train else self.test_list):
            batch = self._read(name)
            try:
                arr = np.asarray(_key(batch, "data"))
                labels = _key(batch, self.label_key)
            except KeyError as e:
                raise DatasetFileError(f"{self._path(name)}: expected a dict with 'data' and {self.label_key!r}, "
                                       f"missing {e}") from None
            if arr.dtype != np.uint8 or arr.ndim != 2 or arr.shape[1] != 3072:
                raise DatasetFileError(f"{self._path(name)}: expected uint8 data of shape (N, 3072), found "
                                       f"{arr.dtype} {arr.shape}")
            if not isinstance(labels, (list, tuple, np.ndarray)) or len(labels) != len(arr) or \
                    not all(isinstance(v, (int, np.integer)) for v in labels):
                raise DatasetFileError(f"{self._path(name)}: expected {len(arr)} integer labels")
            data.append(arr)
            targets.extend(int(v) for v in labels)
        self.data = np.vstack(data).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)   # to HWC
        self.targets = targets
        self._load_meta()

    def _path(self, name):
        return os.path.join(self.root, self.base_folder, name)

    def _read(self, name):
        with open(self._path(name), "rb") as f:
            raw = f.read()
        try:
            obj = safe_unpickle(raw)
        except pickle.UnpicklingError as e:
            raise DatasetFileError(f"{self._path(name)}: {e}") from None
        if not isinstance(obj, dict):
            raise DatasetFileError(f"{self._path(name)}: expected a dict, found {type(obj).__name__}")
        return obj

    def _load_meta(self):
        meta = self._read(self.meta["filename"])
        try:
            names = _key(meta, self.meta["key"])
        except KeyError:
            raise DatasetFileError(f"{self._path(self.meta['filename'])}: no {self.meta['key']!r}") from None
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, (str, bytes)) for n in names):
            raise DatasetFileError(f"{self._path(self.meta['filename'])}: expected a list of class names")
        self.classes = [n.decode("latin1") if isinstance(n, bytes) else n for n in names]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def _check_exists(self):
        return all(os.path.isfile(self._path(n)) for n, _ in self.train_list + self.test_list + [
            [self.meta["filename"], None]])

    def __getitem__(self, index):
        from PIL import Image
        img, target = self.data[index], self.targets[index]
        return self._transformed(Image.fromarray(img), target)

    def __len__(self):
        return len(self.data)

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"

    def download(self):
        """Fetch the archive into ``root`` (MD5-checked) and unpack it; nothing when the
        batches are already there."""
        if self._check_exists():
            print("Files already downloaded and verified")
            return
        import tarfile
        import urllib.request
        from .mnist import _atomic_write
        archive = os.path.join(self.root, self.filename)
        if not (os.path.isfile(archive) and _md5(archive) == self.tgz_md5):
            req = urllib.request.Request(self.url, headers={"User-Agent": "retrograd"})
            with urllib.request.urlopen(req, timeout=120) as r:
                data = r.read()
            import hashlib
            got = hashlib.md5(data).hexdigest()
            if got != self.tgz_md5:
                raise RuntimeError(f"Error downloading {self.url}: MD5 mismatch (expected {self.tgz_md5}, got {got})")
            _atomic_write(archive, data)
        wanted = {f"{self.base_folder}/{n}" for n, _ in self.train_list + self.test_list} | \
            {f"{self.base_folder}/{self.meta['filename']}"}
        with tarfile.open(archive, "r:gz") as tar:
            members = [m for m in tar.getmembers() if m.name in wanted and m.isfile()]
            for m in members:            # only the known regular files: no links, no paths outside root
                data = tar.extractfile(m).read()
                _atomic_write(os.path.join(self.root, m.name), data)
        for name, md5 in self.train_list + self.test_list + [[self.meta["filename"], self.meta["md5"]]]:
            if _md5(self._path(name)) != md5:
                raise RuntimeError(f"{self._path(name)}: MD5 mismatch after unpacking {archive}")


class CIFAR100(CIFAR10):
    """CIFAR-100: like CIFAR-10 with 100 classes (the fine labels)."""

    base_folder = "cifar-100-python"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
    filename = "cifar-100-python.tar.gz"
    tgz_md5 = "eb9058c3a382ffc7106e4002c42a8d85"
    train_list = [["train", "16019d7e3df5f24257cddd939b257f8d"]]
    test_list = [["test", "f0ef6b0ae62326f3e7ffdfab6717acfc"]]
    meta = {"filename": "meta", "key": "fine_label_names", "md5": "7973b15100ade9c7d40fb424638fde48"}
    label_key = "fine_labels"
