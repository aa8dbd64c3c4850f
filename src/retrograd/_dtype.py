"""Dtypes, the default dtype and PyTorch's type-promotion rules."""
import builtins

import numpy as np

__all__ = ["dtype", "float16", "half", "float32", "float", "float64", "double",
           "bfloat16", "int8", "int16", "short", "int32", "int", "int64", "long",
           "uint8", "bool", "complex64", "complex128", "cfloat", "cdouble",
           "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
           "float8_e8m0fnu", "complex32", "chalf",
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


class _LazyMlDtype(dtype):
    """A floating type NumPy lacks (bfloat16, the float8 types), stored as the ``ml_dtypes``
    type of the same name (real 1- or 2-byte storage), which is imported the first time the
    NumPy dtype is needed, so ``import retrograd`` does not load it."""
    __slots__ = ("_np",)

    def __init__(self, name, itemsize, signed=True):
        self.name, self._np, self._kind, self._rank = name, None, 2, 1 if itemsize == 2 else 0
        self.is_floating_point, self.is_complex, self.is_signed, self.itemsize = True, False, signed, itemsize

    @property
    def np(self):
        npd = self._np
        if npd is None:
            npd = self._np = _load_ml_dtype(self)
        return npd


def _load_ml_dtype(d):
    try:
        import ml_dtypes
    except ImportError:
        what = "bfloat16" if d.name == "bfloat16" else "float8"
        raise ImportError(f"torch.{d.name} needs the 'ml_dtypes' package (NumPy has no {what}): "
                          "pip install ml_dtypes  (or: pip install retrograd[bfloat16])") from None
    npd = np.dtype(getattr(ml_dtypes, d.name))
    _FROM_NP[npd] = d
    return npd


_load_bfloat16 = lambda: _load_ml_dtype(bfloat16)  # noqa: E731


def cast_to_float8(a, npd):
    """``a`` cast to a float8 NumPy dtype as PyTorch converts: float8_e4m3fn saturates finite
    and infinite values past its range to +-448 (ml_dtypes gives NaN), float8_e8m0fnu (a power
    of two, no sign bit, no zero) takes the magnitude; the others are ml_dtypes' own rounding."""
    name = npd.name
    if name == "float8_e4m3fn" and a.dtype.kind in "fV":
        a = np.clip(a.astype(np.float32), -448.0, 448.0)       # NaN stays NaN
    elif name == "float8_e8m0fnu" and a.dtype.kind in "fiV":
        a = np.abs(a.astype(np.float32))
        a[a == 0] = 2.0 ** -127     # no zero: PyTorch gives the smallest value (ml_dtypes NaN)
    return a.astype(npd)


bfloat16 = _LazyMlDtype("bfloat16", 2)
# float8 (storage and casts; PyTorch itself computes nothing in them but a few copies)
float8_e4m3fn = _LazyMlDtype("float8_e4m3fn", 1)
float8_e5m2 = _LazyMlDtype("float8_e5m2", 1)
float8_e4m3fnuz = _LazyMlDtype("float8_e4m3fnuz", 1)
float8_e5m2fnuz = _LazyMlDtype("float8_e5m2fnuz", 1)
float8_e8m0fnu = _LazyMlDtype("float8_e8m0fnu", 1, signed=False)
FLOAT8 = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)
# unsigned types PyTorch stores and casts but barely computes in (no promotion with others)
uint16 = dtype("uint16", np.uint16, 1, 2)
uint32 = dtype("uint32", np.uint32, 1, 3)
uint64 = dtype("uint64", np.uint64, 1, 4)
_BARE_UINTS = (uint16, uint32, uint64)


class _Complex32(dtype):
    """torch.complex32 (ComplexHalf). NumPy has no complex type of two float16 halves, and
    PyTorch's own support is experimental (creation, copies, add/mul, abs); retrograd names the
    dtype and refuses to make tensors of it (see :func:`check_storable`)."""
    __slots__ = ()

    def __init__(self):
        self.name, self._kind, self._rank = "complex32", 3, 1
        self.is_floating_point, self.is_complex, self.is_signed, self.itemsize = False, True, True, 4

    @property
    def np(self):
        raise_complex32()

    def to_real(self):
        return float16


def raise_complex32():
    raise TypeError("torch.complex32 (torch.chalf) is not implemented in retrograd: NumPy has no complex type "
                    "made of two float16 halves; use torch.complex64")


complex32 = chalf = _Complex32()
float32 = dtype("float32", np.float32, 2, 2)
float64 = dtype("float64", np.float64, 2, 3)
complex64 = dtype("complex64", np.complex64, 3, 2)
complex128 = dtype("complex128", np.complex128, 3, 3)
globals()["bool"] = bool_
half, float_, double, short, int_, long = float16, float32, float64, int16, int32, int64
cfloat, cdouble = complex64, complex128
globals()["float"] = float32
globals()["int"] = int32

ALL = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64, complex64, complex128,
       uint16, uint32, uint64)
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
        for d in FLOAT8:
            if npd.name == d.name and npd == d.np:
                return d
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


def _promote_rare(a, b):
    """promote_types where a float8, uint16/32/64 or complex32 dtype takes part (an error, or
    None to go on with the common rules)."""
    if a in FLOAT8 or b in FLOAT8:
        raise RuntimeError("Promotion for Float8 Types is not supported, attempted to promote "
                           f"{_SCALAR_TYPE_NAMES[a.name]} and {_SCALAR_TYPE_NAMES[b.name]}")
    if (a in _BARE_UINTS or b in _BARE_UINTS) and a._kind < 2 and b._kind < 2 or \
            (a in _BARE_UINTS and b._kind == 3) or (b in _BARE_UINTS and a._kind == 3):
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                           f"{_SCALAR_TYPE_NAMES[a.name]} and {_SCALAR_TYPE_NAMES[b.name]}")
    if a is complex32 or b is complex32:
        other = b if a is complex32 else a
        return complex32 if other._kind < 2 or other is float16 else (
            complex128 if other is float64 or other is complex128 else complex64)
    return None


_RARE = frozenset(FLOAT8 + _BARE_UINTS + (complex32,))


def promote_types(a, b):
    """PyTorch's promote_types: a float beats any integer; within a kind the wider wins."""
    if a is b:
        return a
    if (a in _RARE or b in _RARE) and (promoted := _promote_rare(a, b)) is not None:
        return promoted
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
        if type is complex32:
            type = float16
        ml = isinstance(type, _LazyMlDtype)
        fi = np.finfo(type.np) if not ml else _ml_finfo(type)
        f = builtins.float
        self.bits, self.eps, self.max, self.min = fi.bits, f(fi.eps), f(fi.max), f(fi.min)
        self.tiny = self.smallest_normal = f(fi.smallest_normal if ml else fi.tiny)
        # PyTorch's resolution: 10 ** -(decimal digits), at least 1 for the float8 types
        self.resolution = f(fi.resolution) if not ml else (0.01 if type is bfloat16 else 1.0)
        if type is float8_e5m2fnuz:
            self.eps = 0.125     # PyTorch's value (ml_dtypes says 0.25, the spacing above 1)
        self.dtype = type.name


def _ml_finfo(type):
    import ml_dtypes
    return ml_dtypes.finfo(type.np)


class iinfo:
    """Machine limits of an integer dtype (``torch.iinfo``)."""
    def __init__(self, type):
        type = to_dtype(type)
        ii = np.iinfo(type.np)
        self.bits, self.max, self.min, self.dtype = ii.bits, builtins.int(ii.max), builtins.int(ii.min), type.name


# The C++ scalar type names PyTorch's scalar checks print ("int8_t", "float", ...).
_C_NAMES = {"int8": "int8_t", "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
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
                   "bool": "bool", "uint16": "unsigned short", "uint32": "unsigned int",
                   "uint64": "unsigned long", "float8_e4m3fn": "c10::Float8_e4m3fn",
                   "float8_e5m2": "c10::Float8_e5m2", "float8_e4m3fnuz": "c10::Float8_e4m3fnuz",
                   "float8_e5m2fnuz": "c10::Float8_e5m2fnuz", "float8_e8m0fnu": "c10::Float8_e8m0fnu",
                   "complex32": "c10::complex<c10::Half>"}
_SCALAR_TYPE_NAMES = {"float64": "Double", "float32": "Float", "float16": "Half", "bfloat16": "BFloat16",
                      "complex64": "ComplexFloat", "complex128": "ComplexDouble", "int64": "Long", "int32": "Int",
                      "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
                      "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
                      "float8_e4m3fn": "Float8_e4m3fn", "float8_e5m2": "Float8_e5m2",
                      "float8_e4m3fnuz": "Float8_e4m3fnuz", "float8_e5m2fnuz": "Float8_e5m2fnuz",
                      "float8_e8m0fnu": "Float8_e8m0fnu", "complex32": "ComplexHalf"}
