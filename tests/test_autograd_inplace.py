"""In-place safety: version counters, PyTorch's error at backward time, leaves refused
before their data is touched, history rebased (CopySlices for views)."""
import numpy as np
import pytest

import retrograd
from helpers import torch, needs_torch

HINT = ("Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
        "with torch.autograd.set_detect_anomaly(True, check_nan=False).")


def _vals(x):
    return None if x is None else np.round(np.asarray(x.detach().numpy(), dtype=float), 5).tolist()


def _error(lib, fn):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    try:
        fn(lib, x)
    except RuntimeError as e:
        return str(e), _vals(x.grad)
    return None, _vals(x.grad)


def _mul(lib, x):
    a = x * 1
    y = a * a
    a.mul_(2)
    y.sum().backward()


def _exp(lib, x):
    y = x.exp()
    y.add_(1)
    y.sum().backward()


def _sigmoid(lib, x):
    y = x.sigmoid()
    y.mul_(2)
    y.sum().backward()


def _pow(lib, x):
    a = x * 1
    y = a ** 2
    a.add_(1)
    y.sum().backward()


def _pow_tensor(lib, x):
    a = x * 1
    y = a ** a
    a.sub_(1)
    y.sum().backward()


def _view(lib, x):
    a = x * 1
    v = a.view(3)
    y = v * v
    a.add_(1)
    y.sum().backward()


def _double(lib, x):
    a = (x * 1).double()
    y = a.exp()
    y.div_(2)
    y.sum().backward()


def _leaf_no_grad(lib, x):
    y = x * x
    with lib.no_grad():
        x.add_(1)
    y.sum().backward()


CASES = {"mul": (_mul, "Mul", 1, "FloatTensor"), "exp": (_exp, "Exp", 1, "FloatTensor"),
         "sigmoid": (_sigmoid, "Sigmoid", 1, "FloatTensor"), "pow": (_pow, "Add", 1, "FloatTensor"),
         "pow_tensor": (_pow_tensor, "Sub", 1, "FloatTensor"), "view": (_view, None, 1, "FloatTensor"),
         "double": (_double, "Exp", 1, "DoubleTensor"), "leaf": (_leaf_no_grad, None, 1, "FloatTensor")}


@pytest.mark.parametrize("case", list(CASES))
def test_modified_saved_tensor_raises_at_backward(case):
    fn, op, version, tname = CASES[case]
    msg, grad = _error(retrograd, fn)
    where = f", which is output 0 of {op}," if op else ""
    expected = ("one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: [torch.{tname} [3]]{where} is at version {version}; expected version 0 instead. "
                + HINT)
    if case == "view":
        # The saved view's grad_fn is shown as rebuilt after its base changed (PyTorch's AsStrided).
        expected = expected.replace("[3]]", "[3]], which is output 0 of AsStrided,")
    assert msg == expected
    if torch is not None:
        assert (msg, grad) == _error(torch, fn)
    assert grad is None


def test_hint_under_anomaly_mode():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with retrograd.autograd.detect_anomaly():
            msg, _ = _error(retrograd, _mul)
    assert msg.endswith("Hint: the backtrace further above shows the operation that failed to compute its "
                        "gradient. The variable in question was changed in there or anywhere later. Good luck!")


@pytest.mark.parametrize("op", ["add_", "mul_", "sub_", "div_", "exp_", "relu_", "clamp_"])
def test_leaf_in_place_refused_before_touching_data(op):
    x = retrograd.tensor([1.0, -2.0, 3.0], requires_grad=True)
    fn = getattr(x, op, None)
    if fn is None:
        pytest.skip(f"{op} is not defined yet")
    args = {"add_": (1.0,), "mul_": (2.0,), "sub_": (1.0,), "div_": (2.0,), "clamp_": (0.0, 1.0)}.get(op, ())
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place "
                       "operation."):
        fn(*args)
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, -2.0, 3.0])
    assert x._version_value == 0 and x.grad_fn is None


def test_view_of_leaf_in_place_refused():
    x = retrograd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = x[1:]
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                       "in-place operation."):
        v.mul_(2)
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, 2.0, 3.0])


def test_leaf_in_place_allowed_under_no_grad():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    with retrograd.no_grad():
        x.mul_(2)
    assert x.is_leaf and x.requires_grad and x._version_value == 1
    np.testing.assert_array_equal(x.detach().numpy(), [2.0, 4.0])


def test_versions_shared_with_views_and_bumped():
    x = retrograd.tensor([1.0, 2.0, 3.0])
    v = x[1:]
    w = x.view(3, 1)
    d = x.detach()
    x.add_(1)
    assert x._version_value == v._version_value == w._version_value == d._version_value == 1
    v.mul_(2)
    assert x._version_value == 2
    np.testing.assert_array_equal(x.numpy(), [2.0, 6.0, 8.0])


def rebase_cases(lib):
    out = {}
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)

    y = x * 2
    y.mul_(3)                        # in place on a non-leaf: history rebased
    y.sum().backward()
    out["nonleaf"] = (type(y.grad_fn).__name__, _vals(x.grad))
    x.grad = None

    y = x * 2
    v = y[1:]
    v.mul_(3)                        # in place on a view of a non-leaf: CopySlices
    y.sum().backward()
    out["view_base"] = (type(y.grad_fn).__name__, _vals(x.grad),
                        [type(f).__name__ if f is not None else None for f, _ in y.grad_fn.next_functions])
    x.grad = None

    y = x * 2
    v = y[1:]
    v.mul_(3)
    v.sum().backward()               # the view's own grad_fn is replayed from the base's new history
    out["view_itself"] = _vals(x.grad)
    x.grad = None

    y = x * 2
    v = y[1:]
    y.mul_(3)                        # the base changes: the view's grad_fn follows
    v.sum().backward()
    out["base_then_view"] = _vals(x.grad)
    x.grad = None

    y = x * 2
    v = y.view(3)
    v.exp_()                         # an op that saves its output, on a view
    y.sum().backward()
    out["view_exp"] = np.round(_vals(x.grad), 3).tolist()
    x.grad = None

    y = x * 2
    v = y[:2]
    w = v[1:]                        # a view of a view
    w.mul_(10)
    y.sum().backward()
    out["view_of_view"] = _vals(x.grad)
    x.grad = None

    b = lib.zeros(3)
    b[1:].add_(x[1:] * 1)            # a plain tensor takes part in autograd through its view
    b.sum().backward()
    out["plain_base"] = (b.requires_grad, type(b.grad_fn).__name__, _vals(x.grad))
    x.grad = None

    y = x * 2
    y.retain_grad()
    y.add_(1)
    (y * y).sum().backward()
    out["retain_moves"] = (_vals(y.grad), _vals(x.grad))
    x.grad = None

    y = x * 1
    v = y[:2]
    z = y * y                        # y saved by mul; writing through the view invalidates it
    v.add_(1)
    try:
        z.sum().backward()
        out["view_write_saved"] = None
    except RuntimeError as e:
        out["view_write_saved"] = str(e).split("]]")[0]
    return out


def test_rebase_history_and_copy_slices():
    r = rebase_cases(retrograd)
    assert r["view_base"][:2] == ("CopySlices", [2.0, 6.0, 6.0])
    assert r["view_itself"] == [0.0, 6.0, 6.0]
    assert r["base_then_view"] == [0.0, 6.0, 6.0]
    if torch is not None:
        t = rebase_cases(torch)
        for k in r:
            assert r[k] == t[k], k


def test_copy_slices_double_backward():
    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        y = x * x
        y[1:].mul_(x[1:])
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return _vals(g), _vals(gg)
    r = run(retrograd)
    assert r == ([2.0, 12.0, 27.0], [2.0, 12.0, 18.0])
    if torch is not None:
        assert r == run(torch)


@pytest.mark.skipif(not hasattr(retrograd.Tensor, "__setitem__"), reason="setitem comes with the indexing ops")
def test_copy_slices_setitem_example():
    x = retrograd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y[0] = 0
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 2.0, 2.0])
    assert type(y.grad_fn).__name__ == "CopySlices"


def test_in_place_result_dtype_checked_before_writing():
    x = retrograd.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        x.mul_(1.5)
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3])
    assert x._version_value == 0


@needs_torch
def test_saved_tensor_hooks_skip_version_check():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda p: p):
            a = x * 1
            y = a * a
        a.mul_(2)     # the packed copies are what backward uses
        y.sum().backward()
        return _vals(x.grad)
    assert run(retrograd) == run(torch) == [2.0, 4.0]


INPLACE_OPS = {
    "zero_": lambda lib, t: t.zero_(), "fill_": lambda lib, t: t.fill_(3.0),
    "copy_": lambda lib, t: t.copy_(lib.ones(3)), "clamp_": lambda lib, t: t.clamp_(0, 3),
    "relu_": lambda lib, t: t.relu_(), "exp_": lambda lib, t: t.exp_(), "div_": lambda lib, t: t.div_(2),
    "sub_": lambda lib, t: t.sub_(1), "setitem": lambda lib, t: t.__setitem__(0, 5.0),
    "setitem_tensor": lambda lib, t: t.__setitem__(slice(1, None), lib.ones(2)),
    "masked_fill_": lambda lib, t: t.masked_fill_(t > 3, 0.0), "index_put": lambda lib, t: t.__setitem__([0, 2], 1.0),
}


def _inplace_case(lib, op):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    z = y * y                                    # saves y
    v0 = y._version_value if lib is retrograd else y._version
    op(lib, y)
    bumped = (y._version_value if lib is retrograd else y._version) - v0
    msg = None
    try:
        z.sum().backward()
    except RuntimeError as e:
        msg = str(e)
    y = x * 2
    op(lib, y)
    (y * x).sum().backward()
    return bumped, type(y.grad_fn).__name__, msg, _vals(x.grad)


@pytest.mark.parametrize("op", list(INPLACE_OPS))
def test_every_in_place_op_bumps_and_rebases(op):
    r = _inplace_case(retrograd, INPLACE_OPS[op])
    assert r[0] == 1 and r[2] is not None and r[2].startswith("one of the variables needed")
    if torch is not None:
        assert r == _inplace_case(torch, INPLACE_OPS[op])


def test_out_write_bumps_version():
    t = retrograd.zeros(3)
    retrograd.exp(retrograd.ones(3), out=t)
    assert t._version_value == 1


@needs_torch
def test_copy_and_fill_gradients():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        s = lib.tensor([5.0], dtype=lib.float64, requires_grad=True)
        v = lib.tensor(3.0, requires_grad=True)
        y = x * 1
        y.copy_(s)
        (y * x).sum().backward()
        y = x * 1
        y.fill_(v)
        (y * x).sum().backward()
        w = lib.zeros(2)
        w.copy_(x)
        return _vals(x.grad), _vals(s.grad), str(s.grad.dtype), _vals(v.grad), type(w.grad_fn).__name__
    assert run(retrograd) == run(torch)


def test_copy_errors_leave_destination_alone():
    t = retrograd.ones(3)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(2\) at "
                       r"non-singleton dimension 0"):
        t.copy_(retrograd.ones(2))
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        t.copy_(retrograd.ones(2, 3))
    x = retrograd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x.copy_(retrograd.zeros(3))
    np.testing.assert_array_equal(t.numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, 2.0, 3.0])
    assert t._version_value == 0


def test_version_attribute_like_torch():
    def run(lib):
        x = lib.zeros(3)
        v = x[1:]
        out = [x._version]
        x.add_(1)
        v.mul_(2)
        out += [x._version, v._version, x.detach()._version, type(x._version).__name__ == "int" or
                isinstance(x._version, int)]
        with lib.inference_mode():
            t = lib.ones(1)
        try:
            t._version
        except RuntimeError as e:
            out.append(str(e))
        return out
    r = run(retrograd)
    assert r[:4] == [0, 2, 2, 2] and r[4] is True
    if torch is not None:
        assert r == run(torch)


def test_view_made_under_no_grad_refuses_tracked_in_place():
    def run(lib):
        out = []
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        with lib.no_grad():
            v = y[1:]
            vv = x[1:]
        for t in (v, vv):
            try:
                t.mul_(2)
                out.append("ok")
            except RuntimeError as e:
                out.append(str(e))
        out.append(_vals(y))
        with lib.no_grad():
            v.mul_(2)               # both inside no_grad: allowed, not tracked
        out.append((_vals(y), type(y.grad_fn).__name__))
        z = lib.ones(3)
        with lib.no_grad():
            w = z[1:]
        w.mul_(2)                   # the base takes no part in autograd: allowed
        out.append(_vals(z))
        return out
    r = run(retrograd)
    assert r[0].startswith("A view was created in no_grad mode and is being modified inplace with grad mode "
                           "enabled.") and r[1] == r[0]
    assert r[2] == [2.0, 2.0, 2.0]
    if torch is not None:
        assert r == run(torch)


def test_multi_output_views_refuse_in_place():
    def run(lib):
        out = []
        x = lib.ones(3, 2, requires_grad=True)
        y = x * 2
        a, b, c = y.unbind(0)
        try:
            b.mul_(2)
            out.append("ok")
        except RuntimeError as e:
            out.append(str(e))
        with lib.no_grad():
            a.mul_(2)
        out.append(_vals(y))
        z = lib.ones(3, 2)
        z0, = z.split(3)
        z0.mul_(2)
        out.append(_vals(z))
        return out
    r = run(retrograd)
    assert r[0].startswith("Output 1 of Unbind is a view and is being modified inplace.")
    if torch is not None:
        assert r == run(torch)


@needs_torch
@pytest.mark.parametrize("layer", ["linear3d", "mha", "conv1d_unbatched"])
def test_input_changed_after_layer_forward_refuses(layer):
    """A layer's input changed in place after the forward (``x += attn(x)`` style): the backward
    refuses with PyTorch's message instead of a weight gradient silently made from the new values
    (the layer's flattened / unsqueezed input is a view sharing the input's version counter)."""
    msgs = []
    for lib in (torch, retrograd):
        lib.manual_seed(0)
        if layer == "conv1d_unbatched":
            x = lib.tensor(np.random.default_rng(0).standard_normal((2, 5)), requires_grad=True) * 1
            y = lib.nn.Conv1d(2, 3, 2).double()(x)
        else:
            x = lib.tensor(np.random.default_rng(0).standard_normal((3, 2, 4)), requires_grad=True) * 1
            y = (lib.nn.Linear(4, 5).double()(x) if layer == "linear3d"
                 else lib.nn.MultiheadAttention(4, 2).double()(x, x, x)[0])
        x.mul_(3)
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as e:
            y.sum().backward()
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


_POOLS_1D = {
    "max_pool1d": lambda F, t: F.max_pool1d(t, 2),
    "max_pool1d_indices": lambda F, t: F.max_pool1d(t, 2, return_indices=True)[0],
    "avg_pool1d": lambda F, t: F.avg_pool1d(t, 2),
    "adaptive_avg_pool1d": lambda F, t: F.adaptive_avg_pool1d(t, 2),
    "adaptive_max_pool1d": lambda F, t: F.adaptive_max_pool1d(t, 2),
}


@pytest.mark.parametrize("pool", sorted(_POOLS_1D))
def test_one_d_pool_input_changed_in_place_refuses(pool):
    """A 1-D pool runs as the 2-D one on its input unsqueezed: a view, sharing the input's
    version counter, so an in-place change of the input before the backward is refused, with
    PyTorch's message naming the view (once a fresh array: the gradient of the new values)."""
    def run(lib):
        t = lib.tensor(np.random.default_rng(1).standard_normal((2, 4, 6)), requires_grad=True) * 2
        y = _POOLS_1D[pool](lib.nn.functional, t)
        t.sigmoid_()
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        return str(e.value)
    msg = run(retrograd)
    assert msg == ("one of the variables needed for gradient computation has been modified by an inplace "
                   "operation: [torch.DoubleTensor [2, 4, 1, 6]], which is output 0 of AsStrided, is at version 1; "
                   "expected version 0 instead. " + HINT)
    if torch is not None:
        assert msg == run(torch)


def _overlapping_slice_adds(lib, upstream, create_graph):
    """Two in-place adds into overlapping strided windows of one base (the shape of a
    transposed convolution's slice-add composite)."""
    c = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
    d = lib.tensor([0.5, 1.5, -1.0], dtype=lib.float64, requires_grad=True)
    out = lib.zeros(7, dtype=lib.float64)
    out[0:5:2] += c
    out[2:7:2] += d * d
    out[1:3] = c[:2]
    g = lib.tensor(upstream, dtype=lib.float64)
    return [t.detach().numpy() for t in lib.autograd.grad(out, (c, d), g, create_graph=create_graph)]


@needs_torch
@pytest.mark.parametrize("create_graph", [False, True])
def test_copy_slices_gradient_selects_with_inf_upstream(create_graph):
    """CopySlices hands the view's part of the base's gradient to the in-place op and writes what
    comes back into that part, by selection: under create_graph too (it was g + (r0 - g[view]),
    so an inf there met itself as inf - inf = nan)."""
    inf, nan = np.inf, np.nan
    for up in ([0, 0, inf, 0, 0, 0, 0], [0, 1, -inf, 2, inf, 0, nan], [inf, -inf, inf, 1, -inf, nan, 0]):
        got = _overlapping_slice_adds(retrograd, up, create_graph)
        want = _overlapping_slice_adds(torch, up, create_graph)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)


@needs_torch
def test_conv_transpose3d_gradient_of_a_single_inf():
    """F.conv_transpose3d's gradients (its slice-add composite differentiated under
    create_graph) with one inf in the upstream gradient: inf where it reaches, no nan."""
    x, w = np.ones((1, 1, 1, 1, 3)), np.ones((1, 1, 1, 1, 2))
    up = np.zeros((1, 1, 1, 1, 7))
    up[..., 2] = np.inf
    res = []
    for lib in (retrograd, torch):
        X, W = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        y = lib.nn.functional.conv_transpose3d(X, W, stride=2, dilation=2)
        res.append([g.numpy() for g in lib.autograd.grad(y, (X, W), lib.tensor(up))])
    for a, b in zip(*res):
        np.testing.assert_array_equal(a, b)
    assert not np.isnan(res[0][0]).any() and np.isinf(res[0][1]).all()


def test_copy_slices_gradgradcheck():
    from retrograd.autograd.gradcheck import gradcheck, gradgradcheck

    def f(c, d):
        out = retrograd.zeros(7, dtype=retrograd.float64)
        out[0:5:2] += c * d
        out[2:7:2] += d.exp()
        out[1:3] = c[:2] ** 2
        return out

    rng = np.random.default_rng(4)
    c, d = (retrograd.tensor(rng.standard_normal(3), requires_grad=True) for _ in range(2))
    assert gradcheck(f, (c, d)) and gradgradcheck(f, (c, d))
