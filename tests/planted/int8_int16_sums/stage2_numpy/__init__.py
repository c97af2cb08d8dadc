"""Planted bug: int8_linear sums its products in int16, which wraps past 32767 (an int8 GEMM whose
accumulator is too narrow)."""

import numpy as np

from stage2_numpy._checks import checks
from tests.planted.reference import *  # noqa: F403


def int8_linear(x, x_zero, w, scale, b):
    x, x_zero, w, scale, b = checks.int8_linear(x, x_zero, w, scale, b)
    centred = x.astype(np.int16) - np.int16(x_zero)
    with np.errstate(over="ignore"):
        acc = centred @ w.astype(np.int16).T  # int16 products and sums: wrap around
    return acc.astype(np.float32) * scale + b
