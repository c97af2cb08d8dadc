"""Planted bug: relu launches at most 8 blocks and has no grid-stride loop, so elements past
8 blocks are never written: right for every input of up to 8 * BLOCK elements (2048 on a GPU,
256 on the simulator)."""

from numba import cuda

from stage4_cuda.numba_impl import _device
from tests.planted_gpu.reference import *  # noqa: F403

MAX_BLOCKS = 8


@cuda.jit
def _relu(x, y):
    i = cuda.grid(1)
    if i < y.size:
        y[i] = x[i] if x[i] > 0 else 0.0


def relu(x):
    y = _device.empty(x.shape)
    blocks = min(_device.blocks_for(x.size), MAX_BLOCKS)
    _device.launch(_relu, blocks, _device.BLOCK, _device.flat(x), _device.flat(y))
    return y
