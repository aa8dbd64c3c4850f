"""Random programs over the op table (tests/opinfo), run on torch and retrograd side by side.

A program is a list of steps; each step calls one table entry (or its in-place variant) on
arguments that are fresh NumPy inputs (leaves, possibly non-contiguous / negative-stride, with
planted nan/inf, zeros or ties) or results of earlier steps. ``Fuzzer.run`` draws the program
from a hypothesis ``data`` object while running it on both libraries, so every wiring decision
sees the real shapes and dtypes, and compares after every step: exception class, values,
shape, dtype, requires_grad, grad_fn name, whether the result is the input / a view. At the end
it compares the final value of every tensor (writes through views), the first derivative under
a random upstream gradient and the second derivative (create_graph, grad of <grad, direction>).

Cases listed in KNOWN_MISMATCHES are not reported: a step whose (op, test kind, sample kind)
is known is left out of the program (values/errors/views/inplace) or turns off the derivative
comparison of the program (grad/gradgrad). Sample kinds are derived from the actual inputs of
the step (0d, size1, empty, broadcast, noncontig, negstride, nonfinite, degenerate, ties,
int64, bool, infgrad) on top of the table sample's own kind.

A failure raises a ``Finding`` whose message holds a standalone reproducer (``render``).
"""
import inspect
import traceback

import numpy as np

import retrograd
from hypothesis import strategies as st

from opinfo import ALL_OPS, KNOWN_MISMATCHES
from opinfo.core import (torch, expand_samples, compare_arrays, compare_grads, compare_outputs, flat, is_tensor,
                         to_numpy, Index, FuzzSig, _resample)


# ----------------------------------------------------------------------------------- findings

class Finding(AssertionError):
    """A difference from torch; subclasses name the test kind (hypothesis shrinks each kind
    separately)."""
    test = "values"

    def __init__(self, msg, ops=()):
        super().__init__(msg)
        self.ops = tuple(ops)


class ValuesFinding(Finding):
    test = "values"


class ErrorsFinding(Finding):
    test = "errors"


class ViewsFinding(Finding):
    test = "views"


class GradFinding(Finding):
    test = "grad"


class GradGradFinding(Finding):
    test = "gradgrad"


class CrashFinding(Finding):
    """Something raised outside the compared calls (e.g. reading a malformed result)."""
    test = "errors"


# ------------------------------------------------------------------------- shared with repros

def leaf(lib, a, layout="contig", requires_grad=False):
    """(argument, leaf) for a fresh input: "contig"; "noncontig" (a transposed / strided view of
    its leaf); "negstride" (retrograd only, a negative-stride leaf: torch cannot hold those)."""
    a = np.array(a, copy=True)
    rg = bool(requires_grad) and a.dtype.kind == "f"
    if layout == "noncontig" and a.ndim and a.size:
        if a.ndim >= 2:
            base = lib.from_numpy(np.ascontiguousarray(a.T)).requires_grad_(rg)
            return base.permute(*reversed(range(a.ndim))), base
        wide = np.zeros(2 * a.shape[0], a.dtype)
        wide[::2] = a
        base = lib.from_numpy(wide).requires_grad_(rg)
        return base[::2], base
    if layout == "negstride" and lib.__name__ == "retrograd" and a.ndim and a.size:
        base = lib.from_numpy(np.ascontiguousarray(a[::-1])[::-1]).requires_grad_(rg)
        return base, base
    base = lib.from_numpy(a).requires_grad_(rg)
    return base, base


def upstream(lib, seed, shapes, dtypes, nonfinite=False, requires_grad=False):
    """Random upstream gradients (inf, -inf, nan planted first when ``nonfinite``)."""
    rng = np.random.default_rng(seed)
    ups = []
    for sh, dt in zip(shapes, dtypes):
        u = rng.standard_normal(sh)
        if nonfinite:
            f = u.reshape(-1)
            f[:3] = [np.inf, -np.inf, np.nan][:min(3, f.size)]
        ups.append(lib.tensor(u, dtype=dt).requires_grad_(requires_grad))
    return ups


def direction(lib, seed, gs):
    """<gs, a random direction>: the scalar whose gradient is the second derivative."""
    rng = np.random.default_rng(seed + 1)
    return sum((g * lib.tensor(rng.standard_normal(tuple(g.shape)), dtype=g.dtype)).sum() for g in gs)


# read once: the source file may change under a long run
_HELPERS = [inspect.getsource(f) for f in (leaf, upstream, direction)]


def is_view(t):
    fn = getattr(t, "_is_view", None)
    return bool(fn()) if fn is not None else t._base is not None


def grad_fn_name(t):
    return type(t.grad_fn).__name__ if t.grad_fn is not None else None


# --------------------------------------------------------------------------------- the table

def fuzz_sig(info):
    sig = info.fuzz if isinstance(info.fuzz, FuzzSig) else FuzzSig()
    any_shape = info.elementwise if sig.any_shape is None else sig.any_shape
    return sig.chain, any_shape


FUZZ_OPS = [i for i in ALL_OPS
            if i.fuzz is not False and "values" not in i.skip and "fuzz" not in i.skip]
_SAMPLES = {}


def samples_of(info):
    if info.name not in _SAMPLES:
        # the op table's bfloat16 samples are checked there; random programs keep NumPy's dtypes
        _SAMPLES[info.name] = [s for s in expand_samples(info) if s.upstream is None and s.dtype != "bfloat16"]
    return _SAMPLES[info.name]


FORWARD_TESTS = ("values", "errors", "views")


def known(op, test, kinds, extra=None):
    """The KNOWN_MISMATCHES reason that covers (op, test, any of kinds), or None. Test kinds
    "fuzz:<test>" there list what only the fuzzer sees (the generated tests ignore them)."""
    for k in tuple(kinds) + ("*",):
        why = KNOWN_MISMATCHES.get((op, test, k)) or KNOWN_MISMATCHES.get((op, "fuzz:" + test, k))
        if why:
            return why
        if extra and (op, test, k) in extra:
            return extra[(op, test, k)]
    return None


# ------------------------------------------------------------------------------ the program

class Leaf:
    def __init__(self, name, array, layout, requires_grad):
        self.name, self.array, self.layout, self.requires_grad = name, array, layout, requires_grad


class Step:
    """One call: args/kwargs are ("ref", name, j) | ("leaf", name) | ("idx", array) | ("lit", v)."""
    def __init__(self, name, info, args, kwargs, inplace, leaves):
        self.name, self.info, self.args, self.kwargs = name, info, args, kwargs
        self.inplace, self.leaves = inplace, leaves
        self.kinds = set()
        self.differentiable = False
        self.note = None   # "raised X in both": kept in the program as a comment

    @property
    def label(self):
        return self.info.inplace if self.inplace else self.info.name


class Runner:
    """Runs steps on one library, keeping every value by name."""
    def __init__(self, lib):
        self.lib = lib
        self.env = {}
        self.leaves = []       # the tensors derivatives are taken w.r.t.
        self.outputs = {}      # step name -> result

    def value(self, spec):
        kind = spec[0]
        if kind == "ref":
            v = self.env[spec[1]]
            return v if spec[2] is None else flat(v)[spec[2]]   # (positions count nested results, histogramdd's edges)
        if kind == "leaf":
            return self.env[spec[1]]
        if kind == "idx":
            return self.lib.from_numpy(np.array(spec[1], copy=True))
        return spec[1]

    def add_leaf(self, lf, upcast=False):
        a = lf.array.astype(np.float64) if upcast and lf.array.dtype == np.float32 else lf.array
        arg, base = leaf(self.lib, a, lf.layout, lf.requires_grad)
        self.env[lf.name] = arg
        if base.requires_grad:
            self.leaves.append(base)

    def run(self, step, upcast=False):
        for lf in step.leaves:
            self.add_leaf(lf, upcast)
        args = [self.value(a) for a in step.args]
        kwargs = {k: self.value(v) for k, v in step.kwargs.items()}
        if step.inplace:
            out = getattr(args[0], step.info.inplace)(*args[1:], **kwargs)
        else:
            out = step.info.op(self.lib, *args, **kwargs)
        self.env[step.name] = out
        self.outputs[step.name] = out
        return out, args


def run_guarded(runner, step, upcast=False):
    try:
        out, args = runner.run(step, upcast)
        return out, args, None
    except Exception as e:  # noqa: BLE001 - exception parity is what is compared
        return None, None, e


# -------------------------------------------------------------------------------- kinds

def _integral(a):
    f = a[np.isfinite(a)]
    return f.size and bool(np.any(f * 2 == np.round(f * 2)))


def _repeated_singular_values(a):
    """Do the matrices of ``a`` (..., m, n) have two (nearly) equal singular values? (the spectral
    ties under which decompositions' vectors are not unique)"""
    if a.ndim < 2 or min(a.shape[-2:]) < 2 or a.size > 4096 or not np.all(np.isfinite(a)):
        return False
    sv = np.linalg.svd(a, compute_uv=False)   # descending
    return bool(np.any(sv[..., :-1] - sv[..., 1:] <= 1e-6 * sv[..., :1]))


def _singular_up_to_rounding(a, eps=np.finfo(np.float64).eps):
    """Are the matrices of ``a`` (..., m, n) of deficient rank to working precision? The smallest
    of their min(m, n) singular values at most 1e-10 of the largest, or, for a dtype of machine
    epsilon ``eps`` coarser than that bound allows, at most 100 * max(m, n) * eps of it (the
    numerical rank rule of matrix_rank, with room for the rounding of the steps that made the
    matrix). Whether an elimination then meets an exact zero pivot, which rounding-noise entry it
    pivots on next (a 4 x 3 matrix of rank 2: the rows of a cross product with one vector), and
    what it returns past it, is the rounding of its own order of operations; in float32 even
    the log-determinant of a 3 x 3 matrix with singular values (3.1, 1.5, 1.9e-8) differs by
    0.3 between two LAPACKs (seed 121)."""
    if a.ndim < 2 or min(a.shape[-2:]) < 2 or a.size > 4096 or not np.all(np.isfinite(a)):
        return False
    sv = np.linalg.svd(a, compute_uv=False)
    tol = max(1e-10, 100 * max(a.shape[-2:]) * float(eps))
    return bool(np.any(sv[..., -1] <= tol * sv[..., 0]))


# Significant bits of the numbers where ops put their kinks and thresholds (0, 0.5, 1, 3, 6,
# the fuzzer's literal bounds): a value either library rounds across one may take another
# branch of a later op (hardswish at 3 after singular values that are 3 in exact arithmetic).
_KINK_BITS = 8


def _straddles_kink(a, b):
    """Elements where a and b (float64, equal to rounding) differ and lie on two sides of 0 or
    of a number with at most _KINK_BITS significant bits (or one of them on it)."""
    with np.errstate(invalid="ignore", over="ignore"):
        ok = np.isfinite(a) & np.isfinite(b) & (a != b)
        if not ok.any():
            return False
        lo, hi = np.minimum(a, b)[ok], np.maximum(a, b)[ok]
        if np.any((lo <= 0) & (hi >= 0)):
            return True
        # the grid of short numbers around each pair: spacing 2**(e - bits + 1), e the exponent
        # of the larger magnitude; a grid point in [lo, hi] is a kink candidate between them
        e = np.frexp(np.maximum(np.abs(lo), np.abs(hi)))[1]
        step = np.ldexp(1.0, e - _KINK_BITS)
        return bool(np.any(np.floor(hi / step) * step >= lo))


def _branches_may_differ(targs, rargs):
    """Does a floating input hold an element whose sign (-1, 0, +1) differs between torch's and
    retrograd's values (each computed by earlier steps, equal to rounding), or that they round
    across a kink candidate (_straddles_kink)?"""
    for t, r in zip(targs, rargs):
        if is_tensor(t) and is_tensor(r) and t.is_floating_point() and tuple(t.shape) == tuple(r.shape) \
                and not t.is_complex():
            try:
                a, b = to_numpy(t).astype(np.float64), to_numpy(r).astype(np.float64)
            except (TypeError, RuntimeError, ValueError):     # (sparse, meta: no dense values to read)
                continue
            with np.errstate(invalid="ignore"):
                if np.any((np.sign(a) != np.sign(b)) & ~np.isnan(a) & ~np.isnan(b)):
                    return True
            if _straddles_kink(a.reshape(-1), b.reshape(-1)):
                return True
    return False


def _normwise(step, outs, atol, rtol):
    """``atol``, raised to ``rtol`` of the largest finite output entry for an op accurate only
    relative to that (OpInfo.normwise: matrix functions)."""
    if step.info is None or not step.info.normwise:
        return atol
    big = 0.0
    for o in outs:
        if is_tensor(o) and o.numel() and (o.is_floating_point() or o.is_complex()):
            a = np.abs(to_numpy(o).astype(np.complex128 if o.is_complex() else np.float64))
            a = a[np.isfinite(a)]
            if a.size:
                big = max(big, float(a.max()))
    return max(atol, rtol * big)


def input_kinds(targs, rargs, sample):
    """The sample kinds the actual inputs of a step belong to (for KNOWN_MISMATCHES)."""
    kinds = {sample.kind}
    if sample.layout != "contig":
        kinds.add(sample.layout)
    floats = []
    for t, r in zip(targs, rargs):
        if not is_tensor(t):
            if isinstance(t, float) and not np.isfinite(t):
                kinds.update(("nonfinite", "degenerate"))
            continue
        if t.dim() == 0:
            kinds.add("0d")
        elif t.numel() == 1:
            kinds.add("size1")
        if t.numel() == 0:
            kinds.add("empty")
        if not t.is_contiguous():
            kinds.add("noncontig")
            if any(u is t for u in targs[1:]):
                kinds.add("noncontig_param")    # (a non-contiguous weight, bias or statistic)
        if any(s < 0 for s in r.stride()):
            kinds.add("negstride")
        if t.dtype in (torch.float16, torch.bfloat16):
            kinds.add(str(t.dtype).replace("torch.", ""))
        if t.dtype == torch.bool:
            kinds.add("bool")
        elif not t.is_floating_point() and not t.is_complex():
            kinds.add("int64")
        if t.is_floating_point():
            a = to_numpy(t).astype(np.float64)
            floats.append(a)
            if not np.all(np.isfinite(a)):
                kinds.update(("nonfinite", "degenerate"))   # the table's degenerate points hold inf/nan too
            if _integral(a):
                kinds.add("degenerate")
            if np.any(np.abs(a[np.isfinite(a)]) >= 64):
                kinds.add("large")          # (where float32's exponentials near overflow: e^88.7)
            if np.any((a == 0) & np.signbit(a)):
                kinds.add("negzero")        # (-0.0: where SIMD bodies and scalar tails may differ)
            if _singular_up_to_rounding(a, torch.finfo(t.dtype).eps):
                kinds.add("singular")
            if a.size > 1 and np.unique(a).size < a.size:
                kinds.add("ties")
            elif _repeated_singular_values(a):   # e.g. an orthogonal factor of an earlier step
                kinds.add("ties")
    if len({a.shape for a in floats}) > 1:
        kinds.add("broadcast")
    if len({t.dtype for t in targs if is_tensor(t) and t.is_floating_point()}) > 1:
        kinds.add("mixed_dtype")
    for i in range(len(floats)):
        for j in range(i + 1, len(floats)):
            try:
                tied = np.any(floats[i] == floats[j])
            except ValueError:   # shapes that do not broadcast (index_reduce's self and source, say):
                tied = np.isin(floats[i], floats[j]).any()   # any shared value may meet in one output
            if tied:
                kinds.add("ties")
    return kinds


# --------------------------------------------------------------------------------- fuzzer

HALF_TOL = (2e-3, 2e-3)    # two float16 ulps: an op rounded in float16 vs in float32 then float16


class Fuzzer:
    """Draws one program from ``data`` while running it on torch and retrograd."""

    def __init__(self, data, stats, suppressed=None, min_steps=3, max_steps=10):
        self.data = data
        self.stats = stats
        self.suppressed = suppressed or {}
        self.min_steps, self.max_steps = min_steps, max_steps
        self.steps = []
        self.t = Runner(torch)
        self.r = Runner(retrograd)
        self.pool = []           # (spec, torch tensor): values later steps may consume
        self.nleaves = 0
        self.diverged = False    # rounding made the libraries' values differ: stop comparing
        self.grad_known = None
        self.gradgrad_known = None
        self.nonfinite_seen = False
        self.sign_drift = False  # an input is rounded across 0 or a kink candidate (_branches_may_differ)
        self.layout_differs = False
        self.half_seen = False

    def draw(self, strategy):
        return (self._draw or self.data.draw)(strategy)

    _draw = None

    def draw_step(self, k):
        """The choices of step k as one hypothesis span (None: a no-op step)."""
        @st.composite
        def step(draw):
            self._draw = draw
            try:
                idx = draw(st.integers(0, len(FUZZ_OPS)))
                if idx == 0:       # a no-op: what the shrinker turns irrelevant steps into
                    return None
                info = FUZZ_OPS[idx - 1]
                ss = samples_of(info)
                if not ss:
                    return None
                s = ss[self.ints(0, len(ss) - 1)]
                rng = np.random.default_rng(self.ints(0, 2 ** 16))
                return self.build_step(k, info, s, rng), s
            finally:
                self._draw = None
        return self.data.draw(step())

    def ints(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    # ------------------------------------------------------------------------ wiring
    def new_leaf(self, array, requires_grad, rng, sample_layout):
        pert = self.ints(0, 9)
        a = np.array(array, copy=True)
        if a.dtype.kind == "f" and a.size:
            flat_ = a.reshape(-1)
            pos = rng.integers(0, a.size, size=min(a.size, 1 + a.size // 3))
            if pert == 7:
                flat_[pos] = rng.choice([np.nan, np.inf, -np.inf], size=pos.size)
            elif pert == 8:
                flat_[pos] = rng.choice([0.0, -0.0, 1.0, -1.0, 0.5], size=pos.size)
            elif pert == 9:
                flat_[pos] = flat_[rng.integers(0, a.size)]
        layout = sample_layout
        if layout == "contig":
            layout = ("contig", "contig", "contig", "noncontig", "negstride")[self.ints(0, 4)]
        name = f"x{self.nleaves}"
        self.nleaves += 1
        return Leaf(name, a, layout, requires_grad)

    def candidates(self, pred):
        return [(spec, t) for spec, t in self.pool if pred(t)]

    def pick(self, cands):
        """An earlier result, or None for a fresh input."""
        if not cands:
            return None
        mode = self.ints(0, 3)
        if mode == 0:
            return None
        if mode == 1:
            return cands[-1]
        return cands[self.ints(0, len(cands) - 1)]

    def bshape(self, shape, rng):
        """A shape broadcasting with ``shape``."""
        choice = self.ints(0, 4)
        if choice == 0:
            return shape
        if choice == 1:
            return shape[1:] if shape else ()
        if choice == 2:
            return tuple(1 if rng.random() < 0.5 else d for d in shape)
        if choice == 3:
            return ()
        return (2,) + tuple(shape)

    def rand_shape(self):
        nd = self.ints(0, 3)
        return tuple(self.draw(st.sampled_from([2, 3, 1, 4, 0])) for _ in range(nd))

    def build_step(self, k, info, s, rng):
        chain, any_shape = fuzz_sig(info)
        fp = s.float_positions()
        gpos = set(s.grad_positions())
        chain = fp if chain is None else [p for p in chain if p in fp]
        args = list(s.args)
        specs = [None] * len(args)
        leaves = []
        inplace = False
        fresh_shape = {}
        if info.inplace and fp and fp[0] == 0 and self.ints(0, 3) == 3:
            a0 = args[0]
            c = self.pick([(spec, t) for spec, t in self.pool if spec[0] == "ref" and t.is_floating_point()
                           and (any_shape or (tuple(t.shape) == a0.shape and str(t.dtype) == f"torch.{a0.dtype}"))])
            if c is not None:
                inplace = True
                specs[0] = c[0]
                if any_shape:
                    for p in fp[1:]:
                        fresh_shape[p] = self.bshape(tuple(c[1].shape), rng)
        if any_shape and fp and specs[fp[0]] is None:
            p0 = fp[0]
            c = self.pick(self.candidates(lambda t: t.is_floating_point()))
            if c is not None:
                specs[p0] = c[0]
                for p in fp[1:]:
                    fresh_shape[p] = self.bshape(tuple(c[1].shape), rng)
            elif self.ints(0, 2) == 2:
                sh = self.rand_shape()
                fresh_shape[p0] = sh
                for p in fp[1:]:
                    fresh_shape[p] = self.bshape(sh, rng)
        elif not any_shape:
            for p in chain:
                if specs[p] is None:
                    a = args[p]
                    c = self.pick(self.candidates(
                        lambda t, a=a: tuple(t.shape) == a.shape and str(t.dtype) == f"torch.{a.dtype}"))
                    if c is not None:
                        specs[p] = c[0]
        for p, a in enumerate(args):
            if specs[p] is not None:
                continue
            if isinstance(a, np.ndarray):
                arr = _resample(rng, a, fresh_shape[p]) if p in fresh_shape else a
                lf = self.new_leaf(arr, p in gpos, rng, s.layout)
                leaves.append(lf)
                specs[p] = ("leaf", lf.name)
            elif isinstance(a, Index):
                specs[p] = ("idx", a.array)
            else:
                specs[p] = ("lit", a)
        kwargs = {}
        for kname, v in s.kwargs.items():
            if isinstance(v, np.ndarray):
                lf = self.new_leaf(v, False, rng, "contig")
                leaves.append(lf)
                kwargs[kname] = ("leaf", lf.name)
            elif isinstance(v, Index):
                kwargs[kname] = ("idx", v.array)
            else:
                kwargs[kname] = ("lit", v)
        return Step(f"t{k}", info, specs, kwargs, inplace, leaves)

    # -------------------------------------------------------------------------- running
    def fail(self, cls, msg, ops=None, test=None):
        e = cls(f"{msg}\n\n{render(self.steps, self.upstream_spec)}",
                ops or [s.info.name for s in self.steps if s.info is not None])
        if test:
            e.test = test
        raise e

    upstream_spec = None

    def run(self):
        self.stats["programs"] += 1
        try:
            self._run()
        except Finding:
            raise
        except Exception as e:  # noqa: BLE001
            tb = traceback.extract_tb(e.__traceback__)[-1]
            self.fail(CrashFinding, f"raised {type(e).__name__}: {e} (at {tb.filename.split('/')[-1]}:{tb.lineno})")

    def _run(self):
        n = self.ints(self.min_steps, self.max_steps)
        for k in range(n):
            drawn = self.draw_step(k)
            if drawn is None:
                self.stats["noop"] += 1
                continue
            self.run_step(*drawn)
            if self.diverged:
                self.stats["diverged"] += 1
                return
        self.stats["steps"] += sum(1 for s in self.steps if s.note is None)
        self.check_final()
        self.check_grads()

    def run_step(self, step, s):
        # the inputs as they will be (leaves are made by the runners; make them on a scratch
        # runner first to classify the step)
        tmp_t, tmp_r = Runner(torch), Runner(retrograd)
        tmp_t.env, tmp_r.env = dict(self.t.env), dict(self.r.env)
        for lf in step.leaves:
            tmp_t.add_leaf(lf)
            tmp_r.add_leaf(lf)
        targs = [tmp_t.value(a) for a in step.args] + [tmp_t.value(v) for v in step.kwargs.values()]
        rargs = [tmp_r.value(a) for a in step.args] + [tmp_r.value(v) for v in step.kwargs.values()]
        kinds = input_kinds(targs, rargs, s)
        step.kinds = kinds
        if "nonfinite" in kinds:
            self.nonfinite_seen = True
        name = step.info.name
        if any(k in step.info.skip for k in kinds) or ("nonfinite" in kinds and not step.info.nonfinite):
            # (an entry without the nonfinite kind has inputs whose inf/nan torch leaves undefined, e.g.
            # fractional pooling's random samples cast to integer offsets)
            self.stats["skipped_known"] += 1
            return
        tests = FORWARD_TESTS + (("inplace",) if step.inplace else ())
        for test in tests:
            if known(name, test, kinds, self.suppressed):
                self.stats["skipped_known"] += 1
                return
        if "negstride" in kinds:   # torch's copy of the input is contiguous: views differ by design
            self.layout_differs = True   # (and so do the nodes of everything computed from it)
        elif any(is_tensor(t) and is_tensor(r) and t.is_contiguous() != r.is_contiguous()
                 for t, r in zip(targs, rargs)):
            # an earlier step's result has another layout (torch's LAPACK-backed decompositions return
            # column-major factors, retrograd's are row-major; values are compared, strides are not)
            self.layout_differs = True
        self.steps.append(step)
        # an in-place step overwrites its input: isolate it on the values it is about to read
        solo = isolate(step, tmp_t) if step.inplace else None
        tout, targs, terr = run_guarded(self.t, step)
        rout, rargs, rerr = run_guarded(self.r, step)
        if self.layout_differs and ((terr is None) != (rerr is None) or type(terr) is not type(rerr)):
            # e.g. torch's contiguous() returned the leaf, retrograd a copy; flatten() of it is a
            # view there and a copy here; a strided integer batch_norm input fails in at::mean
            self.diverged = True
            return
        if terr is not None or rerr is not None:
            if terr is None:
                self.fail(ErrorsFinding, f"step {step.name} ({step.label}): retrograd raises "
                          f"{type(rerr).__name__}: {rerr}; torch does not", [name])
            if rerr is None:
                self.fail(ErrorsFinding, f"step {step.name} ({step.label}): torch raises "
                          f"{type(terr).__name__}: {str(terr).splitlines()[0]}; retrograd does not", [name])
            if type(rerr).__name__ != type(terr).__name__:
                self.fail(ErrorsFinding, f"step {step.name} ({step.label}): retrograd raises "
                          f"{type(rerr).__name__}: {rerr}; torch {type(terr).__name__}: "
                          f"{str(terr).splitlines()[0]}", [name])
            step.note = f"raises {type(terr).__name__} in both"
            self.stats["raised_both"] += 1
            self.t.env.pop(step.name, None)
            self.r.env.pop(step.name, None)
            return
        for lf in step.leaves:
            a = self.t.env[lf.name]
            self.pool.append((("leaf", lf.name), a))
        if not self.sign_drift:
            self.sign_drift = _branches_may_differ(targs, rargs)
        step.differentiable = any(is_tensor(o) and o.requires_grad for o in flat(tout))
        self.classify_grad(step, kinds, step.differentiable)
        msg, cls = self.compare_step(step, tout, rout, targs, rargs)
        if msg:
            if cls is ValuesFinding and self.isolated_ok(step, solo):
                self.diverged = True   # accumulated rounding, not this op: stop comparing
                return
            self.fail(cls, f"step {step.name} ({step.label}) kinds {sorted(kinds)}: {msg}", [name],
                      test="inplace" if step.inplace else None)
        outs = flat(tout)
        for j, o in enumerate(outs):
            if is_tensor(o):
                spec = ("ref", step.name, None if len(outs) == 1 and not isinstance(tout, (tuple, list)) else j)
                if o.is_floating_point() and not bool(torch.isfinite(o.data).all()):
                    self.nonfinite_seen = True
                if o.dtype in (torch.float16, torch.bfloat16):
                    self.half_seen = True
                if not step.inplace:
                    self.pool.append((spec, o))

    def classify_grad(self, step, kinds, differentiable):
        """Turn off the program's derivative comparisons the step's known mismatches cover
        (an entry without grad/gradgrad only matters if its result requires grad)."""
        name = step.info.name
        gk = kinds | ({"infgrad"} if self.nonfinite_seen else set())
        why = known(name, "grad", gk, self.suppressed) or step.info.skip.get("grad")
        if not step.info.grad and differentiable:
            why = why or "not differentiable in the table"
        if why and self.grad_known is None:
            self.grad_known = why
            self.stats["why:" + why[:60]] += 1
        why2 = why or known(name, "gradgrad", gk, self.suppressed) or step.info.skip.get("gradgrad")
        if not step.info.gradgrad and differentiable:
            why2 = why2 or "no double backward in the table"
        if why2 and self.gradgrad_known is None:
            self.gradgrad_known = why2

    def tol(self, steps=None, scale=1.0):
        if self.half_seen:   # a float16 intermediate bounds the precision of everything after it
            return HALF_TOL[0] * 5, HALF_TOL[1] * 5
        at, rt = 0.0, 0.0
        for s in steps if steps is not None else self.steps:
            if s.info is None:
                continue
            at = max(at, max(s.info.atol.values()))
            rt = max(rt, max(s.info.rtol.values()))
        return (at or 1e-5) * scale, (rt or 1e-4) * scale

    def step_tol(self, step, outs):
        dts = {str(o.dtype).replace("torch.", "") for o in outs if is_tensor(o)}
        if dts & {"float16", "bfloat16"}:   # torch computes half ops in float32 and rounds once
            return HALF_TOL
        dt = "float32" if "float32" in dts else "float64"
        atol, rtol = step.info.atol.get(dt, 1e-5), step.info.rtol.get(dt, 1e-4)
        return _normwise(step, outs, atol, rtol), rtol

    def compare_step(self, step, tout, rout, targs, rargs):
        tf, rf = flat(tout), flat(rout)
        msg = compare_outputs(rout, tout, *self.step_tol(step, tf))
        if msg:
            return msg, ValuesFinding
        for j, (a, b) in enumerate(zip(rf, tf)):
            if not is_tensor(b):
                continue
            w = f"output[{j}]" if len(tf) > 1 else "output"
            if self.layout_differs:
                continue
            if targs and is_tensor(targs[0]) and (a is rargs[0]) != (b is targs[0]):
                return f"{w} is the input: retrograd {a is rargs[0]}, torch {b is targs[0]}", ViewsFinding
            if is_view(a) != is_view(b):
                return f"{w} is a view: retrograd {is_view(a)}, torch {is_view(b)}", ViewsFinding
            if self.grad_known:   # an earlier step's known derivative mismatch shows downstream too
                continue
            if a.requires_grad != b.requires_grad:
                return f"{w} requires_grad: retrograd {a.requires_grad}, torch {b.requires_grad}", GradFinding
            if "negstride" not in step.kinds and grad_fn_name(a) != grad_fn_name(b):
                if grad_fn_name(b) == "AsStridedBackward0" and is_view(a) and \
                        known("view_written_in_place", "grad", ("*",), self.suppressed):
                    continue
                return f"{w} grad_fn: retrograd {grad_fn_name(a)}, torch {grad_fn_name(b)}", GradFinding
        return None, None

    def isolated_ok(self, step, solo=None):
        """Does the step alone, on torch's input values, agree? (then the difference came from
        rounding earlier in the program, amplified)."""
        solo = solo or isolate(step, self.t)
        if solo is None:
            return False
        t, r = Runner(torch), Runner(retrograd)
        tout, _, terr = run_guarded(t, solo)
        rout, _, rerr = run_guarded(r, solo)
        if terr is not None or rerr is not None:
            return False
        return compare_outputs(rout, tout, *self.step_tol(step, flat(tout))) is None

    # ---------------------------------------------------------------------- after the run
    def live_steps(self):
        return [s for s in self.steps if s.note is None]

    def check_final(self):
        """Every value after the whole program (in-place writes seen through views)."""
        for s in self.live_steps():
            tf, rf = flat(self.t.outputs[s.name]), flat(self.r.outputs[s.name])
            for j, (a, b) in enumerate(zip(rf, tf)):
                if is_tensor(b) and is_tensor(a):
                    at, rt = self.tol()
                    msg = compare_arrays(to_numpy(a), to_numpy(b), _normwise(s, [b], at, rt), rt,
                                         f"{s.name}[{j}] after the program")
                    if msg:
                        self.fail(ViewsFinding, msg + " (an in-place write reached it in one library only)")

    def grad_outputs(self):
        """The results that get an upstream gradient, as (torch's, retrograd's) lists: picked by
        position from torch's distinct results (after a negative-stride input retrograd may hold
        a copy where torch returns the same tensor)."""
        keys, seen = [], set()
        for s in self.live_steps():
            for j, o in enumerate(flat(self.t.outputs[s.name])):
                if is_tensor(o) and o.requires_grad and id(o) not in seen:
                    seen.add(id(o))
                    keys.append((s.name, j))
        return ([flat(self.t.outputs[n])[j] for n, j in keys],
                [flat(self.r.outputs[n])[j] for n, j in keys])

    def check_grads(self):
        # inf/nan reach every step's backward when the program holds them, or when it holds
        # degenerate points (0, integers) where a later derivative is infinite (sqrt'(0)):
        # re-classify every step with infgrad
        if self.nonfinite_seen or any("degenerate" in s.kinds for s in self.live_steps()):
            for s in self.live_steps():
                self.classify_grad(s, s.kinds | {"infgrad"}, s.differentiable)
        if self.grad_known:
            self.stats["grad_skipped_known"] += 1
            return
        if self.sign_drift:
            # values that agree to rounding but not in sign (an inverse's exact zeros as +-3e-18),
            # or that round across a short number (singular values of 3 as 3 +- 4e-16), put a
            # later kink (relu at 0, hardswish at 3) on different branches: derivatives differ there
            self.stats["diverged"] += 1
            return
        touts, routs = self.grad_outputs()
        if not all(is_tensor(o) and o.requires_grad for o in routs):
            self.fail(GradFinding, "a result that requires grad in torch does not in retrograd (after the program)")
        if not touts or not self.t.leaves:
            return
        if len(self.t.leaves) != len(self.r.leaves):
            self.fail(GradFinding, f"leaves requiring grad: retrograd {len(self.r.leaves)}, torch {len(self.t.leaves)}")
        seed = self.ints(0, 2 ** 16)
        nonfinite = self.ints(0, 7) == 7
        shapes = [tuple(o.shape) for o in touts]
        self.upstream_spec = (seed, nonfinite)
        if nonfinite:
            kinds = set().union(*(s.kinds for s in self.live_steps())) | {"infgrad"}
            for s in self.live_steps():
                why = known(s.info.name, "grad", kinds | {"infgrad"}, self.suppressed)
                if why:
                    self.stats["grad_skipped_known"] += 1
                    return
        res = {}
        for lib, runner, outs in ((torch, self.t, touts), (retrograd, self.r, routs)):
            ups = upstream(lib, seed, shapes, [o.dtype for o in outs], nonfinite)
            try:
                res[lib] = (lib.autograd.grad(outs, runner.leaves, ups, retain_graph=True, allow_unused=True), None)
            except Exception as e:  # noqa: BLE001
                res[lib] = (None, e)
        msg = self.compare_results(res, "first derivative")
        if msg:
            if not self.float32_noise(msg):
                self.fail(GradFinding, msg)
            return
        self.stats["grad_checked"] += 1
        if res[torch][1] is not None:
            return
        self.check_gradgrad(touts, routs, seed, nonfinite, shapes)

    def compare_results(self, res, what):
        (tg, te), (rg, re_) = res[torch], res[retrograd]
        if te is not None or re_ is not None:
            if te is None:
                return f"{what}: retrograd raises {type(re_).__name__}: {re_}; torch does not"
            if re_ is None:
                return f"{what}: torch raises {type(te).__name__}: {str(te).splitlines()[0]}; retrograd does not"
            if type(te).__name__ != type(re_).__name__:
                return (f"{what}: retrograd raises {type(re_).__name__}: {re_}; torch {type(te).__name__}: "
                        f"{str(te).splitlines()[0]}")
            return None
        return compare_grads(rg, tg, *self.tol(), what, of="w.r.t. leaf")

    def float32_noise(self, msg):
        """A derivative difference in a float32 program that disappears when its float32
        inputs are float64 is rounding (float32 chains amplify it), not a finding."""
        if "raises" in msg or "dtype" in msg or "requires" in msg:
            return False
        if not any(lf.array.dtype == np.float32 for s in self.live_steps() for lf in s.leaves):
            return False
        try:
            res = replay_grads(self.live_steps(), self.upstream_spec, upcast=True)
        except Exception:  # noqa: BLE001
            return False
        if res is None:
            return False
        ok = compare_grads(res[retrograd], res[torch], *self.tol(), "", of="w.r.t. leaf") is None
        if ok:
            self.stats["float32_noise"] += 1
        return ok

    def check_gradgrad(self, touts, routs, seed, nonfinite, shapes):
        if self.gradgrad_known:
            self.stats["gradgrad_skipped_known"] += 1
            return
        if any(lf.array.dtype != np.float64 for s in self.live_steps() for lf in s.leaves if lf.requires_grad):
            return   # as the generated tests: second derivatives in float64 (float32 chains amplify rounding)
        if nonfinite:
            kinds = set().union(*(s.kinds for s in self.live_steps())) | {"infgrad"}
            for s in self.live_steps():
                if known(s.info.name, "gradgrad", kinds, self.suppressed):
                    self.stats["gradgrad_skipped_known"] += 1
                    return
        res, flags = {}, {}
        for lib, runner, outs in ((torch, self.t, touts), (retrograd, self.r, routs)):
            ups = upstream(lib, seed, shapes, [o.dtype for o in outs], nonfinite, requires_grad=True)
            try:
                gs = lib.autograd.grad(outs, runner.leaves, ups, create_graph=True, allow_unused=True)
                flags[lib] = [None if g is None else bool(g.requires_grad) for g in gs]
                live = [g for g in gs if g is not None and g.requires_grad]
                sec = None
                if live:
                    sec = lib.autograd.grad(direction(lib, seed, live), list(runner.leaves) + ups,
                                            allow_unused=True)
                res[lib] = (sec, None)
            except Exception as e:  # noqa: BLE001
                res[lib] = (None, e)
        if res[torch][1] is None and res[retrograd][1] is None:
            tf, rf = [bool(f) for f in flags[torch]], [bool(f) for f in flags[retrograd]]
            if tf != rf:
                self.fail(GradGradFinding, f"first derivative requires_grad under create_graph: "
                          f"retrograd {flags[retrograd]}, torch {flags[torch]}")
            if res[torch][0] is None:
                return
        msg = self.compare_results(res, "second derivative")
        if msg:
            self.fail(GradGradFinding, msg)
        self.stats["gradgrad_checked"] += 1


def isolate(step, truntime):
    """The step alone, its tensor inputs replaced by fresh contiguous leaves holding torch's
    values (None if an input cannot be made so)."""
    leaves = []
    specs = []
    n = [0]

    def conv(spec):
        if spec[0] not in ("ref", "leaf"):
            return spec
        t = truntime.value(spec)
        if not is_tensor(t):
            return spec
        name = f"x{n[0]}"
        n[0] += 1
        lf_ = [lf for lf in step.leaves if lf.name == spec[1]]
        layout = lf_[0].layout if lf_ else "contig"
        # (an in-place step cannot write into a leaf that requires grad; only values are compared)
        leaves.append(Leaf(name, to_numpy(t).copy(), layout,
                           not step.inplace and (t.requires_grad or t.grad_fn is not None)))
        return ("leaf", name)
    try:
        specs = [conv(a) for a in step.args]
        kwargs = {k: conv(v) for k, v in step.kwargs.items()}
    except Exception:  # noqa: BLE001
        return None
    return Step(step.name, step.info, specs, kwargs, step.inplace, leaves)


def replay_grads(steps, upstream_spec, upcast=False):
    """First derivatives of a recorded program on both libraries ({lib: grads})."""
    out = {}
    for lib in (torch, retrograd):
        r = Runner(lib)
        for s in steps:
            r.run(s, upcast)
        outs, seen = [], set()
        for s in steps:
            for o in flat(r.outputs[s.name]):
                if is_tensor(o) and o.requires_grad and id(o) not in seen:
                    seen.add(id(o))
                    outs.append(o)
        if not outs or not r.leaves:
            return None
        seed, nonfinite = upstream_spec
        ups = upstream(lib, seed, [tuple(o.shape) for o in outs], [o.dtype for o in outs], nonfinite)
        out[lib] = lib.autograd.grad(outs, r.leaves, ups, allow_unused=True)
    return out


# ------------------------------------------------------------------------------ reproducer

def _lit(a):
    if isinstance(a, np.ndarray):
        return f"np.array({a.tolist()!r}, dtype=np.{a.dtype})"
    return repr(a)


def _ref(spec):
    if spec[0] == "ref":
        return spec[1] if spec[2] is None else f"{spec[1]}[{spec[2]}]"
    if spec[0] == "leaf":
        return spec[1]
    if spec[0] == "idx":
        return f"lib.from_numpy({_lit(spec[1])})"
    return _lit(spec[1])


def _call(step):
    args = [_ref(a) for a in step.args]
    kw = [f"{k}={_ref(v)}" for k, v in step.kwargs.items()]
    if step.inplace:
        return f"{args[0]}.{step.info.inplace}({', '.join(args[1:] + kw)})"
    how = getattr(step.info.op, "fuzz_call", None)
    if how and how[0] == "method" and args:
        return f"{args[0]}.{how[1]}({', '.join(args[1:] + kw)})"
    if how and how[0] == "function":
        return f"lib.{how[1]}({', '.join(args + kw)})"
    return f"lookup({step.info.name!r}).op(lib, {', '.join(args + kw)})"


def _src(code):
    try:
        return inspect.getsource(code).strip()
    except (OSError, TypeError):
        return None


def render(steps, upstream_spec=None):
    """A standalone Python reproducer of ``steps`` (run it from the repository root)."""
    body = []
    uses_table = False
    for s in steps:
        for lf in s.leaves:
            body.append(f"    {lf.name}, _l = leaf(lib, {_lit(lf.array)}, {lf.layout!r}, {lf.requires_grad})")
            if lf.requires_grad and lf.array.dtype.kind == "f":
                body.append("    leaves.append(_l)")
        line = f"{s.name} = {_call(s)}"
        uses_table |= "lookup(" in line
        if s.note:
            body.append(f"    # {line}   # {s.note}")
        else:
            body.append(f"    {line}")
            body.append(f"    outs[{s.name!r}] = {s.name}")
            if s.info.op.__name__ == "<lambda>":
                src = _src(s.info.op)
                if src:
                    body.append(f"    # table op {s.info.name!r}: {' '.join(src.split())[:160]}")
    seed, nonfinite = upstream_spec or (0, False)
    head = [
        "# differential fuzzer reproducer (tests/fuzz): run from the repository root",
        "import sys; sys.path[:0] = ['src', 'tests']",
        "import numpy as np, torch, retrograd",
        "from numpy import nan, inf",
    ]
    if uses_table:
        head.append("from opinfo import lookup")
    helpers = _HELPERS
    main = f'''
def program(lib):
    leaves, outs = [], {{}}
{chr(10).join(body) if body else "    pass"}
    return leaves, outs


def show(lib):
    print("==", lib.__name__)
    try:
        leaves, outs = program(lib)
    except Exception as e:
        print("  forward raises", type(e).__name__, e); return
    for k, o in outs.items():
        for j, t in enumerate(o if isinstance(o, (tuple, list)) else [o]):
            if isinstance(t, (torch.Tensor, retrograd.Tensor)):
                print(f"  {{k}}[{{j}}]", t.dtype, tuple(t.shape), "view" if t._base is not None else "",
                      type(t.grad_fn).__name__ if t.grad_fn is not None else "", t.detach().tolist())
            else:
                print(f"  {{k}}[{{j}}]", repr(t))
    ys, seen = [], set()
    for o in outs.values():
        for t in (o if isinstance(o, (tuple, list)) else [o]):
            if isinstance(t, (torch.Tensor, retrograd.Tensor)) and t.requires_grad and id(t) not in seen:
                seen.add(id(t)); ys.append(t)
    if not ys or not leaves:
        return
    try:
        ups = upstream(lib, {seed}, [tuple(y.shape) for y in ys], [y.dtype for y in ys], {nonfinite})
        gs = lib.autograd.grad(ys, leaves, ups, retain_graph=True, allow_unused=True)
        print("  first derivative:", [None if g is None else g.detach().tolist() for g in gs])
    except Exception as e:
        print("  first derivative raises", type(e).__name__, e); return
    try:
        ups = upstream(lib, {seed}, [tuple(y.shape) for y in ys], [y.dtype for y in ys], {nonfinite}, True)
        gs = lib.autograd.grad(ys, leaves, ups, create_graph=True, allow_unused=True)
        live = [g for g in gs if g is not None and g.requires_grad]
        print("  first derivative requires_grad:", [None if g is None else g.requires_grad for g in gs])
        if live:
            sec = lib.autograd.grad(direction(lib, {seed}, live), leaves + ups, allow_unused=True)
            print("  second derivative:", [None if g is None else g.detach().tolist() for g in sec])
    except Exception as e:
        print("  second derivative raises", type(e).__name__, e)


for lib in (torch, retrograd):
    show(lib)
'''
    return "\n".join(head) + "\n\n\n" + "\n\n".join(helpers) + "\n" + main
