"""Pooling (week 13, csrc/pooling.c): max and average over k x k windows, no padding.
x [N, C, H, W] -> y [N, C, OH, OW] with OH = (H - k) // stride + 1 (likewise OW)."""

import numpy as np

from . import _checks as checks
from ._native import call, pointer


def _window(op, h, w, k, stride):
    """Check k and stride against a plane [H=h, W=w]; returns (k, stride, oh, ow)."""
    k = checks.integer(op, "k", k, 1)
    stride = checks.integer(op, "stride", stride, 1)
    oh = checks.window_output(op, "height", h, k, stride)
    ow = checks.window_output(op, "width", w, k, stride)
    return k, stride, oh, ow


def maxpool2d_forward(x, k, stride):
    """x [N, C, H, W] -> (y [N, C, OH, OW], argmax [N, C, OH, OW] int64): argmax holds the flat
    index h*W + w of each window's max within its [H, W] plane (ties: the first)."""
    op = "maxpool2d_forward"
    x = checks.readable(op, "x", x, "[N, C, H, W]")
    n, c, h, w = x.shape
    k, stride, oh, ow = _window(op, h, w, k, stride)
    y = checks.new_output(op, (n, c, oh, ow))
    argmax = checks.new_output(op, (n, c, oh, ow), dtype=np.int64)
    call("s2c_maxpool2d_forward", pointer(x), pointer(y), pointer(argmax), n, c, h, w, k, stride)
    return y, argmax


def maxpool2d_backward(dy, argmax, x_shape, k, stride):
    """dy [N, C, OH, OW] routed to the argmax of each window -> dx [N, C, H, W] (x_shape)."""
    op = "maxpool2d_backward"
    n, c, h, w = checks.shape_argument(op, "x_shape", x_shape, "[N, C, H, W]")
    k, stride, oh, ow = _window(op, h, w, k, stride)
    dy = checks.shaped(op, "dy", dy, "[N, C, OH, OW]", (n, c, oh, ow))
    argmax = checks.shaped(op, "argmax", argmax, "[N, C, OH, OW]", (n, c, oh, ow), np.int64)
    # C writes dx at these indices: one outside its plane would corrupt memory
    low, high = int(argmax.min()), int(argmax.max())
    if low < 0 or high >= h * w:
        bad = low if low < 0 else high
        checks.fail(op, f"argmax must hold flat indices h*W + w in [0, H*W={h * w}), got {bad}")
    dx = checks.new_output(op, (n, c, h, w))
    call("s2c_maxpool2d_backward", pointer(dy), pointer(argmax), pointer(dx), n, c, h, w, k, stride)
    return dx


def avgpool2d_forward(x, k, stride):
    """x [N, C, H, W] -> y [N, C, OH, OW], the mean of each window."""
    op = "avgpool2d_forward"
    x = checks.readable(op, "x", x, "[N, C, H, W]")
    n, c, h, w = x.shape
    k, stride, oh, ow = _window(op, h, w, k, stride)
    y = checks.new_output(op, (n, c, oh, ow))
    call("s2c_avgpool2d_forward", pointer(x), pointer(y), n, c, h, w, k, stride)
    return y


def avgpool2d_backward(dy, x_shape, k, stride):
    """dy [N, C, OH, OW] -> dx [N, C, H, W] (x_shape): each window input gets dy / k^2."""
    op = "avgpool2d_backward"
    n, c, h, w = checks.shape_argument(op, "x_shape", x_shape, "[N, C, H, W]")
    k, stride, oh, ow = _window(op, h, w, k, stride)
    dy = checks.shaped(op, "dy", dy, "[N, C, OH, OW]", (n, c, oh, ow))
    dx = checks.new_output(op, (n, c, h, w))
    call("s2c_avgpool2d_backward", pointer(dy), pointer(dx), n, c, h, w, k, stride)
    return dx
