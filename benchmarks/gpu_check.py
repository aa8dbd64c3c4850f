"""One prepared check of retrograd's CUDA path (CuPy), for a machine with a GPU:

1. op parity: the op table's samples (tests/opinfo, through tests/device/parity.py) on
   'cuda:0' against the CPU, values and gradients;
2. training steps on CUDA: the seeds' CNN, an MLP and a GPT block (pre-LN attention + MLP),
   beside PyTorch CUDA when it is installed (median step times, ratios), and peak memory;
3. float16 autocast with GradScaler (retrograd's and PyTorch's);

printed as a table, and written to $OUT/gpu_check.md and $OUT/gpu_check.json when $OUT is set.
GEMMs are CuPy's matmul (cuBLAS); convolutions im2col + one batched GEMM.

    python benchmarks/gpu_check.py              # a real GPU: under 5 minutes
    python benchmarks/gpu_check.py --emulate --quick   # CI: the emulated device, seconds

Run from the repository root (tests/ must be importable); ``--emulate`` runs everything on
retrograd.cuda._emulator (NumPy underneath: parity and wiring, not speed).
"""
import argparse
import json
import os
import statistics
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (os.path.join(ROOT, "tests", "device"), os.path.join(ROOT, "tests"), os.path.join(ROOT, "src")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import numpy as np  # noqa: E402

import retrograd  # noqa: E402


def _torch_cuda():
    """PyTorch when it is installed with a usable CUDA device, else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


# ----------------------------------------------------------------------------------- models

def mlp(lib, width):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))


def gpt_block(lib, d, heads):
    """A pre-LN transformer block: x + attn(ln(x)), then x + mlp(ln(x)); causal attention."""
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    return Block()


def _cnn(lib):
    from nn_models import seed_cnn
    return seed_cnn(lib)


# -------------------------------------------------------------------------------- stepping

def _sync(lib):
    if lib is retrograd:
        retrograd.cuda.synchronize()
    else:
        lib.cuda.synchronize()


def _step_fn(lib, model, opt, batch, loss_fn, scaler=None, amp=False):
    x, y = batch

    def step():
        opt.zero_grad()
        if amp:
            with lib.autocast("cuda", dtype=lib.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
        return loss
    return step


def _time(lib, step, warmup, reps):
    for _ in range(warmup):
        step()
    _sync(lib)
    ts = []
    loss = None
    for _ in range(reps):
        t0 = time.perf_counter()
        loss = step()
        _sync(lib)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), float(loss.item())


def _peak_reset(lib):
    if lib is retrograd:
        retrograd.cuda.reset_peak_memory_stats()
    else:
        lib.cuda.reset_peak_memory_stats()


def _peak(lib):
    if lib is retrograd:
        return max(retrograd.cuda.max_memory_allocated(), retrograd.cuda.max_memory_reserved())
    return lib.cuda.max_memory_allocated()


def _case(lib, name, q):
    """(model, optimizer, batch, loss function) of a benchmark case, on CUDA."""
    F = lib.nn.functional
    g = np.random.default_rng(0)
    lib.manual_seed(0)
    if name == "seeds' CNN":
        n = 8 if q else 64
        model = _cnn(lib).to("cuda")
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x = lib.tensor(g.standard_normal((n, 1, 28, 28)), dtype=lib.float32).to("cuda")
        y = lib.tensor(g.integers(0, 10, n)).to("cuda")
        return model, opt, (x, y), F.nll_loss
    if name in ("MLP", "MLP float16 autocast + GradScaler"):
        n, w = (16, 64) if q else (256, 1024)
        model = mlp(lib, w).to("cuda")
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x = lib.tensor(g.standard_normal((n, 784)), dtype=lib.float32).to("cuda")
        y = lib.tensor(g.integers(0, 10, n)).to("cuda")
        return model, opt, (x, y), F.cross_entropy
    if name == "GPT block":
        b, t, d, h = (2, 16, 32, 2) if q else (8, 128, 256, 4)
        model = gpt_block(lib, d, h).to("cuda")
        opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
        x = lib.tensor(g.standard_normal((b, t, d)), dtype=lib.float32).to("cuda")
        return model, opt, (x, None), lambda out, _: out.pow(2).mean()
    raise ValueError(name)


def bench(q, torch):
    rows = []
    warmup, reps = (1, 2) if q else (3, 10)
    for name in ("seeds' CNN", "MLP", "GPT block", "MLP float16 autocast + GradScaler"):
        amp = "autocast" in name
        res = {}
        for lib in (retrograd, torch):
            if lib is None:
                continue
            try:
                _peak_reset(lib)
                model, opt, batch, loss_fn = _case(lib, name, q)
                scaler = lib.amp.GradScaler("cuda", init_scale=2.0 ** 12) if amp else None
                t, loss = _time(lib, _step_fn(lib, model, opt, batch, loss_fn, scaler, amp), warmup, reps)
                res[lib] = (t, loss, _peak(lib), scaler.get_scale() if amp else None)
            except Exception as e:
                res[lib] = e
                traceback.print_exc()
        r = res[retrograd]
        tr = res.get(torch) if torch is not None else None
        row = {"section": "step", "case": name}
        if isinstance(r, Exception):
            row.update(status="FAIL", note=f"{type(r).__name__}: {r}")
        else:
            row.update(status="ok" if np.isfinite(r[1]) else "FAIL", retrograd_ms=r[0] * 1e3, loss=r[1],
                       retrograd_peak_mib=r[2] / 2 ** 20, note="" if r[3] is None else f"scale {r[3]:g}")
            if tr is not None and not isinstance(tr, Exception):
                row.update(torch_ms=tr[0] * 1e3, ratio=r[0] / tr[0], torch_peak_mib=tr[2] / 2 ** 20)
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------------- parity

def parity(q, budget):
    from opinfo import ALL_OPS
    from parity import check_op
    from device_xfail import OP_XFAIL, DEVICE_SEMANTICS
    import warnings
    ops = [i for i in ALL_OPS if i.name not in DEVICE_SEMANTICS]
    if q:
        ops = ops[::10]    # a deterministic tenth of the table
    t0 = time.perf_counter()
    passed, failed, known, done = 0, [], 0, 0
    for info in ops:
        if time.perf_counter() - t0 > budget:
            break
        done += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fails = check_op(info)
        if info.name in OP_XFAIL:
            known += 1
            if not fails:
                failed.append(f"{info.name}: listed in device_xfail.OP_XFAIL but passes")
        elif fails:
            failed.append(f"{info.name}: {fails[0]}")
        else:
            passed += 1
    row = {"section": "parity", "case": f"op table on cuda vs cpu ({done} of {len(ops)} ops"
                                         f"{', time budget reached' if done < len(ops) else ''})",
           "status": "ok" if not failed else "FAIL", "passed": passed, "failed": len(failed),
           "known": known, "seconds": time.perf_counter() - t0}
    return row, failed


# ----------------------------------------------------------------------------------- report

def table(rows, device):
    lines = [f"gpu_check on {device}", "",
             "| section | case | status | retrograd | PyTorch | ratio | peak MiB (retrograd / PyTorch) | note |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["section"] == "parity":
            lines.append(f"| parity | {r['case']} | {r['status']} | {r['passed']} pass, {r['failed']} fail, "
                         f"{r['known']} known | | | | {r['seconds']:.0f} s |")
            continue
        rt = f"{r['retrograd_ms']:.2f} ms" if "retrograd_ms" in r else "-"
        tt = f"{r['torch_ms']:.2f} ms" if "torch_ms" in r else "-"
        ratio = f"{r['ratio']:.2f}x" if "ratio" in r else "-"
        peak = f"{r.get('retrograd_peak_mib', 0):.1f}" + (f" / {r['torch_peak_mib']:.1f}" if "torch_peak_mib" in r else "")
        lines.append(f"| step | {r['case']} | {r['status']} | {rt} | {tt} | {ratio} | {peak} | {r.get('note', '')} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--emulate", action="store_true", help="run on the emulated CUDA device (no GPU)")
    ap.add_argument("--quick", action="store_true", help="small shapes, a tenth of the op table")
    ap.add_argument("--parity-budget", type=float, default=150.0, help="seconds for the op parity (default 150)")
    ap.add_argument("--skip-parity", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.emulate:
        from retrograd.cuda import _emulator
        _emulator.enable()
    if not retrograd.cuda.is_available():
        print("gpu_check: no CUDA device (CuPy missing or no GPU); use --emulate", file=sys.stderr)
        return 2
    device = retrograd.cuda.get_device_name()
    torch = None if args.emulate else _torch_cuda()
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False    # (CuPy's float32 GEMMs are full float32 too)
        torch.backends.cudnn.allow_tf32 = False
    rows, failures = [], []
    if not args.skip_parity:
        row, failures = parity(args.quick, args.parity_budget)
        rows.append(row)
    rows.extend(bench(args.quick, torch))
    text = table(rows, device + ("" if torch is None else f"; PyTorch {torch.__version__} beside it"))
    if failures:
        text += "\n\nop parity failures (first sample of each op):\n" + "\n".join("- " + f for f in failures)
    text += f"\n\ntotal {time.perf_counter() - t0:.0f} s"
    print(text)
    out = os.environ.get("OUT")
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "gpu_check.md"), "w") as f:
            f.write(text + "\n")
        with open(os.path.join(out, "gpu_check.json"), "w") as f:
            json.dump({"device": device, "rows": rows, "failures": failures}, f, indent=1, default=str)
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
