"""``torch.jit``: retrograd runs eagerly, so ``script`` and ``trace`` return what they are
given (with a one-time notice) and the TorchScript queries answer False."""
from ._compile_notice import notice

__all__ = ["script", "trace", "trace_module", "ignore", "unused", "export", "is_scripting", "is_tracing",
           "annotate", "Final", "Attribute", "interface"]


def script(obj=None, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Returns ``obj`` unchanged: retrograd has no TorchScript compiler (it runs eagerly)."""
    notice("torch.jit.script")
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """Returns ``func`` unchanged: retrograd has no tracer to TorchScript (it runs eagerly)."""
    notice("torch.jit.trace")
    return func


def trace_module(mod, inputs=None, *args, **kwargs):
    """Returns ``mod`` unchanged (see ``trace``)."""
    notice("torch.jit.trace_module")
    return mod


def _identity_decorator(fn=None, **kwargs):
    if fn is None:
        return lambda f: f
    return fn


ignore = unused = export = interface = _identity_decorator


def is_scripting():
    """False: code never runs under TorchScript in retrograd."""
    return False


def is_tracing():
    """False: code never runs under the TorchScript tracer in retrograd."""
    return False


def annotate(the_type, the_value):
    return the_value


def Attribute(value, type=None):  # noqa: N802 (PyTorch's name)
    return value


class _FinalType:
    def __getitem__(self, item):
        return item


Final = _FinalType()
