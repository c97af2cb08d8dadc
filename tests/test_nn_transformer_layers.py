"""Gradient checks of the transformer's layers (nn/layers/tokens.py, attention.py, layernorm.py,
GELU) through real tiers, by the finite differences of tests/test_nn_layers.py: each backward
against its forward, for the input and every parameter."""

import pytest
from test_nn_layers import TIERS, check_layer_gradients

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
from nn.models import transformer_block

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
