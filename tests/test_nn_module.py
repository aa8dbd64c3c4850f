"""Module, Parameter and the containers: registration, iteration order, state_dict,
train/eval, hooks, dtype conversion and repr, against PyTorch where it has an answer."""
from collections import OrderedDict

import numpy as np
import pytest

import retrograd
from helpers import needs_torch, torch

nn = retrograd.nn


def _libs():
    return [retrograd] + ([torch] if torch is not None else [])


def _net(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.register_buffer("count", lib.zeros(1))
            self.register_buffer("scratch", lib.zeros(2), persistent=False)

        def forward(self, x):
            return self.lin(x)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(lib.ones(1))
            self.fc = nn.Linear(4, 3)
            self.block = Block()
            self.seq = nn.Sequential(nn.ReLU(), nn.Linear(3, 2, bias=False))
            self.heads = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 1)])
            self.extra = nn.ModuleDict({"b": nn.Identity(), "a": nn.Tanh()})
            self.plist = nn.ParameterList([nn.Parameter(lib.zeros(2)), nn.Parameter(lib.zeros(1, 2))])
            self.pdict = nn.ParameterDict({"w": nn.Parameter(lib.ones(2))})
            self.register_buffer("step", lib.zeros(()))
            self.shared = self.fc          # the same module twice: listed once

        def forward(self, x):
            return self.seq(self.block(self.fc(x)) * self.scale)

    return Net()


@needs_torch
def test_names_match_torch():
    r, t = _net(retrograd), _net(torch)
    assert [n for n, _ in r.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in r.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in r.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in r.named_children()] == [n for n, _ in t.named_children()]
    assert list(r.state_dict().keys()) == list(t.state_dict().keys())
    assert [n for n, _ in r.named_parameters(remove_duplicate=False)] == \
        [n for n, _ in t.named_parameters(remove_duplicate=False)]
    assert [n for n, _ in r.named_parameters(recurse=False)] == [n for n, _ in t.named_parameters(recurse=False)]
    assert [n for n, _ in r.named_parameters(prefix="m")] == [n for n, _ in t.named_parameters(prefix="m")]
    assert repr(r) == repr(t)


def test_registration_rules():
    m = nn.Module()
    p = nn.Parameter(retrograd.ones(2))
    m.w = p
    assert m._parameters["w"] is p and list(m.parameters()) == [p]
    m.w = None
    assert m._parameters["w"] is None and list(m.parameters()) == []
    with pytest.raises(TypeError, match="cannot assign 'torch.FloatTensor' as parameter 'w'"):
        m.w = retrograd.ones(2)
    m.register_buffer("b", retrograd.zeros(2))
    m.b = retrograd.ones(2)                       # re-assignment stays a buffer
    assert "b" in m._buffers and m.b.sum().item() == 2
    m.sub = nn.Linear(2, 2)
    assert "sub" in m._modules
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(KeyError, match="attribute 'training' already exists"):
        m.register_buffer("training", retrograd.zeros(1))
    with pytest.raises(KeyError, match="buffer name can"):
        m.register_buffer("a.b", retrograd.zeros(1))
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nope'"):
        m.nope
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)


def test_get_submodule_apply_and_modes():
    net = _net(retrograd)
    assert net.get_submodule("block.lin") is net.block.lin
    assert net.get_parameter("block.lin.weight") is net.block.lin.weight
    assert net.get_buffer("block.count") is net.block.count
    with pytest.raises(AttributeError, match="Block has no attribute `nope`"):
        net.get_submodule("block.nope")
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen[0] == "Linear"
    assert net.training and all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train(1)
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_zero_grad():
    lin = nn.Linear(3, 2)
    lin(retrograd.ones(4, 3)).sum().backward()
    assert lin.weight.grad is not None
    lin.zero_grad(set_to_none=False)
    assert lin.weight.grad is not None and not lin.weight.grad.numpy().any()
    lin.zero_grad()
    assert lin.weight.grad is None and lin.bias.grad is None


def test_parameter():
    p = nn.Parameter(retrograd.tensor([1.0, 2.0]))
    assert p.requires_grad and p.is_leaf and isinstance(p, retrograd.Tensor)
    assert not nn.Parameter(retrograd.ones(1), requires_grad=False).requires_grad
    assert (p * 2).__class__ is retrograd.Tensor
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        nn.Parameter(retrograd.tensor([1, 2]))
    assert nn.Parameter().shape == (0,)
    import copy
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad and q.tolist() == [1.0, 2.0]


@needs_torch
def test_parameter_repr():
    r = nn.Parameter(retrograd.tensor([1.0, 2.5]))
    t = torch.nn.Parameter(torch.tensor([1.0, 2.5]))
    assert repr(r) == repr(t)
    assert repr(r).startswith("Parameter containing:\ntensor(")


def _copy_state(src_torch):
    return OrderedDict((k, retrograd.from_numpy(v.detach().numpy().copy())) for k, v in src_torch.items())


@needs_torch
def test_state_dict_round_trip_and_load():
    r, t = _net(retrograd), _net(torch)
    res = r.load_state_dict(_copy_state(t.state_dict()))
    assert repr(res) == "<All keys matched successfully>" == repr(t.load_state_dict(t.state_dict()))
    for (k, a), (k2, b) in zip(r.state_dict().items(), t.state_dict().items()):
        assert k == k2
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    sd = r.state_dict()
    assert not sd["fc.weight"].requires_grad and sd["fc.weight"].grad_fn is None
    assert r.state_dict(keep_vars=True)["fc.weight"] is r.fc.weight
    # a fresh model loaded from the first gives the same outputs
    r2 = _net(retrograd)
    r2.load_state_dict(r.state_dict())
    x = retrograd.randn(2, 4)
    np.testing.assert_array_equal(r(x).detach().numpy(), r2(x).detach().numpy())


@needs_torch
def test_load_state_dict_errors_load_nothing():
    r, t = _net(retrograd), _net(torch)
    before = {k: v.numpy().copy() for k, v in r.state_dict().items()}
    bad = _copy_state(t.state_dict())
    bad["fc.weight"] = retrograd.zeros(5, 4)
    del bad["seq.1.weight"]
    bad["ghost"] = retrograd.zeros(1)
    tbad = OrderedDict((k, torch.from_numpy(v.numpy().copy())) for k, v in bad.items())
    with pytest.raises(RuntimeError) as er:
        r.load_state_dict(bad)
    with pytest.raises(RuntimeError) as et:
        t.load_state_dict(tbad)
    assert str(er.value) == str(et.value)
    assert "size mismatch for fc.weight: copying a param with shape torch.Size([5, 4]) from checkpoint, the " \
           "shape in current model is torch.Size([3, 4])." in str(er.value)
    for k, v in r.state_dict().items():          # nothing was loaded
        np.testing.assert_array_equal(v.numpy(), before[k])
    # strict=False: missing/unexpected keys are reported, the rest is loaded
    ok = _copy_state(t.state_dict())
    del ok["seq.1.weight"]
    ok["ghost"] = retrograd.zeros(1)
    res = r.load_state_dict(ok, strict=False)
    tres = t.load_state_dict(OrderedDict((k, torch.from_numpy(v.numpy().copy())) for k, v in ok.items()),
                             strict=False)
    assert res.missing_keys == tres.missing_keys == ["seq.1.weight"]
    assert res.unexpected_keys == tres.unexpected_keys == ["ghost"]
    assert repr(res) == repr(tres)
    np.testing.assert_array_equal(r.fc.weight.detach().numpy(), t.fc.weight.detach().numpy())
    # a shape mismatch raises even with strict=False
    with pytest.raises(RuntimeError, match="size mismatch for fc.bias"):
        r.load_state_dict({"fc.bias": retrograd.zeros(7)}, strict=False)


def test_to_dtype():
    net = _net(retrograd)
    net.fc(retrograd.ones(1, 4)).sum().backward()
    w = net.fc.weight
    net.double()
    assert net.fc.weight is w and w.dtype == retrograd.float64 and w.grad.dtype == retrograd.float64
    assert net.step.dtype == retrograd.float64
    net.to(retrograd.float32)
    assert all(p.dtype == retrograd.float32 for p in net.parameters())
    net.half()
    assert net.fc.weight.dtype == retrograd.float16
    net.float()
    bn = nn.BatchNorm1d(3).double()
    assert bn.num_batches_tracked.dtype == retrograd.int64 and bn.running_mean.dtype == retrograd.float64
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes"):
        net.to(retrograd.int64)


@needs_torch
def test_forward_hooks():
    for lib in (retrograd, torch):
        lin = lib.nn.Linear(2, 2)
        calls = []
        h1 = lin.register_forward_pre_hook(lambda m, args: calls.append("pre") or (args[0] * 0,))
        h2 = lin.register_forward_hook(lambda m, args, out: calls.append("post") or out + 1)
        out = lin(lib.ones(1, 2))
        np.testing.assert_allclose(out.detach().numpy(), lin.bias.detach().numpy()[None] + 1, rtol=1e-6)
        assert calls == ["pre", "post"]
        h1.remove()
        h2.remove()
        out = lin(lib.ones(1, 2))
        assert calls == ["pre", "post"]
        seen = {}
        lin.register_forward_hook(lambda m, a, k, o: seen.update(k), with_kwargs=True)
        lin(input=lib.ones(1, 2)) if lib is torch else lin(lib.ones(1, 2))


@needs_torch
def test_full_backward_hook():
    grads = {}
    tlin = torch.nn.Linear(3, 2).double()
    for lib in (torch, retrograd):
        lin = tlin
        if lib is retrograd:
            lin = retrograd.nn.Linear(3, 2).double()
            lin.load_state_dict(_copy_state(tlin.state_dict()))
        rec = []

        def hook(m, gin, gout):
            rec.append((gin, gout))
            return (gin[0] * 2,) if gin[0] is not None else None
        lin.register_full_backward_hook(hook)
        pre = []
        lin.register_full_backward_pre_hook(lambda m, gout: pre.append(gout))
        x = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        lin(x).sum().backward()
        assert len(rec) == 1 and len(pre) == 1
        gin, gout = rec[0]
        assert len(gin) == 1 and len(gout) == 1
        grads[lib] = (gin[0].numpy(), gout[0].numpy(), x.grad.numpy())
        # with no input requiring grad, grad_input is (None,)
        rec.clear()
        with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are computed with "
                                             "respect to module outputs since no inputs require gradients"):
            lin(lib.ones(1, 3, dtype=lib.float64)).sum().backward()
        assert rec[0][0] == (None,)
    if len(grads) == 2:
        for a, b in zip(grads[retrograd], grads[torch]):
            np.testing.assert_allclose(a, b)


@needs_torch
def test_sequential_and_lists():
    for lib in _libs():
        nn_ = lib.nn
        s = nn_.Sequential(nn_.Linear(2, 3), nn_.ReLU(), nn_.Linear(3, 1))
        assert len(s) == 3 and isinstance(s[-1], nn_.Linear) and isinstance(s[1], nn_.ReLU)
        sub = s[1:]
        assert isinstance(sub, nn_.Sequential) and len(sub) == 2 and sub[0] is s[1]
        s.append(nn_.Sigmoid())
        s.insert(0, nn_.Identity())
        assert [type(m).__name__ for m in s] == ["Identity", "Linear", "ReLU", "Linear", "Sigmoid"]
        assert list(s._modules.keys()) == ["0", "1", "2", "3", "4"]
        del s[0]
        assert type(s[0]).__name__ == "Linear" and list(s._modules.keys()) == ["0", "1", "2", "3"]
        with pytest.raises(IndexError, match="index 9 is out of range"):
            s[9]
        od = nn_.Sequential(OrderedDict([("a", nn_.Linear(1, 1)), ("b", nn_.Tanh())]))
        assert [n for n, _ in od.named_children()] == ["a", "b"]
        ml = nn_.ModuleList([nn_.Linear(1, 1)])
        ml.append(nn_.ReLU())
        ml.extend([nn_.Tanh()])
        ml.insert(1, nn_.Sigmoid())
        assert [type(m).__name__ for m in ml] == ["Linear", "Sigmoid", "ReLU", "Tanh"]
        md = nn_.ModuleDict({"x": nn_.ReLU()})
        md["y"] = nn_.Tanh()
        assert list(md.keys()) == ["x", "y"] and "y" in md and len(md) == 2
        pl = nn_.ParameterList([nn_.Parameter(lib.ones(2))])
        pl.append(lib.zeros(3))
        assert isinstance(pl[1], nn_.Parameter) and len(pl) == 2
        pd = nn_.ParameterDict({"a": nn_.Parameter(lib.ones(1))})
        pd["b"] = lib.zeros(2)
        assert list(pd.keys()) == ["a", "b"] and isinstance(pd["b"], nn_.Parameter)
        assert [n for n, _ in pd.named_parameters()] == ["a", "b"]
    r = retrograd.nn
    t = torch.nn
    for mk in (lambda nn_: nn_.ModuleList([nn_.Linear(2, 2), nn_.Linear(2, 2), nn_.ReLU()]),
               lambda nn_: nn_.ParameterList([nn_.Parameter(_lib(nn_).ones(2)), nn_.Parameter(_lib(nn_).ones(2, 3))]),
               lambda nn_: nn_.ParameterDict({"a": nn_.Parameter(_lib(nn_).ones(2))}),
               lambda nn_: nn_.Sequential(nn_.Conv2d(1, 4, 5, padding=2), nn_.ReLU(), nn_.MaxPool2d(2))):
        assert repr(mk(r)) == repr(mk(t))


def _lib(nn_):
    return retrograd if nn_ is retrograd.nn else torch


def test_sequential_forward_and_flatten():
    s = nn.Sequential(nn.Flatten(), nn.Linear(6, 2))
    out = s(retrograd.ones(4, 2, 3))
    assert out.shape == (4, 2)
    u = nn.Unflatten(1, (2, 3))
    assert u(retrograd.ones(4, 6)).shape == (4, 2, 3)
    assert nn.Flatten(0, -1)(retrograd.ones(2, 3)).shape == (6,)
    with pytest.raises(RuntimeError, match="flatten\\(\\) has invalid args: start_dim cannot come after end_dim"):
        nn.Flatten(2, 1)(retrograd.ones(2, 3, 4))


def test_missing_forward():
    with pytest.raises(NotImplementedError, match='Module \\[Module\\] is missing the required "forward" function'):
        nn.Module()(1)


@needs_torch
def test_batchnorm_old_checkpoint_without_num_batches_tracked():
    for lib in (retrograd, torch):
        bn = lib.nn.BatchNorm1d(3)
        sd = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
        res = bn.load_state_dict(sd)
        assert not res.missing_keys and not res.unexpected_keys


def test_custom_loader_is_used():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(retrograd.zeros(2))

        def _load_from_state_dict(self, state_dict, prefix, *args):
            key = prefix + "w"
            if key in state_dict:
                state_dict[key] = state_dict[key] * 2
            super()._load_from_state_dict(state_dict, prefix, *args)

    net = nn.Sequential(nn.Linear(2, 2), Scaled())
    sd = net.state_dict()
    sd["1.w"] = retrograd.ones(2)
    net.load_state_dict(sd)
    assert net[1].w.tolist() == [2.0, 2.0]


def test_always_call_hook_runs_when_forward_raises():
    class Bad(nn.Module):
        def forward(self, x):
            raise ValueError("boom")
    m = Bad()
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
    m.register_forward_hook(lambda mod, args, out: seen.append("plain"))
    with pytest.raises(ValueError, match="boom"):
        m(1)
    assert seen == [None]


def _module_misuse(lib):
    m = lib.nn.Module()
    return [lambda: m.register_buffer("b", 3), lambda: m.register_parameter("p", lib.zeros(2)),
            lambda: m.add_module("x", lib.zeros(2, dtype=lib.int64)),
            lambda: setattr(lib.nn.Linear(1, 1), "weight", lib.zeros(2, dtype=lib.float64)),
            lambda: setattr(lib.nn.Sequential(lib.nn.ReLU()), "0", lib.zeros(1, dtype=lib.bool))]


@needs_torch
def test_misuse_messages_name_types_as_torch():
    """Wrong objects are named as torch.typename names them ('torch.FloatTensor', 'int')."""
    for ours, theirs in zip(_module_misuse(retrograd), _module_misuse(torch)):
        with pytest.raises(TypeError) as ref:
            theirs()
        with pytest.raises(TypeError) as got:
            ours()
        assert str(got.value) == str(ref.value)
