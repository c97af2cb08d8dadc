"""Inference's fused convolution (week 8): conv + bias + ReLU, then max-pooling, in one op.

Nothing is kept for a backward (no argmax, no copy of x): only the pooled activations leave.
PH = OH // pool, PW = OW // pool (pool x pool windows at stride pool; rows and columns a window
would overhang are dropped, as F.max_pool2d drops them).
"""

import numpy as np

from ._checks import checks
from .conv import batch_columns, batch_last_pays, images_of


def conv2d_bias_relu_pool(x, w, b, stride=1, padding=0, pool=1):
    """relu(conv2d(x, w) + b), max-pooled over pool x pool windows: x [N, C, H, W],
    w [K, C, R, S], b [K] -> y [N, K, OH // pool, OW // pool] (pool=1: no pooling)."""
    x, w, b, stride, padding, pool, ph, pw = checks.conv2d_bias_relu_pool(
        x, w, b, stride, padding, pool
    )
    # BEGIN SOLUTION week 8, task conv2d_bias_relu_pool
    n, k, (_, _, r, s) = x.shape[0], w.shape[0], w.shape
    oh, ow = ph * pool, pw * pool  # only the rows and columns the windows cover
    batch_last = batch_last_pays(w)
    cols = batch_columns(x, r, s, stride, padding, batch_last)  # every output position
    out = w.reshape(k, -1) @ cols  # [K, N*OH'*OW'] with the convolution's own OH', OW'
    out += b[:, None]
    full_oh = (x.shape[2] + 2 * padding - r) // stride + 1
    full_ow = (x.shape[3] + 2 * padding - s) // stride + 1
    conv = images_of(out, n, full_oh, full_ow, batch_last)[:, :, :oh, :ow]
    np.maximum(conv, 0.0, out=conv)  # ReLU in place; np.maximum keeps NaN
    windows = conv.reshape(n, k, ph, pool, pw, pool)
    return np.ascontiguousarray(windows.max(axis=(3, 5)))  # max keeps NaN too
    # END SOLUTION
