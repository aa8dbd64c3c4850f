"""Op table entries: special functions (retrograd.special / torch.special, and the top-level and
Tensor forms of lgamma, digamma, polygamma, mvlgamma, logit, sinc, i0, igamma, igammac)."""
import numpy as np

from .core import OpInfo, Sample, method

OPS = []
INF, NAN = np.inf, np.nan


def special(name):
    """op calling lib.special.<name>."""
    def op(lib, *args, **kwargs):
        return getattr(lib.special, name)(*args, **kwargs)
    op.__name__ = name
    op.fuzz_call = ("function", "special." + name)
    return op


def _add(name, op, samples, **kw):
    OPS.append(OpInfo(name, op, samples, **kw))


def unary(name, op, low=-2.0, high=2.0, degenerate=(), **kw):
    def samples(mk):
        yield Sample(mk.rand(2, 3, low=low, high=high))
        yield Sample(mk.rand(5, low=low, high=high))
        if degenerate:
            yield Sample(mk.arr(degenerate), kind="degenerate")
    _add(name, op, samples, elementwise=True, **kw)


# poles of the gamma family at the non-positive integers, both zeros, and the infinities
_POLES = (0.0, -0.0, -1.0, -2.0, -2.5, 1.0, 2.0, 1e-300, INF, -INF)
unary("lgamma", method("lgamma"), -3.0, 4.0, _POLES, inplace="lgamma_")
unary("special.gammaln", special("gammaln"), -3.0, 4.0, _POLES)
unary("digamma", method("digamma"), -3.0, 4.0, _POLES, inplace="digamma_", covers=("special.psi",))
unary("special.digamma", special("digamma"), 0.2, 4.0, _POLES)
unary("special.psi", special("psi"), 0.2, 4.0, (0.0, -1.0, 3.0))
for _n in (0, 1, 2, 3):
    unary(f"polygamma({_n})", lambda t, x, _n=_n: t.polygamma(_n, x), -3.0, 4.0, _POLES)
_add("polygamma", lambda t, x, n: x.polygamma(n),
     lambda mk: [Sample(mk.rand(2, 3, low=0.3, high=3.0), 1), Sample(mk.rand(4, low=-3.0, high=3.0), 2),
                 Sample(mk.arr(_POLES), 1, kind="degenerate"), Sample(mk.arr(_POLES), 4, kind="degenerate")],
     inplace="polygamma_")
_add("special.polygamma", lambda t, n, x: t.special.polygamma(n, x),
     lambda mk: [Sample(2, mk.rand(2, 3, low=0.3, high=3.0)), Sample(0, mk.rand(4, low=0.3, high=3.0))])
_add("mvlgamma", lambda t, x, p: x.mvlgamma(p),
     lambda mk: [Sample(mk.rand(2, 3, low=1.6, high=4.0), 3), Sample(mk.rand(4, low=0.2, high=4.0), 1),
                 Sample(mk.arr([1.0, 1.5, 0.5, INF]), 2, kind="degenerate"), Sample(mk.rand(3), 0, kind="error")],
     inplace="mvlgamma_")
_add("special.multigammaln", lambda t, x, p: t.special.multigammaln(x, p),
     lambda mk: [Sample(mk.rand(2, 3, low=1.6, high=4.0), 2)])
unary("special.erfcx", special("erfcx"), -3.0, 3.0, (-30.0, 0.0, 30.0, 1e10, -1e10, 40.0))
unary("special.ndtr", special("ndtr"), -3.0, 3.0, (-40.0, 0.0, 10.0, -10.0))
unary("special.ndtri", special("ndtri"), 0.05, 0.95, (0.0, 1.0, 0.5, -0.5, 1.5))
unary("special.log_ndtr", special("log_ndtr"), -5.0, 3.0, (-40.0, 0.0, 10.0, -10.0, 30.0))
unary("special.entr", special("entr"), 0.1, 3.0, (0.0, -0.5, 1.0, 1e-300))
unary("sinc", method("sinc"), degenerate=(0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 1e-20), inplace="sinc_")
unary("special.sinc", special("sinc"), degenerate=(0.0, 1.0))
unary("logit", method("logit"), 0.05, 0.95, (0.0, -0.0, 1.0, 0.5, -0.3, 1.5), inplace="logit_")
_add("logit(eps)", lambda t, x, eps: x.logit(eps),
     lambda mk: [Sample(mk.rand(2, 3, low=-0.2, high=1.2), 0.1), Sample(mk.rand(4, low=0.05, high=0.95), 1e-6),
                 Sample(mk.arr([0.0, 1.0, 0.5, -0.3, 1.5, 0.1, 0.9]), 0.1, kind="degenerate")],
     elementwise=True, gradcheck_kinds=("noncontig", "size1"))
unary("special.logit", special("logit"), 0.05, 0.95, (0.0, 1.0))
unary("special.expit", special("expit"), degenerate=(-800.0, 0.0, 800.0))
unary("i0", method("i0"), -3.0, 3.0, (0.0, 30.0, -800.0), inplace="i0_")
unary("special.i0", special("i0"), -3.0, 3.0, (0.0, 30.0))
unary("special.i0e", special("i0e"), -3.0, 3.0, (0.0, -0.0, 30.0, -800.0, 1e-20))
unary("special.i1", special("i1"), -3.0, 3.0, (0.0, -0.0, 30.0, -30.0, 1e-20))
unary("special.i1e", special("i1e"), -3.0, 3.0, (0.0, -0.0, 30.0, -800.0, 1e-20))
for _n, _lo, _hi, _deg in (("bessel_j0", -5.0, 5.0, (0.0, 100.0)), ("bessel_j1", -5.0, 5.0, (0.0, 100.0)),
                           ("bessel_y0", 0.2, 5.0, (0.0, -1.0, 100.0)), ("bessel_y1", 0.2, 5.0, (0.0, -1.0, 100.0)),
                           ("modified_bessel_i0", -3.0, 3.0, (0.0, 30.0)),
                           ("modified_bessel_i1", -3.0, 3.0, (0.0, -30.0)),
                           ("modified_bessel_k0", 0.2, 5.0, (0.0, -1.0, 100.0)),
                           ("modified_bessel_k1", 0.2, 5.0, (0.0, -1.0, 100.0)),
                           ("scaled_modified_bessel_k0", 0.2, 5.0, (0.0, -1.0, 100.0)),
                           ("scaled_modified_bessel_k1", 0.2, 5.0, (0.0, -1.0, 100.0)),
                           ("spherical_bessel_j0", -5.0, 5.0, (0.0, -0.0, 1e-20, 100.0)),
                           # Ai below -2 is where PyTorch's kernel loses digits (2e-7 at -2.5);
                           # SciPy's value there is the correctly rounded one
                           ("airy_ai", -2.0, 3.0, (0.0, 10.0, 200.0))):
    unary("special." + _n, special(_n), _lo, _hi, _deg, grad=False)


def binary(name, op, x, y, degenerate=(), scalars=True, only_y=False, **kw):
    """``op(x, y)``: tensor-tensor (broadcast), each side a number, and degenerate pairs;
    ``only_y``: PyTorch differentiates the second argument only."""
    g = [1] if only_y else None

    def samples(mk):
        yield Sample(x(mk, 2, 3), y(mk, 2, 3), grad=g)
        yield Sample(x(mk, 2, 3), y(mk, 3), grad=g)
        if scalars:
            yield Sample(x(mk, 2, 3), float(y(mk, 1)[0]), grad=[] if only_y else None)
            yield Sample(float(x(mk, 1)[0]), y(mk, 2, 3))
        if degenerate:
            a, b = zip(*degenerate)
            yield Sample(mk.arr(a), mk.arr(b), kind="degenerate", grad=g)
    _add(name, op, samples, elementwise=True, **kw)


def _r(low, high):
    return lambda mk, *s: mk.rand(*s, low=low, high=high)


binary("special.xlog1py", special("xlog1py"), _r(-2, 2), _r(-0.8, 2),
       ((0.0, -1.0), (0.0, -2.0), (0.0, NAN), (1.0, -1.0), (0.0, 0.0), (2.0, INF), (-0.0, 1.0)))
binary("special.xlogy", special("xlogy"), _r(-2, 2), _r(0.2, 2), ((0.0, 0.0), (0.0, NAN), (1.0, 0.0)))
# zeta has no derivative in its first argument (PyTorch's not_implemented): only q is differentiated
binary("special.zeta", special("zeta"), _r(1.5, 4), _r(0.3, 3),
       ((1.0, 1.0), (0.5, 1.0), (2.0, 0.0), (2.0, -1.0), (2.0, -1.5), (3.0, INF), (INF, 2.0), (2.0, 1e-300)), only_y=True)
_GAMMAINC = ((0.0, 0.0), (1.0, 0.0), (NAN, 0.0), (NAN, INF), (INF, NAN), (INF, 1.0), (1.0, INF), (-1.0, 1.0),
             (0.5, -1.0), (2.0, 1e-300))
for _n in ("igamma", "igammac"):
    binary(_n, method(_n), _r(0.3, 3), _r(0.3, 3), _GAMMAINC, scalars=False, only_y=True, inplace=_n + "_")
for _n in ("gammainc", "gammaincc"):
    binary("special." + _n, special(_n), _r(0.3, 3), _r(0.3, 3), _GAMMAINC, scalars=False, only_y=True)
_POLY_X = (-1.0, 1.0, 0.0, 0.5, -0.5, 2.0, INF, -INF)
# torch 2.13 bug, retrograd is right: at a NaN x several of these kernels return uninitialized memory
# (legendre_polynomial_p(nan, 20) is -5.5e303 or 1.5e-323 from call to call), so NaN x is left out and
# the infinities are sampled by the degenerate samples instead of the generic nonfinite kind
for _n in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"):
    _add("special." + _n, special(_n),
         lambda mk: [Sample(mk.rand(2, 3, low=-1.2, high=1.2), mk.arr([[0.0, 1.0, 2.0], [3.0, 7.0, 12.0]])),
                     Sample(mk.rand(4, low=-1.0, high=1.0), 5), Sample(mk.rand(4, low=-1.0, high=1.0), 20),
                     # x a number: 0.5 keeps the shifted polynomials' 2x - 1 exact when the int64-degree
                     # variant computes in float32 (torch rounds its float32 recurrence in another order)
                     Sample(0.5, mk.arr([0.0, 1.0, 4.0, -1.0])),
                     Sample(mk.arr(_POLY_X * 3), mk.arr((0.0,) * 8 + (3.0,) * 8 + (10.0,) * 8), kind="degenerate"),
                     Sample(mk.rand(4), mk.arr([NAN, INF, -INF, 1e30]), kind="degenerate"),
                     Sample(mk.rand(3, low=0.0, high=1.0), mk.arr([-2.0, 9.0, 30.0]), kind="degenerate")],
         grad=False, elementwise=True, nonfinite=False, fuzz=False,
         skip={"fuzz": "torch 2.13 returns uninitialized memory at a NaN x (see _POLY_X above), which random "
                       "programs produce"})

# the aliases torch.special shares with the top level (special.round is round.decimals: integers refused)
_ROUND = (-2.5, -1.5, -0.5, -0.0, 0.5, 1.5, 2.5, 1e300)
unary("special.round", special("round"), degenerate=_ROUND)
_add("special.round(decimals)", lambda t, x, **k: t.special.round(x, **k),
     lambda mk: [Sample(mk.rand(2, 3, low=-20, high=20), decimals=1),
                 Sample(mk.arr([0.25, 0.35, -1.45, 12.5]), decimals=1, kind="degenerate")])
unary("special.erf", special("erf"), degenerate=(-30.0, 0.0, 30.0))
unary("special.erfc", special("erfc"), degenerate=(-30.0, 0.0, 30.0))
unary("special.erfinv", special("erfinv"), -0.9, 0.9, (-1.0, 1.0, 0.0, 1.5))
unary("special.exp2", special("exp2"), degenerate=(-2000.0, 0.0, 1100.0))
unary("special.expm1", special("expm1"), degenerate=(-1000.0, -0.0, 710.0))
unary("special.log1p", special("log1p"), -0.8, 2.0, (-1.0, 0.0, -2.0))
for _n in ("softmax", "log_softmax", "logsumexp"):
    _add("special." + _n, special(_n),
         lambda mk: [Sample(mk.rand(2, 3), 1), Sample(mk.rand(3, 4), 0), Sample(mk.arr([[-INF, 0.0, 1e3]]), -1,
                                                                                   kind="degenerate")])
