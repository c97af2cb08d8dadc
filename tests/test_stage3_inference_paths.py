"""Stage 3's fused convolution (csrc/inference.c) on each of its paths against stage 2: the direct
loops (pooled 2 x 2 in the registers, or through the pooling epilogue), Winograd's F(2x2, 3x3)
(csrc/winograd.c) and im2col + GEMM, with fresh random inputs, and with one NaN, +Inf or -Inf
planted at each corner of a 4 x 4 patch: Winograd's transforms mix a patch's pixels, so there an
infinity must not reach outputs that the definition keeps finite (the same pattern of NaN,
infinite and finite outputs as stage 2's, whose sums are the definition's)."""

import numpy as np
import pytest

import stage2_numpy as s2
import stage3_c as s3
from contract import WEEKS

pytestmark = [
    pytest.mark.skipif(not s3.available()[0], reason=s3.available()[1]),
    getattr(pytest.mark, f"week{WEEKS[3]['inference']:02d}"),
]

# (name, x [n, c, h, w], w [k, c, r, s], stride, padding, pool): one layer per path.
LAYERS = [
    ("direct, pooled in the registers", (2, 3, 11, 9), (6, 3, 3, 3), 1, 1, 2),
    ("direct, few taps, many filters", (2, 1, 12, 12), (20, 1, 3, 3), 1, 0, 2),
    ("direct, strided, pooled in the registers", (1, 2, 13, 12), (5, 2, 3, 3), 2, 1, 2),
    ("direct, pooling epilogue", (1, 2, 10, 9), (5, 2, 3, 3), 1, 1, 3),
    ("winograd", (3, 8, 13, 13), (20, 8, 3, 3), 1, 0, 2),
    ("winograd, padded, odd planes", (2, 9, 11, 8), (17, 9, 3, 3), 1, 1, 2),
    ("gemm", (2, 4, 9, 9), (20, 4, 5, 5), 1, 2, 2),
]
IDS = [layer[0] for layer in LAYERS]


def both_tiers(x, w, b, stride, padding, pool):
    with np.errstate(all="ignore"):
        expected = s2.conv2d_bias_relu_pool(x, w, b, stride, padding, pool)
    return s3.conv2d_bias_relu_pool(x, w, b, stride, padding, pool), expected


def random_layer(rng, x_shape, w_shape):
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = (rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(np.float32)
    return x, w, rng.standard_normal(w_shape[0]).astype(np.float32)


@pytest.mark.parametrize("_, x_shape, w_shape, stride, padding, pool", LAYERS, ids=IDS)
def test_every_path_matches_stage2(rng, _, x_shape, w_shape, stride, padding, pool):
    x, w, b = random_layer(rng, x_shape, w_shape)
    received, expected = both_tiers(x, w, b, stride, padding, pool)
    np.testing.assert_allclose(received, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("poison", [np.nan, np.inf, -np.inf], ids=["nan", "+inf", "-inf"])
@pytest.mark.parametrize("where", ["x", "w"])
@pytest.mark.parametrize("_, x_shape, w_shape, stride, padding, pool", LAYERS, ids=IDS)
def test_a_poisoned_value_spreads_as_in_stage2(rng, _, x_shape, w_shape, stride, padding, pool,
                                               where, poison):  # fmt: skip
    x, w, b = random_layer(rng, x_shape, w_shape)
    target = x if where == "x" else w
    # the corners of the patch at (2, 2) and (0, 0) of a plane: first and last row and column
    for row, column in [(2, 2), (2, 5), (5, 2), (5, 5), (0, 0)]:
        poisoned = target.copy()
        poisoned[0, 0, row % target.shape[2], column % target.shape[3]] = poison
        args = (poisoned, w) if where == "x" else (x, poisoned)
        received, expected = both_tiers(*args, b, stride, padding, pool)
        assert np.array_equal(np.isnan(received), np.isnan(expected)), (row, column)
        assert np.array_equal(np.isfinite(received), np.isfinite(expected)), (row, column)
        finite = np.isfinite(expected)
        np.testing.assert_allclose(received[finite], expected[finite], rtol=1e-4, atol=1e-5)
