__all__ = []
TENSOR_METHODS = {}
INPLACE = {}
