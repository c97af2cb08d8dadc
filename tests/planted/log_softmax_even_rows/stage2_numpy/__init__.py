"""Planted bug: log_softmax's row sum is a tree that halves the row at each step and drops the
odd element left over, as a shared-memory reduction written for power-of-two rows does."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def _halving_sum(values):
    while values.shape[1] > 1:
        half = values.shape[1] // 2
        values = values[:, :half] + values[:, half : 2 * half]
    return values[:, 0]


def log_softmax(x):
    shifted = x - x.max(axis=1, keepdims=True)
    total = _halving_sum(np.exp(shifted.astype(np.float64)))
    return (shifted - np.log(total)[:, None]).astype(np.float32)
