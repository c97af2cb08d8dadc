"""Planted bug: int8_conv2d pads the image with the code 0 instead of x_zero, the code of a real
0.0 (right only when x_zero is 0 or padding is 0)."""

import numpy as np

import stage2_numpy as _stage2
from stage2_numpy._checks import checks
from tests.planted.reference import *  # noqa: F403


def int8_conv2d(x, x_zero, w, scale, b, stride=1, padding=0):
    x, x_zero, w, scale, b, stride, padding, _, _ = checks.int8_conv2d(
        x, x_zero, w, scale, b, stride, padding
    )
    p = padding
    padded = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))  # zeros: the wrong code
    return _stage2.int8_conv2d(padded, x_zero, w, scale, b, stride, 0)
