"""Planted bug: sigmoid as exp(x) / (1 + exp(x)), which is inf / inf = NaN once exp overflows."""

import numpy as np

from tests.planted.reference import *  # noqa: F403


def sigmoid(x):
    e = np.exp(x)
    return e / (1 + e)
