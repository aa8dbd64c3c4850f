"""The suite's cases. Each builds, for one library module (``retrograd`` or ``torch``, used
through the same PyTorch API), a ``run()`` that performs one timed unit of work and returns
its duration in seconds; what is timed (a whole training step, only the backward, one op) is
the case's business. ``quick`` selects tiny sizes (for a smoke test of the harness)."""
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

perf = time.perf_counter


@dataclass
class Case:
    name: str                   # id, used by --cases
    label: str                  # the table's text
    unit: str                   # "ms" (per call) or "µs/op"
    build: Callable             # build(lib, quick) -> run() -> seconds (per unit)
    group: str = "op"           # "model" (a training step) or "op" (microbenchmark)
    opt_in: bool = False        # only when asked for by name (--cases) or --deep
    quick: bool = True          # part of --quick (tiny sizes)
    max_rounds: int = 0         # cap on the interleaved rounds of a slow case (0: none)


CASES = []


def case(name, label, unit="ms", group="op", opt_in=False, quick=True, max_rounds=0):
    def deco(build):
        CASES.append(Case(name, label, unit, build, group, opt_in, quick, max_rounds))
        return build
    return deco


def _rng():
    return np.random.default_rng(0)


def _t(lib, a, grad=False):
    t = lib.from_numpy(np.array(a, copy=True))
    return t.requires_grad_(True) if grad else t


def _train_step(model, opt, loss_of, clip=None, lib=None):
    """A timed ``zero_grad; loss; backward; [clip]; step``."""
    params = list(model.parameters())

    def run():
        t0 = perf()
        opt.zero_grad()
        loss = loss_of()
        loss.backward()
        if clip is not None:
            lib.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        return perf() - t0
    return run


def _fwd_bwd(lib, a, fn):
    """A timed forward + ``sum().backward()`` of ``fn`` on a fresh leaf made from ``a``."""
    def run():
        x = _t(lib, a, grad=True)
        t0 = perf()
        fn(x).sum().backward()
        return perf() - t0
    return run


# ------------------------------------------------------------------------------ models

def gpt(lib, n_layer, n_head, n_embd, block_size, vocab):
    """nanoGPT's model (dropout 0, biases, tied embeddings, exact GELU, causal SDPA)."""
    nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, n_embd)
            self.wpe = nn.Embedding(block_size, n_embd)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.wte.weight = self.lm_head.weight

        def forward(self, idx, targets):
            t = idx.size(1)
            pos = lib.arange(0, t, dtype=lib.long)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

    return GPT()


def gpt_optimizer(lib, model):
    """nanoGPT's configure_optimizers: weight decay on matrices only, AdamW(6e-4, (0.9, 0.95))."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    nodecay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": nodecay, "weight_decay": 0.0}]
    return lib.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95))


def _gpt_sizes(quick):
    # (n_layer, n_head, n_embd, block_size, vocab, batch)
    return (1, 2, 16, 8, 65, 2) if quick else (4, 4, 128, 64, 65, 16)


def seed_cnn(lib):
    """The seeds' MNIST network (tests/nn_models.py, examples/)."""
    nn, F = lib.nn, lib.nn.functional

    class ConvNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 5, padding=2)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(4, 8, 5, padding=2)
            self.fc1 = nn.Linear(392, 512)
            self.fc2 = nn.Linear(512, 10)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = x.view(-1, 392)
            x = F.dropout(F.relu(self.fc1(x)), training=self.training)
            return F.log_softmax(self.fc2(x), dim=1)

    return ConvNet()


def resnet_ish(lib, width):
    """A stem, one identity BasicBlock and one strided BasicBlock (1x1 projection), pool, fc."""
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + self.shortcut(x))

    return nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                         BasicBlock(width, width, 1), BasicBlock(width, 2 * width, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * width, 10))


# ------------------------------------------------------------------------ training steps

@case("gpt", "GPT training step (4 layers, 4 heads, 128 dims, ctx 64, batch 16, AdamW, exact GELU)",
      group="model")
def _gpt_step(lib, quick):
    L, H, E, T, V, B = _gpt_sizes(quick)
    lib.manual_seed(0)
    model = gpt(lib, L, H, E, T, V)
    model.train()
    opt = gpt_optimizer(lib, model)
    r = _rng()
    idx = _t(lib, r.integers(0, V, (B, T)))
    tgt = _t(lib, r.integers(0, V, (B, T)))
    return _train_step(model, opt, lambda: model(idx, tgt), clip=1.0, lib=lib)


@case("lstm_lm", "LSTM language model step (2x LSTM(64, 128), bptt 35, batch 20, vocab 1000)", group="model")
def _lstm_lm_step(lib, quick):
    nn = lib.nn
    V, E, Hd, layers, T, B = (50, 8, 8, 1, 5, 2) if quick else (1000, 64, 128, 2, 35, 20)

    class RNNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(V, E)
            self.rnn = nn.LSTM(E, Hd, layers)
            self.decoder = nn.Linear(Hd, V)

        def forward(self, x, hidden):
            out, hidden = self.rnn(self.encoder(x), hidden)
            return self.decoder(out), hidden

    lib.manual_seed(0)
    model = RNNModel()
    model.train()
    opt = lib.optim.SGD(model.parameters(), lr=20.0)
    crit = nn.CrossEntropyLoss()
    r = _rng()
    data = _t(lib, r.integers(0, V, (T, B)))
    target = _t(lib, r.integers(0, V, (T * B,)))
    state = {"h": (lib.zeros(layers, B, Hd), lib.zeros(layers, B, Hd))}

    def loss_of():
        # word_language_model: the hidden state is carried over, detached from the last batch
        h = tuple(t.detach() for t in state["h"])
        out, state["h"] = model(data, h)
        return crit(out.view(-1, V), target)
    return _train_step(model, opt, loss_of, clip=0.25, lib=lib)


@case("cnn", "seeds' MNIST CNN step (batch 64, SGD momentum 0.9)", group="model")
def _cnn_step(lib, quick):
    lib.manual_seed(0)
    model = seed_cnn(lib)
    model.train()
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    B = 4 if quick else 64
    r = _rng()
    x = _t(lib, r.standard_normal((B, 1, 28, 28)).astype(np.float32))
    y = _t(lib, r.integers(0, 10, B))
    F = lib.nn.functional
    return _train_step(model, opt, lambda: F.nll_loss(model(x), y))


@case("mlp", "MLP 784-512-512-10 step (batch 64, SGD momentum 0.9)", group="model")
def _mlp_step(lib, quick):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    crit = nn.CrossEntropyLoss()
    B = 4 if quick else 64
    r = _rng()
    x = _t(lib, r.standard_normal((B, 784)).astype(np.float32))
    y = _t(lib, r.integers(0, 10, B))
    return _train_step(model, opt, lambda: crit(model(x), y))


@case("resnet", "ResNet-ish block step with BatchNorm (3x32x32, width 16, batch 32, SGD)", group="model")
def _resnet_step(lib, quick):
    lib.manual_seed(0)
    model = resnet_ish(lib, 4 if quick else 16)
    model.train()
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    crit = lib.nn.CrossEntropyLoss()
    B, S = (2, 8) if quick else (32, 32)
    r = _rng()
    x = _t(lib, r.standard_normal((B, 3, S, S)).astype(np.float32))
    y = _t(lib, r.integers(0, 10, B))
    return _train_step(model, opt, lambda: crit(model(x), y))


# ------------------------------------------------------------------------ small graphs

def _chain(lib, n):
    y = lib.tensor(1.0, requires_grad=True)
    for _ in range(n):
        y = y * 1.0001 + 0.5
    return y


@case("chain_fwd", "0-d chain y = y * 1.0001 + 0.5, forward", unit="µs/op")
def _chain_fwd(lib, quick):
    n = 50 if quick else 1000

    def run():
        t0 = perf()
        _chain(lib, n)
        return (perf() - t0) / (2 * n)
    return run


@case("chain_bwd", "0-d chain, backward", unit="µs/op")
def _chain_bwd(lib, quick):
    n = 50 if quick else 1000

    def run():
        y = _chain(lib, n)
        t0 = perf()
        y.backward()
        return (perf() - t0) / (2 * n)
    return run


def _deep(lib, n):
    y = lib.tensor(1.0, requires_grad=True)
    for _ in range(n):
        y = y * 1.0
    return y


@case("deep_build", "100,000-deep chain y = y * 1.0, build", max_rounds=3)
def _deep_build(lib, quick):
    n = 1000 if quick else 100_000

    def run():
        t0 = perf()
        y = _deep(lib, n)
        dt = perf() - t0
        del y
        return dt
    return run


@case("deep_bwd", "100,000-deep chain, backward", max_rounds=3)
def _deep_bwd(lib, quick):
    n = 1000 if quick else 100_000

    def run():
        y = _deep(lib, n)
        t0 = perf()
        y.backward()
        return perf() - t0
    return run


@case("deep1m_build", "1,000,000-deep chain, build", opt_in=True, max_rounds=3)
def _deep1m_build(lib, quick):
    n = 10_000 if quick else 1_000_000

    def run():
        t0 = perf()
        y = _deep(lib, n)
        dt = perf() - t0
        del y
        return dt
    return run


# ------------------------------------------------------------------------ layers and ops

def _layer(name, label, make, shape, call=lambda m, x: m(x), quick_shape=None, make_quick=None):
    def build(lib, quick):
        lib.manual_seed(0)
        m = (make_quick or make)(lib.nn) if quick else make(lib.nn)
        a = _rng().standard_normal(quick_shape if quick else shape).astype(np.float32)
        return _fwd_bwd(lib, a, lambda x: call(m, x))
    case(name, label)(build)


_layer("lstm", "LSTM(32, 64) fwd+bwd, L=20, N=16", lambda nn: nn.LSTM(32, 64), (20, 16, 32),
       lambda m, x: m(x)[0], quick_shape=(3, 2, 4), make_quick=lambda nn: nn.LSTM(4, 4))
_layer("gru", "GRU(32, 64, 2 layers, bidirectional) fwd+bwd, L=20, N=16",
       lambda nn: nn.GRU(32, 64, 2, bidirectional=True), (20, 16, 32), lambda m, x: m(x)[0],
       quick_shape=(3, 2, 4), make_quick=lambda nn: nn.GRU(4, 4, 2, bidirectional=True))
_layer("encoder", "TransformerEncoderLayer(64, 4, 128) fwd+bwd, L=32, N=16",
       lambda nn: nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0), (32, 16, 64),
       quick_shape=(3, 2, 8), make_quick=lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0))
_layer("mha", "MultiheadAttention(64, 4) fwd+bwd, L=32, N=16", lambda nn: nn.MultiheadAttention(64, 4),
       (32, 16, 64), lambda m, x: m(x, x, x)[0],
       quick_shape=(3, 2, 8), make_quick=lambda nn: nn.MultiheadAttention(8, 2))
_layer("convt", "ConvTranspose2d(64, 32, 4, stride 2, pad 1) fwd+bwd, 16x64x16x16",
       lambda nn: nn.ConvTranspose2d(64, 32, 4, 2, 1), (16, 64, 16, 16),
       quick_shape=(2, 4, 4, 4), make_quick=lambda nn: nn.ConvTranspose2d(4, 2, 4, 2, 1))
_layer("upsample_nearest", "Upsample x2 nearest fwd+bwd, 16x32x32x32", lambda nn: nn.Upsample(scale_factor=2),
       (16, 32, 32, 32), quick_shape=(2, 2, 4, 4))
_layer("upsample_bilinear", "Upsample x2 bilinear fwd+bwd, 16x32x32x32",
       lambda nn: nn.Upsample(scale_factor=2, mode="bilinear"), (16, 32, 32, 32), quick_shape=(2, 2, 4, 4))
_layer("depthwise", "depthwise Conv2d(32, 32, 3, groups=32) fwd+bwd, 16x32x32x32",
       lambda nn: nn.Conv2d(32, 32, 3, padding=1, groups=32), (16, 32, 32, 32),
       quick_shape=(2, 4, 6, 6), make_quick=lambda nn: nn.Conv2d(4, 4, 3, padding=1, groups=4))
_layer("strided", "strided Conv2d(32, 64, 3, stride 2) fwd+bwd, 16x32x32x32",
       lambda nn: nn.Conv2d(32, 64, 3, stride=2, padding=1), (16, 32, 32, 32),
       quick_shape=(2, 4, 6, 6), make_quick=lambda nn: nn.Conv2d(4, 8, 3, stride=2, padding=1))
_layer("gelu", "exact GELU fwd+bwd, 1024x512 float32", lambda nn: nn.GELU(), (1024, 512), quick_shape=(4, 8))


@case("gather", "gather(0) fwd+bwd, 512x256")
def _gather(lib, quick):
    n, m = (8, 4) if quick else (512, 256)
    idx = _t(lib, _rng().integers(0, n, (n, m)))
    a = _rng().standard_normal((n, m)).astype(np.float32)
    return _fwd_bwd(lib, a, lambda x: x.gather(0, idx))


@case("embedding", "W[idx] fwd+bwd, 50000x64, 4096 repeated rows")
def _embedding(lib, quick):
    n, k = (100, 16) if quick else (50_000, 4096)
    W = lib.zeros(n, 64 if not quick else 4, requires_grad=True)
    idx = _t(lib, _rng().integers(0, n, k))

    def run():
        W.grad = None
        t0 = perf()
        W[idx].sum().backward()
        return perf() - t0
    return run


@case("matmul", "mm fwd+bwd 256x256, float32")
def _mm(lib, quick):
    n = 8 if quick else 256
    a = _rng().standard_normal((n, n)).astype(np.float32)
    return _fwd_bwd(lib, a, lambda x: x @ x)


def _with_grads(lib, model):
    r = _rng()
    params = list(model.parameters())
    for p in params:
        p.grad = lib.from_numpy(r.standard_normal(tuple(p.shape)).astype(np.float32))
    return params


@case("sgd_step", "SGD momentum step on the CNN's 206k parameters")
def _sgd_step(lib, quick):
    lib.manual_seed(0)
    model = seed_cnn(lib) if not quick else lib.nn.Linear(8, 8)
    opt = lib.optim.SGD(_with_grads(lib, model), lr=0.01, momentum=0.9)
    opt.step()  # creates the momentum buffers

    def run():
        t0 = perf()
        opt.step()
        return perf() - t0
    return run


@case("adamw_step", "AdamW step on the GPT's 0.8M parameters")
def _adamw_step(lib, quick):
    L, H, E, T, V, _ = _gpt_sizes(quick)
    lib.manual_seed(0)
    model = gpt(lib, L, H, E, T, V)
    opt = gpt_optimizer(lib, model)
    _with_grads(lib, model)
    opt.step()

    def run():
        t0 = perf()
        opt.step()
        return perf() - t0
    return run


@case("import", "import (bytecode cached), in a fresh process", quick=False, max_rounds=3)
def _import(lib, quick):
    name = lib.__name__
    code = f"import time; t = time.perf_counter(); import {name}; print(time.perf_counter() - t)"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(lib.__file__))] + sys.path))
    env.pop("PYTHONDONTWRITEBYTECODE", None)     # (the case times a cached import: let the first run write it)
    subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, check=True)

    def run():
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        return float(out.stdout.split()[-1])
    return run


def select(names=None, deep=False, quick=False):
    """The cases to run: all (opt-in ones with ``deep``; in ``quick`` mode those that have tiny
    sizes), or those whose id is in ``names``."""
    if names:
        known = {c.name for c in CASES}
        bad = [n for n in names if n not in known]
        if bad:
            raise SystemExit(f"unknown case(s): {', '.join(bad)}; known: {', '.join(sorted(known))}")
        return [c for c in CASES if c.name in names]
    return [c for c in CASES if (deep or not c.opt_in) and (c.quick or not quick)]
