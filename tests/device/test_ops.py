"""The op table (tests/opinfo) on the emulated CUDA device: every op's values and gradients on
'cuda:0' equal its results on the CPU, its outputs and gradients stay on the device, and it
calls no NumPy function on device data (the emulator raises when it does). The samples and
the comparison are tests/device/parity.py's (shared with benchmarks/gpu_check.py)."""
import pytest

import retrograd
from opinfo import ALL_OPS

from device_xfail import OP_XFAIL, DEVICE_SEMANTICS
from parity import CUDA, check_op

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::numpy.exceptions.ComplexWarning",
                                        "ignore::UserWarning")


def _params():
    out = []
    for info in ALL_OPS:
        marks = ()
        if info.name in DEVICE_SEMANTICS:
            marks = pytest.mark.skip(reason=f"the device is its result: see {DEVICE_SEMANTICS[info.name]}")
        elif info.name in OP_XFAIL:
            marks = pytest.mark.xfail(strict=True, reason=OP_XFAIL[info.name])
        out.append(pytest.param(info, id=info.name, marks=marks))
    return out


@pytest.mark.parametrize("info", _params())
def test_op_on_device(info):
    failures = check_op(info)
    if failures:
        pytest.fail(f"{info.name}: " + "\n".join(failures[:3]), pytrace=False)


def test_type_names_the_cuda_type():
    t = retrograd.ones(2, 3, device="cuda")
    assert t.type() == "torch.cuda.FloatTensor" and t.double().type() == "torch.cuda.DoubleTensor"
    assert t.type(retrograd.float64).device == CUDA
    assert t.type("torch.FloatTensor").device.type == "cpu"


def test_cpu_copies_to_the_host(_emulated_cuda):
    t = retrograd.arange(6.0, device="cuda").reshape(2, 3).requires_grad_()
    before = _emulated_cuda.SYNCS.count
    c = t.cpu()
    assert _emulated_cuda.SYNCS.count == before + 1          # one copy to the host
    assert c.device.type == "cpu" and c.tolist() == [[0, 1, 2], [3, 4, 5]]
    c.sum().backward()
    assert t.grad.device == CUDA and t.grad.cpu().tolist() == [[1.0] * 3] * 2
