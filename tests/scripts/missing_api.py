"""Uses an API retrograd does not have: the run must stop with an error naming it."""
import torch
import torch.fft

signal = torch.zeros(8)
print("before")
spectrum = torch.fft.rfft(signal)
print("never printed")
