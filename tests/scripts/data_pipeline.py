"""A custom Dataset, random_split and a DataLoader with worker processes (PyTorch's data tutorial)."""
import sys

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset, random_split, get_worker_info


class SquaresDataset(Dataset):
    def __init__(self, n):
        self.x = np.arange(n, dtype=np.float32)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, idx):
        info = get_worker_info()
        return {"x": self.x[idx], "y": self.x[idx] ** 2, "worker": -1 if info is None else info.id}


def main(workers):
    torch.manual_seed(0)
    ds = SquaresDataset(50)
    train, val = random_split(ds, [0.8, 0.2], generator=torch.Generator().manual_seed(42))
    print("split:", len(train), len(val))
    loader = DataLoader(train, batch_size=8, shuffle=True, num_workers=workers,
                        generator=torch.Generator().manual_seed(1))
    total, seen, workers_seen = 0.0, 0, set()
    for batch in loader:
        assert torch.is_tensor(batch["x"]) and batch["x"].dtype == torch.float32
        total += float(batch["y"].sum())
        seen += len(batch["x"])
        workers_seen.update(batch["worker"].tolist())
    print("seen:", seen, "sum:", total == sum(float(train[i]["y"]) for i in range(len(train))))
    print("workers:", sorted(workers_seen))
    tds = TensorDataset(torch.arange(10), torch.arange(10) * 2)
    xb, yb = next(iter(DataLoader(tds, batch_size=4)))
    print("tensor dataset:", xb.tolist(), yb.tolist())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
