"""The one-time notice of ``torch.compile`` / ``torch.jit.script`` / ``trace``, which return
their argument unchanged in retrograd."""
import warnings

_shown = set()


def notice(what):
    """Warn once per process that ``what`` returns its input unchanged."""
    if _shown:
        return
    _shown.add(what)
    warnings.warn(f"{what}: retrograd runs eagerly, so it returns its argument unchanged (the program runs as "
                  "it would without it; this notice is shown once)", UserWarning, stacklevel=3)
