# Gradient accumulation, detach, no_grad and hooks (seed article 002).
import retrograd as torch

w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
loss = (w * w).sum()
loss.backward(retain_graph=True)
loss.backward()                      # gradients accumulate: 2 * 2w
print("accumulated:", w.grad)
w.grad.zero_()                       # what optimizer.zero_grad() does

detached = w.detach()                # same values, no history
print("detached:", detached, detached.requires_grad)

with torch.no_grad():                # nothing inside is recorded
    out = w * 2
print("no_grad:", out.requires_grad)


def custom_hook(grad):
    grad = torch.clamp(grad, min=-1., max=1.)
    return grad


h = w.register_hook(custom_hook)     # register before backward to see the gradient
(w * 10).sum().backward()
print("clamped by the hook:", w.grad)
h.remove()

# The article's own snippet registers the hook *after* backward: the hook then has no
# effect on that backward (it would run on the next one), exactly as in PyTorch.
tensor = torch.tensor(5.0)
tensor.requires_grad = True
tensor.backward()                    # d(tensor)/d(tensor) = 1
tensor.register_hook(custom_hook)
print("hook registered after backward:", tensor.grad)
