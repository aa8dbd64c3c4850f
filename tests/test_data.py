"""utils.data in the main process: datasets, samplers, collation, the DataLoader."""
import collections
import warnings

import numpy as np
import pytest

import retrograd
from retrograd.utils.data import (DataLoader, TensorDataset, Dataset, IterableDataset, Subset, ConcatDataset,
                                  ChainDataset, StackDataset, random_split, SequentialSampler, RandomSampler,
                                  SubsetRandomSampler, WeightedRandomSampler, BatchSampler, default_collate,
                                  default_convert, get_worker_info)

try:
    import torch
    import torch.utils.data as tud
except ImportError:  # parity checks skip
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (torch==2.13.0) is not installed")


def rt(a):
    return retrograd.tensor(np.asarray(a))


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


# --- datasets ----------------------------------------------------------------------------

def test_tensor_dataset_and_subset():
    x, y = rt(np.arange(10.).reshape(5, 2)), rt(np.arange(5))
    ds = TensorDataset(x, y)
    assert len(ds) == 5
    a, b = ds[3]
    assert a.tolist() == [6.0, 7.0] and b.item() == 3
    sub = Subset(ds, [4, 0])
    assert len(sub) == 2 and sub[0][1].item() == 4 and sub[1][1].item() == 0
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, rt(np.arange(4)))


def test_concat_and_chain():
    c = ConcatDataset([Squares(3), Squares(2)])
    assert len(c) == 5 and [c[i] for i in range(5)] == [0, 1, 4, 0, 1] and c[-1] == 1
    c2 = Squares(2) + Squares(2)
    assert isinstance(c2, ConcatDataset) and len(c2) == 4
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Stream(2)])
    assert list(ChainDataset([Stream(2), Stream(3)])) == [0, 1, 0, 1, 2]
    s = StackDataset(Squares(3), Squares(3))
    assert s[2] == (4, 4) and StackDataset(a=Squares(2))[1] == {"a": 1}


def test_random_split_lengths_and_fractions():
    parts = random_split(range(10), [3, 7], generator=retrograd.Generator().manual_seed(42))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
    again = random_split(range(10), [3, 7], generator=retrograd.Generator().manual_seed(42))
    assert list(again[0]) == list(parts[0])
    fr = random_split(range(31), [0.3, 0.3, 0.4], generator=retrograd.Generator().manual_seed(1))
    assert [len(p) for p in fr] == [10, 9, 12]     # floor 9, 9, 12 + remainder 1 to the first
    assert sorted(i for p in fr for i in p) == list(range(31))
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(range(10), [-0.5, 1.5])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(2), [0.9, 0.1])


@needs_torch
def test_random_split_fraction_sizes_match_torch():
    for n, fr in [(31, [0.3, 0.3, 0.4]), (7, [0.5, 0.5]), (100, [0.1] * 10), (5, [0.2, 0.8])]:
        ours = [len(p) for p in random_split(range(n), fr)]
        theirs = [len(p) for p in tud.random_split(range(n), fr)]
        assert ours == theirs


# --- samplers ----------------------------------------------------------------------------

def test_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    g = retrograd.Generator().manual_seed(3)
    perm = list(RandomSampler(range(10), generator=g))
    assert sorted(perm) == list(range(10)) and perm != list(range(10))
    assert perm == list(RandomSampler(range(10), generator=retrograd.Generator().manual_seed(3)))
    draws = list(RandomSampler(range(5), replacement=True, num_samples=70))
    assert len(draws) == 70 and set(draws) <= set(range(5))
    assert len(list(RandomSampler(range(4), num_samples=10))) == 10
    sub = list(SubsetRandomSampler([10, 20, 30]))
    assert sorted(sub) == [10, 20, 30]
    w = list(WeightedRandomSampler([0.0, 0.0, 1.0, 0.0], 6))
    assert w == [2] * 6
    w2 = list(WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False))
    assert sorted(w2) == [0, 1, 2]
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2


def test_sampler_errors():
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 2, 1)
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0]], 2)


def test_shuffle_reproducible_with_manual_seed():
    retrograd.manual_seed(7)
    a = list(RandomSampler(range(20)))
    retrograd.manual_seed(7)
    b = list(RandomSampler(range(20)))
    assert a == b and sorted(a) == list(range(20))


# --- collation ---------------------------------------------------------------------------

def test_default_collate_types():
    out = default_collate([rt([1.0, 2.0]), rt([3.0, 4.0])])
    assert out.shape == (2, 2) and out.dtype == retrograd.float64
    out = default_collate([np.array([1, 2], dtype=np.uint8), np.array([3, 4], dtype=np.uint8)])
    assert isinstance(out, retrograd.Tensor) and out.dtype == retrograd.uint8 and out.tolist() == [[1, 2], [3, 4]]
    f = default_collate([1.5, 2.5])
    assert f.dtype == retrograd.float64 and f.tolist() == [1.5, 2.5]
    i = default_collate([1, 2, 3])
    assert i.dtype == retrograd.int64 and i.tolist() == [1, 2, 3]
    assert default_collate([np.float32(1), np.float32(2)]).dtype == retrograd.float32
    assert default_collate(["a", "b"]) == ["a", "b"]
    d = default_collate([{"x": 1, "y": "p"}, {"x": 2, "y": "q"}])
    assert d["x"].tolist() == [1, 2] and d["y"] == ["p", "q"]
    od = default_collate([collections.OrderedDict(a=1), collections.OrderedDict(a=2)])
    assert isinstance(od, collections.OrderedDict)
    t = default_collate([(1, 2.0), (3, 4.0)])
    assert isinstance(t, list) and t[0].tolist() == [1, 3] and t[1].tolist() == [2.0, 4.0]
    Point = collections.namedtuple("Point", ["x", "y"])
    p = default_collate([Point(0, 0), Point(1, 1)])
    assert isinstance(p, Point) and p.x.tolist() == [0, 1]
    nested = default_collate([{"img": np.zeros((2, 2), np.float32), "lab": (1, "a")}] * 3)
    assert nested["img"].shape == (3, 2, 2) and nested["lab"][0].tolist() == [1, 1, 1]


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers, "
                                        "dicts or lists; found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[2\] at entry 0 "
                                           r"and \[3\] at entry 1"):
        default_collate([rt([1.0, 2.0]), rt([1.0, 2.0, 3.0])])


@needs_torch
def test_default_collate_matches_torch():
    Point = collections.namedtuple("Point", ["x", "y"])
    cases = [[1, 2, 3], [1.5, 2.0], [(1, 2.0), (3, 4.0)], [{"a": 1, "b": [1, 2]}, {"a": 3, "b": [3, 4]}],
             [Point(1, 2.0), Point(3, 4.0)], [np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int32)]]

    def norm(x):
        if hasattr(x, "tolist") and not isinstance(x, (list, tuple)):
            return ("T", str(x.dtype).replace("torch.", ""), x.tolist())
        if isinstance(x, dict):
            return {k: norm(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return (type(x).__name__, [norm(v) for v in x])
        return x
    for batch in cases:
        assert norm(default_collate(batch)) == norm(tud.default_collate(batch))


def test_default_convert():
    out = default_convert({"a": np.arange(3), "b": [np.zeros(2)], "c": 1})
    assert isinstance(out["a"], retrograd.Tensor) and isinstance(out["b"][0], retrograd.Tensor) and out["c"] == 1


# --- the DataLoader ----------------------------------------------------------------------

def test_loader_batches():
    ds = TensorDataset(rt(np.arange(20.).reshape(10, 2)), rt(np.arange(10)))
    batches = list(DataLoader(ds, batch_size=4))
    assert len(batches) == 3 and [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].shape == (4, 2)
    assert len(DataLoader(ds, batch_size=4)) == 3 and len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert len(list(DataLoader(ds, batch_size=4, drop_last=True))) == 2
    single = list(DataLoader(Squares(3), batch_size=None))
    assert single == [0, 1, 4]
    bs = list(DataLoader(Squares(5), batch_sampler=[[0, 1], [4]]))
    assert [b.tolist() for b in bs] == [[0, 1], [16]]
    assert [b.tolist() for b in DataLoader(Squares(4), sampler=[3, 1], batch_size=2)] == [[9, 1]]


def test_loader_shuffle_seeded():
    ds = Squares(30)
    a = [b.tolist() for b in DataLoader(ds, batch_size=7, shuffle=True, generator=retrograd.Generator().manual_seed(5))]
    b = [b.tolist() for b in DataLoader(ds, batch_size=7, shuffle=True, generator=retrograd.Generator().manual_seed(5))]
    c = [b.tolist() for b in DataLoader(ds, batch_size=7, shuffle=True, generator=retrograd.Generator().manual_seed(6))]
    assert a == b and a != c
    assert sorted(x for batch in a for x in batch) == sorted(i * i for i in range(30))
    # without a generator: reproducible through manual_seed, and each epoch differs
    retrograd.manual_seed(0)
    dl = DataLoader(ds, batch_size=30, shuffle=True)
    e1, e2 = next(iter(dl)).tolist(), next(iter(dl)).tolist()
    retrograd.manual_seed(0)
    assert next(iter(dl)).tolist() == e1 and e1 != e2


def test_loader_iterable_dataset():
    assert [b.tolist() for b in DataLoader(Stream(5), batch_size=2)] == [[0, 1], [2, 3], [4]]
    assert [b.tolist() for b in DataLoader(Stream(5), batch_size=2, drop_last=True)] == [[0, 1], [2, 3]]
    assert len(DataLoader(Stream(5), batch_size=2)) == 3
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Stream(3), shuffle=True)


def test_loader_argument_errors():
    ds = Squares(4)
    with pytest.raises(ValueError, match="num_workers option should be non-negative; use num_workers=0 to disable "
                                         "multiprocessing."):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(ds, timeout=-1)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0, 1], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                         "sampler, and drop_last"):
        DataLoader(ds, batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError, match="batch_size=None option disables auto-batching and is mutually exclusive "
                                         "with drop_last"):
        DataLoader(ds, batch_size=None, drop_last=True)
    dl = DataLoader(ds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        dl.batch_size = 3
    with pytest.raises(ValueError, match="multiprocessing_context can only be used with multi-process loading"):
        DataLoader(ds, multiprocessing_context="fork")


def test_loader_error_names_the_sample_in_main_process():
    class Bad(Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            if i == 6:
                raise KeyError("broken")
            return i
    with pytest.raises(KeyError) as ei:
        list(DataLoader(Bad(), batch_size=4))
    assert any("sample index 6" in n for n in getattr(ei.value, "__notes__", []))


def test_get_worker_info_in_main_process():
    assert get_worker_info() is None


def test_pin_memory_is_accepted():
    out = list(DataLoader(Squares(3), batch_size=3, pin_memory=True))
    assert out[0].tolist() == [0, 1, 4]


def test_no_warnings_on_plain_use():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(DataLoader(Squares(5), batch_size=2, shuffle=True))
