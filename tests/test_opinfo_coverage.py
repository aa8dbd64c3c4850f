"""Every op bound onto Tensor (ops/__init__.py FAMILIES' TENSOR_METHODS and INPLACE) and every
public callable of retrograd.nn.functional ("F.<name>") is covered by an op table entry
(tests/opinfo), or explained in NOT_DIFFERENTIABLE / COVERED_ELSEWHERE with a reason: a new op
without an entry fails here."""
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
    "F.gumbel_softmax": "random sample: its values cannot be compared with torch's generator; tests/test_nn_extra.py "
                        "checks its distribution, straight-through gradient and the hard one-hot form",
    "chalf": "complex32 has no NumPy storage: chalf() raises retrograd's documented TypeError (tests/test_dtypes_extra.py)",
    "pin_memory": "needs a CUDA device: tests/device/test_training.py (emulated device)",
    "is_pinned": "pinned memory needs a CUDA device: tests/device/test_training.py (emulated device)",
    **{n: _RANDOM_FILL for n in ("bernoulli_", "exponential_", "log_normal_", "normal_", "random_", "uniform_")},
    **{n: "random draws: tests/test_plumbing.py checks them value-free against torch (dtype, range, grad_fn, "
          "errors) and by their sample statistics" for n in ("cauchy_", "geometric_", "bernoulli", "multinomial")},
    **{n: "integer-only bit shifts (no gradient): tests/test_plumbing.py compares values, promotion and errors "
          "with torch" for n in ("__ilshift__", "__irshift__", "__lshift__", "__rlshift__", "__rrshift__",
                                  "__rshift__", "bitwise_left_shift", "bitwise_left_shift_", "bitwise_right_shift",
                                  "bitwise_right_shift_")},
    **{n: "storage, metadata or memory plumbing, not a differentiable op: tests/test_plumbing.py compares it with "
          "torch" for n in ("apply_", "as_strided_", "const_data_ptr", "dim_order", "get_device", "is_distributed",
                            "is_nonzero", "is_pinned", "is_same_size", "is_set_to", "is_shared", "is_signed", "map2_",
                            "map_", "module_load", "new", "new_empty_strided", "nonzero_static",
                            "pin_memory", "record_stream", "resize", "resize_", "resize_as", "resize_as_", "set_",
                            "share_memory_", "storage", "storage_type", "untyped_storage")},
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
    stale = sorted(explained - names)
    if stale:
        problems.append(f"not bound names (remove them from the tables here): {stale}")
    uncovered = sorted(names - covered - explained)
    if uncovered:
        problems.append(f"no op table entry (add one in tests/opinfo/ops_*.py, or explain it here): {uncovered}")
    print(f"op table: {len(names & covered)} of {len(names)} names covered, {len(explained)} explained")
    assert not problems, "\n".join(problems)


def test_tables_have_reasons():
    for table in (NOT_DIFFERENTIABLE, COVERED_ELSEWHERE):
        for name, why in table.items():
            assert isinstance(why, str) and len(why) > 10, f"{name}: give a real reason"
