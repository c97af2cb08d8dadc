"""Planted bug: relu writes its result into its input (`out=x`) and returns a copy of it."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def relu(x):
    np.maximum(x, 0, out=x)
    return x.copy()
