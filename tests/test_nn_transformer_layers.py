"""The transformer's layers (nn/layers/tokens.py, attention.py, layernorm.py, GELU) through real
tiers: each backward against finite differences of its forward (tests/test_nn_layers.py), for the
input and every parameter; and a small ViT's first training steps, the same on every tier
(tests/test_nn_parity.py)."""

import numpy as np
import pytest
from conftest import load_tier
from test_nn_layers import TIERS, check_layer_gradients
from test_nn_parity import STEPS, training_losses
from test_nn_parity import TIERS as PARITY_TIERS

from nn.attention_maps import attention_layers, attention_weights, image_maps, rollout
from nn.layers import (
    GELU,
    LayerNorm,
    Linear,
    MeanOverTokens,
    MultiHeadAttention,
    PatchEmbedding,
    PositionEmbedding,
    Sequential,
    Tokenwise,
)
from nn.models import transformer_block, vit

pytestmark = pytest.mark.week23

CASES = {
    "layernorm_tokens": (lambda: LayerNorm(5), (3, 4, 5), None),
    "gelu_exact": (lambda: GELU(), (3, 4), None),
    "gelu_tanh": (lambda: GELU("tanh"), (3, 4), None),
    "patch_embedding": (lambda: PatchEmbedding(2, 3, 2), (2, 2, 4, 6), None),
    "position_embedding": (lambda: PositionEmbedding(), (2, 3, 4), None),
    "tokenwise_linear": (lambda: Tokenwise(Linear(4, 3)), (2, 3, 4), None),
    "mean_over_tokens": (lambda: MeanOverTokens(), (2, 3, 4), None),
    "attention": (lambda: MultiHeadAttention(4, 2), (2, 3, 4), None),
    "causal_attention": (lambda: MultiHeadAttention(6, 3, causal=True), (2, 5, 6), None),
    "transformer_block": (lambda: Sequential(*transformer_block(4, 2, 6)), (2, 3, 4), None),
}


@pytest.mark.parametrize("tier_name", list(TIERS))
@pytest.mark.parametrize("case", list(CASES))
def test_transformer_layer_backward_matches_finite_differences(tier_name, case):
    check_layer_gradients(tier_name, case, *CASES[case])


def small_vit():
    """8x8 images in 4 patches of 4x4, tokens of 8 features, one block of 2 heads."""
    return vit((1, 8, 8), 3, patch=4, dim=8, depth=1, heads=2, hidden=16)


@pytest.mark.parametrize("tier_name", PARITY_TIERS[1:])
def test_a_small_vit_trains_the_same_on_every_tier(tier_name):
    reference = training_losses(load_tier(PARITY_TIERS[0]), small_vit, "adam", {})
    losses = training_losses(load_tier(tier_name), small_vit, "adam", {})
    assert len(set(np.round(reference, 6))) == STEPS  # the loss moves: the steps did something
    np.testing.assert_allclose(losses, reference, rtol=1e-4, atol=1e-5)


def test_attention_weights_come_back_from_the_saved_log_sum_exps():
    tier = load_tier("numpy")
    model = vit((1, 8, 8), 3, patch=2, dim=8, depth=2, heads=2, hidden=16).build(tier, seed=3)
    images = np.random.default_rng(4).standard_normal((3, 1, 8, 8)).astype(np.float32)
    weights = attention_weights(model, images)
    assert len(weights) == 2 and weights[0].shape == (3, 2, 16, 16)
    first = attention_layers(model)[0]
    rows = np.asarray(tier.to_numpy(model.net.layers[1].forward(  # positions of the patches
        model.net.layers[0].forward(tier.from_numpy(images)))), dtype=np.float64)
    normed = np.asarray(tier.to_numpy(model.net.layers[2].body.layers[0].forward(
        tier.from_numpy(rows.astype(np.float32)))), dtype=np.float64)
    q = normed @ np.asarray(first.query.params["weight"].value, dtype=np.float64).T
    k = normed @ np.asarray(first.key.params["weight"].value, dtype=np.float64).T
    q, k = (a.reshape(3, 16, 2, 4).transpose(0, 2, 1, 3) for a in (q, k))  # biases start at 0
    scores = q @ k.transpose(0, 1, 3, 2) / 2.0
    softmax = np.exp(scores - scores.max(-1, keepdims=True))
    softmax /= softmax.sum(-1, keepdims=True)
    np.testing.assert_allclose(weights[0], softmax, rtol=1e-4, atol=1e-6)
    flow = rollout(weights)
    np.testing.assert_allclose(flow.sum(-1), 1.0, rtol=1e-12)
    maps = image_maps(model, flow)
    assert maps.shape == (3, 8, 8) and np.all(np.isfinite(maps))
