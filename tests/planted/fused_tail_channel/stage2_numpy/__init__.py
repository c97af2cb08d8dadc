"""Planted bug: conv2d_bias_relu_pool computes the output channels in groups of 8 (a SIMD width)
and forgets the tail: with K not a multiple of 8, the last K % 8 channels are never written."""

import numpy as np

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403

GROUP = 8


def conv2d_bias_relu_pool(x, w, b, stride=1, padding=0, pool=1):
    full = _stage2.conv2d_bias_relu_pool(x, w, b, stride, padding, pool)
    y = np.empty_like(full)  # the grader's poison reaches np.empty_like
    whole = w.shape[0] // GROUP * GROUP if w.shape[0] >= GROUP else w.shape[0]
    y[:, :whole] = full[:, :whole]
    return y
