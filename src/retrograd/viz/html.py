"""The graph as one self-contained HTML page (no network): the SVG drawing, the node
details as JSON, and the script (page.js) and style (page.css) beside this file."""
import json
import os
from xml.sax.saxutils import escape

from .svg import render_svg, STYLE

__all__ = ["to_html"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def _asset(name):
    with open(os.path.join(_HERE, name), encoding="utf-8") as f:
        return f.read()


def _legend():
    items = [("leaf", "leaf tensor"), ("intermediate", "intermediate"), ("output", "output"),
             ("function", "backward function"), ("saved", "saved tensor")]
    return "".join(f'<span style="background:{STYLE[k][0]};border-color:{STYLE[k][1]}"></span>{v}'
                   for k, v in items)


def to_html(g, max_nodes=None, title="retrograd graph"):
    full = g
    if max_nodes is not None:
        g = g.fold(max_nodes)
    svg = render_svg(g, interactive=True)
    steps = g.trace_steps() if g.trace is not None else []
    data = {
        "nodes": {n.id: n.details() for n in g.nodes.values()},
        "groups": g.groups,
        "trace": steps,
    }
    blob = json.dumps(data).replace("</", "<\\/").replace("<!--", "<\\!--")
    nt = sum(1 for n in full.nodes.values() if n.kind == "tensor")
    nf = sum(1 for n in full.nodes.values() if n.kind == "function")
    summary = f"{nt} tensors, {nf} functions, {len(full.edges)} edges"
    if g is not full:
        summary += f" (folded into {len(g.nodes)} boxes)"
    trace_bar = ""
    trace_side = ""
    if steps:
        trace_bar = ('<span style="margin-left:14px">Backward:</span>'
                     '<button id="rg-prev">Prev</button><button id="rg-next">Next</button>'
                     '<button id="rg-play">Play</button><span id="rg-step-label"></span>')
        trace_side = '<h3>Backward step</h3><div id="rg-step"></div>'
    groups_side = '<h3>Modules</h3><div id="rg-groups"></div>' if data["groups"] else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{escape(title)}</title>
<style>{_asset("page.css")}</style>
</head><body>
<div id="rg-bar"><span class="rg-title">{escape(title)}</span><span>{escape(summary)}</span>
<button id="rg-fit">Fit</button><button id="rg-zin">+</button><button id="rg-zout">&minus;</button>
<button id="rg-build" title="replay the order in which the program created the nodes">Build</button>
<input id="rg-find" type="search" placeholder="find a node (Enter)" size="18">
{trace_bar}<span class="rg-legend">{_legend()}</span></div>
<div id="rg-main"><div id="rg-canvas">
{svg}</div>
<div id="rg-side">{trace_side}<h3>Details</h3><div id="rg-details">Click a node to see its details.</div>
{groups_side}</div></div>
<script type="application/json" id="rg-data">{blob}</script>
<script>{_asset("page.js")}</script>
</body></html>
"""
