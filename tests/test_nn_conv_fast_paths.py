"""The layout-specific convolution paths (depthwise stride-1 per-sample columns, strided
and transposed convolutions) against PyTorch and finite differences."""
import numpy as np
import pytest

import retrograd
from helpers import check, gradcheck_op, needs_torch, torch


@pytest.fixture(autouse=True)
def _own_kernels(own_conv):
    """(retrograd's own convolution kernels are under test here, not oneDNN's)"""


F = lambda x: (retrograd if isinstance(x, retrograd.Tensor) else torch).nn.functional  # noqa: E731

# depthwise geometries: the flipped-kernel input gradient needs 0 <= padding <= dilation * (k - 1)
DEPTHWISE = [
    (dict(padding=1), (2, 3, 6, 5), (3, 1, 3, 3)),
    (dict(padding=0), (2, 3, 6, 5), (3, 1, 3, 3)),
    (dict(padding=(1, 0)), (2, 3, 7, 6), (3, 1, 3, 2)),
    (dict(padding=(2, 1), dilation=2), (1, 4, 7, 7), (4, 1, 3, 3)),
    (dict(padding=3), (2, 3, 5, 4), (3, 1, 3, 3)),               # more padding than the kernel reach
    (dict(padding=(0, 2)), (2, 2, 5, 6), (2, 1, 1, 3)),
    (dict(padding=1, stride=2), (2, 3, 7, 6), (3, 1, 3, 3)),     # strided: the offset loop
]


@needs_torch
@pytest.mark.parametrize("kw,xs,ws", DEPTHWISE)
def test_depthwise_parity(kw, xs, ws):
    check(lambda x, w, b: F(x).conv2d(x, w, b, groups=ws[0], **kw), [xs, ws, (ws[0],)])


@pytest.mark.parametrize("kw,xs,ws", DEPTHWISE)
def test_depthwise_gradcheck(kw, xs, ws):
    gradcheck_op(lambda x, w: retrograd.nn.functional.conv2d(x, w, groups=ws[0], **kw), [xs, ws],
                 second_order=True)


@needs_torch
@pytest.mark.parametrize("where", ["input", "weight"])
def test_depthwise_nonfinite(where):
    """An inf in the input or the weight spreads as PyTorch's kernels spread it (the fast
    paths are taken only for finite operands)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 5))
    w = rng.standard_normal((3, 1, 3, 3))
    if where == "input":
        x[0, 1, 2, 2] = np.inf
    else:
        w[2, 0, 1, 1] = np.inf
    g = rng.standard_normal((2, 3, 5, 5))
    res = []
    for lib in (retrograd, torch):
        xt = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        y = lib.nn.functional.conv2d(xt, wt, padding=1, groups=3)
        y.backward(lib.tensor(g))
        res.append((y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, equal_nan=True)
