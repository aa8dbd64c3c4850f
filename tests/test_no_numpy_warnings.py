"""No NumPy floating-point RuntimeWarning ever leaks out of an op: PyTorch's kernels print
nothing for log(0), 0/0, an overflowing exp or sqrt(-1). Every entry of the op table runs
its samples (the nonfinite and degenerate kinds included) plus a hostile kind made of
0, -0, +-1, +-inf, nan, huge and tiny values, forward and backward, with RuntimeWarnings
turned into errors."""
import warnings

import numpy as np
import pytest

import retrograd

from opinfo import ALL_OPS
from opinfo.core import expand_samples, call, flat, is_tensor

_HOSTILE = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e300, -1e300, 1e-310, 710.0, -710.0])


def _hostile(s):
    """The sample with every float array argument refilled from the hostile values."""
    args = []
    for i, a in enumerate(s.args):
        if i in s.float_positions():
            vals = np.resize(np.roll(_HOSTILE, i), a.size).reshape(a.shape)
            a = vals.astype(a.dtype) if a.dtype != np.float64 else vals
        args.append(a)
    return s.replace(args=tuple(args), kind="hostile")


def _samples(info):
    out = expand_samples(info)
    out += [_hostile(s) for s in out if s.kind == "basic" and s.float_positions()]
    return out


def _run(info, s):
    """Forward and (where an output requires grad) backward; bad-input errors are fine."""
    try:
        res, leaves, _ = call(info, retrograd, s, requires_grad=bool(s.grad_positions()))
        outs = [o for o in flat(res) if is_tensor(o) and o.requires_grad]
        if outs and leaves:
            retrograd.autograd.grad(outs, [l for l in leaves if l is not None],
                                    [retrograd.ones_like(o) for o in outs], allow_unused=True)
    except RuntimeWarning:
        raise
    except Exception:
        pass


def _family(info):
    return getattr(info.samples, "__module__", "").rpartition(".")[2]


@pytest.mark.parametrize("family", sorted({_family(i) for i in ALL_OPS}))
def test_ops_never_warn(family):
    leaked = []
    for info in [i for i in ALL_OPS if _family(i) == family]:
        for s in _samples(info):
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)
                try:
                    _run(info, s)
                except RuntimeWarning as w:
                    leaked.append(f"{info.name} {s.describe()}: {w}")
    assert not leaked, f"{len(leaked)} samples warned:\n" + "\n".join(leaked[:40])


def test_direct_cases_print_nothing():
    """The cases named in the report, as a user writes them."""
    t = retrograd.tensor
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert retrograd.log(t(0.0)).item() == float("-inf")
        assert np.isnan((t(0.0) / t(0.0)).item())
        assert retrograd.exp(t(1000.0)).item() == float("inf")
        assert np.isnan(retrograd.sqrt(t(-1.0)).item())
        x = t([0.0, -1.0], requires_grad=True)
        x.sqrt().sum().backward()
        assert x.grad.tolist()[0] == float("inf")


def test_fresh_process_with_warnings_as_errors():
    """As a user runs it: python -W error, nothing set up by the test session."""
    import os
    import subprocess
    import sys
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    code = ("import retrograd as t\n"
            "x = t.tensor([0.0, -1.0, 1000.0], requires_grad=True)\n"
            "y = x.log().sum() + x.sqrt().sum() + x.exp().sum() + (x / x).sum()\n"
            "y.backward()\n"
            "print(y.item(), x.grad.tolist())\n")
    r = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.abspath(src)), timeout=120)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.startswith("nan ")
