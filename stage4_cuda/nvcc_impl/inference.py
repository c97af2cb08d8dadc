"""Inference's fused convolutions, in one kernel that keeps nothing for a backward:
- conv2d_bias_relu_pool (csrc/inference/conv_bias_relu_pool.cu, week 16): conv + bias + ReLU,
  then max-pooling over pool x pool windows at stride pool. x [N, C, H, W], w [K, C, R, S], b [K]
  -> y [N, K, OH // pool, OW // pool] (a small batch's product split along its depth into the
  shared scratch, as the dense layer's);
- int8_conv2d_pool_to_int8 (csrc/inference/int8_conv_pool.cu, week 19), its int8 twin, an extra
  of this variant: int8_conv2d_to_int8, then maxpool2d_int8 over 2x2 windows at stride 2 (or
  none), from int8 codes or from float32 x quantized on the way in (quantize_int8 by x_scale).
"""

import numpy as np

from argcheck import quantized as quantized_checks

from ..runtime import device
from ._checks import TIER, checks
from ._library import call
from ._scratch import scratch_for
from .conv import _geometry
from .quantized import packed_weights


def conv2d_bias_relu_pool(x, w, b, stride=1, padding=0, pool=1):
    """relu(conv2d(x, w) + b), max-pooled over pool x pool windows (pool=1: no pooling)."""
    x, w, b, stride, padding, pool, oh, ow = checks.conv2d_bias_relu_pool(
        x, w, b, stride, padding, pool
    )
    k, _, r, s = w.shape
    y = device.empty((x.shape[0], k, oh // pool, ow // pool))
    shape = _geometry(x.shape, k, r, s, stride, padding, oh, ow)
    scratch = scratch_for("s2c_cuda_conv2d_bias_relu_pool_scratch", shape, pool)
    call("s2c_cuda_conv2d_bias_relu_pool", x, w, b, y, scratch, shape, pool)
    return y


def int8_conv2d_pool_to_int8(x, x_zero, weights, scale, b, y_zero, stride=1, padding=0, pool=1,
                             relu=False, x_scale=None):  # fmt: skip
    """q [N, M, OH // pool, OW // pool] int8: maxpool2d_int8(int8_conv2d_to_int8(x, x_zero, w,
    scale, b, y_zero, stride, padding, relu), pool, pool) for the w of `weights`
    (int8_pack_weights), pool 1 or 2; x float32 quantize_int8'd by x_scale and x_zero first
    when x_scale is given (a first layer's input), int8 codes otherwise."""
    weights = packed_weights("int8_conv2d_pool_to_int8", weights)
    x, x_zero, y_zero, stride, padding, pool, relu, x_scale, oh, ow = (
        quantized_checks.int8_conv2d_pool_to_int8(TIER, x, x_zero, weights.w, scale, b, y_zero,
                                                  stride, padding, pool, relu, x_scale)
    )  # fmt: skip
    n, c, h, width = x.shape
    m, _, r, s = weights.w.shape
    q = device.empty((n, m, oh // pool, ow // pool), np.int8)
    codes, pixels = (None, x) if x_scale is not None else (x, None)
    call("s2c_cuda_int8_conv2d_pool_to_int8", codes, pixels, x_scale or 0.0, x_zero,
         weights.packed, weights.sums, scale, b, y_zero, int(relu), q, n, c, h, width, m, r, s,
         stride, padding, pool)  # fmt: skip
    return q
