# grad, grad_fn and backward (seed article 001), as written there.
import retrograd as torch

x = torch.tensor(4.0, requires_grad=True)
print("x.grad:", x.grad)
print("x.grad_fn:", x.grad_fn)

z = x ** 2
print("z grad:", z.grad)
print("z.grad_fn:", z.grad_fn)

z.backward()
print("x.grad:", x.grad)
