"""Which module made each node: sequence-number ranges recorded around module calls.

Every autograd node takes the next number of one global counter when it is made, so
the nodes made inside a call of a module are exactly those numbered between the
call's start and end. ``record_modules`` wraps ``Module.__call__`` while it is active
and keeps, for each call, ``(start, end, path)``; ``graph()`` puts every node in the
innermost range holding its number. Nothing is added to the nodes themselves.

    with retrograd.viz.record_modules(model):
        loss = criterion(model(x), y)
    retrograd.viz.graph(loss).save("graph.html")      # grouped by conv1, fc1, ...

``scope(name)`` opens a range by hand, for code that is not a Module.
"""
import sys
import threading

from ..autograd.graph import _seq

__all__ = ["record_modules", "scope", "latest"]

_local = threading.local()
_latest = [None]


def _stack():
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def latest():
    """The most recent recording (None when nothing was recorded)."""
    return _latest[0]


class scope:
    """Mark the nodes made inside the ``with`` block as belonging to ``name``."""

    def __init__(self, name, recording=None, module=None):
        self.name = name
        self.recording = recording
        self.module = module
        self.kind = type(module).__name__ if module is not None else None

    def __enter__(self):
        st = _stack()
        parent = st[-1][0] if st else None
        self.path = f"{parent}.{self.name}" if parent else self.name
        self.start = next(_seq)
        st.append((self.path, self))
        return self

    def __exit__(self, *exc):
        st = _stack()
        if st and st[-1][1] is self:
            st.pop()
        rec = self.recording or _latest[0]
        if rec is None:
            rec = _latest[0] = record_modules()
        rec.ranges.append((self.start, next(_seq), self.path))
        if self.kind is not None:
            rec.kinds[self.path] = self.kind
        return False


class record_modules:
    """Record which module call made each node (context manager).

    model: names the submodules as ``named_modules()`` does (``conv1``, ``features.0``);
    without it, every Module called inside the block is recorded under its attribute
    name in the calling module (the outermost under its class name).
    """

    def __init__(self, model=None):
        self.model = model
        self.ranges = []
        self.kinds = {}            # path -> class name of the module called there
        self._names = {}
        if model is not None and hasattr(model, "named_modules"):
            self._names = {id(m): n for n, m in model.named_modules()}
        self._orig = None
        self._cls = None

    def __enter__(self):
        _latest[0] = self
        nn = sys.modules.get("retrograd.nn")
        if nn is None:
            try:
                from .. import nn  # noqa: F811
            except ImportError:
                nn = None
        cls = getattr(nn, "Module", None) if nn is not None else None
        if cls is not None and "__call__" in cls.__dict__:
            self._cls = cls
            self._orig = cls.__dict__["__call__"]
            rec = self
            orig = self._orig

            def __call__(module, *args, **kwargs):
                st = _stack()
                if st and st[-1][1].module is module:
                    return orig(module, *args, **kwargs)     # an outer recording has it
                name = rec._name(module)
                if name is None:
                    return orig(module, *args, **kwargs)
                with scope(name, rec, module):
                    return orig(module, *args, **kwargs)
            __call__._viz_wrapped = True
            cls.__call__ = __call__
        return self

    def _name(self, module):
        st = _stack()
        if self._names:
            full = self._names.get(id(module))
            if full is None:
                return type(module).__name__
            if full == "":
                return None                   # the model itself: no group around everything
            parent = st[-1][0] if st else ""
            if parent and full.startswith(parent + "."):
                return full[len(parent) + 1:]
            return full
        if st:
            parent_mod = st[-1][1].module
            if parent_mod is not None:
                for k, v in getattr(parent_mod, "_modules", {}).items():
                    if v is module:
                        return k
        return type(module).__name__

    def __exit__(self, *exc):
        if self._cls is not None:
            self._cls.__call__ = self._orig
        self._cls = self._orig = None
        return False
