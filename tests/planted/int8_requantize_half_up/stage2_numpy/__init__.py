"""Planted bug: the _to_int8 forms round the requantized value halves up (floor(v + 0.5)), not to
even; they differ from rint only on exact halves, which the grader's power-of-two scales make."""

import numpy as np

from stage2_numpy._checks import checks
from stage2_numpy.quantized import int8_gemm
from tests.planted.reference import *  # noqa: F403


def int8_linear_to_int8(x, x_zero, w, scale, b, y_zero, relu=False):
    x, x_zero, w, scale, b, y_zero, relu = checks.int8_linear_to_int8(
        x, x_zero, w, scale, b, y_zero, relu
    )
    codes = np.floor(np.clip(int8_gemm(x, x_zero, w, scale, b), -256, 256) + 0.5) + y_zero
    return np.clip(codes, y_zero if relu else -128, 127).astype(np.int8)
