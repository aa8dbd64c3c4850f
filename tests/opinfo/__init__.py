"""The op table: every public differentiable op and Tensor method, compared with torch 2.13.

Writing an entry (in a tests/opinfo/ops_<family>.py module's list ``OPS``)::

    OpInfo("exp", method("exp"),                       # op(lib, *args, **kwargs)
           lambda mk: [Sample(mk.rand(2, 3)),          # NumPy arrays in, float ones require grad
                       Sample(mk.arr([0., 1e3]), kind="degenerate")],
           elementwise=True, inplace="exp_")

``mk`` (core.Maker) makes inputs: ``mk.rand(*shape, low, high)``, ``mk.pos(*shape)``,
``mk.arr(values)``, ``mk.index(values)`` / ``mk.mask(*shape)`` for integer/bool arguments that are
never differentiated. ``Sample(..., grad=[0])`` restricts which array args require grad; a
sample's ``kind`` names it in failures ("basic" samples get every generic kind derived).
A case that differs from torch today goes into core.KNOWN_MISMATCHES (a strict xfail).
Run: ``python3 -m pytest -q -n 2 -p no:cacheprovider tests/test_opinfo.py``
(``-k exp`` for one op).
"""
import importlib
import pkgutil

from .core import OpInfo, Sample, Maker, Index, KNOWN_MISMATCHES, method, function  # noqa: F401

ALL_OPS = []
for _m in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("ops_")):
    ALL_OPS.extend(importlib.import_module(f"{__name__}.{_m}").OPS)

BY_NAME = {}
for _info in ALL_OPS:
    if _info.name in BY_NAME:
        raise ValueError(f"duplicate op table entry {_info.name!r}")
    BY_NAME[_info.name] = _info


def lookup(name):
    """The entry called ``name``."""
    return BY_NAME[name]
