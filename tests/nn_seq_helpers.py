"""Shared by the tests of the sequence, resampling and attention layers: build the same
module in retrograd and torch, copy the weights, and compare outputs and every gradient."""
import numpy as np

import retrograd
from helpers import torch


def lib_of(t):
    """The library (retrograd or torch) a tensor belongs to."""
    return retrograd if isinstance(t, retrograd.Tensor) else torch


def copy_params(m, mt):
    """Copy torch module ``mt``'s parameters into retrograd module ``m`` (names must match)."""
    names = [n for n, _ in m.named_parameters()]
    tnames = [n for n, _ in mt.named_parameters()]
    assert names == tnames, (names, tnames)
    for p, pt in zip(m.parameters(), mt.parameters()):
        assert tuple(p.shape) == tuple(pt.shape)
        p.data._data[...] = pt.detach().numpy()


def _flat(o):
    if isinstance(o, (tuple, list)):
        out = []
        for x in o:
            out += _flat(x)
        return out
    if o is None:
        return []
    if hasattr(o, "batch_sizes"):
        return [o.data]
    return [o]


def _np(t):
    return t.detach().numpy() if torch is not None and isinstance(t, torch.Tensor) else np.asarray(t.detach()._data)


def module_parity(make, inputs, *, call=None, atol=1e-10, rtol=1e-7, seed=0, grad_inputs=True):
    """``make(lib)`` builds the module in ``lib``; ``inputs`` are numpy arrays (float ones get
    gradients) or other values passed through. Compares every output, input gradient and
    parameter gradient under a fixed random upstream gradient."""
    rng = np.random.default_rng(seed)
    res = {}
    mods = {retrograd: make(retrograd), torch: make(torch)}
    copy_params(mods[retrograd], mods[torch])
    for lib in (retrograd, torch):
        m = mods[lib]
        args, leaves = [], []
        for a in inputs:
            if isinstance(a, np.ndarray):
                t = (torch.from_numpy if lib is torch else retrograd.from_numpy)(a.copy())
                if a.dtype.kind == "f" and grad_inputs:
                    t.requires_grad_(True)
                    leaves.append(t)
                args.append(t)
            else:
                args.append(a)
        out = call(m, lib, *args) if call is not None else m(*args)
        res[lib] = (m, _flat(out), leaves)
    (m, ro, rl), (mt, to, tl) = res[retrograd], res[torch]
    assert len(ro) == len(to)
    loss_r = loss_t = 0
    for r, t in zip(ro, to):
        assert tuple(r.shape) == tuple(t.shape), (tuple(r.shape), tuple(t.shape))
        np.testing.assert_allclose(_np(r), _np(t), atol=atol, rtol=rtol)
        if t.requires_grad:
            g = rng.standard_normal(tuple(t.shape))
            loss_r = loss_r + (r * retrograd.from_numpy(g)).sum()
            loss_t = loss_t + (t * torch.from_numpy(g)).sum()
    loss_r.backward()
    loss_t.backward()
    for a, b in zip(rl, tl):
        np.testing.assert_allclose(_np(a.grad), _np(b.grad), atol=atol, rtol=rtol, err_msg="input grad")
    for (n, p), pt in zip(m.named_parameters(), mt.parameters()):
        if pt.grad is None:
            assert p.grad is None or not np.any(_np(p.grad)), n
            continue
        np.testing.assert_allclose(_np(p.grad), _np(pt.grad), atol=atol, rtol=rtol, err_msg=n)
    return m, mt


def double_backward_parity(fn, shape, seed=0, atol=1e-10):
    """d/dx <d/dx <fn(x), g>, h> against torch, through create_graph=True (and the
    gradient with respect to ``g`` as well)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    res = []
    for lib in (retrograd, torch):
        mk = torch.from_numpy if lib is torch else retrograd.from_numpy
        x = mk(a.copy()).requires_grad_(True)
        y = fn(x)
        g = mk(np.cos(np.arange(int(np.prod(tuple(y.shape)))).reshape(tuple(y.shape)))).requires_grad_(True)
        (gx,) = lib.autograd.grad(y, x, g, create_graph=True)
        h = mk(np.sin(np.arange(int(np.prod(tuple(gx.shape)))).reshape(tuple(gx.shape))))
        outs = lib.autograd.grad((gx * h).sum() + (gx * gx).sum(), [x, g], allow_unused=True)
        res.append([None if o is None else _np(o) for o in outs])
    for r, t in zip(*res):
        if t is None or r is None:
            assert not np.any(r if t is None else t)
        else:
            np.testing.assert_allclose(r, t, atol=atol)


def lstm_against_torch(cfg, dtype, packed=False):
    """An nn.LSTM ``cfg = (I, H, layers, bidirectional, batch_first, (L, N))`` built alike in
    retrograd and torch, run forward and backward on the same inputs (through a packed
    sequence of decreasing lengths with ``packed``); asserts the outputs, final states and
    every gradient agree within the dtype's tolerance."""
    I, H, layers, bidir, batch_first, (L, N) = cfg
    rng = np.random.default_rng(3)
    mods = []
    for lib in (retrograd, torch):
        lib.manual_seed(0)
        mods.append(lib.nn.LSTM(I, H, layers, bidirectional=bidir, batch_first=batch_first).to(getattr(lib, dtype)))
    copy_params(*mods)
    D = layers * (2 if bidir else 1)
    arrays = [rng.standard_normal((N, L, I) if batch_first else (L, N, I)), rng.standard_normal((D, N, H)),
              rng.standard_normal((D, N, H))]
    lens = [L - k % L for k in range(N)]
    res = []
    for lib, m in zip((retrograd, torch), mods):
        x, h0, c0 = (lib.tensor(a.astype(dtype), requires_grad=True) for a in arrays)
        inp = lib.nn.utils.rnn.pack_padded_sequence(x, lib.tensor(lens), batch_first=batch_first,
                                                    enforce_sorted=False) if packed else x
        out, (h, c) = m(inp, (h0, c0))
        if packed:
            out = lib.nn.utils.rnn.pad_packed_sequence(out, batch_first=batch_first)[0]
        (out.sin().sum() + (h * h).sum() + c.cos().sum()).backward()
        res.append([t.detach().numpy() for t in (out, h, c, x.grad, h0.grad, c0.grad)] +
                   [p.grad.numpy() for p in m.parameters()])
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for a, t in zip(*res):
        np.testing.assert_allclose(a, t, **tol)
