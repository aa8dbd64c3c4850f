"""``retrograd run script.py [args]``: run an unmodified PyTorch script on retrograd.

While the script runs, an import hook (a meta path finder) resolves ``torch`` and its
submodules (``torch.nn``, ``torch.nn.functional``, ``torch.optim``, ``torch.utils.data``...)
to retrograd's own modules, and ``torchvision`` and its submodules to ``retrograd.vision``.
Nothing of torch's namespace is copied. A torch API that retrograd lacks fails where it is used, with an error naming it:
``NotImplementedError: torch.distributions.LKJCholesky is not implemented in retrograd`` (the error is also
an AttributeError, so ``hasattr`` and ``getattr(..., default)`` keep working).
"""
import argparse
import contextlib
import dis
import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys
import traceback
import types

__all__ = ["main", "torch_aliases", "NotImplementedInRetrograd"]

# torch's submodules that retrograd may not have: importing them works, using them says so.
TORCH_SUBMODULES = {
    "fft", "linalg", "special", "distributions", "backends", "jit", "onnx", "sparse", "quantization", "ao",
    "fx", "distributed", "hub", "amp", "testing", "profiler", "nested", "masked", "export", "compiler", "mps",
    "xpu", "cuda", "func", "overrides", "package", "signal", "library", "monitor",
    "futures", "random", "accelerator", "cpu", "types", "storage", "serialization", "autograd", "nn", "optim",
    "utils", "_dynamo", "_inductor", "compile", "mtia", "version",
}
TORCHVISION = {"torchvision": "retrograd.vision"}   # and torchvision.X -> retrograd.vision.X


class NotImplementedInRetrograd(NotImplementedError, AttributeError):
    """A torch API retrograd does not provide (both a NotImplementedError and an AttributeError)."""


class ImportNotImplementedInRetrograd(ImportError):
    """``from torch.x import Y`` where retrograd lacks ``Y``."""


NotImplementedInRetrograd.__module__ = ImportNotImplementedInRetrograd.__module__ = "retrograd"
_IMPORT_FROM = dis.opmap["IMPORT_FROM"]


def _in_from_import(depth):
    """Whether the frame ``depth`` levels up is executing ``from m import name`` (where Python
    would replace an AttributeError by its own 'cannot import name ... (unknown location)')."""
    try:
        f = sys._getframe(depth + 1)
        return f.f_code.co_code[f.f_lasti] == _IMPORT_FROM
    except (ValueError, IndexError):
        return False


def _missing(name, depth=2):
    """The error for a torch API retrograd lacks (``depth``: frames up to the user's code)."""
    msg = f"{name} is not implemented in retrograd"
    if _in_from_import(depth):
        mod, _, attr = name.rpartition(".")
        return ImportNotImplementedInRetrograd(f"cannot import name '{attr}' from '{mod}': {msg}", name=mod)
    return NotImplementedInRetrograd(msg)


class _MissingModule(types.ModuleType):
    """Stands for a torch submodule retrograd lacks: attribute reads name what is missing;
    attribute writes (``torch.backends.cudnn.benchmark = True``) are kept and do nothing."""

    def __init__(self, name, nested=()):
        super().__init__(name)
        self.__path__ = []
        self.__dict__["_nested"] = set(nested)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr in self.__dict__["_nested"]:
            sub = _MissingModule(f"{self.__name__}.{attr}")
            setattr(self, attr, sub)
            return sub
        raise _missing(f"{self.__name__}.{attr}")

    def __call__(self, *args, **kwargs):
        raise _missing(self.__name__)


def _shim_modules():
    """Small stand-ins for device-query modules that scripts touch on their first lines
    (``torch.cuda`` and ``torch.backends`` are retrograd's own modules)."""
    accelerator = types.ModuleType("torch.accelerator")
    accelerator.is_available = lambda: False
    accelerator.current_accelerator = lambda check_available=False: None
    return {"accelerator": accelerator}


def _retro_name(fullname):
    """The retrograd module standing for ``fullname`` (torch.* or torchvision.*)."""
    if fullname in TORCHVISION:
        return TORCHVISION[fullname]
    if fullname.startswith("torchvision."):
        for k, v in TORCHVISION.items():
            if v and fullname.startswith(k + "."):
                return v + fullname[len(k):]
        return False
    return "retrograd" + fullname[len("torch"):]


class _Hook(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self):
        self.patched = {}   # retrograd module -> its own __getattr__ (or None)
        self.shims = None

    # --- finder ---
    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top not in ("torch", "torchvision"):
            return None
        retro = _retro_name(fullname)
        mod = None
        if retro:
            try:
                if importlib.util.find_spec(retro) is not None:
                    mod = importlib.import_module(retro)
            except ModuleNotFoundError:
                mod = None
        if mod is None:
            leaf = fullname.rpartition(".")[2]
            shim = self._shim(fullname)
            if shim is None and not (fullname.count(".") == 1 and leaf in TORCH_SUBMODULES and top == "torch"):
                raise ModuleNotFoundError(f"No module named '{fullname}': {fullname} is not implemented in "
                                          "retrograd", name=fullname)
        spec = importlib.util.spec_from_loader(fullname, self, is_package=mod is None or hasattr(mod, "__path__"))
        spec.loader_state = mod
        return spec

    def _shim(self, fullname):
        if self.shims is None:
            self.shims = _shim_modules()
        parts = fullname.split(".")
        if parts[0] != "torch" or len(parts) < 2:
            return None
        m = self.shims.get(parts[1])
        for p in parts[2:]:
            m = getattr(m, p, None) if isinstance(m, types.ModuleType) and not isinstance(m, _MissingModule) \
                else m.__dict__.get(p) if isinstance(m, _MissingModule) else None
        return m

    # --- loader ---
    def create_module(self, spec):
        mod = spec.loader_state
        if mod is None:
            return self._shim(spec.name) or _MissingModule(spec.name)
        self._patch(mod, spec.name)
        return mod

    def exec_module(self, module):
        pass

    def _patch(self, mod, torch_name):
        """Give a retrograd module a __getattr__ naming the torch API it lacks."""
        if mod in self.patched:
            return
        own = mod.__dict__.get("__getattr__")
        self.patched[mod] = own
        hook = self

        def __getattr__(name):
            if own is not None:
                try:
                    r = own(name)
                except AttributeError:
                    pass
                else:
                    if isinstance(r, types.ModuleType) and r.__name__.startswith("retrograd."):
                        hook._patch(r, f"{torch_name}.{name}")   # a lazily loaded subpackage
                    return r
            if name.startswith("__"):
                raise AttributeError(f"module {mod.__name__!r} has no attribute {name!r}")
            sub = f"{mod.__name__}.{name}"
            try:
                found = importlib.util.find_spec(sub) is not None if hasattr(mod, "__path__") else False
            except ModuleNotFoundError:
                found = False
            if found:
                m = importlib.import_module(sub)
                hook._patch(m, f"{torch_name}.{name}")
                return m
            if torch_name == "torch":
                shim = hook._shim(f"torch.{name}")
                if shim is not None:
                    return shim
                if name in TORCH_SUBMODULES:
                    return _MissingModule(f"torch.{name}")
            raise _missing(f"{torch_name}.{name}")

        mod.__getattr__ = __getattr__

    def unpatch(self):
        for mod, own in self.patched.items():
            if own is None:
                mod.__dict__.pop("__getattr__", None)
            else:
                mod.__getattr__ = own
        self.patched.clear()


def _name_missing_tensor_method(e):
    """A Tensor attribute retrograd lacks, when the error reaches the user: a torch.Tensor name
    is reported as a torch API retrograd lacks, any other keeps Python's message. (Done here,
    not by a Tensor.__getattr__, which would slow every attribute read of every tensor.)"""
    if type(e) is not AttributeError or not isinstance(getattr(e, "name", None), str):
        return e
    import retrograd
    from ._torch_tensor_names import TENSOR_NAMES
    if isinstance(getattr(e, "obj", None), retrograd.Tensor) and e.name in TENSOR_NAMES:
        new = NotImplementedInRetrograd(f"torch.Tensor.{e.name} is not implemented in retrograd")
        new.__cause__, new.__context__, new.__suppress_context__ = e.__cause__, e.__context__, e.__suppress_context__
        return new.with_traceback(e.__traceback__)
    return e


class _ChildHook:
    """Rides in multiprocessing's preparation data to spawn/forkserver children: unpickled
    before the child imports the parent's main script, it installs the hook there first."""

    def __reduce__(self):
        return (_install_in_child, ())


def _install_in_child():
    if not any(isinstance(f, _Hook) for f in sys.meta_path):
        _activate()             # for the child's whole life


def _patch_multiprocessing():
    """Make spawn and forkserver children (DataLoader workers among them) run with the hook:
    returns the function that undoes it."""
    from multiprocessing import spawn
    original = spawn.get_preparation_data

    def get_preparation_data(name):
        d = original(name)
        if name == "ignore":
            # the forkserver asks for this to preload the main script into the server, which would
            # import it without the hook; its children import it themselves, after installing it
            d.pop("init_main_from_path", None)
            d.pop("main_path", None)
        # first key: unpickled (installing the hook) before anything else is prepared
        return {"retrograd_torch_aliases": _ChildHook(), **d}

    spawn.get_preparation_data = get_preparation_data

    def undo():
        spawn.get_preparation_data = original
    return undo


def _activate():
    """Install the hook; what ``_deactivate`` needs to undo it."""
    saved = {k: v for k, v in sys.modules.items() if k.partition(".")[0] in ("torch", "torchvision")}
    for k in saved:
        del sys.modules[k]
    hook = _Hook()
    sys.meta_path.insert(0, hook)
    import retrograd
    state = (hook, saved, retrograd.__version__, [])
    hook._patch(retrograd, "torch")
    # submodules already imported by retrograd itself: reached as torch.nn.X after `import torch`
    for name, mod in list(sys.modules.items()):
        if name.startswith("retrograd.") and isinstance(mod, types.ModuleType) and \
                not name.rpartition(".")[2].startswith("_") and not name.startswith("retrograd.cli"):
            hook._patch(mod, "torchvision" + name[len("retrograd.vision"):] if name.startswith("retrograd.vision")
                        else "torch" + name[len("retrograd"):])
    retrograd.__version__ = retrograd.version.api
    state[3].append(_patch_multiprocessing())
    state[3].append(_save_torch_format())
    return state


def _save_torch_format():
    """A PyTorch script's ``torch.save`` writes PyTorch's format whatever the file is called
    (``model.ckpt``, a BytesIO): PyTorch and the script's own ``torch.load`` read it back."""
    from .. import serialization
    before = serialization._default_format
    serialization._default_format = "torch"

    def undo():
        serialization._default_format = before
    return undo


def _deactivate(state):
    hook, saved, own_version, undo = state
    import retrograd
    for u in undo:
        u()
    retrograd.__version__ = own_version
    sys.meta_path.remove(hook)
    hook.unpatch()
    for k in [k for k in sys.modules if k.partition(".")[0] in ("torch", "torchvision")]:
        del sys.modules[k]
    sys.modules.update(saved)


@contextlib.contextmanager
def torch_aliases():
    """While active, ``import torch`` (and torch.*, torchvision.*) gives retrograd.
    ``torch.__version__`` is the PyTorch API version retrograd implements (``torch.version.retrograd``
    is retrograd's own); spawn/forkserver child processes (DataLoader workers) get the hook too."""
    state = _activate()
    try:
        yield state[0]
    finally:
        _deactivate(state)


def _print_script_error(e):
    """The script's traceback as Python would print it, without this runner's own frames."""
    e = _name_missing_tensor_method(e)
    te = traceback.TracebackException(type(e), e, e.__traceback__)
    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if f.filename != __file__ and "runpy" not in f.filename])
    sys.stderr.write("".join(te.format()))


def main(argv):
    parser = argparse.ArgumentParser(
        prog="retrograd run", description="Run an unmodified PyTorch script on retrograd: import torch, "
        "torch.nn, torch.optim, torch.utils.data... resolve to retrograd while it runs.")
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments handed to the script")
    ns = parser.parse_args(argv)
    script = os.path.abspath(ns.script)
    if not os.path.isfile(script):
        print(f"retrograd run: can't open file '{ns.script}': no such file", file=sys.stderr)
        return 2
    old_argv = sys.argv
    sys.argv = [ns.script] + ns.args
    sys.path.insert(0, os.path.dirname(script))
    try:
        with torch_aliases():
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except Exception as e:
        _print_script_error(e)
        return 1
    finally:
        sys.argv = old_argv
        if sys.path and sys.path[0] == os.path.dirname(script):
            sys.path.pop(0)
    return 0
