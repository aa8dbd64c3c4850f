"""softmax / log_softmax over the last dim at sizes that take the compiled row kernels (numba,
optional) against the NumPy path (the reference, as with RETROGRAD_NO_NUMBA=1) with
non-finite rows, against PyTorch (with cross_entropy and nll_loss on top, double backward
included) and finite differences."""
import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from retrograd.ops import _accel_nn
from helpers import needs_torch, torch

F = retrograd.nn.functional
SHAPES = [(700, 100), (16, 4, 64, 64), (6, 5000), (4096, 2)]


def _x(shape, dtype, seed=0, specials=True):
    x = (np.random.default_rng(seed).standard_normal(shape) * 4).astype(dtype)
    if specials:
        r = x.reshape(-1, shape[-1])
        r[0] = -np.inf                   # all -inf: NaN (not attention's safe softmax)
        r[1, 1] = np.nan
        r[2, 0] = np.inf
        r[3, 1:] = -np.inf               # one finite entry
        r[4, 0] = -np.inf
        r[5, 0] = 1e30
    return x


def _run(lib, name, x, g, create_graph=False):
    xt = lib.tensor(x, requires_grad=True)
    y = getattr(lib.nn.functional, name)(xt, -1)
    (gx,) = lib.autograd.grad(y, xt, lib.tensor(g), create_graph=create_graph)
    return y.detach().numpy(), gx.detach().numpy()


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_compiled_rows_match_the_numpy_path(monkeypatch, name, shape, dtype):
    if _accel_nn.kernels() is None:
        pytest.skip("numba is not installed (or RETROGRAD_NO_NUMBA is set)")
    x = _x(shape, dtype)
    g = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    got = _run(retrograd, name, x, g)
    monkeypatch.setattr(_accel_nn, "_KERNELS", [None])
    want = _run(retrograd, name, x, g)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype == dtype
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(np.isinf(a), np.isinf(b))
        fin = np.isfinite(b)
        np.testing.assert_allclose(a[fin], b[fin], **tol)


@needs_torch
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_torch(nn_kernels_path, name, shape, dtype):
    x = _x(shape, dtype, seed=2, specials=False)
    g = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    for a, b in zip(_run(retrograd, name, x, g), _run(torch, name, x, g)):
        np.testing.assert_allclose(a, b, **tol)


@needs_torch
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_double_backward_matches_torch(nn_kernels_path, name, dtype):
    x = _x((64, 96), dtype, seed=4, specials=False)
    g = np.random.default_rng(5).standard_normal(x.shape).astype(dtype)
    v = np.random.default_rng(6).standard_normal(x.shape).astype(dtype)
    res = []
    for lib in (retrograd, torch):
        xt, gt = lib.tensor(x, requires_grad=True), lib.tensor(g, requires_grad=True)
        y = getattr(lib.nn.functional, name)(xt, -1)
        (gx,) = lib.autograd.grad(y, xt, gt, create_graph=True)
        res.append([a.numpy() for a in lib.autograd.grad((gx * lib.tensor(v)).sum(), (xt, gt))])
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-11)
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, **tol)


@needs_torch
@pytest.mark.parametrize("kw", [dict(), dict(ignore_index=3), dict(weight=True), dict(label_smoothing=0.1),
                                dict(reduction="sum"), dict(reduction="none")])
def test_cross_entropy_and_nll_match_torch(nn_kernels_path, kw):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((700, 100)) * 3).astype(np.float32)
    t = rng.integers(0, 100, 700)
    w = rng.uniform(0.5, 2, 100).astype(np.float32)
    res = []
    for lib in (retrograd, torch):
        k = dict(kw)
        if k.pop("weight", False):
            k["weight"] = lib.tensor(w)
        xt = lib.tensor(x, requires_grad=True)
        ce = lib.nn.functional.cross_entropy(xt, lib.tensor(t), **k)
        xt2 = lib.tensor(x, requires_grad=True)
        k.pop("label_smoothing", None)
        nll = lib.nn.functional.nll_loss(lib.nn.functional.log_softmax(xt2, 1), lib.tensor(t), **k)
        (ce.sum() + nll.sum()).backward()
        res.append((ce.detach().numpy(), nll.detach().numpy(), xt.grad.numpy(), xt2.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@needs_torch
def test_cross_entropy_graph_names_match_torch(nn_kernels_path):
    x = np.random.default_rng(8).standard_normal((64, 100)).astype(np.float32)
    t = np.random.default_rng(9).integers(0, 100, 64)
    names = []
    for lib in (retrograd, torch):
        loss = lib.nn.functional.cross_entropy(lib.tensor(x, requires_grad=True), lib.tensor(t))
        fn, seen = loss.grad_fn, []
        while fn is not None:
            seen.append(type(fn).__name__)
            fn = next((f for f, _ in fn.next_functions if f is not None and type(f).__name__ != "AccumulateGrad"),
                      None)
        names.append(seen)
    assert names[0] == names[1]


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_gradcheck_float64_at_kernel_size(nn_kernels_path, name):
    x = retrograd.tensor(np.random.default_rng(10).standard_normal((64, 64)), requires_grad=True)
    assert x.numel() >= _accel_nn.MIN_SIZE
    f = lambda x: getattr(F, name)(x, -1)
    assert gradcheck(f, (x,))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_gradgradcheck_float64(name):
    x = retrograd.tensor(np.random.default_rng(11).standard_normal((3, 6)), requires_grad=True)
    assert gradgradcheck(lambda x: getattr(F, name)(x, -1), (x,))


def _edge_rows(n, dtype):
    """Rows whose maximum is decided by the float32 kernels' integer ordering of the bits:
    signed zeros, a NaN with its sign bit set, NaN under -inf, subnormals, +-inf."""
    x = (np.random.default_rng(12).standard_normal((12, n)) * 4).astype(dtype)
    x[0] = -3.0
    x[0, 5] = -0.0                           # maximum -0.0
    x[1] = -3.0
    x[1, 5], x[1, 9] = -0.0, 0.0             # both zeros
    x[2, 7] = -np.nan                        # a NaN with its sign bit set
    x[3] = -np.inf
    x[3, n // 2] = np.nan                    # NaN hidden under -inf
    x[4] = -np.inf
    x[4, 1] = -np.nan
    x[5] = -1e-42                            # subnormals (float32)
    x[5, 3] = 1e-42
    x[6, n - 1] = np.inf                     # +inf last (past the vector lanes)
    x[7] = -np.inf
    x[7, n - 1] = 2.0                        # one finite entry, last
    x[8] = np.float32(-3e38)
    x[9, ::2] = -np.inf
    return x


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("n", [65, 1000, 17])
def test_float32_rows_edge_values_match_the_numpy_path(monkeypatch, name, n):
    if _accel_nn.kernels() is None:
        pytest.skip("numba is not installed (or RETROGRAD_NO_NUMBA is set)")
    x = np.concatenate([_edge_rows(n, np.float32), _x((4096 // n + 1, n), np.float32, seed=13, specials=False)])
    g = np.random.default_rng(14).standard_normal(x.shape).astype(np.float32)
    got = _run(retrograd, name, x, g)
    monkeypatch.setattr(_accel_nn, "_KERNELS", [None])
    want = _run(retrograd, name, x, g)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(np.isinf(a), np.isinf(b))
        fin = np.isfinite(b)
        np.testing.assert_allclose(a[fin], b[fin], rtol=1e-5, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", [(2, 200000), (1024, 65), (700, 1000)])
def test_float32_long_and_vocabulary_rows_match_torch(nn_kernels_path, name, shape):
    # the float32 kernels sum a row in float32 vector lanes: as close to float64 as PyTorch is
    x = _x(shape, np.float32, seed=15, specials=False)
    g = np.random.default_rng(16).standard_normal(shape).astype(np.float32)
    ref = _run(torch, name, x.astype(np.float64), g.astype(np.float64))
    ours, theirs = _run(retrograd, name, x, g), _run(torch, name, x, g)
    for a, t, r in zip(ours, theirs, ref):
        assert np.abs(a - r).max() <= max(2 * np.abs(t - r).max(), 1e-6)
        # (PyTorch's own float32 gradient is ~1e-4 off float64 on the 200,000-long rows)
        np.testing.assert_allclose(a, t, rtol=2e-5, atol=2e-5 if shape[1] < 10 ** 5 else 2e-4)
