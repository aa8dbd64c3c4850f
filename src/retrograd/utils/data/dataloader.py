"""The DataLoader: batches from a dataset, in the main process or in worker processes."""
import itertools
import os
import sys
import time
import warnings

from . import worker as _worker
from .worker import _tag
from ._collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]

get_worker_info = _worker.get_worker_info


class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        if kind == _DatasetKind.Map:
            return _MapDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)
        return _IterableDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)


class _MapDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn, self.drop_last = \
            dataset, auto_collation, collate_fn, drop_last

    def fetch(self, possibly_batched_index):
        ds = self.dataset
        if self.auto_collation:
            getitems = getattr(ds, "__getitems__", None)
            if getitems is not None:
                try:
                    data = getitems(possibly_batched_index)
                except Exception as e:
                    _tag(e, f"while fetching samples {list(possibly_batched_index)}")
                    raise
            else:
                data = []
                for i in possibly_batched_index:
                    try:
                        data.append(ds[i])
                    except Exception as e:
                        _tag(e, f"while fetching sample index {i}")
                        raise
        else:
            try:
                data = ds[possibly_batched_index]
            except Exception as e:
                _tag(e, f"while fetching sample index {possibly_batched_index}")
                raise
        try:
            return self.collate_fn(data)
        except Exception as e:
            _tag(e, f"while collating the batch of sample indices {possibly_batched_index}")
            raise


class _IterableDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False
        self.count = 0

    def _next(self):
        try:
            x = next(self.dataset_iter)
        except StopIteration:
            raise
        except Exception as e:
            _tag(e, f"while fetching sample {self.count} of the dataset's stream")
            raise
        self.count += 1
        return x

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in possibly_batched_index:
                try:
                    data.append(self._next())
                except StopIteration:
                    self.ended = True
                    break
            if len(data) == 0 or (self.drop_last and len(data) < len(possibly_batched_index)):
                raise StopIteration
        else:
            data = self._next()
        return self.collate_fn(data)


class _InfiniteConstantSampler(Sampler):
    def __iter__(self):
        while True:
            yield None


_WARNED_IN_PROCESS = []


def _can_start_processes():
    """False where no child process can be started (Pyodide in a browser or Node: emscripten)."""
    return sys.platform not in ("emscripten", "wasi")


def _warn_in_process(n):
    if not _WARNED_IN_PROCESS:
        _WARNED_IN_PROCESS.append(True)
        warnings.warn(f"num_workers={n}: this Python cannot start processes ({sys.platform}); the DataLoader "
                      "loads its batches in this process", RuntimeWarning, stacklevel=3)


class DataLoader:
    """Iterates over batches of ``dataset``.

    Same arguments and behaviour as PyTorch's: ``batch_size``, ``shuffle`` (a seeded
    ``generator`` makes it reproducible), ``sampler``, ``batch_sampler``, ``drop_last``,
    ``collate_fn``, ``num_workers`` (real worker processes), ``prefetch_factor``,
    ``persistent_workers``, ``worker_init_fn``, ``timeout``, ``in_order`` (False hands batches
    out as the workers deliver them); ``pin_memory`` is accepted and does nothing on the CPU.
    A worker's error is raised again in the main process with the worker's number, the failing
    sample index and the worker's traceback; the next ``next()`` goes on with the remaining
    batches, as in PyTorch.
    """
    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.in_order = in_order
        self.multiprocessing_context = multiprocessing_context

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None:
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                                 "drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._iterator = None

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, ctx):
        if ctx is not None:
            if self.num_workers > 0:
                import multiprocessing
                if isinstance(ctx, str):
                    valid = multiprocessing.get_all_start_methods()
                    if ctx not in valid:
                        raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                         f"{valid!r}, but got multiprocessing_context={ctx!r}")
                    ctx = multiprocessing.get_context(ctx)
                if not isinstance(ctx, multiprocessing.context.BaseContext):
                    raise TypeError("multiprocessing_context option should be a valid context object or a string "
                                    f"specifying the start method, but got multiprocessing_context={ctx}")
            else:
                raise ValueError("multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
        self.__multiprocessing_context = ctx

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                           "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        if not _can_start_processes():
            _warn_in_process(self.num_workers)
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._dataset_kind == _DatasetKind.Iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                from math import ceil
                length = length // self.batch_size if self.drop_last else ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


def _pin(data):
    """Every tensor of a batch (nested in lists, tuples, dicts) in pinned host memory."""
    from ..._tensor import Tensor
    if isinstance(data, Tensor):
        return data.pin_memory()
    if isinstance(data, dict):
        return type(data)({k: _pin(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_pin(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_pin(v) for v in data)
    return data


def _draw_seed(generator):
    from .sampler import _random_int64
    return _random_int64(generator)


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _draw_seed(loader.generator)
        self._persistent_workers = loader.persistent_workers
        self._in_order = loader.in_order
        self._num_yielded = 0
        self._pin_memory = False
        if loader.pin_memory:
            from ... import cuda
            self._pin_memory = cuda.is_available()   # (without an accelerator there is nothing to pin)

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        if self._sampler_iter is None:
            self._reset(None)
        data = self._next_data()
        self._num_yielded += 1
        if self._pin_memory:
            data = _pin(data)
        return data

    def __len__(self):
        return len(self._index_sampler)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._dataset_fetcher = _DatasetKind.create_fetcher(self._dataset_kind, self._dataset,
                                                            self._auto_collation, self._collate_fn,
                                                            self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._dataset_fetcher.fetch(index)


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Worker processes each get batches of indices on their own queue and put results on a
    shared one; results are handed out in sampler order, ``prefetch_factor`` batches ahead
    per worker."""

    def __init__(self, loader):
        super().__init__(loader)
        if self._num_workers <= 0:
            raise AssertionError("num_workers must be positive")
        import multiprocessing
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        self._worker_init_fn = loader.worker_init_fn
        self._worker_result_queue = ctx.Queue()
        self._workers_done_event = ctx.Event()
        self._index_queues, self._workers = [], []
        self._shutdown = False
        import threading
        parent_pid = os.getpid() if threading.current_thread() is threading.main_thread() else None
        for i in range(self._num_workers):
            iq = ctx.Queue()
            iq.cancel_join_thread()
            w = ctx.Process(target=_worker._worker_loop,
                            args=(self._dataset_kind, self._dataset, iq, self._worker_result_queue,
                                  self._workers_done_event, self._auto_collation, self._collate_fn,
                                  self._drop_last, self._base_seed, self._worker_init_fn, i,
                                  self._num_workers, self._persistent_workers, parent_pid),
                            name=f"DataLoader worker {i}")
            w.daemon = True
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)
        self._data_queue = self._worker_result_queue
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for q in self._index_queues:
                q.put(_worker._ResumeIteration())
            pending = self._num_workers
            while pending > 0:
                idx, _ = self._get_data()
                if isinstance(idx, _worker._ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout=_worker.MP_STATUS_CHECK_INTERVAL):
        # Wait in short slices, so that a worker that died is noticed within a fraction of a second.
        deadline = time.monotonic() + timeout
        while True:
            try:
                return True, self._data_queue.get(timeout=max(0.0, min(0.25, deadline - time.monotonic())))
            except Exception as e:
                failed = [w for i, w in enumerate(self._workers) if self._workers_status[i] and not w.is_alive()]
                if failed:
                    pids = ", ".join(str(w.pid) for w in failed)
                    codes = ", ".join(str(w.exitcode) for w in failed)
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly "
                                       f"(exit code(s) {codes})") from e
                import queue
                if not isinstance(e, queue.Empty):
                    raise
                if time.monotonic() >= deadline:
                    return False, None

    def _get_data(self):
        if self._timeout > 0:
            ok, data = self._try_get_data(self._timeout)
            if ok:
                return data
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            ok, data = self._try_get_data()
            if ok:
                return data

    def _next_data(self):
        if self._shutdown:
            raise StopIteration
        while True:
            # Skip the tasks that an exhausted worker (its iterable dataset ran out) will never
            # answer: it drops whatever it is sent after its StopIteration.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:  # arrived earlier, out of order
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process_data(info[1], info[0])
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _worker._IterableDatasetStopIteration):
                self._worker_exhausted(data.worker_id)
                continue
            if idx == self._rcvd_idx or not self._in_order:
                # in_order=False: hand it out now; the loop above steps over the gap it leaves
                worker_id = self._task_info.pop(idx)[0]
                if idx == self._rcvd_idx:
                    self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            self._task_info[idx] += (data,)

    def _worker_exhausted(self, worker_id):
        # The worker's iterable dataset ran out: stop asking it (keep it alive if persistent).
        if self._persistent_workers:
            self._workers_status[worker_id] = False
        else:
            self._mark_worker_as_unavailable(worker_id)
        self._try_put_index()

    def _try_put_index(self):
        max_tasks = self._prefetch_factor * self._num_workers
        if self._tasks_outstanding >= max_tasks:
            return
        for _ in range(self._num_workers):  # the next worker still at work
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                # in_order=False: only to a worker with room, so a slow one does not hoard the work
                if self._in_order or \
                        self._workers_num_tasks[worker_queue_idx] < max_tasks // sum(self._workers_status):
                    break
        else:
            return
        try:  # drawn only once a worker can take it, so that no batch is skipped
            index = self._next_index()
        except StopIteration:
            return
        self._index_queues[worker_queue_idx].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._workers_num_tasks[worker_queue_idx] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data, worker_id):
        # A worker's error is raised for this batch only: the next call goes on with the others.
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id, shutdown=False):
        q = self._index_queues[worker_id]
        q.put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self):
        if self._shutdown or _worker is None:
            return
        self._shutdown = True
        try:
            self._workers_done_event.set()
            for i, q in enumerate(self._index_queues):
                try:
                    q.put(None)
                except Exception:
                    pass
            for w in self._workers:
                w.join(timeout=1.0)
                if w.is_alive():
                    w.terminate()
                    w.join(1.0)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            self._worker_result_queue.cancel_join_thread()
            self._worker_result_queue.close()
        except Exception:
            pass

    def __del__(self):
        self._shutdown_workers()


