"""Op table entries: the losses and distances of nn.functional (cross entropy / nll with class
indices or probabilities, the regression losses, binary cross entropy, KL divergence, margin and
embedding losses, cosine similarity, pairwise distance, normalize, one_hot)."""
import numpy as np

from .core import OpInfo, Sample, _known

OPS = []
INF, NAN = np.inf, np.nan
R = ("mean", "sum", "none")


def functional(name):
    """op calling lib.nn.functional.<name>."""
    def op(lib, *args, **kwargs):
        return getattr(lib.nn.functional, name)(*args, **kwargs)
    op.__name__ = name
    return op


def _add(name, samples, op=None, **kw):
    OPS.append(OpInfo("F." + name, op or functional(name), samples, **kw))


# ------------------------------------------------------------------------- classification

def _targets(mk, shape, c, ignore=None):
    t = mk.rng.integers(0, c, shape)
    if ignore is not None and t.size:
        t.flat[0] = ignore
    return mk.index(t)


def _probs(mk, shape):
    """Class probabilities with the class dim at 1 (or 0 for unbatched)."""
    c = shape[1] if len(shape) > 1 else shape[0]
    rest = (shape[0],) + tuple(shape[2:]) if len(shape) > 1 else ()
    p = mk.rng.dirichlet(np.ones(c), size=int(np.prod(rest)) if rest else None)
    return np.ascontiguousarray(np.moveaxis(p.reshape(rest + (c,)), -1, 1 if len(shape) > 1 else 0))


_LAYOUTS = [(4, 5), (5,), (2, 5, 3), (2, 5, 2, 2), (2, 5, 1, 2, 2)]


def _class_samples(fn_name):
    def samples(mk):
        w = mk.pos(5)
        for shape in _LAYOUTS:
            tshape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
            # only the 2-D layout derives the generic kinds (and the finite-difference checks);
            # the others are compared with torch as they are. (torch 2.13's nll_loss2d backward
            # also raises "grad_input must be contiguous" for a non-contiguous 4-D input.)
            kind = "basic" if len(shape) == 2 else f"{len(shape)}d"
            for red in R:
                yield Sample(mk.rand(*shape), _targets(mk, tshape, 5), reduction=red, kind=kind)
                yield Sample(mk.rand(*shape), _targets(mk, tshape, 5, ignore=2), w, ignore_index=2, reduction=red,
                             grad=[0], kind=kind)
                if fn_name == "cross_entropy":
                    yield Sample(mk.rand(*shape), _targets(mk, tshape, 5, ignore=1), w, ignore_index=1,
                                 reduction=red, label_smoothing=0.3, grad=[0])
                    yield Sample(mk.rand(*shape), _probs(mk, shape), w, reduction=red, label_smoothing=0.2)
        for red in R:
            # every target ignored: nan for 'mean', zero gradients
            yield Sample(mk.rand(3, 5), mk.index([-100, -100, -100]), reduction=red, kind="degenerate")
            x = mk.rand(3, 5)
            x[0] = -INF
            yield Sample(x, mk.index([-100, 1, 2]), reduction=red, kind="degenerate")
            yield Sample(mk.rand(0, 5), mk.index(np.zeros(0, np.int64)), reduction=red, kind="degenerate")
            if fn_name == "cross_entropy":
                yield Sample(x, mk.index([-100, 1, 2]), reduction=red, label_smoothing=0.1, kind="degenerate")
                yield Sample(mk.rand(0, 5), mk.rand(0, 5), reduction=red, kind="degenerate")
        for dt in (np.int32, np.bool_, np.float32):
            yield Sample(mk.rand(3, 5), mk.index(np.array([1, 0, 1]).astype(dt)), kind="errors")
        yield Sample(mk.rand(3, 5), mk.index([0, 5, 1]), kind="errors")
        yield Sample(mk.rand(2, 5, 3, 3), mk.index(np.zeros((2, 3, 4), np.int64)), kind="errors")
    return samples


_add("cross_entropy", _class_samples("cross_entropy"), int_dtypes=False)
_add("nll_loss", _class_samples("nll_loss"), int_dtypes=False)


# ------------------------------------------------------------------------ regression losses

def _pair_samples(boundary=None, kw=None):
    kw = kw or {}

    def samples(mk):
        for red in R:
            yield Sample(mk.rand(3, 4), mk.rand(3, 4), reduction=red, **kw)
        for red in R:
            yield Sample(mk.rand(4), mk.rand(2, 4), reduction=red, kind="broadcast", **kw)
            yield Sample(mk.rand(), mk.rand(), reduction=red, kind="0d", **kw)
            yield Sample(mk.rand(0, 3), mk.rand(0, 3), reduction=red, kind="empty", **kw)
            if boundary is not None:
                yield Sample(mk.arr(boundary), np.zeros(len(boundary)), reduction=red, kind="degenerate", **kw)
    return samples


def _weighted(name):
    def op(lib, x, y, w, **k):
        return getattr(lib.nn.functional, name)(x, y, weight=w, **k)
    op.__name__ = name
    return op


_BOUNDARY = [1.0, -1.0, 0.5, 0.0, 2.0, 0.7, -0.7]
_add("mse_loss", _pair_samples(_BOUNDARY))
_add("l1_loss", _pair_samples(), gradcheck_kinds=("basic", "0d", "broadcast"))
_add("smooth_l1_loss", _pair_samples(_BOUNDARY, {"beta": 0.7}))
_add("huber_loss", _pair_samples(_BOUNDARY, {"delta": 0.7}))
for _n in ("mse_loss", "l1_loss", "huber_loss"):
    OPS.append(OpInfo(f"F.{_n}(weight)", _weighted(_n),
                      lambda mk: [Sample(mk.rand(3, 4), mk.rand(3, 4), mk.pos(3, 4), reduction=red) for red in R]))


# --------------------------------------------------------------------- binary cross entropy

def _bce_samples(mk):
    for red in R:
        yield Sample(mk.rand(3, 4, low=0.05, high=0.95), mk.rand(3, 4, low=0, high=1), reduction=red)
        yield Sample(mk.rand(3, 4, low=0.05, high=0.95), mk.rand(3, 4, low=0, high=1), mk.pos(3, 4), reduction=red,
                     grad=[0, 1])
        yield Sample(mk.rand(low=0.05, high=0.95), mk.rand(low=0, high=1), reduction=red, kind="0d")
        yield Sample(mk.arr([0.0, 1.0, 1e-13, 0.5, 1 - 1e-13]), mk.arr([0.3, 0.6, 0.2, 0.5, 1.0]), reduction=red,
                     kind="degenerate")
        yield Sample(mk.rand(0, 3, low=0, high=1), mk.rand(0, 3, low=0, high=1), reduction=red, kind="empty")


def _bce_logits_samples(mk):
    for red in R:
        yield Sample(mk.rand(3, 4), mk.rand(3, 4, low=0, high=1), reduction=red)
        yield Sample(mk.rand(3, 4), mk.rand(3, 4, low=0, high=1), mk.pos(3, 4), mk.pos(4), reduction=red,
                     grad=[0, 1])
        yield Sample(mk.rand(), mk.rand(low=0, high=1), reduction=red, kind="0d")
        yield Sample(mk.arr([INF, -INF, 0.0, 50.0, -50.0]), mk.arr([1.0, 0.0, 0.5, 0.2, 0.7]), None,
                     mk.arr([2.0] * 5), reduction=red, kind="degenerate", grad=[0, 1])


_add("binary_cross_entropy", _bce_samples)
_add("binary_cross_entropy_with_logits",
     lambda mk: _bce_logits_samples(mk),
     op=lambda lib, x, y, w=None, pw=None, **k: lib.nn.functional.binary_cross_entropy_with_logits(
         x, y, w, pos_weight=pw, **k))


# ------------------------------------------------------------------------------ divergences

def _kl_samples(mk):
    for red in R + ("batchmean",):
        t = mk.rand(3, 4, low=0, high=1)
        t[0, 0] = 0.0
        yield Sample(mk.rand(3, 4), t, reduction=red)
        yield Sample(mk.rand(3, 4), mk.rand(3, 4), reduction=red, log_target=True)
        yield Sample(mk.rand(), mk.rand(low=0, high=1), reduction=red, kind="0d")


_add("kl_div", _kl_samples, skip={"nonfinite": "kl_div's 'mean' warns; non-finite inputs are covered by the "
                                               "degenerate zero target"})


# ---------------------------------------------------------------- margins and embeddings

def _margin_samples(mk):
    for red in R:
        yield Sample(mk.rand(5), mk.rand(5), mk.arr(np.sign(mk.rand(5))), 0.3, reduction=red)
        yield Sample(mk.rand(), mk.rand(), mk.arr(1.0), 0.3, reduction=red, kind="0d")
        yield Sample(mk.arr([1.0, -1.0, 0.5]), mk.arr([1.0, -1.0, 0.5]), mk.arr([1.0, 1.0, -1.0]), 0.0,
                     reduction=red, kind="degenerate")


_add("margin_ranking_loss", _margin_samples)


def _cosemb_samples(mk):
    for red in R:
        yield Sample(mk.rand(4, 3), mk.rand(4, 3), mk.index([1, -1, 1, -1]), 0.2, reduction=red)
        yield Sample(mk.rand(3), mk.rand(3), mk.index(-1), 0.2, reduction=red, kind="unbatched")
        yield Sample(np.zeros((4, 3)), mk.rand(4, 3), mk.index([1, -1, 1, -1]), -0.5, reduction=red,
                     kind="degenerate")
    yield Sample(mk.rand(2, 3), mk.rand(2, 3), mk.index(1), kind="errors")


_add("cosine_embedding_loss", _cosemb_samples)


def _triplet_samples(mk):
    for red in R:
        for swap in (False, True):
            for p in (2, 1):
                yield Sample(mk.rand(4, 3), mk.rand(4, 3), mk.rand(4, 3), p=p, swap=swap, reduction=red)
        yield Sample(mk.rand(3), mk.rand(3), mk.rand(3), swap=True, reduction=red, kind="unbatched")
        # a tie between d(a, n) and d(p, n): the gradient is shared, as torch.min shares it
        yield Sample(np.zeros((2, 2)), mk.arr([[2.0, 0.0], [1.0, 0.0]]), mk.arr([[1.0, 1.0], [1.0, 1.0]]),
                     swap=True, eps=0.0, margin=5.0, reduction=red, kind="ties")
    yield Sample(mk.rand(4, 3), mk.rand(4, 3), mk.rand(4, 3), margin=0.0, kind="errors")


_add("triplet_margin_loss", _triplet_samples)


# ---------------------------------------------------------------------------- distances

def _cos_samples(mk):
    yield Sample(mk.rand(3, 4), mk.rand(3, 4))
    yield Sample(mk.rand(3, 4), mk.rand(4), dim=-1, kind="broadcast")
    yield Sample(mk.rand(2, 3, 4), mk.rand(3, 1), dim=1, kind="broadcast")
    yield Sample(mk.rand(4), mk.rand(4), dim=0, kind="unbatched")
    yield Sample(mk.rand(0, 4), mk.rand(0, 4), kind="empty")
    # norms below eps: each is clamped in value only (the gradient sees the plain norm)
    yield Sample(mk.arr([[0.3], [1.2]]), mk.arr([[0.7], [0.2]]), dim=1, eps=0.5, kind="degenerate")
    yield Sample(np.zeros((3, 4)), mk.rand(3, 4), kind="degenerate")


_add("cosine_similarity", _cos_samples)


def _pd_samples(mk):
    for p in (2, 1, 3, INF, 0.5):
        yield Sample(mk.rand(3, 4), mk.rand(3, 4), p)
        yield Sample(mk.rand(3, 4), mk.rand(4), p, keepdim=True, kind="broadcast")
    a = mk.rand(3, 4)
    for p in (2, 3):
        yield Sample(a, a.copy(), p, eps=0.0, kind="degenerate")
    yield Sample(mk.rand(), mk.rand(), kind="0d")
    yield Sample(mk.rand(0, 4), mk.rand(0, 4), kind="empty")


_add("pairwise_distance", _pd_samples)


def _normalize_samples(mk):
    for p in (2, 1, 3, INF):
        yield Sample(mk.rand(3, 4), p)
        yield Sample(mk.rand(2, 3, 2), p, dim=-1)
    x = mk.rand(3, 4)
    x[0] = 0.0
    for p in (2, 3):
        yield Sample(x, p, kind="degenerate")
    yield Sample(mk.rand(4), dim=0, kind="unbatched")
    yield Sample(mk.rand(0, 3), kind="empty")


_add("normalize", _normalize_samples)


def _one_hot_samples(mk):
    yield Sample(mk.index([[0, 2], [1, 1]]))
    yield Sample(mk.index([0, 3]), 5)
    yield Sample(mk.index(2), 4, kind="0d")
    yield Sample(mk.index(np.zeros(0, np.int64)), 3, kind="empty")
    yield Sample(mk.index([1, 5]), 3, kind="errors")
    yield Sample(mk.index([1], dtype=np.int32), kind="errors")


_add("one_hot", _one_hot_samples, grad=False, int_dtypes=False, nonfinite=False)


# What still differs from torch 2.13, and where the cause lives (not in the loss code itself).
_known("F.triplet_margin_loss", "gradgrad", "infgrad",
       "norm double backward under an inf upstream: the norm divides unmasked (-inf where torch gives nan)")
_known("F.cosine_similarity F.normalize", "gradgrad", "degenerate",
       "vector_norm's backward at a zero norm: torch's (x / norm).masked_fill_(norm == 0, 0) makes the second "
       "derivative nan, retrograd's where() gives a finite value")
_known("F.pairwise_distance", "gradgrad", "degenerate infgrad",
       "vector_norm's backward at a zero norm / inf upstream: torch's masked_fill form gives nan")
