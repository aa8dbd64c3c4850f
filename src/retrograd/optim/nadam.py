"""NAdam: Adam with Nesterov momentum (momentum_decay, decoupled weight decay)."""
from .._tensor import Tensor
from .adam import _adam_moments, _check_adam_args, _weight_decay
from .optimizer import Optimizer, _check_nonnegative, _real, _scalar, _sqrt, _step_tensor, addcdiv, div_scalar

__all__ = ["NAdam"]


def _init_mu_product(p, state):
    state["mu_product"] = _step_tensor(1.0)


class NAdam(Optimizer):
    """NAdam, as PyTorch computes it (the momentum product is kept as a 0-d tensor)."""

    _group_option_defaults = {"maximize": False, "foreach": None, "capturable": False, "differentiable": False,
                             "decoupled_weight_decay": False}
    _tensor_steps = True

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        _check_nonnegative(momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for p in group["params"]:
                s = self.state.get(p, None)
                if s and "mu_product" in s and not isinstance(s["mu_product"], Tensor):
                    s["mu_product"] = _step_tensor(float(s["mu_product"]))

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr = _scalar(group["lr"])
            eps = group["eps"]
            wd = group["weight_decay"]
            momentum_decay = group["momentum_decay"]
            for p, state in self._params_with_grad(group, ("exp_avg", "exp_avg_sq"), _init_mu_product):
                d = _real(p._data)
                g = self._grad_array(p, group["maximize"])
                g = _weight_decay(d, g, lr, wd, group["decoupled_weight_decay"])
                step = _adam_moments(state, d, g, beta1, beta2)
                bias_correction2 = 1 - beta2 ** step
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                mu_product = state["mu_product"]._data
                mu_product *= mu
                exp_avg = _real(state["exp_avg"]._data)
                exp_avg_sq = _real(state["exp_avg_sq"]._data)
                denom = _sqrt(div_scalar(exp_avg_sq, bias_correction2))
                mu_product_v = float(mu_product)
                mu_product_next = mu_product_v * mu_next
                denom += eps
                addcdiv(d, g, denom, -lr * (1.0 - mu) / (1.0 - mu_product_v), out=d)
                addcdiv(d, exp_avg, denom, (-lr * mu_next) / (1.0 - mu_product_next), out=d)
                p._bump_version()
        return loss
