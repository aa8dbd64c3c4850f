"""Matrix products of the CPU hot paths through a BLAS called by ctypes: Intel MKL's cblas
on Intel's CPUs where MKL is installed, oneDNN's sgemm (float32) on other CPUs, else NumPy's
own OpenBLAS.

``matmul(a, b, out=None)`` computes what ``np.matmul(a, b, out=out)`` computes. When the
``mkl`` package (PyPI's Intel MKL runtime: ``pip install mkl``, or the ``blas`` extra) is
installed, float32/float64 products of the shapes where MKL measured faster here (see
``_pays``: large ones, and few-row ones with a long inner dimension, such as a linear layer
on a small batch: 16 x 784 @ 784 x 512 in 0.67x OpenBLAS's time) run through
``cblas_sgemm``/``cblas_dgemm`` (``*_batch_strided`` for batched products) by ctypes, with
transposed operands passed as trans flags (no copies). Every other product (other dtypes,
1-D operands, views BLAS cannot describe, smaller products, dimensions beyond MKL's 32-bit
integers) stays on NumPy, which remains the reference and the default without a library.

MKL dispatches its fast kernels by CPU vendor: on an AMD EPYC (Zen, AVX-512) its sgemm ran
at 84-90 GFLOP/s and its batched sgemm at 63, where the OpenBLAS NumPy bundles reached
100-108 (with the AVX2 kernels the environment's ``OPENBLAS_CORETYPE`` pins there). oneDNN
(``pip install onednn-cpu-gomp``: the ``blas`` and ``all`` extras on Linux x86-64) picks its
JIT kernels by the instruction sets the CPU reports, whatever the vendor: its row-major
``dnnl_sgemm`` ran at 150-210 GFLOP/s on one core of the same EPYC. So on CPUs other than
Intel's, float32 products from 1M multiply-adds go to oneDNN (float64 ones to NumPy's
OpenBLAS: oneDNN has no double-precision GEMM on CPUs), and without oneDNN to NumPy's
OpenBLAS by ctypes (its ILP64 ``scipy_cblas_?gemm64_``), for the copies that saves
(transposed, row-strided and broadcast batched operands as they are). Both thread each
product themselves; oneDNN's products give the same bits on any thread count.

Nothing happens at ``import retrograd``: the library is looked up on the first large
product. ``RETROGRAD_BLAS=numpy`` keeps every product on NumPy; ``mkl``, ``onednn`` or
``openblas`` names the library whatever the CPU (unset: chosen by the CPU's vendor as
above). A library that cannot be loaded or set up as below is silently passed over.

Threads (MKL): MKL is loaded with its SEQUENTIAL threading layer, so it starts no OpenMP runtime
of its own. Its OpenMP layers were measured here against a process that also imports
PyTorch (which brings GNU OpenMP): the GNU layer deadlocks a forked child (a DataLoader
worker) that runs a product after the parent ran one on two threads, and the INTEL layer
(a second OpenMP runtime beside PyTorch's) returned wrong products on two threads. Instead
a product large enough is split into row (or column, or batch) blocks, one per thread, as
many as ``_threads.blas_threads()`` says (the count set by ``set_num_threads`` or the
environment, else the load-adaptive count of ``retrograd._threads``: one until the load has
been read), each block one sequential MKL call. The caller runs the first; the others go to
the spinning workers of ``ops._team`` where numba is present (a share starts within a
microsecond; a worker idle for 2 ms sleeps, and a sleeping worker's share runs on the
caller), else to ``_threads.executor``'s threads, which block while idle (ctypes releases
the GIL during each call). A forked child makes its own workers. The blocks give the bits
of the whole product (MKL computes each element of C the same way whatever the block;
checked over the layouts the splits make).
"""
import os
import sys
import threading

import numpy as np

__all__ = ["matmul", "try_matmul", "backend", "describe", "mkl_gemm", "mkl_gemm_packed", "onednn_gemm"]

_ROW, _NT, _T = 101, 111, 112        # CblasRowMajor, CblasNoTrans, CblasTrans
_INT_MAX = 2 ** 31 - 1               # LP64: MKL's dimensions, strides and counts are C ints
# The products MKL takes (see _pays): measured single-threaded here, each product timed
# right after an elementwise pass over 4 MiB (as in a training step, where the caches are
# never warm for it), MKL 2026.2 against the OpenBLAS 0.3.31 NumPy bundles:
#   wins:  16 x 784 @ 784 x 512 0.67x, 64 x 784 @ 784 x 512 0.80x, 1024 x 128 @ 128 x 384 0.92x,
#          700 x 128 @ 128 x 1000 0.92x, 128 x 144 @ 144 x 1024 0.70x, 256 x 288 @ 288 x 256 0.80x
#   loses: 512 x 64 @ 64 x 192 1.15x, 192 x 512 @ 512 x 64 1.13x, 128^3 1.27x, 128 x 27 @ 27 x 1024
#          1.38x; batched small matrices (64 x (32x16 @ 16x32)) 2.5x
# In a hot loop MKL wins from ~1M multiply-adds on, but each call from cold costs it ~10-20
# us more than OpenBLAS, and a few-million-MAC product does not earn that back: products
# of 8M multiply-adds and more go to MKL, and few-row products with a long inner dimension
# (F.linear on a small batch, where OpenBLAS is weakest) from 4M on; on two or more threads
# with the spinning workers of ops._team, every product from 2M on (split, it runs in ~0.55x
# the time of the whole on two cores: 512 x 64 @ 64 x 192 87 -> 48 us).
# oneDNN's sgemm wins from ~1M multiply-adds (measured after the same 4 MiB pass, one thread,
# against NumPy's OpenBLAS: 128 x 64 @ 64 x 128 0.74x, 20 x 128 @ 128 x 512 0.60x, 2M-MAC
# shapes 0.48-0.60x; at 0.5M 0.80-0.93x, at 0.13M 1.6-2.1x: its call costs more); each library's
# least product is its min_macs (_pays), _MIN_MACS the least of them all.
_MIN_MACS = 1 << 20
_LIB_MIN_MACS = 2 << 20
_FEW_ROW_MACS = 4 << 20
_BIG_MACS = 8 << 20
# Above this many multiply-adds a product is split over the threads when the thread count
# is above one: ops._team's spinning workers take a share within a microsecond (_TEAM_SPLIT);
# without numba the shares go to _threads.executor's sleeping threads, whose wake-up costs
# 15-70 us (70 on a 2-vCPU virtual machine, where a 16M-25M product then split ran 0.9-1.1x
# the time of the whole and a 784-512-512-10 MLP step 1.2x: _SPLIT, ~300 us of work). (On
# a shared 2-core machine loaded at 6-8, two threads set by hand ran a 16M-50M product
# 1.2-2.9x slower than one: no core was free; the load-adaptive count gives one there.)
_SPLIT_MACS = 32 << 20
_TEAM_SPLIT_MACS = 2 << 20
_NEVER = 1 << 62
_split_at = [None]        # the threshold in force: _TEAM_SPLIT_MACS where numba is present

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_VP = None        # ctypes.c_void_p, set when MKL is loaded
_state = [None]   # None: not looked up yet; False: NumPy only; else a _Mkl


def backend():
    """'mkl' or 'openblas' when products run through that library by ctypes (looked up now
    if not yet), else 'numpy'."""
    lib = _state[0]
    if lib is None:
        lib = _load()
    return lib.kind if lib else "numpy"


def describe():
    """Which BLAS the hot paths' products use, in words (for benchmark headers)."""
    lib = _state[0]
    if lib is None:
        lib = _load()
    if lib:
        return f"{lib.title} (ops._blas)"
    why = " (RETROGRAD_BLAS=numpy)" if _choice() == "numpy" else ""
    return f"NumPy's BLAS{why}"


def mkl_gemm(dtype):
    """MKL's ``cblas_sgemm``/``cblas_dgemm`` for ``dtype`` as a ctypes function (row-major
    flags, LP64 ``int`` dimensions; the sequential layer), or None where products stay on
    NumPy (no MKL, ``RETROGRAD_BLAS=numpy``, another dtype). For kernels that call the
    GEMM of many tiny products themselves (the recurrent layers' time loops)."""
    lib = _state[0]
    if lib is None:
        lib = _load()
    return lib.gemm.get(np.dtype(dtype)) if lib and lib.kind == "mkl" else None


def mkl_gemm_packed(dtype):
    """MKL's packed-operand GEMM for ``dtype`` as ctypes functions (``cblas_?gemm_pack_get_size``,
    ``cblas_?gemm_pack``, ``cblas_?gemm_compute``; LP64), or None where ``mkl_gemm`` gives
    None or this MKL lacks them. For a loop of small products with one fixed operand (the
    recurrent layers' weights): the operand is laid out for the kernel once, not per call."""
    lib = _state[0]
    if lib is None:
        lib = _load()
    return lib.packed.get(np.dtype(dtype)) if lib and lib.kind == "mkl" else None


def onednn_gemm(dtype):
    """oneDNN's float32 product as a cblas-style Python callable (``_OneDnn.sgemm``: threads
    set, signals guarded), or None where products do not run on oneDNN or ``dtype`` is not
    float32. For the recurrent layers' time loops, which call its ``dnnl_sgemm`` directly
    (with the calling thread's OpenMP count set and its signals blocked: ``_seqkit``)."""
    lib = _state[0]
    if lib is None:
        lib = _load()
    return lib.sgemm if lib and lib.kind == "onednn" and np.dtype(dtype) == _F32 else None


def _choice():
    """RETROGRAD_BLAS as one of 'numpy', 'mkl', 'openblas', 'onednn', or '' (chosen by the CPU)."""
    v = os.environ.get("RETROGRAD_BLAS", "").strip().lower()
    if v in ("numpy", "np", "0", "off", "none"):
        return "numpy"
    if v in ("dnnl", "mkldnn"):
        v = "onednn"
    return v if v in ("mkl", "openblas", "onednn") else ""


def _intel_cpu():
    """Whether the CPU is Intel's (True where the vendor cannot be read): MKL runs its fast
    code paths only there."""
    from .._threads import cpu_info
    return cpu_info()[0] in ("GenuineIntel", "")


def _candidates(names=None):
    """Paths to try for a library (MKL's runtime unless ``names`` are given): this Python's
    prefixes and the user base first (where pip puts a wheel's libraries), then the loader's
    own search (LD_LIBRARY_PATH, ldconfig)."""
    if names is None:
        names = ("libmkl_rt.so.3", "libmkl_rt.so.2", "libmkl_rt.so")
        if sys.platform == "darwin":
            names = ("libmkl_rt.3.dylib", "libmkl_rt.2.dylib", "libmkl_rt.dylib")
        elif sys.platform == "win32":
            names = ("mkl_rt.3.dll", "mkl_rt.2.dll", "mkl_rt.dll")
    dirs = []
    for p in (sys.prefix, sys.base_prefix):
        d = os.path.join(p, "Library", "bin") if sys.platform == "win32" else os.path.join(p, "lib")
        if d not in dirs:
            dirs.append(d)
    try:
        import site
        u = os.path.join(site.getuserbase(), "lib")
        if u not in dirs:
            dirs.append(u)
    except Exception:
        pass
    for d in dirs:
        for n in names:
            p = os.path.join(d, n)
            if os.path.exists(p):
                yield p
    yield from names


class _Mkl:
    kind = "mkl"
    splits = True       # sequential: large products are split over ops._team's workers here
    picky = True        # wins over NumPy's OpenBLAS only on some shapes (_pays)

    def __init__(self, lib):
        import ctypes
        c_int, P = ctypes.c_int, ctypes.c_void_p
        self.version = "?"
        self.cdll = lib
        try:
            buf = ctypes.create_string_buffer(256)
            lib.MKL_Get_Version_String(buf, ctypes.c_int(len(buf)))
            words = buf.value.decode("ascii", "replace").split()
            self.version = words[words.index("Version") + 1].split("-")[0]
        except Exception:
            pass
        self.gemm = {}
        self.raw = {}
        self.batch = {}
        self.packed = {}
        for dt, ct, pre in ((_F32, ctypes.c_float, "s"), (_F64, ctypes.c_double, "d")):
            f = getattr(lib, f"cblas_{pre}gemm")
            f.restype = None
            f.argtypes = [c_int, c_int, c_int, c_int, c_int, c_int, ct, P, c_int, P, c_int, ct, P, c_int]
            self.gemm[dt] = f
            # The same function without argtypes, for the unsplit product's hot path: ctypes
            # then passes Python ints as C ints (every dimension here is checked to fit) and
            # the prepared scalar and pointer objects as they are, ~2 us less per call than
            # converting fourteen arguments by their declared types.
            raw = lib[f"cblas_{pre}gemm"]      # (indexing makes a new function object)
            raw.restype = None
            self.raw[dt] = (raw, ct(1.0), ct(0.0))
            f = getattr(lib, f"cblas_{pre}gemm_batch_strided", None)   # MKL 2020.2+
            if f is not None:
                f.restype = None
                f.argtypes = [c_int, c_int, c_int, c_int, c_int, c_int, ct, P, c_int, c_int, P, c_int, c_int, ct, P,
                              c_int, c_int, c_int]
            self.batch[dt] = f
            try:            # MKL 11.3+
                size = getattr(lib, f"cblas_{pre}gemm_pack_get_size")
                pack = getattr(lib, f"cblas_{pre}gemm_pack")
                comp = getattr(lib, f"cblas_{pre}gemm_compute")
            except AttributeError:
                continue
            size.restype = ctypes.c_size_t
            size.argtypes = [c_int] * 4
            pack.restype = None
            pack.argtypes = [c_int] * 6 + [ct, P, c_int, P]
            comp.restype = None
            comp.argtypes = [c_int] * 6 + [P, c_int, P, c_int, ct, P, c_int]
            self.packed[dt] = (size, pack, comp)

    @property
    def title(self):
        return f"Intel MKL {self.version}"

    def native_batch(self):
        """cblas_sgemm_batch_strided as a ctypes prototype taking addresses as int64 (for
        compiled loops), or None."""
        from ._team import _protos
        return _protos(self.cdll)[2]


class _OpenBlas:
    """An OpenBLAS already loaded in this process (NumPy's), called by ctypes. It threads its
    products itself (its pool follows retrograd._threads' count), so nothing is split here;
    with NumPy's own BLAS there is nothing to choose per shape either (NumPy's matmul calls
    the same library), only copies to save: strided, transposed and broadcast batched
    operands go to BLAS as they are."""
    kind = "openblas"
    splits = False
    picky = False
    min_macs = _LIB_MIN_MACS

    def __init__(self, lib):
        import ctypes
        self.cdll = lib
        P = ctypes.c_void_p
        self.gemm, self.raw, self.batch, self.packed = {}, {}, {}, {}
        for pre, ct, dt in (("s", ctypes.c_float, _F32), ("d", ctypes.c_double, _F64)):
            # ILP64 builds (NumPy's scipy-openblas64) take 64-bit integers under suffixed names
            for name, it in ((f"scipy_cblas_{pre}gemm64_", ctypes.c_int64), (f"cblas_{pre}gemm64_", ctypes.c_int64),
                             (f"scipy_cblas_{pre}gemm", ctypes.c_int), (f"cblas_{pre}gemm", ctypes.c_int)):
                f = getattr(lib, name, None)
                if f is not None and (it is ctypes.c_int64 or not self._ilp64()):
                    break
            else:
                raise AttributeError(f"no cblas_{pre}gemm of known integer width")
            f.restype = None
            f.argtypes = [it] * 6 + [ct, P, it, P, it, ct, P, it]
            self.gemm[dt] = f
            self.raw[dt] = (f, 1.0, 0.0)
            # (OpenBLAS 0.3.30's cblas_?gemm_batch_strided is left alone: scipy-openblas64
            # exports it unrenamed and a call to it crashed here; products loop over gemm)
            self.batch[dt] = None
        self.version, self.core = "?", ""
        for pre, suf in (("scipy_", "64_"), ("scipy_", ""), ("", "64_"), ("", "")):
            cfg = getattr(lib, f"{pre}openblas_get_config{suf}", None)
            core = getattr(lib, f"{pre}openblas_get_corename{suf}", None)
            if cfg is not None and core is not None:
                cfg.restype = core.restype = ctypes.c_char_p
                words = (cfg() or b"").decode("ascii", "replace").split()
                self.version = words[1] if len(words) > 1 and words[0] == "OpenBLAS" else "?"
                self.core = (core() or b"").decode("ascii", "replace")
                break

    _ilp = []

    @classmethod
    def _ilp64(cls):
        """Whether NumPy's BLAS is an ILP64 build (True when unknown: 32-bit names are then
        not trusted)."""
        if not cls._ilp:
            try:
                cls._ilp.append("USE64BITINT" in str(np.__config__.CONFIG["Build Dependencies"]["blas"]))
            except Exception:
                cls._ilp.append(True)
        return cls._ilp[0]

    @property
    def title(self):
        core = f", {self.core} kernels" if self.core else ""
        return f"OpenBLAS {self.version} (NumPy's{core})"

    def native_batch(self):
        return None


class _SignalGuard:
    """Blocks a thread's asynchronous signals for the length of a oneDNN call; they stay
    pending and are handled the moment it returns (Ctrl-C included; a default action, such as
    SIGTERM's exit, also waits for the call: one product or convolution pass).

    oneDNN's f32 GEMM kernels, whose inner dimension outgrows what they keep on the stack,
    point the stack pointer at a workspace they allocate on the heap while they run (its
    ``sgemm_nocopy_driver``: ``mov(rsp, ARG_WS)`` in its JIT code, oneDNN 3.2). A signal
    handled meanwhile has its frame (the registers, AVX-512's among them: 2-3 KiB) pushed
    below that pointer, over whatever the heap holds there: in the MNIST demo a Ctrl-C that
    landed inside the evaluation's linear layer overwrote the workspace's malloc header with
    the layer's weights, and glibc aborted on free ("corrupted size vs. prev_size while
    consolidating", found in the core dumps). Python's handlers are installed with
    SA_ONSTACK, so a thread with an alternate signal stack (faulthandler gives the main
    thread one) was spared, which hid it. Threads GNU OpenMP starts inside a call inherit
    the blocked mask, so its pool's workers never take a signal at all. The synchronous
    signals (a fault in the call itself) are left unblocked: blocking them would only turn a
    crash report into a silent kill. Two pthread_sigmask calls: ~2 us a product. (oneDNN
    fixed its kernels in 2026, issue #4845 / pull #4855, backported to 3.11; PyPI's GNU
    OpenMP build is 3.2, and the guard costs too little to make it depend on the version.)"""

    _SIGSET = 128       # bytes: glibc's sigset_t (1024 signals)

    def __init__(self):
        import ctypes
        import signal
        libc = ctypes.CDLL(None)
        f = libc.pthread_sigmask
        f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        f.restype = ctypes.c_int
        self._mask = f
        self._set = ctypes.create_string_buffer(self._SIGSET)
        if libc.sigfillset(self._set):
            raise OSError("sigfillset failed")
        for name in ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGSYS"):
            libc.sigdelset(self._set, int(getattr(signal, name)))
        self._all = ctypes.addressof(self._set)
        self._buf = ctypes.create_string_buffer
        self._addr = ctypes.addressof
        self._local = threading.local()

    def block(self):
        """Block this thread's asynchronous signals; the address its old mask was kept at
        (for ``restore``)."""
        loc = self._local
        old = getattr(loc, "old", None)
        if old is None:
            loc.buf = self._buf(self._SIGSET)
            old = loc.old = self._addr(loc.buf)
        if self._mask(0, self._all, old):           # SIG_BLOCK
            raise OSError("pthread_sigmask failed")
        return old

    def restore(self, old):
        self._mask(2, old, None)                    # SIG_SETMASK


class _OneDnn:
    """oneDNN's ``dnnl_sgemm`` (row-major) for float32 products, with NumPy's OpenBLAS for
    float64 (oneDNN has no double-precision GEMM on CPUs). oneDNN chooses its JIT kernels by
    the instruction sets the CPU reports, whatever its vendor: on an AMD EPYC with AVX-512
    its sgemm ran at 150-210 GFLOP/s on one core where OpenBLAS (kept to its AVX2 kernels by
    ``OPENBLAS_CORETYPE``) and MKL (AVX2 code paths off Intel's CPUs) reached 70-105. It
    threads each product itself on GNU OpenMP, as many threads as retrograd._threads says
    (set per calling thread before each product: OpenMP's count is per thread); a forked
    child runs it on one thread (GNU OpenMP's pool does not survive a fork: a child that
    opens a parallel region after its parent did waits forever)."""
    kind = "onednn"
    splits = False
    picky = False
    min_macs = 1 << 20

    _TR = {_NT: b"N", _T: b"T"}

    def __init__(self, lib, ob):
        import ctypes
        self.cdll = lib
        i64, P = ctypes.c_int64, ctypes.c_void_p

        class Version(ctypes.Structure):
            _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int),
                        ("hash", ctypes.c_char_p), ("cpu_runtime", ctypes.c_uint), ("gpu_runtime", ctypes.c_uint)]

        ver = lib.dnnl_version
        ver.restype = ctypes.POINTER(Version)
        v = ver().contents
        # (dnnl_sgemm's dimensions are int64 from v1 on; the threads are set through OpenMP, so
        # only its sequential and OpenMP builds are taken: a TBB or SYCL build is passed over)
        if v.major < 1 or v.cpu_runtime not in (1, 2):
            raise OSError(f"oneDNN {v.major}.{v.minor} with CPU runtime {v.cpu_runtime}")
        self.version = f"{v.major}.{v.minor}.{v.patch}"
        f = lib.dnnl_sgemm
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_char, ctypes.c_char, i64, i64, i64, ctypes.c_float, P, i64, P, i64,
                      ctypes.c_float, P, i64]
        self._sgemm = f
        omp = getattr(lib, "omp_set_num_threads", None) if v.cpu_runtime == 2 else None
        if omp is not None:
            omp.restype = None
            omp.argtypes = [ctypes.c_int]
        self._omp = omp
        self._local = threading.local()
        self._forked = False
        self.guard = _SignalGuard()
        if omp is not None and hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._after_fork)
        self.ob = ob
        self.gemm = {_F32: self.sgemm}
        self.raw = {_F32: (self.sgemm, 1.0, 0.0)}
        self.batch = {_F32: None}
        if ob is not None:
            self.gemm[_F64] = ob.gemm[_F64]
            self.raw[_F64] = ob.raw[_F64]
            self.batch[_F64] = None
        self.packed = {}

    def _after_fork(self):
        self._forked = True
        self._local = threading.local()

    def _sync_threads(self, most=None):
        """OpenMP's count for this thread set to retrograd's, or to at most ``most`` (before
        each oneDNN call); the count (1 where oneDNN runs sequentially)."""
        omp = self._omp
        if omp is None:
            return 1
        nt = 1 if self._forked else _threads()
        if most is not None and nt > most:
            nt = most
        loc = self._local
        if getattr(loc, "nt", 0) != nt:
            omp(nt)
            loc.nt = nt
        return nt

    def sgemm(self, order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        """cblas_sgemm's arguments (row-major order only) on dnnl_sgemm."""
        self._sync_threads()
        guard = self.guard
        old = guard.block()
        try:
            st = self._sgemm(self._TR[ta], self._TR[tb], m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
        finally:
            guard.restore(old)
        if st:
            raise RuntimeError(f"oneDNN's sgemm failed (status {st}) on a {m} x {k} @ {k} x {n} product")

    @property
    def title(self):
        f64 = f", float64 on {self.ob.title}" if self.ob is not None else ""
        return f"oneDNN {self.version} (float32{f64})"

    def native_batch(self):
        return None


def _open_onednn():
    """oneDNN's sgemm (pip's ``onednn-cpu-gomp``, the ``blas`` extra) as an _OneDnn, or False."""
    import ctypes
    if not sys.platform.startswith("linux"):
        return False
    for path in _candidates(("libdnnl.so.3", "libdnnl.so.2", "libdnnl.so")):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        try:
            dn = _OneDnn(lib, _numpy_openblas())
        except (AttributeError, OSError):
            continue
        if _probe(dn.sgemm):
            return _use(dn)
    return False


def _load():
    """Look the BLAS up once: a _Mkl, _OneDnn or _OpenBlas, or False (NumPy only).
    RETROGRAD_BLAS names one (mkl, onednn, openblas, numpy); unset, MKL on Intel's CPUs
    (oneDNN where MKL is not installed), and on others oneDNN, else NumPy's OpenBLAS: MKL
    runs a generic code path there (measured on an AMD EPYC with AVX-512: MKL's sgemm 84-90
    GFLOP/s, its batched sgemm 63, OpenBLAS 100-108 with the AVX2 kernels the environment
    pins, oneDNN's sgemm 150-210)."""
    if _state[0] is not None:
        return _state[0]
    want = _choice()
    if want == "numpy":
        order = ()
    elif want:
        order = (want,)
    else:
        order = ("mkl", "onednn") if _intel_cpu() else ("onednn", "openblas")
    res = False
    for kind in order:
        try:
            res = _openers()[kind]()
        except Exception:
            res = False
        if res:
            break
    _state[0] = res
    return res


def _probe(gemm):
    """Whether the row-major product of a small pair through ``gemm`` equals NumPy's."""
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    c = np.zeros((3, 3), np.float32)
    gemm(_ROW, _NT, _T, 3, 3, 2, 1.0, a.ctypes.data, 2, a.ctypes.data, 2, 0.0, c.ctypes.data, 3)
    return np.array_equal(c, a @ a.T)


def _use(lib):
    import ctypes
    global _ptr, _VP
    _ptr = _fast_ptr()
    _VP = ctypes.c_void_p
    return lib


_NUMPY_OB = []


def _numpy_openblas():
    """NumPy's own OpenBLAS (else another loaded one) as an _OpenBlas, or None; looked up once
    (for the products here and the recurrent layers' loops alike)."""
    if not _NUMPY_OB:
        from .. import _threads
        npdir = os.path.dirname(os.path.dirname(np.__file__))
        found = None
        for path, lib in sorted(_threads.openblas_libs(), key=lambda pl: not pl[0].startswith(npdir)):
            try:
                ob = _OpenBlas(lib)
            except (AttributeError, OSError):
                continue
            if _probe(ob.gemm[_F32]):
                found = ob
                break
        _NUMPY_OB.append(found)
    return _NUMPY_OB[0]


def _open_openblas():
    ob = _numpy_openblas()
    if ob is None:
        return False
    return _use(ob)


def _openers():
    return {"mkl": _open, "openblas": _open_openblas, "onednn": _open_onednn}


def _complete(path):
    """Whether the libraries MKL's runtime loads on its first product lie beside it (MKL
    ends the process when one is missing)."""
    d = os.path.dirname(path)
    if not d:
        try:
            with open("/proc/self/maps") as f:
                found = [line.split()[-1] for line in f if os.path.basename(path) in line]
        except OSError:
            return True
        if not found:
            return True
        d = os.path.dirname(found[0])
    try:
        names = os.listdir(d)
    except OSError:
        return False
    return all(any(n.startswith(p) for n in names) for p in ("libmkl_core.", "libmkl_sequential.", "libmkl_def."))


def _open():
    import ctypes
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        try:
            if sys.platform.startswith("linux") and not _complete(path):
                continue
            # LP64 (32-bit ints) and the sequential layer; both must be set before MKL's first
            # call. A process where MKL already runs with another layer (another library
            # loaded it first) is left alone.
            if lib.MKL_Set_Interface_Layer(0) != 0 or lib.MKL_Set_Threading_Layer(1) != 1:
                return False
            mkl = _Mkl(lib)
            # one small product checked against NumPy's before any real one
            if not _probe(mkl.gemm[_F32]):
                return False
            return _use(mkl)
        except (AttributeError, OSError):
            continue
    return False


# --- the worker threads -----------------------------------------------------------------

_split_lock = threading.Lock()


_th = []    # retrograd._threads, once imported (a from-import per product costs its lookup)


def _threads():
    if not _th:
        from .. import _threads as th
        _th.append(th)
    return _th[0].blas_threads()


def _run(calls):
    if len(calls) == 1:
        fn, args = calls[0]
        fn(*args)
        return
    # one split product at a time: the workers are shared (a second thread's product runs
    # on its own thread, unsplit, instead of waiting)
    if not _split_lock.acquire(blocking=False):
        for fn, args in calls:
            fn(*args)
        return
    try:
        t = _team_of()
        if t is not None and t.run(calls):
            return
        from .._threads import executor
        ex = executor()
        futs = [ex.submit(fn, *args) for fn, args in calls[1:]]
        try:
            fn, args = calls[0]
            fn(*args)
        finally:
            for f in futs:
                f.result()
    finally:
        _split_lock.release()


_teams = []


def _team_of():
    """ops._team's spinning workers for this process's MKL, or None (no numba, or no MKL)."""
    lib = _state[0]
    if not lib or lib.kind != "mkl":
        return None
    if not _teams:
        from . import _team
        _teams.append(_team)
    return _teams[0].team(lib, _seq)


# --- operand layouts --------------------------------------------------------------------

def _layout(shape, strides, it):
    """(trans flag, leading dimension) describing a (r, c) matrix with these strides in
    row-major BLAS terms, or None when BLAS cannot (non-unit inner stride both ways,
    negative or overlapping strides)."""
    r, c = shape
    s0, s1 = strides
    if (s1 == it or c <= 1) and s0 >= 0 and s0 % it == 0:
        ld = s0 // it if r > 1 else max(c, 1)
        if ld >= max(c, 1) and ld <= _INT_MAX:
            return _NT, ld
    if (s0 == it or r <= 1) and s1 >= 0 and s1 % it == 0:
        ld = s1 // it if c > 1 else max(r, 1)
        if ld >= max(r, 1) and ld <= _INT_MAX:
            return _T, ld
    return None


def _lay(x, it):
    """_layout of a 2-D array, with the two dense orders (most operands) read from its flags."""
    f = x.flags
    if f.c_contiguous:
        return _NT, max(x.shape[1], 1)
    if f.f_contiguous:
        return _T, max(x.shape[0], 1)
    return _layout(x.shape, x.strides, it)


def _ptr_slow(x):
    return x.ctypes.data


_ptr = _ptr_slow


def _fast_ptr():
    """A reader of an array's data pointer straight from the array object (the field that
    follows the object header in NumPy's array struct, stable since NumPy 1.7), ~10x
    cheaper than ``x.ctypes.data``; checked here against ``ctypes.data`` on a few arrays
    and views, else the slow reader stays."""
    import ctypes
    off = object.__basicsize__
    at = ctypes.c_void_p.from_address

    def ptr(x):
        return at(id(x) + off).value or 0

    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for x in (base, base[1:, 2:], base.T, base[::2], np.empty((3, 5)), np.empty(0)):
        if ptr(x) != _ptr_slow(x):
            return _ptr_slow
    return ptr


def matmul(a, b, out=None):
    """``np.matmul(a, b, out=out)`` (the device module's matmul for device arrays), through
    MKL where it is installed and the product is large float32/float64 with strides BLAS can
    describe (see the module's doc)."""
    if type(a) is np.ndarray and type(b) is np.ndarray:
        if a.ndim >= 2 and b.ndim >= 2:
            sa, sb = a.strides, b.strides
            if 0 in sa[-2:] or 0 in sb[-2:]:
                a, b = _dense(a, b)
            if _state[0] is not False and a.size * b.shape[-1] >= _MIN_MACS:
                r = try_matmul(a, b, out)
                if r is not None:
                    return r
        xp = np
    else:
        from ._base import xp_for
        xp = xp_for(a, b)
    return xp.matmul(a, b) if out is None else xp.matmul(a, b, out=out)


def _dense(a, b):
    """(a, b) with a matrix operand broadcast along a row or column (a zero stride, such as
    the expanded gradient of a sum) copied out: neither NumPy's BLAS path nor MKL takes
    such an operand, and NumPy's own loop for it runs ~2x slower than a copy plus the BLAS
    product (512 x 64 @ 64 x 64: 117 us against 5 + 63). Only where the product reuses
    each element enough (8+ columns or rows on the other side) to earn the copy."""
    if (0 in a.strides[-2:]) and a.shape[-1] > 1 and a.shape[-2] > 1 and b.shape[-1] >= 8:
        a = np.ascontiguousarray(a)
    if (0 in b.strides[-2:]) and b.shape[-1] > 1 and b.shape[-2] > 1 and a.shape[-2] >= 8:
        b = np.ascontiguousarray(b)
    return a, b


def try_matmul(a, b, out=None):
    """``np.matmul(a, b, out=out)`` through MKL for host arrays, or None where that product
    stays with NumPy (no MKL, or a product it does not take)."""
    lib = _state[0]
    if lib is None:
        if type(a) is np.ndarray and a.ndim >= 2 and b.ndim >= 2 and a.size * b.shape[-1] >= _MIN_MACS:
            lib = _load()
    dt = a.dtype
    if not lib or type(a) is not np.ndarray or type(b) is not np.ndarray or a.ndim < 2 or b.ndim < 2 or \
            b.dtype != dt or (dt != _F32 and dt != _F64):
        return None
    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    if k != k2:
        return None
    if a.ndim == 2 and b.ndim == 2:
        return _gemm2(lib, a, b, out, m, n, k, dt)
    return _gemm_batched(lib, a, b, out, m, n, k, dt)


def _pays(m, n, k):
    """Whether the library's product of (m, k) @ (k, n) beats NumPy's here (measured: see
    _MIN_MACS): MKL's on some shapes only; oneDNN's and NumPy's own OpenBLAS's (the same
    library either way) from their ``min_macs`` on."""
    lib = _state[0]
    macs = m * n * k
    if lib and not lib.picky:
        return macs >= lib.min_macs
    return macs >= _BIG_MACS or (min(m, n) <= 32 and k >= 512 and macs >= _FEW_ROW_MACS) or \
        (macs >= _split() and _threads() > 1)


def _split():
    """Multiply-adds from which a product is split (see _SPLIT_MACS); never with a BLAS that
    threads its products itself."""
    lib = _state[0]
    if lib and not lib.splits:
        return _NEVER
    s = _split_at[0]
    if s is None:
        import importlib.util
        team = not os.environ.get("RETROGRAD_NO_NUMBA") and importlib.util.find_spec("numba") is not None
        s = _split_at[0] = _TEAM_SPLIT_MACS if team else _SPLIT_MACS
    return s


def _out_ok(out, shape, dt):
    return (type(out) is np.ndarray and out.shape == shape and out.dtype == dt and out.flags.writeable)


def _gemm2(lib, a, b, out, m, n, k, dt):
    macs = m * n * k
    # (k = 0: a zero product, NumPy's to fill; oneDNN's sgemm leaves C unwritten then)
    if macs < _MIN_MACS or k == 0 or m > _INT_MAX or n > _INT_MAX or k > _INT_MAX or not _pays(m, n, k):
        return None
    it = dt.itemsize
    la = _lay(a, it)
    lb = _lay(b, it)
    if la is None or lb is None:
        return None
    nt = _threads() if macs >= _split() else 1
    if out is None and nt <= 1:
        # the common case, unsplit into a new array, with the fewest Python steps
        c = np.empty((m, n), dt)
        raw, one, zero = lib.raw[dt]
        raw(_ROW, la[0], lb[0], m, n, k, one, _VP(_ptr(a)), la[1], _VP(_ptr(b)), lb[1], zero, _VP(_ptr(c)),
            max(n, 1))
        return c
    if out is None:
        c = np.empty((m, n), dt)
        ldc = max(n, 1)
    else:
        if not _out_ok(out, (m, n), dt):
            return None
        lc = _layout(out.shape, out.strides, it)
        if lc is None or lc[0] != _NT or np.may_share_memory(out, a) or np.may_share_memory(out, b):
            return None
        c = out
        ldc = lc[1]
    ta, lda = la
    tb, ldb = lb
    pa, pb, pc = _ptr(a), _ptr(b), _ptr(c)
    f = lib.gemm[dt]
    if nt <= 1:
        f(_ROW, ta, tb, m, n, k, 1.0, pa, lda, pb, ldb, 0.0, pc, ldc)
        return c
    calls = []
    if m >= n:      # row blocks of C (and of op(A))
        step = -(-m // nt)
        for i in range(0, m, step):
            mi = min(step, m - i)
            ai = pa + (i * lda if ta == _NT else i) * it
            calls.append((f, (_ROW, ta, tb, mi, n, k, 1.0, ai, lda, pb, ldb, 0.0, pc + i * ldc * it, ldc)))
    else:           # column blocks of C (and of op(B))
        step = -(-n // nt)
        for j in range(0, n, step):
            nj = min(step, n - j)
            bj = pb + (j if tb == _NT else j * ldb) * it
            calls.append((f, (_ROW, ta, tb, m, nj, k, 1.0, pa, lda, bj, ldb, 0.0, pc + j * it, ldc)))
    _run(calls)
    return c


def _merge(shape, strides_list):
    """Merge adjacent batch dimensions whose strides chain in every operand: (shape,
    [strides per operand]) with as few dimensions as possible."""
    if not shape:
        return (), [() for _ in strides_list]
    shp = [shape[0]]
    sts = [[s[0]] for s in strides_list]
    for i in range(1, len(shape)):
        d = shape[i]
        if all(st[-1] == s[i] * d for st, s in zip(sts, strides_list)):
            shp[-1] *= d
            for st, s in zip(sts, strides_list):
                st[-1] = s[i]
        else:
            shp.append(d)
            for st, s in zip(sts, strides_list):
                st.append(s[i])
    return tuple(shp), [tuple(st) for st in sts]


def _batch_strides(x, bshape):
    """x's strides over the broadcast batch shape (0 where x is broadcast)."""
    nb = x.ndim - 2
    pad = len(bshape) - nb
    st = [0] * pad
    for d, s, full in zip(x.shape[:-2], x.strides[:-2], bshape[pad:]):
        st.append(s if d == full and d != 1 else 0)
    return st


def _gemm_batched(lib, a, b, out, m, n, k, dt):
    if k == 0:
        return None
    if b.ndim == 2 and a.flags.c_contiguous and (out is None or out.flags.c_contiguous):
        # x @ W over a batch of row-major x: one 2-D product with all the rows
        rows = a.size // k
        if out is not None and out.shape != a.shape[:-1] + (n,):
            return None
        r = _gemm2(lib, a.reshape(rows, k), b, None if out is None else out.reshape(rows, n), rows, n, k, dt)
        if r is None:
            return None
        return out if out is not None else r.reshape(a.shape[:-1] + (n,))
    # per matrix as for one product (MKL's batched calls lose on small matrices: 64 x (32x16 @
    # 16x32) 2.5x slower, 64 x 64^3 1.3x, 16 x (128x64 @ 64x128) 0.87x)
    if m * n * k < _MIN_MACS or not _pays(m, n, k):
        return None
    try:
        bshape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None
    count = 1
    for d in bshape:
        count *= d
    macs = m * n * k * count
    if macs < _MIN_MACS or m > _INT_MAX or n > _INT_MAX or k > _INT_MAX or 0 in (m, n, k) or count == 0:
        return None
    it = dt.itemsize
    la = _layout(a.shape[-2:], a.strides[-2:], it)
    lb = _layout(b.shape[-2:], b.strides[-2:], it)
    if la is None or lb is None:
        return None
    oshape = bshape + (m, n)
    if out is None:
        c = np.empty(oshape, dt)
    else:
        if not _out_ok(out, oshape, dt):
            return None
        if np.may_share_memory(out, a) or np.may_share_memory(out, b):
            return None
        c = out
    lc = _layout((m, n), c.strides[-2:], it)
    if lc is None or lc[0] != _NT:
        return None
    sa, sb, sc = _batch_strides(a, bshape), _batch_strides(b, bshape), list(c.strides[:-2])
    if any(s == 0 and d > 1 for s, d in zip(sc, bshape)):      # an output written twice
        return None
    if any(s < 0 or s % it for s in sa + sb + sc):
        return None
    mshape, (sa, sb, sc) = _merge(bshape, [sa, sb, sc])
    ta, lda = la
    tb, ldb = lb
    ldc = lc[1]
    sa = [s // it for s in sa]
    sb = [s // it for s in sb]
    sc = [s // it for s in sc]
    if max(sa + sb + sc + [1]) > _INT_MAX or mshape[-1] > _INT_MAX:
        return None
    fb = lib.batch[dt]
    fg = lib.gemm[dt]
    pa0, pb0, pc0 = _ptr(a), _ptr(b), _ptr(c)
    inner = mshape[-1]
    calls = []
    for idx in np.ndindex(*mshape[:-1]):
        oa = sum(i * s for i, s in zip(idx, sa))
        ob = sum(i * s for i, s in zip(idx, sb))
        oc = sum(i * s for i, s in zip(idx, sc))
        pa, pb, pc = pa0 + oa * it, pb0 + ob * it, pc0 + oc * it
        if fb is not None and inner > 1:
            calls.append((fb, (_ROW, ta, tb, m, n, k, 1.0, pa, lda, sa[-1], pb, ldb, sb[-1], 0.0, pc, ldc, sc[-1],
                               inner)))
        else:
            for j in range(inner):
                calls.append((fg, (_ROW, ta, tb, m, n, k, 1.0, pa + j * sa[-1] * it, lda, pb + j * sb[-1] * it, ldb,
                                   0.0, pc + j * sc[-1] * it, ldc)))
    nt = _threads() if macs >= _split() else 1
    if nt > 1 and fb is not None and len(calls) == 1 and inner >= 2:
        fn, args = calls[0]
        step = -(-inner // nt)
        calls = []
        for j in range(0, inner, step):
            cnt = min(step, inner - j)
            calls.append((fn, args[:7] + (args[7] + j * sa[-1] * it,) + args[8:10] + (args[10] + j * sb[-1] * it,)
                          + args[11:14] + (args[14] + j * sc[-1] * it,) + args[15:17] + (cnt,)))
        _run(calls)
    elif nt > 1 and len(calls) > 1:
        step = -(-len(calls) // nt)
        groups = [calls[i:i + step] for i in range(0, len(calls), step)]
        _run([(_seq, (g,)) for g in groups])
    else:
        for fn, args in calls:
            fn(*args)
    return c


def _seq(calls):
    for fn, args in calls:
        fn(*args)
