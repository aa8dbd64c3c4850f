"""The autograd tutorial's first steps (seed 001), written for PyTorch."""
import torch

x = torch.tensor(4.0, requires_grad=True)
print("x.grad:", x.grad)
print("x.grad_fn:", x.grad_fn)
z = x ** 2
print("z.grad_fn:", type(z.grad_fn).__name__)
z.backward()
print("x.grad:", x.grad)

w = torch.ones(3, requires_grad=True)
y = (w * torch.tensor([1.0, 2.0, 3.0])).sum()
y.backward()
print("w.grad:", w.grad.tolist())
with torch.no_grad():
    print("no_grad requires_grad:", (w * 2).requires_grad)
print("is_tensor:", torch.is_tensor(w), "dtype:", w.dtype)
