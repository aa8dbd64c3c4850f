"""The errors PyTorch raises for the ops it does not define on complex tensors.

PyTorch rejects complex inputs to orderings (max with a dim, argmax, sort, topk, ...),
rounding and remainders, most activations and several special functions, each with its own
wording: most say that their CPU kernel is "not implemented for 'ComplexFloat'", a few raise
a RuntimeError of their own. One call per op, before NumPy sees the array (NumPy would
either compute something PyTorch does not, e.g. a lexicographic order, or fail with its own
TypeError).
"""
from ._base import _dtype_name

__all__ = ["no_complex", "no_complex_kernel"]

# ops whose message is their own (RuntimeError unless said otherwise)
_OWN = {
    "max.dim": "max(): does not support complex input",
    "min.dim": "min(): does not support complex input",
    "argmax": "argmax(): does not support complex input",
    "argmin": "argmin(): does not support complex input",
    "sort": " Sort does not support complex dtypes on CPU",
    "topk": " topk does not support complex dtypes on CPU",
    "isposinf": "isposinf does not support complex inputs.",
    "isneginf": "isneginf does not support complex inputs.",
    "signbit": (NotImplementedError, "signbit is not implemented for complex tensors."),
    "clamp": (NotImplementedError, "clamp is not supported for complex types"),
}


def _dtype_of(x):
    d = getattr(x, "_data", x)
    return getattr(d, "dtype", d)


def no_complex(x, name):
    """Raise PyTorch's own error of op ``name`` (a key of the table above) if x is complex."""
    if _dtype_of(x).kind == "c":
        entry = _OWN[name]
        exc, msg = entry if isinstance(entry, tuple) else (RuntimeError, entry)
        raise exc(msg)


def no_complex_kernel(x, kernel):
    """Raise ``"<kernel>" not implemented for 'ComplexFloat'`` (PyTorch's dispatch error) if x is complex."""
    dt = _dtype_of(x)
    if dt.kind == "c":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype_name(dt)}\'')
