"""Models shared by the nn tests and the benchmark, written once for both libraries."""


def seed_cnn(torch):
    """The seeds' MNIST network (two 5x5 convs with pooling, two linear layers)."""
    nn = torch.nn
    F = torch.nn.functional
    image_size, num_classes, depth = 28, 10, [4, 8]

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

    return ConvNet()


def seed_cnn_sequential(torch):
    """The same network as one Sequential (Conv-ReLU-Pool x2, Flatten, Linear-ReLU-Dropout-Linear)."""
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 4, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 8, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(392, 512), nn.ReLU(), nn.Dropout(), nn.Linear(512, 10))


def lenet(torch):
    """PyTorch's 'Neural Networks' tutorial model (LeNet-5 on 32x32 input)."""
    nn = torch.nn
    F = torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.conv1 = nn.Conv2d(1, 6, 5)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.flatten = nn.Flatten(1)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, input):
            c1 = F.relu(self.conv1(input))
            s2 = F.max_pool2d(c1, (2, 2))
            c3 = F.relu(self.conv2(s2))
            s4 = F.max_pool2d(c3, 2)
            s4 = self.flatten(s4)
            f5 = F.relu(self.fc1(s4))
            f6 = F.relu(self.fc2(f5))
            output = self.fc3(f6)
            return output

    return Net()
