"""``torch.linalg``: the linear-algebra namespace (functions live with their op family)."""
from .ops.reduce import vector_norm

__all__ = ["vector_norm"]
