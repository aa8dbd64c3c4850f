"""``torch.backends.cudnn`` flags: set and read back (cuDNN is not used by retrograd)."""
benchmark = False
deterministic = False
enabled = True
allow_tf32 = True


def is_available():
    return False


def version():
    return None
