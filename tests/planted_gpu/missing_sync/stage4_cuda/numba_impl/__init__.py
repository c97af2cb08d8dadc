"""Planted bug: a shared-memory tiled matmul without the barrier between loading a tile and using
it: threads read tile elements other threads have not written yet (a race)."""

import math

from numba import cuda, float32

from stage4_cuda.runtime import device
from stage4_cuda.runtime.launch import launch
from tests.planted_gpu.reference import *  # noqa: F403

TILE = 16


@cuda.jit
def _tiled_racy(a, b, y):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    n, k = a.shape
    m = b.shape[1]
    total = float32(0)
    for t in range(0, k, TILE):
        sa[ty, tx] = a[row, t + tx] if row < n and t + tx < k else 0
        sb[ty, tx] = b[t + ty, col] if t + ty < k and col < m else 0
        # cuda.syncthreads() missing here
        for j in range(TILE):
            total += sa[ty, j] * sb[j, tx]
        # and here
    if row < n and col < m:
        y[row, col] = total


def matmul(a, b, kernel="best"):
    y = device.empty((a.shape[0], b.shape[1]))
    grid = (math.ceil(b.shape[1] / TILE), math.ceil(a.shape[0] / TILE))
    launch(_tiled_racy, grid, (TILE, TILE), a, b, y)
    return y

