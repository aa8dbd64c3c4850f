"""nn.init (distributions, bounds, gains, fans) and nn.utils (gradient clipping,
parameter vectors)."""
import math

import numpy as np
import pytest

import retrograd
from helpers import needs_torch, torch

init = retrograd.nn.init


@needs_torch
def test_gain_and_fans():
    for nl, p in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                  ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)]:
        assert init.calculate_gain(nl, p) == torch.nn.init.calculate_gain(nl, p)
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    for shape in [(5, 3), (4, 2, 3, 3), (6, 2, 5)]:
        assert init._calculate_fan_in_and_fan_out(retrograd.empty(shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2 "
                                         "dimensions"):
        init._calculate_fan_in_and_fan_out(retrograd.empty(3))


def _stats(t):
    a = t.detach().numpy()
    return a.min(), a.max(), a.mean(), a.std()


def test_distributions():
    retrograd.manual_seed(0)
    t = retrograd.empty(300, 400)
    lo, hi, mean, std = _stats(init.uniform_(t, -2, 3))
    assert lo >= -2 and hi <= 3 and abs(mean - 0.5) < 0.02
    lo, hi, mean, std = _stats(init.normal_(t, 1, 2))
    assert abs(mean - 1) < 0.02 and abs(std - 2) < 0.02
    assert np.all(init.constant_(t, 0.5).numpy() == 0.5)
    assert np.all(init.zeros_(t).numpy() == 0) and np.all(init.ones_(t).numpy() == 1)
    np.testing.assert_array_equal(init.eye_(retrograd.empty(3, 4)).numpy(), np.eye(3, 4))
    b = math.sqrt(6 / 700)
    lo, hi, mean, std = _stats(init.xavier_uniform_(t))
    assert lo >= -b and hi <= b and abs(std - b / math.sqrt(3)) < 0.01 * b
    lo, hi, mean, std = _stats(init.xavier_normal_(t, gain=2))
    assert abs(std - 2 * math.sqrt(2 / 700)) < 0.02 * std
    bound = math.sqrt(2) * math.sqrt(3 / 400)
    lo, hi, mean, std = _stats(init.kaiming_uniform_(t, nonlinearity="relu"))
    assert lo >= -bound and hi <= bound and abs(std - bound / math.sqrt(3)) < 0.02 * bound
    lo, hi, mean, std = _stats(init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"))
    assert abs(std - math.sqrt(2 / 300)) < 0.02 * std
    lo, hi, mean, std = _stats(init.kaiming_uniform_(t, a=math.sqrt(5)))
    assert hi <= 1 / math.sqrt(400)
    lo, hi, mean, std = _stats(init.trunc_normal_(t, 0, 1, -1.5, 1.5))
    assert lo >= -1.5 and hi <= 1.5 and abs(mean) < 0.02
    q = init.orthogonal_(retrograd.empty(4, 6)).numpy().astype(np.float64)
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)
    q = init.orthogonal_(retrograd.empty(6, 4), gain=2).numpy().astype(np.float64)
    np.testing.assert_allclose(q.T @ q, 4 * np.eye(4), atol=1e-4)
    with pytest.raises(ValueError, match="Mode fan_x not supported, please use one of"):
        init.kaiming_uniform_(t, mode="fan_x")
    p = retrograd.nn.Parameter(retrograd.empty(3, 3))
    init.normal_(p)                                   # in place on a leaf that requires grad
    assert p.requires_grad and p.grad_fn is None


@needs_torch
def test_clip_grad_norm():
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    for norm_type, max_norm in [(2.0, 1.0), (1.0, 0.5), (math.inf, 0.3), (2.0, 100.0)]:
        res = {}
        for lib in (retrograd, torch):
            ps = [lib.zeros(g.shape, dtype=lib.float64, requires_grad=True) for g in grads]
            for p, g in zip(ps, grads):
                p.grad = lib.from_numpy(g.copy())
            total = lib.nn.utils.clip_grad_norm_(ps, max_norm, norm_type)
            res[lib] = (total.item(), [p.grad.numpy().copy() for p in ps])
        np.testing.assert_allclose(res[retrograd][0], res[torch][0], rtol=1e-12)
        for a, b in zip(res[retrograd][1], res[torch][1]):
            np.testing.assert_allclose(a, b, rtol=1e-12)
    # float32, a transposed gradient, and a norm below max_norm (factor 1: values kept, the
    # version still bumped as by PyTorch's mul_)
    g32 = rng.standard_normal((4, 3)).astype(np.float32)
    for max_norm in (0.5, 100.0):
        res = {}
        for lib in (retrograd, torch):
            p = lib.zeros((3, 4), requires_grad=True)
            p.grad = lib.from_numpy(g32.copy()).t()
            v0 = p.grad._version
            total = lib.nn.utils.clip_grad_norm_([p], max_norm)
            res[lib] = (total.item(), p.grad.numpy().copy(), p.grad._version - v0)
        assert res[retrograd][0] == pytest.approx(res[torch][0], rel=1e-6)
        np.testing.assert_allclose(res[retrograd][1], res[torch][1], rtol=1e-6)
        assert res[retrograd][2] == res[torch][2]
    p = retrograd.zeros(2, requires_grad=True)
    p.grad = retrograd.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite, so it cannot be clipped"):
        retrograd.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert retrograd.nn.utils.clip_grad_norm_([], 1.0).item() == 0.0


def test_clip_grad_value_and_vectors():
    lin = retrograd.nn.Linear(3, 2)
    lin.weight.grad = retrograd.tensor([[5.0, -5.0, 0.1], [0.2, -0.3, 7.0]])
    retrograd.nn.utils.clip_grad_value_(lin.parameters(), 1.0)
    assert lin.weight.grad.tolist() == [[1.0, -1.0, pytest.approx(0.1)], [pytest.approx(0.2), pytest.approx(-0.3),
                                                                           1.0]]
    v = retrograd.nn.utils.parameters_to_vector(lin.parameters())
    assert v.shape == (8,) and v.requires_grad
    np.testing.assert_array_equal(v.detach().numpy()[:6], lin.weight.detach().numpy().ravel())
    (v * retrograd.arange(8.0)).sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy().ravel(), np.arange(6.0) + [1, -1, 0.1, 0.2, -0.3, 1], rtol=1e-6)
    retrograd.nn.utils.vector_to_parameters(retrograd.arange(8.0), lin.parameters())
    assert lin.weight.tolist() == [[0, 1, 2], [3, 4, 5]] and lin.bias.tolist() == [6, 7]
    with pytest.raises(TypeError, match="expected torch.Tensor, but got"):
        retrograd.nn.utils.vector_to_parameters([1.0], lin.parameters())
