"""Planted bug: swap_middle_axes through np.ascontiguousarray, which copies only when the
transposed view is not already contiguous: with B or C of 1 it returns the caller's array."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def swap_middle_axes(x):
    return np.ascontiguousarray(x.transpose(0, 2, 1, 3))
