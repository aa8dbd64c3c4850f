"""retrograd.vision.utils against torchvision.utils: make_grid's values, save_image's PNG bytes,
draw_bounding_boxes' pixels."""
import io

import numpy as np
import pytest

import retrograd
from retrograd.vision import utils
from helpers import torch
from vision_oracle import needs_torchvision, torchvision

pytest.importorskip("PIL")

GRID_CASES = [((6, 3, 5, 7), {}), ((5, 1, 4, 4), {"nrow": 2, "padding": 1, "pad_value": 0.5}),
              ((1, 3, 4, 4), {}), ((3, 4, 4), {}), ((1, 6, 5), {"padding": 0}), ((6, 5), {}),
              ((7, 3, 3, 2), {"normalize": True}), ((7, 3, 3, 2), {"normalize": True, "scale_each": True}),
              ((4, 3, 3, 3), {"normalize": True, "value_range": (-1, 1), "nrow": 3}),
              ((2, 2, 3, 3), {"nrow": 1})]


def _data(shape, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 0.7 + 0.4).astype(np.float32)


@needs_torchvision
@pytest.mark.parametrize("shape,kw", GRID_CASES)
def test_make_grid_matches_torchvision(shape, kw):
    x = _data(shape)
    want = torchvision.utils.make_grid(torch.from_numpy(x.copy()), **kw).numpy()
    got = utils.make_grid(retrograd.tensor(x), **kw)
    assert got.dtype == retrograd.float32
    np.testing.assert_array_equal(got.numpy(), want)
    lst = [retrograd.tensor(a) for a in x] if len(shape) == 4 else None
    if lst is not None:
        np.testing.assert_array_equal(utils.make_grid(lst, **kw).numpy(), want)


def test_make_grid_leaves_input_and_graph_alone():
    x = retrograd.rand(4, 3, 2, 2, requires_grad=True)
    before = x.detach().numpy().copy()
    g = utils.make_grid(x, normalize=True)
    assert not g.requires_grad and g.shape == (3, 6, 18)   # one row of four 2x2 images, 2 pixels apart
    np.testing.assert_array_equal(x.detach().numpy(), before)
    with pytest.raises(TypeError, match="tensor or list of tensors expected"):
        utils.make_grid(np.zeros((2, 3, 4, 4)))
    with pytest.raises(TypeError, match="value_range has to be a tuple"):
        utils.make_grid(x.detach(), normalize=True, value_range=[0, 1])


@needs_torchvision
@pytest.mark.parametrize("shape,kw", [((6, 3, 5, 7), {}), ((5, 1, 4, 4), {"nrow": 2}), ((3, 8, 8), {}),
                                      ((2, 3, 6, 6), {"normalize": True})])
@pytest.mark.parametrize("fmt", ["png", "jpeg"])
def test_save_image_bytes_match_torchvision(tmp_path, shape, kw, fmt):
    x = _data(shape, seed=1)
    want = io.BytesIO()
    torchvision.utils.save_image(torch.from_numpy(x.copy()), want, format=fmt, **kw)
    got = io.BytesIO()
    utils.save_image(retrograd.tensor(x), got, format=fmt, **kw)
    assert got.getvalue() == want.getvalue()
    path = tmp_path / f"img.{fmt}"      # a path: the format from the extension
    utils.save_image(retrograd.tensor(x), path, **kw)
    assert path.read_bytes() == want.getvalue()


def test_save_image_pixels_without_oracle(tmp_path):
    from PIL import Image
    x = retrograd.tensor([[[0.0, 0.5, 1.0, 2.0]], [[-1.0, 0.25, 0.998, 0.002]], [[1.0, 1.0, 0.0, 0.0]]])
    utils.save_image(x, tmp_path / "a.png")
    px = np.array(Image.open(tmp_path / "a.png"))
    assert px.shape == (1, 4, 3)
    # x * 255 + 0.5, clamped to [0, 255], truncated
    np.testing.assert_array_equal(px[0].T, [[0, 128, 255, 255], [0, 64, 254, 1], [255, 255, 0, 0]])


@needs_torchvision
@pytest.mark.parametrize("kw", [{}, {"colors": "red", "width": 2}, {"fill": True, "labels": ["a", "bb"]},
                                {"colors": [(0, 255, 0), "blue"], "labels": ["x", "y"]}])
@pytest.mark.parametrize("channels", [1, 3])
def test_draw_bounding_boxes_matches_torchvision(kw, channels):
    img = np.random.default_rng(2).integers(0, 256, (channels, 20, 24), dtype=np.uint8)
    boxes = np.array([[1, 2, 10, 12], [5.7, 3.2, 20.9, 19]], dtype=np.float32)
    want = torchvision.utils.draw_bounding_boxes(torch.from_numpy(img.copy()), torch.from_numpy(boxes), **kw)
    got = utils.draw_bounding_boxes(retrograd.tensor(img), retrograd.tensor(boxes), **kw)
    assert got.dtype == retrograd.uint8 and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_draw_bounding_boxes_errors():
    img = retrograd.zeros(3, 8, 8, dtype=retrograd.uint8)
    with pytest.raises(ValueError, match="xmin, ymin, xmax, ymax"):
        utils.draw_bounding_boxes(img, retrograd.tensor([[5.0, 0, 1, 4]]))
    with pytest.raises(ValueError, match="Pass individual images, not batches"):
        utils.draw_bounding_boxes(img[None], retrograd.tensor([[0.0, 0, 1, 4]]))
    out = utils.draw_bounding_boxes(img, retrograd.tensor([[1.0, 1, 4, 4]]), colors="white")
    assert out.numpy()[:, 1, 1:5].tolist() == [[255] * 4] * 3 and int(out.numpy()[:, 2, 2].sum()) == 0
