"""The rest of the torch namespace programs reach for first: legacy typed constructors,
``size=``, torch.compile / torch.jit as identity, torch.version, matmul precision, backends
switches; under ``retrograd run``: torch.__version__, missing names however reached, and
spawn/forkserver DataLoader workers. Compared with torch 2.13 where it has an answer."""
import os
import subprocess
import sys
import warnings

import pytest

import retrograd
from retrograd.cli.run import torch_aliases

from helpers import needs_torch, raised, torch

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "src"))
LEGACY = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
          "CharTensor", "ByteTensor", "BoolTensor"]


# --- legacy constructors -------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("name", LEGACY)
def test_legacy_constructor_matches_torch(name):
    R, T = getattr(retrograd, name), getattr(torch, name)
    assert repr(R) == repr(T) and R.__name__ == T.__name__ and str(R.dtype) == str(T.dtype) and R.is_cuda is False
    for args in [(2, 3), (), (0,), (retrograd.Size([2, 1]),)]:
        targs = tuple(torch.Size(a) if isinstance(a, retrograd.Size) else a for a in args)
        r, t = R(*args), T(*targs)
        assert tuple(r.shape) == tuple(t.shape) and str(r.dtype) == str(t.dtype)
    data = [[1, 0], [2, 3]]
    r, t = R(data), T(data)
    assert r.tolist() == t.tolist() and str(r.dtype) == str(t.dtype)
    assert r.type() == t.type() == f"torch.{name}"
    assert isinstance(r, R) and isinstance(r, retrograd.Tensor) and not issubclass(R, retrograd.Tensor)
    other = "DoubleTensor" if name != "DoubleTensor" else "FloatTensor"
    assert not isinstance(r, getattr(retrograd, other)) and not isinstance(t, getattr(torch, other))
    assert not isinstance(r, retrograd.cuda.FloatTensor) and not isinstance([1], R)
    assert R(r) is r


@needs_torch
@pytest.mark.parametrize("call", [
    lambda L: L.LongTensor(2.5), lambda L: L.FloatTensor(-1), lambda L: L.FloatTensor([1, 2], dtype=L.float64),
    lambda L: L.FloatTensor(L.ones(2, dtype=L.float64)), lambda L: L.ones(2).type("bogus"),
    lambda L: L.cuda.FloatTensor(2)])
def test_legacy_constructor_errors_match_torch(call):
    assert raised(lambda: call(retrograd)) == raised(lambda: call(torch))


@needs_torch
@pytest.mark.parametrize("spec", ["LongTensor", "DoubleTensor", "BoolTensor", "torch.HalfTensor", "torch.IntTensor",
                                  "float64", "int8"])
def test_type_conversion_matches_torch(spec):
    def conv(L):
        x = L.tensor([[1.5, -2.0], [0.0, 3.25]])
        arg = getattr(L, spec) if not spec.startswith("torch.") else spec
        y = x.type(arg)
        return y.tolist(), str(y.dtype), y.type()
    assert conv(retrograd) == conv(torch)


@needs_torch
def test_legacy_tensor_constructor_and_module_type():
    assert tuple(retrograd.Tensor(2, 3).shape) == (2, 3) and retrograd.Tensor(2, 3).dtype == retrograd.float32
    assert retrograd.Tensor([1, 2]).tolist() == torch.Tensor([1, 2]).tolist()
    m = retrograd.nn.Linear(2, 2).type(retrograd.DoubleTensor)
    assert m.weight.dtype == retrograd.float64 and m.weight.type() == "torch.DoubleTensor"


# --- size= --------------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("fn", ["empty", "zeros", "ones", "rand", "randn"])
@pytest.mark.parametrize("case", ["tuple", "list", "Size", "0d", "int", "both", "dtype"])
def test_size_keyword_matches_torch(fn, case):
    def call(L):
        f = getattr(L, fn)
        if case == "tuple":
            return f(size=(2, 3))
        if case == "list":
            return f(size=[4])
        if case == "Size":
            return f(size=L.Size([1, 2]))
        if case == "0d":
            return f(size=())
        if case == "int":
            return f(size=2)
        if case == "both":
            return f(2, size=(3,))
        return f(size=(2,), dtype=L.float64)
    r, t = raised(lambda: call(retrograd)), raised(lambda: call(torch))
    assert r == t
    if r is None:
        a, b = call(retrograd), call(torch)
        assert tuple(a.shape) == tuple(b.shape) and str(a.dtype) == str(b.dtype)


@needs_torch
def test_full_with_size_keyword():
    for L in (retrograd, torch):
        x = L.full(size=(2,), fill_value=3)
        assert tuple(x.shape) == (2,) and str(x.dtype) == "torch.int64" and x.tolist() == [3, 3]


# --- compile, jit, compiler, version, precision, backends -------------------------------------

def test_compile_and_jit_are_identity_with_one_notice():
    import retrograd._compile_notice as cn
    cn._shown.clear()
    m = retrograd.nn.Linear(2, 2)
    f = lambda x: x * 2      # noqa: E731
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert retrograd.compile(m) is m
        assert retrograd.compile(f, mode="reduce-overhead", fullgraph=True) is f
        assert retrograd.compile()(f) is f and retrograd.compile(backend="eager")(m) is m
        assert retrograd.jit.script(m) is m and retrograd.jit.trace(f, retrograd.ones(2)) is f
        assert retrograd.jit.trace_module(m, {"forward": retrograd.ones(2)}) is m
        assert m.compile() is None
    notes = [str(x.message) for x in w]
    assert len(notes) == 1 and "retrograd runs eagerly" in notes[0], notes
    assert notes[0].startswith("torch.compile:")
    assert w[0].filename == __file__                  # points at the caller's line

    @retrograd.jit.ignore
    def g(x):
        return x
    assert g(3) == 3 and retrograd.jit.unused(g) is g and retrograd.compiler.disable(g) is g
    assert retrograd.compiler.disable()(g) is g


@needs_torch
def test_queries_match_torch():
    for name in ("is_scripting", "is_tracing"):
        assert getattr(retrograd.jit, name)() is getattr(torch.jit, name)() is False
    assert retrograd.compiler.is_compiling() is torch.compiler.is_compiling() is False
    assert retrograd.version.cuda is torch.version.cuda is None      # torch here is the CPU build
    assert retrograd.version.api == torch.__version__.split("+")[0]


@needs_torch
def test_matmul_precision_matches_torch():
    for L in (retrograd, torch):
        assert L.get_float32_matmul_precision() == "highest"
        L.set_float32_matmul_precision("medium")
        assert L.get_float32_matmul_precision() == "medium"
    msgs = []
    for L in (retrograd, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            L.set_float32_matmul_precision("bogus")
        msgs.append([str(x.message).split(" (Triggered")[0] for x in w])
        assert L.get_float32_matmul_precision() == "medium"
        L.set_float32_matmul_precision("highest")
    assert msgs[0] == msgs[1] and len(msgs[0]) == 1


def test_backends_switches_are_settable():
    b = retrograd.backends
    saved = (b.cudnn.benchmark, b.cudnn.deterministic, b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32)
    try:
        b.cudnn.benchmark, b.cudnn.deterministic = True, True
        b.cuda.matmul.allow_tf32 = b.cudnn.allow_tf32 = True
        assert (b.cudnn.benchmark, b.cudnn.deterministic, b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32) == (True,) * 4
        b.cuda.enable_flash_sdp(False)
        assert b.cuda.flash_sdp_enabled() is False and b.cuda.math_sdp_enabled() is True
        b.mha.set_fastpath_enabled(False)
        assert b.mha.get_fastpath_enabled() is False
        b.opt_einsum.enabled = True
        assert b.opt_einsum.enabled and b.mkl.is_available() is False
    finally:
        b.cudnn.benchmark, b.cudnn.deterministic, b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32 = saved
        b.cuda.enable_flash_sdp(True)
        b.mha.set_fastpath_enabled(True)
        b.opt_einsum.enabled = False


@needs_torch
def test_torch_version_compares_as_torch_does():
    from retrograd.version import TorchVersion
    from torch.torch_version import TorchVersion as Theirs
    v, tv = TorchVersion("2.13.0"), Theirs("2.13.0")
    for other in ("2.0", "2.13", "2.13.0", "2.13.1", "2.14", "1.13.1", "2.13.0a0", "2.13.0rc1", "3", (2, 0), (2, 13),
                  (2, 13, 0), (2, 14)):
        for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__"):
            assert getattr(v, op)(other) == getattr(tv, op)(other), (op, other)
    assert v == "2.13.0" and str(v) == "2.13.0" and isinstance(v, str) and hash(v) == hash("2.13.0")


# --- under the import hook ---------------------------------------------------------------------

def test_hook_version_and_missing_names_in_process():
    with torch_aliases():
        import torch as t
        assert t.__version__ == "2.13.0" and t.__version__ >= "2.0" and t.version.retrograd == "0.1.0"
        with pytest.raises(NotImplementedError, match="^torch.nn.NoSuchLayer is not implemented in retrograd$"):
            t.nn.NoSuchLayer                              # torch.nn reached as an attribute only
        assert not hasattr(t.nn, "NoSuchLayer") and not hasattr(t.nn.functional, "no_such_fn")
        with pytest.raises(ImportError, match="torch.distributions.LKJCholesky is not implemented in retrograd"):
            from torch.distributions import LKJCholesky  # noqa: F401
        with pytest.raises(ImportError, match="torch.nn.NoSuchLayer is not implemented in retrograd"):
            from torch.nn import NoSuchLayer  # noqa: F401
        with pytest.raises(ImportError, match="torch.fx.symbolic_trace is not implemented in retrograd"):
            from torch.fx import symbolic_trace  # noqa: F401
        with pytest.raises(ImportError, match="torch.optim.NoSuchOpt is not implemented in retrograd"):
            from torch.optim import NoSuchOpt  # noqa: F401
    assert retrograd.__version__ == "0.1.0"


def run_script(name, *args):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "retrograd", "run", os.path.join(HERE, "scripts", name), *args],
                          capture_output=True, text=True, timeout=300, env=env)


def test_namespace_script_under_retrograd_run():
    r = run_script("namespace_checks.py")
    out = r.stdout
    assert "version 2.13.0 True True True True TorchVersion" in out, out + r.stderr
    assert "own 0.1.0 cuda None" in out
    assert "compile Linear True 1 False False" in out
    assert "flags high True True" in out
    assert "legacy torch.Size([2, 3]) torch.FloatTensor True torch.int64" in out
    assert "missing NotImplementedInRetrograd torch.nn.NoSuchLayer is not implemented in retrograd" in out
    assert ("missing ImportNotImplementedInRetrograd cannot import name 'NoSuchDist' from 'torch.distributions': "
            "torch.distributions.NoSuchDist is not implemented in retrograd") in out
    # not a torch.Tensor name: Python's own message
    assert "missing AttributeError 'Tensor' object has no attribute 'no_such_method_'" in out
    # a torch.Tensor method retrograd lacks, reaching the user: named as such
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == \
        "retrograd.NotImplementedInRetrograd: torch.Tensor.to_mkldnn is not implemented in retrograd", r.stderr


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_spawn_and_forkserver_workers_get_the_hook(method):
    r = run_script("spawn_workers.py", method)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("batch")]
    assert lines == ["batch retrograd._tensor ['retrograd._tensor'] [] [0.0, 1.0, 4.0, 9.0]",
                     "batch retrograd._tensor ['retrograd._tensor'] [] [16.0, 25.0, 36.0, 49.0]"], r.stdout
    assert "main real torch: False" in r.stdout


def test_hook_leaves_multiprocessing_as_it_was():
    from multiprocessing import spawn
    before = spawn.get_preparation_data
    with torch_aliases():
        assert "retrograd_torch_aliases" in spawn.get_preparation_data("x")
    assert spawn.get_preparation_data is before and "retrograd_torch_aliases" not in before("x")


@needs_torch
def test_numeric_constants_match_torch():
    import math
    for name in ("e", "pi", "inf"):
        assert getattr(retrograd, name) == getattr(torch, name) and type(getattr(retrograd, name)) is float
    assert math.isnan(retrograd.nan) and math.isnan(torch.nan) and retrograd.newaxis is torch.newaxis is None
    assert retrograd.ones(3)[retrograd.newaxis].shape == (1, 3)


def test_top_level_aliases_torch_has():
    import retrograd
    assert retrograd.vmap is retrograd.func.vmap
    assert retrograd.GradScaler is retrograd.amp.GradScaler
    assert issubclass(retrograd.OutOfMemoryError, RuntimeError)
    g = retrograd.Generator().manual_seed(0)
    rates = retrograd.tensor([0.0, 2.0, 50.0])
    s = retrograd.poisson(rates, generator=g)
    assert s.shape == rates.shape and s.dtype == rates.dtype and s[0].item() == 0.0
    assert bool((s >= 0).all()) and bool((s == s.round()).all())
    b = retrograd.binomial(retrograd.tensor([10.0, 10.0]), retrograd.tensor([0.0, 1.0]))
    assert b.tolist() == [0.0, 10.0]
