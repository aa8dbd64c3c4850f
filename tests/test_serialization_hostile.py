"""Checkpoints from an attacker, a crash or an odd file system.

The SHA-256 in a checkpoint is unkeyed, so ``forge`` below recomputes it: every hostile
file here passes the checksum and must still be refused by its content (a CheckpointError,
with no large allocation and no hang), or load correctly.
"""
import collections
import hashlib
import io
import json
import os
import random
import signal
import stat
import struct
import subprocess
import sys
import textwrap
import time
import tracemalloc

import numpy as np
import pytest

import retrograd
from retrograd.serialization import CheckpointError

from helpers import torch, needs_torch, mutate_bytes

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "src"))
MiB = 1 << 20

_ST = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
       "U8": "u1", "BOOL": "?", "C64": "<c8"}


def forge(root=None, arrays=(), structure=None, entries=None, body=None, meta=None):
    """A retrograd checkpoint with a valid digest over whatever it holds.

    ``arrays``: {key: np.ndarray}; ``structure``: the raw structure text (default: JSON of
    {"root": root}); ``entries``/``body`` override the tensor table and the data bytes.
    """
    arrays = dict(arrays)
    if entries is None:
        entries, parts, off = {}, [], 0
        for k, a in arrays.items():
            a = np.ascontiguousarray(a)
            st = next(n for n, d in _ST.items() if np.dtype(d) == a.dtype.newbyteorder("<"))
            entries[k] = {"dtype": st, "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
            parts.append(a.tobytes())
            off += a.nbytes
        body = b"".join(parts) if body is None else body
    body = b"" if body is None else body
    if structure is None:
        structure = json.dumps({"root": root}, separators=(",", ":"))
    h = hashlib.sha256()
    h.update(structure.encode("utf-8", "surrogatepass"))
    h.update(b"\0")
    h.update(json.dumps(entries, sort_keys=True, separators=(",", ":")).encode("utf-8"))
    h.update(b"\0")
    h.update(body)
    md = {"format": "retrograd-checkpoint", "version": "1", "structure": structure, "sha256": h.hexdigest()}
    md.update(meta or {})
    header = dict(entries)
    header["__metadata__"] = md
    hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hb += b" " * (-len(hb) % 8)
    return struct.pack("<Q", len(hb)) + hb + body


def load_bytes(raw, **kw):
    return retrograd.load(io.BytesIO(raw), **kw)


def traced_load(raw, **kw):
    """(result or exception, peak bytes allocated while loading)."""
    tracemalloc.start()
    try:
        try:
            out = load_bytes(raw, **kw)
        except Exception as e:  # noqa: BLE001 - the caller checks the type
            out = e
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_forge_makes_loadable_files():
    raw = forge({"dict": [["w", {"tensor": "0", "dtype": "float32"}]]}, {"0": np.arange(3, dtype=np.float32)})
    assert load_bytes(raw)["w"].tolist() == [0.0, 1.0, 2.0]


# --- 1. memory bombs ---------------------------------------------------------------------

def test_npscalar_of_a_string_dtype_allocates_nothing():
    raw = forge({"npscalar": 10 ** 10, "dtype": "S1"})
    assert len(raw) < 400
    out, peak = traced_load(raw)
    assert isinstance(out, CheckpointError) and "NumPy scalar" in str(out)
    assert peak < MiB


@pytest.mark.parametrize("entry", [
    {"npscalar": 300, "dtype": "int8"}, {"npscalar": "x", "dtype": "float32"},
    {"npscalar": [1, 2, 3], "dtype": "complex64"}, {"npscalar": 1, "dtype": "U100000000"},
    {"npscalar": 1, "dtype": "V100000000"}, {"npscalar": 1, "dtype": "O"}, {"npscalar": 1, "dtype": 5},
])
def test_npscalar_entries_are_checked(entry):
    with pytest.raises(CheckpointError):
        load_bytes(forge(entry))


def test_npscalars_round_trip():
    vals = [np.float32(1.5), np.int8(-3), np.uint64(2 ** 63), np.complex128(1 - 2j), np.bool_(True), np.float16(2)]
    buf = io.BytesIO()
    retrograd.save(vals, buf)
    back = load_bytes(buf.getvalue())
    assert [type(v) for v in back] == [type(v) for v in vals] and back == vals


def test_shared_array_references_do_not_copy():
    big = np.zeros(MiB, dtype=np.float32)    # 4 MiB
    raw = forge([{"ndarray": "0", "dtype": "float32"}] * 1000, {"0": big})
    out, peak = traced_load(raw)
    assert isinstance(out, list) and len(out) == 1000
    assert all(x is out[0] for x in out)
    assert peak < 2 * len(raw)


def test_shared_tensor_references_do_not_copy():
    raw = forge([{"tensor": "0", "dtype": "float32"}] * 1000, {"0": np.zeros(MiB, dtype=np.float32)})
    out, peak = traced_load(raw)
    assert all(x is out[0] for x in out) and peak < 2 * len(raw)


def test_shared_arrays_round_trip_shared():
    a = np.arange(4.0)
    buf = io.BytesIO()
    retrograd.save({"x": a, "y": [a]}, buf)
    back = load_bytes(buf.getvalue())
    assert back["x"] is back["y"][0] and back["x"].tolist() == [0, 1, 2, 3] and back["x"].flags.writeable


@pytest.mark.parametrize("declared", ["complex128", "float64", "int64", "float32"])
def test_dtype_that_differs_from_the_stored_one_is_refused(declared):
    raw = forge({"tensor": "0", "dtype": declared}, {"0": np.ones(MiB, dtype=bool)})
    out, peak = traced_load(raw)
    assert isinstance(out, CheckpointError) and "stored as BOOL" in str(out)
    assert peak < 2 * len(raw)


def test_same_tensor_with_two_dtypes_is_refused():
    raw = forge([{"tensor": "0", "dtype": "float32"}, {"ndarray": "0", "dtype": "float32"}],
                {"0": np.ones(4, np.float32)})
    with pytest.raises(CheckpointError, match="different kinds"):
        load_bytes(raw)


@pytest.mark.parametrize("entry", [
    {"dtype": "F32", "shape": [10 ** 9], "data_offsets": [0, 16]},
    {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 4 * 10 ** 9]},
    {"dtype": "F32", "shape": [2 ** 62, 2 ** 62, 0], "data_offsets": [0, 16]},
    {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]},
    {"dtype": "F32", "shape": [True] * 4, "data_offsets": [0, 16]},
    {"dtype": "F32", "shape": [4], "data_offsets": [16, 0]},
    {"dtype": "F32", "shape": [4], "data_offsets": [0, 16.0]},
    {"dtype": "F32", "shape": [1] * 100000, "data_offsets": [0, 4]},
    {"dtype": "X9", "shape": [4], "data_offsets": [0, 16]},
    {"dtype": "F32", "shape": "4", "data_offsets": [0, 16]},
    [1, 2],
])
def test_tensor_table_is_checked_against_the_file(entry):
    raw = forge({"tensor": "0", "dtype": "float32"}, entries={"0": entry}, body=bytes(16))
    out, peak = traced_load(raw)
    assert isinstance(out, CheckpointError), out
    assert peak < 2 * len(raw) + 4 * MiB       # the fixed allowance for parsing JSON


def test_overlapping_tensor_ranges_are_refused():
    entries = {"0": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
               "1": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    raw = forge([{"tensor": "0", "dtype": "float32"}, {"tensor": "1", "dtype": "float32"}],
                entries=entries, body=bytes(16))
    with pytest.raises(CheckpointError, match="overlap"):
        load_bytes(raw)


def test_non_boolean_bytes_in_a_bool_tensor_are_refused():
    raw = forge({"tensor": "0", "dtype": "bool"}, entries={"0": {"dtype": "BOOL", "shape": [2],
                                                                 "data_offsets": [0, 2]}}, body=b"\x01\x07")
    with pytest.raises(CheckpointError, match="not booleans"):
        load_bytes(raw)


def test_structure_that_would_parse_far_bigger_than_the_file_is_refused():
    structure = '{"root":[' + ",".join(["[]"] * 3_000_000) + "]}"     # ~9 MB -> ~200 MB of lists
    raw = forge(structure=structure)
    out, peak = traced_load(raw)
    assert isinstance(out, CheckpointError) and "memory" in str(out)
    assert peak < 2 * len(raw) + 4 * MiB


def test_ordinary_structures_fit_and_the_allowance_can_be_raised(monkeypatch):
    import retrograd.serialization as ser
    ck = {"losses": [0.1 * i for i in range(10000)], "history": [{"epoch": i, "acc": 0.5} for i in range(1000)],
          "model": {f"layer{i}.weight": retrograd.zeros(4) for i in range(300)}}
    buf = io.BytesIO()
    retrograd.save(ck, buf)
    assert load_bytes(buf.getvalue())["losses"][-1] == ck["losses"][-1]
    big = {"losses": [0.1 * i for i in range(300000)]}      # numbers belong in a tensor, but a trusted
    buf = io.BytesIO()                                       # file can still be read
    retrograd.save(big, buf)
    with pytest.raises(CheckpointError, match="STRUCTURE_MEMORY_ALLOWANCE"):
        load_bytes(buf.getvalue())
    monkeypatch.setattr(ser, "STRUCTURE_MEMORY_ALLOWANCE", 64 * MiB)
    assert load_bytes(buf.getvalue()) == big


# --- 2. malformed structures --------------------------------------------------------------

_MALFORMED = [
    "not json", "[]", '{"nope": 1}', '{"root": {"dict": 5}}', '{"root": {"dict": [[1]]}}',
    '{"root": {"dict": [[[1], 2]]}}', '{"root": {"set": [[1]]}}', '{"root": {"tuple": 7}}',
    '{"root": {"tensor": 5}}', '{"root": {"tensor": "9"}}', '{"root": {"tensor": "0", "dtype": 3}}',
    '{"root": {"tensor": "0", "dtype": "float32", "device": 4}}',
    '{"root": {"tensor": "0", "dtype": "float32", "requires_grad": "yes"}}',
    '{"root": {"ndarray": ["0"]}}', '{"root": {"complex": "x"}}', '{"root": {"complex": [1]}}',
    '{"root": {"float": "1e400000"}}', '{"root": {"float": 3}}', '{"root": {"torch_dtype": "float128"}}',
    '{"root": {"torch_dtype": [1]}}', '{"root": {"device": "tpu:0"}}', '{"root": {"device": 1}}',
    '{"root": {}}', '{"root": {"zzz": 1}}', '{"root": 1' + "0" * 5000 + "}",
    '{"root": ' + "[" * 100000 + "]" * 100000 + "}",
    '{"root": ' + '{"tuple": [' * 5000 + "]}" * 5000 + "}",
    '{"root": ' + '{"dict": [[1, ' * 400 + "1" + "]]}" * 400 + "}",
    "\ud800",
]


@pytest.mark.parametrize("structure", _MALFORMED, ids=range(len(_MALFORMED)))
def test_malformed_structures_raise_checkpoint_error(structure):
    raw = forge(structure=structure, arrays={"0": np.ones(2, np.float32)})
    with pytest.raises(CheckpointError):
        load_bytes(raw)


@pytest.mark.parametrize("header", [b"[" * 100000, b"{" * 100000, b'{"a":' * 50000, b"[]", b"7",
                                    b'{"__metadata__": 5}', b'{"__metadata__": {"format": 5}}',
                                    b'{"__metadata__": {"format": "retrograd-checkpoint", "structure": 1}}',
                                    b"\xff\xfe"], ids=range(9))
def test_malformed_outer_headers_raise_checkpoint_error(header):
    raw = struct.pack("<Q", len(header)) + header
    with pytest.raises(CheckpointError):
        load_bytes(raw)


def test_deeply_nested_save_is_refused_at_save_time():
    x = []
    for _ in range(200):
        x = [x]
    with pytest.raises(ValueError, match="nested deeper"):
        retrograd.save(x, io.BytesIO())
    y = []
    for _ in range(45):         # 90 levels: dicts holding tuples
        y = {"k": (y,)}
    buf = io.BytesIO()
    retrograd.save(y, buf)
    assert load_bytes(buf.getvalue()) == y


# --- 3. things that are not regular files --------------------------------------------------

_ISOLATED = textwrap.dedent("""
    import resource, sys
    sys.path.insert(0, {src!r})
    resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))
    import retrograd
    from retrograd.serialization import CheckpointError
    try:
        retrograd.load(sys.argv[1])
    except CheckpointError as e:
        print("CheckpointError:", e)
""")


def _load_isolated(tmp_path, target, timeout=30):
    script = tmp_path / "iso.py"
    script.write_text(_ISOLATED.format(src=SRC))
    try:
        r = subprocess.run([sys.executable, str(script), str(target)], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading {target} hung")
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_dev_zero_and_links_to_it_are_refused(tmp_path):
    link = tmp_path / "ck.safetensors"
    link.symlink_to("/dev/zero")
    for target in ("/dev/zero", link):
        out = _load_isolated(tmp_path, target)
        assert "CheckpointError" in out and "not a regular file" in out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "ck.fifo"
    os.mkfifo(fifo)
    out = _load_isolated(tmp_path, fifo, timeout=20)
    assert "not a regular file" in out


def test_directory_raises_like_open(tmp_path):
    with pytest.raises(IsADirectoryError):
        retrograd.load(tmp_path)
    with pytest.raises(FileNotFoundError):
        retrograd.load(tmp_path / "missing.safetensors")


def test_endless_stream_is_read_only_as_far_as_declared():
    class Endless(io.RawIOBase):
        reads = 0

        def readable(self):
            return True

        def readinto(self, b):
            Endless.reads += len(b)
            b[:] = b"\x10" * len(b)     # a header length of 0x1010101010101010
            return len(b)
    with pytest.raises(CheckpointError, match="header claims"):
        retrograd.load(Endless())
    assert Endless.reads < MiB


def test_stream_body_is_read_in_bounded_pieces():
    raw = forge({"tensor": "0", "dtype": "float32"}, entries={"0": {"dtype": "F32", "shape": [2 ** 28],
                                                                     "data_offsets": [0, 2 ** 30]}}, body=bytes(64))

    class Pipe(io.RawIOBase):     # not seekable: the size is unknown until the bytes arrive
        def __init__(self):
            self.src = io.BytesIO(raw)

        def readable(self):
            return True

        def readinto(self, b):
            return self.src.readinto(b)
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError):
            retrograd.load(Pipe())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * MiB


# --- 4. devices ---------------------------------------------------------------------------

_CUDA_MSG = ("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. "
             "If you are running on a CPU-only machine, please use torch.load with "
             "map_location=torch.device('cpu') to map your storages to the CPU.")

no_gpu = pytest.mark.skipif(retrograd.cuda.is_available(), reason="a GPU is present")


def _cpu_file(tmp_path):
    p = tmp_path / "ck.safetensors"
    retrograd.save({"w": retrograd.tensor([1.0, 2.0]), "n": 3}, p)
    return p


def _cuda_file():
    return forge({"dict": [["w", {"tensor": "0", "dtype": "float32", "device": "cuda:0"}]]},
                 {"0": np.array([1.0, 2.0], np.float32)})


@no_gpu
@pytest.mark.parametrize("loc", ["cuda", "cuda:0", retrograd.device("cuda"), {"cpu": "cuda:1"}, b"cuda"])
def test_map_location_cuda_without_gpu_raises_torch_runtime_error(tmp_path, loc):
    with pytest.raises(RuntimeError) as ei:
        retrograd.load(_cpu_file(tmp_path), map_location=loc)
    assert str(ei.value) == _CUDA_MSG and not isinstance(ei.value, CheckpointError)


@no_gpu
def test_cuda_tensors_in_a_file_without_gpu_raise_torch_runtime_error():
    with pytest.raises(RuntimeError) as ei:
        load_bytes(_cuda_file())
    assert str(ei.value) == _CUDA_MSG
    for loc in ("cpu", {"cuda:0": "cpu"}, retrograd.device("cpu"), lambda t, where: t):
        assert load_bytes(_cuda_file(), map_location=loc)["w"].tolist() == [1.0, 2.0]
    seen = []
    assert load_bytes(_cuda_file(), map_location=lambda t, where: seen.append(where) or t)["w"].device.type == "cpu"
    assert seen == ["cuda:0"]


@needs_torch
@no_gpu
def test_cuda_messages_match_torch(tmp_path):
    p = tmp_path / "t.pt"
    torch.save({"w": torch.ones(2)}, p)
    for loc in ("cuda", {"cpu": "cuda:0"}):
        with pytest.raises(RuntimeError) as theirs:
            torch.load(p, map_location=loc)
        with pytest.raises(RuntimeError) as ours:
            retrograd.load(_cpu_file(tmp_path), map_location=loc)
        assert str(ours.value) == str(theirs.value)
    for loc in ("xla", "cuda:abc"):
        with pytest.raises(RuntimeError) as theirs:
            torch.load(p, map_location=loc)
        with pytest.raises(RuntimeError) as ours:
            retrograd.load(_cpu_file(tmp_path), map_location=loc)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(TypeError) as theirs:
        torch.load(p, map_location=5)
    with pytest.raises(TypeError) as ours:
        retrograd.load(_cpu_file(tmp_path), map_location=5)
    assert str(ours.value) == str(theirs.value)


def test_map_location_callable_returning_none_keeps_the_saved_place(tmp_path):
    back = retrograd.load(_cpu_file(tmp_path), map_location=lambda t, where: None)
    assert back["w"].tolist() == [1.0, 2.0] and back["n"] == 3


def test_map_location_meta_gives_meta_tensors(tmp_path):
    # (more in test_meta.py: no tensor byte is read)
    for loc in ("meta", {"cpu": "meta"}, retrograd.device("meta")):
        back = retrograd.load(_cpu_file(tmp_path), map_location=loc)
        assert back["w"].is_meta and back["w"].shape == (2,) and back["n"] == 3


def test_map_location_is_irrelevant_without_tensors(tmp_path):
    p = tmp_path / "n.safetensors"
    retrograd.save({"step": 4}, p)
    assert retrograd.load(p, map_location="cuda") == {"step": 4}


# --- 5. plain safetensors files ---------------------------------------------------------------

def test_safetensors_numpy_files_load_as_flat_dicts(tmp_path):
    from safetensors.numpy import save_file
    arrays = {"f64": np.arange(6.0).reshape(2, 3), "f32": np.ones(3, np.float32), "f16": np.full(2, 0.5, np.float16),
              "i64": np.array([2 ** 40], np.int64), "i32": np.arange(3, dtype=np.int32),
              "i16": np.array([-7], np.int16), "i8": np.array([-1, 1], np.int8), "u8": np.array([255], np.uint8),
              "b": np.array([True, False]), "c64": np.array([1 + 2j], np.complex64), "s": np.array(3.0),
              "e": np.zeros((0, 4), np.float32)}
    p = tmp_path / "plain.safetensors"
    save_file(arrays, str(p), metadata={"format": "np"})
    for back in (retrograd.load(p), retrograd.load(io.BytesIO(p.read_bytes()))):
        assert sorted(back) == sorted(arrays)
        for k, a in arrays.items():
            assert isinstance(back[k], retrograd.Tensor) and back[k].numpy().dtype == a.dtype
            np.testing.assert_array_equal(back[k].numpy(), a)
            assert back[k].numpy().flags.writeable


def test_plain_safetensors_with_dtypes_retrograd_lacks_are_refused(tmp_path):
    from safetensors.numpy import save_file
    p = tmp_path / "u16.safetensors"
    save_file({"x": np.ones(2, np.uint16)}, str(p))
    with pytest.raises(CheckpointError, match="U16"):
        retrograd.load(p)


@needs_torch
def test_safetensors_torch_files_load_including_bfloat16(tmp_path):
    from safetensors.torch import save_file
    d = {"w": torch.randn(3, 4), "b": torch.arange(5), "h": torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
         "m": torch.tensor([True, False])}
    p = tmp_path / "t.safetensors"
    save_file(d, str(p))
    back = retrograd.load(p)
    assert list(back) == list(__import__("safetensors.torch").torch.load_file(str(p)))
    for k, v in d.items():
        np.testing.assert_array_equal(back[k].numpy(), v.float().numpy() if k == "h" else v.numpy())


@needs_torch
def test_pytorch_checkpoint_converted_to_safetensors_loads_the_same(tmp_path):
    from safetensors.torch import save_file
    m = torch.nn.Linear(3, 2)
    p = tmp_path / "model.pt"
    torch.save(m.state_dict(), p)
    direct = retrograd.load(p)
    out = tmp_path / "model.safetensors"
    save_file(torch.load(p), str(out))
    back = retrograd.load(out)
    assert sorted(back) == ["bias", "weight"] == sorted(direct)
    for k in back:
        np.testing.assert_array_equal(back[k].numpy(), direct[k].numpy())
    np.testing.assert_array_equal(back["weight"].numpy(), m.weight.detach().numpy())
    m2 = retrograd.nn.Linear(3, 2)
    m2.load_state_dict(back)
    np.testing.assert_array_equal(m2.bias.detach().numpy(), m.bias.detach().numpy())


# --- 6. temporaries of killed saves ---------------------------------------------------------

_STALLED = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {src!r})
    import retrograd
    def stalled_fsync(fd):
        print("writing", flush=True)
        time.sleep(120)
    os.fsync = stalled_fsync
    retrograd.save({{"w": retrograd.zeros(100000)}}, sys.argv[1])
""")


def _stalled_writer(tmp_path, target):
    script = tmp_path / "stall.py"
    script.write_text(_STALLED.format(src=SRC))
    proc = subprocess.Popen([sys.executable, str(script), str(target)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    return proc


def _temporaries(folder):
    return sorted(n for n in os.listdir(folder) if n.endswith(".tmp"))


def test_next_save_removes_temporaries_of_killed_writers_only(tmp_path):
    p = tmp_path / "ck.safetensors"
    retrograd.save({"step": 0}, p)
    dead = _stalled_writer(tmp_path, p)
    os.kill(dead.pid, signal.SIGKILL)
    dead.wait(timeout=30)
    stale = _temporaries(tmp_path)
    assert len(stale) == 1 and str(dead.pid) in stale[0]
    live = _stalled_writer(tmp_path, p)
    try:
        in_flight = [n for n in _temporaries(tmp_path) if n not in stale]
        assert len(in_flight) == 1 and str(live.pid) in in_flight[0]
        retrograd.save({"step": 1}, p)
        assert _temporaries(tmp_path) == in_flight          # the live writer's file is untouched
        assert retrograd.load(p) == {"step": 1}
    finally:
        live.kill()
        live.wait(timeout=30)
    retrograd.save({"step": 2}, p)
    assert _temporaries(tmp_path) == [] and retrograd.load(p) == {"step": 2}


def test_temporaries_of_other_files_are_left_alone(tmp_path):
    other = tmp_path / ".other.safetensors.1.deadbeef.tmp"
    other.write_bytes(b"x")
    unrelated = tmp_path / ".ck.safetensors.notapid.tmp"
    unrelated.write_bytes(b"x")
    retrograd.save({"a": 1}, tmp_path / "ck.safetensors")
    assert other.exists() and unrelated.exists()


# --- 7. memory while saving and loading -------------------------------------------------------

def test_save_streams_and_load_maps(tmp_path):
    big = {"w": retrograd.zeros(4 * MiB), "v": retrograd.ones(2 * MiB, dtype=retrograd.float64)}   # 32 MiB
    data = 32 * MiB
    p = tmp_path / "big.safetensors"
    tracemalloc.start()
    try:
        retrograd.save(big, p)
        save_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        back = retrograd.load(p)
        load_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        buf = io.BytesIO()
        retrograd.save(big, buf)
        stream_save_peak = tracemalloc.get_traced_memory()[1] - buf.getbuffer().nbytes
    finally:
        tracemalloc.stop()
    assert save_peak < data // 8, save_peak           # no in-memory copy of the checkpoint
    assert load_peak < data // 8, load_peak           # tensors are views of the mapped file
    assert stream_save_peak < data // 4, stream_save_peak
    assert back["v"].numpy().flags.writeable and float(back["v"].sum()) == 2 * MiB
    back["v"][0] = 5.0                                # copy-on-write: the file is not changed
    assert float(retrograd.load(p)["v"][0]) == 1.0


def test_load_from_a_stream_makes_one_copy():
    raw = forge({"tensor": "0", "dtype": "float32"}, {"0": np.ones(4 * MiB, np.float32)})
    out, peak = traced_load(raw)
    assert out.shape == (4 * MiB,) and peak < 1.1 * len(raw)


def test_non_contiguous_and_byteswapped_arrays_stream_in_pieces(tmp_path):
    a = np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1)
    b = np.arange(5, dtype=">i4")
    c = (np.arange(6) + 1j).reshape(2, 3).T
    p = tmp_path / "x.safetensors"
    retrograd.save({"a": retrograd.Tensor._make(a), "b": b, "c": c, "z": np.complex128(2j), "t": retrograd.tensor(1j)},
                   p)
    back = retrograd.load(p)
    np.testing.assert_array_equal(back["a"].numpy(), a)
    np.testing.assert_array_equal(back["b"], b) and back["b"].dtype == np.int32
    np.testing.assert_array_equal(back["c"], c)
    assert back["z"] == 2j and back["t"].shape == () and complex(back["t"]) == 1j


# --- 8. modes and symlinks ------------------------------------------------------------------

@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_saving_over_a_private_file_keeps_its_mode(tmp_path):
    p = tmp_path / "ck.safetensors"
    retrograd.save({"a": 1}, p)
    os.chmod(p, 0o600)
    retrograd.save({"a": 2}, p)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600 and retrograd.load(p) == {"a": 2}
    os.chmod(p, 0o640)
    retrograd.save({"a": 3}, p)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_new_file_gets_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        retrograd.save({"a": 1}, tmp_path / "n.safetensors")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "n.safetensors").st_mode) == 0o640


def test_saving_to_a_symlink_writes_through_it(tmp_path):
    real_dir = tmp_path / "store"
    real_dir.mkdir()
    real = real_dir / "real.safetensors"
    retrograd.save({"a": 1}, real)
    link = tmp_path / "latest.safetensors"
    link.symlink_to(real)
    retrograd.save({"a": 2}, link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert retrograd.load(real) == {"a": 2} and retrograd.load(link) == {"a": 2}
    assert _temporaries(tmp_path) == [] and _temporaries(real_dir) == []
    dangling = tmp_path / "dangling.safetensors"
    dangling.symlink_to(real_dir / "new.safetensors")
    retrograd.save({"a": 3}, dangling)
    assert dangling.is_symlink() and retrograd.load(real_dir / "new.safetensors") == {"a": 3}


@needs_torch
def test_symlink_and_mode_behaviour_matches_torch(tmp_path):
    for lib in (torch, retrograd):
        d = tmp_path / lib.__name__
        d.mkdir()
        real = d / "real"
        real.write_bytes(b"")
        os.chmod(real, 0o600)
        link = d / "link"
        link.symlink_to(real)
        lib.save({"a": lib.ones(1)}, link)
        assert link.is_symlink() and stat.S_IMODE(os.stat(real).st_mode) == 0o600
        assert lib.load(link)["a"].tolist() == [1.0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_saving_to_a_fifo_writes_into_it(tmp_path):
    # what is not a regular file (a FIFO, /dev/null) is written in place, never renamed over
    import threading
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    retrograd.save({"a": retrograd.ones(3)}, fifo)
    reader.join(timeout=30)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and _temporaries(tmp_path) == []
    assert load_bytes(got[0])["a"].tolist() == [1.0, 1.0, 1.0]


# --- mutation fuzzing -------------------------------------------------------------------------

def _seed_objects():
    return [
        {"model": collections.OrderedDict([("w", retrograd.randn(3, 4)), ("b", retrograd.zeros(4, dtype=retrograd.float64))]),
         "step": 3, "lr": 0.1, "name": "x", "t": (1, None, float("nan")), "c": 1 + 2j, "d": retrograd.int32,
         "dev": retrograd.device("cpu"), "s": {1, 2}, "f": frozenset({"a"}), "np": np.arange(3, dtype=np.int16),
         "sc": np.float32(2.5), "cplx": retrograd.tensor([1j, 2]), "flag": retrograd.tensor([True, False])},
        [retrograd.ones(2, requires_grad=True), {"k": [1, 2, [3, [4]]]}],
    ]


_VOCAB = ["tensor", "ndarray", "dtype", "dict", "odict", "tuple", "set", "frozenset", "float", "complex", "npscalar",
          "torch_dtype", "device", "requires_grad", "parameter", "shape", "root", "0", "1", "2", "float32", "bool",
          "complex128", "S1", "U9", "cuda:0", "meta", "inf", "nan"]


def _random_value(rng, depth=0):
    r = rng.random()
    if depth > 3 or r < 0.3:
        return rng.choice([None, True, 0, -1, 10 ** 10, 2 ** 64, 1e308, -0.0, "", "0", rng.choice(_VOCAB), [], {}])
    if r < 0.5:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if r < 0.8:
        return {rng.choice(_VOCAB): _random_value(rng, depth + 1) for _ in range(rng.randrange(1, 3))}
    return rng.choice([[[_random_value(rng, depth + 1)] * rng.randrange(1, 50)], {"ndarray": "0", "dtype": "S1"}])


def _mutate_json(rng, node):
    """Replace, delete or duplicate a random node of a parsed JSON value."""
    if isinstance(node, dict) and node and rng.random() < 0.7:
        k = rng.choice(list(node))
        op = rng.random()
        if op < 0.2:
            del node[k]
        elif op < 0.4:
            node[rng.choice(_VOCAB)] = _random_value(rng)
        elif op < 0.7:
            node[k] = _mutate_json(rng, node[k])
        else:
            node[k] = _random_value(rng)
        return node
    if isinstance(node, list) and node and rng.random() < 0.7:
        i = rng.randrange(len(node))
        op = rng.random()
        if op < 0.2:
            del node[i]
        elif op < 0.3:
            node.append(node[i])
        elif op < 0.7:
            node[i] = _mutate_json(rng, node[i])
        else:
            node[i] = _random_value(rng)
        return node
    return _random_value(rng)


def _split(raw):
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__")
    return header, meta["structure"], raw[8 + n:]


def mutant(rng, raw):
    """One mutated checkpoint, digest recomputed (so only the content checks can refuse it)."""
    entries, structure, body = _split(raw)
    kind = rng.randrange(5)
    if kind == 0:                        # bytes of the structure text
        structure = mutate_bytes(rng, structure.encode()).decode("utf-8", "surrogateescape")
        try:
            structure.encode("utf-8")
        except UnicodeEncodeError:
            structure = structure.encode("utf-8", "surrogateescape").decode("latin-1")
    elif kind == 1:                      # the structure, node by node
        structure = json.dumps(_mutate_json(rng, json.loads(structure)))
    elif kind == 2:                      # the tensor table
        entries = _mutate_json(rng, entries)
    elif kind == 3:                      # the data bytes
        body = mutate_bytes(rng, body)
    else:                                # the whole file, with no digest fix-up
        return mutate_bytes(rng, raw)
    if not isinstance(entries, dict):
        entries = {"0": entries}
    try:
        return forge(structure=structure, entries=entries, body=body)
    except (TypeError, ValueError):
        return mutate_bytes(rng, raw)


def run_fuzz(seconds, seed, report=None):
    """Mutate valid checkpoints for ``seconds``; return the problems found."""
    rng = random.Random(seed)
    seeds = []
    for obj in _seed_objects():
        buf = io.BytesIO()
        retrograd.save(obj, buf)
        seeds.append(buf.getvalue())
    problems, n, end, worst = [], 0, time.monotonic() + seconds, 0
    while time.monotonic() < end:
        raw = mutant(rng, rng.choice(seeds))
        n += 1
        t0 = time.monotonic()
        out, peak = traced_load(raw)
        took = time.monotonic() - t0
        if isinstance(out, Exception) and not isinstance(out, CheckpointError):
            problems.append(("exception", repr(out)[:300], raw))
        worst = max(worst, peak - 2 * len(raw))
        if peak > 2 * len(raw) + 4 * MiB:     # 4 MiB: STRUCTURE_MEMORY_ALLOWANCE
            problems.append(("memory", peak, raw))
        if took > 2.0:
            problems.append(("slow", took, raw))
    if report is not None:
        report["cases"], report["worst_excess"] = n, worst
    return problems


def test_mutation_fuzz_bounded():
    report = {}
    problems = run_fuzz(4.0, seed=1234, report=report)
    assert report["cases"] > 100
    assert problems == [], problems[:3]


if __name__ == "__main__":   # the long campaign: python tests/test_serialization_hostile.py SECONDS
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 180
    rep = {}
    found = run_fuzz(secs, seed=int(time.time()), report=rep)
    print(f"{rep['cases']} mutants in {secs:.0f} s; {len(found)} problems; "
          f"largest peak beyond 2x the file: {rep['worst_excess'] / MiB:.2f} MiB")
    out_dir = os.environ.get("FUZZ_SAVE")
    for i, p in enumerate(found):
        if i < 20:
            print(p[0], p[1], len(p[2]))
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
            with open(os.path.join(out_dir, f"{i}-{p[0]}.bin"), "wb") as fh:
                fh.write(p[2])
