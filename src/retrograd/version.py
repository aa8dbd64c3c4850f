"""``torch.version``: the PyTorch API version retrograd implements, and retrograd's own.

``retrograd.__version__`` is retrograd's version; under ``retrograd run`` (where ``import
torch`` gives retrograd) ``torch.__version__`` is ``api``, a TorchVersion that compares as
PyTorch 2.13 does (with strings and tuples), so version gates take the right branch.
"""
import re

__all__ = ["TorchVersion", "api", "retrograd", "cuda", "hip", "debug", "git_version", "__version__"]

retrograd = "0.1.0"
cuda = None           # retrograd's CUDA path is CuPy's; it reports no CUDA toolkit of its own
hip = None
debug = False
git_version = None

_PRE = {"dev": 0, "a": 1, "alpha": 1, "b": 2, "beta": 2, "c": 3, "rc": 3, "pre": 3, "preview": 3}


def _key(v):
    """A sort key for a PEP 440 version string or a tuple of ints (local labels ignored)."""
    if isinstance(v, tuple):
        v = ".".join(str(x) for x in v)
    if not isinstance(v, str):
        raise TypeError(f"'{type(v).__name__}' is not a version")
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)(?:[-_.]?(dev|a|alpha|b|beta|c|rc|pre|preview)[-_.]?(\d*))?"
                 r"(?:[-_.]?post[-_.]?(\d*))?", v.strip().lower())
    if m is None:
        raise ValueError(f"Invalid version: {v!r}")
    release = [int(x) for x in m.group(1).split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    pre = (_PRE[m.group(2)], int(m.group(3) or 0)) if m.group(2) else (9, 0)
    post = int(m.group(4) or 0) if m.group(4) is not None else -1
    return (tuple(release), pre, post)


class TorchVersion(str):
    """A version string that compares as a version (``'2.13.0' > '2.4'``, ``>= (2, 0)``)."""

    def _cmp(self, other, op):
        try:
            return op(_key(str(self)), _key(other if isinstance(other, tuple) else str(other)))
        except (TypeError, ValueError):
            return NotImplemented

    def __lt__(self, other):
        return self._cmp(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._cmp(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._cmp(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._cmp(other, lambda a, b: a >= b)

    def __eq__(self, other):
        r = self._cmp(other, lambda a, b: a == b)
        return str.__eq__(self, other) if r is NotImplemented else r

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    __hash__ = str.__hash__


api = TorchVersion("2.13.0")
__version__ = api
