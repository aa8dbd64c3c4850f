"""Checkpoints: ``save(obj, f)`` and ``load(f, map_location=None)``.

retrograd's own format (below) is the default. PyTorch's formats are read through
``_torch_format`` (a restricted pickle machine, PyTorch's ``weights_only=True``; ``load``
tells them apart by their first bytes) and written with ``save(..., format="torch")``, which
is also the default for paths and files named ``*.pt``/``*.pth``.

What a training checkpoint holds (state_dicts of models and optimizers, RNG states, the
epoch and step) is nested dicts, lists and tuples of tensors, numbers, strings and None.
Tensors go into the safetensors body; the structure around them is JSON in the safetensors
metadata, with a SHA-256 over structure, tensor headers and tensor bytes. Nothing is ever
unpickled, so loading a file cannot run code from it, and a truncated or corrupted file is
refused whole. Plain safetensors files (``safetensors.torch``/``safetensors.numpy``) load
as a flat dict of tensors.

The SHA-256 is unkeyed, so it catches damage, not malice: everything the file declares
(header size, tensor sizes, dtypes, offsets, nesting) is checked against the file's real
byte ranges before anything is allocated. Loading a path memory-maps it (copy-on-write):
tensors are views of the mapping, so loading costs no copy; a file object is read once.

Saving streams the tensors into a temporary file next to the target (named with the
writer's pid), fsyncs it and renames it over the target, so a crash mid-save leaves the
previous checkpoint intact; the next save to that path removes temporaries whose writer is
dead. Saving keeps an existing file's permissions and writes through symlinks.
"""
import collections
import io
import os
import re
import stat
import struct

import numpy as np

from . import _dtype as D
from ._tensor import Tensor
from ._device import to_device

__all__ = ["save", "load", "CheckpointError", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals"]

FORMAT = "retrograd-checkpoint"
FORMAT_VERSION = 1
_MAX_HEADER = 100 * 1024 * 1024
# Python nesting a checkpoint may have (a state_dict is ~5 deep); each level is at most
# three JSON levels, which keeps json's C parser and the decoder far from the recursion limit.
_MAX_DEPTH = 100
_MAX_NDIM = 64
# Parsing JSON builds Python objects bigger than their text: the header and structure are
# refused before parsing when their estimated cost is over the file's size plus this
# allowance (so a load stays within 2x the file plus this). Large lists of Python numbers belong in
# tensors; a trusted file with a huge structure can be loaded after raising this.
STRUCTURE_MEMORY_ALLOWANCE = 4 * 1024 * 1024
_CHUNK = 16 * 1024 * 1024
_DIGEST_LEN = 64

# safetensors dtype names <-> NumPy dtypes (little-endian, as the format stores them).
_ST_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
              "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?", "C64": "<c8", "BF16": "<u2"}
_ST_NAME = {np.dtype(v): k for k, v in _ST_DTYPES.items() if k != "BF16"}
# What retrograd tensors can hold (plain files with other dtypes are refused by name).
_TENSOR_ST = {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL", "C64"}


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be read (truncated, corrupted, hostile, or not a checkpoint)."""


# --- encoding ----------------------------------------------------------------------------

def _path_str(path):
    return "obj" + "".join(f"[{p!r}]" for p in path)


class _Encoder:
    """Turns ``obj`` into a JSON-able structure; arrays are collected, never copied."""

    def __init__(self):
        self.arrays = {}        # key -> (array as stored: little-endian, maybe strided)
        self.seen = {}

    def array(self, a, obj):
        key = self.seen.get(id(obj))
        if key is None:
            key = str(len(self.arrays))
            if _stored_dtype(a.dtype) is None:
                raise TypeError(f"retrograd.save cannot store arrays of dtype {a.dtype}")
            self.arrays[key] = a
            self.seen[id(obj)] = key
        return key

    def encode(self, obj, path=()):
        if len(path) > _MAX_DEPTH:
            raise ValueError(f"retrograd.save cannot store objects nested deeper than {_MAX_DEPTH} levels "
                             f"(at {_path_str(path[:3])}...)")
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return obj
        if isinstance(obj, float):
            if obj != obj or obj in (float("inf"), float("-inf")):
                return {"float": repr(obj)}
            return obj
        if isinstance(obj, Tensor):
            if obj._sparse:
                raise TypeError(f"retrograd.save cannot store a sparse tensor ({obj.layout}) at {_path_str(path)}: "
                                "save its indices and values (or to_dense()) instead")
            d = obj._data
            # a device array stays where it is: it is copied to the host one tensor at a time
            enc = {"tensor": self.array(d, obj), "dtype": str(obj.dtype).replace("torch.", "")}
            if d.dtype == np.complex128 and d.ndim == 0:
                enc["shape"] = []
            if obj.requires_grad:
                enc["requires_grad"] = True
            if getattr(obj, "_is_param", False):
                enc["parameter"] = True
            dev = obj.device
            if dev.type != "cpu":
                enc["device"] = str(dev)
            return enc
        if isinstance(obj, np.ndarray):
            if obj.dtype.kind not in "biufcV":
                raise TypeError(f"retrograd.save cannot store a NumPy array of dtype {obj.dtype} "
                                f"at {_path_str(path)}")
            enc = {"ndarray": self.array(obj, obj), "dtype": str(obj.dtype.newbyteorder("="))}
            if obj.dtype.kind == "c" and obj.itemsize == 16 and obj.ndim == 0:
                enc["shape"] = []
            return enc
        if isinstance(obj, np.generic):
            if obj.dtype.kind not in "biufcV" or obj.dtype not in _SCALAR_DTYPES:
                raise TypeError(f"retrograd.save cannot store a NumPy scalar of dtype {obj.dtype} "
                                f"at {_path_str(path)}")
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
            return {"set" if isinstance(obj, set) else "frozenset": [self.encode(v, path + ("<set>",)) for v in obj]}
        raise TypeError(f"retrograd.save cannot store an object of type {type(obj).__module__}."
                        f"{type(obj).__qualname__} at {_path_str(path)}: checkpoints hold tensors, "
                        "numbers, strings, None and dicts/lists/tuples of them (no pickle)")


_SCALAR_DTYPES = {np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                         "uint64", "float16", "float32", "float64", "complex64", "complex128")}


def _stored_dtype(dt):
    """The little-endian dtype an array of ``dt`` is stored as (complex128 as float64 pairs,
    since safetensors has no C128), or None when it cannot be stored."""
    dt = np.dtype(dt)
    if dt.kind == "c" and dt.itemsize == 16:
        return np.dtype("<f8")
    if dt.kind == "V" and dt.name == "bfloat16":  # ml_dtypes' bfloat16: its bits are BF16
        _ST_NAME.setdefault(dt, "BF16")
        return dt
    le = dt.newbyteorder("<") if dt.byteorder == ">" else dt
    return le if le in _ST_NAME else None


def _stored_shape(a):
    if a.dtype.kind == "c" and a.itemsize == 16:
        return a.shape[:-1] + (2 * a.shape[-1],) if a.ndim else (2,)
    return a.shape


def _chunks(a):
    """The array's stored bytes, little-endian C order, as buffers of at most ~_CHUNK bytes
    (contiguous host arrays are not copied; others are copied one chunk at a time)."""
    if not isinstance(a, np.ndarray):
        a = a.get()            # one device tensor on the host at a time
    if a.dtype.kind == "c" and a.itemsize == 16:
        a = a.astype("<c16", copy=False).reshape(a.shape or (1,))
        if a.strides[-1] != 16:
            a = np.ascontiguousarray(a)
        a = a.view("<f8")
    le = _stored_dtype(a.dtype)
    if a.flags.c_contiguous and a.dtype == le:
        mv = memoryview(a.reshape(-1).view(np.uint8)) if a.size else memoryview(b"")
        for i in range(0, len(mv), _CHUNK):
            yield mv[i:i + _CHUNK]
        return
    if a.size == 0:
        return
    if a.ndim == 0:
        yield memoryview(np.ascontiguousarray(a.reshape(1), dtype=le).view(np.uint8))
        return
    # blocks along the first axis: each is a bounded contiguous copy
    per = max(1, _CHUNK // max(1, a[0].nbytes if a.ndim > 1 else a.itemsize))
    for i in range(0, a.shape[0], per):
        yield memoryview(np.ascontiguousarray(a[i:i + per], dtype=le).reshape(-1).view(np.uint8))


def _digest_start(structure, entries):
    import hashlib
    import json
    h = hashlib.sha256()
    h.update(structure.encode("utf-8"))
    h.update(b"\0")
    h.update(json.dumps(entries, sort_keys=True, separators=(",", ":")).encode("utf-8"))
    h.update(b"\0")
    return h


def _plan(obj):
    """(structure JSON, ordered [(key, array)], header entries) without touching tensor bytes."""
    import json
    enc = _Encoder()
    structure = json.dumps({"root": enc.encode(obj)}, separators=(",", ":"), allow_nan=False)
    # widest items first, as safetensors does, so every tensor stays aligned in the file
    order = sorted(enc.arrays.items(), key=lambda kv: -_stored_dtype(kv[1].dtype).itemsize)
    entries, off = {}, 0
    for key, a in order:
        n = a.size * a.itemsize
        entries[key] = {"dtype": _ST_NAME[_stored_dtype(a.dtype)], "shape": list(_stored_shape(a)),
                        "data_offsets": [off, off + n]}
        off += n
    return structure, order, entries


def _header_bytes(structure, entries, digest):
    import json
    header = dict(entries)
    header["__metadata__"] = {"format": FORMAT, "version": str(FORMAT_VERSION), "structure": structure,
                              "sha256": digest}
    hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hb += b" " * (-len(hb) % 8)  # safetensors aligns the body to 8 bytes
    return struct.pack("<Q", len(hb)) + hb


def _write_checkpoint(plan, f, seekable):
    """Stream a ``_plan`` into the binary file ``f``: header, then each tensor's bytes. With a
    seekable file the digest is patched in after one pass; otherwise tensors are hashed first."""
    structure, order, entries = plan
    h = _digest_start(structure, entries)
    if seekable:
        start = f.tell()
        head = _header_bytes(structure, entries, "0" * _DIGEST_LEN)
        f.write(head)
        for _, a in order:
            for c in _chunks(a):
                h.update(c)
                f.write(c)
        end = f.tell()
        f.seek(start)
        f.write(_header_bytes(structure, entries, h.hexdigest()))
        f.seek(end)
    else:
        for _, a in order:
            for c in _chunks(a):
                h.update(c)
        f.write(_header_bytes(structure, entries, h.hexdigest()))
        for _, a in order:
            for c in _chunks(a):
                f.write(c)


def _serialize(obj):
    """The whole checkpoint as bytes (for small objects and tests; ``save`` streams)."""
    buf = io.BytesIO()
    _write_checkpoint(_plan(obj), buf, True)
    return buf.getvalue()


# --- atomic writes -----------------------------------------------------------------------

_TMP_RE = re.compile(r"^(\d+)\.[0-9a-f]{8,}\.tmp$")


def _pid_alive(pid):
    if pid == os.getpid() or os.name != "posix":
        return True     # (on Windows os.kill(pid, 0) would terminate the process)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True     # someone else's live process
    except (OSError, OverflowError):
        return False
    try:  # an unreaped zombie still answers kill(0) but writes nothing
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _remove_stale_temporaries(folder, base):
    """Delete ``.<base>.<pid>.<random>.tmp`` files left by writers that are no longer alive."""
    prefix = "." + base + "."
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if not name.startswith(prefix):
            continue
        m = _TMP_RE.match(name[len(prefix):])
        if m and not _pid_alive(int(m.group(1))):
            try:
                os.unlink(os.path.join(folder, name))
            except OSError:
                pass


def _fsync_dir(folder):
    try:  # make the rename itself durable
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def _write_atomic(path, data):
    """Write ``data`` (bytes, or a callable(file) that writes) to ``path`` atomically.

    A symlink is written through (the link stays a link); an existing file keeps its mode.
    Something that is not a regular file (``/dev/null``, a FIFO) is written in place.
    """
    import secrets
    target = os.path.realpath(os.fspath(path))
    write = data if callable(data) else (lambda fh: fh.write(data))
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(target, "wb") as fh:
            write(fh)
        return
    folder, base = os.path.split(target)
    _remove_stale_temporaries(folder, base)
    tmp = os.path.join(folder, f".{base}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        if st is not None:
            try:
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
            except (OSError, AttributeError):     # (no fchmod on Windows)
                pass
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(folder)


_TORCH_SUFFIXES = (".pt", ".pth")
# What save() writes when neither ``format`` nor a .pt/.pth name decides: "torch" while
# ``retrograd run`` (or ``torch_aliases()``) runs a PyTorch script, whose files are PyTorch's.
_default_format = "retrograd"


def _save_format(f, format):
    if format is not None:
        if format not in ("torch", "retrograd"):
            raise ValueError(f"retrograd.save: format must be 'torch' or 'retrograd', not {format!r}")
        return format
    name = f if isinstance(f, (str, bytes, os.PathLike)) else getattr(f, "name", None)
    if isinstance(name, (str, bytes, os.PathLike)):
        name = os.fsdecode(name)
        if name.lower().endswith(_TORCH_SUFFIXES):
            return "torch"
    return _default_format


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False, *, format=None):
    """Save ``obj`` to ``f``, in retrograd's checkpoint format or in PyTorch's.

    ``format="retrograd"`` (the default): tensors, numbers, strings, None and nested
    dicts/lists/tuples, in safetensors with the structure as JSON (never pickled).
    ``format="torch"``: PyTorch's zip format (``torch.load`` reads it; state_dicts load with its
    default ``weights_only=True``); any picklable object, e.g. a whole module. A path or file
    named ``*.pt``/``*.pth`` gets PyTorch's format unless ``format`` says otherwise, since that
    is what users (and PyTorch) expect to find there; so does every file a PyTorch script writes
    under ``retrograd run`` (whatever its name, as torch.load must read it).

    ``f`` is a path (written atomically: temporary file in the same folder, fsync, rename;
    symlinks are written through and an existing file keeps its mode) or a writable binary
    file object. Tensors are streamed to the file, never serialised in memory first.
    """
    if _save_format(f, format) == "torch":
        return _save_torch(obj, f)
    if pickle_module is not None:
        raise ValueError("retrograd.save never pickles: pickle_module is not supported")
    plan = _plan(obj)  # refuses what cannot be stored before touching the file system
    if isinstance(f, (str, bytes, os.PathLike)):
        _write_atomic(f, lambda fh: _write_checkpoint(plan, fh, fh.seekable()))
    else:
        try:
            seekable = f.seekable()
        except Exception:
            seekable = False
        _write_checkpoint(plan, f, seekable)
        if hasattr(f, "flush"):
            f.flush()


def _save_torch(obj, f):
    from . import _torch_format
    plan = _torch_format.plan_torch(obj)     # refuses what cannot be pickled before touching the file
    if isinstance(f, (str, bytes, os.PathLike)):
        _write_atomic(f, lambda fh: _torch_format.write_torch(plan, fh))
    else:
        _torch_format.write_torch(plan, f)
        if hasattr(f, "flush"):
            f.flush()


# --- the weights-only allowlist ---------------------------------------------------------

_SAFE_GLOBALS = []


def add_safe_globals(safe_globals):
    """Allow ``torch.load(weights_only=True)`` of PyTorch files to use these classes and
    functions (or ``(obj, "module.name")`` pairs) by name: only for files you trust to name
    them. A retrograd class also answers to its PyTorch name (``torch.nn.modules.rnn.LSTM``)."""
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"Expected safe_globals to be a list, but got {type(safe_globals).__name__}")
    for g in safe_globals:
        if g not in _SAFE_GLOBALS:
            _SAFE_GLOBALS.append(g)


def get_safe_globals():
    """The user's allowlist for weights-only loading (a new list)."""
    return list(_SAFE_GLOBALS)


def clear_safe_globals():
    """Empty the user's allowlist for weights-only loading."""
    _SAFE_GLOBALS.clear()


class safe_globals:
    """``with safe_globals([...]):`` allows these globals for weights-only loading inside the block."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        self._saved = list(_SAFE_GLOBALS)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _SAFE_GLOBALS[:] = self._saved
        return False


# --- reading -----------------------------------------------------------------------------

def _fail(name, why):
    raise CheckpointError(f"{name} is not a valid retrograd checkpoint: {why}")


class _Source:
    """The file's bytes: a copy-on-write memory map for paths, one bounded read for streams."""

    def __init__(self, f, name):
        self.name = name
        self.buf = None
        self.size = None
        if isinstance(f, (str, bytes, os.PathLike)):
            self._open_path(f)
        else:
            self._read_stream(f)

    def _open_path(self, f):
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(f, flags)   # O_NONBLOCK: opening a FIFO must not wait for a writer
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(21, "Is a directory", self.name)
            if not stat.S_ISREG(st.st_mode):
                _fail(self.name, "it is not a regular file (a device, FIFO or socket is never read)")
            self.size = st.st_size
            if self.size < 8:
                self.buf = os.read(fd, 8)
                return
            import mmap
            try:
                self.buf = memoryview(mmap.mmap(fd, self.size, access=mmap.ACCESS_COPY))
            except (OSError, ValueError):
                self.buf = bytearray(self.size)
                with os.fdopen(os.dup(fd), "rb", buffering=0) as fh:
                    got = fh.readinto(self.buf)
                if got != self.size:
                    _fail(self.name, "the file changed size while it was read")
                self.buf = memoryview(self.buf)
        finally:
            os.close(fd)

    def _read_stream(self, f):
        remaining = None
        try:
            if f.seekable():
                pos = f.tell()
                end = f.seek(0, 2)
                f.seek(pos)
                remaining = end - pos
        except Exception:
            remaining = None
        head = self._read(f, 8)
        if isinstance(head, str):
            raise TypeError("retrograd.load needs a binary file")
        if len(head) < 8:
            self.buf, self.size = memoryview(bytes(head)), len(head)
            return
        n = struct.unpack("<Q", head)[0]
        if remaining is not None and (n > _MAX_HEADER or 8 + n > remaining):
            self.buf, self.size = memoryview(bytes(head)), remaining
            return
        if remaining is not None:
            # the whole stream is there: one allocation of exactly its size
            buf = bytearray(remaining)
            buf[:8] = head
            got = 8 + self._readinto(f, memoryview(buf)[8:])
            if got != remaining:
                _fail(self.name, "the stream ended before its declared end")
            self.buf, self.size = memoryview(buf), remaining
            return
        # unseekable stream: read at most the declared header, then exactly the declared body
        if n > _MAX_HEADER:
            self.buf, self.size = memoryview(bytes(head)), 8
            return
        hb = self._read(f, n)
        parts = [head, hb]
        if len(hb) == n:
            entries = _header_json(hb, self.name, [2 * _MAX_HEADER, 0])
            body = _body_len(entries, self.name) if isinstance(entries, dict) else 0
            parts.append(self._read(f, body + 1))
        data = b"".join(parts)
        self.buf, self.size = memoryview(data), len(data)

    @staticmethod
    def _read(f, n):
        """Read up to ``n`` bytes in bounded chunks (a huge declared size allocates nothing
        until the bytes actually arrive)."""
        parts, got = [], 0
        while got < n:
            c = f.read(min(n - got, 1 << 20))
            if not c:
                break
            if isinstance(c, str):
                return c
            parts.append(c)
            got += len(c)
        return b"".join(parts)

    @staticmethod
    def _readinto(f, mv):
        got = 0
        while got < len(mv):
            if hasattr(f, "readinto"):
                k = f.readinto(mv[got:got + (1 << 24)])
            else:
                c = f.read(min(len(mv) - got, 1 << 24))
                k = len(c) if c else 0
                mv[got:got + k] = c
            if not k:
                break
            got += k
        return got


def _header_json(hb, name, budget):
    try:
        text = str(hb, "utf-8")     # decoded from the buffer itself: no intermediate copy
    except UnicodeDecodeError:
        _fail(name, "its header is not valid UTF-8 JSON (corrupted or not a safetensors file)")
    return _parse_json(text, name, budget)


def _token_cost(text):
    # bytes per parsed item, rounded up (CPython 3.11): a dict with keys ~200, a list ~100 with
    # its over-allocation, a number or string ~30 plus its slot
    return 48 * (text.count(",") + text.count(":")) + 128 * text.count("[") + 256 * text.count("{")


def _parse_json(text, name, budget, already=0):
    """Parse JSON from the file, refusing deep nesting, and texts whose parsed form would
    not fit in ``budget[0]`` bytes (the estimate is charged to it before parsing, and its token
    part left in ``budget[1]``; ``already``:
    token cost charged before, when ``text`` came out of a string of JSON that was charged)."""
    import json
    tokens = budget[1] = _token_cost(text)
    budget[0] -= len(text) * 2 + max(0, tokens - already)   # the text is held while it is parsed
    if budget[0] < 0:
        _fail(name, "its JSON would take far more memory than the file's size (refused before parsing; "
                    "see retrograd.serialization.STRUCTURE_MEMORY_ALLOWANCE)")
    try:
        return json.loads(text)
    except RecursionError:
        _fail(name, "its JSON is nested too deeply")
    except ValueError as e:  # JSONDecodeError, and ints over Python's digit limit
        _fail(name, f"its header is not valid JSON ({e})"[:300])


def _body_len(entries, name):
    end = 0
    for k, v in entries.items():
        if k == "__metadata__":
            continue
        offs = v.get("data_offsets") if isinstance(v, dict) else None
        if isinstance(offs, list) and len(offs) == 2 and all(type(x) is int for x in offs):
            end = max(end, offs[1])
    return end


def _short(x):
    """A bounded description of a value from the file (never a repr of a huge object)."""
    if isinstance(x, str):
        return repr(x) if len(x) <= 60 else repr(x[:60]) + "..."
    if x is None or isinstance(x, (bool, int, float)):
        r = repr(x)
        return r if len(r) <= 60 else r[:60] + "..."
    if isinstance(x, (list, dict)):
        return f"a {'list' if isinstance(x, list) else 'JSON object'} of {len(x)} items"
    return type(x).__name__


class _Entry:
    __slots__ = ("name", "st", "shape", "begin", "end")


def _validate_entries(header, body_len, name):
    """Check every tensor entry against the body: known dtype, sane shape, a byte range that
    matches dtype x shape, ranges that tile the body exactly (no overlap, no gap, no tail)."""
    out = []
    for k, v in header.items():
        if k == "__metadata__":
            continue
        if not isinstance(v, dict):
            _fail(name, f"tensor entry {_short(k)} is not an object")
        st, shape, offs = v.get("dtype"), v.get("shape"), v.get("data_offsets")
        if not isinstance(st, str) or st not in _ST_DTYPES:
            _fail(name, f"tensor {_short(k)} has dtype {_short(st)}, which retrograd cannot read")
        if (not isinstance(shape, list) or len(shape) > _MAX_NDIM
                or not all(type(s) is int and s >= 0 for s in shape)):
            _fail(name, f"tensor {_short(k)} has an invalid shape {_short(shape)}"[:200])
        if not (isinstance(offs, list) and len(offs) == 2 and all(type(x) is int for x in offs)
                and 0 <= offs[0] <= offs[1] <= body_len):
            _fail(name, f"tensor {_short(k)} has data offsets {_short(offs)} outside the file's {body_len} data bytes "
                        "(truncated?)"[:200])
        nbytes = np.dtype(_ST_DTYPES[st]).itemsize
        for s in shape:
            nbytes *= s
            if nbytes > body_len:
                break
        if nbytes != offs[1] - offs[0]:
            _fail(name, f"tensor {_short(k)} declares {st}{shape} but its byte range holds {offs[1] - offs[0]} bytes"[:200])
        e = _Entry()
        e.name, e.st, e.shape, e.begin, e.end = k, st, tuple(shape), offs[0], offs[1]
        out.append(e)
    pos = 0
    for e in sorted(out, key=lambda e: (e.begin, e.end)):
        if e.begin != pos:
            _fail(name, "its tensors' byte ranges overlap or leave gaps")
        pos = e.end
    if pos != body_len:
        _fail(name, f"its tensors cover {pos} of the file's {body_len} data bytes (truncated or padded)")
    return out


def _parse(src, read_body=True):
    """Validate the file; return (root structure or None for a plain safetensors file,
    {key: _Entry}, body memoryview). ``read_body=False`` (a load to the meta device, which
    never reads tensor bytes) checks the header and structure but not the bytes' checksum."""
    return _parse_safetensors(src.buf, src.name, src.size, read_body)


def _parse_safetensors(raw, name, size, read_body=True):
    if len(raw) < 8:
        _fail(name, f"the file is {len(raw)} bytes long, too short for a safetensors header (truncated?)")
    n = struct.unpack("<Q", bytes(raw[:8]))[0]
    if n > _MAX_HEADER or 8 + n > len(raw):
        _fail(name, f"its header claims {n} bytes but the file has {size - 8} after the length "
                    "(truncated or not a safetensors file)")
    budget = [size + STRUCTURE_MEMORY_ALLOWANCE, 0]
    header = _header_json(raw[8:8 + n], name, budget)
    header_tokens = budget[1]
    if not isinstance(header, dict):
        _fail(name, "its header is not a JSON object")
    body = raw[8 + n:]
    entries = _validate_entries(header, len(body), name)
    meta = header.get("__metadata__")
    if meta is not None and (not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values())):
        _fail(name, "its __metadata__ is not a map of strings")
    if meta is None or (meta.get("format") != FORMAT and "structure" not in meta and "sha256" not in meta):
        return None, {e.name: e for e in entries}, body       # a plain safetensors file
    structure, digest = meta.get("structure"), meta.get("sha256")
    if meta.get("format") != FORMAT:
        _fail(name, f"its metadata names the format {_short(meta.get('format'))}"[:200])
    if structure is None or digest is None:
        _fail(name, "its metadata lacks the structure or the checksum")
    try:
        structure.encode("utf-8")
    except UnicodeEncodeError:
        _fail(name, "its structure is not valid Unicode")
    plain = {k: v for k, v in header.items() if k != "__metadata__"}
    if any(len(v) != 3 for v in plain.values()):   # ours never has more than the three fields
        _fail(name, "a tensor entry has fields other than dtype, shape and data_offsets")
    h = _digest_start(structure, plain)
    for i in range(0, len(body), _CHUNK) if read_body else ():
        h.update(body[i:i + _CHUNK])
    if read_body and h.hexdigest() != digest:
        _fail(name, "the SHA-256 checksum does not match (the file is truncated or corrupted)")
    version = meta.get("version", "0")
    if version != str(FORMAT_VERSION):
        _fail(name, f"unsupported format version {_short(version)}"[:200])
    # the structure's tokens were charged with the header's text, which holds them (unless
    # they were written as \u escapes there)
    root = _parse_json(structure, name, budget, already=header_tokens)
    if not isinstance(root, dict) or "root" not in root:
        _fail(name, "its structure has no root")
    return root["root"], {e.name: e for e in entries}, body


# --- devices -----------------------------------------------------------------------------

_CUDA_UNAVAILABLE = ("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. "
                     "If you are running on a CPU-only machine, please use torch.load with "
                     "map_location=torch.device('cpu') to map your storages to the CPU.")
_LOCATION_RE = re.compile(r"^(cpu|cuda|meta)(?::(\d+))?$")
_SAVED_RE = re.compile(r"^(cpu|cuda:\d{1,6})$")


def _check_location(loc):
    """The device a storage tagged ``loc`` is restored to, validated as torch.load does."""
    if isinstance(loc, bytes):
        loc = loc.decode()
    if not isinstance(loc, str):
        loc = str(loc)
    m = _LOCATION_RE.match(loc)
    if m is None:
        if re.match(r"^(cpu|cuda|meta)\b", loc):
            raise RuntimeError(f"Invalid device string: '{loc}'")
        raise RuntimeError("don't know how to restore data location of torch.storage.UntypedStorage "
                           f"(tagged with {loc})")
    kind, idx = m.group(1), m.group(2)
    if kind == "cpu":
        return "cpu"
    if kind == "meta":
        return "meta"
    from . import cuda
    if not cuda.is_available():
        raise RuntimeError(_CUDA_UNAVAILABLE)
    index = int(idx) if idx is not None else 0
    count = cuda.device_count()
    if index >= count:
        raise RuntimeError(f"Attempting to deserialize object on CUDA device {index} but torch.cuda.device_count() "
                           f"is {count}. Please use torch.load with map_location to map your storages to an "
                           "existing device.")
    return f"cuda:{index}"


def _location_for(map_location, saved):
    """Where ``map_location`` sends what was saved on ``saved`` (None, a dict, a device or its
    name); None when ``map_location`` is a callable, which the caller calls itself."""
    if map_location is None:
        return saved
    if isinstance(map_location, dict):
        return map_location.get(saved, saved)
    if isinstance(map_location, (str, bytes)) or type(map_location).__name__ == "device":
        return map_location
    return None


def _restore(t, saved, map_location):
    """Move the CPU tensor ``t`` (saved from ``saved``) where ``map_location`` says."""
    loc = _location_for(map_location, saved)
    if loc is None:
        out = map_location(t, saved)
        if out is not None:
            return out
        loc = saved
    dev = _check_location(loc)
    return t if dev == "cpu" else t.to(dev)


def _to_meta(map_location):
    """Whether ``map_location`` sends every tensor to the meta device (then no tensor byte is read)."""
    if isinstance(map_location, bytes):
        map_location = map_location.decode(errors="replace")
    if isinstance(map_location, str) or type(map_location).__name__ == "device":
        return str(map_location) == "meta"
    return False


class _UserError(Exception):
    """Carries an exception from map_location or a device move past the structure checks."""


# --- decoding ----------------------------------------------------------------------------

_NUMBER = (int, float)


class _Decoder:
    def __init__(self, entries, body, map_location, name, budget):
        self.entries, self.body, self.map_location, self.name = entries, body, map_location, name
        self.budget = budget
        self.meta = _to_meta(map_location)
        self.made = {}
        self.kind_of = {}

    def _spend(self, nbytes):
        self.budget -= nbytes
        if self.budget < 0:
            _fail(self.name, "it would need more memory than twice its size")

    def raw(self, key, kind, dtype_name, shape=None):
        """The stored array for ``key`` as ``dtype_name``: a view of the file where possible;
        conversions and copies are charged to the budget before they are made."""
        if not isinstance(key, str) or key not in self.entries:
            _fail(self.name, f"the structure refers to a missing tensor {_short(key)}"[:200])
        if self.kind_of.setdefault(key, (kind, dtype_name)) != (kind, dtype_name):
            _fail(self.name, f"tensor {_short(key)} is referred to with different kinds or dtypes")
        e = self.entries[key]
        stored = np.dtype(_ST_DTYPES[e.st])
        want = None if dtype_name is None else _NP_NAMES.get(dtype_name)
        if want is None and dtype_name is not None:
            _fail(self.name, f"unknown dtype {_short(dtype_name)}"[:200])
        mv = self.body[e.begin:e.end]
        if e.st == "BF16":
            if want not in (None, np.dtype(np.float32)) or dtype_name not in (None, "bfloat16", "float32"):
                _fail(self.name, f"tensor {_short(key)} is stored as BF16 but declared {dtype_name}")
            if dtype_name == "float32":
                self._spend(2 * (e.end - e.begin))
                bits = np.frombuffer(mv, dtype="<u2").astype(np.uint32) << 16
                return bits.view(np.float32).reshape(e.shape)
            from ._dtype import bfloat16
            a = np.frombuffer(mv, dtype="<u2") if e.end > e.begin else np.empty(0, "<u2")
            return self._native(a.view(bfloat16.np).reshape(e.shape))
        a = np.frombuffer(mv, dtype=stored) if e.end > e.begin else np.empty(0, stored)
        if e.st == "BOOL" and a.size and a.view(np.uint8).max() > 1:
            _fail(self.name, f"tensor {_short(key)} holds bytes that are not booleans")
        if want is not None and want != stored:
            if want == np.complex128 and stored == np.float64 and (len(e.shape) >= 1 and e.shape[-1] % 2 == 0):
                a = a.view("<c16")
                shp = e.shape[:-1] + (e.shape[-1] // 2,)
                if shape == [] and shp == (1,):
                    shp = ()
                elif shape is not None:
                    _fail(self.name, f"tensor {_short(key)} has an invalid shape")
                return self._native(a.reshape(shp))
            if not (dtype_name == "bfloat16" and stored == np.float32):
                _fail(self.name, f"tensor {_short(key)} is stored as {e.st} but declared {dtype_name}"[:200])
            from ._dtype import bfloat16  # written when bfloat16 was kept as float32
            self._spend(a.nbytes // 2)
            return a.reshape(e.shape).astype(bfloat16.np)
        elif shape is not None:
            _fail(self.name, f"tensor {_short(key)} has an unexpected shape entry")
        return self._native(a.reshape(e.shape))

    def raw_meta(self, key, dtype_name, shape=None):
        """What ``raw`` would return, as a MetaArray: the same checks on the header, no bytes read."""
        from ._meta import MetaArray
        if not isinstance(key, str) or key not in self.entries:
            _fail(self.name, f"the structure refers to a missing tensor {_short(key)}"[:200])
        if self.kind_of.setdefault(key, ("tensor", dtype_name)) != ("tensor", dtype_name):
            _fail(self.name, f"tensor {_short(key)} is referred to with different kinds or dtypes")
        e = self.entries[key]
        stored = np.dtype(_ST_DTYPES[e.st])
        want = _NP_NAMES[dtype_name]
        if e.st == "BF16":
            if dtype_name not in ("bfloat16", "float32"):
                _fail(self.name, f"tensor {_short(key)} is stored as BF16 but declared {dtype_name}")
            return MetaArray(e.shape, np.float32)
        if want != stored:
            if want == np.complex128 and stored == np.float64 and len(e.shape) >= 1 and e.shape[-1] % 2 == 0:
                shp = e.shape[:-1] + (e.shape[-1] // 2,)
                if shape == [] and shp == (1,):
                    shp = ()
                elif shape is not None:
                    _fail(self.name, f"tensor {_short(key)} has an invalid shape")
                return MetaArray(shp, want)
            if not (dtype_name == "bfloat16" and stored == np.float32):
                _fail(self.name, f"tensor {_short(key)} is stored as {e.st} but declared {dtype_name}"[:200])
        elif shape is not None:
            _fail(self.name, f"tensor {_short(key)} has an unexpected shape entry")
        return MetaArray(e.shape, stored)

    def _native(self, a):
        if not a.flags.aligned or a.dtype.byteorder == ">" or (a.nbytes and not a.flags.writeable):
            self._spend(a.nbytes)
            a = np.array(a, dtype=a.dtype.newbyteorder("="), order="C")
        elif a.dtype.byteorder == "<":
            a = a.view(a.dtype.newbyteorder("="))
        return a

    def tensor(self, enc):
        key = enc.get("tensor")
        cached = self.made.get(key) if isinstance(key, str) else None
        if cached is not None:
            return cached
        dt = enc.get("dtype", "float32")
        if not isinstance(dt, str) or dt not in _TENSOR_DTYPES:
            _fail(self.name, f"unknown tensor dtype {_short(dt)}"[:200])
        a = self.raw_meta(key, dt, enc.get("shape")) if self.meta else self.raw(key, "tensor", dt, enc.get("shape"))
        saved = enc.get("device", "cpu")
        if not isinstance(saved, str) or not _SAVED_RE.match(saved):
            _fail(self.name, f"a tensor's device {_short(saved)} is not one retrograd saves"[:200])
        flags = [enc.get("parameter", False), enc.get("requires_grad", False)]
        if not all(isinstance(x, bool) for x in flags):
            _fail(self.name, "a tensor's flags are not booleans")
        t = Tensor._make(a) if self.meta else self._place(Tensor._make(a), saved)
        if flags[0]:
            try:
                from .nn import Parameter
                t = Parameter(t, requires_grad=flags[1])
            except ImportError:
                t.requires_grad_(flags[1])
        elif flags[1]:
            t.requires_grad_(True)
        self.made[key] = t
        return t

    def _place(self, t, saved):
        try:
            return _restore(t, saved, self.map_location)
        except Exception as e:
            raise _UserError() from e

    def decode(self, v, depth=0):
        if depth > 3 * _MAX_DEPTH + 2:
            _fail(self.name, "its structure is nested too deeply")
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, list):
            return [self.decode(x, depth + 1) for x in v]
        if not isinstance(v, dict) or len(v) == 0:
            _fail(self.name, "unexpected entry in its structure")
        if "tensor" in v:
            return self.tensor(v)
        if "ndarray" in v:
            key = v["ndarray"]
            if isinstance(key, str) and ("nd", key) in self.made:
                return self.made[("nd", key)]
            dt = v.get("dtype")
            if not isinstance(dt, str) or dt not in _NP_NAMES:
                _fail(self.name, f"unknown array dtype {_short(dt)}"[:200])
            a = self.raw(key, "ndarray", dt, v.get("shape"))
            self.made[("nd", key)] = a
            return a
        if "odict" in v or "dict" in v:
            kind = "odict" if "odict" in v else "dict"
            out = collections.OrderedDict() if kind == "odict" else {}
            items = v[kind]
            if not isinstance(items, list):
                _fail(self.name, "a dict entry is not a list of pairs")
            for kv in items:
                if not isinstance(kv, list) or len(kv) != 2:
                    _fail(self.name, "a dict item is not a [key, value] pair")
                out[self.decode(kv[0], depth + 1)] = self.decode(kv[1], depth + 2)
            return out
        for kind, make in (("tuple", tuple), ("set", set), ("frozenset", frozenset)):
            if kind in v:
                if not isinstance(v[kind], list):
                    _fail(self.name, f"a {kind} entry is not a list")
                return make(self.decode(x, depth + 1) for x in v[kind])
        if "float" in v:
            if v["float"] not in ("nan", "inf", "-inf"):
                _fail(self.name, "a float entry is not nan/inf")
            return float(v["float"])
        if "complex" in v:
            x = v["complex"]
            if not (isinstance(x, list) and len(x) == 2 and all(type(c) in _NUMBER for c in x)):
                _fail(self.name, "a complex entry is not [real, imag]")
            return complex(*x)
        if "npscalar" in v:
            return self.npscalar(v)
        if "torch_dtype" in v:
            if v["torch_dtype"] not in _TENSOR_DTYPES:
                _fail(self.name, f"unknown dtype {_short(v['torch_dtype'])}"[:200])
            return D.to_dtype(v["torch_dtype"])
        if "device" in v:
            d = v["device"]
            if not isinstance(d, str) or not _LOCATION_RE.match(d):
                _fail(self.name, f"invalid device {_short(d)}"[:200])
            return to_device(d)
        _fail(self.name, f"unknown entry {{{', '.join(_short(k) for k in sorted(v)[:5])}}} in its structure"[:200])

    def npscalar(self, v):
        # Only fixed-size numeric dtypes: a scalar never allocates more than 16 bytes.
        dt = v.get("dtype")
        if not isinstance(dt, str) or dt not in _NP_NAMES or np.dtype(dt) not in _SCALAR_DTYPES:
            _fail(self.name, f"a NumPy scalar has dtype {_short(dt)}, which retrograd does not store"[:200])
        dt = np.dtype(dt)
        x = v["npscalar"]
        if dt.kind == "c":
            if not (isinstance(x, list) and len(x) == 2 and all(type(c) in _NUMBER for c in x)):
                _fail(self.name, "a complex NumPy scalar is not [real, imag]")
            x = complex(*x)
        elif type(x) not in (bool, int, float):
            _fail(self.name, "a NumPy scalar is not a number")
        try:
            return dt.type(x)
        except (OverflowError, ValueError, TypeError):
            _fail(self.name, f"a NumPy scalar does not fit its dtype {dt}")


_TENSOR_DTYPES = {"bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
                  "complex64", "complex128"}
_NP_NAMES = {n: np.dtype(n) for n in ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32",
                                      "uint64", "float16", "float32", "float64", "complex64", "complex128")}
_NP_NAMES["bfloat16"] = np.dtype(np.float32)
_ST_TO_TENSOR = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
                 "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool", "C64": "complex64"}


class _Prefixed(io.RawIOBase):
    """An unseekable stream with its first bytes (already read to tell the format) put back."""

    def __init__(self, head, f):
        self._head, self._f = head, f

    def readable(self):
        return True

    def read(self, n=-1):
        if self._head:
            out = self._head if n is None or n < 0 else self._head[:n]
            self._head = self._head[len(out):]
            if n is None or n < 0:
                return out + self._f.read()
            return out
        return self._f.read(n)

    def readinto(self, b):
        data = self.read(len(b))
        b[:len(data)] = data
        return len(data)


def _peek(f):
    """(a stream to read from, its first 4 bytes) without consuming them."""
    try:
        seekable = f.seekable()
    except Exception:
        seekable = False
    head = f.read(4)
    if isinstance(head, str):
        raise TypeError("retrograd.load needs a binary file")
    head = bytes(head or b"")
    if seekable:
        f.seek(-len(head), 1)
        return f, head
    return _Prefixed(head, f), head


def _load_torch(buf, name, map_location, weights_only, mmap, is_path):
    from . import _torch_format
    if mmap and not is_path:
        raise ValueError("f must be a file path in order to use the mmap argument")
    if weights_only is None:
        weights_only = True
    if bytes(buf[:4]) != b"PK\x03\x04":
        return _torch_format.load_legacy(buf, name, map_location, weights_only=bool(weights_only), mmap=bool(mmap))
    return _torch_format.load_torch(buf, name, map_location, weights_only=bool(weights_only), mmap=bool(mmap))


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **pickle_load_args):
    """Load what ``save`` wrote, a plain safetensors file (as a flat dict of tensors), or a
    PyTorch checkpoint (the zip format ``torch.save`` writes).

    retrograd's own files are never unpickled. PyTorch files are read by a restricted pickle
    machine that resolves only tensor/storage/dtype/container names to retrograd's own
    functions (PyTorch's ``weights_only=True``); anything else raises
    ``WeightsOnlyUnpicklingError`` naming it. ``weights_only=False`` is the explicit opt-in to
    ordinary unpickling, which can run code from the file (trusted files only). ``mmap=True``
    (paths only) keeps a PyTorch file's tensors as copy-on-write views of the mapped file.

    ``map_location`` as in PyTorch: None (tensors return to the device they were saved
    from), a device or string ('cpu', 'cuda:0'), a dict {saved location: new location}, or a
    callable(tensor, location) returning a tensor (or None for the default). A truncated,
    corrupted or malformed file raises ``CheckpointError`` (a RuntimeError) naming the file,
    and nothing is loaded. Paths are memory-mapped (copy-on-write), so loading makes no copy.
    """
    name = os.fsdecode(f) if isinstance(f, (str, bytes, os.PathLike)) else getattr(f, "name", "<file object>")
    if not isinstance(name, str):
        name = repr(name)
    is_path = isinstance(f, (str, bytes, os.PathLike))
    if not is_path:
        f, head = _peek(f)
        if head[:4] == b"PK\x03\x04" or (len(head) > 1 and head[0] == 0x80 and 2 <= head[1] <= 5):
            return _load_torch(f.read(), name, map_location, weights_only, mmap, is_path)
    src = _Source(f, name)
    head = bytes(src.buf[:4])
    if head == b"PK\x03\x04" or (len(head) > 1 and head[0] == 0x80 and 2 <= head[1] <= 5):
        return _load_torch(src.buf, name, map_location, weights_only, mmap, is_path)
    if mmap and not is_path:
        raise ValueError("f must be a file path in order to use the mmap argument")
    root, entries, body = _parse(src, read_body=not _to_meta(map_location))
    dec = _Decoder(entries, body, map_location, name, budget=2 * max(src.size, 1))
    try:
        if root is None:
            out = {}
            for e in sorted(entries.values(), key=lambda e: e.begin):
                if e.st not in _TENSOR_ST:
                    _fail(name, f"tensor {_short(e.name)} has dtype {e.st}, which retrograd tensors cannot hold"[:200])
                out[e.name] = dec.tensor({"tensor": e.name, "dtype": _ST_TO_TENSOR[e.st]})
            return out
        return dec.decode(root)
    except _UserError as u:
        raise u.__cause__.with_traceback(u.__cause__.__traceback__) from None
    except CheckpointError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError, RecursionError) as e:
        _fail(name, f"its structure does not decode ({type(e).__name__}: {e})"[:300])
