"""The tutorial's examples print what PyTorch prints (object addresses aside)."""
import os
import re
import subprocess
import sys

import pytest

from helpers import torch

ROOT = os.path.join(os.path.dirname(__file__), "..")
EXAMPLES = sorted(f for f in os.listdir(os.path.join(ROOT, "examples")) if f.startswith("seed_"))


def _run(code):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return re.sub(r"0x[0-9a-fA-F]+", "0x?", out.stdout)


@pytest.mark.skipif(torch is None, reason="PyTorch (torch==2.13.0) is not installed")
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_prints_what_pytorch_prints(name):
    src = open(os.path.join(ROOT, "examples", name)).read()
    assert "import retrograd as torch" in src
    ours = _run(src)
    theirs = _run(src.replace("import retrograd as torch", "import torch"))
    assert ours == theirs
    assert ours.strip()


def test_tour_runs_every_example():
    out = subprocess.run([sys.executable, "-m", "retrograd", "tour"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src")), cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    for name in EXAMPLES:
        assert f"=== {name}" in out.stdout
    assert "x.grad: tensor(8.)" in out.stdout
