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
    argv = list(argv)
    try:
        import threadpoolctl  # noqa: F401  (resizes the BLAS pools of this process)
    except ImportError:
        # NumPy is loaded already and its BLAS read its thread count then: a fresh interpreter
        # started with the count in its environment is the only way to set it.
        import subprocess
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.path.join(root, "src")] + sys.path))
        return subprocess.call([sys.executable, "-m", "benchmarks", *argv], cwd=root, env=env)
    if root not in sys.path:
        sys.path.insert(0, root)
    from benchmarks.suite import main as suite_main
    return suite_main(argv)
