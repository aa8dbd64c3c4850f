"""PyTorch's checkpoint format (``torch.save`` since 1.6: a zip of ``data.pkl`` and raw storages).

Reading is safe by default: ``data.pkl`` is interpreted by a small pickle machine written here
(no ``pickle.Unpickler``), whose GLOBAL opcode resolves only a fixed table of names (PyTorch's
tensor/parameter rebuild functions, storage types, dtypes, ``torch.Size``, ``torch.device``,
``collections.OrderedDict`` and a few builtins) to retrograd's own functions; any other name is
refused with ``WeightsOnlyUnpicklingError`` naming it, before anything is imported or called.
Every storage's size, and every tensor's offset/size/stride, is checked against the archive's
member sizes before an array is made; views of one storage share memory as in PyTorch.

``weights_only=False`` is the user's explicit opt-in to ordinary unpickling (which can run
code), as in PyTorch >= 2.6: it is what loads a whole pickled module.

Writing produces what PyTorch writes (``archive/data.pkl`` protocol 2, storages aligned to 64
bytes, ``byteorder``, ``version``), readable by ``torch.load`` with ``weights_only=True``.
"""
import collections
import io
import os
import pickle
import struct

import numpy as np

from . import _dtype as D

__all__ = ["WeightsOnlyUnpicklingError", "load_torch", "save_torch", "is_torch_zip", "is_legacy_pickle"]


class WeightsOnlyUnpicklingError(pickle.UnpicklingError):
    """A name or construct in a PyTorch checkpoint that the weights-only loader does not allow."""


def _error_class():
    return WeightsOnlyUnpicklingError


_EXPLAIN = ("Weights only load failed. This file can still be loaded, to do so you have two options, "
            "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. \n\t(1) In PyTorch 2.6, we changed the "
            "default value of the `weights_only` argument in `torch.load` from `False` to `True`. Re-running "
            "`torch.load` with `weights_only` set to `False` will likely succeed, but it can result in arbitrary "
            "code execution. Do it only if you got the file from a trusted source.\n\t(2) Alternatively, to load "
            "with `weights_only=True` please check the recommended steps in the following error message.\n\t"
            "WeightsUnpickler error: {why}\n\nCheck the documentation of torch.load to learn more about types "
            "accepted by default with weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")


def _refuse(why):
    raise _error_class()(_EXPLAIN.format(why=why))


def _checkpoint_error():
    from .serialization import CheckpointError
    return CheckpointError


def _fail(name, why):
    raise _checkpoint_error()(f"{name} is not a valid PyTorch checkpoint: {why}")


# --- dtypes and storages -------------------------------------------------------------------

# torch dtype name -> (stored NumPy dtype, retrograd dtype name it loads as)
_TORCH_DTYPES = {
    "float32": ("<f4", "float32"), "float": ("<f4", "float32"), "float64": ("<f8", "float64"),
    "double": ("<f8", "float64"), "float16": ("<f2", "float16"), "half": ("<f2", "float16"),
    "bfloat16": ("<u2", "float32"), "int64": ("<i8", "int64"), "long": ("<i8", "int64"),
    "int32": ("<i4", "int32"), "int": ("<i4", "int32"), "int16": ("<i2", "int16"), "short": ("<i2", "int16"),
    "int8": ("i1", "int8"), "uint8": ("u1", "uint8"), "bool": ("u1", "bool"),
    "complex64": ("<c8", "complex64"), "cfloat": ("<c8", "complex64"),
    "complex128": ("<c16", "complex128"), "cdouble": ("<c16", "complex128"),
    # no unsigned types wider than 8 bits in retrograd: read into the next signed type that holds them
    "uint16": ("<u2", "int32"), "uint32": ("<u4", "int64"), "uint64": ("<u8", "int64"),
}
_STORAGE_TYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
    "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8",
    "ByteStorage": "uint8", "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
}
_STORAGE_OF = {v: k for k, v in _STORAGE_TYPES.items()}
_MAX_NDIM = 64
_BIG = 1 << 62


class _DtypeRef:
    """A torch dtype named in a file; loads as the retrograd dtype that holds its values."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


def _retrograd_dtype(name):
    return getattr(D, _TORCH_DTYPES[name][1]) if _TORCH_DTYPES[name][1] != "bool" else D.bool_


class _StorageType:
    __slots__ = ("dtype",)     # torch dtype name, or None for UntypedStorage

    def __init__(self, dtype):
        self.dtype = dtype


class _Storage:
    """A storage read from the archive: a 1-D CPU array, and where the file says it lived."""
    __slots__ = ("array", "dtype", "location", "device", "loader")

    def __init__(self, array, dtype, location, device, loader=None):
        self.array, self.dtype, self.location, self.device = array, dtype, location, device
        self.loader = loader


# --- the archive -----------------------------------------------------------------------------

def is_torch_zip(head):
    return bytes(head[:4]) == b"PK\x03\x04"


def is_legacy_pickle(head):
    head = bytes(head[:2])
    return len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= 5


class _Archive:
    """The members of a stored (uncompressed) zip, located from its central directory and
    checked against its local headers: {name: (data start, size)} within ``buf``."""

    def __init__(self, buf, name):
        import zipfile
        self.buf, self.name = buf, name
        self.members = {}
        size = len(buf)
        try:
            zf = zipfile.ZipFile(_BufferFile(buf))
            infos = zf.infolist()
        except Exception as e:   # zipfile raises many kinds on hostile input
            _fail(name, f"it is not a readable zip archive ({type(e).__name__}: {str(e)[:120]})")
        for zi in infos:
            if zi.compress_type != zipfile.ZIP_STORED or zi.compress_size != zi.file_size:
                _fail(name, f"member {zi.filename[:80]!r} is compressed (PyTorch stores members uncompressed)")
            off = zi.header_offset
            if not (0 <= off and off + 30 <= size):
                _fail(name, f"member {zi.filename[:80]!r} lies outside the file")
            sig, nlen, xlen = struct.unpack("<4s22xHH", bytes(buf[off:off + 30]))
            if sig != b"PK\x03\x04":
                _fail(name, f"member {zi.filename[:80]!r} has no local header")
            start = off + 30 + nlen + xlen
            if start + zi.file_size > size:
                _fail(name, f"member {zi.filename[:80]!r} runs past the end of the file (truncated?)")
            self.members[zi.filename] = (start, zi.file_size)
        end = 0
        for start, n in sorted(self.members.values()):
            if start < end:   # two entries sharing bytes would let a small file expand on loading
                _fail(name, "its members overlap")
            end = start + n
        pkl = [n for n in self.members if n == "data.pkl" or n.endswith("/data.pkl")]
        if not pkl:
            _fail(name, "the archive has no data.pkl")
        pkl.sort(key=lambda n: (n.count("/"), n))
        self.prefix = pkl[0][:-len("data.pkl")]

    def member(self, rel):
        m = self.members.get(self.prefix + rel)
        if m is None:
            return None
        start, n = m
        return self.buf[start:start + n]


class _BufferFile(io.RawIOBase):
    """A read-only seekable file over a buffer, without copying it (zipfile reads through it)."""

    def __init__(self, buf):
        self._mv = memoryview(buf)
        self._pos = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, pos, whence=0):
        if whence == 1:
            pos += self._pos
        elif whence == 2:
            pos += len(self._mv)
        if pos < 0:
            raise OSError("negative seek position")
        self._pos = pos
        return pos

    def read(self, n=-1):
        end = len(self._mv) if n is None or n < 0 else min(len(self._mv), self._pos + n)
        out = bytes(self._mv[self._pos:end]) if end > self._pos else b""
        self._pos = max(self._pos, end)
        return out

    def readinto(self, b):
        data = self.read(len(b))
        b[:len(data)] = data
        return len(data)


# --- the restricted pickle machine -----------------------------------------------------------

class _Global:
    """A name from the allowed table; calling it (REDUCE/NEWOBJ) runs retrograd's function."""
    __slots__ = ("module", "qualname", "fn")

    def __init__(self, module, qualname, fn):
        self.module, self.qualname, self.fn = module, qualname, fn


_MARK = object()


def _fixed_globals():
    from ._tensor import Size
    from ._device import device

    def odict(*args):
        if args:
            _refuse("collections.OrderedDict is only allowed without arguments")
        return collections.OrderedDict()

    def make_device(*args):
        if not (1 <= len(args) <= 2 and all(isinstance(a, (str, int)) and not isinstance(a, bool) for a in args)):
            _refuse("torch.device takes a device string (and an index) here")
        return device(*args)

    def make_size(*args):
        if len(args) != 1 or not isinstance(args[0], (tuple, list)) or \
                not all(type(x) is int for x in args[0]):
            _refuse("torch.Size takes a tuple of ints here")
        return Size(args[0])

    def container(kind):
        def make(*args):
            if len(args) > 1 or (args and not isinstance(args[0], (list, tuple, set, frozenset))):
                _refuse(f"builtins.{kind.__name__} takes a list or tuple here")
            if kind in (set, frozenset) and args:
                return kind(_key(x) for x in args[0])      # admitted by the machine before the call
            return kind(*args)
        make.hashes_items = kind in (set, frozenset)
        return make

    def make_complex(*args):
        if not (1 <= len(args) <= 2 and all(type(a) in (int, float) for a in args)):
            _refuse("builtins.complex takes numbers here")
        return complex(*args)

    def encode(*args):
        # protocol 2 pickles bytes as _codecs.encode(str, 'latin1')
        if len(args) != 2 or not isinstance(args[0], str) or args[1] not in ("latin1", "latin-1"):
            _refuse("_codecs.encode is only allowed as encode(str, 'latin1')")
        return args[0].encode("latin1")

    table = {
        ("collections", "OrderedDict"): odict,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
        ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
        ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
        ("torch", "Size"): make_size,
        ("torch", "device"): make_device,
        ("torch", "Tensor"): _TENSOR_TYPE,
        ("torch.nn.parameter", "Parameter"): _PARAMETER_TYPE,
        ("builtins", "set"): container(set),
        ("builtins", "frozenset"): container(frozenset),
        ("builtins", "list"): container(list),
        ("builtins", "tuple"): container(tuple),
        ("builtins", "complex"): make_complex,
        ("_codecs", "encode"): encode,
    }
    for n in _STORAGE_TYPES:
        table[("torch", n)] = _StorageType(_STORAGE_TYPES[n])
    table[("torch.storage", "UntypedStorage")] = _StorageType(None)
    table[("torch", "UntypedStorage")] = _StorageType(None)
    for n in _TORCH_DTYPES:
        table[("torch", n)] = _DtypeRef(n)
    return table


def _TENSOR_TYPE(*args):
    _refuse("torch.Tensor can only be named by _rebuild_from_type_v2")


def _PARAMETER_TYPE(*args):
    _refuse("torch.nn.parameter.Parameter can only be named by _rebuild_from_type_v2")


_TABLE = None


def _resolve(module, name):
    global _TABLE
    if _TABLE is None:
        _TABLE = _fixed_globals()
    fn = _TABLE.get(("builtins" if module == "__builtin__" else module, name))
    if fn is None:
        allowed = _user_allowed()
        obj = allowed.get(f"{module}.{name}", _MARK)
        if obj is _MARK and (module == "torch" or module.startswith("torch.")):
            # PyTorch's name of an allowlisted retrograd object that lives elsewhere in retrograd
            # (looked up among modules already imported: nothing is imported here)
            import sys
            cand = getattr(sys.modules.get("retrograd" + module[5:]), name, _MARK)
            if any(cand is v for v in allowed.values()):
                obj = cand
        if obj is not _MARK:
            return _Allowed(obj)
        _refuse(f"Unsupported global: GLOBAL {module}.{name} was not an allowed global by default. Please use "
                f"`torch.serialization.add_safe_globals([{module}.{name}])` or the "
                f"`torch.serialization.safe_globals([{module}.{name}])` context manager to allowlist this global "
                "if you trust this class/function.")
    if isinstance(fn, (_StorageType, _DtypeRef)):
        return fn
    return _Global(module, name, fn)


def _unwrap(x):
    if isinstance(x, _DtypeRef):
        return _retrograd_dtype(x.name)
    if isinstance(x, _Allowed):
        return x.obj
    return x


class _Allowed:
    """A class or function the user allowlisted (``serialization.add_safe_globals``)."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj


def _user_allowed():
    """{name a file may use: object} for the user's allowlist. A retrograd object also answers
    to its PyTorch name (``torch.nn.modules.rnn.LSTM`` for ``retrograd.nn.modules.rnn.LSTM``),
    so that files written by PyTorch load with the same allowlist."""
    from .serialization import get_safe_globals
    out = {}
    for g in get_safe_globals():
        if isinstance(g, tuple) and len(g) == 2 and isinstance(g[1], str):
            out[g[1]] = g[0]
            continue
        mod, qual = getattr(g, "__module__", None), getattr(g, "__qualname__", getattr(g, "__name__", None))
        if not isinstance(mod, str) or not isinstance(qual, str):
            continue
        out[f"{mod}.{qual}"] = g
        if mod == "retrograd" or mod.startswith("retrograd."):
            out.setdefault(f"torch{mod[len('retrograd'):]}.{qual}", g)
    return out


def _allowed_types():
    return {id(g) for g in (x[0] if isinstance(x, tuple) else x for x in _user_allowed().values())
            if isinstance(g, type)}


class _Machine:
    """Runs a pickle's opcodes over plain Python data; GLOBAL goes through ``_resolve``."""

    def __init__(self, data, persistent_load, name, pos=0):
        self.data = data if isinstance(data, bytes) else bytes(data)
        self.pos = pos
        self.persistent_load = persistent_load
        self.name = name
        self.hashes = {}        # (id(container), hash) -> keys with that hash in it
        self.budget = [len(self.data) + (1 << 16)]

    def take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise _checkpoint_error()(f"{self.name} is not a valid PyTorch checkpoint: its pickle is truncated")
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s

    def line(self):
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            self.take(len(self.data) + 1)
        s = self.data[self.pos:end]
        self.pos = end + 1
        return s

    def run(self):
        stack, meta, memo = [], [], {}
        take, unpack = self.take, struct.unpack

        def pop_mark():
            nonlocal stack
            if not meta:
                raise ValueError("MARK missing")
            items = stack
            stack = meta.pop()
            if _MARK in items:
                raise ValueError("unbalanced MARK")
            return items

        def call(f, args, new=False):
            if isinstance(f, _Allowed):       # the user's allowlist: construct or call it, as PyTorch does
                if not isinstance(args, tuple):
                    raise ValueError("REDUCE arguments are not a tuple")
                args = [_unwrap(a) for a in args]
                if new:
                    if not isinstance(f.obj, type):
                        raise ValueError("NEWOBJ on a function")
                    return f.obj.__new__(f.obj, *args)
                return f.obj(*args)
            if not isinstance(f, _Global):
                raise ValueError(f"REDUCE on {type(f).__name__}")
            if not isinstance(args, tuple):
                raise ValueError("REDUCE arguments are not a tuple")
            if f.fn is _rebuild_tensor_v3:     # needs the file's own dtype name
                return f.fn(*args)
            if getattr(f.fn, "hashes_items", False) and args and isinstance(args[0], (list, tuple, set, frozenset)):
                _admit({}, 0, [_key(x) for x in args[0]], self.budget)
            return f.fn(*[_unwrap(a) for a in args])

        while True:
            op = take(1)
            if op == b"\x80":            # PROTO
                if take(1)[0] > 5:
                    raise ValueError("unsupported pickle protocol")
            elif op == b"\x95":          # FRAME
                take(8)
            elif op == b".":             # STOP
                if len(stack) != 1 or meta:
                    raise ValueError("stack not empty at STOP")
                return _unwrap(stack[0])
            elif op == b"(":             # MARK
                meta.append(stack)
                stack = []
            elif op == b"0":             # POP
                stack.pop()
            elif op == b"1":             # POP_MARK
                items = pop_mark()
            elif op == b"2":             # DUP
                stack.append(stack[-1])
            elif op == b"}":
                stack.append({})
            elif op == b"]":
                stack.append([])
            elif op == b")":
                stack.append(())
            elif op == b"\x8f":          # EMPTY_SET
                stack.append(set())
            elif op == b"\x90":          # ADDITEMS
                items = pop_mark()
                s = stack[-1]
                if not isinstance(s, set):
                    raise ValueError("ADDITEMS on a non-set")
                keys = [_key(x) for x in items]
                _admit(self.hashes, id(s), keys, self.budget)
                s.update(keys)
            elif op == b"\x91":          # FROZENSET
                items = pop_mark()
                keys = [_key(x) for x in items]
                _admit({}, 0, keys, self.budget)
                stack.append(frozenset(keys))
            elif op == b"t":
                items = pop_mark()
                stack.append(tuple(_unwrap(x) if isinstance(x, _Allowed) else x for x in items))
            elif op == b"\x85":
                stack.append((_unwrap_allowed(stack.pop()),))
            elif op == b"\x86":
                b = stack.pop()
                stack[-1] = (_unwrap_allowed(stack[-1]), _unwrap_allowed(b))
            elif op == b"\x87":
                c = stack.pop()
                b = stack.pop()
                stack[-1] = (_unwrap_allowed(stack[-1]), _unwrap_allowed(b), _unwrap_allowed(c))
            elif op == b"l":             # LIST
                items = pop_mark()
                stack.append([_unwrap(x) for x in items])
            elif op == b"d":             # DICT
                items = pop_mark()
                stack.append(self._pairs({}, items))
            elif op == b"a":             # APPEND
                v = stack.pop()
                lst = stack[-1]
                if type(lst) is not list:
                    raise ValueError("APPEND on a non-list")
                lst.append(_unwrap(v))
            elif op == b"e":             # APPENDS
                items = pop_mark()
                lst = stack[-1]
                if type(lst) is not list:
                    raise ValueError("APPENDS on a non-list")
                lst.extend(_unwrap(x) for x in items)
            elif op == b"s":             # SETITEM
                v = stack.pop()
                k = stack.pop()
                self._pairs(stack[-1], [k, v])
            elif op == b"u":             # SETITEMS
                items = pop_mark()
                self._pairs(stack[-1], items)
            elif op == b"N":
                stack.append(None)
            elif op == b"\x88":
                stack.append(True)
            elif op == b"\x89":
                stack.append(False)
            elif op == b"J":
                stack.append(unpack("<i", take(4))[0])
            elif op == b"K":
                stack.append(take(1)[0])
            elif op == b"M":
                stack.append(unpack("<H", take(2))[0])
            elif op == b"\x8a":          # LONG1
                stack.append(int.from_bytes(take(take(1)[0]), "little", signed=True))
            elif op == b"\x8b":          # LONG4
                n = unpack("<i", take(4))[0]
                stack.append(int.from_bytes(take(n), "little", signed=True))
            elif op == b"G":
                stack.append(unpack(">d", take(8))[0])
            elif op == b"X":
                stack.append(str(take(unpack("<I", take(4))[0]), "utf-8", "surrogatepass"))
            elif op == b"\x8c":          # SHORT_BINUNICODE
                stack.append(str(take(take(1)[0]), "utf-8", "surrogatepass"))
            elif op == b"\x8d":          # BINUNICODE8
                stack.append(str(take(unpack("<Q", take(8))[0]), "utf-8", "surrogatepass"))
            elif op == b"C":             # SHORT_BINBYTES
                stack.append(take(take(1)[0]))
            elif op == b"B":
                stack.append(take(unpack("<I", take(4))[0]))
            elif op == b"\x8e":
                stack.append(take(unpack("<Q", take(8))[0]))
            elif op == b"U":             # SHORT_BINSTRING (Python 2 str)
                stack.append(str(take(take(1)[0]), "latin1"))
            elif op == b"T":
                stack.append(str(take(unpack("<i", take(4))[0]), "latin1"))
            elif op == b"c":             # GLOBAL
                module = str(self.line(), "utf-8", "replace")
                name = str(self.line(), "utf-8", "replace")
                stack.append(_resolve(module, name))
            elif op == b"\x93":          # STACK_GLOBAL
                name = stack.pop()
                module = stack.pop()
                if not (isinstance(module, str) and isinstance(name, str)):
                    raise ValueError("STACK_GLOBAL needs strings")
                stack.append(_resolve(module, name))
            elif op == b"R":             # REDUCE
                args = stack.pop()
                stack[-1] = call(stack[-1], args)
            elif op == b"\x81":          # NEWOBJ
                args = stack.pop()
                stack[-1] = call(stack[-1], args, new=True)
            elif op == b"b":             # BUILD
                state = stack.pop()
                _build(stack[-1], state)
            elif op == b"Q":             # BINPERSID
                pid = stack.pop()
                stack.append(self.persistent_load(pid))
            elif op == b"q":
                memo[take(1)[0]] = stack[-1]
            elif op == b"r":
                memo[unpack("<I", take(4))[0]] = stack[-1]
            elif op == b"\x94":          # MEMOIZE
                memo[len(memo)] = stack[-1]
            elif op == b"h":
                stack.append(memo[take(1)[0]])
            elif op == b"j":
                stack.append(memo[unpack("<I", take(4))[0]])
            else:
                raise ValueError(f"unsupported pickle opcode {op!r}")

    def _pairs(self, d, items):
        if not isinstance(d, dict):
            raise ValueError("SETITEM on a non-dict")
        if len(items) % 2:
            raise ValueError("odd number of dict items")
        keys = [_key(items[i]) for i in range(0, len(items), 2)]
        _admit(self.hashes, id(d), keys, self.budget)
        for i, k in enumerate(keys):
            d[k] = _unwrap(items[2 * i + 1])
        return d


# Keys with one hash value make a dict or set quadratic to build (every insertion walks the same
# probe chain): a file of colliding integers or tuples would take minutes to load. Legitimate
# keys (names, small indices) share a hash at most by accident; str hashes are randomised.
_MAX_SAME_HASH = 32


def _weight(k):
    t = type(k)
    if t is int:
        return 1 + k.bit_length() // 64
    if t is tuple:
        return 1 + sum(_weight(x) for x in k)
    return 1              # str and bytes cache their hash; floats and complexes are one step


def _admit(counts, owner, keys, budget):
    """Count the non-string keys going into container ``owner`` by hash value; refuse a flood.
    Hashing a tuple or a big int is not cached: ``budget`` ([elements left]) bounds the work
    that hashing keys may take over one pickle (a big key reused from the memo on every line)."""
    for k in keys:
        if type(k) is str:
            continue
        budget[0] -= _weight(k)
        if budget[0] < 0:
            raise ValueError("its dict keys and set items take too long to hash (a file built to make loading slow)")
        c = (owner, hash(k))
        n = counts.get(c, 0) + 1
        if n > _MAX_SAME_HASH:
            raise ValueError(f"more than {_MAX_SAME_HASH} dict keys or set items share one hash value "
                             "(a file built to make loading slow)")
        counts[c] = n


def _unwrap_allowed(x):
    return x.obj if isinstance(x, _Allowed) else x


_KEY_TYPES = (str, int, float, bool, bytes, complex, type(None))


def _key(k, depth=0):
    """A dict key or set item from the file: plain values, or shallow tuples of them (hashing a
    deeply nested tuple would recurse in C)."""
    if isinstance(k, _KEY_TYPES):
        return k
    if type(k) is tuple and depth < 4:
        for x in k:
            _key(x, depth + 1)
        return k
    if isinstance(k, _DtypeRef):
        return _unwrap(k)
    raise ValueError(f"a dict key or set item of type {type(k).__name__} is not allowed")


def _build(obj, state):
    """BUILD, as PyTorch's weights-only loader allows it: attributes of an OrderedDict (a
    state_dict's ``_metadata``) or of a tensor, from a dict of public names."""
    from ._tensor import Tensor
    if isinstance(state, tuple) and len(state) == 2 and isinstance(obj, Tensor):
        state = state[1] if state[0] is None else {**(state[0] or {}), **(state[1] or {})}
    if state is None:
        return
    if type(obj) is not collections.OrderedDict and not isinstance(obj, Tensor) and id(type(obj)) in _allowed_types():
        # an instance of a class the user allowlisted: its own __setstate__, or its __dict__
        setstate = getattr(obj, "__setstate__", None)
        if setstate is not None and getattr(type(obj), "__setstate__", None) is not getattr(object, "__setstate__", None):
            setstate(state)
            return
        slots = None
        if isinstance(state, tuple) and len(state) == 2:
            state, slots = state
        if state:
            obj.__dict__.update(state)
        for k, v in (slots or {}).items():
            setattr(obj, k, v)
        return
    if not isinstance(state, dict) or not isinstance(obj, (collections.OrderedDict, Tensor)):
        raise ValueError(f"BUILD on {type(obj).__name__}")
    for k, v in state.items():
        if not isinstance(k, str) or (k.startswith("_") and not (isinstance(obj, dict) and k == "_metadata")):
            raise ValueError(f"BUILD sets a private attribute {str(k)[:60]!r}")
        if hasattr(type(obj), k):     # a method or property of the class is never replaced
            raise ValueError(f"BUILD sets the class attribute {k[:60]!r}")
        obj.__dict__[k] = v


# --- rebuilding tensors ----------------------------------------------------------------------

def _check_view(storage, offset, size, stride):
    n = storage.array.shape[0]
    if not (type(offset) is int and isinstance(size, tuple) and isinstance(stride, tuple)):
        raise ValueError("a tensor's offset, size or stride has the wrong type")
    if len(size) != len(stride) or len(size) > _MAX_NDIM:
        raise ValueError("a tensor's size and stride do not match")
    if not all(type(s) is int and s >= 0 for s in size) or not all(type(s) is int and s >= 0 for s in stride):
        raise ValueError("a tensor has a negative or non-integer size or stride")
    if offset < 0:
        raise ValueError("a tensor has a negative storage offset")
    if offset >= _BIG or any(x >= _BIG for x in size) or any(x >= _BIG for x in stride):
        raise ValueError("a tensor's size, stride or offset is out of range")
    if 0 in size:
        if offset > n:
            raise ValueError("a tensor's storage offset lies outside its storage")
        return
    last = offset + sum((s - 1) * st for s, st in zip(size, stride))
    if last >= n:
        raise ValueError(f"a tensor reaches element {last} of a storage of {n} elements")


def _view(storage, offset, size, stride):
    from ._tensor import Tensor
    if isinstance(storage, _StorageType) or not isinstance(storage, _Storage):
        raise ValueError("a tensor's storage is not a storage")
    size, stride = tuple(size), tuple(stride)
    _check_view(storage, offset, size, stride)
    a = storage.array
    if storage.device == "meta":
        from ._meta import MetaArray
        return Tensor._make(MetaArray(size, a.dtype))
    isz = a.itemsize
    base = a[offset:] if 0 not in size else a[:0]
    v = np.lib.stride_tricks.as_strided(base, shape=size, strides=tuple(s * isz for s in stride),
                                        writeable=a.flags.writeable)
    t = Tensor._make(v)
    if storage.device not in ("cpu", None):
        t = t.to(storage.device)
    return t


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _view(storage, storage_offset, size, stride)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    t = _view(storage, storage_offset, size, stride)
    if requires_grad is True:
        if not t.dtype.is_floating_point and not t.dtype.is_complex:
            raise ValueError("an integer tensor is marked as requiring grad")
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    if isinstance(dtype, D.dtype):
        dtype = _DtypeRef(dtype.name)
    if not isinstance(dtype, _DtypeRef) or dtype.name not in _TORCH_DTYPES:
        raise ValueError("a tensor's dtype is not a dtype")
    if isinstance(storage, _Storage) and storage.dtype is None:
        stored = np.dtype(_TORCH_DTYPES[dtype.name][0])
        if storage.array.shape[0] % stored.itemsize:
            raise ValueError(f"an untyped storage of {storage.array.shape[0]} bytes does not hold {dtype.name}")
        if isinstance(storage.array, _MetaStorage):
            storage.array = _MetaStorage(storage.array.shape[0] // stored.itemsize,
                                         np.dtype(_retrograd_dtype(dtype.name).np))
        else:
            storage.array = storage.loader._array(storage.array, dtype.name, stored)
        storage.dtype = dtype.name
    elif isinstance(storage, _Storage) and storage.dtype != dtype.name:
        raise ValueError("a storage is used with two dtypes")
    return _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata)


def _rebuild_parameter(data, requires_grad, backward_hooks):
    from ._tensor import Tensor
    from .nn import Parameter
    if not isinstance(data, Tensor) or type(requires_grad) is not bool:
        raise ValueError("a parameter is not rebuilt from a tensor")
    return Parameter(data.detach() if data.requires_grad else data, requires_grad=requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = _rebuild_parameter(data, requires_grad, backward_hooks)
    _build(p, state)
    return p


def _rebuild_from_type_v2(func, new_type, args, state):
    if not isinstance(func, _Global) or func.fn not in (_rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_tensor,
                                                       _rebuild_parameter, _rebuild_parameter_with_state):
        raise ValueError("_rebuild_from_type_v2 with a function other than a tensor rebuild")
    if not isinstance(args, tuple):
        raise ValueError("_rebuild_from_type_v2 arguments are not a tuple")
    t = func.fn(*[_unwrap(a) for a in args])
    if isinstance(new_type, _Global) and new_type.fn is _PARAMETER_TYPE:
        t = _rebuild_parameter(t, t.requires_grad, None)
    elif not (isinstance(new_type, _Global) and new_type.fn is _TENSOR_TYPE):
        raise ValueError("_rebuild_from_type_v2 to a type other than Tensor or Parameter")
    _build(t, state)
    return t


# --- loading ---------------------------------------------------------------------------------

def _storage_dtype(stype, name):
    """The torch dtype name a storage type from the file stands for (None: untyped)."""
    if isinstance(stype, _StorageType):
        return stype.dtype
    if isinstance(stype, _DtypeRef):
        return stype.name
    if isinstance(stype, str) and stype in _STORAGE_TYPES:    # legacy files name it in a string
        return _STORAGE_TYPES[stype]
    _fail(name, "a storage has an unknown type")


class _Loader:
    def __init__(self, archive, name, map_location, mmap, big_endian):
        self.archive, self.name = archive, name
        self.map_location, self.mmap, self.big_endian = map_location, mmap, big_endian
        self.storages = {}

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise ValueError("unknown persistent id")
        _, stype, key, location, numel = pid
        if not isinstance(key, str) or not isinstance(location, str) or type(numel) is not int or numel < 0:
            raise ValueError("malformed storage reference")
        tname = _storage_dtype(stype, self.name)
        cached = self.storages.get(key)
        if cached is not None:
            if cached[0] != tname:
                raise ValueError(f"storage {key[:40]!r} is used with two dtypes")
            return cached[1]
        raw = self.archive.member("data/" + key)
        if raw is None:
            raise ValueError(f"storage {key[:40]!r} is missing from the archive")
        stored = np.dtype(_TORCH_DTYPES[tname][0]) if tname is not None else np.dtype("u1")
        if numel * stored.itemsize != len(raw):
            raise ValueError(f"storage {key[:40]!r} declares {numel} elements of {stored.itemsize} bytes "
                             f"but holds {len(raw)} bytes")
        st = _Storage(self._array(raw, tname, stored), tname, location, None, self)
        from .serialization import _UserError
        try:
            st.device = self._place(st)
        except RuntimeError as e:
            if self.map_location is None:   # the file's own tag: torch's message, as a checkpoint error
                raise _checkpoint_error()(str(e)) from None
            raise _UserError() from e
        except Exception as e:    # map_location's own errors are the user's to see
            raise _UserError() from e
        if isinstance(st.device, _CallableTarget):
            self._call_map_location(st)
        self.storages[key] = (tname, st)
        return st

    def _array(self, raw, tname, stored):
        want = stored if tname is None else np.dtype(_retrograd_dtype(tname).np)
        if self.meta:
            return _MetaStorage(len(raw) // stored.itemsize, want)
        a = np.frombuffer(raw, dtype=stored) if len(raw) else np.empty(0, stored)
        copied = False
        if self.big_endian and stored.itemsize > 1:
            a, copied = a.byteswap(), True     # a copy, now in native order
        if tname == "bfloat16":
            return (a.astype(np.uint32) << 16).view(np.float32)
        if tname == "bool":
            if a.size and a.max() > 1:      # torch reads any nonzero byte as True
                return a != 0
            a = a.view(np.bool_)
        elif want != a.dtype.newbyteorder("="):
            return a.astype(want)
        else:
            a = a.view(want)
        if not copied and (not self.mmap or not a.flags.aligned):
            a = a.copy()
        return a

    def _place(self, st):
        """The device a storage goes to (None/'cpu': stays), as ``map_location`` says."""
        from .serialization import _check_location, _location_for
        ml, loc = self.map_location, st.location
        if self.meta:
            return "meta"
        target = _location_for(ml, loc)
        if target is None:
            return _CallableTarget(ml, loc)
        dev = _check_location(target)
        return "cpu" if dev == "cpu" else dev

    def _call_map_location(self, st):
        from ._tensor import Tensor
        from .serialization import _UserError
        t = Tensor._make(st.array)
        try:
            out = st.device(t)
        except Exception as e:
            raise _UserError() from e
        st.device = "cpu"
        if out is t:
            return
        a = out._data
        if isinstance(a, np.ndarray) and a.ndim == 1 and a.shape == st.array.shape:
            st.array = a if a.dtype == st.array.dtype else a.astype(st.array.dtype)
        else:
            st.device = str(out.device)

    @property
    def meta(self):
        from .serialization import _to_meta
        return _to_meta(self.map_location)


class _CallableTarget:
    """map_location as a callable(storage, location): called with the loaded CPU tensor; a
    tensor it returns replaces it (None keeps it)."""

    def __init__(self, fn, loc):
        self.fn, self.loc = fn, loc

    def __call__(self, t):
        from ._tensor import Tensor
        out = self.fn(t, self.loc)
        if out is None:
            return t
        if not isinstance(out, Tensor):
            raise TypeError(f"map_location returned {type(out).__name__}, not a tensor or None")
        return out


class _MetaStorage:
    """Stands in for a storage's array when loading to the meta device (no bytes are read)."""

    def __init__(self, n, dtype):
        self.shape, self.dtype, self.itemsize = (n,), dtype, dtype.itemsize
        self.flags = type("F", (), {"writeable": False})()


def _read_all(f, name, use_mmap):
    """The file's bytes: a copy-on-write map for paths (``mmap=True`` keeps it for the tensors),
    a read for file objects."""
    if isinstance(f, (str, bytes, os.PathLike)):
        import mmap as _mmap
        with open(f, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                return b""
            try:
                return memoryview(_mmap.mmap(fh.fileno(), size, access=_mmap.ACCESS_COPY))
            except (OSError, ValueError):
                return fh.read()
    if use_mmap:
        raise ValueError("f must be a file path in order to use the mmap argument")
    data = f.read()
    if isinstance(data, str):
        raise TypeError("retrograd.load needs a binary file")
    return data


def load_torch(buf, name, map_location=None, weights_only=True, mmap=False):
    """Load a PyTorch zip checkpoint held in ``buf`` (see the module docstring)."""
    archive = _Archive(buf, name)
    bo = archive.member("byteorder")
    big = False
    if bo is not None:
        bo = bytes(bo)
        if bo not in (b"little", b"big"):
            _fail(name, "its byteorder record is neither 'little' nor 'big'")
        big = bo == b"big"
    loader = _Loader(archive, name, map_location, bool(mmap), big)
    data = archive.member("data.pkl")
    if not weights_only:
        return _full_unpickle(data, loader)
    from .serialization import _UserError
    try:
        return _Machine(data, loader.persistent_load, name).run()
    except _error_class():
        raise
    except _checkpoint_error():
        raise
    except _UserError as u:
        raise u.__cause__ from None
    except Exception as e:     # whatever a malformed pickle makes a rebuild raise
        _fail(name, f"its data.pkl does not load ({type(e).__name__}: {str(e)[:200]})")


_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c
_LEGACY_PROTOCOL = 1001


def _refuse_pid(pid):
    raise ValueError("a persistent id outside the main pickle")


def load_legacy(buf, name, map_location=None, weights_only=True, mmap=False):
    """Load PyTorch's pre-1.6 format: four pickles (magic number, protocol, system info, the
    object), the list of storage keys, then each storage as an int64 element count and its bytes.
    The object's pickle is run twice: first against placeholder storages, to learn the storage
    declarations and where the data starts, then (after every storage's count and bytes were
    checked against the file) against the real arrays."""
    from .serialization import _UserError
    if mmap:
        raise RuntimeError("mmap can only be used with files saved with `torch.save(_use_new_zipfile_serialization="
                           "True), please torch.save your checkpoint with this option in order to use mmap.")
    data = bytes(buf)
    if not data.startswith(b"\x80\x02\x8a\x0a" + _LEGACY_MAGIC.to_bytes(10, "little") + b"."):
        _fail(name, "it is a pickle that does not start with PyTorch's magic number (nothing in it was run)")
    try:
        m = _Machine(data, _refuse_pid, name)
        m.run()
        if m.run() != _LEGACY_PROTOCOL:
            _fail(name, "its legacy protocol version is not 1001")
        info = m.run()
        if not isinstance(info, dict):
            _fail(name, "its legacy system information is not a dict")
        big = info.get("little_endian", True) is False
        start = m.pos
        decl = {}

        def declare(pid):
            if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
                if isinstance(pid, tuple) and pid and pid[0] == "module":
                    _refuse("a legacy checkpoint that pickles module source code needs weights_only=False")
                raise ValueError("unknown persistent id")
            if len(pid) != 6:
                raise ValueError("malformed storage reference")
            _, stype, key, location, numel, view = pid
            if not isinstance(key, str) or not isinstance(location, str) or type(numel) is not int or numel < 0:
                raise ValueError("malformed storage reference")
            tname = _storage_dtype(stype, name)
            if tname is None:
                raise ValueError("an untyped storage in a legacy checkpoint")
            if decl.setdefault(key, (tname, numel, location)) != (tname, numel, location):
                raise ValueError(f"storage {key[:40]!r} is declared twice differently")
            dt = np.dtype(_retrograd_dtype(tname).np)
            root = _Storage(_MetaStorage(numel, dt), tname, location, "meta")
            return _storage_view(root, view)

        m = _Machine(data, declare, name, start)
        m.run()
        end_main = m.pos
        keys = m.run()
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys) or len(set(keys)) != len(keys):
            _fail(name, "its storage key list is malformed")
        if set(keys) != set(decl):
            _fail(name, "its storage key list does not match the storages its object uses")
        pos = m.pos
        ranges = {}
        for k in keys:
            tname, numel, _ = decl[k]
            if pos + 8 > len(data):
                _fail(name, "it ends inside its storages (truncated?)")
            n = int.from_bytes(data[pos:pos + 8], "big" if big else "little", signed=True)
            isz = np.dtype(_TORCH_DTYPES[tname][0]).itemsize
            if n != numel or pos + 8 + n * isz > len(data):
                _fail(name, f"storage {k[:40]!r} declares {numel} elements but the file holds "
                            f"{n if n == numel else 'a different count'} (truncated?)")
            ranges[k] = (pos + 8, n * isz)
            pos += 8 + n * isz

        class _LegacyArchive:
            def member(self, rel):
                start, n = ranges[rel[len("data/"):]]
                return memoryview(data)[start:start + n]

        loader = _Loader(_LegacyArchive(), name, map_location, False, big)

        def real(pid):
            _, stype, key, location, numel, view = pid
            root = loader.persistent_load(("storage", stype, key, location, numel))
            return _storage_view(root, view)

        if not weights_only:
            return _full_unpickle(data[start:end_main], loader, persistent=real)
        return _Machine(data, real, name, start).run()
    except (_error_class(), _checkpoint_error()):
        raise
    except _UserError as u:
        raise u.__cause__ from None
    except Exception as e:
        _fail(name, f"its pickle does not load ({type(e).__name__}: {str(e)[:200]})")


def _storage_view(root, view):
    """A legacy storage view (view_key, offset, size) of ``root``: a storage sharing its memory."""
    if view is None:
        return root
    if not (isinstance(view, tuple) and len(view) == 3 and type(view[1]) is int and type(view[2]) is int):
        raise ValueError("malformed storage view")
    _, off, size = view
    n = root.array.shape[0]
    if off < 0 or size < 0 or off + size > n:
        raise ValueError("a storage view lies outside its storage")
    a = _MetaStorage(size, root.array.dtype) if isinstance(root.array, _MetaStorage) else root.array[off:off + size]
    return _Storage(a, root.dtype, root.location, root.device, root.loader)


def _full_unpickle(data, loader, persistent=None):
    """Ordinary unpickling, with PyTorch's names mapped onto retrograd (the user's opt-in)."""
    import importlib
    import pickle

    class Unpickler(pickle.Unpickler):
        def find_class(self, module, name):
            global _TABLE
            if _TABLE is None:
                _TABLE = _fixed_globals()
            fn = _TABLE.get((module, name))
            if isinstance(fn, _DtypeRef):
                return _retrograd_dtype(fn.name)
            if isinstance(fn, _StorageType):
                return fn
            if fn is _TENSOR_TYPE:
                from ._tensor import Tensor
                return Tensor
            if fn is _PARAMETER_TYPE:
                from .nn import Parameter
                return Parameter
            if fn is _rebuild_from_type_v2:
                return _plain_rebuild_from_type_v2
            if fn is not None and module.startswith("torch"):
                return fn
            if module == "torch" or module.startswith("torch."):
                try:
                    return getattr(importlib.import_module("retrograd" + module[5:]), name)
                except (ImportError, AttributeError):
                    pass
            return super().find_class(module, name)

        def persistent_load(self, pid):
            return (persistent or loader.persistent_load)(pid)

    return Unpickler(io.BytesIO(bytes(data))).load()


def _plain_rebuild_from_type_v2(func, new_type, args, state):
    t = func(*args)
    from .nn import Parameter
    if isinstance(new_type, type) and issubclass(new_type, Parameter) and not isinstance(t, Parameter):
        t = _rebuild_parameter(t, t.requires_grad, None)
    if state:
        for k, v in (state.items() if isinstance(state, dict) else ()):
            setattr(t, k, v)
    return t


# --- writing ---------------------------------------------------------------------------------

class _TorchName:
    """A PyTorch global written into the pickle by name (torch is never imported)."""
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):
        raise TypeError("a name written into a PyTorch checkpoint; it is not callable here")


class _StorageRef:
    __slots__ = ("key", "array", "dtype_name", "location")

    def __init__(self, key, array, dtype_name, location):
        self.key, self.array, self.dtype_name, self.location = key, array, dtype_name, location


def _host(a):
    return a if isinstance(a, np.ndarray) else a.get()


def _make_pickler(fh):
    import pickle
    from ._tensor import Tensor, Size
    from ._device import device

    names = {}

    def tname(module, name):
        k = (module, name)
        if k not in names:
            names[k] = _TorchName(module, name)
        return names[k]

    class Pickler(pickle._Pickler):
        def __init__(self, f):
            super().__init__(f, protocol=2)
            self.storages = {}
            self.keep = []

        def persistent_id(self, obj):
            if isinstance(obj, _StorageRef):
                a = obj.array
                if obj.dtype_name in _STORAGE_OF:
                    return ("storage", tname("torch", _STORAGE_OF[obj.dtype_name]), obj.key, obj.location, a.size)
                return ("storage", tname("torch.storage", "UntypedStorage"), obj.key, obj.location, a.nbytes)
            return None

        def save_global(self, obj, name=None):
            if isinstance(obj, _TorchName):
                self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
                self.memoize(obj)
                return
            if isinstance(obj, D.dtype):
                self.write(pickle.GLOBAL + f"torch\n{obj.name}\n".encode("utf-8"))
                self.memoize(obj)
                return
            super().save_global(obj, name)

        def reducer_override(self, obj):
            if isinstance(obj, (_TorchName, D.dtype)):
                return "global"
            if isinstance(obj, Tensor):
                return self._tensor(obj)
            if type(obj) is Size:
                return (tname("torch", "Size"), (tuple(obj),))
            if isinstance(obj, device):
                return (tname("torch", "device"), (str(obj),))
            return NotImplemented

        def _storage(self, t):
            a = t._data
            loc = "cpu" if isinstance(a, np.ndarray) else str(t.device)
            a = _host(a)
            root = a
            while isinstance(root.base, np.ndarray) and root.base.dtype == a.dtype:
                root = root.base
            isz = a.itemsize
            shared = (root is not a and root.flags.c_contiguous and root.dtype == a.dtype
                      and all(s >= 0 and s % isz == 0 for s in a.strides))
            if shared:
                delta = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
                shared = delta >= 0 and delta % isz == 0
            if shared:
                key = (id(root), loc)
                ref = self.storages.get(key)
                if ref is None:
                    ref = self.storages[key] = _StorageRef(str(len(self.storages)), root.reshape(-1),
                                                           t.dtype.name, loc)
                    self.keep.append(root)
                return ref, delta // isz, tuple(s // isz for s in a.strides)
            if a.ndim and a.flags.c_contiguous or a.size <= 1:
                flat = a.reshape(-1)
            else:
                flat = np.ascontiguousarray(a).reshape(-1)
            key = (id(a), loc)
            ref = self.storages.get(key)
            if ref is None:
                ref = self.storages[key] = _StorageRef(str(len(self.storages)), flat, t.dtype.name, loc)
                self.keep.append(a)
            stride, acc = [], 1
            for s in reversed(a.shape):
                stride.append(acc)
                acc *= max(s, 1)
            return ref, 0, tuple(reversed(stride))

        def _tensor(self, t):
            if getattr(t, "_sparse", False):
                raise TypeError(f"retrograd.save cannot store a sparse tensor ({t.layout}) in PyTorch's format: "
                                "save its indices and values (or to_dense()) instead")
            if t.requires_grad and t.grad_fn is not None:
                raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
                                   "autograd does not support crossing process boundaries.  If you just want "
                                   "to transfer the data, call detach() on the tensor before serializing (e.g., "
                                   "putting it on the queue).")
            if getattr(t, "_is_param", False):
                plain = Tensor._make(t._data)
                self.keep.append(plain)
                return (tname("torch._utils", "_rebuild_parameter"),
                        (plain, bool(t.requires_grad), collections.OrderedDict()))
            ref, offset, stride = self._storage(t)
            return (tname("torch._utils", "_rebuild_tensor_v2"),
                    (ref, offset, tuple(t.shape), stride, bool(t.requires_grad), collections.OrderedDict()))

    return Pickler(fh)


_ALIGN = 64


def _write_zip(fh, pkl, storages, archive="archive"):
    import zipfile
    import secrets

    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        def member(name, data_or_array):
            zi = zipfile.ZipInfo(f"{archive}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_STORED
            nbytes = data_or_array.nbytes if isinstance(data_or_array, np.ndarray) else len(data_or_array)
            zi.file_size = nbytes
            zip64 = nbytes * 1.05 > zipfile.ZIP64_LIMIT
            try:
                pos = fh.tell()
            except (OSError, AttributeError):
                pos = None
            if pos is not None:
                hdr = 30 + len(zi.filename.encode("utf-8")) + 4 + (20 if zip64 else 0)
                pad = -(pos + hdr) % _ALIGN
                zi.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad   # PyTorch's "FB" padding field
            with zf.open(zi, "w", force_zip64=zip64) as w:
                if isinstance(data_or_array, np.ndarray):
                    a = data_or_array
                    if a.dtype.byteorder == ">":
                        a = a.astype(a.dtype.newbyteorder("<"))
                    mv = memoryview(np.ascontiguousarray(a).reshape(-1).view(np.uint8)) if a.size else b""
                    for i in range(0, len(mv), 1 << 24):
                        w.write(mv[i:i + (1 << 24)])
                else:
                    w.write(data_or_array)

        member("data.pkl", pkl)
        member(".format_version", b"1")
        member(".storage_alignment", str(_ALIGN).encode())
        member("byteorder", b"little")
        for ref in storages:
            member(f"data/{ref.key}", ref.array)
        member("version", b"3\n")
        member(".data/serialization_id", str(secrets.randbits(128)).zfill(40).encode())


def plan_torch(obj):
    """Pickle ``obj`` (tensors become storage references): (data.pkl bytes, storages, keep-alive).
    Everything that cannot be saved is refused here, before any file is touched."""
    buf = io.BytesIO()
    p = _make_pickler(buf)
    p.dump(obj)
    storages = sorted({id(r): r for r in p.storages.values()}.values(), key=lambda r: int(r.key))
    return buf.getvalue(), storages, p.keep


def write_torch(plan, fh):
    """Stream a ``plan_torch`` into the binary file ``fh`` as PyTorch's zip archive."""
    _write_zip(fh, plan[0], plan[1])


def save_torch(obj, fh):
    """Write ``obj`` to the binary file ``fh`` in PyTorch's zip format."""
    write_torch(plan_torch(obj), fh)
