"""Ops of the op table not yet device-clean on the emulated CUDA device: strict expected
failures of tests/device/test_ops.py (each says why; remove an entry once its op passes)."""

OP_XFAIL = {
    "bfloat16": "CuPy has no bfloat16 dtype: Tensor.bfloat16() on a cuda tensor raises "
                "(TypeError: Unsupported dtype bfloat16)",
}

# ops whose result is the device itself (tested on their own in tests/device/test_ops.py)
DEVICE_SEMANTICS = {"type": "test_type_names_the_cuda_type", "cpu": "test_cpu_copies_to_the_host"}
