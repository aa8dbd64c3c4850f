"""The datasets' common base (torchvision's ``VisionDataset``): a root folder, the sample and
target transforms, and the printed summary."""
import os

from ..utils.data.dataset import Dataset


class VisionDataset(Dataset):
    """A dataset under ``root`` whose samples pass through ``transform`` and whose targets
    pass through ``target_transform`` (either may be None)."""

    def __init__(self, root=None, transform=None, target_transform=None):
        self.root = None if root is None else os.path.expanduser(os.fspath(root))
        self.transform, self.target_transform = transform, target_transform

    def _transformed(self, sample, target):
        """``(sample, target)`` after the dataset's transforms."""
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target

    def _root_location(self):
        return self.root

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"Number of datapoints: {len(self)}", f"Root location: {self._root_location()}"]
        lines += self.extra_repr().splitlines()
        if self.transform is not None:
            lines.append(f"Transform: {self.transform!r}")
        return f"Dataset {self.__class__.__name__}\n" + "\n".join("    " + ln for ln in lines)
