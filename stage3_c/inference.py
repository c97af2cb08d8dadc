"""Inference's fused convolution (week 13, csrc/inference.c): conv + bias + ReLU, then
max-pooling over pool x pool windows at stride pool, in one C call that keeps nothing for a
backward. x [N, C, H, W], w [K, C, R, S], b [K] -> y [N, K, OH // pool, OW // pool]."""

from ._checks import checks, new_output
from ._native import call, pointer


def conv2d_bias_relu_pool(x, w, b, stride=1, padding=0, pool=1):
    """relu(conv2d(x, w) + b), max-pooled over pool x pool windows (pool=1: no pooling)."""
    op = "conv2d_bias_relu_pool"
    x, w, b, stride, padding, pool, oh, ow = checks.conv2d_bias_relu_pool(
        x, w, b, stride, padding, pool
    )
    (n, c, h, width), (k, _, r, s) = x.shape, w.shape
    y = new_output(op, (n, k, oh // pool, ow // pool))
    call("s2c_conv2d_bias_relu_pool", pointer(x), pointer(w), pointer(b), pointer(y),
         n, c, h, width, k, r, s, stride, padding, pool)  # fmt: skip
    return y
