"""Planted bug: relu's kernel covers every element but the last (a launch one thread short)."""

from numba import cuda

from stage4_cuda.numba_impl import _device
from tests.planted_gpu.reference import *  # noqa: F403


@cuda.jit
def _relu_short(x, y):
    i = cuda.grid(1)
    if i < y.size - 1:
        y[i] = x[i] if x[i] > 0 else 0.0


def relu(x):
    y = _device.empty(x.shape)
    _device.launch_elementwise(_relu_short, x.size, _device.flat(x), _device.flat(y))
    return y
