"""2-D float32 convolutions of the CPU hot paths on oneDNN's convolution primitives, by ctypes.

Where ops._blas runs its float32 products on oneDNN (CPUs other than Intel's, with
``onednn-cpu-gomp`` installed: see ops._blas), a 2-D convolution's three passes (forward,
input gradient, weight gradient) run as oneDNN primitives too: its JIT kernels on blocked
layouts (nChw16c and the like), the plain NCHW operands reordered into them and the results
back. PyTorch's CPU convolutions are the same library's kernels: on an AMD EPYC the outputs
and both gradients equalled PyTorch 2.13's to the bit on the shapes tried, but for the input
gradients of strided convolutions, which retrograd computes with another kernel (see _Plan;
a few units of rounding apart). The tests, tests/test_conv_dnnl.py, bound them at 4e-6 of the
largest, for other CPUs and versions.
Measured on one core of that EPYC (AVX-512), forward plus both gradients, against the column
path on oneDNN's sgemm: 16 -> 16 channels over 32x32 (batch 32) 3.4 against 8.8 ms, a
stride-2 32 -> 64 3.1 against 4.1 ms. With fewer channels the blocked kernels run mostly
padding and the reorders cost more than they save (see _MIN_CH): retrograd's own kernels
keep those, and depthwise convolutions.

A primitive and its reorders are made once per geometry (shapes, stride, padding, dilation,
groups, bias, thread count) and kept, each with its blocked buffers, the least recently used
dropped beyond _CACHE primitives or _CACHE_BYTES of buffers; a second thread that finds its
geometry's primitive busy takes retrograd's own kernels. Everything else (other dtypes and
dimensionalities) is the caller's: each function returns None where it does not run.
"""
import os
import sys
import threading

import numpy as np

__all__ = ["available", "takes", "fwd", "bwd_in", "bwd_w", "bwd", "fwd_bwd_w"]

_CACHE = 48
_CACHE_BYTES = 512 << 20      # most bytes of blocked buffers the kept primitives hold
_F32 = np.dtype(np.float32)
_FWD_TRAINING = 64                                        # dnnl_prop_kind_t
_DIRECT = 1                                               # dnnl_convolution_direct
_SRC, _DST, _WEI, _BIAS = 1, 17, 33, 41                   # DNNL_ARG_*
_DIFF_SRC, _DIFF_DST, _DIFF_WEI = 129, 145, 161
_Q_SRC, _Q_DIFF_SRC, _Q_WEI, _Q_DIFF_WEI, _Q_DST, _Q_DIFF_DST = 129, 130, 131, 132, 133, 134
_TAG_ANY = 1

_state = [None]       # None: not looked up; False: off; else the _Api


def available():
    """Whether convolutions run on oneDNN here (ops._blas chose oneDNN)."""
    st = _state[0]
    if st is None:
        st = _state[0] = _setup()
    return bool(st)


def _setup():
    from . import _blas
    try:
        lib = _blas._load()
        if not lib or lib.kind != "onednn":
            return False
        return _Api(lib)
    except (AttributeError, OSError):
        return False


class _Api:
    """oneDNN's primitive API through ctypes, every function declared (pointers stay 64-bit)."""

    def __init__(self, blas):
        import ctypes
        self.blas = blas
        lib = self.lib = blas.cdll
        P, i32, p64 = ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64)
        pp = ctypes.POINTER(P)
        decl = {
            "dnnl_memory_desc_create_with_strides": ([pp, i32, p64, i32, p64], i32),
            "dnnl_memory_desc_create_with_tag": ([pp, i32, p64, i32, i32], i32),
            "dnnl_convolution_forward_primitive_desc_create": ([pp, P, i32, i32, P, P, P, P, p64, p64, p64, p64, P],
                                                               i32),
            "dnnl_convolution_backward_data_primitive_desc_create": ([pp, P, i32, P, P, P, p64, p64, p64, p64, P, P],
                                                                     i32),
            "dnnl_convolution_backward_weights_primitive_desc_create": (
                [pp, P, i32, P, P, P, P, p64, p64, p64, p64, P, P], i32),
            "dnnl_primitive_desc_query_md": ([P, i32, i32], P),
            "dnnl_memory_desc_get_size": ([P], ctypes.c_size_t),
            "dnnl_memory_desc_equal": ([P, P], i32),
            "dnnl_reorder_primitive_desc_create": ([pp, P, P, P, P, P], i32),
            "dnnl_primitive_create": ([pp, P], i32),
            "dnnl_memory_create": ([pp, P, P, P], i32),
            "dnnl_memory_set_data_handle": ([P, P], i32),
            "dnnl_primitive_execute": ([P, P, i32, P], i32),
            "dnnl_stream_wait": ([P], i32),
            "dnnl_primitive_desc_destroy": ([P], i32),
            "dnnl_memory_desc_destroy": ([P], i32),
            "dnnl_primitive_destroy": ([P], i32),
            "dnnl_memory_destroy": ([P], i32),
            "dnnl_engine_create": ([pp, i32, ctypes.c_size_t], i32),
            "dnnl_stream_create": ([pp, P, ctypes.c_uint], i32),
        }
        for name, (args, res) in decl.items():
            f = getattr(lib, name)
            f.argtypes, f.restype = args, res
        self.P, self.Dims = P, ctypes.c_int64 * 12

        class Arg(ctypes.Structure):
            _fields_ = [("arg", ctypes.c_int), ("memory", P)]
        self.Arg = Arg
        self.byref = ctypes.byref
        eng, strm = P(), P()
        if lib.dnnl_engine_create(ctypes.byref(eng), 1, 0) or lib.dnnl_stream_create(ctypes.byref(strm), eng, 1):
            raise OSError("oneDNN's CPU engine could not be made")
        self.eng, self.strm = eng, strm
        self.cache = {}
        self.cache_lock = threading.Lock()
        self.nbytes = 0
        if hasattr(os, "register_at_fork"):
            # (a lock another thread held at the fork would stay held in the child forever)
            os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self):
        self.cache_lock = threading.Lock()

    # --- building ---------------------------------------------------------------------------

    def md(self, shape, strides=None):
        """A memory descriptor: plain with these element strides, or any layout (None)."""
        m = self.P()
        d = self.Dims(*shape)
        if strides is None:
            st = self.lib.dnnl_memory_desc_create_with_tag(self.byref(m), len(shape), d, 3, _TAG_ANY)
        else:
            st = self.lib.dnnl_memory_desc_create_with_strides(self.byref(m), len(shape), d, 3, self.Dims(*strides))
        if st:
            raise _Refused(f"memory descriptor {shape}: status {st}")
        return m


class _Refused(Exception):
    pass


# The passes a plan runs, by the name it is kept under: a gradient's two passes share their
# common operand's reorder (the output gradient; for a transposed convolution's backward, the
# adjoint convolution's input)
_PASSES = {"fwd": ("fwd",), "bwd_in": ("bwd_in",), "bwd_w": ("bwd_w",),
           "bwd": ("bwd_in", "bwd_w"), "fwd_bwd_w": ("fwd", "bwd_w")}
# (query, argument, operand, input?) of each pass; an operand names one caller's array
_OPS = {"fwd": ((_Q_SRC, _SRC, "src", True), (_Q_WEI, _WEI, "wei", True), (_Q_DST, _DST, "dst", False)),
        "bwd_in": ((_Q_DIFF_DST, _DIFF_DST, "diff_dst", True), (_Q_WEI, _WEI, "wei", True),
                   (_Q_DIFF_SRC, _DIFF_SRC, "diff_src", False)),
        "bwd_w": ((_Q_SRC, _SRC, "src", True), (_Q_DIFF_DST, _DIFF_DST, "diff_dst", True),
                  (_Q_DIFF_WEI, _DIFF_WEI, "diff_wei", False))}


class _Plan:
    """The passes of one geometry: primitives, reorders, blocked buffers, memory objects.

    Each pass runs as a stage on its own OpenMP count (see _plan): its operands' reorders
    into the blocked layouts, the primitive, its results' reorders back; an input operand two
    passes read in the same layout is reordered once, by the first."""

    def __init__(self, api, name, xshape, wshape, yshape, stride, dil, pad, groups, bias, nt):
        self.api = api
        self.lock = threading.Lock()
        self.owned = []       # (destroy function name, handle)
        self.nbytes = 0
        from .plumbing import _contig_strides
        lib, P = api.lib, api.P
        G = groups
        w5 = (G, wshape[0] // G) + tuple(wshape[1:]) if G > 1 else tuple(wshape)
        shapes = {"src": xshape, "diff_src": xshape, "wei": w5, "diff_wei": w5, "dst": yshape, "diff_dst": yshape}
        dims = api.Dims
        S = dims(*stride)
        D = dims(*(d - 1 for d in dil))
        PL = dims(*(lo for lo, _ in pad))
        PR = dims(*(hi for _, hi in pad))
        mds = []
        self.bufs = []
        self.plain = {}       # operand -> memory object of the caller's array
        self.pds = {}
        self.stages = []      # (OpenMP count, [(primitive, args array)])
        blocked = []          # (operand, memory descriptor, memory object) of inputs reordered
        try:
            anyx, anyw, anyy = api.md(xshape), api.md(w5), api.md(yshape)
            mds += [anyx, anyw, anyy]
            bmd = None
            if bias:
                bmd = api.md((wshape[0],), (1,))
                mds.append(bmd)
            plain_md = {}
            for kind in _PASSES[name]:
                # A primitive keeps the OpenMP count in force when it is made (see _plan)
                most = _pass_threads(kind, nt)
                api.blas._sync_threads(most)
                hint = P()
                st = lib.dnnl_convolution_forward_primitive_desc_create(
                    api.byref(hint), api.eng, _FWD_TRAINING, _DIRECT, anyx, anyw, bmd if kind == "fwd" else None,
                    anyy, S, D, PL, PR, None)
                if st:
                    raise _Refused(f"forward: status {st}")
                self.owned.append(("dnnl_primitive_desc_destroy", hint))
                if kind == "fwd":
                    pd = hint
                else:
                    # The gradients on the forward's layouts of x and y where oneDNN has kernels
                    # for them, else on its own choice: left to choose, oneDNN 3.2 takes for a
                    # strided input gradient its NHWC kernel (brgconv_strided), which with its
                    # reorders ran 1.2-1.8x the time of the blocked one here (one core,
                    # AVX-512: 32 -> 64 channels 3x3 stride 2 over 16x32x32, 1.68 against
                    # 1.40 ms; 16 -> 32 1x1 stride 2, 0.55 against 0.30); equal where it chose
                    # the forward's already.
                    fx = lib.dnnl_primitive_desc_query_md(hint, _Q_SRC, 0)
                    fy = lib.dnnl_primitive_desc_query_md(hint, _Q_DST, 0)
                    pd = self._backward_pd(kind, fx, anyw, fy, S, D, PL, PR, hint)
                    if pd is None:
                        pd = self._backward_pd(kind, anyx, anyw, anyy, S, D, PL, PR, hint)
                    if pd is None:
                        raise _Refused(f"{kind}: no primitive")
                    self.owned.append(("dnnl_primitive_desc_destroy", pd))
                self.pds[kind] = pd
                prim = self._prim(pd)
                steps, conv_args, after = [], [], []
                for q, arg, op, is_in in _OPS[kind]:
                    want = lib.dnnl_primitive_desc_query_md(pd, q, 0)
                    if op not in self.plain:
                        pmd = api.md(shapes[op], _contig_strides(shapes[op]))
                        mds.append(pmd)
                        plain_md[op] = pmd
                        self.plain[op] = self._mem(pmd, None)
                    pmd, pmem = plain_md[op], self.plain[op]
                    if lib.dnnl_memory_desc_equal(pmd, want):
                        conv_args.append((arg, pmem))
                        continue
                    if is_in:
                        done = [m for o, d, m in blocked if o == op and lib.dnnl_memory_desc_equal(d, want)]
                        if done:
                            conv_args.append((arg, done[0]))
                            continue
                    bmem = self._mem(want, self._buffer(lib.dnnl_memory_desc_get_size(want)))
                    if is_in:
                        blocked.append((op, want, bmem))
                        steps.append((self._reorder(pmd, want), self._args([(_SRC, pmem), (_DST, bmem)])))
                    else:
                        after.append((self._reorder(want, pmd), self._args([(_SRC, bmem), (_DST, pmem)])))
                    conv_args.append((arg, bmem))
                if bias and kind == "fwd":
                    self.plain["bias"] = bm = self._mem(bmd, None)
                    conv_args.append((_BIAS, bm))
                steps.append((prim, self._args(conv_args)))
                self.stages.append((most, steps + after))
        except BaseException:
            self.close()
            raise
        finally:
            for m in mds:
                lib.dnnl_memory_desc_destroy(m)

    def _backward_pd(self, kind, xmd, wmd, ymd, S, D, PL, PR, hint):
        api = self.api
        lib = api.lib
        pd = api.P()
        if kind == "bwd_in":
            st = lib.dnnl_convolution_backward_data_primitive_desc_create(
                api.byref(pd), api.eng, _DIRECT, xmd, wmd, ymd, S, D, PL, PR, hint, None)
        else:
            st = lib.dnnl_convolution_backward_weights_primitive_desc_create(
                api.byref(pd), api.eng, _DIRECT, xmd, wmd, None, ymd, S, D, PL, PR, hint, None)
        return None if st else pd

    def _own(self, name, h):
        self.owned.append((name, h))
        return h

    def _prim(self, pd):
        p = self.api.P()
        st = self.api.lib.dnnl_primitive_create(self.api.byref(p), pd)
        if st:
            raise _Refused(f"primitive: status {st}")
        return self._own("dnnl_primitive_destroy", p)

    def _reorder(self, src, dst):
        api = self.api
        pd = api.P()
        st = api.lib.dnnl_reorder_primitive_desc_create(api.byref(pd), src, api.eng, dst, api.eng, None)
        if st:
            raise _Refused(f"reorder: status {st}")
        try:
            return self._prim(pd)
        finally:
            api.lib.dnnl_primitive_desc_destroy(pd)

    def _buffer(self, nbytes):
        raw = np.empty(nbytes + 64, np.uint8)
        self.nbytes += raw.nbytes
        off = (-raw.ctypes.data) % 64
        self.bufs.append(raw)
        return raw.ctypes.data + off

    def _mem(self, md, ptr):
        api = self.api
        m = api.P()
        st = api.lib.dnnl_memory_create(api.byref(m), md, api.eng, ptr)
        if st:
            raise _Refused(f"memory: status {st}")
        return self._own("dnnl_memory_destroy", m)

    def _args(self, pairs):
        A = self.api.Arg
        return (A * len(pairs))(*[A(a, m) for a, m in pairs])

    def run(self, ptrs):
        """Run the passes on the caller's arrays: ``ptrs`` maps each operand to a data pointer."""
        api = self.api
        lib = api.lib
        put = lib.dnnl_memory_set_data_handle
        for op, m in self.plain.items():
            put(m, ptrs[op])
        ex, strm = lib.dnnl_primitive_execute, api.strm
        sync = api.blas._sync_threads
        guard = api.blas.guard          # (see ops._blas._SignalGuard: some passes run its GEMMs)
        old = guard.block()
        try:
            for most, steps in self.stages:
                sync(most)
                for prim, args in steps:
                    st = ex(prim, strm, len(args), args)
                    if st:
                        raise RuntimeError(f"oneDNN's convolution failed (status {st})")
                lib.dnnl_stream_wait(strm)
        finally:
            guard.restore(old)

    def close(self):
        lib = self.api.lib
        for name, h in reversed(self.owned):
            getattr(lib, name)(h)
        self.owned = []

    def __del__(self):
        if sys.is_finalizing():
            return          # (the process is ending: oneDNN may already be torn down)
        try:
            self.close()
        except Exception:
            pass


def _pass_threads(kind, nt):
    # The weight gradient runs on one thread: oneDNN sums it over the batch in per-thread
    # parts, so its bits would depend on the count (the forward and the input gradient do not
    # split a sum)
    return 1 if kind == "bwd_w" else nt


def _plan(kind, xshape, wshape, yshape, p, bias):
    api = _state[0]
    # A primitive keeps the thread count it was made for (its kernels' work split and OpenMP
    # teams follow it): one per count, made after OpenMP's count is set to the count in force
    # (one in a forked child, whose parent's OpenMP pool is not its own); see _pass_threads.
    nt = api.blas._sync_threads(1 if kind == "bwd_w" else None)
    key = (kind, xshape, wshape, yshape, p.stride, p.dilation, p.pad, p.groups, bias, nt)
    with api.cache_lock:
        plan = api.cache.pop(key, None)
        if plan is not None:
            api.cache[key] = plan
    if plan is None:
        try:
            plan = _Plan(api, kind, xshape, wshape, yshape, p.stride, p.dilation, p.pad, p.groups, bias, nt)
        except _Refused:
            plan = False
        with api.cache_lock:
            old = api.cache.pop(key, None)
            if old:
                api.nbytes -= old.nbytes
            api.cache[key] = plan
            api.nbytes += plan.nbytes if plan else 0
            while len(api.cache) > 1 and (len(api.cache) > _CACHE or api.nbytes > _CACHE_BYTES):
                gone = api.cache.pop(next(iter(api.cache)))    # (closed when no call holds it)
                if gone:
                    api.nbytes -= gone.nbytes
    return plan or None


# Least channels (per group, in and out) of a convolution taken: with fewer, oneDNN's blocked
# kernels run mostly padding and its reorders cost more than the convolution; measured
# (forward + both gradients, one thread) against retrograd's own kernels: the seeds' CNN
# (1 -> 4 and 4 -> 8 channels, 5x5) 0.57x -> 0.88x PyTorch's step time, a depthwise 3x3 over
# 32 channels 1.0x -> 1.5x, where 16 -> 16 channels (the ResNet block) went 1.3x -> 0.9x.
_MIN_CH = 16


def _geom_ok(x_ndim, p, wshape):
    return x_ndim == 4 and len(p.stride) == 2 and all(d >= 1 for d in p.dilation) and \
        all(lo >= 0 and hi >= 0 for lo, hi in p.pad) and wshape[1] >= _MIN_CH and wshape[0] // p.groups >= _MIN_CH


def takes(ndim, wshape, p):
    """Whether oneDNN's primitives take a convolution of this geometry (inputs of ``ndim``
    dimensions, weights of ``wshape``) here, float32 operands given."""
    return _geom_ok(ndim, p, wshape) and available()


def _run(name, xshape, wshape, yshape, p, bias, inputs, outputs):
    """Run plan ``name`` of this geometry on the caller's ``inputs`` (operand -> array) into
    fresh float32 ``outputs`` (operand -> shape): the output arrays in that order, or None
    where oneDNN does not take the geometry or another thread holds its plan."""
    plan = _plan(name, tuple(xshape), tuple(wshape), tuple(yshape), p, bias)
    if plan is None or not plan.lock.acquire(blocking=False):
        return None
    try:
        res = [np.empty(shape, _F32) for shape in outputs.values()]
        arrays = {op: np.ascontiguousarray(a) for op, a in inputs.items()}     # (held while the plan runs)
        arrays.update(zip(outputs, res))
        plan.run({op: a.ctypes.data for op, a in arrays.items()})
    finally:
        plan.lock.release()
    return res


def _f32(*arrays):
    return all(a.dtype == _F32 for a in arrays)


def fwd(x, w, p, bias=None):
    """conv(x, w) (+ bias) as (N, O, OH, OW) float32, or None where oneDNN does not run it."""
    if not (_f32(x, w) and takes(x.ndim, w.shape, p)) or (bias is not None and bias.dtype != _F32):
        return None
    yshape = _yshape(x.shape, w.shape, p)
    if yshape is None:
        return None
    inputs = {"src": x, "wei": w} if bias is None else {"src": x, "wei": w, "bias": bias}
    r = _run("fwd", x.shape, w.shape, yshape, p, bias is not None, inputs, {"dst": yshape})
    return None if r is None else r[0]


def _yshape(xshape, wshape, p):
    from .conv import _out_size
    out = _out_size([s + lo + hi for s, (lo, hi) in zip(xshape[2:], p.pad)], wshape[2:], p)
    if min(out) <= 0 or 0 in xshape or 0 in wshape:
        return None
    return (xshape[0], wshape[0]) + out


def bwd_in(g, w, xshape, p):
    """The input gradient of conv(., w) against g, or None."""
    if not (_f32(g, w) and takes(g.ndim, w.shape, p)) or 0 in g.shape or 0 in w.shape or 0 in xshape:
        return None
    r = _run("bwd_in", xshape, w.shape, g.shape, p, False, {"diff_dst": g, "wei": w}, {"diff_src": tuple(xshape)})
    return None if r is None else r[0]


def bwd_w(x, g, wshape, p):
    """The weight gradient of conv(x, .) against g, or None."""
    if not (_f32(x, g) and takes(x.ndim, wshape, p)) or 0 in g.shape or 0 in x.shape or 0 in wshape:
        return None
    r = _run("bwd_w", x.shape, wshape, g.shape, p, False, {"src": x, "diff_dst": g}, {"diff_wei": tuple(wshape)})
    return None if r is None else r[0]


def bwd(x, g, w, p):
    """Both gradients of conv(x, w) against g, (input's, weight's), in one plan that reorders
    g once; or None."""
    if not (_f32(x, g, w) and takes(x.ndim, w.shape, p)) or 0 in g.shape or 0 in x.shape or 0 in w.shape:
        return None
    r = _run("bwd", x.shape, w.shape, g.shape, p, False, {"src": x, "wei": w, "diff_dst": g},
             {"diff_src": x.shape, "diff_wei": w.shape})
    return None if r is None else tuple(r)


def fwd_bwd_w(x, w, g, p):
    """conv(x, w) and the weight gradient of conv(x, .) against g, in one plan that reorders x
    once (a transposed convolution's two gradients, x its output's gradient); or None."""
    if not (_f32(x, g, w) and takes(x.ndim, w.shape, p)):
        return None
    yshape = _yshape(x.shape, w.shape, p)
    if yshape is None or yshape != g.shape:
        return None
    r = _run("fwd_bwd_w", x.shape, w.shape, yshape, p, False, {"src": x, "wei": w, "diff_dst": g},
             {"dst": yshape, "diff_wei": w.shape})
    return None if r is None else tuple(r)
