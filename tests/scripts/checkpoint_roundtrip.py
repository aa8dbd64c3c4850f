"""Saving and loading tensors with torch.save / torch.load."""
import os
import sys
import tempfile

import torch

path = os.path.join(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(), "state.pt")
state = {"weights": torch.randn(3, 4), "step": 7, "names": ["a", "b"], "extra": None}
torch.save(state, path)
back = torch.load(path, map_location="cpu", weights_only=True)
print("equal:", bool((back["weights"] == state["weights"]).all()), back["step"], back["names"], back["extra"])
