"""torchvision as a test oracle. The installed torchvision wheel's C extension needs a CUDA
build of torch, so its import stops at the first fake-kernel registration for an operator
the extension should have defined ("operator torchvision::nms does not exist"). Tests only
use its pure-Python parts (models, transforms, utils): each missing ``torchvision::`` operator
is declared here with a placeholder schema (never called), then the import is retried. Any
other failure leaves ``torchvision`` None and the tests that need it skip."""
import re
import sys

import pytest

from helpers import torch

torchvision = None
_reason = "PyTorch is not installed"


def _load():
    global torchvision, _reason
    if torch is None:
        return
    try:
        import torchvision as tv          # a working install needs nothing more
        torchvision = tv
        return
    except ImportError as e:
        _reason = f"torchvision is not importable: {e}"
        return
    except RuntimeError:
        pass
    lib = torch.library.Library("torchvision", "FRAGMENT")
    for _ in range(64):
        for k in [k for k in sys.modules if k == "torchvision" or k.startswith("torchvision.")]:
            del sys.modules[k]
        try:
            import torchvision as tv
            import torchvision.transforms.functional  # noqa: F401
            import torchvision.models  # noqa: F401
            import torchvision.utils  # noqa: F401
        except RuntimeError as e:
            m = re.search(r"operator torchvision::(\w+) does not exist", str(e))
            if m is None:
                _reason = f"torchvision is not importable: {e}"
                return
            lib.define(f"{m.group(1)}(Tensor x) -> Tensor")
        except Exception as e:  # noqa: BLE001 (any other failure: skip, reporting it)
            _reason = f"torchvision is not importable: {type(e).__name__}: {e}"
            return
        else:
            torchvision = tv
            _LIBS.append(lib)
            return
    _reason = "torchvision is not importable: too many missing operators"


_LIBS = []   # the placeholder operator library must outlive the import
_load()

needs_torchvision = pytest.mark.skipif(torchvision is None, reason=_reason)
