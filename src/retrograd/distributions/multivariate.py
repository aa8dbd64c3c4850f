"""Gaussian vectors: MultivariateNormal (covariance, precision or Cholesky factor) and
LowRankMultivariateNormal (covariance ``W W^T + diag(D)``); the Wishart distribution of
scatter matrices."""
import math

import retrograd as _t
from .._tensor import Size
from . import constraints
from ..linalg import cholesky, solve_triangular
from ..ops.linalg import cholesky_inverse
from .distribution import Distribution
from .utils import lazy_property, _standard_normal, _batch_mv, _batch_mahalanobis

_LOG_2PI = math.log(2 * math.pi)


def _precision_to_scale_tril(P):
    # flipping both axes turns a lower Cholesky factor of the flipped P into an upper one of P,
    # whose transposed inverse is the lower Cholesky factor of P^-1
    Lf = cholesky(_t.flip(P, (-2, -1)))
    L_inv = _t.flip(Lf, (-2, -1)).mT
    eye = _t.eye(P.shape[-1], dtype=P.dtype)
    return solve_triangular(L_inv, eye, upper=False)


class MultivariateNormal(Distribution):
    """Multivariate normal distribution given exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (lower Cholesky factor of the covariance)."""
    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix), ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        name, m = given[0]
        if m.dim() < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = _t.broadcast_shapes(m.shape[:-2], loc.shape[:-1])
        setattr(self, name, m.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = m
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = cholesky(m)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(m)

    def _full(self, m):
        return m.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return self._full(L @ L.mT)

    @lazy_property
    def precision_matrix(self):
        return self._full(cholesky_inverse(self._unbroadcasted_scale_tril))

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)
    variance = property(lambda self: self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
        self._batch_shape + self._event_shape))

    def rsample(self, sample_shape=Size()):
        eps = _standard_normal(self._extended_shape(sample_shape), self.loc.dtype)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        self._check(value)
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * _LOG_2PI + M) - self._half_log_det()

    def entropy(self):
        H = 0.5 * self._event_shape[0] * (1.0 + _LOG_2PI) + self._half_log_det()
        return H.expand(self._batch_shape) if len(self._batch_shape) else H


def _capacitance_tril(W, D):
    """Cholesky factor of ``I + W^T D^-1 W`` (Woodbury's capacitance matrix)."""
    K = (W.mT / D.unsqueeze(-2)) @ W
    return cholesky(K + _t.eye(W.shape[-1], dtype=W.dtype))


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal with covariance ``cov_factor @ cov_factor.mT + diag(cov_diag)``."""
    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, diag_ = _t.broadcast_tensors(loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc, self.cov_diag = loc_[..., 0], diag_[..., 0]
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)

    def _full(self, m):
        return m.expand(self._batch_shape + self._event_shape + self._event_shape)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @lazy_property
    def variance(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (W.pow(2).sum(-1) + D).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        # Sigma = D^1/2 (I + D^-1/2 W W^T D^-1/2) D^1/2
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        sqrt_d = D.sqrt().unsqueeze(-1)
        Wd = W / sqrt_d
        K = Wd @ Wd.mT + _t.eye(W.shape[-2], dtype=W.dtype)
        return self._full(sqrt_d * cholesky(K))

    @lazy_property
    def covariance_matrix(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return self._full(W @ W.mT + _t.diag_embed(D))

    @lazy_property
    def precision_matrix(self):
        # Woodbury: D^-1 - D^-1 W C^-1 W^T D^-1 with C = I + W^T D^-1 W
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        Wt_Dinv = W.mT / D.unsqueeze(-2)
        A = solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        return self._full(_t.diag_embed(D.reciprocal()) - A.mT @ A)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        eps_W = _standard_normal(shape[:-1] + W.shape[-1:], self.loc.dtype)
        eps_D = _standard_normal(shape, self.loc.dtype)
        return self.loc + _batch_mv(W, eps_W) + D.sqrt() * eps_D

    def _log_det(self):
        return (2 * self._capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                + self._unbroadcasted_cov_diag.log().sum(-1))

    def log_prob(self, value):
        self._check(value)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        x = value - self.loc
        Wt_Dinv_x = _batch_mv(W.mT / D.unsqueeze(-2), x)
        M = (x.pow(2) / D).sum(-1) - _batch_mahalanobis(self._capacitance_tril, Wt_Dinv_x)
        return -0.5 * (self._event_shape[0] * _LOG_2PI + self._log_det() + M)

    def entropy(self):
        H = 0.5 * (self._event_shape[0] * (1.0 + _LOG_2PI) + self._log_det())
        return H.expand(self._batch_shape) if len(self._batch_shape) else H


class Wishart(Distribution):
    """Wishart distribution over positive-definite matrices, with ``df`` degrees of freedom and
    scale given by exactly one of ``covariance_matrix``, ``precision_matrix``, ``scale_tril``;
    samples by the Bartlett decomposition."""
    support = constraints.positive_definite
    has_rsample = True

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self._event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix), ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        name, m = given[0]
        if m.dim() < 2:
            raise ValueError(f"{name} must be at least two-dimensional, with optional leading batch dimensions")
        if not isinstance(df, _t.Tensor):
            df = _t.tensor(df, dtype=m.dtype)
        batch_shape = _t.broadcast_shapes(m.shape[:-2], df.shape)
        p = m.shape[-1]
        if bool((df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, m.expand(batch_shape + (-1, -1)))
        self.df = df.expand(batch_shape)
        super().__init__(batch_shape, m.shape[-2:], validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = m
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = cholesky(m)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(m)
        if bool((self.df < p).any()):
            import warnings
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for "
                          "ndim - 1 < df < ndim.")

    def _full(self, m):
        return m.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return self._full(L @ L.mT)

    @lazy_property
    def precision_matrix(self):
        return self._full(cholesky_inverse(self._unbroadcasted_scale_tril))

    def _df(self):
        return self.df.unsqueeze(-1).unsqueeze(-1)

    mean = property(lambda self: self._df() * self.covariance_matrix)

    @property
    def mode(self):
        factor = self.df - self._event_shape[-1] - 1
        factor = _t.where(factor <= 0, math.nan, factor)   # no mode for df <= p + 1
        return factor.unsqueeze(-1).unsqueeze(-1) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        d = V.diagonal(dim1=-2, dim2=-1)
        return self._df() * (V.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def rsample(self, sample_shape=Size()):
        from .continuous import Chi2
        p = self._event_shape[-1]
        shape = Size(sample_shape) + self._batch_shape
        # Bartlett: L A, A lower triangular, A_ii^2 ~ Chi2(df - i), A_ij ~ N(0, 1) below the diagonal
        df = self.df.unsqueeze(-1) - _t.arange(p, dtype=self.df.dtype)
        diag = Chi2(df.expand(shape + (p,))).rsample().sqrt()
        noise = _standard_normal(shape + (p, p), self.df.dtype).tril(-1)
        A = noise + _t.diag_embed(diag)
        LA = self._unbroadcasted_scale_tril @ A
        return LA @ LA.mT

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        self._check(value)
        from ..ops.special import mvlgamma
        from ..linalg import slogdet
        from ..ops.linalg import cholesky_solve
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        shape = _t.broadcast_shapes(L.shape[:-2], value.shape[:-2])
        trace = cholesky_solve(value.expand(shape + (p, p)), L.expand(shape + (p, p))).diagonal(
            dim1=-2, dim2=-1).sum(-1)
        return (-nu * self._half_log_det() - 0.5 * nu * p * math.log(2) - mvlgamma(0.5 * nu, p)
                + 0.5 * (nu - p - 1) * slogdet(value).logabsdet - 0.5 * trace)

    def entropy(self):
        from ..ops.special import mvlgamma, digamma
        nu, p = self.df, self._event_shape[-1]
        multi_digamma = digamma(0.5 * nu.unsqueeze(-1) - _t.arange(p, dtype=nu.dtype) / 2).sum(-1)
        return ((p + 1) * self._half_log_det() + 0.5 * p * (p + 1) * math.log(2) + mvlgamma(0.5 * nu, p)
                - 0.5 * (nu - p - 1) * multi_digamma + 0.5 * nu * p)
