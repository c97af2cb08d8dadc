"""Planted bug: maxpool2d_forward breaks ties by the last maximum in window order (the contract:
the first), which only a case built with ties shows."""

import numpy as np

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def maxpool2d_forward(x, k, stride):
    y, argmax = _stage2.maxpool2d_forward(x, k, stride)
    n, c, out_h, out_w = y.shape
    width = x.shape[3]
    for i in range(out_h):
        for j in range(out_w):
            window = x[:, :, i * stride : i * stride + k, j * stride : j * stride + k]
            last = k * k - 1 - np.argmax(window.reshape(n, c, -1)[:, :, ::-1], axis=2)
            argmax[:, :, i, j] = (i * stride + last // k) * width + j * stride + last % k
    return y, argmax
