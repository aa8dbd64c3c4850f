"""``spawn``/``start_processes``: run ``fn(rank, *args)`` in ``nprocs`` processes."""
import multiprocessing
import signal
import sys
import traceback

__all__ = ["ProcessException", "ProcessRaisedException", "ProcessExitedException", "ProcessContext",
           "spawn", "start_processes"]


class ProcessException(Exception):
    """A process started by ``spawn`` failed."""

    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A process started by ``spawn`` raised an exception (its traceback is in the message)."""


class ProcessExitedException(ProcessException):
    """A process started by ``spawn`` exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes started by ``spawn(..., join=False)``; ``join()`` waits for them."""

    def __init__(self, processes, error_queues):
        self.processes = processes
        self.error_queues = error_queues

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """Wait for the processes; True when all ended well, False on timeout. The first failure
        terminates the others and raises ProcessRaisedException / ProcessExitedException."""
        from multiprocessing.connection import wait
        live = {p.sentinel: i for i, p in enumerate(self.processes) if p.exitcode is None}
        failed = None
        while live:
            ready = wait(list(live), timeout=timeout)
            if not ready:
                return False
            for s in ready:
                i = live.pop(s)
                self.processes[i].join()
                if self.processes[i].exitcode != 0 and failed is None:
                    failed = i
            if failed is not None:
                break
        if failed is None:
            return True
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        p = self.processes[failed]
        q = self.error_queues[failed]
        if not q.empty():
            raise ProcessRaisedException(f"\n\n-- Process {failed} terminated with the following error:\n{q.get()}",
                                         failed, p.pid)
        if p.exitcode < 0:
            name = signal.Signals(-p.exitcode).name
            raise ProcessExitedException(f"process {failed} terminated with signal {name}", failed, p.pid,
                                         p.exitcode, name)
        raise ProcessExitedException(f"process {failed} terminated with exit code {p.exitcode}", failed, p.pid,
                                     p.exitcode)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)`` with ``start_method``; wait for them when
    ``join`` (re-raising a child's exception in the parent), else return their ProcessContext."""
    ctx = multiprocessing.get_context(start_method)
    processes, queues = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        processes.append(p)
        queues.append(q)
    context = ProcessContext(processes, queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """``start_processes`` with the spawn start method (``torch.multiprocessing.spawn``)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
