"""Load the checkpoint train_gpt.py wrote (torch.load with map_location, the '_orig_mod.'
prefix of a compiled model removed) and sample from the model; print the logits of the prompt
too, so that two runs can be compared number for number.
python sample_gpt.py OUT_DIR [--start TEXT] [--num_samples N] [--max_new_tokens N] [--top_k K]"""
import argparse
import os
import pickle

import torch

from gpt import GPT, GPTConfig

parser = argparse.ArgumentParser()
parser.add_argument("out_dir")
parser.add_argument("--start", default="ab")
parser.add_argument("--num_samples", type=int, default=2)
parser.add_argument("--max_new_tokens", type=int, default=20)
parser.add_argument("--temperature", type=float, default=0.8)
parser.add_argument("--top_k", type=int, default=5)
parser.add_argument("--device", default="cpu")
args = parser.parse_args()
torch.manual_seed(1337)

checkpoint = torch.load(os.path.join(args.out_dir, "ckpt.pt"), map_location=args.device)
model = GPT(GPTConfig(**checkpoint["model_args"]))
state_dict = checkpoint["model"]
for k in list(state_dict):
    if k.startswith("_orig_mod."):
        state_dict[k[len("_orig_mod."):]] = state_dict.pop(k)
model.load_state_dict(state_dict)
model.eval()
model.to(args.device)
print(f"iter_num {checkpoint['iter_num']} best_val_loss {checkpoint['best_val_loss'].item():.6f} "
      f"optimizer steps {checkpoint['optimizer']['state'][0]['step'].item():.0f}")

with open(os.path.join(args.out_dir, "meta.pkl"), "rb") as f:
    meta = pickle.load(f)
stoi, itos = meta["stoi"], meta["itos"]
x = torch.tensor([stoi[c] for c in args.start], dtype=torch.long, device=args.device)[None, ...]
with torch.no_grad():
    logits, _ = model(x)
    print("logits", " ".join(f"{v:.6f}" for v in logits[0, -1].tolist()))
    greedy = model.generate(x, args.max_new_tokens, top_k=1)
    print("greedy:", "".join(itos[i] for i in greedy[0].tolist()))
    for _ in range(args.num_samples):
        y = model.generate(x, args.max_new_tokens, temperature=args.temperature, top_k=args.top_k)
        print("sample:", "".join(itos[i] for i in y[0].tolist()).replace("\n", "|"))
