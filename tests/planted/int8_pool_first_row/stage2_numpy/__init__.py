"""Planted bug: maxpool2d_int8 looks only at the first row of each window (a loop bound off by
the window's height): right wherever that row happens to hold the largest code."""

import numpy as np

from stage2_numpy._checks import checks
from tests.planted.reference import *  # noqa: F403


def maxpool2d_int8(x, k, stride):
    x, k, stride, oh, ow = checks.maxpool2d_int8(x, k, stride)
    rows = x[:, :, : (oh - 1) * stride + 1 : stride, :]
    return np.stack([rows[:, :, :, j : j + (ow - 1) * stride + 1 : stride] for j in range(k)]).max(
        axis=0
    ).astype(np.int8)
