"""Runs one playground program and draws its graph: the same code in the browser (Pyodide) and
in CPython, so that the two can be compared line for line.

The program runs as ``__main__`` with ``import torch`` resolving to retrograd (the import hook
of ``retrograd run``), module calls recorded, and the last backward walk kept; afterwards the
graph of the last backward's root (or of the newest scalar that requires grad) is drawn as
``retrograd.viz``'s HTML page, with the walk as a step-through and the order in which the
program created the nodes.
"""
import builtins
import sys
import time
import traceback
import warnings

__all__ = ["run"]


def run(code, filename="<playground>", draw=True, max_nodes=None):
    """Run ``code``; return {"ok", "error", "seconds", "graph" (HTML or None), "graph_summary"}.

    Output goes to ``sys.stdout`` / ``sys.stderr`` as the program prints it."""
    from ..autograd import engine
    from ..cli.graph import _LastWalk
    from ..cli.run import torch_aliases, _name_missing_tensor_method
    from .. import viz

    walk = _LastWalk(keep_steps=True)
    recording = viz.record_modules()
    namespace = {"__name__": "__main__", "__file__": filename, "__builtins__": builtins}
    result = {"ok": True, "error": None, "graph": None, "graph_summary": ""}
    engine.tracers.append(walk)
    t0 = time.perf_counter()
    try:
        with torch_aliases(), recording, warnings.catch_warnings():
            # warnings are part of the program's output, printed as Python prints them
            # (whatever the host, a test runner included, does with warnings otherwise)
            warnings.simplefilter("default")
            warnings.showwarning = _show_warning
            try:
                exec(compile(code, filename, "exec"), namespace)
            except SystemExit as e:
                if e.code not in (None, 0):
                    result.update(ok=False, error=f"SystemExit: {e.code}")
            except BaseException as e:  # noqa: B036  (the program's error is the output)
                e = _name_missing_tensor_method(e)
                te = traceback.TracebackException(type(e), e, e.__traceback__)
                te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename == filename])
                result.update(ok=False, error="".join(te.format()))
    finally:
        engine.tracers.remove(walk)
        result["seconds"] = time.perf_counter() - t0
    sys.stdout.flush()
    if draw:
        try:
            result.update(_draw(namespace, walk, recording, max_nodes))
        except Exception as e:  # a drawing problem must not hide the program's output
            result["graph_summary"] = f"no graph: {type(e).__name__}: {e}"
    return result


def _show_warning(message, category, filename, lineno, file=None, line=None):
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _draw(namespace, walk, recording, max_nodes):
    from ..cli.graph import default_target, draw
    from ..viz.graph import MAX_DRAWN
    target, what = default_target(namespace, walk)
    if target is None:
        return {"graph": None, "graph_summary": "no graph: nothing computed here requires grad"}
    g = draw(target, namespace, walk, recording)
    nt, nf = len(g.tensor_nodes()), len(g.function_nodes())
    walked = f", {len(g.trace)} backward steps" if g.trace is not None else ""
    html = g.to_html(max_nodes=max_nodes or MAX_DRAWN)
    return {"graph": html, "graph_summary": f"graph of {what}: {nt} tensors, {nf} functions{walked}"}
