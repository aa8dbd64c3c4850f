"""Whole programs around checkpoints, run under ``retrograd run``:

- tests/scripts/word_lm/train_lm.py trains a word-level language model of each kind, saves the
  whole model with ``torch.save(model, f)``, loads it back with an allowlist
  (``torch.serialization.safe_globals``) and with ``weights_only=False``, and samples from it;
- tests/scripts/gpt_ckpt/ trains a small GPT with real PyTorch and writes a ``ckpt.pt``
  (state_dicts, model_args, '_orig_mod.' keys); sample_gpt.py then loads it under retrograd
  and must give PyTorch's logits and greedy continuation.
"""
import os
import random
import re
import subprocess
import sys

import numpy as np
import pytest

from helpers import torch, needs_torch

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "scripts")
SRC = os.path.abspath(os.path.join(HERE, "..", "src"))


def _run(script, *args, cwd, retro=True):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    if retro:
        env["PYTHONPATH"] = SRC
    cmd = [sys.executable, "-W", "ignore"] + (["-m", "retrograd", "run"] if retro else [])
    r = subprocess.run(cmd + [script, *map(str, args)], capture_output=True, text=True, timeout=600, env=env,
                       cwd=cwd)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return r.stdout


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = random.Random(0)
    who, verb, what = "the cat dog bird man child".split(), "sees eats likes finds".split(), "a ball|the food|a stick"
    lines = [f"{rng.choice(who)} {rng.choice(verb)} {rng.choice(what.split('|'))} ." for _ in range(200)]
    p = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.parametrize("kind,extra", [("RNN_TANH", ()), ("RNN_RELU", ("--lr", "1")), ("LSTM", ("--tied",)),
                                        ("GRU", ()), ("Transformer", ())])
def test_whole_language_model_saved_and_reloaded(corpus, tmp_path, kind, extra):
    out = _run(os.path.join(SCRIPTS, "word_lm", "train_lm.py"), corpus, "--model", kind, "--save", "lm.pt",
               "--epochs", "2", *extra, cwd=tmp_path)
    losses = [float(v) for v in re.findall(r"valid loss ([\d.]+)", out.split("best valid")[0])]
    assert len(losses) == 2 and all(np.isfinite(losses))
    # without the allowlist, PyTorch's refusal; with it (or weights_only=False) the same model
    assert "default load: WeightsOnlyUnpicklingError" in out
    cls = "TransformerLM" if kind == "Transformer" else "RecurrentLM"
    assert f"reloaded {cls} {cls}" in out
    best, reloaded, trusted = (float(v) for v in re.search(
        r"best valid loss ([\d.]+) \| reloaded valid loss ([\d.]+) \| trusted valid loss ([\d.]+)", out).groups())
    assert abs(best - min(losses)) < 1e-4 and reloaded == best and trusted == best
    assert len(re.search(r"generated: (.*)", out).group(1).split()) == 10
    assert (tmp_path / "lm.pt").read_bytes()[:4] == b"PK\x03\x04"      # PyTorch's zip format


@needs_torch
def test_torch_refuses_the_same_file_the_same_way(corpus, tmp_path):
    out = _run(os.path.join(SCRIPTS, "word_lm", "train_lm.py"), corpus, "--model", "GRU", "--save", "lm.pt",
               "--epochs", "1", cwd=tmp_path, retro=False)
    assert "default load: UnpicklingError" in out and "reloaded RecurrentLM RecurrentLM" in out


@pytest.fixture(scope="module")
def torch_ckpt(tmp_path_factory):
    if torch is None:
        pytest.skip("PyTorch (torch==2.13.0) is not installed: it writes the checkpoint")
    d = tmp_path_factory.mktemp("gpt")
    rng = random.Random(1)
    (d / "names.txt").write_text("\n".join("".join(rng.choice("abcdelmnorst") for _ in range(rng.randint(3, 8)))
                                           for _ in range(400)) + "\n")
    _run(os.path.join(SCRIPTS, "gpt_ckpt", "train_gpt.py"), d / "names.txt", d / "out", "--iters", "15",
         "--compile-prefix", cwd=d, retro=False)
    return d


def _sample(d, retro):
    out = _run(os.path.join(SCRIPTS, "gpt_ckpt", "sample_gpt.py"), d / "out", "--start", "ab", cwd=d, retro=retro)
    logits = np.array([float(v) for v in re.search(r"logits (.*)", out).group(1).split()])
    return out, logits


def test_sampling_from_a_checkpoint_written_by_pytorch(torch_ckpt):
    ours, ours_logits = _sample(torch_ckpt, True)
    theirs, their_logits = _sample(torch_ckpt, False)
    assert re.search(r"iter_num 15 best_val_loss [\d.]+ optimizer steps 15", ours)
    assert ours.splitlines()[0] == theirs.splitlines()[0]
    np.testing.assert_allclose(ours_logits, their_logits, rtol=1e-5, atol=1e-5)
    assert re.search("greedy: (.*)", ours).group(1) == re.search("greedy: (.*)", theirs).group(1)
    samples = re.findall(r"sample: (.*)", ours)
    assert len(samples) == 2 and all(s.startswith("ab") and len(s) == 22 for s in samples)
