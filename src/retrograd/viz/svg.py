"""The graph drawn: Graphviz DOT text, and SVG from the layout in ``layout.py``."""
import shutil
import subprocess
from xml.sax.saxutils import escape

from .layout import layout, compound_layout

__all__ = ["to_dot", "to_svg", "node_size", "STYLE"]

CHAR_W = 7.0
LINE_H = 15.0
PAD_X = 10.0
PAD_Y = 7.0

# kind/role -> (fill, stroke); tensors are boxes, functions rounded boxes.
STYLE = {
    "leaf": ("#cfe2ff", "#3d7bd9"),
    "intermediate": ("#ffffff", "#8a8a8a"),
    "output": ("#c9f0c9", "#2e8b57"),
    "function": ("#f1f1f1", "#5f5f5f"),
    "accumulate": ("#e7e7f7", "#6b6bb0"),
    "saved": ("#ffe9c7", "#e09b3d"),
    "freed": ("#eeeeee", "#9a9a9a"),
    "fold": ("#eadcff", "#7a4cc2"),
}


def _style_key(n):
    if n.kind == "tensor":
        return n.role or "intermediate"
    if n.kind == "function":
        return "accumulate" if n.label == "AccumulateGrad" else "function"
    if n.kind == "saved":
        return "freed" if (n.extra or {}).get("freed") else "saved"
    return "fold"


def _lines(n):
    return [ln.replace("torch.", "") for ln in n.lines]


def node_size(n):
    lines = _lines(n)
    w = max(len(s) for s in lines) * CHAR_W + 2 * PAD_X
    return (max(w, 40.0), len(lines) * LINE_H + 2 * PAD_Y)


# --- DOT ----------------------------------------------------------------------------------

def _dot_str(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(g):
    out = ["digraph retrograd {",
           "  rankdir=TB;",
           '  node [fontname="Helvetica", fontsize=11, shape=box, style="filled"];',
           '  edge [arrowsize=0.7];']
    tree = {}          # group path -> [node lines]; nested through the paths
    for n in g.nodes.values():
        fill, stroke = STYLE[_style_key(n)]
        style = "filled,rounded" if n.kind in ("function", "fold") else "filled"
        if n.kind == "saved":
            style = "filled,dashed"
        line = (f"  {n.id} [label={_dot_str(chr(10).join(_lines(n)))}, fillcolor={_dot_str(fill)}, "
                f"color={_dot_str(stroke)}, style={_dot_str(style)}];")
        tree.setdefault(n.group or "", []).append(line)
    paths = sorted(p for p in tree if p)
    # Every ancestor of a group is a cluster too.
    allp = set()
    for p in paths:
        parts = p.split(".")
        for i in range(1, len(parts) + 1):
            allp.add(".".join(parts[:i]))
    children = {}
    for p in sorted(allp):
        parent = p.rpartition(".")[0]
        children.setdefault(parent, []).append(p)
    cid = [0]

    def emit(path, indent):
        # Iterative over the group tree (shallow in practice, but no recursion anyway).
        stack = [(path, indent, False)]
        while stack:
            p, ind, closing = stack.pop()
            if closing:
                out.append(" " * ind + "}")
                continue
            if p:
                cid[0] += 1
                out.append(" " * ind + f"subgraph cluster_{cid[0]} {{")
                out.append(" " * ind + f"  label={_dot_str(_group_label(g, p))}; style=\"rounded,dashed\"; "
                           "color=\"#999999\"; fontsize=10;")
                stack.append((p, ind, True))
            inner = ind + 2 if p else ind
            for line in tree.get(p, []):
                out.append(" " * (inner - 2) + line)
            for c in reversed(children.get(p, [])):
                stack.append((c, inner, False))
    emit("", 2)
    for a, b, k in g.edges:
        attr = ' [style=dashed, color="#e09b3d"]' if k == "saved" else ""
        out.append(f"  {a} -> {b}{attr};")
    out.append("}")
    return "\n".join(out) + "\n"


# --- SVG ----------------------------------------------------------------------------------

def _path_d(pts):
    """A smooth path through the points, vertical tangents at each point."""
    (x0, y0) = pts[0]
    d = [f"M{x0:.1f},{y0:.1f}"]
    for (x1, y1) in pts[1:]:
        my = (y0 + y1) / 2
        d.append(f"C{x0:.1f},{my:.1f} {x1:.1f},{my:.1f} {x1:.1f},{y1:.1f}")
        x0, y0 = x1, y1
    return " ".join(d)


def _clip(pts, lay, a, b):
    """Start and end the polyline on the boxes' borders (top/bottom)."""
    pts = list(pts)
    if len(pts) < 2:
        return pts
    xa, ya = pts[0]
    wa, ha = lay.size[a]
    xb, yb = pts[-1]
    wb, hb = lay.size[b]
    if pts[1][1] >= ya:
        pts[0] = (xa, ya + ha / 2)
    else:
        pts[0] = (xa, ya - ha / 2)
    if pts[-2][1] <= yb:
        pts[-1] = (xb, yb - hb / 2 - 2)
    else:
        pts[-1] = (xb, yb + hb / 2 + 2)
    return pts


CSS = """
.rg-node text{font:12px Helvetica,Arial,sans-serif;fill:#222;pointer-events:none}
.rg-node .rg-sub{fill:#555;font-size:11px}
.rg-edge{fill:none;stroke:#777;stroke-width:1.3}
.rg-edge.saved{stroke:#e09b3d;stroke-dasharray:4 3}
.rg-group rect{fill:#8080ff;fill-opacity:0.05;stroke:#9999cc;stroke-dasharray:5 3}
.rg-group text{font:11px Helvetica,Arial,sans-serif;fill:#55558a}
.rg-fold text{font:12px Helvetica,Arial,sans-serif}
"""


def _group_label(g, path):
    kind = getattr(g, "group_kinds", {}).get(path)
    return f"{path} ({kind})" if kind and kind != path.rpartition(".")[2] else path


def _svg_layout(g):
    ids = list(g.nodes)
    sizes = {nid: node_size(g.nodes[nid]) for nid in ids}
    groups = {nid: g.nodes[nid].group for nid in ids if g.nodes[nid].group}
    edges = [(a, b) for a, b, _ in g.edges]
    if groups:
        return compound_layout(ids, sizes, edges, groups)
    return layout(ids, sizes, edges)


def render_svg(g, lay=None, interactive=False):
    """SVG text for ``g`` (already folded) with layout ``lay``."""
    if lay is None:
        lay = _svg_layout(g)
    gboxes = lay.boxes
    minx = min([b[0] for b in gboxes.values()] + [0.0])
    miny = min([b[1] for b in gboxes.values()] + [0.0])
    dx, dy = (8 - minx if minx < 8 else 0.0), (8 - miny if miny < 8 else 0.0)
    W = max([lay.width] + [b[2] + 8 for b in gboxes.values()]) + dx
    H = max([lay.height] + [b[3] + 8 for b in gboxes.values()]) + dy
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="rg-graph" width="{W:.0f}" height="{H:.0f}" '
           f'viewBox="0 0 {W:.0f} {H:.0f}">',
           "<defs><marker id=\"rg-arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"9\" "
           "markerHeight=\"9\" markerUnits=\"userSpaceOnUse\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#777\"/>"
           "</marker></defs>",
           f"<style>{CSS}</style>",
           f'<g id="rg-viewport"><g transform="translate({dx:.1f},{dy:.1f})">']
    out.append('<g class="rg-groups">')
    for k in sorted(gboxes, key=lambda k: k.count(".")):
        x0, y0, x1, y1 = gboxes[k]
        out.append(f'<g class="rg-group" data-group="{escape(k, {chr(34): "&quot;"})}">'
                   f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" height="{y1 - y0:.1f}" rx="6"/>'
                   f'<text x="{x0 + 6:.1f}" y="{y0 + 12:.1f}">{escape(_group_label(g, k))}</text></g>')
    out.append("</g>")
    out.append('<g class="rg-edges">')
    for (a, b, k), pts in zip(g.edges, lay.paths):
        pts = _clip(pts, lay, a, b)
        out.append(f'<path class="rg-edge {k}" data-src="{a}" data-dst="{b}" d="{_path_d(pts)}" '
                   'marker-end="url(#rg-arrow)"/>')
    out.append("</g>")
    out.append('<g class="rg-nodes">')
    for n in g.nodes.values():
        x, y = lay.pos[n.id]
        w, h = lay.size[n.id]
        key = _style_key(n)
        fill, stroke = STYLE[key]
        rx = 8 if n.kind in ("function", "fold") else 2
        dash = ' stroke-dasharray="4 3"' if n.kind == "saved" else ""
        sw = 2.2 if n.kind == "fold" or n.role == "output" else 1.2
        grp = f' data-group="{escape(n.group, {chr(34): "&quot;"})}"' if n.group else ""
        out.append(f'<g class="rg-node {n.kind} {key}" data-id="{n.id}"{grp}>')
        out.append(f'<title>{escape(" | ".join(_lines(n)))}</title>')
        out.append(f'<rect x="{x - w / 2:.1f}" y="{y - h / 2:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{rx}" '
                   f'fill="{fill}" stroke="{stroke}" stroke-width="{sw}"{dash}/>')
        lines = _lines(n)
        ty = y - h / 2 + PAD_Y + LINE_H * 0.78
        for i, s in enumerate(lines):
            cls = ' class="rg-sub"' if i else ""
            deco = ' text-decoration="line-through"' if key == "freed" else ""
            weight = ' font-weight="bold"' if i == 0 and n.kind == "tensor" and n.name else ""
            out.append(f'<text x="{x:.1f}" y="{ty:.1f}" text-anchor="middle"{cls}{deco}{weight}>{escape(s)}</text>')
            ty += LINE_H
        out.append("</g>")
    out.append("</g>")
    if interactive:
        # Boxes drawn over a group when it is collapsed (hidden until then).
        out.append('<g class="rg-collapsed">')
        for k in sorted(gboxes, key=lambda k: -k.count(".")):
            x0, y0, x1, y1 = gboxes[k]
            cnt = g.groups.get(k, 0)
            label = f"{_group_label(g, k)}: {cnt} nodes"
            out.append(f'<g class="rg-fold" data-group="{escape(k, {chr(34): "&quot;"})}" style="display:none">'
                       f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" height="{y1 - y0:.1f}" rx="8" '
                       f'fill="{STYLE["fold"][0]}" stroke="{STYLE["fold"][1]}" stroke-width="2"/>'
                       f'<text x="{(x0 + x1) / 2:.1f}" y="{(y0 + y1) / 2 + 4:.1f}" text-anchor="middle">'
                       f'{escape(label)}</text></g>')
        out.append("</g>")
    out.append("</g></g></svg>")
    return "\n".join(out) + "\n"


def dot_available():
    return shutil.which("dot") is not None


def to_svg(g, engine="python", max_nodes=None):
    if max_nodes is not None:
        g = g.fold(max_nodes)
    if engine == "python":
        return render_svg(g)
    if engine == "dot":
        exe = shutil.which("dot")
        if exe is None:
            raise RuntimeError("to_svg(engine='dot') needs Graphviz's 'dot' program, which is not "
                               "installed (e.g. apt-get install graphviz); engine='python' needs nothing")
        r = subprocess.run([exe, "-Tsvg"], input=to_dot(g), capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"dot failed: {r.stderr.strip()}")
        return r.stdout
    raise ValueError(f"unknown engine '{engine}': use 'python' or 'dot'")
