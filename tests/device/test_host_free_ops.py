"""Ops once written with NumPy on host arrays (statistics, construction, numeric utilities,
margin/CTC losses, unpooling, fractional pooling...) on the emulated CUDA device: factory
functions build their result with the device's array module (no copy from the host), ops of
fixed-size results ask the host nothing (forward and backward), and the ops whose result's
size is data synchronise once to size it, as PyTorch's CUDA kernels do."""
import numpy as np
import pytest

import retrograd
import retrograd.nn.functional as F

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")
CUDA = retrograd.device("cuda", 0)

FACTORIES = {
    "hann_window": lambda **kw: retrograd.hann_window(7, **kw),
    "hamming_window": lambda **kw: retrograd.hamming_window(6, False, alpha=0.5, beta=0.4, **kw),
    "blackman_window": lambda **kw: retrograd.blackman_window(5, **kw),
    "bartlett_window": lambda **kw: retrograd.bartlett_window(8, **kw),
    "kaiser_window": lambda **kw: retrograd.kaiser_window(6, beta=3.0, dtype=retrograd.float64, **kw),
    "tril_indices": lambda **kw: retrograd.tril_indices(4, 3, -1, **kw),
    "triu_indices": lambda **kw: retrograd.triu_indices(3, 5, 1, dtype=retrograd.int32, **kw),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factories_are_built_by_the_device_module(name, _emulated_cuda):
    make = FACTORIES[name]
    cpu = make()
    before = _emulated_cuda.SYNCS.h2d
    with _emulated_cuda.forbid_host_sync():
        given = make(device="cuda")
        with CUDA:   # the default device
            default = make()
    assert _emulated_cuda.SYNCS.h2d == before        # nothing copied from the host
    for t in (given, default):
        assert t.device == CUDA and t.dtype == cpu.dtype and t.shape == cpu.shape
        np.testing.assert_array_equal(t.cpu().numpy(), cpu.numpy())
    assert cpu.device.type == "cpu"


def test_window_requires_grad_on_the_device():
    w = retrograd.hann_window(5, device="cuda", requires_grad=True)
    assert w.device == CUDA and w.requires_grad and w.is_leaf


def _dev(a, grad=False):
    return retrograd.tensor(a).to("cuda").requires_grad_(grad)


def _rng():
    return np.random.default_rng(0)


def _cases():
    r = _rng()
    x34 = r.standard_normal((3, 4)).astype(np.float32)
    return {
        "searchsorted": lambda: retrograd.searchsorted(_dev(np.sort(r.standard_normal(9)).astype(np.float32)),
                                                       _dev(x34), right=True),
        "bucketize": lambda: retrograd.bucketize(_dev(x34), _dev(np.linspace(-1, 1, 5).astype(np.float32))),
        "histc(range)": lambda: retrograd.histc(_dev(x34), 5, -1, 1),
        "histogram(range)": lambda: retrograd.histogram(_dev(x34), 4, range=(-2.0, 2.0))[0],
        "isin": lambda: retrograd.isin(_dev(np.arange(6)), _dev(np.array([1, 4, 9]))),
        "quantile": lambda: retrograd.quantile(_dev(x34, True), 0.3, dim=1),
        "nanquantile": lambda: retrograd.nanquantile(_dev(x34, True), _dev(np.float32([0.2, 0.9])), dim=0),
        "nan_to_num": lambda: retrograd.nan_to_num(_dev(np.float32([np.nan, np.inf, -1.0]), True), posinf=3.0),
        "frexp": lambda: retrograd.frexp(_dev(x34, True))[0],
        "ldexp": lambda: retrograd.ldexp(_dev(x34, True), _dev(np.float32([1, -2, 0, 3]))),
        "nextafter": lambda: retrograd.nextafter(_dev(x34, True), _dev(np.zeros(4, np.float32))),
        "gcd": lambda: retrograd.gcd(_dev(np.arange(6)), _dev(np.int64([4]))),
        "heaviside": lambda: retrograd.heaviside(_dev(x34), _dev(np.float32([0.5]))),
        "block_diag": lambda: retrograd.block_diag(_dev(x34, True), _dev(x34[:2, :2], True)),
        "trapezoid": lambda: retrograd.trapezoid(_dev(x34, True), dx=0.5),
        "cumulative_trapezoid": lambda: retrograd.cumulative_trapezoid(_dev(x34, True), dim=0),
        "cdist": lambda: retrograd.cdist(_dev(x34, True), _dev(x34[::-1].copy(), True), p=1.5),
        "cdist(mm)": lambda: retrograd.cdist(_dev(x34, True), _dev(x34, True),
                                             compute_mode="use_mm_for_euclid_dist"),
        "pdist": lambda: retrograd.pdist(_dev(x34, True), p=3),
        "unravel_index": lambda: retrograd.unravel_index(_dev(np.int64([0, 5, 11])), (3, 4))[1],
        "as_strided_scatter": lambda: retrograd.as_strided_scatter(_dev(x34, True), _dev(np.ones(2, np.float32), True),
                                                                   (2,), (5,), 1),
        "index_reduce": lambda: _dev(x34, True).index_reduce(0, _dev(np.int64([0, 2, 0])),
                                                             _dev(x34[:3] * 2, True), "amax"),
        "detach_copy": lambda: retrograd.detach_copy(_dev(x34)),
        "channel_shuffle": lambda: F.channel_shuffle(_dev(r.standard_normal((2, 6, 3)).astype(np.float32), True), 3),
        "max_unpool2d": lambda: F.max_unpool2d(_dev(x34.reshape(1, 1, 3, 4), True),
                                               _dev(np.int64([[[[0, 3, 5, 6], [9, 10, 20, 23], [28, 30, 33, 47]]]])),
                                               2),
        "fractional_max_pool2d": lambda: F.fractional_max_pool2d(
            _dev(r.standard_normal((2, 3, 7, 6)).astype(np.float32), True), 2, (3, 4),
            _random_samples=_dev(r.random((2, 3, 2)).astype(np.float32))),
        "soft_margin_loss": lambda: F.soft_margin_loss(_dev(x34, True), _dev(np.sign(x34[::-1]).copy())),
        "multi_margin_loss": lambda: F.multi_margin_loss(_dev(x34, True), _dev(np.int64([0, 3, 1])), p=2),
        "multilabel_margin_loss": lambda: F.multilabel_margin_loss(
            _dev(x34, True), _dev(np.int64([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 0, 0, 0]]))),
        "conv_tbc": lambda: F.conv_tbc(_dev(r.standard_normal((5, 2, 3)).astype(np.float32), True),
                                       _dev(r.standard_normal((3, 3, 4)).astype(np.float32), True),
                                       _dev(np.zeros(4, np.float32), True), 1),
    }


CASES = sorted(_cases())


@pytest.mark.parametrize("name", CASES)
def test_fixed_size_ops_ask_the_host_nothing(name, _emulated_cuda):
    make = _cases()[name]
    # the leaves are made (and copied to the device) outside the forbidding region
    with _emulated_cuda.forbid_host_sync():
        out = make()
        assert out.device == CUDA
        if out.requires_grad:
            leaves = [t for t in _leaves(out) if t.requires_grad]
            assert leaves
            gs = retrograd.autograd.grad(out.sum(), leaves, allow_unused=True)
            assert any(g is not None for g in gs) and all(g is None or g.device == CUDA for g in gs)


def _leaves(out):
    """The leaf tensors of ``out``'s graph."""
    seen, stack, leaves = set(), [out.grad_fn], []
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        if hasattr(fn, "variable"):
            leaves.append(fn.variable)
        stack.extend(f for f, _ in fn.next_functions)
    return leaves


def _syncs(_emulated_cuda, fn):
    with _emulated_cuda.count_host_syncs() as log:
        out = fn()
    return out, log


@pytest.mark.parametrize("name,make,want", [
    ("unique", lambda d: retrograd.unique(d, return_inverse=True, return_counts=True), 1),
    ("unique(dim)", lambda d: retrograd.unique(d.reshape(4, 3), dim=0, return_counts=True), 1),
    ("unique_consecutive", lambda d: retrograd.unique_consecutive(d, return_counts=True), 1),
])
def test_data_sized_results_synchronise_once(name, make, want, _emulated_cuda):
    vals = np.float32([3, 1, 1, 2, 3, np.nan, 1, 1, 2, np.nan, 0, 0])
    d = retrograd.tensor(vals).to("cuda")
    out, log = _syncs(_emulated_cuda, lambda: make(d))
    assert len(log) == want, log
    cpu = make(retrograd.tensor(vals))
    for a, b in zip(out, cpu):
        assert a.device == CUDA
        np.testing.assert_array_equal(a.cpu().numpy(), b.numpy())


def test_ctc_loss_reads_only_its_lengths_on_the_host(_emulated_cuda):
    r = _rng()
    lp = retrograd.tensor(r.standard_normal((8, 3, 5)).astype(np.float32)).log_softmax(2)
    tg = retrograd.tensor(np.int64([[1, 2, 2], [3, 1, 0], [4, 4, 4]]))
    il, tl = retrograd.tensor(np.int64([8, 6, 7])), retrograd.tensor(np.int64([3, 2, 3]))
    cpu_leaf = lp.detach().requires_grad_()
    cpu = F.ctc_loss(cpu_leaf, tg, il, tl, zero_infinity=True)
    cpu.backward()
    leaf = lp.detach().to("cuda").requires_grad_()
    dev_args = [t.to("cuda") for t in (tg, il, tl)]
    loss, log = _syncs(_emulated_cuda, lambda: F.ctc_loss(leaf, *dev_args, zero_infinity=True))
    assert [w for w, _ in log] == ["get", "get"]      # the input and target lengths
    with _emulated_cuda.forbid_host_sync():
        loss.backward()
    assert loss.device == CUDA and leaf.grad.device == CUDA
    np.testing.assert_allclose(loss.item(), cpu.item(), rtol=1e-5)
    np.testing.assert_allclose(leaf.grad.cpu().numpy(), cpu_leaf.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_histc_of_the_data_range_reads_it_on_the_host(_emulated_cuda):
    vals = np.float32([0.5, 2.0, -1.0, 3.5, 2.0])
    out, log = _syncs(_emulated_cuda, lambda: retrograd.histc(retrograd.tensor(vals).to("cuda"), 4))
    assert len(log) == 2                                    # its min and max
    np.testing.assert_array_equal(out.cpu().numpy(), retrograd.histc(retrograd.tensor(vals), 4).numpy())


def test_empty_inputs_results_stay_on_the_device():
    def run(dev):
        y = retrograd.zeros(3, 0, device=dev)
        return [retrograd.trapezoid(y), retrograd.trapezoid(y, retrograd.zeros(0, device=dev)),
                retrograd.cumulative_trapezoid(y), retrograd.combinations(retrograd.arange(3, device=dev), 0),
                retrograd.unique(y), retrograd.unique_consecutive(y),
                retrograd.pdist(retrograd.zeros(1, 2, device=dev)),
                retrograd.tril_indices(0, 3, device=dev), retrograd.hann_window(0, device=dev)]
    for o, c in zip(run("cuda"), run("cpu")):
        assert o.device == CUDA and o.dtype == c.dtype and o.shape == c.shape
        np.testing.assert_array_equal(o.cpu().numpy(), c.numpy())
