"""Linear algebra: matmul in all its rank cases, mm, bmm, mv, dot, outer, einsum, addmm,
baddbmm."""
__all__ = []
TENSOR_METHODS = {}
INPLACE = {}
