"""``retrograd run``: PyTorch tutorial-style scripts (tests/scripts/, plain ``import torch``)
run on retrograd through the import hook; missing APIs fail with an error naming them."""
import importlib
import importlib.util
import re
import os
import subprocess
import sys

import pytest

import retrograd
from retrograd.cli.run import torch_aliases, NotImplementedInRetrograd
from retrograd.datasets.mnist import packaged_available as packaged_mnist_available

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "scripts")
SRC = os.path.join(HERE, "..", "src")


def run(script, *args, cwd=None):
    # One BLAS thread: the tests already run in parallel on a small machine.
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.path.abspath(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "retrograd", "run", os.path.join(SCRIPTS, script), *args],
                          capture_output=True, text=True, timeout=300, env=env, cwd=cwd)


def test_autograd_basics():
    r = run("autograd_basics.py")
    assert r.returncode == 0, r.stderr
    assert "x.grad: None\nx.grad_fn: None\nz.grad_fn: PowBackward0\nx.grad: tensor(8.)\n" in r.stdout
    assert "w.grad: [1.0, 2.0, 3.0]" in r.stdout and "no_grad requires_grad: False" in r.stdout


@pytest.mark.parametrize("workers", ["0", "2"])
def test_data_pipeline(workers):
    r = run("data_pipeline.py", workers)
    assert r.returncode == 0, r.stderr
    assert "split: 40 10" in r.stdout and "seen: 40 sum: True" in r.stdout
    assert ("workers: [-1]" if workers == "0" else "workers: [0, 1]") in r.stdout
    assert "tensor dataset: [0, 1, 2, 3] [0, 2, 4, 6]" in r.stdout


def test_checkpoint_script(tmp_path):
    r = run("checkpoint_roundtrip.py", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "equal: True 7 ['a', 'b'] None" in r.stdout
    assert os.listdir(tmp_path) == ["state.pt"]


def test_device_query():
    r = run("device_query.py")
    assert r.returncode == 0, r.stderr
    assert "Using cpu device" in r.stdout and "has an unknown name: False" in r.stdout


def test_missing_api_names_it():
    r = run("missing_api.py")
    assert r.returncode == 1
    assert "before" in r.stdout and "never printed" not in r.stdout
    assert "torch.distributions.LKJCholesky is not implemented in retrograd" in r.stderr
    assert "missing_api.py\", line 7" in r.stderr and "runpy" not in r.stderr   # the script's frame, not ours


def test_arguments_and_exit_code(tmp_path):
    script = tmp_path / "exit.py"
    script.write_text("import sys, torch\nprint(sys.argv)\nsys.exit(int(sys.argv[1]))\n")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONPATH=os.path.abspath(SRC))
    r = subprocess.run([sys.executable, "-m", "retrograd", "run", str(script), "3", "--flag"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 3 and f"['{script}', '3', '--flag']" in r.stdout
    r = subprocess.run([sys.executable, "-m", "retrograd", "run", str(tmp_path / "nope.py")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "can't open file" in r.stderr


def test_import_hook_in_process():
    real = sys.modules.get("torch")
    own_getattr = vars(retrograd).get("__getattr__")   # retrograd's own (lazy subpackages)
    with torch_aliases():
        import torch
        import torch.nn.functional as F
        from torch.utils.data import DataLoader
        from torch import optim
        assert torch is retrograd
        assert DataLoader is retrograd.utils.data.DataLoader
        assert F is importlib.import_module("retrograd.nn.functional")
        assert optim is retrograd.optim
        assert hasattr(torch, "tensor") and not hasattr(torch, "no_such_api")
        with pytest.raises(NotImplementedError, match="torch.no_such_api is not implemented in retrograd"):
            torch.no_such_api
        with pytest.raises(NotImplementedError, match="torch.nn.functional.no_such_fn is not implemented"):
            F.no_such_fn(1)
        with pytest.raises(ModuleNotFoundError, match="torch.not_a_module is not implemented in retrograd"):
            importlib.import_module("torch.not_a_module")
        from torchvision import datasets, transforms
        assert datasets.MNIST is retrograd.datasets.MNIST and transforms.ToTensor is not None
    # afterwards: retrograd is itself again and the real torch (if any) is back
    assert sys.modules.get("torch") is real
    assert vars(retrograd).get("__getattr__") is own_getattr
    with pytest.raises(AttributeError, match="has no attribute 'no_such_api'"):
        retrograd.no_such_api


def test_quickstart_trains_saves_and_loads(tmp_path):
    r = run("quickstart_nn.py", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "NeuralNetwork(" in r.stdout and "Done!" in r.stdout and "Predicted:" in r.stdout
    acc = float(r.stdout.rsplit("final accuracy", 1)[1])
    assert acc >= 0.9, r.stdout
    assert os.listdir(tmp_path) == ["model.pth"]


@pytest.mark.skipif(not packaged_mnist_available(),
                    reason="the packaged MNIST is not fetched (retrograd demo mnist fetches it)")
def test_seed_training_loop_on_mnist():
    r = run("seed_mnist_cnn.py", "1280", "300")
    assert r.returncode == 0, r.stderr
    assert re.search(r"epoch 0: train accuracy [\d.]+%, test accuracy [\d.]+%", r.stdout), r.stdout


def test_script_saves_are_pytorch_files_whatever_the_name(tmp_path):
    # a PyTorch script's torch.save must give files PyTorch (and the script) can load: a state_dict
    # in "epoch_1.model" and a whole module in a BytesIO are written in PyTorch's zip format
    import io
    import zipfile
    from helpers import torch as real_torch
    path = str(tmp_path / "epoch_1.model")
    buf = io.BytesIO()
    with torch_aliases():
        import torch
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU())
        torch.save(net.state_dict(), path)
        torch.save(net, buf)
        want = net[0].weight.detach().numpy().copy()
        assert torch.load(path)["0.weight"].numpy().tolist() == want.tolist()
    assert zipfile.is_zipfile(path) and zipfile.is_zipfile(io.BytesIO(buf.getvalue()))
    # outside a PyTorch script retrograd's own format is the default again
    retrograd.save({"w": retrograd.ones(1)}, str(tmp_path / "own.ckpt"))
    assert not zipfile.is_zipfile(str(tmp_path / "own.ckpt"))
    if real_torch is not None:
        sd = real_torch.load(path)
        assert sd["0.weight"].numpy().tolist() == want.tolist()
