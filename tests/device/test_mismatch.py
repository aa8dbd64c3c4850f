"""Tensors on two devices meet: PyTorch's error, never a silent host/device mix (on the strict
emulated device a mix would otherwise surface as CuPy's TypeError, or worse, work on a copy)."""
import re

import pytest

import retrograd
import retrograd.nn.functional as F

MSG = "Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!"


def _pair(shape_a=(3, 4), shape_b=(3, 4)):
    return retrograd.randn(*shape_a, device="cuda"), retrograd.randn(*shape_b)


def _idx(*vals):
    return retrograd.tensor(vals)


CASES = {
    "add": lambda g, c: g + c,
    "mul": lambda g, c: g * c,
    "sub-reflected": lambda g, c: c - g,
    "div_": lambda g, c: g.div_(c),
    "maximum": lambda g, c: retrograd.maximum(g, c),
    "atan2": lambda g, c: retrograd.atan2(g, c),
    "eq": lambda g, c: g == c,
    "lt": lambda g, c: g < c,
    "logical_and": lambda g, c: retrograd.logical_and(g > 0, c > 0),
    "where": lambda g, c: retrograd.where(g > 0, g, c),
    "matmul": lambda g, c: g @ c.T,
    "mm": lambda g, c: retrograd.mm(g, c.T),
    "bmm": lambda g, c: retrograd.bmm(g[None], c.T[None]),
    "addmm": lambda g, c: retrograd.addmm(retrograd.ones(3, 3, device="cuda"), g, c.T),
    "einsum": lambda g, c: retrograd.einsum("ij,kj->ik", g, c),
    "linear": lambda g, c: F.linear(g, c),
    "cat": lambda g, c: retrograd.cat([g, c]),
    "stack": lambda g, c: retrograd.stack([g, c]),
    "index_select": lambda g, c: g.index_select(0, _idx(0, 2)),
    "gather": lambda g, c: g.gather(1, _idx(0, 1).expand(3, 2).contiguous()),
    "scatter": lambda g, c: g.scatter(1, _idx(0, 1).expand(3, 2).contiguous().cuda(), c[:, :2]),
    "scatter_add": lambda g, c: g.scatter_add(1, _idx(0, 1).expand(3, 2).contiguous().cuda(), c[:, :2]),
    "index_add": lambda g, c: g.index_add(0, _idx(0, 2).cuda(), c[:2]),
    "index_put_": lambda g, c: g.index_put_((_idx(0, 2).cuda(),), c[:2]),
    "masked_fill": lambda g, c: g.masked_fill(c > 0, 1.0),
    "masked_select": lambda g, c: g.masked_select(c > 0),
    "embedding": lambda g, c: F.embedding(_idx(0, 2), g),
    "mse_loss": lambda g, c: F.mse_loss(g, c),
    "cross_entropy": lambda g, c: F.cross_entropy(g, _idx(0, 1, 3)),
    "nll_loss": lambda g, c: F.nll_loss(g, _idx(0, 1, 3)),
    "layer_norm": lambda g, c: F.layer_norm(g, (4,), c[0]),
    "batch_norm": lambda g, c: F.batch_norm(g, c[0] * 0, c[0] ** 2, training=False),
    "dot": lambda g, c: retrograd.dot(g[0], c[0]),
    "outer": lambda g, c: retrograd.outer(g[0], c[0]),
    "lerp": lambda g, c: retrograd.lerp(g, c, 0.5),
    "addcmul": lambda g, c: retrograd.addcmul(g, g, c),
    "clamp": lambda g, c: retrograd.clamp(g, min=c),
    "isclose": lambda g, c: retrograd.isclose(g, c),
    "equal": lambda g, c: retrograd.equal(g, c),
    "dist": lambda g, c: retrograd.dist(g, c),
}


@pytest.mark.parametrize("name", list(CASES))
def test_mixing_devices_raises_torchs_error(name):
    g, c = _pair()
    with pytest.raises(RuntimeError, match=re.escape(MSG.format(a="cuda:0", b="cpu")) + "|" +
                       re.escape(MSG.format(a="cpu", b="cuda:0"))):
        CASES[name](g, c)


def test_binary_op_names_the_devices_in_operand_order():
    g, c = _pair()
    with pytest.raises(RuntimeError, match="^" + re.escape(MSG.format(a="cuda:0", b="cpu")) + "$"):
        g + c
    with pytest.raises(RuntimeError, match="^" + re.escape(MSG.format(a="cpu", b="cuda:0")) + "$"):
        c @ g.T


def test_zero_dim_cpu_tensors_and_numbers_mix_with_device_tensors():
    """PyTorch lets a 0-d CPU tensor (or a Python number) take part in a CUDA op."""
    g = retrograd.ones(2, 3, device="cuda")
    r = g * retrograd.tensor(2.0) + 1
    assert r.device == retrograd.device("cuda:0") and r.cpu().tolist() == [[3.0] * 3] * 2


def test_conv_with_weight_on_the_host_raises_torchs_error():
    x = retrograd.randn(1, 2, 5, 5, device="cuda")
    w = retrograd.randn(3, 2, 3, 3)
    with pytest.raises(RuntimeError, match=re.escape("Input type (torch.cuda.FloatTensor) and weight type "
                                                     "(torch.FloatTensor) should be the same")):
        F.conv2d(x, w)


def test_copy_between_devices_is_allowed():
    g, c = _pair()
    g.copy_(c)
    assert g.device == retrograd.device("cuda:0") and g.cpu().tolist() == c.tolist()
    c.copy_(g * 2)
    assert c.device.type == "cpu" and c.tolist() == (g * 2).cpu().tolist()


def test_a_device_tensor_takes_host_index_tensors():
    """As in PyTorch, indices may stay on the host (they are copied over)."""
    g = retrograd.arange(12.0, device="cuda").reshape(3, 4).requires_grad_()
    r = g[retrograd.tensor([2, 0])]
    assert r.device == retrograd.device("cuda:0") and r.cpu().tolist() == [[8, 9, 10, 11], [0, 1, 2, 3]]
    r.sum().backward()
    assert g.grad.device == retrograd.device("cuda:0") and g.grad.cpu().sum().item() == 8


def test_lapack_wrappers_never_see_device_memory():
    # SciPy's LAPACK wrappers must never receive device memory (an emulated or CuPy array): the
    # one helper that fetches them refuses it, and the routines CuPy lacks copy to the host first
    from retrograd.ops._decomp import _lapack
    a = retrograd.eye(3, device="cuda") * 2
    with pytest.raises(NotImplementedError, match=r"LAPACK getrf: .*\.cpu\(\)"):
        _lapack("getrf", (a._data,))
    LD, piv = retrograd.linalg.ldl_factor(a)      # LAPACK sytrf, on a copy on the host
    assert LD.device == retrograd.device("cuda:0") and piv.device == LD.device
    assert LD.cpu().tolist() == [[2, 0, 0], [0, 2, 0], [0, 0, 2]] and piv.cpu().tolist() == [1, 2, 3]


def test_gradient_of_a_cpu_scalar_joining_a_device_op_lands_on_the_cpu():
    # a 0-d CPU tensor joins a device op as a scalar; its gradient is computed on the device
    # and, as PyTorch's engine does, moved back to the tensor's device (leaf .grad and grad())
    s = retrograd.tensor(2.0, requires_grad=True)
    v = retrograd.ones(3, requires_grad=True)
    t = retrograd.arange(3.0, device="cuda", requires_grad=True)
    (s * t * v.sum()).sum().backward()
    assert s.grad.device.type == "cpu" and s.grad.item() == 9.0
    assert v.grad.device.type == "cpu" and v.grad.tolist() == [6.0, 6.0, 6.0]
    assert t.grad.device.type == "cuda" and t.grad.cpu().tolist() == [6.0, 6.0, 6.0]
    (gs,) = retrograd.autograd.grad((s * t).sum(), [s], create_graph=True)
    assert gs.device.type == "cpu" and gs.item() == 3.0
    # the moved gradient stays differentiable: d/dt of sum(t) is ones, on the device
    (gt,) = retrograd.autograd.grad(gs, [t])
    assert gt.device.type == "cuda" and gt.cpu().tolist() == [1.0, 1.0, 1.0]
