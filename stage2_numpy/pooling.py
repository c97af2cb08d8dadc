"""Max and average pooling over square k x k windows, no padding (week 8).

Output size: OH = (H - k) // stride + 1, likewise OW. Windows overlap when stride < k.
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ._checks import checks
from .conv import kernel_offset_view


def maxpool2d_forward(x, k, stride):
    """x [N, C, H, W] -> (y [N, C, OH, OW], argmax [N, C, OH, OW] int64).

    argmax holds the flat index h*W + w of the chosen input within its [H, W] plane (as PyTorch's
    return_indices=True); ties pick the first in row-major window order.
    """
    x, k, stride, oh, ow = checks.maxpool2d_forward(x, k, stride)
    # BEGIN SOLUTION week 8, task maxpool2d_forward
    n, c, _, w = x.shape
    # One copy gathers the windows tap-major, [k*k, N*C*OH*OW]: tap t = i*k + j is one
    # contiguous row, so the reductions below run over long rows instead of k*k-element windows.
    windows = sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]
    taps = windows.transpose(4, 5, 0, 1, 2, 3).reshape(k * k, -1)
    y = taps.max(axis=0)  # NaN propagates, as in PyTorch
    # The first tap holding the maximum: rank the taps k*k, ..., 1 (earlier ranks higher) and keep
    # the highest rank among the maxima -- no per-element branch (a NaN counts as the maximum).
    is_max = (taps == y) | np.isnan(taps)
    ranks = np.arange(k * k, 0, -1, dtype=np.int32)[:, None]
    first = k * k - (is_max * ranks).max(axis=0)  # in [0, k*k)
    # tap t = i*k + j sits at (i, j) from its window's corner, i*W + j further in the plane
    tap_offset = (np.arange(k)[:, None] * w + np.arange(k)).ravel()
    corner = np.arange(oh)[:, None] * (stride * w) + np.arange(ow) * stride
    argmax = tap_offset[first].reshape(n, c, oh, ow) + corner
    return y.reshape(n, c, oh, ow), argmax
    # END SOLUTION


def maxpool2d_backward(dy, argmax, x_shape, k, stride):
    """Route each dy [N, C, OH, OW] to its argmax: -> dx [N, C, H, W] (overlaps add up)."""
    dy, argmax, x_shape, k, stride, _, _ = checks.maxpool2d_backward(
        dy, argmax, x_shape, k, stride
    )
    n, c, h, w = x_shape
    # BEGIN SOLUTION week 8, task maxpool2d_backward
    # Scatter-add: the index of each output's input in the flattened dx is its plane's start plus
    # argmax. np.bincount sums the weights (dy) landing on each index, so overlaps add up.
    plane_start = np.arange(n * c).reshape(n, c, 1, 1) * (h * w)
    dx = np.bincount((argmax + plane_start).ravel(), weights=dy.ravel(), minlength=n * c * h * w)
    return dx.astype(np.float32).reshape(x_shape)  # bincount sums in float64
    # END SOLUTION


def avgpool2d_forward(x, k, stride):
    """The mean of each k x k window: x [N, C, H, W] -> y [N, C, OH, OW]."""
    x, k, stride, oh, ow = checks.avgpool2d_forward(x, k, stride)
    # BEGIN SOLUTION week 8, task avgpool2d_forward
    # One strided add per tap: k*k passes over long rows, instead of a mean per tiny window.
    y = np.zeros((*x.shape[:2], oh, ow), dtype=np.float32)
    for i in range(k):
        for j in range(k):
            y += kernel_offset_view(x, i, j, stride, oh, ow)
    y *= 1 / (k * k)
    return y
    # END SOLUTION


def avgpool2d_backward(dy, x_shape, k, stride):
    """Spread each dy [N, C, OH, OW] evenly over its window: -> dx [N, C, H, W]."""
    dy, x_shape, k, stride, _, _ = checks.avgpool2d_backward(dy, x_shape, k, stride)
    # BEGIN SOLUTION week 8, task avgpool2d_backward
    oh, ow = dy.shape[2:]
    share = dy * (1 / (k * k))
    dx = np.zeros(x_shape, dtype=np.float32)
    for i in range(k):
        for j in range(k):
            kernel_offset_view(dx, i, j, stride, oh, ow)[...] += share
    return dx
    # END SOLUTION
