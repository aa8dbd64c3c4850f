"""Intra-op threads: how many threads NumPy's BLAS (OpenBLAS/MKL) uses.

With ``threadpoolctl`` installed (``pip install threadpoolctl``) ``set_num_threads`` resizes
the BLAS and OpenMP pools of the running process. Without it the count is only remembered
(and exported as OMP_NUM_THREADS etc. for child processes): a BLAS reads those variables
once, when NumPy loads it, so set them in the environment before starting Python.
"""
import os

_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
_threads = [None]
_interop = [None]


def _default():
    for v in _ENV:
        try:
            n = int(os.environ.get(v, ""))
            if n > 0:
                return n
        except ValueError:
            pass
    try:
        from threadpoolctl import threadpool_info
        nums = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
        if nums:
            return max(nums)
    except Exception:
        pass
    return os.cpu_count() or 1


def set_num_threads(num):
    """Use ``num`` threads for intra-op parallelism (BLAS), like ``torch.set_num_threads``."""
    if isinstance(num, bool) or not isinstance(num, int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(num).__name__}")
    if num <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=num)
    except ImportError:
        for v in _ENV:
            os.environ[v] = str(num)
    _threads[0] = num


def get_num_threads():
    """The intra-op thread count set last, else the BLAS's own (or the CPU count)."""
    return _threads[0] if _threads[0] is not None else _default()


def set_num_interop_threads(num):
    if isinstance(num, bool) or not isinstance(num, int):
        raise RuntimeError(f"set_num_interop_threads expects an int, but got {type(num).__name__}")
    if num <= 0:
        raise RuntimeError("Expected positive number of threads")
    _interop[0] = num


def get_num_interop_threads():
    return _interop[0] if _interop[0] is not None else (os.cpu_count() or 1)
