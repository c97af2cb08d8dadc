"""Planted bug: transpose's kernel has no bounds guard (`if row < n and col < m`), while its grid of
16 x 16 blocks overhangs a shape that is no multiple of 16. On the simulator the first thread past
the edge raises IndexError, which the grader must report at the kernel's line, not inside numba."""

from numba import cuda

from stage4_cuda.runtime.device import empty
from stage4_cuda.runtime.launch import blocks_for, launch
from tests.planted_gpu.reference import *  # noqa: F403

TILE = 16


@cuda.jit
def _transpose_unguarded(a, y):
    row, col = cuda.grid(2)
    y[col, row] = a[row, col]  # no guard: threads past the edge index past the arrays


def transpose(a):
    n, m = a.shape
    y = empty((m, n))
    blocks = (blocks_for(n, TILE), blocks_for(m, TILE))
    launch(_transpose_unguarded, blocks, (TILE, TILE), a, y)
    return y
