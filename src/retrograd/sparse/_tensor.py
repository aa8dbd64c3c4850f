"""Sparse tensors (COO, CSR, CSC) with PyTorch's semantics, on SciPy's sparse matrices.

A sparse tensor is a ``Tensor`` subclass whose ``_data`` is a small shape/dtype record
(``_SparseData``): the engine and the metadata methods read shape and dtype from it as
from an array, and a dense op that reaches for the elements gets PyTorch's
"Could not run 'aten::<op>' with arguments from the 'SparseCPU' backend" instead. The
elements live beside it: COO keeps ``_idx`` (sparse_dim, nnz) int64 and ``_vals``
(nnz, *dense_dims); CSR/CSC keep ``_cidx`` (compressed), ``_pidx`` (plain) and
``_vals``. Products go through ``scipy.sparse`` (``cupyx.scipy.sparse`` for CuPy
arrays), imported on first use.
"""
import sys

import numpy as np

from .. import _dtype as D
from .._layout import strided, sparse_coo, sparse_csr, sparse_csc  # noqa: F401
from .._tensor import Tensor
from .._device import CPU, device_of_array
from ..autograd import grad_mode
from ..ops._base import OpNode, node_for, finish

_new = object.__new__
_state = grad_mode._state
_I64 = np.dtype(np.int64)
CHECK_INVARIANTS = [False]   # torch.sparse.check_sparse_tensor_invariants' global switch

_BACKENDS = "[CPU, CUDA, HIP, MPS, IPU, XPU, HPU, VE, MTIA, MAIA, PrivateUse1, PrivateUse2, PrivateUse3, Meta, ...]"


def not_implemented(op, layout=sparse_coo, device="cpu"):
    """PyTorch's dispatcher error for an op with no sparse kernel."""
    dev = "CUDA" if device == "cuda" else "CPU"
    backend = {sparse_coo: "Sparse", strided: ""}.get(layout, "SparseCsr") + dev
    return NotImplementedError(
        f"Could not run 'aten::{op}' with arguments from the '{backend}' backend. This could be because the "
        "operator doesn't exist for this backend, or was omitted during the selective/custom build process (if "
        "using custom build). If you are a Facebook employee using PyTorch on mobile, please visit "
        f"https://fburl.com/ptmfixes for possible resolutions. 'aten::{op}' is only available for these "
        f"backends: {_BACKENDS}.")


_OP_MODULES = ("retrograd.ops.", "retrograd.nn.functional", "retrograd._tensor_methods", "retrograd._creation",
               "retrograd.linalg")
_CALLER_LEVEL = ("retrograd.nn.modules", "retrograd.cli", "retrograd.optim", "retrograd.utils", "retrograd.autograd")
_GENERIC = {"op", "apply_inplace", "<lambda>", "method", "wrapper", "inner", "fn", "f", "_prep", "quiet"}
_NP_TO_ATEN = {"absolute": "abs", "true_divide": "div", "divide": "div", "power": "pow", "multiply": "mul",
               "subtract": "sub", "negative": "neg", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
               "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "greater": "gt", "less": "lt",
               "equal": "eq", "not_equal": "ne", "greater_equal": "ge", "less_equal": "le", "log1p": "log1p"}


def _entry_op(f):
    """The public op a dense code path was entered through (the outermost named frame of
    retrograd's op modules), for the missing-kernel error: 'aten::view', not a helper's name."""
    name = None
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not mod.startswith("retrograd.") or mod.startswith(_CALLER_LEVEL):
            break
        if mod.startswith(_OP_MODULES) and f.f_code.co_name not in _GENERIC:
            name = f.f_code.co_name
        f = f.f_back
    return name.strip("_") if name else None


class _SparseData:
    """Shape and dtype of a sparse tensor, standing where a dense tensor keeps its array.
    Whatever else a dense op asks of it raises PyTorch's missing-kernel error."""
    __slots__ = ("shape", "dtype", "ndim", "size", "itemsize", "layout", "dev")

    def __init__(self, shape, dtype, layout, dev="cpu"):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.ndim = len(self.shape)
        n = 1
        for s in self.shape:
            n *= s
        self.size = n
        self.itemsize = self.dtype.itemsize
        self.layout = layout
        self.dev = dev

    def _fail(self, op):
        name = _entry_op(sys._getframe(2)) or _NP_TO_ATEN.get(op, op).strip("_")
        raise not_implemented(name, self.layout, self.dev)

    def __getattr__(self, name):
        if name.startswith("__"):   # protocol probes (copy, pickle, hasattr) get the usual answer
            raise AttributeError(name)
        # Only reached for what a dense op needs of an array: name the op that asked.
        self._fail(sys._getframe(1).f_code.co_name)

    def __array_ufunc__(self, ufunc, method, *args, **kwargs):
        self._fail(ufunc.__name__)

    def __array_function__(self, func, types, args, kwargs):
        self._fail(func.__name__)

    def __array__(self, *args, **kwargs):
        self._fail(sys._getframe(1).f_code.co_name)

    def __getitem__(self, key):
        self._fail("index")

    def __setitem__(self, key, value):
        self._fail("index_put_")

    def __len__(self):
        return self.shape[0]


def _arith_fail(aten):
    def method(self, *args):
        self._fail(aten)
    return method


# a dense op doing array arithmetic on it (outside NumPy's ufunc protocol) fails the same way
for _dunder, _aten in (("neg", "neg"), ("pos", "positive"), ("abs", "abs"), ("invert", "bitwise_not"),
                       ("add", "add"), ("radd", "add"), ("sub", "sub"), ("rsub", "sub"), ("mul", "mul"),
                       ("rmul", "mul"), ("truediv", "div"), ("rtruediv", "div"), ("pow", "pow"), ("rpow", "pow"),
                       ("lt", "lt"), ("le", "le"), ("gt", "gt"), ("ge", "ge"), ("matmul", "mm"), ("rmatmul", "mm")):
    setattr(_SparseData, f"__{_dunder}__", _arith_fail(_aten))


def _xp(a):
    return np if type(a) is np.ndarray else sys.modules["cupy"]


def _spmod(a):
    """scipy.sparse for NumPy arrays, cupyx.scipy.sparse for CuPy ones."""
    if type(a) is np.ndarray:
        import scipy.sparse as sp
        return sp
    import cupyx.scipy.sparse as sp
    return sp


class SparseTensor(Tensor):
    """A sparse COO/CSR/CSC tensor (``layout`` tells which)."""
    _sparse = True
    _idx = None
    _cidx = None
    _pidx = None
    _coalesced = False
    _shared = False      # a gradient whose indices another tensor holds too: AccumulateGrad copies it
                         # (keeping the coalesced flag) where PyTorch would otherwise re-wrap it
    _mat = None          # cached scipy CSR matrix of a 2-D tensor without dense dims
    _matT = None

    def __new__(cls, *args, **kwargs):
        raise TypeError("use torch.sparse_coo_tensor / torch.sparse_csr_tensor to make a sparse tensor")

    # --- metadata -----------------------------------------------------------------
    @property
    def data(self):
        """This sparse tensor's indices and values without its history."""
        return _like(self, self._vals)

    @data.setter
    def data(self, value):
        if not isinstance(value, SparseTensor):
            raise RuntimeError("data set to a tensor of another layout: only a sparse tensor of the same layout "
                               "can replace a sparse tensor's data")
        for k in ("_data", "_idx", "_cidx", "_pidx", "_vals", "_coalesced"):
            setattr(self, k, getattr(value, k))
        self._mat = self._matT = None

    @property
    def layout(self):
        return self._data.layout

    @property
    def is_sparse(self):
        return self._data.layout is sparse_coo

    @property
    def is_sparse_csr(self):
        return self._data.layout is sparse_csr

    @property
    def device(self):
        v = self._vals
        return CPU if type(v) is np.ndarray else device_of_array(v)

    def stride(self, dim=None):
        if self._data.layout is not sparse_coo:
            raise RuntimeError("Sparse CSR tensors do not have strides" if self._data.layout is sparse_csr
                               else "Sparse CSC tensors do not have strides")
        st = (0,) * self._data.ndim
        return st if dim is None else st[self._wrap_dim(dim)]

    def is_contiguous(self, memory_format=None):
        if self._data.layout is not sparse_coo:
            raise RuntimeError(f"Sparse {'CSR' if self._data.layout is sparse_csr else 'CSC'} tensors do not have "
                               "is_contiguous")
        return False

    def element_size(self):
        return self._data.itemsize

    def data_ptr(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def _nnz(self):
        """The number of stored entries (duplicates of an uncoalesced tensor included)."""
        return int(self._vals.shape[0])

    def sparse_dim(self):
        """How many leading dimensions are sparse (indexed)."""
        if self._data.layout is sparse_coo:
            return int(self._idx.shape[0])
        return 2

    def dense_dim(self):
        """How many trailing dimensions each stored value has."""
        return self._data.ndim - self.sparse_dim()

    def is_coalesced(self):
        """Whether the COO indices are known to be sorted and unique."""
        if self._data.layout is not sparse_coo:
            raise RuntimeError(f"is_coalesced expected sparse coordinate tensor layout but got {_lname(self)}")
        return self._coalesced

    def _check_coo(self, what):
        if self._data.layout is not sparse_coo:
            raise RuntimeError(f"{what} expected sparse coordinate tensor layout but got {_lname(self)}")

    # --- parts --------------------------------------------------------------------
    def _indices(self):
        if self._data.layout is not sparse_coo:
            raise not_implemented("_indices", self._data.layout)
        return Tensor._make(self._idx)

    def _values(self):
        return Tensor._make(self._vals)

    def indices(self):
        """The (sparse_dim, nnz) int64 indices of a coalesced COO tensor."""
        self._check_coo("indices")
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return Tensor._make(self._idx)

    def values(self):
        """The (nnz, *dense_dims) values (differentiable)."""
        if self._data.layout is sparse_coo and not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        node = node_for(ValuesBackward0, (self,))
        if node is not None:
            node.like = self
        return finish(node, self._vals)

    def crow_indices(self):
        """The compressed row indices of a CSR tensor (nrows + 1 offsets)."""
        _check_compressed(self, "crow_indices", sparse_csr)
        return Tensor._make(self._cidx)

    def col_indices(self):
        """The column index of each value of a CSR tensor."""
        _check_compressed(self, "col_indices", sparse_csr)
        return Tensor._make(self._pidx)

    def ccol_indices(self):
        """The compressed column indices of a CSC tensor (ncols + 1 offsets)."""
        _check_compressed(self, "ccol_indices", sparse_csc)
        return Tensor._make(self._cidx)

    def row_indices(self):
        """The row index of each value of a CSC tensor."""
        _check_compressed(self, "row_indices", sparse_csc)
        return Tensor._make(self._pidx)

    # --- conversions to Python / NumPy --------------------------------------------
    def numpy(self, *, force=False):
        raise TypeError(f"can't convert {_lname(self, short=True)} layout tensor to numpy. "
                        "Use Tensor.to_dense() first.")

    def __array__(self, dtype=None, copy=None):
        return self.numpy()

    def item(self):
        n = self._data.size
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        return self.to_dense().item()

    def tolist(self):
        raise not_implemented("tolist", self._data.layout)

    def __repr__(self, *, tensor_contents=None):
        return sparse_repr(self)

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        raise not_implemented("select.int", self._data.layout)

    def __getitem__(self, key):
        raise not_implemented("index", self._data.layout)

    def __setitem__(self, key, value):
        raise not_implemented("index_put_", self._data.layout)

    def __bool__(self):
        if self._data.size != 1:
            return Tensor.__bool__(self)
        return bool(self.item())

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            return Tensor.__deepcopy__(self, memo)
        t = _like(self, self._vals.copy(), copy_index=True)
        if self._requires_grad:
            t._requires_grad = True
        if self._grad is not None:
            import copy
            t._grad = copy.deepcopy(self._grad, memo)
        memo[id(self)] = t
        return t

    def __reduce_ex__(self, proto):
        return (_rebuild_sparse, (self._data.layout.name, self._data.shape, np.asarray(self._vals),
                                  None if self._idx is None else np.asarray(self._idx),
                                  None if self._cidx is None else np.asarray(self._cidx),
                                  None if self._pidx is None else np.asarray(self._pidx),
                                  self._coalesced, self._requires_grad))

    # --- graph-free copies ----------------------------------------------------------
    def detach(self):
        """The same sparse tensor without history (shares indices and values)."""
        return _like(self, self._vals)

    def detach_(self):
        self._grad_fn = None
        self._requires_grad = False
        return self

    def clone(self, *, memory_format=None):
        t = _like(self, self._vals.copy(), copy_index=True)
        node = node_for(CloneBackward0, (self,))
        return _finish_sparse(node, t)

    def to(self, *args, **kwargs):
        """``to(dtype)`` / ``to(device)``: a copy in the new dtype or on the new device, or
        this very tensor when nothing changes."""
        from .._device import device as _device
        dtype, dev = kwargs.get("dtype"), kwargs.get("device")
        for a in args:
            if isinstance(a, D.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype, dev = a.dtype, a.device
            elif isinstance(a, (str, _device)):
                dev = a
            elif isinstance(a, type) and issubclass(a, np.generic):   # the engine casts by NumPy type
                dtype = D._FROM_NP[np.dtype(a)]
        t = self
        if dev is not None and _device(dev).type != self.device.type:
            t = _moved(self, _device(dev).type)
        if dtype is not None and dtype != self.dtype:
            t = t._cast(dtype)
        return t

    def _cast(self, dtype):
        npdt = dtype.np
        t = _like(self, self._vals.astype(npdt))
        node = node_for(ToCopyBackward0, (self,)) if npdt.kind in "fcV" else None
        if node is not None:
            node.dtype = self.dtype
        return _finish_sparse(node, t)

    def cpu(self, memory_format=None):
        return self

    def float(self, memory_format=None):
        return self.to(D.float32)

    def double(self, memory_format=None):
        return self.to(D.float64)

    def half(self, memory_format=None):
        return self.to(D.float16)

    def long(self, memory_format=None):
        return self.to(D.int64)

    def int(self, memory_format=None):
        return self.to(D.int32)

    def bool(self, memory_format=None):
        return self.to(D.bool_)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        if dtype is None:
            name = {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int", "float16": "Half",
                    "bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short"}.get(self._data.dtype.name, "")
            return f"torch.sparse.{name}Tensor"
        return self.to(dtype)

    def zero_(self):
        """Empty in place: no entries (nnz 0), the same shape, coalesced."""
        if self._data.layout is not sparse_coo:
            raise not_implemented("zero_", self._data.layout)
        xp = _xp(self._vals)
        self._idx = xp.zeros((self._idx.shape[0], 0), np.int64)
        self._vals = xp.zeros((0,) + tuple(self._vals.shape[1:]), self._vals.dtype)
        self._coalesced = True
        self._mat = self._matT = None
        self._bump_version()
        return self

    # --- conversions between layouts ------------------------------------------------
    def to_dense(self, dtype=None, *, masked_grad=None):
        """The dense tensor (duplicates summed); differentiable (ToDenseBackward0)."""
        out = _dense_array(self)
        if dtype is not None:
            out = out.astype(dtype.np)
        node = node_for(ToDenseBackward0, (self,))
        if node is not None:
            node.like = self
        return finish(node, out)

    def coalesce(self):
        """Duplicates summed, indices sorted (the same tensor when already coalesced)."""
        self._check_coo("coalesce")
        if self._coalesced:
            return self
        idx, vals = _coalesce_arrays(self._idx, self._vals, self._data.shape)
        t = _coo(idx, vals, self._data.shape, True)
        return _finish_sparse(node_for(CoalesceBackward0, (self,)), t)

    def to_sparse(self, *args, layout=None, blocksize=None, dense_dim=None):
        """This tensor in the COO layout (or in ``layout``)."""
        if args and not isinstance(args[0], int):
            layout = args[0]
        if layout is None or layout is sparse_coo:
            if self._data.layout is sparse_coo:
                return self
            return _compressed_to_coo(self)
        if layout is sparse_csr:
            return self.to_sparse_csr()
        if layout is sparse_csc:
            return self.to_sparse_csc()
        raise RuntimeError(f"to_sparse: conversion to {layout} is not supported")

    def to_sparse_coo(self):
        """This tensor in the COO layout."""
        return self.to_sparse()

    def to_sparse_csr(self, dense_dim=None):
        """This 2-D tensor in the CSR layout."""
        if self._data.layout is sparse_csr:
            return self
        return _to_compressed(self, sparse_csr)

    def to_sparse_csc(self, dense_dim=None):
        """This 2-D tensor in the CSC layout."""
        if self._data.layout is sparse_csc:
            return self
        return _to_compressed(self, sparse_csc)

    # --- arithmetic -------------------------------------------------------------------
    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __sub__(self, other):
        return add(self, other, alpha=-1)

    def __rsub__(self, other):
        return add(other if isinstance(other, Tensor) else _scalar_tensor(other, self), self, alpha=-1)

    def add(self, other, *, alpha=1):
        return add(self, other, alpha=alpha)

    def sub(self, other, *, alpha=1):
        return add(self, other, alpha=-alpha)

    def __mul__(self, other):
        return mul(self, other)

    __rmul__ = __mul__

    def mul(self, other):
        return mul(self, other)

    def __truediv__(self, other):
        return div(self, other)

    div = __truediv__

    def __rtruediv__(self, other):
        raise not_implemented("reciprocal", self._data.layout)

    def __pow__(self, exponent):
        return pow(self, exponent)

    pow = __pow__

    def __neg__(self):
        return neg(self)

    neg = __neg__

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def mm(self, mat2):
        return mm(self, mat2)

    def matmul(self, other):
        return matmul(self, other)

    def t(self):
        """The transpose of a 2-D sparse COO tensor."""
        return transpose(self)

    def sum(self, dim=None, keepdim=False, dtype=None):
        """All entries summed (a dense 0-d tensor), or the sum over ``dim`` (sparse)."""
        if dim is None:
            return sum_all(self)
        return sparse_sum(self, dim, name="SumBackward1")

    def softmax(self, dim, dtype=None):
        return softmax(self, dim, dtype=dtype)

    def log_softmax(self, dim, dtype=None):
        return log_softmax(self, dim, dtype=dtype)

    def sparse_mask(self, mask):
        return sparse_mask(self.to_dense(), mask)

    def _sparse_mm(self, mat2):
        return mm(self, mat2)


def _check_compressed(t, what, layout):
    if t._data.layout is not layout if isinstance(t, SparseTensor) else True:
        kind = "row" if layout is sparse_csr else "column"
        raise RuntimeError(f"{what} expected sparse {kind} compressed tensor layout but got {_lname(t)}")


def _lname(t, short=False):
    lay = t._data.layout if isinstance(t, SparseTensor) else strided
    if short:
        return {"sparse_coo": "Sparse", "sparse_csr": "SparseCsr", "sparse_csc": "SparseCsc"}.get(lay.name, "Strided")
    return {"sparse_coo": "Sparse", "sparse_csr": "SparseCsr", "sparse_csc": "SparseCsc",
            "strided": "Strided"}[lay.name]


def _rebuild_sparse(layout, shape, vals, idx, cidx, pidx, coalesced, requires_grad):
    from .. import _layout
    lay = getattr(_layout, layout)
    if lay is sparse_coo:
        t = _coo(idx, vals, shape, coalesced)
    else:
        t = _compressed(lay, cidx, pidx, vals, shape)
    if requires_grad:
        t._requires_grad = True
    return t


# --- construction -----------------------------------------------------------------------

def _coo(idx, vals, shape, coalesced=False):
    t = _new(SparseTensor)
    t._data = _SparseData(shape, vals.dtype, sparse_coo, "cpu" if type(vals) is np.ndarray else "cuda")
    t._idx = idx
    t._vals = vals
    if coalesced:
        t._coalesced = True
    return t


def _compressed(layout, cidx, pidx, vals, shape):
    t = _new(SparseTensor)
    t._data = _SparseData(shape, vals.dtype, layout, "cpu" if type(vals) is np.ndarray else "cuda")
    t._cidx = cidx
    t._pidx = pidx
    t._vals = vals
    return t


def _moved(t, kind):
    """``t`` with its arrays on the CPU (NumPy) or the GPU (CuPy)."""
    if kind == "cuda":
        import cupy
        mv = cupy.asarray
    else:
        mv = (lambda a: a if type(a) is np.ndarray else a.get())
    if t._data.layout is sparse_coo:
        return _coo(mv(t._idx), mv(t._vals), t._data.shape, t._coalesced)
    return _compressed(t._data.layout, mv(t._cidx), mv(t._pidx), mv(t._vals), t._data.shape)


def _like(t, vals, copy_index=False):
    """``t``'s indices (copied or shared) with new values, no history."""
    if t._data.layout is sparse_coo:
        idx = t._idx.copy() if copy_index else t._idx
        return _coo(idx, vals, t._data.shape, t._coalesced)
    c, p = (t._cidx.copy(), t._pidx.copy()) if copy_index else (t._cidx, t._pidx)
    return _compressed(t._data.layout, c, p, vals, t._data.shape)


def _finish_sparse(node, t):
    if node is not None:
        node._out_meta = ((t._data.shape, t._data.dtype),)
        t._grad_fn = node
        t._requires_grad = True
    return t


def _values_of(values, dtype):
    """Values as an array (a list of Python floats gets the default dtype, as torch.tensor)."""
    if isinstance(values, Tensor):
        v = values._data
    else:
        from .. import _creation
        v = _creation.tensor(values)._data
    if dtype is not None:
        v = v.astype(dtype.np, copy=False)
    return v


def _indices_of(indices):
    if isinstance(indices, Tensor):
        a = indices._data
    else:
        a = np.asarray(indices)
    return np.ascontiguousarray(a, dtype=np.int64) if type(a) is np.ndarray else a.astype(np.int64)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A COO sparse tensor from (sparse_dim, nnz) ``indices`` and (nnz, *dense) ``values``."""
    idx = _indices_of(indices)
    v = _values_of(values, dtype)
    if idx.ndim != 2:
        if idx.ndim == 1 and size is not None:
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                               f"sparse_dim = {idx.shape[0]}, dense_dim = {v.ndim - 1}")
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    sd, nnz = idx.shape
    if v.ndim == 0:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from "
                           "values: 1")
    if v.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from values: "
                           f"{v.shape[0]}")
    if size is None:
        mx = (idx.max(axis=1) + 1).tolist() if nnz else [0] * sd
        shape = tuple(int(m) for m in mx) + tuple(v.shape[1:])
    else:
        shape = tuple(int(s) for s in size)
        if len(shape) != sd + v.ndim - 1:
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(shape)}, "
                               f"sparse_dim = {sd}, dense_dim = {v.ndim - 1}")
        if (check_invariants if check_invariants is not None else CHECK_INVARIANTS[0]) and nnz:
            mn, mx = idx.min(axis=1), idx.max(axis=1)
            for d in range(sd):
                if mn[d] < 0:
                    raise RuntimeError(f"found negative index {int(mn[d])} for dim {d}")
                if mx[d] >= shape[d]:
                    raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {shape[d]} but "
                                       f"found index {int(mx[d])}")
        if tuple(v.shape[1:]) != shape[sd:]:
            raise RuntimeError(f"values has incorrect size, expected {list((nnz,) + shape[sd:])}, got "
                               f"{list(v.shape)}")
    if requires_grad and v.dtype.kind not in "fcV":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    vals_t = values if isinstance(values, Tensor) and values._requires_grad and _state.grad else None
    t = _coo(idx, v, shape, bool(is_coalesced))
    if vals_t is not None:
        node = node_for(SparseCooTensorWithDimsAndTensorsBackward0, (vals_t,))
        node.idx = idx
        node.shape = shape
        _finish_sparse(node, t)
    elif requires_grad:
        t._requires_grad = True
    return t


def _compressed_tensor(layout, cidx, pidx, values, size, dtype, requires_grad, fn):
    c, p = _indices_of(cidx), _indices_of(pidx)
    v = _values_of(values, dtype)
    if size is None:
        ncomp = c.shape[0] - 1
        nplain = int(p.max()) + 1 if p.size else 0
        size = (ncomp, nplain) if layout is sparse_csr else (nplain, ncomp)
    shape = tuple(int(s) for s in size)
    if len(shape) != 2:
        raise RuntimeError(f"{fn}: only 2-D (batch-free, no dense dimensions) tensors are supported in retrograd")
    ncomp = shape[0] if layout is sparse_csr else shape[1]
    cname, pname = ("crow_indices", "col_indices") if layout is sparse_csr else ("ccol_indices", "row_indices")
    if c.shape[0] != ncomp + 1:
        raise RuntimeError(f"{cname}.size(-1) must be equal to size[-{2 if layout is sparse_csr else 1}] + 1 (that is "
                           f"{ncomp + 1}), but got: {c.shape[0]}")
    if p.shape[0] != v.shape[0]:
        raise RuntimeError(f"{pname} and values must have equal sizes, but got {pname}.size(-1)={p.shape[0]}, "
                           f"values.size(-1)={v.shape[0]}")
    t = _compressed(layout, c, p, v, shape)
    if isinstance(values, Tensor) and values._requires_grad and _state.grad:
        node = node_for(SparseCompressedTensorBackward0, (values,))
        node.pos, node.shape = _compressed_positions(t), shape
        _finish_sparse(node, t)
    elif requires_grad:
        t._requires_grad = True
    return t


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, layout=None, device=None,
                      pin_memory=False, requires_grad=False, check_invariants=None):
    """A CSR sparse matrix from compressed row indices, column indices and values."""
    return _compressed_tensor(sparse_csr, crow_indices, col_indices, values, size, dtype, requires_grad,
                              "sparse_csr_tensor")


def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, layout=None, device=None,
                      pin_memory=False, requires_grad=False, check_invariants=None):
    """A CSC sparse matrix from compressed column indices, row indices and values."""
    return _compressed_tensor(sparse_csc, ccol_indices, row_indices, values, size, dtype, requires_grad,
                              "sparse_csc_tensor")


def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *, dtype=None, layout=None,
                             device=None, pin_memory=False, requires_grad=False, check_invariants=None):
    """``torch.sparse_compressed_tensor`` for the CSR and CSC layouts."""
    if layout is None:
        raise TypeError("sparse_compressed_tensor() missing required argument 'layout'")
    return _compressed_tensor(layout, compressed_indices, plain_indices, values, size, dtype, requires_grad,
                              "sparse_compressed_tensor")


# --- array kernels ---------------------------------------------------------------------

def _linear(idx, shape):
    """Row-major linear positions of COO indices over the sparse dims."""
    sd = idx.shape[0]
    if sd == 0:
        return np.zeros(idx.shape[1], np.int64)
    return np.ravel_multi_index(tuple(idx), tuple(shape[:sd]))


def _coalesce_arrays(idx, vals, shape):
    """Sorted unique indices and the values summed per index."""
    xp = _xp(vals)
    nnz = idx.shape[1]
    if nnz == 0:
        return idx, vals
    lin = _linear(idx, shape)
    order = xp.argsort(lin, kind="stable")
    ls = lin[order]
    starts = xp.concatenate([xp.array([0]), xp.nonzero(ls[1:] != ls[:-1])[0] + 1])
    vs = vals[order]
    if starts.shape[0] == nnz:
        return idx[:, order], vs
    summed = xp.add.reduceat(vs, starts, axis=0) if vs.dtype != np.bool_ else xp.logical_or.reduceat(vs, starts, axis=0)
    return idx[:, order[starts]], summed.astype(vals.dtype, copy=False)


def _dense_array(t):
    lay = t._data.layout
    v = t._vals
    xp = _xp(v)
    if lay is sparse_coo:
        out = xp.zeros(t._data.shape, v.dtype)
        if v.shape[0]:
            key = tuple(t._idx)
            if t._coalesced:
                out[key] = v
            else:
                xp.add.at(out, key, v)
        return out
    return _scipy(t).toarray().astype(v.dtype, copy=False)


def _scipy(t):
    """The scipy CSR (or CSC) matrix of a 2-D sparse tensor, cached on it."""
    m = t._mat
    if m is None:
        sp = _spmod(t._vals)
        shp = t._data.shape
        if t._data.layout is sparse_coo:
            if t._idx.shape[0] != 2 or t._vals.ndim != 1:
                raise RuntimeError("only 2-D sparse tensors without dense dimensions can be multiplied")
            m = sp.csr_matrix((t._vals, (t._idx[0], t._idx[1])), shape=shp)
        elif t._data.layout is sparse_csr:
            m = sp.csr_matrix((t._vals, t._pidx, t._cidx), shape=shp)
        else:
            m = sp.csc_matrix((t._vals, t._pidx, t._cidx), shape=shp)
        t._mat = m
    return m


def _gather(g, idx, shape):
    """The gradient's entries at COO positions ``idx`` (g dense or sparse): one row per nnz."""
    if g._sparse:
        g = g.to_sparse() if g._data.layout is not sparse_coo else g
        gi, gv = _coalesce_arrays(g._idx, g._vals, shape) if not g._coalesced else (g._idx, g._vals)
        xp = _xp(gv)
        lin_g = _linear(gi, shape)
        lin = _linear(idx, shape)
        pos = xp.searchsorted(lin_g, lin)
        pos = xp.minimum(pos, max(lin_g.shape[0] - 1, 0))
        hit = lin_g[pos] == lin if lin_g.shape[0] else xp.zeros(lin.shape, bool)
        out = xp.zeros((idx.shape[1],) + tuple(shape[idx.shape[0]:]), gv.dtype)
        if lin_g.shape[0]:
            out[hit] = gv[pos[hit]]
        return out
    return g._data[tuple(idx)]


def _masked_like(g, like):
    """``g.sparse_mask(like)``: g's entries at ``like``'s (coalesced) positions, as a COO tensor."""
    if like._data.layout is sparse_coo:
        idx = like._idx if like._coalesced else _coalesce_arrays(like._idx, like._vals, like._data.shape)[0]
    else:
        idx = _compressed_coo_indices(like)
    return _coo(idx, _gather(g, idx, like._data.shape), like._data.shape, True)


def _compressed_positions(t):
    """(row, col) of each stored value of a CSR/CSC tensor, in the values' order."""
    xp = _xp(t._vals)
    counts = xp.diff(t._cidx)
    comp = xp.repeat(xp.arange(counts.shape[0]), counts)
    if t._data.layout is sparse_csr:
        return xp.stack([comp, t._pidx])
    return xp.stack([t._pidx, comp])


def _compressed_coo_indices(t):
    """The positions of a CSR/CSC tensor's values in row-major (coalesced COO) order."""
    idx = _compressed_positions(t)
    if t._data.layout is sparse_csr:
        return idx
    return idx[:, _xp(idx).lexsort((idx[1], idx[0]))]


def _compressed_to_coo(t):
    xp = _xp(t._vals)
    counts = xp.diff(t._cidx)
    comp = xp.repeat(xp.arange(counts.shape[0]), counts)
    if t._data.layout is sparse_csr:
        idx, v = xp.stack([comp, t._pidx]), t._vals
    else:
        idx = xp.stack([t._pidx, comp])
        order = xp.lexsort((idx[1], idx[0]))
        idx, v = idx[:, order], t._vals[order]
    r = _coo(idx, v, t._data.shape, True)
    node = node_for(ToSparseBackward1, (t,))
    if node is not None:
        node.like = t
    return _finish_sparse(node, r)


def _to_compressed(t, layout):
    if t._data.ndim != 2:
        raise RuntimeError(f"coo_to_sparse_{'csr' if layout is sparse_csr else 'csc'}: conversion from Sparse to "
                           f"{'SparseCsr' if layout is sparse_csr else 'SparseCsc'} for input tensors with "
                           "sparse_dim()!=2 is not supported")
    if t._data.layout is not sparse_coo:
        t2 = _compressed_to_coo(t.detach())
        idx, v = t2._idx, t2._vals
    else:
        idx, v = (t._idx, t._vals) if t._coalesced else _coalesce_arrays(t._idx, t._vals, t._data.shape)
    xp = _xp(v)
    n, m = t._data.shape
    if layout is sparse_csr:
        comp, plain, ncomp = idx[0], idx[1], n
    else:
        order = xp.lexsort((idx[0], idx[1]))
        comp, plain, ncomp, v = idx[1][order], idx[0][order], m, v[order]
    cidx = xp.concatenate([xp.zeros(1, np.int64), xp.cumsum(xp.bincount(comp, minlength=ncomp))]).astype(np.int64)
    r = _compressed(layout, cidx, xp.ascontiguousarray(plain), v, t._data.shape)
    node = node_for(ToSparseCsrBackward0 if layout is sparse_csr else ToSparseCscBackward0, (t,))
    if node is not None:
        node.like = t
    return _finish_sparse(node, r)


def dense_to_sparse(self, *args, layout=None, blocksize=None, dense_dim=None):
    """``Tensor.to_sparse(sparse_dim=None, layout=...)`` of a dense tensor: a coalesced COO tensor."""
    sparse_dim = None
    if args:
        if isinstance(args[0], int):
            sparse_dim = args[0]
        else:
            layout = args[0]
    if layout is sparse_csr:
        return dense_to_sparse_csr(self)
    if layout is sparse_csc:
        return dense_to_sparse_csc(self)
    if layout not in (None, sparse_coo):
        raise RuntimeError(f"to_sparse: conversion to {layout} is not supported")
    d = self._data
    xp = _xp(d)
    sd = d.ndim if sparse_dim is None else sparse_dim
    if dense_dim is not None:
        sd = d.ndim - dense_dim
    if sd > d.ndim:
        raise RuntimeError(f"sparse_dim argument must be in [0,{d.ndim}] range, but {sd} is given")
    if sd == d.ndim:
        idx = xp.stack(xp.nonzero(d)).astype(np.int64) if d.ndim else xp.zeros((0, 1 if d != 0 else 0), np.int64)
        vals = d[tuple(idx)] if d.ndim else d.reshape(-1)[: idx.shape[1]]
    else:
        flat = d.reshape(d.shape[:sd] + (-1,))
        nz = (flat != 0).any(axis=-1)
        idx = xp.stack(xp.nonzero(nz)).astype(np.int64) if sd else xp.zeros((0, 1), np.int64)
        vals = d[tuple(idx)] if sd else d[None]
    t = _coo(idx.reshape(sd, -1), xp.ascontiguousarray(vals), d.shape, True)
    # PyTorch's overloads: to_sparse(sparse_dim) is ToSparseBackward0, to_sparse(layout=...) the other
    node = node_for(ToSparseBackward0 if sparse_dim is not None else ToSparseBackward1, (self,))
    if node is not None:
        node.like = None
    return _finish_sparse(node, t)


def dense_to_sparse_csr(self, dense_dim=None):
    """``Tensor.to_sparse_csr()`` of a dense 2-D tensor."""
    if self._data.ndim != 2:
        raise RuntimeError("to_sparse_csr: only 2-D tensors are supported in retrograd")
    coo = dense_to_sparse(self.detach())
    r = _to_compressed(coo, sparse_csr)
    return _finish_sparse(node_for(ToSparseCsrBackward0, (self,)), r)


def dense_to_sparse_csc(self, dense_dim=None):
    """``Tensor.to_sparse_csc()`` of a dense 2-D tensor."""
    if self._data.ndim != 2:
        raise RuntimeError("to_sparse_csc: only 2-D tensors are supported in retrograd")
    coo = dense_to_sparse(self.detach())
    r = _to_compressed(coo, sparse_csc)
    return _finish_sparse(node_for(ToSparseCscBackward0, (self,)), r)


def sparse_mask(dense, mask):
    """``dense.sparse_mask(mask)``: dense's entries at mask's positions, in mask's layout."""
    if not mask._sparse:
        raise RuntimeError(f"sparse_mask(): expected mask to be a sparse tensor, got {_lname(mask)}")
    if tuple(dense.shape) != mask._data.shape:
        raise RuntimeError("sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(dense.shape)} but mask has size {list(mask._data.shape)}")
    if mask._data.layout is not sparse_coo:
        return _to_compressed(_masked_like(dense, mask), mask._data.layout)
    r = _masked_like(dense, mask) if mask._coalesced else _coo(mask._idx, _gather(dense, mask._idx, mask._data.shape),
                                                                mask._data.shape, False)
    node = node_for(SparseMaskBackward0, (dense,)) if not dense._sparse else None
    if node is not None:
        node.like = r
    return _finish_sparse(node, r)


# --- autograd nodes ----------------------------------------------------------------------

class SparseCooTensorWithDimsAndTensorsBackward0(OpNode):
    def backward(self, g):
        return finish(None, _gather(g, self.idx, self.shape))


class SparseCompressedTensorBackward0(OpNode):
    def backward(self, g):
        return finish(None, _gather(g, self.pos, self.shape))


class ValuesBackward0(OpNode):
    def backward(self, g):
        r = _like(self.like, g._data)
        r._shared = True
        return r


class ToDenseBackward0(OpNode):
    def backward(self, g):
        like = self.like
        if like._data.layout is sparse_coo:
            return _masked_like(g, like)
        return _to_compressed(_masked_like(g, like), like._data.layout).detach()


class ToSparseBackward0(OpNode):
    def backward(self, g):
        if self.like is not None and g._sparse:
            return _to_compressed(g.coalesce() if g._data.layout is sparse_coo else g,
                                  self.like._data.layout).detach()
        return g.to_dense() if g._sparse else g


class ToSparseBackward1(ToSparseBackward0):
    pass


class ToSparseCsrBackward0(ToSparseBackward0):
    def backward(self, g):
        like = getattr(self, "like", None)
        if like is not None and like._data.layout is sparse_coo:
            return _compressed_to_coo(g.detach()) if g._sparse else _masked_like(g, like)
        return g.to_dense() if g._sparse else g


class ToSparseCscBackward0(ToSparseCsrBackward0):
    pass


class CoalesceBackward0(OpNode):
    def backward(self, g):
        return g


class CloneBackward0(OpNode):
    def backward(self, g):
        return g


class ToCopyBackward0(OpNode):
    def backward(self, g):
        return g.to(self.dtype)


class SparseMaskBackward0(OpNode):
    def backward(self, g):
        return g.to_dense() if g._sparse else g


class MulBackward0(OpNode):
    def backward(self, g):
        return g * self.other


class DivBackward0(OpNode):
    def backward(self, g):
        return g / self.other


class NegBackward0(OpNode):
    def backward(self, g):
        return -g


class AddBackward0(OpNode):
    def backward(self, g):
        a = self.alpha
        return g, (g if a == 1 else g * a)


class SubBackward0(AddBackward0):
    pass


class TBackward0(OpNode):
    def backward(self, g):
        return g.t()


# --- arithmetic ----------------------------------------------------------------------------

def _is_scalar(x):
    return isinstance(x, (int, float, bool, complex)) or (isinstance(x, Tensor) and not x._sparse
                                                            and x._data.ndim == 0)


def _scalar_of(x):
    return x.item() if isinstance(x, Tensor) else x


def _result_dtype(a, b):
    from ..ops._base import result_np_dtype
    return result_np_dtype(a, b)


def add(input, other, *, alpha=1):
    """Sparse + sparse (sparse), dense + sparse (dense); PyTorch refuses sparse + dense."""
    if not isinstance(input, Tensor):   # number + sparse: PyTorch adds the number to the sparse tensor
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if not input._sparse:
        return _dense_plus_sparse(input, other, alpha)
    if not (isinstance(other, Tensor) and other._sparse):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if input._data.shape != other._data.shape:
        raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but {list(input._data.shape)} != "
                           f"{list(other._data.shape)}")
    if input._data.layout is not sparse_coo or other._data.layout is not sparse_coo:
        if input._data.layout is other._data.layout:
            r = _to_compressed(add(input.detach().to_sparse(), other.detach().to_sparse(), alpha=alpha),
                               input._data.layout).detach()
            node = node_for(SubBackward0 if alpha == -1 else AddBackward0, (input, other))
            if node is not None:
                node.alpha = alpha
            return _finish_sparse(node, r)
        raise not_implemented("add.out", input._data.layout)
    npdt = _result_dtype(input, other)
    ov = other._vals if alpha == 1 else other._vals * alpha
    if input is other and alpha == 1:
        r = _coo(input._idx, (input._vals * 2).astype(npdt, copy=False), input._data.shape, input._coalesced)
        r._shared = True
    else:
        r = _merge_add(input, other, ov, npdt)
    node = node_for(AddBackward0 if alpha == 1 else SubBackward0 if alpha == -1 else AddBackward0, (input, other))
    if node is not None:
        node.alpha = alpha
    return _finish_sparse(node, r)


def _merge_add(t, s, sv, npdt):
    """PyTorch's CPU sparse + sparse: one merge pass over both index lists in their stored
    order, summing where the current entries are equal. On coalesced operands this is the
    coalesced sum; on uncoalesced ones it reproduces PyTorch's result entry for entry."""
    shape = t._data.shape
    tv, sv = t._vals.astype(npdt, copy=False), sv.astype(npdt, copy=False)
    xp = _xp(tv)
    if t._coalesced and s._coalesced or t._idx.shape[1] == 0 or s._idx.shape[1] == 0:
        idx = xp.concatenate([t._idx, s._idx], axis=1)
        vals = xp.concatenate([tv, sv])
        if t._coalesced and s._coalesced:
            idx, vals = _coalesce_arrays(idx, vals, shape)
        return _coo(idx, vals, shape, t._coalesced and s._coalesced)
    lt, ls = _linear(t._idx, shape).tolist(), _linear(s._idx, shape).tolist()
    nt, ns = len(lt), len(ls)
    src = []          # per output entry: (index into t or -1, index into s or -1)
    i = j = 0
    while i < nt or j < ns:
        if i >= nt:
            cmp = -1
        elif j >= ns:
            cmp = 1
        else:
            cmp = 1 if lt[i] < ls[j] else -1 if lt[i] > ls[j] else 0
        a = b = -1
        if cmp >= 0:
            a = i
            i += 1
        if cmp <= 0:
            b = j
            j += 1
        src.append((a, b))
    src = np.asarray(src, dtype=np.int64).reshape(-1, 2)
    ta, sb = src[:, 0], src[:, 1]
    idx = xp.where(ta >= 0, t._idx[:, np.maximum(ta, 0)], s._idx[:, np.maximum(sb, 0)])
    vals = xp.zeros((src.shape[0],) + tuple(tv.shape[1:]), npdt)
    vals[ta >= 0] += tv[ta[ta >= 0]]
    vals[sb >= 0] += sv[sb[sb >= 0]]
    return _coo(idx, vals, shape, False)


def _dense_plus_sparse(dense, sp, alpha):
    if tuple(dense._data.shape) != sp._data.shape:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                           f"{list(dense._data.shape)} while other has size {list(sp._data.shape)} (FYI: "
                           "dense-sparse addition does not currently support broadcasting)")
    npdt = _result_dtype(dense, sp)
    out = dense._data.astype(npdt, copy=True)
    v = sp._vals.astype(npdt, copy=False)
    if alpha != 1:
        v = v * alpha
    if sp._data.layout is sparse_coo:
        _xp(out).add.at(out, tuple(sp._idx), v)
    else:
        out += _scipy(sp).toarray()
    node = node_for(AddBackward0 if alpha != -1 else SubBackward0, (dense, sp))
    if node is not None:
        node.alpha = alpha
    return finish(node, out)


def mul(input, other):
    """Sparse times a scalar, or times a dense / sparse tensor of the same shape (sparse)."""
    if _is_scalar(other):
        s = _scalar_of(other)
        npdt = _result_dtype(input, other)
        r = _like(input, (input._vals * s).astype(npdt, copy=False))
        node = node_for(MulBackward0, (input,))
        if node is not None:
            node.other = s
        return _finish_sparse(node, r)
    if isinstance(other, Tensor) and tuple(other.shape) == input._data.shape and input._data.layout is sparse_coo:
        if other._sparse:
            other = other.to_dense()
        c = input
        npdt = _result_dtype(input, other)
        r = _coo(c._idx, (c._vals * _gather(other.detach(), c._idx, c._data.shape)).astype(npdt, copy=False),
                 c._data.shape, c._coalesced)
        if _state.grad and (input.requires_grad or other.requires_grad):
            raise RuntimeError("the gradient of sparse * tensor is not supported in retrograd")
        return r
    raise not_implemented("mul.Tensor", input._data.layout)


def _scalar_tensor(x, like):
    from .._creation import tensor
    return tensor(x)


def div(input, other):
    if not _is_scalar(other):
        raise RuntimeError("Sparse division requires a scalar or zero-dim dense tensor divisor (got shape "
                           f"{list(other.shape)} for divisor)")
    s = _scalar_of(other)
    v = input._vals / s
    if input._vals.dtype.kind in "fcV":
        v = v.astype(input._vals.dtype, copy=False)
    r = _like(input, v)
    node = node_for(DivBackward0, (input,))
    if node is not None:
        node.other = s
    return _finish_sparse(node, r)


class PowBackward0(OpNode):
    def backward(self, g):
        x, p = self.x, self.p
        gv = _gather(g, x._idx, x._data.shape) * (p * x._vals ** (p - 1))
        return _coo(x._idx, gv.astype(x._vals.dtype, copy=False), x._data.shape, x._coalesced)


def pow(input, exponent):
    """A sparse tensor to a positive scalar power (absent entries stay zero)."""
    if input._data.layout is not sparse_coo or not _is_scalar(exponent) or _scalar_of(exponent) <= 0:
        raise not_implemented("pow.Tensor_Scalar", input._data.layout)
    p = _scalar_of(exponent)
    input = input.coalesce()    # not linear: duplicates are summed first
    v = input._vals ** p
    if input._vals.dtype.kind in "fcV":
        v = v.astype(input._vals.dtype, copy=False)
    r = _like(input, v)
    node = node_for(PowBackward0, (input,))
    if node is not None:
        node.x, node.p = input.detach(), p
    return _finish_sparse(node, r)


def neg(input):
    r = _like(input, -input._vals)
    return _finish_sparse(node_for(NegBackward0, (input,)), r)


def transpose(input):
    """``t()`` of a 2-D sparse COO tensor (indices swapped, no longer coalesced)."""
    if input._data.layout is not sparse_coo:
        raise not_implemented("t", input._data.layout)
    if input.sparse_dim() != 2 and input._data.ndim == 2 or input.sparse_dim() < 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got "
                           f"{input.sparse_dim()} sparse and {input.dense_dim()} dense dimensions")
    shp = input._data.shape
    r = _coo(input._idx[::-1].copy(), input._vals, (shp[1], shp[0]) + shp[2:], False)
    return _finish_sparse(node_for(TBackward0, (input,)), r)


# the products, sums and printing use the class above
from ._ops import mm, matmul, sum_all, sparse_sum, softmax, log_softmax, sparse_repr  # noqa: E402


def accumulate(var, g, create_graph):
    """AccumulateGrad with a sparse gradient or a sparse ``.grad``, as PyTorch's: a first
    sparse gradient is kept (copied), sparse + sparse stays sparse (indices concatenated,
    uncoalesced), a dense ``.grad`` takes a sparse gradient in place, and a sparse
    ``.grad`` plus a dense gradient becomes dense."""
    old = var._grad
    if old is None:
        if create_graph:
            var._grad = g
        elif g._data.layout is sparse_coo:
            # PyTorch re-wraps a fresh COO gradient's indices and values (_sparse_coo_tensor_unsafe,
            # which forgets the coalesced flag) and clones one whose parts are shared
            var._grad = _coo(g._idx.copy(), g._vals.copy(), g._data.shape, g._coalesced and g._shared)
        else:
            var._grad = _like(g, g._vals.copy(), copy_index=True)
        return
    if create_graph:
        var._grad = old + g
        return
    if old._sparse and g._sparse:
        if old._data.layout is sparse_coo and g._data.layout is sparse_coo:
            _concat_into(old, g)
        else:
            var._grad = old.detach() + g.detach()
    elif not old._sparse:
        d = old._data
        if g._data.layout is sparse_coo:
            _xp(d).add.at(d, tuple(g._idx), g._vals.astype(d.dtype, copy=False))
        else:
            d += _dense_array(g).astype(d.dtype, copy=False)
        old._bump_version()
    else:
        var._grad = Tensor._make(g._data + _dense_array(old))


def _concat_into(a, b):
    """``a += b`` as PyTorch's AccumulateGrad adds a sparse gradient into a sparse ``.grad``:
    in place, indices and values concatenated (uncoalesced)."""
    xp = _xp(a._vals)
    a._idx = xp.concatenate([a._idx, b._idx], axis=1)
    a._vals = xp.concatenate([a._vals, b._vals.astype(a._vals.dtype)])
    a._coalesced = False
    a._mat = a._matT = None
    a._bump_version()


def embedding_sparse_backward(g, idx, num, padding_idx, freq):
    """The weight gradient of ``embedding(sparse=True)``: one row per lookup (uncoalesced),
    padding lookups left out."""
    if freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
    d = g._data
    rows = d.reshape(idx.shape[0], d.shape[-1])
    if padding_idx is not None and padding_idx >= 0:
        keep = idx != padding_idx
        idx, rows = idx[keep], rows[keep]
    return _coo(idx.reshape(1, -1).astype(np.int64), np.ascontiguousarray(rows), (num, d.shape[-1]), False)
