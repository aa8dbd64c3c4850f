"""Devices without a GPU: retrograd.cuda/backends answer like CPU-only PyTorch, the errors match,
thread counts, testing.assert_close, and ``import retrograd`` stays light."""
import os
import subprocess
import sys

import numpy as np
import pytest

import retrograd
from helpers import needs_torch, torch

HAS_CUDA = retrograd.cuda.is_available()
no_cuda = pytest.mark.skipif(HAS_CUDA, reason="a CUDA device is present")
cuda_only = pytest.mark.skipif(not HAS_CUDA, reason="needs CuPy and a CUDA device")
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


@no_cuda
def test_cuda_module_without_cuda_answers_like_cpu_torch():
    c = retrograd.cuda
    assert (c.is_available(), c.device_count(), c.memory_allocated(), c.memory_reserved()) == (False, 0, 0, 0)
    c.manual_seed(0), c.manual_seed_all(0), c.empty_cache()           # silently nothing, like torch
    for f in (c.current_device, c.synchronize, c.get_device_name, lambda: c.set_device(0)):
        with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled"):
            f()


@no_cuda
@pytest.mark.parametrize("move", [lambda t: t.cuda(), lambda t: t.to("cuda"), lambda t: t.to("cuda:0"),
                                  lambda t: t.to(retrograd.device("cuda", 0)),
                                  lambda t: retrograd.ones(2, device="cuda")])
def test_moving_to_cuda_without_cuda_raises_torchs_error(move):
    t = retrograd.ones(2)
    with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled"):
        move(t)
    assert t.device == retrograd.device("cpu") and t.tolist() == [1.0, 1.0]


def _fake_cuda_tensor(shape, dtype=np.float32):
    """A tensor whose array claims to live on cuda:0 (enough to reach the device checks)."""
    class FakeCudaArray:
        class device:
            id = 0

        def __init__(self, a):
            self.dtype, self.ndim, self.shape = a.dtype, a.ndim, a.shape
    FakeCudaArray.__module__ = "cupy"
    t = retrograd.ones(shape)
    t._data = FakeCudaArray(np.ones(shape, dtype))
    return t


@pytest.mark.parametrize("op", [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b.double()])
def test_mixing_devices_raises_torchs_error(op):
    g, c = _fake_cuda_tensor((2,)), retrograd.ones(2)
    assert g.device == retrograd.device("cuda:0") and g.is_cuda
    with pytest.raises(RuntimeError, match="^Expected all tensors to be on the same device, but found at least "
                                           "two devices, cuda:0 and cpu!$"):
        op(g, c)


def test_backends_flags_are_kept():
    import retrograd.backends.cudnn as cudnn
    assert retrograd.backends.cudnn is cudnn
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, False, False)
    cudnn.benchmark = True
    try:
        assert retrograd.backends.cudnn.benchmark is True
    finally:
        cudnn.benchmark = False
    assert retrograd.backends.mps.is_available() is False


def test_num_threads():
    n = retrograd.get_num_threads()
    assert isinstance(n, int) and n >= 1
    try:
        retrograd.set_num_threads(1)
        assert retrograd.get_num_threads() == 1
    finally:
        retrograd.set_num_threads(n)
    with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
        retrograd.set_num_threads(0)
    with pytest.raises(RuntimeError, match="set_num_threads expects an int, but got float"):
        retrograd.set_num_threads(1.5)


def test_import_stays_light():
    code = ("import sys, retrograd; heavy = [m for m in ('mpi4py', 'cupy', 'threadpoolctl', 'torch') "
            "if m in sys.modules]; print(heavy, retrograd.autocast is retrograd.amp.autocast)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=SRC))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[] True"


@cuda_only
def test_cuda_round_trip_and_grad():
    x = retrograd.randn(3, 4, requires_grad=True)
    y = x.cuda()
    assert y.device == retrograd.device("cuda:0") and y.grad_fn is not None
    (y * 2).sum().backward()
    assert x.grad.device == retrograd.device("cpu")
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 2.0, np.float32))
    with pytest.raises(RuntimeError, match="found at least two devices, cuda:0 and cpu!"):
        y + x


# --- testing.assert_close ---------------------------------------------------------------------

CASES = [
    ([1.0, 2.0, 3.0], [1.0, 2.5, 3.0], "float32", "float32"),
    ([1.0, 2.0], [1.0, 2.0], "float32", "float64"),
    ([1.0, 1.0], [1.0, 1.0, 1.0], "float32", "float32"),
    ([1, 2], [1, 3], "int64", "int64"),
    ([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0, 5.0]], "float32", "float32"),
    ([1.0, 2.0], [1.0, 2.0 + 1e-6], "float64", "float64"),
    (2.0, 2.5, "float64", "float64"),
    ([1.0, float("nan")], [1.0, float("nan")], "float32", "float32"),
    ([0.0, 1.0], [0.0, 1.0 + 5e-6], "float32", "float32"),
]


@needs_torch
@pytest.mark.parametrize("a,e,da,de", CASES)
def test_assert_close_matches_torch(a, e, da, de):
    def outcome(T):
        try:
            T.testing.assert_close(T.tensor(a, dtype=getattr(T, da)), T.tensor(e, dtype=getattr(T, de)))
            return None
        except AssertionError as err:
            return str(err)
    assert outcome(retrograd) == outcome(torch)


@needs_torch
@pytest.mark.parametrize("a,e,kw", [
    (1.0, 1.5, {}), (1, 2, {}), ([1.0, {"x": 2.0}], [1.0, {"x": 2.0}], {}), (1.0, 1.05, dict(rtol=0.1, atol=0)),
    (float("nan"), float("nan"), dict(equal_nan=True)),
])
def test_assert_close_python_values_match_torch(a, e, kw):
    def outcome(T):
        try:
            T.testing.assert_close(a, e, **kw)
            return None
        except AssertionError as err:
            return str(err)
    assert outcome(retrograd) == outcome(torch)


def test_assert_close_options():
    a = retrograd.tensor([1.0, 2.0])
    retrograd.testing.assert_close(a, a.double(), check_dtype=False)
    retrograd.testing.assert_close(a, np.array([1.0, 2.0], np.float32))
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or omitted"):
        retrograd.testing.assert_close(a, a, rtol=0.1)
    with pytest.raises(AssertionError, match="^custom$"):
        retrograd.testing.assert_close(a, a + 1, msg="custom")


@cuda_only
def test_cuda_amp_and_grad_scaler():
    m = retrograd.nn.Linear(3, 2).cuda()
    opt = retrograd.optim.SGD(m.parameters(), lr=0.1)
    scaler = retrograd.amp.GradScaler("cuda", init_scale=4.0)
    with retrograd.autocast("cuda"):
        y = m(retrograd.ones(5, 3, device="cuda"))
    assert y.dtype == retrograd.float16 and y.is_cuda
    scaler.scale(y.float().sum()).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 4.0 and m.weight.grad.is_cuda
    np.testing.assert_allclose(m.bias.grad.cpu().numpy(), [5.0, 5.0])


@cuda_only
def test_cuda_collectives_single_process():
    import retrograd.distributed as dist
    dist.init_process_group("nccl")
    try:
        t = retrograd.ones(3, device="cuda")
        dist.all_reduce(t)
        dist.broadcast(t, 0)
        assert t.is_cuda and t.cpu().tolist() == [1.0, 1.0, 1.0]
    finally:
        dist.destroy_process_group()
