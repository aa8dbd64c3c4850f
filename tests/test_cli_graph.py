"""``retrograd graph``: scripts written for PyTorch (``import torch``) run on retrograd through
the same import hook as ``retrograd run``; a --var that is not a tensor is named by its type."""
import json

from retrograd.cli.graph import main

TORCH_SCRIPT = """
import torch
import torch.nn as nn
x = torch.tensor([1., 2.], requires_grad=True)
lin = nn.Linear(2, 1)
z = (lin(x) ** 2).sum()
z.backward()
"""


def test_plain_torch_script_runs_on_retrograd(tmp_path, capsys):
    s = tmp_path / "s.py"
    s.write_text(TORCH_SCRIPT)
    out = tmp_path / "g.json"
    assert main([str(s), "-o", str(out)]) == 0, capsys.readouterr().err
    d = json.loads(out.read_text())
    assert {"x", "weight", "bias"} <= {n.get("name") for n in d["nodes"]}
    assert "SumBackward0" in {n["label"] for n in d["nodes"] if n["kind"] == "function"}
    import sys
    assert "torch" not in sys.modules or not sys.modules["torch"].__name__.startswith("retrograd")


def test_var_of_the_wrong_type_names_its_real_type(tmp_path, capsys):
    s = tmp_path / "s.py"
    s.write_text("import numpy as np\nclass Tensor:\n    pass\nz = Tensor()\na = np.zeros(2)\nn = 3\n")
    capsys.readouterr()
    assert main([str(s), "--var", "z", "-o", str(tmp_path / "g.json")]) == 2
    assert "'z' is a __main__.Tensor, not a retrograd Tensor" in capsys.readouterr().err
    assert main([str(s), "--var", "a", "-o", str(tmp_path / "g.json")]) == 2
    assert "'a' is a numpy.ndarray, not a retrograd Tensor" in capsys.readouterr().err
    assert main([str(s), "--var", "n", "-o", str(tmp_path / "g.json")]) == 2
    assert "'n' is an int, not a retrograd Tensor" in capsys.readouterr().err
