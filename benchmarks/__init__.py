"""retrograd's benchmark suite: ``python -m benchmarks`` (or ``retrograd bench``); see suite.py."""
