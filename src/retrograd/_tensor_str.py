"""Tensor printing, laid out as PyTorch lays it out (precision 4, line width 80)."""
import math

import numpy as np

from . import _dtype as D


class _PrintOptions:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


PRINT_OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Set how tensors print (``torch.set_printoptions``)."""
    if profile == "default":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 4, 1000, 3, 80
    elif profile == "short":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 1000, 2, 80
    elif profile == "full":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 4, math.inf, 3, 80
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


class _Formatter:
    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = PRINT_OPTS.precision
        if not floating:
            for v in values.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        vals = values[np.isfinite(values) & (values != 0)].astype(np.float64)
        if vals.size == 0:
            return
        absv = np.abs(vals)
        vmin, vmax = float(absv.min()), float(absv.max())
        listed = vals.tolist()
        for v in listed:
            if v != math.ceil(v):
                self.int_mode = False
                break
        self.sci_mode = (vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4
                         if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode)
        if self.sci_mode:
            self.max_width = max(self.max_width, max(len(f"{v:.{p}e}") for v in listed))
        elif self.int_mode:
            self.max_width = max(self.max_width, max(len(f"{v:.0f}") + 1 for v in listed))
        else:
            self.max_width = max(self.max_width, max(len(f"{v:.{p}f}") for v in listed))

    def format(self, value):
        p = PRINT_OPTS.precision
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


class _ComplexFormatter:
    def __init__(self, re, im):
        self.re, self.im = re, im
        # an element's width: both parts and the "j" (PyTorch's element_length)
        self.max_width = re.max_width + im.max_width + 1

    def format(self, value):
        value = complex(value)
        real = self.re.format(value.real)
        imag = (self.im.format(value.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag


def _summarized(a):
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * e:
        parts = [_summarized(x) for x in list(a[:e]) + list(a[-e:])]
    else:
        parts = [_summarized(x) for x in a]
    if a.ndim == 1:
        return np.array([np.asarray(x) for x in parts]).reshape(-1)
    return np.concatenate([np.asarray(x).reshape(-1) for x in parts])


def _vector_str(a, indent, summarize, fmt):
    element_length = fmt.max_width + 2
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / element_length)))
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        data = [fmt.format(v) for v in a[:e].tolist()] + [" ..."] + [fmt.format(v) for v in a[-e:].tolist()]
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str_fmt(a, indent, summarize, fmt):
    dim = a.ndim
    if dim == 0:
        return fmt.format(a.item())
    if dim == 1:
        return _vector_str(a, indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        slices = ([_tensor_str_fmt(a[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."]
                  + [_tensor_str_fmt(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0] - e, a.shape[0])])
    else:
        slices = [_tensor_str_fmt(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices) + "]"


def array_str(a, indent):
    """The bracketed body of a tensor's repr."""
    if a.size == 0:
        return "[]"
    if a.dtype == np.float16 or a.dtype.kind == "V":  # half types print through float32, as PyTorch's do
        a = a.astype(np.float32)
    summarize = a.size > PRINT_OPTS.threshold
    floating = a.dtype.kind == "f"
    if a.dtype.kind == "c":
        # PyTorch lays out the real and imaginary parts with a formatter each.
        flat = _summarized(a) if summarize else a.reshape(-1)
        fmt = _ComplexFormatter(_Formatter(flat.real, True), _Formatter(flat.imag, True))
        return _tensor_str_fmt(a, indent, summarize, fmt)
    fmt = _Formatter(_summarized(a) if summarize else a.reshape(-1), floating)
    return _tensor_str_fmt(a, indent, summarize, fmt)


def _add_suffixes(text, suffixes, indent):
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if last_line_len + len(s) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + s)
            last_line_len = indent + len(s)
        else:
            parts.append(", " + s)
            last_line_len += len(s) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t, prefix="tensor("):
    """``tensor([1., 2.], requires_grad=True)`` and friends."""
    indent = len(prefix)
    a = t._data
    dt = t.dtype
    suffixes = []
    dev = t.device
    if dev.type != "cpu":
        suffixes.append(f"device='{dev}'")
    default = D.get_default_dtype()
    if dev.type == "meta":      # no values: PyTorch prints the size (and any other dtype)
        suffixes.append("size=" + str(tuple(a.shape)))
        if dt is not default:
            suffixes.append("dtype=" + repr(dt))
        body = "..."
        a = None
    elif type(a) is not np.ndarray:
        a = a.get()
    if a is None:
        pass
    elif a.size == 0:
        if a.ndim != 1:
            suffixes.append("size=" + str(tuple(a.shape)))
        if dt is not default:
            suffixes.append("dtype=" + repr(dt))
    elif dt not in (default, D.int64, D.bool_, default.to_complex()):
        suffixes.append("dtype=" + repr(dt))
    if a is not None:
        body = array_str(a, indent)
    fn = t._grad_fn
    if fn is not None:
        suffixes.append(f"grad_fn=<{type(fn).__name__}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
