"""Train the small GPT for a few steps on a text file's characters and write a checkpoint
dict (model and optimizer state_dicts, model_args, iteration, config) with torch.save, as
training scripts of this kind do. Meant for real PyTorch; also runs under ``retrograd run``.
python train_gpt.py TEXT OUT_DIR [--iters N] [--compile-prefix]"""
import argparse
import os
import pickle

import numpy as np
import torch

from gpt import GPT, GPTConfig

parser = argparse.ArgumentParser()
parser.add_argument("text")
parser.add_argument("out_dir")
parser.add_argument("--iters", type=int, default=20)
parser.add_argument("--compile-prefix", action="store_true", help="store keys as torch.compile's wrapper does")
args = parser.parse_args()
torch.manual_seed(1337)

text = open(args.text, encoding="utf-8").read()
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
os.makedirs(args.out_dir, exist_ok=True)
with open(os.path.join(args.out_dir, "meta.pkl"), "wb") as f:
    pickle.dump({"vocab_size": len(chars), "stoi": stoi, "itos": {i: c for c, i in stoi.items()}}, f)

model_args = dict(n_layer=2, n_head=2, n_embd=32, block_size=32, bias=True, vocab_size=len(chars), dropout=0.0)
model = GPT(GPTConfig(**model_args))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1)
for it in range(args.iters):
    ix = torch.randint(len(data) - 33, (8,))
    x = torch.stack([data[i:i + 32] for i in ix])
    y = torch.stack([data[i + 1:i + 33] for i in ix])
    _, loss = model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
print(f"iter {args.iters}: loss {loss.item():.4f}")
sd = model.state_dict()
if args.compile_prefix:
    sd = {"_orig_mod." + k: v for k, v in sd.items()}
ckpt = {"model": sd, "optimizer": opt.state_dict(), "model_args": model_args, "iter_num": args.iters,
        "best_val_loss": torch.tensor(loss.item()), "config": {"dataset": "chars", "lr": 3e-3, "dtype": "float32"}}
torch.save(ckpt, os.path.join(args.out_dir, "ckpt.pt"))
