"""Planted bug: conv2d_bias_relu_pool's pool defaults to 2 (the curriculum's networks all pool by
2) where the contract says 1, no pooling; every call that passes pool is right."""

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def conv2d_bias_relu_pool(x, w, b, stride=1, padding=0, pool=2):
    return _stage2.conv2d_bias_relu_pool(x, w, b, stride, padding, pool)
