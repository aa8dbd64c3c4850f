"""The fully connected layer's op: ``x @ w.T + b`` as one GEMM (AddmmBackward0 on 2-D
input, as in PyTorch), with its own small differentiable matrix product so that its
backward is itself differentiable."""
from math import prod as _prod

import numpy as np

from ._base import check_devices
from . import _blas, _accel
from ._base import OpNode, node_for, save, finish, arr, _state, Tensor, view_of
from .conv import check_kernel_dtype


# Least elements of a linear layer's output for the compiled bias add and bias-gradient sum
# (_accel.add_row / sum_rows; below, NumPy's call costs no more than the kernel's).
_ROW_KERNEL_MIN = 4096

def _row_kernels(a):
    """_accel's kernels for a row-wise pass over ``a``: a 2-D C-contiguous host float array of
    at least _ROW_KERNEL_MIN elements (so at least one row), else None."""
    if a.ndim == 2 and a.size >= _ROW_KERNEL_MIN and a.flags.c_contiguous:
        return _accel.usable(a)
    return None


_TN = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
       "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _shape_err(a, b):
    raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a[0]}x{a[1]} and {b[0]}x{b[1]})")


class _MmT(OpNode):
    """``op(a) @ op(b)`` where op transposes when the flag is set."""

    def backward(self, g):
        a, b = self.saved_tensors
        ta, tb = self.ta, self.tb
        nf = self.next_functions
        ga = gb = None
        if nf[0][0] is not None:
            # d op(a) = g @ op(b).T
            ga = _mm(b, g, tb, True) if ta else _mm(g, b, False, not tb)
        if nf[1][0] is not None:
            # d op(b) = op(a).T @ g
            gb = _mm(g, a, True, ta) if tb else _mm(a, g, not ta, False)
        return ga, gb


MmBackward0 = type("MmBackward0", (_MmT,), {})


def _mm(a, b, ta=False, tb=False):
    x = a._data.T if ta else a._data
    y = b._data.T if tb else b._data
    node = node_for(MmBackward0, (a, b))
    if node is not None:
        node.ta, node.tb = ta, tb
        save(node, a if b._requires_grad else None, b if a._requires_grad else None)
    return finish(node, _blas.matmul(x, y))


class AddmmBackward0(OpNode):
    """``bias + x @ wt`` where ``wt`` is the transposed weight (its own TBackward0, as in PyTorch)."""
    _out_meta_bias = None    # the bias's shape where it is not (out_features,): broadcast in the sum

    def backward(self, g):
        x, wt = self.saved_tensors
        nf = self.next_functions
        gb = None
        if nf[0][0] is not None:
            bs = self._out_meta_bias
            k = _row_kernels(g._data) if bs is None and not _state.grad else None
            if k is not None:
                gb = finish(None, arr(_accel.sum_rows(k, g._data)))
            else:
                gb = g.sum(0) if bs is None else g.sum_to_size(bs)
        gx = _mm(g, wt, False, True) if nf[1][0] is not None else None
        # g^T x in the weight's own orientation, handed on transposed (TBackward0 turns it back)
        gwt = _mm(g, x, True, False).t() if nf[2][0] is not None else None
        return gb, gx, gwt


class _LinearMm(OpNode):
    """``x @ wt`` for a linear layer without bias (MmBackward0)."""

    def backward(self, g):
        x, wt = self.saved_tensors
        nf = self.next_functions
        gx = _mm(g, wt, False, True) if nf[0][0] is not None else None
        gwt = _mm(g, x, True, False).t() if nf[1][0] is not None else None
        return gx, gwt


_LinearMm = type("MmBackward0", (_LinearMm,), {})


class _Reshape(OpNode):
    def backward(self, g):
        return g.reshape(self.shape)


_NAMED = {n: type(n, (_Reshape,), {}) for n in ("ViewBackward0", "UnsafeViewBackward0", "SqueezeBackward4")}


def _reshape_named(t, shape, name, view=False):
    """``t`` reshaped, with the grad_fn ``name``; with ``view``, a view of ``t`` (sharing its
    version counter, as PyTorch's input.view(-1, in) does) where the data is shared: a saved
    reshaped input then notices an in-place change of ``t``."""
    node = node_for(_NAMED[name], (t,))
    if node is not None:
        node.shape = t._data.shape
    r = t._data.reshape(shape)
    out = finish(node, r)
    if view and (np.may_share_memory(r, t._data) if type(r) is np.ndarray else getattr(r, "base", None) is not None):
        view_of(t, out, lambda b: b.reshape(shape))
    return out


_CN = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int", "int32": "int",
       "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
       "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _tn(dt):
    return _TN.get(dt.name, dt.name)


def _expand_err(bias, target):
    """PyTorch's error for a bias that does not expand to addmm's (rows, out_features)."""
    bshape = bias._data.shape
    if len(bshape) > len(target):
        from ._base import type_name
        raise RuntimeError(f"expand({type_name(bias)}{{[{', '.join(map(str, bshape))}]}}, size=[{target[0]}, "
                           f"{target[1]}]): the number of sizes provided ({len(target)}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({len(bshape)})")
    for i in range(-1, -len(bshape) - 1, -1):
        if bshape[i] != target[i] and bshape[i] != 1:
            raise RuntimeError(f"The expanded size of the tensor ({target[i]}) must match the existing size "
                               f"({bshape[i]}) at non-singleton dimension {len(target) + i}.  Target sizes: "
                               f"{list(target)}.  Tensor sizes: {list(bshape)}")


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` over the last dimension of ``input``."""
    check_devices(input, weight, bias)
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"linear(): argument 'bias' (position 3) must be Tensor, not {type(bias).__name__}")
    x = input._data
    w = weight._data
    nd = x.ndim
    if nd == 0 or w.ndim == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {nd}D and {w.ndim}D")
    if w.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {w.ndim}D")
    # as PyTorch: one addmm for 2-D input, or for contiguous input with a contiguous bias
    # that squeezes to 1-D (a view of it then); otherwise a product plus an in-place add
    fused = bias is not None and (nd == 2 or (x.flags.c_contiguous and bias._data.flags.c_contiguous and (
        bias._data.ndim == 1 or sum(n != 1 for n in bias._data.shape) == 1)))
    if fused:
        bd = bias._data.dtype
        if bd != w.dtype:
            raise RuntimeError(f"self and mat2 must have the same dtype, but got {_tn(bd)} and {_tn(w.dtype)}")
        if x.dtype != w.dtype:
            raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_tn(x.dtype)} and {_tn(w.dtype)}")
        if w.ndim == 1:
            raise RuntimeError("mat2 must be a matrix, got 1-D tensor")
    elif x.dtype != w.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_CN.get(x.dtype.name, x.dtype.name)}"
                           f" != {_CN.get(w.dtype.name, w.dtype.name)}")
    if w.ndim == 1 or (bias is not None and not fused):
        from .linalg import matmul
        out = matmul(input, weight.t())
        if bias is None:
            return out
        bshape = np.broadcast_shapes(bias._data.shape, out._data.shape) if _broadcastable(bias, out) else None
        if bshape != out._data.shape:
            if bshape is None:
                from .arithmetic import add
                add(out, bias)      # PyTorch's broadcast error
            raise RuntimeError(f"output with shape {list(out._data.shape)} doesn't match the broadcast shape "
                               f"{list(bshape)}")
        return out.add_(bias)
    # explicit sizes: NumPy cannot infer a -1 next to a dimension of size 0
    x2 = x.reshape(1, x.shape[0]) if nd == 1 else (x.reshape(_prod(x.shape[:-1]), x.shape[-1]) if nd > 2 else x)
    if x2.shape[1] != w.shape[1]:
        _shape_err(x2.shape, (w.shape[1], w.shape[0]))
    if x.dtype.kind == "b":
        check_kernel_dtype("addmm_impl_cpu_", x)
    if bias is not None and bias._data.shape != (w.shape[0],):
        _expand_err(bias, (x2.shape[0], w.shape[0]))
    inp = input
    if nd != 2:   # the 2-D view is what the weight's gradient needs, whether or not input requires grad
        inp = _reshape_named(input, x2.shape, "ViewBackward0", True) if input._requires_grad \
            else input.reshape(x2.shape)
    if x.dtype.kind == "V":  # bfloat16: product and bias add in float32, rounded once
        r = x2.astype(np.float32) @ w.T.astype(np.float32)
        if bias is not None:
            r += bias._data.astype(np.float32)
        r = r.astype(x.dtype)
    else:
        r = _x_wt(x2, w)
        if bias is not None:
            bd = bias._data
            k = _row_kernels(r) if type(bd) is np.ndarray and bd.dtype == r.dtype else None
            if k is not None:
                _accel.add_row(k, r, bd)
            else:
                r += bd
    node = None
    if _state.grad and (inp._requires_grad or weight._requires_grad or (bias is not None and bias._requires_grad)):
        wt = weight.t()                  # a view; TBackward0 when the weight requires grad
        if bias is not None:
            node = node_for(AddmmBackward0, (bias, inp, wt))
            if node is not None and bias._data.shape != (w.shape[0],):
                node._out_meta_bias = bias._data.shape
        else:
            node = node_for(_LinearMm, (inp, wt))
        save(node, inp if wt._requires_grad else None, wt if inp._requires_grad else None)
    out = finish(node, r)
    if nd == 2:
        return out
    shape = x.shape[:-1] + (w.shape[0],)
    if bias is not None:
        return out.view(shape)   # a view of the addmm result, as PyTorch's
    return _reshape_named(out, shape, "SqueezeBackward4" if nd == 1 else "UnsafeViewBackward0")


_F32 = np.dtype(np.float32)


def _x_wt(x, w):
    """``x @ w.T`` for a (rows, in) input and an (out, in) weight. OpenBLAS runs this product
    (its second operand transposed) up to 2-3x slower than the same product with both operands
    in their stored order when there are few rows and many outputs (measured single-threaded,
    OpenBLAS 0.3.31, AVX-512: 16 x 784 -> 512 float32 0.29 ms against 0.17; with large weights
    up to ~96 rows: 64 x 784 -> 512 0.55 ms against 0.47, 96 x 512 -> 512 0.48 against 0.45,
    even at 128 rows, a loss from 256; 64 x 256 -> 256 or 128 -> 1000 lose); there it computes
    ``(w @ x.T).T`` instead: the small input is transposed (copied), the product runs in stored
    order, and its small result is copied back to row-major. Elsewhere (many rows, small
    weights, float64, whose kernels show no such gap) the plain product is as fast or faster.
    The sums may round differently (another kernel), never by more than a product's rounding."""
    r = _blas.try_matmul(x, w.T)      # (MKL's kernels have no such gap)
    if r is not None:
        return r
    n = x.shape[0]
    o, i = w.shape
    if x.dtype == _F32 and w.dtype == _F32 and ((8 <= n or (4 <= n and o >= 512)) and n <= 32 and o >= 256 and
                                                i >= 128 or 32 < n <= 96 and o >= 512 and i >= 512) \
            and type(x) is np.ndarray and type(w) is np.ndarray and w.flags.c_contiguous:
        return np.ascontiguousarray((w @ np.ascontiguousarray(x.T)).T)
    return x @ w.T


def _broadcastable(a, b):
    try:
        np.broadcast_shapes(a._data.shape, b._data.shape)
        return True
    except ValueError:
        return False
