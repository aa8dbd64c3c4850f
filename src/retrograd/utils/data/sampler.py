"""Samplers: which indices a DataLoader fetches, in which order, in which batches."""
import numpy as np

from ..._creation import Generator
from ..._tensor import Tensor

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


class Sampler:
    """Base class: ``__iter__`` yields indices (or lists of indices for batch samplers)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


def _fresh_generator():
    # Like PyTorch: without a generator, each pass seeds a new one with an int64 ``random_()``
    # of the default generator, so ``manual_seed`` makes shuffles reproducible.
    return Generator().manual_seed(_random_int64(None))


def _random_int64(generator):
    """PyTorch's ``torch.empty((), dtype=torch.int64).random_(generator=generator)``."""
    from ..._creation import _engine
    return int(_engine(generator).below(1, 2 ** 63, True)[0])


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation (or ``num_samples`` draws with ``replacement=True``)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        e = (self.generator or _fresh_generator())._engine
        if self.replacement:   # (as PyTorch: randint in chunks of 32)
            for _ in range(self.num_samples // 32):
                yield from e.integers(32, 0, n).tolist()
            yield from e.integers(self.num_samples % 32, 0, n).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from e.permutation(n).tolist()
            yield from e.permutation(n).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        from ..._creation import _engine
        for i in _engine(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """Indices 0..len(weights)-1 drawn with probabilities proportional to ``weights``."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = np.asarray(weights._data if isinstance(weights, Tensor) else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        from ..._creation import tensor
        self.weights = tensor(w)
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        from ..._creation import multinomial
        yield from multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch, n = [], self.batch_size
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == n:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
