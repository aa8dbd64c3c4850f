"""placeholder"""
__all__ = []
TENSOR_METHODS = {}
INPLACE = {}
