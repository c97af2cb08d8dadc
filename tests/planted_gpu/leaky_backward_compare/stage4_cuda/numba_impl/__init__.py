"""Planted bug: leaky_relu_backward's kernel picks the slope by comparing x with alpha * x, the
sign of x only while alpha < 1."""

from numba import cuda

from stage4_cuda.runtime.device import empty, flat
from stage4_cuda.runtime.launch import launch_elementwise
from tests.planted_gpu.reference import *  # noqa: F403


@cuda.jit
def _leaky_backward(x, dy, dx, alpha):
    i = cuda.grid(1)
    if i < dx.size:
        dx[i] = dy[i] if x[i] > alpha * x[i] else alpha * dy[i]


def leaky_relu_backward(x, dy, alpha):
    dx = empty(x.shape)
    launch_elementwise(_leaky_backward, x.size, flat(x), flat(dy),
                               flat(dx), alpha)
    return dx
