"""Planted bug: conv2d_forward pads one pixel too many at the top and left, one too few at the
bottom and right (an off-by-one in the padding; the output keeps its shape)."""

import numpy as np

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def conv2d_forward(x, w, b, stride=1, padding=0):
    if padding == 0:
        return _stage2.conv2d_forward(x, w, b, stride, padding)
    shifted = ((0, 0), (0, 0), (padding + 1, padding - 1), (padding + 1, padding - 1))
    return _stage2.conv2d_forward(np.pad(x, shifted), w, b, stride, 0)
