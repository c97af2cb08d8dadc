"""Planted bug: int8_linear multiplies the codes as they are, forgetting the input's zero point
(right only when x_zero is 0)."""

import numpy as np

from stage2_numpy._checks import checks
from tests.planted.reference import *  # noqa: F403


def int8_linear(x, x_zero, w, scale, b):
    x, x_zero, w, scale, b = checks.int8_linear(x, x_zero, w, scale, b)
    acc = x.astype(np.int32) @ w.astype(np.int32).T
    return acc.astype(np.float32) * scale + b
