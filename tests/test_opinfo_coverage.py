"""Every op bound onto Tensor (ops/__init__.py FAMILIES' TENSOR_METHODS and INPLACE) and every
public callable of retrograd.nn.functional ("F.<name>") is covered by an op table entry
(tests/opinfo), or explained in NOT_DIFFERENTIABLE / COVERED_ELSEWHERE with a reason, or still
PENDING (its family's entry file is not written yet). PENDING may only shrink: a name that gets
an entry must leave it, and a new uncovered name fails here."""
import retrograd.nn.functional as F
from retrograd.ops import FAMILIES

from opinfo import ALL_OPS

# name -> why the op table does not compare it with torch
_RANDOM_FILL = ("random fill: its values cannot be compared with torch's generator; tests/test_edges_linalg.py "
                "checks it value-free (shape, dtype, range, version bump, in-place errors, zero gradient)")
NOT_DIFFERENTIABLE = {
}
COVERED_ELSEWHERE = {
    "_to": "retrograd-internal helper behind to()/float()/...; torch has no Tensor._to (to() has entries)",
    "cuda": "needs a CUDA device; device moves are tested in tests/test_devices.py",
    **{n: _RANDOM_FILL for n in ("bernoulli_", "exponential_", "log_normal_", "normal_", "random_", "uniform_")},
}

# Names whose entries the remaining family files (ops_reduce, ops_shape, ops_linalg,
# ops_activation, ops_loss, ops_nn) will add. Only ever remove names from this set.
PENDING = {
    "F.batch_norm",
    "F.celu",
    "F.celu_",
    "F.dropout",
    "F.dropout1d",
    "F.dropout2d",
    "F.dropout3d",
    "F.elu",
    "F.elu_",
    "F.gelu",
    "F.glu",
    "F.group_norm",
    "F.hardshrink",
    "F.hardsigmoid",
    "F.hardswish",
    "F.hardtanh",
    "F.hardtanh_",
    "F.layer_norm",
    "F.leaky_relu",
    "F.leaky_relu_",
    "F.log_softmax",
    "F.logsigmoid",
    "F.mish",
    "F.pixel_shuffle",
    "F.pixel_unshuffle",
    "F.prelu",
    "F.relu",
    "F.relu6",
    "F.relu_",
    "F.rrelu",
    "F.selu",
    "F.sigmoid",
    "F.silu",
    "F.softmax",
    "F.softmin",
    "F.softplus",
    "F.softshrink",
    "F.softsign",
    "F.tanh",
    "F.tanhshrink",
    "F.threshold",
    "F.threshold_",
    "T",
    "__getitem__",
    "__setitem__",
    "adjoint",
    "all",
    "amax",
    "amin",
    "aminmax",
    "any",
    "argmax",
    "argmin",
    "argsort",
    "argwhere",
    "broadcast_to",
    "chunk",
    "count_nonzero",
    "cummax",
    "cummin",
    "cumprod",
    "cumprod_",
    "cumsum",
    "cumsum_",
    "diagonal",
    "diff",
    "dist",
    "dsplit",
    "expand",
    "expand_as",
    "flatten",
    "flip",
    "fliplr",
    "flipud",
    "gather",
    "hardshrink",
    "hsplit",
    "index_add",
    "index_add_",
    "index_copy",
    "index_copy_",
    "index_fill",
    "index_fill_",
    "index_put",
    "index_put_",
    "index_select",
    "kthvalue",
    "log_softmax",
    "logcumsumexp",
    "logsumexp",
    "mH",
    "mT",
    "masked_fill",
    "masked_fill_",
    "masked_scatter",
    "masked_scatter_",
    "masked_select",
    "max",
    "mean",
    "median",
    "min",
    "moveaxis",
    "movedim",
    "msort",
    "nanmean",
    "nansum",
    "narrow",
    "nonzero",
    "norm",
    "permute",
    "prelu",
    "prod",
    "put",
    "put_",
    "ravel",
    "repeat",
    "repeat_interleave",
    "reshape",
    "reshape_as",
    "roll",
    "rot90",
    "scatter",
    "scatter_",
    "scatter_add",
    "scatter_add_",
    "scatter_reduce",
    "scatter_reduce_",
    "select",
    "softmax",
    "sort",
    "split",
    "split_with_sizes",
    "squeeze",
    "squeeze_",
    "std",
    "std_mean",
    "sum",
    "sum_to_size",
    "swapaxes",
    "swapaxes_",
    "swapdims",
    "swapdims_",
    "t",
    "t_",
    "take",
    "take_along_dim",
    "tensor_split",
    "tile",
    "topk",
    "transpose",
    "transpose_",
    "unbind",
    "unflatten",
    "unfold",
    "unsqueeze",
    "unsqueeze_",
    "var",
    "var_mean",
    "view",
    "view_as",
    "vsplit",
}


def bound_names():
    """Every Tensor method bound from the op families, and every public F callable."""
    names = set()
    for fam in FAMILIES:
        names |= set(fam.TENSOR_METHODS) | set(fam.INPLACE)
    names |= {"F." + n for n in dir(F) if not n.startswith("_") and callable(getattr(F, n))}
    return names


def covered_names():
    return set().union(*(info.covered_names() for info in ALL_OPS))


def test_every_op_is_covered():
    names, covered = bound_names(), covered_names()
    explained = set(NOT_DIFFERENTIABLE) | set(COVERED_ELSEWHERE)
    problems = []
    stale = sorted((PENDING | explained) - names)
    if stale:
        problems.append(f"not bound names (remove them from the tables here): {stale}")
    done = sorted(PENDING & covered)
    if done:
        problems.append(f"have op table entries now, remove them from PENDING: {done}")
    twice = sorted(PENDING & explained)
    if twice:
        problems.append(f"both PENDING and explained: {twice}")
    uncovered = sorted(names - covered - explained - PENDING)
    if uncovered:
        problems.append(f"no op table entry (add one in tests/opinfo/ops_*.py, or explain it here): {uncovered}")
    print(f"op table: {len(names & covered)} of {len(names)} names covered, {len(explained)} explained, "
          f"{len(PENDING)} pending: {sorted(PENDING)}")
    assert not problems, "\n".join(problems)


def test_tables_have_reasons():
    for table in (NOT_DIFFERENTIABLE, COVERED_ELSEWHERE):
        for name, why in table.items():
            assert isinstance(why, str) and len(why) > 10, f"{name}: give a real reason"
