"""Planted bug: relu launches at most 8 blocks and has no grid-stride loop, so elements past
8 blocks are never written: right for every input of up to 8 * BLOCK elements (2048 on a GPU,
256 on the simulator)."""

from numba import cuda

from stage4_cuda.runtime.device import empty, flat
from stage4_cuda.runtime.launch import BLOCK, blocks_for, launch
from tests.planted_gpu.reference import *  # noqa: F403

MAX_BLOCKS = 8


@cuda.jit
def _relu(x, y):
    i = cuda.grid(1)
    if i < y.size:
        y[i] = x[i] if x[i] > 0 else 0.0


def relu(x):
    y = empty(x.shape)
    blocks = min(blocks_for(x.size), MAX_BLOCKS)
    launch(_relu, blocks, BLOCK, flat(x), flat(y))
    return y
