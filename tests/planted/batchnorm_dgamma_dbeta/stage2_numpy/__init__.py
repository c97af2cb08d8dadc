"""Planted bug: batchnorm_backward swaps dgamma and dbeta (both wrong, dx right)."""

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def batchnorm_backward(dy, x, gamma, saved):
    dx, dgamma, dbeta = _stage2.batchnorm_backward(dy, x, gamma, saved)
    return dx, dbeta, dgamma
