"""``torch.random``: the default CPU generator's seed and state, and ``fork_rng``."""
import contextlib

from ._creation import (default_generator, manual_seed, seed, initial_seed, get_rng_state,  # noqa: F401
                        set_rng_state)

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng",
           "default_generator"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Run the block with the CPU generator forked: on exit it returns to the state it had on
    entry (the device generators are not forked)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
