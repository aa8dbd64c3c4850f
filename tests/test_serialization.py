"""Checkpoints: safetensors files, nested structures, atomic writes, corrupt files refused."""
import collections
import io
import os
import pickle
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import retrograd
from retrograd.serialization import CheckpointError

SRC = os.path.join(os.path.dirname(__file__), "..", "src")


def rt(a):
    return retrograd.tensor(np.asarray(a))


def _checkpoint():
    w = retrograd.randn(4, 3)
    return {
        "model": collections.OrderedDict([("fc.weight", w), ("fc.bias", retrograd.zeros(4))]),
        "optimizer": {"state": {0: {"momentum_buffer": retrograd.ones(4, 3)}, 1: {"step": rt(3.0)}},
                      "param_groups": [{"lr": 0.01, "momentum": 0.9, "nesterov": False, "weight_decay": 0,
                                        "dampening": 0, "maximize": False, "foreach": None, "params": [0, 1]}]},
        "rng_state": retrograd.get_rng_state(),
        "epoch": 2, "step": 1875, "name": "mnist", "losses": [2.3, 0.5, float("nan"), float("inf")],
        "shape": (28, 28), "nothing": None, "flags": [True, False], "dtype": retrograd.float64,
    }


def _same(a, b):
    if isinstance(a, retrograd.Tensor):
        assert isinstance(b, retrograd.Tensor) and a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    elif isinstance(a, dict):
        assert type(a) is type(b) and list(a.keys()) == list(b.keys())
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, float) and a != a:
        assert b != b
    else:
        assert a == b and type(a) is type(b)


def test_round_trip(tmp_path):
    ck = _checkpoint()
    p = tmp_path / "ck.safetensors"
    retrograd.save(ck, p)
    back = retrograd.load(p)
    _same(ck, back)
    assert back["optimizer"]["state"][0]["momentum_buffer"].numpy().flags.writeable
    assert [f for f in os.listdir(tmp_path)] == ["ck.safetensors"]      # no temporary file left behind


def test_file_is_plain_safetensors(tmp_path):
    from safetensors.numpy import load_file
    p = tmp_path / "ck.safetensors"
    retrograd.save({"w": rt(np.arange(6.0).reshape(2, 3))}, p)
    arrays = load_file(str(p))
    assert len(arrays) == 1 and next(iter(arrays.values())).tolist() == [[0, 1, 2], [3, 4, 5]]


def test_dtypes_and_layouts():
    objs = {str(dt): retrograd.tensor(np.arange(6).reshape(2, 3)).to(dt)
            for dt in (retrograd.float16, retrograd.float32, retrograd.float64, retrograd.int8, retrograd.int16,
                       retrograd.int32, retrograd.int64, retrograd.uint8, retrograd.bool, retrograd.complex64,
                       retrograd.complex128)}
    objs["scalar"] = rt(3.5)
    objs["empty"] = retrograd.zeros(0, 3)
    objs["transposed"] = retrograd.Tensor._make(np.arange(12.0).reshape(3, 4).T)   # non-contiguous
    objs["np_strided"] = np.arange(20).reshape(4, 5)[:, ::2]
    buf = io.BytesIO()
    retrograd.save(objs, buf)
    buf.seek(0)
    back = retrograd.load(buf)
    for k, v in objs.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(back[k], v)
        else:
            _same(v, back[k])


def test_shared_tensor_and_requires_grad():
    w = retrograd.randn(3, requires_grad=True)
    buf = io.BytesIO()
    retrograd.save({"a": w, "b": [w]}, buf)
    buf.seek(0)
    back = retrograd.load(buf)
    assert back["a"] is back["b"][0] and back["a"].requires_grad and back["a"].is_leaf


def test_map_location(tmp_path):
    p = tmp_path / "m.safetensors"
    retrograd.save({"x": rt([1.0, 2.0])}, p)
    for loc in ("cpu", retrograd.device("cpu"), {"cpu": "cpu"}, lambda t, where: t):
        assert retrograd.load(p, map_location=loc)["x"].tolist() == [1.0, 2.0]
    assert retrograd.load(p, weights_only=True)["x"].device.type == "cpu"


def test_unsupported_objects_are_refused_by_name():
    with pytest.raises(TypeError, match=r"cannot store an object of type .*Foo at obj\['a'\]\[1\]"):
        class Foo:
            pass
        retrograd.save({"a": [1, Foo()]}, io.BytesIO())
    with pytest.raises(TypeError, match="dict key"):
        retrograd.save({(1, 2): 3}, io.BytesIO())


def test_save_failure_keeps_previous_file(tmp_path):
    p = tmp_path / "ck.safetensors"
    retrograd.save({"v": 1}, p)
    with pytest.raises(TypeError):
        retrograd.save({"v": object()}, p)
    assert retrograd.load(p) == {"v": 1} and os.listdir(tmp_path) == ["ck.safetensors"]


def test_pickle_files_are_refused_without_running_them(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))
    p = tmp_path / "evil.pt"
    p.write_bytes(pickle.dumps(Evil()))
    with pytest.raises(CheckpointError, match="is not a valid PyTorch checkpoint: it is a pickle that does not start"):
        retrograd.load(p)
    assert not marker.exists()


def test_truncated_and_corrupted_files_name_the_file(tmp_path):
    p = tmp_path / "ck.safetensors"
    retrograd.save(_checkpoint(), p)
    raw = p.read_bytes()
    p.write_bytes(raw[: len(raw) - 10])
    with pytest.raises(CheckpointError, match=r"ck.safetensors is not a valid retrograd checkpoint.*truncated"):
        retrograd.load(p)
    flipped = bytearray(raw)
    flipped[-5] ^= 0x10
    p.write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError, match="checksum does not match"):
        retrograd.load(p)
    assert isinstance(CheckpointError("x"), RuntimeError)


# --- a save killed midway ---------------------------------------------------------------

_CHILD = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {src!r})
    import numpy as np
    import retrograd
    path, mode = sys.argv[1], sys.argv[2]
    retrograd.save({{"step": 1, "w": retrograd.tensor([1.0, 2.0])}}, path)
    if mode == "stall":
        def stalled_fsync(fd):
            print("writing", flush=True)
            time.sleep(60)
        os.fsync = stalled_fsync
        retrograd.save({{"step": 2, "w": retrograd.zeros(1000)}}, path)
    else:
        print("writing", flush=True)
        big = retrograd.tensor(np.random.rand(2_000_000))
        step = 2
        while True:
            retrograd.save({{"step": step, "w": big}}, path)
            step += 1
""")


@pytest.mark.parametrize("mode", ["stall", "loop"])
def test_save_killed_midway_leaves_a_valid_checkpoint(tmp_path, mode):
    p = tmp_path / "ck.safetensors"
    child = tmp_path / "child.py"
    child.write_text(_CHILD.format(src=os.path.abspath(SRC)))
    proc = subprocess.Popen([sys.executable, str(child), str(p), mode], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "writing"
        if mode == "loop":
            import time
            time.sleep(0.4)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    back = retrograd.load(p)       # whatever moment it died, the file is a whole checkpoint
    if mode == "stall":
        assert back["step"] == 1 and back["w"].tolist() == [1.0, 2.0]
    else:
        assert back["step"] >= 1


# --- fuzzing: any damage gives a clean CheckpointError ------------------------------------

_GOOD = None


def _good_bytes():
    global _GOOD
    if _GOOD is None:
        buf = io.BytesIO()
        retrograd.save({"w": rt(np.arange(12, dtype=np.float32).reshape(3, 4)), "b": [1, "x", None],
                        "s": {"step": 3}}, buf)
        _GOOD = buf.getvalue()
    return _GOOD


def _load_bytes(raw):
    return retrograd.load(io.BytesIO(raw))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600))
def test_fuzz_random_bytes(raw):
    with pytest.raises(CheckpointError):
        _load_bytes(raw)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fuzz_truncated(data):
    good = _good_bytes()
    n = data.draw(st.integers(0, len(good) - 1))
    with pytest.raises(CheckpointError):
        _load_bytes(good[:n])


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fuzz_bit_flips(data):
    good = bytearray(_good_bytes())
    flips = data.draw(st.lists(st.tuples(st.integers(0, len(good) - 1), st.integers(0, 7)), min_size=1,
                               max_size=3, unique_by=lambda t: t))
    for pos, bit in flips:
        good[pos] ^= 1 << bit
    if bytes(good) == _good_bytes():
        return
    with pytest.raises(CheckpointError):
        _load_bytes(bytes(good))


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_fuzz_spliced_garbage(data):
    good = _good_bytes()
    at = data.draw(st.integers(0, len(good)))
    junk = data.draw(st.binary(min_size=1, max_size=40))
    with pytest.raises(CheckpointError):
        _load_bytes(good[:at] + junk + good[at:])


@pytest.mark.skipif(not hasattr(retrograd, "nn") or not hasattr(getattr(retrograd, "nn", None), "Linear"),
                    reason="retrograd.nn is not available in this build")
def test_model_state_dict_round_trip(tmp_path):
    nn = retrograd.nn
    m = nn.Linear(3, 2)
    p = tmp_path / "m.safetensors"
    retrograd.save(m.state_dict(), p)
    m2 = nn.Linear(3, 2)
    m2.load_state_dict(retrograd.load(p))
    for a, b in zip(m.parameters(), m2.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.skipif(not hasattr(getattr(retrograd, "nn", None), "Linear"), reason="retrograd.nn is not available")
def test_checkpoint_that_does_not_fit_names_the_key_and_loads_nothing(tmp_path):
    nn = retrograd.nn
    p = tmp_path / "m.safetensors"
    retrograd.save(nn.Linear(4, 2).state_dict(), p)
    m = nn.Linear(3, 2)
    before = [t.detach().clone() for t in m.parameters()]
    with pytest.raises(RuntimeError, match=r"size mismatch for weight: copying a param with shape "
                                           r"torch.Size\(\[2, 4\]\) from checkpoint"):
        m.load_state_dict(retrograd.load(p))
    for a, b in zip(before, m.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.detach().numpy())


def test_pytorch_checkpoints_load_through_the_restricted_reader(tmp_path):
    # (tests/test_torch_checkpoints.py covers PyTorch's format in depth)
    torch = pytest.importorskip("torch")
    p = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2)}, p)
    assert retrograd.load(p)["w"].tolist() == [1.0, 1.0]
