"""bfloat16 as a real 2-byte type (ml_dtypes): storage, rounding, printing, promotion, casts,
arithmetic / matmul / reductions / autograd bit for bit against torch, serialization."""
import io
import subprocess
import sys

import numpy as np
import pytest

import retrograd
from helpers import needs_torch, torch

pytest.importorskip("ml_dtypes")


def _bits(t):
    """The bfloat16 bits of a retrograd or torch tensor (uint16), for exact comparisons."""
    if torch is not None and isinstance(t, torch.Tensor):
        return t.detach().contiguous().view(torch.int16).numpy().view(np.uint16)
    return np.ascontiguousarray(t.detach()._data).view(np.uint16)


def _same(r, t):
    assert str(r.dtype) == str(t.dtype)
    assert tuple(r.shape) == tuple(t.shape)
    if r.dtype == retrograd.bfloat16:
        np.testing.assert_array_equal(_bits(r), _bits(t))
    else:
        np.testing.assert_array_equal(np.asarray(r.detach()._data), t.detach().numpy())


def test_import_does_not_load_ml_dtypes():
    code = "import sys, retrograd; assert 'ml_dtypes' not in sys.modules; retrograd.float32; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="src")
    assert out.returncode == 0, out.stderr


def test_missing_ml_dtypes_names_the_package():
    code = ("import sys; sys.modules['ml_dtypes'] = None\n"
            "import retrograd\n"
            "try:\n    retrograd.zeros(2).bfloat16()\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="src")
    assert "ml_dtypes" in out.stdout and "pip install" in out.stdout, out.stdout + out.stderr


def test_storage_is_two_bytes():
    x = retrograd.zeros(3, 4, dtype=retrograd.bfloat16)
    assert x.dtype is retrograd.bfloat16 and x.element_size() == 2 and x.itemsize == 2 and x.nbytes == 24
    assert x.is_floating_point() and retrograd.bfloat16.is_floating_point and retrograd.bfloat16.itemsize == 2
    assert x._data.dtype.name == "bfloat16"


@needs_torch
def test_rounding_is_round_to_nearest_even_as_torch():
    rng = np.random.default_rng(0)
    vals = np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.integers(-40, 38, 2000),
                           [1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 3.4e38, 3.39e38, 1e-45, 0.0, -0.0,
                            np.inf, -np.inf, 2 ** -133, 65504.0]]).astype(np.float32)
    for r, t in ((retrograd.tensor(vals).bfloat16(), torch.tensor(vals).bfloat16()),
                 (retrograd.tensor(vals.tolist(), dtype=retrograd.bfloat16),
                  torch.tensor(vals.tolist(), dtype=torch.bfloat16)),
                 (retrograd.tensor(vals.astype(np.float64)).to(retrograd.bfloat16),
                  torch.tensor(vals.astype(np.float64)).to(torch.bfloat16))):
        _same(r, t)
    nan_r = retrograd.tensor([float("nan")]).bfloat16()
    assert np.isnan(nan_r.float().item())


@needs_torch
def test_printing_as_torch():
    vals = [[5.28125, -1.203125, 2.9375], [0.0031, 1e6, -7.0]]
    for v in (vals, [1.0, 2.5, 3.0], [1.0, 2.0], [[1e-5, 3.0]], 3.14159, [float("inf"), float("nan"), 1.5], []):
        assert repr(retrograd.tensor(v, dtype=retrograd.bfloat16)) == repr(torch.tensor(v, dtype=torch.bfloat16))
    r = retrograd.tensor([1.5, 2.25], dtype=retrograd.bfloat16, requires_grad=True)
    t = torch.tensor([1.5, 2.25], dtype=torch.bfloat16, requires_grad=True)
    assert repr(r * 2) == repr(t * 2).replace("MulBackward0", "MulBackward0")
    assert str(retrograd.bfloat16) == "torch.bfloat16"


@needs_torch
def test_finfo_as_torch():
    r, t = retrograd.finfo(retrograd.bfloat16), torch.finfo(torch.bfloat16)
    for k in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(r, k) == getattr(t, k), k


@needs_torch
def test_promotion_table_as_torch():
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
             "complex64", "complex128"]
    for n in names:
        assert str(retrograd.promote_types(retrograd.bfloat16, getattr(retrograd, n))) == \
            str(torch.promote_types(torch.bfloat16, getattr(torch, n))), n
    rb = retrograd.tensor([1.5, -2.25], dtype=retrograd.bfloat16)
    tb = torch.tensor([1.5, -2.25], dtype=torch.bfloat16)
    for other in ("float16", "float32", "float64", "int64", "int32", "uint8", "bool"):
        ro = retrograd.tensor([1, 0]).to(getattr(retrograd, other))
        to = torch.tensor([1, 0]).to(getattr(torch, other))
        assert str((rb + ro).dtype) == str((tb + to).dtype), other
        assert str((ro * rb).dtype) == str((to * tb).dtype), other
    for s in (2, 2.5, True):
        assert (rb + s).dtype is retrograd.bfloat16
    ri, ti = retrograd.tensor([1, 2]), torch.tensor([1, 2])
    assert str((ri + retrograd.tensor(1.5, dtype=retrograd.bfloat16)).dtype) == \
        str((ti + torch.tensor(1.5, dtype=torch.bfloat16)).dtype)


@needs_torch
def test_casts_as_torch():
    a = np.linspace(-3, 3, 13, dtype=np.float32) * 1.0137
    r, t = retrograd.tensor(a), torch.tensor(a)
    _same(r.bfloat16(), t.bfloat16())
    _same(r.bfloat16().half(), t.bfloat16().half())
    _same(r.bfloat16().float(), t.bfloat16().float())
    _same(r.bfloat16().double(), t.bfloat16().double())
    _same(r.bfloat16().long(), t.bfloat16().long())
    _same(r.half().bfloat16(), t.half().bfloat16())
    _same(r.to(retrograd.bfloat16), t.to(torch.bfloat16))
    _same(r.type(retrograd.bfloat16), t.type(torch.bfloat16))
    _same(retrograd.ones(2, 3, dtype=retrograd.bfloat16), torch.ones(2, 3, dtype=torch.bfloat16))
    _same(retrograd.full((3,), 1.1, dtype=retrograd.bfloat16), torch.full((3,), 1.1, dtype=torch.bfloat16))
    _same(retrograd.arange(0, 1, 0.1, dtype=retrograd.bfloat16), torch.arange(0, 1, 0.1, dtype=torch.bfloat16))
    _same(retrograd.zeros_like(r, dtype=retrograd.bfloat16), torch.zeros_like(t, dtype=torch.bfloat16))
    assert retrograd.randn(3, dtype=retrograd.bfloat16).dtype is retrograd.bfloat16
    assert r.bfloat16()[0].item() == t.bfloat16()[0].item()
    assert r.bfloat16().tolist() == t.bfloat16().tolist()
    m = retrograd.nn.Linear(3, 2).bfloat16()
    assert m.weight.dtype is retrograd.bfloat16 and m.weight.element_size() == 2


_A = np.random.default_rng(1).standard_normal((6, 7)).astype(np.float32) * 3
_B = np.random.default_rng(2).standard_normal((6, 7)).astype(np.float32)

_OPS = {
    "add": lambda m, a, b: a + b, "sub": lambda m, a, b: a - b, "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b, "add_float": lambda m, a, b: a + 1.7, "sub_float": lambda m, a, b: 0.3 - a,
    "mul_float": lambda m, a, b: a * 0.3, "div_float": lambda m, a, b: a / 2.71828, "rdiv": lambda m, a, b: 1.3 / a,
    "add_int": lambda m, a, b: a + 3, "pow2": lambda m, a, b: a ** 2, "pow_float": lambda m, a, b: b.abs() ** 0.7,
    "neg": lambda m, a, b: -a, "abs": lambda m, a, b: a.abs(), "exp": lambda m, a, b: a.exp(),
    "log": lambda m, a, b: b.abs().log(), "sin": lambda m, a, b: a.sin(), "tanh": lambda m, a, b: a.tanh(),
    "sigmoid": lambda m, a, b: a.sigmoid(), "sqrt": lambda m, a, b: b.abs().sqrt(), "relu": lambda m, a, b: a.relu(),
    "gelu": lambda m, a, b: m.nn.functional.gelu(a), "silu": lambda m, a, b: m.nn.functional.silu(a),
    "clamp": lambda m, a, b: a.clamp(-1, 1), "where": lambda m, a, b: m.where(a > 0, a, b),
    "maximum": lambda m, a, b: m.maximum(a, b), "lt": lambda m, a, b: a < b,
    "softmax": lambda m, a, b: a.softmax(-1), "layer_norm": lambda m, a, b: m.nn.functional.layer_norm(a, (7,)),
    "sum": lambda m, a, b: a.sum(), "sum_dim": lambda m, a, b: a.sum(1), "mean": lambda m, a, b: a.mean(0),
    "var": lambda m, a, b: a.var(1), "std": lambda m, a, b: a.std(), "norm": lambda m, a, b: a.norm(),
    "prod": lambda m, a, b: b.prod(1), "max": lambda m, a, b: a.max(1).values, "cumsum": lambda m, a, b: a.cumsum(1),
    "matmul": lambda m, a, b: a @ b.T, "mv": lambda m, a, b: a @ b[0], "bmm": lambda m, a, b: m.bmm(a[None], b.T[None]),
    "linear": lambda m, a, b: m.nn.functional.linear(a, b, b[:, 0]),
    "addmm": lambda m, a, b: m.addmm(a[:, :6], a, b.T), "cat": lambda m, a, b: m.cat([a, b]),
    "conv1d": lambda m, a, b: m.nn.functional.conv1d(a[None], b[:3, :6, None].expand(3, 6, 2).contiguous()),
    "mse_loss": lambda m, a, b: m.nn.functional.mse_loss(a, b),
    "cross_entropy": lambda m, a, b: m.nn.functional.cross_entropy(a, m.tensor([0, 1, 2, 3, 4, 5])),
}


# Known 1-ulp differences (strict: a fix makes the test fail until the entry is removed).
_ULP = {
    "gelu": "torch's vectorized float32 erf differs from retrograd's in the last float32 bits; far in the negative "
            "tail (|gelu| < 1e-4) that survives the bfloat16 rounding",
    "cross_entropy": "log_softmax: torch's bfloat16 kernel rounds an intermediate that retrograd keeps in float32 "
                     "(1 ulp on a few percent of elements)",
    "log_softmax": "as cross_entropy",
    "rsqrt": "torch rounds sqrt to bfloat16 before the reciprocal; retrograd rounds once",
}
_OPS["log_softmax"] = lambda m, a, b: a.log_softmax(-1)
_OPS["rsqrt"] = lambda m, a, b: b.abs().rsqrt()


@needs_torch
@pytest.mark.parametrize("name", [n if n not in _ULP else pytest.param(
    n, marks=pytest.mark.xfail(strict=True, reason=_ULP[n])) for n in sorted(_OPS)])
def test_ops_bit_for_bit_as_torch(name):
    f = _OPS[name]
    r = f(retrograd, retrograd.tensor(_A).bfloat16(), retrograd.tensor(_B).bfloat16())
    t = f(torch, torch.tensor(_A).bfloat16(), torch.tensor(_B).bfloat16())
    _same(r, t)


def _mlp(m, act, X, W1, b1, W2):
    P = [m.tensor(a).bfloat16().requires_grad_() for a in (W1, b1, W2)]
    x = m.tensor(X).bfloat16()
    h = act(m, m.nn.functional.linear(x, P[0], P[1]))
    o = h @ P[2].T
    loss = (o * o).mean() + o.sigmoid().sum() * 0.1 + o.softmax(-1)[:, 0].sum()
    loss.backward()
    return [loss, o] + [p.grad for p in P]


@needs_torch
@pytest.mark.parametrize("act", ["tanh", "relu", "gelu", "silu", "softmax"])
def test_gradients_bit_for_bit_as_torch(act):
    rs = np.random.RandomState(0)
    arrays = (rs.randn(8, 5).astype(np.float32), rs.randn(16, 5).astype(np.float32) * .4,
              rs.randn(16).astype(np.float32) * .1, rs.randn(3, 16).astype(np.float32) * .3)
    fn = {"tanh": lambda m, h: h.tanh(), "relu": lambda m, h: h.relu(), "gelu": lambda m, h: m.nn.functional.gelu(h),
          "silu": lambda m, h: m.nn.functional.silu(h), "softmax": lambda m, h: h.softmax(-1) * h}[act]
    got, want = _mlp(retrograd, fn, *arrays), _mlp(torch, fn, *arrays)
    for r, t in zip(got, want):
        assert r.dtype is retrograd.bfloat16
        _same(r, t)
    assert type(got[1].grad_fn).__name__ == type(want[1].grad_fn).__name__


@needs_torch
def test_conv2d_gradients_as_torch():
    rs = np.random.RandomState(3)
    x, w, b = rs.randn(2, 3, 7, 7).astype(np.float32), rs.randn(4, 3, 3, 3).astype(np.float32), rs.randn(4).astype(
        np.float32)
    out = []
    for m in (retrograd, torch):
        xs = [m.tensor(a).bfloat16().requires_grad_() for a in (x, w, b)]
        y = m.nn.functional.conv2d(*xs, padding=1)
        (y * y).sum().backward()
        out.append([y] + [v.grad for v in xs])
    for r, t in zip(*out):
        _same(r, t)


def test_gradcheck_still_float64():
    # the float32 compute path of bfloat16 must not change float64's: an exact gradient check
    x = retrograd.randn(3, 4, dtype=retrograd.float64, requires_grad=True)
    w = retrograd.randn(5, 4, dtype=retrograd.float64, requires_grad=True)
    assert retrograd.autograd.gradcheck(lambda a, b: retrograd.nn.functional.silu(a @ b.T).softmax(-1), (x, w))
    assert retrograd.autograd.gradgradcheck(lambda a: retrograd.nn.functional.gelu(a).sum(1), (x,))


def test_grads_are_bfloat16_and_accumulate():
    w = retrograd.tensor([1.5, -2.0], dtype=retrograd.bfloat16, requires_grad=True)
    (w * 3.0).sum().backward()
    (w * w).sum().backward()
    assert w.grad.dtype is retrograd.bfloat16
    assert w.grad.tolist() == [6.0, -1.0]


@needs_torch
def test_safetensors_round_trip(tmp_path):
    from safetensors.torch import load_file, save_file
    a = np.random.default_rng(4).standard_normal((3, 5)).astype(np.float32)
    r = retrograd.tensor(a).bfloat16()
    f = io.BytesIO()
    retrograd.save({"x": r, "sd": retrograd.nn.Linear(2, 2).bfloat16().state_dict()}, f)
    f.seek(0)
    back = retrograd.load(f)
    assert back["x"].dtype is retrograd.bfloat16 and back["sd"]["weight"].dtype is retrograd.bfloat16
    np.testing.assert_array_equal(_bits(back["x"]), _bits(r))
    back["x"].add_(1)  # writable
    p = tmp_path / "r.safetensors"
    retrograd.save({"x": r}, p)
    t = load_file(str(p))
    _same(r, next(v for v in t.values() if v.dtype == torch.bfloat16))
    q = tmp_path / "t.safetensors"
    save_file({"x": torch.tensor(a).bfloat16()}, str(q))
    _same(retrograd.load(q)["x"], torch.tensor(a).bfloat16())


@needs_torch
@pytest.mark.parametrize("dtn", ["float16", "bfloat16"])
@pytest.mark.parametrize("momentum,nesterov", [(0.0, False), (0.9, False), (0.9, True)])
def test_sgd_steps_on_16_bit_parameters_match_torch_bit_for_bit(dtn, momentum, nesterov):
    # PyTorch's opmath: alpha-adds and mul_ by a scalar in float32, rounded once to the dtype
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal(64).astype(np.float32)
    grads = [rng.standard_normal(64).astype(np.float32) for _ in range(5)]
    out = []
    for lib in (retrograd, torch):
        dt = getattr(lib, dtn)
        p = lib.tensor(w0).to(dt).requires_grad_()
        opt = lib.optim.SGD([p], lr=0.1, momentum=momentum, weight_decay=0.01, nesterov=nesterov)
        for g in grads:
            p.grad = lib.tensor(g).to(dt)
            opt.step()
        out.append(p.detach().float().numpy())
    np.testing.assert_array_equal(out[0], out[1])
