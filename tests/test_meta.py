"""The meta device: tensors with a shape, a dtype and strides but no storage, as PyTorch's.
Creation, conversion, printing, shape and elementwise ops, reductions, autograd, modules
(``to_empty``) and ``load(map_location='meta')``, compared with torch 2.13; large meta
tensors must cost no memory and random fills must leave the generator alone."""
import tracemalloc

import numpy as np
import pytest

import retrograd
import retrograd.nn as rnn

from helpers import torch, needs_torch


def _both(fn):
    """fn(lib) on retrograd and torch."""
    return fn(retrograd), fn(torch)


def _same_meta(r, t):
    assert r.is_meta and t.is_meta
    assert tuple(r.shape) == tuple(t.shape)
    assert str(r.dtype) == str(t.dtype)
    assert r.stride() == t.stride(), (r.stride(), t.stride())
    assert r.is_contiguous() == t.is_contiguous()
    assert str(r.device) == str(t.device) == "meta"
    assert repr(r) == repr(t)


CREATION = {
    "empty": lambda L: L.empty(2, 3, device="meta"),
    "zeros_size_kw_int64": lambda L: L.zeros((4,), dtype=L.int64, device="meta"),
    "ones_0d": lambda L: L.ones((), device="meta"),
    "full": lambda L: L.full((2, 2), 7, device="meta"),
    "rand_grad": lambda L: L.rand(3, device="meta", requires_grad=True),
    "randn_f64": lambda L: L.randn(2, 5, dtype=L.float64, device="meta"),
    "randint": lambda L: L.randint(0, 5, (3, 2), device="meta"),
    "empty0": lambda L: L.empty(0, device="meta"),
    "empty_0x3": lambda L: L.empty(0, 3, device="meta"),
    "tensor": lambda L: L.tensor([1.0, 2.0], device="meta"),
    "tensor_bool": lambda L: L.tensor([True], device=L.device("meta")),
    "to_meta": lambda L: L.arange(6.0).reshape(2, 3).to("meta"),
    "to_meta_t": lambda L: L.arange(6.0).reshape(2, 3).t().to("meta"),
    "like": lambda L: L.zeros_like(L.ones(2, 3), device="meta"),
    "full_like": lambda L: L.full_like(L.empty(2, 3, device="meta"), 2.0),
    "new_zeros": lambda L: L.empty(2, device="meta").new_zeros(3, 4),
}


@needs_torch
@pytest.mark.parametrize("name", list(CREATION))
def test_creation_and_printing_match_torch(name):
    r, t = _both(CREATION[name])
    _same_meta(r, t)
    assert r.requires_grad == t.requires_grad


OPS = {
    "transpose": lambda L, x: x.t(),
    "permute": lambda L, x: x.unsqueeze(0).permute(2, 0, 1),
    "expand": lambda L, x: x.expand(4, 2, 3),
    "slice": lambda L, x: x[:, ::2],
    "select": lambda L, x: x[1],
    "view": lambda L, x: x.view(3, 2),
    "reshape_t": lambda L, x: x.t().reshape(6),
    "contiguous_t": lambda L, x: x.t().contiguous(),
    "flatten": lambda L, x: x.flatten(),
    "unsqueeze": lambda L, x: x.unsqueeze(0),
    "squeeze": lambda L, x: x[None].squeeze(0),
    "add_scalar": lambda L, x: x * 2 + 1,
    "exp_log": lambda L, x: x.exp().log(),
    "compare": lambda L, x: x > 0,
    "where": lambda L, x: L.where(x > 0, x, L.zeros_like(x)),
    "int_div": lambda L, x: x.long() // 2,
    "as_strided": lambda L, x: x.as_strided((3, 2), (1, 3)),
    "as_strided_offset": lambda L, x: L.as_strided(x, (2, 2), (2, 1), 1),
    "matmul": lambda L, x: x @ x.t(),
    "mv": lambda L, x: x @ L.empty(3, device="meta"),
    "bmm": lambda L, x: L.empty(5, 2, 3, device="meta") @ L.empty(5, 3, 4, device="meta"),
    "sum": lambda L, x: x.sum(),
    "mean_dim": lambda L, x: x.mean(1, keepdim=True),
    "argmax": lambda L, x: x.argmax(1),
    "max_dim": lambda L, x: x.max(1).values,
    "amax": lambda L, x: x.amax(0),
    "cat": lambda L, x: L.cat([x, x]),
    "stack": lambda L, x: L.stack([x, x], 1),
    "index": lambda L, x: x[[0, 1, 1]],
    "softmax": lambda L, x: x.softmax(-1),
    "relu": lambda L, x: x.relu(),
    "linear": lambda L, x: L.nn.functional.linear(x, L.empty(4, 3, device="meta"), L.empty(4, device="meta")),
    "float16": lambda L, x: x.half(),
    "to_int": lambda L, x: x.to(L.int32),
}


@needs_torch
@pytest.mark.parametrize("name", list(OPS))
def test_ops_propagate_meta_as_torch(name):
    r, t = (OPS[name](L, L.empty(2, 3, device="meta")) for L in (retrograd, torch))
    _same_meta(r, t)


@needs_torch
def test_autograd_on_meta():
    def run(L):
        w = L.empty(4, 3, device="meta", requires_grad=True)
        x = L.randn(5, 3, device="meta")
        y = (x @ w.t()).relu().sum()
        y.backward()
        return y, w.grad
    (ry, rg), (ty, tg) = run(retrograd), run(torch)
    _same_meta(ry, ty)
    _same_meta(rg, tg)
    assert type(ry.grad_fn).__name__ == type(ty.grad_fn).__name__ == "SumBackward0"


@needs_torch
@pytest.mark.parametrize("what", ["item", "item1", "numpy", "tolist", "cpu", "to_cpu", "float", "bool", "mix", "mix2"])
def test_no_data_errors_match_torch(what):
    calls = {"item": lambda L, x: x.item(), "item1": lambda L, x: x[0, 0].item(), "numpy": lambda L, x: x.numpy(),
             "tolist": lambda L, x: x.tolist(), "cpu": lambda L, x: x.cpu(), "to_cpu": lambda L, x: x.to("cpu"),
             "float": lambda L, x: float(x[0, 0]), "bool": lambda L, x: bool(x[0, 0]),
             "mix": lambda L, x: x + L.ones(2, 3), "mix2": lambda L, x: L.ones(2, 3) * x}
    errs = []
    for L in (retrograd, torch):
        with pytest.raises(Exception) as e:
            calls[what](L, L.empty(2, 3, device="meta"))
        errs.append(e.value)
    assert type(errs[0]) is type(errs[1]) and str(errs[0]) == str(errs[1])


def test_data_ptr_and_storage_less():
    x = retrograd.empty(2, 3, device="meta")
    assert x.data_ptr() == 0 and x.is_meta and not retrograd.ones(2).is_meta
    assert retrograd.device("meta").type == "meta"


def test_large_meta_tensors_cost_no_memory_and_no_draws():
    retrograd.manual_seed(0)
    state = retrograd.get_rng_state()
    tracemalloc.start()
    try:
        m = rnn.Linear(40000, 40000, device="meta")          # 6.4 GB of float32 if it were real
        x = retrograd.randn(8, 40000, device="meta")
        y = (m(x).relu() * 2).sum()
        y.backward()
        big = retrograd.empty(10**6, 10**5, device="meta")    # 400 GB
        z = (big.t() + 1).exp().sum(0)
        # reductions and joins: from the metadata, no pass over 10**11 elements
        parts = [big.sum(), big.mean(1, keepdim=True), big.amax(0), big.argmax(1), big.max(0).values,
                 retrograd.cat([big, big]), retrograd.stack([big, big], 1), big.softmax(-1)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, peak
    assert m.weight.grad.shape == (40000, 40000) and m.weight.grad.is_meta
    assert z.shape == (10**6,) and z.is_meta
    assert [tuple(p.shape) for p in parts] == [(), (10**6, 1), (10**5,), (10**6,), (10**5,), (2 * 10**6, 10**5),
                                               (10**6, 2, 10**5), (10**6, 10**5)]
    assert all(p.is_meta for p in parts) and parts[3].dtype == retrograd.int64
    assert bool((retrograd.get_rng_state() == state).all())      # no random number was drawn


@needs_torch
def test_module_on_meta_then_to_empty():
    def run(L):
        m = L.nn.Sequential(L.nn.Linear(3, 4), L.nn.BatchNorm1d(4), L.nn.Linear(4, 2, device="meta")).to("meta")
        with pytest.raises(NotImplementedError) as e:
            m.to("cpu")
        reps = [repr(p) for p in m.parameters()] + [repr(b) for b in m.buffers()]
        m.to_empty(device="cpu")
        return m, str(e.value), reps
    (rm, re_, rreps), (tm, te, treps) = run(retrograd), run(torch)
    assert re_ == te and rreps == treps
    for (rn, rp), (tn, tp) in zip(rm.named_parameters(), tm.named_parameters()):
        assert rn == tn and tuple(rp.shape) == tuple(tp.shape) and rp.device.type == "cpu"
        assert type(rp).__name__ == "Parameter" and rp.requires_grad
    out = rm(retrograd.ones(5, 3))         # real tensors now: the module runs
    assert out.shape == (5, 2) and not out.is_meta


def test_load_to_meta_reads_only_the_header(tmp_path):
    sd = {"w": retrograd.arange(12.0).reshape(3, 4), "b": retrograd.ones(4, dtype=retrograd.float64),
          "n": retrograd.tensor([1, 2], dtype=retrograd.int64), "c": retrograd.tensor([1 + 2j]), "step": 3}
    p = tmp_path / "ck.safetensors"
    retrograd.save(sd, p)
    back = retrograd.load(p, map_location="meta")
    assert back["step"] == 3
    for k in ("w", "b", "n", "c"):
        assert back[k].is_meta and back[k].shape == sd[k].shape and back[k].dtype == sd[k].dtype
    # the tensor bytes are never read: changing them does not matter to a meta load
    raw = bytearray(p.read_bytes())
    raw[-8:] = b"\xff" * 8
    p.write_bytes(bytes(raw))
    again = retrograd.load(p, map_location=retrograd.device("meta"))
    assert again["w"].shape == (3, 4)
    with pytest.raises(retrograd.serialization.CheckpointError):     # a real load checks them
        retrograd.load(p)


def test_load_to_meta_via_dict_location(tmp_path):
    p = tmp_path / "ck.safetensors"
    retrograd.save({"w": retrograd.ones(2, 3)}, p)
    back = retrograd.load(p, map_location={"cpu": "meta"})
    assert back["w"].is_meta and back["w"].shape == (2, 3)


@needs_torch
def test_meta_model_from_checkpoint_then_to_empty_and_load_state_dict(tmp_path):
    m = rnn.Linear(3, 2)
    p = tmp_path / "m.safetensors"
    retrograd.save(m.state_dict(), p)
    sd = retrograd.load(p, map_location="meta")
    shell = rnn.Linear(3, 2, device="meta")
    assert {k: tuple(v.shape) for k, v in sd.items()} == {k: tuple(v.shape) for k, v in shell.state_dict().items()}
    shell.to_empty(device="cpu")
    shell.load_state_dict(retrograd.load(p))
    assert shell.weight.tolist() == m.weight.tolist()


@needs_torch
def test_view_of_a_transposed_meta_tensor_fails_as_torch():
    errs = []
    for L in (retrograd, torch):
        with pytest.raises(RuntimeError) as e:
            L.empty(2, 3, device="meta").t().view(6)
        errs.append(str(e.value))
    assert errs[0] == errs[1]


_NO_DATA = ("Cannot copy out of meta tensor; no data!", "Tensor.item() cannot be called on meta tensors",
            "is not on the expected device meta!")


@needs_torch
def test_op_table_on_meta_never_gives_real_tensors():
    """Every op of the table, on meta copies of its first sample: meta results of torch's shape
    and dtype, or a clear no-data error; never a CPU tensor or another failure."""
    from opinfo import ALL_OPS
    from opinfo.core import expand_samples, build, flat
    bad, propagated = [], 0
    for info in ALL_OPS:
        basic = [s for s in expand_samples(info) if s.kind == "basic"]
        if not basic:
            continue

        def run(lib):
            args, kw, _ = build(lib, basic[0], False)
            conv = lambda a: a.to("meta") if isinstance(a, (retrograd.Tensor, torch.Tensor)) else a  # noqa: E731
            return info.op(lib, *[conv(a) for a in args], **{k: conv(v) for k, v in kw.items()})
        try:
            t = run(torch)
        except Exception:
            continue
        try:
            r = run(retrograd)
        except Exception as e:
            if not any(m in str(e) for m in _NO_DATA) and not str(e).endswith("not implemented for 'Double'"):
                bad.append(f"{info.name}: {type(e).__name__}: {e}")
            continue
        propagated += 1
        for a, b in zip(flat(r), flat(t)):
            if isinstance(b, torch.Tensor) and not (isinstance(a, retrograd.Tensor) and a.is_meta and
                                                    tuple(a.shape) == tuple(b.shape) and
                                                    (str(a.dtype) == str(b.dtype) or info.name == "bfloat16")):
                bad.append(f"{info.name}: {a!r} where torch gives {b!r}")
    assert not bad, "\n".join(bad)
    assert propagated > len(ALL_OPS) // 2


@needs_torch
def test_device_context_and_default_device_match_torch():
    def run(L):
        out = [str(L.get_default_device())]
        with L.device("meta"):
            m = L.nn.Sequential(L.nn.Linear(4, 3), L.nn.LayerNorm(3))
            made = [L.ones(2), L.tensor([1.0]), L.arange(3), L.randn(2), L.randint(0, 3, (2,)), L.zeros(2, device="cpu"),
                    m[0].weight, m[1].bias]
            out += [str(t.device) for t in made] + [str(L.get_default_device())]
            with L.device("cpu"):
                out.append(str(L.ones(1).device))
            out.append(str(L.ones(1).device))
        out.append(str(L.ones(1).device))
        L.set_default_device("meta")
        try:
            out += [str(L.empty(1).device), str(L.get_default_device())]
        finally:
            L.set_default_device(None)
        out += [str(L.empty(1).device), str(L.get_default_device())]
        return out
    assert run(retrograd) == run(torch)
