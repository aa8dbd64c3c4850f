"""Train a small classifier on a synthetic two-moons-like set and log the run to TensorBoard
the way training scripts commonly do: the model's graph, the loss every step, train/test loss
together with add_scalars, weight histograms and an image of the first layer's weights every
epoch, a text note, and the run's hyperparameters with its final metrics.

Runs on real PyTorch (with TensorBoard installed) or, unchanged, under ``retrograd run``.
python train_logged.py LOG_DIR [--epochs N] [--lr LR]"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.tensorboard import SummaryWriter

parser = argparse.ArgumentParser()
parser.add_argument("log_dir")
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--hidden", type=int, default=16)
args = parser.parse_args()
torch.manual_seed(0)


def moons(n):
    t = torch.rand(n) * math.pi
    top = torch.rand(n) < 0.5
    x = torch.where(top, torch.cos(t), 1 - torch.cos(t))
    y = torch.where(top, torch.sin(t), 0.5 - torch.sin(t))
    return torch.stack([x, y], 1) + 0.1 * torch.randn(n, 2), top.long()


class Net(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc1 = nn.Linear(2, hidden)
        self.fc2 = nn.Linear(hidden, 2)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


xtr, ytr = moons(256)
xte, yte = moons(128)
loader = DataLoader(TensorDataset(xtr, ytr), batch_size=32, shuffle=True)
model = Net(args.hidden)
opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

with SummaryWriter(args.log_dir) as writer:
    writer.add_graph(model, xtr[:4])
    writer.add_text("notes", f"two moons, {args.hidden} hidden units")
    step = 0
    for epoch in range(args.epochs):
        model.train()
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            writer.add_scalar("Loss/train_step", loss.item(), step)
            step += 1
        model.eval()
        with torch.no_grad():
            train_loss = F.cross_entropy(model(xtr), ytr).item()
            logits = model(xte)
            test_loss = F.cross_entropy(logits, yte).item()
            acc = (logits.argmax(1) == yte).float().mean().item()
        writer.add_scalars("Loss", {"train": train_loss, "test": test_loss}, epoch)
        writer.add_scalar("Accuracy/test", acc, epoch)
        for name, p in model.named_parameters():
            writer.add_histogram(name, p, epoch)
        w = model.fc1.weight.detach()
        writer.add_image("fc1_weight", (w - w.min()) / (w.max() - w.min()), epoch, dataformats="HW")
        writer.flush()
        print(f"epoch {epoch} step {step} train {train_loss:.6f} test {test_loss:.6f} acc {acc:.4f}")
    writer.add_hparams({"lr": args.lr, "hidden": args.hidden, "optimizer": "SGD"},
                       {"hparam/accuracy": acc, "hparam/test_loss": test_loss}, run_name="hparams")
print("log dir", writer.get_logdir())
