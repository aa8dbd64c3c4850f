"""Parameters and values shared by the torch.distributions parity tests (float64 NumPy arrays
from a fixed seed): name -> (tensor parameters, other keyword arguments, a value in the support)."""
import numpy as np

R = np.random.RandomState(0)


def pos(*s):
    return R.uniform(0.5, 2.5, s)


def real(*s):
    return R.randn(*s)


def prob(*s):
    return R.uniform(0.1, 0.9, s)


def simplex(*s):
    a = R.uniform(0.1, 1, s)
    return a / a.sum(-1, keepdims=True)


def spd(n, b=()):
    a = R.randn(*b, n, n)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def tril_(n):
    return np.linalg.cholesky(spd(n))


def corr_cholesky(n):
    L = tril_(n)
    return L / np.linalg.norm(L, axis=-1, keepdims=True)



# name[_variant]: (tensor parameters (gradients are compared for them), other kwargs, a value)
_ALL = {
 "Normal": (dict(loc=real(3), scale=pos(3)), {}, real(3)),
 "LogNormal": (dict(loc=real(3), scale=pos(3)), {}, pos(3)),
 "Uniform": (dict(low=real(3) - 2, high=real(3) + 2), {}, R.uniform(-0.5, 0.5, 3)),
 "Bernoulli": (dict(probs=prob(3)), {}, np.array([0., 1., 1.])),
 "Bernoulli_logits": (dict(logits=real(3)), {}, np.array([0., 1., 1.])),
 "Categorical": (dict(probs=simplex(2, 4)), {}, np.array([1, 3])),
 "Categorical_logits": (dict(logits=real(2, 4)), {}, np.array([1, 3])),
 "OneHotCategorical": (dict(probs=simplex(2, 4)), {}, np.eye(4)[[1, 3]]),
 "Multinomial": (dict(probs=simplex(2, 4)), dict(total_count=5), np.array([[1., 2, 0, 2], [0, 0, 5, 0]])),
 "Beta": (dict(concentration1=pos(3), concentration0=pos(3)), {}, prob(3)),
 "Gamma": (dict(concentration=pos(3), rate=pos(3)), {}, pos(3)),
 "Chi2": (dict(df=pos(3)), {}, pos(3)),
 "Dirichlet": (dict(concentration=pos(2, 3)), {}, simplex(2, 3)),
 "Exponential": (dict(rate=pos(3)), {}, pos(3)),
 "Laplace": (dict(loc=real(3), scale=pos(3)), {}, real(3)),
 "Cauchy": (dict(loc=real(3), scale=pos(3)), {}, real(3)),
 "Poisson": (dict(rate=pos(3)), {}, np.array([0., 2., 5.])),
 "Binomial": (dict(probs=prob(3)), dict(total_count=6), np.array([0., 2., 6.])),
 "Geometric": (dict(probs=prob(3)), {}, np.array([0., 2., 5.])),
 "StudentT": (dict(df=pos(3) + 2, loc=real(3), scale=pos(3)), {}, real(3)),
 "MultivariateNormal": (dict(loc=real(2, 3), covariance_matrix=spd(3, (2,))), {}, real(2, 3)),
 "MultivariateNormal_tril": (dict(loc=real(3), scale_tril=tril_(3)), {}, real(2, 3)),
 "MultivariateNormal_prec": (dict(loc=real(3), precision_matrix=spd(3)), {}, real(2, 3)),
 "LowRankMultivariateNormal": (dict(loc=real(2, 3), cov_factor=real(2, 3, 2), cov_diag=pos(2, 3)), {}, real(2, 3)),
 "HalfNormal": (dict(scale=pos(3)), {}, pos(3)),
 "HalfCauchy": (dict(scale=pos(3)), {}, pos(3)),
 "Gumbel": (dict(loc=real(3), scale=pos(3)), {}, real(3)),
 "Pareto": (dict(scale=pos(3), alpha=pos(3)), {}, pos(3) + 3),
 "Weibull": (dict(scale=pos(3), concentration=pos(3)), {}, pos(3)),
 "Kumaraswamy": (dict(concentration1=pos(3), concentration0=pos(3)), {}, prob(3)),
 "InverseGamma": (dict(concentration=pos(3), rate=pos(3)), {}, pos(3)),
 "FisherSnedecor": (dict(df1=pos(3), df2=pos(3) + 4), {}, pos(3)),
 "VonMises": (dict(loc=real(3), concentration=pos(3)), {}, real(3)),
 "NegativeBinomial": (dict(total_count=pos(3), probs=prob(3)), {}, np.array([0., 2., 5.])),
 "ContinuousBernoulli": (dict(probs=prob(3)), {}, prob(3)),
 "LogisticNormal": (dict(loc=real(3), scale=pos(3)), {}, simplex(4)),
 "RelaxedBernoulli": (dict(probs=prob(3)), dict(temperature=np.array(0.7)), prob(3)),
 "RelaxedOneHotCategorical": (dict(probs=simplex(2, 4)), dict(temperature=np.array(1.3)), simplex(2, 4)),
 "GeneralizedPareto": (dict(loc=real(3), scale=pos(3), concentration=R.uniform(0.1, 0.5, 3)), {}, pos(3) + 2),
 "Wishart": (dict(df=np.array(5.0), covariance_matrix=spd(3)), {}, spd(3)),
 "LKJCholesky": (dict(concentration=pos(1).reshape(())), dict(dim=3),
                 corr_cholesky(3)),
}

# the distributions retrograd provides (the others above are PyTorch's that it lacks so far)
IMPLEMENTED = {"Normal", "LogNormal", "Uniform", "Bernoulli", "Categorical", "OneHotCategorical", "Multinomial",
               "Beta", "Gamma", "Chi2", "Dirichlet", "Exponential", "Laplace", "Cauchy", "Poisson", "Binomial",
               "Geometric", "StudentT", "MultivariateNormal", "LowRankMultivariateNormal", "RelaxedBernoulli",
               "RelaxedOneHotCategorical", "Gumbel", "HalfNormal", "HalfCauchy", "Pareto", "Weibull", "Kumaraswamy",
               "InverseGamma", "LogisticNormal", "FisherSnedecor", "NegativeBinomial", "ContinuousBernoulli",
               "GeneralizedPareto", "Wishart"}
CASES = {k: v for k, v in _ALL.items() if k.split("_")[0] in IMPLEMENTED}
