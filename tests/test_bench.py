"""The benchmark suite (benchmarks/, ``python -m benchmarks``, ``retrograd bench``) runs and
prints its table: checked on --quick's tiny sizes by the table's structure, never by timings."""
import json
import os
import re
import subprocess
import sys

import pytest

from helpers import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SRC = os.path.join(ROOT, "src")
sys.path.insert(0, ROOT)

from benchmarks import suite  # noqa: E402
from benchmarks.cases import CASES, select  # noqa: E402

COLUMNS = 6      # benchmark, retrograd, PyTorch, ratio, peak RSS rg, peak RSS torch
TIME = r"\d+(\.\d+)? (ms|s|µs/op)"


def _run(*args, timeout=600):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, SRC, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "benchmarks", *args], capture_output=True, text=True, cwd=ROOT,
                       env=env, timeout=timeout)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout


def _table(out):
    """The printed table's rows, split on its column gaps (two or more spaces)."""
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("benchmark") and "ratio" in ln)
    assert set(lines[start + 1]) == {"-"}
    rows = []
    for ln in lines[start + 2:]:
        if not ln.strip():
            break
        rows.append(re.split(r"\s{2,}", ln.strip()))
    return [re.split(r"\s{2,}", lines[start].strip())] + rows


def test_the_suite_names_every_case_the_issue_asks_for():
    names = {c.name for c in CASES}
    assert {"gpt", "lstm_lm", "cnn", "mlp", "resnet", "chain_fwd", "chain_bwd", "deep_build", "lstm", "encoder",
            "mha", "convt", "upsample_nearest", "depthwise", "strided", "gather", "sgd_step", "gelu"} <= names
    assert "deep1m_build" not in {c.name for c in select()}          # opt-in
    assert "deep1m_build" in {c.name for c in select(deep=True)}
    assert "import" not in {c.name for c in select(quick=True)}       # has no tiny size
    with pytest.raises(SystemExit, match="unknown case"):
        select(["no_such_case"])


@pytest.mark.slow
def test_quick_run_prints_a_row_per_case_and_writes_json_png_and_readme(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# title\n\nbefore\n" + suite.BEGIN + "\nold table\n" + suite.END + "\nafter\n",
                      encoding="utf-8")
    out = _run("--quick", "--png", str(tmp_path / "r.png"), "--json", str(tmp_path / "r.json"),
               "--readme", str(readme))
    table = _table(out)
    cases = select(quick=True)
    assert table[0] == suite.HEADER
    assert [row[0] for row in table[1:]] == [c.label for c in cases]
    for row, c in zip(table[1:], cases):
        assert len(row) == COLUMNS, row
        assert re.fullmatch(TIME, row[1]), row
        if torch is not None:
            assert re.fullmatch(TIME, row[2]) and re.fullmatch(r"\d+\.\d\dx", row[3]), row
        else:
            assert row[2] == row[3] == "-", row
        assert row[4] == row[5] == "-"                    # --quick measures no peak RSS unless --rss
    data = json.loads((tmp_path / "r.json").read_text())
    assert [r["name"] for r in data["results"]] == [c.name for c in cases]
    assert data["meta"]["threads"] == 1 and data["meta"]["quick"] is True
    for r in data["results"]:
        assert r["times"]["retrograd"] > 0 and r["samples"]["retrograd"] >= 1
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("# title\n\nbefore\n" + suite.BEGIN + "\n") and text.endswith(suite.END + "\nafter\n")
    assert "old table" not in text
    md = [ln for ln in text.splitlines() if ln.startswith("| ")]
    assert len(md) == 1 + len(cases) and all(ln.count(" | ") == COLUMNS - 1 for ln in md)
    if torch is not None:
        pytest.importorskip("matplotlib")
        assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_torch_retrograd_is_timed_alone_with_its_peak_rss():
    out = _run("--quick", "--no-torch", "--rss", "--cases", "chain_fwd,mlp", "--png", "")
    table = _table(out)
    assert [row[0] for row in table[1:]] == [c.label for c in select(["chain_fwd", "mlp"])]
    for row in table[1:]:
        assert re.fullmatch(TIME, row[1]) and row[2] == row[3] == "-" and row[5] == "-", row
        if suite._status("VmHWM") is not None:
            assert re.fullmatch(r"\d+ MiB", row[4]), row
    assert "without PyTorch" in out


def test_retrograd_bench_command_lists_the_cases(capsys):
    from retrograd.__main__ import main
    assert main(["bench", "--list"]) == 0
    listed = [ln.split()[0] for ln in capsys.readouterr().out.splitlines()]
    assert listed == [c.name for c in CASES]


def test_the_suite_times_this_checkouts_retrograd(tmp_path):
    """With only the repository root on the path (an installed retrograd elsewhere would be
    found first otherwise), the suite imports the retrograd of its own checkout's src/."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--no-torch", "--cases", "chain_fwd",
                        "--png", "", "--json", str(tmp_path / "r.json")], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    meta = json.loads((tmp_path / "r.json").read_text())["meta"]
    assert os.path.realpath(meta["retrograd_path"]) == os.path.realpath(os.path.join(SRC, "retrograd"))


def test_ratio_pairs_each_round():
    """The table's ratio is the median of the rounds' ratios (each round's two medians taken
    seconds apart), not the ratio of the two overall medians; none without both libraries."""
    per_round = {"retrograd": [1.0, 3.0, 2.0], "torch": [1.0, 1.0, 4.0]}     # rounds' ratios 1, 3, 0.5
    assert suite.paired_ratio(per_round) == pytest.approx(1.0)             # (overall medians: 2 / 1)
    assert suite.paired_ratio({"retrograd": [1.0, 2.0]}) is None
    r = {"times": {"retrograd": 2.0, "torch": 1.0}, "ratio": 1.5}
    assert suite._ratio(r) == 1.5 and suite._ratio(dict(r, ratio=None)) == 2.0
