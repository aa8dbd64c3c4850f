"""The emulated CUDA device itself: CuPy's refusals, 0-d reductions, counted host syncs, and
that nothing turns it on but its enable() (this folder's fixture)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import retrograd
from retrograd.cuda import _emulator as E

xp = E.xp


def test_implicit_conversion_is_refused_with_cupys_message():
    a = xp.arange(3.0)
    with pytest.raises(TypeError, match=r"^Implicit conversion to a NumPy array is not allowed\. Please use "
                                        r"`\.get\(\)` to construct a NumPy array explicitly\.$"):
        np.asarray(a)
    with pytest.raises(TypeError, match="does not support ufuncs"):
        np.exp(a)
    with pytest.raises(E.DeviceArrayError, match="numpy.concatenate"):
        np.concatenate([a, a])
    with pytest.raises(TypeError, match="^Unsupported type <class 'numpy.ndarray'>$"):
        a + np.ones(3)
    with pytest.raises(TypeError, match="^Unsupported type <class 'numpy.ndarray'>$"):
        np.ones(3) * a
    with pytest.raises(TypeError, match="^Unsupported type <class 'numpy.ndarray'>$"):
        xp.maximum(a, np.ones(3))


def test_array_module_mirrors_numpy_with_device_arrays():
    a = xp.asarray(np.array([[1.0, -2.0], [3.0, 4.0]], np.float32))
    s = xp.sum(a)
    assert type(s) is xp.ndarray and s.shape == () and s.dtype == np.float32   # 0-d, as CuPy's
    assert type(a.max()) is xp.ndarray
    assert type(np.float32(2) * a) is xp.ndarray and type(a * 2.0) is xp.ndarray
    assert type(xp.linalg.inv(a)) is xp.ndarray and type(xp.fft.fft(a)) is xp.ndarray
    u, v = xp.linalg.slogdet(a)
    assert type(u) is xp.ndarray
    b = a[:, 0]
    b[...] = 7                                   # views share memory, writeable
    assert a.get()[:, 0].tolist() == [7.0, 7.0]
    host = np.zeros(2)
    d = xp.asarray(host)
    d[...] = 1
    assert host.tolist() == [0.0, 0.0]           # a device copy never aliases host memory
    assert xp.broadcast_to(xp.ones(1), (3,)).flags.writeable      # as CuPy's views
    with pytest.raises(TypeError, match="Unsupported dtype"):
        xp.zeros(2, object)


def test_every_host_synchronisation_is_counted_and_can_be_forbidden():
    a = xp.arange(4.0)
    syncs = [lambda: a.get(), lambda: a.item() if a.size == 1 else a[0].item(), lambda: a.tolist(),
             lambda: bool(a[0]), lambda: float(a[1]), lambda: int(a[2]), lambda: repr(a),
             lambda: xp.asnumpy(a), lambda: a[a > 1], lambda: xp.nonzero(a), lambda: range(10)[xp.asarray(2)]]
    for f in syncs:
        before = E.SYNCS.count
        f()
        assert E.SYNCS.count == before + 1, f
        with E.forbid_host_sync(), pytest.raises(E.HostSyncError, match="test_emulator.py"):
            f()
    with E.forbid_host_sync():   # no sync: shapes, device work, indexing with device/host integers
        b = (a * 2 + 1)[xp.asarray([0, 2])]
        assert b.shape == (2,) and a.ndim == 1 and len(a) == 4
        a[np.array([1])] = 5
    with E.count_host_syncs() as log:
        a.tolist()
    assert len(log) == 1 and log[0][0] == "tolist" and "test_emulator.py" in log[0][1]


def test_retrograd_cuda_answers_for_the_emulated_device():
    assert retrograd.cuda.is_available() and retrograd.cuda.device_count() == 1
    assert retrograd.cuda.get_device_name() == "Emulated CUDA device (NumPy)"
    t = retrograd.ones(1000, device="cuda")
    assert t.is_cuda and t.device == retrograd.device("cuda:0")
    assert retrograd.cuda.memory_allocated() >= 4000
    retrograd.cuda.reset_peak_memory_stats()
    u = retrograd.ones(10000, device="cuda")
    assert retrograd.cuda.max_memory_allocated() >= 40000 + 4000
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        u.numpy()
    assert np.asarray(u.cpu()).shape == (10000,)


def test_nothing_enables_it_by_default():
    code = ("import sys, retrograd; t = retrograd.ones(2); "
            "print(retrograd.cuda.is_available(), 'retrograd.cuda._emulator' in sys.modules)")
    src = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    env = dict(os.environ, PYTHONPATH=src)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    words = out.stdout.split()
    assert len(words) == 2 and words[1] == "False", out.stdout + out.stderr    # never even imported
    if subprocess.run([sys.executable, "-c", "import cupy"], capture_output=True).returncode != 0:
        assert words[0] == "False"       # no CuPy: no CUDA, as PyTorch without one
