"""The training loop of seed 001 (the CNN for handwritten digits), as the article writes it,
on the first images of MNIST: python seed_mnist_cnn.py [n_train] [n_test]."""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
import torchvision.datasets as dsets
import torchvision.transforms as transforms

image_size = 28
num_classes = 10
num_epochs = 1
batch_size = 64
n_train = int(sys.argv[1]) if len(sys.argv) > 1 else 1280
n_test = int(sys.argv[2]) if len(sys.argv) > 2 else 500

torch.manual_seed(0)
train_dataset = dsets.MNIST(root=None, train=True, transform=transforms.ToTensor(), download=False)
test_dataset = dsets.MNIST(root=None, train=False, transform=transforms.ToTensor())
train_loader = torch.utils.data.DataLoader(
    dataset=torch.utils.data.Subset(train_dataset, range(n_train)), batch_size=batch_size, shuffle=True)
test_loader = torch.utils.data.DataLoader(
    dataset=torch.utils.data.Subset(test_dataset, range(n_test)), batch_size=batch_size, shuffle=False)

depth = [4, 8]


class ConvNet(nn.Module):
    def __init__(self):
        super(ConvNet, self).__init__()
        self.conv1 = nn.Conv2d(1, 4, 5, padding=2)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(depth[0], depth[1], 5, padding=2)
        self.fc1 = nn.Linear(image_size // 4 * image_size // 4 * depth[1], 512)
        self.fc2 = nn.Linear(512, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.pool(x)
        x = F.relu(self.conv2(x))
        x = self.pool(x)
        x = x.view(-1, image_size // 4 * image_size // 4 * depth[1])
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        x = F.log_softmax(x, dim=1)
        return x


def rightness(predictions, labels):
    pred = torch.max(predictions.data, 1)[1]
    rights = pred.eq(labels.data.view_as(pred)).sum()
    return rights, len(labels)


net = ConvNet()
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
record = []
for epoch in range(num_epochs):
    train_rights = []
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.clone().requires_grad_(True), target.clone().detach()
        net.train()
        output = net(data)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        right = rightness(output, target)
        train_rights.append(right)
    net.eval()
    val_rights = []
    for (data, target) in test_loader:
        output = net(data)
        right = rightness(output, target)
        val_rights.append(right)
    train_r = (sum([tup[0] for tup in train_rights]), sum([tup[1] for tup in train_rights]))
    val_r = (sum([tup[0] for tup in val_rights]), sum([tup[1] for tup in val_rights]))
    print("epoch {}: train accuracy {:.2f}%, test accuracy {:.2f}%".format(
        epoch, 100. * train_r[0].numpy() / train_r[1], 100. * val_r[0].numpy() / val_r[1]))
