"""Planted bug: int8_linear rescales every output channel by channel 0's scale (per-tensor where
the weights are quantized per channel)."""

import numpy as np

from stage2_numpy._checks import checks
from tests.planted.reference import *  # noqa: F403


def int8_linear(x, x_zero, w, scale, b):
    x, x_zero, w, scale, b = checks.int8_linear(x, x_zero, w, scale, b)
    acc = (x.astype(np.int32) - x_zero) @ w.astype(np.int32).T
    return acc.astype(np.float32) * scale[0] + b
