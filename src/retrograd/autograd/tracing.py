"""The backward walk, traced: which node ran, in order, with the gradient that reached it
and the gradient it sent to each of its inputs (the chain rule, step by step).

    with retrograd.autograd.trace() as tr:
        z.backward()
    print(tr)                     # a table, one row per node
    tr.save("walk.html")          # the graph, with the walk as a step-through

The engine calls every function in ``engine.tracers`` after each node runs; a trace is
one such function while its ``with`` block is open. It keeps the gradients (Tensors)
and the nodes, so it can be read and drawn after backward has finished.
"""
import numpy as np

from . import engine
from . import graph as _graph
from .graph import AccumulateGrad

__all__ = ["trace", "Step", "node_name", "creation_order", "format_values"]

SMALL = 16
_ACC_SEQ = getattr(_graph, "_ACC_SEQ", None)


def node_name(node):
    """The class name PyTorch shows for a node (``AccumulateGrad``, ``PowBackward0``)."""
    return type(node).__name__


def creation_order(node):
    """A number that grows with the order nodes were made in (AccumulateGrad included:
    the engine numbers those apart, so that they run last)."""
    s = node._seq
    if _ACC_SEQ is not None and s >= _ACC_SEQ:
        s -= _ACC_SEQ
    return s


def _num(v):
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e16:
            return f"{v:.0f}."
        return f"{v:.4g}"
    if isinstance(v, complex):
        return f"{v:.4g}"
    return str(v)


def format_values(a):
    """An array as short text: its values when small, a summary otherwise (fast: no
    array2string, which costs more than the rest of a large trace together)."""
    if hasattr(a, "get"):               # a device array
        a = a.get()
    a = np.asarray(a)
    if a.size == 0:
        return f"[] (shape {list(a.shape)})"
    if a.size <= SMALL:
        if a.ndim == 0:
            return _num(a.item())
        items = [_num(v) for v in a.ravel().tolist()]
        for d in reversed(a.shape[1:]):
            items = ["[" + ", ".join(items[i:i + d]) + "]" for i in range(0, len(items), d)]
        return "[" + ", ".join(items) + "]"
    if a.dtype.kind in "fcV":
        af = np.abs(a) if a.dtype.kind == "c" else a.astype(np.float64)
        return (f"shape {list(a.shape)}: min {af.min():.4g}, max {af.max():.4g}, "
                f"mean {af.mean():.4g}, norm {np.linalg.norm(af.ravel()):.4g}")
    return f"shape {list(a.shape)}"


def format_grad(g):
    """A gradient (Tensor or None) as short text."""
    return "None" if g is None else format_values(g._data)


class Step:
    """One node's run: ``node``, ``grads_in`` (one per output of the node) and
    ``grads_out`` (one per input edge, aligned with ``node.next_functions``)."""
    __slots__ = ("index", "node", "grads_in", "grads_out")

    def __init__(self, index, node, grads_in, grads_out):
        self.index = index
        self.node = node
        self.grads_in = grads_in
        self.grads_out = grads_out

    @property
    def name(self):
        return node_name(self.node)

    def targets(self):
        """(input node or None, gradient or None) per input edge."""
        return [(nf, g) for (nf, _), g in zip(self.node.next_functions, self.grads_out)]

    def __repr__(self):
        return f"<Step {self.index}: {self.name}>"


class trace:
    """Record the backward walks run inside the ``with`` block (context manager)."""

    def __init__(self):
        self.steps = []
        self._on = False

    def _record(self, node, grads_in, grads_out):
        self.steps.append(Step(len(self.steps), node, tuple(grads_in), tuple(grads_out)))

    def __enter__(self):
        if not self._on:
            engine.tracers.append(self._record)
            self._on = True
        return self

    def __exit__(self, *exc):
        if self._on:
            engine.tracers.remove(self._record)
            self._on = False
        return False

    # --- reading -----------------------------------------------------------------------
    def __len__(self):
        return len(self.steps)

    def __iter__(self):
        return iter(self.steps)

    def __getitem__(self, i):
        return self.steps[i]

    def roots(self):
        """The nodes the walks started from (those no recorded node sends gradient to)."""
        targets = set()
        for s in self.steps:
            for nf, _ in s.node.next_functions:
                if nf is not None:
                    targets.add(id(nf))
        out, seen = [], set()
        for s in self.steps:
            if id(s.node) not in targets and id(s.node) not in seen:
                seen.add(id(s.node))
                out.append(s.node)
        return out

    def table(self, width=44):
        """The walk as a text table: step, node, gradient in, gradients out."""
        head = f"{'step':>4}  {'node':<22} {'grad in':<{width}} grad out"
        rows = [head, "-" * len(head)]
        for s in self.steps:
            gin = "; ".join(format_grad(g) for g in s.grads_in) if s.grads_in else "-"
            if isinstance(s.node, AccumulateGrad):
                v = s.node.variable
                outs = [f"-> .grad of the leaf (shape {list(v._data.shape)})" if v is not None
                        else "-> .grad of a leaf no longer alive"]
            else:
                outs = []
                for i, (nf, g) in enumerate(s.targets()):
                    if nf is None:
                        outs.append(f"[{i}] (no grad needed)")
                    else:
                        outs.append(f"[{i}] -> {node_name(nf)}: {format_grad(g)}")
                outs = outs or ["-"]
            first = f"{s.index:>4}  {s.name:<22} {_cut(gin, width):<{width}} {outs[0]}"
            rows.append(first)
            pad = " " * (4 + 2 + 22 + 1 + width + 1)
            rows.extend(pad + o for o in outs[1:])
        return "\n".join(rows)

    def __str__(self):
        return self.table()

    def __repr__(self):
        return f"<trace: {len(self.steps)} steps>"

    # --- drawing -----------------------------------------------------------------------
    def graph(self, **kwargs):
        """The graph the walk went through, carrying this trace (for the step-through)."""
        from ..viz import graph
        return graph(*self.roots(), trace=self, **kwargs)

    def save(self, path, **kwargs):
        """Save the graph with the trace (``.html`` plays it step by step)."""
        return self.graph(**kwargs).save(path)


def _cut(s, n):
    return s if len(s) <= n else s[: n - 3] + "..."
