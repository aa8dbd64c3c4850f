"""Ops of the op table not yet device-clean on the emulated CUDA device: strict expected
failures of tests/device/test_ops.py (each says why; remove an entry once its op passes)."""

OP_XFAIL = {
    "bfloat16": "CuPy has no bfloat16 dtype: Tensor.bfloat16() on a cuda tensor raises "
                "(TypeError: Unsupported dtype bfloat16)",
}
