"""Planted bug: leaky_relu takes the absolute value of alpha (a negative slope is a valid, if odd,
argument of the contract: any finite number)."""

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def leaky_relu(x, alpha):
    return _stage2.leaky_relu(x, abs(alpha))
