"""The op table's machinery: OpInfo entries, Sample inputs, the generic sample kinds and the
comparison of one op on retrograd and on torch.

An entry's ``op(lib, *args, **kwargs)`` is called with ``lib`` the module (retrograd or torch)
and the sample's arguments made into that library's tensors. ``samples(mk)`` yields Sample
objects built from NumPy arrays (see ``Maker``); the framework derives the generic kinds
(float32, noncontig, negstride, nonfinite, ties, infgrad, int/bool and, for elementwise ops,
0d/size1/empty/broadcast) from them, so a new kind reaches every op.

``KNOWN_MISMATCHES`` lists the (op, test kind, sample kind) cases that differ from torch today.
The generated tests turn exactly those into strict expected failures: a listed case that starts
to pass fails the test until it is removed from the table.
"""
import dataclasses
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

import retrograd

try:
    import torch
    torch.set_num_threads(1)
except ImportError:  # parity tests skip; gradchecks still run
    torch = None

FLOAT_KINDS = ("float64", "float32")
# Ops whose float32 samples are also run in bfloat16 (values; float64's tolerance, far below a
# bfloat16 ulp, so bit for bit: PyTorch's CPU kernels compute bfloat16 in float32 and round once,
# and so does retrograd).
BFLOAT16_OPS = frozenset(
    "add sub mul div neg abs exp log sin tanh sigmoid sqrt relu matmul mm bmm sum mean F.silu F.gelu cumsum var std "
    "F.mse_loss F.conv1d F.conv2d baddbmm maximum where clamp pow __add__ __mul__ __truediv__ __matmul__ norm "
    "linalg.vector_norm prod amax max F.scaled_dot_product_attention F.relu".split())
# Not yet, and why (a known-mismatch entry cannot name a dtype): softmax/F.softmax over a non-last
# dim and log_softmax/F.cross_entropy over the last (torch's kernels use a faster, less exact exp
# or round an intermediate: 1 ulp on a few percent of elements); rsqrt (torch rounds the square
# root before the reciprocal); addcmul/addcdiv/lerp (composites in retrograd: several roundings);
# addmm with alpha=0 (torch's bfloat16 kernel multiplies 0 * inf), F.linear (the harness's
# negative strides take retrograd off the fused path torch's contiguous copy takes),
# F.conv_transpose2d with inf/nan inputs, F.layer_norm of constant rows (torch's mean is inexact).


def _np_dtype(name):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)
# Sample kinds excluded from finite-difference checks: kinks and non-finite points have no
# well-defined finite-difference derivative.
GRADCHECK_KINDS = ("basic", "noncontig", "negstride", "0d", "size1", "broadcast")

# (op name, test kind, sample kind) -> what differs from torch 2.13. Fixes shrink this table;
# a listed case that passes fails its test. Sample kind "*": every sample kind of that test fails.
KNOWN_MISMATCHES: Dict[Tuple[str, str, str], str] = {}


def _known(ops, tests, kinds, why):
    """Record ``why`` for every (op, test, kind) named (space-separated lists)."""
    for op in ops.split():
        for test in tests.split():
            for kind in kinds.split():
                KNOWN_MISMATCHES[(op, test, kind)] = f"{op}: {why}"


# test_saved_outputs: an output modified in place, then the backward
_known("cdist", "saved", "basic large",
       "torch's p=2 cdist saves the output of its mm-based EuclideanDist node, whose name its error shows; "
       "retrograd's single CdistBackward0 node is named instead")
_known("linalg.cond(norm)", "saved", "basic singular",
       "torch's cond(p) for matrix norms is a composite whose intermediate inverse (LinalgInvEx) is modified "
       "in place with the result; retrograd's result is not tied to a saved tensor")
_known("linalg.matrix_norm(svd)", "saved", "basic",
       "torch's ord=2 matrix norm is amax of the singular values, and AmaxBackward0 saves that result; "
       "retrograd's single node does not")
_known("torch.vander", "saved", "basic nonfinite ties",
       "torch's vander builds its powers with an in-place cumprod over an as_strided view (its saved "
       "AsStrided output is at another version); retrograd's vander is one node")

# test_saved_inputs: an input modified in place after the forward. Where torch's composite
# saves a copy of the input (a fold, a permute + reshape), its backward runs and retrograd's,
# whose node saved the input itself, refuses: stricter than torch, never a wrong gradient.
_STRICTER = ("retrograd's node saves the input itself and refuses the backward after it changed in place; "
             "torch's composite saved a copy ({})")
_known("matmul __matmul__ linalg.matmul", "saved_inputs", "basic nonfinite",
       _STRICTER.format("matmul folds a batched operand: a transposed reshape, copied"))
_known("__rmatmul__", "saved_inputs", "basic nonfinite", _STRICTER.format("as matmul"))
_known("tensordot", "saved_inputs", "basic nonfinite", _STRICTER.format("a permuted reshape"))
_known("kron", "saved_inputs", "basic nonfinite ties ranks 0d empty degenerate",
       _STRICTER.format("its reshaped operands"))
_known("F.scaled_dot_product_attention", "saved_inputs", "basic nonfinite ties masked_row",
       _STRICTER.format("float64 takes its math composite, which saves the scaled query; its float32 kernel "
                        "saves the inputs and refuses as retrograd does"))

# test_graph: the names of the nodes a backward reaches. Where retrograd records one node for
# what torch's composite records as several (named as torch's output node, so the output's
# grad_fn agrees), the inner nodes differ.
_FUSED = "retrograd records the product as one node, named as torch's output node; torch's composite records {}"
_known("matmul __matmul__ __rmatmul__ torch.matmul linalg.matmul", "graph", "basic",
       _FUSED.format("the folding of its operands too (unsqueeze, view, transpose around mm, mv or bmm)"))
_known("inner tensordot einsum einsum(complex) kron", "graph", "basic",
       _FUSED.format("its permutes, reshapes and the mm/bmm/dot (kron: a broadcast mul) between them"))
_known("linalg.matrix_power matrix_power", "graph", "basic",
       _FUSED.format("each bmm of its repeated squaring, with expand and view nodes"))
_known("linalg.svd", "graph", "basic", _FUSED.format("the factors' product of the entry (as matmul)"))
_known("F.scaled_dot_product_attention F.multi_head_attention_forward", "graph", "basic",
       "retrograd's attention is one node (its fused kernel); torch's float64 math composite records its "
       "bmm, softmax, transpose, expand and view nodes")
_known("cdist", "graph", "basic",
       "torch's mm-based euclidean distance is one node (EuclideanDistBackward0); retrograd's composite records "
       "the square sums, the product and the clamp as separate nodes (see its 'saved' entry)")
_known("linalg.cond linalg.cond(norm)", "graph", "basic",
       "torch's cond composes its norms over the inverse (masked_fill of the infinite case) or the singular values "
       "(reciprocal); retrograd's composite takes another order of the same ops")
_known("F.pad", "graph", "basic",
       "torch's circular padding is a composite of slice copies (CopySlices over SliceBackward0 nodes); retrograd's "
       "is one node")
_known("index_put", "graph", "basic",
       "retrograd's out-of-place index_put is a clone then the in-place write (CloneBackward0 under its "
       "IndexPutBackward0); torch's is one node")
_known("torch.vander", "graph", "basic",
       "torch's vander builds its powers with an in-place cumprod over slices (CopySlices, SliceBackward0); "
       "retrograd's concatenates expanded columns (CatBackward0, ExpandBackward0)")
_known("quantile nanquantile", "graph", "basic",
       "torch's quantile sorts, then interpolates with lerp over unsqueezed, transposed and masked views; retrograd's "
       "composite gathers the two neighbours with a permute and a where")

# Seen only by the differential fuzzer (tests/fuzz, FUZZ_FINDINGS.md): test kinds "fuzz:<kind>"
# are ignored by the generated tests and not strict; remove an entry when its cause is fixed.
_known("pow __pow__", "fuzz:values", "nonfinite", "torch's float16 (-inf)**0.5 is inf (its float32/64: nan)")
_known("F.elu F.elu_ F.elu(inplace) F.celu F.celu_ F.celu(inplace) F.selu F.selu_ F.selu(inplace) "
       "F.hardtanh F.hardtanh_ F.hardtanh(inplace) F.relu6 F.relu6(inplace) F.hardshrink hardshrink F.softshrink "
       "F.hardswish F.hardswish(inplace)", "fuzz:grad fuzz:gradgrad", "nonfinite",
       "torch 2.13's backward at a NaN input depends on SIMD lanes: the vectorized body gives nan (elu family, "
       "hardswish) or 0 (hardtanh, relu6, hard/softshrink), the scalar tail passes the upstream gradient "
       "(elu of 24 NaNs: 16 nan, 8 ones); retrograd follows the scalar rule everywhere")
_known("logit(eps)", "fuzz:grad fuzz:gradgrad", "nonfinite",
       "as the elu family: torch 2.13's logit backward with eps at a NaN input gives 0 in its vectorized body and "
       "nan in the scalar tail (blocks of 16 float64 / 32 float32 elements: 24 float64 NaNs give 16 zeros and 8 "
       "nan, 24 float32 NaNs all nan); retrograd gives nan everywhere, the scalar rule")
_known("logit special.logit", "fuzz:grad fuzz:gradgrad", "negzero",
       "as the elu family: torch 2.13's logit backward (no eps) at x = -0.0 divides by x * (1 - x) = -0.0 in its "
       "vectorized body (-inf for a positive upstream gradient) and gives upstream * inf in the scalar tail (+inf): "
       "16 float64 -0.0 under upstream 2 give -inf, one gives +inf; retrograd gives upstream * inf at both zeros, "
       "the scalar rule")
_known("special.airy_ai", "fuzz:values", "basic noncontig negstride broadcast",
       "torch 2.13 bug, retrograd is right: torch's airy_ai loses accuracy for x in [-4.11, -2.09] (relative error "
       "up to 1.8e-5 at -2.24 against mpmath at 30 digits; SciPy's, which retrograd uses, within 1e-14: "
       "tests/test_special_accuracy.py)")
_known("linalg.solve_ex linalg.inv_ex inverse linalg.inv linalg.tensorinv linalg.tensorsolve", "fuzz:values", "ties",
       "matrices singular up to rounding (repeated rows or columns): whether a pivot comes out exactly 0 (info) "
       "and which of the many solutions is returned depend on the rounding of each LAPACK's elimination order; "
       "torch 2.13 (MKL sgetrf) and elimination in float32 or float64, in LAPACK's or the reference order, agree "
       "on info for 54-62% of random singular float32 2x2-4x4 matrices with repeated entries")
_known("special.bessel_j0 special.bessel_j1 special.bessel_y0 special.bessel_y1", "fuzz:values", "*",
       "torch 2.13 bug, retrograd is right: torch's Bessel kernels lose accuracy for |x| in about [4.2, 9.1] (absolute "
       "error up to 3.8e-7 (j0), 4.7e-7 (j1), 2.1e-7 (y0), 8.7e-7 (y1), worst near x = 5, against mpmath at 30 digits); "
       "SciPy's, which retrograd uses, within 1e-15 there (tests/test_special_accuracy.py); whatever else the inputs hold "
       "(seed 119: y1(5.699) beside a non-finite element, retrograd's -0.0884088504220977 is mpmath's, torch's "
       "-0.0884091009702993)")
_known("inverse linalg.inv linalg.inv_ex linalg.solve linalg.solve_ex linalg.slogdet slogdet logdet linalg.tensorinv "
       "linalg.tensorsolve linalg.cond(norm)", "fuzz:values fuzz:errors", "singular",
       "matrices singular to working precision (a rank-truncating pinverse, repeated columns): whether the LU meets an "
       "exact zero pivot (slogdet's sign 0, inv_ex's info, inv's error, cond's inf for p in 1, inf, 'fro', 'nuc') "
       "or returns values of order 1/eps is the rounding of each "
       "LAPACK's elimination order (torch 2.13's MKL getrf, NumPy's and SciPy's OpenBLAS); see the ties entry above")
_known("linalg.lu_factor linalg.lu_factor_ex linalg.lu linalg.lu(P) lu", "fuzz:values fuzz:grad fuzz:gradgrad",
       "singular",
       "a matrix of deficient rank up to rounding (a 4 x 3 of rank 2, the rows of a cross product with one vector): "
       "past the rank's steps the column left holds rounding noise, and which noise entry each LAPACK's getrf takes "
       "as the pivot (so the rows of L and U, and their gradients) is its own rounding: torch 2.13's MKL and "
       "OpenBLAS swapped different rows on the fuzzer's matrix")
_known("linalg.eigh", "fuzz:values", "singular",
       "a symmetric matrix singular to working precision (a rank-truncating pinverse): the null space's eigenvectors "
       "come out of rounding noise, their signs (and for a repeated zero eigenvalue their basis) each LAPACK's choice")
_known("F.binary_cross_entropy", "fuzz:gradgrad", "negzero",
       "an input probability of -0.0: the mixed second derivative (input, target) is -1/x - 1/(1 - x), infinite at "
       "0 with the sign of the zero in torch 2.13's formula and of +0 in retrograd's, so +-inf swap where a program's "
       "probabilities hold -0.0 (first derivatives agree)")
_known("linalg.eigh(raw)", "fuzz:values", "*",
       "the sign of each eigenvector is the LAPACK implementation's choice: torch 2.13's MKL syevd and the reference "
       "LAPACK's syev/syevd/syevx/syevr (NumPy, SciPy) disagree for 28-32% of random symmetric 3x3 matrices (59-69% at "
       "4x4-5x5, none at 2x2); the fixed samples of the table's eigh(raw) agree, the gauge-invariant linalg.eigh "
       "entry compares what is defined")
_known("F.scaled_dot_product_attention", "fuzz:values fuzz:grad fuzz:gradgrad", "nonfinite",
       "is_causal=True with NaN in a key that the causal mask hides from earlier queries: torch 2.13's CPU kernel "
       "still gives those rows NaN (the masked score takes part in its arithmetic), retrograd leaves masked keys out "
       "(ops/attention.py, not yet decided)")


def _torch_bf16_conv_follows_float32():
    """Whether torch's bfloat16 conv2d puts NaN where its float32 conv2d does for infinities of
    both signs beside a padded, dilated border (both through oneDNN), or not (another kernel
    for bfloat16, which this CPU gets from torch: an AMD EPYC's, for one)."""
    if torch is None:
        return True
    x = torch.ones(1, 3, 5, 5)
    x[0, :, 0, 0] = float("inf")
    x[0, :, 2, 2] = -float("inf")
    w = torch.ones(2, 3, 3, 3)
    f = torch.nn.functional.conv2d
    a = f(x, w, padding="same", dilation=2).isnan()
    b = f(x.bfloat16(), w.bfloat16(), padding="same", dilation=2).isnan()
    return bool((a == b).all())


if not _torch_bf16_conv_follows_float32():
    _known("F.conv2d", "values", "nonfinite",
           "torch's bfloat16 convolution runs another kernel on this CPU than its float32 one: its NaN and "
           "inf positions differ from float32's; retrograd follows the float32 (oneDNN) pattern")
_known("F.batch_norm", "fuzz:values", "nonfinite",
       "NaN/inf batch statistics: torch's kernel gives inf for some elements of a channel whose mean is NaN; "
       "retrograd gives NaN throughout, as the formula does")
_known("F.group_norm", "fuzz:values", "nonfinite",
       "an infinite weight over a group whose mean is 0 in exact arithmetic: torch's kernel forms each channel's "
       "shift as -(rstd * weight) * mean + bias with the mean of its lane-wise Welford update, which leaves "
       "rounding noise (-1.04e-17 for a group [-1, 0.5, 0.5, -0.0] in float64, measured), so the shift is +-inf and "
       "positive elements give inf; retrograd's mean is 0 there, the shift -inf * 0 + bias is NaN for the "
       "whole channel (finite weights: both within rounding)")
_known("torch.det det linalg.det", "fuzz:grad fuzz:gradgrad", "degenerate ties",
       "torch 2.13 bug, retrograd is right: its gradient at an exactly singular matrix is 0, not the adjugate "
       "(as the det/linalg.det entries' 'singular' samples; in random programs such matrices come from repeated "
       "rows or columns, i.e. ties)")
_known("addr torch.addr", "fuzz:grad fuzz:gradgrad", "mixed_dtype",
       "torch 2.13's addr backward raises 'addmv input tensors must have the same dtype' whenever a vector's dtype "
       "differs from the gradient's (the forward promotes, the backward's mv does not); retrograd's backward "
       "promotes as the forward does (tests/test_edges_linalg.py, README's known differences)")
_known("kron", "fuzz:errors", "noncontig",
       "torch 2.13 bug, retrograd is right: for operands of mixed layouts (a transposed one with a contiguous or "
       "strided one) torch's kron raises 'view size is not compatible with input tensor's size and stride'; "
       "retrograd returns the product of the values (tests/test_edges_linalg.py compares with torch's kron of the "
       "contiguous copies)")
_known("inner", "fuzz:errors", "noncontig",
       "torch 2.13 depends on the layout: inner of two 1-d bool tensors raises '\"dot\" not implemented for "
       "'Bool'' when both are contiguous and returns a bool (a strided path) when one is not; retrograd raises "
       "for every layout, as dot does")
_known("take_along_dim", "fuzz:errors", "noncontig",
       "torch 2.13 bug, retrograd is right: without dim, torch's take_along_dim flattens a non-contiguous input "
       "with view(-1) and raises 'view size is not compatible'; retrograd gathers from the flattened values "
       "(tests/test_edges_reduce.py)")
_known("F.nll_loss", "fuzz:grad fuzz:gradgrad", "noncontig",
       "torch 2.13 bug, retrograd is right: nll_loss2d's backward raises 'grad_input must be contiguous' for a "
       "permuted (e.g. channels-last) 4-d input; retrograd's gradient equals torch's for the contiguous copy "
       "(tests/test_edges_loss.py)")
_known("i0 torch.i0 special.i0 special.i1 special.modified_bessel_i0 special.modified_bessel_i1",
       "fuzz:values fuzz:grad fuzz:gradgrad", "large",
       "torch 2.13 bug, retrograd is right: torch's float32 I0/I1 overflow to inf for x in about (88.7, 91.9), "
       "where the value (up to 3.4e38) is finite in float32: exp(x) overflows before the division by sqrt(x); "
       "SciPy's, which retrograd uses, stay finite (tests/test_special_accuracy.py)")
_known("F.batch_norm", "fuzz:grad fuzz:gradgrad", "noncontig_param",
       "torch 2.13 bug, retrograd is right: for an input of one spatial position ((N, C) or (N, C, 1)), torch's "
       "CPU batch_norm backward reads a non-contiguous weight as if contiguous (weight = wide[::2]: channel c "
       "scales by wide[c]) and its input gradient is wrong; retrograd's equals torch's for the contiguous copy "
       "(tests/test_edges_nn.py)")
_known("F.group_norm", "fuzz:gradgrad", "nonfinite",
       "inf/nan weights: torch's double backward (a composite of the group statistics) places nan where "
       "differentiating its first-derivative kernel formula gives +-inf; first derivatives agree")
_known("F.instance_norm", "fuzz:gradgrad", "nonfinite",
       "+-inf weights: the second derivative w.r.t. the input of such a channel is +-inf in torch (its batch-norm "
       "double-backward composite) and nan in retrograd (ops/normalization.py, not yet traced); first derivatives agree")
_known("F.layer_norm", "fuzz:grad fuzz:gradgrad", "infgrad",
       "inf upstream gradient at a constant (zero-variance) row: torch's kernel normalizes as fma(rstd, x, "
       "-rstd*mean), whose rounding residual (e.g. -4.4e-16 for a row of 1.5) makes the weight gradient +-inf; "
       "retrograd's x - mean is exactly 0 when the mean is exact, so inf * 0 gives nan (tests/test_edges_activation.py)")
_known("sgn", "fuzz:grad fuzz:gradgrad", "nonfinite infgrad",
       "torch's sgn gradient of a real input is an efficient ZeroTensor that the elementwise backward formulas "
       "below it short-circuit (0 * nan stays 0) while matrix kernels such as mv materialize it (0 * nan = nan); "
       "retrograd's gradient is a plain zero tensor, so nan/inf saved below sgn give nan as IEEE arithmetic does "
       "(tests/test_edges_elementwise.py)")
_known("abs absolute __abs__", "fuzz:gradgrad", "nonfinite infgrad",
       "as sgn: torch's abs backward is grad * self.sgn(), whose derivative w.r.t. self is sgn's efficient "
       "ZeroTensor; an elementwise double backward below it (polygamma(2, -inf): 0 * polygamma(3, -inf)) keeps it 0 "
       "where retrograd's plain zeros give 0 * inf = nan")
_known("unique", "fuzz:values", "nonfinite",
       "torch 2.13 undefined: unique(dim=...) sorts the slices with a lexicographic comparator under which NaN "
       "ties with everything (not a strict weak order), so std::sort leaves an order that depends on the input's "
       "arrangement (unique(tensor([nan, 1, nan, -inf, .5]), dim=0) comes back unsorted); retrograd sorts NaN last "
       "as the flattened unique does (counts and inverse agree with its own order)")


# ----------------------------------------------------------------------------------- samples

class Index:
    """An integer/bool array argument that is never differentiated nor transformed."""
    def __init__(self, array):
        self.array = np.asarray(array)

    def __repr__(self):
        return f"Index({self.array.shape}, {self.array.dtype})"


class Maker:
    """Makes the NumPy inputs of samples (deterministic per op)."""
    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def rand(self, *shape, low=-2.0, high=2.0):
        """Uniform float64 values in [low, high)."""
        return self.rng.uniform(low, high, shape)

    def pos(self, *shape, low=0.2, high=2.0):
        """Positive float64 values."""
        return self.rng.uniform(low, high, shape)

    def arr(self, values, dtype=np.float64):
        """An array of given values."""
        return np.array(values, dtype=dtype)

    def index(self, values, dtype=np.int64):
        """An index (or mask) argument: passed as a tensor, never made to require grad."""
        return Index(np.array(values, dtype=dtype))

    def mask(self, *shape):
        """A random boolean mask argument."""
        return Index(self.rng.random(shape) < 0.5)


class Sample:
    """One call of an op: array args become tensors (float ones require grad unless ``grad``
    lists the indices that do), other args pass through."""
    def __init__(self, *args, kind="basic", grad=None, **kwargs):
        self.args = args
        self.kwargs = kwargs
        self.kind = kind
        self.grad = grad
        self.layout = "contig"
        self.upstream = None   # None, or "nonfinite": plant inf/nan in the upstream gradient

    def replace(self, args=None, kind=None, layout=None, upstream=None):
        s = Sample(*(self.args if args is None else args), kind=kind or self.kind, grad=self.grad,
                   **self.kwargs)
        s.layout = layout or self.layout
        s.upstream = upstream if upstream is not None else self.upstream
        return s

    def float_positions(self):
        return [i for i, a in enumerate(self.args)
                if isinstance(a, np.ndarray) and a.dtype.kind in "fV"]

    def grad_positions(self):
        fp = self.float_positions()
        return fp if self.grad is None else [i for i in self.grad if i in fp]

    @property
    def dtype(self):
        fp = [a for a in self.args if isinstance(a, np.ndarray)]
        return str(fp[0].dtype) if fp else "none"

    def describe(self):
        def d(a):
            if isinstance(a, np.ndarray):
                return f"{a.dtype}{list(a.shape)}"
            if isinstance(a, Index):
                return f"index:{a.array.dtype}{list(a.array.shape)}"
            return repr(a)
        parts = [d(a) for a in self.args] + [f"{k}={d(v)}" for k, v in self.kwargs.items()]
        extra = "" if self.layout == "contig" else f" layout={self.layout}"
        extra += "" if self.upstream is None else f" upstream={self.upstream}"
        return f"[{self.kind}] ({', '.join(parts)}){extra}"


@dataclasses.dataclass
class OpInfo:
    """One op of the table (see tests/opinfo/__init__.py for how to write one). ``skip`` maps a
    test kind ("gradcheck") or a sample kind ("nonfinite") to the reason it does not apply."""
    name: str
    op: Callable
    samples: Callable
    dtypes: Tuple[str, ...] = FLOAT_KINDS
    elementwise: bool = False
    view: bool = False
    grad: bool = True
    gradgrad: bool = True
    inplace: Optional[str] = None
    skip: Dict[str, str] = dataclasses.field(default_factory=dict)
    atol: Dict[str, float] = dataclasses.field(default_factory=lambda: {"float64": 1e-7, "float32": 1e-5})
    rtol: Dict[str, float] = dataclasses.field(default_factory=lambda: {"float64": 1e-6, "float32": 1e-4})
    int_dtypes: bool = True          # derive int64/bool variants (values and error parity)
    nonfinite: bool = True           # derive the nonfinite kind
    covers: Tuple[str, ...] = ()     # further Tensor method / F names this entry exercises
    gradcheck_kinds: Tuple[str, ...] = GRADCHECK_KINDS
    fuzz: Any = None                 # how the fuzzer (tests/fuzz) feeds the op: see FuzzSig
    # accurate relative to the output's largest entry, not entry by entry (matrix functions:
    # exp of a large-norm matrix cancels in its small entries, in every library)
    normwise: bool = False

    def covered_names(self):
        names = {self.name, *self.covers}
        if self.inplace:
            names.add(self.inplace)
        return names


@dataclasses.dataclass(frozen=True)
class FuzzSig:
    """How the differential fuzzer (tests/fuzz) wires an op into random programs. An entry's
    ``fuzz=None`` derives it: ``chain`` = every float array argument of a sample may be replaced
    by an earlier result of the same shape and dtype; ``any_shape`` = the entry's ``elementwise``
    (args[0] may be an earlier result of any shape, the other array args are redrawn to shapes
    that broadcast with it). ``fuzz=False`` keeps the op out of random programs (say why in
    ``skip["fuzz"]``)."""
    chain: Optional[Tuple[int, ...]] = None
    any_shape: Optional[bool] = None


def method(name):
    """op calling Tensor.<name> on the first argument."""
    def op(lib, x, *args, **kwargs):
        return getattr(x, name)(*args, **kwargs)
    op.__name__ = name
    op.fuzz_call = ("method", name)   # lets the fuzzer's reproducers print x.name(...)
    return op


def function(name):
    """op calling lib.<name> (retrograd.<name> / torch.<name>)."""
    def op(lib, *args, **kwargs):
        return getattr(lib, name)(*args, **kwargs)
    op.__name__ = name
    op.fuzz_call = ("function", name)
    return op


# ------------------------------------------------------------------------ generic sample kinds

def _resample(rng, a, shape):
    return rng.choice(a.ravel(), size=shape) if a.size else np.zeros(shape, a.dtype)


def _with_arrays(s, fn, kind, **kw):
    args = tuple(fn(i, a) if i in s.float_positions() else a for i, a in enumerate(s.args))
    return s.replace(args=args, kind=kind, **kw)


def _elementwise_variants(s, rng):
    fp = s.float_positions()
    if not fp:
        return
    for kind, shapes in (("0d", [()] * len(fp)), ("size1", [(1,)] * len(fp)),
                         ("empty", [(0, 3)] * len(fp)),
                         ("broadcast", [(2, 3)] + [(3,) if k % 2 else (2, 1) for k in range(1, len(fp))])):
        if kind == "broadcast" and len(fp) < 2:
            shapes = [(1, 3)]
        sh = dict(zip(fp, shapes))
        yield _with_arrays(s, lambda i, a: _resample(rng, a, sh[i]), kind)


def _plant_nonfinite(i, a):
    a = np.array(a, copy=True)
    flat = a.reshape(-1)
    vals = np.roll(np.array([np.nan, np.inf, -np.inf]), i)
    for k in range(min(3, flat.size)):
        flat[k] = vals[k]
    return a


def _ties(rng, s):
    fp = s.float_positions()
    first = s.args[fp[0]]
    if first.size < 2:
        return None
    pool = first.ravel()[:2]
    base = rng.choice(pool, size=first.shape)
    return _with_arrays(s, lambda i, a: base.copy() if a.shape == first.shape else _resample(rng, pool, a.shape),
                        "ties")


def expand_samples(info, seed=0):
    """Every sample of ``info``: its own samples plus the generic kinds derived from them."""
    mk = Maker(seed)
    rng = np.random.default_rng(seed + 1)
    own = list(info.samples(mk))
    out = []
    for s in own:
        out.append(s)
        fp = s.float_positions()
        if s.kind != "basic" or not fp:
            continue
        if info.elementwise and s is own[0]:
            out.extend(_elementwise_variants(s, rng))
        if any(s.args[i].ndim >= 1 and s.args[i].size for i in fp):
            out.append(s.replace(kind="noncontig", layout="noncontig"))
            out.append(s.replace(kind="negstride", layout="negstride"))
        if info.nonfinite and all(s.args[i].size for i in fp):
            out.append(_with_arrays(s, _plant_nonfinite, "nonfinite"))
        if s is own[0]:
            t = _ties(rng, s)
            if t is not None:
                out.append(t)
            out.append(s.replace(kind="infgrad", upstream="nonfinite"))
    final = []
    dtypes = info.dtypes
    if info.name in BFLOAT16_OPS and "float32" in dtypes and _has_ml_dtypes():
        dtypes = dtypes + ("bfloat16",)
    for s in out:
        for dt in dtypes:
            final.append(_with_arrays(s, lambda i, a: a.astype(_np_dtype(dt)), s.kind) if dt != "float64" else s)
    if info.int_dtypes:
        for s in own:
            if s.kind == "basic" and s.float_positions():
                final.append(_with_arrays(s, lambda i, a: np.round(a * 2).astype(np.int64), "int64"))
                final.append(_with_arrays(s, lambda i, a: a > 0, "bool"))
    return [s for s in final if not _skipped(info, s.kind)]


def _has_ml_dtypes():
    try:
        import ml_dtypes  # noqa: F401
        return True
    except ImportError:
        return False


def _skipped(info, kind):
    return kind in info.skip


# ------------------------------------------------------------------------------ building

def build(lib, s, requires_grad):
    """(args, kwargs, leaves): the sample's args as ``lib`` tensors; leaves are the tensors the
    gradient is taken w.r.t. (a non-contiguous argument is a view of its leaf)."""
    frm = _torch_from_numpy if lib is torch else retrograd.from_numpy
    gpos = set(s.grad_positions()) if requires_grad else set()

    def conv(i, a):
        if isinstance(a, Index):
            return frm(np.array(a.array, copy=True)), None
        if not isinstance(a, np.ndarray):
            return a, None
        rg = i in gpos
        if s.layout == "noncontig" and a.ndim >= 1 and a.size:
            if a.ndim >= 2:
                leaf = frm(np.array(a.T, order="C", copy=True))
                leaf.requires_grad_(rg)
                return leaf.permute(*reversed(range(a.ndim))), leaf
            wide = np.zeros(2 * a.shape[0], a.dtype)
            wide[::2] = a
            leaf = frm(wide).requires_grad_(rg)
            return leaf[::2], leaf
        if s.layout == "negstride" and lib is not torch and a.ndim >= 1 and a.size:
            # torch cannot hold negative strides; retrograd's NumPy storage can
            rev = np.array(a[::-1], copy=True)
            leaf = frm(rev[::-1]).requires_grad_(rg)
            return leaf, leaf
        leaf = frm(np.array(a, copy=True)).requires_grad_(rg)
        return leaf, leaf

    conv_args = [conv(i, a) for i, a in enumerate(s.args)]
    conv_kw = {k: conv(-1, v)[0] for k, v in s.kwargs.items()}
    leaves = [conv_args[i][1] for i in sorted(gpos)]
    return [a for a, _ in conv_args], conv_kw, leaves


def _torch_from_numpy(a):
    if a.dtype.kind == "V":  # ml_dtypes' bfloat16: torch takes its bits
        return torch.from_numpy((a if a.flags.c_contiguous else a.copy()).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def call(info, lib, s, requires_grad=False):
    """(result, leaves, args) or raises what the op raises."""
    args, kwargs, leaves = build(lib, s, requires_grad)
    return info.op(lib, *args, **kwargs), leaves, args


def to_numpy(t):
    if torch is not None and isinstance(t, torch.Tensor):
        if t._is_zerotensor():  # torch's efficient zeros (e.g. sgn's gradient)
            return np.zeros(tuple(t.shape), dtype=torch.empty(0, dtype=t.dtype).numpy().dtype)
        if t.dtype == torch.bfloat16:  # torch's numpy() refuses bfloat16; float32 holds it exactly
            t = t.float()
        return t.detach().cpu().resolve_conj().resolve_neg().numpy()
    return np.asarray(t.detach()._data)


def flat(o):
    if isinstance(o, (tuple, list)):
        out = []
        for x in o:
            out.extend(flat(x))
        return out
    return [o]


def is_tensor(x):
    return isinstance(x, retrograd.Tensor) or (torch is not None and isinstance(x, torch.Tensor))


def compare_arrays(r, t, atol, rtol, what):
    """None if equal within tolerance with nan/inf in the same places, else a description."""
    r, t = np.asarray(r), np.asarray(t)
    if r.shape != t.shape:
        return f"{what}: shape {r.shape} != torch {t.shape}"
    if r.dtype.kind == "b" or t.dtype.kind in "biu":
        if not np.array_equal(r, t):
            bad = np.argwhere(r != t)[:3].tolist()
            return f"{what}: values differ at {bad}: retrograd {r[tuple(np.array(bad).T)] if bad else r} torch {t[tuple(np.array(bad).T)] if bad else t}"
        return None
    if r.dtype.kind == "c" or t.dtype.kind == "c":
        return (compare_arrays(np.real(r), np.real(t), atol, rtol, what + " (real)")
                or compare_arrays(np.imag(r), np.imag(t), atol, rtol, what + " (imag)"))
    r64, t64 = r.astype(np.float64), t.astype(np.float64)
    rn, tn = np.isnan(r64), np.isnan(t64)
    if not np.array_equal(rn, tn):
        i = np.argwhere(rn != tn)[0]
        return f"{what}: nan positions differ, e.g. at {i.tolist()}: retrograd {r64[tuple(i)]} torch {t64[tuple(i)]}"
    ri, ti = np.isinf(r64), np.isinf(t64)
    if not np.array_equal(ri, ti) or not np.array_equal(r64[ri], t64[ti]):
        i = np.argwhere((ri != ti) | (ri & (r64 != t64)))[0]
        return f"{what}: inf positions differ, e.g. at {i.tolist()}: retrograd {r64[tuple(i)]} torch {t64[tuple(i)]}"
    fin = ~(rn | ri)
    err = np.abs(r64[fin] - t64[fin])
    bad = err > atol + rtol * np.abs(t64[fin])
    if bad.any():
        k = int(np.argmax(err - (atol + rtol * np.abs(t64[fin]))))
        return (f"{what}: max abs diff {err.max():.3g} (worst: retrograd {r64[fin][k]!r} torch "
                f"{t64[fin][k]!r}; {int(bad.sum())} of {bad.size} elements)")
    return None


def compare_grads(rgs, tgs, atol, rtol, what, of="of input"):
    """None when the gradients agree (None and all-zero count as the same), else a description
    naming the ``what`` (``of`` says how an argument is named: "of input 0", "w.r.t. leaf 0")."""
    for k, (rg, tg) in enumerate(zip(rgs, tgs)):
        if tg is None and rg is None:
            continue
        where = f"{what} {of} {k}"
        tn = None if tg is None else to_numpy(tg)
        rn = None if rg is None else to_numpy(rg)
        if tn is None:
            if np.any(rn):
                return f"{where}: torch gives none, retrograd nonzero {rn.ravel()[:4]}"
            continue
        if rn is None:
            if np.any(tn):
                return f"{where}: retrograd gives none, torch {tn.ravel()[:4]}"
            continue
        if str(rg.dtype) != str(tg.dtype):
            return f"{where}: dtype {rg.dtype} != torch {tg.dtype}"
        msg = compare_arrays(rn, tn, atol, rtol, where)
        if msg:
            return msg
    return None


def compare_outputs(r, t, atol, rtol, what="output"):
    rf, tf = flat(r), flat(t)
    if len(rf) != len(tf):
        return f"{what}: {len(rf)} outputs != torch {len(tf)}"
    for k, (a, b) in enumerate(zip(rf, tf)):
        w = what if len(rf) == 1 else f"{what}[{k}]"
        if is_tensor(b) != is_tensor(a):
            return f"{w}: type {type(a).__name__} != torch {type(b).__name__}"
        if not is_tensor(b):
            if isinstance(b, (bool, int, float)) and isinstance(a, (bool, int, float, np.generic)):
                if type(a) is not type(b):
                    return f"{w}: python type {type(a).__name__} != torch {type(b).__name__}"
                msg = compare_arrays(np.asarray(a), np.asarray(b), atol, rtol, w)
                if msg:
                    return msg
            elif a != b:
                return f"{w}: {a!r} != torch {b!r}"
            continue
        if tuple(a.shape) != tuple(b.shape):
            return f"{w}: shape {tuple(a.shape)} != torch {tuple(b.shape)}"
        if str(a.dtype) != str(b.dtype):
            return f"{w}: dtype {a.dtype} != torch {b.dtype}"
        msg = compare_arrays(to_numpy(a), to_numpy(b), atol, rtol, w)
        if msg:
            return msg
    return None


def tol(info, s):
    dt = s.dtype if s.dtype in FLOAT_KINDS else "float64"
    return info.atol.get(dt, 1e-7), info.rtol.get(dt, 1e-6)


def upstream_arrays(s, shapes, rng):
    ups = [rng.standard_normal(sh) for sh in shapes]
    if s.upstream == "nonfinite":
        for u in ups:
            f = u.reshape(-1)
            for k, v in zip(range(min(3, f.size)), (np.inf, -np.inf, np.nan)):
                f[k] = v
    return ups
