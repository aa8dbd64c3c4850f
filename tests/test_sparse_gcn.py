"""A graph convolutional network over a sparse COO adjacency (tests/scripts/gcn/train_gcn.py, a
plain PyTorch program) trains under ``retrograd run`` on a synthetic Cora of the real archive's
format (make_cora.py: 2708 papers, 1433 words, 7 classes), to PyTorch's accuracy."""
import os
import re
import subprocess
import sys

import pytest

from helpers import torch

HERE = os.path.dirname(os.path.abspath(__file__))
GCN = os.path.join(HERE, "scripts", "gcn")
SRC = os.path.abspath(os.path.join(HERE, "..", "src"))


@pytest.fixture(scope="module")
def cora(tmp_path_factory):
    sys.path.insert(0, GCN)
    try:
        import make_cora
    finally:
        sys.path.remove(GCN)
    return make_cora.make(str(tmp_path_factory.mktemp("cora")))


def _train(cora, cwd, retro, *args):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    if retro:
        env["PYTHONPATH"] = SRC
    cmd = [sys.executable, "-W", "ignore"] + (["-m", "retrograd", "run"] if retro else [])
    r = subprocess.run(cmd + [os.path.join(GCN, "train_gcn.py"), cora, *args], capture_output=True, text=True,
                       timeout=600, env=env, cwd=cwd)
    assert r.returncode == 0, r.stderr
    m = re.search(r"Test set results: loss ([\d.]+) accuracy ([\d.]+)", r.stdout)
    assert m, r.stdout
    epochs = [(float(a), float(b)) for a, b in re.findall(r"loss_train: ([\d.]+) acc_train: [\d.]+ loss_val: "
                                                          r"[\d.]+ acc_val: ([\d.]+)", r.stdout)]
    return float(m.group(1)), float(m.group(2)), epochs


def test_gcn_trains_under_retrograd_run_to_torch_accuracy(cora, tmp_path):
    (tmp_path / "r").mkdir()
    loss_r, acc_r, epochs = _train(cora, tmp_path / "r", True)
    assert len(epochs) == 10                        # printed every 20 of the 200 epochs
    assert epochs[-1][0] < epochs[0][0] * 0.5       # the training loss falls
    assert acc_r > 0.8, acc_r                       # chance is 1/7
    if torch is None:
        pytest.skip("PyTorch (torch==2.13.0) is not installed: no accuracy comparison")
    (tmp_path / "t").mkdir()
    loss_t, acc_t, _ = _train(cora, tmp_path / "t", False)
    # different generators (weights, dropout, split): the same accuracy range, not the same digits
    assert abs(acc_r - acc_t) < 0.05, (acc_r, acc_t)
    assert abs(loss_r - loss_t) < 0.15, (loss_r, loss_t)
