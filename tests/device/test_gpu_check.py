"""benchmarks/gpu_check.py, the script a GPU machine runs, kept from rotting: it runs here on the
emulated CUDA device (--emulate --quick) and must print its whole table with every row ok."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
def test_gpu_check_runs_on_the_emulated_device(tmp_path):
    env = dict(os.environ, OUT=str(tmp_path), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    p = subprocess.run([sys.executable, os.path.join("benchmarks", "gpu_check.py"), "--emulate", "--quick"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    for case in ("op table on cuda vs cpu", "seeds' CNN", "MLP", "GPT block", "MLP float16 autocast + GradScaler"):
        assert case in p.stdout
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["device"] == "Emulated CUDA device (NumPy)" and not report["failures"]
    rows = {r["case"].split(" (")[0]: r for r in report["rows"]}
    assert rows["op table on cuda vs cpu"]["passed"] > 40
    for case in ("seeds' CNN", "MLP", "GPT block", "MLP float16 autocast + GradScaler"):
        assert rows[case]["status"] == "ok" and rows[case]["retrograd_ms"] > 0 and rows[case]["retrograd_peak_mib"] > 0
    assert (tmp_path / "gpu_check.md").read_text().startswith("gpu_check on Emulated CUDA device")
