"""Pooling (week 16): max and average over k x k windows, no padding.
x [N, C, H, W] -> y [N, C, OH, OW] with OH = (H - k) // stride + 1 (likewise OW).

Forwards: one thread per output. Backwards: one thread per input element, which gathers from the
windows that cover it, instead of each window scattering into its inputs: overlapping windows
would then need atomic additions, whose order (and so the float rounding) changes from run to run.
"""

import numpy as np
from numba import cuda, float32

from ..runtime import device
from ..runtime.checks import checks
from ..runtime.launch import launch_elementwise


@cuda.jit(device=True)
def _covering(position, k, stride, outputs):
    """The outputs whose windows cover input `position` along one axis: range(first, last)."""
    first = max(0, (position - k + stride) // stride)  # ceil((position - k + 1) / stride)
    last = min(outputs, position // stride + 1)
    return first, last


@cuda.jit
def _maxpool(x, k, stride, y, argmax):
    # y and argmax are flat [N*C, OH, OW], x flat [N*C, H, W]; thread i computes output i.
    # BEGIN SOLUTION week 16, task maxpool2d_forward
    i = cuda.grid(1)
    if i < y.shape[0] * y.shape[1] * y.shape[2]:
        oh_count, ow_count = y.shape[1], y.shape[2]
        plane, oh, ow = i // (oh_count * ow_count), (i // ow_count) % oh_count, i % ow_count
        best = x[plane, oh * stride, ow * stride]
        best_index = oh * stride * x.shape[2] + ow * stride
        for di in range(k):
            for dj in range(k):
                h, w = oh * stride + di, ow * stride + dj
                value = x[plane, h, w]
                if value > best or (value != value and best == best):  # a NaN wins, as in torch
                    best, best_index = value, h * x.shape[2] + w
        y[plane, oh, ow] = best
        argmax[plane, oh, ow] = best_index
    # END SOLUTION


@cuda.jit
def _maxpool_backward(dy, argmax, k, stride, dx):
    # BEGIN SOLUTION week 16, task maxpool2d_backward
    i = cuda.grid(1)
    if i < dx.shape[0] * dx.shape[1] * dx.shape[2]:
        height, width = dx.shape[1], dx.shape[2]
        plane, h, w = i // (height * width), (i // width) % height, i % width
        first_h, last_h = _covering(h, k, stride, dy.shape[1])
        first_w, last_w = _covering(w, k, stride, dy.shape[2])
        total = float32(0)
        for oh in range(first_h, last_h):
            for ow in range(first_w, last_w):
                if argmax[plane, oh, ow] == h * width + w:
                    total += dy[plane, oh, ow]
        dx[plane, h, w] = total
    # END SOLUTION


@cuda.jit
def _avgpool(x, k, stride, y):
    # BEGIN SOLUTION week 16, task avgpool2d_forward
    i = cuda.grid(1)
    if i < y.shape[0] * y.shape[1] * y.shape[2]:
        oh_count, ow_count = y.shape[1], y.shape[2]
        plane, oh, ow = i // (oh_count * ow_count), (i // ow_count) % oh_count, i % ow_count
        total = float32(0)
        for di in range(k):
            for dj in range(k):
                total += x[plane, oh * stride + di, ow * stride + dj]
        y[plane, oh, ow] = total / float32(k * k)
    # END SOLUTION


@cuda.jit
def _avgpool_backward(dy, k, stride, dx):
    # BEGIN SOLUTION week 16, task avgpool2d_backward
    i = cuda.grid(1)
    if i < dx.shape[0] * dx.shape[1] * dx.shape[2]:
        height, width = dx.shape[1], dx.shape[2]
        plane, h, w = i // (height * width), (i // width) % height, i % width
        first_h, last_h = _covering(h, k, stride, dy.shape[1])
        first_w, last_w = _covering(w, k, stride, dy.shape[2])
        total = float32(0)
        for oh in range(first_h, last_h):
            for ow in range(first_w, last_w):
                total += dy[plane, oh, ow]
        dx[plane, h, w] = total / float32(k * k)
    # END SOLUTION


def _planes(x):
    """A [N, C, H, W] device array seen as [N*C, H, W] (a view)."""
    n, c, h, w = x.shape
    return x.reshape(n * c, h, w)


def maxpool2d_forward(x, k, stride):
    """x [N, C, H, W] -> (y [N, C, OH, OW], argmax [N, C, OH, OW] int64): argmax holds the flat
    index h*W + w of each window's max within its [H, W] plane (ties: the first)."""
    x, k, stride, oh, ow = checks.maxpool2d_forward(x, k, stride)
    n, c = x.shape[0], x.shape[1]
    y, argmax = device.empty((n, c, oh, ow)), device.empty((n, c, oh, ow), np.int64)
    launch_elementwise(_maxpool, y.size, _planes(x), k, stride, _planes(y), _planes(argmax))
    return y, argmax


def maxpool2d_backward(dy, argmax, x_shape, k, stride):
    """dy [N, C, OH, OW] routed to the argmax of each window -> dx [N, C, H, W] (x_shape).

    argmax must come from maxpool2d_forward: an index outside its own window is not routed.
    """
    dy, argmax, x_shape, k, stride, _, _ = checks.maxpool2d_backward(dy, argmax, x_shape, k, stride)
    dx = device.empty(x_shape)
    launch_elementwise(_maxpool_backward, dx.size, _planes(dy), _planes(argmax), k, stride,
                       _planes(dx))
    return dx


def avgpool2d_forward(x, k, stride):
    """x [N, C, H, W] -> y [N, C, OH, OW], the mean of each k x k window."""
    x, k, stride, oh, ow = checks.avgpool2d_forward(x, k, stride)
    n, c = x.shape[0], x.shape[1]
    y = device.empty((n, c, oh, ow))
    launch_elementwise(_avgpool, y.size, _planes(x), k, stride, _planes(y))
    return y


def avgpool2d_backward(dy, x_shape, k, stride):
    """dy [N, C, OH, OW] spread evenly over each window -> dx [N, C, H, W] (x_shape)."""
    dy, x_shape, k, stride, _, _ = checks.avgpool2d_backward(dy, x_shape, k, stride)
    dx = device.empty(x_shape)
    launch_elementwise(_avgpool_backward, dx.size, _planes(dy), k, stride, _planes(dx))
    return dx
