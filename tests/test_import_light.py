"""``import retrograd`` stays light: optional extras and heavy standard-library modules load
only when first used (asserted by the modules a fresh interpreter holds, never by timing)."""
import ast
import os
import subprocess
import sys

import pytest

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "src"))

# Optional extras and the torch oracle: never loaded by the import itself.
OPTIONAL = ["torch", "cupy", "mpi4py", "safetensors", "matplotlib", "scipy", "tqdm", "threadpoolctl"]
# Standard-library modules only some functions need (DataLoader workers, save/load, downloads,
# error reports, numpy.random's seeding).
HEAVY = ["multiprocessing", "json", "socket", "selectors", "signal", "queue", "urllib.request", "http.client",
         "hashlib", "hmac", "secrets", "base64", "tempfile", "gzip", "traceback", "copy", "subprocess"]


def modules_loaded_by(code):
    """Modules that running ``code`` adds to a fresh interpreter's sys.modules."""
    probe = "import sys; before = set(sys.modules)\n" + code + "\nprint(sorted(set(sys.modules) - before))"
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return set(ast.literal_eval(r.stdout.splitlines()[-1]))


@pytest.mark.parametrize("module", ["retrograd", "retrograd.datasets"])
def test_import_loads_no_optional_or_heavy_module(module):
    loaded = modules_loaded_by(f"import {module}")
    assert "retrograd" in loaded
    unexpected = sorted(m for m in OPTIONAL + HEAVY if m in loaded)
    assert unexpected == []


def test_public_names_and_first_use_still_work(tmp_path):
    path = str(tmp_path / "ck.safetensors").replace("\\", "/")
    tpath = str(tmp_path / "ck.pt").replace("\\", "/")
    code = ("import retrograd as torch\n"
            "from retrograd.utils.data import DataLoader, TensorDataset\n"
            "assert torch.save and torch.load and torch.utils.data.DataLoader is DataLoader\n"
            "x = torch.rand(4, 2)\n"
            "torch.manual_seed(0); a = torch.rand(3); torch.manual_seed(0); assert torch.equal(a, torch.rand(3))\n"
            "batches = list(DataLoader(TensorDataset(x), batch_size=2))\n"
            "assert len(batches) == 2\n"
            f"torch.save({{'x': x}}, {path!r}); assert torch.equal(torch.load({path!r})['x'], x)\n"
            f"torch.save({{'x': x}}, {tpath!r}); assert torch.equal(torch.load({tpath!r})['x'], x)\n")
    loaded = modules_loaded_by(code)
    # (save/load write the safetensors format themselves: the package is not needed)
    assert {"numpy.random", "json", "hashlib"} <= loaded  # loaded on first use, as they should be
    assert "retrograd._torch_format" in loaded   # (PyTorch's format, for the .pt path)
