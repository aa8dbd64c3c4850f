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

    @staticmethod
    def is_built():
        from .. import cuda
        return cuda.is_available()


cuda = _Cuda()
mkldnn = _Flags(enabled=True)
openmp = _Flags()
openmp.is_available = lambda: False
