"""tests/device: retrograd's 'cuda' device run on the strict emulated CUDA device
(retrograd.cuda._emulator), enabled for each test of this folder only, so that the rest of
the suite (in the same process under pytest-xdist) keeps seeing no CUDA."""
import pytest

from retrograd.cuda import _emulator


@pytest.fixture(autouse=True)
def _emulated_cuda():
    was = _emulator.enabled()
    _emulator.enable()
    forbid = _emulator.SYNCS.forbid
    try:
        yield _emulator
    finally:
        _emulator.SYNCS.forbid = forbid
        if not was:
            _emulator.disable()
