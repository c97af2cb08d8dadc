"""Planted bug: relu's kernel covers every element but the last (a launch one thread short)."""

from numba import cuda

from stage4_cuda.runtime import device
from stage4_cuda.runtime.device import flat
from stage4_cuda.runtime.launch import launch_elementwise
from tests.planted_gpu.reference import *  # noqa: F403


@cuda.jit
def _relu_short(x, y):
    i = cuda.grid(1)
    if i < y.size - 1:
        y[i] = x[i] if x[i] > 0 else 0.0


def relu(x):
    y = device.empty(x.shape)
    launch_elementwise(_relu_short, x.size, flat(x), flat(y))
    return y
