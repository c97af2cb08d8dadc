"""conv2d_backward(..., need_dx=False): a first layer's backward skips dx.

The references return None for dx and the same dw and db as a full backward; a network's first
Conv2d asks for no dx, every later one does (their dx feeds the layer before).
"""

import numpy as np
import pytest

from nn.layers import Conv2d
from nn.models import build_model


@pytest.mark.parametrize("stride, padding", [(1, 0), (2, 1)])
def test_without_dx_the_weight_gradients_are_unchanged(tier, rng, stride, padding):
    x = rng.standard_normal((3, 2, 9, 8)).astype(np.float32)
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    oh, ow = ((size + 2 * padding - 3) // stride + 1 for size in (9, 8))
    dy = rng.standard_normal((3, 4, oh, ow)).astype(np.float32)
    args = [tier.from_numpy(a) for a in (x, w, dy)]
    dx, dw, db = tier.conv2d_backward(*args, stride, padding)
    skipped, dw_only, db_only = tier.conv2d_backward(*args, stride, padding, need_dx=False)
    assert dx is not None and skipped is None
    np.testing.assert_array_equal(tier.to_numpy(dw_only), tier.to_numpy(dw))
    np.testing.assert_array_equal(tier.to_numpy(db_only), tier.to_numpy(db))


def test_only_the_first_conv_of_a_model_skips_dx():
    model = build_model("lenet5", (1, 28, 28), 10)
    convs = [layer for layer in model.net.layers if isinstance(layer, Conv2d)]
    assert [conv.needs_input_grad for conv in convs] == [False, True]
