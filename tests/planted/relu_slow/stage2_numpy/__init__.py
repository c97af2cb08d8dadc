"""Planted bug: relu is correct but loops over the elements in Python, about 1000x slower than
NumPy's vectorized maximum."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def relu(x):
    # v <= 0 is False for NaN: a NaN stays, as it must (only the speed is wrong here)
    y = np.array([0.0 if v <= 0 else v for v in x.reshape(-1).tolist()], dtype=np.float32)
    return y.reshape(x.shape)
