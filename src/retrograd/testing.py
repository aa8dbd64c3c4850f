"""``retrograd.testing.assert_close``: PyTorch's comparison, default tolerances and messages."""
import math
from collections import abc

import numpy as np

from . import _dtype as D
from ._tensor import Tensor, Size

__all__ = ["assert_close"]

# PyTorch's default (rtol, atol) per dtype; other dtypes compare exactly.
_PRECISIONS = {"float16": (0.001, 1e-5), "bfloat16": (0.016, 1e-5), "float32": (1.3e-6, 1e-5),
               "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}


def _tolerances(*dtypes, rtol, atol):
    if (rtol is None) ^ (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, "
                         f"but got no {'rtol' if rtol is None else 'atol'}.")
    if rtol is not None:
        return rtol, atol
    pairs = [_PRECISIONS.get(d.name, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _diff_msg(kind, diff, idx, tol, equality):
    msg = (f"{kind.title()} difference: {diff}" if idx is None
           else f"Greatest {kind} difference: {diff} at index {idx}")
    return msg + ("" if equality else f" (up to {tol} allowed)") + "\n"


def _mismatch_msg(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    equality = rtol == 0 and atol == 0
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += extra.strip() + "\n"
    msg += _diff_msg("absolute", abs_diff, abs_idx, atol, equality)
    msg += _diff_msg("relative", rel_diff, rel_idx, rtol, equality)
    return msg.strip()


def _fail(msg, user_msg):
    if user_msg is not None:
        msg = user_msg(msg) if callable(user_msg) else user_msg
    raise AssertionError(msg)


def _as_tensor(x):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        return _wrap(x)
    return None


def _wrap(a):
    from ._creation import from_numpy
    return from_numpy(np.ascontiguousarray(a))


def _host(t):
    d = t.detach()._data
    return d.get() if hasattr(d, "get") else np.asarray(d)


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, check_stride, msg):
    for attr in ("shape",) + (("device",) if check_device else ()) + (("dtype",) if check_dtype else ()):
        a, e = getattr(actual, attr), getattr(expected, attr)
        if a != e:
            if attr == "shape":
                a, e = Size(a), Size(e)
            _fail(f"The values for attribute '{attr}' do not match: {a} != {e}.", msg)
    if check_stride and actual.numel() > 1 and actual.stride() != expected.stride():
        _fail(f"The values for attribute 'stride()' do not match: {actual.stride()} != {expected.stride()}.", msg)
    rtol, atol = _tolerances(actual.dtype, expected.dtype, rtol=rtol, atol=atol)
    x, y = _host(actual), _host(expected)
    if x.dtype != y.dtype:
        common = np.result_type(x.dtype, y.dtype)
        x, y = x.astype(common), y.astype(common)
    if x.dtype == np.bool_:
        matches = x == y
    else:
        matches = np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if matches.all():
        return
    if x.ndim == 0:
        _scalar_fail(x.item(), y.item(), rtol, atol, msg)
    n = matches.size
    bad = n - int(matches.sum())
    extra = f"Mismatched elements: {bad} / {n} ({bad / n:.1%})"
    xf, yf, mf = x.reshape(-1), y.reshape(-1), matches.reshape(-1)
    if x.dtype.kind in "biu":
        xf, yf = xf.astype(np.int64), yf.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(xf - yf)
        abs_diff[mf] = 0
        f = abs_diff.dtype if abs_diff.dtype.kind in "fcV" else D.get_default_dtype().np
        rel_diff = abs_diff.astype(f) / np.abs(yf).astype(f)
    rel_diff[mf] = 0
    ia, ir = _argmax(abs_diff), _argmax(rel_diff)
    unravel = (lambda i: tuple(int(k) for k in np.unravel_index(i, x.shape)))
    _fail(_mismatch_msg("Tensor-likes", extra, abs_diff[ia].item(), unravel(ia), atol,
                        rel_diff[ir].item(), unravel(ir), rtol), msg)


def _argmax(a):
    # torch.max propagates NaN: its index is the first NaN if any.
    nan = np.isnan(a) if a.dtype.kind in "fcV" else None
    if nan is not None and nan.any():
        return int(np.argmax(nan))
    return int(np.argmax(a))


def _scalar_fail(actual, expected, rtol, atol, msg):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    _fail(_mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol,
                        rel_diff, None, rtol), msg)


def _compare_scalars(actual, expected, rtol, atol, equal_nan, check_dtype, msg):
    if check_dtype and type(actual) is not type(expected):
        _fail(f"The values for attribute 'dtype' do not match: {type(actual)} != {type(expected)}.", msg)
    dt = {bool: D.bool_, int: D.int64, float: D.float64, complex: D.complex128}
    rtol, atol = _tolerances(dt.get(type(actual), D.float64), dt.get(type(expected), D.float64),
                             rtol=rtol, atol=atol)
    if actual == expected:
        return
    if equal_nan and isinstance(actual, (float, complex)) and math.isnan(abs(actual)) \
            and math.isnan(abs(expected)):
        return
    if not (isinstance(actual, bool) or isinstance(expected, bool)) and \
            abs(actual - expected) <= atol + rtol * abs(expected):
        return
    _scalar_fail(actual, expected, rtol, atol, msg)


_NUMBER = (bool, int, float, complex)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Assert ``actual`` and ``expected`` are close (``|a - e| <= atol + rtol * |e|``), recursively
    through sequences and mappings, with PyTorch's per-dtype default tolerances and messages."""
    ta, te = _as_tensor(actual), _as_tensor(expected)
    if ta is not None and te is not None:
        return _compare_tensors(ta, te, rtol, atol, equal_nan, check_device, check_dtype, check_stride, msg)
    if isinstance(actual, _NUMBER) and isinstance(expected, _NUMBER):
        return _compare_scalars(actual, expected, rtol, atol, equal_nan, check_dtype, msg)
    if isinstance(actual, abc.Mapping) and isinstance(expected, abc.Mapping):
        if set(actual) != set(expected):
            _fail(f"The keys of the mappings do not match:\n\n"
                  f"Missing keys in the actual mapping: {sorted(set(expected) - set(actual), key=str)}\n"
                  f"Additional keys in the actual mapping: {sorted(set(actual) - set(expected), key=str)}", msg)
        for k in expected:
            assert_close(actual[k], expected[k], rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_device=check_device, check_dtype=check_dtype, check_stride=check_stride, msg=msg)
        return
    if isinstance(actual, abc.Sequence) and isinstance(expected, abc.Sequence) \
            and not isinstance(actual, str) and not isinstance(expected, str):
        if len(actual) != len(expected):
            _fail(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", msg)
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                         check_dtype=check_dtype, check_stride=check_stride, msg=msg)
        return
    if actual is None and expected is None:
        return
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")
