"""``torch.multiprocessing``: Python's multiprocessing, with tensors shared between processes.

Everything of :mod:`multiprocessing` is here (``Process``, ``Queue``, ``Pool``, ``set_start_method``,
``get_context``, ``cpu_count``...), plus ``spawn``/``start_processes`` to run a function in several
processes. A tensor moved to shared memory (``Tensor.share_memory_()``, ``Module.share_memory()``)
and sent to another process (Process arguments, queues; spawn, fork and forkserver) arrives there
as a view of the same memory, so writes on either side are seen by both (Hogwild training).
Tensors not in shared memory are copied, as plain pickling does; unlike PyTorch, sending one
through a queue does not move it to shared memory first (call ``share_memory_()`` to share it).
"""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from . import _reductions
from ._spawn import (ProcessContext, ProcessException, ProcessExitedException, ProcessRaisedException,
                     spawn, start_processes)

__all__ = list(multiprocessing.__all__) + [
    "spawn", "start_processes", "ProcessContext", "ProcessException", "ProcessRaisedException",
    "ProcessExitedException", "get_sharing_strategy", "set_sharing_strategy", "get_all_sharing_strategies",
    "init_reductions"]

init_reductions = _reductions.init_reductions
init_reductions()

# Memory is always handed over as a file descriptor (it has no name on the file system that could
# leak); 'file_system' is accepted for scripts that choose it, and shares the same way.
_strategy = ["file_descriptor"]


def get_all_sharing_strategies():
    """The sharing strategies PyTorch names (both hand the memory over as a descriptor here)."""
    return {"file_descriptor", "file_system"}


def get_sharing_strategy():
    """The current sharing strategy."""
    return _strategy[0]


def set_sharing_strategy(new_strategy):
    """Choose how memory is shared (an AssertionError for an unknown strategy, as PyTorch)."""
    assert new_strategy in get_all_sharing_strategies()
    _strategy[0] = new_strategy
