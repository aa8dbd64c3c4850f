"""Intra-op threads: how many threads NumPy's BLAS (OpenBLAS/MKL) uses.

``set_num_threads(n)`` fixes the count (through ``threadpoolctl`` when it is installed,
else through OpenBLAS's own setter; the OMP/OPENBLAS/MKL variables are exported for child
processes), and so does an ``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS``/``MKL_NUM_THREADS``
set before start-up.

Otherwise the count adapts to the machine's load. A BLAS's worker threads spin and wait
for each other, so a multi-threaded GEMM on a machine whose other cores are taken by
another process does not run at the speed of one thread: it runs ten to forty times
slower (each thread waits for a time slice). So every half second at most (at an
optimizer step, or wherever :func:`tick` is called) the CPU time used by *other*
processes on the cores this process may run on is read from ``/proc/stat`` (the
machine's busy time less this process's own, from ``time.process_time``), and the BLAS gets the
cores left free: all of them on a quiet machine, one fewer for each core another
process keeps busy, never fewer than one. Without ``/proc/stat`` the BLAS's default stays.
"""
import math
import os
import time

_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
_threads = [None]      # the count set by set_num_threads (None: adaptive)
_interop = [None]
_PERIOD = 0.5          # seconds between two looks at the load
# Other processes' use (in cores) the BLAS ignores: a shell command now and then. Anything
# above takes a whole core away, since a multi-threaded GEMM that has to share a core
# loses far more (it waits for its slowest thread) than a second thread gains.
_SLACK = 0.15
_WINDOW = 0.1          # the shortest span /proc/stat's clock ticks measure well


# The variables are read on every large product (see ops._blas): through os.environ's own
# mapping where it has one, since os.environ.get of an unset variable raises and catches a
# KeyError inside (~0.6 us each, three a call).
try:
    _ENV_MAP = os.environ._data
    _ENV_KEYS = tuple(os.environ.encodekey(v) for v in _ENV)
except AttributeError:
    _ENV_MAP, _ENV_KEYS = os.environ, _ENV


def _env_threads():
    get = _ENV_MAP.get
    for k in _ENV_KEYS:
        s = get(k)
        if s:
            try:
                n = int(s)
            except ValueError:
                continue
            if n > 0:
                return n
    return None


def _cpus():
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


_CPU_INFO = []


def cpu_info():
    """(vendor, flags) of the first CPU in /proc/cpuinfo, read once: ("GenuineIntel",
    frozenset({"avx2", ...})), or ("", frozenset()) where it cannot be read."""
    if not _CPU_INFO:
        vendor, flags = "", frozenset()
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("vendor_id") and not vendor:
                        vendor = line.split(":", 1)[1].strip()
                    elif line.startswith("flags"):
                        flags = frozenset(line.split(":", 1)[1].split())
                        break
        except OSError:
            pass
        _CPU_INFO.append((vendor, flags))
    return _CPU_INFO[0]


class _Load:
    """Other processes' CPU use on this process's cores, from /proc/stat and time.process_time."""

    def __init__(self):
        self.cpus = _cpus()
        self.hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.last = self._sample()
        self.current = None      # the BLAS thread count last chosen here

    def _sample(self):
        try:
            with open("/proc/stat", "rb") as f:
                lines = f.read().split(b"\n")
        except OSError:
            return None
        want = {b"cpu%d" % c for c in self.cpus}
        busy = 0
        for line in lines:
            if not line.startswith(b"cpu") or line.startswith(b"cpu "):
                continue
            fields = line.split()
            if fields[0] not in want:
                continue
            v = [int(x) for x in fields[1:9]]
            # user nice system idle iowait irq softirq steal: all but idle and iowait
            busy += v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
        # (process_time: this process's CPU time, all threads; os.times's first call is slow)
        return time.monotonic(), busy / self.hz, time.process_time()

    def others(self):
        """Cores' worth of CPU used by other processes since the last reading (None: unknown)."""
        now = self._sample()
        prev = self.last
        if now is None or prev is None:
            self.last = now
            return None
        wall = now[0] - prev[0]
        if wall < _WINDOW:
            return None
        self.last = now
        return max(0.0, ((now[1] - prev[1]) - (now[2] - prev[2])) / wall)

    def choose(self):
        others = self.others()
        if others is None:
            return None
        busy_cores = max(0, math.ceil(others - _SLACK))
        return max(1, len(self.cpus) - busy_cores)


_load = []
_next = [0.0]


def tick():
    """Re-choose the BLAS thread count from the load, at most every half second.

    Cheap when it is not time yet (one clock read); does nothing when the count was set
    by the user or the environment.
    """
    now = time.monotonic()
    if now < _next[0]:
        return
    _next[0] = now + _PERIOD
    if _threads[0] is not None or _env_threads() is not None:
        _next[0] = float("inf")
        return
    if not _load:
        _load.append(_Load())
    load = _load[0]
    n = load.choose()
    if n is not None and n != load.current:
        _set_blas(n)
        load.current = n


def _set_blas(n, user_api="blas"):
    """Resize the BLAS (or, with ``user_api=None``, all the native) pools of the running
    process (threadpoolctl, else OpenBLAS's setter)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return _set_openblas(n)
    threadpool_limits(limits=n, user_api=user_api)
    return True


def openblas_libs():
    """(path, ctypes library) of each OpenBLAS loaded in this process (NumPy's and SciPy's
    bundle one each), read from /proc/self/maps: [] where that cannot be read."""
    import ctypes
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line})
    except OSError:
        return []
    libs = []
    for path in paths:
        try:
            libs.append((path, ctypes.CDLL(path)))
        except OSError:
            continue
    return libs


def _openblas_fns():
    """(get, set) thread-count functions of each OpenBLAS loaded in this process, through ctypes."""
    import ctypes
    found = []
    for _, lib in openblas_libs():
        for name in ("scipy_openblas_{}_num_threads64_", "scipy_openblas_{}_num_threads",
                     "openblas_{}_num_threads64_", "openblas_{}_num_threads"):
            get, put = getattr(lib, name.format("get"), None), getattr(lib, name.format("set"), None)
            if get is not None and put is not None:
                get.restype = ctypes.c_int
                found.append((get, put))
                break
    return found


def _set_openblas(n):
    import ctypes
    fns = _openblas_fns()
    for _, put in fns:
        put(ctypes.c_int(n))
    return bool(fns)


def _chosen():
    """The count set, else the environment's, else the one chosen for the load; one until the
    load has been read (work split over threads that find no free core runs slower than on one)."""
    n = _threads[0]
    if n is not None:
        return n
    n = _env_threads()
    if n is not None:
        return n
    if _load and _load[0].current is not None:
        return _load[0].current
    return 1


def blas_threads():
    """The thread count for retrograd's own BLAS calls (ops._blas splits a large product into
    this many blocks): :func:`_chosen`'s, or one inside :class:`single_blas`. Cheap: read on
    every large product."""
    if _single[0]:
        return 1        # (inside single_blas: the caller already runs one product per core)
    return _chosen()


_single = [0]       # how many single_blas contexts are open (any: ops._blas does not split)


def _default():
    n = _env_threads()
    if n is not None:
        return n
    if _load and _load[0].current is not None:
        return _load[0].current
    try:
        from threadpoolctl import threadpool_info
        nums = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
        if nums:
            return max(nums)
    except Exception:
        pass
    return len(_cpus())


def _start():
    """The first reading, at import: the first tick then has a span to judge."""
    if _env_threads() is None:
        try:
            _load.append(_Load())
        except Exception:
            pass


def set_num_threads(num):
    """Use ``num`` threads for intra-op parallelism (BLAS), like ``torch.set_num_threads``.

    The count then stays as set (the adaptive choice described in this module's doc stops).
    """
    if isinstance(num, bool) or not isinstance(num, int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(num).__name__}")
    if num <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    if not _set_blas(num, user_api=None):
        for v in _ENV:
            os.environ[v] = str(num)
    _threads[0] = num


def get_num_threads():
    """The intra-op thread count: the one set, else the one chosen for the load, else the BLAS's own."""
    return _threads[0] if _threads[0] is not None else _default()


def kernel_threads():
    """Threads retrograd's own kernels may split a large operation across (convolution sample
    blocks): :func:`_chosen`'s count, the load read first when it decides, so that they never
    add to a busy machine what the BLAS is kept from adding."""
    if _threads[0] is None and _env_threads() is None:
        tick()
    return _chosen()


_blas_fns = []


def _blas_thread_fns():
    """The first loaded OpenBLAS's (get, set) thread-count functions (NumPy's), found once (None: none)."""
    if not _blas_fns:
        fns = _openblas_fns()
        _blas_fns.append(fns[0] if fns else None)
    return _blas_fns[0]


class single_blas:
    """Context: the BLAS runs its calls single-threaded (restored on exit), for callers that
    run GEMMs from several threads at once (each then takes one core)."""
    __slots__ = ("prev",)

    def __enter__(self):
        _single[0] += 1
        fns = _blas_thread_fns()
        self.prev = None
        if fns is not None:
            n = fns[0]()
            if n != 1:
                import ctypes
                fns[1](ctypes.c_int(1))
                self.prev = n
        return self

    def __exit__(self, *exc):
        _single[0] -= 1
        if self.prev is not None:
            import ctypes
            _blas_thread_fns()[1](ctypes.c_int(self.prev))
        return False


_POOL = []


def executor():
    """The worker threads retrograd's own kernels hand shares of a split operation to (blocked
    convolution runs, split MKL products): one fewer than the CPUs, since the calling thread
    runs a share itself; made on first use, blocking (never spinning) while idle. A forked
    child has none of the parent's threads: it makes its own."""
    if not _POOL:
        import concurrent.futures
        _POOL.append(concurrent.futures.ThreadPoolExecutor(max(1, (os.cpu_count() or 2) - 1),
                                                           thread_name_prefix="retrograd-worker"))
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_POOL.clear)
    return _POOL[0]


def _adaptive():
    """Back to the load-adaptive choice after a :func:`set_num_threads` (for benchmarks and tests)."""
    _threads[0] = None
    _next[0] = 0.0
    if _load:
        _load[0].current = None


def set_num_interop_threads(num):
    if isinstance(num, bool) or not isinstance(num, int):
        raise RuntimeError(f"set_num_interop_threads expects an int, but got {type(num).__name__}")
    if num <= 0:
        raise RuntimeError("Expected positive number of threads")
    _interop[0] = num


def get_num_interop_threads():
    return _interop[0] if _interop[0] is not None else (os.cpu_count() or 1)


_start()
