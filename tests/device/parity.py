"""Op parity between the CPU and a CUDA device over the op table's samples, without pytest:
used by tests/device/test_ops.py (the emulated device) and benchmarks/gpu_check.py (a real GPU).

Samples: per op, its own float32 samples (float64 where the op takes no float32), the first
non-contiguous one and the first int64 one: a deterministic subset of tests/test_opinfo.py's
(the derived nonfinite/ties/broadcast/bfloat16 kinds test arithmetic, which is the same
NumPy/CuPy elementwise code on both devices, not the device path)."""
import traceback

import numpy as np

import retrograd
from opinfo.core import Index, expand_samples, flat, tol, upstream_arrays, compare_arrays

CUDA = retrograd.device("cuda", 0)
MAX_SAMPLES = 6


def device_samples(info):
    """The deterministic subset of ``info``'s samples run on the device."""
    every = expand_samples(info)
    floats = [s for s in every if s.dtype in ("float32", "float64")]
    want = "float32" if any(s.dtype == "float32" for s in floats) else "float64"
    own = [s for s in floats if s.kind == "basic" and s.dtype == want and s.upstream is None]
    picked = own[:MAX_SAMPLES - 2]
    for kind in ("noncontig", "int64"):
        extra = next((s for s in every if s.kind == kind and (kind == "int64" or s.dtype == want)), None)
        if extra is not None:
            picked.append(extra)
    if not picked:
        picked = [s for s in every if s.dtype not in ("bfloat16",)][:2]
    return picked


def build(s, device, requires_grad):
    """The sample's arguments as tensors on ``device`` (leaves made there, as a user would)."""
    gpos = set(s.grad_positions()) if requires_grad else set()

    def put(a):
        return retrograd.from_numpy(np.array(a, copy=True)).to(device)

    def conv(i, a):
        if isinstance(a, Index):
            return put(a.array), None
        if not isinstance(a, np.ndarray):
            return a, None
        rg = i in gpos
        if s.layout == "noncontig" and a.ndim >= 1 and a.size:
            if a.ndim >= 2:
                leaf = put(np.array(a.T, order="C")).requires_grad_(rg)
                return leaf.permute(*reversed(range(a.ndim))), leaf
            wide = np.zeros(2 * a.shape[0], a.dtype)
            wide[::2] = a
            leaf = put(wide).requires_grad_(rg)
            return leaf[::2], leaf
        leaf = put(a).requires_grad_(rg)
        return leaf, leaf

    conv_args = [conv(i, a) for i, a in enumerate(s.args)]
    kwargs = {k: conv(-1, v)[0] for k, v in s.kwargs.items()}
    leaves = [conv_args[i][1] for i in sorted(gpos)]
    return [a for a, _ in conv_args], kwargs, leaves


def host(t):
    return t.detach().cpu().numpy() if t.device.type != "cpu" else t.detach().numpy()


def _run(info, s, device, grad, seed):
    """(outputs as host arrays or values, grads as host arrays, devices seen) or the exception."""
    retrograd.manual_seed(seed)
    args, kwargs, leaves = build(s, device, grad)
    with device:    # (tensors an op's sample makes itself, e.g. running statistics, go there too)
        out = info.op(retrograd, *args, **kwargs)
    outs = flat(out)
    devices = {str(o.device) for o in outs if isinstance(o, retrograd.Tensor)}
    vals = [host(o) if isinstance(o, retrograd.Tensor) else o for o in outs]
    grads = None
    if grad and leaves:
        diff = [o for o in outs if isinstance(o, retrograd.Tensor) and o.requires_grad]
        if diff:
            rng = np.random.default_rng(seed)
            ups = upstream_arrays(s, [tuple(o.shape) for o in diff], rng)
            ups = [retrograd.from_numpy(u.astype(o.detach().cpu().numpy().dtype if o.dtype.is_complex is False
                                                  else np.complex128)).to(o.dtype).to(device)
                   for u, o in zip(ups, diff)]
            gs = retrograd.autograd.grad(diff, leaves, ups, allow_unused=True)
            devices |= {str(g.device) for g in gs if g is not None}
            grads = [None if g is None else host(g) for g in gs]
    return vals, grads, devices


def _compare(info, s, what, cpu, dev):
    atol, rtol = tol(info, s)
    for k, (a, b) in enumerate(zip(cpu, dev)):
        if a is None or b is None:
            if (a is None) != (b is None):
                return f"{what}[{k}]: cpu {type(a).__name__}, cuda {type(b).__name__}"
            continue
        if isinstance(a, np.ndarray):
            if not isinstance(b, np.ndarray) or a.dtype != b.dtype:
                return f"{what}[{k}]: cpu {a.dtype}, cuda {getattr(b, 'dtype', type(b).__name__)}"
            msg = compare_arrays(b, a, atol, rtol, f"{what}[{k}]")
            if msg:
                return msg.replace("torch", "cpu").replace("retrograd", "cuda")
        elif a != b and not (isinstance(a, float) and np.isnan(a) and np.isnan(b)):
            return f"{what}[{k}]: cpu {a!r}, cuda {b!r}"
    return None


# Errors the CPU raises from the data that CUDA only meets in its kernels (a device-side
# assert, or none: integer division by zero), never by asking the host: a device raises none.
DEVICE_ASSERTS = ("ZeroDivisionError", "out of bounds", "should be between 0 and 1")


def _neutral(e):
    """An error message with the device named neutrally (PyTorch names the device's kernel)."""
    return str(e).replace("cuda:0", "cpu").replace("cuda", "cpu").replace("CUDA", "CPU")


def check_sample(info, s):
    """None when the op agrees on both devices for this sample, else what differed."""
    grad = info.grad and "grad" not in info.skip and bool(s.grad_positions())
    try:
        cpu = _run(info, s, retrograd.device("cpu"), grad, 0)
    except Exception as e:
        try:
            _run(info, s, CUDA, grad, 0)
        except Exception as d:
            if type(d) is not type(e) or _neutral(d) != _neutral(e):
                return f"cpu raises {type(e).__name__}: {e}; cuda {type(d).__name__}: {d}"
            return None
        if any(m in str(e) for m in DEVICE_ASSERTS):
            return None
        return f"cpu raises {type(e).__name__}: {e}; cuda does not"
    dev = _run(info, s, CUDA, grad, 0)
    if dev[2] - {"cuda:0"}:
        return f"results on {sorted(dev[2])}, not only cuda:0"
    if "values" not in info.skip:
        msg = _compare(info, s, "output", cpu[0], dev[0])
        if msg:
            return msg
    if cpu[1] is not None:
        return _compare(info, s, "grad", cpu[1], dev[1])
    return None


def check_op(info):
    """The failures (descriptions) of ``info``'s device samples; [] when all agree."""
    failures = []
    for s in device_samples(info):
        try:
            msg = check_sample(info, s)
        except Exception as e:
            tb = [f for f in traceback.extract_tb(e.__traceback__)
                  if "/src/retrograd/" in f.filename and "_emulator" not in f.filename]
            at = " <- ".join(f"{f.filename.split('src/retrograd/')[-1]}:{f.lineno}" for f in tb[::-1][:2])
            at = f" (at {at})" if at else ""
            msg = f"raised {type(e).__name__}: {e}{at}"
        if msg:
            failures.append(f"{s.describe()}: {' '.join(str(msg).split())}")
    return failures
