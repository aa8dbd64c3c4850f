(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("rg-data").textContent);
  var canvas = document.getElementById("rg-canvas");
  var svg = canvas.querySelector("svg");
  var vp = svg.querySelector("#rg-viewport");
  var details = document.getElementById("rg-details");
  var scale = 1, tx = 0, ty = 0;

  svg.removeAttribute("width");
  svg.removeAttribute("height");
  svg.removeAttribute("viewBox");

  function apply() {
    vp.setAttribute("transform", "translate(" + tx + "," + ty + ") scale(" + scale + ")");
  }

  // whole: the entire graph in view; otherwise (on opening) a readable scale, the
  // top of the graph first, when fitting everything would make it too small to read.
  function fit(whole) {
    var b = vp.getBBox();
    var w = canvas.clientWidth || 800, h = canvas.clientHeight || 600;
    if (!b.width || !b.height) { scale = 1; tx = 0; ty = 0; apply(); return; }
    scale = Math.min(w / (b.width + 40), h / (b.height + 40), 1.5);
    if (whole !== true && scale < 0.6) {
      scale = Math.min(w / (b.width + 40), 1);
      tx = (w - b.width * scale) / 2 - b.x * scale;
      ty = 20 - b.y * scale;
      apply();
      return;
    }
    tx = (w - b.width * scale) / 2 - b.x * scale;
    ty = (h - b.height * scale) / 2 - b.y * scale;
    apply();
  }

  // Pan so that an element out of view comes to the middle of the canvas.
  function reveal(el) {
    var r = el.getBoundingClientRect(), c = canvas.getBoundingClientRect();
    if (r.left >= c.left && r.right <= c.right && r.top >= c.top && r.bottom <= c.bottom) return;
    tx += (c.left + c.width / 2) - (r.left + r.width / 2);
    ty += (c.top + c.height / 2) - (r.top + r.height / 2);
    apply();
  }

  function zoomAt(k, mx, my) {
    var s = Math.max(0.02, Math.min(20, scale * k));
    k = s / scale;
    tx = mx - (mx - tx) * k;
    ty = my - (my - ty) * k;
    scale = s;
    apply();
  }

  canvas.addEventListener("wheel", function (e) {
    e.preventDefault();
    var r = svg.getBoundingClientRect();
    zoomAt(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });

  var drag = null;
  canvas.addEventListener("mousedown", function (e) {
    drag = { x: e.clientX, y: e.clientY, tx: tx, ty: ty, moved: false };
    canvas.classList.add("rg-dragging");
  });
  window.addEventListener("mousemove", function (e) {
    if (!drag) return;
    var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    tx = drag.tx + dx;
    ty = drag.ty + dy;
    apply();
  });
  window.addEventListener("mouseup", function () {
    canvas.classList.remove("rg-dragging");
    setTimeout(function () { drag = null; }, 0);
  });

  // --- details ------------------------------------------------------------------------
  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }
  function row(k, v, pre) {
    return "<tr><td>" + esc(k) + "</td><td>" + (pre ? "<pre>" + esc(v) + "</pre>" : esc(v)) + "</td></tr>";
  }
  function shapeStr(s) { return "(" + s.join(", ") + ")"; }

  function showDetails(id) {
    var d = data.nodes[id];
    if (!d) return;
    var h = "<table>";
    h += row(d.kind === "function" ? "function" : d.kind, d.label);
    if (d.role) h += row("role", d.role);
    if (d.name && d.name !== d.label) h += row("name", d.name);
    if (d.shape) h += row("shape", shapeStr(d.shape));
    if (d.dtype) h += row("dtype", d.dtype);
    if (d.module) h += row("module", d.module);
    if (d.count && d.kind === "fold") h += row("nodes", d.count);
    if (d.folded) h += row("inside", d.folded);
    if (d.requires_grad !== undefined) h += row("requires_grad", d.requires_grad);
    if (d.grad_fn) h += row("grad_fn", d.grad_fn);
    if (d.values !== undefined) h += row("values", d.values, true);
    if (d.grad !== undefined) h += row("grad", d.grad, true);
    if (d.seq !== undefined) h += row("sequence nr", d.seq);
    if (d.freed) h += row("saved", "freed by backward");
    if (d.saved && d.saved.length) {
      var s = "";
      d.saved.forEach(function (it) {
        if (it.freed) { s += "<div class='rg-freed'>saved tensors freed by backward</div>"; return; }
        s += "<div><b>" + esc(it.name) + "</b> ";
        if (it.shape) s += esc(shapeStr(it.shape) + " " + it.dtype) + "<pre>" + esc(it.values) + "</pre>";
        else s += esc(it.value);
        s += "</div>";
      });
      h += "<tr><td>saved</td><td>" + s + "</td></tr>";
    }
    if (d.source) h += row("source", d.source, true);
    else if (d.kind === "function" && d.label !== "AccumulateGrad")
      h += row("source", "record with retrograd.autograd.detect_anomaly() to see the line");
    h += "</table>";
    details.innerHTML = h;
  }

  function nodeEl(id) { return id ? svg.querySelector(".rg-node[data-id='" + id + "']") : null; }
  var selected = null;
  function select(n) {
    if (selected) selected.classList.remove("rg-selected");
    selected = n;
    n.classList.add("rg-selected");
    showDetails(n.getAttribute("data-id"));
  }

  // Find: Enter goes to the next node whose label, name or module holds the text.
  var find = document.getElementById("rg-find"), found = [], foundAt = -1, lastQuery = null;
  find.addEventListener("keydown", function (e) {
    if (e.key !== "Enter") return;
    var q = find.value.trim().toLowerCase();
    if (!q) return;
    if (q !== lastQuery) {
      lastQuery = q;
      foundAt = -1;
      found = Object.keys(data.nodes).filter(function (id) {
        var d = data.nodes[id];
        return [d.label, d.name, d.module].some(function (s) { return s && String(s).toLowerCase().indexOf(q) >= 0; });
      });
    }
    var shown = found.filter(function (id) { var el = nodeEl(id); return el && !el.classList.contains("rg-hidden"); });
    if (!shown.length) { find.style.background = "#fdd"; return; }
    find.style.background = "";
    foundAt = (foundAt + 1) % shown.length;
    var el = nodeEl(shown[foundAt]);
    select(el);
    reveal(el);
  });

  svg.addEventListener("click", function (e) {
    if (drag && drag.moved) return;
    var fold = e.target.closest(".rg-fold");
    if (fold) { toggleGroup(fold.getAttribute("data-group")); return; }
    var gl = e.target.closest(".rg-group");
    if (gl && e.target.tagName === "text") { toggleGroup(gl.getAttribute("data-group")); return; }
    var n = e.target.closest(".rg-node");
    if (n) select(n);
  });

  // --- module groups -------------------------------------------------------------------
  var collapsed = {};
  function within(g, p) { return g === p || g.indexOf(p + ".") === 0; }
  function hiddenBy(g) {
    if (!g) return null;
    var best = null;
    for (var p in collapsed) {
      if (collapsed[p] && within(g, p) && (best === null || p.length < best.length)) best = p;
    }
    return best;
  }
  function toggleGroup(g) {
    collapsed[g] = !collapsed[g];
    var box = document.querySelector("#rg-groups input[data-group='" + g.replace(/'/g, "\\'") + "']");
    if (box) box.checked = !!collapsed[g];
    refreshGroups();
  }
  function refreshGroups() {
    var owner = {};
    svg.querySelectorAll(".rg-node").forEach(function (n) {
      var h = hiddenBy(n.getAttribute("data-group"));
      owner[n.getAttribute("data-id")] = h;
      n.classList.toggle("rg-hidden", h !== null);
    });
    svg.querySelectorAll(".rg-edge").forEach(function (e) {
      var a = owner[e.getAttribute("data-src")], b = owner[e.getAttribute("data-dst")];
      e.classList.toggle("rg-hidden", a !== null && a !== undefined && a === b);
    });
    svg.querySelectorAll(".rg-group").forEach(function (el) {
      var g = el.getAttribute("data-group");
      el.classList.toggle("rg-hidden", hiddenBy(g) !== null);
    });
    svg.querySelectorAll(".rg-fold").forEach(function (el) {
      var g = el.getAttribute("data-group");
      el.style.display = hiddenBy(g) === g ? "" : "none";
    });
  }
  var glist = document.getElementById("rg-groups");
  if (glist) {
    Object.keys(data.groups).forEach(function (g) {
      var depth = g.split(".").length - 1;
      var lab = document.createElement("label");
      lab.style.paddingLeft = (depth * 14) + "px";
      var cb = document.createElement("input");
      cb.type = "checkbox";
      cb.setAttribute("data-group", g);
      cb.addEventListener("change", function () { collapsed[g] = cb.checked; refreshGroups(); });
      lab.appendChild(cb);
      lab.appendChild(document.createTextNode(" " + g + " (" + data.groups[g] + ")"));
      glist.appendChild(lab);
    });
  }

  // --- the backward trace ---------------------------------------------------------------
  var steps = data.trace || [];
  var cur = -1, timer = null;
  var stepBox = document.getElementById("rg-step");
  function edgeEls(src, dst) {
    return svg.querySelectorAll(".rg-edge[data-src='" + src + "'][data-dst='" + dst + "']");
  }
  function showStep(i) {
    cur = Math.max(-1, Math.min(steps.length - 1, i));
    svg.querySelectorAll(".rg-done,.rg-current,.rg-target,.rg-flow").forEach(function (el) {
      el.classList.remove("rg-done", "rg-current", "rg-target", "rg-flow");
    });
    for (var k = 0; k < cur; k++) {
      var el = nodeEl(steps[k].node);
      if (el) el.classList.add("rg-done");
    }
    var label = document.getElementById("rg-step-label");
    if (cur < 0) {
      label.textContent = "backward: " + steps.length + " steps";
      stepBox.innerHTML = "<div class='rg-row'>Press <b>Next</b> to walk the graph backwards, one node at a time.</div>";
    } else {
      var s = steps[cur];
      label.textContent = "step " + (cur + 1) + "/" + steps.length + ": " + s.name;
      var el2 = nodeEl(s.node);
      if (el2) { el2.classList.add("rg-current"); reveal(el2); }
      var h = "<div class='rg-row'><b>" + esc(s.name) + "</b> (step " + (cur + 1) + " of " + steps.length + ")</div>";
      h += "<div class='rg-row'>gradient arrived:</div>";
      s.grads_in.forEach(function (g) { h += "<pre>" + esc(g) + "</pre>"; });
      if (s.leaf !== undefined) {
        h += "<div class='rg-row'>accumulated into the leaf's .grad</div>";
        var lf = nodeEl(s.leaf);
        if (lf) lf.classList.add("rg-target");
        edgeEls(s.leaf, s.node).forEach(function (e) { e.classList.add("rg-flow"); });
      }
      s.sent.forEach(function (o) {
        if (o.to === null && o.name === null) {
          h += "<div class='rg-row'>input " + o.input + ": no gradient needed</div>";
          return;
        }
        h += "<div class='rg-row'>sent to input " + o.input + " (" + esc(o.name) + "):</div><pre>" + esc(o.grad) + "</pre>";
        var t = nodeEl(o.to);
        if (t) t.classList.add("rg-target");
        if (o.to) edgeEls(o.to, s.node).forEach(function (e) { e.classList.add("rg-flow"); });
      });
      stepBox.innerHTML = h;
    }
    var prev = document.getElementById("rg-prev"), next = document.getElementById("rg-next");
    prev.disabled = cur < 0;
    next.disabled = cur >= steps.length - 1;
  }
  function play() {
    var btn = document.getElementById("rg-play");
    if (timer) { clearInterval(timer); timer = null; btn.textContent = "Play"; return; }
    if (cur >= steps.length - 1) showStep(-1);
    btn.textContent = "Pause";
    timer = setInterval(function () {
      if (cur >= steps.length - 1) { clearInterval(timer); timer = null; btn.textContent = "Play"; return; }
      showStep(cur + 1);
    }, 900);
  }
  if (steps.length) {
    document.getElementById("rg-prev").addEventListener("click", function () { showStep(cur - 1); });
    document.getElementById("rg-next").addEventListener("click", function () { showStep(cur + 1); });
    document.getElementById("rg-play").addEventListener("click", play);
    document.addEventListener("keydown", function (e) {
      if (e.key === "ArrowRight") showStep(cur + 1);
      else if (e.key === "ArrowLeft") showStep(cur - 1);
    });
    showStep(-1);
  }

  // --- the forward build: nodes appear in the order the program created them -----------
  var building = null;
  function build(delay) {
    if (building) { clearInterval(building); building = null; }
    var ids = Object.keys(data.nodes).sort(function (a, b) {
      return (data.nodes[a].order || 0) - (data.nodes[b].order || 0);
    });
    var shown = {};
    svg.querySelectorAll(".rg-node,.rg-edge").forEach(function (el) { el.classList.add("rg-unbuilt"); });
    var k = 0;
    function showEdges() {
      svg.querySelectorAll(".rg-edge.rg-unbuilt").forEach(function (e) {
        if (shown[e.getAttribute("data-src")] && shown[e.getAttribute("data-dst")]) e.classList.remove("rg-unbuilt");
      });
    }
    building = setInterval(function () {
      if (k >= ids.length) { clearInterval(building); building = null; showEdges(); return; }
      // nodes made together (the same order number) appear together
      var o = data.nodes[ids[k]].order || 0;
      while (k < ids.length && (data.nodes[ids[k]].order || 0) === o) {
        shown[ids[k]] = true;
        var el = nodeEl(ids[k]);
        if (el) el.classList.remove("rg-unbuilt");
        k++;
      }
      showEdges();
    }, delay || 350);
  }
  document.getElementById("rg-build").addEventListener("click", function () { build(); });
  // a page that embeds this one (the playground) asks for the build with postMessage
  window.addEventListener("message", function (e) { if (e.data === "rg-build") build(250); });

  document.getElementById("rg-fit").addEventListener("click", function () { fit(true); });
  document.getElementById("rg-zin").addEventListener("click", function () {
    zoomAt(1.25, canvas.clientWidth / 2, canvas.clientHeight / 2);
  });
  document.getElementById("rg-zout").addEventListener("click", function () {
    zoomAt(0.8, canvas.clientWidth / 2, canvas.clientHeight / 2);
  });
  window.addEventListener("resize", function () { fit(); });
  fit();
  window.rgGraph = { showStep: showStep, showDetails: showDetails, toggleGroup: toggleGroup, fit: fit, build: build };
})();
