"""``torch.special``: special functions (``retrograd.special.<name>``), with PyTorch's
semantics: values, dtypes, broadcasting, ``out=`` and derivatives where PyTorch has them.
SciPy supplies the values and loads on first use."""
from .ops.special import SPECIAL as _SPECIAL
from .ops.unary import erf, erfc, erfinv, exp2, expm1, log1p  # noqa: F401
from .ops.pointwise import xlogy  # noqa: F401
from .ops.activation import softmax as _softmax, log_softmax as _log_softmax
from .ops.reduce import logsumexp  # noqa: F401

globals().update(_SPECIAL)


def round(input, *, decimals=0, out=None):
    """Round half to even (to ``decimals`` places); recorded as PyTorch's ``round.decimals``."""
    from .ops.unary import round as _round, RoundBackward1, _not_implemented
    from .ops._base import node_for, finish, write_out
    from .autograd import no_grad
    # unlike torch.round, integer inputs are refused whatever ``decimals``
    _not_implemented("round_vml_cpu" if decimals == 0 else "round_cpu", "biuc")(input._data.dtype)
    with no_grad():
        r = _round(input, decimals=decimals)
    res = finish(node_for(RoundBackward1, (input,)), r._data)
    return res if out is None else write_out(out, res, "special_round")


def softmax(input, dim, *, dtype=None):
    """Softmax along ``dim`` (``dtype``: cast the input first)."""
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """Log-softmax along ``dim`` (``dtype``: cast the input first)."""
    return _log_softmax(input, dim, dtype=dtype)


__all__ = sorted(set(_SPECIAL) | {"erf", "erfc", "erfinv", "exp2", "expm1", "log1p", "round", "xlogy",
                                  "softmax", "log_softmax", "logsumexp"})
