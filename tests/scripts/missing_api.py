"""Uses an API retrograd does not have: the run must stop with an error naming it."""
import torch
import torch.distributions

signal = torch.zeros(8)
print("before")
normal = torch.distributions.Normal(signal, 1.0)
print("never printed")
