"""The C allocator's thresholds, set once at ``import retrograd`` (glibc only).

NumPy takes every array's memory from ``malloc``. glibc serves a block larger than its mmap
threshold (128 KiB at start, raised by glibc itself, up to 32 MiB, as large blocks are freed)
with a fresh mapping of its own, and hands the top of its heap back to the system whenever
more than its trim threshold (twice that) lies free there. A training step makes and frees
many arrays of a few MiB (activations, their gradients, temporaries), so under those rules
each step faults the same memory in again: measured here, the GPT benchmark's step took 10,800
page faults and 24-27 ms of system time a step (116 ms in all), PyTorch's 1,200 (fewer, larger
fused kernels). With both thresholds where glibc's own rule ends (mmap 32 MiB, trim 64 MiB,
the values the benchmark suite fixes for both libraries) blocks up to 32 MiB come back from the
heap and up to 64 MiB of freed memory stays for the next step: 4 faults a step, 79 ms.

The setting is the process's (glibc has one); ``RETROGRAD_MALLOC=system`` leaves glibc's
rules, and so does a malloc setting made in the environment (``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``, or ``glibc.malloc`` tunables).
"""
import os
import sys

MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 64 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3      # glibc's mallopt parameters
_done = [None]      # None: not tried; True / False: set or not


def tune():
    """Set glibc's mmap and trim thresholds (see the module's doc); True where they were set."""
    if _done[0] is not None:
        return _done[0]
    _done[0] = False
    env = os.environ
    if not sys.platform.startswith("linux") or env.get("RETROGRAD_MALLOC", "").lower() == "system" \
            or "MALLOC_MMAP_THRESHOLD_" in env or "MALLOC_TRIM_THRESHOLD_" in env \
            or "glibc.malloc" in env.get("GLIBC_TUNABLES", ""):
        return False
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):    # (musl and others: not glibc's mallopt)
            return False
        _done[0] = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) \
            and bool(libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    except (OSError, AttributeError):
        pass
    return _done[0]
