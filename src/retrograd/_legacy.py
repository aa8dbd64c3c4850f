"""PyTorch's legacy typed tensor constructors: ``torch.FloatTensor(2, 3)``,
``torch.LongTensor([1, 2])``, ``isinstance(x, torch.FloatTensor)``, ``x.type(torch.DoubleTensor)``
(and their ``torch.cuda.*`` twins).

Each is an instance of ``tensortype`` (as in PyTorch, not a subclass of Tensor): calling it
makes a Tensor of its dtype, and ``isinstance`` checks a tensor's dtype and device.
"""
import builtins

import numpy as np

from . import _dtype as D
from ._tensor import Tensor, Size

__all__ = ["tensortype", "LEGACY_TYPES", "CUDA_LEGACY_TYPES", "legacy_type"]

_NAMES = {"FloatTensor": D.float32, "DoubleTensor": D.float64, "HalfTensor": D.float16,
          "BFloat16Tensor": D.bfloat16, "LongTensor": D.int64, "IntTensor": D.int32,
          "ShortTensor": D.int16, "CharTensor": D.int8, "ByteTensor": D.uint8, "BoolTensor": D.bool_}

# torch's names for dtypes in TensorOptions messages
_OPT_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
              "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}

_SIGNATURES = (" * (*, torch.device device = None)\n"
               "      didn't match because some of the keywords were incorrect: {kw}\n"
               " * (torch.Storage storage)\n"
               " * (Tensor other)\n"
               " * (tuple of ints size, *, torch.device device = None)\n"
               " * (object data, *, torch.device device = None)\n")


def _options(dt, dev):
    return (f"TensorOptions(dtype={_OPT_NAMES.get(dt.name, dt.name)}, device={dev}, layout=Strided, "
            "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))")


class tensortype(type):
    """The type of ``torch.FloatTensor`` and friends."""

    def __instancecheck__(cls, obj):
        return (isinstance(obj, Tensor) and not obj._sparse and obj.dtype is cls._dtype
                and (obj.device.type == "cuda") == cls.is_cuda)

    def __subclasscheck__(cls, sub):
        return sub is cls

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__name__}'>"

    @property
    def dtype(cls):
        return cls._dtype

    @property
    def is_sparse(cls):
        return False

    def __call__(cls, *args, device=None, **kwargs):
        from ._creation import _to_array, _finish
        if kwargs:
            got = ", ".join([type(a).__name__ for a in args] + [f"{k}={_kw_type(v)}" for k, v in kwargs.items()])
            raise TypeError(f"new() received an invalid combination of arguments - got ({got}), but expected one "
                            "of:\n" + _SIGNATURES.format(kw=", ".join(kwargs)))
        dt = cls._dtype
        if cls.is_cuda:
            from ._device import cuda_is_available
            if not cuda_is_available():
                raise TypeError(f"type torch.cuda.{cls.__name__} not available. Torch not compiled with CUDA "
                                "enabled.")
        dev = device if device is not None else ("cuda" if cls.is_cuda else None)
        if len(args) == 1 and isinstance(args[0], Tensor):
            t = args[0]
            if t.dtype is not dt or (t.device.type == "cuda") != cls.is_cuda:
                raise TypeError(f"expected {_options(dt, 'cuda:0' if cls.is_cuda else 'cpu')} (got "
                                f"{_options(t.dtype, t.device)})")
            return t
        if not args:
            return _finish(np.zeros((0,), dt.np), False, dev)
        sizes = args[0] if len(args) == 1 and isinstance(args[0], Size) else args
        if all(isinstance(a, (builtins.int, np.integer)) and not isinstance(a, builtins.bool) for a in sizes):
            for a in sizes:
                if a < 0:
                    raise RuntimeError(f"Trying to create tensor with negative dimension {a}: "
                                       f"[{', '.join(map(str, sizes))}]")
            # PyTorch's storage is uninitialised; retrograd's is zeros (reading garbage helps no one)
            return _finish(np.zeros(tuple(sizes), dt.np), False, dev)
        if len(args) == 1 and isinstance(args[0], (builtins.bool, builtins.float, builtins.complex)):
            raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
        if len(args) > 1:
            raise TypeError(f"new() received an invalid combination of arguments - got "
                            f"({', '.join(type(a).__name__ for a in args)}), but expected one of:\n"
                            + _SIGNATURES.format(kw="").replace(
                                "      didn't match because some of the keywords were incorrect: \n", ""))
        return _finish(_to_array(args[0], dt), False, dev)


def _kw_type(v):
    if isinstance(v, D.dtype):
        return "torch.dtype"
    return type(v).__name__


def _make(name, cuda):
    return tensortype(name, (), {"_dtype": _NAMES[name], "is_cuda": cuda,
                                 "__module__": "torch.cuda" if cuda else "torch",
                                 "__doc__": f"Legacy constructor of {_NAMES[name]!r} tensors"
                                            f"{' on the GPU' if cuda else ''}."})


LEGACY_TYPES = {n: _make(n, False) for n in _NAMES}
CUDA_LEGACY_TYPES = {n: _make(n, True) for n in _NAMES}


def legacy_type(spec):
    """(dtype, on cuda) for a tensortype or its name ('torch.FloatTensor', 'torch.cuda.LongTensor',
    'FloatTensor'), else None."""
    if isinstance(spec, tensortype):
        return spec._dtype, spec.is_cuda
    if isinstance(spec, str):
        parts = spec.split(".")
        name = parts[-1]
        if name in _NAMES and parts[:-1] in ([], ["torch"], ["torch", "cuda"]):
            return _NAMES[name], parts[:-1] == ["torch", "cuda"]
        raise ValueError(f"invalid type: '{spec}'")
    return None
