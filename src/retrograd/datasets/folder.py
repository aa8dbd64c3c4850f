"""Datasets of files in class folders (``root/<class>/<file>``): DatasetFolder and
ImageFolder; and FakeData (random images)."""
import os

from ..utils.data.dataset import Dataset
from .vision import VisionDataset

__all__ = ["DatasetFolder", "ImageFolder", "FakeData", "IMG_EXTENSIONS", "find_classes", "make_dataset",
           "pil_loader", "default_loader"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_file_allowed_extension(filename, extensions):
    """Whether ``filename`` ends with one of ``extensions`` (case-insensitive)."""
    return filename.lower().endswith(extensions if isinstance(extensions, str) else tuple(extensions))


def find_classes(directory):
    """The sorted sub-folder names of ``directory`` and their indices."""
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    return classes, {c: i for i, c in enumerate(classes)}


def make_dataset(directory, class_to_idx=None, extensions=None, is_valid_file=None, allow_empty=False):
    """(path, class index) of every valid file under each class folder, in sorted order
    (following symbolic links)."""
    directory = os.path.expanduser(os.fspath(directory))
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    elif not class_to_idx:
        raise ValueError("'class_to_index' must have at least one entry to collect any samples.")
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at the same time")
    if extensions is not None:
        def is_valid_file(x):
            return has_file_allowed_extension(x, extensions)
    instances, found = [], set()
    for target_class in sorted(class_to_idx):
        index = class_to_idx[target_class]
        target_dir = os.path.join(directory, target_class)
        if not os.path.isdir(target_dir):
            continue
        for root, _, fnames in sorted(os.walk(target_dir, followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(root, fname)
                if is_valid_file(path):
                    instances.append((path, index))
                    found.add(target_class)
    empty = set(class_to_idx) - found
    if empty and not allow_empty:
        msg = f"Found no valid file for the classes {', '.join(sorted(empty))}. "
        if extensions is not None:
            msg += f"Supported extensions are: {extensions if isinstance(extensions, str) else ', '.join(extensions)}"
        raise FileNotFoundError(msg)
    return instances


def pil_loader(path):
    """An image file opened with Pillow, as RGB."""
    from PIL import Image
    with open(path, "rb") as f:
        img = Image.open(f)
        return img.convert("RGB")


def default_loader(path):
    """``pil_loader`` (Pillow is the only image backend here)."""
    return pil_loader(path)


class DatasetFolder(VisionDataset):
    """Samples ``(loader(path), class index)`` of the files in ``root/<class>/...`` accepted by
    ``extensions`` or ``is_valid_file``."""

    def __init__(self, root, loader, extensions=None, transform=None, target_transform=None, is_valid_file=None,
                 allow_empty=False):
        super().__init__(root, transform, target_transform)
        classes, class_to_idx = self.find_classes(self.root)
        samples = self.make_dataset(self.root, class_to_idx, extensions, is_valid_file, allow_empty=allow_empty)
        self.loader = loader
        self.extensions = extensions
        self.classes = classes
        self.class_to_idx = class_to_idx
        self.samples = samples
        self.targets = [s[1] for s in samples]

    @staticmethod
    def make_dataset(directory, class_to_idx, extensions=None, is_valid_file=None, allow_empty=False):
        return make_dataset(directory, class_to_idx, extensions, is_valid_file, allow_empty)

    def find_classes(self, directory):
        return find_classes(directory)

    def __getitem__(self, index):
        path, target = self.samples[index]
        return self._transformed(self.loader(path), target)

    def __len__(self):
        return len(self.samples)



class ImageFolder(DatasetFolder):
    """``DatasetFolder`` of image files (``IMG_EXTENSIONS``) opened as RGB PIL images."""

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader, is_valid_file=None,
                 allow_empty=False):
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None, transform=transform,
                         target_transform=target_transform, is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.imgs = self.samples


class FakeData(Dataset):
    """``size`` random images (standard normal pixels through ``ToPILImage``) with random labels;
    sample ``i`` is the same every time (drawn from the seed ``i + random_offset``, leaving
    the global generator as it was)."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None, target_transform=None,
                 random_offset=0):
        self.size, self.num_classes, self.image_size = size, num_classes, image_size
        self.transform, self.target_transform = transform, target_transform
        self.random_offset = random_offset

    def __getitem__(self, index):
        import retrograd
        from ..vision.transforms.functional import to_pil_image
        if index >= len(self):
            raise IndexError(f"{self.__class__.__name__} index out of range")
        state = retrograd.get_rng_state()
        try:
            retrograd.manual_seed(index + self.random_offset)
            img = retrograd.randn(*self.image_size)
            target = int(retrograd.randint(0, self.num_classes, size=(1,), dtype=retrograd.long)[0])
        finally:
            retrograd.set_rng_state(state)
        img = to_pil_image(img)
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self):
        return self.size
