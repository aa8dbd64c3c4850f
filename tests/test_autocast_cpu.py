"""CPU autocast: which ops run in bfloat16/float16 and which in float32 (PyTorch 2.13's lists),
with values and gradients bit for bit against torch."""
import warnings

import numpy as np
import pytest

import retrograd
from helpers import needs_torch, torch

pytest.importorskip("ml_dtypes")

_RNG = np.random.default_rng(0)
_SHAPES = {"x": (4, 3), "w": (2, 3), "b": (2,), "img": (1, 1, 5, 5), "k": (2, 1, 3, 3), "b3": (2, 3, 4),
           "i3": (1, 2, 5), "k1": (2, 2, 3), "v": (3,), "sq": (3, 3), "p": (4, 3)}
_ARR = {k: _RNG.standard_normal(s).astype(np.float32) for k, s in _SHAPES.items()}
_ARR["sq"] += 3 * np.eye(3, dtype=np.float32)
_ARR["p"] = np.abs(_ARR["p"]) / (1 + np.abs(_ARR["p"]))

_OPS = {
    "linear": lambda m, F, a: F.linear(a["x"], a["w"], a["b"]), "matmul": lambda m, F, a: a["x"] @ a["w"].T,
    "matmul_mv": lambda m, F, a: m.matmul(a["sq"], a["v"]), "mm": lambda m, F, a: m.mm(a["x"], a["w"].T),
    "bmm": lambda m, F, a: m.bmm(a["b3"], a["b3"].transpose(1, 2)),
    "addmm": lambda m, F, a: m.addmm(a["b"], a["x"], a["w"].T),
    "baddbmm": lambda m, F, a: m.baddbmm(a["sq"], a["b3"][:, :, :3], a["b3"][:, :, :3]),
    "addbmm": lambda m, F, a: m.addbmm(a["sq"], a["b3"], a["b3"].transpose(1, 2)),
    "mv": lambda m, F, a: m.mv(a["sq"], a["v"]), "dot": lambda m, F, a: m.dot(a["v"], a["v"]),
    "outer": lambda m, F, a: m.outer(a["v"], a["v"]), "einsum": lambda m, F, a: m.einsum("ij,kj->ik", a["x"], a["w"]),
    "tensordot": lambda m, F, a: m.tensordot(a["x"], a["w"], dims=([1], [1])),
    "conv1d": lambda m, F, a: F.conv1d(a["i3"], a["k1"]), "conv2d": lambda m, F, a: F.conv2d(a["img"], a["k"]),
    "conv_transpose1d": lambda m, F, a: F.conv_transpose1d(a["i3"], a["k1"]),
    "conv_transpose2d": lambda m, F, a: F.conv_transpose2d(a["img"], a["k"].transpose(0, 1)),
    "prelu": lambda m, F, a: F.prelu(a["x"], m.tensor([0.25])),
    "sdpa": lambda m, F, a: F.scaled_dot_product_attention(a["b3"], a["b3"], a["b3"]),
    "exp": lambda m, F, a: a["x"].exp(), "relu": lambda m, F, a: a["x"].relu(), "sum": lambda m, F, a: a["x"].sum(),
    "softmax": lambda m, F, a: a["x"].softmax(-1), "layer_norm": lambda m, F, a: F.layer_norm(a["x"], (3,)),
    "mse_loss": lambda m, F, a: F.mse_loss(a["x"], a["p"]), "l1_loss": lambda m, F, a: F.l1_loss(a["x"], a["p"]),
    "smooth_l1_loss": lambda m, F, a: F.smooth_l1_loss(a["x"], a["p"]),
    "huber_loss": lambda m, F, a: F.huber_loss(a["x"], a["p"]),
    "cross_entropy": lambda m, F, a: F.cross_entropy(a["x"], m.tensor([0, 1, 1, 0])),
    "nll_loss": lambda m, F, a: F.nll_loss(a["x"], m.tensor([0, 1, 1, 0])),
    "kl_div": lambda m, F, a: F.kl_div(a["x"], a["p"], reduction="batchmean"),
    "bce": lambda m, F, a: F.binary_cross_entropy(a["p"], a["p"]),
    "bce_logits": lambda m, F, a: F.binary_cross_entropy_with_logits(a["x"], a["p"]),
    "margin_ranking_loss": lambda m, F, a: F.margin_ranking_loss(a["v"], a["v"], a["v"]),
    "cosine_embedding_loss": lambda m, F, a: F.cosine_embedding_loss(a["x"], a["p"], m.ones(4)),
    "triplet_margin_loss": lambda m, F, a: F.triplet_margin_loss(a["x"], a["p"], a["x"]),
    "grid_sample": lambda m, F, a: F.grid_sample(a["img"], a["p"][:, :2].reshape(1, 2, 2, 2) * 2 - 1,
                                                 align_corners=False),
    "prod": lambda m, F, a: a["x"].prod(), "prod_fn": lambda m, F, a: m.prod(a["x"], 1),
    "inverse": lambda m, F, a: m.inverse(a["sq"]), "std": lambda m, F, a: a["x"].std(),
    "mean": lambda m, F, a: a["x"].mean(), "max_pool2d": lambda m, F, a: F.max_pool2d(a["img"], 2),
    "add_mixed": lambda m, F, a: (a["x"] @ a["w"].T) + a["b"],
    "cat_mixed": lambda m, F, a: m.cat([a["x"] @ a["w"].T, a["x"][:, :2]]),
    "double_mm": lambda m, F, a: m.mm(a["x"].double(), a["w"].T.double()),
}


def _run(m, op, region_dtype, input_dtype):
    a = {k: m.from_numpy(v.copy()) for k, v in _ARR.items()}
    if input_dtype is not None:
        a = {k: v.to(getattr(m, input_dtype)) for k, v in a.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with m.autocast("cpu", dtype=getattr(m, region_dtype)):
            return _OPS[op](m, m.nn.functional, a)


@needs_torch
@pytest.mark.parametrize("region", ["bfloat16", "float16"])
@pytest.mark.parametrize("inputs", [None, "bfloat16", "float16"])
@pytest.mark.parametrize("op", sorted(_OPS))
def test_output_dtype_as_torch(op, region, inputs):
    try:
        want = _run(torch, op, region, inputs)
    except (RuntimeError, NotImplementedError) as e:  # torch has no kernel for it
        pytest.skip(f"torch: {e}"[:100])
    got = _run(retrograd, op, region, inputs)
    assert str(got.dtype) == str(want.dtype)


_OPS["mse_of_linear"] = lambda m, F, a: F.mse_loss(F.linear(a["x"], a["w"]), a["p"][:, :2])


@needs_torch
@pytest.mark.parametrize("op", ["linear", "matmul", "mm", "bmm", "addmm", "conv1d", "conv2d", "conv_transpose2d",
                                "sdpa", "mse_of_linear", "cross_entropy", "add_mixed", "baddbmm", "addbmm"])
def test_bfloat16_values_as_torch(op):
    want, got = _run(torch, op, "bfloat16", None), _run(retrograd, op, "bfloat16", None)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(np.asarray(got.detach().float()._data), want.detach().float().numpy())


def _train_step(m):
    m.manual_seed(0)
    rs = np.random.RandomState(1)
    lin, conv = m.nn.Linear(5, 4), m.nn.Conv2d(3, 2, 3)
    with m.no_grad():
        for p in (lin.weight, lin.bias, conv.weight, conv.bias):
            p.copy_(m.tensor(rs.randn(*p.shape).astype(np.float32)))
    x = m.tensor(rs.randn(8, 5).astype(np.float32))
    img = m.tensor(rs.randn(2, 3, 6, 6).astype(np.float32))
    with m.autocast("cpu", dtype=m.bfloat16):
        y = lin(x)
        c = conv(img)
        s = y @ y.T
        loss = m.nn.functional.mse_loss(y, m.zeros(8, 4)) + c.float().pow(2).mean() + s.sum()
    loss.backward()
    return [y, c, s, loss, lin.weight.grad, lin.bias.grad, conv.weight.grad, conv.bias.grad]


@needs_torch
def test_region_values_grad_fns_and_float32_master_grads_as_torch():
    for r, t in zip(_train_step(retrograd), _train_step(torch)):
        assert str(r.dtype) == str(t.dtype)
        assert type(r.grad_fn).__name__ == type(t.grad_fn).__name__ if t.grad_fn is not None else r.grad_fn is None
        np.testing.assert_array_equal(np.asarray(r.detach().float()._data), t.detach().float().numpy())


def test_cpu_autocast_alias_and_default_dtype():
    x = retrograd.randn(3, 3)
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"), \
            retrograd.cpu.amp.autocast():
        assert (x @ x).dtype is retrograd.bfloat16
        assert retrograd.nn.functional.mse_loss(x.bfloat16(), x.bfloat16()).dtype is retrograd.float32
        assert x.exp().dtype is retrograd.float32
    with retrograd.autocast("cpu"):
        assert (x @ x).dtype is retrograd.bfloat16 and (x.double() @ x.double()).dtype is retrograd.float64
    assert (x @ x).dtype is retrograd.float32
