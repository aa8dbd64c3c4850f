"""DistributedDataParallel throughput, all-reduce time and overlap, one process vs several.

``python -m benchmarks.bench_ddp`` launches ``mpirun -n 1`` and ``mpirun -n 2`` (``--procs``)
of itself for the seeds' CNN and the GPT block, each process training on its own batch (weak
scaling: the global batch grows with the processes), and prints per model and process
count: the median step time, samples/s, the all-reduce time per step, how much of it
overlapped backward, and an alpha-beta fit of MPI all-reduce (latency and bandwidth) for
docs/scaling.md. ``--json PATH`` writes the figures. Single-threaded BLAS in every process.
"""
import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _worker(model_name, steps, bucket_cap_mb, out, lib="retrograd", port=0):
    sys.path.insert(0, os.path.join(HERE, "..", "src"))
    sys.path.insert(0, os.path.join(HERE, ".."))
    from benchmarks import cases
    if lib == "torch":          # PyTorch's DDP over gloo, in the same processes mpirun started
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                                rank=int(os.environ.get("OMPI_COMM_WORLD_RANK", "0")),
                                world_size=int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1")))
    else:
        import retrograd as torch
        import retrograd.distributed as dist
        from retrograd.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("mpi")
    rank, ws = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    r = np.random.default_rng(rank)
    F = torch.nn.functional
    if model_name == "cnn":
        model = cases.seed_cnn(torch)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x = torch.from_numpy(r.standard_normal((64, 1, 28, 28)).astype(np.float32))
        y = torch.from_numpy(r.integers(0, 10, 64))
        batch = 64

        def loss_of(m):
            return F.nll_loss(m(x), y)
    else:
        L, H, E, T, V, B = cases._gpt_sizes(False)
        model = cases.gpt(torch, L, H, E, T, V)
        opt = cases.gpt_optimizer(torch, model)
        idx = torch.from_numpy(r.integers(0, V, (B, T)))
        tgt = torch.from_numpy(r.integers(0, V, (B, T)))
        batch = B

        def loss_of(m):
            return m(idx, tgt)
    model.train()
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb)
    times, comm, overlap, compute, exposed = [], [], [], [], []
    for s in range(steps + 2):
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad()
        res = loss_of(ddp)
        loss = res[1] if isinstance(res, tuple) else res
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if s >= 2:                                  # two warm-up steps
            info = ddp._get_ddp_logging_data() if lib == "retrograd" else {}
            times.append(dt)
            comm.append(info.get("avg_backward_comm_time", 0) / 1e9)
            overlap.append(info.get("avg_backward_compute_comm_overlap_time", 0) / 1e9)
            compute.append(info.get("avg_backward_compute_time", 0) / 1e9)
            exposed.append(info.get("avg_backward_comm_exposed_time", 0) / 1e9)
    info = ddp._get_ddp_logging_data() if lib == "retrograd" else {
        "bucket_sizes": [sum(p.numel() * p.element_size() for p in model.parameters())], "num_buckets": 0}
    # all-reduce latency/bandwidth: blocking Allreduce of float32 buffers of growing size
    fit = None
    if ws > 1 and lib == "retrograd":
        from mpi4py import MPI
        sizes, secs = [], []
        for n in (256, 4096, 65536, 262144, 1048576, 4194304):
            buf = np.ones(n, np.float32)
            dist.barrier()
            ts = []
            for _ in range(7):
                t0 = time.perf_counter()
                ws_comm = dist._pg().comm
                ws_comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
                ts.append(time.perf_counter() - t0)
            sizes.append(n * 4)
            secs.append(float(np.median(ts)))
        beta, alpha = np.polyfit(sizes, secs, 1)    # t = alpha + beta * bytes
        fit = {"bytes": sizes, "seconds": secs, "latency_s": float(alpha), "s_per_byte": float(beta)}
    if rank == 0:
        med = float(np.median(times))
        res = {"lib": lib, "model": model_name, "procs": ws, "step_s": med, "samples_per_s": batch * ws / med,
               "allreduce_s": float(np.median(comm)), "overlap_s": float(np.median(overlap)),
               "backward_compute_s": float(np.median(compute)),
               "exposed_s": float(np.median(exposed)), "grad_bytes": int(sum(info["bucket_sizes"])),
               "num_buckets": info["num_buckets"], "allreduce_fit": fit}
        with open(out, "w") as f:
            json.dump(res, f)
    dist.destroy_process_group()


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _mpirun():
    for name in ("mpirun", "mpiexec"):
        p = shutil.which(name)
        if p:
            return p
    raise SystemExit("bench_ddp needs mpirun (Open MPI or MPICH) and mpi4py")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_ddp", description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="cnn,gpt")
    ap.add_argument("--procs", default="1,2")
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--bucket-cap-mb", type=float, default=25.0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--torch", action="store_true", help="also run PyTorch's DDP (gloo) in the same way")
    ap.add_argument("--worker", nargs=4, metavar=("LIB", "MODEL", "OUT", "PORT"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        lib, model, out, port = a.worker
        return _worker(model, a.steps, a.bucket_cap_mb, out, lib, int(port))
    mpirun = _mpirun()
    extra = []
    probe = subprocess.run([mpirun, "--version"], capture_output=True, text=True)
    if "Open MPI" in probe.stdout + probe.stderr:
        extra = ["--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    results = []
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        libs = ["retrograd", "torch"] if a.torch else ["retrograd"]
        procs = [int(x) for x in a.procs.split(",")]
        # the two libraries interleaved, so that both run under the same load
        for m, n, lib in itertools.product(a.models.split(","), procs, libs):
            out = os.path.join(d, f"{lib}{m}{n}.json")
            cmd = [mpirun, "-n", str(n)] + extra + [sys.executable, "-m", "benchmarks.bench_ddp", "--steps",
                                                     str(a.steps), "--bucket-cap-mb", str(a.bucket_cap_mb),
                                                     "--worker", lib, m, out, str(_free_port())]
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=os.path.join(HERE, ".."))
            if r.returncode != 0:
                raise SystemExit(r.stderr[-2000:])
            with open(out) as f:
                results.append(json.load(f))
    print(f"{'lib':9} {'model':5} {'procs':>5} {'step ms':>8} {'samples/s':>10} {'allreduce ms':>12} {'overlap':>8} "
          f"{'exposed ms':>10} {'grad MiB':>8} {'buckets':>7}")
    for res in results:
        comm = "{:12.2f} {:>8} {:10.2f}".format(
            res["allreduce_s"] * 1e3, f"{res['overlap_s'] / res['allreduce_s']:.0%}" if res["allreduce_s"] > 0 else "-",
            res["exposed_s"] * 1e3) if res["lib"] == "retrograd" else f"{'-':>12} {'-':>8} {'-':>10}"
        print(f"{res['lib']:9} {res['model']:5} {res['procs']:>5} {res['step_s'] * 1e3:8.2f} "
              f"{res['samples_per_s']:10.0f} {comm} {res['grad_bytes'] / 2**20:8.2f} {res['num_buckets']:>7}")
    for res in results:
        if res["allreduce_fit"]:
            f = res["allreduce_fit"]
            print(f"all-reduce fit ({res['model']}, {res['procs']} procs): latency {f['latency_s'] * 1e6:.1f} us, "
                  f"bandwidth {1 / f['s_per_byte'] / 1e9:.2f} GB/s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
