"""What runs inside a DataLoader worker process, and ``get_worker_info()``."""
import os
import sys

import numpy as np

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper"]

# How often (seconds) a blocked worker or main process wakes up to check on the other side.
MP_STATUS_CHECK_INTERVAL = 5.0

_worker_info = None


class WorkerInfo:
    """Inside a worker: ``id``, ``num_workers``, ``seed`` and this worker's copy of ``dataset``."""
    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = [f"{k}={getattr(self, k)}" for k in self.__keys]
        return f"{self.__class__.__name__}({', '.join(items)})"


def get_worker_info():
    """The current worker's ``WorkerInfo``; ``None`` in the main process."""
    return _worker_info


def _tag(e, where):
    """Remember which sample failed: a worker names it in the error it sends back; in the main
    process it is added as a note to the exception as it propagates."""
    if getattr(e, "_retrograd_sample", None) is None:
        try:
            e._retrograd_sample = where
        except AttributeError:
            pass
        if _worker_info is None and hasattr(e, "add_note"):
            e.add_note(f"(raised by the DataLoader {where})")


class KeyErrorMessage(str):
    """A KeyError message that prints its newlines (KeyError quotes its argument)."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process and raised there again."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        import pickle
        import traceback
        try:  # the class travels by reference: one the main process cannot import becomes RuntimeError
            pickle.dumps(self.exc_type)
        except Exception:
            self.exc_type = RuntimeError
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class _IterableDatasetStopIteration:
    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch (and echoed back)."""


def _describe(e):
    where = getattr(e, "_retrograd_sample", None)
    return "" if where is None else f" ({where})"


def _die_with_parent(parent_pid):
    """On Linux, ask the kernel to SIGKILL this worker when the process that forked it dies
    (``prctl(PR_SET_PDEATHSIG)``), so a killed main process leaves no worker busy with its
    prefetched samples. Only when the forking parent is ``parent_pid`` itself (fork start
    method, from the main thread: the signal follows the forking thread). Best effort."""
    if parent_pid is None or not sys.platform.startswith("linux") or os.getppid() != parent_pid:
        return
    try:
        import ctypes
        import signal
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:      # the parent died before prctl took effect
        os._exit(1)


def _worker_loop(dataset_kind, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn,
                 drop_last, base_seed, init_fn, worker_id, num_workers, persistent_workers, parent_pid=None):
    import queue
    import random
    from .dataloader import _DatasetKind
    from ... import _creation
    global _worker_info
    _die_with_parent(parent_pid)
    # Ctrl-C reaches the whole process group: the main process decides when to stop (a
    # training loop may finish its step first) and shuts the workers down itself.
    import signal
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except (ValueError, OSError):
        pass
    parent = os.getppid()
    try:
        seed = base_seed + worker_id
        random.seed(seed)
        _creation.manual_seed(seed)
        np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)

        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id} (in worker_init_fn "
                                                    "or while setting up the worker)")

        iteration_end = False
        while True:
            if os.getppid() != parent:      # the main process died: stop (checked between samples)
                break
            try:
                r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent:  # the main process died: stop
                    break
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                if init_exception is None:
                    fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn,
                                                          drop_last)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            if init_exception is not None:
                # Every batch of a worker whose set-up failed reports the original error.
                data = init_exception
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}{_describe(e)}")
            data_queue.put((idx, data))
            del data, idx, index, r
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
