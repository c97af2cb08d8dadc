"""Inference's fused convolution (week 8): conv + bias + ReLU, then max-pooling, in one op.

Nothing is kept for a backward (no argmax, no copy of x): only the pooled activations leave.
PH = OH // pool, PW = OW // pool (pool x pool windows at stride pool; rows and columns a window
would overhang are dropped, as F.max_pool2d drops them). ReLU is applied after the max: it
commutes with it (it never lowers a value's rank, and keeps NaN, which the max picks).
"""

import numpy as np

from ._checks import checks
from .conv import batch_columns, batch_last_pays, images_of


def conv2d_bias_relu_pool(x, w, b, stride=1, padding=0, pool=1):
    """relu(conv2d(x, w) + b), max-pooled over pool x pool windows: x [N, C, H, W],
    w [K, C, R, S], b [K] -> y [N, K, OH // pool, OW // pool] (pool=1: no pooling)."""
    x, w, b, stride, padding, pool, oh, ow = checks.conv2d_bias_relu_pool(
        x, w, b, stride, padding, pool
    )
    # BEGIN SOLUTION week 8, task conv2d_bias_relu_pool
    n, (k, _, r, s) = x.shape[0], w.shape
    ph, pw = oh // pool, ow // pool
    batch_last = batch_last_pays(w)
    cols = batch_columns(x, r, s, stride, padding, batch_last)
    out = w.reshape(k, -1) @ cols  # [K, N*OH*OW]: conv2d_forward's one GEMM
    out += b[:, None]
    conv = np.ascontiguousarray(images_of(out, n, oh, ow, batch_last))  # [N, K, OH, OW]
    # the max over each window's rows, then over its columns: np.maximum of strided views, one
    # per offset in the window (a reduction over a short middle axis is far slower in NumPy)
    rows = conv[:, :, 0 : ph * pool : pool]
    for i in range(1, pool):
        rows = np.maximum(rows, conv[:, :, i : ph * pool : pool])  # np.maximum keeps NaN
    pooled = rows[..., 0 : pw * pool : pool]
    for j in range(1, pool):
        pooled = np.maximum(pooled, rows[..., j : pw * pool : pool])
    return np.ascontiguousarray(np.maximum(pooled, 0.0))  # ReLU after the max: the same numbers
    # END SOLUTION
