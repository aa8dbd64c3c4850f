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
