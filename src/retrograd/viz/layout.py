"""A layered (Sugiyama-style) layout in plain Python: no outside program.

1. Layers by longest path from the sources (computation flows downwards); a source
   (a leaf) moves down to sit just above its first user.
2. Edges spanning several layers get a dummy point in each layer they cross, so they
   bend around boxes and take part in crossing reduction (up to ``MAX_SPAN`` layers;
   longer ones are drawn as one curve).
3. Crossings are reduced by barycentre sweeps (down, then up, a few rounds), keeping
   the order with fewer crossings.
4. Boxes are placed left to right with a minimum gap, then pulled towards the mean x of
   their neighbours in alternating sweeps; a final left-to-right pass keeps every gap,
   so no two boxes ever overlap.

Module groups (``compound_layout``) are laid out one by one, deepest first, each then
standing as one box in the layout around it; edges enter a box through its top side
and leave through its bottom.

Everything is iterative; a cycle (which autograd graphs never have) is broken rather
than looped on.
"""
__all__ = ["layout", "compound_layout", "Layout"]

H_GAP = 24.0
V_GAP = 46.0
DUMMY_W = 8.0
# Edges longer than this many layers get no bend points: drawn as one curve, they
# keep a leaf used all along a long chain from filling the layout with dummies.
MAX_SPAN = 12


class Layout:
    """Box centres ``pos[id] = (x, y)``, sizes ``size[id] = (w, h)``, one polyline per
    edge (``paths[i]``: list of points, in edge order) and the drawing's ``width``/``height``."""

    def __init__(self, pos, size, paths, width, height, layers):
        self.pos = pos
        self.size = size
        self.paths = paths
        self.width = width
        self.height = height
        self.layers = layers
        self.boxes = {}

    def box(self, nid):
        (x, y), (w, h) = self.pos[nid], self.size[nid]
        return (x - w / 2, y - h / 2, x + w / 2, y + h / 2)


def _layers(ids, succ, pred):
    """Longest-path layering over a topological order (Kahn); cycles broken."""
    indeg = {v: len(pred[v]) for v in ids}
    order = []
    ready = [v for v in ids if indeg[v] == 0]
    ready.reverse()
    done = set()
    remaining = list(ids)
    ri = 0
    while len(order) < len(ids):
        if not ready:
            # A cycle: take the first node not yet placed.
            while remaining[ri] in done:
                ri += 1
            ready.append(remaining[ri])
        v = ready.pop()
        if v in done:
            continue
        done.add(v)
        order.append(v)
        for w in succ[v]:
            if w in done:
                continue
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    rank = {}
    pos = {v: i for i, v in enumerate(order)}
    for v in order:
        r = 0
        for u in pred[v]:
            if pos[u] < pos[v]:
                r = max(r, rank[u] + 1)
        rank[v] = r
    # Sources move down next to their first user.
    for v in order:
        if not pred[v] and succ[v]:
            users = [rank[w] for w in succ[v] if pos[w] > pos[v]]
            if users:
                rank[v] = max(rank[v], min(users) - 1)
    return rank, order, pos


def _crossings(upper, lower, pred_index):
    """Crossings between two adjacent layers (edges from ``upper`` to ``lower``)."""
    upos = {v: i for i, v in enumerate(upper)}
    seq = []
    for v in lower:
        for u in sorted(upos[u] for u in pred_index[v] if u in upos):
            seq.append(u)
    # Count inversions with a Fenwick tree.
    n = len(upper) + 1
    tree = [0] * (n + 1)
    inv = 0
    total = 0
    for x in seq:
        i = x + 1
        s2 = 0
        j = i
        while j > 0:
            s2 += tree[j]
            j -= j & -j
        inv += total - s2
        total += 1
        while i <= n:
            tree[i] += 1
            i += i & -i
    return inv


def layout(ids, sizes, edges, sweeps=4, top=(), bottom=()):
    """Lay out nodes ``ids`` with ``sizes[id] = (w, h)`` and ``edges`` (src, dst) pairs.

    top / bottom: nodes kept in the first / last layer (a group's entry and exit points).
    """
    ids = list(ids)
    succ = {v: [] for v in ids}
    pred = {v: [] for v in ids}
    for a, b in edges:
        if a != b:
            succ[a].append(b)
            pred[b].append(a)
    rank, order, tpos = _layers(ids, succ, pred)
    if top or bottom:
        top, bottom = set(top), set(bottom)
        for v in top:
            rank[v] = 0
        # Nodes fed by an entry point sit below it.
        for v in order:
            if v in top or v in bottom:
                continue
            for u in pred[v]:
                if tpos[u] < tpos[v] and rank[u] + 1 > rank[v]:
                    rank[v] = rank[u] + 1
        last = max((rank[v] for v in ids if v not in bottom and v not in top), default=0)
        for v in bottom:
            rank[v] = max([last] + [rank[u] + 1 for u in pred[v]])
    size = dict(sizes)

    # Dummy points for long edges; edges that go upwards (only from a broken cycle)
    # are drawn straight.
    chains = []
    up = {v: [] for v in ids}          # neighbours in the layer above
    down = {v: [] for v in ids}
    n_dummy = 0
    for a, b in edges:
        if a == b:
            chains.append([a, b])
            continue
        ra, rb = rank[a], rank[b]
        if rb <= ra or rb - ra > MAX_SPAN:
            chains.append([a, b])
            continue
        chain = [a]
        prev = a
        for r in range(ra + 1, rb):
            d = ("d", n_dummy)
            n_dummy += 1
            rank[d] = r
            size[d] = (DUMMY_W, 1.0)
            up[d] = [prev]
            down[d] = []
            down[prev].append(d)
            chain.append(d)
            prev = d
        down[prev].append(b)
        up[b].append(prev)
        chain.append(b)
        chains.append(chain)

    nlayers = max(rank.values(), default=-1) + 1
    layers = [[] for _ in range(nlayers)]
    # Initial order: depth-first from the sinks upwards keeps chains together.
    placed = set()
    for v in reversed(order):
        if v in placed:
            continue
        stack = [v]
        while stack:
            u = stack.pop()
            if u in placed:
                continue
            placed.add(u)
            layers[rank[u]].append(u)
            stack.extend(reversed(up[u]))
    for v in rank:
        if v not in placed:
            placed.add(v)
            layers[rank[v]].append(v)
    for L in layers:
        L.reverse()

    def total_crossings(ls):
        return sum(_crossings(ls[i], ls[i + 1], up) for i in range(len(ls) - 1))

    best = [list(L) for L in layers]
    best_c = total_crossings(best) if len(layers) < 2000 else None
    if best_c:
        for _ in range(sweeps):
            for i in range(1, nlayers):
                _sort_bary(layers[i], layers[i - 1], up)
            for i in range(nlayers - 2, -1, -1):
                _sort_bary(layers[i], layers[i + 1], down)
            c = total_crossings(layers)
            if c < best_c:
                best_c = c
                best = [list(L) for L in layers]
            if c == 0:
                break
        layers = best

    # x: packed left to right, then pulled towards neighbours.
    x = {}
    for L in layers:
        cur = 0.0
        for v in L:
            w = size[v][0]
            x[v] = cur + w / 2
            cur += w + H_GAP
    for it in range(8):
        rng = range(1, nlayers) if it % 2 == 0 else range(nlayers - 2, -1, -1)
        nb = up if it % 2 == 0 else down
        for i in rng:
            _place(layers[i], x, size, nb, both=(up, down) if it >= 6 else None)
    # Shift everything to start at the margin.
    minx = min((x[v] - size[v][0] / 2 for v in x), default=0.0)
    margin = 16.0
    for v in x:
        x[v] += margin - minx
    y = {}
    cur = margin
    for L in layers:
        h = max((size[v][1] for v in L), default=0.0)
        for v in L:
            y[v] = cur + h / 2
        cur += h + V_GAP
    height = cur - V_GAP + margin if layers else 2 * margin
    width = max((x[v] + size[v][0] / 2 for v in x), default=0.0) + margin
    pos = {v: (x[v], y[v]) for v in ids}
    paths = [[(x[p], y[p]) for p in chain] for chain in chains]
    return Layout(pos, {v: size[v] for v in ids}, paths, width, height, [[v for v in L if v in pos] for L in layers])


def _common(a, b):
    pa, pb = a.split("."), b.split(".")
    n = 0
    while n < len(pa) and n < len(pb) and pa[n] == pb[n]:
        n += 1
    return ".".join(pa[:n])


def _sort_bary(layer, fixed, nb):
    """Order ``layer`` by the mean position of each node's neighbours in ``fixed``; a
    node without neighbours keeps its relative place."""
    idx = {v: i for i, v in enumerate(fixed)}
    scale = len(fixed) / max(1, len(layer))
    bary = {}
    for i, v in enumerate(layer):
        ns = [idx[u] for u in nb[v] if u in idx]
        bary[v] = sum(ns) / len(ns) if ns else i * scale
    layer.sort(key=bary.__getitem__)


def _place(layer, x, size, nb, both=None):
    """Move each box towards the mean x of its neighbours, keeping order and gaps."""
    want = []
    for v in layer:
        ns = nb[v] if both is None else both[0][v] + both[1][v]
        want.append(sum(x[u] for u in ns) / len(ns) if ns else x[v])
    n = len(layer)
    if n == 0:
        return
    # Left to right: as near the wish as the left neighbour allows.
    res = [0.0] * n
    for i, v in enumerate(layer):
        w = size[v][0]
        lo = res[i - 1] + size[layer[i - 1]][0] / 2 + H_GAP + w / 2 if i else -1e18
        res[i] = max(want[i], lo)
    # Right to left: pull back towards the wish where there is room, keeping gaps.
    for i in range(n - 2, -1, -1):
        v = layer[i]
        hi = res[i + 1] - size[layer[i + 1]][0] / 2 - H_GAP - size[v][0] / 2
        if res[i] > hi:
            res[i] = hi
    # Restore the left-to-right gaps the right-to-left pass may have broken.
    for i in range(1, n):
        lo = res[i - 1] + size[layer[i - 1]][0] / 2 + H_GAP + size[layer[i]][0] / 2
        if res[i] < lo:
            res[i] = lo
    for i, v in enumerate(layer):
        x[v] = res[i]


# --- groups: a compound layout ---------------------------------------------------------------

LABEL_H = 16.0


def _prefixes(path):
    parts = path.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _lca(a, b):
    if not a or not b:
        return ""
    return _common(a, b)


def compound_layout(ids, sizes, edges, groups):
    """Lay out a graph whose nodes belong to nested groups (``groups[id] = "a.b"``).

    Each group is laid out on its own, deepest first, and then stands as one box in
    the layout of the group around it; so a group's box holds its members and nothing
    else, and boxes never overlap. An edge leaving a group leaves through an exit point
    on the box's bottom side, and one entering comes in through an entry point on its
    top side, routed inside like any other edge. Returns a Layout whose ``boxes[path]``
    are the groups' boxes (x0, y0, x1, y1).
    """
    ids = list(ids)
    gof = {v: (groups.get(v) or "") for v in ids}
    allp = {""}
    for p in set(gof.values()):
        if p:
            allp.update(_prefixes(p))
    children = {p: [] for p in allp}
    for p in allp:
        if p:
            children[p.rpartition(".")[0]].append(p)
    direct = {p: [] for p in allp}
    for v in ids:
        direct[gof[v]].append(v)

    def unit(v, level):
        g = gof[v]
        if g == level:
            return ("n", v)
        rest = g[len(level) + 1:] if level else g
        head = rest.split(".")[0]
        return ("g", f"{level}.{head}" if level else head)

    def depth(p):
        return p.count(".") + 1 if p else 0

    level_edges = {p: [] for p in allp}
    cross_in = {p: [] for p in allp}      # edges entering group p from outside
    cross_out = {p: [] for p in allp}     # edges leaving group p
    for i, (a, b) in enumerate(edges):
        lca = _lca(gof[a], gof[b])
        level_edges[lca].append(i)
        d = depth(lca)
        for q in (_prefixes(gof[b]) if gof[b] else []):
            if depth(q) > d:
                cross_in[q].append(i)
        for q in (_prefixes(gof[a]) if gof[a] else []):
            if depth(q) > d:
                cross_out[q].append(i)

    # done[path] = (w, h, pos, ports, segs): positions relative to the group's content;
    # ports[("in"|"out", i)] = point; segs[i] = {"out": [(depth, pts)], "in": [...], "mid": pts}
    done = {}
    for P in sorted(allp, key=lambda p: -depth(p)):
        units, usize = [], {}
        for v in direct[P]:
            u = ("n", v)
            units.append(u)
            usize[u] = sizes[v]
        for c in sorted(children[P]):
            u = ("g", c)
            units.append(u)
            usize[u] = (done[c][0], done[c][1] + LABEL_H)
        tops = [("in", i) for i in cross_in[P]]
        bottoms = [("out", i) for i in cross_out[P]]
        for u in tops + bottoms:
            units.append(u)
            usize[u] = (DUMMY_W, 1.0)
        uedges, emap = [], {}

        def add(key, i):
            j = emap.get(key)
            if j is None:
                j = emap[key] = len(uedges)
                uedges.append(key)
            return j
        routes = []               # (edge index, kind, contracted edge index)
        for i in level_edges[P]:
            a, b = edges[i]
            routes.append((i, "mid", add((unit(a, P), unit(b, P)), i)))
        for i in cross_in[P]:
            routes.append((i, "in", add((("in", i), unit(edges[i][1], P)), i)))
        for i in cross_out[P]:
            routes.append((i, "out", add((unit(edges[i][0], P), ("out", i)), i)))
        lay = layout(units, usize, uedges, top=tops, bottom=bottoms)

        pos, ports, segs, boxes = {}, {}, {}, {}
        for u in units:
            x, y = lay.pos[u]
            if u[0] == "n":
                pos[u[1]] = (x, y)
            elif u[0] == "in":
                ports[u] = (x, -LABEL_H)               # on the box's top side
            elif u[0] == "out":
                ports[u] = (x, lay.height)             # on its bottom side
            else:
                w, h = usize[u]
                x0, y0 = x - w / 2, y - h / 2
                boxes[u[1]] = (x0, y0, x0 + w, y0 + h)
                cw, ch, cpos, cports, csegs, cboxes = done.pop(u[1])
                oy = y0 + LABEL_H

                def sh(pts, x0=x0, oy=oy):
                    return [(px + x0, py + oy) for px, py in pts]
                for v, pt in cpos.items():
                    pos[v] = sh([pt])[0]
                for k, pt in cports.items():
                    ports[("c",) + k] = sh([pt])[0]     # a child's port, seen from here
                for i, sg in csegs.items():
                    mine = segs.setdefault(i, {"out": [], "in": [], "mid": None})
                    for side in ("out", "in"):
                        mine[side].extend((d, sh(pts)) for d, pts in sg[side])
                    if sg["mid"] is not None:
                        mine["mid"] = sh(sg["mid"])
                for k, bx in cboxes.items():
                    boxes[k] = (bx[0] + x0, bx[1] + oy, bx[2] + x0, bx[3] + oy)

        def end_point(u, i, side):
            if u[0] == "n":
                return pos[u[1]]
            if u[0] in ("in", "out"):
                return ports[u]
            return ports[("c", side, i)]            # a child group: its own port for edge i
        for i, kind, j in routes:
            pts = list(lay.paths[j])
            ua, ub = uedges[j]
            pts[0] = end_point(ua, i, "out")
            pts[-1] = end_point(ub, i, "in")
            mine = segs.setdefault(i, {"out": [], "in": [], "mid": None})
            if kind == "mid":
                mine["mid"] = pts
            else:
                mine[kind].append((depth(P), pts))
        done[P] = (lay.width, lay.height, pos, {k: v for k, v in ports.items() if k[0] != "c"}, segs, boxes)

    w, h, pos, _, segs, boxes = done[""]
    paths = []
    for i in range(len(edges)):
        sg = segs[i]
        pts = []
        parts = [p for _, p in sorted(sg["out"], key=lambda t: -t[0])] + [sg["mid"]] + \
                [p for _, p in sorted(sg["in"], key=lambda t: t[0])]
        for part in parts:
            if pts and part and pts[-1] == part[0]:
                part = part[1:]
            pts.extend(part)
        paths.append(pts)
    out = Layout(pos, {v: sizes[v] for v in ids}, paths, w, h, [])
    out.boxes = boxes
    return out
