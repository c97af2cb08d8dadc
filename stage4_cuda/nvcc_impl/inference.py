"""Inference's fused convolution (csrc/inference/conv_bias_relu_pool.cu, week 16): conv + bias +
ReLU, then max-pooling over pool x pool windows at stride pool, in one kernel that keeps nothing
for a backward. x [N, C, H, W], w [K, C, R, S], b [K] -> y [N, K, OH // pool, OW // pool]."""

from ..runtime import device
from ._checks import checks
from ._library import call
from .conv import _geometry


def conv2d_bias_relu_pool(x, w, b, stride=1, padding=0, pool=1):
    """relu(conv2d(x, w) + b), max-pooled over pool x pool windows (pool=1: no pooling)."""
    x, w, b, stride, padding, pool, oh, ow = checks.conv2d_bias_relu_pool(
        x, w, b, stride, padding, pool
    )
    k, _, r, s = w.shape
    y = device.empty((x.shape[0], k, oh // pool, ow // pool))
    call("s2c_cuda_conv2d_bias_relu_pool", x, w, b, y,
         _geometry(x.shape, k, r, s, stride, padding, oh, ow), pool)  # fmt: skip
    return y
