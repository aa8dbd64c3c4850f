"""PyTorch's checkpoint format: read safely (weights-only pickle machine), written on request.

Both directions are checked against torch 2.13 where it is installed; the safety and
hostile-file checks build their archives with retrograd's own writer and run without torch.
"""
import collections
import io
import os
import pickle
import random
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

import retrograd
from retrograd.serialization import CheckpointError
from retrograd._torch_format import WeightsOnlyUnpicklingError, _TorchName, _make_pickler

from helpers import torch, needs_torch

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
          "complex64", "complex128"]


def _torch_sample(name):
    g = torch.Generator().manual_seed(0)
    if name == "bool":
        return torch.tensor([[True, False, True], [False, False, True]])
    if name.startswith("complex"):
        return torch.randn(2, 3, dtype=getattr(torch, name), generator=g)
    if name.startswith(("float", "bfloat")):
        return (torch.randn(2, 3, generator=g) * 100).to(getattr(torch, name))
    info = torch.iinfo(getattr(torch, name))
    return torch.tensor([[info.min, -1 if info.min else 0, 0], [1, 7, info.max]], dtype=getattr(torch, name))


def _as_numpy(t):
    if t.dtype == torch.bfloat16:
        return t.float().numpy()
    return t.numpy()


# --- torch -> retrograd -------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("name", DTYPES + ["uint16", "uint32", "uint64"])
def test_torch_tensors_of_every_dtype_load(tmp_path, name):
    t = _torch_sample(name) if not name.startswith("uint") or name == "uint8" else \
        torch.tensor([[0, 1, 2], [3, 4, 2 ** (int(name[4:]) - 1) - 1]], dtype=getattr(torch, name))
    p = tmp_path / "t.pt"
    torch.save({"t": t, "nc": t.t()}, p)
    back = retrograd.load(p)
    want = _as_numpy(t) if not name.startswith("uint") or name == "uint8" else t.to(torch.int64).numpy()
    np.testing.assert_array_equal(back["t"].numpy(), want)
    np.testing.assert_array_equal(back["nc"].numpy(), want.T)
    expected = {"bfloat16": "float32", "uint16": "int32", "uint32": "int64", "uint64": "int64"}.get(name, name)
    assert str(back["t"].dtype) == "torch." + expected


@needs_torch
def test_views_share_one_storage_as_in_torch(tmp_path):
    x = torch.arange(12.)
    obj = {"x": x, "v": x[2:8].view(2, 3).t(), "s": x[1::3], "e": x[:0]}
    p = tmp_path / "v.pt"
    torch.save(obj, p)
    ours, theirs = retrograd.load(p), torch.load(p)
    for k in obj:
        assert ours[k].shape == tuple(theirs[k].shape) and ours[k].stride() == theirs[k].stride()
        np.testing.assert_array_equal(ours[k].numpy(), theirs[k].numpy())
    ours["x"][4] = -1.0
    theirs["x"][4] = -1.0
    for k in ("v", "s"):
        np.testing.assert_array_equal(ours[k].numpy(), theirs[k].numpy())


@needs_torch
def test_structures_numbers_strings_and_metadata(tmp_path):
    obj = {"epoch": 3, "loss": 0.25, "name": "run", "none": None, "flag": True, "big": 2 ** 70, "c": 1 + 2j,
           "t": (1, [2, {"k": torch.ones(2)}]), "set": {1, 2}, "fs": frozenset({"a"}), "b": b"\x00\xff",
           "dtype": torch.float16, "dev": torch.device("cpu"), "size": torch.Size([2, 3]),
           "od": collections.OrderedDict(a=1), "nan": float("nan")}
    p = tmp_path / "s.pt"
    torch.save(obj, p)
    back = retrograd.load(p)
    assert back["t"][1][1]["k"].tolist() == [1.0, 1.0]
    for k in ("epoch", "loss", "name", "none", "flag", "big", "c", "set", "fs", "b"):
        assert back[k] == obj[k] and type(back[k]) is type(obj[k])
    assert back["dtype"] is retrograd.float16 and back["dev"] == retrograd.device("cpu")
    assert back["size"] == retrograd.Size([2, 3]) and isinstance(back["size"], retrograd.Size)
    assert type(back["od"]) is collections.OrderedDict and back["nan"] != back["nan"]


def _torch_mlp_cnn():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    cnn = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                              torch.nn.Flatten(), torch.nn.Linear(4 * 4 * 4, 2))
    return mlp, cnn


def _retro_mlp_cnn():
    nn = retrograd.nn
    mlp = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 2))
    return mlp, cnn


@needs_torch
def test_torch_state_dicts_drive_retrograd_models(tmp_path):
    tm, tc = _torch_mlp_cnn()
    tc.train()
    tc(torch.randn(5, 1, 6, 6))        # running stats and num_batches_tracked move
    tc.eval()
    p = tmp_path / "m.pth"
    torch.save({"mlp": tm.state_dict(), "cnn": tc.state_dict()}, p)
    ck = retrograd.load(p)
    assert hasattr(ck["cnn"], "_metadata") and ck["cnn"]._metadata == tc.state_dict()._metadata
    rm, rc = _retro_mlp_cnn()
    rm.load_state_dict(ck["mlp"])
    rc.load_state_dict(ck["cnn"])
    rc.eval()
    x, xi = np.random.default_rng(0).standard_normal((2, 4), dtype=np.float32), \
        np.random.default_rng(1).standard_normal((2, 1, 6, 6), dtype=np.float32)
    np.testing.assert_allclose(rm(retrograd.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(rc(retrograd.tensor(xi)).detach().numpy(), tc(torch.tensor(xi)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


@needs_torch
def test_torch_optimizer_state_dict_resumes_in_retrograd(tmp_path):
    tm, _ = _torch_mlp_cnn()
    opt = torch.optim.Adam(tm.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        tm(torch.ones(3, 4)).pow(2).sum().backward()
        opt.step()
    p = tmp_path / "opt.pt"
    torch.save({"model": tm.state_dict(), "opt": opt.state_dict()}, p)
    ck = retrograd.load(p)
    assert ck["opt"]["param_groups"][0]["betas"] == (0.9, 0.999)
    rm, _ = _retro_mlp_cnn()
    rm.load_state_dict(ck["model"])
    ropt = retrograd.optim.Adam(rm.parameters(), lr=0.01)
    ropt.load_state_dict(ck["opt"])
    for o, m, x in ((opt, tm, torch.ones(3, 4)), (ropt, rm, retrograd.ones(3, 4))):
        o.zero_grad()
        m(x).pow(2).sum().backward()
        o.step()
    for a, b in zip(rm.parameters(), tm.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


@needs_torch
def test_parameters_and_requires_grad_survive(tmp_path):
    w = torch.nn.Parameter(torch.ones(2))
    frozen = torch.nn.Parameter(torch.ones(2), requires_grad=False)
    p = tmp_path / "p.pt"
    torch.save([w, frozen, torch.zeros(2, requires_grad=True)], p)
    a, b, c = retrograd.load(p)
    assert isinstance(a, retrograd.nn.Parameter) and a.requires_grad
    assert isinstance(b, retrograd.nn.Parameter) and not b.requires_grad
    assert not isinstance(c, retrograd.nn.Parameter) and c.requires_grad and c.is_leaf


# --- retrograd -> torch -------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("name", [d for d in DTYPES if d != "bfloat16"])
def test_retrograd_tensors_of_every_dtype_load_in_torch(tmp_path, name):
    t = retrograd.tensor(_as_numpy(_torch_sample(name)))
    p = tmp_path / "t.pt"
    retrograd.save({"t": t, "nc": t.t(), "s": t[1, 2]}, p)
    back = torch.load(p)                       # weights_only=True, torch's default
    assert back["t"].dtype == getattr(torch, name)
    np.testing.assert_array_equal(back["t"].numpy(), t.numpy())
    np.testing.assert_array_equal(back["nc"].numpy(), t.numpy().T)
    assert back["s"].shape == () and back["s"].item() == t[1, 2].item()


@needs_torch
def test_retrograd_state_dicts_and_optimizer_load_in_torch(tmp_path):
    rm, rc = _retro_mlp_cnn()
    ropt = retrograd.optim.SGD(rm.parameters(), lr=0.1, momentum=0.9)
    rm(retrograd.ones(2, 4)).sum().backward()
    ropt.step()
    p = tmp_path / "r.pt"
    retrograd.save({"mlp": rm.state_dict(), "cnn": rc.state_dict(), "opt": ropt.state_dict(), "step": 1}, p)
    assert zipfile.is_zipfile(p)
    ck = torch.load(p)
    tm, tc = _torch_mlp_cnn()
    tm.load_state_dict(ck["mlp"])
    tc.load_state_dict(ck["cnn"])
    tc.eval()
    rc.eval()
    topt = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
    topt.load_state_dict(ck["opt"])
    x = np.random.default_rng(0).standard_normal((2, 1, 6, 6), dtype=np.float32)
    np.testing.assert_allclose(tc(torch.tensor(x)).detach().numpy(), rc(retrograd.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    for o, m, inp in ((topt, tm, torch.ones(2, 4)), (ropt, rm, retrograd.ones(2, 4))):
        o.zero_grad()
        m(inp).sum().backward()
        o.step()
    for a, b in zip(rm.parameters(), tm.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)


@needs_torch
def test_retrograd_views_share_storage_in_torch(tmp_path):
    x = retrograd.arange(12.)
    p = tmp_path / "v.pt"
    retrograd.save({"x": x, "v": x[2:8].view(2, 3).t(), "p": retrograd.nn.Parameter(retrograd.ones(2)),
                    "dt": retrograd.int16, "dev": retrograd.device("cpu"), "size": retrograd.Size([1, 2])}, p)
    ck = torch.load(p)
    assert ck["v"].untyped_storage().data_ptr() == ck["x"].untyped_storage().data_ptr()
    assert ck["v"].stride() == (1, 3) and ck["v"].storage_offset() == 2
    assert isinstance(ck["p"], torch.nn.Parameter) and ck["p"].requires_grad
    assert ck["dt"] is torch.int16 and ck["dev"] == torch.device("cpu") and ck["size"] == torch.Size([1, 2])


def test_non_leaf_tensors_are_refused_as_in_torch(tmp_path):
    x = retrograd.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        retrograd.save(x, tmp_path / "x.pt")
    assert not (tmp_path / "x.pt").exists()


# --- format choice ------------------------------------------------------------------------

def test_pt_and_pth_paths_default_to_torch_format_others_to_retrograds(tmp_path):
    obj = {"w": retrograd.ones(2)}
    for name, zipped in (("a.pt", True), ("a.PTH", True), ("a.ckpt", False), ("a.safetensors", False)):
        retrograd.save(obj, tmp_path / name)
        assert zipfile.is_zipfile(tmp_path / name) is zipped
        assert retrograd.load(tmp_path / name)["w"].tolist() == [1.0, 1.0]
    retrograd.save(obj, tmp_path / "b.pt", format="retrograd")
    assert not zipfile.is_zipfile(tmp_path / "b.pt")
    retrograd.save(obj, tmp_path / "b.bin", format="torch")
    assert zipfile.is_zipfile(tmp_path / "b.bin")
    with open(tmp_path / "c.pt", "wb") as fh:      # a file object is judged by its name
        retrograd.save(obj, fh)
    assert zipfile.is_zipfile(tmp_path / "c.pt")
    buf = io.BytesIO()
    retrograd.save(obj, buf, format="torch")
    buf.seek(0)
    assert retrograd.load(buf)["w"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="format must be"):
        retrograd.save(obj, buf, format="pickle")


# --- weights_only -------------------------------------------------------------------------

def test_whole_module_needs_the_explicit_opt_in(tmp_path):
    nn = retrograd.nn
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.LSTM(4, 5))
    p = tmp_path / "model.pt"
    retrograd.save(m, p)
    with pytest.raises(pickle.UnpicklingError) as e:
        retrograd.load(p)
    assert isinstance(e.value, WeightsOnlyUnpicklingError)
    assert "weights_only` set to `False` will likely succeed" in str(e.value)
    assert "GLOBAL retrograd.nn.modules.container.Sequential was not an allowed global" in str(e.value)
    m2 = retrograd.load(p, weights_only=False)
    assert type(m2) is type(m) and isinstance(m2[0].weight, nn.Parameter)
    x = retrograd.randn(2, 3)
    np.testing.assert_array_equal(m2[0](x).detach().numpy(), m[0](x).detach().numpy())
    out, _ = m2[2](m2[1](m2[0](x)).unsqueeze(0))
    ref, _ = m[2](m[1](m[0](x)).unsqueeze(0))
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())


_RAN = []


def _record(x):
    _RAN.append(x)


class _Recorder:
    def __reduce__(self):
        return (_record, ("ran",))


def _craft(obj, members=None, pid=None):
    """A PyTorch-style archive whose data.pkl pickles ``obj`` (``_TorchName`` globals written by
    name, ``pid``: {id(object): persistent id tuple}) next to raw members {name: bytes}."""
    buf = io.BytesIO()
    p = _make_pickler(buf)
    base = p.persistent_id
    pid = pid or {}
    p.persistent_id = lambda o: pid[id(o)] if id(o) in pid else base(o)
    p.dump(obj)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("archive/data.pkl", buf.getvalue())
        zf.writestr("archive/byteorder", b"little")
        for k, v in (members or {}).items():
            zf.writestr(f"archive/data/{k}", v)
        for r in p.storages.values():
            zf.writestr(f"archive/data/{r.key}", r.array.tobytes())
    return out.getvalue()


class _Call:
    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


class _Pid:
    pass


def _load_bytes(data, **kw):
    return retrograd.load(io.BytesIO(data), **kw)


def test_other_globals_are_refused_by_name_and_never_run():
    _RAN.clear()
    data = _craft({"x": _Recorder()})
    with pytest.raises(WeightsOnlyUnpicklingError, match=r"GLOBAL \S*test_torch_checkpoints\._record was not an "
                                                        r"allowed global"):
        _load_bytes(data)
    assert _RAN == []
    for mod, name in (("os", "system"), ("builtins", "eval"), ("torch._utils", "_rebuild_device_tensor_from_numpy"),
                      ("numpy.core.multiarray", "_reconstruct"), ("torch", "load")):
        data = _craft(_Call(_TorchName(mod, name), "echo hi"))
        with pytest.raises(WeightsOnlyUnpicklingError, match=f"GLOBAL {mod}.{name} was not an allowed global"):
            _load_bytes(data)
    # the opt-in runs it, as PyTorch does
    assert _load_bytes(_craft({"x": _Recorder()}), weights_only=False)["x"] is None and _RAN == ["ran"]


def _tensor_call(key, numel, offset, size, stride, storage="FloatStorage"):
    pid_obj = _Pid()
    pid = {id(pid_obj): ("storage", _TorchName("torch", storage), key, "cpu", numel)}
    obj = _Call(_TorchName("torch._utils", "_rebuild_tensor_v2"), pid_obj, offset, size, stride, False,
                collections.OrderedDict())
    return obj, pid, pid_obj


@pytest.mark.parametrize("numel,offset,size,stride,why", [
    (4, 0, (4,), (1,), None),
    (5, 0, (4,), (1,), "declares 5 elements"),
    (4, 1, (4,), (1,), "reaches element 4"),
    (4, 0, (2, 2), (3, 1), "reaches element 4"),
    (4, -1, (2,), (1,), "negative storage offset"),
    (4, 0, (2,), (-1,), "negative or non-integer"),
    (4, 0, (2 ** 40, 2 ** 40), (0, 0), "out of range|too big|maximum"),
    (4, 0, (1 << 70,), (0,), "out of range"),
    (4, 0, (2, 2), (1,), "size and stride do not match"),
    (4, 9, (0,), (1,), "offset lies outside"),
])
def test_storage_sizes_offsets_and_strides_are_checked_before_use(numel, offset, size, stride, why):
    obj, pid, _ = _tensor_call("0", numel, offset, size, stride)
    data = _craft({"t": obj}, members={"0": np.arange(4, dtype="<f4").tobytes()}, pid=pid)
    if why is None:
        assert _load_bytes(data)["t"].tolist() == [0.0, 1.0, 2.0, 3.0]
        return
    with pytest.raises(CheckpointError, match=why):
        _load_bytes(data)


def test_huge_stride_zero_views_are_views_not_copies():
    obj, pid, _ = _tensor_call("0", 4, 0, (1 << 20, 1 << 20), (0, 1), storage="FloatStorage")
    data = _craft({"t": obj}, members={"0": np.arange(4, dtype="<f4").tobytes()}, pid=pid)
    with pytest.raises(CheckpointError, match="reaches element"):
        _load_bytes(data)
    obj, pid, _ = _tensor_call("0", 4, 0, (1 << 20, 4), (0, 1))
    data = _craft({"t": obj}, members={"0": np.arange(4, dtype="<f4").tobytes()}, pid=pid)
    tracemalloc.start()
    t = _load_bytes(data)["t"]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert t.shape == (1 << 20, 4) and peak < 1 << 20


def test_missing_storage_and_unknown_persistent_ids_are_clean_errors():
    obj, pid, _ = _tensor_call("7", 4, 0, (4,), (1,))
    with pytest.raises(CheckpointError, match="missing from the archive"):
        _load_bytes(_craft({"t": obj}, pid=pid))
    o = _Pid()
    with pytest.raises(CheckpointError, match="unknown persistent id"):
        _load_bytes(_craft([o], pid={id(o): ("module", "x")}))


def test_compressed_and_overlapping_members_are_refused(tmp_path):
    buf = io.BytesIO()
    retrograd.save({"w": retrograd.ones(100)}, buf, format="torch")
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for n in src.namelist():
            zf.writestr(n, src.read(n))
    with pytest.raises(CheckpointError, match="compressed"):
        _load_bytes(out.getvalue())


def test_deep_and_unhashable_keys_are_refused_without_recursing():
    deep = ()
    for _ in range(100000):
        deep = (deep,)
    with pytest.raises(RecursionError):
        pickle.dumps(deep)          # (retrograd's writer recurses too: craft the opcodes by hand)
    body = b"\x80\x02}" + b"(" * 0 + b")" + b"\x85" * 100000 + b"K\x01s."
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("archive/data.pkl", body)
    with pytest.raises(CheckpointError, match="dict key"):
        _load_bytes(out.getvalue())
    body = b"\x80\x02" + b"]" * 1 + b"\x85" * 200000 + b"."     # deep nesting as a value is fine
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("archive/data.pkl", body)
    v = _load_bytes(out.getvalue())
    assert isinstance(v, tuple)


# --- map_location and mmap ---------------------------------------------------------------

def _small_file(tmp_path):
    p = tmp_path / "s.pt"
    x = retrograd.arange(6.)
    retrograd.save({"x": x, "v": x[1:5].view(2, 2), "n": 3}, p)
    return p


def test_map_location_forms(tmp_path):
    p = _small_file(tmp_path)
    for loc in ("cpu", retrograd.device("cpu"), {"cpu": "cpu"}, lambda storage, where: storage,
                lambda storage, where: None):
        ck = retrograd.load(p, map_location=loc)
        assert ck["v"].tolist() == [[1.0, 2.0], [3.0, 4.0]] and ck["n"] == 3
    seen = []
    ck = retrograd.load(p, map_location=lambda s, where: seen.append((tuple(s.shape), where)) or s * 2)
    assert seen == [((6,), "cpu")] and ck["v"].tolist() == [[2.0, 4.0], [6.0, 8.0]]
    meta = retrograd.load(p, map_location="meta")
    assert meta["v"].device.type == "meta" and meta["v"].shape == (2, 2)
    with pytest.raises(RuntimeError, match="Invalid device string|don't know how to restore"):
        retrograd.load(p, map_location="xla")
    with pytest.raises(ZeroDivisionError):         # the user's callable raises its own error
        retrograd.load(p, map_location=lambda s, where: 1 / 0)


@needs_torch
def test_map_location_cuda_error_matches_torch(tmp_path):
    if torch.cuda.is_available() or retrograd.cuda.is_available():
        pytest.skip("a GPU is present")
    p = tmp_path / "t.pt"
    torch.save({"w": torch.ones(2)}, p)
    with pytest.raises(RuntimeError) as theirs:
        torch.load(p, map_location="cuda")
    with pytest.raises(RuntimeError) as ours:
        retrograd.load(p, map_location="cuda")
    assert str(ours.value) == str(theirs.value)


def test_mmap_tensors_are_copy_on_write_views_of_the_file(tmp_path):
    p = _small_file(tmp_path)
    before = p.read_bytes()
    ck = retrograd.load(p, mmap=True)
    assert not ck["x"].numpy().flags.owndata
    ck["x"][1] = 100.0
    assert ck["v"][0, 0].item() == 100.0 and p.read_bytes() == before
    plain = retrograd.load(p)
    plain["x"][1] = 5.0
    assert plain["v"][0, 0].item() == 5.0
    with open(p, "rb") as fh, pytest.raises(ValueError, match="f must be a file path in order to use the mmap"):
        retrograd.load(fh, mmap=True)


@needs_torch
def test_torch_mmap_file_loads_with_mmap(tmp_path):
    p = tmp_path / "t.pt"
    w = torch.randn(64, 64)
    torch.save({"w": w}, p)
    np.testing.assert_array_equal(retrograd.load(p, mmap=True)["w"].numpy(), w.numpy())


# --- fuzzing ------------------------------------------------------------------------------

def _fuzz_source():
    nn = retrograd.nn
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    x = retrograd.arange(8.)
    obj = {"model": m.state_dict(), "v": x[1:7].view(2, 3), "x": x, "i": retrograd.tensor([1, 2], dtype=retrograd.int8),
           "meta": {"epoch": 2, "name": "fuzz", "lst": [1.5, None, (True, "s")]}, "c": retrograd.tensor([1j])}
    buf = io.BytesIO()
    retrograd.save(obj, buf, format="torch")
    return buf.getvalue()


def test_fuzzed_files_load_or_fail_cleanly():
    """Random byte flips, insertions and truncations of a real archive (many inside data.pkl):
    each load returns or raises a clean error, quickly and within a few times the file's size."""
    good = _fuzz_source()
    pkl_at = good.find(b"archive/data.pkl") + len("archive/data.pkl")
    rng = random.Random(1234)
    outcomes = collections.Counter()
    tracemalloc.start()
    try:
        for i in range(400):
            data = bytearray(good)
            kind = i % 4
            if kind == 0:
                for _ in range(rng.randint(1, 4)):
                    data[rng.randrange(len(data))] = rng.randrange(256)
            elif kind == 1:
                for _ in range(rng.randint(1, 3)):
                    data[pkl_at + rng.randrange(700)] = rng.randrange(256)
            elif kind == 2:
                pos = pkl_at + rng.randrange(700)
                data[pos:pos] = bytes([rng.choice(b"KJM\x8a(tue\x85\x86\x87Rbq]}")]) * rng.randint(1, 3)
            else:
                del data[rng.randrange(len(data)):]
            tracemalloc.reset_peak()
            t0 = time.perf_counter()
            try:
                _load_bytes(bytes(data))
                outcomes["loaded"] += 1
            except (CheckpointError, WeightsOnlyUnpicklingError) as e:
                assert str(e)
                outcomes[type(e).__name__] += 1
            assert time.perf_counter() - t0 < 2.0
            assert tracemalloc.get_traced_memory()[1] < 20 * len(good) + (1 << 20)
    finally:
        tracemalloc.stop()
    assert outcomes["CheckpointError"] > 100 and outcomes["loaded"] > 10


# --- the legacy (pre-1.6) format ----------------------------------------------------------

@needs_torch
def test_legacy_format_loads_with_shared_views(tmp_path):
    x = torch.arange(6.)
    m = torch.nn.Linear(3, 2)
    obj = {"x": x, "v": x[1:5].view(2, 2).t(), "sd": m.state_dict(), "i": torch.tensor([1, 2], dtype=torch.int16),
           "b": torch.tensor([True]), "n": [1, "a", (2.5, None)]}
    p = tmp_path / "legacy.pt"
    torch.save(obj, p, _use_new_zipfile_serialization=False)
    assert not zipfile.is_zipfile(p)
    for wo in (True, False):
        back = retrograd.load(p, weights_only=wo)
        np.testing.assert_array_equal(back["v"].numpy(), obj["v"].numpy())
        np.testing.assert_array_equal(back["sd"]["weight"].numpy(), m.weight.detach().numpy())
        assert back["i"].dtype is retrograd.int16 and back["b"].tolist() == [True] and back["n"] == obj["n"]
        back["x"][2] = 50.0
        assert back["v"][1, 0].item() == 50.0
    with pytest.raises(RuntimeError, match="mmap can only be used with files saved with"):
        retrograd.load(p, mmap=True)
    with open(p, "rb") as fh:
        assert retrograd.load(fh)["x"].tolist() == obj["x"].tolist()


def _legacy_bytes(obj_pickle, keys_and_data=()):
    head = b"".join(pickle.dumps(v, protocol=2) for v in
                    (0x1950a86a20f9469cfc6c, 1001, {"protocol_version": 1001, "little_endian": True,
                                                    "type_sizes": {"short": 2, "int": 4, "long": 4}}))
    keys = pickle.dumps([k for k, _ in keys_and_data], protocol=2)
    body = b"".join(np.int64(len(a)).tobytes() + a.tobytes() for _, a in keys_and_data)
    return head + obj_pickle + keys + body


def test_legacy_format_refuses_other_globals_and_checks_storage_counts():
    _RAN.clear()
    with pytest.raises(WeightsOnlyUnpicklingError, match=r"_record was not an allowed global"):
        _load_bytes(_legacy_bytes(pickle.dumps({"x": _Recorder()}, protocol=2)))
    assert _RAN == []
    # a storage whose recorded count disagrees with its declaration, or runs past the end
    pid_obj = _Pid()
    obj = _Call(_TorchName("torch._utils", "_rebuild_tensor_v2"), pid_obj, 0, (4,), (1,), False,
                collections.OrderedDict())
    for numel, arr, why in ((4, np.arange(4, dtype="<f4"), None), (5, np.arange(4, dtype="<f4"), "declares 5"),
                            (4, np.arange(3, dtype="<f4"), "declares 4")):
        buf = io.BytesIO()
        p = _make_pickler(buf)
        p.persistent_id = lambda o: ("storage", _TorchName("torch", "FloatStorage"), "k", "cpu", numel, None) \
            if o is pid_obj else None
        p.dump({"t": obj})
        data = _legacy_bytes(buf.getvalue(), [("k", arr)])
        if why is None:
            assert _load_bytes(data)["t"].tolist() == [0.0, 1.0, 2.0, 3.0]
        else:
            with pytest.raises(CheckpointError, match=why):
                _load_bytes(data)
    for cut in range(0, len(data), 7):          # every truncation is a clean error
        with pytest.raises((CheckpointError, WeightsOnlyUnpicklingError)):
            _load_bytes(data[:cut])


@needs_torch
def test_whole_torch_module_loads_as_retrograd_module_only_with_opt_in(tmp_path):
    m = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU())
    p = tmp_path / "tm.pt"
    torch.save(m, p)
    with pytest.raises(WeightsOnlyUnpicklingError, match="torch.nn.modules.container.Sequential was not an allowed"):
        retrograd.load(p)
    r = retrograd.load(p, weights_only=False)
    assert isinstance(r, retrograd.nn.Sequential) and isinstance(r[0].weight, retrograd.nn.Parameter)
    x = np.ones((1, 3), dtype=np.float32)
    np.testing.assert_array_equal(r(retrograd.tensor(x)).detach().numpy(), m(torch.tensor(x)).detach().numpy())


# --- the user's allowlist (torch.serialization.add_safe_globals / safe_globals) ---------------

class _WordLM(retrograd.nn.Module):
    """A whole-module checkpoint in the style of pytorch/examples' word language model."""

    def __init__(self, ntoken=11, nhid=6):
        super().__init__()
        nn = retrograd.nn
        self.drop = nn.Dropout(0.5)
        self.encoder = nn.Embedding(ntoken, nhid)
        self.rnn = nn.LSTM(nhid, nhid, 2)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, x):
        out, _ = self.rnn(self.drop(self.encoder(x)))
        return self.decoder(self.drop(out))


_LM_GLOBALS = [_WordLM, retrograd.nn.Dropout, retrograd.nn.Embedding, retrograd.nn.LSTM, retrograd.nn.Linear]


class _WithState:
    def __init__(self):
        self.seen = None

    def __setstate__(self, state):
        self.seen = ("setstate", state)


class _Plain:
    pass


def test_safe_globals_load_a_whole_module_without_the_full_unpickler(tmp_path):
    m = _WordLM().eval()
    p = tmp_path / "model.pt"
    with open(p, "wb") as f:
        retrograd.save(m, f)
    retrograd.serialization.clear_safe_globals()
    with pytest.raises(WeightsOnlyUnpicklingError, match=r"GLOBAL \S*test_torch_checkpoints\._WordLM was not an "
                                                        r"allowed global by default. Please use `torch.serialization."
                                                        r"add_safe_globals\(\["):
        retrograd.load(p)
    with retrograd.serialization.safe_globals(_LM_GLOBALS[:-1]):     # Linear missing: refused by name
        with pytest.raises(WeightsOnlyUnpicklingError, match=r"GLOBAL retrograd\.nn\.modules\.linear\.Linear was not"):
            retrograd.load(p)
    with retrograd.serialization.safe_globals(_LM_GLOBALS):
        assert retrograd.serialization.get_safe_globals() == _LM_GLOBALS
        m2 = retrograd.load(p)
    assert retrograd.serialization.get_safe_globals() == []
    assert type(m2) is _WordLM and type(m2.rnn) is retrograd.nn.LSTM and not m2.training
    assert isinstance(m2.decoder.weight, retrograd.nn.Parameter)
    x = retrograd.tensor([[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(m2(x).detach().numpy(), m(x).detach().numpy())
    # the reloaded model trains
    m2.train()
    m2(x).sum().backward()
    assert m2.rnn.weight_hh_l1.grad is not None
    retrograd.serialization.add_safe_globals(_LM_GLOBALS)
    try:
        assert type(retrograd.load(p)) is _WordLM
    finally:
        retrograd.serialization.clear_safe_globals()
    with pytest.raises(TypeError, match="Expected safe_globals to be a list"):
        retrograd.serialization.add_safe_globals(_WordLM)


@needs_torch
def test_refusal_wording_matches_torch(tmp_path):
    tm = torch.nn.Linear(2, 2)
    torch.save(tm, tmp_path / "t.pt")
    with pytest.raises(pickle.UnpicklingError) as theirs:
        torch.load(tmp_path / "t.pt")
    with pytest.raises(WeightsOnlyUnpicklingError) as ours:
        retrograd.load(tmp_path / "t.pt")
    assert str(ours.value) == str(theirs.value)


def test_allowlisted_instances_are_built_by_setstate_or_their_dict():
    data = _craft({"a": _WithState(), "b": _Plain()})
    with pytest.raises(WeightsOnlyUnpicklingError, match="_WithState was not an allowed global"):
        _load_bytes(data)
    src = _Plain()
    src.x, src.y = 1, [2.5, "s"]
    data = _craft({"a": _WithState(), "b": src})
    with retrograd.serialization.safe_globals([_WithState, _Plain]):
        out = _load_bytes(data)
    assert out["a"].seen == ("setstate", {"seen": None}) and vars(out["b"]) == {"x": 1, "y": [2.5, "s"]}
    # allowlisting a class allows neither other names nor calling anything else
    _RAN.clear()
    with retrograd.serialization.safe_globals([_Plain]):
        with pytest.raises(WeightsOnlyUnpicklingError, match=r"_record was not an allowed global"):
            _load_bytes(_craft({"b": src, "x": _Recorder()}))
    assert _RAN == []


@needs_torch
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN", "Transformer"])
def test_torch_written_whole_modules_load_with_retrograd_allowlist(tmp_path, kind):
    nn = retrograd.nn
    torch.manual_seed(0)
    if kind == "Transformer":
        tm = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0), 2,
                                         enable_nested_tensor=False)
        allow = [nn.TransformerEncoder, nn.TransformerEncoderLayer, nn.MultiheadAttention,
                 nn.modules.linear.NonDynamicallyQuantizableLinear, nn.Linear, nn.LayerNorm, nn.Dropout, nn.ModuleList,
                 nn.functional.relu]
    else:
        tm = getattr(torch.nn, kind)(4, 5, num_layers=2)
        allow = [getattr(nn, kind)]
    tm.eval()
    torch.save(tm, tmp_path / "m.pt")
    x = np.random.default_rng(0).standard_normal((3, 2, 4)).astype(np.float32)
    want = tm(torch.tensor(x))
    want = (want[0] if isinstance(want, tuple) else want).detach().numpy()
    for kw in ({"weights_only": False}, {}):
        with retrograd.serialization.safe_globals(allow):
            m = retrograd.load(tmp_path / "m.pt", **kw)
        assert type(m) is allow[0]
        got = m(retrograd.tensor(x))
        got = (got[0] if isinstance(got, tuple) else got).detach().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@needs_torch
def test_retrograd_whole_module_in_torch_is_refused_by_default(tmp_path):
    """A module pickled by retrograd names retrograd's classes: torch's default load refuses them
    by name (with weights_only=False torch would rebuild retrograd objects, not torch modules:
    state_dicts are the way across)."""
    retrograd.save(retrograd.nn.LSTM(2, 3), tmp_path / "r.pt")
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL retrograd\.nn\.modules\.rnn\.LSTM was not an allowed"):
        torch.load(tmp_path / "r.pt")


@needs_torch
def test_mmap_with_whole_modules_and_map_location(tmp_path):
    p = tmp_path / "m.pt"
    torch.save({"w": torch.arange(64.).view(8, 8), "m": torch.nn.Linear(2, 2)}, p)
    before = p.read_bytes()
    for kw in ({"weights_only": False}, {"weights_only": False, "map_location": "cpu"},
               {"map_location": {"cpu": "cpu"}}):
        if kw.get("weights_only") is False:
            ck = retrograd.load(p, mmap=True, **kw)
            assert isinstance(ck["m"], retrograd.nn.Linear)
        else:
            with retrograd.serialization.safe_globals([retrograd.nn.Linear]):
                ck = retrograd.load(p, mmap=True, **kw)
        assert not ck["w"].numpy().flags.owndata          # a view of the mapped file
        ck["w"][0, 0] = 5.0                                 # copy-on-write: the file stays as it was
        assert ck["w"][0, 0].item() == 5.0 and p.read_bytes() == before
        np.testing.assert_array_equal(ck["m"].weight.detach().numpy(), torch.load(p, weights_only=False)["m"]
                                      .weight.detach().numpy())
