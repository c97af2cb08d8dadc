"""Planted bug that shows only at large sizes: conv2d_forward computes only the first 8 images
of a batch (the correctness cases hold at most 2); the rest of y is never written."""

import numpy as np

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def conv2d_forward(x, w, b, stride=1, padding=0):
    first = _stage2.conv2d_forward(x[:8].copy(), w, b, stride, padding)
    y = np.empty((x.shape[0], *first.shape[1:]), dtype=np.float32)
    y[:8] = first
    return y
