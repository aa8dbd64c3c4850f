"""glibc's malloc thresholds set at import (retrograd/_alloc.py): a step that makes and frees
arrays of a few MiB reuses their memory instead of faulting it in again each time."""
import os
import subprocess
import sys

import pytest

_SCRIPT = r"""
import resource, sys
import numpy as np
if sys.argv[1] == "retrograd":
    import retrograd
    assert retrograd._alloc.tune() is {expect}
rng = np.random.default_rng(0)
for _ in range(3):                       # (glibc's own rule reaches its steady state too)
    a = [np.ones(1 << 20) for _ in range(6)]    # six 8 MiB arrays live at once, then freed
    del a
r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    a = [np.ones(1 << 20) for _ in range(6)]
    del a
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) // 10)
"""


def _faults(mode, expect, env=None):
    e = dict(os.environ, **(env or {}))
    e.pop("MALLOC_MMAP_THRESHOLD_", None)
    e.pop("MALLOC_TRIM_THRESHOLD_", None)
    out = subprocess.run([sys.executable, "-c", _SCRIPT.replace("{expect}", expect), mode], env=e,
                         capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_import_keeps_freed_arrays_for_reuse():
    try:
        import ctypes
        if not hasattr(ctypes.CDLL(None), "gnu_get_libc_version"):
            pytest.skip("not glibc")
    except OSError:
        pytest.skip("no C library to ask")
    # 48 MiB of arrays made and freed each round: under glibc's own rules the heap's top is
    # trimmed past twice the largest freed block (16 MiB), about 3,000 pages faulted in again a
    # round here; none once the thresholds are set
    tuned = _faults("retrograd", "True")
    untuned = _faults("retrograd", "False", {"RETROGRAD_MALLOC": "system"})
    assert tuned < 100 and untuned > 1000


def test_opt_out_leaves_glibc_alone(monkeypatch):
    from retrograd import _alloc
    monkeypatch.setattr(_alloc, "_done", [None])
    monkeypatch.setenv("RETROGRAD_MALLOC", "system")
    assert _alloc.tune() is False
    monkeypatch.setattr(_alloc, "_done", [None])
    monkeypatch.delenv("RETROGRAD_MALLOC")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1000000")
    assert _alloc.tune() is False
