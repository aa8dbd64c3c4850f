"""Views at the edges, against PyTorch: which ops return views, what a view's history
becomes when its base (or a sibling) is written in place, the errors for views that
cannot be rebased, writes into memory that several elements share, boolean masks on
0-d tensors and zero-size shape ops. Each scenario runs the same code on retrograd and
on torch and compares values, dtypes, grad_fn names, view-ness, gradients and errors.
"""
import random
import re
import warnings

import numpy as np
import pytest

import retrograd
from retrograd.autograd.gradcheck import gradcheck, gradgradcheck
from helpers import torch, needs_torch

LIBS = [retrograd] + ([torch] if torch is not None else [])


def _desc(x):
    if isinstance(x, retrograd.Tensor) or (torch is not None and isinstance(x, torch.Tensor)):
        vals = np.asarray(x.detach().tolist(), dtype=float)
        return ("T", tuple(x.shape), str(x.dtype).replace("torch.", ""), np.round(vals, 5).tolist())
    if isinstance(x, (list, tuple)):
        return type(x).__name__, [_desc(i) for i in x]
    return x


def _gname(t):
    try:
        f = t.grad_fn
    except RuntimeError as e:
        return "error: " + str(e)
    return None if f is None else f.name().replace("torch::autograd::", "")


def _run(lib, fn):
    log = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(lib, log)
        except Exception as e:  # the error is part of the behaviour compared
            log.append(f"raised {type(e).__name__}: {e}")
    return [_desc(i) for i in log]


def _parity(fn):
    """Run ``fn`` on retrograd and, when installed, on torch; they must agree."""
    ours = _run(retrograd, fn)
    if torch is not None:
        assert ours == _run(torch, fn)
    return ours


# --- a view made before its base is written in place (the lazy view rule) -------------------

def test_view_taken_before_base_written_in_place():
    def prog(T, L):
        w = T.tensor(2.0, requires_grad=True)
        buf = T.zeros(2)
        v = buf[:]
        buf[0] = w
        L += [v.requires_grad, v.is_leaf, _gname(v), _gname(buf)]
        ((v * 3).sum() + (buf * 5).sum()).backward()
        L.append(w.grad)
    out = _parity(prog)
    assert out[:4] == [True, False, "AsStridedBackward0", "CopySlices"]
    assert out[4] == ("T", (), "float32", 8.0)


def _chain(T, L):
    w = T.tensor(2.0, requires_grad=True)
    buf = T.zeros(2, 3)
    a = buf[1]
    b = a[1:]
    c = b.unsqueeze(0)
    buf[1, 2] = w * 3
    L += [_gname(a), _gname(b), _gname(c)]
    (c * T.tensor([[1., 10.]])).sum().backward()
    L.append(w.grad)


def _multi_write(T, L):
    w = T.tensor(2.0, requires_grad=True)
    buf = T.zeros(3)
    v = buf[:]
    vt = v.unsqueeze(0)
    buf[0] = w
    buf[1] = w * 2
    L += [_gname(v), _gname(vt), _gname(buf)]
    (vt * T.tensor([[1., 10., 100.]])).sum().backward()
    L.append(w.grad)


def _sibling_setitem(T, L):
    w = T.tensor(2.0, requires_grad=True)
    buf = T.zeros(2, 3)
    r0, c = buf[0], buf[:, 1]
    r0[1] = w
    L += [_gname(c), _gname(buf), _gname(r0)]
    (c * T.tensor([3., 5.])).sum().backward()
    L.append(w.grad)


def _sibling_mul(T, L):
    x = T.tensor([1., 2., 3., 4.], requires_grad=True)
    y = x * 1
    a, b = y[:2], y[1:]
    a.mul_(10)
    L += [_gname(a), _gname(b), _gname(y)]
    (b * T.tensor([1., 2., 3.])).sum().backward()
    L.append(x.grad)


def _view_of_view_write(T, L):
    x = T.arange(6.).requires_grad_()
    y = x * 1
    a = y.view(2, 3)
    b = a.t()
    c = b[1]
    c.mul_(2)
    L += [_gname(a), _gname(b), _gname(c), _gname(y)]
    (a * T.arange(6.).view(2, 3)).sum().backward()
    L.append(x.grad)


def _write_under_no_grad(T, L):
    x = T.ones(3, requires_grad=True)
    y = x * 2
    v = y[:2]
    with T.no_grad():
        y.mul_(3)
    L.append(_gname(v))
    v.sum().backward()
    L.append(x.grad)


def _expanded_view_of_written_base(T, L):
    w = T.tensor(2.0, requires_grad=True)
    buf = T.zeros(1)
    e = buf.expand(3)
    buf[0] = w
    L.append(_gname(e))
    (e * T.tensor([1., 2., 3.])).sum().backward()
    L.append(w.grad)


def _diagonal_view(T, L):
    x = T.arange(9.).requires_grad_()
    y = x.view(3, 3) * 1
    d = y.diagonal()
    y.mul_(2)
    L.append(_gname(d))
    (d * T.tensor([1., 2., 3.])).sum().backward()
    L.append(x.grad)


def _retain_grad_moves(T, L):
    x = T.ones(3, requires_grad=True)
    y = x * 2
    v = y[1:]
    v.retain_grad()
    y.mul_(3)
    (v * T.tensor([1., 5.])).sum().backward()
    L += [v.grad, x.grad]


def _hook_on_rebuilt_view(T, L):
    x = T.tensor([1., 2., 3., 4.], requires_grad=True)
    y = x * 1
    v = y[2:]
    seen = []
    v.register_hook(lambda g: seen.append(g.clone()))
    y.mul_(2)
    (v * 3).sum().backward()
    L += [x.grad, len(seen)] + seen


def _in_place_shape_ops_on_views(T, L):
    x = T.arange(6.).requires_grad_()
    y = x.view(2, 3) * 1
    v = y[:, :1]
    v.squeeze_(1)
    L += [_gname(v), tuple(v.shape)]
    y.mul_(2)
    L.append(_gname(v))
    (v * T.tensor([1., 5.])).sum().backward()
    L.append(x.grad)


def _in_place_shape_op_under_no_grad(T, L):
    x = T.tensor([1.5], requires_grad=True)
    y = x * 1
    v = y.unflatten(0, (1, 1))
    with T.no_grad():
        v.unsqueeze_(0)
    L += [_gname(v), tuple(v.shape)]
    (v * 3).sum().backward()
    L.append(x.grad)


def _base_shape_changed_after_write(T, L):
    x = T.tensor([[1., 2., 3.], [4., 5., 6.]], dtype=T.float64, requires_grad=True)
    y = x * 1
    v = y.t()
    v.mul_(2)
    y.unsqueeze_(0)
    (y * 3).sum().backward()
    L.append(x.grad)


def _double_backward_through_rebuilt_view(T, L):
    x = T.tensor([1., 2., 3., 4.], dtype=T.float64, requires_grad=True)
    y = x * x
    v = y[1:4]
    y.mul_(y.detach())
    L.append(_gname(v))
    g, = T.autograd.grad((v * v).sum(), x, create_graph=True)
    L += [g, g.requires_grad]
    g.sum().backward()
    L.append(x.grad)


def _saved_view_version_error(T, L):
    x = T.tensor([1., 2., 3.], requires_grad=True)
    a = x * 1
    v = a.view(3)
    y = v * v
    a.add_(1)
    y.sum().backward()


def _detach_is_not_a_view(T, L):
    w = T.tensor(2.0, requires_grad=True)
    buf = T.zeros(3)
    d = buf.detach()
    buf[0] = w
    L += [d.requires_grad, _gname(d), d._is_view()]


def _versions_shared(T, L):
    x = T.zeros(4)
    v = x[1:]
    vv = v[1:]
    vv.add_(1.)
    L += [x._version, v._version, vv._version, x, vv._base is x]


REBASE = {f.__name__[1:]: f for f in (
    _chain, _multi_write, _sibling_setitem, _sibling_mul, _view_of_view_write, _write_under_no_grad,
    _expanded_view_of_written_base, _diagonal_view, _retain_grad_moves, _hook_on_rebuilt_view,
    _in_place_shape_ops_on_views, _in_place_shape_op_under_no_grad, _base_shape_changed_after_write,
    _double_backward_through_rebuilt_view, _saved_view_version_error, _detach_is_not_a_view,
    _versions_shared)}


@needs_torch
@pytest.mark.parametrize("name", list(REBASE))
def test_view_history_after_in_place(name):
    _parity(REBASE[name])


def test_rebuilt_view_grad_values_without_torch():
    # a view of a buffer, the buffer then written from x and w: d/dx and d/dw by hand
    x = retrograd.tensor([1., 2., 3.], dtype=retrograd.float64, requires_grad=True)
    w = retrograd.tensor(0.5, dtype=retrograd.float64, requires_grad=True)
    buf = retrograd.zeros(2, 3, dtype=retrograd.float64)
    col = buf[:, 1]
    buf[0] = x * x
    buf[1, 1:] = w
    assert col.grad_fn.name() == "AsStridedBackward0"
    (col * retrograd.tensor([10., 100.], dtype=retrograd.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0., 40., 0.])
    np.testing.assert_allclose(w.grad.numpy(), 100.)


def _through_views(x, w):
    buf = retrograd.zeros(3, 4, dtype=retrograd.float64)
    v = buf.t()[1:]                 # made before the base requires grad
    e = buf[2].unsqueeze(0).expand(2, 4)
    buf[0] = x.sin()
    buf[1:, ::2] = w * x[:2].reshape(1, 2)
    v[0].mul_(x[1:].exp())         # through a view of the (now recorded) base
    return (v * v).sum() + (e * x.reshape(1, 4)).sum() + buf.sum()


def test_gradcheck_through_rebuilt_views():
    x = retrograd.tensor([0.3, -0.7, 1.1, 0.2], dtype=retrograd.float64, requires_grad=True)
    w = retrograd.tensor([[0.5, -1.2]], dtype=retrograd.float64, requires_grad=True)
    assert gradcheck(_through_views, (x, w))
    assert gradgradcheck(_through_views, (x, w))


# --- views that cannot be rebased: made under no_grad, by multi-output ops, in inference mode -

def _nograd_view_requires_grad(T, L):
    x = T.ones(3, requires_grad=True)
    with T.no_grad():
        v = x[:]
    z = v * 2
    L += [v.requires_grad, _gname(v), v.is_leaf, _gname(z)]
    z.sum().backward()
    L.append(x.grad)


def _nograd_view_base_written(T, L):
    w = T.tensor(2.0, requires_grad=True)
    buf = T.zeros(3)
    with T.no_grad():
        v = buf[1:]
    L += [v.requires_grad, _gname(v)]
    buf[1] = w
    L += [v.requires_grad, _gname(v)]
    v.mul_(2)


def _nograd_view_of_view(T, L):
    x = T.ones(3, requires_grad=True)
    y = x * 1
    with T.no_grad():
        v = y[1:]
    vv = v[1:]
    L += [_gname(vv), vv.requires_grad]
    try:
        vv.mul_(2)
    except RuntimeError as e:
        L.append(str(e))
    y.mul_(2)
    L.append(_gname(vv))


def _nograd_view_plain_base_allowed(T, L):
    buf = T.zeros(3)
    with T.no_grad():
        v = buf[1:]
    v.mul_(2)          # nothing requires grad: allowed
    buf[0] = 5.
    L += [v, _gname(v), v.requires_grad]


def _inference_view_of_normal_tensor(T, L):
    x = T.zeros(3)
    with T.inference_mode():
        v = x[1:]
    L += [v.requires_grad, v.is_inference(), v._is_view()]
    v.mul_(2)
    L.append(x)


def _split_outputs(T, L):
    x = T.ones(4, requires_grad=True)
    for make in (lambda y: y.split(2), lambda y: y.split(4), lambda y: y.unbind(0), lambda y: y.chunk(2),
                 lambda y: y.split([1, 3]), lambda y: y.tensor_split(2)):
        y = x * 1
        a = make(y)[0]
        try:
            a.mul_(2)
            L.append(("ok", _gname(a)))
        except RuntimeError as e:
            L.append(str(e))


def _split_view_of_output(T, L):
    y = T.ones(4, requires_grad=True) * 1
    a, b = y.split(2)
    for f in (lambda: a.unsqueeze(0).mul_(2), lambda: a[:1].mul_(2), lambda: a.__setitem__(0, 5.),
              lambda: a.__setitem__(slice(None), 5.), lambda: a.__setitem__(Ellipsis, 5.),
              lambda: a.__setitem__([0], 5.), lambda: a.__setitem__((None,), 5.)):
        try:
            f()
            L.append("ok")
        except RuntimeError as e:
            L.append(str(e))


def _split_base_written(T, L):
    y = T.ones(4, requires_grad=True) * 1
    a, b = y.split(2)
    y.mul_(2)
    L.append(_gname(a))


def _split_under_no_grad(T, L):
    y = T.ones(4, requires_grad=True) * 1
    with T.no_grad():
        a, b = y.split(2)
        a.mul_(2)
    L.append(y)
    try:
        a.mul_(2)
    except RuntimeError as e:
        L.append(str(e))


def _split_nothing_requires_grad(T, L):
    a, b = T.zeros(4).split(2)
    a.mul_(2)
    L.append(a)
    w = T.tensor(2., requires_grad=True)
    for f in (lambda: b.mul_(w), lambda: b.__setitem__(0, w), lambda: b[:1].mul_(w)):
        try:
            f()
        except RuntimeError as e:
            L.append(str(e))


def _split_base_written_under_no_grad(T, L):
    x = T.arange(6.).requires_grad_()
    y = x * 1
    a, b = y.split(3)
    with T.no_grad():
        y[0] = 1.
    (a * 2).sum().backward()


NOT_REBASABLE = {f.__name__[1:]: f for f in (
    _nograd_view_requires_grad, _nograd_view_base_written, _nograd_view_of_view, _nograd_view_plain_base_allowed,
    _inference_view_of_normal_tensor, _split_outputs, _split_view_of_output, _split_base_written,
    _split_under_no_grad, _split_nothing_requires_grad, _split_base_written_under_no_grad)}


@needs_torch
@pytest.mark.parametrize("name", list(NOT_REBASABLE))
def test_views_that_cannot_be_rebased(name):
    _parity(NOT_REBASABLE[name])


def test_multi_output_view_error_wording():
    y = retrograd.ones(4, requires_grad=True) * 1
    a, _ = y.split(2)
    with pytest.raises(RuntimeError) as e:
        a.mul_(2)
    assert str(e.value) == (
        "Output 0 of Split is a view and is being modified inplace. This view is the output of a function that "
        "returns multiple views. Such functions do not allow the output views to be modified inplace. You should "
        "replace the inplace operation by an out-of-place one.")
    with retrograd.no_grad():
        a.mul_(2)       # allowed without grad
    np.testing.assert_array_equal(y.detach().numpy(), [2., 2., 1., 1.])


# --- views vs copies ---------------------------------------------------------------------------

def _ps(T, x, f):
    return getattr(T.nn.functional, f)(x.reshape(1, 1, 2, 3), 1)


# (name, fn(lib, x), whether torch returns a view of x itself, None: x itself); x is a
# contiguous float (2, 3) tensor
VIEW_OPS = [
    ("view", lambda T, x: x.view(-1), True), ("reshape", lambda T, x: x.reshape(3, 2), True),
    ("reshape_noncontig_view", lambda T, x: x[:, :1].reshape(-1), True),
    ("reshape_noncontig_copy", lambda T, x: x.t().reshape(-1), False),
    ("flatten", lambda T, x: x.flatten(), True), ("flatten_noncontig", lambda T, x: x.t().flatten(), False),
    ("unflatten", lambda T, x: x.t().unflatten(0, (3, 1)), True), ("ravel_noncontig", lambda T, x: x.t().ravel(), False),
    ("squeeze", lambda T, x: x[:1].squeeze(0), True), ("squeeze_noop", lambda T, x: x.squeeze(0), True),
    ("unsqueeze", lambda T, x: x.unsqueeze(1), True), ("expand", lambda T, x: x.expand(2, 2, 3), True),
    ("expand_same", lambda T, x: x.expand(2, 3), True), ("narrow", lambda T, x: x.narrow(1, 1, 2), True),
    ("select", lambda T, x: x.select(1, -1), True), ("diagonal", lambda T, x: x.diagonal(1), True),
    ("movedim", lambda T, x: x.movedim(0, 1), True), ("T", lambda T, x: x.T, True), ("mT", lambda T, x: x.mT, True),
    ("mH", lambda T, x: x.mH, True), ("t", lambda T, x: x.t(), True), ("adjoint", lambda T, x: x.adjoint(), True),
    ("transpose", lambda T, x: x.transpose(0, 1), True), ("permute", lambda T, x: x.permute(1, 0), True),
    ("split", lambda T, x: x.split(1)[1], True), ("chunk", lambda T, x: x.chunk(3, 1)[2], True),
    ("unbind", lambda T, x: x.unbind(1)[0], True), ("tensor_split", lambda T, x: x.tensor_split(2, 1)[1], True),
    ("hsplit", lambda T, x: T.hsplit(x, 3)[0], True), ("contiguous", lambda T, x: x.contiguous(), None),
    ("contiguous_noncontig", lambda T, x: x.t().contiguous(), False), ("ellipsis", lambda T, x: x[...], True),
    ("none", lambda T, x: x[None], True), ("colon", lambda T, x: x[:], True), ("int", lambda T, x: x[1], True),
    ("step", lambda T, x: x[:, ::2], True), ("list", lambda T, x: x[[0]], False),
    ("long_tensor", lambda T, x: x[T.tensor([1, 0])], False), ("mask", lambda T, x: x[x > 2], False),
    ("true", lambda T, x: x[True], False), ("zero_d_index", lambda T, x: x[T.tensor(1)], True),
    ("flip", lambda T, x: x.flip(0), False), ("to_same", lambda T, x: x.to(x.dtype), None),
    ("type_as_same", lambda T, x: x.type_as(x), None), ("float_same", lambda T, x: x.float(), None),
    ("to_double", lambda T, x: x.double(), False), ("clone", lambda T, x: x.clone(), False),
    ("rot90_0", lambda T, x: x.rot90(0), False), ("rot90_4", lambda T, x: x.rot90(4), False),
    ("rot90_1", lambda T, x: x.rot90(1), False), ("repeat_interleave_1", lambda T, x: x.repeat_interleave(1), False),
    ("repeat_interleave_1_dim", lambda T, x: x.repeat_interleave(1, dim=0), False),
    ("repeat_1", lambda T, x: x.repeat(1, 1), False), ("pixel_shuffle_1", lambda T, x: _ps(T, x, "pixel_shuffle"), False),
    ("pixel_unshuffle_1", lambda T, x: _ps(T, x, "pixel_unshuffle"), False),
    ("einsum_transpose", lambda T, x: T.einsum("ij->ji", x), True), ("einsum_same", lambda T, x: T.einsum("ij", x), True),
    ("einsum_diag", lambda T, x: T.einsum("ii->i", x[:, :2]), True),
    ("einsum_ellipsis", lambda T, x: T.einsum("i...->...i", x), True),
    ("einsum_sum", lambda T, x: T.einsum("ij->j", x), False), ("unfold", lambda T, x: x.unfold(1, 2, 1), True),
    ("view_dtype_same", lambda T, x: x.view(T.float32), False), ("atleast_3d", lambda T, x: T.atleast_3d(x), True),
    ("broadcast_tensors", lambda T, x: T.broadcast_tensors(x, T.zeros(2, 2, 3))[0], True),
    ("swapaxes", lambda T, x: x.swapaxes(0, 1), True), ("view_as", lambda T, x: x.view_as(x), True),
]


def _view_facts(T, name, fn):
    x = T.arange(6.).reshape(2, 3).clone()
    r = fn(T, x)
    facts = [tuple(r.shape), r._is_view(), r._base is x if r._is_view() else None, r is x]
    with T.no_grad():   # write-through both ways
        x.view(-1)[5] = 100.
        seen = _desc(r)
        flat = r.reshape(-1)
        if r.numel() and flat._is_view():
            flat[0] = -7.
    facts += [seen, _desc(x)]
    return facts


@pytest.mark.parametrize("name,fn,is_view", VIEW_OPS, ids=[v[0] for v in VIEW_OPS])
def test_views_and_copies(name, fn, is_view):
    facts = _view_facts(retrograd, name, fn)
    if is_view is not None:
        assert (facts[2] is True) is is_view   # a view of x itself, or not
    if torch is not None:
        assert facts == _view_facts(torch, name, fn)


def test_copy_ops_do_not_write_through():
    x = retrograd.arange(6.).reshape(2, 3).clone()
    for r in (retrograd.nn.functional.pixel_shuffle(x.reshape(1, 1, 2, 3), 1), x.repeat_interleave(1), x.rot90(0),
              x.rot90(4)):
        r.mul_(10)
    np.testing.assert_array_equal(x.numpy(), np.arange(6.).reshape(2, 3))
    leaf = retrograd.ones(1, 4, 1, 1, requires_grad=True)
    out = retrograd.nn.functional.pixel_shuffle(leaf, 1)
    out.mul_(10)     # a copy, not a view of the leaf: allowed and the leaf is untouched
    np.testing.assert_array_equal(leaf.detach().numpy(), np.ones((1, 4, 1, 1)))


def _einsum_chain(T, L):
    x = T.arange(27.).reshape(3, 3, 3).requires_grad_()
    for eq in ("iij->ji", "iii->i", "ijk->kji", "bii->bi", "ijj->i", "ii...->...", "ijk->"):
        r = T.einsum(eq, x)
        names, f = [], r.grad_fn
        while f is not None and f.name() != "torch::autograd::AccumulateGrad" and f.name() != "AccumulateGrad":
            names.append(f.name())
            f = f.next_functions[0][0]
        L += [eq, r, names, r._is_view()]


@needs_torch
def test_einsum_single_operand_history():
    _parity(_einsum_chain)


def test_einsum_single_operand_gradcheck():
    x = retrograd.tensor(np.random.RandomState(0).uniform(-1, 1, (3, 3, 2)), requires_grad=True)
    for eq in ("iij->ji", "iij->j", "ijk->kji", "iik->", "ijk->ik"):
        assert gradcheck(lambda t: retrograd.einsum(eq, t), (x,))
        assert gradgradcheck(lambda t: retrograd.einsum(eq, t), (x,))


def _einsum_errors(T, L):
    for eq, shape in (("ii->i", (2, 3)), ("ii", (0, 1)), ("iij->j", (1, 2, 2))):
        try:
            L.append(T.einsum(eq, T.zeros(shape)))
        except RuntimeError as e:
            L.append(str(e))


@needs_torch
def test_einsum_repeated_subscript_sizes():
    _parity(_einsum_errors)


# --- boolean masks and index tensors on 0-d and empty tensors --------------------------------

def test_zero_d_mask_assignment_selecting_nothing():
    x = retrograd.tensor(-0.4)
    x[x > 0] = 0.
    assert x.item() == pytest.approx(-0.4)
    x[x < 0] = 2.
    assert x.item() == 2.
    y = retrograd.tensor(-0.4, requires_grad=True) * 1
    w = retrograd.tensor(3., requires_grad=True)
    y[y > 0] = w
    y.backward()
    assert w.grad.item() == 0.


SHAPES = [(), (1,), (3,), (2, 3), (0,), (0, 2), (2, 0)]
INDEX = {
    "mask_0d_true": lambda T, x: T.tensor(True), "mask_0d_false": lambda T, x: T.tensor(False),
    "mask": lambda T, x: x > 0, "mask_none": lambda T, x: x > 100, "int_0d": lambda T, x: T.tensor(0),
    "int_0d_neg": lambda T, x: T.tensor(-1), "True": lambda T, x: True, "False": lambda T, x: False,
    "None": lambda T, x: None, "ellipsis": lambda T, x: Ellipsis, "empty_list": lambda T, x: [],
    "empty_long": lambda T, x: T.tensor([], dtype=T.long), "empty_mask": lambda T, x: T.zeros(0, dtype=T.bool),
    "mask_0d_ellipsis": lambda T, x: (T.tensor(True), Ellipsis), "none_false": lambda T, x: (None, T.tensor(False)),
    "uint8_0d": lambda T, x: T.tensor(1, dtype=T.uint8), "mask_and_int": lambda T, x: (T.tensor(True), 0),
    "int": lambda T, x: 0, "slice": lambda T, x: slice(None), "true_false": lambda T, x: (True, False),
    "long_2d": lambda T, x: T.tensor([[0]]), "mask_1": lambda T, x: T.tensor([True]),
}
VALUES = {"number": lambda T: 0., "0d": lambda T: T.tensor(7.), "1d": lambda T: T.tensor([7.]),
          "grad": lambda T: T.tensor(5., requires_grad=True)}


def _index_program(shape, iname, vname):
    def prog(T, L):
        x = (T.arange(float(int(np.prod(shape)))) - 1.5).reshape(shape)
        r = x[INDEX[iname](T, x)]
        L += [r, r._is_view() and r._base is x]
        y = x * 1
        v = VALUES[vname](T)
        y[INDEX[iname](T, y)] = v
        L.append(y)
        if vname == "grad":
            L.append(_gname(y))
            (y * T.arange(1., y.numel() + 1).reshape(y.shape)).sum().backward()
            L.append(v.grad)
    return prog


@needs_torch
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_indexing_edges(shape):
    for iname in INDEX:
        for vname in VALUES:
            _parity(_index_program(shape, iname, vname))


def test_negative_slice_step_refused():
    x = retrograd.arange(4.)
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1] = 0.


# --- writes into memory that several elements share ------------------------------------------

INTERNAL = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation.")
PARTIAL = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
           "memory location. Please clone() the tensor before performing the operation.")


def test_expanded_write_errors():
    a = retrograd.tensor([1., 2.])
    a.expand(1, 2)[0].add_(1.)          # no element shared: allowed, writes through
    np.testing.assert_array_equal(a.numpy(), [2., 3.])
    with pytest.raises(RuntimeError) as e:
        retrograd.tensor([1.]).expand(1, 2)[0].add_(1.)
    assert str(e.value) == INTERNAL
    x = retrograd.arange(5.)
    with pytest.raises(RuntimeError) as e:
        x[1:].add_(x[:-1])
    assert str(e.value) == PARTIAL
    np.testing.assert_array_equal(x.numpy(), np.arange(5.))


def _e(T):
    return T.zeros(1).expand(3)


EXPANDED = {
    "fill_number": lambda T: _e(T).fill_(1.), "zero_": lambda T: _e(T).zero_(), "normal_": lambda T: _e(T).normal_(),
    "copy_": lambda T: _e(T).copy_(T.ones(3)), "setitem_int": lambda T: _e(T).__setitem__(0, 1.),
    "setitem_all": lambda T: _e(T).__setitem__(slice(None), 1.), "setitem_ellipsis": lambda T: _e(T).__setitem__(Ellipsis, 1.),
    "setitem_list": lambda T: _e(T).__setitem__([0], 1.),
    "setitem_mask": lambda T: _e(T).__setitem__(T.tensor([True, False, False]), 1.),
    "exp_": lambda T: _e(T).exp_(), "mul_tensor": lambda T: _e(T).mul_(T.ones(3)), "relu_": lambda T: _e(T).relu_(),
    "clamp_": lambda T: _e(T).clamp_(0, 1), "index_put_": lambda T: _e(T).index_put_((T.tensor([0]),), T.tensor(1.)),
    "index_put_acc": lambda T: _e(T).index_put_((T.tensor([0]),), T.ones(1), accumulate=True),
    "masked_fill_": lambda T: _e(T).masked_fill_(T.tensor([True, False, False]), 1.),
    "index_fill_": lambda T: _e(T).index_fill_(0, T.tensor([0]), 1.), "squeeze_": lambda T: T.zeros(1, 1).expand(3, 1).squeeze_(),
    "out": lambda T: T.add(T.ones(3), 1, out=_e(T)), "scatter_": lambda T: _e(T).scatter_(0, T.tensor([0]), T.ones(1)),
    "triu_": lambda T: T.zeros(1, 1).expand(2, 2).triu_(), "F_relu": lambda T: T.nn.functional.relu(_e(T), inplace=True),
    "fill_tensor": lambda T: _e(T).fill_(T.tensor(2.)), "copy_0d": lambda T: _e(T).copy_(T.tensor(2.)),
    "addmm_": lambda T: T.zeros(1, 1).expand(2, 2).addmm_(T.ones(2, 2), T.ones(2, 2)),
    "empty": lambda T: T.zeros(2, 0).expand(3, 2, 0).mul_(2),
}
OVERLAPPING = {
    "partial_add": lambda T, x: x[1:].add_(x[:-1]), "full_add": lambda T, x: x.add_(x),
    "detached_add": lambda T, x: x.add_(x.detach()), "disjoint_add": lambda T, x: x[:3].add_(x[3:]),
    "copy_shifted": lambda T, x: x[1:].copy_(x[:-1]), "copy_same": lambda T, x: x.copy_(x.view(6)),
    "copy_transposed": lambda T, x: x.view(2, 3).copy_(x.view(3, 2).t()),
    "setitem_shifted": lambda T, x: x.__setitem__(slice(1, None), x[:-1]),
    "setitem_disjoint": lambda T, x: x.__setitem__(slice(0, 3), x[3:]),
    "interleaved": lambda T, x: x[::2].mul_(x[1::2]), "clamp_kwarg": lambda T, x: x[1:].clamp_(min=x[:-1]),
    "addcmul_": lambda T, x: x[1:].addcmul_(x[:-1], x[:-1]), "lerp_": lambda T, x: x[1:].lerp_(x[:-1], 0.5),
    "index_put_": lambda T, x: x.index_put_((T.tensor([0, 1]),), x[2:4]),
    "expanded_input": lambda T, x: x[:3].add_(x[5:].expand(3)),
}


def _overlap_program(name):
    def prog(T, L):
        if name in EXPANDED:
            L.append(EXPANDED[name](T))
        else:
            x = T.arange(6.)
            OVERLAPPING[name](T, x)
            L.append(x)
    return prog


@needs_torch
@pytest.mark.parametrize("name", list(EXPANDED) + list(OVERLAPPING))
def test_memory_overlap_parity(name):
    out = _parity(_overlap_program(name))
    if name == "normal_":
        assert out[0] == "raised RuntimeError: " + INTERNAL


def _overlap_through_view_backward(T, L):
    for k in range(3):
        w = T.tensor(2.0, requires_grad=True)
        buf = T.zeros(1)
        e = buf.unsqueeze(0).expand(2, 1)
        e[0] = w * 3                  # written through e[0]: no element shared
        if k:
            e.grad_fn                 # (else PyTorch's in-place check still sees e as a leaf)
        try:
            if k < 2:
                e[e > 0.5] = w * 1    # written through e itself: backward into buf refuses
            else:
                e[[0, 1]] = T.tensor([1., 2.])
            (buf * 2).sum().backward()
            L.append(w.grad)
        except RuntimeError as ex:
            L.append(str(ex))


@needs_torch
def test_write_through_expanded_view_backward():
    _parity(_overlap_through_view_backward)


# --- zero-size shape ops ---------------------------------------------------------------------

def test_cat_skips_legacy_empty_tensors():
    a = retrograd.zeros(0, requires_grad=True)
    b = retrograd.arange(6.).reshape(2, 3).requires_grad_()
    r = retrograd.cat([a, b], dim=-2)
    assert r.shape == (2, 3)
    (r * 2).sum().backward()
    assert a.grad.shape == (0,) and np.all(b.grad.numpy() == 2)
    assert retrograd.cat([retrograd.zeros(0), retrograd.zeros(0)], dim=3).shape == (0,)


ZERO = [(0,), (0, 3), (3, 0), (2, 0, 1), (1, 0)]
ZERO_OPS = {
    "cat_legacy": lambda T, x: T.cat([T.zeros(0), x, T.zeros(0)], dim=-1), "reshape_m1": lambda T, x: x.reshape(-1),
    "reshape_0_m1": lambda T, x: x.reshape(0, -1), "view_m1_0": lambda T, x: x.view(-1, 0),
    "flatten": lambda T, x: x.flatten(), "unflatten": lambda T, x: x.unflatten(-1, (1, -1)),
    "squeeze": lambda T, x: x.squeeze(), "expand": lambda T, x: x.expand(2, *x.shape), "flip": lambda T, x: x.flip(0),
    "roll": lambda T, x: x.roll(1), "repeat": lambda T, x: x.repeat(*([2] * x.ndim)),
    "repeat_interleave": lambda T, x: x.repeat_interleave(2, dim=-1), "split": lambda T, x: x.split(1, -1),
    "chunk": lambda T, x: x.chunk(2, -1), "unbind": lambda T, x: x.unbind(-1), "narrow": lambda T, x: x.narrow(-1, 0, 0),
    "diag_embed": lambda T, x: T.diag_embed(x), "movedim": lambda T, x: x.movedim(0, -1),
    "unfold": lambda T, x: x.unfold(-1, 0, 1), "stack": lambda T, x: T.stack([x, x], -1),
    "vstack": lambda T, x: T.vstack([x, x]), "index_empty": lambda T, x: x[T.tensor([], dtype=T.long)],
    "index_oob": lambda T, x: x[[0]], "mask": lambda T, x: x[x > 0], "einsum": lambda T, x: T.einsum("i...->...i", x),
    "split_sizes": lambda T, x: x.split([0, x.shape[-1]], -1),
}


def _zero_program(shape, name):
    def prog(T, L):
        x = T.zeros(shape, requires_grad=True)
        r = ZERO_OPS[name](T, x)
        outs = r if isinstance(r, tuple) else (r,)
        L.append(r)
        s = sum((o * 2).sum() for o in outs)
        if getattr(s, "requires_grad", False):
            s.backward()
            L.append(x.grad)
    return prog


@needs_torch
@pytest.mark.parametrize("shape", ZERO, ids=str)
def test_zero_size_shape_ops(shape):
    for name in ZERO_OPS:
        _parity(_zero_program(shape, name))


# --- random programs of views and in-place writes --------------------------------------------

def _apply_view(T, t, op, r):
    s = tuple(t.shape)
    nd = len(s)
    if op == "slice":
        d = r.randrange(nd)
        a = r.randrange(s[d] + 1)
        return t[(slice(None),) * d + (slice(a, r.randrange(a, s[d] + 1)),)]
    if op == "step":
        return t[(slice(None),) * r.randrange(nd) + (slice(None, None, r.randrange(1, 3)),)]
    if op == "select":
        d = r.randrange(nd)
        return t.narrow(d, 0, 0) if s[d] == 0 else t.select(d, r.randrange(-s[d], s[d]))
    if op == "unsqueeze":
        return t.unsqueeze(r.randrange(-nd - 1, nd + 1))
    if op == "squeeze":
        return t.squeeze() if r.random() < .5 or not nd else t.squeeze(r.randrange(nd))
    if op == "transpose":
        return t.transpose(r.randrange(nd), r.randrange(nd))
    if op in ("unbind", "split"):
        d = r.randrange(nd)
        outs = t.unbind(d) if op == "unbind" else t.split(r.randrange(1, 3) if s[d] else 1, d)
        return outs[r.randrange(len(outs))] if outs else t
    if op == "flat":
        return t.reshape(-1)
    if op == "expand":
        return t.unsqueeze(0).expand(2, *s)
    if op == "mask":
        return t[t > 0.3]
    if op == "diagonal":
        return t.diagonal(r.randrange(-1, 2), 0, 1)
    if op == "permute":
        p = list(range(nd))
        r.shuffle(p)
        return t.permute(*p)
    if op == "einsum":
        return T.einsum("ij...->ji...", t)
    return t[None]


def _apply_write(T, t, op, r, w):
    nd = t.ndim
    if op == "mul_":
        t.mul_(2.5)
    elif op == "add_w":
        t.add_(w)
    elif op == "exp_":
        t.exp_()
    elif op == "zero_":
        t.zero_()
    elif op == "setitem":
        t[slice(None, 1) if nd else Ellipsis] = w
    elif op == "setitem_int":
        if nd and t.shape[0]:
            t[r.randrange(t.shape[0])] = w * 3
    elif op == "setitem_mask":
        t[t > 0.5] = w
    elif op == "copy_w":
        t.copy_(w.expand(*t.shape))
    elif op == "squeeze_":
        t.squeeze_()
    elif op == "unsqueeze_":
        t.unsqueeze_(0)


WRITES = ["mul_", "add_w", "exp_", "zero_", "setitem", "setitem_int", "setitem_mask", "copy_w", "squeeze_", "unsqueeze_"]


def _random_program(seed):
    def prog(T, L):
        r = random.Random(seed)
        shape = r.choice([(), (1,), (3,), (2, 3), (3, 1), (0,), (2, 0), (2, 2, 2)])
        xn = np.random.RandomState(seed).uniform(-1, 1, shape)
        x = T.tensor(xn, requires_grad=True)
        w = T.tensor(0.7, dtype=T.float64, requires_grad=True)
        base = [lambda: x * 1, lambda: T.zeros(shape, dtype=T.float64), lambda: x.detach().clone()][r.randrange(3)]()
        pool = [base]
        for _ in range(r.randrange(2, 7)):
            if r.random() < 0.6:
                src = r.choice(pool)
                ops = ["unsqueeze", "expand", "flat", "squeeze", "none"]
                if src.ndim:
                    ops += ["slice", "step", "select", "transpose", "unbind", "split", "mask"]
                if src.ndim >= 2:
                    ops += ["diagonal", "permute", "einsum"]
                op = r.choice(ops)
                if r.random() < 0.15:
                    with T.no_grad():
                        pool.append(_apply_view(T, src, op, r))
                else:
                    pool.append(_apply_view(T, src, op, r))
                L.append(op)
            else:
                op = r.choice(WRITES)
                L.append(op)
                try:
                    if r.random() < 0.15:
                        with T.no_grad():
                            _apply_write(T, r.choice(pool), op, r, w)
                    else:
                        _apply_write(T, r.choice(pool), op, r, w)
                except RuntimeError as e:
                    L.append(str(e))
            L.append([(p, p.requires_grad, _gname(p), p._is_view(), p._version) for p in pool])
        loss = None
        for i, p in enumerate(pool):
            try:
                if p.requires_grad:
                    c = T.tensor(np.random.RandomState(seed + i).uniform(-1, 1, tuple(p.shape)))
                    loss = (p * c).sum() if loss is None else loss + (p * c).sum()
            except RuntimeError as e:
                L.append(str(e))
        if loss is not None:
            try:
                loss.backward()
                L += [x.grad, w.grad]
            except RuntimeError as e:
                msg = str(e)
                # (a shape changed in place under no_grad: both refuse, in their own words)
                L.append("invalid gradient shape" if "invalid gradient" in msg or "not expandable" in msg else msg)
    return prog


@needs_torch
def test_random_view_programs():
    for seed in range(200):
        _parity(_random_program(seed))


# --- as_strided, copies of views, scatters into views, unsafe splits ----------------------------

def _w(T, shape):
    return T.arange(1., 1 + int(np.prod(shape))).reshape(shape)


STRIDED = {
    "as_strided": lambda T, y: y.as_strided((2, 2), (1, 2), 1), "as_strided_fn": lambda T, y: T.as_strided(y, (3,), (2,)),
    "as_strided_of_view": lambda T, y: y[1].as_strided((2,), (1,)),
    "as_strided_outside_input": lambda T, y: y[1].as_strided((2,), (1,), 0),
    "as_strided_out_of_bounds": lambda T, y: y.as_strided((7,), (1,)),
    "as_strided_transposed": lambda T, y: y.t().as_strided((2, 3), (3, 1)),
    "as_strided_empty": lambda T, y: y.as_strided((0, 2), (1, 1), 100),
    "narrow_copy": lambda T, y: y.narrow_copy(1, 1, 2), "select_scatter": lambda T, y: T.select_scatter(y, y[0] * 2, 0, 1),
    "slice_scatter": lambda T, y: T.slice_scatter(y, y[:, :1] * 3, 1, 1, 2),
    "slice_scatter_step": lambda T, y: T.slice_scatter(y, y[:, :2] * 3, 1, 0, None, 2),
    "diagonal_scatter": lambda T, y: T.diagonal_scatter(y, y[0, :2] * 5),
    "diagonal_scatter_offset": lambda T, y: T.diagonal_scatter(y, y[0, :2] * 5, 1),
    "select_scatter_bad_size": lambda T, y: T.select_scatter(y, y[0, :2], 0, 1),
    "unsafe_split": lambda T, y: y.unsafe_split(1), "unsafe_chunk": lambda T, y: y.unsafe_chunk(2, 1),
    "unsafe_split_with_sizes": lambda T, y: y.unsafe_split_with_sizes([1, 2], 1),
    "split_with_sizes": lambda T, y: T.split_with_sizes(y, [1, 2], 1), "diagflat": lambda T, y: T.diagflat(y),
    "diagflat_offset": lambda T, y: T.diagflat(y[0], -1), "H": lambda T, y: y.H, "H_1d": lambda T, y: y[0].H,
    "view_copy": lambda T, y: T.view_copy(y, (6,)), "expand_copy": lambda T, y: T.expand_copy(y, (2, 2, 3)),
    "permute_copy": lambda T, y: T.permute_copy(y, (1, 0)), "t_copy": lambda T, y: T.t_copy(y),
    "transpose_copy": lambda T, y: T.transpose_copy(y, 0, 1), "unsqueeze_copy": lambda T, y: T.unsqueeze_copy(y, 1),
    "squeeze_copy": lambda T, y: T.squeeze_copy(y[:1]), "diagonal_copy": lambda T, y: T.diagonal_copy(y),
    "select_copy": lambda T, y: T.select_copy(y, 1, 2), "slice_copy": lambda T, y: T.slice_copy(y, 1, 0, 2),
    "alias_copy": lambda T, y: T.alias_copy(y), "unbind_copy": lambda T, y: T.unbind_copy(y, 1),
    "split_copy": lambda T, y: T.split_copy(y, 2, 1), "unfold_copy": lambda T, y: T.unfold_copy(y, 1, 2, 1),
}


def _strided_program(name):
    def prog(T, L):
        x = (T.arange(6.).reshape(2, 3) * 1.5 - 2).requires_grad_()
        y = x * 1
        r = STRIDED[name](T, y)
        outs = r if isinstance(r, tuple) else (r,)
        L += [r, [(_gname(o), o._is_view(), o._base is y if o._is_view() else None) for o in outs]]
        sum((o * _w(T, tuple(o.shape))).sum() for o in outs).backward()
        L.append(x.grad)
        try:
            outs[0].mul_(2)     # a view, a copy, or an unsafe split (writes allowed)
            L.append(y)
        except RuntimeError as e:
            L.append(str(e))
    return prog


@needs_torch
@pytest.mark.parametrize("name", list(STRIDED))
def test_strided_and_copy_ops(name):
    _parity(_strided_program(name))


UNSAFE_SPLITS = {
    "unsafe_split": lambda y: y.unsafe_split(1), "unsafe_chunk": lambda y: y.unsafe_chunk(2, 1),
    "unsafe_split_with_sizes": lambda y: y.unsafe_split_with_sizes([1, 3], 1),
}


@needs_torch
@pytest.mark.parametrize("name", list(UNSAFE_SPLITS))
def test_unsafe_split_outputs_have_their_own_version_counter(name):
    """An unsafe split's outputs share memory with the input but not its version counter (nor
    each other's): writing one in place neither bumps the input's counter nor invalidates what
    a node saved of the input or of a sibling, so backward runs (on the written values)."""
    def prog(T, L):
        x = (T.arange(1., 9., dtype=T.float64).reshape(2, 4) / 4).requires_grad_()
        y = x.exp()                      # saves y
        a, b = UNSAFE_SPLITS[name](y)[:2]
        L.append([a._version, b._version, y._version])
        e = b.exp()                      # saves b
        a.mul_(3)
        L.append([a._version, b._version, y._version, _gname(a)])
        b2 = a.sin_()                    # another write, to a sibling of the saved b
        (y.sum() + e.sum() + b2.sum()).backward()
        L += [y, x.grad]
        y.add_(1)                        # the input's own counter still guards its saved uses
        L.append([a._version, y._version])
        (y * 1).sum().backward()
        L.append(x.grad)
    out = _parity(prog)
    assert out[0] == ("list", [0, 0, 0]) and out[1][1][:3] == [1, 0, 0]


def test_as_strided_and_scatter_gradcheck():
    rs = np.random.RandomState(1)
    x = retrograd.tensor(rs.uniform(-1, 1, (3, 4)), requires_grad=True)
    s = retrograd.tensor(rs.uniform(-1, 1, (3,)), requires_grad=True)
    fns = [lambda a, b: (a * 1).as_strided((2, 3), (1, 2), 1),          # overlapping elements sum
           lambda a, b: (a * 1)[1:].as_strided((3, 2), (1, 4), 4),       # of a view, non-contiguous
           lambda a, b: retrograd.diagonal_scatter(a, b),
           lambda a, b: retrograd.select_scatter(a, b, 1, 2),
           lambda a, b: retrograd.slice_scatter(a, b.reshape(3, 1), 1, 1, 2),
           lambda a, b: retrograd.narrow_copy(a, 0, 1, 2) * b.sum()]
    for f in fns:
        assert gradcheck(f, (x, s))
        assert gradgradcheck(f, (x, s))


# --- random index expressions: t[idx] and t[idx] = v ------------------------------------------

def _random_index(r, shape, T):
    items, nd, d, ell = [], len(shape), 0, False
    for _ in range(r.randrange(0, nd + 2)):
        c = r.random()
        if c < 0.25 and d < nd:
            n = shape[d]
            items.append(r.randrange(-n, n) if n else 0)
            d += 1
        elif c < 0.5 and d < nd:
            n = shape[d]
            a, b = r.randrange(-n - 1, n + 2), r.randrange(-n - 1, n + 2)
            items.append(slice(r.choice([None, a]), r.choice([None, b]), r.choice([None, 1, 2, 3])))
            d += 1
        elif c < 0.6:
            items.append(None)
        elif c < 0.65 and not ell:
            items.append(Ellipsis)
            ell, d = True, nd
        elif c < 0.8 and d < nd:
            n = shape[d]
            items.append(T.tensor([r.randrange(-n, n) for _ in range(r.randrange(0, 3))] if n else [], dtype=T.long))
            d += 1
        elif c < 0.9 and d < nd:
            items.append(T.tensor(np.random.RandomState(r.randrange(1000)).rand(shape[d]) > 0.5))
            d += 1
        elif c < 0.95:
            items.append(r.choice([True, False]))
        elif d < nd:
            n = shape[d]
            items.append([r.randrange(-n, n) for _ in range(2)] if n else [])
            d += 1
    return items[0] if len(items) == 1 and r.random() < 0.5 else tuple(items)


def _index_fuzz_program(seed):
    def prog(T, L):
        r = random.Random(seed)
        shape = r.choice([(), (1,), (4,), (2, 3), (3, 1, 2), (0, 2), (2, 0)])
        idx = _random_index(r, shape, T)
        x = T.tensor(np.random.RandomState(seed).uniform(-1, 1, shape), requires_grad=True)
        try:
            g = (x * 1)[idx]
            L += [g, _gname(g), g._is_view()]
            (g * T.tensor(np.random.RandomState(seed + 1).uniform(-1, 1, tuple(g.shape)))).sum().backward()
            L.append(x.grad)
        except (IndexError, RuntimeError, ValueError, TypeError) as e:
            L.append(f"{type(e).__name__}: {e}")
        x2 = T.tensor(np.random.RandomState(seed).uniform(-1, 1, shape), requires_grad=True)
        y2 = x2 * 1
        w = T.tensor(0.5, dtype=T.float64, requires_grad=True)
        y2[idx] = [w, 3.0, w.expand(2)][r.randrange(3)]
        L += [y2, _gname(y2)]
        (y2 * T.tensor(np.random.RandomState(seed + 2).uniform(-1, 1, shape))).sum().backward()
        L += [x2.grad, w.grad]
    return prog


@needs_torch
def test_random_index_expressions():
    for seed in range(300):
        _parity(_index_fuzz_program(seed))


def _clone_layouts(lib):
    x = lib.arange(12.).reshape(3, 4).t()
    return [x.clone(), x[:, ::2].clone(), lib.arange(24.).reshape(2, 3, 4).permute(2, 0, 1)[:, :, ::2].clone(),
            lib.arange(3.)[:, None].expand(3, 4).clone(), lib.arange(3.)[None, :, None].expand(4, 3, 5).clone()]


@needs_torch
def test_clone_preserves_the_order_of_strides_as_torch():
    """clone() keeps a permuted input's layout (preserve_format), so a later view() of the
    clone fails exactly where PyTorch's does; expanded inputs give contiguous copies."""
    for a, b in zip(_clone_layouts(retrograd), _clone_layouts(torch)):
        assert a.stride() == b.stride() and a.is_contiguous() == b.is_contiguous()
        assert a.tolist() == b.tolist()
        try:
            b.view(-1)
        except RuntimeError as e:
            with pytest.raises(RuntimeError, match=re.escape(str(e))):
                a.view(-1)
        else:
            assert a.view(-1).tolist() == b.view(-1).tolist()
