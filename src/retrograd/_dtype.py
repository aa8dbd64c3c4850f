"""Dtypes, the default dtype and PyTorch's type-promotion rules."""
import builtins

import numpy as np

__all__ = ["dtype", "float16", "half", "float32", "float", "float64", "double",
           "bfloat16", "int8", "int16", "short", "int32", "int", "int64", "long",
           "uint8", "bool", "complex64", "complex128", "cfloat", "cdouble",
           "get_default_dtype", "set_default_dtype", "promote_types", "can_cast",
           "finfo", "iinfo"]


class dtype:
    """A tensor element type; prints as PyTorch does (``torch.float32``)."""
    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize", "_rank", "_kind")

    def __init__(self, name, np_type, kind, rank):
        self.name = name
        self.np = np.dtype(np_type)
        self._kind = kind  # 0 bool, 1 integer, 2 floating, 3 complex
        self._rank = rank
        self.is_floating_point = kind == 2
        self.is_complex = kind == 3
        self.is_signed = self.np.kind in "ifcV"
        self.itemsize = self.np.itemsize

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return self.name

    def to_real(self):
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    def to_complex(self):
        return {"float32": complex64, "float64": complex128, "float16": complex64}.get(self.name, self)


bool_ = dtype("bool", np.bool_, 0, 0)
uint8 = dtype("uint8", np.uint8, 1, 1)
int8 = dtype("int8", np.int8, 1, 1)
int16 = dtype("int16", np.int16, 1, 2)
int32 = dtype("int32", np.int32, 1, 3)
int64 = dtype("int64", np.int64, 1, 4)
float16 = dtype("float16", np.float16, 2, 1)


class _LazyBFloat16(dtype):
    """bfloat16: stored as ``ml_dtypes.bfloat16`` (a real 2-byte type), which is imported
    the first time the NumPy dtype is needed, so ``import retrograd`` does not load it."""
    __slots__ = ("_np",)

    def __init__(self):
        self.name, self._np, self._kind, self._rank = "bfloat16", None, 2, 1
        self.is_floating_point, self.is_complex, self.is_signed, self.itemsize = True, False, True, 2

    @property
    def np(self):
        npd = self._np
        if npd is None:
            npd = self._np = _load_bfloat16()
        return npd


def _load_bfloat16():
    try:
        import ml_dtypes
    except ImportError:
        raise ImportError("torch.bfloat16 needs the 'ml_dtypes' package (NumPy has no bfloat16): "
                          "pip install ml_dtypes  (or: pip install retrograd[bfloat16])") from None
    npd = np.dtype(ml_dtypes.bfloat16)
    _FROM_NP[npd] = bfloat16
    return npd


bfloat16 = _LazyBFloat16()
float32 = dtype("float32", np.float32, 2, 2)
float64 = dtype("float64", np.float64, 2, 3)
complex64 = dtype("complex64", np.complex64, 3, 2)
complex128 = dtype("complex128", np.complex128, 3, 3)
globals()["bool"] = bool_
half, float_, double, short, int_, long = float16, float32, float64, int16, int32, int64
cfloat, cdouble = complex64, complex128
globals()["float"] = float32
globals()["int"] = int32

ALL = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64, complex64, complex128)
_FROM_NP = {d.np: d for d in ALL}


def from_numpy_dtype(npd):
    """Map a NumPy dtype onto retrograd's (TypeError for unsupported ones)."""
    try:
        return _FROM_NP[npd]
    except KeyError:
        npd = np.dtype(npd)
        if npd in _FROM_NP:
            return _FROM_NP[npd]
        if npd.name == "bfloat16" and npd == bfloat16.np:
            return bfloat16
        for k, v in ((np.uint16, int32), (np.uint32, int64), (np.uint64, int64)):
            if npd == k:
                return v
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{npd.name}. The only supported types are: "
            "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, and bool.")


_default = [float32]


def get_default_dtype():
    """The dtype of new floating-point tensors (float32 unless changed)."""
    return _default[0]


def set_default_dtype(d):
    """Set the dtype of new floating-point tensors (float32 or float64, as PyTorch allows)."""
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default[0] = d


def to_dtype(d):
    """Accept a retrograd dtype, a NumPy dtype, or a Python type."""
    if isinstance(d, dtype):
        return d
    if d is None:
        return None
    if d is builtins.float:
        return _default[0]
    if d is builtins.int:
        return int64
    if d is builtins.bool:
        return bool_
    if d is builtins.complex:
        return complex64 if _default[0] is float32 else complex128
    return from_numpy_dtype(np.dtype(d))


def promote_types(a, b):
    """PyTorch's promote_types: a float beats any integer; within a kind the wider wins."""
    if a is b:
        return a
    if a._kind != b._kind:
        hi, lo = (a, b) if a._kind > b._kind else (b, a)
        if hi._kind == 3 and lo._kind == 2 and lo._rank > hi._rank:
            return complex128
        return hi
    if a is bfloat16 or b is bfloat16:
        other = b if a is bfloat16 else a
        return float32 if other is float16 else (other if other._rank > 1 else bfloat16)
    return _FROM_NP[np.promote_types(a.np, b.np)]


def _scalar_dtype(v):
    t = type(v)
    if t is builtins.bool or isinstance(v, np.bool_):
        return bool_
    if t is builtins.int or isinstance(v, np.integer):
        return int64
    if t is builtins.float or isinstance(v, np.floating):
        return _default[0]
    if t is builtins.complex or isinstance(v, np.complexfloating):
        return complex64 if _default[0] is float32 else complex128
    raise TypeError(f"unsupported scalar type {t.__name__}")


def _combine(higher, lower):
    # c10's combine_categories: a dimensioned operand's dtype wins unless a weaker
    # operand brings a higher category (int -> float, anything -> complex).
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher._kind >= lower._kind:
        return higher
    if higher._kind == 2 and lower._kind == 3:
        return higher.to_complex()
    return promote_types(higher, lower)


def result_type_of(dim_dt, zero_dt, scalar_dt):
    return _combine(dim_dt, _combine(zero_dt, scalar_dt))


def can_cast(from_, to):
    """True when PyTorch would cast ``from_`` to ``to`` in-place (no category lowering)."""
    return from_._kind <= to._kind


class finfo:
    """Machine limits of a floating dtype (``torch.finfo``)."""
    def __init__(self, type=None):
        type = _default[0] if type is None else to_dtype(type)
        fi = np.finfo(type.np) if type is not bfloat16 else _bf16_finfo()
        f = builtins.float
        self.bits, self.eps, self.max, self.min = fi.bits, f(fi.eps), f(fi.max), f(fi.min)
        self.tiny = self.smallest_normal = f(fi.tiny)
        self.resolution = f(fi.resolution) if type is not bfloat16 else 0.01
        self.dtype = type.name


def _bf16_finfo():
    import ml_dtypes
    return ml_dtypes.finfo(bfloat16.np)


class iinfo:
    """Machine limits of an integer dtype (``torch.iinfo``)."""
    def __init__(self, type):
        type = to_dtype(type)
        ii = np.iinfo(type.np)
        self.bits, self.max, self.min, self.dtype = ii.bits, builtins.int(ii.max), builtins.int(ii.min), type.name


# The C++ scalar type names PyTorch's scalar checks print ("int8_t", "float", ...).
_C_NAMES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
            "float32": "float", "float64": "double", "float16": "c10::Half"}


def _overflows(value, dt, half=False):
    """Whether a Python/NumPy number does not fit ``dt`` by c10::overflows' rule (unsigned
    types accept negatives down to -max: two's-complement wrap; NaN/inf never fit an integer;
    float32 overflows past its finite range, float16 too with ``half``; bfloat16 and bool never)."""
    if isinstance(value, (builtins.bool, np.bool_)) or dt._kind == 0 or dt._kind == 3:
        return False
    if dt._kind == 1:
        info = np.iinfo(dt.np)
        if isinstance(value, (builtins.float, np.floating)) and not np.isfinite(value):
            return True
        lo = -info.max if info.min == 0 else info.min
        return not (lo <= value <= info.max) if not isinstance(value, builtins.complex) else False
    real = (builtins.int, builtins.float, np.integer, np.floating)
    if (dt.name == "float32" or half and dt.name == "float16") and isinstance(value, real):
        return builtins.bool(np.isfinite(value)) and abs(builtins.float(value)) > builtins.float(np.finfo(dt.np).max)
    return False


def check_scalar_fits(value, dt, half=False):
    """PyTorch's check when a scalar is written into a tensor of dtype ``dt`` (fill_, full):
    RuntimeError "value cannot be converted to type int8_t without overflow". ``half``: also
    check float16 (``full`` does, ``fill_`` does not)."""
    big = isinstance(value, builtins.int) and not isinstance(value, builtins.bool) and not -2**63 <= value < 2**63
    if big and dt._kind < 2:
        raise RuntimeError(f"value cannot be converted to type {_C_NAMES.get(dt.name, dt.name)} without overflow")
    if _overflows(value, dt, half):
        raise RuntimeError(f"value cannot be converted to type {_C_NAMES.get(dt.name, dt.name)} without overflow")


# Names in PyTorch's messages: the C++ type (caffe2 TypeMeta) and the ScalarType.
_TYPEMETA_NAMES = {"float64": "double", "float32": "float", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                   "complex64": "c10::complex<float>", "complex128": "c10::complex<double>", "int64": "long int",
                   "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
                   "bool": "bool"}
_SCALAR_TYPE_NAMES = {"float64": "Double", "float32": "Float", "float16": "Half", "bfloat16": "BFloat16",
                      "complex64": "ComplexFloat", "complex128": "ComplexDouble", "int64": "Long", "int32": "Int",
                      "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
