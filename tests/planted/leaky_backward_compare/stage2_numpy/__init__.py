"""Planted bug: leaky_relu_backward picks the slope by comparing x with alpha * x, which is the
sign of x only while alpha < 1 (above 1 the slopes swap)."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def leaky_relu_backward(x, dy, alpha):
    return np.where(x > alpha * x, dy, alpha * dy).astype(np.float32)
