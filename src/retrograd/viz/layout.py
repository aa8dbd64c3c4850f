"""A layered (Sugiyama-style) layout in plain Python: no outside program.

1. Layers by longest path from the sources (computation flows downwards); a source
   (a leaf) moves down to sit just above its first user.
2. Edges spanning several layers get a dummy point in each layer they cross, so they
   bend around boxes and take part in crossing reduction.
3. Crossings are reduced by barycentre sweeps (down, then up, a few rounds), keeping
   the order with fewer crossings.
4. Boxes are placed left to right with a minimum gap, then pulled towards the mean x of
   their neighbours in alternating sweeps; a final left-to-right pass keeps every gap,
   so no two boxes ever overlap.

Everything is iterative; a cycle (which autograd graphs never have) is broken rather
than looped on.
"""
__all__ = ["layout", "compound_layout", "Layout"]

H_GAP = 24.0
V_GAP = 46.0
DUMMY_W = 8.0


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


def layout(ids, sizes, edges, sweeps=4, groups=None):
    """Lay out nodes ``ids`` with ``sizes[id] = (w, h)`` and ``edges`` (src, dst) pairs.

    groups: optional ``{id: "a.b"}`` module paths; members of a group are kept next to
    each other in every layer, so that a group's box holds few strangers.
    """
    ids = list(ids)
    grp = dict(groups or {})
    succ = {v: [] for v in ids}
    pred = {v: [] for v in ids}
    for a, b in edges:
        if a != b:
            succ[a].append(b)
            pred[b].append(a)
    rank, order, tpos = _layers(ids, succ, pred)
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
        if rb <= ra:
            chains.append([a, b])
            continue
        chain = [a]
        prev = a
        for r in range(ra + 1, rb):
            d = ("d", n_dummy)
            n_dummy += 1
            rank[d] = r
            size[d] = (DUMMY_W, 1.0)
            ga, gb = grp.get(a), grp.get(b)
            if ga and gb:
                common = _common(ga, gb)
                if common:
                    grp[d] = common
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
                _sort_bary(layers[i], layers[i - 1], up, grp)
            for i in range(nlayers - 2, -1, -1):
                _sort_bary(layers[i], layers[i + 1], down, grp)
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


def _sort_bary(layer, fixed, nb, grp):
    """Order ``layer`` by the mean position of each node's neighbours in ``fixed``; a
    node without neighbours keeps its position. Group members stay together: a group is
    placed at the mean of its members' keys."""
    idx = {v: i for i, v in enumerate(fixed)}
    bary = {}
    for i, v in enumerate(layer):
        ns = [idx[u] for u in nb[v] if u in idx]
        bary[v] = sum(ns) / len(ns) if ns else i * (len(fixed) / max(1, len(layer)))
    if not grp:
        layer.sort(key=lambda v: bary[v])
        return
    sums = {}
    for v in layer:
        g = grp.get(v)
        while g:
            s = sums.setdefault(g, [0.0, 0])
            s[0] += bary[v]
            s[1] += 1
            g = g.rpartition(".")[0]

    def key(v):
        g = grp.get(v)
        if not g:
            return (bary[v],)
        parts = g.split(".")
        out = []
        for i in range(1, len(parts) + 1):
            s = sums[".".join(parts[:i])]
            out.append(s[0] / s[1])
        out.append(bary[v])
        return tuple(out)
    layer.sort(key=key)


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
    else, and boxes never overlap. An edge is routed at the level of the innermost
    group holding both its ends. Returns a Layout with ``boxes[path] = (x0, y0, x1, y1)``.
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

    level_edges = {p: [] for p in allp}
    for i, (a, b) in enumerate(edges):
        level_edges[_lca(gof[a], gof[b])].append(i)

    done = {}      # path -> (w, h, pos, paths {edge index: pts}, boxes)
    for P in sorted(allp, key=lambda p: (-(p.count(".") + 1) if p else 0)):
        units, usize = [], {}
        for v in direct[P]:
            u = ("n", v)
            units.append(u)
            usize[u] = sizes[v]
        for c in sorted(children[P]):
            u = ("g", c)
            units.append(u)
            w, h = done[c][0], done[c][1]
            usize[u] = (w, h + LABEL_H)
        uedges, emap = [], {}
        for i in level_edges[P]:
            a, b = edges[i]
            key = (unit(a, P), unit(b, P))
            j = emap.get(key)
            if j is None:
                j = emap[key] = len(uedges)
                uedges.append(key)
            emap[i] = j
        lay = layout(units, usize, uedges)
        pos, paths, boxes = {}, {}, {}
        for u in units:
            x, y = lay.pos[u]
            if u[0] == "n":
                pos[u[1]] = (x, y)
                continue
            w, h = usize[u]
            x0, y0 = x - w / 2, y - h / 2
            boxes[u[1]] = (x0, y0, x0 + w, y0 + h)
            cw, ch, cpos, cpaths, cboxes = done.pop(u[1])
            oy = y0 + LABEL_H
            for v, (vx, vy) in cpos.items():
                pos[v] = (vx + x0, vy + oy)
            for i, pts in cpaths.items():
                paths[i] = [(px + x0, py + oy) for px, py in pts]
            for k, (bx0, by0, bx1, by1) in cboxes.items():
                boxes[k] = (bx0 + x0, by0 + oy, bx1 + x0, by1 + oy)
        for i in level_edges[P]:
            a, b = edges[i]
            pts = list(lay.paths[emap[i]])
            pts[0] = pos[a]
            pts[-1] = pos[b]
            paths[i] = pts
        done[P] = (lay.width, lay.height, pos, paths, boxes)
    w, h, pos, paths, boxes = done[""]
    out = Layout(pos, {v: sizes[v] for v in ids}, [paths[i] for i in range(len(edges))], w, h, [])
    out.boxes = boxes
    return out
