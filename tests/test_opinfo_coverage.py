"""Every op bound onto Tensor (ops/__init__.py FAMILIES' TENSOR_METHODS and INPLACE) and every
public callable of retrograd.nn.functional ("F.<name>") is covered by an op table entry
(tests/opinfo), or explained in NOT_DIFFERENTIABLE / COVERED_ELSEWHERE with a reason, or still
PENDING (its family's entry file is not written yet). PENDING may only shrink: a name that gets
an entry must leave it, and a new uncovered name fails here."""
import retrograd.nn.functional as F
from retrograd.ops import FAMILIES

from opinfo import ALL_OPS

# name -> why the op table does not compare it with torch
NOT_DIFFERENTIABLE = {
}
COVERED_ELSEWHERE = {
    "_to": "retrograd-internal helper behind to()/float()/...; torch has no Tensor._to (to() has entries)",
    "cuda": "needs a CUDA device; device moves are tested in tests/test_devices.py",
}

# Names whose entries the remaining family files (ops_reduce, ops_shape, ops_linalg,
# ops_activation, ops_loss, ops_nn) will add. Only ever remove names from this set.
PENDING = {
    "F.batch_norm", "F.binary_cross_entropy", "F.binary_cross_entropy_with_logits", "F.celu", "F.celu_",
    "F.cosine_embedding_loss", "F.cosine_similarity", "F.cross_entropy", "F.dropout", "F.dropout1d", "F.dropout2d",
    "F.dropout3d", "F.elu", "F.elu_", "F.gelu", "F.glu", "F.group_norm", "F.hardshrink", "F.hardsigmoid",
    "F.hardswish", "F.hardtanh", "F.hardtanh_", "F.huber_loss", "F.kl_div", "F.l1_loss", "F.layer_norm",
    "F.leaky_relu", "F.leaky_relu_", "F.log_softmax", "F.logsigmoid", "F.margin_ranking_loss", "F.mish",
    "F.mse_loss", "F.nll_loss", "F.normalize", "F.one_hot", "F.pairwise_distance", "F.pixel_shuffle",
    "F.pixel_unshuffle", "F.prelu", "F.relu", "F.relu6", "F.relu_", "F.rrelu", "F.selu", "F.sigmoid", "F.silu",
    "F.smooth_l1_loss", "F.softmax", "F.softmin", "F.softplus", "F.softshrink", "F.softsign", "F.tanh",
    "F.tanhshrink", "F.threshold", "F.threshold_", "F.triplet_margin_loss", "T", "__getitem__", "__matmul__",
    "__rmatmul__", "__setitem__", "addbmm", "addbmm_", "addmm", "addmm_", "addmv", "addmv_", "addr", "addr_",
    "adjoint", "all", "amax", "amin", "aminmax", "any", "argmax", "argmin", "argsort", "argwhere", "baddbmm",
    "baddbmm_", "bernoulli_", "bmm", "broadcast_to", "chunk", "count_nonzero", "cross", "cummax", "cummin",
    "cumprod", "cumprod_", "cumsum", "cumsum_", "det", "diag", "diag_embed", "diagonal", "diff", "dist", "dot",
    "dsplit", "expand", "expand_as", "exponential_", "fill_", "flatten", "flip", "fliplr", "flipud", "gather", "ger",
    "hardshrink", "hsplit", "index_add", "index_add_", "index_copy", "index_copy_", "index_fill", "index_fill_",
    "index_put", "index_put_", "index_select", "inner", "inverse", "kron", "kthvalue", "log_normal_", "log_softmax",
    "logcumsumexp", "logsumexp", "mH", "mT", "masked_fill", "masked_fill_", "masked_scatter", "masked_scatter_",
    "masked_select", "matmul", "max", "mean", "median", "min", "mm", "moveaxis", "movedim", "msort", "mv", "nanmean",
    "nansum", "narrow", "nonzero", "norm", "normal_", "outer", "permute", "prelu", "prod", "put", "put_", "random_",
    "ravel", "repeat", "repeat_interleave", "reshape", "reshape_as", "roll", "rot90", "scatter", "scatter_",
    "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_", "select", "softmax", "sort", "split",
    "split_with_sizes", "squeeze", "squeeze_", "std", "std_mean", "sum", "sum_to_size", "swapaxes", "swapaxes_",
    "swapdims", "swapdims_", "t", "t_", "take", "take_along_dim", "tensor_split", "tile", "topk", "trace",
    "transpose", "transpose_", "tril", "tril_", "triu", "triu_", "unbind", "unflatten", "unfold", "uniform_",
    "unsqueeze", "unsqueeze_", "var", "var_mean", "vdot", "view", "view_as", "vsplit", "zero_",
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
