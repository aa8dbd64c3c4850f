"""See the graph: the computation graph as DOT, SVG, JSON and an interactive HTML page.

    g = retrograd.viz.graph(loss, params=dict(model.named_parameters()))
    g.save("graph.html")          # or .svg, .dot, .json; g.to_svg() needs no outside program

``record_modules`` groups nodes by the module that made them; the backward walk itself
is recorded by ``retrograd.autograd.trace()`` and plays step by step in the HTML page.
"""
from .graph import graph, Graph, GNode  # noqa: F401
from .modules import record_modules, scope  # noqa: F401

__all__ = ["graph", "Graph", "GNode", "record_modules", "scope"]
