"""GradScaler: loss scaling for float16 training, step for step PyTorch's ``torch.amp.GradScaler``."""
import warnings
from collections import abc, defaultdict
from enum import Enum

import numpy as np

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Multiply the loss by ``scale`` before backward; unscale the gradients before the step; skip
    the step when any gradient is inf/NaN and then multiply the scale by ``backoff_factor``;
    after ``growth_interval`` clean steps in a row multiply it by ``growth_factor``."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if self._device == "cuda":
            from .. import cuda
            if enabled and not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                              stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        from .._creation import full
        self._scale = full((), self._init_scale, dtype=_f32(), device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=_i32(), device=dev)

    def scale(self, outputs):
        """``outputs * scale`` (a tensor, or every tensor of a nested list/tuple/iterable)."""
        if not self._enabled:
            return outputs
        from .._tensor import Tensor

        def apply_scale(val):
            if isinstance(val, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                return val * self._scale.to(device=val.device)
            if isinstance(val, abc.Iterable):
                it = map(apply_scale, val)
                return type(val)(it) if isinstance(val, (list, tuple)) else it
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, allow_fp16):
        """Multiply every gradient by ``inv_scale`` in place; per device, 1.0 if any was inf/NaN."""
        found = {}
        for group in optimizer.param_groups:
            for param in group["params"]:
                g = param.grad
                if g is None:
                    continue
                if not allow_fp16 and g._data.dtype == np.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                d = g._data
                xp = np if isinstance(d, np.ndarray) else _xp(d)
                # the flag stays on the gradient's device (asking it would be a sync per gradient)
                bad = (~xp.isfinite(d).all()).astype(np.float32)
                d *= xp.asarray(inv_scale, d.dtype) if d.dtype.kind in "fV" else float(inv_scale)
                g._bump_version()
                dev = g.device
                found[dev] = bad if dev not in found else xp.maximum(found[dev], bad)
        from .._tensor import Tensor
        return {d: Tensor._make(_flag(v)) for d, v in found.items()}

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale, in place (at most once per step)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        elif state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # The reciprocal in float64, then float32, like PyTorch (on the scale's device: no sync).
        inv_scale = (1.0 / self._scale._data.astype(np.float64)).astype(np.float32)
        found = self._unscale_grads_(optimizer, inv_scale, False)
        state["found_inf_per_device"] = found
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscale (if not done yet) and run ``optimizer.step()`` unless a gradient was inf/NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Back off after a skipped step, grow after ``growth_interval`` clean ones (or set ``new_scale``)."""
        if not self._enabled:
            return
        _scale, _tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                _scale._data[...] = new_scale
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                _scale._data[...] = new_scale.item()
        else:
            found_infs = [f._data for st in self._per_optimizer_states.values()
                          for f in st["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            total = found_infs[0]
            for f in found_infs[1:]:
                total = total + (f if type(f) is type(total) else _to_like(f, total))
            _amp_update_scale_(_scale, _tracker, total, self._growth_factor,
                               self._backoff_factor, self._growth_interval)
        _scale._bump_version()
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """scale, growth_factor, backoff_factor, growth_interval, _growth_tracker ({} when disabled)."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale._data[...] = state_dict["scale"]
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker._data[...] = state_dict["_growth_tracker"]

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            state["_per_optimizer_states"] = {}
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)


def _amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """PyTorch's ``_amp_update_scale_`` kernel, in float32 like it, on the scale's device
    (selections, no question to the host): back off after an inf, grow after
    ``growth_interval`` clean steps in a row."""
    s, t = scale._data, growth_tracker._data
    xp = np if isinstance(s, np.ndarray) else _xp(s)
    found = xp.asarray(found_inf) != 0
    successful = t + 1
    due = successful == growth_interval
    grown = s * np.float32(growth_factor)
    new_s = xp.where(found, s * np.float32(backoff_factor), xp.where(due & xp.isfinite(grown), grown, s))
    new_t = xp.where(found | due, 0, successful)
    s[...] = new_s
    t[...] = new_t


def _flag(v):
    """A found-inf flag as a float32 array (0-d) on its device."""
    if isinstance(v, (np.ndarray, np.generic)):
        return np.asarray(v, np.float32)
    return v.astype(np.float32, copy=False)


def _to_like(a, like):
    """``a`` (a flag of another device) where ``like`` lives."""
    if isinstance(like, np.ndarray):
        return np.asarray(a.get() if hasattr(a, "get") else a)
    return _xp(like).asarray(a)


def _xp(d):
    from .._device import array_module, device_of_array
    return array_module(device_of_array(d))


def _f32():
    from .. import _dtype
    return _dtype.float32


def _i32():
    from .. import _dtype
    return _dtype.int32
