"""SparseAdam: Adam's moments and step at the rows a sparse gradient touches."""
import math

from .._tensor import Tensor
from .optimizer import Optimizer, _scalar
from ._sparse import coalesced_rows

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Masked Adam for sparse gradients (``nn.Embedding(sparse=True)``), as PyTorch's:
    moments and parameters change only where the coalesced gradient has entries."""

    _group_option_defaults = {"maximize": False}

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        sparse_params, complex_params = [], []
        for index, group in enumerate(self.param_groups):
            for d_index, p in enumerate(group["params"]):
                if p._sparse:
                    sparse_params.append([index, d_index])
                if p.is_complex():
                    complex_params.append([index, d_index])
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter tensors")
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             "parameters")

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr = _scalar(group["lr"])
            eps = group["eps"]
            maximize = group.get("maximize", False)
            todo = []
            for p in group["params"]:
                if p._grad is None:
                    continue
                if not p._grad._sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = Tensor._make(p._data * 0)
                    state["exp_avg_sq"] = Tensor._make(p._data * 0)
                state["step"] += 1
                todo.append((p, state))
            for p, state in todo:
                key, g = coalesced_rows(p._grad, maximize)
                if g.size == 0:
                    continue
                m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
                old_m = m[key]
                m_upd = (g - old_m) * (1 - beta1)
                m[key] += m_upd
                old_v = v[key]
                v_upd = (g * g - old_v) * (1 - beta2)
                v[key] += v_upd
                numer = m_upd + old_m
                denom = v_upd + old_v
                denom = denom ** 0.5 if denom.dtype.kind in "fV" else denom
                denom += eps
                step = state["step"]
                step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
                p._data[key] += -step_size * (numer / denom)
                p._bump_version()
        return loss
