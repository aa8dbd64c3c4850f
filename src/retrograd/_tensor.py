"""Tensor: an array plus its autograd metadata.

Operators and methods are bound onto Tensor by ``_tensor_methods`` (the ops import
Tensor, so Tensor cannot import them). Attributes have class-level defaults so that
making a tensor sets only what differs: the hot path of every op.
"""
import warnings
import weakref

import numpy as np

from . import _dtype as D
from ._device import CPU, device_of_array
from ._layout import strided
from .autograd.graph import AccumulateGrad, RemovableHandle

__all__ = ["Tensor", "Size"]

_new = object.__new__
_ndarray = np.ndarray
_FROM_NP = D._FROM_NP

NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information.")


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``torch.Size([2, 3])``."""
    __slots__ = ()

    def __repr__(self):
        return f"torch.Size([{', '.join(str(s) for s in self)}])"

    __str__ = __repr__

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))


class _Version(int):
    """An int, indexable as ``v[0]`` too (the shared counter's old spelling)."""
    __slots__ = ()

    def __getitem__(self, i):
        if i != 0:
            raise IndexError("list index out of range")
        return int(self)


class Tensor:
    """A multi-dimensional array that can record the operations made on it."""
    # Class-level defaults: a fresh tensor only stores what differs from these.
    _requires_grad = False
    _grad = None
    _grad_fn = None
    _output_nr = 0
    _vc = None               # version counter: a one-item list shared with views; None means 0
    _base = None             # the tensor this one is a view of
    _view_fn = None          # rebuilds this view from its base (for in-place on views)
    _view_ver = 0            # version of the shared counter when this view's grad_fn was made
    _nograd_view = False     # a view made under no_grad (or a view of one): PyTorch's NO_GRAD_MODE
    _multi_view = False      # a view made by an op with several view outputs (unbind, split, chunk)
                             # in grad mode, or a view of one: PyTorch's MULTI_OUTPUT_NODE
    _retains_grad = False
    _backward_hooks = None   # hooks of a leaf (non-leaf hooks live on grad_fn)
    _post_acc_hooks = None
    _grad_acc = None         # weak reference to this leaf's AccumulateGrad
    _leaf_ref = None         # on a saved leaf's stand-in: weak reference to the leaf
    _inference = False
    _is_param = False
    _sparse = False          # a sparse layout (retrograd.sparse.SparseTensor): ops with sparse paths test it
    __array_priority__ = 1000  # ndarray <op> Tensor defers to Tensor's reflected op

    def __new__(cls, *args, **kwargs):
        # The legacy constructor: Tensor(2, 3) is an uninitialised float tensor of that
        # shape; Tensor([1, 2]) copies data as the default float dtype.
        from ._creation import _legacy_new
        return _legacy_new(cls, *args, **kwargs)

    def __init__(self, *args, **kwargs):
        pass

    # --- construction used by every op ----------------------------------------------
    @staticmethod
    def _make(data, requires_grad=False):
        t = _new(Tensor)
        t._data = data
        if requires_grad:
            t._requires_grad = True
        return t

    # --- basic metadata ---------------------------------------------------------------
    @property
    def data(self):
        """A tensor sharing this one's storage, detached from the graph."""
        t = Tensor._make(self._data)
        t._vc = self._shared_version()
        return t

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError("Variable data has to be a tensor, but got " + type(value).__name__)
        if value._data.shape != self._data.shape and self._requires_grad and self._grad_fn is not None:
            raise RuntimeError("data set to a tensor that requires gradients must be a leaf")
        self._data = value._data

    @property
    def dtype(self):
        return _FROM_NP[self._data.dtype]

    @property
    def device(self):
        d = self._data
        if type(d) is _ndarray:
            return CPU
        return device_of_array(d)

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    @property
    def is_cpu(self):
        return self.device.type == "cpu"

    # Device and layout kinds retrograd never has (device checks in programs read them).
    is_xpu = is_mps = is_ipu = is_maia = is_mtia = is_vulkan = is_xla = is_mkldnn = is_nested = \
        property(lambda self: False)

    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        """The shape, or its length along ``dim``."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[self._wrap_dim(dim)]

    @property
    def ndim(self):
        return self._data.ndim

    def dim(self):
        return self._data.ndim

    ndimension = dim

    def numel(self):
        return self._data.size

    nelement = numel

    def element_size(self):
        return self._data.itemsize

    @property
    def itemsize(self):
        return self._data.itemsize

    @property
    def nbytes(self):
        return self._data.nbytes

    def is_floating_point(self):
        return self._data.dtype.kind in "fV"

    def is_complex(self):
        return self._data.dtype.kind == "c"

    @property
    def is_sparse(self):
        return False

    @property
    def is_quantized(self):
        return False

    @property
    def is_meta(self):
        return type(self._data).__name__ == "MetaArray"

    @property
    def layout(self):
        return strided

    def stride(self, dim=None):
        """Strides in elements, as PyTorch reports them."""
        st = tuple(s // self._data.itemsize for s in self._data.strides)
        return st if dim is None else st[self._wrap_dim(dim)]

    def storage_offset(self):
        base = self._data
        if type(base) is not _ndarray and hasattr(base, "data") and hasattr(base.data, "ptr"):  # device memory
            while base.base is not None and type(base.base) is type(base):
                base = base.base
            return (self._data.data.ptr - base.data.ptr) // self._data.itemsize
        while isinstance(base.base, _ndarray):
            base = base.base
        if base is self._data:
            return 0
        return (self._data.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // self._data.itemsize

    def data_ptr(self):
        return self._data.__array_interface__["data"][0] if type(self._data) is _ndarray else self._data.data.ptr

    def is_contiguous(self, memory_format=None):
        return bool(self._data.flags.c_contiguous)

    def _wrap_dim(self, dim, ndim=None):
        n = self._data.ndim if ndim is None else ndim
        lo, hi = (-1, 0) if n == 0 else (-n, n - 1)
        if not lo <= dim <= hi:
            raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
        return dim % n if n else 0

    # --- autograd metadata ------------------------------------------------------------
    @property
    def grad_fn(self):
        if self._base is not None:
            self._refresh_view()
        return self._grad_fn

    @property
    def is_leaf(self):
        if self._base is not None:
            self._refresh_view()
        return self._grad_fn is None

    def _is_view(self):
        """Whether this tensor is a (differentiable) view of another: its ``_base``."""
        return self._base is not None

    def _refresh_view(self):
        """PyTorch's lazy view rule: a view whose base (or a sibling view) was written in
        place since its grad_fn was set gets a fresh grad_fn, an AsStridedBackward0 over
        the base's current history. Nothing to do while neither the view nor its base
        takes part in autograd (the version seen is then left as it was, so a base that
        starts requiring grad later is still noticed)."""
        if self._grad_fn is None and not self._base._requires_grad:
            return
        v = self._vc[0]
        if v == self._view_ver:
            return
        from .ops.view_inplace import regenerate_view
        regenerate_view(self, indirect=True)

    @property
    def output_nr(self):
        return self._output_nr

    @property
    def requires_grad(self):
        if self._requires_grad:
            return True
        b = self._base   # a view requires grad when its base does (even one made under no_grad)
        return b is not None and b._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        """Set whether autograd records operations on this (leaf) tensor."""
        requires_grad = bool(requires_grad)
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use "
                    "a computed variable in a subgraph that doesn't require differentiation use "
                    "var_no_grad = var.detach().")
            return self
        if requires_grad and self._data.dtype.kind not in "fcV":
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if requires_grad and self._inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        self._requires_grad = requires_grad
        return self

    @property
    def grad(self):
        g = self._grad
        if g is None and self._grad_fn is not None and not self._retains_grad:
            warnings.warn(NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}")
            if value._data.dtype != self._data.dtype:
                from ._dtype import _SCALAR_TYPE_NAMES, _TYPEMETA_NAMES
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_TYPEMETA_NAMES[value.dtype.name]}' to a tensor "
                    f"with grad_dtype '{_SCALAR_TYPE_NAMES[self.dtype.name]}'. The gradient must match the tensor's "
                    "grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with "
                    "a specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes "
                    "of a tensor and its gradient may break downstream systems that assume they match.")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"attempting to assign a gradient of size '{list(value._data.shape)}' to a tensor "
                                   f"of size '{list(self._data.shape)}'. Please ensure that the gradient and the "
                                   "tensor are the same size")
            if value.device != self.device:
                raise RuntimeError("assigned grad has data located on a different device")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def retains_grad(self):
        return self._retains_grad

    def retain_grad(self):
        """Keep this non-leaf tensor's gradient in ``.grad`` during backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        fn = self.grad_fn
        fn._register_retain_grad(self._output_nr, self)

    def _grad_accumulator(self):
        """The AccumulateGrad node of this leaf (one per leaf while a graph holds it)."""
        ref = self._grad_acc
        acc = ref() if ref is not None else None
        if acc is None:
            leaf = self._leaf_ref() if self._leaf_ref is not None else None
            if leaf is not None:    # a saved leaf's stand-in: the leaf's own accumulator
                acc = leaf._grad_accumulator()
                self._grad_acc = leaf._grad_acc
                return acc
            acc = AccumulateGrad(self)
            self._grad_acc = weakref.ref(acc)
        return acc

    def _saved_proxy(self):
        """What a node saves in place of this leaf: the same data, version counter and
        AccumulateGrad, but not the leaf itself. A saved leaf would close the cycle
        leaf -> .grad -> grad_fn -> ... -> saved leaf once ``create_graph=True`` gives
        ``.grad`` a history (PyTorch issue 4661); the proxy keeps the graph a tree."""
        p = self.__dict__.get("_proxy")
        v = self._shared_version()
        if p is None or p._data is not self._data or p._vc is not v:
            # (a new stand-in when .data or the version counter was replaced: nodes that
            # saved the old one keep what they saved)
            p = _new(Tensor)
            p._data = self._data
            p._vc = v
            p._requires_grad = True
            self._grad_accumulator()
            p._grad_acc = self._grad_acc
            p._leaf_ref = weakref.ref(self)
            self._proxy = p
        return p

    def _edge(self):
        if self._base is not None:
            self._refresh_view()
        if not self._requires_grad:
            return (None, 0)
        fn = self._grad_fn
        if fn is not None:
            return (fn, self._output_nr)
        return (self._grad_accumulator(), 0)

    def _shared_version(self):
        v = self._vc
        if v is None:
            v = self._vc = [0]
        return v

    @property
    def _version(self):
        """The version counter's value (PyTorch's ``Tensor._version``): in-place writes to
        this tensor or any view of it increase it."""
        if self._inference:
            raise RuntimeError("Inference tensors do not track version counter.")
        v = self._vc
        return _Version(0 if v is None else v[0])

    @_version.setter
    def _version(self, counter):
        # Share a counter (a one-item list, from ``_shared_version()``) or reset it (None).
        self._vc = counter

    @property
    def _version_value(self):
        v = self._vc
        return 0 if v is None else v[0]

    def _bump_version(self):
        v = self._vc
        if v is None:
            self._vc = [1]
        else:
            v[0] += 1

    def register_hook(self, hook):
        """Run ``hook(grad)`` when this tensor's gradient is computed; it may return a new one."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fn = self.grad_fn
        if fn is not None:
            return fn._register_tensor_pre_hook(self._output_nr, hook)
        if self._backward_hooks is None:
            self._backward_hooks = {}
        h = RemovableHandle(self._backward_hooks)
        self._backward_hooks[h.id] = hook
        return h

    def register_post_accumulate_grad_hook(self, hook):
        """Run ``hook(tensor)`` on a leaf after its ``.grad`` has been accumulated."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = {}
        h = RemovableHandle(self._post_acc_hooks)
        self._post_acc_hooks[h.id] = hook
        return h

    def is_inference(self):
        """True for a tensor made in inference_mode (it can never enter autograd)."""
        return self._inference

    def detach(self):
        """A new tensor sharing storage (and version counter) with no history."""
        t = _new(Tensor)
        t._data = self._data
        if self._inference:
            t._inference = True
            return t
        t._vc = self._shared_version()
        return t

    def detach_(self):
        """Detach this tensor from the graph that made it, in place."""
        if self._base is not None and self._base._requires_grad:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel "
                "(DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP "
                "buckets, and hence detach_() cannot be called on these gradients. To fix this error, please "
                "refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        self._grad_fn = None
        self._requires_grad = False
        self._output_nr = 0
        return self

    # --- conversions to Python and NumPy ------------------------------------------------
    def item(self):
        """The value of a one-element tensor as a Python number."""
        d = self._data
        if d.size != 1:
            raise RuntimeError(f"a Tensor with {d.size} elements cannot be converted to Scalar")
        return d.reshape(()).item()

    def tolist(self):
        d = self._data
        return d.tolist() if type(d) is _ndarray else d.get().tolist()

    def numpy(self, *, force=False):
        """The NumPy array behind this tensor (shared memory)."""
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if type(self._data) is not _ndarray:
            if not force:
                raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() "
                                "to copy the tensor to host memory first.")
            return self._data.get()
        return self._data

    def __array__(self, dtype=None, copy=None):
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        a = self._data if type(self._data) is _ndarray else self._data.get()
        return a if dtype is None else a.astype(dtype, copy=False)

    def _scalar_check(self, what):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")

    def __float__(self):
        self._scalar_check("float")
        return float(self._real_item("double"))

    def __int__(self):
        self._scalar_check("int")
        return int(self._real_item("int64_t"))

    def _real_item(self, ctype):
        # a complex value converts only when its imaginary part is 0 (PyTorch's overflow check)
        v = self.item()
        if isinstance(v, complex):
            if v.imag != 0:
                raise RuntimeError(f"value cannot be converted to type {ctype} without overflow")
            v = v.real
        return v

    def __complex__(self):
        return complex(self.item())

    def __index__(self):
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        n = self._data.size
        if n != 1:
            if n == 0:
                raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    __hash__ = object.__hash__

    def __repr__(self, *, tensor_contents=None):
        from ._tensor_str import tensor_repr
        return tensor_repr(self)

    def __format__(self, spec):
        if self._data.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the "
                               "deepcopy protocol at the moment.  If you were attempting to deepcopy a "
                               "module, this may be because of a torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        cls = type(self)
        t = _new(cls)
        t._data = self._data.copy()
        if self._requires_grad:
            t._requires_grad = True
        if self._grad is not None:
            t._grad = self._grad.__deepcopy__(memo)
        if cls is not Tensor:
            t.__dict__.update({k: v for k, v in self.__dict__.items()
                               if not k.startswith("_") or k in ("_is_param",)})
        memo[id(self)] = t
        return t

    def __reduce_ex__(self, proto):
        from ._creation import _rebuild
        return (_rebuild, (type(self), np.asarray(self._data), self._requires_grad))

    def __setstate__(self, state):
        pass
