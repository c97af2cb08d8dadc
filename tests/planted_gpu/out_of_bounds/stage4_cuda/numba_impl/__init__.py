"""Planted bug: relu writes one element past its output (a missing `i < n` guard on a grid that
overhangs the array). The simulator checks bounds and raises; a GPU does not: compute-sanitizer's
memcheck reports the write (`make sanitize`)."""

from numba import cuda

from stage4_cuda.numba_impl import _device
from tests.planted_gpu.reference import *  # noqa: F403


@cuda.jit
def _relu_overhang(x, y):
    i = cuda.grid(1)
    if i <= y.size:  # one too many
        y[i] = x[min(i, x.size - 1)] if x[min(i, x.size - 1)] > 0 else 0.0


def relu(x):
    y = _device.empty(x.shape)
    _device.launch(_relu_overhang, _device.blocks_for(x.size + 1), _device.BLOCK,
                   _device.flat(x), _device.flat(y))
    return y
