"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize."""
import numpy as np

from .._tensor import Tensor
from ._accel import kernels
from ._flat import batches, flat_ok
from ._sparse import sgd_sparse_step
from .optimizer import Optimizer, _check_fused, _scalar, fma_scalar, scale_

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
        _check_fused(fused, foreach, differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._closure_loss(closure)
        for index, group in enumerate(self.param_groups):
            lr = _scalar(group["lr"])
            wd = _scalar(group["weight_decay"])
            momentum = group["momentum"]
            opts = (lr, wd, momentum, group["dampening"], group["nesterov"], group["maximize"])
            params = []
            for p in group["params"]:
                if p._grad is None:
                    continue
                if p._grad._sparse:     # sparse gradients: their own step, outside the batches
                    sgd_sparse_step(p, self.state[p], lr, wd, momentum, group["dampening"], group["nesterov"],
                                    group["maximize"])
                    continue
                params.append(p)
            keys = ()
            if momentum != 0:
                keys = ("momentum_buffer",)
                ready = []
                for p in params:
                    state = self.state[p]
                    if state.get("momentum_buffer") is None:
                        # the first step: the buffer starts as a copy of the gradient
                        _sgd(batches(self, index, group, [p], (), step=False, flat=False, real=False)[0],
                             *opts, state=state)
                    else:
                        ready.append(p)
                params = ready
            for b in batches(self, index, group, params, keys, step=False, flat=flat_ok(group), real=False):
                _sgd(b, *opts)
        return loss


# Above this many elements per parameter (on average) a bundle's momentum update reads each
# gradient where it lies instead of first gathering them into one flat array: a call per
# parameter costs less than the gathering pass over memory.
DIRECT_MIN_AVG = 2048


def _sgd(b, lr, wd, momentum, dampening, nesterov, maximize, state=None):
    """One SGD step of a batch; ``state``: a parameter's state whose momentum buffer is to be made."""
    if state is None and _compiled(b, lr, wd, momentum, dampening, nesterov, maximize):
        return
    if state is None and momentum != 0 and not nesterov and not b.single and b.xp is np \
            and b.numel >= DIRECT_MIN_AVG * len(b.params):
        _momentum_direct(b, wd, momentum, dampening, maximize)
        b.axpy(b.state["momentum_buffer"], -lr)
        return
    # (the gradient is changed in place only by weight decay and Nesterov's step)
    g = b.grad(maximize, read_only=wd == 0 and not nesterov)
    if wd != 0:
        g = fma_scalar(b.param(), wd, g, out=g)
    if momentum != 0:
        if state is not None:
            buf = g.copy()
            state["momentum_buffer"] = Tensor._make(buf)
        else:
            buf = b.state["momentum_buffer"]
            scale_(buf, momentum)
            fma_scalar(g, 1 - dampening, buf, out=buf)
        g = fma_scalar(buf, momentum, g, out=g) if nesterov else buf
    b.axpy(g, -lr)


def _momentum_direct(b, wd, momentum, dampening, maximize):
    """``buf = momentum * buf + (1 - dampening) * g`` of a bundle, each gradient read where it lies
    (the same roundings as the gathered path: the multiply on the flat buffer, then per parameter
    the add, or its one-rounding multiply-add where ``1 - dampening`` is not 1)."""
    scale_(b.state["momentum_buffer"], momentum)
    s = 1 - dampening
    for p, d, v in zip(b.params, b.data, b.views("momentum_buffer")):
        g = p._grad._data
        a = s
        if wd != 0:
            # PyTorch's order: negated first (maximize), then grad + wd * param
            g = fma_scalar(d, wd, np.negative(g) if maximize else g)
        elif maximize:
            a = -s        # buf + s * (-g), the same single rounding
        if a == 1:
            np.add(v, g, out=v)
        elif a == -1:
            np.subtract(v, g, out=v)
        else:
            fma_scalar(g, a, v, out=v)


def _compiled(b, lr, wd, momentum, dampening, nesterov, maximize):
    """The step by the compiled kernel, one pass per parameter (False: not available here)."""
    if b.flat_params() is None:   # (a batch of one, or a device's: no compiling for it)
        return False
    k = kernels()
    parts = None if k is None else b.flat_params()
    if parts is None:
        return False
    T = b.dtype.type
    buf = b.state["momentum_buffer"] if momentum != 0 else None
    args = (bool(maximize), T(wd), T(momentum), T(1 - dampening), bool(nesterov), T(-lr), wd != 0, momentum != 0)
    sgd = k["sgd"]
    for p, d, g, sl in parts:
        sgd(d, g, d if buf is None else buf[sl], *args)
        p._bump_version()
    return True
