"""``torch.linalg``: matrix functions under PyTorch's names (each lives with its op family)."""
from .ops.linalg import (matmul, det, inv, solve, multi_dot, vecdot, linalg_cross as cross,  # noqa: F401
                         _LinAlgErrorType as LinAlgError)
from .ops import reduce as _reduce

__all__ = ["matmul", "det", "inv", "solve", "multi_dot", "vecdot", "cross", "LinAlgError"]

for _name in ("vector_norm", "matrix_norm", "norm"):
    if hasattr(_reduce, _name):
        globals()[_name] = getattr(_reduce, _name)
        __all__.append(_name)
