"""The playground's preloaded programs: every example of the three tutorial articles (their
titles in English beside the articles' own Chinese), then a few more that show the graph at
work. Each is plain PyTorch code (``import torch``); the playground runs it on retrograd.
"""

EXAMPLES = [
    {"id": "requires-grad", "seed": "000",
     "title": "A differentiable tensor: requires_grad",
     "title_zh": "Variable与requires_grad",
     "code": '''import torch

x = torch.tensor(1., requires_grad=True)
print(x)
# requires_grad is an attribute: read it and change it
print(x.requires_grad)
x.requires_grad = False
print(x.requires_grad)
'''},
    {"id": "backtracking", "seed": "000",
     "title": "The backtracking mechanism: x -> y -> z",
     "title_zh": "可微分性的属性与回溯机制",
     "code": '''import torch

x = torch.tensor(1., requires_grad=True)
y = x ** 2                 # y remembers how it was made: grad_fn
print(y)
print(y.grad_fn)
print(x.grad_fn)           # x was created by the user: no grad_fn
print(y.requires_grad)     # computed from a differentiable tensor: differentiable too
z = y + 1
print(z)
print(z.requires_grad)
print(z.grad_fn)
print(z.grad_fn.next_functions)   # the edge back to y's PowBackward0
'''},
    {"id": "node-kinds", "seed": "000",
     "title": "Leaf, intermediate and output nodes of the graph",
     "title_zh": "张量计算图：叶节点、中间节点与输出节点",
     "code": '''import torch

x = torch.tensor(1., requires_grad=True)   # leaf node
y = x ** 2                                 # intermediate node
z = y + 1                                  # output node
for name, t in [("x", x), ("y", y), ("z", z)]:
    print(name, "is_leaf:", t.is_leaf, " grad_fn:", t.grad_fn)
z.backward()
print("dz/dx =", x.grad)                   # 2x at x = 1
'''},
    {"id": "tensor-attributes", "seed": "001",
     "title": "What a tensor carries: data, device, dtype, requires_grad",
     "title_zh": "Torch的梯度与自动微分：data、device、dtype、requires_grad",
     "code": '''import torch

t = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
print(t.data)
print(t.device)
print(t.dtype)
print(t.requires_grad)
i = torch.tensor([1, 2, 3])
print(i.dtype, i.requires_grad)            # integers: no gradients
try:
    i.requires_grad_(True)
except RuntimeError as e:
    print("RuntimeError:", e)
print((t * 2).requires_grad)               # inferred from the operands
'''},
    {"id": "grad-and-grad-fn", "seed": "001",
     "title": "grad, grad_fn and backward()",
     "title_zh": "代码示例：grad、grad_fn 与 backward",
     "code": '''import torch

x = torch.tensor(4.0, requires_grad=True)
print("x.grad:", x.grad)
print("x.grad_fn:", x.grad_fn)

z = x ** 2
print("z grad:", z.grad)          # a non-leaf's .grad: None, with a warning
print("z.grad_fn:", z.grad_fn)

z.backward()
print("x.grad:", x.grad)          # dz/dx = 2x = 8
'''},
    {"id": "mnist-training", "seed": "001",
     "title": "The training loop: forward, zero_grad, backward, step (MNIST, 1,000 images)",
     "title_zh": "完整示例：手写数字识别的训练流程",
     "code": '''import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torchvision import datasets, transforms

torch.manual_seed(0)
tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
train = datasets.MNIST("data", train=True, transform=tf)      # the bundled 800 images
test = datasets.MNIST("data", train=False, transform=tf)      # and 200 for testing
train_loader = torch.utils.data.DataLoader(train, batch_size=50, shuffle=True)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 5, padding=2)
        self.conv2 = nn.Conv2d(4, 8, 5, padding=2)
        self.fc1 = nn.Linear(392, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.view(-1, 392)))
        return self.fc2(x)


def rightness(output, target):
    pred = output.argmax(dim=1)
    return (pred == target).sum().item(), len(target)


net = ConvNet()
criterion = nn.CrossEntropyLoss()
optimizer = optim.Adam(net.parameters(), lr=0.01)
for epoch in range(2):
    for batch_idx, (data, target) in enumerate(train_loader):
        net.train()
        output = net(data)                 # forward: builds the graph
        loss = criterion(output, target)
        optimizer.zero_grad()              # clear the accumulated gradients
        loss.backward()                    # walk the graph backwards
        optimizer.step()                   # update the parameters
        right, n = rightness(output, target)
        print(f"epoch {epoch} step {batch_idx:2d} loss: {loss.item():.4f} acc {right / n:.2f}")

net.eval()
with torch.no_grad():
    right = total = 0
    for data, target in torch.utils.data.DataLoader(test, batch_size=100):
        r, n = rightness(net(data), target)
        right, total = right + r, total + n
print(f"test accuracy: {right / total:.2%}")
'''},
    {"id": "accumulation", "seed": "002",
     "title": "Gradient accumulation and retain_graph",
     "title_zh": "梯度累积",
     "code": '''import torch

w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
loss = (w * w).sum()
loss.backward(retain_graph=True)   # keep the graph for a second walk
print("after one backward:", w.grad)
loss.backward()                    # gradients add up: 2 * 2w
print("after two:", w.grad)
w.grad.zero_()                     # what optimizer.zero_grad() does
print("zeroed:", w.grad)
try:
    loss.backward()                # the graph was freed by the last walk
    loss.backward()
except RuntimeError as e:
    print("RuntimeError:", str(e).split(".")[0])
'''},
    {"id": "optimizer-step", "seed": "002",
     "title": "Reading gradients and updating with an optimizer",
     "title_zh": "梯度访问与更新",
     "code": '''import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(3, 1)
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
inputs, targets = torch.randn(8, 3), torch.randn(8, 1)

outputs = model(inputs)            # forward
loss = criterion(outputs, targets)
loss.backward()                    # gradients into .grad
print("weight.grad:", model.weight.grad)
before = model.weight.detach().clone()
optimizer.step()                   # w <- w - lr * grad
print("change:", model.weight.detach() - before)
optimizer.zero_grad()              # before the next iteration
print("after zero_grad:", model.weight.grad)
'''},
    {"id": "detach", "seed": "002",
     "title": "detach(): the same values, no history",
     "title_zh": "使用 .detach() 方法切断计算图",
     "code": '''import torch

original_tensor = torch.tensor([1.0, 2.0], requires_grad=True)
y = original_tensor * 3
detached_tensor = y.detach()
print(detached_tensor, detached_tensor.requires_grad, detached_tensor.grad_fn)
print("shares memory:", detached_tensor.data_ptr() == y.data_ptr())
z = (y * detached_tensor).sum()    # the detached factor is a constant to autograd
z.backward()
print(original_tensor.grad)        # 3 * detached = [9., 18.]
'''},
    {"id": "no-grad", "seed": "002",
     "title": "torch.no_grad(): nothing inside is recorded",
     "title_zh": "torch.no_grad() 上下文管理器",
     "code": '''import torch
import torch.nn as nn

model = nn.Linear(4, 2)
input_data = torch.ones(1, 4)
with torch.no_grad():
    output = model(input_data)     # evaluation: no graph is built
print(output.requires_grad, output.grad_fn)
output = model(input_data)
print(output.requires_grad, output.grad_fn)
print(torch.is_grad_enabled())
'''},
    {"id": "register-hook", "seed": "002",
     "title": "register_hook(): a callback on the gradient",
     "title_zh": "高级特性：.register_hook() 方法",
     "code": '''import torch


def custom_hook(grad):
    grad = torch.clamp(grad, min=-1., max=1.)
    return grad


w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
h = w.register_hook(custom_hook)   # registered before backward: it clips the gradient
(w * 10).sum().backward()
print("clipped by the hook:", w.grad)
h.remove()

# The article registers the hook after backward: it then has no effect on that walk.
tensor = torch.tensor(5.0)
tensor.requires_grad = True
tensor.backward()
tensor.register_hook(custom_hook)
print("hook registered after backward:", tensor.grad)
'''},
    {"id": "other-features", "seed": "002",
     "title": "Other advanced features: complex numbers and half precision",
     "title_zh": "其他高级功能：复数与半精度",
     "code": '''import torch

z = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
loss = (z * z.conj()).real.sum()   # |z|^2, a real loss of complex leaves
loss.backward()
print(z.grad)                      # PyTorch's convention: 2z

h = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16, requires_grad=True)
(h * h).sum().backward()
print(h.grad, h.grad.dtype)
print(torch.tensor(0.1, dtype=torch.float16).item())   # the value float16 can hold
'''},
    {"id": "chain-rule", "seed": "extra",
     "title": "The chain rule on x -> y -> z, step by step",
     "title_zh": "链式法则",
     "code": '''import torch

x = torch.tensor(3.0, requires_grad=True)
y = x ** 2
y.retain_grad()                    # keep the intermediate gradient too
z = 2 * y + 1
z.backward()
print("dz/dy =", y.grad)           # 2
print("dy/dx =", 2 * x.item())     # 6
print("dz/dx =", x.grad)           # 2 * 6 = 12
'''},
    {"id": "hooks", "seed": "extra",
     "title": "Hooks on tensors and on graph nodes",
     "title_zh": "钩子",
     "code": '''import torch

x = torch.tensor([1.0, -2.0], requires_grad=True)
y = x * 3
y.register_hook(lambda g: print("gradient reaching y:", g))
z = (y ** 2).sum()
z.grad_fn.register_hook(lambda grad_inputs, grad_outputs: print("SumBackward0 ran:", grad_outputs))
x.register_post_accumulate_grad_hook(lambda t: print("x.grad accumulated:", t.grad))
z.backward()
'''},
    {"id": "retain-grad", "seed": "extra",
     "title": "retain_grad(): keeping an intermediate gradient",
     "title_zh": "retain_grad() 保留中间节点的梯度",
     "code": '''import torch

a = torch.tensor([2.0, 3.0], requires_grad=True)
b = a * a
c = b.sum()
b.retain_grad()
c.backward()
print("a.grad:", a.grad)
print("b.grad:", b.grad)
print("b.retains_grad:", b.retains_grad, " a.retains_grad:", a.retains_grad)
'''},
    {"id": "detach-vs-no-grad", "seed": "extra",
     "title": "detach() versus no_grad()",
     "title_zh": "detach 与 no_grad 的区别",
     "code": '''import torch

x = torch.tensor(2.0, requires_grad=True)
y = x * x
with torch.no_grad():
    frozen = y * 10                # computed without recording
kept = y.detach() * 10             # cut from the history, then computed
print(frozen.requires_grad, kept.requires_grad)
total = y + frozen + kept          # only y carries a path back to x
total.backward()
print(x.grad)                      # d(x^2)/dx = 4
'''},
    {"id": "custom-function", "seed": "extra",
     "title": "A custom autograd Function",
     "title_zh": "自定义 autograd Function",
     "code": '''import torch


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


# gradcheck compares backward with finite differences
print(torch.autograd.gradcheck(Exp.apply, (torch.tensor([0.5], dtype=torch.float64, requires_grad=True),)))
x = torch.tensor([0.0, 1.0], requires_grad=True)
y = Exp.apply(x)
print(y)
print(y.grad_fn)
y.sum().backward()
print(x.grad)
'''},
]


def by_id(ex_id):
    """The example called ``ex_id``."""
    for e in EXAMPLES:
        if e["id"] == ex_id:
            return e
    raise KeyError(ex_id)
