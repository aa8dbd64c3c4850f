"""``torch.sparse``: sparse COO/CSR/CSC tensors on SciPy's sparse matrices.

``torch.sparse_coo_tensor`` / ``sparse_csr_tensor`` / ``Tensor.to_sparse`` make them;
``torch.sparse.mm`` / ``addmm`` / ``sum`` / ``softmax`` / ``log_softmax`` and
``torch.mm`` / ``spmm`` / ``matmul`` / ``+`` / ``*`` work on them, with gradients for the
dense operands and for a sparse leaf's values. SciPy is imported on the first product.
"""
from .._layout import strided, sparse_csr, sparse_csc
from .._tensor import Tensor
from ._tensor import (SparseTensor, sparse_coo_tensor, sparse_csr_tensor, sparse_csc_tensor,  # noqa: F401
                      sparse_compressed_tensor, dense_to_sparse, dense_to_sparse_csr, dense_to_sparse_csc,
                      sparse_mask as _sparse_mask, not_implemented, CHECK_INVARIANTS, _check_compressed)
from ._ops import (addmm, sparse_mm as mm, sparse_sum as sum, softmax, log_softmax,  # noqa: F401
                   mm as _mm)

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax", "check_sparse_tensor_invariants", "spmm"]


def spmm(input, mat2):
    """``torch.spmm``: sparse (or dense) matrix times dense matrix, as ``torch.mm``."""
    if input._sparse or mat2._sparse:
        return _mm(input, mat2)
    from ..ops.linalg import mm as dense_mm
    return dense_mm(input, mat2)


class check_sparse_tensor_invariants:
    """Turn the invariant checks of the sparse constructors on (``enable()``) or off; also a
    context manager and decorator."""

    def __init__(self, enable=True):
        self.state = enable
        self.saved = None

    @staticmethod
    def is_enabled():
        return CHECK_INVARIANTS[0]

    @staticmethod
    def enable():
        CHECK_INVARIANTS[0] = True

    @staticmethod
    def disable():
        CHECK_INVARIANTS[0] = False

    def __enter__(self):
        self.saved = CHECK_INVARIANTS[0]
        CHECK_INVARIANTS[0] = self.state
        return self

    def __exit__(self, *exc):
        CHECK_INVARIANTS[0] = self.saved

    def __call__(self, fn):
        def wrapped(*args, **kwargs):
            with check_sparse_tensor_invariants(self.state):
                return fn(*args, **kwargs)
        return wrapped


def _to_dense(self, dtype=None, *, masked_grad=None):
    """A strided tensor's ``to_dense()`` is itself."""
    return self if dtype is None or dtype == self.dtype else self.to(dtype)


def _sparse_mask_method(self, mask):
    """``dense.sparse_mask(mask)``: this tensor's entries at the positions of sparse ``mask``."""
    return _sparse_mask(self, mask)


def _coo_only(what):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"{what} expected sparse coordinate tensor layout but got Strided")
    method.__name__ = what
    method.__doc__ = f"Only sparse COO tensors have ``{what}()``: a strided one raises PyTorch's error."
    return method


def _compressed_only(what, layout):
    def method(self):
        _check_compressed(self, what, layout)
    method.__name__ = what
    method.__doc__ = f"Only {layout} tensors have ``{what}()``: a strided one raises PyTorch's error."
    return method


def _values_dense(self):
    """A strided tensor has no ``values()``: PyTorch's error."""
    raise RuntimeError("values expected sparse tensor layout but got Strided")


def _nnz_dense(self):
    """A strided tensor has no ``_nnz()``: PyTorch's missing-kernel error."""
    raise not_implemented("_nnz", strided)


# Dense tensors' entry points into sparse layouts (the sparse class overrides each).
for _name in ("is_coalesced", "indices", "coalesce"):
    setattr(Tensor, _name, _coo_only(_name))
for _name, _lay in (("crow_indices", sparse_csr), ("col_indices", sparse_csr), ("ccol_indices", sparse_csc),
                    ("row_indices", sparse_csc)):
    setattr(Tensor, _name, _compressed_only(_name, _lay))
Tensor.values = _values_dense
Tensor._nnz = _nnz_dense
Tensor.sparse_dim = lambda self: 0
Tensor.dense_dim = lambda self: self._data.ndim
Tensor.to_sparse = dense_to_sparse
Tensor.to_sparse_coo = lambda self: dense_to_sparse(self)
Tensor.to_sparse_csr = dense_to_sparse_csr
Tensor.to_sparse_csc = dense_to_sparse_csc
Tensor.to_dense = _to_dense
Tensor.sparse_mask = _sparse_mask_method
Tensor.is_sparse_csr = property(lambda self: False)
