"""Train a word-level language model, save the whole model with torch.save(model, f), load it
back the way PyTorch >= 2.6 wants (an allowlist with torch.serialization.safe_globals, and the
explicit weights_only=False), and generate a few words from the reloaded model.

Runs on real PyTorch or, unchanged, under ``retrograd run``.
python train_lm.py CORPUS.txt --model LSTM --save model.pt [--epochs N]"""
import argparse
import math

import torch
import torch.nn as nn

from lm_model import RecurrentLM, TransformerLM, Positions

parser = argparse.ArgumentParser()
parser.add_argument("corpus")
parser.add_argument("--model", default="LSTM", help="RNN_TANH, RNN_RELU, LSTM, GRU or Transformer")
parser.add_argument("--emsize", type=int, default=16)
parser.add_argument("--nhid", type=int, default=16)
parser.add_argument("--nlayers", type=int, default=2)
parser.add_argument("--nhead", type=int, default=2)
parser.add_argument("--lr", type=float, default=5.0)
parser.add_argument("--clip", type=float, default=0.25)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--bptt", type=int, default=8)
parser.add_argument("--batch_size", type=int, default=4)
parser.add_argument("--dropout", type=float, default=0.2)
parser.add_argument("--tied", action="store_true")
parser.add_argument("--seed", type=int, default=1111)
parser.add_argument("--save", default="model.pt")
args = parser.parse_args()
torch.manual_seed(args.seed)

# --- the corpus: one word per token, <eos> at each line end ---
words, idx = [], {}
for line in open(args.corpus, encoding="utf-8"):
    for w in line.split() + ["<eos>"]:
        idx.setdefault(w, len(idx))
        words.append(idx[w])
ids = torch.tensor(words, dtype=torch.int64)
n = len(ids)
train_ids, valid_ids = ids[:int(n * 0.8)], ids[int(n * 0.8):]


def batchify(data, bsz):
    nb = data.size(0) // bsz
    return data.narrow(0, 0, nb * bsz).view(bsz, -1).t().contiguous()


train_data, val_data = batchify(train_ids, args.batch_size), batchify(valid_ids, 2)
ntokens = len(idx)
if args.model == "Transformer":
    model = TransformerLM(ntokens, args.emsize, args.nhead, args.nhid, args.nlayers, args.dropout)
else:
    model = RecurrentLM(args.model, ntokens, args.emsize, args.nhid, args.nlayers, args.dropout, args.tied)
criterion = nn.NLLLoss()


def repackage(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return None if h is None else tuple(repackage(v) for v in h)


def get_batch(source, i):
    n = min(args.bptt, len(source) - 1 - i)
    return source[i:i + n], source[i + 1:i + 1 + n].reshape(-1)


def evaluate(m, source):
    m.eval()
    total = 0.0
    hidden = m.init_hidden(source.size(1))
    with torch.no_grad():
        for i in range(0, source.size(0) - 1, args.bptt):
            x, y = get_batch(source, i)
            out, hidden = m(x, hidden)
            hidden = repackage(hidden)
            total += len(x) * criterion(out, y).item()
    return total / (len(source) - 1)


best = None
lr = args.lr
for epoch in range(1, args.epochs + 1):
    model.train()
    hidden = model.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        x, y = get_batch(train_data, i)
        model.zero_grad()
        hidden = repackage(hidden)
        out, hidden = model(x, hidden)
        loss = criterion(out, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
    val_loss = evaluate(model, val_data)
    print(f"| end of epoch {epoch} | valid loss {val_loss:.4f} | valid ppl {math.exp(val_loss):.2f}")
    if best is None or val_loss < best:
        with open(args.save, "wb") as f:
            torch.save(model, f)
        best = val_loss
    else:
        lr /= 4.0

if args.model == "Transformer":
    allow = [TransformerLM, Positions, torch.nn.functional.relu, torch.nn.modules.activation.MultiheadAttention,
             torch.nn.modules.container.ModuleList, torch.nn.modules.dropout.Dropout,
             torch.nn.modules.linear.Linear, torch.nn.modules.linear.NonDynamicallyQuantizableLinear,
             torch.nn.modules.normalization.LayerNorm, torch.nn.modules.sparse.Embedding,
             torch.nn.modules.transformer.TransformerEncoder, torch.nn.modules.transformer.TransformerEncoderLayer]
else:
    allow = [RecurrentLM, torch.nn.modules.dropout.Dropout, torch.nn.modules.linear.Linear,
             torch.nn.modules.rnn.GRU, torch.nn.modules.rnn.LSTM, torch.nn.modules.rnn.RNN,
             torch.nn.modules.sparse.Embedding]

try:
    with open(args.save, "rb") as f:
        torch.load(f)
    print("default load: loaded")
except Exception as e:
    print(f"default load: {type(e).__name__}")

with open(args.save, "rb") as f:
    with torch.serialization.safe_globals(allow):
        reloaded = torch.load(f)
with open(args.save, "rb") as f:
    trusted = torch.load(f, weights_only=False)
if args.model != "Transformer":
    reloaded.rnn.flatten_parameters()
    if args.tied:
        assert reloaded.head.weight is reloaded.embed.weight
print(f"reloaded {type(reloaded).__name__} {type(trusted).__name__}")
print(f"best valid loss {best:.6f} | reloaded valid loss {evaluate(reloaded, val_data):.6f} "
      f"| trusted valid loss {evaluate(trusted, val_data):.6f}")

# a few words from the reloaded model
itos = {i: w for w, i in idx.items()}
x = torch.randint(ntokens, (1, 1), dtype=torch.long)
hidden = reloaded.init_hidden(1)
out_words = []
with torch.no_grad():
    for _ in range(10):
        if args.model == "Transformer":
            out, _ = reloaded(x, None)
            w = torch.multinomial(out[-1].exp(), 1)[0]
            x = torch.cat([x, w.view(1, 1)], 0)
        else:
            out, hidden = reloaded(x, hidden)
            w = torch.multinomial(out[-1].exp(), 1)[0]
            x.fill_(w)
        out_words.append(itos[w.item()])
print("generated:", " ".join(out_words))
