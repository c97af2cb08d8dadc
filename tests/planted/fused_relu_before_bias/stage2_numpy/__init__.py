"""Planted bug: conv2d_bias_relu_pool applies the ReLU before adding the bias, relu(conv) + b
(then pools): right only where the bias does not change an output's sign."""

import numpy as np

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def conv2d_bias_relu_pool(x, w, b, stride=1, padding=0, pool=1):
    unbiased = _stage2.conv2d_forward(x, w, np.zeros_like(b), stride, padding)
    y = _stage2.relu(unbiased) + b[None, :, None, None]
    return _stage2.maxpool2d_forward(y, pool, pool)[0]
