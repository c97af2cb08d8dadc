"""Planted bug: relu is correct but loops over the elements in Python, about 1000x slower than
NumPy's vectorized maximum."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def relu(x):
    y = np.array([v if v > 0 else 0.0 for v in x.reshape(-1).tolist()], dtype=np.float32)
    return y.reshape(x.shape)
