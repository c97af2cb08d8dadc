"""Planted bug: conv2d_bias_relu_pool's ReLU is `where(v > 0, v, 0)`, which turns a NaN into 0
(the contract's ReLU, as PyTorch's, keeps it); every finite input gives the right numbers."""

import numpy as np

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def conv2d_bias_relu_pool(x, w, b, stride=1, padding=0, pool=1):
    v = _stage2.conv2d_forward(x, w, b, stride, padding)
    return _stage2.maxpool2d_forward(np.where(v > 0, v, 0).astype(np.float32), pool, pool)[0]
