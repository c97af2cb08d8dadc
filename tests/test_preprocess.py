"""nn/preprocess.py: a digit of any size, anywhere on its canvas, to the 28x28 input as MNIST made
its digits (cropped, scaled into 20x20 keeping its aspect ratio, centred by its centre of mass),
and nn.predict reading an image file through it."""

import numpy as np
import pytest
from PIL import Image

from nn.predict import read_image
from nn.preprocess import mnist_centred, plain_resize, to_model_input

MNIST = (1, 28, 28)


def canvas_with_block(size, top, left, height, width, value=1.0):
    canvas = np.zeros((size, size), np.float32)
    canvas[top:top + height, left:left + width] = value
    return canvas


def centre_of_mass(image):
    total = image.sum()
    return ((image.sum(axis=1) * np.arange(image.shape[0])).sum() / total,
            (image.sum(axis=0) * np.arange(image.shape[1])).sum() / total)  # fmt: skip


def ink_box(image, threshold=0.05):
    rows = np.flatnonzero((image > threshold).any(axis=1))
    cols = np.flatnonzero((image > threshold).any(axis=0))
    return rows[-1] - rows[0] + 1, cols[-1] - cols[0] + 1


@pytest.mark.parametrize(("top", "left"), [(3, 5), (150, 20), (90, 170)])
def test_a_digit_anywhere_is_centred_and_scaled_into_20x20(top, left):
    canvas = canvas_with_block(240, top, left, 60, 24)  # tall: 60 rows, 24 columns
    image = to_model_input(canvas, MNIST)[0]
    assert image.shape == (28, 28) and image.dtype == np.float32
    assert np.allclose(centre_of_mass(image), (13.5, 13.5), atol=0.6)
    height, width = ink_box(image, threshold=0.5)
    assert height == 20  # the longer side scaled to 20
    assert abs(width - 8) <= 1  # 24 / 60 * 20: the aspect ratio kept


def test_centre_of_mass_not_the_box_centre_is_placed_at_the_middle():
    canvas = canvas_with_block(100, 10, 10, 50, 10)
    canvas[10:20, 20:60] = 1.0  # a heavy top bar: the mass sits above the box's centre
    image = to_model_input(canvas, MNIST)[0]
    assert np.allclose(centre_of_mass(image), (13.5, 13.5), atol=0.6)
    rows = np.flatnonzero(image.max(axis=1) > 0.5)
    assert (rows[0] + rows[-1]) / 2 > 14  # so the box itself sits below the middle


def test_dark_ink_on_light_is_detected_and_inverted():
    light = 1 - canvas_with_block(120, 30, 40, 50, 20)
    dark = canvas_with_block(120, 30, 40, 50, 20)
    np.testing.assert_allclose(to_model_input(light, MNIST), to_model_input(dark, MNIST))
    forced = to_model_input(dark, MNIST, invert=True)[0]  # the flag decides over the detection
    assert ink_box(forced, 0.5) == (20, 20)  # the whole light canvas became the "digit"


def test_a_blank_canvas_gives_a_blank_input_and_the_model_size_passes_as_it_is(rng):
    assert not to_model_input(np.zeros((90, 90)), MNIST).any()
    already = rng.random((28, 28)).astype(np.float32) * 0.4
    np.testing.assert_array_equal(to_model_input(already, MNIST)[0], already)


def test_plain_resize_keeps_the_digit_where_it_was():
    canvas = canvas_with_block(280, 0, 0, 80, 80)
    resized = plain_resize(canvas[:, :, None], 28, 28)[:, :, 0]
    centred = mnist_centred(canvas[:, :, None], 28, 28)[:, :, 0]
    assert centre_of_mass(resized)[0] < 6 and np.allclose(centre_of_mass(centred), 13.5, atol=0.6)
    assert ink_box(to_model_input(canvas, MNIST, method="resize")[0], 0.5) == (8, 8)


def test_an_unknown_method_is_refused():
    with pytest.raises(ValueError, match=r"method must be one of \['mnist', 'resize'\]"):
        to_model_input(np.zeros((40, 40)), MNIST, method="crop")


def test_predict_reads_an_image_file_through_the_same_function(tmp_path):
    canvas = 1 - canvas_with_block(200, 20, 120, 90, 30)  # dark on light, off centre
    path = tmp_path / "digit.png"
    Image.fromarray((canvas * 255).astype(np.uint8)).save(path)
    expected = to_model_input(canvas, MNIST) * 255
    np.testing.assert_allclose(read_image(path, MNIST)[0], expected, atol=1e-3)
    assert read_image(path, MNIST, method="resize")[0].mean() != pytest.approx(expected.mean())
