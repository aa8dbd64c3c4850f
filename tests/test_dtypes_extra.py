"""The dtypes of torch's namespace beyond the common ones: uint16/uint32/uint64 (NumPy's),
the float8 types (ml_dtypes' storage, PyTorch's casts), complex32 (named, not storable), and
the top-level switches and predicates (autocast, deterministic algorithms, anomaly
detection, is_nonzero, ...), each against PyTorch."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import retrograd
from helpers import needs_torch, torch

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "src")
UINTS = ["uint16", "uint32", "uint64"]
FLOAT8 = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"]


def _outcome(f):
    try:
        r = f()
    except Exception as e:      # the exception is the outcome compared
        return type(e).__name__, str(e).split("\n")[0]
    if hasattr(r, "detach") or type(r).__name__ == "Tensor":
        return "tensor", str(r.dtype), repr(r).replace("retrograd", "torch"), repr(r.float().tolist())
    return "value", repr(r)


UINT_CASES = {
    "tensor": lambda t, d: t.tensor([1, 2, 200], dtype=getattr(t, d)),
    "from_numpy": lambda t, d: t.from_numpy(np.array([1, 2], dtype=d)),
    "as_tensor": lambda t, d: t.as_tensor(np.array([3, 4], dtype=d)),
    "promote_int32": lambda t, d: t.promote_types(getattr(t, d), t.int32),
    "promote_bool": lambda t, d: t.promote_types(getattr(t, d), t.bool),
    "promote_uint8": lambda t, d: t.promote_types(t.uint8, getattr(t, d)),
    "promote_complex": lambda t, d: t.promote_types(getattr(t, d), t.complex64),
    "promote_self": lambda t, d: t.promote_types(getattr(t, d), getattr(t, d)),
    "promote_float": lambda t, d: t.promote_types(getattr(t, d), t.float32),
    "promote_bfloat16": lambda t, d: t.promote_types(getattr(t, d), t.bfloat16),
    "to_float": lambda t, d: t.tensor([1, 2], dtype=getattr(t, d)).float(),
    "from_float": lambda t, d: t.tensor([1.5, 3e4]).to(getattr(t, d)),
    "zeros": lambda t, d: t.zeros(2, 2, dtype=getattr(t, d)),
    "cat": lambda t, d: t.cat([t.ones(2, dtype=getattr(t, d))] * 2),
    "eq": lambda t, d: t.zeros(2, dtype=getattr(t, d)) == 0,
    "iinfo": lambda t, d: (t.iinfo(getattr(t, d)).max, t.iinfo(getattr(t, d)).min, t.iinfo(getattr(t, d)).bits),
    "attrs": lambda t, d: (getattr(t, d).is_signed, getattr(t, d).itemsize, getattr(t, d).is_floating_point,
                           str(getattr(t, d)).replace("retrograd", "torch")),
}


@needs_torch
@pytest.mark.parametrize("dtn", UINTS)
@pytest.mark.parametrize("case", list(UINT_CASES))
def test_unsigned_dtypes_match_torch(case, dtn):
    assert _outcome(lambda: UINT_CASES[case](retrograd, dtn)) == _outcome(lambda: UINT_CASES[case](torch, dtn))


def test_unsigned_dtypes_without_torch():
    x = retrograd.from_numpy(np.array([1, 65535], np.uint16))
    assert x.dtype is retrograd.uint16 and x.element_size() == 2 and x.numpy().dtype == np.uint16
    assert repr(x) == "tensor([    1, 65535], dtype=torch.uint16)"
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types is not supported, "
                                           "attempted to promote UInt32 and Long"):
        retrograd.promote_types(retrograd.uint32, retrograd.int64)
    assert retrograd.promote_types(retrograd.uint64, retrograd.float64) is retrograd.float64
    assert not retrograd.uint16.is_signed and retrograd.iinfo(retrograd.uint64).max == 2 ** 64 - 1


_F8_VALUES = [0.1, 1.0, -2.5, 300.0, 1000.0, float("nan"), float("inf"), -float("inf"), 1e-4, -0.0, 3.3e-3]

F8_CASES = {
    "cast": lambda t, d: t.tensor(_F8_VALUES).to(getattr(t, d)).float(),
    "cast_half": lambda t, d: t.tensor(_F8_VALUES).half().to(getattr(t, d)).float(),
    "cast_double": lambda t, d: t.tensor(_F8_VALUES, dtype=t.float64).to(getattr(t, d)).double(),
    "round_trip_bfloat16": lambda t, d: t.tensor([0.3, 2.0, 7.0]).to(getattr(t, d)).to(t.bfloat16),
    "tensor": lambda t, d: t.tensor([1.0, 2.0, -0.5], dtype=getattr(t, d)),
    "zeros": lambda t, d: t.zeros(2, dtype=getattr(t, d)).float(),
    "promote_float": lambda t, d: t.promote_types(getattr(t, d), t.float32),
    "promote_other_float8": lambda t, d: t.promote_types(getattr(t, d), t.float8_e5m2),
    "promote_self": lambda t, d: t.promote_types(getattr(t, d), getattr(t, d)),
    "finfo": lambda t, d: tuple(getattr(t.finfo(getattr(t, d)), k)
                                for k in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution")),
    "attrs": lambda t, d: (getattr(t, d).is_floating_point, getattr(t, d).is_signed, getattr(t, d).itemsize,
                           str(getattr(t, d)).replace("retrograd", "torch")),
}


@needs_torch
@pytest.mark.parametrize("dtn", FLOAT8)
@pytest.mark.parametrize("case", list(F8_CASES))
def test_float8_dtypes_match_torch(case, dtn):
    pytest.importorskip("ml_dtypes")
    if case == "zeros" and dtn == "float8_e8m0fnu":
        pytest.skip("float8_e8m0fnu has no zero: both give its smallest value 2**-127 (printing aside)")
    ours = _outcome(lambda: F8_CASES[case](retrograd, dtn))
    theirs = _outcome(lambda: F8_CASES[case](torch, dtn))
    if dtn == "float8_e8m0fnu" and case == "tensor":
        # PyTorch prints float8_e8m0fnu values in a fixed-point style of its own; the values agree
        ours, theirs = ours[:2] + ours[3:], theirs[:2] + theirs[3:]
    assert ours == theirs


def test_float8_storage_and_saturation_without_torch():
    pytest.importorskip("ml_dtypes")
    x = retrograd.tensor([1000.0, -float("inf"), 0.3]).to(retrograd.float8_e4m3fn)
    assert x.dtype is retrograd.float8_e4m3fn and x.element_size() == 1 and x._data.dtype.name == "float8_e4m3fn"
    assert x.float().tolist() == [448.0, -448.0, 0.3125]       # saturated, as PyTorch converts
    assert retrograd.tensor([-2.5]).to(retrograd.float8_e8m0fnu).float().tolist() == [2.0]


def test_missing_ml_dtypes_names_the_package_for_float8():
    code = ("import sys; sys.modules['ml_dtypes'] = None\n"
            "import retrograd\n"
            "try:\n    retrograd.zeros(2).to(retrograd.float8_e5m2)\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=SRC)
    assert "torch.float8_e5m2 needs the 'ml_dtypes' package" in out.stdout, out.stdout + out.stderr


def test_complex32_is_named_but_not_storable():
    assert retrograd.chalf is retrograd.complex32 and retrograd.complex32.is_complex
    assert retrograd.complex32.itemsize == 4 and repr(retrograd.complex32) == "torch.complex32"
    assert retrograd.complex32.to_real() is retrograd.float16
    for make in (lambda: retrograd.tensor([1 + 2j]).chalf(), lambda: retrograd.zeros(2, dtype=retrograd.chalf),
                 lambda: retrograd.tensor([1 + 2j], dtype=retrograd.complex32)):
        with pytest.raises(TypeError, match=r"torch.complex32 \(torch.chalf\) is not implemented in retrograd"):
            make()


@needs_torch
def test_complex32_promotion_matches_torch():
    for other in ("float32", "float16", "int64", "bool", "complex128", "float64", "complex32"):
        ours = retrograd.promote_types(retrograd.complex32, getattr(retrograd, other))
        theirs = torch.promote_types(torch.complex32, getattr(torch, other))
        assert str(ours) == str(theirs), other


# --- the namespace's switches and predicates ----------------------------------------------

def _switches(t):
    out = []
    r = out.append
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r(t.get_autocast_cpu_dtype()), r(t.get_autocast_gpu_dtype())
        t.set_autocast_cpu_dtype(t.float16)
        r(t.get_autocast_cpu_dtype()), r(t.get_autocast_dtype("cpu"))
        t.set_autocast_cpu_dtype(t.bfloat16)
        r(t.is_autocast_cpu_enabled())
        try:
            t.set_autocast_cpu_enabled(True)
            r(t.is_autocast_cpu_enabled()), r(t.is_autocast_enabled("cpu"))
            r(t.nn.functional.linear(t.ones(2, 3), t.ones(4, 3)).dtype)    # autocast acts
        finally:
            t.set_autocast_cpu_enabled(False)
        r(t.nn.functional.linear(t.ones(2, 3), t.ones(4, 3)).dtype)
        try:
            t.set_autocast_enabled("cpu", True)
            r(t.is_autocast_enabled("cpu"))
        finally:
            t.set_autocast_enabled("cpu", False)
        r(t.is_autocast_enabled("cpu"))
        r(sorted({str(x.message).split(" is deprecated")[0] for x in w if x.category is DeprecationWarning}))
    r(t.is_autocast_cache_enabled())
    t.set_autocast_cache_enabled(False)
    r(t.is_autocast_cache_enabled())
    t.set_autocast_cache_enabled(True)
    r(t.clear_autocast_cache())
    r([t.autocast_increment_nesting(), t.autocast_increment_nesting(), t.autocast_decrement_nesting(),
       t.autocast_decrement_nesting()])
    try:
        r((t.are_deterministic_algorithms_enabled(), t.get_deterministic_debug_mode()))
        t.use_deterministic_algorithms(True, warn_only=True)
        r((t.are_deterministic_algorithms_enabled(), t.is_deterministic_algorithms_warn_only_enabled(),
           t.get_deterministic_debug_mode()))
        t.set_deterministic_debug_mode("error")
        r((t.are_deterministic_algorithms_enabled(), t.is_deterministic_algorithms_warn_only_enabled(),
           t.get_deterministic_debug_mode()))
        for bad in (lambda: t.use_deterministic_algorithms(1), lambda: t.set_deterministic_debug_mode("x"),
                    lambda: t.set_deterministic_debug_mode(3), lambda: t.set_deterministic_debug_mode(1.0)):
            r(_outcome(bad))
    finally:
        t.set_deterministic_debug_mode(0)
    r(t.get_deterministic_debug_mode())
    try:
        r((t.is_anomaly_enabled(), t.is_anomaly_check_nan_enabled()))
        t.set_anomaly_enabled(True, False)
        r((t.is_anomaly_enabled(), t.is_anomaly_check_nan_enabled(), t.autograd.grad_mode is not None))
    finally:
        t.set_anomaly_enabled(False)
    r((t.is_anomaly_enabled(), t.is_anomaly_check_nan_enabled()))
    try:
        r(t.is_warn_always_enabled())
        t.set_warn_always(True)
        r(t.is_warn_always_enabled())
    finally:
        t.set_warn_always(False)
    return [str(v).replace("retrograd", "torch") for v in out]


@needs_torch
def test_switches_match_torch():
    assert _switches(retrograd) == _switches(torch)


def _predicates(t):
    with t.inference_mode():
        inf = t.zeros(1)
    return [_outcome(f) for f in (
        lambda: t.is_nonzero(t.tensor([1.5])), lambda: t.is_nonzero(t.tensor(0)), lambda: t.tensor([3]).is_nonzero(),
        lambda: t.is_nonzero(t.tensor([float("nan")])), lambda: t.is_nonzero(t.tensor([1, 2])),
        lambda: t.is_nonzero(t.tensor([])), lambda: t.is_same_size(t.zeros(2, 3), t.ones(2, 3)),
        lambda: t.zeros(2, 3).is_same_size(t.ones(3, 2)),
        lambda: [t.is_signed(t.zeros(1, dtype=getattr(t, d))) for d in
                 ("float32", "uint8", "bool", "complex64", "int8", "uint16", "bfloat16")],
        lambda: t.zeros(1).is_signed(), lambda: (t.get_device(t.zeros(1)), t.zeros(1).get_device()),
        lambda: (t.is_inference(t.zeros(1)), t.is_inference(inf)), lambda: (t.is_storage(t.zeros(1)), t.is_storage(3)),
        lambda: (type(t.has_lapack), type(t.has_mkl), type(t.has_openmp), type(t.has_spectral)),
    )]


@needs_torch
def test_predicates_match_torch():
    assert _predicates(retrograd) == _predicates(torch)


def test_set_default_tensor_type():
    try:
        with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
            retrograd.set_default_tensor_type(retrograd.DoubleTensor)
        assert retrograd.get_default_dtype() is retrograd.float64 and retrograd.zeros(1).dtype is retrograd.float64
        with pytest.warns(UserWarning):
            retrograd.set_default_tensor_type("torch.FloatTensor")
        assert retrograd.get_default_dtype() is retrograd.float32
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="only floating-point types are supported"):
            retrograd.set_default_tensor_type(retrograd.LongTensor)
        with pytest.warns(UserWarning), pytest.raises(AttributeError, match="has no attribute 'Foo'"):
            retrograd.set_default_tensor_type("torch.Foo")
    finally:
        retrograd.set_default_dtype(retrograd.float32)


def test_flush_denormal_is_reported_unsupported():
    assert retrograd.set_flush_denormal(True) is False and retrograd.set_flush_denormal(False) is False


@needs_torch
def test_namespace_names_of_this_module_exist():
    names = ["uint16", "uint32", "uint64", "complex32", "chalf"] + FLOAT8 + [
        "get_autocast_cpu_dtype", "set_autocast_cpu_dtype", "get_autocast_gpu_dtype", "set_autocast_gpu_dtype",
        "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "set_autocast_enabled", "is_autocast_cache_enabled",
        "set_autocast_cache_enabled", "clear_autocast_cache", "autocast_increment_nesting",
        "autocast_decrement_nesting", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
        "is_deterministic_algorithms_warn_only_enabled", "get_deterministic_debug_mode",
        "set_deterministic_debug_mode", "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
        "set_warn_always", "is_warn_always_enabled", "set_flush_denormal", "is_nonzero", "is_same_size",
        "is_signed", "get_device", "is_inference", "is_storage", "set_default_tensor_type", "has_lapack",
        "has_mkl", "has_openmp", "has_spectral"]
    assert set(names) <= set(torch.__all__)
    assert [n for n in names if not hasattr(retrograd, n)] == []
