"""Uses an API retrograd does not have: the run must stop with an error naming it."""
import torch
import torch.distributions

signal = torch.zeros(8)
print("before")
prior = torch.distributions.LKJCholesky(3, 0.5)
print("never printed")
