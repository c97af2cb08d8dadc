"""Planted bug: matmul allocates its output with np.empty and never writes the last element."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def matmul(a, b):
    y = np.empty((a.shape[0], b.shape[1]), dtype=np.float32)
    product = (a @ b).reshape(-1)
    y.reshape(-1)[:-1] = product[:-1]
    return y
