"""Planted bug that shows only at large sizes: matmul sums only the first 256 terms of K (a tile
loop that never runs its second tile)."""

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def matmul(a, b):
    return _stage2.matmul(a[:, :256].copy(), b[:256].copy())
