"""Transposed convolution (conv_transpose1d/2d) and the bilinear form (bilinear).

A transposed convolution is one GEMM per group (weight^T x input gives the columns)
followed by col2im, which sums every column into the output window it came from; its
backward runs the other way: im2col of the gradient, then a GEMM per direction. That is
the input gradient of the convolution with the same geometry, so host float32/float64
ones run on ops.conv's sample-blocked kernels (its input gradient forward, its forward
and weight gradient backward); the whole-batch columns below serve the rest.
"""
import numpy as np

from ._base import xp_for
from . import _blas
from ._base import OpNode, node_for, save, finish, arr, _state
from ._seqkit import graph_grads
from .arithmetic import add
from .linalg import matmul, einsum
from .resample import _col2im
from . import _accel
from .conv import check_kernel_dtype, check_weight_type, _KERNEL_TYPES
from . import conv as _conv
from . import _dnnl_conv

__all__ = ["conv_transpose1d", "conv_transpose2d", "bilinear"]


def _dnnl_ok(cp, wd, *arrays):
    """Whether a transposed convolution of these arrays (weights ``wd``, adjoint geometry
    ``cp``) takes oneDNN's primitives (ops._dnnl_conv): float32, a geometry they take, and
    finite values only. PyTorch's CPU transposed convolution is a column GEMM, where an inf
    meets the zeros of the padding and the stride's gaps and makes NaN; oneDNN's direct
    kernels never multiply those, so their inf and NaN positions would differ. (The
    geometry first: the finiteness scans only where the primitives could run.)"""
    return all(a.dtype == np.float32 for a in arrays) and _dnnl_conv.takes(arrays[0].ndim, wd.shape, cp) and \
        all(_conv._all_finite(a) for a in arrays)


def _f32(a):
    """bfloat16 as float32: PyTorch's CPU kernels accumulate it in float32 and round once."""
    return a.astype(np.float32) if a.dtype.kind == "V" else a


def _tuple(v, n, name=None):
    if isinstance(v, (tuple, list)):
        if len(v) == 1 and n > 1:
            return tuple(int(v[0]) for _ in range(n))
        return tuple(int(a) for a in v)
    return (int(v),) * n


# Both directions keep the channels ahead of the batch, (G, C/G, [kernel offset,] N, H, W),
# so that one GEMM per group covers the whole batch and every kernel offset's block of
# columns is contiguous for the strided slice-adds and copies of col2im / im2col.

def _blocks(xT, ks, dil, st, oh, ow):
    """im2col of the padded, channel-major ``xT`` (C, N, Hp, Wp): (C, kh, kw, N, oh, ow)."""
    xp = xp_for(xT, ks, dil, st, oh, ow)
    C, N = xT.shape[:2]
    out = xp.empty((C, ks[0], ks[1], N, oh, ow), xT.dtype)
    for i in range(ks[0]):
        a = i * dil[0]
        for j in range(ks[1]):
            b = j * dil[1]
            out[:, i, j] = xT[:, :, a:a + st[0] * (oh - 1) + 1:st[0], b:b + st[1] * (ow - 1) + 1:st[1]]
    return out


def _unblocks(c, shape_p, dil, st):
    """Adjoint of ``_blocks`` for offset-major columns (kh, kw, C, N, oh, ow): their sum
    into a zero (C, N, Hp, Wp)."""
    xp = xp_for(c, shape_p, dil, st)
    kh, kw, C, N, oh, ow = c.shape
    out = xp.zeros((C, N) + tuple(shape_p), c.dtype)
    for i in range(kh):
        a = i * dil[0]
        for j in range(kw):
            b = j * dil[1]
            out[:, :, a:a + st[0] * (oh - 1) + 1:st[0], b:b + st[1] * (ow - 1) + 1:st[1]] += c[i, j]
    return out


def _channels_first(a, G):
    """(N, C, H, W) -> (G, C/G, N*H*W), contiguous."""
    xp = xp_for(a, G)
    N, C, H, W = a.shape
    return xp.ascontiguousarray(a.transpose(1, 0, 2, 3)).reshape(G, C // G, N * H * W)


def _grads(g, nf, gd, gx, gw):
    """The node's gradients for (input, weight[, bias]) in the incoming gradient's dtype; the
    bias's is the output gradient summed over all but the channels."""
    gb = gd.sum(axis=(0, 2, 3)) if len(nf) > 2 and nf[2][0] is not None else None
    odt = g._data.dtype
    out = tuple(None if a is None else finish(None, arr(a if a.dtype == odt else a.astype(odt)))
                for a in (gx, gw, gb))
    return out if len(nf) > 2 else out[:2]


class ConvolutionBackward0(OpNode):
    conv_p = None     # the adjoint convolution's geometry, where conv's kernels serve

    def backward(self, g):
        xp = xp_for(g)
        if _state.grad:  # create_graph: differentiate the composite, so that double backward works
            nf = self.next_functions
            inputs = list(self.saved_tensors) + ([self.bias_t] if len(nf) > 2 else [])
            res = graph_grads(self._composite, inputs, [g])
            return tuple(res[i] if nf[i][0] is not None else None for i in range(len(inputs)))
        x, w = self.saved_tensors
        ks, dil, pad, st, G, nsp, unbatched = self.args
        xd, wd, gd = _f32(x._data), _f32(w._data), _f32(g._data)  # bfloat16: float32, rounded once
        if unbatched:
            xd, gd = xd[None], gd[None]
        if nsp == 1:
            xd, wd, gd = xd[:, :, None, :], wd[:, :, None, :], gd[:, :, None, :]
        nf = self.next_functions
        N, Cin, H, W = xd.shape
        Cout = gd.shape[1]
        kk = ks[0] * ks[1]
        gx = gw = None
        cp = self.conv_p
        if cp is not None and _conv._blocked(gd, wd) and xd.dtype == gd.dtype:
            # the adjoint convolution's own kernels: its forward for the input, its weight
            # gradient (with the roles of input and output gradient exchanged) for the weight;
            # first oneDNN's primitives where they run (see _dnnl_ok)
            if _dnnl_ok(cp, wd, gd, wd, xd):
                both = None
                if nf[0][0] is not None and nf[1][0] is not None:
                    both = _dnnl_conv.fwd_bwd_w(gd, wd, xd, cp)      # (gd reordered once)
                if both is not None:
                    gx, gw = both
                else:
                    if nf[0][0] is not None:
                        gx = _dnnl_conv.fwd(gd, wd, cp)
                    if nf[1][0] is not None:
                        gw = _dnnl_conv.bwd_w(gd, xd, wd.shape, cp)
            need_x, need_w = nf[0][0] is not None and gx is None, nf[1][0] is not None and gw is None
            if need_x and need_w:
                gx, gw = _conv._fwd_bwd_w_blocked(gd, wd, xd, cp)
            elif need_x:
                gx = _conv._fwd_blocked(gd, wd, cp)
            elif need_w:
                gw = _conv._bwd_w_blocked(gd, xd, wd.shape, cp)
            gx = None if gx is None else gx.reshape(x._data.shape)
            gw = None if gw is None else gw.reshape(w._data.shape)
            return _grads(g, nf, gd, gx, gw)
        gpT = xp.zeros((Cout, N, gd.shape[2] + 2 * pad[0], gd.shape[3] + 2 * pad[1]), gd.dtype)
        gpT[:, :, pad[0]:pad[0] + gd.shape[2], pad[1]:pad[1] + gd.shape[3]] = gd.transpose(1, 0, 2, 3)
        cols = _blocks(gpT, ks, dil, st, H, W).reshape(G, Cout // G * kk, N * H * W)
        if nf[0][0] is not None:
            wg = wd.reshape(G, Cin // G, Cout // G * kk)
            gx = _blas.matmul(wg, cols).reshape(Cin, N, H, W).transpose(1, 0, 2, 3)
            gx = xp.ascontiguousarray(gx).reshape(x._data.shape)
        if nf[1][0] is not None:
            gw = _blas.matmul(_channels_first(xd, G), cols.transpose(0, 2, 1)).reshape(w._data.shape)
        return _grads(g, nf, gd, gx, gw)


    def _composite(self, x, w, b=None):
        """The transposed convolution as tensor ops: a GEMM per group, then col2im."""
        ks, dil, pad, st, G, nsp, unbatched = self.args
        xs, ws = tuple(x.shape), tuple(w.shape)
        if unbatched:
            x = x.reshape((1,) + xs)
        if nsp == 1:
            x = x.reshape(tuple(x.shape[:2]) + (1, x.shape[2]))
            w = w.reshape(ws[:2] + (1, ws[2]))
        N, Cin, H, W = x.shape
        Cout = w.shape[1] * G
        kk = ks[0] * ks[1]
        Ho, Wo = self.out_hw
        if (Ho + 2 * pad[0] - dil[0] * (ks[0] - 1) - 1) // st[0] + 1 != H or \
                (Wo + 2 * pad[1] - dil[1] * (ks[1] - 1) - 1) // st[1] + 1 != W:
            raise NotImplementedError("double backward of conv_transpose with output_padding >= stride")
        wg = w.reshape(G, Cin // G, Cout // G * kk).transpose(1, 2)
        cols = matmul(wg, x.reshape(N, G, Cin // G, H * W)).reshape(N, Cout * kk, H * W)
        r = _col2im(cols, (Ho, Wo), ks, dil, pad, st)
        if b is not None:
            r = r + b.reshape(1, -1, 1, 1)
        if nsp == 1:
            r = r.reshape(N, Cout, Wo)
        if unbatched:
            r = r.reshape(tuple(r.shape[1:]))
        return r


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, nsp, name):
    xp = xp_for(input, weight, bias, stride, padding, output_padding, groups, dilation, nsp)
    x = input
    expect = nsp + 2
    if x.dim() not in (expect - 1, expect):
        kind = {1: ("2D", "3D"), 2: ("3D", "4D")}[nsp]
        raise RuntimeError(f"Expected {kind[0]} (unbatched) or {kind[1]} (batched) input to {name}, but got input of "
                           f"size: [{', '.join(map(str, x.shape))}]")
    unbatched = x.dim() == expect - 1
    wshape = list(weight.shape)
    st, pad = _tuple(stride, nsp), _tuple(padding, nsp)
    op, dil = _tuple(output_padding, nsp), _tuple(dilation, nsp)
    if any(s <= 0 for s in st):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in pad):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dil):
        raise RuntimeError("dilation should be greater than zero")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if wshape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{wshape}] instead")
    xs = list(x.shape) if not unbatched else [1] + list(x.shape)
    if xs[1] != wshape[0]:
        shown = xs if not unbatched else xs[1:]
        raise RuntimeError(f"Given transposed=1, weight of size {wshape}, expected input{shown}"
                           f" to have {wshape[0]} channels, but got {xs[1]} channels instead")
    Cout = wshape[1] * groups
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != Cout):
        raise RuntimeError(f"Given transposed=1, weight of size {wshape}, expected bias to be 1-dimensional with "
                           f"{Cout} elements, but got bias of size [{', '.join(map(str, bias.shape))}] instead")
    if any(o >= s and o >= d for o, s, d in zip(op, st, dil)):
        names = ["height", "width"] if nsp == 2 else ["width"]
        parts = " ".join(f"output_padding_{n}: {o}" for n, o in zip(names, op)) + " " + \
            " ".join(f"stride_{n}: {s}" for n, s in zip(names, st)) + " " + \
            " ".join(f"dilation_{n}: {d}" for n, d in zip(names, dil))
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got {parts}")
    if x._data.size == 0 and xs[0] and xs[1]:
        raise RuntimeError("Only zero batch or zero channel inputs are supported, but got input shape: "
                           f"[{', '.join(map(str, x.shape))}]")
    check_weight_type(input, weight)
    if bias is not None and bias._data.dtype != x._data.dtype:
        if x._data.dtype.name in ("float32", "float16"):
            check_weight_type(input, bias, "bias")
        if x._data.dtype.kind not in "fV" and bias._data.dtype.kind in "fV":
            raise RuntimeError(f"result type {_KERNEL_TYPES[bias._data.dtype.name]} can't be cast to the desired "
                               f"output type {_KERNEL_TYPES.get(x._data.dtype.name, x._data.dtype.name)}")
    check_kernel_dtype("slow_conv_transpose2d_out_cpu", x._data, ("int64",))
    if unbatched:   # as PyTorch: a batch of one, squeezed (a view)
        return _conv_transpose(input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups, dilation,
                               nsp, name).squeeze(0)
    xd = _f32(x._data).reshape(xs)
    wd = _f32(weight._data)
    if nsp == 1:  # as 2-D with a height of one
        xd = xd[:, :, None, :]
        wd = wd[:, :, None, :]
        st, pad, op, dil = (1,) + st, (0,) + pad, (0,) + op, (1,) + dil
    N, Cin, H, W = xd.shape
    ks = wd.shape[2:]
    G = groups
    Ho = (H - 1) * st[0] - 2 * pad[0] + dil[0] * (ks[0] - 1) + op[0] + 1
    Wo = (W - 1) * st[1] - 2 * pad[1] + dil[1] * (ks[1] - 1) + op[1] + 1
    if Ho <= 0 or Wo <= 0:
        raise RuntimeError(f"Given input size per channel: ({H} x {W}). Calculated output size per channel: "
                           f"({Ho} x {Wo}). Output size is too small")
    # a transposed convolution is the input gradient of the convolution from Cout to Cin
    # channels with the same geometry, whose input is the output here: conv's
    # sample-blocked kernels, where that convolution's output size is H x W again (an
    # output_padding below the stride)
    cp = _conv._P(st, ((pad[0], pad[0]), (pad[1], pad[1])), dil, G) if op[0] < st[0] and op[1] < st[1] else None
    if cp is not None and _conv._blocked(xd, wd):
        r = _dnnl_conv.bwd_in(xd, wd, (N, Cout, Ho, Wo), cp) if _dnnl_ok(cp, wd, xd, wd) else None
        if r is None:
            r = _conv._bwd_in_blocked(xd, wd, (N, Cout, Ho, Wo), cp)
        if bias is not None and bias._data.dtype == r.dtype:
            r += bias._data.reshape(1, -1, 1, 1)        # (a fresh array: the same sum in place)
            bias_done = True
        else:
            bias_done = False
    else:
        r = _transposed_cols(xd, wd, G, ks, st, pad, dil, Ho, Wo, Cout)
        bias_done = False
    if bias is not None and not bias_done:
        r = r + _f32(bias._data).reshape(1, -1, 1, 1)
    if nsp == 1:
        r = r[:, :, 0, :]
    r = xp.ascontiguousarray(r, dtype=input._data.dtype)
    node = node_for(ConvolutionBackward0, (input, weight, bias) if bias is not None else (input, weight))
    if node is not None:
        node.args = (ks, dil, pad, st, G, nsp, unbatched)
        node.out_hw = (Ho, Wo)
        node.bias_t = bias
        node.conv_p = cp
        save(node, input, weight)
    return finish(node, r)


def _transposed_cols(xd, wd, G, ks, st, pad, dil, Ho, Wo, Cout):
    """The transposed convolution as one GEMM per group over the whole batch, then col2im."""
    xp = xp_for(xd)
    N, Cin, H, W = xd.shape
    kk = ks[0] * ks[1]
    # offset-major weight rows (G, kh, kw, Cout/G, Cin/G): the columns come out as
    # (kh, kw, Cout, N, H, W) blocks (for G == 1; per group otherwise)
    wT = wd.reshape(G, Cin // G, Cout // G, ks[0], ks[1]).transpose(0, 3, 4, 2, 1)
    wT = xp.ascontiguousarray(wT).reshape(G, kk * (Cout // G), Cin // G)
    cols = _blas.matmul(wT, _channels_first(xd, G))                 # (G, kk*Cout/G, N*H*W)
    cols = cols.reshape(G, ks[0], ks[1], Cout // G, N, H, W).transpose(1, 2, 0, 3, 4, 5, 6)
    cols = cols.reshape(ks[0], ks[1], Cout, N, H, W)
    Hp, Wp = Ho + 2 * pad[0], Wo + 2 * pad[1]
    need_h, need_w = (H - 1) * st[0] + dil[0] * (ks[0] - 1) + 1, (W - 1) * st[1] + dil[1] * (ks[1] - 1) + 1
    kern = _accel.for_arrays(cols)
    if kern is not None:    # col2im one padded plane at a time in cache, cropped into NCHW (the same sums)
        ph, pw = max(Hp, need_h), max(Wp, need_w)
        r = np.empty((N, Cout, Ho, Wo), cols.dtype)
        kern.col2im(cols.transpose(3, 2, 0, 1, 4, 5), r, np.empty(ph * pw, cols.dtype), st[0], st[1], dil[0], dil[1],
                    pad[0], pad[1], pw)
    else:
        full = _unblocks(cols, (max(Hp, need_h), max(Wp, need_w)), dil, st)
        r = full[:, :, pad[0]:pad[0] + Ho, pad[1]:pad[1] + Wo].transpose(1, 0, 2, 3)
    return r


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-D transposed convolution: input (N, Cin, L), weight (Cin, Cout/groups, k)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                           "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution: input (N, Cin, H, W), weight (Cin, Cout/groups, kh, kw)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                           "conv_transpose2d")


# *** bilinear ***

class TrilinearBackward0(OpNode):
    def backward(self, g):
        xp = xp_for(g)
        if _state.grad:  # create_graph: differentiate the composite, so that double backward works
            res = graph_grads(lambda a, b, w: einsum("...i,oij,...j->...o", a, w, b), list(self.saved_tensors), [g])
            return tuple(res[i] if self.next_functions[i][0] is not None else None for i in range(3))
        x1, x2, w = self.saved_tensors
        gd = g._data
        nf = self.next_functions
        a, b, W = x1._data, x2._data, w._data
        out = [None, None, None]
        if nf[0][0] is not None:
            out[0] = finish(None, arr(xp.einsum("...o,oij,...j->...i", gd, W, b)))
        if nf[1][0] is not None:
            out[1] = finish(None, arr(xp.einsum("...o,oij,...i->...j", gd, W, a)))
        if nf[2][0] is not None:
            out[2] = finish(None, arr(xp.einsum("bo,bi,bj->oij", gd, a, b, optimize=True)))
        return tuple(out)


def bilinear(input1, input2, weight, bias=None):
    """``y = x1^T A x2 + b`` over the last dimension of ``input1`` and ``input2``."""
    xp = xp_for(input1, input2, weight, bias)
    a, b, W = input1._data, input2._data, weight._data
    ts = [("input1", a), ("input2", b), ("weight", W)] + ([("bias", bias._data)] if bias is not None else [])
    if any(t.dtype != a.dtype for _, t in ts):
        from ._linear import _CN
        raise RuntimeError("All tensors must have the same dtype, got " +
                           ", ".join(f"{n}: {_CN.get(t.dtype.name, t.dtype.name)}" for n, t in ts))
    if a.ndim != b.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {a.ndim} and {b.ndim}")
    for i in range(a.ndim - 1):
        if a.shape[i] != b.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got {a.shape[i]} and "
                               f"{b.shape[i]}")
    if a.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    for t, d in ((a, 1), (b, 2)):
        if W.ndim <= d:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-max(W.ndim, 1)}, "
                             f"{max(W.ndim, 1) - 1}], but got {d})")
        if t.shape[-1] != W.shape[d]:
            raise RuntimeError(f"bilinear(): input{d} size does not match weight size: got {t.shape[-1]} but expected "
                               f"{W.shape[d]}")
    if bias is not None:
        if bias._data.ndim == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if bias.shape[0] != W.shape[0]:
            raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.shape[0]} but expected "
                               f"{W.shape[0]}")
    if W.ndim != 3:
        raise RuntimeError("number of dimensions must match")
    if a.dtype.kind == "b":
        check_kernel_dtype("bmm", a)
    # as PyTorch: flatten the batch dimensions, one trilinear product, view the result back, add the bias
    out_shape = a.shape[:-1] + (W.shape[0],)
    in1 = input1.reshape(-1, a.shape[-1])
    in2 = input2.reshape(-1, b.shape[-1])
    a, b = in1._data, in2._data
    # PyTorch's order: contract input1's features first, then input2's (NaN/inf land alike)
    r = arr(xp.einsum("boj,bj->bo", xp.einsum("bi,oij->boj", a, W), b).astype(a.dtype, copy=False))
    node = node_for(TrilinearBackward0, (in1, in2, weight))
    if node is not None:
        save(node, in1, in2, weight)
    res = finish(node, r).reshape(out_shape)
    return res if bias is None else add(res, bias)


TENSOR_METHODS = {}
INPLACE = {}
