"""``retrograd.cuda``: NVIDIA GPUs through CuPy (imported on first use; everything answers without it).

Without CuPy, or without a GPU, ``is_available()`` is False, ``device_count()`` is 0, the
memory figures are 0, and calls that need a device raise PyTorch's
``AssertionError: Torch not compiled with CUDA enabled``.
"""

__all__ = ["is_available", "device_count", "current_device", "set_device", "get_device_name",
           "get_device_properties", "get_device_capability", "synchronize", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "empty_cache", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats", "is_bf16_supported",
           "device", "amp"]

_NOT_COMPILED = "Torch not compiled with CUDA enabled"


def _cupy():
    """CuPy when it is installed and sees a GPU, else None (never raises)."""
    from .. import _device
    try:
        xp = _device.array_module(_device.device("cuda", 0))
        if xp.cuda.runtime.getDeviceCount() > 0:
            return xp
    except Exception:  # no CuPy (AssertionError), no driver or no device
        pass
    return None


def _need():
    cp = _cupy()
    if cp is None:
        raise AssertionError(_NOT_COMPILED)
    return cp


def is_available():
    """True when CuPy is installed and at least one CUDA device is present."""
    return _cupy() is not None


def is_initialized():
    return _cupy() is not None


def device_count():
    cp = _cupy()
    return 0 if cp is None else int(cp.cuda.runtime.getDeviceCount())


def current_device():
    return int(_need().cuda.runtime.getDevice())


def _index(device):
    if device is None:
        return None
    if isinstance(device, int):
        return device
    from .._device import device as _dev
    d = _dev(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return d.index


def set_device(device):
    """Make ``device`` (an index, 'cuda:N' or a device) the current CUDA device."""
    i = _index(device)
    if i is not None and i >= 0:
        _need().cuda.runtime.setDevice(i)


class device:
    """``with torch.cuda.device(1):`` runs the block with device 1 current."""

    def __init__(self, device):
        self.idx = _index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None and self.idx >= 0:
            cp = _need()
            self.prev_idx = int(cp.cuda.runtime.getDevice())
            cp.cuda.runtime.setDevice(self.idx)

    def __exit__(self, *exc):
        if self.prev_idx >= 0:
            _need().cuda.runtime.setDevice(self.prev_idx)
        return False


def get_device_properties(device=None):
    cp = _need()
    i = _index(device)
    return cp.cuda.runtime.getDeviceProperties(cp.cuda.runtime.getDevice() if i is None else i)


def get_device_name(device=None):
    name = get_device_properties(device)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_capability(device=None):
    p = get_device_properties(device)
    return int(p["major"]), int(p["minor"])


def is_bf16_supported(including_emulation=True):
    # CuPy has no bfloat16 arrays: retrograd keeps bfloat16 as float32 on every device.
    return is_available()


def synchronize(device=None):
    """Wait for all work queued on the device to finish."""
    cp = _need()
    i = _index(device)
    if i is None:
        cp.cuda.Device().synchronize()
    else:
        cp.cuda.Device(i).synchronize()


def manual_seed(seed):
    """Seed the current GPU's generator (silently nothing without CUDA, like PyTorch)."""
    cp = _cupy()
    if cp is not None:
        cp.random.seed(int(seed) & 0xFFFFFFFF)


def manual_seed_all(seed):
    cp = _cupy()
    if cp is not None:
        for i in range(device_count()):
            with cp.cuda.Device(i):
                cp.random.seed(int(seed) & 0xFFFFFFFF)


def seed():
    cp = _cupy()
    if cp is not None:
        cp.random.seed()


def seed_all():
    cp = _cupy()
    if cp is not None:
        for i in range(device_count()):
            with cp.cuda.Device(i):
                cp.random.seed()


def empty_cache():
    """Return CuPy's cached, unused blocks to the driver."""
    cp = _cupy()
    if cp is not None:
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()


def memory_allocated(device=None):
    """Bytes held by tensors on the device (CuPy's pool: used bytes); 0 without CUDA."""
    cp = _cupy()
    return 0 if cp is None else int(cp.get_default_memory_pool().used_bytes())


def memory_reserved(device=None):
    cp = _cupy()
    return 0 if cp is None else int(cp.get_default_memory_pool().total_bytes())


def max_memory_allocated(device=None):
    """The most bytes held by tensors since the last reset: the emulated device's pool keeps
    that peak; CuPy's keeps none, and the current figure is the best answer it gives."""
    cp = _cupy()
    if cp is None:
        return 0
    pool = cp.get_default_memory_pool()
    peak = getattr(pool, "peak", None)
    return int(pool.used_bytes() if peak is None else peak)


def max_memory_reserved(device=None):
    """Bytes CuPy's pool holds from the driver: cached blocks included, a high-water mark of
    the work since ``reset_peak_memory_stats`` (which returns the cached blocks)."""
    return memory_reserved(device)


def reset_peak_memory_stats(device=None):
    """Start the peak figures afresh (CuPy's pool: its cached blocks go back to the driver)."""
    cp = _cupy()
    if cp is not None:
        pool = cp.get_default_memory_pool()
        pool.free_all_blocks()
        if hasattr(pool, "peak"):
            pool.peak = pool.used_bytes()


from . import amp  # noqa: F401,E402

from .._legacy import CUDA_LEGACY_TYPES as _CUDA_LEGACY_TYPES  # noqa: E402

globals().update(_CUDA_LEGACY_TYPES)    # torch.cuda.FloatTensor, ... (legacy constructors)
