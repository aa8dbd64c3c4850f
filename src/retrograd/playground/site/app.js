// The playground page: examples, editor, output, a loss chart, and the graph view.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const code = $("code"), lines = $("lines"), output = $("output"), statusEl = $("status");
  const runBtn = $("run"), stopBtn = $("stop"), resetBtn = $("reset"), chart = $("chart");
  let manifest = null, worker = null, ready = false, current = null, runId = 0, losses = [];
  const pageStart = performance.now();
  // What the tests (and a curious reader) can look at.
  window.playground = { runs: [], ready: false, startupMs: null, firstResultMs: null, run: null, select: null };

  function setStatus(text, cls) {
    statusEl.textContent = text;
    statusEl.className = "status" + (cls ? " " + cls : "");
  }
  function numberLines() {
    const n = code.value.split("\n").length;
    let s = "";
    for (let i = 1; i <= n; i++) s += i + "\n";
    lines.textContent = s;
  }
  code.addEventListener("input", numberLines);
  code.addEventListener("keydown", (e) => {
    if (e.key === "Tab") {
      e.preventDefault();
      const a = code.selectionStart, b = code.selectionEnd;
      code.value = code.value.slice(0, a) + "    " + code.value.slice(b);
      code.selectionStart = code.selectionEnd = a + 4;
      numberLines();
    } else if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      runCode();
    }
  });

  function append(text, stream) {
    const span = document.createElement("span");
    if (stream === "stderr") span.className = "err";
    span.textContent = text + "\n";
    output.appendChild(span);
    output.scrollTop = output.scrollHeight;
    const m = /loss[:=]\s*(-?[0-9.]+(?:e[-+]?\d+)?)/i.exec(text);
    if (m && stream === "stdout") { losses.push(parseFloat(m[1])); drawChart(); }
  }

  function drawChart() {
    chart.hidden = losses.length < 2;
    if (chart.hidden) return;
    const ctx = chart.getContext("2d"), w = chart.width, h = chart.height, pad = 28;
    ctx.clearRect(0, 0, w, h);
    const max = Math.max(...losses), min = Math.min(0, ...losses);
    ctx.strokeStyle = "#bbb";
    ctx.strokeRect(pad, 6, w - pad - 6, h - pad);
    ctx.fillStyle = "#555";
    ctx.font = "11px sans-serif";
    ctx.fillText(max.toFixed(2), 2, 14);
    ctx.fillText(min.toFixed(2), 2, h - pad + 4);
    ctx.fillText("loss over " + losses.length + " steps", pad + 6, h - 8);
    ctx.strokeStyle = "#2a6fb0";
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    losses.forEach((v, i) => {
      const x = pad + (w - pad - 8) * i / (losses.length - 1);
      const y = 6 + (h - pad - 6) * (1 - (v - min) / ((max - min) || 1));
      if (i) ctx.lineTo(x, y); else ctx.moveTo(x, y);
    });
    ctx.stroke();
  }

  function showGraph(html, summary) {
    $("graph-summary").textContent = summary || "";
    const frame = $("graph");
    frame.onload = html ? () => frame.contentWindow.postMessage("rg-build", "*") : null;
    frame.srcdoc = html || "<p style='font:14px sans-serif;color:#777;padding:12px'>" +
      (summary || "Run a program to see its graph.") + "</p>";
  }

  function startWorker() {
    ready = false;
    window.playground.ready = false;
    runBtn.disabled = stopBtn.disabled = true;
    worker = new Worker("worker.js");
    worker.onmessage = onMessage;
    worker.postMessage({ type: "init", wheel: manifest.wheel, data: manifest.data });
  }

  function onMessage(e) {
    const msg = e.data;
    if (msg.type === "ready") {
      ready = true;
      window.playground.ready = true;
      if (window.playground.startupMs === null) window.playground.startupMs = performance.now() - pageStart;
      setStatus("Python ready (retrograd " + msg.version + ", Pyodide " + manifest.pyodide + ")", "ready");
      runBtn.disabled = false;
      resetBtn.disabled = false;
    } else if (msg.type === "out") {
      if (msg.id === runId) append(msg.text, msg.stream);
    } else if (msg.type === "done") {
      if (msg.id !== runId) return;
      if (!msg.ok && msg.error) append(msg.error.replace(/\n$/, ""), "stderr");
      $("timing").textContent = "ran in " + (msg.ms / 1000).toFixed(2) + " s";
      showGraph(msg.graph, msg.graph_summary);
      stopBtn.disabled = true;
      runBtn.disabled = false;
      setStatus("done", "ready");
      if (window.playground.firstResultMs === null) window.playground.firstResultMs = performance.now() - pageStart;
      window.playground.runs.push({ id: current && current.id, ok: msg.ok, output: output.textContent,
        ms: msg.ms, graph: !!msg.graph, summary: msg.graph_summary, wasmBytes: msg.wasm_bytes });
    } else if (msg.type === "fatal") {
      setStatus("Python failed to start", "error");
      append(msg.text, "stderr");
    } else if (msg.type === "log") {
      append(msg.text, "stderr");
    }
  }

  function runCode() {
    if (!ready) return;
    runId += 1;
    output.textContent = "";
    losses = [];
    drawChart();
    $("timing").textContent = "";
    setStatus("running…");
    runBtn.disabled = true;
    stopBtn.disabled = false;
    worker.postMessage({ type: "run", id: runId, code: code.value });
  }

  function stop() {
    worker.terminate();
    append("(stopped)", "stderr");
    setStatus("restarting Python…");
    startWorker();
  }

  function select(ex) {
    current = ex;
    code.value = ex.code;
    numberLines();
    $("example-title").textContent = ex.title + " · " + ex.title_zh;
    document.querySelectorAll("nav button").forEach((b) => b.classList.toggle("active", b.dataset.id === ex.id));
    output.textContent = "";
    losses = [];
    drawChart();
    showGraph(null, "");
  }

  function buildNav() {
    const nav = $("examples");
    const groups = { "000": "Article 1: the backtracking mechanism", "001": "Article 2: grad and the graph",
      "002": "Article 3: autograd in depth", "extra": "More" };
    Object.keys(groups).forEach((g) => {
      const items = manifest.examples.filter((e) => e.seed === g);
      if (!items.length) return;
      const h = document.createElement("h2");
      h.textContent = groups[g];
      nav.appendChild(h);
      items.forEach((ex) => {
        const b = document.createElement("button");
        b.dataset.id = ex.id;
        b.textContent = ex.title;
        const zh = document.createElement("span");
        zh.className = "zh";
        zh.textContent = ex.title_zh;
        b.appendChild(zh);
        b.addEventListener("click", () => select(ex));
        nav.appendChild(b);
      });
    });
  }

  runBtn.addEventListener("click", runCode);
  stopBtn.addEventListener("click", stop);
  resetBtn.addEventListener("click", () => current && select(current));
  window.playground.run = runCode;
  window.playground.select = (id) => select(manifest.examples.find((e) => e.id === id));

  fetch("manifest.json").then((r) => r.json()).then((m) => {
    manifest = m;
    buildNav();
    select(m.examples[0]);
    startWorker();
  }).catch((err) => { setStatus("could not load the site's manifest", "error"); append(String(err), "stderr"); });
})();
