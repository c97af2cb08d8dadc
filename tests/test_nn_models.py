"""The curriculum's models: parameter counts, summaries, output shapes, and data they refuse."""

import numpy as np
import pytest
from conftest import load_tier

from nn.models import MODELS, build_model

pytestmark = pytest.mark.week10  # week 10 teaches schedules and the larger models

# name -> (data shape, classes, parameters); computed by hand from the layer lists in nn/models.py
EXPECTED = {
    "perceptron": ((2,), 2, 6),  # 2 x 2 weights + 2 biases
    "xor": ((2,), 2, 17),  # 2-4-1: (2*4 + 4) + (4*1 + 1)
    "mlp": ((1, 28, 28), 10, 101_770),  # (784*128 + 128) + (128*10 + 10)
    "lenet5": ((1, 28, 28), 10, 61_706),
    "fashion_cnn": ((1, 28, 28), 10, 896_522),  # ARCHITECTURE.md's figure ("The network")
    "resnet_mini": ((1, 28, 28), 10, 43_914),
    "tiny_imagenet_cnn": ((3, 64, 64), 200, 4_391_112),
    # patches 1*49*64 + 64, positions 16*64, 4 blocks of (2 norms 4*64, attention 4*(64*64 + 64),
    # MLP 64*128 + 128 + 128*64 + 64), a norm 2*64, the classifier 64*10 + 10
    "vit": ((1, 28, 28), 10, 3_200 + 1_024 + 4 * (256 + 16_640 + 16_576) + 128 + 650),
}


def test_every_model_is_covered():
    assert set(EXPECTED) == set(MODELS)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_parameter_count_and_output_shape(name):
    tier = load_tier("numpy")
    shape, classes, parameters = EXPECTED[name]
    model = build_model(name, shape, classes).build(tier, seed=1)
    assert model.parameter_count() == parameters
    batch = 2
    x = np.random.default_rng(0).standard_normal((batch, *shape)).astype(np.float32)
    model.eval()
    out = tier.to_numpy(model.forward(tier.from_numpy(x)))
    outputs = 1 if model.loss.name == "binary_cross_entropy" else classes
    assert out.shape == (batch, outputs)
    assert np.all(np.isfinite(out))


def test_fashion_cnn_with_dropout_keeps_its_parameter_count():
    tier = load_tier("numpy")
    model = build_model("fashion_cnn", (1, 28, 28), 10, dropout=0.3).build(tier, seed=0)
    assert model.parameter_count() == 896_522


def test_summary_lists_layers_shapes_and_parameters():
    tier = load_tier("numpy")
    summary = build_model("fashion_cnn", (1, 28, 28), 10).build(tier, seed=0).summary()
    assert "Conv2d(64->128, k=3)" in summary
    assert "(128, 11, 11)" in summary
    assert "Linear(3200->256)" in summary and "819,456" in summary
    assert summary.splitlines()[-1] == "total parameters: 896,522"
    nested = build_model("resnet_mini", (1, 28, 28), 10).build(tier, seed=0).summary()
    assert "Residual(identity)" in nested and "    Conv2d(16->16, k=3, padding=1)" in nested


def test_same_seed_same_weights_other_seed_other_weights():
    tier = load_tier("numpy")

    def weights(seed):
        model = build_model("lenet5", (1, 28, 28), 10).build(tier, seed)
        return [tier.to_numpy(p.value).copy() for p in model.parameters().values()]

    first, again, other = weights(3), weights(3), weights(4)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])
    assert not np.array_equal(first[0].ravel()[:6], first[2].ravel()[:6])  # layers differ too


@pytest.mark.parametrize(
    ("name", "shape", "classes", "message"),
    [
        ("tiny_imagenet_cnn", (1, 28, 28), 10, r"takes inputs of shape \(3, 64, 64\)"),
        ("lenet5", (2,), 2, r"takes inputs of shape \(1, 28, 28\)"),
        ("xor", (2,), 3, "predicts 2 classes, but the data has 3"),
        ("nonexistent", (2,), 2, "model must be one of"),
    ],
)
def test_model_data_mismatch_is_an_error_before_training(name, shape, classes, message):
    with pytest.raises(ValueError, match=message):
        build_model(name, shape, classes)
