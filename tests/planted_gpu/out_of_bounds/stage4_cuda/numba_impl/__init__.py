"""Planted bug: relu writes one element past its output (a missing `i < n` guard on a grid that
overhangs the array). The simulator checks bounds and raises; a GPU does not: compute-sanitizer's
memcheck reports the write (`make sanitize`)."""

from numba import cuda

from stage4_cuda.runtime import device
from stage4_cuda.runtime.device import flat
from stage4_cuda.runtime.launch import BLOCK, blocks_for, launch
from tests.planted_gpu.reference import *  # noqa: F403


@cuda.jit
def _relu_overhang(x, y):
    i = cuda.grid(1)
    if i <= y.size:  # one too many
        y[i] = x[min(i, x.size - 1)] if x[min(i, x.size - 1)] > 0 else 0.0


def relu(x):
    y = device.empty(x.shape)
    launch(_relu_overhang, blocks_for(x.size + 1), BLOCK,
                   flat(x), flat(y))
    return y
