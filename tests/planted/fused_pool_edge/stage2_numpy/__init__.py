"""Planted bug: conv2d_bias_relu_pool's last pooling window of each row is one column off: it is
aligned with the right edge of the convolution's output instead of following the others. Right
whenever the windows cover the output exactly (OW a multiple of pool)."""

import numpy as np

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def conv2d_bias_relu_pool(x, w, b, stride=1, padding=0, pool=1):
    activations = _stage2.relu(_stage2.conv2d_forward(x, w, b, stride, padding))
    y = _stage2.maxpool2d_forward(activations, pool, pool)[0]
    right = activations[:, :, : y.shape[2] * pool, -pool:]  # the edge's window, shifted
    n, k = y.shape[:2]
    y[:, :, :, -1] = right.reshape(n, k, y.shape[2], pool, pool).max(axis=(3, 4))
    return np.ascontiguousarray(y)
