"""``retrograd.backends``: the switches PyTorch programs set (cudnn, mps, cuda.matmul, mkldnn).

The flags are kept and read back; retrograd's CPU path (NumPy) and CUDA path (CuPy) do
not consult them.
"""
from . import cudnn, mps  # noqa: F401


class _Flags:
    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"


class _Cuda:
    def __init__(self):
        self.matmul = _Flags(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                             allow_bf16_reduced_precision_reduction=True)
        self._sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}

    # scaled_dot_product_attention's kernel switches: kept and read back (retrograd has one kernel)
    def enable_flash_sdp(self, enabled):
        self._sdp["flash"] = bool(enabled)

    def flash_sdp_enabled(self):
        return self._sdp["flash"]

    def enable_mem_efficient_sdp(self, enabled):
        self._sdp["mem_efficient"] = bool(enabled)

    def mem_efficient_sdp_enabled(self):
        return self._sdp["mem_efficient"]

    def enable_math_sdp(self, enabled):
        self._sdp["math"] = bool(enabled)

    def math_sdp_enabled(self):
        return self._sdp["math"]

    def enable_cudnn_sdp(self, enabled):
        self._sdp["cudnn"] = bool(enabled)

    def cudnn_sdp_enabled(self):
        return self._sdp["cudnn"]

    @staticmethod
    def is_built():
        from .. import cuda
        return cuda.is_available()


cuda = _Cuda()
mkldnn = _Flags(enabled=True)
openmp = _Flags()
openmp.is_available = lambda: False
mkl = _Flags()
mkl.is_available = lambda: False
opt_einsum = _Flags(enabled=False, strategy=None)
opt_einsum.is_available = lambda: False
cpu = _Flags()
cpu.get_cpu_capability = lambda: "DEFAULT"
nnpack = _Flags(enabled=False)
nnpack.is_available = lambda: False
mha = _Flags(_fastpath=True)
mha.get_fastpath_enabled = lambda: mha._fastpath
mha.set_fastpath_enabled = lambda value: setattr(mha, "_fastpath", bool(value))
