"""autocast (output dtypes as PyTorch's on the CPU) and GradScaler (step-by-step parity)."""
import math
import warnings

import numpy as np
import pytest

import retrograd
import retrograd.nn as rnn
from helpers import needs_torch, torch


def _ops(T, x, w, b, img, k, b3):
    F = T.nn.functional
    return {
        "linear": F.linear(x, w, b), "matmul": x @ w.T, "matmul_fn": T.matmul(x, w.T), "mm": T.mm(x, w.T),
        "addmm": T.addmm(b, x, w.T), "bmm": T.bmm(b3, b3.transpose(1, 2)), "conv2d": F.conv2d(img, k),
        "exp": x.exp(), "add": x + x, "sum": x.sum(),
        "double_mm": T.mm(x.double(), w.T.double()),
        "mse_loss": F.mse_loss(x @ x.T, x @ x.T), "cross_entropy": F.cross_entropy(x @ w.T, T.tensor([0, 1, 1, 0])),
        "relu": F.relu(x @ w.T), "mixed_add": (x @ w.T) + b,
    }


def _inputs(T, from_np):
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal(s).astype(np.float32) for s in [(4, 3), (2, 3), (2,), (1, 1, 5, 5), (2, 1, 3, 3),
                                                                (2, 3, 4)]]
    return [from_np(a) for a in arrs]


@needs_torch
@pytest.mark.parametrize("dtype", [None, "float16", "bfloat16"])
def test_autocast_output_dtypes_match_torch(dtype):
    kw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    with torch.autocast("cpu", **kw):
        want = {k: v.dtype for k, v in _ops(torch, *_inputs(torch, torch.from_numpy)).items()}
    rkw = {} if dtype is None else {"dtype": getattr(retrograd, dtype)}
    with retrograd.autocast("cpu", **rkw):
        got = {k: v.dtype for k, v in _ops(retrograd, *_inputs(retrograd, retrograd.from_numpy)).items()}
    for k in want:
        assert str(got[k]) == str(want[k]), k


def test_autocast_float16_values_and_grads():
    m = rnn.Linear(3, 2)
    x = retrograd.randn(4, 3)
    with retrograd.autocast("cpu", dtype=retrograd.float16):
        y = m(x)
    assert y.dtype == retrograd.float16 and type(y.grad_fn).__name__ == "AddmmBackward0"
    ref = (x.half() @ m.weight.half().T + m.bias.half())
    np.testing.assert_array_equal(y.detach().numpy(), ref.detach().numpy())
    y.float().sum().backward()
    assert m.weight.grad.dtype == retrograd.float32     # the cast is in the graph
    assert m.bias.grad.dtype == retrograd.float32
    np.testing.assert_allclose(m.bias.grad.numpy(), [4.0, 4.0])


def test_autocast_regions_nest_restore_and_decorate():
    x = retrograd.ones(2, 2)
    assert not retrograd.is_autocast_enabled("cpu")
    with retrograd.autocast("cpu", dtype=retrograd.float16):
        assert retrograd.is_autocast_enabled("cpu") and not retrograd.is_autocast_enabled()
        with retrograd.autocast("cpu", enabled=False):
            assert (x @ x).dtype == retrograd.float32
        assert (x @ x).dtype == retrograd.float16
    assert (x @ x).dtype == retrograd.float32 and not retrograd.is_autocast_enabled("cpu")

    @retrograd.autocast("cpu", dtype=retrograd.float16)
    def f(a):
        return a @ a
    assert f(x).dtype == retrograd.float16 and (x @ x).dtype == retrograd.float32
    assert retrograd.amp.autocast is retrograd.autocast
    assert retrograd.get_autocast_dtype("cpu") is retrograd.bfloat16


def test_autocast_rejects_like_torch():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        retrograd.autocast(retrograd.device("cpu"))
    with pytest.warns(UserWarning, match="CPU Autocast only supports dtypes of torch.bfloat16, torch.float16"):
        with retrograd.autocast("cpu", dtype=retrograd.float32):
            assert not retrograd.is_autocast_enabled("cpu")
    if not retrograd.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            with retrograd.autocast("cuda"):
                assert not retrograd.is_autocast_enabled("cuda")


# --- GradScaler -------------------------------------------------------------------------------

def _run_scaler(T, steps, **kw):
    """A tiny model trained with a GradScaler; some steps get inf/nan gradients. Returns a trace."""
    w = T.nn.Parameter(T.tensor([[0.5, -0.25], [1.0, 2.0]]))
    b = T.nn.Parameter(T.tensor([0.1, -0.1]))
    opt = T.optim.SGD([w, b], lr=0.01)
    scaler = T.amp.GradScaler("cpu", **kw)
    trace = []
    x = T.tensor([[1.0, 2.0], [3.0, -1.0]])
    for i, bad in enumerate(steps):
        opt.zero_grad()
        loss = ((x @ w.T + b) ** 2).mean()
        if bad:
            loss = loss * T.tensor(float(bad))  # inf or nan gradients
        scaled = scaler.scale(loss)
        scaled.backward()
        if i % 2:
            scaler.unscale_(opt)
            trace.append(("grad", w.grad.tolist()))
        ret = scaler.step(opt)
        scaler.update()
        trace.append((i, scaler.get_scale(), scaler._get_growth_tracker(), ret, w.tolist(), b.tolist(),
                      sorted(scaler.state_dict().items())))
    return trace


def _same(a, b):
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, float):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-7)
    return a == b


@needs_torch
@pytest.mark.parametrize("steps,kw", [
    ([0, 0, 0, 0, 0], dict(growth_interval=2)),
    ([0, float("inf"), 0, float("nan"), 0, 0, 0], dict(init_scale=8.0, growth_interval=3)),
    ([float("inf")] * 3 + [0, 0], dict(init_scale=2.0 ** 16, backoff_factor=0.25, growth_factor=4.0,
                                        growth_interval=1)),
    ([0, 0, 0], dict(enabled=False)),
])
def test_grad_scaler_step_by_step_parity(steps, kw):
    with np.errstate(invalid="ignore", over="ignore"):   # the inf/nan steps are on purpose
        got = _run_scaler(retrograd, steps, **kw)
    want = _run_scaler(torch, steps, **kw)
    assert len(got) == len(want)
    for g, t in zip(got, want):
        assert _same(list(g), list(t)), (g, t)


def test_grad_scaler_errors_and_state_dict():
    w = rnn.Parameter(retrograd.ones(2))
    opt = retrograd.optim.SGD([w], lr=0.1)
    s = retrograd.amp.GradScaler("cpu", init_scale=4.0)
    with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
        s.step(opt)
    s.scale((w * 2).sum()).backward()
    s.unscale_(opt)
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0])
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer"):
        s.unscale_(opt)
    s.step(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update\(\)"):
        s.step(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        s.step(opt, closure=lambda: 0)
    s.update()
    sd = s.state_dict()
    assert sd == {"scale": 4.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
                  "_growth_tracker": 1}
    s2 = retrograd.amp.GradScaler("cpu")
    s2.load_state_dict(sd)
    assert s2.get_scale() == 4.0 and s2._get_growth_tracker() == 1
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        s2.load_state_dict({})
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        retrograd.amp.GradScaler("cpu", growth_factor=1.0)
    s.update(123.0)
    assert s.get_scale() == 123.0
    # float16 gradients are refused, like PyTorch.
    h = rnn.Parameter(retrograd.ones(2, dtype=retrograd.float16))
    opt16 = retrograd.optim.SGD([h], lr=0.1)
    s.scale(h.float().sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        s.unscale_(opt16)


def test_grad_scaler_cuda_without_cuda_disables():
    if retrograd.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
        s = retrograd.amp.GradScaler()
    assert not s.is_enabled() and s.get_scale() == 1.0 and s.state_dict() == {}
    x = retrograd.ones(2)
    assert s.scale(x) is x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not retrograd.cuda.amp.GradScaler().is_enabled()


def test_cuda_amp_spellings_import():
    from retrograd.cuda.amp import autocast, GradScaler  # noqa: F401
    import retrograd.cuda.amp as cuda_amp
    assert cuda_amp.custom_fwd is not None and retrograd.cuda.amp is cuda_amp
    with pytest.warns(FutureWarning, match=r"torch.cuda.amp.autocast\(args...\)` is deprecated"):
        ctx = autocast(enabled=False)
    with ctx:
        assert not retrograd.is_autocast_enabled("cuda")
