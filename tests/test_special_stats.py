"""retrograd.special and the statistics/search ops: what the op table (tests/opinfo/ops_special.py,
ops_numeric.py, ops_stats.py) does not express: the namespace against torch.special, derivatives
PyTorch refuses (the node it records and its exact error), error wording, the top-level in-place
functions, SciPy loading lazily, and float64 gradchecks that run without torch."""
import re
import subprocess
import sys

import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from helpers import torch, needs_torch

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _r(a, grad=True, dtype=np.float64):
    return retrograd.tensor(np.asarray(a, dtype), requires_grad=grad)


def _t(a, grad=True, dtype=np.float64):
    return torch.tensor(np.asarray(a, dtype), requires_grad=grad)


# --- the namespace ---------------------------------------------------------------------------

# torch.special's module-level artefacts that are not functions of the API
_NOT_API = {"Tensor", "torch", "common_args", "multi_dim_common"}


@needs_torch
def test_every_torch_special_function_exists():
    names = {n for n in dir(torch.special) if not n.startswith("_")} - _NOT_API
    missing = sorted(n for n in names if not callable(getattr(retrograd.special, n, None)))
    assert not missing, f"retrograd.special lacks {missing}"
    assert set(retrograd.special.__all__) >= names


def test_import_does_not_load_scipy():
    import os
    src = os.path.dirname(os.path.dirname(retrograd.__file__))
    code = "import sys, retrograd; retrograd.special.xlogy; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": src})
    assert out.stdout.strip() == "False"


def test_top_level_and_methods():
    x = _r([0.5, 2.5], grad=False)
    for name in ("lgamma", "digamma", "i0", "sinc", "logit", "deg2rad", "rad2deg", "nan_to_num"):
        assert np.array_equal(getattr(retrograd, name)(x).numpy(), getattr(x, name)().numpy(), equal_nan=True)
    assert np.array_equal(retrograd.polygamma(2, x).numpy(), x.polygamma(2).numpy())
    assert np.array_equal(retrograd.special.gammaln(x).numpy(), retrograd.lgamma(x).numpy())
    assert np.array_equal(retrograd.special.psi(x).numpy(), retrograd.digamma(x).numpy())
    assert np.array_equal(retrograd.special.multigammaln(x + 1, 2).numpy(), retrograd.mvlgamma(x + 1, 2).numpy())
    # special-only functions stay in retrograd.special, as in PyTorch
    assert not hasattr(retrograd, "ndtr") and not hasattr(retrograd, "zeta")


@needs_torch
@pytest.mark.parametrize("name,args", [("softmax", (1,)), ("log_softmax", (0,)), ("logsumexp", (1,)),
                                       ("round", ()), ("exp2", ()), ("xlogy", (2.0,)), ("expm1", ()), ("log1p", ()),
                                       ("erf", ()), ("erfc", ()), ("expit", ())])
def test_special_aliases_match_torch(name, args):
    a = np.array([[0.3, -1.2, 2.5], [0.7, 0.1, -0.4]])
    r = getattr(retrograd.special, name)(_r(a), *args)
    t = getattr(torch.special, name)(_t(a), *args)
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=1e-12)
    assert type(r.grad_fn).__name__ == type(t.grad_fn).__name__


@needs_torch
def test_special_softmax_dtype_argument():
    a = np.array([[0.3, -1.2, 2.5]], np.float32)
    r = retrograd.special.softmax(retrograd.tensor(a), 1, dtype=retrograd.float64)
    t = torch.special.softmax(torch.tensor(a), 1, dtype=torch.float64)
    assert str(r.dtype) == str(t.dtype)
    np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=1e-12)


# --- derivatives PyTorch does not have -------------------------------------------------------

def _backward_error(lib, fn, make):
    out = fn(lib, make)
    out = out[0] if isinstance(out, tuple) else out
    name = type(out.grad_fn).__name__ if out.grad_fn is not None else None
    try:
        out.sum().backward()
    except Exception as e:  # noqa: BLE001  (the exception is what is compared)
        return name, out.requires_grad, type(e).__name__, str(e).splitlines()[0]
    return name, out.requires_grad, None, None


_REFUSED = {
    "zeta(x)": lambda L, m: L.special.zeta(m([2.0, 3.0]), m([1.5, 2.0], False)),
    "igamma(input)": lambda L, m: L.igamma(m([2.0, 3.0]), m([1.5, 2.0], False)),
    "igammac(input)": lambda L, m: L.igammac(m([2.0, 3.0]), m([1.5, 2.0], False)),
    "gammainc(input)": lambda L, m: L.special.gammainc(m([2.0, 3.0]), m([1.5, 2.0], False)),
    "heaviside": lambda L, m: L.heaviside(m([-1.0, 0.0, 2.0]), m([0.5])),
    "histogram": lambda L, m: L.histogram(m([1.0, 2.0, 2.5]), 3),
    "histogramdd": lambda L, m: L.histogramdd(m([[1.0], [2.0], [2.5]]), [3]),
    "bincount": lambda L, m: L.bincount(L.tensor([0, 1, 1]), m([0.5, 1.0, 2.0])),
    "unique": lambda L, m: L.unique(m([3.0, 1.0, 3.0])),
    "unique(dim)": lambda L, m: L.unique(m([[3.0], [1.0], [3.0]]), dim=0),
    "unique_consecutive": lambda L, m: L.unique_consecutive(m([3.0, 3.0, 1.0])),
    "bessel_j0": lambda L, m: L.special.bessel_j0(m([1.0, 2.0])),
    "chebyshev_polynomial_t": lambda L, m: L.special.chebyshev_polynomial_t(m([0.3, 0.5]), 3),
    "histc": lambda L, m: L.histc(m([1.0, 2.0]), 3),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_refused_derivatives_match_torch(case):
    fn = _REFUSED[case]
    t = _backward_error(torch, fn, lambda a, g=True: _t(a, g))
    r = _backward_error(retrograd, fn, lambda a, g=True: _r(a, g))
    assert r == t


def test_refused_derivatives_without_torch():
    with pytest.raises(NotImplementedError, match=r"the derivative for 'zeta' is not implemented\."):
        retrograd.special.zeta(_r([2.0]), _r([1.5], False)).sum().backward()
    with pytest.raises(NotImplementedError, match=r"the derivative for 'igamma: input' is not implemented\."):
        retrograd.igamma(_r([2.0]), _r([1.5], False)).sum().backward()
    with pytest.raises(RuntimeError, match="derivative for aten::histogram is not implemented"):
        retrograd.histogram(_r([1.0, 2.0]), 2).hist.sum().backward()


@needs_torch
def test_zeta_edge_points_match_torch():
    # the pole x = 1 answers inf whatever q is (q = +inf included, otherwise nan there)
    inf, nan = float("inf"), float("nan")
    x = [1., 1., 1., 2., 2., 2., inf, inf, -inf, nan, 0.5, 1., 2., -1.]
    q = [inf, -inf, nan, inf, -inf, 0., 1., inf, 1., 1., 1., 0., -1., 1.]
    for dt in ("float64", "float32"):
        r = retrograd.special.zeta(retrograd.tensor(x, dtype=getattr(retrograd, dt)),
                                   retrograd.tensor(q, dtype=getattr(retrograd, dt)))
        t = torch.special.zeta(torch.tensor(x, dtype=getattr(torch, dt)), torch.tensor(q, dtype=getattr(torch, dt)))
        np.testing.assert_array_equal(r.numpy(), t.numpy())


@needs_torch
def test_bitwise_not_of_bfloat16_raises_torch_error():
    msgs = []
    for lib in (retrograd, torch):
        with pytest.raises(NotImplementedError) as e:
            lib.ones(2, dtype=lib.bfloat16).bitwise_not()
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


@needs_torch
def test_ldexp_saves_other_and_result_as_torch():
    def run(L):
        x = L.tensor([0.5, 1.5, 0.0], dtype=L.float64, requires_grad=True)
        e = L.tensor([1.0, 2.0, -1.0], dtype=L.float64, requires_grad=True)
        out = []
        for write in ("self", "other", "result", None):
            a, b = x * 1, e * 1
            y = a.ldexp(b)
            if write:
                {"self": a, "other": b, "result": y}[write].exp_()
            try:
                out.append([g.tolist() for g in L.autograd.grad(y.sum(), (x, e))])
            except RuntimeError as err:
                out.append(type(err).__name__)
        z = (x * 1).ldexp_(e)
        out.append([g.tolist() for g in L.autograd.grad(z.sum(), (x, e))])
        return out
    assert run(retrograd) == run(torch)


def test_ldexp_gradients():
    x = retrograd.tensor([0.5, -1.5, 0.3], dtype=retrograd.float64, requires_grad=True)
    e = retrograd.tensor([1.0, 2.0, -0.5], dtype=retrograd.float64, requires_grad=True)
    assert gradcheck(retrograd.ldexp, (x, e))
    assert gradgradcheck(retrograd.ldexp, (x, e))
    assert gradgradcheck(lambda a, b: (a * 1).ldexp_(b), (x, e))


@needs_torch
def test_polygamma_inplace_node_matches_torch():
    def run(L):
        x = L.tensor([1.5, 2.5, -0.5], dtype=L.float64, requires_grad=True)
        y = (x * 1).polygamma_(2)
        return type(y.grad_fn).__name__, L.autograd.grad(y.sum(), x)[0].tolist()
    (rn, rg), (tn, tg) = run(retrograd), run(torch)
    assert rn == tn == "PolygammaBackward1"
    np.testing.assert_allclose(rg, tg, rtol=1e-13)


def test_polygamma_inplace_gradients():
    x = retrograd.tensor([1.5, 2.5, 0.7], dtype=retrograd.float64, requires_grad=True)
    assert gradcheck(lambda a: (a * 1).polygamma_(1), (x,))
    assert gradgradcheck(lambda a: (a * 1).polygamma_(1), (x,))


@needs_torch
def test_histogram_edges_graph_and_identity_match_torch():
    # edges computed from the data hang on a node without a derivative when the input or the weight
    # requires grad; histogramdd hands given edge tensors back as themselves, histogram as a copy
    def run(L):
        x = L.tensor([[0.5, 1.0], [2.0, -1.0], [1.5, 0.0]], dtype=L.float64)
        w = L.tensor([1.0, 2.0, 0.5], dtype=L.float64, requires_grad=True)
        b = L.tensor([-1.0, 0.0, 3.0], dtype=L.float64, requires_grad=True)
        res = []
        for xx, kw in ((x.requires_grad_(False), {"weight": w}), (x.detach().requires_grad_(), {})):
            h, e = L.histogramdd(xx, [2, 3], **kw)
            res.append((h.requires_grad, [t.requires_grad for t in e], e[0].tolist()))
            h2, e2 = L.histogramdd(xx, [b.detach(), b], **kw)
            res.append((h2.requires_grad, e2[1] is b, e2[0].requires_grad, h2.tolist()))
            try:
                L.autograd.grad(e[0].sum(), xx if not kw else w)
            except RuntimeError as err:
                res.append(str(err))
            r = L.histogram(xx[:, 0], 2, **kw)
            res.append((r.hist.requires_grad, r.bin_edges.requires_grad))
            r = L.histogram(xx[:, 0], b, **kw)
            res.append((r.bin_edges is b, r.bin_edges.requires_grad, r.bin_edges.tolist()))
        return res
    assert run(retrograd) == run(torch)


# --- error wording ---------------------------------------------------------------------------

_ERRORS = {
    "polygamma negative n": lambda L: L.polygamma(-1, L.tensor([1.0])),
    "polygamma float n": lambda L: L.polygamma(1.5, L.tensor([1.0])),
    "mvlgamma p": lambda L: L.mvlgamma(L.tensor([1.0]), 0),
    "mvlgamma bool": lambda L: L.mvlgamma(L.tensor([True]), 1),
    "erfcx half": lambda L: L.special.erfcx(L.tensor([1.0], dtype=L.float16)),
    "lgamma complex": lambda L: L.lgamma(L.tensor([1 + 1j])),
    "igamma int": lambda L: L.igamma(L.tensor([1, 2]), L.tensor([1, 2])),
    "igamma number": lambda L: L.igamma(L.tensor([1.0]), 2.0),
    "frexp int": lambda L: L.frexp(L.tensor([1, 2])),
    "gcd float": lambda L: L.gcd(L.tensor([4.0]), L.tensor([6.0])),
    "heaviside dtypes": lambda L: L.heaviside(L.tensor([1.0]), L.tensor([1.0], dtype=L.float64)),
    "nextafter int": lambda L: L.nextafter(L.tensor([1]), L.tensor([2])),
    "float_power_ float32": lambda L: L.tensor([1.0, 2.0]).float_power_(2),
    "searchsorted sides": lambda L: L.searchsorted(L.tensor([1.0]), L.tensor([1.0]), right=True, side="left"),
    "searchsorted side": lambda L: L.searchsorted(L.tensor([1.0]), L.tensor([1.0]), side="up"),
    "searchsorted shapes": lambda L: L.searchsorted(L.ones(2, 3), L.ones(3, 1)),
    "searchsorted 0-d": lambda L: L.searchsorted(L.tensor(1.0), L.tensor([1.0])),
    "searchsorted sorter dtype": lambda L: L.searchsorted(L.tensor([1.0, 2.0]), L.tensor([1.0]),
                                                          sorter=L.tensor([0, 1], dtype=L.int32)),
    "searchsorted sorter size": lambda L: L.searchsorted(L.tensor([1.0, 2.0]), L.tensor([1.0]),
                                                         sorter=L.tensor([0])),
    "bucketize 2-d": lambda L: L.bucketize(L.tensor([1.0]), L.ones(2, 2)),
    "histc bins": lambda L: L.histc(L.tensor([1.0]), bins=0),
    "histc range": lambda L: L.histc(L.tensor([1.0]), bins=2, min=3, max=1),
    "histc inf": lambda L: L.histc(L.tensor([1.0, float("inf")]), bins=2),
    "histc int": lambda L: L.histc(L.tensor([1, 2]), bins=2),
    "histogram range": lambda L: L.histogram(L.tensor([1.0]), 3, range=(2.0, 1.0)),
    "histogram nan": lambda L: L.histogram(L.tensor([1.0, float("nan")]), 3),
    "histogram bins dtype": lambda L: L.histogram(L.tensor([1.0], dtype=L.float64), L.tensor([0.0, 2.0])),
    "histogram bins 2-d": lambda L: L.histogram(L.tensor([1.0]), L.tensor([[0.0, 2.0]])),
    "histogramdd bins dtype": lambda L: L.histogramdd(L.ones(2, 2), [L.tensor([0.0, 2.0]),
                                                                     L.tensor([0, 2])]),
    "histogramdd bins 2-d": lambda L: L.histogramdd(L.ones(2, 2), [L.tensor([0.0, 2.0]), L.tensor([[0.0, 2.0]])]),
    "bincount negative": lambda L: L.bincount(L.tensor([0, -1])),
    "bincount minlength": lambda L: L.bincount(L.tensor([0]), minlength=-1),
    "bincount weights": lambda L: L.bincount(L.tensor([0, 1]), L.tensor([1.0])),
    "isin bool": lambda L: L.isin(L.tensor([True]), L.tensor([True])),
    "quantile q": lambda L: L.quantile(L.tensor([1.0, 2.0]), 1.5),
    "quantile q tensor": lambda L: L.quantile(L.tensor([1.0, 2.0]), L.tensor([0.5, -0.1])),
    "quantile q 2-d": lambda L: L.quantile(L.tensor([1.0, 2.0]), L.tensor([[0.5]])),
    "quantile q dtype": lambda L: L.quantile(L.tensor([1.0, 2.0]), L.tensor([0.5], dtype=L.float64)),
    "quantile int": lambda L: L.quantile(L.tensor([1, 2]), 0.5),
    "quantile empty": lambda L: L.nanquantile(L.tensor([]), 0.5),
    "quantile interpolation": lambda L: L.quantile(L.tensor([1.0]), 0.5, interpolation="cubic"),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(_ERRORS))
def test_errors_match_torch(case):
    with pytest.raises(Exception) as te:
        _ERRORS[case](torch)
    with pytest.raises(Exception) as re_:
        _ERRORS[case](retrograd)
    assert type(re_.value).__name__ == type(te.value).__name__
    assert str(re_.value).splitlines()[0] == str(te.value).splitlines()[0]


# --- top-level in-place functions ------------------------------------------------------------

def _inplace_args(name):
    if name in ("gcd_", "lcm_"):
        return np.array([4, 6, 9]), (np.array([6, 4, 3]),)
    x = np.array([0.2, 0.5, 0.7])
    extra = {"clamp_": (0.3, 0.6), "clip_": (0.3, 0.6), "clamp_max_": (0.4,), "clamp_min_": (0.4,),
             "fill_": (1.5,), "ldexp_": (np.array([1.0, 2.0, -1.0]),), "xlogy_": (np.array([2.0, 3.0, 0.5]),),
             "acosh_": (), "arccosh_": ()}.get(name, ())
    if name in ("acosh_", "arccosh_"):
        x = x + 1
    if name == "addmv_":
        extra = (np.arange(6.0).reshape(3, 2), np.array([0.5, -1.0]))
    if name == "index_put_":
        extra = ((np.array([2, 0]),), np.array([7.0, 8.0]))
    return x, extra


def _both(e):
    if isinstance(e, tuple):
        pairs = [_both(i) for i in e]
        return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    if isinstance(e, np.ndarray):
        return retrograd.tensor(e), torch.tensor(e)
    return e, e


@needs_torch
def test_top_level_inplace_functions_match_torch():
    from retrograd.ops.numeric import _TOP_INPLACE
    torch_names = {n for n in torch.__all__ if n.endswith("_") and not n.startswith("_")}
    assert set(_TOP_INPLACE) <= torch_names
    for name in _TOP_INPLACE:
        x, extra = _inplace_args(name)
        rx, tx = retrograd.tensor(x.copy()), torch.tensor(x.copy())
        conv = [_both(e) for e in extra]
        rr = getattr(retrograd, name)(rx, *[c[0] for c in conv])
        tr = getattr(torch, name)(tx, *[c[1] for c in conv])
        assert rr is rx and tr is tx, name
        np.testing.assert_allclose(rx.numpy(), tx.numpy(), rtol=1e-6, err_msg=name)
        assert str(rx.dtype) == str(tx.dtype), name


@needs_torch
@pytest.mark.parametrize("name", ["alpha_dropout_", "feature_alpha_dropout_"])
def test_top_level_alpha_dropout_inplace(name):
    for lib in (retrograd, torch):
        x = lib.ones(4, 3)
        assert getattr(lib, name)(x, 0.5, False) is x   # eval mode: unchanged
        assert x.sum().item() == 12.0
        lib.manual_seed(0)
        assert getattr(lib, name)(x, 0.5, True) is x
        assert not np.allclose(x.numpy(), 1.0)


def test_top_level_inplace_records_history():
    x = _r([0.2, 0.5])
    y = x * 1.0
    retrograd.sin_(y)
    assert type(y.grad_fn).__name__ == "SinBackward0"
    (g,) = retrograd.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(g.numpy(), np.cos([0.2, 0.5]))


# --- gradients without torch -----------------------------------------------------------------

@pytest.mark.parametrize("fn,x", [
    (retrograd.lgamma, [0.3, 1.7, 4.2, -1.5]),
    (retrograd.digamma, [0.3, 1.7, 4.2, -1.5]),
    (lambda x: retrograd.polygamma(1, x), [-1.3, 0.3, 1.7, 4.2]),
    (lambda x: retrograd.polygamma(3, x), [0.3, 1.7, 4.2]),
    (lambda x: retrograd.mvlgamma(x, 3), [1.3, 2.7, 4.2]),
    (retrograd.special.erfcx, [-2.0, 0.3, 5.0]),
    (retrograd.special.ndtri, [0.1, 0.5, 0.97]),
    (retrograd.special.log_ndtr, [-8.0, 0.3, 5.0]),
    (retrograd.special.ndtr, [-2.0, 0.3, 1.0]),
    (retrograd.special.entr, [0.1, 0.5, 2.0]),
    (retrograd.special.i0e, [-2.0, 0.3, 1.0]),
    (retrograd.special.i1, [-2.0, 0.3, 1.0]),
    (retrograd.special.i1e, [-2.0, 0.3, 1.0]),
    (retrograd.i0, [-2.0, 0.3, 1.0]),
    (retrograd.sinc, [-2.3, 0.3, 1.1]),
    (lambda x: retrograd.logit(x, 0.1), [0.2, 0.5, 0.8]),
    (lambda x: retrograd.special.xlog1py(x, x * 2), [0.2, 0.5, 1.5]),
    (lambda x: retrograd.special.zeta(3.0, x), [0.2, 0.5, 1.5]),
    (lambda x: retrograd.special.gammaincc(_r([0.5, 2.0, 4.0], False), x), [0.3, 1.5, 6.0]),
    (lambda x: retrograd.ldexp(x, x), [0.2, -0.5, 1.5]),
    (lambda x: retrograd.quantile(x, 0.3), [0.2, -0.5, 1.5, 0.7]),
    (lambda x: retrograd.nanquantile(x.reshape(2, 2), _r([0.35, 0.8], False), dim=1), [0.2, -0.5, 1.5, 0.7]),
])
def test_gradcheck(fn, x):
    assert gradcheck(fn, (_r(x),))
    assert gradgradcheck(fn, (_r(x),))


def test_quantile_gradient_in_q():
    x = _r([[0.2, -0.5, 1.5, 0.7], [3.0, 1.0, 2.0, 0.0]], False)
    assert gradcheck(lambda q: retrograd.quantile(x, q, dim=1), (_r([0.2, 0.55, 0.9]),))


_OUTS = {
    "lgamma": lambda L, x, o: L.lgamma(x, out=o),
    "polygamma": lambda L, x, o: L.polygamma(2, x, out=o),
    "mvlgamma": lambda L, x, o: L.mvlgamma(x + 2, 2, out=o),
    "special.zeta": lambda L, x, o: L.special.zeta(x + 2, x, out=o),
    "special.ndtr": lambda L, x, o: L.special.ndtr(x, out=o),
    "special.i1e": lambda L, x, o: L.special.i1e(x, out=o),
    "special.bessel_j0": lambda L, x, o: L.special.bessel_j0(x, out=o),
    "special.hermite_polynomial_h": lambda L, x, o: L.special.hermite_polynomial_h(x, 3, out=o),
    "special.gammaincc": lambda L, x, o: L.special.gammaincc(x, x, out=o),
    "logit": lambda L, x, o: L.logit(x / 4, 0.1, out=o),
    "nan_to_num": lambda L, x, o: L.nan_to_num(x, out=o),
    "ldexp": lambda L, x, o: L.ldexp(x, x, out=o),
    "quantile": lambda L, x, o: L.quantile(x, 0.3, out=o),
    "histc": lambda L, x, o: L.histc(x, 4, out=o),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(_OUTS))
def test_out_matches_torch(case):
    a = np.array([0.3, 1.7, 2.5, 0.9])
    res = {}
    for lib in (retrograd, torch):
        o = lib.empty(0, dtype=lib.float64)
        r = _OUTS[case](lib, lib.tensor(a), o)
        assert r is o
        res[lib] = o.numpy()
    np.testing.assert_allclose(res[retrograd], res[torch], rtol=1e-10)
    # with an input requiring grad: refused exactly where torch refuses (the differentiable ones)
    raised = {}
    for lib, mk in ((retrograd, _r), (torch, _t)):
        try:
            _OUTS[case](lib, mk(a), lib.empty(0, dtype=lib.float64))
            raised[lib] = None
        except RuntimeError as e:
            raised[lib] = str(e).split("(): ", 1)[-1]
    assert raised[retrograd] == raised[torch]


@needs_torch
def test_frexp_and_searchsorted_out():
    a = np.array([0.3, 17.0, -2.5])
    for lib in (retrograd, torch):
        m, e = lib.empty(3, dtype=lib.float64), lib.empty(3, dtype=lib.int32)
        r = lib.frexp(lib.tensor(a), out=(m, e))
        assert r.mantissa is m and r.exponent is e
        np.testing.assert_array_equal(e.numpy(), [-1, 5, 2])
        o = lib.empty(3, dtype=lib.int64)
        assert lib.searchsorted(lib.tensor([0.0, 1.0, 5.0]), lib.tensor(a), out=o) is o
        np.testing.assert_array_equal(o.numpy(), [1, 3, 0])


@needs_torch
@pytest.mark.parametrize("call", [
    lambda L, x: x.index_add_(0, L.tensor([0, 1, 2]), x),
    lambda L, x: x.index_copy_(0, L.tensor([2, 1, 0]), x),
    lambda L, x: x.scatter_add_(0, L.tensor([[0]]), x),
    lambda L, x: x.scatter_(0, L.tensor([[0]]), x),
    lambda L, x: x.scatter_reduce_(0, L.tensor([[0]]), x, "sum"),
])
def test_index_writes_refuse_a_source_that_is_self(call):
    """(seen by the differential fuzzer: t.index_add_(0, idx, t) reads what it already wrote)"""
    msgs = []
    for lib in (torch, retrograd):
        with pytest.raises(RuntimeError) as e:
            call(lib, lib.ones(3, 2))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    assert retrograd.index_add(retrograd.ones(3, 2), 0, retrograd.tensor([0, 1, 2]), retrograd.ones(3, 2)).sum() == 12


@needs_torch
def test_complex_sinc_matches_torch():
    a = np.array([0.3 + 0.2j, 0, -1.5 + 0.7j, 2.0])
    up = np.array([1 + 0.5j, 2, -1j, 0.3])
    res = {}
    for lib in (torch, retrograd):
        x = lib.tensor(a, requires_grad=True)
        y = lib.sinc(x)
        (g,) = lib.autograd.grad(y, x, lib.tensor(up), create_graph=True)
        (gg,) = lib.autograd.grad(g.abs().sum(), x)
        res[lib] = [y.detach().numpy(), g.detach().numpy(), gg.numpy(), type(y.grad_fn).__name__]
    for r, t in zip(res[retrograd][:3], res[torch][:3]):
        np.testing.assert_allclose(r, t, rtol=1e-10, atol=1e-12)
    assert res[retrograd][3] == res[torch][3]


# --- assembled tensors, trapezoid rule, cdist --------------------------------------------------

def test_vander_gradients():
    """(torch 2.13's own vander backward fails: it writes the powers into its result in place)"""
    x = _r([0.5, -1.2, 2.0])
    assert gradcheck(lambda t: retrograd.vander(t), (x,))
    assert gradgradcheck(lambda t: retrograd.vander(t, N=4, increasing=True), (x,))
    np.testing.assert_allclose(retrograd.vander(x).detach().numpy(), np.vander(x.detach().numpy()))


@pytest.mark.parametrize("p", [0.5, 1.0, 1.5, 2.0, 3.0, float("inf")])
def test_cdist_gradcheck(p):
    rng = np.random.default_rng(1)
    a, b = _r(rng.standard_normal((3, 4))), _r(rng.standard_normal((5, 4)))
    assert gradcheck(lambda u, v: retrograd.cdist(u, v, p), (a, b))


@needs_torch
def test_assembled_without_torch():
    a, b = _r([1.0, 2.0, 3.0]), _r([4.0, 5.0])
    assert retrograd.cartesian_prod(a) is a
    assert retrograd.cartesian_prod(a, b).tolist() == [[1, 4], [1, 5], [2, 4], [2, 5], [3, 4], [3, 5]]
    assert retrograd.combinations(a).tolist() == [[1, 2], [1, 3], [2, 3]]
    assert retrograd.tril_indices(3, 3).tolist() == [[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]]
    assert retrograd.triu_indices(2, 3, 1).tolist() == [[0, 0, 1], [1, 2, 2]]
    assert retrograd.block_diag(a.reshape(1, 3), b.reshape(2, 1)).shape == (3, 4)
    assert retrograd.trapezoid(a).item() == 4.0 and retrograd.trapz(a, dx=2.0).item() == 8.0
    assert retrograd.cumulative_trapezoid(a).tolist() == [1.5, 4.0]
    for fn in (lambda t: retrograd.block_diag(t.reshape(3, 1), t * 2),
               lambda t: retrograd.combinations(t, 2, True),
               lambda t: retrograd.cartesian_prod(t, t * t),
               lambda t: retrograd.trapezoid(t, t * t),
               lambda t: retrograd.cumulative_trapezoid(t, dx=0.3)):
        assert gradcheck(fn, (_r([0.3, -1.0, 2.0]),))
        assert gradgradcheck(fn, (_r([0.3, -1.0, 2.0]),))


@needs_torch
@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
def test_windows_match_torch(name):
    for args in [(5,), (6, False), (1,), (0,), (7, True)]:
        t, r = getattr(torch, name)(*args), getattr(retrograd, name)(*args)
        assert tuple(t.shape) == tuple(r.shape) and str(t.dtype) == str(r.dtype)
        np.testing.assert_allclose(r.numpy(), t.numpy(), atol=1e-6)  # float32: an ulp of cos apart at most
        if name != "kaiser_window" and args[0] > 1:
            assert r.numpy()[0] == t.numpy()[0]    # torch's steps in float32: its cancellation at the ends
    for n in (9, 64, 101):
        t, r = getattr(torch, name)(n, dtype=torch.float64), getattr(retrograd, name)(n, dtype=retrograd.float64)
        if name == "kaiser_window":
            np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=1e-12, atol=1e-15)
        else:       # torch's steps in float64: within the two libraries' cosines' ulp (equal on the CPUs tried)
            np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=0, atol=4.5e-16)
    for bad in (lambda L: getattr(L, name)(-1), lambda L: getattr(L, name)(3, dtype=L.int64)):
        with pytest.raises(RuntimeError) as te:
            bad(torch)
        with pytest.raises(RuntimeError) as re_:
            bad(retrograd)
        assert str(re_.value) == str(te.value)


@needs_torch
def test_unravel_index_fill_detach_match_torch():
    for lib in (torch, retrograd):
        assert [c.tolist() for c in lib.unravel_index(lib.tensor([4, 1, 5, 6, -1]), (2, 3))] == \
            [[1, 0, 1, 0, 1], [1, 1, 2, 0, 2]]
        x = lib.ones(2, requires_grad=True)
        y = lib.fill(x, 3.0)
        assert type(y.grad_fn).__name__ == "FillBackward0" and y.tolist() == [3.0, 3.0]
        assert lib.autograd.grad(y, x, lib.tensor([float("inf"), 1.0]))[0].tolist() == [0.0, 0.0]
        assert not lib.detach(x).requires_grad
    for bad in (lambda L: L.unravel_index(L.tensor([1.0]), (2, 3)), lambda L: L.unravel_index(L.tensor([1]), (2, -3))):
        with pytest.raises(Exception) as te:
            bad(torch)
        with pytest.raises(Exception) as re_:
            bad(retrograd)
        assert type(re_.value) is type(te.value)


@needs_torch
@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
def test_triangle_indices_match_torch(name):
    for args, kw in [((3, 4), {}), ((4, 3, 1), {}), ((3, 3, -1), {}), ((5, 2, -2), {}), ((0, 3), {}),
                     ((3, 3, 10), {}), ((3, 3, -10), {}), ((4, 4), {"dtype": "int32"}), ((2, 2), {"device": "meta"})]:
        res = []
        for lib in (torch, retrograd):
            k = {n: getattr(lib, v) if n == "dtype" else v for n, v in kw.items()}
            r = getattr(lib, name)(*args, **k)
            res.append((tuple(r.shape), str(r.dtype), str(r.device), None if r.is_meta else r.tolist()))
        assert res[0] == res[1], (args, kw)
    for bad in ((-1, 3), (3, -1)):
        with pytest.raises(RuntimeError) as te:
            getattr(torch, name)(*bad)
        with pytest.raises(RuntimeError) as re_:
            getattr(retrograd, name)(*bad)
        assert str(re_.value) == str(te.value)
    with pytest.raises(NotImplementedError):
        getattr(retrograd, name)(3, 3, dtype=retrograd.float32)


@pytest.mark.parametrize("q", [float("nan"), "tensor"])
def test_quantile_refuses_a_nan_q(q):
    """A NaN q is outside [0, 1] (PyTorch's test is q >= 0 and q <= 1), as a scalar or in a tensor."""
    x = retrograd.tensor([1.0, 2.0, 3.0])
    qq = retrograd.tensor([0.5, float("nan")]) if q == "tensor" else q
    want = "q values must be in the range [0, 1]" if q == "tensor" else "q must be in the range [0, 1] but got nan"
    for fn in (retrograd.quantile, retrograd.nanquantile):
        with pytest.raises(RuntimeError, match=re.escape(want)):
            fn(x, qq)


@pytest.mark.parametrize("dt,name", [("float16", "Half"), ("bfloat16", "BFloat16")])
@pytest.mark.parametrize("op", ["i1", "i1e"])
def test_i1_backward_has_no_half_kernel(dt, name, op):
    """PyTorch's i1/i1e backward kernels have no float16/bfloat16 version: the same error, also
    where it comes from i0's second derivative."""
    x = retrograd.tensor([0.5, 1.0], dtype=getattr(retrograd, dt), requires_grad=True)
    y = getattr(retrograd.special, op)(x)
    with pytest.raises(NotImplementedError, match=re.escape(f"\"{op}_backward\" not implemented for '{name}'")):
        y.sum().backward()
    assert x.grad is None
    if op == "i1":
        (g,) = retrograd.autograd.grad(retrograd.i0(x).sum(), x, create_graph=True)
        with pytest.raises(NotImplementedError, match=re.escape(f"\"i1_backward\" not implemented for '{name}'")):
            retrograd.autograd.grad(g.sum(), x)


@needs_torch
@pytest.mark.parametrize("edges", [[2.86, -0.98, 1.84, -0.93], [0.0, 2.0, 1.0, 3.0], [-1.0, 0.5, 0.5, 2.0],
                                   [3.0, 2.0, 1.0], [0.0, 1.0, 1.0]])
@pytest.mark.parametrize("density", [False, True])
def test_histogram_with_unsorted_or_repeated_edges_matches_torch(edges, density):
    """A value counts only between the first and the last edge (nothing at all where the last
    lies below the first: a density of 0/0), in the bin a binary search for it gives."""
    x = np.array([-2.0, -0.95, 0.0, 0.5, 1.0, 1.5, 2.0, 2.9, 3.0, np.nan])
    w = np.linspace(0.1, 1.0, x.size)
    outs = []
    for L in (retrograd, torch):
        h, e = L.histogram(L.tensor(x), L.tensor(edges, dtype=L.float64), weight=L.tensor(w), density=density)
        outs.append((h.numpy(), e.numpy()))
        hd, _ = L.histogramdd(L.tensor(x[:, None]), [L.tensor(edges, dtype=L.float64)], density=density)
        outs.append((hd.numpy(), None))
    np.testing.assert_allclose(outs[0][0], outs[2][0], rtol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(outs[0][1], outs[2][1])
    np.testing.assert_allclose(outs[1][0], outs[3][0], rtol=1e-12, equal_nan=True)
