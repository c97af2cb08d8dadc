"""Planted bug: quantize_int8 rounds halves up (floor(v + 0.5)), not to even: 2.5 -> 3, -0.5 -> 0
happen to differ from rint only on exact halves."""

import numpy as np

from stage2_numpy._checks import checks
from tests.planted.reference import *  # noqa: F403


def quantize_int8(x, scale, zero_point):
    x, scale, zero_point = checks.quantize_int8(x, scale, zero_point)
    codes = np.floor(np.clip(x / np.float32(scale), -256, 256) + 0.5)
    codes[np.isnan(codes)] = 0.0
    return np.clip(codes + zero_point, -128, 127).astype(np.int8)
