"""Mutation fuzzing of the PyTorch-format reader (zip and legacy), as the safetensors reader is
fuzzed in test_serialization_hostile.py.

Seeds: archives retrograd writes, a legacy file built here, and (when torch is installed) the
zip and legacy files torch 2.13 writes. Mutants: byte flips, cuts, insertions and repeats of
the whole file; edits of data.pkl alone (the archive rebuilt around it) by opcode splices and
by replacing integer arguments with extreme values; extreme sizes and offsets in the zip's
headers; extreme storage counts in legacy files. Each load must return or raise
``CheckpointError`` / ``WeightsOnlyUnpicklingError``, within 2 s, allocating at most three
times the file, plus 192 bytes per pickle byte (one small Python object each), plus 256 KiB.

The long campaign: ``python tests/test_torch_checkpoints_fuzz.py SECONDS`` (FUZZ_SAVE=dir keeps
the files that fail).
"""
import collections
import io
import os
import pickle
import pickletools
import random
import struct
import sys
import time
import tracemalloc
import zipfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import retrograd  # noqa: E402
from retrograd.serialization import CheckpointError  # noqa: E402
from retrograd._torch_format import WeightsOnlyUnpicklingError  # noqa: E402

from helpers import torch, mutate_bytes  # noqa: E402

MiB = 1 << 20


# --- seeds ----------------------------------------------------------------------------------

def _retrograd_seeds():
    nn = retrograd.nn
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.LSTM(4, 2))
    opt = retrograd.optim.Adam(m.parameters())
    m[0](retrograd.randn(2, 3)).sum().backward()
    opt.step()
    x = retrograd.arange(12.)
    objs = [
        {"model": m.state_dict(), "optimizer": opt.state_dict(), "epoch": 3, "name": "run",
         "meta": {"lr": 0.1, "betas": (0.9, 0.999), "tags": ["a", None, True], "ids": {1, 2}, "z": 1 + 2j}},
        {"v": x[1:9].view(2, 4).t(), "x": x, "h": retrograd.tensor([1.5, -2], dtype=retrograd.float16),
         "i8": retrograd.tensor([-3, 4], dtype=retrograd.int8), "b": retrograd.tensor([True, False]),
         "c": retrograd.tensor([1j, 2]), "bf": retrograd.ones(3, dtype=retrograd.bfloat16),
         "dt": retrograd.float64, "dev": retrograd.device("cpu"), "size": retrograd.Size([2, 3])},
    ]
    out = []
    for o in objs:
        b = io.BytesIO()
        retrograd.save(o, b, format="torch")
        out.append(b.getvalue())
    return out


def _legacy_seed():
    """A legacy-format file: magic, protocol, system info, the object, storage keys, storages."""
    from retrograd._torch_format import _make_pickler, _TorchName

    class Pid:
        pass

    class Call:
        def __init__(self, fn, *args):
            self.fn, self.args = fn, args

        def __reduce__(self):
            return (self.fn, self.args)

    pa, pb = Pid(), Pid()
    pids = {id(pa): ("storage", _TorchName("torch", "FloatStorage"), "a", "cpu", 6, None),
            id(pb): ("storage", _TorchName("torch", "LongStorage"), "b", "cpu", 3, ("b", 1, 2))}
    rebuild = _TorchName("torch._utils", "_rebuild_tensor_v2")
    obj = {"w": Call(rebuild, pa, 0, (2, 3), (3, 1), False, collections.OrderedDict()),
           "i": Call(rebuild, pb, 0, (2,), (1,), False, collections.OrderedDict()), "n": [1, "s", (2.5, None)]}
    buf = io.BytesIO()
    p = _make_pickler(buf)
    base = p.persistent_id
    p.persistent_id = lambda o: pids[id(o)] if id(o) in pids else base(o)
    p.dump(obj)
    head = b"".join(pickle.dumps(v, protocol=2) for v in
                    (0x1950a86a20f9469cfc6c, 1001, {"protocol_version": 1001, "little_endian": True,
                                                    "type_sizes": {"short": 2, "int": 4, "long": 4}}))
    arrays = [("a", np.arange(6, dtype="<f4")), ("b", np.arange(3, dtype="<i8"))]
    keys = pickle.dumps([k for k, _ in arrays], protocol=2)
    return head + buf.getvalue() + keys + b"".join(np.int64(a.size).tobytes() + a.tobytes() for _, a in arrays)


def _torch_seeds():
    if torch is None:
        return []
    g = torch.Generator().manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4))
    obj = {"model": m.state_dict(), "x": torch.randn(4, 4, generator=g)[1:, ::2], "n": (1, "a", [2.5]),
           "bf": torch.ones(2, dtype=torch.bfloat16), "i": torch.tensor([1, 2], dtype=torch.int16)}
    out = []
    for new in (True, False):
        b = io.BytesIO()
        torch.save(obj, b, _use_new_zipfile_serialization=new)
        out.append(b.getvalue())
    return out


def seeds():
    s = _retrograd_seeds() + [_legacy_seed()] + _torch_seeds()
    for raw in s:            # every seed loads
        retrograd.load(io.BytesIO(raw))
    return s


# --- mutations --------------------------------------------------------------------------------

_EXTREME = [0, 1, -1, 2, 255, 256, 65535, 2 ** 31 - 1, -2 ** 31, 2 ** 32, 2 ** 62, 2 ** 63 - 1, -2 ** 63, 2 ** 64]
# short opcode sequences that build or combine things
_SPLICES = [b"(", b")", b"]", b"}", b"t", b"l", b"d", b"u", b"s", b"a", b"e", b"R", b"\x81", b"b", b"0", b"1", b"2",
            b"N", b"\x88", b"\x85", b"\x86", b"\x87", b"h\x00", b"h\x01", b"q\x00", b"\x94", b"Q", b"\x8f", b"\x90",
            b"\x91", b"K\xff", b"J\xff\xff\xff\x7f", b"\x8a\x08" + b"\xff" * 8, b"X\xff\xff\xff\x7f",
            b"\x8d" + b"\xff" * 8, b"B\x00\x00\x00\x80", b"\x8b\xff\xff\xff\x7f", b"ctorch\nFloatStorage\n",
            b"ctorch._utils\n_rebuild_tensor_v2\n", b"cos\nsystem\n", b"\x8c\x04data", b"\x80\x05", b"\x95" + b"\0" * 8,
            b"." , b"(" * 64, b"]2a" * 16]


def _int_arg(op, value):
    """The bytes of an int-pushing opcode for ``value`` (the narrowest that holds it)."""
    if 0 <= value < 256:
        return b"K" + bytes([value])
    if 0 <= value < 65536:
        return b"M" + struct.pack("<H", value)
    if -2 ** 31 <= value < 2 ** 31:
        return b"J" + struct.pack("<i", value)
    n = (value.bit_length() + 8) // 8
    return b"\x8a" + bytes([n]) + value.to_bytes(n, "little", signed=True)


def _mutate_pickle(rng, pkl):
    """Splice opcodes in, or replace an integer argument by an extreme value, at opcode boundaries."""
    try:
        ops = [(op.name, arg, pos) for op, arg, pos in pickletools.genops(pkl)]
    except Exception:  # noqa: BLE001 - an already broken pickle gets byte mutations
        return mutate_bytes(rng, pkl, cut=0.55)
    ends = [pos for _, _, pos in ops[1:]] + [len(pkl)]
    out = pkl
    for _ in range(rng.randrange(1, 4)):
        i = rng.randrange(len(ops))
        name, arg, pos = ops[i]
        if rng.random() < 0.5 and isinstance(arg, int) and name in ("BININT", "BININT1", "BININT2", "LONG1"):
            rep = _int_arg(name, rng.choice(_EXTREME + [arg + rng.choice((-1, 1)), arg * 2 ** rng.randrange(8, 40)]))
            out = out[:pos] + rep + out[ends[i]:]
        else:
            at = rng.choice((pos, ends[i]))
            out = out[:at] + b"".join(rng.choice(_SPLICES) for _ in range(rng.randrange(1, 4))) + out[at:]
        if len(out) != len(pkl):   # positions moved: stop after one edit
            break
    return out


def _rezip(raw, member_fn):
    """The archive ``raw`` with data.pkl replaced by ``member_fn(old data.pkl)``."""
    zin = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
        for zi in zin.infolist():
            data = zin.read(zi.filename)
            if zi.filename.endswith("/data.pkl"):
                data = member_fn(data)
            zout.writestr(zi.filename, data)
    return out.getvalue()


def _mutate_zip_headers(rng, raw):
    """Extreme values in the size and offset fields of the zip's local and central headers."""
    b = bytearray(raw)
    spots = []
    for sig, fields in ((b"PK\x01\x02", (20, 24, 42)), (b"PK\x03\x04", (18, 22)), (b"PK\x05\x06", (10, 12, 16))):
        at = b.find(sig)
        while at >= 0:
            spots.extend(at + f for f in fields)
            at = b.find(sig, at + 4)
    for _ in range(rng.randrange(1, 3)):
        if not spots:
            break
        at = rng.choice(spots)
        v = rng.choice([0, 1, 0xFFFFFFFF, 0x7FFFFFFF, len(b), len(b) - 1, len(b) + 1, rng.randrange(1 << 32)])
        if at + 4 <= len(b):
            b[at:at + 4] = struct.pack("<I", v & 0xFFFFFFFF)
    return bytes(b)


def _mutate_legacy_counts(rng, raw):
    """A legacy file's int64 storage counts set to extreme values (they follow the key list)."""
    b = bytearray(raw)
    at = b.rfind(b"]q") if b"]q" in b else -1
    stop = b.find(b".", at) if at >= 0 else -1
    if stop < 0 or stop + 9 > len(b):
        return mutate_bytes(rng, raw, cut=0.55)
    v = rng.choice(_EXTREME[:-1] + [-5, 2 ** 40])
    b[stop + 1:stop + 9] = struct.pack("<q", max(min(v, 2 ** 63 - 1), -2 ** 63))
    return bytes(b)


def mutant(rng, raw):
    zipped = raw[:4] == b"PK\x03\x04"
    kind = rng.randrange(4)
    if kind == 0:
        return mutate_bytes(rng, raw, cut=0.55)
    if kind == 1 and zipped:
        return _rezip(raw, lambda pkl: _mutate_pickle(rng, pkl))
    if kind == 1:
        # the legacy object's pickle lies after the three small header pickles
        return _mutate_pickle(rng, raw)
    if kind == 2 and zipped:
        return _mutate_zip_headers(rng, raw)
    if kind == 2:
        return _mutate_legacy_counts(rng, raw)
    # splice another seed's data.pkl or tail into this one
    cut = rng.randrange(len(raw))
    return raw[:cut] + raw[cut:cut + rng.randrange(1, 200)] * rng.randrange(1, 4) + raw[cut:]


# --- the harness ------------------------------------------------------------------------------

def _touch(obj, depth=0):
    """Read every (reasonably small) tensor of a loaded object: its bytes must be readable."""
    if depth > 50:
        return
    if isinstance(obj, retrograd.Tensor):
        if obj.numel() <= 1 << 20:
            np.asarray(obj.detach().numpy()).tobytes()
    elif isinstance(obj, dict):
        for v in list(obj.values())[:1000]:
            _touch(v, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj[:1000]:
            _touch(v, depth + 1)


def _pkl_len(raw):
    try:
        zf = zipfile.ZipFile(io.BytesIO(raw))
        return max((zi.file_size for zi in zf.infolist() if zi.filename.endswith("data.pkl")), default=len(raw))
    except Exception:  # noqa: BLE001
        return len(raw)


def run_fuzz(seconds, seed, report=None, max_cases=None):
    """Load mutants of the seeds for ``seconds``; return the problems found."""
    rng = random.Random(seed)
    pool = seeds()
    problems, n, end = [], 0, time.monotonic() + seconds
    outcomes = collections.Counter()
    worst = 0.0
    while time.monotonic() < end and (max_cases is None or n < max_cases):
        raw = mutant(rng, rng.choice(pool))
        n += 1
        tracemalloc.start()
        t0 = time.monotonic()
        try:
            try:
                _touch(retrograd.load(io.BytesIO(raw)))
                outcomes["loaded"] += 1
            except (CheckpointError, WeightsOnlyUnpicklingError) as e:
                assert str(e)
                outcomes[type(e).__name__] += 1
            except Exception as e:  # noqa: BLE001 - what the fuzz looks for
                problems.append(("exception", f"{type(e).__name__}: {str(e)[:200]}", raw))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        took = time.monotonic() - t0
        # the file, a copy of it, its arrays, and one small Python object per pickle byte
        allowed = 3 * len(raw) + 192 * min(_pkl_len(raw), len(raw)) + MiB // 4
        worst = max(worst, peak / allowed)
        if peak > allowed:
            problems.append(("memory", peak, raw))
        if took > 2.0:
            problems.append(("slow", took, raw))
    if report is not None:
        report.update(cases=n, outcomes=outcomes, worst=worst)
    return problems


def test_torch_format_mutation_fuzz_bounded():
    report = {}
    problems = run_fuzz(6.0, seed=1234, report=report)
    assert report["cases"] > 100, report
    assert problems == [], [(p[0], p[1]) for p in problems[:3]]
    # the mutants reach past the first checks: some still load, many fail inside the pickle
    assert report["outcomes"]["loaded"] > 5 and report["outcomes"]["CheckpointError"] > 50, report


def test_hash_flooding_keys_are_refused_quickly():
    """Keys that share one hash value (integers congruent modulo 2**61 - 1) would make a dict
    quadratic to build; a big tuple key reused from the memo would make hashing quadratic."""
    p61 = (1 << 61) - 1
    colliding = b"\x80\x02}(" + b"".join(b"\x8a\x0c" + (k * p61).to_bytes(12, "little", signed=True) + b"K\x00"
                                          for k in range(1, 20001)) + b"u."
    wide = b"(" + b"K\x01" * 50000 + b"tq\x01"
    reused = b"\x80\x02]" + wide + b"0" + b"}h\x01K\x00sa" * 100000 + b"."
    for pkl, why in ((colliding, "share one hash value"), (reused, "take too long to hash")):
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
            zf.writestr("archive/data.pkl", pkl)
        t0 = time.monotonic()
        try:
            retrograd.load(io.BytesIO(out.getvalue()))
            raise AssertionError("loaded")
        except CheckpointError as e:
            assert why in str(e)
        assert time.monotonic() - t0 < 3.0
    # ordinary integer and tuple keys are fine
    ok = {i: (i, "x") for i in range(5000)}
    ok[(1, 2)] = {-1: 0, -2: 1}
    b = io.BytesIO()
    retrograd.save(ok, b, format="torch")
    assert retrograd.load(io.BytesIO(b.getvalue())) == ok


if __name__ == "__main__":   # the long campaign: python tests/test_torch_checkpoints_fuzz.py SECONDS
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 180
    rep = {}
    found = run_fuzz(secs, seed=int(time.time()), report=rep)
    print(f"{rep['cases']} mutants in {secs:.0f} s: {dict(rep['outcomes'])}; {len(found)} problems; "
          f"highest peak / allowance {rep['worst']:.3f}")
    out_dir = os.environ.get("FUZZ_SAVE")
    for i, p in enumerate(found):
        if i < 20:
            print(p[0], p[1], len(p[2]))
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
            with open(os.path.join(out_dir, f"{i}-{p[0]}.bin"), "wb") as fh:
                fh.write(p[2])
