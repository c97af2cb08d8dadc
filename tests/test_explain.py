"""Grad-CAM (nn/explain.py): the maps of every tier against the `grad-cam` package on the same
weights, its refusals, its resizing, and the command."""

import numpy as np
import pytest
from conftest import load_tier

from nn import exits, explain
from nn.checkpoint import save_checkpoint
from nn.data import Normalizer
from nn.explain import grad_cam, layer_choices, upsampled
from nn.layers import BatchNorm, Conv2d, Flatten, Linear, MaxPool2d, ReLU, Sequential
from nn.models import build_model
from nn.network import Model
from nn.recipes import recipe_for

IMAGES = 6
SHAPE = (1, 10, 10)


def small_cnn():
    """LeNet-5's pattern at 10x10 (maps of 3x3 at the last conv), so that every tier runs it in
    seconds, stage 4 on numba's CUDA simulator too."""
    net = Sequential(
        Conv2d(1, 4, 3, padding=1), ReLU(), MaxPool2d(2),
        Conv2d(4, 8, 3), ReLU(), Flatten(), Linear(8 * 3 * 3, 5),
    )  # fmt: skip
    return Model("small_cnn", net, SHAPE, 5, "cross_entropy")


def grad_cam_package_maps(model, images, classes, layer):
    """pytorch_grad_cam's maps for `model`'s weights copied into PyTorch."""
    torch = pytest.importorskip("torch", reason="PyTorch is the grad-cam package's framework")
    pytest.importorskip("pytorch_grad_cam", reason="pip install -r requirements-oracle.txt")
    from bench.explain import theirs

    return theirs(torch, model, images, classes, layer)


def correlations(first, second):
    from bench.explain import pearson

    return pearson(first, second)


@pytest.mark.oracle
def test_every_tier_gives_the_grad_cam_package_maps(tier, rng):
    """Through the default layer, the last conv."""
    assert_maps_agree(tier, "3", rng)


@pytest.mark.oracle
@pytest.mark.parametrize("layer", ["0", "1", "2", "4"])
def test_every_layer_gives_the_grad_cam_package_maps(layer, rng):
    assert_maps_agree(load_tier("numpy"), layer, rng)


def assert_maps_agree(tier, layer, rng):
    """Our maps on `tier` and grad-cam's for fresh random images and classes: flat in the same
    images, and elsewhere a Pearson correlation >= 0.99 per image."""
    model = small_cnn().build(tier, seed=11)
    images = rng.standard_normal((IMAGES, *SHAPE)).astype(np.float32)
    classes = rng.integers(0, 5, IMAGES)
    ours = grad_cam(model, images, classes, layer)
    assert ours.dtype == np.float32 and ours.shape == (IMAGES, *SHAPE[1:])
    assert not np.isnan(ours).any() and ours.min() >= 0 and ours.max() <= 1
    theirs = grad_cam_package_maps(small_cnn().build(load_tier("numpy"), seed=11), images,
                                   classes, layer)  # fmt: skip
    flat_ours = np.ptp(ours, axis=(1, 2)) == 0
    flat_theirs = np.ptp(theirs, axis=(1, 2)) == 0
    np.testing.assert_array_equal(flat_ours, flat_theirs, err_msg="maps flat in one only")
    assert (~flat_ours).sum() >= 2, "too few non-trivial maps to compare"
    r = correlations(ours[~flat_ours], theirs[~flat_ours])
    assert (r >= 0.99).all(), f"Pearson correlations with grad-cam: {r}"


@pytest.mark.oracle
def test_the_comparison_tells_another_class_apart(rng):
    """The check can fail: the maps of other classes do not pass for the chosen class's."""
    model = small_cnn().build(load_tier("numpy"), seed=11)
    images = rng.standard_normal((IMAGES, *SHAPE)).astype(np.float32)
    classes = rng.integers(0, 5, IMAGES)
    theirs = grad_cam_package_maps(model, images, classes, "3")
    wrong = grad_cam(model, images, (classes + 1) % 5, "3")
    assert np.nan_to_num(correlations(wrong, theirs), nan=0.0).min() < 0.99


def test_the_default_layer_is_the_last_conv_and_the_maps_are_batched():
    tier = load_tier("numpy")
    model = small_cnn().build(tier, seed=3)
    images = np.random.default_rng(5).standard_normal((4, *SHAPE)).astype(np.float32)
    classes = [0, 1, 2, 3]
    together = grad_cam(model, images, classes)
    np.testing.assert_array_equal(together, grad_cam(model, images, classes, "3"))
    one_by_one = np.concatenate([grad_cam(model, images[i:i + 1], classes[i:i + 1])
                                 for i in range(4)])  # fmt: skip
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)


def test_bad_arguments_are_refused_naming_what_was_expected():
    tier = load_tier("numpy")
    model = small_cnn().build(tier, seed=3)
    images = np.zeros((2, *SHAPE), np.float32)
    with pytest.raises(ValueError, match=r"layer must be one of 0 \(Conv2d.*got '6'"):
        grad_cam(model, images, [0, 1], "6")  # Linear's output is no feature map
    with pytest.raises(ValueError, match=r"images must be float32 \[N, 1, 10, 10\]"):
        grad_cam(model, images.astype(np.float64), [0, 1])
    with pytest.raises(ValueError, match=r"images must be float32"):
        grad_cam(model, np.zeros((2, 1, 28, 28), np.float32), [0, 1])
    with pytest.raises(ValueError, match=r"class_indices must be 2 integers in \[0, 5\)"):
        grad_cam(model, images, [0, 5])
    with pytest.raises(ValueError, match=r"class_indices must be 2 integers"):
        grad_cam(model, images, [0])
    mlp = build_model("mlp", SHAPE, 5).build(tier, seed=0)
    with pytest.raises(ValueError, match="mlp has no convolutional layer"):
        grad_cam(mlp, images, [0, 1])


def test_no_layer_before_a_batchnorm_is_offered():
    """Evaluation mode has no BatchNorm backward: only the layers after the last one are."""
    net = Sequential(Conv2d(1, 2, 3), BatchNorm(2), ReLU(), Conv2d(2, 2, 3), Flatten(),
                     Linear(2 * 6 * 6, 3))  # fmt: skip
    model = Model("bn", net, SHAPE, 3, "cross_entropy").build(load_tier("numpy"), seed=0)
    assert list(layer_choices(model)) == ["1", "2", "3"]


def test_upsampling_interpolates_between_pixel_centres():
    """[0, 1] to 4 pixels: centres at -0.25, 0.25, 0.75, 1.25 of the input, edges repeated."""
    maps = np.array([[[0.0, 1.0]]])
    np.testing.assert_allclose(upsampled(maps, 1, 4), [[[0.0, 0.25, 0.75, 1.0]]])
    constant = np.full((2, 3, 5), 7.0)
    np.testing.assert_allclose(upsampled(constant, 9, 11), np.full((2, 9, 11), 7.0))


@pytest.fixture
def lenet_checkpoint(tmp_path):
    """An untrained LeNet-5 saved as nn.train saves one (the command needs no data with a file)."""
    model = build_model("lenet5", (1, 28, 28), 10).build(load_tier("numpy"), seed=2)
    path = tmp_path / "lenet5.npz"
    normalizer = Normalizer(np.array([0.1307]), np.array([0.3081]), True)
    save_checkpoint(path, model, None, {
        "data": "mnist", "class_names": [str(k) for k in range(10)],
        "normalizer": normalizer.to_json(), "model_options": {}, "input_shape": [1, 28, 28],
        "num_classes": 10, "recipe": recipe_for("lenet5", "mnist").to_json(),
    })  # fmt: skip
    return path


def test_the_command_saves_an_overlay_and_reports_bad_input_in_one_line(
        lenet_checkpoint, tmp_path, capsys):
    from PIL import Image

    digit = tmp_path / "digit.png"
    pixels = np.zeros((28, 28), np.uint8)
    pixels[6:22, 12:16] = 255
    Image.fromarray(pixels).save(digit)
    out = tmp_path / "overlay.png"
    common = ["--checkpoint", str(lenet_checkpoint), str(digit), "--out", str(out)]
    assert explain.main(common + ["--class", "4", "--layer", "0"]) == 0
    assert "Grad-CAM of class 4" in capsys.readouterr().out
    assert Image.open(out).size[0] > 100
    for extra, status, message in (
        (["--class", "10"], exits.USAGE, "--class must be in [0, 10), got 10"),
        (["--layer", "7"], exits.USAGE, "layer must be one of"),
    ):
        assert explain.main(common + extra) == status
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and message in err[0]
    missing = ["--checkpoint", str(tmp_path / "none.npz"), str(digit)]
    assert explain.main(missing) == exits.CHECKPOINT
    not_an_image = tmp_path / "notes.png"
    not_an_image.write_text("not a picture")
    assert explain.main(common[:2] + [str(not_an_image)]) == exits.USAGE
    assert "cannot read image" in capsys.readouterr().err
