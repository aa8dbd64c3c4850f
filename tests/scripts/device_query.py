"""The device-selection lines that open PyTorch's quickstart."""
import torch

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.backends.cudnn.benchmark = True
print(f"Using {device} device")
x = torch.ones(2, 2, device=device)
print(x.device)
print("has an unknown name:", hasattr(torch, "not_a_torch_function"))
