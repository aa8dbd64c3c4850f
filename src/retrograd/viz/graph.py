"""The computation graph as data: tensor nodes, function nodes and the edges between them.

``graph(*outputs)`` walks ``grad_fn.next_functions`` from the outputs with an explicit
stack (never recursion) and draws the graph in the direction of computation:

    x -> AccumulateGrad -> PowBackward0 -> y -> AddBackward0 -> z

A leaf comes before its AccumulateGrad; every other tensor sits after the function
that made it. The graph does not hold intermediate tensors (only their ``grad_fn``
nodes do), so a tensor node is drawn from its node's output metadata (shape, dtype);
tensors the caller names (the outputs, ``params``, ``labels``, or the caller's local
variables) carry their values and gradients.
"""
import os
import sys

import numpy as np

from .._tensor import Tensor
from .. import _dtype as D
from ..autograd.graph import Node, AccumulateGrad, _RELEASED
from ..autograd.tracing import node_name, creation_order, format_values

__all__ = ["graph", "Graph", "GNode"]

# Tensors up to this many elements show their values (and grad) in their box.
BOX_VALUES = 4
# Above this many nodes, the drawings (SVG, HTML) fold the graph by module.
MAX_DRAWN = 1500

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class GNode:
    """One node of a Graph.

    kind: "tensor", "function", "saved" or "fold"; role (tensors): "leaf",
    "intermediate" or "output". ``obj`` is the Tensor or autograd Node it stands for
    (None when only metadata is known), read when details are asked for, so that a
    graph drawn after backward shows the gradients.
    """
    __slots__ = ("id", "kind", "label", "role", "name", "shape", "dtype", "group", "seq",
                 "obj", "count", "extra")

    def __init__(self, id, kind, label, role=None, name=None, shape=None, dtype=None,
                 group=None, seq=0, obj=None, count=1, extra=None):
        self.id = id
        self.kind = kind
        self.label = label
        self.role = role
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.group = group
        self.seq = seq
        self.obj = obj
        self.count = count
        self.extra = extra

    def __repr__(self):
        return f"GNode({self.id!r}, {self.kind!r}, {self.label!r})"

    @property
    def lines(self):
        """The text drawn in the node's box."""
        if self.kind == "tensor":
            first = self.name if self.name else ("leaf" if self.role == "leaf" else
                                                  "output" if self.role == "output" else "")
            out = [first] if first else []
            out.append(f"{_shape_str(self.shape)} {self.dtype or ''}".strip())
            o = self.obj
            if isinstance(o, Tensor) and o._data.size <= BOX_VALUES:
                out.append("= " + format_values(o._data))
                if o._grad is not None:
                    out.append("grad " + format_values(o._grad._data))
            return out
        if self.kind == "saved":
            return [self.label, _shape_str(self.shape)] if self.shape is not None else [self.label]
        if self.kind == "fold":
            return [self.label, f"{self.count} nodes"]
        return [self.label]

    def details(self):
        """Everything known about the node, as plain JSON-able values."""
        d = {"id": self.id, "kind": self.kind, "label": self.label, "order": self.seq}
        if self.role:
            d["role"] = self.role
        if self.name:
            d["name"] = self.name
        if self.shape is not None:
            d["shape"] = list(self.shape)
        if self.dtype:
            d["dtype"] = self.dtype
        if self.group:
            d["module"] = self.group
        if self.kind == "fold":
            d["count"] = self.count
        o = self.obj
        if self.kind == "tensor" and isinstance(o, Tensor):
            d["requires_grad"] = bool(o._requires_grad)
            d["values"] = _values(o._data)
            g = o._grad
            if g is not None:
                d["grad"] = _values(g._data)
            if o._grad_fn is not None:
                d["grad_fn"] = node_name(o._grad_fn)
        elif self.kind == "function" and isinstance(o, Node):
            d["seq"] = o._sequence_nr()
            d["saved"] = _saved_info(o)
            src = source_line(o)
            if src:
                d["source"] = src
            if isinstance(o, AccumulateGrad):
                v = o.variable
                if v is not None and v._grad is not None:
                    d["grad"] = _values(v._grad._data)
        elif self.kind == "saved":
            d.update(self.extra or {})
        if self.extra and self.kind != "saved":
            d.update(self.extra)
        return d


class Graph:
    """Nodes (``GNode``) and edges ``(src_id, dst_id, kind)``, kind "data" or "saved"."""

    def __init__(self):
        self.nodes = {}
        self.edges = []
        self.trace = None
        self._fn_ids = {}      # id(autograd Node) -> node id
        self._t_ids = {}       # (id(Node), output_nr) -> tensor node id (leaves: (AccumulateGrad, 0))
        self._keep = []        # the autograd nodes, so their ids stay valid
        self.group_kinds = {}  # module path -> the module's class name

    # --- building --------------------------------------------------------------------
    def _add(self, kind, label, **kw):
        nid = f"n{len(self.nodes)}"
        n = GNode(nid, kind, label, **kw)
        self.nodes[nid] = n
        return n

    def _edge(self, a, b, kind="data"):
        self.edges.append((a, b, kind))

    # --- queries ---------------------------------------------------------------------
    def tensor_nodes(self, role=None):
        return [n for n in self.nodes.values() if n.kind == "tensor" and (role is None or n.role == role)]

    def function_nodes(self, name=None):
        return [n for n in self.nodes.values() if n.kind == "function" and (name is None or n.label == name)]

    def node_of(self, fn):
        """The GNode of an autograd Node (a ``grad_fn``), or None."""
        nid = self._fn_ids.get(id(fn))
        return None if nid is None else self.nodes[nid]

    @property
    def groups(self):
        """Every module path with the number of nodes inside it (nested paths included)."""
        counts = {}
        for n in self.nodes.values():
            g = n.group
            while g:
                counts[g] = counts.get(g, 0) + n.count
                g = g.rpartition(".")[0]
        return dict(sorted(counts.items()))

    def __len__(self):
        return len(self.nodes)

    def __repr__(self):
        nt = sum(1 for n in self.nodes.values() if n.kind == "tensor")
        nf = sum(1 for n in self.nodes.values() if n.kind == "function")
        return f"<Graph: {nt} tensor nodes, {nf} function nodes, {len(self.edges)} edges>"

    # --- folding ---------------------------------------------------------------------
    def fold(self, max_nodes=MAX_DRAWN):
        """A smaller Graph: module groups (then runs of consecutive nodes) drawn as one
        node each, with the count of nodes folded into it. Returns self when small."""
        if len(self.nodes) <= max_nodes:
            return self
        return _fold(self, max_nodes)

    # --- output ----------------------------------------------------------------------
    def to_dot(self):
        """Graphviz DOT text (``dot -Tsvg`` draws it)."""
        from .svg import to_dot
        return to_dot(self)

    def to_svg(self, engine="python", max_nodes=MAX_DRAWN):
        """An SVG drawing. ``engine="python"`` lays the graph out here (no outside
        program); ``engine="dot"`` runs Graphviz's ``dot`` (it must be installed)."""
        from .svg import to_svg
        return to_svg(self, engine=engine, max_nodes=max_nodes)

    def to_html(self, max_nodes=MAX_DRAWN):
        """A self-contained HTML page: pan, zoom, details on click, module groups, and
        the backward trace as a step-through when the graph has one."""
        from .html import to_html
        return to_html(self, max_nodes=max_nodes)

    def to_json(self):
        import json
        # Indented for reading when small; compact (and C-encoded, far faster) when large.
        if len(self.nodes) <= 2000:
            return json.dumps(self.to_dict(), indent=1)
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def to_dict(self):
        return {
            "nodes": [n.details() for n in self.nodes.values()],
            "edges": [{"src": a, "dst": b, "kind": k} for a, b, k in self.edges],
            "groups": self.groups,
            "trace": None if self.trace is None else self.trace_steps(),
        }

    def trace_steps(self):
        """The attached backward trace as steps referring to this graph's node ids."""
        from .trace import steps_for
        return steps_for(self, self.trace)

    def save(self, path, engine="python"):
        """Write the graph; the format follows the extension: .svg, .dot (.gv), .html, .json."""
        path = os.fspath(path)
        ext = os.path.splitext(path)[1].lower()
        if ext == ".svg":
            text = self.to_svg(engine=engine)
        elif ext in (".dot", ".gv"):
            text = self.to_dot()
        elif ext in (".html", ".htm"):
            text = self.to_html()
        elif ext == ".json":
            text = self.to_json()
        else:
            raise ValueError(f"cannot save a graph as '{ext or path}': use a path ending in "
                             ".svg, .dot, .html or .json")
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise type(e)(e.errno, f"cannot write the graph to '{path}': {e.strerror}") from e
        return path

    # --- Jupyter ---------------------------------------------------------------------
    def _repr_svg_(self):
        return self.to_svg()

    def _repr_html_(self):
        import html as _h
        page = self.to_html()
        return (f'<iframe srcdoc="{_h.escape(page, quote=True)}" style="width:100%;height:600px;'
                'border:1px solid #ddd" sandbox="allow-scripts"></iframe>')


# --- values and details -------------------------------------------------------------------

def _shape_str(shape):
    if shape is None:
        return ""
    return "(" + ", ".join(str(s) for s in shape) + ")"


def _dtype_str(npdt):
    try:
        return str(D._FROM_NP[np.dtype(npdt)])
    except (KeyError, TypeError):
        return str(npdt)


def _values(a):
    """Values of a small array as text; a summary for a large one."""
    return format_values(a)


def _saved_info(fn):
    s = fn._saved
    if s is None:
        return []
    if s is _RELEASED:
        return [{"freed": True}]
    names = ()
    try:
        names = fn._saved_names or ()
    except Exception:
        pass
    out = []
    for i, item in enumerate(s):
        name = names[i] if i < len(names) else f"saved[{i}]"
        packed = hasattr(item, "packed") and hasattr(item, "unpack")
        if packed:
            item = item.packed                 # what a saved_tensors_hooks pack returned
        data = getattr(item, "_data", None)
        if data is None and type(item).__name__ == "SavedOutput":
            data = item.data
        if data is not None and hasattr(data, "shape"):
            info = {"name": name, "shape": list(data.shape), "dtype": _dtype_str(data.dtype),
                    "values": _values(data)}
            if packed:
                info["packed"] = True
            out.append(info)
        elif packed or item is None:
            out.append({"name": name, "value": f"packed by saved_tensors_hooks ({type(item).__name__})"})
        else:
            out.append({"name": name, "value": repr(item)[:80]})
    return out


def source_line(fn):
    """The user's line that created ``fn`` (recorded under anomaly detection), or None."""
    tb = getattr(fn, "_trace", None)
    if not tb:
        return None
    for frame in reversed(tb):
        first = frame.strip().splitlines()[0] if frame.strip() else ""
        if not first.startswith("File "):
            continue
        path = first.split('"')[1] if '"' in first else ""
        if os.path.abspath(path).startswith(_PKG_DIR + os.sep):
            continue
        return frame.strip()
    return None


# --- the walk -----------------------------------------------------------------------------

def graph(*outputs, params=None, show_saved=False, labels=None, modules=None, trace=None):
    """The graph that produced ``outputs`` (Tensors, or ``grad_fn`` nodes).

    params: names of tensors, e.g. ``dict(model.named_parameters())``; labels: more
    names ({name: tensor}); show_saved: draw the tensors each function saved for
    backward; modules: a ``record_modules`` recording (the latest one by default) to
    group nodes by the module that made them; trace: a backward trace to step through.
    """
    if len(outputs) == 1 and isinstance(outputs[0], (list, tuple)):
        outputs = tuple(outputs[0])
    # Named tensors by what they stand for in the graph: a leaf by identity, any other
    # tensor by (grad_fn, output_nr). Names given (labels, params) come first, then the
    # caller's local variables.
    by_leaf, by_out = {}, {}
    for src in (labels, params):
        if src is None:
            continue
        for k, t in (src.items() if isinstance(src, dict) else src):
            if isinstance(t, Tensor):
                _index_tensor(t, str(k), by_leaf, by_out)
    frame = sys._getframe(1)
    try:
        for k, v in list(frame.f_locals.items()):
            if isinstance(v, Tensor) and not k.startswith("_"):
                _index_tensor(v, k, by_leaf, by_out, weak=True)
    finally:
        del frame

    g = Graph()
    g.trace = trace
    tnode_of = {}          # (id(fn), nr) -> tensor GNode id for non-leaf outputs
    roots = []
    leaf_outputs = []
    for o in outputs:
        if isinstance(o, Tensor):
            if o._grad_fn is None:
                key = ("leaf", id(o))
                if key in tnode_of:
                    continue
                if o._requires_grad and any(isinstance(x, Tensor) and x._grad_fn is not None
                                            for x in outputs):
                    # Drawn with its AccumulateGrad if the other outputs' graph holds it.
                    leaf_outputs.append(o)
                    continue
                name, _ = by_leaf.get(id(o), (None, o))
                n = g._add("tensor", name or "tensor", role="leaf" if o._requires_grad else "output",
                           name=name, shape=tuple(o._data.shape), dtype=_dtype_str(o._data.dtype), obj=o)
                tnode_of[key] = n.id
            else:
                roots.append((o._grad_fn, o._output_nr, o))
        elif isinstance(o, Node):
            if isinstance(o, AccumulateGrad):
                roots.append((o, None, None))
            else:
                n_out = len(o._out_meta or ())
                roots.extend([(o, nr, None) for nr in range(n_out)] or [(o, None, None)])
        else:
            raise TypeError(f"graph() expects Tensors or grad_fn nodes, but got {type(o).__name__}")

    # Iterative walk: every function node once.
    fns = []
    seen = set()
    stack = [r[0] for r in roots]
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        fns.append(fn)
        for nf, _ in fn.next_functions:
            if nf is not None and id(nf) not in seen:
                stack.append(nf)
    fns.sort(key=creation_order)
    if trace is not None and len(trace) and not any(id(st.node) in seen for st in trace.steps):
        raise ValueError("the trace recorded the backward of another graph: none of its nodes is in "
                         "this one (draw the tensor backward() was called on)")
    groups = _module_groups(fns, modules)

    def tensor_for(fn, nr, role):
        key = (id(fn), nr)
        nid = tnode_of.get(key)
        if nid is not None:
            return nid
        if isinstance(fn, AccumulateGrad):
            v = fn.variable
            name, obj = by_leaf.get(id(v), (None, v)) if v is not None else (None, None)
            shape, npdt = fn._out_meta[0]
            n = g._add("tensor", name or "leaf", role="leaf", name=name, shape=tuple(shape),
                       dtype=_dtype_str(npdt), group=groups.get(id(fn)), seq=creation_order(fn), obj=obj)
            tnode_of[key] = n.id
            g._edge(n.id, g._fn_ids[id(fn)])
            return n.id
        name, obj = by_out.get(key, (None, None))
        meta = fn._out_meta[nr] if fn._out_meta is not None and nr < len(fn._out_meta) else (None, None)
        shape = tuple(meta[0]) if meta[0] is not None else (tuple(obj._data.shape) if obj is not None else None)
        dt = _dtype_str(meta[1]) if meta[1] is not None else None
        n = g._add("tensor", name or role, role=role, name=name, shape=shape, dtype=dt,
                   group=groups.get(id(fn)), seq=creation_order(fn), obj=obj)
        tnode_of[key] = n.id
        g._edge(g._fn_ids[id(fn)], n.id)
        return n.id

    for fn in fns:
        n = g._add("function", node_name(fn), group=groups.get(id(fn)), seq=creation_order(fn), obj=fn)
        g._fn_ids[id(fn)] = n.id
    g._keep = fns
    # Outputs first, so that they are named and styled as outputs.
    for fn, nr, o in roots:
        if nr is None:
            continue
        nid = tensor_for(fn, nr, "output")
        t = g.nodes[nid]
        if t.obj is None:
            t.obj = o
        t.role = "output"
    for fn in fns:
        fid = g._fn_ids[id(fn)]
        if isinstance(fn, AccumulateGrad):
            tensor_for(fn, 0, "leaf")
        for nf, nr in fn.next_functions:
            if nf is None:
                continue
            if isinstance(nf, AccumulateGrad):
                g._edge(g._fn_ids[id(nf)], fid)
            else:
                g._edge(tensor_for(nf, nr, "intermediate"), fid)
        if show_saved:
            _add_saved(g, fn, fid, groups.get(id(fn)))
    for o in leaf_outputs:
        acc = o._grad_acc() if o._grad_acc is not None else None
        nid = tnode_of.get((id(acc), 0)) if acc is not None else None
        if nid is None:
            name, _ = by_leaf.get(id(o), (None, o))
            n = g._add("tensor", name or "leaf", role="leaf", name=name, shape=tuple(o._data.shape),
                       dtype=_dtype_str(o._data.dtype), obj=o)
            tnode_of[("leaf", id(o))] = n.id
    _group_leaves(g)
    g._t_ids = tnode_of
    g.group_kinds = groups.get(_KINDS, {})
    return g


def _index_tensor(t, name, by_leaf, by_out, weak=False):
    if name is None:
        return
    if t._grad_fn is None:
        if not (weak and id(t) in by_leaf):
            by_leaf[id(t)] = (name, t)
    else:
        key = (id(t._grad_fn), t._output_nr)
        if not (weak and key in by_out):
            by_out[key] = (name, t)


def _add_saved(g, fn, fid, group):
    s = fn._saved
    if s is None:
        return
    if s is _RELEASED:
        n = g._add("saved", "saved tensors freed", group=group, seq=creation_order(fn), extra={"freed": True})
        g._edge(n.id, fid, "saved")
        return
    for info in _saved_info(fn):
        if "shape" not in info:
            continue
        n = g._add("saved", info["name"], shape=tuple(info["shape"]), dtype=info["dtype"], group=group,
                   seq=creation_order(fn), extra={"values": info["values"], "freed": False})
        g._edge(n.id, fid, "saved")


def _group_leaves(g):
    """A leaf (and its AccumulateGrad) goes in the innermost module holding every
    function that uses it: a layer's weight in the layer, a weight shared by two
    blocks of a module in that module, an input used outside any module in none."""
    users = {}
    for a, b, k in g.edges:
        na = g.nodes[a]
        if na.kind == "function" and isinstance(na.obj, AccumulateGrad):
            users.setdefault(a, []).append(g.nodes[b].group)
    for a, gs in users.items():
        common = gs[0]
        for x in gs[1:]:
            if not common or not x:
                common = None
                break
            common = _common_path(common, x)
        if common and g.nodes[a].group is None:
            g.nodes[a].group = common
    for a, b, k in g.edges:
        na, nb = g.nodes[a], g.nodes[b]
        if na.kind == "tensor" and na.role == "leaf" and nb.kind == "function" and na.group is None:
            na.group = nb.group


def _common_path(a, b):
    pa, pb = a.split("."), b.split(".")
    n = 0
    while n < len(pa) and n < len(pb) and pa[n] == pb[n]:
        n += 1
    return ".".join(pa[:n]) or None


# --- module groups ------------------------------------------------------------------------

_KINDS = "kinds"


def _module_groups(fns, modules):
    """id(fn) -> module path, from the sequence-number ranges a recording kept.

    Ranges nest like the calls that made them; a node goes to the innermost range
    holding its number. A module called more than once in this graph (shared weights,
    a recurrent cell) gets one group per call: ``cell``, ``cell#2``, ...
    """
    if modules is None:
        from .modules import latest
        modules = latest()
    ranges = getattr(modules, "ranges", modules) or []
    if not ranges:
        return {}
    ranges = sorted(ranges)            # (start, end, path)
    parent = [None] * len(ranges)
    stack = []
    for i, (st, en, _) in enumerate(ranges):
        while stack and ranges[stack[-1]][1] < st:
            stack.pop()
        parent[i] = stack[-1] if stack else None
        stack.append(i)
    owner = {}
    stack = []
    ri = 0
    for fn in fns:                     # sorted by sequence number
        if isinstance(fn, AccumulateGrad):
            continue                   # made lazily on first use: placed by its users instead
        s = fn._seq
        while ri < len(ranges) and ranges[ri][0] < s:
            while stack and ranges[stack[-1]][1] < ranges[ri][0]:
                stack.pop()
            stack.append(ri)
            ri += 1
        while stack and ranges[stack[-1]][1] < s:
            stack.pop()
        if stack:
            owner[id(fn)] = stack[-1]
    used = set()
    for i in set(owner.values()):
        while i is not None and i not in used:
            used.add(i)
            i = parent[i]
    eff, taken = {}, {}
    for i in sorted(used):
        path = ranges[i][2]
        p = parent[i]
        if p is None:
            name = path
        else:
            pp = ranges[p][2]
            rel = path[len(pp) + 1:] if path.startswith(pp + ".") else path
            name = f"{eff[p]}.{rel}"
        k = taken.get(name, 0) + 1
        taken[name] = k
        eff[i] = name if k == 1 else f"{name}#{k}"
    kinds = getattr(modules, "kinds", None) or {}
    out = {f: eff[i] for f, i in owner.items()}
    out[_KINDS] = {eff[i]: kinds[ranges[i][2]] for i in used if ranges[i][2] in kinds}
    return out


def _fold(g, max_nodes):
    """Collapse groups (deepest level that fits), then runs of consecutive nodes."""
    nodes = list(g.nodes.values())
    depth_max = max((n.group.count(".") + 1 for n in nodes if n.group), default=0)
    key_of = None
    for depth in range(depth_max, 0, -1):
        keys = {}
        for n in nodes:
            if n.group:
                keys[n.id] = ".".join(n.group.split(".")[:depth])
            else:
                keys[n.id] = n.id
        if len(set(keys.values())) <= max_nodes:
            key_of = keys
            break
    if key_of is None:
        keys = {n.id: (".".join(n.group.split(".")[:1]) if n.group else n.id) for n in nodes}
        if depth_max == 0 or len(set(keys.values())) > max_nodes:
            # Runs of nodes in creation order, folded into buckets.
            order = sorted(nodes, key=lambda n: (n.seq, int(n.id[1:])))
            size = -(-len(order) // max(1, max_nodes // 2))
            keys = {}
            for i, n in enumerate(order):
                keys[n.id] = f"#{i // size}"
        key_of = keys
    f = Graph()
    f.trace = g.trace
    members = {}
    for n in nodes:
        members.setdefault(key_of[n.id], []).append(n)
    new_id = {}
    for key, ms in members.items():
        if len(ms) == 1 and ms[0].id == key:
            n = ms[0]
            c = f._add(n.kind, n.label, role=n.role, name=n.name, shape=n.shape, dtype=n.dtype,
                       group=n.group, seq=n.seq, obj=n.obj, count=n.count, extra=n.extra)
        else:
            seqs = [m.seq for m in ms]
            if key.startswith("#"):
                label = f"ops {min(seqs)}-{max(seqs)}"
                grp = None
            else:
                label = key
                grp = key.rpartition(".")[0] or None
            c = f._add("fold", label, group=grp, seq=min(seqs), count=sum(m.count for m in ms),
                       extra={"folded": _fold_summary(ms)})
        for m in ms:
            new_id[m.id] = c.id
    seen = set()
    for a, b, k in g.edges:
        a2, b2 = new_id[a], new_id[b]
        if a2 != b2 and (a2, b2) not in seen:
            seen.add((a2, b2))
            f._edge(a2, b2, k)
    f.group_kinds = g.group_kinds
    f._fn_ids = {k: new_id[v] for k, v in g._fn_ids.items()}
    f._t_ids = {k: new_id[v] for k, v in g._t_ids.items()}
    f._keep = g._keep
    return f


def _fold_summary(ms):
    counts = {}
    for m in ms:
        counts[m.label] = counts.get(m.label, 0) + 1
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:8]
    return ", ".join(f"{k} x{v}" for k, v in top)
