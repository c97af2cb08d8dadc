"""Planted bug: the ReLU of int8_conv2d_to_int8 clamps at the code 0, not at y_zero (the code of
the real 0.0): right only where y_zero is 0."""

import numpy as np

from stage2_numpy._checks import checks
from stage2_numpy.quantized import codes_of
from tests.planted.reference import *  # noqa: F403
from tests.planted.reference import int8_conv2d


def int8_conv2d_to_int8(x, x_zero, w, scale, b, y_zero, stride=1, padding=0, relu=False):
    x, x_zero, w, scale, b, y_zero, stride, padding, relu, _, _ = checks.int8_conv2d_to_int8(
        x, x_zero, w, scale, b, y_zero, stride, padding, relu
    )
    y = int8_conv2d(x, x_zero, w, scale, b, stride, padding)
    return codes_of(y, y_zero, 0 if relu else -128).astype(np.int8)
