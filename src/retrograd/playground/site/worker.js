// Python (Pyodide) in a Web Worker: the page stays responsive while a program runs, and
// Stop simply ends this worker. Everything is loaded from this site's own files.
"use strict";
let py = null;

function post(msg) { self.postMessage(msg); }

async function init(msg) {
  const t0 = performance.now();
  importScripts("pyodide/pyodide.js");
  py = await loadPyodide({ indexURL: new URL("pyodide/", self.location.href).href, stdout: () => {}, stderr: () => {} });
  await py.loadPackage("numpy", { messageCallback: () => {}, errorCallback: (m) => post({ type: "log", text: m }) });
  const wheel = await (await fetch(msg.wheel)).arrayBuffer();
  py.unpackArchive(new Uint8Array(wheel), "wheel");
  py.FS.mkdirTree("/home/pyodide/data/MNIST/raw");
  for (const path of msg.data) {
    const buf = new Uint8Array(await (await fetch(path)).arrayBuffer());
    py.FS.writeFile("/home/pyodide/" + path, buf);
  }
  py.runPython("import os; os.chdir('/home/pyodide'); import retrograd, retrograd.playground.runner");
  post({ type: "ready", ms: performance.now() - t0, version: py.runPython("import retrograd; retrograd.version.retrograd") });
}

async function run(msg) {
  py.setStdout({ batched: (text) => post({ type: "out", id: msg.id, stream: "stdout", text }) });
  py.setStderr({ batched: (text) => post({ type: "out", id: msg.id, stream: "stderr", text }) });
  py.globals.set("_playground_code", msg.code);
  const t0 = performance.now();
  let res;
  try {
    const proxy = py.runPython("import json\nfrom retrograd.playground.runner import run as _run\n"
      + "json.dumps(_run(_playground_code))");
    res = JSON.parse(proxy);
  } catch (e) {
    res = { ok: false, error: String(e), graph: null, graph_summary: "" };
  }
  res.ms = performance.now() - t0;
  res.wasm_bytes = py._module.HEAPU8.length;       // Python's heap (WebAssembly memory) after the run
  post(Object.assign({ type: "done", id: msg.id }, res));
}

self.onmessage = (e) => {
  const msg = e.data;
  const job = msg.type === "init" ? init(msg) : run(msg);
  job.catch((err) => post({ type: "fatal", text: String(err && err.stack || err) }));
};
