"""``retrograd graph script.py [-o graph.html] [--var NAME]``: run a script and draw the
graph of the last scalar it computed that requires grad (or of the tensor ``NAME``).

The script runs as ``__main__`` (its own directory first on ``sys.path``); arguments the
command does not know are passed on to it. Module calls are recorded, so the drawing
groups nodes by module; ``--source`` also records the line that made each node.
"""
import argparse
import builtins
import os
import sys
import traceback

from ..autograd.graph import AccumulateGrad
from ..autograd.tracing import node_name, Step, trace

__all__ = ["main"]


def _parser():
    p = argparse.ArgumentParser(
        prog="retrograd graph",
        description="Run a script and draw the graph of the last scalar it computed that requires "
                    "grad (or of --var NAME). The format follows the output's extension: "
                    ".html (interactive), .svg, .dot, .json.")
    p.add_argument("script", help="the Python script to run")
    p.add_argument("-o", "--output", default="graph.html", help="where to write the graph (default graph.html)")
    p.add_argument("--var", metavar="NAME", help="draw the tensor bound to this global name instead")
    p.add_argument("--show-saved", action="store_true", help="draw the tensors saved for backward")
    p.add_argument("--no-trace", action="store_true",
                   help="do not keep the last backward walk for the page's step-through")
    p.add_argument("--source", action="store_true",
                   help="record the source line that made each node (slower: keeps a stack per op)")
    return p


class _LastWalk:
    """Keeps the last backward walk: its root node (a grad_fn outlives its tensor) and,
    unless told not to, its steps for the step-through. Within one walk the engine runs
    nodes newest first (AccumulateGrad aside), so a node newer than the one before it
    starts a new walk."""

    def __init__(self, keep_steps):
        self.node = None
        self.steps = []
        self.keep_steps = keep_steps
        self._last = None

    def __call__(self, node, grads_in, grads_out):
        if not isinstance(node, AccumulateGrad):
            if self._last is None or node._seq > self._last:
                self.node = node
                self.steps = []
            self._last = node._seq
        if self.keep_steps:
            self.steps.append(Step(len(self.steps), node, tuple(grads_in), tuple(grads_out)))


def _newest_scalar(namespace):
    best, best_seq = None, -1
    from .. import Tensor
    for k, v in namespace.items():
        if isinstance(v, Tensor) and v._requires_grad and v._grad_fn is not None and v._data.size == 1:
            if v._grad_fn._seq > best_seq:
                best, best_seq = (k, v), v._grad_fn._seq
    return best


def _named(namespace):
    from .. import Tensor
    names = {}
    for k, v in namespace.items():
        if k.startswith("_"):
            continue
        if isinstance(v, Tensor):
            names[k] = v
        elif hasattr(v, "named_parameters") and callable(v.named_parameters):
            try:
                for pn, p in v.named_parameters():
                    names[pn] = p
            except Exception:
                pass
    return names


def default_target(namespace, walk):
    """(what to draw, its description): the newer of the last backward's root and the newest
    scalar that requires grad among the program's globals; (None, None) when neither exists."""
    found = _newest_scalar(namespace)
    target, what = None, None
    if found is not None:
        what, target = found
    node = walk.node
    if node is not None and (target is None or node._seq > target._grad_fn._seq):
        target, what = node, f"the last backward's root ({node_name(node)})"
    return target, what


def draw(target, namespace, walk, recording, show_saved=False):
    """The graph of ``target``, its nodes named after the program's globals, grouped by the
    recorded modules, with the last backward walk when it went through this graph."""
    from .. import viz
    tr = None
    if walk.steps:
        tr = trace()
        tr.steps = walk.steps
    labels = _named(namespace)
    try:
        return viz.graph(target, labels=labels, show_saved=show_saved, modules=recording, trace=tr)
    except ValueError:                  # the last walk went through another graph
        return viz.graph(target, labels=labels, show_saved=show_saved, modules=recording)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args, rest = _parser().parse_known_args(argv)
    script = args.script
    if not os.path.isfile(script):
        print(f"retrograd graph: no such script: '{script}'", file=sys.stderr)
        return 2
    from .. import viz
    from ..autograd import engine, anomaly
    newest = _LastWalk(keep_steps=not args.no_trace)
    old_argv = sys.argv
    sys.argv = [script] + rest
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    engine.tracers.append(newest)
    recording = viz.record_modules()
    anomaly_prev = (anomaly.is_anomaly_enabled(), anomaly.is_anomaly_check_nan_enabled())
    if args.source:
        anomaly._apply(True, False)
    from .run import torch_aliases
    try:
        # The same import hook as ``retrograd run``: ``import torch`` gives retrograd.
        with torch_aliases(), recording:
            namespace = {"__name__": "__main__", "__file__": script, "__builtins__": builtins}
            try:
                with open(script, "rb") as f:
                    code = compile(f.read(), script, "exec")
                exec(code, namespace)
            except SystemExit as e:
                if e.code not in (None, 0):
                    print(f"retrograd graph: the script exited with status {e.code}", file=sys.stderr)
                    return e.code if isinstance(e.code, int) else 1
            except Exception:
                traceback.print_exc()
                print("retrograd graph: the script failed; no graph written", file=sys.stderr)
                return 1
    finally:
        engine.tracers.remove(newest)
        if args.source:
            anomaly._apply(*anomaly_prev)
        sys.argv = old_argv
        if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(script)):
            del sys.path[0]
    return _draw(args, namespace, newest, recording)


def _type_name(obj):
    """The object's type by its full name (``torch.Tensor``), bare for builtins (``int``)."""
    t = type(obj)
    mod = t.__module__
    if mod == "builtins":
        return t.__qualname__
    if mod.startswith("torch.") and t.__qualname__ == "Tensor":
        mod = "torch"
    return f"{mod}.{t.__qualname__}"


def _draw(args, namespace, walk, recording):
    from .. import Tensor
    if args.var:
        if args.var not in namespace:
            print(f"retrograd graph: the script has no global variable '{args.var}'", file=sys.stderr)
            return 2
        target = namespace[args.var]
        if not isinstance(target, Tensor):
            tn = _type_name(target)
            print(f"retrograd graph: '{args.var}' is {'an' if tn[0] in 'aeiou' else 'a'} {tn}, not a retrograd Tensor",
                  file=sys.stderr)
            return 2
        what = args.var
    else:
        target, what = default_target(namespace, walk)
        if target is None:
            print("retrograd graph: the script computed no scalar that requires grad; "
                  "name a tensor with --var NAME", file=sys.stderr)
            return 2
    g = draw(target, namespace, walk, recording, show_saved=args.show_saved)
    try:
        g.save(args.output)
    except OSError as e:
        print(f"retrograd graph: {e.strerror or e}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"retrograd graph: {e}", file=sys.stderr)
        return 2
    nt = len(g.tensor_nodes())
    nf = len(g.function_nodes())
    walked = f", {len(g.trace)} backward steps" if g.trace is not None else ""
    print(f"wrote {args.output}: graph of {what} ({nt} tensors, {nf} functions{walked})")
    return 0
