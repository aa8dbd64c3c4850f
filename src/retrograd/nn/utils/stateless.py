"""torch.nn.utils.stateless.functional_call (the older spelling of torch.func's)."""
import warnings


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Call ``module`` with the given parameters and buffers in place of its own."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in "
                  "a future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
                  "replacement.", FutureWarning,
                  stacklevel=2)
    from ...func import functional_call as fc
    return fc(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
