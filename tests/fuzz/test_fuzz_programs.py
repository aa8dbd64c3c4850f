"""Differential fuzzer: random programs of 3-10 ops from the op table (tests/opinfo), the same
NumPy inputs into torch and retrograd; values, dtypes, shapes, views, exceptions, first and
second derivatives compared (see program.py). Failures are shrunk by hypothesis and print a
standalone reproducer.

CI: a fixed number of programs per shard (RETROGRAD_FUZZ_PROGRAMS, 300) in fixed-seed rounds and no
example database, so every run draws the same programs and a green run stays green::

    python3 -m pytest -q -p no:cacheprovider tests/fuzz            # or -n 2: the shards split

Longer / other seeds / every finding of a run instead of the first::

    RETROGRAD_FUZZ_SECONDS=1200 RETROGRAD_FUZZ_SEED=7 \\
    RETROGRAD_FUZZ_COLLECT=/tmp/findings.md python3 -m pytest -q -p no:cacheprovider tests/fuzz

Hypothesis has no time budget of its own: with RETROGRAD_FUZZ_SECONDS each shard runs hypothesis in
short rounds (a fixed seed per round, sized from the measured programs per second) until its share
of the budget is spent; a round that finds a failure shrinks it before the test fails (or, with
RETROGRAD_FUZZ_COLLECT, writes it to that file, leaves that op/test out of later rounds and goes
on). The too_slow/filter/data-size health checks are suppressed on purpose: programs are slow
by nature (two libraries, three derivative passes) and the round size already bounds the run.
"""
import collections
import os
import time

import pytest

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, seed, settings, strategies as st
from hypothesis.errors import Flaky

from opinfo.core import torch
from .program import Finding, Fuzzer, FUZZ_OPS

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning",
                                        "ignore::numpy.exceptions.ComplexWarning")

BUDGET = float(os.environ.get("RETROGRAD_FUZZ_SECONDS", "0"))   # 0: the fixed count below
PROGRAMS = int(os.environ.get("RETROGRAD_FUZZ_PROGRAMS", "300"))  # per shard, without a time budget
FIXED_ROUND = 30
SEED = int(os.environ.get("RETROGRAD_FUZZ_SEED", "0"))
COLLECT = os.environ.get("RETROGRAD_FUZZ_COLLECT")
SHARDS = 2            # under pytest-xdist (-n 2) the shards run side by side
ROUND_SECONDS = 5.0


def _round(n_examples, round_seed, stats, suppressed):
    @settings(max_examples=n_examples, database=None, deadline=None, derandomize=False,
              phases=(Phase.generate, Phase.shrink), report_multiple_bugs=False, print_blob=False,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                     HealthCheck.data_too_large, HealthCheck.large_base_example])
    @seed(round_seed)
    @given(st.data())
    def program(data):
        Fuzzer(data, stats, suppressed).run()
    program()


def _record(path, finding, shard, round_seed):
    with open(path, "a") as f:
        f.write(f"\n### {type(finding).__name__}: {', '.join(dict.fromkeys(getattr(finding, 'ops', ())))} "
                f"(shard {shard}, round seed {round_seed})\n\n```\n{finding}\n```\n")


@pytest.mark.parametrize("shard", range(SHARDS))
def test_fuzz_programs(shard, record_property):
    """Random programs agree with torch (values, views, exceptions, 1st and 2nd derivatives)."""
    if torch is None:
        pytest.skip("PyTorch (torch==2.13.0) is not installed")
    assert FUZZ_OPS, "the op table is empty"
    start = time.monotonic()
    deadline = start + BUDGET / SHARDS
    stats = collections.Counter()
    suppressed = {}
    findings = []
    n_examples, r = (5, 0) if BUDGET else (FIXED_ROUND, 0)
    while (time.monotonic() < deadline) if BUDGET else (r * FIXED_ROUND < PROGRAMS):
        round_seed = (SEED * 1_000_003 + shard) * 100_003 + r
        t0, p0 = time.monotonic(), stats["programs"]
        try:
            _round(n_examples, round_seed, stats, suppressed)
        except (Finding, Flaky) as e:
            if not COLLECT:
                raise
            findings.append(e)
            _record(COLLECT, e, shard, round_seed)
            test = getattr(e, "test", "values")
            for op in getattr(e, "ops", ()):
                suppressed[(op, test, "*")] = f"found earlier in this run ({type(e).__name__})"
                if test == "grad":
                    suppressed[(op, "gradgrad", "*")] = suppressed[(op, test, "*")]
        r += 1
        if not BUDGET:
            continue
        took = time.monotonic() - t0
        rate = max(stats["programs"] - p0, 1) / max(took, 1e-3)
        left = deadline - time.monotonic()
        n_examples = int(max(1, min(rate * min(ROUND_SECONDS, left), 10_000)))
    elapsed = time.monotonic() - start
    line = (f"{stats['programs']} programs in {elapsed:.0f} s ({stats['programs'] / elapsed:.1f}/s), "
            f"{stats['steps']} steps, {stats['grad_checked']} first / {stats['gradgrad_checked']} second "
            f"derivatives compared; {stats['skipped_known']} steps left out as known mismatches, "
            f"{stats['raised_both']} raised in both, "
            f"{stats['diverged']} stopped early (rounding drift, negative-stride layout), "
            f"{stats['float32_noise']} float32 rounding; {r} rounds")
    record_property("fuzz", line)
    print(line)
    if findings:
        pytest.fail(f"{len(findings)} findings (written to {COLLECT}):\n" +
                    "\n".join(f"{type(e).__name__}: {str(e).splitlines()[0]}" for e in findings), pytrace=False)


def test_rounding_across_a_kink_is_drift_not_a_finding():
    """Values equal to rounding that lie on two sides of 0 or of a short number (where ops put
    kinks: hardswish's 3 after singular values that are 3 in exact arithmetic, seed 109) stop
    the derivative comparison; ordinary 1-ulp differences do not."""
    import numpy as np
    from .program import _straddles_kink
    pairs = [(2.9999999999999996, 3.0000000000000004), (3.0, 3.0000000000000004), (0.49999999999999994, 0.5),
             (-6.000000000000001, -5.999999999999999), (-1e-18, 2e-18), (0.0, 1e-300)]
    for a, b in pairs:
        assert _straddles_kink(np.array([a, 1.0]), np.array([b, 1.0])), (a, b)
        assert _straddles_kink(np.array([b]), np.array([a])), (a, b)
    assert not _straddles_kink(np.array([3.0, np.nan]), np.array([3.0, np.nan]))      # equal: no drift
    assert not _straddles_kink(np.array([1.2345678901, np.inf]), np.array([1.2345678902, -np.inf]))
    rng = np.random.default_rng(0)
    a = rng.standard_normal(20000)
    b = np.nextafter(a, np.inf)
    assert not any(_straddles_kink(a[i:i + 1], b[i:i + 1]) for i in range(a.size))


def test_singular_to_working_precision_follows_the_dtype():
    """A matrix is singular up to rounding at 1e-10 of its largest singular value in float64,
    and at the numerical-rank bound of its own dtype in float32 (seed 121: singular values 3.1,
    1.5 and 1.9e-8 in float32, whose log-determinants differ by 0.3 between two LAPACKs);
    well-conditioned matrices are not."""
    import numpy as np
    from .program import _singular_up_to_rounding
    f32 = np.finfo(np.float32).eps
    seed121 = np.array([[1.3995927572250366, 0.5257041454315186, -1.2691667079925537],
                        [0.5536903142929077, -0.17175263166427612, -0.9072006344795227],
                        [0.49666261672973633, -1.44994056224823, -2.1962623596191406]])
    assert _singular_up_to_rounding(seed121, f32)
    assert not _singular_up_to_rounding(seed121)          # (as float64 data: 6e-9 is a fine condition)
    u, _, vt = np.linalg.svd(np.random.default_rng(3).standard_normal((4, 4)))
    for smallest, single, double in ((1e-3, False, False), (1e-5, True, False), (1e-11, True, True)):
        a = (u * [1.0, 0.5, 0.2, smallest]) @ vt
        assert _singular_up_to_rounding(a, f32) is single, smallest
        assert _singular_up_to_rounding(a) is double, smallest
