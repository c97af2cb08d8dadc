"""Planted bug: maxpool2d_forward returns argmax as int32 (the contract says int64)."""

import numpy as np

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def maxpool2d_forward(x, k, stride):
    y, argmax = _stage2.maxpool2d_forward(x, k, stride)
    return y, argmax.astype(np.int32)
