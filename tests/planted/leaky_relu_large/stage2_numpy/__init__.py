"""Planted bug that shows only at large sizes: leaky_relu forgets alpha (acts as relu) on inputs
of more than 1024 elements, such as a vectorized path taken only for large arrays would."""

import numpy as np

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def leaky_relu(x, alpha):
    if x.size > 1024:
        return np.maximum(x, 0).astype(np.float32)
    return _stage2.leaky_relu(x, alpha)
