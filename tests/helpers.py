"""The one-line op test: the same function run on retrograd and PyTorch tensors.

``check(fn, shapes)`` builds float64 inputs of the given shapes (a shape, a
("nc", shape) for a non-contiguous input, or a plain value passed through), runs
``fn`` on retrograd and on torch, and compares forward values, the grad_fn name and
every input's gradient under a random upstream gradient. ``gradcheck_op`` runs
retrograd's finite-difference gradcheck (no torch needed).
"""
import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck

try:
    import torch
    torch.set_num_threads(1)
except ImportError:  # parity tests skip; gradchecks still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (torch==2.13.0) is not installed")


class NC:
    """A non-contiguous input of the given shape (a transposed view of a larger array)."""
    def __init__(self, *shape):
        self.shape = shape


def _make_arrays(specs, rng, low, high, positive):
    arrays = []
    for s in specs:
        if isinstance(s, NC):
            shape = s.shape
            base = rng.uniform(low, high, tuple(reversed(shape)) + (2,)) if shape else rng.uniform(low, high, (2,))
            a = base[..., 0]
            a = a.transpose() if shape else a[0]
            arrays.append(("nc", a))
        elif isinstance(s, tuple):
            arrays.append(("t", rng.uniform(low, high, s)))
        else:
            arrays.append(("v", s))
    if positive:
        arrays = [(k, np.abs(a) + 0.1) if k != "v" else (k, a) for k, a in arrays]
    return arrays


def _to_lib(lib, arrays, requires_grad):
    """(argument, leaf) pairs: a non-contiguous argument is a permuted view of its leaf."""
    mk = torch.from_numpy if lib is torch else retrograd.from_numpy
    out = []
    for k, a in arrays:
        if k == "v":
            out.append((a, None))
            continue
        if k == "nc" and a.ndim >= 2:
            leaf = mk(np.array(a.T, order="C"))
            if requires_grad:
                leaf.requires_grad_(True)
            out.append((leaf.permute(*reversed(range(a.ndim))), leaf))
            continue
        if k == "nc" and a.ndim == 1:
            wide = np.zeros(2 * a.shape[0])
            wide[::2] = a
            leaf = mk(wide)
            if requires_grad:
                leaf.requires_grad_(True)
            out.append((leaf[::2], leaf))
            continue
        leaf = mk(np.array(a, order="C", copy=True))
        if requires_grad and leaf.is_floating_point():
            leaf.requires_grad_(True)
        out.append((leaf, leaf))
    return out


def _np(t):
    if torch is not None and isinstance(t, torch.Tensor):
        return t.detach().cpu().numpy()
    return np.asarray(t.detach()._data)


def _flat_outputs(o):
    if isinstance(o, (tuple, list)):
        return [x for x in o if hasattr(x, "shape")]
    return [o]


def check(fn, specs, *, low=-2.0, high=2.0, positive=False, name=None, atol=1e-7, rtol=1e-6,
          grad=True, seed=0):
    """Compare ``fn`` on retrograd and torch: values, grad_fn name, input gradients."""
    if torch is None:
        pytest.skip("PyTorch (torch==2.13.0) is not installed")
    rng = np.random.default_rng(seed)
    arrays = _make_arrays(specs, rng, low, high, positive)
    outs = {}
    for lib in (retrograd, torch):
        ins = _to_lib(lib, arrays, grad)
        args = [arg for arg, _ in ins]
        leaves = [leaf for _, leaf in ins if leaf is not None and leaf.requires_grad]
        o = fn(*args)
        outs[lib] = (o, leaves)
    (ro, rleaves), (to, tleaves) = outs[retrograd], outs[torch]
    rflat, tflat = _flat_outputs(ro), _flat_outputs(to)
    assert len(rflat) == len(tflat)
    for r, t in zip(rflat, tflat):
        assert tuple(r.shape) == tuple(t.shape), f"shape {tuple(r.shape)} != torch {tuple(t.shape)}"
        assert str(r.dtype) == str(t.dtype), f"dtype {r.dtype} != torch {t.dtype}"
        np.testing.assert_allclose(_np(r), _np(t), atol=atol, rtol=rtol, equal_nan=True)
    if not grad:
        return
    tgt = [i for i, t in enumerate(tflat) if t.requires_grad]
    rgt = [i for i, r in enumerate(rflat) if r.requires_grad]
    assert tgt == rgt, f"requires_grad differs: retrograd {rgt}, torch {tgt}"
    if not tgt:
        return
    if name is not None:
        assert type(rflat[tgt[0]].grad_fn).__name__ == name
    assert type(rflat[tgt[0]].grad_fn).__name__ == type(tflat[tgt[0]].grad_fn).__name__, \
        f"grad_fn {type(rflat[tgt[0]].grad_fn).__name__} != torch {type(tflat[tgt[0]].grad_fn).__name__}"
    ups = [rng.standard_normal(tflat[i].shape) for i in tgt]
    rgrads = retrograd.autograd.grad([rflat[i] for i in tgt], rleaves,
                                     [retrograd.tensor(u, dtype=rflat[i].dtype) for u, i in zip(ups, tgt)],
                                     allow_unused=True)
    tgrads = torch.autograd.grad([tflat[i] for i in tgt], tleaves,
                                 [torch.tensor(u, dtype=tflat[i].dtype) for u, i in zip(ups, tgt)],
                                 allow_unused=True)
    for k, (rg, tg) in enumerate(zip(rgrads, tgrads)):
        if tg is None:
            assert rg is None or not np.any(_np(rg)), f"input {k}: torch gives no gradient"
            continue
        assert rg is not None, f"input {k}: retrograd gave no gradient"
        np.testing.assert_allclose(_np(rg), _np(tg), atol=atol, rtol=rtol, err_msg=f"gradient of input {k}")


def gradcheck_op(fn, specs, *, low=-2.0, high=2.0, positive=False, seed=0, second_order=False,
                 atol=1e-5, rtol=1e-3):
    """Finite-difference gradcheck of ``fn`` in float64 on retrograd alone."""
    rng = np.random.default_rng(seed)
    arrays = _make_arrays(specs, rng, low, high, positive)
    ins = []
    for k, a in arrays:
        if k == "v":
            ins.append(a)
        else:
            ins.append(retrograd.from_numpy(np.array(a, order="C", copy=True)).requires_grad_(True))
    assert gradcheck(fn, tuple(ins), atol=atol, rtol=rtol)
    if second_order:
        assert gradgradcheck(fn, tuple(ins), atol=atol, rtol=rtol)


def mutate_bytes(rng, b, cut=0.6):
    """``b`` with 1-3 random edits from ``rng`` (a ``random.Random``): a bit flip, a cut of the
    tail (with probability ``cut`` - 0.4), an insertion of random bytes, or a repeated run -
    the byte-level mutations of the checkpoint fuzzers."""
    b = bytearray(b)
    for _ in range(rng.randrange(1, 4)):
        op = rng.random()
        if op < 0.4 and b:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        elif op < cut and b:
            del b[rng.randrange(len(b)):]
        elif op < 0.8:
            at = rng.randrange(len(b) + 1)
            b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        elif b:
            at = rng.randrange(len(b))
            b[at:at] = b[at:at + rng.randrange(1, 64)] * rng.randrange(1, 20)
    return bytes(b)


def kernel_path(path, monkeypatch, holder, attr, load):
    """Run a test on one path of an optional numba kernel family: ``"numpy"`` empties the
    family's cache list ``holder.<attr>`` to ``[None]`` (the NumPy reference); ``"compiled"``
    gives it a fresh list and loads the kernels with ``load()``: skipped without numba (or
    under RETROGRAD_NO_NUMBA), a failure if numba is there and the kernels do not load."""
    if path == "numpy":
        monkeypatch.setattr(holder, attr, [None])
        return
    import importlib.util
    import os
    if importlib.util.find_spec("numba") is None or os.environ.get("RETROGRAD_NO_NUMBA"):
        pytest.skip("numba is not installed (or RETROGRAD_NO_NUMBA is set)")
    monkeypatch.setattr(holder, attr, [])
    assert load() is not None


def raised(fn):
    """(exception type name, message) that ``fn()`` raises, or None when it returns: the
    outcome compared between retrograd and torch in error-parity tests."""
    try:
        fn()
    except Exception as e:      # the exception is the outcome compared
        return type(e).__name__, str(e)
    return None


def conv_arrays(xs, ws, pad, dtype=np.float32, seed=0):
    """(x, w, g) for a stride-1 2-d convolution of an ``xs`` input by a ``ws`` weight with
    ``pad`` ((top, bottom), (left, right)): normal data, the weight scaled by its fan-in, and an
    output gradient of the output's shape."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs).astype(dtype)
    w = (rng.standard_normal(ws) / np.sqrt(ws[1] * ws[2] * ws[3])).astype(dtype)
    oh = xs[2] + pad[0][0] + pad[0][1] - ws[2] + 1
    ow = xs[3] + pad[1][0] + pad[1][1] - ws[3] + 1
    g = rng.standard_normal((xs[0], ws[0], oh, ow)).astype(dtype)
    return x, w, g


class KernelSpy:
    """A kernel module standing in for itself, with the names of its kernels looked up (the
    calls made) recorded in ``calls``: all of them, or those starting with ``prefix``."""

    def __init__(self, k, prefix=""):
        self.k, self.prefix, self.calls = k, prefix, []

    def __getattr__(self, name):
        if name.startswith(self.prefix):
            self.calls.append(name)
        return getattr(self.k, name)


_BLAS_LIBS = {}


def blas_lib(kind):
    """ops._blas's library of ``kind`` ('mkl', 'openblas', 'onednn') loaded whatever this machine's
    own choice, or None (not installed here, or RETROGRAD_BLAS=numpy keeps products on NumPy)."""
    from retrograd.ops import _blas
    if _blas._choice() == "numpy":
        return None
    if kind not in _BLAS_LIBS:
        try:
            lib = _blas._openers()[kind]()
        except Exception:
            lib = False
        _BLAS_LIBS[kind] = lib or None
    return _BLAS_LIBS[kind]


def on_blas(kind):
    """A fixture's body: ops._blas runs products on ``kind``'s library while it is suspended
    (skipped where that library is missing)."""
    from retrograd.ops import _blas
    lib = blas_lib(kind)
    if lib is None:
        pytest.skip(f"{kind} is not installed here (or RETROGRAD_BLAS=numpy)")
    prev = _blas._state[0]
    _blas._state[0] = lib
    try:
        yield lib
    finally:
        _blas._state[0] = prev


def in_forked_child(target, timeout=60):
    """``target(queue)`` run in a forked child (as a DataLoader worker is): what it put on the
    queue, after checking that the child neither hung nor failed."""
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=target, args=(q,))
    p.start()
    p.join(timeout)
    alive = p.is_alive()
    if alive:
        p.kill()
    assert not alive, "the forked child hung"
    assert p.exitcode == 0, f"the forked child exited with {p.exitcode}"
    return q.get(timeout=5)
