import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(autouse=True)
def _seed():
    import retrograd
    retrograd.manual_seed(0)
    np.random.seed(0)
    yield


@pytest.fixture(params=["compiled", "numpy"])
def nn_kernels_path(request, monkeypatch):
    """Each test twice: with the nn row kernels (ops._accel_nn, numba) and on the NumPy path
    they must agree with (the compiled run skips without numba)."""
    from retrograd.ops import _accel_nn
    from helpers import kernel_path
    kernel_path(request.param, monkeypatch, _accel_nn, "_KERNELS", _accel_nn.kernels)
    return request.param


def pytest_terminal_summary(terminalreporter):
    """The differential fuzzer's throughput (tests/fuzz), sent as a user property of its test
    reports; defined here so that pytest-xdist's controller, which never loads tests/fuzz's
    own conftest, prints it too."""
    lines = []
    for reports in terminalreporter.stats.values():
        for rep in reports:
            for name, value in getattr(rep, "user_properties", ()):
                if name == "fuzz" and getattr(rep, "when", "call") == "call":
                    lines.append(f"{rep.nodeid}: {value}")
    if lines:
        terminalreporter.write_sep("-", "differential fuzzer")
        for line in sorted(set(lines)):
            terminalreporter.write_line(line)


@pytest.fixture
def on_mkl():
    """Products through MKL for the test, whichever library this CPU would pick."""
    from helpers import on_blas
    yield from on_blas("mkl")


@pytest.fixture
def own_conv():
    """retrograd's own convolution kernels (column, Winograd, direct) for the test, not
    oneDNN's primitives (ops._dnnl_conv), whichever this machine would take."""
    from retrograd.ops import _dnnl_conv
    prev = _dnnl_conv._state[0]
    _dnnl_conv._state[0] = False
    try:
        yield
    finally:
        _dnnl_conv._state[0] = prev


@pytest.fixture
def on_onednn():
    """Products through oneDNN's sgemm (float64 on NumPy's OpenBLAS) for the test."""
    from helpers import on_blas
    yield from on_blas("onednn")


@pytest.fixture
def on_openblas():
    """Products through NumPy's OpenBLAS by ctypes for the test."""
    from helpers import on_blas
    yield from on_blas("openblas")
