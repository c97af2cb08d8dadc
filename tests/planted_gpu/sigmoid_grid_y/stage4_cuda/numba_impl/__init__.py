"""Planted bug: sigmoid puts rows on the grid's y dimension, which holds at most 65535 blocks,
and clamps it there: rows past 65535 are never written. Right for every input of fewer rows (a
4096 x 4096 matrix included); a GPU-only defect (the simulator gets no such rows)."""

import math

from numba import cuda

from stage4_cuda.runtime.device import empty
from stage4_cuda.runtime.launch import blocks_for, launch
from tests.planted_gpu.reference import *  # noqa: F403

MAX_GRID_Y = 65535


@cuda.jit
def _sigmoid_rows(x, y):
    col, row = cuda.grid(2)
    if row < x.shape[0] and col < x.shape[1]:
        y[row, col] = 1.0 / (1.0 + math.exp(-x[row, col]))


def sigmoid(x):
    y = empty(x.shape)
    rows = x.shape[0]
    x2, y2 = x.reshape(rows, x.size // rows), y.reshape(rows, x.size // rows)
    blocks = (blocks_for(x2.shape[1], 32), min(rows, MAX_GRID_Y))
    launch(_sigmoid_rows, blocks, (32, 1), x2, y2)
    return y
