"""The few differentiable ops ``torch.distributions`` needs that retrograd's op families lack:
the samplers behind Gamma, Dirichlet,
Poisson and Binomial (``_standard_gamma`` with its implicit reparameterisation gradient,
``_sample_dirichlet``, ``_dirichlet_grad``, ``poisson``, ``binomial``). The linear algebra the
distributions need is retrograd.linalg's.

The special functions (lgamma, digamma, mvlgamma, igamma, ...) are retrograd's own
(ops/special.py). Backward formulas are written with tensor ops, so create_graph works.
"""
import numpy as np

from ..ops._base import OpNode, node_for, save, finish, arr, Tensor, zeros_grad
from .. import _dtype as D

def _sp():
    import scipy.special as sp
    return sp


def _float_data(t):
    x = t._data
    if x.dtype.kind in "iub":
        x = x.astype(D._default[0].np)
    return x


# --- sampling --------------------------------------------------------------------------------

def _standard_gamma_grad_np(alpha, x):
    """d sample / d alpha of a Gamma(alpha, 1) sample ``x`` (implicit reparameterisation), with
    PyTorch's approximations: a Taylor series for small x, Rice's saddle point expansion for
    large alpha, a bivariate rational approximation elsewhere."""
    out_dt = np.result_type(alpha.dtype, x.dtype)
    alpha, x = np.broadcast_arrays(alpha.astype(np.float64), x.astype(np.float64))
    out = np.empty(alpha.shape)
    sp = _sp()
    with np.errstate(all="ignore"):
        small = x < 0.8
        a, xs = alpha[small], x[small]
        numer = np.ones_like(xs)
        denom = a.copy()
        s1, s2 = numer / denom, numer / (denom * denom)
        for i in range(1, 6):
            numer = numer * (-xs / i)
            denom = denom + 1
            s1 = s1 + numer / denom
            s2 = s2 + numer / (denom * denom)
        pxa = xs ** a
        pdf = xs ** (a - 1) * np.exp(-xs)
        cdf = pxa * s1
        cdf_a = (np.log(xs) - sp.psi(a)) * cdf - pxa * s2
        r = -cdf_a / pdf
        out[small] = np.where(np.isnan(r), 0.0, r)

        big = ~small & (alpha > 8.0)
        a, xs = alpha[big], x[big]
        near = (0.9 * a <= xs) & (xs <= 1.1 * a)
        n1 = 1 + 24 * a * (1 + 12 * a)
        n2 = 1440 * (a * a) + 6 * xs * (53 - 120 * xs) - 65 * xs * xs / a + a * (107 + 3600 * xs)
        r_near = n1 * n2 / (1244160 * (a * a) * (a * a))
        den = np.sqrt(8 * a)
        t2 = den / (a - xs)
        t3 = (xs - a - a * np.log(xs / a)) ** -1.5
        t23 = np.where(xs < a, t2 - t3, t2 + t3)
        t1 = np.log(xs / a) * t23 - np.sqrt(2 / a) * (a + xs) / ((a - xs) * (a - xs))
        stirling = 1 + 1 / (12 * a) * (1 + 1 / (24 * a))
        out[big] = np.where(near, r_near, -stirling * (xs * t1) / den)

        rest = ~small & ~(alpha > 8.0)
        a, xs = alpha[rest], x[rest]
        u, v = np.log(xs / a), np.log(a)
        c = np.array([[0.16009398, -0.094634809, 0.025146376, -0.0030648343,
                       1, 0.32668115, 0.10406089, 0.0014179084],
                      [0.53487893, 0.1298071, 0.065735949, -0.0015649758,
                       0.16639465, 0.020070113, -0.0035938915, -0.00058392623],
                      [0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
                       0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07]])
        cv = [c[0, i] + u * (c[1, i] + u * c[2, i]) for i in range(8)]
        p = cv[0] + v * (cv[1] + v * (cv[2] + v * cv[3]))
        q = cv[4] + v * (cv[5] + v * (cv[6] + v * cv[7]))
        out[rest] = np.exp(p / q)
    return out.astype(out_dt)


def _standard_gamma_grad(self, output):
    """The gradient of a standard Gamma sample w.r.t. its concentration (no derivative)."""
    return finish(None, arr(_standard_gamma_grad_np(_float_data(self), _float_data(output))))


class StandardGammaBackward0(OpNode):
    def backward(self, g):
        (alpha,) = self.saved_tensors
        return g * finish(None, arr(_standard_gamma_grad_np(alpha._data, self.sample)))


def _tiny(dt):
    return np.finfo(dt).tiny


def _standard_gamma(input, generator=None):
    """Samples of Gamma(input, 1), differentiable in ``input`` (implicit reparameterisation)."""
    from .._creation import _gen as g
    a = _float_data(input)
    s = g(generator).standard_gamma(a.astype(np.float64))
    # PyTorch clamps samples away from 0 (its sampler never returns 0)
    s = np.maximum(s, _tiny(a.dtype)).astype(a.dtype)
    s = arr(s)
    node = node_for(StandardGammaBackward0, (input,))
    res = finish(node, s)
    if node is not None:
        node.sample = s
        save(node, input)
    return res


def _sample_dirichlet(input, generator=None):
    """Dirichlet samples along the last dimension (no gradient: Dirichlet.rsample adds one)."""
    from .._creation import _gen as g
    a = _float_data(input)
    s = g(generator).standard_gamma(a.astype(np.float64))
    s = s / s.sum(-1, keepdims=True)
    s = np.clip(s, _tiny(a.dtype), 1.0)
    return finish(None, arr(s.astype(a.dtype)))


def _dirichlet_grad_np(x, alpha, total):
    """PyTorch's approximate reparameterised gradient of a Dirichlet sample coordinate."""
    out_dt = np.result_type(x.dtype, alpha.dtype, total.dtype)
    x, alpha, total = (np.asarray(v, np.float64) for v in np.broadcast_arrays(x, alpha, total))
    out = np.empty(x.shape)
    sp = _sp()
    beta = total - alpha
    boundary = total * x * (1 - x)
    with np.errstate(all="ignore"):
        m_small = (x <= 0.5) & (boundary < 2.5)
        m_one = ~m_small & (x >= 0.5) & (boundary < 0.75)
        m_mid = ~m_small & ~m_one & (alpha > 6) & (beta > 6)
        m_rest = ~m_small & ~m_one & ~m_mid

        def grad_alpha_small(x, a, b):
            factor = sp.psi(a) - sp.psi(a + b) - np.log(x)
            numer = np.ones_like(x)
            series = numer / a * (factor + 1 / a)
            for i in range(1, 11):
                numer = numer * ((i - b) * x / i)
                den = a + i
                series = series + numer / den * (factor + 1 / den)
            r = x * (1 - x) ** -b * series
            return np.where(np.isnan(r), 0.0, r)

        def grad_beta_small(x, a, b):
            factor = sp.psi(a + b) - sp.psi(b)
            numer, betas, dbetas = np.ones_like(x), np.ones_like(x), np.zeros_like(x)
            series = factor / a
            for i in range(1, 9):
                numer = numer * (-x / i)
                dbetas = dbetas * (b - i) + betas
                betas = betas * (b - i)
                series = series + numer / (a + i) * (dbetas + factor * betas)
            r = -(1 - x) ** (1 - b) * series
            return np.where(np.isnan(r), 0.0, r)

        out[m_small] = grad_alpha_small(x[m_small], alpha[m_small], beta[m_small])
        out[m_one] = -grad_beta_small(1 - x[m_one], beta[m_one], alpha[m_one])

        xm, a, b = x[m_mid], alpha[m_mid], beta[m_mid]
        tot = a + b
        mean = a / tot
        std = np.sqrt(a * b / (tot + 1)) / tot
        near = (mean - 0.1 * std <= xm) & (xm <= mean + 0.1 * std)
        poly = 47 * xm * (b * b) * (b * b) + a * (
            (43 + 20 * (16 + 27 * b) * xm) * (b * b) * b + a * (
                3 * (59 + 180 * b - 90 * xm) * (b * b) + a * (
                    (453 + 1620 * b * (1 - xm) - 455 * xm) * b + a * (8 * (1 - xm) * (135 * b - 11)))))
        pre_num = (1 + 12 * a) * (1 + 12 * b) / (tot * tot)
        pre_den = 12960 * a * a * a * b * b * (1 + 12 * tot)
        r_near = pre_num / (1 - xm) * poly / pre_den
        prefactor = -xm / np.sqrt(2 * a * b / tot)
        stirling = ((1 + 1 / (12 * a) + 1 / (288 * a * a)) * (1 + 1 / (12 * b) + 1 / (288 * b * b))
                    / (1 + 1 / (12 * tot) + 1 / (288 * tot * tot)))
        t1n = 2 * (a * a) * (xm - 1) + a * b * (xm - 1) - xm * (b * b)
        axbx = a * (xm - 1) + b * xm
        t1 = t1n / (np.sqrt(2 * a / b) * tot ** 1.5 * axbx * axbx)
        t2 = 0.5 * np.log(a / (tot * xm))
        t3 = np.sqrt(8 * a * b / tot) / (b * xm + a * (xm - 1))
        t4 = (b * np.log(b / (tot * (1 - xm))) + a * np.log(a / (tot * xm))) ** -1.5
        t1234 = t1 + t2 * (t3 + np.where(xm < mean, t4, -t4))
        out[m_mid] = np.where(near, r_near, stirling * prefactor * t1234)

        xr, a, tot = x[m_rest], alpha[m_rest], total[m_rest]
        b = tot - a
        c = _DIRICHLET_C
        u = np.log(xr)
        aa = np.log(a) - u
        bb = np.log(tot) - aa
        pu, pa = (np.ones_like(u), u, u * u), (np.ones_like(aa), aa, aa * aa)
        p = np.zeros_like(u)
        q = np.zeros_like(u)
        for i in range(3):
            for j in range(3):
                ua = pu[i] * pa[j]
                k0, k1 = c[0][i][j], c[1][i][j]
                p = p + ua * (k0[0] + bb * (k0[1] + bb * (k0[2] + bb * k0[3])))
                q = q + ua * (k1[0] + bb * (k1[1] + bb * (k1[2] + bb * k1[3])))
        approx = xr * (sp.psi(tot) - sp.psi(a)) / b
        out[m_rest] = p / q * approx
    return out.astype(out_dt)


_DIRICHLET_C = (
    (((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
      (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
      (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
     ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
      (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
      (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
     ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
      (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
      (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))),
    (((1, -0.02924021934, -0.04438342661, 0.007285809825),
      (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
      (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
     ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
      (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
      (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
     ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
      (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
      (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))),
)


def _dirichlet_grad(x, alpha, total):
    """PyTorch's ``_dirichlet_grad``: d x / d alpha for Dirichlet samples (no derivative)."""
    return finish(None, arr(_dirichlet_grad_np(_float_data(x), _float_data(alpha), _float_data(total))))


def poisson(input, generator=None):
    """Poisson samples with rates ``input`` (same dtype; zero gradient, as in PyTorch)."""
    from .._creation import _gen as g
    a = _float_data(input)
    s = g(generator).poisson(a.astype(np.float64)).astype(a.dtype)
    node = node_for(PoissonBackward0, (input,))
    return finish(node, arr(s))


def binomial(count, prob, generator=None):
    """Binomial samples (``count`` trials with success probability ``prob``)."""
    from .._creation import _gen as g
    n, p = np.broadcast_arrays(_float_data(count), _float_data(prob))
    s = g(generator).binomial(n.astype(np.int64), np.clip(p.astype(np.float64), 0, 1))
    return finish(None, arr(s.astype(np.result_type(n.dtype, p.dtype))))


class PoissonBackward0(OpNode):
    def backward(self, g):
        return zeros_grad(g)
