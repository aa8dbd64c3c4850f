"""Random streams: a seed gives PyTorch's numbers, bit for bit (CPU generator).

The torch-free tests check the engine against the Mersenne Twister's definition and NumPy's
independent implementation, the sampling formulas, and that states round-trip exactly. The
others compare with torch 2.13 directly, including the draws that follow (a sampler that
consumed a different number of words would shift everything after it).
"""
import math
from fractions import Fraction

import numpy as np
import pytest

import retrograd
from retrograd import _rng
from helpers import torch, needs_torch

SEEDS = [0, 1, 42, 2 ** 32 + 7, -3]
SIZES = [0, 1, 15, 16, 17, 100, 1000]


# --- without torch ---------------------------------------------------------------------------

def test_engine_is_the_reference_mersenne_twister():
    # the reference implementation's first outputs for init_genrand(5489)
    e = _rng.Engine(5489)
    assert e.u32(3).tolist() == [3499211612, 581869302, 3890346734]
    # and NumPy's own seeding of the same generator
    for seed in (0, 1, 123456789, 2 ** 32 - 1):
        bg = np.random.MT19937()
        bg._legacy_seeding(seed)
        assert np.array_equal(_rng.seeded_key(seed), bg.state["state"]["key"])


def test_seeds_use_the_low_32_bits_and_report_64():
    a = retrograd.Generator().manual_seed(2 ** 32 + 5)
    b = retrograd.Generator().manual_seed(5)
    assert a.initial_seed() == 2 ** 32 + 5
    assert retrograd.equal(retrograd.rand(10, generator=a), retrograd.rand(10, generator=b))
    assert retrograd.Generator().manual_seed(-1).initial_seed() == 2 ** 64 - 1
    assert retrograd.Generator().initial_seed() == 67280421310721
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        retrograd.manual_seed(2 ** 64)
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        retrograd.Generator().manual_seed(1.0)


def test_uniform_formulas():
    e = _rng.Engine(3)
    raw = _rng.Engine(3).u32(8)
    assert np.array_equal(e.uniform(4, np.float32), ((raw[:4] & 0xFFFFFF) * 2.0 ** -24).astype(np.float32))
    r64 = [(int(raw[2 * i]) << 32) | int(raw[2 * i + 1]) for i in range(2)]
    assert _rng.Engine(3).uniform(2, np.float64).tolist() == [(x & (2 ** 53 - 1)) / 2 ** 53 for x in r64]


def test_fma_rounds_once():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(20000) * rng.choice([1e-8, 1.0, 1e8], 20000)
    for b, c in [(2.5, -0.37), (1 / 3, 1e-3), (-7.0, 1e10)]:
        want = [float(Fraction(x) * Fraction(b) + Fraction(c)) for x in a.tolist()]
        assert _rng.fma(a, b, c).tolist() == want
    u = rng.integers(0, 2 ** 24, 20000) * 2.0 ** -24
    # (near exponents: the double sum is exact; far apart: rounded to odd first)
    for b, c in [(2.6, -1.5), (1.0, 1e6), (3e-7, 5.0), (1e6, -0.001)]:
        b, c = np.float32(b), np.float32(c)
        want = [np.float32(Fraction(x) * Fraction(float(b)) + Fraction(float(c))) for x in u.tolist()]
        assert np.array_equal(_rng.fma32(u, b, c), np.array(want, dtype=np.float32))


def test_same_seed_same_numbers_and_state_round_trip():
    def draws():
        return [retrograd.rand(5), retrograd.randn(3, dtype=retrograd.float64), retrograd.randn(40),
                retrograd.randint(0, 1000, (7,)), retrograd.randperm(9), retrograd.empty(20).bernoulli_(0.3),
                retrograd.empty(6).exponential_()]
    retrograd.manual_seed(11)
    first = draws()
    retrograd.manual_seed(11)
    assert all(retrograd.equal(a, b) for a, b in zip(first, draws()))
    # a state taken with a normal sample cached (an odd number of small-tensor normals)
    retrograd.randn(1)
    state = retrograd.get_rng_state()
    assert state.dtype == retrograd.uint8 and state.shape == (5056,)
    after = [retrograd.randn(1), *draws()]
    retrograd.set_rng_state(state)
    assert all(retrograd.equal(a, b) for a, b in zip(after, [retrograd.randn(1), *draws()]))
    with pytest.raises(RuntimeError, match="of size 5056 but found the input RNG state size to be 10"):
        retrograd.set_rng_state(retrograd.zeros(10, dtype=retrograd.uint8))
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        retrograd.set_rng_state(retrograd.zeros(5056))
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        retrograd.set_rng_state(retrograd.zeros(5056, dtype=retrograd.uint8))


def test_generators_are_independent_streams():
    g = retrograd.Generator().manual_seed(5)
    retrograd.manual_seed(5)
    a = retrograd.rand(4, generator=g)
    retrograd.rand(100)                        # the default generator moves on alone
    b = retrograd.rand(4, generator=g)
    retrograd.manual_seed(5)
    assert retrograd.equal(a, retrograd.rand(4))
    assert retrograd.equal(b, retrograd.rand(4))
    s = retrograd.seed()
    assert retrograd.initial_seed() == s


def test_fork_rng_restores_the_stream():
    retrograd.manual_seed(3)
    with retrograd.random.fork_rng():
        inside = retrograd.randn(5)
        retrograd.rand(100)
    assert retrograd.equal(retrograd.randn(5), inside)
    assert retrograd.random.initial_seed() == 3
    retrograd.random.manual_seed(4)
    assert retrograd.initial_seed() == 4


def test_meta_fills_draw_nothing():
    retrograd.manual_seed(0)
    before = retrograd.get_rng_state()
    for fill in ("uniform_", "normal_", "exponential_", "random_", "cauchy_", "log_normal_"):
        getattr(retrograd.empty(4, device="meta"), fill)()
    retrograd.empty(4, device="meta").bernoulli_(0.5)
    assert retrograd.equal(retrograd.get_rng_state(), before)


# --- against torch -----------------------------------------------------------------------------

def _np(t):
    t = t.detach()
    if "bfloat16" in str(t.dtype):   # (NumPy has no bfloat16 of torch's)
        t = t.float()
    return t.numpy()


def _same(a, b):
    x, y = _np(a), _np(b)
    assert x.dtype == y.dtype and x.shape == y.shape
    assert np.array_equal(x, y, equal_nan=True), f"{np.sum(x != y)} of {x.size} differ"


def _aligned():
    """The next draws agree too (the same number of words was consumed)."""
    assert retrograd.randint(0, 2 ** 30, (3,)).tolist() == torch.randint(0, 2 ** 30, (3,)).tolist()


def _seed(s):
    retrograd.manual_seed(s)
    torch.manual_seed(s)


@needs_torch
@pytest.mark.parametrize("seed", SEEDS)
def test_default_generator_matches_torch_state(seed):
    _seed(seed)
    assert retrograd.initial_seed() == torch.initial_seed()
    assert np.array_equal(retrograd.get_rng_state().numpy(), torch.get_rng_state().numpy())
    retrograd.randn(3, dtype=retrograd.float64)
    torch.randn(3, dtype=torch.float64)        # (leaves a normal sample cached)
    assert np.array_equal(retrograd.get_rng_state().numpy(), torch.get_rng_state().numpy())
    for k in (621, 1, 624):   # (624 words used up is recorded apart from a fresh seed)
        retrograd.randint(0, 10, (k,))
        torch.randint(0, 10, (k,))
        assert np.array_equal(retrograd.get_rng_state().numpy(), torch.get_rng_state().numpy())
    # states cross between the libraries
    torch.rand(123)
    retrograd.set_rng_state(retrograd.tensor(torch.get_rng_state().numpy()))
    _same(retrograd.randn(5), torch.randn(5))
    torch.set_rng_state(torch.from_numpy(retrograd.get_rng_state().numpy()))
    _same(retrograd.rand(7), torch.rand(7))


@needs_torch
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
def test_rand_randn_randint_randperm(seed, n):
    for dt in ("float32", "float64", "float16", "bfloat16", "complex64", "complex128"):
        _seed(seed)
        _same(retrograd.rand(n, dtype=getattr(retrograd, dt)), torch.rand(n, dtype=getattr(torch, dt)))
        _aligned()
    for dt in ("float64", "complex128"):
        _seed(seed)
        _same(retrograd.randn(n, dtype=getattr(retrograd, dt)), torch.randn(n, dtype=getattr(torch, dt)))
        _aligned()
    _seed(seed)
    a, b = retrograd.randn(n), torch.randn(n)
    if n < 16:
        _same(a, b)
    else:   # PyTorch's vectorised float kernel: its own float32 log/sin/cos (see _rng._box_muller32)
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6, atol=1e-6)
    _aligned()
    for lo, hi in [(0, 10), (-5, 7), (0, 2 ** 28 - 1), (0, 2 ** 28), (-2 ** 40, 2 ** 50)]:
        _seed(seed)
        _same(retrograd.randint(lo, hi, (n,)), torch.randint(lo, hi, (n,)))
        _aligned()
    _seed(seed)
    _same(retrograd.randint(0, 100, (n,), dtype=retrograd.int32), torch.randint(0, 100, (n,), dtype=torch.int32))
    _same(retrograd.randperm(n), torch.randperm(n))
    _aligned()


@needs_torch
@pytest.mark.parametrize("n", list(range(0, 40)) + [100000])
def test_randperm_all_small_sizes(n):
    _seed(n)
    _same(retrograd.randperm(n), torch.randperm(n))
    _aligned()


@needs_torch
@pytest.mark.parametrize("seed", [0, 5])
@pytest.mark.parametrize("shape", [(0,), (1,), (15,), (16,), (17,), (100,), (40, 3)])
@pytest.mark.parametrize("transposed", [False, True])
def test_inplace_fills(seed, shape, transposed):
    fills = [("uniform_", (-1.5, 0.7)), ("uniform_", ()), ("normal_", (0.3, 2.0)), ("exponential_", (2.5,)),
             ("cauchy_", (0.5, 2.0)), ("log_normal_", (0.5, 0.6)), ("geometric_", (0.3,)),
             ("bernoulli_", (0.3,)), ("random_", ()), ("random_", (10,)), ("random_", (-3, 2 ** 30))]
    for dt in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"):
        for name, args in fills:
            if dt in ("int64", "int32", "uint8", "bool") and name != "random_":
                continue
            if name == "random_" and args == (-3, 2 ** 30) and dt not in ("int64", "int32", "float64"):
                continue   # (out of range for the type; for float32 PyTorch only warns: not reproduced)
            if name == "random_" and args == (10,) and dt == "bool":
                continue
            _seed(seed)
            a = retrograd.empty(*shape, dtype=getattr(retrograd, dt))
            b = torch.empty(*shape, dtype=getattr(torch, dt))
            if transposed:
                a, b = a.t(), b.t()
            a, b = getattr(a, name)(*args), getattr(b, name)(*args)
            contiguous_block = name == "normal_" and not (transposed and len(shape) == 2) and math.prod(shape) >= 16
            if contiguous_block and dt == "float32":
                # (PyTorch's own vectorised float32 log/sin/cos: a few ulp apart, see _rng)
                np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6, atol=1e-6)
            else:
                _same(a, b)
            _aligned()


@needs_torch
@pytest.mark.parametrize("seed", [0, 3])
def test_normal_overloads_and_bernoulli(seed):
    for n in (5, 40):
        m = np.linspace(-1, 2, n)
        for dt in ("float64", "float32"):
            R, T = getattr(retrograd, dt), getattr(torch, dt)
            for args in [lambda L, d: (L.tensor(m, dtype=d), L.tensor(m + 2, dtype=d)),
                         lambda L, d: (L.tensor(m, dtype=d), 1.7), lambda L, d: (0.3, L.tensor(m + 2, dtype=d))]:
                _seed(seed)
                a, b = retrograd.normal(*args(retrograd, R)), torch.normal(*args(torch, T))
                if dt == "float32" and n >= 16:
                    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6, atol=1e-5)
                else:
                    _same(a, b)
                _aligned()
        _seed(seed)
        _same(retrograd.normal(0.3, 1.7, (n,), dtype=retrograd.float64), torch.normal(0.3, 1.7, (n,), dtype=torch.float64))
        for dt in ("float32", "float64"):
            p = np.random.default_rng(seed).random((n, 3))
            _seed(seed)
            _same(retrograd.bernoulli(retrograd.tensor(p, dtype=getattr(retrograd, dt))),
                  torch.bernoulli(torch.tensor(p, dtype=getattr(torch, dt))))
            _same(retrograd.bernoulli(retrograd.tensor(p, dtype=getattr(retrograd, dt)), 0.25),
                  torch.bernoulli(torch.tensor(p, dtype=getattr(torch, dt)), 0.25))
            _same(retrograd.empty(n, 3, dtype=retrograd.float64).bernoulli_(retrograd.tensor(p, dtype=getattr(retrograd, dt))),
                  torch.empty(n, 3, dtype=torch.float64).bernoulli_(torch.tensor(p, dtype=getattr(torch, dt))))
            _aligned()


@needs_torch
@pytest.mark.parametrize("seed", range(4))
def test_multinomial(seed):
    for shape in [(6,), (3, 10), (1000,)]:
        w = np.random.default_rng(seed).random(shape)
        w[..., 0] = 0
        for dt in ("float32", "float64"):
            for k, rep in [(1, False), (3, False), (1, True), (5, True), (200, True)]:
                _seed(seed)
                _same(retrograd.multinomial(retrograd.tensor(w, dtype=getattr(retrograd, dt)), k, rep),
                      torch.multinomial(torch.tensor(w, dtype=getattr(torch, dt)), k, rep))
                _aligned()


@needs_torch
@pytest.mark.parametrize("seed", [0, 5])
def test_dropout_family(seed):
    F, TF = retrograd.nn.functional, torch.nn.functional
    for shape in [(1,), (17,), (4, 6, 5, 5), (1000,)]:
        x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        for p in (0.2, 0.5):
            cases = [("dropout", (p,), {}), ("alpha_dropout", (p,), {"training": True})]
            if len(shape) == 4:
                cases += [("dropout2d", (p,), {}), ("feature_alpha_dropout", (p,), {"training": True})]
            for name, args, kw in cases:
                _seed(seed)
                _same(getattr(F, name)(retrograd.tensor(x), *args, **kw), getattr(TF, name)(torch.tensor(x), *args, **kw))
                _aligned()
            _seed(seed)
            _same(retrograd.nn.Dropout(p)(retrograd.tensor(x)), torch.nn.Dropout(p)(torch.tensor(x)))
        _seed(seed)
        _same(F.rrelu(retrograd.tensor(x), 0.1, 0.3, training=True), TF.rrelu(torch.tensor(x), 0.1, 0.3, training=True))
        _aligned()


@needs_torch
@pytest.mark.parametrize("seed", [0, 1])
def test_nn_init(seed):
    I, TI = retrograd.nn.init, torch.nn.init
    for shape in [(4, 5), (16, 8), (7, 3, 3, 3)]:
        for dt in ("float32", "float64"):
            for name, kw in [("uniform_", {"a": -0.3, "b": 0.8}), ("normal_", {"std": 0.5}), ("xavier_uniform_", {}),
                             ("xavier_normal_", {}), ("kaiming_uniform_", {"a": math.sqrt(5)}), ("kaiming_normal_", {}),
                             ("trunc_normal_", {"std": 0.5}), ("trunc_normal_", {"a": 2.0, "b": 3.0}),
                             ("trunc_normal_", {"mean": 0.5, "std": 0.1, "a": -1.0, "b": 0.3}), ("orthogonal_", {}),
                             ("sparse_", {"sparsity": 0.3})]:
                if name == "sparse_" and len(shape) != 2:
                    continue
                _seed(seed)
                a = getattr(I, name)(retrograd.empty(*shape, dtype=getattr(retrograd, dt)), **kw)
                b = getattr(TI, name)(torch.empty(*shape, dtype=getattr(torch, dt)), **kw)
                normals = name in ("normal_", "xavier_normal_", "kaiming_normal_", "orthogonal_", "sparse_") or (
                    name == "trunc_normal_" and "a" not in kw)
                if name == "orthogonal_":   # (a QR of LAPACK's: the same draws, rounding apart)
                    np.testing.assert_allclose(_np(a), _np(b), rtol=0, atol=1e-5 if dt == "float32" else 1e-12)
                elif normals and dt == "float32":
                    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6, atol=1e-6)
                else:
                    _same(a, b)
                _aligned()


def _layers(L):
    nn = L.nn
    return [lambda: nn.Linear(4, 3), lambda: nn.Linear(100, 50), lambda: nn.Conv2d(3, 8, 3),
            lambda: nn.Conv1d(2, 4, 5, groups=2), lambda: nn.ConvTranspose2d(3, 4, 3),
            lambda: nn.LSTM(5, 7, num_layers=2), lambda: nn.GRU(5, 7, bidirectional=True), lambda: nn.RNN(3, 4),
            lambda: nn.LSTMCell(3, 4), lambda: nn.Embedding(5, 3), lambda: nn.Bilinear(3, 4, 5),
            lambda: nn.MultiheadAttention(8, 2), lambda: nn.TransformerEncoderLayer(8, 2, 16), lambda: nn.PReLU()]


@needs_torch
@pytest.mark.parametrize("i", range(len(_layers(retrograd))))
def test_layers_initialise_as_torch(i):
    for seed in (0, 3):
        _seed(seed)
        a, b = _layers(retrograd)[i](), _layers(torch)[i]()
        pa, pb = dict(a.named_parameters()), dict(b.named_parameters())
        assert list(pa) == list(pb)
        for k in pa:
            _same(pa[k], pb[k])
        _aligned()


@needs_torch
@pytest.mark.parametrize("seed", [0, 1])
def test_samplers_loaders_and_splits(seed):
    from retrograd.utils import data as rd
    from torch.utils import data as td
    _seed(seed)
    assert list(rd.RandomSampler(range(50))) == list(td.RandomSampler(range(50)))
    assert list(rd.RandomSampler(range(50), replacement=True, num_samples=70)) == \
        list(td.RandomSampler(range(50), replacement=True, num_samples=70))
    assert list(rd.RandomSampler(range(7), num_samples=20)) == list(td.RandomSampler(range(7), num_samples=20))
    assert list(rd.SubsetRandomSampler([3, 5, 7, 9, 11])) == list(td.SubsetRandomSampler([3, 5, 7, 9, 11]))
    assert list(rd.WeightedRandomSampler([0.1, 0.5, 1.0, 2.0], 10)) == list(td.WeightedRandomSampler([0.1, 0.5, 1.0, 2.0], 10))
    assert [list(s.indices) for s in rd.random_split(range(30), [10, 20])] == \
        [list(s.indices) for s in td.random_split(range(30), [10, 20])]
    g, tg = retrograd.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    assert [list(s.indices) for s in rd.random_split(range(30), [0.3, 0.7], generator=g)] == \
        [list(s.indices) for s in td.random_split(range(30), [0.3, 0.7], generator=tg)]
    x = np.arange(100, dtype=np.float32)
    for _ in range(2):   # (two epochs: each draws a base seed and a sampler seed)
        ra = [b[0].tolist() for b in rd.DataLoader(rd.TensorDataset(retrograd.tensor(x)), batch_size=16, shuffle=True)]
        tb = [b[0].tolist() for b in td.DataLoader(td.TensorDataset(torch.tensor(x)), batch_size=16, shuffle=True)]
        assert ra == tb
    ga, gb = retrograd.Generator().manual_seed(9), torch.Generator().manual_seed(9)
    ra = [b[0].tolist() for b in rd.DataLoader(rd.TensorDataset(retrograd.tensor(x)), batch_size=30, shuffle=True, generator=ga)]
    tb = [b[0].tolist() for b in td.DataLoader(td.TensorDataset(torch.tensor(x)), batch_size=30, shuffle=True, generator=gb)]
    assert ra == tb
    _aligned()


@needs_torch
def test_explicit_generators_match_torch():
    g, tg = retrograd.Generator().manual_seed(77), torch.Generator().manual_seed(77)
    _same(retrograd.rand(20, generator=g), torch.rand(20, generator=tg))
    _same(retrograd.randn(5, generator=g), torch.randn(5, generator=tg))
    _same(retrograd.randint(0, 9, (6,), generator=g), torch.randint(0, 9, (6,), generator=tg))
    _same(retrograd.randperm(12, generator=g), torch.randperm(12, generator=tg))
    _same(retrograd.empty(30, dtype=retrograd.float64).normal_(generator=g),
          torch.empty(30, dtype=torch.float64).normal_(generator=tg))
    assert np.array_equal(g.get_state().numpy(), tg.get_state().numpy())
    assert g.initial_seed() == tg.initial_seed()


@needs_torch
def test_seeded_cnn_initialises_and_steps_as_torch():
    """The seeds' MNIST network: the same initial weights from manual_seed(0), the same dropout
    masks and the same loss after an SGD step."""
    from retrograd.cli.demo import ConvNet
    tnn = torch.nn

    class TorchConvNet(tnn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = tnn.Conv2d(1, 4, 5, padding=2)
            self.pool = tnn.MaxPool2d(2, 2)
            self.conv2 = tnn.Conv2d(4, 8, 5, padding=2)
            self.fc1 = tnn.Linear(7 * 7 * 8, 512)
            self.dropout = tnn.Dropout()
            self.fc2 = tnn.Linear(512, 10)
            self.relu = tnn.ReLU()

        def forward(self, x):
            x = self.pool(self.relu(self.conv1(x)))
            x = self.pool(self.relu(self.conv2(x)))
            x = self.dropout(self.relu(self.fc1(x.reshape(x.shape[0], -1))))
            return self.fc2(x)

    _seed(0)
    ra, tb = ConvNet(), TorchConvNet()
    for (k, a), (k2, b) in zip(ra.state_dict().items(), tb.state_dict().items()):
        assert k == k2
        _same(a, b)
    xa, xb = retrograd.rand(16, 1, 28, 28), torch.rand(16, 1, 28, 28)
    ya, yb = retrograd.randint(0, 10, (16,)), torch.randint(0, 10, (16,))
    _same(xa, xb)
    _same(ya, yb)
    oa = retrograd.optim.SGD(ra.parameters(), lr=0.05, momentum=0.5)
    ob = torch.optim.SGD(tb.parameters(), lr=0.05, momentum=0.5)
    losses = []
    for _ in range(2):
        la = retrograd.nn.functional.cross_entropy(ra(xa), ya)
        lb = torch.nn.functional.cross_entropy(tb(xb), yb)
        losses.append((la.item(), lb.item()))
        for o, l in ((oa, la), (ob, lb)):
            o.zero_grad()
            l.backward()
            o.step()
    for la, lb in losses:
        assert abs(la - lb) <= 1e-6 * max(1.0, abs(lb))
    _aligned()   # (the dropout masks drew the same words)


# --- distributions: the same draws through their samplers ------------------------------------

def _dists(lib):
    f64 = lib.float64
    t = lambda v: lib.tensor(v, dtype=f64)
    D = lib.distributions
    return {
        "Normal": D.Normal(t([0.5, -1.0, 2.0]), t([1.0, 0.1, 3.0])),
        "Uniform": D.Uniform(t([0.0, -2.0]), t([1.0, 5.0])),
        "Bernoulli": D.Bernoulli(probs=t([0.1, 0.5, 0.9])),
        "Categorical": D.Categorical(probs=t([0.2, 0.3, 0.5])),
        "Exponential": D.Exponential(t([0.5, 2.0])),
        "Geometric": D.Geometric(probs=t([0.3, 0.7])),
        "Cauchy": D.Cauchy(t([0.5, 1.0]), t([2.0, 0.5])),
        "MultivariateNormal": D.MultivariateNormal(t([0.0, 1.0]), covariance_matrix=t([[2.0, 0.3], [0.3, 1.0]])),
    }


@needs_torch
@pytest.mark.parametrize("name", ["Normal", "Uniform", "Bernoulli", "Categorical", "Exponential", "Geometric",
                                  "Cauchy", "MultivariateNormal"])
@pytest.mark.parametrize("seed", [0, 11])
def test_distribution_samples_match_torch(name, seed):
    got = []
    for lib in (retrograd, torch):
        lib.manual_seed(seed)
        d = _dists(lib)[name]
        s = d.rsample((5,)) if d.has_rsample else d.sample((5,))
        got.append((s.tolist(), lib.rand(3, dtype=lib.float64).tolist()))
    assert got[0] == got[1]


# --- the compiled serial samplers give the C library's bits ----------------------------------

def test_compiled_serial_samplers_equal_the_python_ones():
    pytest.importorskip("numba")
    from retrograd.ops import _accel, _accel_rng as k
    if _accel.load([], "_accel_rng") is None:
        pytest.skip("RETROGRAD_NO_NUMBA is set")
    u = _rng.Engine(7).unit53(200_000)
    u[:6] = [0.0, 2.0 ** -53, 0.5, 1.0 - 2.0 ** -53, 0.25, 0.75]
    cases = [("log1p_neg", (), lambda v: math.log1p(-v)),
             ("cauchy", (0.5, 2.0), lambda v: 0.5 + 2.0 * math.tan(math.pi * (v - 0.5))),
             ("geometric", (math.log1p(-0.3),),
              lambda v: math.ceil(math.log(v) / math.log1p(-0.3)) if v > 0 else math.inf)]
    for name, args, f in cases:
        out = np.empty_like(u)
        getattr(k, name)(u, out, *args)
        want = np.fromiter(map(f, u.tolist()), np.float64, u.size)
        assert np.array_equal(out.view(np.uint64), want.view(np.uint64)), name


@needs_torch
@pytest.mark.parametrize("fill", ["exponential_", "cauchy_", "geometric_"])
def test_serial_fills_of_many_elements_match_torch(fill):
    args = {"exponential_": (1.5,), "cauchy_": (0.5, 2.0), "geometric_": (0.3,)}[fill]
    got = []
    for lib in (retrograd, torch):
        lib.manual_seed(5)
        got.append(getattr(lib.empty(5000, dtype=lib.float64), fill)(*args).tolist())
    assert got[0] == got[1]
    p = np.random.default_rng(0).random(3000)
    picks = [lib.multinomial(lib.tensor(p), 1).item() for lib in (retrograd, torch)
             if lib.manual_seed(9) is not None]
    assert picks[0] == picks[1]
