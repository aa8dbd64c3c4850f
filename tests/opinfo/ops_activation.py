"""Op table entries: activations (nn.functional and their Tensor methods), softmax family,
dropout family (in its deterministic configurations) and the normalizations."""
import numpy as np

from .core import OpInfo, Sample, method, _known

OPS = []
INF, NAN = np.inf, np.nan


def _add(name, op, samples, **kw):
    OPS.append(OpInfo(name, op, samples, **kw))


def fn(name, copy_first=False):
    """op calling lib.nn.functional.<name>; ``copy_first`` runs it on a copy of the first
    argument (the in-place forms, whose argument is a leaf that requires grad)."""
    def op(lib, x, *args, **kwargs):
        f = getattr(lib.nn.functional, name)
        return f(x.clone() if copy_first else x, *args, **kwargs)
    op.__name__ = name
    return op


# The points where the piecewise activations change formula, and some on either side.
KINKS = (-7.0, -3.0, -2.9, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.9, 3.0, 6.0, 7.0, 20.0, 21.0)


def _act_samples(low=-4.0, high=4.0, kwargs=({},), degenerate=KINKS):
    def samples(mk):
        for k in kwargs:
            yield Sample(mk.rand(2, 3, low=low, high=high), **k)
        yield Sample(mk.rand(4, low=low, high=high), **kwargs[0])
        if degenerate:
            for k in kwargs:
                yield Sample(mk.arr(degenerate), kind="degenerate", **k)
    return samples


def activation(name, kwargs=({},), inplace_name=None, inplace_kw=False, degenerate=KINKS, inplace_kwargs=None,
               **kw):
    """F.<name> elementwise; ``inplace_name`` adds the F.<name>_ entry, ``inplace_kw`` the
    F.<name>(..., inplace=True) one (with ``inplace_kwargs``, default ``kwargs``)."""
    _add(f"F.{name}", fn(name), _act_samples(kwargs=kwargs, degenerate=degenerate), elementwise=True, **kw)
    ikw = kwargs if inplace_kwargs is None else inplace_kwargs
    if inplace_name:
        _add(f"F.{inplace_name}", fn(inplace_name, copy_first=True),
             _act_samples(kwargs=ikw, degenerate=degenerate), elementwise=True, **kw)
    if inplace_kw:
        _add(f"F.{name}(inplace)", lambda lib, x, **k: getattr(lib.nn.functional, name)(x.clone(), inplace=True, **k),
             _act_samples(kwargs=ikw, degenerate=degenerate), elementwise=True, **kw)


activation("elu", ({}, {"alpha": 0.5}), "elu_", True)
activation("celu", ({}, {"alpha": 0.7}), "celu_", True)
activation("selu", ({},), "selu_", True)
activation("gelu", ({}, {"approximate": "tanh"}))
activation("silu", inplace_kw=True)
activation("mish", inplace_kw=True)
activation("hardswish", inplace_kw=True)
activation("hardsigmoid", inplace_kw=True, gradgrad=False)   # torch: no derivative of hardsigmoid_backward
activation("hardtanh", ({}, {"min_val": -2.0, "max_val": 0.5}), "hardtanh_", True)
activation("relu6", inplace_kw=True)
activation("relu", inplace_name="relu_", inplace_kw=True)
activation("sigmoid")
activation("tanh")
activation("logsigmoid")
activation("softplus", ({}, {"beta": 2.0, "threshold": 1.0}, {"beta": -1.0}, {"beta": 0.5, "threshold": 3.0}))
# in place, a negative slope is refused by torch's backward (tested in test_edges_activation)
activation("leaky_relu", ({}, {"negative_slope": -0.5}, {"negative_slope": 0.0}), "leaky_relu_", True,
           inplace_kwargs=({}, {"negative_slope": 0.0}))
activation("threshold", ({"threshold": 0.5, "value": -1.0}, {"threshold": -1.0, "value": 2.0}), "threshold_", True)
activation("hardshrink", ({}, {"lambd": 1.0}))
activation("softshrink", ({}, {"lambd": 1.0}, {"lambd": 0.0}))
activation("tanhshrink")
activation("softsign")
activation("rrelu", ({}, {"lower": 0.2, "upper": 0.4}), "rrelu_", True)   # evaluation: deterministic
_add("hardshrink", method("hardshrink"), _act_samples(kwargs=({}, {"lambd": 1.0})), elementwise=True)


def _prelu_samples(mk):
    yield Sample(mk.rand(2, 3, 4), mk.arr([0.1, -0.2, 0.3]))
    yield Sample(mk.rand(2, 3), mk.arr([0.25]))
    yield Sample(mk.rand(4), mk.arr([-0.5]))
    yield Sample(mk.rand(2, 3), mk.arr([0.1, -0.2, 0.3]))
    yield Sample(mk.arr(KINKS), mk.arr([0.25]), kind="degenerate")
    yield Sample(mk.arr([[0.0, -0.0, 1.0], [-1.0, 0.0, 2.0]]), mk.arr([0.1, -0.2, 0.3]), kind="degenerate")
    yield Sample(mk.arr(-0.7), mk.arr([0.25]), kind="0d")
    yield Sample(np.zeros((0, 3)), mk.arr([0.1, -0.2, 0.3]), kind="empty")


_add("F.prelu", fn("prelu"), _prelu_samples)
_add("prelu", method("prelu"), _prelu_samples)


def _glu_samples(mk):
    yield Sample(mk.rand(2, 4))
    yield Sample(mk.rand(4, 3), 0)
    yield Sample(mk.rand(2, 6, 2), dim=1)
    yield Sample(mk.arr([[-30.0, 0.0, 30.0, 1.0], [1.0, -1.0, 0.0, 800.0]]), kind="degenerate")
    yield Sample(np.zeros((0, 4)), kind="empty")


_add("F.glu", fn("glu"), _glu_samples)


# --- softmax family -------------------------------------------------------------------------

def _softmax_samples(dtype_kw=True):
    def samples(mk):
        yield Sample(mk.rand(2, 3), 1)
        yield Sample(mk.rand(2, 3, 4), 0)
        yield Sample(mk.rand(2, 3, 4), dim=-2)
        yield Sample(mk.rand(4), 0)
        if dtype_kw:
            yield Sample(mk.rand(2, 3), 1, dtype="float64", kind="dtype")
        yield Sample(mk.arr(0.3), 0, kind="0d")
        yield Sample(np.zeros((0, 3)), 0, kind="empty")
        yield Sample(np.zeros((0, 3)), 1, kind="empty")
        yield Sample(np.zeros((2, 0)), 1, kind="empty")
        yield Sample(mk.arr([[INF, 1.0, 2.0], [-INF, -INF, -INF], [1.0, 1.0, 1.0], [800.0, -800.0, 0.0]]), 1,
                     kind="degenerate")
    return samples


def _with_dtype(op):
    def f(lib, x, *args, dtype=None, **kwargs):
        if dtype is not None:
            kwargs["dtype"] = getattr(lib, dtype)
        return op(lib, x, *args, **kwargs)
    f.__name__ = op.__name__
    return f


for _n in ("softmax", "log_softmax", "softmin"):
    _add(f"F.{_n}", _with_dtype(fn(_n)), _softmax_samples())
for _n in ("softmax", "log_softmax"):
    _add(_n, _with_dtype(method(_n)), _softmax_samples())


# --- dropout: only its deterministic configurations can be compared with torch ---------------

def _dropout_samples(channels=False):
    def samples(mk):
        shape = (2, 3, 4) if channels else (2, 3)
        yield Sample(mk.rand(*shape), 0.0, True)
        yield Sample(mk.rand(*shape), 1.0, True, kind="p1")
        yield Sample(mk.rand(*shape), 0.5, False, kind="eval")
        yield Sample(mk.arr([NAN, INF, -1.0]).reshape((1, 3, 1) if channels else (3,)), 1.0, True,
                     kind="degenerate")
    return samples


for _n, _ch in (("dropout", False), ("alpha_dropout", False), ("feature_alpha_dropout", True), ("dropout1d", True),
                ("dropout2d", True), ("dropout3d", True)):
    # p=0 and evaluation give the input itself (dropout3d of a 3-D input: a view of it)
    _add(f"F.{_n}", fn(_n), _dropout_samples(_ch), view=True)


# --- normalization --------------------------------------------------------------------------

_CONST = np.full((2, 4, 3), 1.5)


def _norm_inputs(mk, shape, n):
    return mk.rand(*shape), mk.rand(n, low=0.5, high=1.5), mk.rand(n)


def _layer_norm_samples(mk):
    x, w, b = _norm_inputs(mk, (2, 4, 3), 3)
    yield Sample(x, (3,), w, b)
    yield Sample(mk.rand(2, 4, 3), (4, 3))
    yield Sample(mk.rand(3), (3,), w, b, eps=1e-3)
    # zero variance (eps 0.1: with the default, rstd = 1/sqrt(eps) turns float32 rounding into
    # noise in both libraries; float64 and the default eps: tests/test_edges_activation.py)
    yield Sample(_CONST, (3,), w, b, eps=0.1, kind="degenerate")
    yield Sample(_CONST, (4, 3), eps=0.1, kind="degenerate")
    yield Sample(mk.rand(2, 1), (1,), eps=0.1, kind="degenerate")
    yield Sample(np.zeros((0, 4, 3)), (3,), w, b, kind="empty")
    yield Sample(np.zeros((2, 4, 0)), (0,), kind="empty")


_add("F.layer_norm", fn("layer_norm"), _layer_norm_samples)


def _group_norm_samples(mk):
    x, w, b = _norm_inputs(mk, (2, 4, 3), 4)
    yield Sample(x, 2, w, b)
    yield Sample(mk.rand(2, 4, 3), 1)
    yield Sample(mk.rand(2, 4, 2, 2), 4, w, b, eps=1e-3)
    # one value per group, zero variance, one constant group (eps 0.1: see layer_norm)
    yield Sample(mk.rand(2, 4), 4, w, b, eps=0.1, kind="degenerate")
    yield Sample(_CONST, 2, w, b, eps=0.1, kind="degenerate")
    yield Sample(np.concatenate([np.full((2, 2, 3), 0.7), mk.rand(2, 2, 3)], 1), 2, w, b, eps=0.1, kind="degenerate")
    yield Sample(np.zeros((0, 4, 3)), 2, w, b, kind="empty")
    yield Sample(mk.rand(1, 4), 4, kind="error")                     # ValueError: one value per channel


_add("F.group_norm", fn("group_norm"), _group_norm_samples)


def _batch_norm_op(lib, x, *args, running=False, **kwargs):
    if running:   # running statistics of the input's dtype, fresh for each call
        c = x.shape[1] if x.dim() > 1 else 0
        args = (lib.zeros(c, dtype=x.dtype), lib.ones(c, dtype=x.dtype) * 2) + args
    else:
        args = (None, None) + args
    return lib.nn.functional.batch_norm(x, *args, **kwargs)


def _batch_norm_samples(mk):
    x, w, b = _norm_inputs(mk, (4, 3, 2), 3)
    yield Sample(x, w, b, training=True)
    yield Sample(mk.rand(4, 3), training=True)
    yield Sample(mk.rand(4, 3, 2), w, b, running=True)                         # evaluation
    yield Sample(mk.rand(4, 3, 2), w, b, running=True, training=True, momentum=0.3)
    yield Sample(np.full((4, 3, 2), 0.3), w, b, training=True, eps=0.1, kind="degenerate")
    yield Sample(mk.rand(2, 3), w, b, training=True, kind="degenerate")
    yield Sample(np.zeros((0, 3, 2)), w, b, training=True, kind="empty")
    yield Sample(mk.rand(1, 3), training=True, kind="error")


_add("F.batch_norm", _batch_norm_op, _batch_norm_samples)


def _instance_norm_samples(mk):
    x, w, b = _norm_inputs(mk, (2, 3, 4), 3)
    yield Sample(x, weight=w, bias=b)
    yield Sample(mk.rand(2, 3, 2, 2))
    yield Sample(np.full((2, 3, 4), 2.0), weight=w, bias=b, eps=0.1, kind="degenerate")
    yield Sample(mk.rand(2, 3, 1), kind="error")


_add("F.instance_norm", fn("instance_norm"), _instance_norm_samples, view=True)


def _rms_norm_samples(mk):
    yield Sample(mk.rand(2, 3), (3,), mk.rand(3, low=0.5, high=1.5))
    yield Sample(mk.rand(2, 3, 4), (3, 4))
    yield Sample(mk.rand(4), (4,), eps=1e-3)
    yield Sample(np.zeros((2, 3)), (3,), kind="degenerate")
    yield Sample(np.zeros((0, 3)), (3,), kind="empty")


_add("F.rms_norm", fn("rms_norm"), _rms_norm_samples)


# --- what differs from torch 2.13 today -----------------------------------------------------

_known("F.gelu", "values", "nonfinite",
       "gelu(+inf) is +inf; torch 2.13's vectorized float32 erf gives NaN for inputs of more than one element")
_known("F.batch_norm", "gradgrad", "nonfinite",
       "inf/nan inputs or weights: second derivatives place NaN and inf differently from torch's double-backward formulas")
