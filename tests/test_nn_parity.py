"""Parity across tiers: the same model from the same seed, fed the same batches, gives the same
losses on every tier for its first training steps (to float32 tolerance).

The reference is the first tier of TIERS (stage 1 computes in float64); each other tier is compared
with it. A tier joins by adding its name (a registry name, tiers/__init__.py) to TIERS, e.g. "c".
"""

import numpy as np
import pytest
from conftest import load_tier

from nn.layers import (
    BatchNorm,
    Conv2d,
    Dropout,
    Flatten,
    Linear,
    MaxPool2d,
    ReLU,
    Residual,
    Sequential,
    Tanh,
)
from nn.network import Model
from nn.optimizers import make_optimizer

pytestmark = pytest.mark.week09  # week 9 teaches nn/: layers, models, the trainer

TIERS = ["python", "numpy", "c"]
STEPS = 4
BATCH = 6


def small_mlp():
    net = Sequential(Linear(10, 8), Tanh(), Dropout(0.25), Linear(8, 8), ReLU(), Linear(8, 3))
    return Model("small_mlp", net, (10,), 3, "cross_entropy")


def small_cnn():
    body = Sequential(Conv2d(4, 4, 3, padding=1), BatchNorm(4), ReLU(), Conv2d(4, 4, 3, padding=1))
    net = Sequential(
        Conv2d(1, 4, 3, padding=1),
        BatchNorm(4),
        ReLU(),
        MaxPool2d(2),
        Residual(body),
        Flatten(),
        Linear(4 * 4 * 4, 3),
    )
    return Model("small_cnn", net, (1, 8, 8), 3, "cross_entropy")


# model, optimizer and its options: momentum for the MLP, Adam with L2 for the CNN
CASES = {
    "mlp": (small_mlp, "nesterov", {"momentum": 0.9}),
    "cnn": (small_cnn, "adam", {"weight_decay": 1e-3}),
}


def training_losses(tier, make_model, optimizer_name, options):
    """Losses of the first STEPS steps of the model `make_model()` builds, trained on `tier` by
    optimizer `optimizer_name` (with `options`), with the batches fixed by a seed."""
    model = make_model().build(tier, seed=5)
    optimizer = make_optimizer(optimizer_name, tier, model.parameters(), **options)
    rng = np.random.default_rng(11)
    losses = []
    for _ in range(STEPS):
        x = rng.standard_normal((BATCH, *model.input_shape)).astype(np.float32)
        labels = rng.integers(0, model.num_classes, BATCH)
        logits = model.forward(tier.from_numpy(x))
        loss, dlogits = model.loss.value_and_grad(tier, logits, tier.from_numpy(labels))
        model.backward(dlogits)
        optimizer.step(0.05)
        losses.append(loss)
    return np.array(losses)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("tier_name", TIERS[1:])
def test_first_losses_match_the_reference_tier(tier_name, case):
    reference = training_losses(load_tier(TIERS[0]), *CASES[case])
    losses = training_losses(load_tier(tier_name), *CASES[case])
    assert len(set(np.round(reference, 6))) == STEPS  # the loss moves: the steps did something
    np.testing.assert_allclose(losses, reference, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("tier_name", TIERS[1:])
def test_same_seed_same_initial_weights(tier_name):
    reference = small_cnn().build(load_tier(TIERS[0]), seed=9)
    other = small_cnn().build(load_tier(tier_name), seed=9)
    for name, param in reference.parameters().items():
        np.testing.assert_allclose(
            other.tier.to_numpy(other.parameters()[name].value),
            reference.tier.to_numpy(param.value),
            rtol=1e-6, atol=1e-7, err_msg=name,
        )
