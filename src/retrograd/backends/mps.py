"""``torch.backends.mps``: Apple's GPUs are not supported."""


def is_available():
    return False


def is_built():
    return False
