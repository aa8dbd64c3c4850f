"""Weights for the model builders: a file the user provides, or a named published weight set
(``ResNet18_Weights.IMAGENET1K_V1``) read from the local checkpoint folders; fetched from
the network only when asked (``download=True``)."""
import enum
import os

__all__ = ["WeightsEnum", "Weights", "get_weight", "load_weights_into", "checkpoint_dirs"]


class ImageClassification:
    """The evaluation preprocessing of ImageNet classifiers: resize the smaller edge to
    ``resize_size`` (bilinear, antialiased), centre-crop ``crop_size``, scale to [0, 1] floats,
    normalize with ImageNet's mean and std. Takes PIL images and tensor images."""

    def __init__(self, *, crop_size, resize_size=256, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 interpolation=None, antialias=True):
        from ..transforms.functional import InterpolationMode
        self.crop_size, self.resize_size = [crop_size], [resize_size]
        self.mean, self.std = list(mean), list(std)
        self.interpolation = interpolation or InterpolationMode.BILINEAR
        self.antialias = antialias

    def __call__(self, img):
        from ... import float32
        from ..._tensor import Tensor
        from ..transforms import functional as F
        img = F.resize(img, self.resize_size, interpolation=self.interpolation, antialias=self.antialias)
        img = F.center_crop(img, self.crop_size)
        if not isinstance(img, Tensor):
            img = F.pil_to_tensor(img)
        img = F.convert_image_dtype(img, float32)
        return F.normalize(img, mean=self.mean, std=self.std)

    def __repr__(self):
        return (f"{self.__class__.__name__}(\n    crop_size={self.crop_size}\n    resize_size={self.resize_size}\n"
                f"    mean={self.mean}\n    std={self.std}\n    interpolation={self.interpolation}\n)")


class Weights:
    """A published weight file: its ``url`` (whose name carries the first hex digits of the
    file's SHA-256), ``meta`` (``num_classes``...) and its preprocessing (``resize_size`` and
    ``crop_size`` of ``ImageClassification``)."""

    def __init__(self, url, meta, resize_size=256, crop_size=224):
        self.url = url
        self.meta = dict(meta)
        self.resize_size, self.crop_size = resize_size, crop_size

    @property
    def filename(self):
        return self.url.rsplit("/", 1)[1]

    def __repr__(self):
        return f"Weights(url={self.url!r})"


def checkpoint_dirs():
    """Folders searched for published weight files: ``$TORCH_HOME/hub/checkpoints`` (PyTorch's
    cache, default ``~/.cache/torch``) and retrograd's cache (``<cache>/checkpoints``)."""
    from ...datasets.mnist import cache_dir
    torch_home = os.environ.get("TORCH_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "torch")
    return [os.path.join(torch_home, "hub", "checkpoints"), os.path.join(cache_dir(), "checkpoints")]


class WeightsEnum(enum.Enum):
    """The weight sets of one architecture (members hold a ``Weights``)."""

    @classmethod
    def verify(cls, obj):
        if obj is None or isinstance(obj, cls):
            return obj
        if isinstance(obj, str):
            name = obj.replace(cls.__name__ + ".", "")
            try:
                return cls[name]
            except KeyError:
                raise ValueError(f"Failed to find Weights {obj} in {cls.__name__}.") from None
        raise TypeError(f"Invalid Weight class provided; expected {cls.__name__} but received {obj.__class__.__name__}.")

    @property
    def url(self):
        return self.value.url

    @property
    def meta(self):
        return self.value.meta

    def transforms(self, **kwargs):
        """The preprocessing these weights were evaluated with (``ImageClassification``)."""
        return ImageClassification(crop_size=self.value.crop_size, resize_size=self.value.resize_size, **kwargs)

    def path(self):
        """The local file of these weights, or None when it is in none of ``checkpoint_dirs()``."""
        for d in checkpoint_dirs():
            p = os.path.join(d, self.value.filename)
            if os.path.isfile(p):
                return p
        return None

    def download(self, progress=True):
        """Fetch the weight file into retrograd's checkpoint folder, checking the SHA-256 prefix
        its name carries; returns its path."""
        import hashlib
        import urllib.request
        from ...serialization import _write_atomic
        p = self.path()
        if p is not None:
            return p
        folder = checkpoint_dirs()[1]
        os.makedirs(folder, exist_ok=True)
        if progress:
            print(f'Downloading: "{self.url}" to {folder}', flush=True)
        req = urllib.request.Request(self.url, headers={"User-Agent": "retrograd"})
        with urllib.request.urlopen(req, timeout=120) as r:
            data = r.read()
        stem = os.path.splitext(self.value.filename)[0]
        prefix = stem.rsplit("-", 1)[-1]
        digest = hashlib.sha256(data).hexdigest()
        if not digest.startswith(prefix):
            raise RuntimeError(f'invalid hash value (expected "{prefix}", got "{digest}")')
        target = os.path.join(folder, self.value.filename)
        _write_atomic(target, data)
        return target

    def get_state_dict(self, progress=True, download=False, check_hash=True):
        """The state_dict of these weights, read (safely: tensors only) from the local file; the
        network is used only with ``download=True``."""
        from ...serialization import load
        p = self.path()
        if p is None:
            if not download:
                raise FileNotFoundError(
                    f"{type(self).__name__}.{self.name}: the weight file {self.value.filename} is not in "
                    f"{' or '.join(checkpoint_dirs())}. Download {self.url} into one of them, pass the file's "
                    "path as weights=, or call .get_state_dict(download=True) to fetch it")
            p = self.download(progress)
        return load(p, map_location="cpu", weights_only=True)

    def __repr__(self):
        return f"{type(self).__name__}.{self.name}"


def get_weight(name):
    """``get_weight("ResNet18_Weights.IMAGENET1K_V1")``: the weights enum member of that name."""
    from . import __dict__ as ns
    enum_name, _, member = name.partition(".")
    cls = ns.get(enum_name)
    if cls is None or not isinstance(cls, type) or not issubclass(cls, WeightsEnum):
        raise ValueError(f"The weight enum '{enum_name}' for the specific method couldn't be retrieved.")
    return cls.verify(member)


def _as_path(weights):
    """The file ``weights=`` names, or None when it names a weight set."""
    if isinstance(weights, os.PathLike):
        return os.fspath(weights)
    if isinstance(weights, str) and (os.path.isfile(weights) or os.sep in weights or "/" in weights
                                     or weights.endswith((".pth", ".pt", ".safetensors", ".bin"))):
        return weights
    return None


def resolve_weights(weights, enum_cls):
    """``weights=`` of a builder: None, an enum member or its name, or the path of a state_dict
    file (PyTorch's ``.pth`` or retrograd's own); the state_dict or None."""
    if weights is None:
        return None
    path = _as_path(weights)
    if path is not None:
        from ...serialization import load
        if not os.path.isfile(path):
            raise FileNotFoundError(f"weights file not found: {path}")
        sd = load(path, map_location="cpu", weights_only=True)
        if isinstance(sd, dict) and isinstance(sd.get("state_dict"), dict):
            sd = sd["state_dict"]
        return sd
    return enum_cls.verify(weights).get_state_dict()


def load_weights_into(model, weights, enum_cls):
    """Load ``weights`` (see ``resolve_weights``) into ``model``."""
    sd = resolve_weights(weights, enum_cls)
    if sd is not None:
        model.load_state_dict(sd)
    return model


def check_num_classes(weights, enum_cls, kwargs):
    """Published weights fix ``num_classes``: a different one is an error (torchvision's rule)."""
    if weights is None or _as_path(weights) is not None:
        return
    w = enum_cls.verify(weights)
    n = w.meta.get("num_classes")
    if n is None:
        return
    if "num_classes" in kwargs and kwargs["num_classes"] != n:
        raise ValueError(f"The parameter 'num_classes' expected value {n} but got {kwargs['num_classes']} instead.")
    kwargs["num_classes"] = n


def build(make, weights, enum_cls, kwargs):
    """Build a model with ``make(**kwargs)`` and load ``weights`` into it. The old
    ``pretrained=True/False`` argument stands for the DEFAULT weights / None."""
    if "pretrained" in kwargs:
        pretrained = kwargs.pop("pretrained")
        if weights is None and pretrained:
            weights = enum_cls.DEFAULT
    check_num_classes(weights, enum_cls, kwargs)
    return load_weights_into(make(**kwargs), weights, enum_cls)
