"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode (thread-local)."""
import functools
import inspect
import sys
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
           "inference_mode", "is_inference_mode_enabled"]


class _State(threading.local):
    def __init__(self):
        self.grad = True
        self.inference = False


_state = _State()


def is_grad_enabled():
    """True when operations are being recorded for backward in this thread."""
    return _state.grad


def is_inference_mode_enabled():
    """True inside ``inference_mode()`` in this thread."""
    return _state.inference


class _DecoratorContextManager:
    """A context manager that also decorates functions and generators."""

    def __call__(self, func):
        if inspect.isclass(func):
            raise RuntimeError("Cannot decorate classes")
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen(*args, **kwargs):
                g = func(*args, **kwargs)
                try:
                    with self.clone():
                        resp = g.send(None)
                    while True:
                        try:
                            req = yield resp
                        except GeneratorExit:
                            with self.clone():
                                g.close()
                            raise
                        except BaseException:
                            with self.clone():
                                resp = g.throw(*sys.exc_info())
                        else:
                            with self.clone():
                                resp = g.send(req)
                except StopIteration as e:
                    return e.value
            return gen

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Disable gradient recording inside the block (or the decorated function)."""

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = _state.grad
        _state.grad = False

    def __exit__(self, *exc):
        _state.grad = self.prev
        return False


class enable_grad(_DecoratorContextManager):
    """Enable gradient recording inside the block, even within ``no_grad``."""

    def __enter__(self):
        self.prev = _state.grad
        _state.grad = True

    def __exit__(self, *exc):
        _state.grad = self.prev
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode on or off; takes effect at once, and as a context manager restores it."""

    def __init__(self, mode):
        self.prev = _state.grad
        self.mode = bool(mode)
        _state.grad = self.mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _state.grad = self.prev
        return False

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like no_grad, and tensors made inside can never enter autograd later."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):
            return cls()(mode)
        return super().__new__(cls)

    def __enter__(self):
        self.prev = (_state.grad, _state.inference)
        # As PyTorch's InferenceMode guard: grad mode is the opposite of the mode.
        _state.grad = not self.mode
        _state.inference = self.mode

    def __exit__(self, *exc):
        _state.grad, _state.inference = self.prev
        return False

    def clone(self):
        return self.__class__(self.mode)
