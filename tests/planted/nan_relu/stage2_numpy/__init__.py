"""Planted bug: relu as `x if x > 0 else 0`, which turns a NaN into 0 (PyTorch keeps the NaN)."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def relu(x):
    return np.where(x > 0, x, np.float32(0))
