"""``retrograd tour``: replay the tutorial's examples, printing what they print."""
import os
import runpy
import sys

_EXAMPLES = ["seed_000_backtracking.py", "seed_001_grad.py", "seed_002_autograd.py"]


def _examples_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "..", "..", "..", "examples"), os.path.join(os.getcwd(), "examples")):
        if os.path.isdir(cand):
            return os.path.normpath(cand)
    return None


def main(argv):
    """Run each seed example in turn."""
    d = _examples_dir()
    if d is None:
        print("retrograd tour: the examples/ folder of the source checkout was not found", file=sys.stderr)
        return 1
    for name in _EXAMPLES:
        print(f"=== {name}")
        runpy.run_path(os.path.join(d, name), run_name="__main__")
        print()
    return 0
