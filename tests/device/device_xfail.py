"""Ops of the op table not yet device-clean on the emulated CUDA device: strict expected
failures of tests/device/test_ops.py (each says why; remove an entry once its op passes)."""

OP_XFAIL = {
    "bfloat16": "CuPy has no bfloat16 dtype: Tensor.bfloat16() on a cuda tensor raises "
                "(TypeError: Unsupported dtype bfloat16)",
}

# ops whose result is the device itself (tested on their own in tests/device/test_ops.py)
DEVICE_SEMANTICS = {"type": "test_type_names_the_cuda_type", "cpu": "test_cpu_copies_to_the_host"}


# Ops that still compute with NumPy/SciPy on the host. The device runs them only through its
# array module, so these raise on the emulated device; each group names what its port needs.
_LINALG = ("the decomposition runs NumPy/SciPy LAPACK on the host: a port to the device's "
           "linalg (cupy.linalg / cupyx.scipy.linalg) is pending")

OP_XFAIL.update({n: _LINALG for n in (
    'cholesky', 'cholesky(raw)', 'cholesky_inverse', 'cholesky_solve', 'geqrf', 'inverse', 'linalg.cholesky',
    'linalg.cholesky(raw)', 'linalg.cholesky_ex', 'linalg.cond', 'linalg.cond(norm)', 'linalg.eig',
    'linalg.eigh', 'linalg.eigh(raw)', 'linalg.eigvals', 'linalg.eigvalsh', 'linalg.eigvalsh(raw)',
    'linalg.householder_product', 'linalg.inv', 'linalg.inv_ex', 'linalg.ldl_factor', 'linalg.ldl_factor_ex',
    'linalg.ldl_solve', 'linalg.lstsq', 'linalg.lstsq(sv)', 'linalg.lu', 'linalg.lu(P)', 'linalg.lu_factor',
    'linalg.lu_factor_ex', 'linalg.lu_solve', 'linalg.matrix_exp', 'linalg.matrix_norm(svd)',
    'linalg.matrix_rank', 'linalg.norm(svd)', 'linalg.pinv', 'linalg.pinv(hermitian)', 'linalg.qr',
    'linalg.qr(r)', 'linalg.slogdet', 'linalg.solve_ex', 'linalg.solve_triangular', 'linalg.svd',
    'linalg.svd(raw)', 'linalg.svdvals', 'linalg.tensorinv', 'linalg.vander', 'logdet', 'lu', 'lu_solve',
    'lu_unpack', 'matrix_exp', 'nuclear_norm', 'orgqr', 'ormqr', 'pinverse', 'qr', 'renorm', 'slogdet', 'svd',
    'torch.vander', 'triangular_solve',
)})
