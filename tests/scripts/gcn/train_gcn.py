"""A two-layer graph convolutional network on a Cora-format citation graph, written the way
PyTorch programs commonly write it (legacy typed constructors, a sparse COO adjacency
normalised as D^-1/2 (A + I) D^-1/2, torch.spmm, Adam with weight decay).

Runs on real PyTorch or, unchanged, under ``retrograd run``.
python train_gcn.py CORA_TGZ [--epochs N] [--seed S]"""
import argparse
import math
import tarfile

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def read_cora(tgz):
    """(features, labels, edges) from cora.tgz: cora/cora.content and cora/cora.cites."""
    with tarfile.open(tgz) as tf:
        content = tf.extractfile("cora/cora.content").read().decode().split("\n")
        cites = tf.extractfile("cora/cora.cites").read().decode().split("\n")
    rows = [line.split("\t") for line in content if line]
    ids = {int(r[0]): i for i, r in enumerate(rows)}
    feats = np.array([[int(v) for v in r[1:-1]] for r in rows], dtype=np.float32)
    _, labels = np.unique([r[-1] for r in rows], return_inverse=True)
    edges = np.array([[ids[int(a)], ids[int(b)]] for a, b in (line.split("\t") for line in cites if line)])
    return feats, labels, edges


def normalised_graph(feats, labels, edges):
    x = torch.FloatTensor(feats)
    row_scale = 1 / torch.sum(x, dim=1)
    row_scale[row_scale == float("inf")] = 0
    x = torch.diag(row_scale).to_sparse() @ x                 # rows sum to one

    n = len(labels)
    adj = torch.sparse_coo_tensor(torch.from_numpy(edges.T.copy()), torch.ones(len(edges)), (n, n),
                                  dtype=torch.int64)
    adj = torch.eye(n) + adj                                  # self-loops (a dense sum)
    d = torch.diag(torch.sqrt(1 / torch.sum(adj, dim=1))).to_sparse()
    adj = (d @ adj @ d).to_sparse()
    return x, torch.LongTensor(labels), adj


class GraphConv(nn.Module):
    def __init__(self, n_in, n_out, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.Tensor(n_in, n_out))
        self.bias = nn.Parameter(torch.Tensor(n_out)) if bias else None
        bound = 1 / math.sqrt(n_out)
        self.weight.data.uniform_(-bound, bound)
        if self.bias is not None:
            self.bias.data.uniform_(-bound, bound)

    def forward(self, x, adj):
        out = torch.spmm(adj, torch.mm(x, self.weight))
        return out if self.bias is None else out + self.bias


class GCN(nn.Module):
    def __init__(self, n_in, hidden, n_classes, p=0.5):
        super().__init__()
        self.gc1, self.gc2 = GraphConv(n_in, hidden), GraphConv(hidden, n_classes)
        self.dropout = nn.Dropout(p)

    def forward(self, x, adj):
        x = self.dropout(F.relu(self.gc1(self.dropout(x), adj)))
        return F.log_softmax(self.gc2(x, adj), dim=1)


def accuracy(logp, y):
    return (logp.argmax(dim=1) == y).float().mean().item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cora")
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    x, y, adj = normalised_graph(*read_cora(args.cora))
    order = torch.randperm(len(y))
    train, val, test = order[:1500], order[1500:2000], order[2000:]
    model = GCN(x.shape[1], 16, int(y.max().item()) + 1)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for epoch in range(1, args.epochs + 1):
        model.train()
        opt.zero_grad()
        logp = model(x, adj)
        loss = F.nll_loss(logp[train], y[train])
        loss.backward()
        opt.step()
        if epoch % 20 == 0:
            model.eval()
            with torch.no_grad():
                logp = model(x, adj)
                print(f"epoch {epoch} loss_train: {loss.item():.4f} acc_train: {accuracy(logp[train], y[train]):.4f} "
                      f"loss_val: {F.nll_loss(logp[val], y[val]).item():.4f} acc_val: {accuracy(logp[val], y[val]):.4f}")
    model.eval()
    with torch.no_grad():
        logp = model(x, adj)
        print(f"Test set results: loss {F.nll_loss(logp[test], y[test]).item():.4f} "
              f"accuracy {accuracy(logp[test], y[test]):.4f}")


if __name__ == "__main__":
    main()
