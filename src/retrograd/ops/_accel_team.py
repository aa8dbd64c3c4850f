"""numba kernels of ops._team: a worker that waits for MKL calls by spinning outside the
GIL, and the caller's wait for it (imported only where numba is installed).

The shared state is a small int64 array per worker (see ops._team for its slots) and a job
table of MKL calls, one row each. Every loop iteration calls ``yld`` (``sched_yield``): an
external function, so the compiler reloads the shared slots after it rather than hoisting
their loads out of the loop, and a core another thread wants is handed over at once.
"""
import numba
import numpy as np

__all__ = ["serve", "wait", "spin"]

# slots of a worker's control array (ops._team mirrors these)
POST, DONE, STOP, AWAKE, COUNT = 0, 1, 2, 3, 4

_jit = numba.njit(cache=True, nogil=True, boundscheck=False)


@_jit
def _call(row, sg, dg, sb, db):
    # kind 0: cblas_?gemm (layout, ta, tb, m, n, k, a, lda, b, ldb, c, ldc); kind 1:
    # cblas_?gemm_batch_strided (... a, lda, stride_a, b, ldb, stride_b, c, ldc, stride_c,
    # count); row[1]: 0 float32, 1 float64; alpha 1 and beta 0 always
    if row[0] == 0:
        if row[1] == 0:
            sg(row[2], row[3], row[4], row[5], row[6], row[7], np.float32(1.0), row[8], row[9], row[10], row[11],
               np.float32(0.0), row[12], row[13])
        else:
            dg(row[2], row[3], row[4], row[5], row[6], row[7], np.float64(1.0), row[8], row[9], row[10], row[11],
               np.float64(0.0), row[12], row[13])
    else:
        if row[1] == 0:
            sb(row[2], row[3], row[4], row[5], row[6], row[7], np.float32(1.0), row[8], row[9], row[10], row[11],
               row[12], row[13], np.float32(0.0), row[14], row[15], row[16], row[17])
        else:
            db(row[2], row[3], row[4], row[5], row[6], row[7], np.float64(1.0), row[8], row[9], row[10], row[11],
               row[12], row[13], np.float64(0.0), row[14], row[15], row[16], row[17])


@_jit
def serve(ctl, jobs, sg, dg, sb, db, yld, spins):
    """Run each posted batch of jobs (ctl[POST] moved past ctl[DONE]), then mark it done;
    return 1 after ``spins`` idle iterations (the caller then sleeps), 0 when told to stop."""
    seen = ctl[DONE]
    idle = 0
    while True:
        s = ctl[POST]
        if s != seen:
            yld()           # (a call between the flag and the job rows: they are read after it)
            for i in range(ctl[COUNT]):
                _call(jobs[i], sg, dg, sb, db)
            seen = s
            ctl[DONE] = s
            idle = 0
        elif ctl[STOP] != 0:
            return 0
        else:
            idle += 1
            if idle > spins:
                return 1
            yld()


@_jit
def wait(ctls, seqs, yld):
    """Spin until every worker w with seqs[w] > 0 has done batch seqs[w]: -1 then, or the
    first such worker found asleep (ctls[w, AWAKE] == 0: the caller wakes it and waits again)."""
    while True:
        pending = False
        for w in range(seqs.shape[0]):
            if seqs[w] > 0 and ctls[w, DONE] != seqs[w]:
                if ctls[w, AWAKE] == 0:
                    return w
                pending = True
        if not pending:
            return -1
        yld()


@_jit
def spin(yld, n):
    """n calls of ``yld`` (for timing one)."""
    for _ in range(n):
        yld()
    return n
