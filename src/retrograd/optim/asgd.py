"""ASGD: averaged stochastic gradient descent (the average lives in state['ax'])."""
from .optimizer import Optimizer, _check_lr, _check_nonnegative, _real, _scalar, _step_tensor, fma_scalar, scale_

__all__ = ["ASGD"]


def _init_asgd_state(lr):
    """A new state's 'eta' (the group's lr) and 'mu' (1), before its 'ax' buffer."""
    def init(p, state):
        state["eta"] = _step_tensor(lr)
        state["mu"] = _step_tensor(1.0)
    return init


class ASGD(Optimizer):
    """Averaged SGD, as PyTorch computes it."""

    _group_option_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _tensor_steps = True

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            wd = group["weight_decay"]
            for p, state in self._params_with_grad(group, ("ax",), _init_asgd_state(lr)):
                step_t = state["step"]
                step_t._data += 1
                d = _real(p._data)
                g = self._grad_array(p, group["maximize"])
                if wd != 0:
                    g = fma_scalar(d, wd, g)
                eta = state["eta"]._data
                mu = state["mu"]._data
                ax = _real(state["ax"]._data)
                eta_value = float(eta)
                scale_(d, 1 - lambd * eta_value)
                fma_scalar(g, -eta_value, d, out=d)
                if float(mu) != 1:
                    diff = d - ax
                    diff *= mu      # a 0-d float32 array: float32 arithmetic, as PyTorch
                    ax += diff
                else:
                    ax[...] = d
                step = float(step_t._data)
                eta[...] = lr / ((1 + lambd * lr * step) ** alpha)
                mu[...] = 1 / max(1, step - t0)
                p._bump_version()
        return loss
