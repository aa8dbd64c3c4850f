"""Tests generated from the op table (tests/opinfo): one item per (op, test kind); each loops
over the op's samples and names the failing ones (op, sample kind, argument shapes/dtypes and
what differed). Cases listed in KNOWN_MISMATCHES are strict expected failures."""
import traceback

import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck

from opinfo import ALL_OPS, KNOWN_MISMATCHES
from opinfo.core import (torch, expand_samples, call, build, flat, is_tensor, compare_grads,
                         compare_outputs, to_numpy, tol, upstream_arrays, FLOAT_KINDS)

# the nonfinite/degenerate samples do inf/nan arithmetic on purpose; NumPy warns about it
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::numpy.exceptions.ComplexWarning")

_SAMPLES = {}


def samples_of(info):
    if info.name not in _SAMPLES:
        _SAMPLES[info.name] = expand_samples(info)
    return _SAMPLES[info.name]


def params(pred=lambda info: True):
    return pytest.mark.parametrize("info", [i for i in ALL_OPS if pred(i)], ids=lambda i: i.name)


def _needs_torch():
    if torch is None:
        pytest.skip("PyTorch (torch==2.13.0) is not installed")


def run_samples(info, test_kind, samples, check):
    """Run ``check(sample)`` (None or a failure description) on every sample; fail naming the
    unexpected failures, xfail when exactly the known mismatches of this op/test fail."""
    if test_kind in info.skip:
        pytest.skip(info.skip[test_kind])
    failures = {}
    for s in samples:
        try:
            msg = check(s)
        except Exception as e:  # a crash in retrograd (or the harness) is a failure of that sample
            tb = traceback.extract_tb(e.__traceback__)[-1]
            msg = f"raised {type(e).__name__}: {e} (at {tb.filename.split('/')[-1]}:{tb.lineno})"
        if msg:
            msg = " ".join(str(msg).split())
            failures.setdefault(s.kind, []).append(f"{info.name} {test_kind} {s.describe()}: {msg}")
    known = {sk: d for (op, tk, sk), d in KNOWN_MISMATCHES.items() if op == info.name and tk == test_kind}
    lines = []
    if torch is None:  # most known mismatches are seen only against torch: check just the rest
        known = {k: d for k, d in known.items() if k in failures or (k == "*" and failures)}
    if "*" in known:  # every sample kind of this op and test fails
        passing = sorted({s.kind for s in samples} - set(failures))
        if torch is not None and (not failures or passing):
            lines.append(f"KNOWN_MISMATCHES[({info.name!r}, {test_kind!r}, '*')] now passes for sample kinds "
                         f"{passing}: list only the failing kinds")
        failures = {}
    for kind, msgs in failures.items():
        if kind not in known:
            lines.extend(msgs[:3] + ([f"... and {len(msgs) - 3} more {kind} samples"] if len(msgs) > 3 else []))
    for kind in known:
        if kind != "*" and kind not in failures:
            lines.append(f"KNOWN_MISMATCHES[({info.name!r}, {test_kind!r}, {kind!r})] now passes: remove it")
    if lines:
        pytest.fail("\n".join(lines), pytrace=False)
    if known:
        pytest.xfail("; ".join(dict.fromkeys(known.values())))


def samples_for(info, test_kind):
    """The samples a test kind runs on."""
    if test_kind == "views":
        return _view_samples(info)
    if test_kind == "grad":
        return _grad_samples(info)
    if test_kind == "gradcheck":
        return _fd_samples(info)
    if test_kind == "gradgrad":
        return _grad_samples(info, ("float64",))
    forward = [s for s in samples_of(info) if s.upstream is None]
    if test_kind == "inplace":
        return [s for s in forward if s.args and isinstance(s.args[0], np.ndarray)]
    return forward


def _torch_call(info, s, requires_grad=False):
    try:
        return call(info, torch, s, requires_grad), None
    except Exception as e:
        return None, e


# ---------------------------------------------------------------------------------- values

@params()
def test_values(info):
    """Forward values, shapes and dtypes equal torch's (nan/inf in the same places)."""
    _needs_torch()

    def check(s):
        if s.upstream is not None:
            return None
        t, err = _torch_call(info, s)
        if err is not None:
            return None  # test_errors compares the exception
        r, _, _ = call(info, retrograd, s)
        return compare_outputs(r, t[0], *tol(info, s))

    run_samples(info, "values", samples_for(info, "values"), check)


# ---------------------------------------------------------------------------------- errors

@params()
def test_errors(info):
    """When torch raises, retrograd raises the same exception class; never raises otherwise."""
    _needs_torch()

    def check(s):
        if s.upstream is not None:
            return None
        _, terr = _torch_call(info, s)
        try:
            call(info, retrograd, s)
            rerr = None
        except Exception as e:
            rerr = e
        if terr is None and rerr is None:
            return None
        if terr is None:
            return f"retrograd raises {type(rerr).__name__}: {rerr}; torch does not"
        if rerr is None:
            return f"torch raises {type(terr).__name__}: {str(terr).splitlines()[0]}; retrograd does not"
        if type(rerr).__name__ != type(terr).__name__:
            return (f"retrograd raises {type(rerr).__name__}: {rerr}; torch {type(terr).__name__}: "
                    f"{str(terr).splitlines()[0]}")
        return None

    run_samples(info, "errors", samples_for(info, "errors"), check)


# ----------------------------------------------------------------------------------- views

def _view_samples(info):
    return [s for s in samples_of(info) if s.dtype == "float64" and s.upstream is None
            and s.layout in ("contig", "noncontig") and s.args and isinstance(s.args[0], np.ndarray)]


@params()
def test_views(info):
    """The output is a view of (shares memory with) the first input exactly when torch's is."""
    _needs_torch()

    def state(lib, s):
        out, _, args = call(info, lib, s)
        x = args[0]
        outs = [o for o in flat(out) if is_tensor(o)]
        if not outs:
            return None
        before = [to_numpy(o).copy() for o in outs]
        grad_mode = torch.no_grad() if lib is torch else retrograd.no_grad()
        with grad_mode:
            x.add_(1)
        res = []
        for o, b in zip(outs, before):
            changed = bool(o.numel()) and not np.array_equal(to_numpy(o), b, equal_nan=True)
            res.append((o is x, o._base is not None, changed))
        return res

    def check(s):
        try:
            t = state(torch, s)
        except Exception:
            return None  # torch cannot run it (or write into its input): nothing to compare
        r = state(retrograd, s)
        if t is None:
            return None
        if r is None or len(r) != len(t):
            return f"outputs differ: retrograd {r}, torch {t}"
        for k, ((r_same, r_view, r_wt), (t_same, t_view, t_wt)) in enumerate(zip(r, t)):
            if r_same != t_same:
                return f"output[{k}] is the input: retrograd {r_same}, torch {t_same}"
            if r_view != t_view:
                return f"output[{k}] is a view (_base set): retrograd {r_view}, torch {t_view}"
            if r_wt != t_wt:
                return f"output[{k}] sees a write into the input: retrograd {r_wt}, torch {t_wt}"
            if info.view != (t_view or t_same) and s is samples_of(info)[0] and k == 0:
                return f"entry says view={info.view} but torch's output view={t_view or t_same} (fix the entry)"
        return None

    run_samples(info, "views", samples_for(info, "views"), check)


# ------------------------------------------------------------------------------------ grad

def _grad_samples(info, dtypes=FLOAT_KINDS):
    return [s for s in samples_of(info) if s.dtype in dtypes and s.grad_positions()]


def _diff_outputs(out):
    return [o for o in flat(out) if is_tensor(o) and o.requires_grad]


def _grad_fn_name(o):
    return type(o.grad_fn).__name__ if o.grad_fn is not None else None


@params(lambda i: i.grad)
def test_grad(info):
    """First derivative vs torch under a random upstream gradient (non-finite ones included)."""
    _needs_torch()

    def check(s):
        t, err = _torch_call(info, s, True)
        if err is not None:
            return None
        tout, tleaves, _ = t
        rout, rleaves, _ = call(info, retrograd, s, True)
        to_, ro = _diff_outputs(tout), _diff_outputs(rout)
        if len(to_) != len(ro):
            return f"outputs requiring grad: retrograd {len(ro)}, torch {len(to_)}"
        if not to_:
            return None
        for a, b in zip(ro, to_):
            # torch cannot hold negative strides, so layout-dependent nodes differ there by design
            if _grad_fn_name(a) != _grad_fn_name(b) and s.layout != "negstride":
                return f"grad_fn {_grad_fn_name(a)} != torch {_grad_fn_name(b)}"
        ups = upstream_arrays(s, [tuple(o.shape) for o in to_], np.random.default_rng(0))
        tgs = torch.autograd.grad(to_, tleaves, [torch.tensor(u, dtype=o.dtype) for u, o in zip(ups, to_)],
                                  allow_unused=True)
        rgs = retrograd.autograd.grad(ro, rleaves, [retrograd.tensor(u, dtype=o.dtype) for u, o in zip(ups, ro)],
                                      allow_unused=True)
        return compare_grads(rgs, tgs, *tol(info, s), "grad")

    run_samples(info, "grad", samples_for(info, "grad"), check)


# ------------------------------------------------------------------------------- gradcheck

def _fd_fn(info, s, args, kwargs, gpos):
    def fn(*xs):
        a = list(args)
        for p, x in zip(gpos, xs):
            a[p] = x
        outs = [o for o in flat(info.op(retrograd, *a, **kwargs))
                if is_tensor(o) and o.is_floating_point()]
        return tuple(outs)
    return fn


def _fd_samples(info):
    return [s for s in samples_of(info) if s.dtype == "float64" and s.grad_positions()
            and s.kind in info.gradcheck_kinds and s.layout == "contig" and s.upstream is None]


def _fd_check(info, s, second):
    args, kwargs, leaves = build(retrograd, s, True)
    gpos = s.grad_positions()
    fn = _fd_fn(info, s, args, kwargs, gpos)
    outs = fn(*leaves)
    if not any(o.requires_grad for o in outs):
        return None
    try:
        (gradgradcheck if second else gradcheck)(fn, tuple(leaves))
    except Exception as e:
        return f"{'gradgradcheck' if second else 'gradcheck'}: {type(e).__name__}: {str(e)[:800]}"
    return None


def _graph_nodes(outs):
    """The names of every node the backward of ``outs`` reaches."""
    names, seen, stack = set(), set(), [o.grad_fn for o in outs if o.grad_fn is not None]
    while stack:
        f = stack.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        names.add(type(f).__name__)
        stack.extend(g for g, _ in f.next_functions)
    return names


@params(lambda i: i.grad)
def test_graph(info):
    """The graph an op records holds the nodes torch's does (by name), not only its output's
    grad_fn: what torch's composites record inside (a Python number added in C++ is
    AddBackward1, a reshape that copies is CloneBackward0 then UnsafeViewBackward0, a
    reshaped weight a ViewBackward0) is what a drawn graph shows. Fused composites, one node
    named as torch's output node, are listed."""
    _needs_torch()

    def check(s):
        names = []
        for lib in (torch, retrograd):
            args, kwargs, _ = build(lib, s, True)
            try:
                outs = _diff_outputs(info.op(lib, *args, **kwargs))
            except Exception:
                return None        # (test_errors compares the refusals)
            names.append(_graph_nodes(outs))
        t, r = names
        if t != r:
            return f"nodes only torch's graph has {sorted(t - r)}, only retrograd's {sorted(r - t)}"
        return None

    run_samples(info, "graph", [s for s in _grad_samples(info) if s.kind == "basic"], check)


@params(lambda i: i.grad)
def test_gradcheck(info):
    """float64 finite-difference gradcheck of retrograd alone (no torch needed)."""
    run_samples(info, "gradcheck", samples_for(info, "gradcheck"), lambda s: _fd_check(info, s, False))


# -------------------------------------------------------------------------------- gradgrad

@params(lambda i: i.grad and i.gradgrad)
def test_gradgrad(info):
    """Second derivative vs torch (create_graph), plus gradgradcheck on basic samples."""
    fd = set(map(id, _fd_samples(info)))

    def torch_part(s):
        t, err = _torch_call(info, s, True)
        if err is not None:
            return None
        res = {}
        for lib, (out, leaves, _) in ((torch, t), (retrograd, call(info, retrograd, s, True))):
            outs = _diff_outputs(out)
            if not outs:
                return None
            rng = np.random.default_rng(0)
            ups = [lib.tensor(u, dtype=o.dtype).requires_grad_(True)
                   for u, o in zip(upstream_arrays(s, [tuple(o.shape) for o in outs], rng), outs)]
            gs = lib.autograd.grad(outs, leaves, ups, create_graph=True, allow_unused=True)
            live = [g for g in gs if g is not None and g.requires_grad]
            flags = [None if g is None else bool(g.requires_grad) for g in gs]
            sec = None
            if live:
                tot = sum(((g * lib.tensor(rng.standard_normal(tuple(g.shape)), dtype=g.dtype)).sum()
                           for g in live))
                sec = lib.autograd.grad(tot, list(leaves) + ups, allow_unused=True)
            res[lib] = (flags, sec)
        (tf, tsec), (rf, rsec) = res[torch], res[retrograd]
        if [bool(f) for f in tf] != [bool(f) for f in rf]:
            return f"first-derivative requires_grad (create_graph): retrograd {rf}, torch {tf}"
        if tsec is None:
            return None
        return compare_grads(rsec, tsec, *tol(info, s), "second derivative")

    def check(s):
        msg = None
        if torch is not None and s.dtype == "float64":
            msg = torch_part(s)
        if msg is None and id(s) in fd and s.kind == "basic" and "gradcheck" not in info.skip:
            msg = _fd_check(info, s, True)
        return msg

    run_samples(info, "gradgrad", samples_for(info, "gradgrad"), check)


# --------------------------------------------------------------------------------- inplace

@params(lambda i: i.inplace is not None)
def test_inplace(info):
    """The in-place variant gives torch's values (or its exception) and bumps the version."""
    _needs_torch()

    def run(lib, s):
        args, kwargs, _ = build(lib, s, False)
        x = args[0]
        v0 = x._version
        try:
            res = getattr(x, info.inplace)(*args[1:], **kwargs)
        except Exception as e:
            return None, e
        return (res is x, x._version > v0, x), None

    def check(s):
        if s.upstream is not None or not s.args or not isinstance(s.args[0], np.ndarray):
            return None
        t, terr = run(torch, s)
        r, rerr = run(retrograd, s)
        if terr is not None or rerr is not None:
            if terr is None:
                return f"retrograd raises {type(rerr).__name__}: {rerr}; torch does not"
            if rerr is None:
                return f"torch raises {type(terr).__name__}: {str(terr).splitlines()[0]}; retrograd does not"
            if type(rerr).__name__ != type(terr).__name__:
                return f"retrograd raises {type(rerr).__name__}: {rerr}; torch {type(terr).__name__}: {terr}"
            return None
        if not r[0]:
            return "the in-place method does not return self"
        if not r[1]:
            return "the in-place method does not bump _version"
        return compare_outputs(r[2], t[2], *tol(info, s), "in-place result")

    run_samples(info, "inplace", samples_for(info, "inplace"), check)


# ------------------------------------------------------------------------- saved outputs

def _saved_samples(info):
    return [s for s in samples_of(info) if s.dtype == "float64" and s.layout == "contig" and s.upstream is None
            and s.kind != "error"]


def _modified_then_backward(lib, info, s):
    """What happens when the op's first differentiable output is modified in place, then the
    backward runs through the op: ('ok',), or where it raises and what (None: no such output)."""
    try:
        out, leaves, _ = call(info, lib, s, True)
    except Exception:
        return None     # (test_errors compares forward errors)
    outs = _diff_outputs(out)
    if not outs:
        return None
    try:
        outs[0].mul_(1)
    except Exception as e:
        return ("in-place", type(e).__name__, str(e).splitlines()[0])
    try:
        tot = sum(o.real.sum() if o.is_complex() else o.sum() for o in outs)
        lib.autograd.grad(tot, leaves, allow_unused=True)
    except Exception as e:
        return ("backward", type(e).__name__, str(e).splitlines()[0])
    return ("ok",)


@params(lambda i: i.grad)
def test_saved_outputs(info):
    """An output modified in place, then the backward: it raises exactly where torch's does (its
    node saved that output: 'one of the variables needed for gradient computation has been
    modified by an inplace operation'), with torch's message, and runs where torch's runs."""
    _needs_torch()

    def check(s):
        t = _modified_then_backward(torch, info, s)
        if t is None:
            return None
        r = _modified_then_backward(retrograd, info, s)
        if r != t:
            return f"retrograd {r}; torch {t}"
        return None

    run_samples(info, "saved", _saved_samples(info), check)


def _input_changed(lib, info, s, which):
    """The op's ``which``-th differentiable input (made a non-leaf) modified in place after the
    forward, then the backward again: 'raises', 'unaffected' (the gradients of the first
    backward) or 'changed' (None: no such input or output)."""
    args, kwargs, leaves = build(lib, s, True)
    pos = [i for i, a in enumerate(args) if is_tensor(a) and a.requires_grad]
    if which >= len(pos):
        return None
    args = list(args)
    args[pos[which]] = x = args[pos[which]] * 1
    try:
        outs = _diff_outputs(info.op(lib, *args, **kwargs))
    except Exception:
        return None
    if not outs:
        return None
    tot = sum(o.real.sum() if o.is_complex() else o.sum() for o in outs)
    try:
        before = lib.autograd.grad(tot, leaves, retain_graph=True, allow_unused=True)
    except Exception:
        return None       # (test_grad compares the backward itself)
    x.mul_(2)
    try:
        after = lib.autograd.grad(tot, leaves, allow_unused=True)
    except RuntimeError as e:
        if "modified by an inplace operation" in str(e):
            return "raises"
        raise
    same = all((a is None) == (b is None) and (a is None or np.array_equal(to_numpy(a), to_numpy(b), equal_nan=True))
               for a, b in zip(before, after))
    return "unaffected" if same else "changed"


@params(lambda i: i.grad)
def test_saved_inputs(info):
    """An input modified in place after the forward: the backward refuses exactly where torch's
    does (its nodes saved that input, or a view of it); never a gradient silently computed from
    the new values, never a refusal where torch's backward runs, and no backward that runs where
    torch's refuses (a node that reads an index or mask of its own still saves what torch's
    saves, for the same refusal)."""
    _needs_torch()

    def check(s):
        for which in range(3):
            t = _input_changed(torch, info, s, which)
            if t is None:
                continue
            r = _input_changed(retrograd, info, s, which)
            if r == "changed":
                return f"input {which} changed in place: retrograd's gradient silently follows the new values " \
                       f"(torch: {t})"
            if r == "raises" and t != "raises":
                return f"input {which} changed in place: retrograd's backward refuses, torch's runs"
            if t == "raises" and r != "raises":
                return f"input {which} changed in place: torch's backward refuses, retrograd's runs ({r})"
        return None

    run_samples(info, "saved_inputs", _saved_samples(info), check)
