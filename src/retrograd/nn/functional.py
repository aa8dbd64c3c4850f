"""retrograd.nn.functional: the stateless forms of the layers, activations and losses.

The ops themselves live in ``retrograd.ops`` (conv, pool, activation, loss); this module
gives them PyTorch's functional names and argument handling. Sections are grouped by
family and kept alphabetical inside each, so additions merge cleanly.
"""
from ..ops._linear import linear  # noqa: F401
from ..ops.shape import reshape as _reshape

# --- linear -----------------------------------------------------------------------------


def _flatten(input, start_dim=0, end_dim=-1):
    nd = input.ndim
    if nd == 0:
        return _reshape(input, (1,))
    s = input._wrap_dim(start_dim)
    e = input._wrap_dim(end_dim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shape = tuple(input.shape)
    n = 1
    for d in shape[s:e + 1]:
        n *= d
    return _reshape(input, shape[:s] + (n,) + shape[e + 1:])

# --- sequence, resampling and attention ---------------------------------------------------

from ..ops.resample import pad, interpolate, unfold, fold  # noqa: F401,E402
from ..ops.embeddings import embedding, embedding_bag  # noqa: F401,E402
from ..ops.convt import conv_transpose1d, conv_transpose2d, bilinear  # noqa: F401,E402
from ..ops.attention import scaled_dot_product_attention  # noqa: F401,E402
from ..ops.gridsample import grid_sample, affine_grid  # noqa: F401,E402
from ._functional_seq import (upsample, upsample_nearest, upsample_bilinear,  # noqa: F401,E402
                              multi_head_attention_forward)
