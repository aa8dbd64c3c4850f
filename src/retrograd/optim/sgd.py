"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize."""
from .._tensor import Tensor
from .optimizer import Optimizer, _scalar, fma_scalar
from ._sparse import sgd_sparse_step

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent (optionally with momentum), step for step as PyTorch's."""

    _group_option_defaults = {"nesterov": False, "maximize": False, "foreach": None, "differentiable": False,
                             "fused": False}

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            wd = _scalar(group["weight_decay"])
            momentum = group["momentum"]
            dampening = group["dampening"]
            nesterov = group["nesterov"]
            maximize = group["maximize"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                if p._grad._sparse:
                    sgd_sparse_step(p, self.state[p], lr, wd, momentum, dampening, nesterov, maximize)
                    continue
                # PyTorch's SGD works on complex numbers as they are (no fused steps then).
                d = p._data
                g = self._grad_array(p, maximize, real=False)
                if wd != 0:
                    g = fma_scalar(d, wd, g)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = Tensor._make(g.copy())
                        state["momentum_buffer"] = buf
                    else:
                        b = buf._data
                        b *= momentum
                        fma_scalar(g, 1 - dampening, b, out=b)
                    g = fma_scalar(buf._data, momentum, g) if nesterov else buf._data
                fma_scalar(g, -lr, d, out=d)
                p._bump_version()
        return loss
