"""``python -m benchmarks``: run the suite (options: ``--help``)."""
import os
import sys

# Without threadpoolctl a BLAS reads its thread count once, when NumPy loads it: set it first.
if "numpy" not in sys.modules:
    _args = sys.argv[1:]
    _n = "1"
    if "--threads" in _args and _args.index("--threads") + 1 < len(_args):
        _n = _args[_args.index("--threads") + 1]
    if _n != "0":
        for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[_v] = _n

from .suite import main  # noqa: E402

sys.exit(main())
