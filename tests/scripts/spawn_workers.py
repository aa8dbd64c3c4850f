"""DataLoader workers started by spawn / forkserver (argv[1]) re-import this script: the
import hook must be there first, so the dataset makes retrograd tensors and no real torch
is ever imported in the worker."""
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.tensor([float(i * i)])


def collate(batch):
    real = sorted(k for k in sys.modules if k == "torch._C" or k.startswith("torch._C."))
    kinds = sorted({type(b).__module__ for b in batch})
    return torch.stack(batch), kinds, real


if __name__ == "__main__":
    loader = DataLoader(Squares(), batch_size=4, num_workers=2, multiprocessing_context=sys.argv[1],
                        collate_fn=collate)
    for x, kinds, real in loader:
        print("batch", type(x).__module__, kinds, real, x.view(-1).tolist())
    print("main real torch:", "torch._C" in sys.modules)
