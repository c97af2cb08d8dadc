"""The Tiny-ImageNet CNN on stage 2: one forward and backward on a random batch, and a short run of
`python -m nn.train --data tiny-imagenet` on a fake conversion (tests/fake_datasets.py: a few JPEG
images per class in the real layout). The real set is 100,000 images: training on it is a GPU's
job."""

import numpy as np
import pytest
from conftest import load_tier

from datasets.tiny_imagenet import convert
from nn import train
from nn.data import load_data
from nn.models import build_model
from tests.fake_datasets import write_fake_tiny_imagenet

pytestmark = pytest.mark.week18  # the capstone: the Tiny-ImageNet-sized model


def test_forward_and_backward_on_a_random_batch():
    tier = load_tier("numpy")
    model = build_model("tiny_imagenet_cnn", (3, 64, 64), 200).build(tier, seed=3)
    rng = np.random.default_rng()
    x = rng.standard_normal((4, 3, 64, 64)).astype(np.float32)
    labels = rng.integers(0, 200, 4)
    logits = model.forward(tier.from_numpy(x))
    assert tier.to_numpy(logits).shape == (4, 200)
    loss, dlogits = model.loss.value_and_grad(tier, logits, tier.from_numpy(
        model.loss.targets(labels)))
    assert np.isfinite(float(loss))
    model.backward(dlogits)
    for name, parameter in model.parameters().items():
        grad = tier.to_numpy(parameter.grad)
        assert grad.shape == tier.to_numpy(parameter.value).shape, name
        assert np.all(np.isfinite(grad)) and np.any(grad != 0), name


@pytest.fixture
def fake_data_dir(tmp_path):
    """tmp_path/data/tiny-imagenet: a converted fake set of 3 classes, 4 images each, 6 to test."""
    archive, expected = write_fake_tiny_imagenet(tmp_path, classes=3, train_per_class=4,
                                                 val_per_class=2)
    convert(tmp_path / archive.filename, tmp_path / "data" / "tiny-imagenet", archive, False)
    return tmp_path / "data", expected


def test_load_data_keeps_nchw_and_fits_the_normalizer(fake_data_dir):
    data_dir, expected = fake_data_dir
    data = load_data("tiny-imagenet", data_dir, val_size=2)
    assert data.input_shape == (3, 64, 64) and data.num_classes == 3
    assert (len(data.train), len(data.val), len(data.test)) == (10, 2, 6)
    np.testing.assert_array_equal(data.test.inputs, expected["test"][0])
    pixels = data.train.inputs.astype(np.float64) / 255
    np.testing.assert_allclose(data.normalizer.mean, pixels.mean(axis=(0, 2, 3)), rtol=1e-12)
    np.testing.assert_allclose(data.normalizer.std, pixels.std(axis=(0, 2, 3)), rtol=1e-12)


def test_one_epoch_of_training_on_the_fake_set(capsys, fake_data_dir, tmp_path):
    load_tier("numpy")
    data_dir, _ = fake_data_dir
    status = train.main([
        "--stage", "2", "--no-progress", "--model", "tiny_imagenet_cnn", "--data", "tiny-imagenet",
        "--data-dir", str(data_dir), "--epochs", "1", "--batch-size", "5", "--val-size", "2",
        "--run-dir", str(tmp_path / "run"),
    ])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "data tiny-imagenet: 10 train, 2 validation, 6 test" in out
    assert out.splitlines()[-1].startswith("test_accuracy=")
    assert (tmp_path / "run" / "last.npz").is_file()
    assert (tmp_path / "run" / "confusion.png").is_file()
