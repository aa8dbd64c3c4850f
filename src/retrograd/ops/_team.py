"""Spinning workers for the shares of a split MKL product (ops._blas), where numba is present.

Handing a share to a thread that sleeps on a lock costs a wake-up: on a virtual machine a
cross-core interrupt, measured here at 70 us for a no-op ``ThreadPoolExecutor`` job (15-30
us elsewhere), as long as a third of a 64 x 784 @ 784 x 512 product. These workers instead
wait in a compiled loop outside the GIL (``_accel_team.serve``) that polls a flag and calls
MKL's cblas through function pointers, so a share starts within a microsecond and a split
product runs in ~0.55x the time of the whole one on two cores (measured: 64 x 784 @ 784 x
512 262 -> 146 us, 1024 x 128 @ 128 x 384 477 -> 264 us). The caller waits for them in a
compiled loop too.

A worker spins for at most ``_IDLE`` seconds after its last share (yielding its core at
every turn), then sleeps on an event; the caller runs a sleeping worker's share itself
and wakes it for the next product, so a product never waits for a wake-up. Only what
ops._blas posts runs here: MKL calls of known functions, alpha 1 and beta 0, on arrays the
caller keeps alive until ``run`` returns. A forked child starts without workers and makes
its own.
"""
import ctypes
import os
import threading
import time

import numpy as np

from . import _accel

_IDLE = 2e-3          # seconds a worker spins after its last share before it sleeps
_ROWS = 64            # job rows a worker holds (a batch group of more runs on the caller)
POST, DONE, STOP, AWAKE, COUNT = 0, 1, 2, 3, 4
_KERNELS = []
_state = []           # [Team] once made, [None] where it cannot be
_lock = threading.Lock()


def _protos(lib):
    """The four MKL functions as ctypes prototypes taking pointers as 64-bit integers (the
    compiled loop passes addresses as int64; the same registers as pointers)."""
    I, P = ctypes.c_int, ctypes.c_int64
    out = []
    for name, F in (("cblas_sgemm", ctypes.c_float), ("cblas_dgemm", ctypes.c_double)):
        f = ctypes.CFUNCTYPE(None, I, I, I, I, I, I, F, P, I, P, I, F, P, I)
        out.append(f(ctypes.cast(lib[name], ctypes.c_void_p).value))
    for name, F in (("cblas_sgemm_batch_strided", ctypes.c_float), ("cblas_dgemm_batch_strided", ctypes.c_double)):
        f = ctypes.CFUNCTYPE(None, I, I, I, I, I, I, F, P, I, I, P, I, I, F, P, I, I, I)
        out.append(f(ctypes.cast(lib[name], ctypes.c_void_p).value))
    return out


class Team:
    """Worker threads, each with its control slots and job rows."""

    def __init__(self, kern, cdll, kinds, seq):
        self.kern = kern
        self.seq = seq              # ops._blas._seq: a share that is a list of calls
        self.fns = _protos(cdll)
        libc = ctypes.CDLL(None)
        self.yld = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.cast(libc.sched_yield, ctypes.c_void_p).value)
        self.kinds = kinds          # id(ctypes function) -> (kind, dtype code)
        kern.spin(self.yld, 1)                      # (its first call loads the compiled code)
        t0 = time.perf_counter()
        kern.spin(self.yld, 2000)
        per = max((time.perf_counter() - t0) / 2000, 1e-8)
        self.spins = int(min(max(_IDLE / per, 100), 10 ** 7))
        # compiled (or loaded from numba's cache) here, in the calling thread, so that a
        # failure shows now: a told-to-stop serve and a wait with nothing posted return at once
        probe = np.zeros((1, 8), np.int64)
        probe[0, STOP] = 1
        if kern.serve(probe[0], np.zeros((1, 20), np.int64), *self.fns, self.yld, 0) != 0 or \
                kern.wait(probe, np.zeros(1, np.int64), self.yld) != -1:
            raise ValueError("the team's kernels misbehave")
        most = max(1, (os.cpu_count() or 2) - 1)
        self.ctls = np.zeros((most, 8), np.int64)       # (fixed: the workers hold its rows)
        self.jobs = [np.zeros((_ROWS, 20), np.int64) for _ in range(most)]
        self.events = [threading.Event() for _ in range(most)]
        self.seqs = [0] * most
        self.threads = []
        self.started = 0

    def _grow(self, n):
        """Start workers up to n (at most one fewer than the CPUs)."""
        for w in range(self.started, min(n, len(self.jobs))):
            t = threading.Thread(target=self._loop, args=(w, self.ctls[w]), daemon=True,
                                 name=f"retrograd-blas-{w + 1}")
            t.start()
            self.threads.append(t)
            self.started = w + 1

    def _loop(self, w, ctl):
        kern, (sg, dg, sb, db), yld, ev = self.kern, self.fns, self.yld, self.events[w]
        try:
            while True:
                ev.wait()
                ev.clear()
                ctl[AWAKE] = 1
                if kern.serve(ctl, self.jobs[w], sg, dg, sb, db, yld, self.spins) == 0:
                    return
                ctl[AWAKE] = 0
        finally:
            ctl[AWAKE] = 0      # (a caller waiting on this worker then sees it gone)

    def _rows_of(self, fn, args, rows):
        """Append the job row(s) of one call to ``rows``; False for a call the loop cannot make."""
        k = self.kinds.get(id(fn))
        if k is None:
            if fn is self.seq and len(args) == 1:
                return all(self._rows_of(f, a, rows) for f, a in args[0])
            return False
        kind, dt = k
        if kind == 0:
            lay, ta, tb, m, n, kk, _, a, lda, b, ldb, _, c, ldc = args
            rows.append((0, dt, lay, ta, tb, m, n, kk, a, lda, b, ldb, c, ldc))
        else:
            lay, ta, tb, m, n, kk, _, a, lda, sa, b, ldb, sb, _, c, ldc, sc, cnt = args
            rows.append((1, dt, lay, ta, tb, m, n, kk, a, lda, sa, b, ldb, sb, c, ldc, sc, cnt))
        return True

    def run(self, calls):
        """Run ``calls`` (fn, args), the first on this thread and one share per worker; False
        (nothing run) where a call is not one the workers can make."""
        shares = []
        for fn, args in calls[1:]:
            rows = []
            if not self._rows_of(fn, args, rows) or len(rows) > _ROWS:
                return False
            shares.append(rows)
        if len(shares) > len(self.jobs):
            return False
        self._grow(len(shares))
        ctls = self.ctls
        seqs = np.zeros(len(self.jobs), np.int64)
        mine = []
        for w, rows in enumerate(shares):
            if ctls[w, AWAKE] == 0:         # asleep: its share runs here, and it wakes for the next
                self.events[w].set()
                mine.append(calls[w + 1])
                continue
            jobs = self.jobs[w]
            for i, r in enumerate(rows):
                jobs[i, :len(r)] = r
            ctls[w, COUNT] = len(rows)
            self.seqs[w] += 1
            seqs[w] = self.seqs[w]
            ctls[w, POST] = seqs[w]
        try:
            fn, args = calls[0]
            fn(*args)
            for fn, args in mine:
                fn(*args)
        finally:
            while True:
                w = self.kern.wait(ctls, seqs, self.yld)
                if w < 0:
                    break
                if not self.threads[w].is_alive():      # (gone: its share runs here, and no more posts)
                    seqs[w] = 0
                    _state[:] = [None]
                    fn, args = calls[w + 1]
                    fn(*args)
                    continue
                self.events[w].set()        # (it went to sleep after the post: it runs the share now)
                time.sleep(0)
        return True


def team(lib, seq):
    """The Team for MKL ``lib`` (ops._blas's _Mkl; ``seq`` its _seq), made on first use; None
    without numba."""
    if _state:
        return _state[0]
    with _lock:
        if not _state:
            t = None
            kern = _accel.load(_KERNELS, "_accel_team")
            if kern is not None and lib and getattr(lib, "cdll", None) is not None:
                kinds = {}
                for dt, code in ((np.dtype(np.float32), 0), (np.dtype(np.float64), 1)):
                    kinds[id(lib.gemm[dt])] = (0, code)
                    if lib.batch.get(dt) is not None:
                        kinds[id(lib.batch[dt])] = (1, code)
                try:
                    t = Team(kern, lib.cdll, kinds, seq)
                except Exception:       # (a numba or ctypes that cannot make the loop: the pool instead)
                    t = None
            _state.append(t)
    return _state[0]


def _forget():
    _state.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)
