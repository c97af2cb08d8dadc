"""Planted bug: tanh is correct but loops over the elements in Python (math.tanh), about 1000x
slower than np.tanh."""

import math

import numpy as np

from tests.planted.reference import *  # noqa: F403


def tanh(x):
    y = np.array([math.tanh(v) for v in x.reshape(-1).tolist()], dtype=np.float32)
    return y.reshape(x.shape)
