# The dynamic graph's backtracking mechanism (seed article 000), as written there.
import retrograd as torch

x = torch.tensor(1., requires_grad=True)
print(x)
print(x.requires_grad)
x.requires_grad = False
print(x.requires_grad)

x = torch.tensor(1., requires_grad=True)
y = x ** 2
print(y)
print(y.grad_fn)
print(x.grad_fn)
print(y.requires_grad)
z = y + 1
print(z)
print(z.requires_grad)
print(z.grad_fn)
