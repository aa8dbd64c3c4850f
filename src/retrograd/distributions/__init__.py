"""``torch.distributions``: probability distributions with sampling, reparameterised sampling,
densities and their gradients, transforms and KL divergences (retrograd's own implementation
of PyTorch's API)."""
from . import constraints
from .distribution import Distribution, ExponentialFamily
from .continuous import (Normal, Uniform, Exponential, Laplace, Cauchy, Gamma, Chi2, Beta, StudentT, Dirichlet,
                         FisherSnedecor, GeneralizedPareto)
from .discrete import Bernoulli, Binomial, NegativeBinomial, Geometric, Poisson, ContinuousBernoulli
from .categorical import Categorical, OneHotCategorical, OneHotCategoricalStraightThrough, Multinomial
from .multivariate import MultivariateNormal, LowRankMultivariateNormal, Wishart
from . import transforms
from .constraint_registry import biject_to, transform_to
from .transforms import *  # noqa: F401,F403
from .transformed import (Independent, TransformedDistribution, LogNormal, RelaxedBernoulli,
                          LogitRelaxedBernoulli, RelaxedOneHotCategorical, ExpRelaxedCategorical,
                          MixtureSameFamily)
from .derived import Gumbel, HalfNormal, HalfCauchy, Pareto, Weibull, Kumaraswamy, InverseGamma, LogisticNormal
from . import kl
from .kl import kl_divergence, register_kl

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli", "Dirichlet",
           "Distribution", "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma", "GeneralizedPareto",
           "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "InverseGamma", "Kumaraswamy",
           "Laplace", "LogNormal", "LogisticNormal", "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial",
           "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough",
           "Pareto", "Poisson", "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT", "TransformedDistribution",
           "Uniform", "Weibull", "Wishart", "biject_to", "constraints", "kl_divergence", "register_kl",
           "transform_to", "transforms"] + transforms.__all__
