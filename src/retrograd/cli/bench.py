"""``retrograd bench``: the benchmark suite of a source checkout (benchmarks/), side by side
with PyTorch when it is installed. Same options as ``python -m benchmarks`` (see --help)."""
import os
import sys


def _suite_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", "..", ".."))   # src/retrograd/cli -> checkout
    return root if os.path.isfile(os.path.join(root, "benchmarks", "suite.py")) else None


def main(argv):
    root = _suite_dir()
    if root is None:
        print("retrograd bench: the benchmark suite ships with the source checkout (benchmarks/); "
              "run it from a clone of the repository", file=sys.stderr)
        return 2
    if root not in sys.path:
        sys.path.insert(0, root)
    from benchmarks.suite import main as suite_main
    return suite_main(list(argv))
