"""Pooling (week 13, csrc/pooling.c): max and average over k x k windows, no padding.
x [N, C, H, W] -> y [N, C, OH, OW] with OH = (H - k) // stride + 1 (likewise OW)."""

import numpy as np

from ._checks import checks, new_output
from ._native import call, pointer


def maxpool2d_forward(x, k, stride):
    """x [N, C, H, W] -> (y [N, C, OH, OW], argmax [N, C, OH, OW] int64): argmax holds the flat
    index h*W + w of each window's max within its [H, W] plane (ties: the first)."""
    op = "maxpool2d_forward"
    x, k, stride, oh, ow = checks.maxpool2d_forward(x, k, stride)
    n, c, h, w = x.shape
    y = new_output(op, (n, c, oh, ow))
    argmax = new_output(op, (n, c, oh, ow), dtype=np.int64)
    call("s2c_maxpool2d_forward", pointer(x), pointer(y), pointer(argmax), n, c, h, w, k, stride)
    return y, argmax


def maxpool2d_backward(dy, argmax, x_shape, k, stride):
    """dy [N, C, OH, OW] routed to the argmax of each window -> dx [N, C, H, W] (x_shape)."""
    op = "maxpool2d_backward"
    # C writes dx at argmax's indices: the checks validate (and pass on) a private copy
    dy, argmax, (n, c, h, w), k, stride, _, _ = checks.maxpool2d_backward(
        dy, argmax, x_shape, k, stride
    )
    dx = new_output(op, (n, c, h, w))
    call("s2c_maxpool2d_backward", pointer(dy), pointer(argmax), pointer(dx), n, c, h, w, k, stride)
    return dx


def avgpool2d_forward(x, k, stride):
    """x [N, C, H, W] -> y [N, C, OH, OW], the mean of each window."""
    op = "avgpool2d_forward"
    x, k, stride, oh, ow = checks.avgpool2d_forward(x, k, stride)
    n, c, h, w = x.shape
    y = new_output(op, (n, c, oh, ow))
    call("s2c_avgpool2d_forward", pointer(x), pointer(y), n, c, h, w, k, stride)
    return y


def avgpool2d_backward(dy, x_shape, k, stride):
    """dy [N, C, OH, OW] -> dx [N, C, H, W] (x_shape): each window input gets dy / k^2."""
    op = "avgpool2d_backward"
    dy, (n, c, h, w), k, stride, _, _ = checks.avgpool2d_backward(dy, x_shape, k, stride)
    dx = new_output(op, (n, c, h, w))
    call("s2c_avgpool2d_backward", pointer(dy), pointer(dx), n, c, h, w, k, stride)
    return dx
