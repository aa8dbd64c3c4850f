"""torch.distributions, part 3: the ops behind the distributions (gradchecks without torch, and
values against torch), reparameterised gradients (Gamma / Beta / Dirichlet implicit gradients as
PyTorch computes them), statistics of samples with fixed seeds, and the Categorical policy of
pytorch/examples' REINFORCE and actor-critic scripts."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import retrograd
import retrograd.distributions as RD
from retrograd.distributions import _ops
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from helpers import torch, needs_torch


def _r(a, grad=True):
    return retrograd.tensor(np.asarray(a, np.float64), requires_grad=grad)


# --- the ops (no torch needed) -----------------------------------------------------------

@pytest.mark.parametrize("fn,x", [
    (retrograd.lgamma, [0.3, 1.7, 4.2, -1.5]),
    (retrograd.digamma, [0.3, 1.7, 4.2, -1.5]),
    (lambda x: retrograd.polygamma(2, x), [0.3, 1.7, 4.2]),
    (lambda x: retrograd.mvlgamma(x, 3), [1.3, 2.7, 4.2]),
    (retrograd.logit, [0.2, 0.5, 0.9]),
    (lambda x: retrograd.logit(x, 0.25), [0.2, 0.5, 0.9]),
])
def test_special_ops_gradcheck(fn, x):
    assert gradcheck(fn, (_r(x),))
    assert gradgradcheck(fn, (_r(x),))


def test_gammainc_gradient_in_x():
    a = _r([0.5, 2.0, 4.0], grad=False)
    assert gradcheck(lambda x: retrograd.special.gammainc(a, x), (_r([0.3, 1.5, 6.0]),))


def _spd(n, b=(), seed=0):
    rng = np.random.RandomState(seed)
    a = rng.randn(*b, n, n)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def test_cholesky_gradcheck():
    A = _r(_spd(3, (2,)))
    # the input is symmetrised inside, as only symmetric perturbations are meaningful
    f = lambda A: retrograd.linalg.cholesky((A + A.mT) / 2)  # noqa: E731
    assert gradcheck(f, (A,))
    assert gradgradcheck(f, (A,))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_gradcheck(upper, left, unit):
    rng = np.random.RandomState(1)
    A = rng.randn(2, 3, 3) + 4 * np.eye(3)
    B = rng.randn(2, 3, 2) if left else rng.randn(2, 2, 3)
    f = lambda A, B: retrograd.linalg.solve_triangular(A, B, upper=upper, left=left, unitriangular=unit)  # noqa: E731
    assert gradcheck(f, (_r(A), _r(B)))
    assert gradgradcheck(f, (_r(A), _r(B)))


def test_slogdet_and_cholesky_solve_gradcheck():
    A = _r(_spd(3, seed=2))
    assert gradcheck(lambda A: retrograd.linalg.slogdet(A).logabsdet, (A,))
    L = _r(np.linalg.cholesky(_spd(3, seed=3)))
    B = _r(np.random.RandomState(4).randn(3, 2))
    assert gradcheck(lambda L, B: retrograd.cholesky_solve(B, L.tril()), (L, B))
    assert gradcheck(lambda L: retrograd.cholesky_inverse(L.tril()), (L,))


def test_cholesky_rejects_non_positive_definite_as_torch():
    with pytest.raises(RuntimeError, match=r"linalg.cholesky: The factorization could not be completed because the "
                                           r"input is not positive-definite \(the leading minor of order 2 is not "
                                           r"positive-definite\)."):
        retrograd.linalg.cholesky(retrograd.tensor([[1.0, 2.0], [2.0, 1.0]]))
    L, info = retrograd.linalg.cholesky_ex(retrograd.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]]))
    assert info.tolist() == [0, 2]


@needs_torch
@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_special_values_match_torch(name):
    x = np.array([0.0, -0.0, -1.0, -2.5, 1e-8, 0.5, 3.0, 170.5, np.inf, np.nan])
    for dt in (np.float64, np.float32):
        r = getattr(retrograd, name)(retrograd.tensor(x.astype(dt))).numpy()
        t = getattr(torch, name)(torch.tensor(x.astype(dt))).numpy()
        assert r.dtype == t.dtype
        np.testing.assert_allclose(r, t, rtol=1e-6 if dt == np.float32 else 1e-12)
    xr = _r([0.5, 2.0])
    xt = torch.tensor([0.5, 2.0], dtype=torch.float64, requires_grad=True)
    assert getattr(retrograd, name)(xr).grad_fn.name() == getattr(torch, name)(xt).grad_fn.name()


@needs_torch
def test_polygamma_mvlgamma_logit_values_and_node_names_match_torch():
    x = np.array([0.6, 1.5, 3.0])
    xr, xt = _r(x), torch.tensor(x, requires_grad=True)
    for rf, tf in [(lambda v: retrograd.polygamma(3, v), lambda v: torch.polygamma(3, v)),
                   (lambda v: retrograd.mvlgamma(v + 1, 2), lambda v: torch.mvlgamma(v + 1, 2)),
                   (lambda v: retrograd.logit(v / 4), lambda v: torch.logit(v / 4)),
                   (lambda v: retrograd.logit(v / 4, 0.3), lambda v: torch.logit(v / 4, 0.3))]:
        r, t = rf(xr), tf(xt)
        np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=1e-12)
        assert r.grad_fn.name() == t.grad_fn.name()
        gr = retrograd.autograd.grad(r.sum(), xr)[0].numpy()
        gt = torch.autograd.grad(t.sum(), xt)[0].numpy()
        np.testing.assert_allclose(gr, gt, rtol=1e-10)


@needs_torch
def test_standard_gamma_grad_matches_torch():
    rng = np.random.RandomState(0)
    alpha = np.concatenate([rng.uniform(0.05, 1, 200), rng.uniform(1, 8, 200), rng.uniform(8, 200, 200)])
    x = np.random.RandomState(1).gamma(alpha)
    x[::7] = alpha[::7] * 1.02   # the saddle point's central band
    for dt in (np.float64, np.float32):
        r = _ops._standard_gamma_grad(retrograd.tensor(alpha.astype(dt)), retrograd.tensor(x.astype(dt))).numpy()
        t = torch._standard_gamma_grad(torch.tensor(alpha.astype(dt)), torch.tensor(x.astype(dt))).numpy()
        assert r.dtype == t.dtype
        np.testing.assert_allclose(r, t, rtol=1e-9 if dt == np.float64 else 2e-4, atol=1e-12)


@needs_torch
def test_dirichlet_grad_matches_torch():
    rng = np.random.RandomState(0)
    alpha = np.concatenate([rng.uniform(0.05, 2, 300), rng.uniform(6.5, 50, 300)])
    total = alpha + np.concatenate([rng.uniform(0.05, 2, 300), rng.uniform(6.5, 50, 300)])
    x = rng.beta(alpha, total - alpha)
    x[::5] = (alpha / total)[::5]  # the saddle point's central band
    r = _ops._dirichlet_grad(retrograd.tensor(x), retrograd.tensor(alpha), retrograd.tensor(total)).numpy()
    t = torch._dirichlet_grad(torch.tensor(x), torch.tensor(alpha), torch.tensor(total)).numpy()
    np.testing.assert_allclose(r, t, rtol=1e-9, atol=1e-12)


def test_standard_gamma_grad_is_the_implicit_derivative():
    # dx/dalpha = -(dF/dalpha) / f(x): finite differences of SciPy's regularized gamma CDF
    from scipy.special import gammainc
    alpha = np.array([0.3, 0.9, 2.5, 6.0, 30.0, 100.0])
    x = np.array([0.2, 1.4, 2.0, 7.5, 29.0, 90.0])
    h = 1e-6 * alpha
    dF = (gammainc(alpha + h, x) - gammainc(alpha - h, x)) / (2 * h)
    pdf = np.exp((alpha - 1) * np.log(x) - x - np.array([math.lgamma(a) for a in alpha]))
    exact = -dF / pdf
    got = _ops._standard_gamma_grad(retrograd.tensor(alpha), retrograd.tensor(x)).numpy()
    np.testing.assert_allclose(got, exact, rtol=2e-3)


# --- reparameterised gradients -----------------------------------------------------------

@pytest.mark.parametrize("make,dmean", [
    # d E[x] / d params, estimated by the mean of the pathwise gradients of many samples
    (lambda a, b: RD.Gamma(a, b), lambda a, b: (1 / b, -a / b ** 2)),
    (lambda a, b: RD.Beta(a, b), lambda a, b: (b / (a + b) ** 2, -a / (a + b) ** 2)),
    (lambda a, b: RD.Normal(a, b), lambda a, b: (1.0, 0.0)),
    (lambda a, b: RD.LogNormal(a / 4, b / 4), lambda a, b: (math.exp(a / 4 + b * b / 32) / 4,
                                                            math.exp(a / 4 + b * b / 32) * b / 16)),
    (lambda a, b: RD.Laplace(a, b), lambda a, b: (1.0, 0.0)),
    (lambda a, b: RD.Uniform(a - 3, a + b), lambda a, b: (1.0, 0.5)),
    (lambda a, b: RD.Exponential(b), lambda a, b: (0.0, -1 / b ** 2)),
])
def test_rsample_pathwise_gradient_has_the_right_mean(make, dmean):
    retrograd.manual_seed(0)
    n = 40000
    a, b = _r(np.full(n, 1.7)), _r(np.full(n, 2.3))
    x = make(a, b).rsample()
    x.sum().backward()
    want = dmean(1.7, 2.3)
    grads = [np.zeros(n) if p.grad is None else p.grad.numpy() for p in (a, b)]
    for got, w in zip(grads, want):
        se = got.std() / math.sqrt(n)
        assert abs(got.mean() - w) < 5 * se + 1e-12, (got.mean(), w, se)


def test_dirichlet_rsample_gradient_has_the_right_mean():
    retrograd.manual_seed(1)
    n = 20000
    conc = _r(np.tile([0.8, 1.5, 3.0], (n, 1)))
    x = RD.Dirichlet(conc).rsample()
    x[:, 0].sum().backward()
    g = conc.grad.numpy()
    a0 = 5.3
    want = np.array([(a0 - 0.8) / a0 ** 2, -0.8 / a0 ** 2, -0.8 / a0 ** 2])   # d (a_0 / sum a) / d a_j
    se = g.std(0) / math.sqrt(n)
    assert np.all(np.abs(g.mean(0) - want) < 5 * se), (g.mean(0), want)


def test_gamma_rsample_records_standard_gamma_node():
    conc = _r([1.0, 2.0])
    x = RD.Gamma(conc, 1.0).rsample()
    names = []
    fn = x.grad_fn
    while fn is not None:
        names.append(fn.name())
        fn = fn.next_functions[0][0] if fn.next_functions else None
    assert "StandardGammaBackward0" in names


# --- statistics of samples ---------------------------------------------------------------

def _dists():
    t = retrograd.tensor
    return {
        "Normal": RD.Normal(t([0.5, -2.0]), t([1.5, 0.3])),
        "Bernoulli": RD.Bernoulli(t([0.2, 0.7])),
        "Uniform": RD.Uniform(t([-1.0, 2.0]), t([3.0, 2.5])),
        "OneHotCategorical": RD.OneHotCategorical(t([0.1, 0.2, 0.7])),
        "Multinomial": RD.Multinomial(10, t([0.1, 0.2, 0.7])),
        "Beta": RD.Beta(t([0.5, 2.0]), t([1.5, 3.0])),
        "Gamma": RD.Gamma(t([0.4, 3.0]), t([1.0, 2.0])),
        "Chi2": RD.Chi2(t([3.0, 7.5])),
        "Dirichlet": RD.Dirichlet(t([0.5, 1.0, 3.0])),
        "Exponential": RD.Exponential(t([0.5, 3.0])),
        "Laplace": RD.Laplace(t([0.0, 2.0]), t([1.0, 0.5])),
        "Poisson": RD.Poisson(t([0.5, 7.0])),
        "Binomial": RD.Binomial(t([5.0, 20.0]), t([0.3, 0.8])),
        "Geometric": RD.Geometric(t([0.3, 0.8])),
        "StudentT": RD.StudentT(t([5.0, 9.0]), t([1.0, -1.0]), t([2.0, 0.5])),
        "LogNormal": RD.LogNormal(t([0.0, 0.5]), t([0.5, 0.25])),
        "MultivariateNormal": RD.MultivariateNormal(t([1.0, -1.0]), t([[2.0, 0.6], [0.6, 1.0]])),
        "LowRankMultivariateNormal": RD.LowRankMultivariateNormal(t([1.0, -1.0]), t([[1.0], [0.5]]), t([0.5, 1.0])),
        "Gumbel": RD.Gumbel(t([0.0, 1.0]), t([1.0, 2.0])),
        "MixtureSameFamily": RD.MixtureSameFamily(RD.Categorical(t([0.3, 0.7])),
                                                  RD.Normal(t([-2.0, 3.0]), t([0.5, 1.0]))),
        "RelaxedBernoulli": RD.RelaxedBernoulli(t(0.05), probs=t([0.2, 0.7])),
        "Independent": RD.Independent(RD.Normal(t([[0.0, 1.0]]), t([[1.0, 2.0]])), 1),
    }


@pytest.mark.parametrize("name", sorted(_dists()))
def test_sample_mean_and_variance_agree_with_the_distribution(name):
    retrograd.manual_seed(1234)
    d = _dists()[name]
    n = 40000
    s = d.sample((n,)).double().numpy()
    if name == "RelaxedBernoulli":   # P(x > 1/2) = probs, at any temperature
        s = (s > 0.5).astype(np.float64)
        mean, var = d.probs.numpy(), d.probs.numpy() * (1 - d.probs.numpy())
    else:
        mean, var = d.mean.double().numpy(), d.variance.double().numpy()
    se = np.sqrt(var / n)
    assert np.all(np.abs(s.mean(0) - mean) < 5 * se + 1e-12), (s.mean(0), mean)
    # the sample variance's standard error, from the sample's fourth central moment
    m4 = ((s - s.mean(0)) ** 4).mean(0)
    se_var = np.sqrt(np.maximum(m4 - var ** 2, 0) / n)
    assert np.all(np.abs(s.var(0) - var) < 6 * se_var + 1e-12), (s.var(0), var)
    assert bool(d.support.check(d.sample((100,))).all())


def test_categorical_frequencies_follow_probs():
    retrograd.manual_seed(7)
    p = np.array([0.05, 0.15, 0.3, 0.5])
    s = RD.Categorical(retrograd.tensor(p)).sample((50000,)).numpy()
    freq = np.bincount(s, minlength=4) / s.size
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / s.size))


def test_samples_are_reproducible_under_manual_seed():
    d = RD.Gamma(retrograd.tensor([0.5, 2.0]), retrograd.tensor([1.0, 3.0]))
    retrograd.manual_seed(3)
    a = d.sample((5,))
    retrograd.manual_seed(3)
    b = d.sample((5,))
    assert retrograd.equal(a, b)


# --- the REINFORCE / actor-critic policy of pytorch/examples -----------------------------

def _reinforce(lib):
    """pytorch/examples reinforcement_learning/reinforce.py's policy and update, fed a fixed
    stream of observations instead of gym (the environment is the only part left out)."""
    nn, F, optim = lib.nn, lib.nn.functional, lib.optim
    Categorical = lib.distributions.Categorical

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.affine1 = nn.Linear(4, 128)
            self.dropout = nn.Dropout(p=0.6)
            self.affine2 = nn.Linear(128, 2)
            self.saved_log_probs, self.rewards = [], []

        def forward(self, x):
            x = self.affine1(x)
            x = self.dropout(x)
            x = F.relu(x)
            return F.softmax(self.affine2(x), dim=1)

    lib.manual_seed(0)
    policy = Policy()
    policy.eval()   # dropout off: both libraries then compute the same function
    rng = np.random.RandomState(0)
    w = [rng.uniform(-0.1, 0.1, p.shape).astype(np.float32) for p in policy.parameters()]
    with lib.no_grad():
        for p, a in zip(policy.parameters(), w):
            p.copy_(lib.tensor(a))
    optimizer = optim.Adam(policy.parameters(), lr=1e-2)
    eps = np.finfo(np.float32).eps.item()
    states = rng.randn(12, 4).astype(np.float32)
    actions = rng.randint(0, 2, 12)
    for t in range(12):
        probs = policy(lib.from_numpy(states[t]).float().unsqueeze(0))
        m = Categorical(probs)
        action = m.sample()
        assert action.shape == (1,) and int(action.item()) in (0, 1)
        policy.saved_log_probs.append(m.log_prob(lib.tensor([int(actions[t])])))
        policy.rewards.append(1.0)
    R, returns = 0, []
    for r in policy.rewards[::-1]:
        R = r + 0.99 * R
        returns.insert(0, R)
    returns = lib.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    policy_loss = [-log_prob * R for log_prob, R in zip(policy.saved_log_probs, returns)]
    optimizer.zero_grad()
    policy_loss = lib.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    return policy_loss.item(), [p.detach().numpy().copy() for p in policy.parameters()]


@needs_torch
def test_reinforce_policy_update_matches_torch():
    tl, tp = _reinforce(torch)
    rl, rp = _reinforce(retrograd)
    assert abs(rl - tl) < 1e-5 * max(1, abs(tl))
    for a, b in zip(rp, tp):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_actor_critic_style_update_runs_under_retrograd_run(tmp_path):
    script = tmp_path / "ac.py"
    script.write_text(
        "import sys\n"
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
        "from torch.distributions import Categorical\n"
        "torch.manual_seed(0)\n"
        "actor = nn.Linear(4, 2); critic = nn.Linear(4, 1)\n"
        "opt = torch.optim.Adam(list(actor.parameters()) + list(critic.parameters()), lr=3e-2)\n"
        "for _ in range(3):\n"
        "    s = torch.randn(1, 4)\n"
        "    m = Categorical(F.softmax(actor(s), dim=-1)); a = m.sample(); v = critic(s)\n"
        "    adv = 1.0 - v.item()\n"
        "    loss = -m.log_prob(a) * adv + F.smooth_l1_loss(v, torch.tensor([[1.0]])) - 0.01 * m.entropy()\n"
        "    opt.zero_grad(); loss.sum().backward(); opt.step()\n"
        "print(sys.modules['torch'].__name__, Categorical.__module__, 'real torch' if any(\n"
        "      getattr(m, '__file__', None) and 'site-packages/torch/' in m.__file__ for m in list(sys.modules.values()))"
        " else 'no torch')\n"
        "try:\n    torch.distributions.NoSuchDistribution\n"
        "except AttributeError as e:\n    print(type(e).__name__, e)\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "src"))
    r = subprocess.run([sys.executable, "-m", "retrograd", "run", str(script)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["retrograd", "retrograd.distributions.categorical", "no", "torch"]
    assert lines[1] == ("NotImplementedInRetrograd torch.distributions.NoSuchDistribution is not implemented in "
                        "retrograd")


@needs_torch
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(4,), (2, 3, 4)])
def test_linear_weight_gradient_for_input_without_grad_matches_torch(bias, shape):
    # actor_critic.py feeds one unbatched state (a 1-D tensor that needs no grad) to nn.Linear
    x = np.random.RandomState(0).randn(*shape)
    res = []
    for lib in (retrograd, torch):
        lib.manual_seed(0)
        lin = lib.nn.Linear(4, 3, bias=bias).double()
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(np.arange(12.0).reshape(3, 4) / 10))
            if bias:
                lin.bias.copy_(lib.tensor([0.1, -0.2, 0.3]))
        y = lib.nn.functional.relu(lin(lib.tensor(x)) - 0.3)
        y.pow(2).sum().backward()
        res.append((y.grad_fn.name(), y.detach().numpy(), lin.weight.grad.numpy()))
    assert res[0][0] == res[1][0]
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-12)
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-12)


@pytest.mark.parametrize("make,params,value", [
    (lambda loc, scale: RD.Normal(loc, scale), ([0.3, -1.0], [1.2, 0.7]), [0.1, 0.5]),
    (lambda a, b: RD.Gamma(a, b), ([0.7, 2.0], [1.5, 0.4]), [0.3, 2.5]),
    (lambda a, b: RD.Beta(a, b), ([0.7, 2.0], [1.5, 0.4]), [0.3, 0.8]),
    (lambda df, loc: RD.StudentT(df, loc, 1.5), ([3.0, 7.0], [0.2, -0.4]), [0.1, 1.5]),
    (lambda p, _: RD.Binomial(5, probs=p), ([0.3, 0.6], [0.0, 0.0]), [2.0, 5.0]),
    (lambda lg, _: RD.Categorical(logits=lg), ([0.3, -0.6, 1.0], [0.0]), [2]),
    (lambda c, _: RD.Dirichlet(c), ([0.7, 2.0, 1.3], [0.0]), [0.2, 0.5, 0.3]),
    (lambda loc, a: RD.MultivariateNormal(loc, a @ a.mT + retrograd.eye(2, dtype=retrograd.float64)),
     ([0.3, -0.2], [[1.0, 0.2], [-0.3, 0.8]]), [[0.1, 0.4], [1.0, -1.0]]),
])
def test_log_prob_and_entropy_gradgradcheck(make, params, value):
    a, b = (_r(p) for p in params)
    v = retrograd.tensor(value) if isinstance(value[0], int) else retrograd.tensor(np.asarray(value, np.float64))

    def f(a, b):
        d = make(a, b)
        return d.log_prob(v).sum() + d.entropy().sum()
    assert gradcheck(f, (a, b))
    assert gradgradcheck(f, (a, b))


@needs_torch
def test_large_multivariate_normal_matches_torch():
    # 20 dimensions: the triangular solves go through LAPACK rather than row by row
    rng = np.random.RandomState(8)
    a = rng.randn(2, 20, 20)
    cov = a @ np.swapaxes(a, -1, -2) + 20 * np.eye(20)
    loc, x = rng.randn(2, 20), rng.randn(3, 2, 20)
    out = []
    for lib, D in ((torch, torch.distributions), (retrograd, RD)):
        c = lib.tensor(cov, requires_grad=True)
        m = lib.tensor(loc, requires_grad=True)
        d = D.MultivariateNormal(m, c)
        v = d.log_prob(lib.tensor(x)).sum() + d.entropy().sum()
        gc, gm = lib.autograd.grad(v, (c, m))
        out.append((v.item(), gc.numpy(), gm.numpy(), d.precision_matrix.detach().numpy()))
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-10)
    for a_, b_ in zip(out[1][1:], out[0][1:]):
        np.testing.assert_allclose(a_, b_, rtol=1e-7, atol=1e-12)
