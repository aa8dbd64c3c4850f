"""The fully connected layer's op: ``x @ w.T + b`` as one GEMM (AddmmBackward0 on 2-D
input, as in PyTorch), with its own small differentiable matrix product so that its
backward is itself differentiable."""
from math import prod as _prod

from ._base import OpNode, node_for, save, finish, _state
from .conv import check_kernel_dtype


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
    return finish(node, x @ y)


class AddmmBackward0(OpNode):
    """``bias + x @ wt`` where ``wt`` is the transposed weight (its own TBackward0, as in PyTorch)."""

    def backward(self, g):
        x, wt = self.saved_tensors
        nf = self.next_functions
        gb = g.sum(0) if nf[0][0] is not None else None
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


def _reshape_named(t, shape, name):
    node = node_for(_NAMED[name], (t,))
    if node is not None:
        node.shape = t._data.shape
    return finish(node, t._data.reshape(shape))


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` over the last dimension of ``input``."""
    x = input._data
    w = weight._data
    if w.ndim != 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {w.ndim}D")
    if x.dtype != w.dtype or (bias is not None and bias._data.dtype != x.dtype):
        other = w.dtype if x.dtype != w.dtype else bias._data.dtype
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_TN.get(x.dtype.name, x.dtype.name)} "
                           f"and {_TN.get(other.name, other.name)}")
    nd = x.ndim
    if nd == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are 0D and 2D")
    # explicit sizes: NumPy cannot infer a -1 next to a dimension of size 0
    x2 = x.reshape(1, x.shape[0]) if nd == 1 else (x.reshape(_prod(x.shape[:-1]), x.shape[-1]) if nd > 2 else x)
    if x2.shape[1] != w.shape[1]:
        _shape_err(x2.shape, (w.shape[1], w.shape[0]))
    if x.dtype.kind == "b":
        check_kernel_dtype("addmm_impl_cpu_", x)
    inp = input
    if nd != 2 and input._requires_grad:
        inp = _reshape_named(input, x2.shape, "ViewBackward0")
    r = x2 @ w.T
    if bias is not None:
        r += bias._data
    node = None
    if _state.grad and (inp._requires_grad or weight._requires_grad or (bias is not None and bias._requires_grad)):
        wt = weight.t()                  # a view; TBackward0 when the weight requires grad
        if bias is not None:
            node = node_for(AddmmBackward0, (bias, inp, wt))
        else:
            node = node_for(_LinearMm, (inp, wt))
        save(node, inp if wt._requires_grad else None, wt if inp._requires_grad else None)
    out = finish(node, r)
    if nd == 2:
        return out
    if nd == 1:
        return _reshape_named(out, (w.shape[0],), "ViewBackward0" if bias is not None else "SqueezeBackward4")
    return _reshape_named(out, x.shape[:-1] + (w.shape[0],),
                          "ViewBackward0" if bias is not None else "UnsafeViewBackward0")
