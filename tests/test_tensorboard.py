"""retrograd.utils.tensorboard: event files written through tensorboardX, read back here.

``read_events`` parses the TFRecord framing (length, masked CRC-32C of the length, the
record, masked CRC-32C of the record: checked with tensorboardX's own crc32c) and decodes
each record with tensorboardX's Event protobuf.
"""
import glob
import io
import os
import re
import struct
import subprocess
import sys

import numpy as np
import pytest

import retrograd
from retrograd import nn

tbx = pytest.importorskip("tensorboardX")
from tensorboardX.proto.event_pb2 import Event  # noqa: E402
from tensorboardX.proto.plugin_hparams_pb2 import HParamsPluginData  # noqa: E402
from tensorboardX.proto.graph_pb2 import GraphDef  # noqa: E402
from tensorboardX.record_writer import masked_crc32c  # noqa: E402

from retrograd.utils.tensorboard import SummaryWriter  # noqa: E402

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def read_events(folder):
    """Every Event in ``folder``'s event files (not its subfolders), in file order."""
    out = []
    for path in sorted(glob.glob(os.path.join(folder, "events.out.tfevents.*"))):
        data = open(path, "rb").read()
        pos = 0
        while pos < len(data):
            head = data[pos:pos + 8]
            (n,) = struct.unpack("<Q", head)
            assert struct.unpack("<I", data[pos + 8:pos + 12])[0] == masked_crc32c(head)
            rec = data[pos + 12:pos + 12 + n]
            assert struct.unpack("<I", data[pos + 12 + n:pos + 16 + n])[0] == masked_crc32c(rec)
            out.append(Event.FromString(rec))
            pos += 16 + n
    return out


def values(folder, tag):
    """[(step, Summary.Value)] for ``tag``."""
    return [(e.step, v) for e in read_events(folder) if e.HasField("summary") for v in e.summary.value
            if v.tag == tag]


def scalars(folder, tag):
    return [(s, v.simple_value) for s, v in values(folder, tag)]


def test_scalars_from_numbers_and_tensors(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(5):
            w.add_scalar("loss/train", retrograd.tensor(1.0 / (step + 1)), step)
        w.add_scalar("lr", 0.25, 7)
        w.add_scalar("acc", np.float32(0.75), 3, new_style=True)
        w.add_scalar("dbl", retrograd.tensor([0.125], dtype=retrograd.float64), 3, new_style=True,
                     double_precision=True)
        with pytest.raises(ValueError, match="scalar should be 0D"):
            w.add_scalar("bad", retrograd.ones(2), 0)
    got = scalars(tmp_path, "loss/train")
    assert [s for s, _ in got] == [0, 1, 2, 3, 4]
    np.testing.assert_allclose([v for _, v in got], [1, 1 / 2, 1 / 3, 1 / 4, 1 / 5], rtol=1e-7)
    assert scalars(tmp_path, "lr") == [(7, 0.25)]
    [(step, v)] = values(tmp_path, "acc")
    assert step == 3 and list(v.tensor.float_val) == [0.75] and v.metadata.plugin_data.plugin_name == "scalars"
    [(_, v)] = values(tmp_path, "dbl")
    assert list(v.tensor.double_val) == [0.125]
    assert read_events(tmp_path)[0].file_version == "brain.Event:2"


def test_add_scalars_writes_one_run_per_key_as_torch_names_them(tmp_path):
    w = SummaryWriter(tmp_path)
    for step in range(3):
        w.add_scalars("run/14h", {"xsinx": step * 2.0, "xcosx": retrograd.tensor(step + 0.5)}, step)
    w.close()
    assert sorted(d for d in os.listdir(tmp_path) if os.path.isdir(tmp_path / d)) == ["run_14h_xcosx", "run_14h_xsinx"]
    assert scalars(tmp_path / "run_14h_xsinx", "run/14h") == [(0, 0.0), (1, 2.0), (2, 4.0)]
    assert scalars(tmp_path / "run_14h_xcosx", "run/14h") == [(0, 0.5), (1, 1.5), (2, 2.5)]


def test_histogram_counts_every_value(tmp_path):
    x = retrograd.randn(1000, generator=retrograd.Generator().manual_seed(0))
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", x, 2)
        w.add_histogram("w_auto", x.double(), 3, bins="auto")
    a = x.numpy().astype(np.float64)
    for tag in ("w", "w_auto"):
        [(_, v)] = values(tmp_path, tag)
        h = v.histo
        assert h.num == 1000 and sum(h.bucket) == 1000
        np.testing.assert_allclose([h.min, h.max, h.sum, h.sum_squares], [a.min(), a.max(), a.sum(), (a * a).sum()],
                                   rtol=1e-6)


def _png(v):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(v.image.encoded_image_string)))


def _as_uint8(a):
    # PyTorch's documented scaling: floats in [0, 1] times 255, uint8 as is
    return a if a.dtype == np.uint8 else (a.astype(np.float32) * 255).clip(0, 255).astype(np.uint8)


@pytest.mark.parametrize("fmt", ["CHW", "HWC", "HW"])
def test_image_dataformats(tmp_path, fmt):
    pytest.importorskip("PIL")
    g = retrograd.Generator().manual_seed(1)
    shape = {"CHW": (3, 4, 5), "HWC": (4, 5, 3), "HW": (4, 5)}[fmt]
    img = retrograd.rand(*shape, generator=g)
    with SummaryWriter(tmp_path) as w:
        w.add_image("img", img, 1, dataformats=fmt)
        w.add_image("u8", (img * 255).to(retrograd.uint8), 1, dataformats=fmt)
    a = img.numpy()
    hwc = {"CHW": lambda: a.transpose(1, 2, 0), "HWC": lambda: a, "HW": lambda: np.repeat(a[:, :, None], 3, 2)}[fmt]()
    [(step, v)] = values(tmp_path, "img")
    assert step == 1 and (v.image.height, v.image.width) == (4, 5)
    np.testing.assert_array_equal(_png(v), _as_uint8(hwc))
    [(_, v)] = values(tmp_path, "u8")
    np.testing.assert_array_equal(_png(v), (hwc * 255).astype(np.uint8))


def test_images_batch_is_one_grid(tmp_path):
    pytest.importorskip("PIL")
    imgs = retrograd.rand(4, 3, 2, 3, generator=retrograd.Generator().manual_seed(2))
    with SummaryWriter(tmp_path) as w:
        w.add_images("batch", imgs, 0)
        w.add_images("batch_nhwc", imgs.permute(0, 2, 3, 1), 0, dataformats="NHWC")
    for tag in ("batch", "batch_nhwc"):
        [(_, v)] = values(tmp_path, tag)
        px = _png(v)
        # up to 8 images a row in PyTorch's grid: four images side by side
        assert px.shape == (2, 4 * 3, 3)
        for i in range(4):
            np.testing.assert_array_equal(px[:, 3 * i:3 * i + 3], _as_uint8(imgs[i].numpy().transpose(1, 2, 0)))


def test_text(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "**lr** = 0.1", 4)
    [(step, v)] = values(tmp_path, "notes/text_summary")
    assert step == 4 and v.metadata.plugin_data.plugin_name == "text"
    assert list(v.tensor.string_val) == [b"**lr** = 0.1"]


def test_hparams_go_to_their_own_run_with_metrics(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.1, "bsize": 32, "opt": "sgd", "bn": True}, {"hparam/acc": retrograd.tensor(0.75)},
                      hparam_domain_discrete={"opt": ["sgd", "adam"]}, run_name="trial1", global_step=5)
        with pytest.raises(TypeError, match="hparam_dict and metric_dict should be dictionary."):
            w.add_hparams([("lr", 1)], {})
        with pytest.raises(TypeError, match="should be a list of same type"):
            w.add_hparams({"opt": "sgd"}, {"m": 1.0}, hparam_domain_discrete={"opt": [1, 2]})
    run = tmp_path / "trial1"
    assert scalars(run, "hparam/acc") == [(5, 0.75)]
    plugin = {v.tag: HParamsPluginData.FromString(v.metadata.plugin_data.content) for _, v in
              sum((values(run, t) for t in ("_hparams_/experiment", "_hparams_/session_start_info")), [])}
    ssi = plugin["_hparams_/session_start_info"].session_start_info
    assert ssi.hparams["lr"].number_value == 0.1 and ssi.hparams["bsize"].number_value == 32
    assert ssi.hparams["opt"].string_value == "sgd" and ssi.hparams["bn"].bool_value is True
    exp = plugin["_hparams_/experiment"].experiment
    opt = [h for h in exp.hparam_infos if h.name == "opt"][0]
    assert [x.string_value for x in opt.domain_discrete.values] == ["sgd", "adam"]
    assert [m.name.tag for m in exp.metric_infos] == ["hparam/acc"]


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.features(x)).softmax(-1)


def _graph(folder):
    gds = [GraphDef.FromString(e.graph_def) for e in read_events(folder) if e.graph_def]
    assert len(gds) == 1
    return {n.name: n for n in gds[0].node}


def test_add_graph_records_retrograds_graph_grouped_by_module(tmp_path):
    net = _Net()
    with SummaryWriter(tmp_path) as w:
        w.add_graph(net, retrograd.randn(3, 4))
    nodes = _graph(tmp_path)
    assert nodes["input/input.0"].op == "IO Node"
    for p in ("features/0/weight", "features/0/bias", "head/weight", "head/bias"):
        assert nodes["_Net/" + p].op == "Parameter"
    first = nodes["_Net/features/0/Addmm"]
    assert first.op == "AddmmBackward0"
    assert list(first.input) == ["_Net/features/0/bias", "input/input.0", "_Net/features/0/T"]
    assert nodes["_Net/features/0/T"].input == ["_Net/features/0/weight"]
    assert list(nodes["_Net/features/1/Relu"].input) == ["_Net/features/0/Addmm"]
    assert "_Net/head/Addmm" in nodes["_Net/Softmax"].input
    out = nodes["output/output.0"]
    assert list(out.input) == ["_Net/Softmax"]
    assert [d.size for d in out.attr["_output_shapes"].list.shape[0].dim] == [3, 2]
    assert [d.size for d in first.attr["_output_shapes"].list.shape[0].dim] == [3, 8]
    # every input of every node is a node of the graph
    assert all(i in nodes for n in nodes.values() for i in n.input)
    # the model's own parameters are left as they were, with no gradient
    assert all(p.grad is None for p in net.parameters())


def test_add_graph_with_several_inputs_and_outputs(tmp_path):
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, a, b):
            h = self.lin(a) * b
            return h.sum(), (h.exp(),)

    with SummaryWriter(tmp_path) as w:
        w.add_graph(Two(), (retrograd.randn(1, 2), retrograd.randn(1, 2)))
    nodes = _graph(tmp_path)
    assert {"input/input.0", "input/input.1", "output/output.0", "output/output.1"} <= set(nodes)
    assert "input/input.1" in nodes["Two/Mul"].input


def test_figure(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(2, 1), dpi=50)
    plt.plot([0, 1], [1, 0])
    with SummaryWriter(tmp_path) as w:
        w.add_figure("fig", fig, 9)
    [(step, v)] = values(tmp_path, "fig")
    assert step == 9 and (v.image.width, v.image.height) == (100, 50)


def test_flush_writes_before_close_and_close_is_final(tmp_path):
    w = SummaryWriter(tmp_path, flush_secs=1000)
    w.add_scalar("x", 1.0, 0)
    w.flush()
    assert scalars(tmp_path, "x") == [(0, 1.0)]
    w.add_scalar("x", 2.0, 1)
    w.close()
    assert scalars(tmp_path, "x") == [(0, 1.0), (1, 2.0)]


def test_default_log_dir_is_runs_date_host_comment(tmp_path, monkeypatch):
    import socket
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_lr0.1")
    w.close()
    d = w.get_logdir()
    assert re.fullmatch(r"runs/[A-Z][a-z]{2}\d\d_\d\d-\d\d-\d\d_" + re.escape(socket.gethostname()) + "_lr0.1", d)
    assert glob.glob(os.path.join(tmp_path, d, "events.out.tfevents.*"))


def _run(code, *args, cwd=None):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, *args, "-c", code] if not args else [sys.executable, *args],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def test_writing_does_not_import_pytorch(tmp_path):
    code = ("import sys, retrograd\nfrom retrograd.utils.tensorboard import SummaryWriter\n"
            f"w = SummaryWriter({str(tmp_path)!r}); w.add_scalar('a', 1.0, 0); w.close()\n"
            "print('torch' in sys.modules)")
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_missing_tensorboardx_names_the_extra(tmp_path):
    code = ("import sys; sys.modules['tensorboardX'] = None\n"
            "from retrograd.utils.tensorboard import SummaryWriter\n"
            "try:\n    SummaryWriter('x')\nexcept ModuleNotFoundError as e:\n    print(e)\n")
    r = _run(code, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "pip install retrograd[tensorboard]" in r.stdout


def test_torch_utils_tensorboard_under_retrograd_run(tmp_path):
    script = tmp_path / "log.py"
    script.write_text(
        "import torch\nfrom torch.utils.tensorboard import SummaryWriter\n"
        "w = SummaryWriter('logs')\n"
        "m = torch.nn.Linear(3, 1)\n"
        "opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "x, y = torch.randn(8, 3), torch.randn(8, 1)\n"
        "for i in range(4):\n"
        "    loss = torch.nn.functional.mse_loss(m(x), y)\n"
        "    opt.zero_grad(); loss.backward(); opt.step()\n"
        "    w.add_scalar('loss', loss.item(), i)\n"
        "w.add_histogram('weight', m.weight, 4)\n"
        "w.close()\nprint(type(w).__module__)\n")
    r = _run(None, "-m", "retrograd", "run", str(script), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "retrograd.utils.tensorboard.writer"
    got = scalars(tmp_path / "logs", "loss")
    assert [s for s, _ in got] == [0, 1, 2, 3] and got[0][1] > got[-1][1]


# --- a training script that logs its run (tests/scripts/tb_logging/train_logged.py) -----------

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "tb_logging", "train_logged.py")


def test_logged_training_script_under_retrograd_run(tmp_path):
    r = _run(None, "-m", "retrograd", "run", SCRIPT, "logs", "--epochs", "3", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    epochs = [tuple(float(v) for v in m) for m in
              re.findall(r"epoch \d+ step (\d+) train ([\d.]+) test ([\d.]+) acc ([\d.]+)", r.stdout)]
    assert len(epochs) == 3
    logs = tmp_path / "logs"
    steps = scalars(logs, "Loss/train_step")
    assert [s for s, _ in steps] == list(range(int(epochs[-1][0])))
    np.testing.assert_allclose([v for _, v in scalars(logs / "Loss_train", "Loss")], [e[1] for e in epochs], atol=1e-6)
    np.testing.assert_allclose([v for _, v in scalars(logs / "Loss_test", "Loss")], [e[2] for e in epochs], atol=1e-6)
    np.testing.assert_allclose([v for _, v in scalars(logs, "Accuracy/test")], [e[3] for e in epochs], atol=1e-4)
    for name, n in (("fc1.weight", 32), ("fc1.bias", 16), ("fc2.weight", 32), ("fc2.bias", 2)):
        hs = values(logs, name)
        assert [s for s, _ in hs] == [0, 1, 2] and all(v.histo.num == n for _, v in hs)
    imgs = values(logs, "fc1_weight")
    assert [(v.image.height, v.image.width) for _, v in imgs] == [(16, 2)] * 3
    assert list(values(logs, "notes/text_summary")[0][1].tensor.string_val) == [b"two moons, 16 hidden units"]
    nodes = _graph(logs)
    assert nodes["Net/fc1/Addmm"].op == "AddmmBackward0" and "Net/fc1/Addmm" in nodes["Net/Tanh"].input
    assert list(nodes["Net/fc2/Addmm"].input) == ["Net/fc2/bias", "Net/Tanh", "Net/fc2/T"]
    assert scalars(logs / "hparams", "hparam/accuracy") == [(0, pytest.approx(epochs[-1][3], abs=1e-4))]


def test_reopening_after_close_and_two_writers_in_one_second_keep_every_event(tmp_path):
    w = SummaryWriter(tmp_path)
    w.add_scalar("a", 1.0, 0)
    w.add_scalars("s", {"x": 1.0}, 0)
    w.close()
    w.add_scalar("a", 2.0, 1)           # a closed writer reopens, into a new file
    w.add_scalars("s", {"x": 2.0}, 1)
    w.close()
    w2 = SummaryWriter(tmp_path)
    w2.add_scalar("a", 3.0, 2)
    w2.close()
    files = glob.glob(os.path.join(tmp_path, "events.out.tfevents.*"))
    assert len(files) == 3 and all(re.search(rf"\.{os.getpid()}\.\d+$", f) for f in files)
    assert sorted(scalars(tmp_path, "a")) == [(0, 1.0), (1, 2.0), (2, 3.0)]
    assert sorted(scalars(tmp_path / "s_x", "s")) == [(0, 1.0), (1, 2.0)]
