"""Planted bug: swap_middle_axes as a reshape: the right shape [A, C, B, D], the elements in the
input's order (a transformer's heads mixed across tokens)."""

from tests.planted.reference import *  # noqa: F403


def swap_middle_axes(x):
    a, b, c, d = x.shape
    return x.reshape(a, c, b, d).copy()
