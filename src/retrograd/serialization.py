"""Checkpoints: ``save(obj, f)`` and ``load(f, map_location=None)`` in the safetensors format.

What a training checkpoint holds (state_dicts of models and optimizers, RNG states, the
epoch and step) is nested dicts, lists and tuples of tensors, numbers, strings and None.
Tensors go into the safetensors body (through ``safetensors.numpy``, arrays made
contiguous first); the structure around them is JSON in the safetensors metadata, with a
SHA-256 over structure, tensor headers and tensor bytes. Nothing is ever unpickled, so
loading a file cannot run code from it, and a truncated or corrupted file is refused whole.

Files are written atomically: a temporary file in the same folder, flushed and fsync'ed,
then renamed over the target, so a crash mid-save leaves the previous checkpoint intact.
"""
import collections
import hashlib
import io
import json
import os
import struct
import tempfile

import numpy as np

from . import _dtype as D
from ._tensor import Tensor
from ._device import to_device

__all__ = ["save", "load", "CheckpointError"]

FORMAT = "retrograd-checkpoint"
FORMAT_VERSION = 1
_MAX_HEADER = 100 * 1024 * 1024

# NumPy dtypes the safetensors numpy API stores as they are; the others (complex128)
# are stored as a view and restored from the dtype recorded in the structure.
_NATIVE = {np.dtype(t) for t in ("float64", "float32", "float16", "int64", "uint64", "int32", "uint32",
                                  "int16", "uint16", "int8", "uint8", "bool", "complex64")}


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be read (truncated, corrupted, or not a checkpoint)."""


def _safetensors():
    try:
        import safetensors.numpy as stn
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("retrograd.save/load need the safetensors package: "
                          "pip install safetensors (or retrograd[checkpoint])") from e
    return stn


# --- encoding ----------------------------------------------------------------------------

def _path_str(path):
    return "obj" + "".join(f"[{p!r}]" for p in path)


class _Encoder:
    def __init__(self):
        self.arrays = {}
        self.seen = {}

    def array(self, a, obj):
        key = self.seen.get(id(obj))
        if key is None:
            key = str(len(self.arrays))
            a = a if a.flags.c_contiguous else a.copy(order="C")  # (ascontiguousarray makes 0-d 1-d)
            if a.dtype not in _NATIVE:
                a = a.view(np.float64) if a.dtype == np.complex128 else a
                if a.dtype not in _NATIVE:
                    raise TypeError(f"retrograd.save cannot store arrays of dtype {a.dtype}")
            self.arrays[key] = a
            self.seen[id(obj)] = key
        return key

    def encode(self, obj, path=()):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return obj
        if isinstance(obj, float):
            if obj != obj or obj in (float("inf"), float("-inf")):
                return {"float": repr(obj)}
            return obj
        if isinstance(obj, Tensor):
            d = obj._data
            host = d if isinstance(d, np.ndarray) else d.get()
            enc = {"tensor": self.array(host, obj), "dtype": str(obj.dtype).replace("torch.", "")}
            if obj.requires_grad:
                enc["requires_grad"] = True
            if getattr(obj, "_is_param", False):
                enc["parameter"] = True
            dev = obj.device
            if dev.type != "cpu":
                enc["device"] = str(dev)
            return enc
        if isinstance(obj, np.ndarray):
            if obj.dtype.kind in "OUSV":
                raise TypeError(f"retrograd.save cannot store a NumPy array of dtype {obj.dtype} "
                                f"at {_path_str(path)}")
            return {"ndarray": self.array(obj, obj), "dtype": str(obj.dtype)}
        if isinstance(obj, np.generic):
            return {"npscalar": obj.item() if obj.dtype.kind != "c" else [obj.real.item(), obj.imag.item()],
                    "dtype": str(obj.dtype)}
        if isinstance(obj, D.dtype):
            return {"torch_dtype": str(obj).replace("torch.", "")}
        if type(obj).__name__ == "device" and hasattr(obj, "type") and hasattr(obj, "index"):
            return {"device": str(obj)}
        if isinstance(obj, complex):
            return {"complex": [obj.real, obj.imag]}
        if isinstance(obj, dict):
            kind = "odict" if isinstance(obj, collections.OrderedDict) else "dict"
            items = []
            for k, v in obj.items():
                if not (k is None or isinstance(k, (str, int, float, bool))):
                    raise TypeError(f"retrograd.save cannot store a dict key of type {type(k).__name__} "
                                    f"at {_path_str(path)}: keys must be strings or numbers")
                items.append([self.encode(k, path), self.encode(v, path + (k,))])
            return {kind: items}
        if isinstance(obj, tuple):
            if hasattr(obj, "_fields"):
                raise TypeError(f"retrograd.save cannot store the named tuple {type(obj).__name__} "
                                f"at {_path_str(path)}: convert it to a dict or tuple first")
            return {"tuple": [self.encode(v, path + (i,)) for i, v in enumerate(obj)]}
        if isinstance(obj, list):
            return [self.encode(v, path + (i,)) for i, v in enumerate(obj)]
        if isinstance(obj, (set, frozenset)):
            return {"set" if isinstance(obj, set) else "frozenset": [self.encode(v, path) for v in obj]}
        raise TypeError(f"retrograd.save cannot store an object of type {type(obj).__module__}."
                        f"{type(obj).__qualname__} at {_path_str(path)}: checkpoints hold tensors, "
                        "numbers, strings, None and dicts/lists/tuples of them (no pickle)")


def _digest(structure, header_entries, body):
    h = hashlib.sha256()
    h.update(structure.encode("utf-8"))
    h.update(b"\0")
    h.update(json.dumps(header_entries, sort_keys=True, separators=(",", ":")).encode("utf-8"))
    h.update(b"\0")
    h.update(body)
    return h.hexdigest()


def _serialize(obj):
    stn = _safetensors()
    enc = _Encoder()
    structure = json.dumps({"root": enc.encode(obj)}, separators=(",", ":"), allow_nan=False)
    raw = stn.save(enc.arrays, metadata={"format": FORMAT, "version": str(FORMAT_VERSION),
                                         "structure": structure})
    # Re-write the header with the digest of what it describes.
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    entries = {k: v for k, v in header.items() if k != "__metadata__"}
    header["__metadata__"]["sha256"] = _digest(structure, entries, body)
    hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hb += b" " * (-len(hb) % 8)  # safetensors aligns the body to 8 bytes
    return struct.pack("<Q", len(hb)) + hb + body


def _chmod_default(fd):
    # mkstemp makes the file private (0600); give it the mode a plain open() would.
    mask = os.umask(0)
    os.umask(mask)
    try:
        os.fchmod(fd, 0o666 & ~mask)
    except OSError:
        pass



def _write_atomic(path, data):
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        _chmod_default(fd)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save ``obj`` (tensors, numbers, strings, None, nested dicts/lists/tuples) to ``f``.

    ``f`` is a path (written atomically: temporary file in the same folder, fsync, rename)
    or a writable binary file object. The file is a safetensors file.
    """
    if pickle_module is not None:
        raise ValueError("retrograd.save never pickles: pickle_module is not supported")
    data = _serialize(obj)
    if isinstance(f, (str, bytes, os.PathLike)):
        _write_atomic(f, data)
    else:
        f.write(data)
        if hasattr(f, "flush"):
            f.flush()


# --- decoding ----------------------------------------------------------------------------

def _fail(name, why):
    raise CheckpointError(f"{name} is not a valid retrograd checkpoint: {why}")


_TORCH_HINT = ("it looks like a PyTorch checkpoint (a zip of pickles, or a pickle); retrograd never unpickles "
               "files, since that can run code. Convert it once with PyTorch, e.g. "
               "safetensors.torch.save_file(torch.load(path), 'model.safetensors') for a state_dict")


def _parse(raw, name):
    try:
        return _parse_safetensors(raw, name)
    except CheckpointError:
        ours = raw[8:9] == b"{"   # a safetensors header (ours, damaged) starts there
        if not ours and (raw[:4] == b"PK\x03\x04" or (len(raw) > 1 and raw[0] == 0x80 and 2 <= raw[1] <= 5)):
            _fail(name, _TORCH_HINT)
        raise


def _parse_safetensors(raw, name):
    if len(raw) < 8:
        _fail(name, f"the file is {len(raw)} bytes long, too short for a safetensors header (truncated?)")
    n = struct.unpack("<Q", raw[:8])[0]
    if n > _MAX_HEADER or 8 + n > len(raw):
        _fail(name, f"its header claims {n} bytes but the file has {len(raw) - 8} after the length "
                    "(truncated or not a safetensors file)")
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        _fail(name, "its header is not valid JSON (corrupted or not a safetensors file)")
    if not isinstance(header, dict):
        _fail(name, "its header is not a JSON object")
    meta = header.get("__metadata__")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        _fail(name, "it is not a retrograd checkpoint (no retrograd metadata in the safetensors header)")
    structure, digest = meta.get("structure"), meta.get("sha256")
    if not isinstance(structure, str) or not isinstance(digest, str):
        _fail(name, "its metadata lacks the structure or the checksum")
    body = raw[8 + n:]
    entries = {k: v for k, v in header.items() if k != "__metadata__"}
    if _digest(structure, entries, body) != digest:
        _fail(name, "the SHA-256 checksum does not match (the file is truncated or corrupted)")
    try:
        version = int(meta.get("version", "0"))
    except ValueError:
        version = -1
    if version != FORMAT_VERSION:
        _fail(name, f"unsupported format version {meta.get('version')!r}")
    try:
        arrays = _safetensors().load(bytes(raw))
    except Exception as e:
        _fail(name, f"safetensors could not read it ({e})")
    return json.loads(structure)["root"], arrays


def _map_device(map_location, saved):
    if map_location is None:
        return saved
    if callable(map_location) and not isinstance(map_location, (str, dict)):
        return map_location
    if isinstance(map_location, dict):
        return map_location.get(saved, saved)
    return str(to_device(map_location))


class _Decoder:
    def __init__(self, arrays, map_location, name):
        self.arrays, self.map_location, self.name = arrays, map_location, name
        self.made = {}

    def array(self, key, dtype):
        if key not in self.arrays:
            _fail(self.name, f"the structure refers to a missing tensor {key!r}")
        a = self.arrays[key]
        if dtype == "complex128" and a.dtype == np.float64:
            a = a.view(np.complex128)
        return a

    def tensor(self, enc):
        key = enc["tensor"]
        cached = self.made.get(key)
        if cached is not None:
            return cached
        dt = D.to_dtype(enc.get("dtype", "float32"))
        a = self.array(key, str(dt).replace("torch.", ""))
        if a.dtype != dt.np:
            a = a.astype(dt.np)
        elif not a.flags.writeable:
            a = a.copy()
        t = Tensor._make(a)
        saved = enc.get("device", "cpu")
        target = _map_device(self.map_location, saved)
        if callable(target):
            t = target(t, saved)
        elif target != "cpu":
            t = t.to(target)
        if enc.get("parameter"):
            try:
                from .nn import Parameter
                t = Parameter(t, requires_grad=enc.get("requires_grad", False))
            except ImportError:
                t.requires_grad_(enc.get("requires_grad", False))
        elif enc.get("requires_grad"):
            t.requires_grad_(True)
        self.made[key] = t
        return t

    def decode(self, v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, list):
            return [self.decode(x) for x in v]
        if not isinstance(v, dict) or len(v) == 0:
            _fail(self.name, "unexpected entry in its structure")
        if "tensor" in v:
            return self.tensor(v)
        if "ndarray" in v:
            return self.array(v["ndarray"], v.get("dtype")).copy()
        if "odict" in v or "dict" in v:
            kind = "odict" if "odict" in v else "dict"
            out = collections.OrderedDict() if kind == "odict" else {}
            for k, x in v[kind]:
                out[self.decode(k)] = self.decode(x)
            return out
        if "tuple" in v:
            return tuple(self.decode(x) for x in v["tuple"])
        if "set" in v:
            return {self.decode(x) for x in v["set"]}
        if "frozenset" in v:
            return frozenset(self.decode(x) for x in v["frozenset"])
        if "float" in v:
            return float(v["float"])
        if "complex" in v:
            return complex(*v["complex"])
        if "npscalar" in v:
            x = v["npscalar"]
            return np.dtype(v["dtype"]).type(complex(*x) if isinstance(x, list) else x)
        if "torch_dtype" in v:
            return D.to_dtype(v["torch_dtype"])
        if "device" in v:
            return to_device(v["device"])
        _fail(self.name, f"unknown entry {sorted(v)!r} in its structure")


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **pickle_load_args):
    """Load what ``save`` wrote. Never executes code from the file (no pickle).

    ``map_location``: None (tensors return to the device they were saved from), a device
    or string ('cpu'), a dict {saved device: new device}, or a callable(tensor, location).
    A truncated or corrupted file raises ``CheckpointError`` (a RuntimeError) naming the
    file, and nothing is loaded.
    """
    if isinstance(f, (str, bytes, os.PathLike)):
        name = os.fsdecode(f)
        with open(f, "rb") as fh:
            raw = fh.read()
    else:
        name = getattr(f, "name", "<file object>")
        raw = f.read()
    if isinstance(raw, str):
        raise TypeError("retrograd.load needs a binary file")
    root, arrays = _parse(memoryview(raw).tobytes() if not isinstance(raw, bytes) else raw, name)
    try:
        return _Decoder(arrays, map_location, name).decode(root)
    except CheckpointError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        _fail(name, f"its structure does not decode ({type(e).__name__}: {e})")

