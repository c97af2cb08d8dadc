"""Planted bug: above 10000 elements (none of the correctness cases) tanh's launch is one block
short, so the last block's elements are never written. Timed over and over, each output gets a
block the allocator recycled from the call before, which holds that call's full answer: the
unwritten elements look right unless the output is NaN-filled memory."""

from stage4_cuda.numba_impl import activations, elementwise
from stage4_cuda.runtime.device import empty, flat
from stage4_cuda.runtime.launch import BLOCK, blocks_for
from tests.planted_gpu.reference import *  # noqa: F403


def tanh(x):
    if x.size <= 10_000:
        return activations.tanh(x)
    y = empty(x.shape)
    per_block = BLOCK * elementwise.PER_THREAD
    blocks = blocks_for(x.size, per_block) - 1
    activations._tanh[blocks, BLOCK](flat(x), flat(y), elementwise.UNUSED)
    return y
