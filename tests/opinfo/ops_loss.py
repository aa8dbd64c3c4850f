"""Op table entries: the losses and distances of nn.functional (cross entropy / nll with class
indices or probabilities, the regression losses, binary cross entropy, KL divergence, margin and
embedding losses, cosine similarity, pairwise distance, normalize, one_hot)."""
import numpy as np

from .core import OpInfo, Sample

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



# ------------------------------------------------- the remaining margin and likelihood losses

def _soft_margin_samples(mk):
    for red in R:
        yield Sample(mk.rand(3, 4), mk.arr(np.sign(mk.rand(3, 4))), reduction=red, grad=[0])
        yield Sample(mk.rand(3, 4), mk.rand(4), reduction=red, kind="broadcast", grad=[0])
        yield Sample(mk.rand(), mk.arr(-1.0), reduction=red, kind="0d", grad=[0])
        yield Sample(mk.arr([50.0, -800.0, 800.0, 0.0]), mk.arr([-1.0, -1.0, 1.0, 1.0]), reduction=red,
                     kind="degenerate", grad=[0])
    yield Sample(mk.rand(4), mk.rand(3, 4), kind="errors", grad=[0])
    # the target is not differentiable
    yield Sample(mk.rand(3, 4), mk.rand(3, 4), kind="errors")


_add("soft_margin_loss", _soft_margin_samples)


def _hinge_samples(mk):
    for red in R:
        yield Sample(mk.rand(3, 4), mk.arr(np.sign(mk.rand(3, 4))), margin=0.5, reduction=red, grad=[0])
        yield Sample(mk.rand(3, 4), mk.arr(np.sign(mk.rand(4))), reduction=red, kind="broadcast", grad=[0])
        yield Sample(mk.arr([1.0, 0.0, -1.0, 2.0]), mk.arr([1.0, -1.0, -1.0, -1.0]), reduction=red,
                     kind="degenerate", grad=[0])


_add("hinge_embedding_loss", _hinge_samples)


def _mlsm_samples(mk):
    for red in R:
        yield Sample(mk.rand(3, 4), mk.rand(3, 4, low=0, high=1), reduction=red)
        yield Sample(mk.rand(3, 4), mk.rand(3, 4, low=0, high=1), mk.pos(4), reduction=red)
        yield Sample(mk.rand(4), mk.rand(4, low=0, high=1), reduction=red, kind="unbatched")


_add("multilabel_soft_margin_loss", _mlsm_samples)


def _multi_margin_samples(mk):
    t = mk.index([0, 3, 2])
    for red in R:
        yield Sample(mk.rand(3, 4), t, reduction=red)
        yield Sample(mk.rand(3, 4), t, 2, 0.7, reduction=red)
        yield Sample(mk.rand(3, 4), t, 2, 1.5, mk.pos(4), reduction=red, grad=[0])
        yield Sample(mk.rand(4), mk.index(1), reduction=red, kind="unbatched")
        # margins exactly zero are not counted (the kernel's test is z > 0)
        yield Sample(mk.arr([[1.0, 0.0, 2.0], [0.5, 0.5, 0.5]]), mk.index([0, 1]), reduction=red, kind="degenerate")
    for args in ((mk.index([0, 4, 2]),), (mk.index([0, 1]),), (mk.index([0, 1, 2], dtype=np.int32),),
                 (t, 3), (t, 1, 1.0, mk.pos(3))):
        yield Sample(mk.rand(3, 4), *args, kind="errors")
    yield Sample(mk.rand(2, 3, 4), mk.index([0, 1]), kind="errors")


_add("multi_margin_loss", _multi_margin_samples, gradgrad=False, int_dtypes=False,
     skip={"empty": "torch 2.13 returns uninitialized memory for an empty batch's mean"})


def _mlm_samples(mk):
    t = mk.index([[0, 3, -1, 1], [2, -1, 0, 0], [1, 2, 3, 0]])
    for red in R:
        yield Sample(mk.rand(3, 4), t, reduction=red)
        yield Sample(mk.rand(4), mk.index([3, 3, -1, 0]), reduction=red, kind="unbatched")
        yield Sample(mk.arr([[1.0, 0.0, 2.0], [0.5, 0.5, 0.5]]), mk.index([[0, -1, 2], [1, 2, -1]]), reduction=red,
                     kind="degenerate")
    for tt in (mk.index([[0, 4, -1, 1]] * 3), mk.index([[0, -2, 1, 1]] * 3), mk.index([[0, 1, 2]] * 3),
               mk.index([[0, 1, -1, 1]] * 3, dtype=np.int32)):
        yield Sample(mk.rand(3, 4), tt, kind="errors")


_add("multilabel_margin_loss", _mlm_samples, gradgrad=False, int_dtypes=False)


def _poisson_samples(mk):
    for red in R:
        yield Sample(mk.rand(3, 4), mk.pos(3, 4, high=4.0), reduction=red)
        yield Sample(mk.pos(3, 4), mk.pos(3, 4, high=4.0), log_input=False, full=True, reduction=red)
        yield Sample(mk.rand(3, 4), mk.arr([0.0, 1.0, 2.0, 5.0]), full=True, reduction=red, kind="broadcast",
                     grad=[0])   # log(0) and the kink at 1 in the target's Stirling term


_add("poisson_nll_loss", _poisson_samples)


def _gauss_samples(mk):
    for red in R:
        yield Sample(mk.rand(3, 4), mk.rand(3, 4), mk.pos(3, 4), reduction=red)
        yield Sample(mk.rand(3, 4), mk.rand(3, 4), mk.pos(3, 1), full=True, reduction=red)
        yield Sample(mk.rand(3, 4), mk.rand(3, 4), mk.pos(3), reduction=red, kind="homoscedastic")
        # variances below eps are clamped in value; the gradient passes as if unclamped
        yield Sample(mk.rand(3, 4), mk.rand(3, 4), mk.arr([1e-9, 0.0, 0.5]), eps=1e-3, reduction=red,
                     kind="degenerate")
    yield Sample(mk.rand(3, 4), mk.rand(3, 4), mk.arr([1.0, -1.0, 0.5]), kind="errors")
    yield Sample(mk.rand(3, 4), mk.rand(3, 4), mk.pos(2, 4), kind="errors")


_add("gaussian_nll_loss", _gauss_samples, int_dtypes=False,
     skip={"nonfinite": "a NaN variance is rejected by neither library but torch.any(var < 0) is evaluated "
                        "the same way; values compared in the other kinds"})


def _twd(lib, a, p, n, dist=None, **k):
    fn = None
    if dist == "cos":
        def fn(x, y):
            return 1.0 - lib.nn.functional.cosine_similarity(x, y)
    return lib.nn.functional.triplet_margin_with_distance_loss(a, p, n, distance_function=fn, **k)


def _twd_samples(mk):
    for red in R:
        for swap in (False, True):
            yield Sample(mk.rand(4, 3), mk.rand(4, 3), mk.rand(4, 3), swap=swap, reduction=red)
            yield Sample(mk.rand(4, 3), mk.rand(4, 3), mk.rand(4, 3), "cos", swap=swap, margin=0.5, reduction=red)
    yield Sample(mk.rand(4, 3), mk.rand(4, 3), mk.rand(4, 3), margin=0.0, kind="errors")
    yield Sample(mk.rand(4, 3), mk.rand(3), mk.rand(4, 3), kind="errors")
    yield Sample(mk.rand(4, 3), mk.rand(4, 3), mk.rand(4, 3), reduction="bad", kind="errors")


_add("triplet_margin_with_distance_loss", _twd_samples, op=_twd)


def _ctc(lib, x, targets, il, tl, **k):
    # torch's CTC gradient is the one through log_softmax (see CtcLossBackward0): compose with it
    return lib.nn.functional.ctc_loss(x.log_softmax(-1), targets, il, tl, **k)


def _ctc_samples(mk):
    padded = mk.index([[1, 2, 2], [3, 4, 0], [1, 1, 1]])
    flat = mk.index([1, 2, 2, 3, 4, 1, 1, 1, 1, 2])
    for red in R:
        yield Sample(mk.rand(8, 3, 5), padded, mk.index([8, 6, 7]), mk.index([3, 2, 3]), reduction=red)
        yield Sample(mk.rand(8, 3, 5), padded, mk.index([8, 6, 7]), mk.index([3, 0, 3]), blank=4, reduction=red)
        yield Sample(mk.rand(8, 5), mk.index([1, 2, 2]), mk.index([8]), mk.index([3]), reduction=red,
                     kind="unbatched")
        # the third sequence cannot be aligned (5 labels with a repeat in 7 frames): inf, or 0 with zero_infinity
        for zi in (False, True):
            yield Sample(mk.rand(8, 3, 5), flat, mk.index([8, 6, 7]), mk.index([3, 2, 5]), reduction=red,
                         zero_infinity=zi, kind="degenerate")
    yield Sample(mk.rand(8, 3, 5), padded, mk.index([8, 6]), mk.index([3, 2, 3]), kind="errors")
    yield Sample(mk.rand(8, 3, 5), padded, mk.index([8, 6, 7]), mk.index([3, 2, 3]), blank=5, kind="errors")
    yield Sample(mk.rand(8, 3, 5), padded, mk.index([9, 6, 7]), mk.index([3, 2, 3]), kind="errors")


_add("ctc_loss", _ctc_samples, op=_ctc, gradgrad=False, int_dtypes=False)
